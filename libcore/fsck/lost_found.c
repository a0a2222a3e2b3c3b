// SPDX-License-Identifier: MIT
/*
 * /lost+found, before anything is reconnected to it: a directory entry
 * "lost+found" in / naming a directory.  If the entry is gone but inode 2
 * (the lost+found bfs format made) is an unattached directory, it is
 * reattached; if the name is taken by something else, that is moved into a
 * new /lost+found like any unattached inode; otherwise a new one is made.
 * Reconnecting inodes later never depends on a lookup that an earlier
 * repair could have invalidated: fc->lf_ino is the directory to use.
 */
#include <bfs/fs_format.h>
#include <bfs/fs_repair.h>

#include <string.h>
#include <sys/stat.h>

#include "fs_check.h"

#define LOST_FOUND_INO	2	/* as bfs format makes it (libcore/fs/format.c) */

static const char lf_name[] = "lost+found";
#define LF_LEN	(sizeof(lf_name) - 1)

/* the entry / lost+found -> directory @ino (at @idx), an existing unattached one */
static int reattach(struct fs_check *fc, size_t idx, u64 ino)
{
	struct bfs_trans *t;
	u64 slot;
	int ret;

	ret = bfs_dir_free_slot(fc->fs, BFS_ROOT_INO, lf_name, LF_LEN, &slot);
	if (!ret)
		ret = bfs_trans_begin(fc->c, &t);
	if (ret)
		return ret;
	ret = bfs_dir_add(t, BFS_ROOT_INO, slot, lf_name, LF_LEN, ino, bfs_ns_dtype(S_IFDIR));
	if (ret) {
		bfs_trans_end(t);
		return ret;
	}
	ret = bfs_ns_commit(t);
	if (ret)
		return ret;
	/* link counts and ".." are compared with these later */
	fc->lf_ino = ino;
	return fsck_count_entry(fc, fsck_find_dir(fc, BFS_ROOT_INO), idx, ino, lf_name, LF_LEN);
}

/* a new, empty /lost+found (mkdir also counts the link in the root) */
static int create(struct fs_check *fc)
{
	static const struct bfs_creds root_creds = { 0, 0 };
	struct bfs_stat st;
	size_t idx;
	int ret;

	ret = bfs_fs_mkdir(fc->fs, BFS_ROOT_INO, lf_name, LF_LEN, 0700, &root_creds, &st);
	if (ret)
		return ret;
	ret = fsck_add_ino(fc, st.ino, st.mode, st.size, &idx);
	if (ret)
		return ret;
	fc->lf_ino = st.ino;
	/* after the add: it may move the directory records */
	return fsck_count_entry(fc, fsck_find_dir(fc, BFS_ROOT_INO), idx, st.ino, lf_name, LF_LEN);
}

/* free the name for a new directory: what had it becomes unattached (or keeps its other links) */
static int move_away(struct fs_check *fc, const struct bfs_dirent_ref *de, size_t idx)
{
	struct bfs_trans *t;
	int ret;

	ret = bfs_trans_begin(fc->c, &t);
	if (ret)
		return ret;
	ret = bfs_dir_remove(fc->fs, t, BFS_ROOT_INO, de->slot, false);
	if (ret) {
		bfs_trans_end(t);
		return ret;
	}
	ret = bfs_ns_commit(t);
	if (ret)
		return ret;
	/* not a directory (it would be /lost+found): its name is looked up when needed */
	fsck_links_dec(fc, idx);
	return 0;
}


int fsck_check_lost_found(struct fs_check *fc)
{
	struct bfs_dirent_ref de;
	struct bfs_fsck_loc loc = BFS_FSCK_LOC_NONE;
	size_t idx;
	int ret;

	loc.path = "/lost+found";

	ret = bfs_dir_lookup(fc->fs, BFS_ROOT_INO, lf_name, LF_LEN, &de);
	if (ret && ret != -ENOENT)
		return ret;
	if (!ret) {
		if (!fsck_find(fc, de.ino, &idx))
			return 0;	/* -n: the entry's missing inode was reported already */
		if (S_ISDIR(fsck_type(fc, idx))) {
			fc->lf_ino = de.ino;
			return 0;
		}
		loc.inode = de.ino;
		if (!bfs_fix_problem_at(fc->f, PR_LOST_FOUND_NOT_DIR, &loc,
				     "/lost+found is inode %llu, mode %o",
				     (unsigned long long)de.ino, fsck_stored_mode(fc, de.ino)))
			return 0;
		ret = move_away(fc, &de, idx);
		if (!ret)
			ret = create(fc);
		fsck_repair(fc, PR_LOST_FOUND_NOT_DIR, ret);
		return ret == -ENOMEM ? ret : 0;
	}
	if (fsck_find(fc, LOST_FOUND_INO, &idx) && S_ISDIR(fsck_type(fc, idx)) && !fsck_links(fc, idx)) {
		loc.inode = LOST_FOUND_INO;
		if (bfs_fix_problem_at(fc->f, PR_LOST_FOUND_UNATTACHED, &loc,
				    "directory %u has no entry, / has no lost+found",
				    LOST_FOUND_INO)) {
			ret = reattach(fc, idx, LOST_FOUND_INO);
			fsck_repair(fc, PR_LOST_FOUND_UNATTACHED, ret);
		}
		return ret == -ENOMEM ? ret : 0;
	}
	if (bfs_fix_problem_at(fc->f, PR_LOST_FOUND_MISSING, &loc, "/ has no entry lost+found")) {
		ret = create(fc);
		fsck_repair(fc, PR_LOST_FOUND_MISSING, ret);
	}
	return ret == -ENOMEM ? ret : 0;
}
