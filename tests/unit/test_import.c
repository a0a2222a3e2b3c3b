// SPDX-License-Identifier: MIT
/*
 * In-place import (migrate's libcore half): held superblock ranges of a
 * device, a filesystem made and used around buckets another filesystem
 * owns (their bytes must survive everything), extents over data already on
 * the device (read back, shared by two files, after a remount), unwritten
 * imports, the release of held buckets no extent uses, and refusals.
 */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include <bfs/dev.h>
#include <bfs/fs.h>
#include <bfs/import.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#define DEV_SIZE	(64 * MiB)
#define BUCKET		(64 * KiB)
#define NBUCKETS	(DEV_SIZE / BUCKET)

static void quiet(enum bfs_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (getenv("BFS_TEST_VERBOSE") || level == BFS_LOG_ERR)
		fprintf(stderr, "bfs %d: %s\n", level, msg);
}

static u8 pattern(u64 off)
{
	return (u8)((off * 2654435761U) >> 13);
}

/* the "old filesystem": patterned bytes in the buckets of @avoid */
static void fill_old(struct bfs_dev *dev, const u64 *avoid)
{
	u8 *buf = bfs_malloc(BUCKET);
	u64 b, i;

	ck_assert_ptr_nonnull(buf);
	for (b = 0; b < NBUCKETS; b++) {
		if (!(avoid[b / 64] & (UINT64_C(1) << (b % 64))))
			continue;
		for (i = 0; i < BUCKET; i++)
			buf[i] = pattern(b * BUCKET + i);
		ck_assert_int_eq(bfs_dev_write(dev, b * BUCKET, buf, BUCKET), 0);
	}
	bfs_free(buf);
}

static void check_old(struct bfs_dev *dev, const u64 *avoid)
{
	u8 *buf = bfs_malloc(BUCKET), *want = bfs_malloc(BUCKET);
	u64 b, i;

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(want);
	for (b = 0; b < NBUCKETS; b++) {
		if (!(avoid[b / 64] & (UINT64_C(1) << (b % 64))))
			continue;
		ck_assert_int_eq(bfs_dev_read(dev, b * BUCKET, buf, BUCKET), 0);
		for (i = 0; i < BUCKET; i++)
			want[i] = pattern(b * BUCKET + i);
		ck_assert_msg(!memcmp(buf, want, BUCKET), "old data overwritten in bucket %llu",
			      (unsigned long long)b);
	}
	bfs_free(buf);
	bfs_free(want);
}

static void set_bit(u64 *map, u64 b)
{
	map[b / 64] |= UINT64_C(1) << (b % 64);
}

/* the old filesystem owns every third bucket from 40 on, and a run at 200 */
static void make_avoid(u64 *map)
{
	u64 b;

	memset(map, 0, NBUCKETS / 8);
	for (b = 40; b < NBUCKETS - 64; b += 3)
		set_bit(map, b);
	for (b = 200; b < 210; b++)
		set_bit(map, b);
}

static struct bfs_dev *mkfs_around(const u64 *avoid)
{
	struct bfs_format_opts o = { .block_size = 4096, .bucket_size = BUCKET,
				     .btree_node_size = BUCKET, .journal_nbuckets = 8 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";
	struct bfs_dev *dev;

	bfs_log_set_hook(quiet, NULL);
	ck_assert_ptr_nonnull(sb);
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	fill_old(dev, avoid);
	ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
	/* buckets 16.. hold the journal; 40 on is the old filesystem's */
	ck_assert_int_eq(bfs_mkfs_avoid(dev, sb, avoid), 0);
	bfs_free(sb);
	return dev;
}

static struct bfs_fs *open_avoiding(struct bfs_dev *dev, const u64 *avoid)
{
	struct bfs_fs_opts o = { .avoid_buckets = avoid };
	struct bfs_fs *fs = NULL;

	ck_assert_int_eq(bfs_fs_open(dev, &o, &fs), 0);
	return fs;
}

static u64 mkfile(struct bfs_fs *fs, const char *name, u64 size)
{
	struct bfs_creds cr = { 0, 0 };
	struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = size };
	struct bfs_stat st;

	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name), S_IFREG | 0644, 0,
				      &cr, &st), 0);
	ck_assert_int_eq(bfs_fs_setattr(fs, st.ino, &sa, &st), 0);
	return st.ino;
}

static void check_file(struct bfs_fs *fs, u64 ino, u64 file_off, u64 dev_off, u64 len)
{
	u8 *buf = bfs_malloc(len);
	u64 i;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf, len, file_off), (ssize_t)len);
	for (i = 0; i < len; i++)
		if (buf[i] != pattern(dev_off + i))
			ck_abort_msg("ino %llu byte %llu", (unsigned long long)ino,
				     (unsigned long long)(file_off + i));
	bfs_free(buf);
}

START_TEST(test_hold)
{
	struct bfs_dev *dev;
	u8 a[8192], b[8192];

	ck_assert_int_eq(bfs_dev_open_mem(1 * MiB, &dev), 0);
	memset(a, 0x11, sizeof(a));
	ck_assert_int_eq(bfs_dev_write(dev, 0, a, sizeof(a)), 0);
	ck_assert_int_eq(bfs_dev_hold(dev, 4096, 4096), 0);
	ck_assert_int_eq(bfs_dev_hold(dev, 6000, 10), -EINVAL);	/* overlaps */
	ck_assert_int_eq(bfs_dev_hold(dev, 1 * MiB, 1), -EINVAL);	/* beyond the end */
	/* a write across the edge: the held half stays in memory */
	memset(b, 0x22, sizeof(b));
	ck_assert_int_eq(bfs_dev_write(dev, 2048, b, 4096), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 0, a, sizeof(a)), 0);
	ck_assert_int_eq(a[2047], 0x11);
	ck_assert_int_eq(a[2048], 0x22);
	ck_assert_int_eq(a[6143], 0x22);
	ck_assert_int_eq(a[6144], 0x11);
	ck_assert_int_eq(bfs_dev_mem(dev)[4096], 0x11);	/* the device itself */
	ck_assert_int_eq(bfs_dev_mem(dev)[4095], 0x22);
	bfs_dev_unhold(dev);
	ck_assert_int_eq(bfs_dev_read(dev, 4096, a, 1), 0);
	ck_assert_int_eq(a[0], 0x11);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_import_roundtrip)
{
	static u64 avoid[NBUCKETS / 64];
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	struct bfs_statfs before, after;
	struct bfs_stat st;
	u64 f1, f2, f3;
	int i;

	make_avoid(avoid);
	dev = mkfs_around(avoid);
	check_old(dev, avoid);
	fs = open_avoiding(dev, avoid);
	ck_assert_int_eq(bfs_fs_import_begin(fs, avoid), 0);
	ck_assert_int_eq(bfs_fs_import_begin(fs, avoid), -EBUSY);

	f1 = mkfile(fs, "a", 10 * BUCKET + 100);
	/* a run of held buckets, crossing bucket boundaries in one call */
	ck_assert_int_eq(bfs_fs_import_extent(fs, f1, 0, 200 * BUCKET, 10 * BUCKET, 0), 0);
	/* the tail block of a size that is not a block multiple */
	ck_assert_int_eq(bfs_fs_import_extent(fs, f1, 10 * BUCKET, 40 * BUCKET + 4096, 4096, 0),
			 0);
	f2 = mkfile(fs, "b", 3 * BUCKET);
	/* the same sectors again, and a hole, and an unwritten range */
	ck_assert_int_eq(bfs_fs_import_extent(fs, f2, 0, 203 * BUCKET, BUCKET, 0), 0);
	ck_assert_int_eq(bfs_fs_import_extent(fs, f2, 2 * BUCKET, 0, BUCKET,
					      BFS_IMPORT_UNWRITTEN), 0);
	/* refusals: unaligned, a bucket not held, not a regular file, read-only flag junk */
	ck_assert_int_eq(bfs_fs_import_extent(fs, f2, 512, 43 * BUCKET, 4096, 0), -EINVAL);
	ck_assert_int_eq(bfs_fs_import_extent(fs, f2, BUCKET, 41 * BUCKET, 4096, 0), -EINVAL);
	ck_assert_int_eq(bfs_fs_import_extent(fs, BFS_ROOT_INO, 0, 43 * BUCKET, 4096, 0),
			 -EISDIR);
	ck_assert_int_eq(bfs_fs_import_extent(fs, f2, 0, 43 * BUCKET, 4096, 8), -EINVAL);
	ck_assert_int_eq(bfs_fs_import_times(fs, f2, 1, 2, 3, 4), 0);

	/* new data written now must go around the old filesystem */
	f3 = mkfile(fs, "c", 0);
	for (i = 0; i < 40; i++) {
		static u8 junk[32768];

		memset(junk, i, sizeof(junk));
		ck_assert_int_eq(bfs_fs_write(fs, f3, junk, sizeof(junk), (u64)i * sizeof(junk)),
				 (ssize_t)sizeof(junk));
	}
	check_file(fs, f1, 0, 200 * BUCKET, 10 * BUCKET);
	check_file(fs, f1, 10 * BUCKET, 40 * BUCKET + 4096, 100);
	check_file(fs, f2, 0, 203 * BUCKET, BUCKET);
	/* a directory's times too, after its last entry was added */
	ck_assert_int_eq(bfs_fs_import_times(fs, BFS_ROOT_INO, 5, 6, 7, 8), 0);
	ck_assert_int_eq(bfs_fs_statfs(fs, &before), 0);
	bfs_fs_import_end(fs);
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert_int_eq(bfs_fs_statfs(fs, &after), 0);
	/* the held buckets no extent points into came back */
	ck_assert_uint_gt(after.bfree, before.bfree);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	check_old(dev, avoid);

	ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
	check_file(fs, f1, 0, 200 * BUCKET, 10 * BUCKET);
	check_file(fs, f2, 0, 203 * BUCKET, BUCKET);
	ck_assert_int_eq(bfs_fs_getattr(fs, f2, &st), 0);
	ck_assert_int_eq(st.size, 3 * BUCKET);
	ck_assert_int_eq(st.blocks, 2 * BUCKET / 512);	/* data + unwritten */
	ck_assert_int_eq(st.atime.tv_nsec, 1);
	ck_assert_int_eq(st.mtime.tv_nsec, 2);
	ck_assert_int_eq(st.ctime.tv_nsec, 3);
	ck_assert_int_eq(st.btime.tv_nsec, 4);
	ck_assert_int_eq(bfs_fs_getattr(fs, BFS_ROOT_INO, &st), 0);
	ck_assert_int_eq(st.mtime.tv_nsec, 6);
	/* dropping one of two references keeps the shared sectors readable */
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, "a", 1), 0);
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	check_file(fs, f2, 0, 203 * BUCKET, BUCKET);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* held superblock areas: the whole build leaves them as they were */
START_TEST(test_mkfs_held)
{
	static u64 avoid[NBUCKETS / 64];
	struct bfs_format_opts o = { .block_size = 4096, .bucket_size = BUCKET,
				     .btree_node_size = BUCKET };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct bfs_sb_handle h = { 0 };
	char err[BFS_ERR_LEN] = "";
	u64 offs[BFS_SB_MAX_COPIES];
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	unsigned n, i;
	u8 *copy;

	bfs_log_set_hook(quiet, NULL);
	make_avoid(avoid);
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	memset(bfs_dev_mem(dev), 0x5a, 1 * MiB);
	ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
	n = bfs_sb_copy_offsets(DEV_SIZE, offs);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(bfs_dev_hold(dev, offs[i], BFS_SB_REGION), 0);
	ck_assert_int_eq(bfs_mkfs_avoid(dev, sb, avoid), 0);
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ .avoid_buckets = avoid }, &fs),
			 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	/* the head holds the primary and first backup: nothing reached the device */
	for (i = 0; i < 1 * MiB; i++)
		if (bfs_dev_mem(dev)[i] != 0x5a)
			ck_abort_msg("byte %u written", i);
	/* the commit: copy the held regions out, then write them */
	copy = bfs_malloc((size_t)n * BFS_SB_REGION);
	ck_assert_ptr_nonnull(copy);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(bfs_dev_read(dev, offs[i], copy + (size_t)i * BFS_SB_REGION,
					      BFS_SB_REGION), 0);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);	/* through the held copy */
	bfs_sb_handle_release(&h);
	bfs_dev_unhold(dev);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), -ENODATA);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(bfs_dev_write(dev, offs[i], copy + (size_t)i * BFS_SB_REGION,
					       BFS_SB_REGION), 0);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	bfs_sb_handle_release(&h);
	ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(copy);
	bfs_free(sb);
	bfs_dev_close(dev);
}
END_TEST

static int first_phys(void *ctx, const struct bfs_fs_extent *e)
{
	u64 *phys = ctx;

	if (!*phys)
		*phys = e->physical;
	return 0;
}

/* holding a bucket that is in use already is refused, and holds nothing */
START_TEST(test_begin_busy)
{
	static u64 avoid[NBUCKETS / 64], none[NBUCKETS / 64];
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	static u8 data[BUCKET];
	u64 f, phys = 0;

	make_avoid(avoid);
	dev = mkfs_around(avoid);
	ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
	f = mkfile(fs, "x", 0);
	memset(data, 7, sizeof(data));
	ck_assert_int_eq(bfs_fs_write(fs, f, data, sizeof(data), 0), (ssize_t)sizeof(data));
	ck_assert_int_eq(bfs_fs_map(fs, f, first_phys, &phys), 0);
	ck_assert_uint_gt(phys, 0);
	memset(none, 0, sizeof(none));
	set_bit(none, 17);
	set_bit(none, phys / BUCKET);
	ck_assert_int_eq(bfs_fs_import_begin(fs, none), -EBUSY);
	/* bucket 17 was not left pinned: an import there is refused */
	ck_assert_int_eq(bfs_fs_import_extent(fs, f, 0, 17 * BUCKET, 4096, 0), -EINVAL);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* without barriers flushes still reach the I/O log (the crash replay's points) */
START_TEST(test_nobarrier_logged)
{
	char *log = bfs_unit_tmpfile("nobarrier.log");
	struct bfs_iolog l;
	struct bfs_dev *dev;
	u8 buf[4096] = { 1 };

	ck_assert_int_eq(bfs_dev_open_mem(1 * MiB, &dev), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, log), 0);
	bfs_dev_set_barriers(dev, false);
	ck_assert_int_eq(bfs_dev_write(dev, 8192, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	ck_assert_int_eq(bfs_dev_write_fua(dev, 0, buf, sizeof(buf)), 0);
	bfs_dev_set_barriers(dev, true);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	ck_assert_int_eq(bfs_iolog_open(log, &l), 0);
	ck_assert_uint_eq(l.nr, 4);
	ck_assert_int_eq(l.entries[0].type, BFS_IOLOG_WRITE);
	ck_assert_int_eq(l.entries[1].type, BFS_IOLOG_FLUSH);
	ck_assert_int_eq(l.entries[2].type, BFS_IOLOG_FUA);
	ck_assert_int_eq(l.entries[3].type, BFS_IOLOG_FLUSH);
	bfs_iolog_close(&l);
	bfs_dev_close(dev);
	unlink(log);
	free(log);
}
END_TEST

static Suite *import_suite(void)
{
	Suite *s = suite_create("import");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hold);
	tcase_add_test(tc, test_import_roundtrip);
	tcase_add_test(tc, test_mkfs_held);
	tcase_add_test(tc, test_nobarrier_logged);
	tcase_add_test(tc, test_begin_busy);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(import_suite)
