// SPDX-License-Identifier: MIT
/*
 * The commit: bfs is complete and durable everywhere but in its superblock
 * areas, which the device held in memory.  The end copy goes first, onto
 * space ext does not use (mig_plan() checked), then a flush: from that
 * point the device opens as bfs (from that backup) and until it the ext
 * filesystem is untouched, so there is no moment when neither is whole.
 * Then the copies in the first MiB (over ext's superblock, group
 * descriptors and whatever else lived there; the saved image has copies of
 * all of it), and ext's magic goes, so that nothing takes the device for
 * ext any more.
 */
#include "migrate.h"

#include <stdlib.h>
#include <string.h>

#define EXT_SB_OFFSET	1024
#define EXT_SB_SIZE	1024

int mig_commit(struct mig *m)
{
	u8 *copies, zero[EXT_SB_SIZE] = { 0 };
	unsigned i, n = m->nr_sb;
	int ret = 0;

	copies = malloc((size_t)n * BFS_SB_REGION);
	if (!copies)
		return mig_error(m, "out of memory");
	for (i = 0; i < n && !ret; i++)
		ret = bfs_dev_read(m->dev, m->sb_offs[i], copies + (size_t)i * BFS_SB_REGION,
				   BFS_SB_REGION);
	if (ret) {
		free(copies);
		return mig_error(m, "cannot read the new superblocks back: %s", strerror(-ret));
	}
	bfs_dev_unhold(m->dev);
	/* everything bfs wrote reaches the disk before its first superblock */
	bfs_dev_set_barriers(m->dev, true);
	ret = bfs_dev_flush(m->dev);
	if (ret) {
		free(copies);
		return mig_error(m, "flushing the new filesystem failed: %s; the ext filesystem "
				 "is unchanged", strerror(-ret));
	}

	ret = bfs_dev_write(m->dev, m->sb_offs[n - 1], copies + (size_t)(n - 1) * BFS_SB_REGION,
			    BFS_SB_REGION);
	if (!ret)
		ret = bfs_dev_flush(m->dev);
	if (ret) {
		free(copies);
		return mig_error(m, "writing the first superblock failed: %s; the ext filesystem "
				 "is unchanged", strerror(-ret));
	}
	for (i = n - 1; i-- > 0 && !ret;)
		ret = bfs_dev_write(m->dev, m->sb_offs[i], copies + (size_t)i * BFS_SB_REGION,
				    BFS_SB_REGION);
	if (!ret)
		ret = bfs_dev_write(m->dev, EXT_SB_OFFSET, zero, sizeof(zero));
	if (!ret)
		ret = bfs_dev_flush(m->dev);
	free(copies);
	if (ret)
		return mig_error(m, "writing the superblocks failed after the first: %s; the device "
				 "is bfs (run bfs fsck -y to rewrite the copies)", strerror(-ret));
	return 0;
}
