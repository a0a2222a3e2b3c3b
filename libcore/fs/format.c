// SPDX-License-Identifier: MIT
/*
 * The filesystem layer's part of mkfs: the root directory, lost+found and
 * the inode-number counter, written in one transaction on a freshly
 * formatted core (libcore/mkfs/mkfs.c calls this after the superblock is
 * written).
 */
#include <bfs/super.h>

#include "ns.h"

#define LOST_FOUND_INO	2

static int format_trans(struct bfs_fs *fs)
{
	static const char lf[] = "lost+found";
	struct bfs_ns_inode root, lost;
	struct bfs_trans *t;
	s64 now = bfs_fs_now();
	int ret;

	bfs_ns_inode_init(&root, S_IFDIR | 0755, 0, 0, 0, now);
	root.i.ino = BFS_ROOT_INO;
	root.parent = BFS_ROOT_INO;	/* the root's ".." is itself */
	root.i.nlink = 3;		/* ".", its own "..", lost+found's ".." */
	bfs_ns_inode_init(&lost, S_IFDIR | 0700, 0, 0, 0, now);
	lost.i.ino = LOST_FOUND_INO;
	lost.parent = BFS_ROOT_INO;

	ret = bfs_trans_begin(fs->c, &t);
	if (ret)
		return ret;
	ret = bfs_ns_counter_write(t, BFS_FIRST_FREE_INO);
	if (!ret)
		ret = bfs_ns_inode_write(t, &root);
	if (!ret)
		ret = bfs_ns_inode_write(t, &lost);
	if (!ret)
		ret = bfs_dir_add(t, BFS_ROOT_INO, bfs_dirent_slot(fs, lf, sizeof(lf) - 1), lf,
				  sizeof(lf) - 1, LOST_FOUND_INO, bfs_ns_dtype(S_IFDIR));
	if (ret) {
		bfs_trans_end(t);
		return ret;
	}
	return bfs_ns_commit(t);
}

int bfs_fs_format(struct bfs_dev *dev, struct bfs_sb *sb)
{
	struct bfs_sb_handle h = { 0 };
	struct bfs_fs fs = { .dev = dev };
	char err[BFS_ERR_LEN];
	int ret, r;

	ret = bfs_core_open(dev, NULL, &fs.c);
	if (ret)
		return ret;
	fs.sb = bfs_core_sb(fs.c);
	fs.hash_seed = le64_to_cpu(fs.sb->hash_seed);
	ret = format_trans(&fs);
	r = bfs_core_close(fs.c);
	ret = ret ? ret : r;
	if (ret)
		return ret;
	/* close rewrote the superblock (clean section, seq): hand back that one */
	ret = bfs_sb_read(dev, &h, err);
	if (ret) {
		bfs_err("%s", err);
		return ret;
	}
	memcpy(sb, h.sb, le32_to_cpu(h.sb->bytes));
	bfs_sb_handle_release(&h);
	return 0;
}
