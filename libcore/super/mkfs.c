// SPDX-License-Identifier: MIT
/*
 * Writing a new filesystem.  Format writes metadata only, so that a large
 * sparse image stays sparse and formats in well under a second: the
 * superblock regions are cleared (an old superblock left in a backup slot
 * must not be mistaken for ours later) and the superblock copies written.
 */
#include <bfs/os.h>
#include <bfs/super.h>

static int clear_sb_regions(struct bfs_dev *dev, const struct bfs_sb *sb)
{
	unsigned i;
	void *zero;
	int ret = 0;

	zero = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_REGION);
	if (!zero)
		return -ENOMEM;
	memset(zero, 0, BFS_SB_REGION);
	for (i = 0; i < sb->nr_copies && !ret; i++)
		ret = bfs_dev_write(dev, le64_to_cpu(sb->copy_offset[i]), zero, BFS_SB_REGION);
	bfs_free(zero);
	return ret;
}

int bfs_mkfs_write(struct bfs_dev *dev, struct bfs_sb *sb)
{
	int ret;

	ret = clear_sb_regions(dev, sb);
	if (ret)
		return ret;
	ret = bfs_dev_flush(dev);
	if (ret)
		return ret;
	sb->flags = cpu_to_le32(le32_to_cpu(sb->flags) | BFS_SB_CLEAN);
	return bfs_sb_write(dev, sb);
}
