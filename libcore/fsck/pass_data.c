// SPDX-License-Identifier: MIT
/*
 * --check-data: every written extent's chunk is read and verified as a read
 * would (checksum of the stored bytes, then a zstd frame that decompresses
 * to exactly the chunk's size).  A bad chunk cannot be repaired: the file
 * range reads as EIO, and fsck says which file and which bytes.  Keys that
 * share a chunk (a chunk trimmed by overwrites) cost one read.
 *
 * Pointers that pass_extents.c or pass_alloc.c found bad (kept with -n) are
 * not read again: they are reported already.
 */
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/format.h>
#include <bfs/fs_repair.h>
#include <bfs/os.h>

#include <stdio.h>
#include <string.h>


#include "fs_check.h"

int fsck_verify_chunk(struct fs_check *fc, const struct bfs_bkey *k, char *why, size_t why_len)
{
	u8 *plain;
	int ret = bfs_data_chunk_load(bfs_core_dev(fc->c),
				      le32_to_cpu(bfs_core_sb(fc->c)->block_size), bfs_bkey_val(k),
				      &plain, why, why_len);

	bfs_free(plain);
	return ret;
}

struct data_check {
	struct fs_check *fc;
	u64	last_off;	/* the chunk verified last (0: none) and its verdict */
	u64	last_csum;
	int	last_ret;
	char	last_why[200];
	u64	chunks, bad;
};

static bool already_reported(struct data_check *dc, const struct bfs_extent_v *v)
{
	char why[160];

	return fsck_extent_ptr_bad(dc->fc, v, why, sizeof(why)) ||
	       !bfs_fs_extent_bucket_current(dc->fc->fs, v);
}

static int check_extent(struct data_check *dc, const struct bfs_bkey *k)
{
	const struct bfs_extent_v *v = bfs_bkey_val(k);
	struct fs_check *fc = dc->fc;
	u64 ino = le64_to_cpu(k->inode), start = bfs_bkey_start(k) << BFS_SECTOR_SHIFT;
	enum bfs_problem_code code;
	struct bfs_fsck_loc loc;

	if (k->type != BFS_KEY_EXTENT || (v->flags & BFS_EXTENT_F_UNWRITTEN) ||
	    already_reported(dc, v))
		return 0;
	if (le64_to_cpu(v->offset) != dc->last_off || le64_to_cpu(v->csum) != dc->last_csum) {
		dc->last_why[0] = 0;
		dc->last_ret = fsck_verify_chunk(fc, k, dc->last_why, sizeof(dc->last_why));
		dc->last_off = le64_to_cpu(v->offset);
		dc->last_csum = le64_to_cpu(v->csum);
		dc->chunks++;
		if (dc->last_ret == -ENOMEM)
			return -ENOMEM;
	}
	switch (dc->last_ret) {
	case 0:
		return 0;
	case -EBADMSG:
		code = PR_DATA_CSUM;
		break;
	case -EILSEQ:
		code = PR_DATA_DECOMPRESS;
		break;
	default:
		code = PR_DATA_READ_ERROR;
		if (!dc->last_why[0])
			snprintf(dc->last_why, sizeof(dc->last_why), "%s", strerror(-dc->last_ret));
		break;
	}
	dc->bad++;
	loc = fsck_file_loc(fc, ino, start, k);
	bfs_fix_problem_at(fc->f, code, &loc, "inode %llu (%s) bytes %llu..%llu: %s",
			   (unsigned long long)ino, loc.path, (unsigned long long)start,
			   (unsigned long long)le64_to_cpu(k->offset) << BFS_SECTOR_SHIFT,
			   dc->last_why);
	return 0;
}

int fsck_check_data(struct fs_check *fc)
{
	struct data_check dc = { .fc = fc };
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fc->c, BFS_BTREE_EXTENTS, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		fsck_sweep_progress(fc, le64_to_cpu(k->inode));
		ret = check_extent(&dc, k);
		if (ret)
			break;
	}
	bfs_btree_iter_exit(&it);
	if (ret)
		return ret;
	fsck_sweep_done(fc);
	if (fc->f->verbose)
		bfs_fsck_printf(fc->f, "file data: %llu chunks read, %llu bad ranges",
				(unsigned long long)dc.chunks, (unsigned long long)dc.bad);
	return 0;
}
