// SPDX-License-Identifier: MIT
/*
 * Clearing set-ID bits and file capabilities as the Linux VFS does, for
 * the requests the kernel leaves to us under FUSE_HANDLE_KILLPRIV_V2
 * (fuse_kill.h).  The caller's supplementary groups and capabilities are
 * looked up only for the rare set-group-ID file that is not
 * group-executable.
 */
#include "fuse_kill.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CAP_FSETID_BIT	4	/* <linux/capability.h> CAP_FSETID */
#define BFS_XATTR_CAPS	"security.capability"	/* XATTR_NAME_CAPS */

/* the VFS's in_group_p(): the caller's fsgid or one of its supplementary groups */
static bool caller_in_group(fuse_req_t req, u32 gid)
{
	gid_t small[64], *list = small;
	int n, i;
	bool in = false;

	if (fuse_req_ctx(req)->gid == gid)
		return true;
	n = fuse_req_getgroups(req, 64, small);
	if (n > 64) {
		list = malloc((size_t)n * sizeof(*list));
		if (!list)
			return false;
		n = fuse_req_getgroups(req, n, list);
	}
	for (i = 0; i < n; i++)
		if (list[i] == gid)
			in = true;
	if (list != small)
		free(list);
	return in;
}

/* the caller's effective capabilities (/proc/PID/status CapEff) hold CAP_FSETID */
static bool caller_has_fsetid(fuse_req_t req)
{
	char path[64], line[256];
	unsigned long long caps = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)fuse_req_ctx(req)->pid);
	f = fopen(path, "re");
	if (!f)
		return false;	/* gone: clear the bit rather than keep it */
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	fclose(f);
	return found && (caps >> CAP_FSETID_BIT & 1);
}

/* the set-ID bits of @st to clear (fuse_kill.h, bfs_fuse_kill_add()) */
static u32 kill_bits(fuse_req_t req, const struct bfs_stat *st, unsigned how)
{
	u32 kill = 0;

	if (S_ISDIR(st->mode) || !(st->mode & (S_ISUID | S_ISGID)))
		return 0;
	if (how == BFS_KILL_UNLESS_FSETID && caller_has_fsetid(req))
		return 0;
	if (st->mode & S_ISUID)
		kill |= S_ISUID;
	if ((st->mode & S_ISGID) &&
	    ((st->mode & S_IXGRP) || !(caller_in_group(req, st->gid) ||
				       (how == BFS_KILL_CHOWN && caller_has_fsetid(req)))))
		kill |= S_ISGID;
	return kill;
}

bool bfs_fuse_acl_kills_sgid(fuse_req_t req, u64 ino)
{
	struct bfs_stat st;

	/* S_ISGID first: the caller's groups and capabilities cost /proc reads */
	if (bfs_fs_getattr(fs_of(req), ino, &st) || !(st.mode & S_ISGID))
		return false;
	return !caller_in_group(req, st.gid) && !caller_has_fsetid(req);
}

int bfs_fuse_kill_add(fuse_req_t req, u64 ino, unsigned how, struct bfs_setattr *sa)
{
	struct bfs_fs *fs = fs_of(req);
	struct bfs_stat st;
	u32 kill;
	int ret;

	ret = bfs_fs_getattr(fs, ino, &st);
	if (ret)
		return ret;
	kill = kill_bits(req, &st, how);
	if (!kill)
		return 0;
	if (!(sa->valid & BFS_SET_MODE)) {
		sa->valid |= BFS_SET_MODE;
		sa->mode = st.mode & 07777;
	}
	sa->mode &= ~kill;
	return 1;
}

int bfs_fuse_kill_suidgid(fuse_req_t req, u64 ino, unsigned how)
{
	struct bfs_fs *fs = fs_of(req);
	struct bfs_setattr sa = { 0 };
	struct bfs_stat st;
	int ret;

	ret = bfs_fuse_kill_add(req, ino, how, &sa);
	if (ret <= 0)
		return ret;
	ret = bfs_fs_setattr(fs, ino, &sa, &st);
	if (!ret)
		bfs_fuse_kill_notify(req, ino);
	return ret;
}

void bfs_fuse_kill_notify(fuse_req_t req, u64 ino)
{
	struct bfs_fuse *f = fuse_of(req);

	if (f->se)
		fuse_lowlevel_notify_inval_inode(f->se, ino, -1, 0);
}

int bfs_fuse_kill_caps(fuse_req_t req, u64 ino)
{
	struct bfs_fs *fs = fs_of(req);
	int ret;

	/*
	 * A check first: most files have none, and removing is a transaction.
	 * Kept in memory for an open inode (bfs_fs_has_caps()), so a direct
	 * write of a file without one does no xattr lookup.
	 */
	ret = bfs_fs_has_caps(fs, ino);
	if (ret <= 0)
		return ret;
	ret = bfs_fs_removexattr(fs, ino, BFS_XATTR_CAPS);
	return ret == -ENODATA ? 0 : ret;
}
