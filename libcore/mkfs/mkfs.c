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
	return bfs_mkfs_avoid(dev, sb, NULL);
}

int bfs_mkfs_avoid(struct bfs_dev *dev, struct bfs_sb *sb, const u64 *avoid)
{
	int ret = bfs_core_format_avoid(dev, sb, avoid);

	if (!ret)
		ret = bfs_mkfs_write(dev, sb);
	/* the root directory and friends, through a normal transaction */
	if (!ret)
		ret = bfs_fs_format_avoid(dev, sb, avoid);
	return ret;
}
