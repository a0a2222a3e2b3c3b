// SPDX-License-Identifier: MIT
/*
 * Offline resize (libcore/fs/resize.c): the layout of a grown and a shrunk
 * superblock, what lies in the space a shrink cuts, moving file data out of
 * it, and crash safety: every state a power failure can leave during a
 * resize (moves included) opens as the old or the new filesystem, with its
 * btrees intact and the file data readable.
 */
#include "unit.h"
#include "crash_states.h"
#include "resize_states.h"
#include "tu.h"

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/resize.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_BYTES	(512 * 1024)

static void write_file(struct bfs_dev *dev, const char *name)
{
	struct bfs_fs *fs;

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	tu_write_pattern_file(fs, name, FILE_BYTES, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
}

static bool file_ok(struct bfs_fs *fs, const char *name, char *why)
{
	return tu_pattern_file_ok(fs, name, FILE_BYTES, 0, why);
}

static u64 sb_dev_size(struct bfs_dev *dev)
{
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];
	u64 size;

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	size = le64_to_cpu(h.sb->dev_size);
	bfs_sb_handle_release(&h);
	return size;
}

START_TEST(test_layout)
{
	struct bfs_dev *dev = resize_make_fs(64 * MiB, 32 * MiB);
	struct bfs_sb *out = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert_int_eq(bfs_resize_layout(h.sb, 64 * MiB, out, err), 0);
	ck_assert_uint_eq(le64_to_cpu(out->dev_size), 64 * MiB);
	ck_assert_uint_eq(out->nr_copies, 3);
	ck_assert_uint_eq(le64_to_cpu(out->copy_offset[2]), 64 * MiB - 64 * KiB);
	ck_assert_uint_eq(le64_to_cpu(out->nbuckets) * le32_to_cpu(out->bucket_size),
			  64 * MiB - 64 * KiB);
	ck_assert_mem_eq(out->uuid, h.sb->uuid, 16);
	ck_assert_uint_eq(le64_to_cpu(out->journal_bucket), le64_to_cpu(h.sb->journal_bucket));
	/* what cannot be */
	ck_assert_int_eq(bfs_resize_layout(h.sb, 4 * MiB, out, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "minimum size"));
	bfs_sb_handle_release(&h);
	bfs_free(out);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_usage)
{
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 32 * MiB);
	const struct bfs_sb *sb;
	struct bfs_resize_usage u;
	struct bfs_fs *fs;

	write_file(dev, "data");
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &fs), 0);
	/* data fills from the top: a cut of the upper half hits it */
	ck_assert_int_eq(bfs_resize_usage(fs, 200, &u), 0);
	ck_assert_uint_ge(u.data_buckets, 1);
	ck_assert_uint_eq(u.data_bytes, FILE_BYTES);
	/* the btree nodes are at the bottom: a cut just above the journal hits them */
	sb = bfs_core_sb(bfs_fs_core(fs));
	ck_assert_int_eq(bfs_resize_usage(fs, le64_to_cpu(sb->journal_bucket) +
					  le32_to_cpu(sb->journal_nbuckets), &u), 0);
	ck_assert_uint_ge(u.nodes, 1);
	ck_assert_uint_eq(u.node_bytes, u.nodes * 64 * KiB);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* ---- crash safety ---- */

struct resize_ctx {
	u64 old_size, new_size;
	const char *file;
};

static bool files_ok(void *ctx, struct bfs_fs *fs, char *why)
{
	struct resize_ctx *c = ctx;

	return !c->file || file_ok(fs, c->file, why);
}

static bool check_state(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct resize_ctx *c = ctx;

	return resize_state_ok(img, c->old_size, c->new_size, mk.f >= 1, files_ok, c, why);
}

static void resize_recorded(struct bfs_dev *dev, u64 new_size, const char *logpath)
{
	struct bfs_sb *out = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct bfs_resize_usage u;
	struct bfs_sb_handle h;
	struct bfs_fs *fs;
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	crash_mark(dev, 'f', 0);
	crash_mark(dev, 'c', 1);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert_int_eq(bfs_resize_layout(h.sb, new_size, out, err), 0);
	if (le64_to_cpu(out->nbuckets) < le64_to_cpu(h.sb->nbuckets)) {
		bfs_sb_handle_release(&h);
		ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
		ck_assert_int_eq(bfs_resize_usage(fs, le64_to_cpu(out->nbuckets), &u), 0);
		ck_assert_uint_eq(u.nodes, 0);
		if (u.data_buckets) {
			u64 need, avail, left;

			ck_assert_int_eq(bfs_resize_evacuate(fs, le64_to_cpu(out->nbuckets), &need,
							     &avail, &left), 0);
			ck_assert_uint_eq(need, FILE_BYTES);
			ck_assert_uint_eq(left, 0);
		}
		ck_assert_int_eq(bfs_resize_usage(fs, le64_to_cpu(out->nbuckets), &u), 0);
		ck_assert_uint_eq(u.data_buckets, 0);
		ck_assert_uint_ge(u.free_alloc_keys, 1);	/* the test means to drop some */
		ck_assert_int_eq(bfs_resize_drop_alloc_keys(fs, le64_to_cpu(out->nbuckets)), 0);
		ck_assert_int_eq(bfs_fs_close(fs), 0);
		ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
		ck_assert_int_eq(bfs_resize_layout(h.sb, new_size, out, err), 0);
	}
	ck_assert_int_eq(bfs_resize_commit(dev, h.sb, out), 0);
	crash_mark(dev, 'f', 1);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	bfs_sb_handle_release(&h);
	bfs_free(out);
}

static void run_crash(struct bfs_dev *dev, struct resize_ctx *c, const char *tag)
{
	char *logpath = bfs_unit_tmpfile(tag);
	struct crash_result res;
	struct bfs_dev *base;

	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	resize_recorded(dev, c->new_size, logpath);
	ck_assert_uint_eq(sb_dev_size(dev), c->new_size);
	crash_build_states(logpath, base, 7, check_state, c, &res);
	printf("%s: %u crash states (%u flush points, %u random), %u failed\n", tag, res.states,
	       res.flush_states, res.random_states, res.failures);
	ck_assert_uint_ge(res.flush_states, 2);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);
	unlink(logpath);
	free(logpath);
	bfs_dev_close(base);
}

START_TEST(test_grow_crash)
{
	struct resize_ctx c = { .old_size = 16 * MiB, .new_size = 32 * MiB, .file = "kept" };
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 16 * MiB);
	u8 probe[8];

	write_file(dev, "kept");
	run_crash(dev, &c, "resize-grow");
	/* the old end copy, now in bucket space, is cleared */
	ck_assert_int_eq(bfs_dev_read(dev, 16 * MiB - 64 * KiB, probe, sizeof(probe)), 0);
	ck_assert_mem_eq(probe, "\0\0\0\0\0\0\0\0", 8);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_shrink_crash)
{
	struct resize_ctx c = { .old_size = 32 * MiB, .new_size = 16 * MiB };
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 32 * MiB);
	struct bfs_fs *fs;

	/* data written at the top and deleted: free buckets whose alloc keys remain */
	write_file(dev, "gone");
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, "gone", 4), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	run_crash(dev, &c, "resize-shrink");
	bfs_dev_close(dev);
}
END_TEST

/* live data beyond the new end is moved below it first, crash-safely */
START_TEST(test_shrink_moving_data_crash)
{
	struct resize_ctx c = { .old_size = 32 * MiB, .new_size = 16 * MiB, .file = "moved" };
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 32 * MiB);

	write_file(dev, "moved");	/* data fills from the top: beyond 16 MiB */
	run_crash(dev, &c, "resize-shrink-move");
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_evacuate_no_room)
{
	struct bfs_dev *dev = resize_make_fs(16 * MiB, 16 * MiB);
	struct bfs_resize_usage u;
	struct bfs_fs *fs;
	u64 need, avail, left, cut;
	const struct bfs_sb *sb;

	write_file(dev, "a");
	write_file(dev, "b");
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	sb = bfs_core_sb(bfs_fs_core(fs));
	/* keep just the journal and a few buckets: the data cannot fit */
	cut = le64_to_cpu(sb->journal_bucket) + le32_to_cpu(sb->journal_nbuckets) + 20;
	ck_assert_int_eq(bfs_resize_usage(fs, cut, &u), 0);
	ck_assert_uint_eq(u.data_bytes, 2 * FILE_BYTES);
	ck_assert_int_eq(bfs_resize_evacuate(fs, cut, &need, &avail, &left), -ENOSPC);
	ck_assert_uint_eq(need, 2 * FILE_BYTES);
	ck_assert_uint_lt(avail, need);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	/* nothing moved, nothing lost */
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	{
		char why[512];

		ck_assert_msg(file_ok(fs, "a", why) && file_ok(fs, "b", why), "%s", why);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

static Suite *resize_suite(void)
{
	Suite *s = suite_create("resize");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_usage);
	tcase_add_test(tc, test_grow_crash);
	tcase_add_test(tc, test_shrink_crash);
	tcase_add_test(tc, test_shrink_moving_data_crash);
	tcase_add_test(tc, test_evacuate_no_room);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(resize_suite)
