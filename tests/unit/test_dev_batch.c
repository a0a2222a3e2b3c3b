// SPDX-License-Identifier: MIT
/*
 * bfs_dev_submit(): batches of reads and writes on image files (direct
 * where the test filesystem allows it, with and without io_uring), memory
 * devices and devices with held ranges; argument checks, failure injection
 * and what the recorder sees.
 */
#include "unit.h"

#include <bfs/dev.h>
#include <bfs/os.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_SIZE	(8 * MiB)
#define NR_IO		80	/* more than a ring holds (64): completions make room for the rest */

static char *make_file(const char *tag)
{
	char *path = bfs_unit_tmpfile(tag);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, FILE_SIZE), 0);
	close(fd);
	return path;
}

static void fill(u8 *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (u8)(seed * 131 + i * 7 + (i >> 9));
}

/*
 * NR_IO writes of assorted shapes, none overlapping: aligned, from an
 * unaligned buffer, at an unaligned offset and length, one of 1 MiB; then
 * the same ranges read back in one batch into buffers of the opposite shape.
 */
struct shape {
	u64	off;
	size_t	len;
	size_t	skew;	/* buffer misalignment */
};

static void make_shapes(struct shape *s)
{
	u64 off = 0;

	for (unsigned i = 0; i < NR_IO; i++) {
		switch (i % 4) {
		case 0: s[i] = (struct shape){ off, 4096, 0 }; break;
		case 1: s[i] = (struct shape){ off, 65536, 3 }; break;
		case 2: s[i] = (struct shape){ off + 100, 777, 0 }; break;
		default: s[i] = (struct shape){ off, i == 3 ? MiB : 8192, 0 }; break;
		}
		off += BFS_ROUND_UP(s[i].len + 100, 4096);
	}
	ck_assert_uint_lt(off, FILE_SIZE);
}

static void check_batches(struct bfs_dev *dev)
{
	struct shape s[NR_IO];
	struct bfs_dev_io io[NR_IO];
	u8 *in = bfs_aligned_alloc(4096, 2 * MiB), *out = bfs_aligned_alloc(4096, 2 * MiB);
	u8 *src[NR_IO], *dst[NR_IO];
	unsigned i;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	make_shapes(s);
	for (i = 0; i < NR_IO; i++) {
		src[i] = bfs_aligned_alloc(4096, s[i].len + 4096);
		dst[i] = bfs_aligned_alloc(4096, s[i].len + 4096);
		ck_assert_ptr_nonnull(src[i]);
		ck_assert_ptr_nonnull(dst[i]);
		fill(src[i] + s[i].skew, s[i].len, i + 1);
		/* some through the page cache, as the data path sends small writes */
		io[i] = (struct bfs_dev_io){ .off = s[i].off, .buf = src[i] + s[i].skew,
					     .len = s[i].len, .write = true, .cached = i % 5 == 1 };
	}
	ck_assert_int_eq(bfs_dev_submit(dev, io, NR_IO), 0);
	for (i = 0; i < NR_IO; i++) {
		ck_assert_int_eq(io[i].ret, 0);
		/* reads land in buffers skewed the other way */
		io[i] = (struct bfs_dev_io){ .off = s[i].off, .buf = dst[i] + (s[i].skew ? 0 : 5),
					     .len = s[i].len, .cached = i % 7 == 3 };
	}
	ck_assert_int_eq(bfs_dev_submit(dev, io, NR_IO), 0);
	for (i = 0; i < NR_IO; i++) {
		ck_assert_int_eq(io[i].ret, 0);
		ck_assert_mem_eq(io[i].buf, src[i] + s[i].skew, s[i].len);
		/* and the plain path reads what the batch wrote */
		ck_assert_int_eq(bfs_dev_read(dev, s[i].off, out, s[i].len), 0);
		ck_assert_mem_eq(out, src[i] + s[i].skew, s[i].len);
	}
	for (i = 0; i < NR_IO; i++) {
		bfs_free(src[i]);
		bfs_free(dst[i]);
	}
	bfs_free(in);
	bfs_free(out);
}

static void check_file(bool uring)
{
	char *path = make_file("batch");
	struct bfs_dev *dev;

	/* tests run in a child each (check's fork mode): this one only */
	if (!uring)
		setenv("BFS_IO_URING", "0", 1);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &dev), 0);
	check_batches(dev);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	bfs_dev_close(dev);
	/* and once more, buffered */
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL | BFS_DEV_BUFFERED, &dev), 0);
	ck_assert(!bfs_dev_is_direct(dev));
	check_batches(dev);
	bfs_dev_close(dev);
	unlink(path);
	free(path);
}

START_TEST(test_batch_file)
{
	check_file(true);
}
END_TEST

START_TEST(test_batch_file_sync)
{
	check_file(false);
}
END_TEST

/* devices are direct by default wherever the filesystem takes O_DIRECT */
START_TEST(test_direct_default)
{
	char *path = make_file("default");
	int fd = open(path, O_RDONLY | O_DIRECT);
	struct bfs_dev *dev;

	if (fd >= 0)
		close(fd);
	ck_assert_int_eq(bfs_dev_open(path, 0, &dev), 0);
	ck_assert(bfs_dev_is_direct(dev) == (fd >= 0));
	bfs_dev_close(dev);
	setenv("BFS_BUFFERED_IO", "1", 1);
	ck_assert_int_eq(bfs_dev_open(path, 0, &dev), 0);
	ck_assert(!bfs_dev_is_direct(dev));
	bfs_dev_close(dev);
	unsetenv("BFS_BUFFERED_IO");
	unlink(path);
	free(path);
}
END_TEST

START_TEST(test_batch_mem_and_held)
{
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(FILE_SIZE, &dev), 0);
	check_batches(dev);
	ck_assert_int_eq(bfs_dev_hold(dev, 4096, 3 * MiB), 0);
	check_batches(dev);
	bfs_dev_close(dev);
}
END_TEST

/* a bad entry is refused with its own error, the others are done */
START_TEST(test_batch_checks)
{
	char *path = make_file("checks");
	struct bfs_dev *dev;
	u8 *buf = bfs_aligned_alloc(4096, 8192), zero[4096] = { 0 };
	struct bfs_dev_io io[3];

	ck_assert_ptr_nonnull(buf);
	fill(buf, 8192, 3);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &dev), 0);
	io[0] = (struct bfs_dev_io){ .off = 0, .buf = buf, .len = 4096, .write = true };
	io[1] = (struct bfs_dev_io){ .off = FILE_SIZE - 512, .buf = buf, .len = 4096, .write = true };
	io[2] = (struct bfs_dev_io){ .off = 8192, .buf = buf, .len = 4096, .write = true };
	ck_assert_int_eq(bfs_dev_submit(dev, io, 3), -ERANGE);
	ck_assert_int_eq(io[0].ret, 0);
	ck_assert_int_eq(io[1].ret, -ERANGE);
	ck_assert_int_eq(io[2].ret, 0);
	ck_assert_int_eq(bfs_dev_read(dev, 0, buf + 4096, 4096), 0);
	ck_assert_mem_eq(buf + 4096, buf, 4096);
	ck_assert_int_eq(bfs_dev_read(dev, FILE_SIZE - 4096, buf + 4096, 4096), 0);
	ck_assert_mem_eq(buf + 4096, zero, 4096);
	ck_assert_int_eq(bfs_dev_submit(dev, io, 0), 0);
	bfs_dev_close(dev);

	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY, &dev), 0);
	ck_assert_int_eq(bfs_dev_submit(dev, io, 1), -EROFS);
	io[0].write = false;
	ck_assert_int_eq(bfs_dev_submit(dev, io, 1), 0);
	bfs_dev_close(dev);
	bfs_free(buf);
	unlink(path);
	free(path);
}
END_TEST

/* injected failures: each write gets its own result, the rest are done */
START_TEST(test_batch_fail_injection)
{
	char *path = make_file("inject");
	struct bfs_dev *dev;
	u8 *buf = bfs_aligned_alloc(4096, 4 * 4096), *back = bfs_aligned_alloc(4096, 4096);
	struct bfs_dev_io io[4];
	unsigned i, failed = 0;

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &dev), 0);
	fill(buf, 4 * 4096, 11);
	for (i = 0; i < 4; i++)
		io[i] = (struct bfs_dev_io){ .off = (u64)i * 65536, .buf = buf + i * 4096,
					     .len = 4096, .write = true };
	bfs_dev_fail_writes_after(dev, 2);
	ck_assert_int_eq(bfs_dev_submit(dev, io, 4), -EIO);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(bfs_dev_read(dev, io[i].off, back, 4096), 0);
		if (io[i].ret) {
			ck_assert_int_eq(io[i].ret, -EIO);
			failed++;
		} else {
			ck_assert_mem_eq(back, io[i].buf, 4096);
		}
	}
	ck_assert_uint_eq(failed, 2);
	ck_assert_int_eq(bfs_dev_flush(dev), -EIO);
	bfs_dev_close(dev);
	bfs_free(buf);
	bfs_free(back);
	unlink(path);
	free(path);
}
END_TEST

/* every write of a batch is in the log, with its data, before the next flush */
START_TEST(test_batch_recorded)
{
	char *path = make_file("rec"), *logpath = bfs_unit_tmpfile("rec-log");
	struct bfs_dev *dev, *replay;
	struct bfs_iolog log;
	u8 *buf = bfs_aligned_alloc(4096, 8 * 4096), *back = bfs_aligned_alloc(4096, 8 * 4096);
	struct bfs_dev_io io[8];
	unsigned i, writes = 0;
	size_t e;

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &dev), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	fill(buf, 8 * 4096, 21);
	for (i = 0; i < 8; i++)
		io[i] = (struct bfs_dev_io){ .off = (u64)(7 - i) * 12288, .buf = buf + i * 4096,
					     .len = 4096, .write = true };
	ck_assert_int_eq(bfs_dev_submit(dev, io, 8), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	bfs_dev_close(dev);

	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_int_eq(bfs_dev_open_mem(FILE_SIZE, &replay), 0);
	for (e = 0; e < log.nr; e++) {
		if (log.entries[e].type == BFS_IOLOG_WRITE) {
			ck_assert_uint_eq(log.entries[e].len, 4096);
			writes++;
		}
		if (log.entries[e].type == BFS_IOLOG_FLUSH)
			ck_assert_uint_eq(writes, 8);	/* all before the flush */
		ck_assert_int_eq(bfs_iolog_apply(&log, e, replay, 0), 0);
	}
	ck_assert_uint_eq(writes, 8);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(bfs_dev_read(replay, io[i].off, back, 4096), 0);
		ck_assert_mem_eq(back, io[i].buf, 4096);
	}
	bfs_dev_close(replay);
	bfs_iolog_close(&log);
	bfs_free(buf);
	bfs_free(back);
	unlink(logpath);
	unlink(path);
	free(logpath);
	free(path);
}
END_TEST

/* what bfs_dev_submit_during()'s work saw: how often it ran, a sum of the buffers */
struct during {
	struct bfs_dev_io *io;
	unsigned nr, runs;
	u64	sum;
};

static void during_work(void *arg)
{
	struct during *w = arg;

	w->runs++;
	w->sum = 0;
	for (unsigned i = 0; i < w->nr; i++)
		for (size_t j = 0; j < w->io[i].len; j++)
			w->sum = w->sum * 31 + ((const u8 *)w->io[i].buf)[j];
}

/*
 * bfs_dev_submit_during(): the work runs exactly once and sees the buffers
 * being written, for one transfer (io_uring where a plain submit would
 * pwrite), several, none, failing ones and a read-only device; the writes
 * land as bfs_dev_submit()'s do.
 */
static void check_during(struct bfs_dev *dev, bool rdonly)
{
	u8 *buf = bfs_aligned_alloc(4096, 4 * 256 * KiB), *back = bfs_aligned_alloc(4096, 256 * KiB);
	struct bfs_dev_io io[4];
	struct during w = { .io = io };
	u64 want;
	unsigned n, i;

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(back);
	for (n = 0; n <= 4; n++) {
		fill(buf, 4 * 256 * KiB, n + 40);
		for (i = 0; i < n; i++)
			io[i] = (struct bfs_dev_io){ .off = (u64)i * MiB, .buf = buf + i * 256 * KiB,
						     .len = 256 * KiB, .write = true };
		if (n == 3)
			io[1].off = FILE_SIZE;	/* out of range: refused, the others done */
		w.nr = n;
		during_work(&w);
		want = w.sum;
		w.runs = 0;
		w.sum = 0;
		ck_assert_int_eq(bfs_dev_submit_during(dev, io, n, during_work, &w),
				 rdonly && n ? -EROFS : n == 3 ? -ERANGE : 0);
		ck_assert_uint_eq(w.runs, 1);
		ck_assert_uint_eq(w.sum, want);
		for (i = 0; i < n; i++) {
			if (rdonly) {
				ck_assert_int_eq(io[i].ret, -EROFS);
				continue;
			}
			ck_assert_int_eq(io[i].ret, n == 3 && i == 1 ? -ERANGE : 0);
			if (io[i].ret)
				continue;
			ck_assert_int_eq(bfs_dev_read(dev, io[i].off, back, 256 * KiB), 0);
			ck_assert_mem_eq(back, io[i].buf, 256 * KiB);
		}
	}
	bfs_free(buf);
	bfs_free(back);
}

static void check_during_file(bool uring)
{
	char *path = make_file("during");
	struct bfs_dev *dev;

	if (!uring)
		setenv("BFS_IO_URING", "0", 1);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &dev), 0);
	check_during(dev, false);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY, &dev), 0);
	check_during(dev, true);
	bfs_dev_close(dev);
	unlink(path);
	free(path);
}

START_TEST(test_batch_during)
{
	struct bfs_dev *dev;

	check_during_file(true);
	ck_assert_int_eq(bfs_dev_open_mem(FILE_SIZE, &dev), 0);
	check_during(dev, false);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_batch_during_sync)
{
	check_during_file(false);
}
END_TEST

static Suite *dev_batch_suite(void)
{
	Suite *s = suite_create("dev_batch");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_batch_file);
	tcase_add_test(tc, test_batch_file_sync);
	tcase_add_test(tc, test_direct_default);
	tcase_add_test(tc, test_batch_mem_and_held);
	tcase_add_test(tc, test_batch_checks);
	tcase_add_test(tc, test_batch_fail_injection);
	tcase_add_test(tc, test_batch_recorded);
	tcase_add_test(tc, test_batch_during);
	tcase_add_test(tc, test_batch_during_sync);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(dev_batch_suite)
