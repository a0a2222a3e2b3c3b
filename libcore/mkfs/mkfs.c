// SPDX-License-Identifier: MIT
/*
 * mkfs sits above every layer it initialises: the superblock code below
 * must not know about btrees, so the order of the layers lives here.
 */
#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/mkfs.h>

int bfs_mkfs(struct bfs_dev *dev, struct bfs_sb *sb)
{
	int ret = bfs_core_format(dev, sb);

	if (!ret)
		ret = bfs_mkfs_write(dev, sb);
	/* the root directory and friends, through a normal transaction */
	if (!ret)
		ret = bfs_fs_format(dev, sb);
	return ret;
}
