// SPDX-License-Identifier: MIT
/*
 * getattr and setattr (a chmod with BFS_SET_ACL_MODE changes the access
 * ACL with the mode, acl.c).  Timestamps: setattr sets ctime (to now, or to the
 * value given with BFS_SET_CTIME); a size change also sets mtime, as
 * truncate(2) does.  atime changes through setattr, and through
 * bfs_fs_touch_atime() when the caller reports a read (atime.c).
 */
#include "ns.h"

int bfs_fs_getattr(struct bfs_fs *fs, u64 ino, struct bfs_stat *st)
{
	struct bfs_ns_inode inode;
	int ret = bfs_ns_inode_read(fs, ino, &inode);

	if (!ret)
		bfs_ns_inode_to_stat(fs, &inode.i, st);
	return ret;
}

static s64 ts_ns(struct timespec ts)
{
	return (s64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * immutable: only the flags may change (chattr -i); append-only: no size,
 * mode, owner or explicit times (times set to "now" stay allowed, as utime(2)
 * with no times is)
 */
static int check_iflags(const struct bfs_ns_inode *inode, const struct bfs_setattr *sa)
{
	u32 v = sa->valid & ~BFS_SET_CTIME;

	if ((inode->i.flags & BFS_INODE_IMMUTABLE) && (v & ~BFS_SET_FLAGS))
		return -EPERM;
	if ((inode->i.flags & BFS_INODE_APPEND) &&
	    (v & (BFS_SET_SIZE | BFS_SET_MODE | BFS_SET_UID | BFS_SET_GID | BFS_SET_ATIME |
		  BFS_SET_MTIME)))
		return -EPERM;
	return 0;
}

static int check_setattr(const struct bfs_ns_inode *inode, const struct bfs_setattr *sa)
{
	int ret = check_iflags(inode, sa);

	if (ret)
		return ret;
	if (sa->valid & BFS_SET_SIZE) {
		if (S_ISDIR(inode->i.mode))
			return -EISDIR;
		if (!S_ISREG(inode->i.mode))
			return -EINVAL;
		if (sa->size > (u64)INT64_MAX)
			return -EFBIG;
	}
	if ((sa->valid & BFS_SET_FLAGS) && (sa->flags & ~BFS_INODE_FLAGS_KNOWN))
		return -EOPNOTSUPP;
	if ((sa->valid & BFS_SET_ATIME) && (sa->atime.tv_nsec < 0 || sa->atime.tv_nsec >= 1000000000))
		return -EINVAL;
	if ((sa->valid & BFS_SET_MTIME) && (sa->mtime.tv_nsec < 0 || sa->mtime.tv_nsec >= 1000000000))
		return -EINVAL;
	if ((sa->valid & BFS_SET_CTIME) && (sa->ctime.tv_nsec < 0 || sa->ctime.tv_nsec >= 1000000000))
		return -EINVAL;
	return 0;
}

/* what @sa asks of the inode in @c, with every change in c->t */
static int apply_setattr(struct bfs_fs *fs, struct bfs_ns_change *c, const struct bfs_setattr *sa,
			 s64 now)
{
	struct bfs_inode *i = &c->inode.i;
	int ret = check_setattr(&c->inode, sa);

	if (ret)
		return ret;
	if (sa->valid & BFS_SET_MODE)
		i->mode = (i->mode & S_IFMT) | (sa->mode & 07777);
	/* the access ACL follows in the same transaction: no crash splits them */
	if ((sa->valid & (BFS_SET_MODE | BFS_SET_ACL_MODE)) == (BFS_SET_MODE | BFS_SET_ACL_MODE)) {
		ret = bfs_acl_chmod_trans(fs, c->t, c->ino, sa->mode);
		if (ret)
			return ret;
	}
	if (sa->valid & BFS_SET_UID)
		i->uid = sa->uid;
	if (sa->valid & BFS_SET_GID)
		i->gid = sa->gid;
	if (sa->valid & BFS_SET_FLAGS)
		i->flags = sa->flags;
	if (sa->valid & BFS_SET_ATIME_NOW)
		i->atime = now;
	else if (sa->valid & BFS_SET_ATIME)
		i->atime = ts_ns(sa->atime);
	if (sa->valid & BFS_SET_MTIME_NOW)
		i->mtime = now;
	else if (sa->valid & BFS_SET_MTIME)
		i->mtime = ts_ns(sa->mtime);
	if (sa->valid & BFS_SET_SIZE) {
		/* the data half trims extents and updates sectors in the same transaction */
		ret = bfs_fs_data_truncate(fs, c->t, i, sa->size);
		if (ret)
			return ret;
		i->size = sa->size;
		if (!(sa->valid & (BFS_SET_MTIME | BFS_SET_MTIME_NOW)))
			i->mtime = now;
	}
	i->ctime = (sa->valid & BFS_SET_CTIME) ? ts_ns(sa->ctime) : now;
	return 0;
}

int bfs_fs_setattr(struct bfs_fs *fs, u64 ino, const struct bfs_setattr *sa, struct bfs_stat *st)
{
	struct bfs_ns_change c;
	s64 now = bfs_fs_now();
	int ret = bfs_ns_change_begin(fs, ino, &c);

	if (!ret)
		ret = apply_setattr(fs, &c, sa, now);
	ret = bfs_ns_change_end(&c, ret);
	if (!ret && st)
		bfs_ns_inode_to_stat(fs, &c.inode.i, st);
	return ret;
}
