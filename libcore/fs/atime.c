// SPDX-License-Identifier: MIT
/*
 * Access times: the policy of the mount options relatime (the default),
 * strictatime and noatime, applied when the caller reports a read.  Reads
 * themselves never write the inode; the caller (the FUSE mount) calls
 * bfs_fs_touch_atime() after a read or a listing, and relatime keeps that
 * to one inode write per change of the file or per day, as on ext4.
 *
 * An atime update changes atime only: not ctime, and it is not a change a
 * reader must wait for, so it commits without a journal flush like every
 * other operation.
 */
#include "ns.h"

/* relatime: atime older than this is refreshed even if nothing changed */
#define RELATIME_MAX_AGE_NS	(24LL * 3600 * 1000000000)

static bool atime_due(s64 atime, s64 mtime, s64 ctime, u32 flags, unsigned policy, s64 now)
{
	if (flags & BFS_INODE_NOATIME)
		return false;
	switch (policy) {
	case BFS_ATIME_STRICT:
		return atime != now;
	case BFS_ATIME_RELATIME:
		return atime <= mtime || atime <= ctime || now - atime >= RELATIME_MAX_AGE_NS;
	default:
		return false;
	}
}

static s64 ts_ns(const struct timespec *ts)
{
	return (s64)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

bool bfs_inode_atime_due(const struct bfs_inode *inode, unsigned policy)
{
	return atime_due(inode->atime, inode->mtime, inode->ctime, inode->flags, policy,
			 bfs_fs_now());
}

bool bfs_fs_atime_due(const struct bfs_stat *st, unsigned policy)
{
	return atime_due(ts_ns(&st->atime), ts_ns(&st->mtime), ts_ns(&st->ctime), st->flags,
			 policy, bfs_fs_now());
}

int bfs_fs_touch_atime(struct bfs_fs *fs, u64 ino, unsigned policy)
{
	struct bfs_ns_change c;
	s64 now;
	int ret;

	if (fs->read_only || policy == BFS_ATIME_NEVER)
		return 0;
	ret = bfs_ns_change_begin(fs, ino, &c);
	now = bfs_fs_now();
	if (!ret && !atime_due(c.inode.i.atime, c.inode.i.mtime, c.inode.i.ctime,
			       c.inode.i.flags, policy, now))
		ret = BFS_NS_UNCHANGED;
	if (!ret)
		c.inode.i.atime = now;
	ret = bfs_ns_change_end(&c, ret);
	/* the inode went away since the read: nothing to record */
	return ret == -ENOENT ? 0 : ret;
}
