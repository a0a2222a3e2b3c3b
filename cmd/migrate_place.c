// SPDX-License-Identifier: MIT
/*
 * Putting device bytes that ext uses into a bfs file: inside the bucket
 * area as extents over the bytes where they are (nothing copied), outside it
 * (below the first bucket, above the last: where bfs keeps superblocks) as a
 * copy written through the normal data path into space ext does not use.
 */
#include "migrate.h"

#include <bfs/import.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define COPY_CHUNK	(1024 * 1024)

/*
 * Copies read through libext2fs's own handle: the bfs device holds the
 * superblock areas in memory, where mkfs already wrote, and the original
 * bytes are what must be copied.
 */
static int copy_range(struct mig *m, u64 ino, u64 file_off, u64 dev_off, u64 len)
{
	u8 *buf = malloc(COPY_CHUNK);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (len && !ret) {
		u64 n = BFS_MIN(len, (u64)COPY_CHUNK);
		errcode_t err = io_channel_read_blk64(m->ext->io, dev_off / m->bs,
						      (int)(n / m->bs), buf);
		ssize_t w;

		if (err) {
			ret = -EIO;
			break;
		}
		w = bfs_fs_write(m->fs, ino, buf, n, file_off);
		if (w < 0)
			ret = (int)w;
		else if ((u64)w != n)
			ret = -ENOSPC;
		file_off += n;
		dev_off += n;
		len -= n;
	}
	free(buf);
	return ret;
}

int mig_place(struct mig *m, u64 ino, u64 file_off, u64 dev_off, u64 len)
{
	int ret = 0;

	while (len && !ret) {
		u64 n = BFS_MIN(len, mig_region_end(m, dev_off) - dev_off);

		if (mig_in_buckets(m, dev_off))
			ret = bfs_fs_import_extent(m->fs, ino, file_off, dev_off, n, 0);
		else
			ret = copy_range(m, ino, file_off, dev_off, n);
		file_off += n;
		dev_off += n;
		len -= n;
	}
	return ret;
}
