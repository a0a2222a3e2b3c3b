// SPDX-License-Identifier: MIT
/*
 * The data layer's part of include/bfs/fs_repair.h: what fsck asks of the
 * bucket table, by filesystem, so that fsck needs none of the data layer's
 * private structures.
 */
#include <bfs/fs_repair.h>

#include "data.h"

bool bfs_fs_extent_bucket_current(struct bfs_fs *fs, const struct bfs_extent_v *v)
{
	struct bfs_fs_data *d = fs->data;
	u64 b;

	if (!d)
		return false;
	b = bfs_data_bucket_of(d, le64_to_cpu(v->offset));
	return bfs_data_bucket_valid(d, b) && bfs_data_bucket_gen(d, b) == le32_to_cpu(v->gen);
}

int bfs_fs_bucket_adopt(struct bfs_fs *fs, u64 b, u32 gen, u64 live)
{
	return fs->data ? bfs_data_bucket_adopt(fs->data, b, gen, live) : -EINVAL;
}
