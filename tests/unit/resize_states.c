// SPDX-License-Identifier: MIT
/* Checks of crashed resize states: see resize_states.h. */
#include "resize_states.h"
#include "unit.h"

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/resize.h>
#include <bfs/super.h>

#include <stdio.h>
#include <string.h>

struct bfs_dev *resize_make_fs(u64 dev_size, u64 fs_size)
{
	struct bfs_format_opts fo = { 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN];
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(dev_size, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, fs_size, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	bfs_free(sb);
	return dev;
}

/* the open filesystem's part of the checks */
static bool fs_ok(struct bfs_fs *fs, u64 nbuckets,
		  bool (*files_ok)(void *ctx, struct bfs_fs *fs, char *why), void *ctx, char *why)
{
	struct bfs_resize_usage u;
	int id, ret;

	for (id = 0; id < BFS_BTREE_NR; id++)
		if (bfs_btree_verify(bfs_fs_core(fs), id)) {
			snprintf(why, 512, "btree %s fails verification", bfs_btree_id_name(id));
			return false;
		}
	if (files_ok && !files_ok(ctx, fs, why))
		return false;
	ret = bfs_resize_usage(fs, nbuckets, &u);
	if (ret || u.nodes || u.data_buckets || u.free_alloc_keys) {
		snprintf(why, 512, "beyond the end: %llu nodes, %llu data buckets, %llu alloc keys",
			 (unsigned long long)u.nodes, (unsigned long long)u.data_buckets,
			 (unsigned long long)u.free_alloc_keys);
		return false;
	}
	return true;
}

bool resize_state_ok(struct bfs_dev *img, u64 old_size, u64 new_size, bool durable,
		     bool (*files_ok)(void *ctx, struct bfs_fs *fs, char *why), void *ctx,
		     char *why)
{
	struct bfs_sb_handle h;
	struct bfs_fs *fs;
	char err[BFS_ERR_LEN];
	u64 size, nbuckets;
	int ret;

	if (bfs_sb_read(img, &h, err)) {
		snprintf(why, 512, "no readable superblock: %s", err);
		return false;
	}
	size = le64_to_cpu(h.sb->dev_size);
	nbuckets = le64_to_cpu(h.sb->nbuckets);
	bfs_sb_handle_release(&h);
	if (size != old_size && size != new_size) {
		snprintf(why, 512, "dev_size %llu is neither size", (unsigned long long)size);
		return false;
	}
	if (durable && size != new_size) {
		snprintf(why, 512, "the resize was durable but the old size is read");
		return false;
	}
	ret = bfs_fs_open(img, &(struct bfs_fs_opts){ 0 }, &fs);
	if (ret) {
		snprintf(why, 512, "open failed: %s", strerror(-ret));
		return false;
	}
	if (!fs_ok(fs, nbuckets, files_ok, ctx, why)) {
		bfs_fs_close(fs);
		return false;
	}
	ret = bfs_fs_close(fs);
	if (ret) {
		snprintf(why, 512, "close failed: %s", strerror(-ret));
		return false;
	}
	return true;
}
