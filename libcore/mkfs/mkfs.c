// SPDX-License-Identifier: MIT
/*
 * mkfs sits above every layer it initialises: the superblock code below
 * must not know about btrees, so the order of the layers lives here.
 */
#include <bfs/core.h>
#include <bfs/mkfs.h>

int bfs_mkfs(struct bfs_dev *dev, struct bfs_sb *sb)
{
	int ret = bfs_core_format(dev, sb);

	return ret ? ret : bfs_mkfs_write(dev, sb);
}
