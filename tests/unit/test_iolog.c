// SPDX-License-Identifier: MIT
/*
 * Unit tests for libcore/os/iolog.c: recording a device's writes in the
 * dm-log-writes format, the raw bytes of that format, reading logs back,
 * rebuilding images from full logs, prefixes and torn writes, and rejecting
 * corrupted or truncated logs without crashing.
 */
#include "os/sysdeps.h"	/* <sys/stat.h> without the __le64 clash */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bfs/dev.h>
#include <bfs/iolog_format.h>
#include <bfs/os.h>

#include "unit.h"

#define DEV_SIZE	(1 * MiB)
#define MAX_STEPS	16

static void fill(u8 *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (u8)(seed * 131 + i * 7 + (i >> 9) + 1);
}

static bool all_zero(const u8 *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			return false;
	return true;
}

static u8 *read_whole(const char *path, size_t *len)
{
	struct stat st;
	u8 *buf;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, *len, 0), (ssize_t)*len);
	close(fd);
	return buf;
}

static void write_whole(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

/* the contents of any device, in a malloc'd buffer */
static u8 *dev_image(struct bfs_dev *dev)
{
	u64 size = bfs_dev_size(dev);
	u8 *buf = malloc(size);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(bfs_dev_read(dev, 0, buf, size), 0);
	return buf;
}

/* apply entries [0, n) of @log onto a copy of @base; caller closes */
static struct bfs_dev *replay(struct bfs_dev *base, const struct bfs_iolog *log, size_t n)
{
	struct bfs_dev *img;

	ck_assert_int_eq(bfs_dev_clone_mem(base, &img), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(bfs_iolog_apply(log, i, img, 0), 0);
	return img;
}

/*
 * A scripted workload on a memory device: after each step the device is
 * snapshotted, so that replaying a prefix of the log can be compared with
 * the state the device was in at that point.
 */
struct script {
	struct bfs_dev	*base;		/* contents before recording */
	struct bfs_dev	*dev;
	struct bfs_dev	*snap[MAX_STEPS];
	unsigned	nr;
	char		*logpath;
};

static void script_snap(struct script *s)
{
	ck_assert_uint_lt(s->nr, MAX_STEPS);
	ck_assert_int_eq(bfs_dev_clone_mem(s->dev, &s->snap[s->nr++]), 0);
}

static void script_run(struct script *s)
{
	u8 buf[12288];

	memset(s, 0, sizeof(*s));
	s->logpath = bfs_unit_tmpfile("iolog");
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &s->dev), 0);
	fill(bfs_dev_mem(s->dev), DEV_SIZE, 99);	/* a non-zero starting image */
	ck_assert_int_eq(bfs_dev_clone_mem(s->dev, &s->base), 0);
	ck_assert_int_eq(bfs_dev_record_start(s->dev, s->logpath), 0);
	ck_assert_int_eq(bfs_dev_record_start(s->dev, s->logpath), -EBUSY);

	fill(buf, sizeof(buf), 1);
	ck_assert_int_eq(bfs_dev_write(s->dev, 0, buf, 4096), 0);		/* 0 */
	script_snap(s);
	fill(buf, sizeof(buf), 2);
	ck_assert_int_eq(bfs_dev_write(s->dev, 1536, buf, 1000), 0);		/* 1: unaligned */
	script_snap(s);
	ck_assert_int_eq(bfs_dev_flush(s->dev), 0);				/* 2 */
	script_snap(s);
	ck_assert_int_eq(bfs_dev_record_mark(s->dev, "fsync 1"), 0);		/* 3 */
	script_snap(s);
	fill(buf, sizeof(buf), 3);
	ck_assert_int_eq(bfs_dev_write_fua(s->dev, 65536, buf, 12288), 0);	/* 4 */
	script_snap(s);
	ck_assert_int_eq(bfs_dev_discard(s->dev, 8192, 16384), 0);		/* 5 */
	script_snap(s);
	ck_assert_int_eq(bfs_dev_discard(s->dev, 100001, 999), 0);		/* 6: unaligned */
	script_snap(s);
	fill(buf, sizeof(buf), 4);
	ck_assert_int_eq(bfs_dev_write(s->dev, DEV_SIZE - 512, buf, 512), 0);	/* 7 */
	script_snap(s);
	ck_assert_int_eq(bfs_dev_write(s->dev, 0, buf, 0), 0);		/* not logged */
	ck_assert_int_eq(bfs_dev_record_mark(s->dev, ""), 0);			/* 8 */
	script_snap(s);
	ck_assert_int_eq(bfs_dev_record_stop(s->dev), 0);
	ck_assert_int_eq(bfs_dev_record_stop(s->dev), -EINVAL);
	ck_assert_int_eq(bfs_dev_record_mark(s->dev, "late"), -EINVAL);
	/* not recorded any more */
	ck_assert_int_eq(bfs_dev_write(s->dev, 0, buf, 512), 0);
}

static void script_free(struct script *s)
{
	for (unsigned i = 0; i < s->nr; i++)
		bfs_dev_close(s->snap[i]);
	bfs_dev_close(s->dev);
	bfs_dev_close(s->base);
	unlink(s->logpath);
	free(s->logpath);
}

static void check_entry(const struct bfs_iolog *log, size_t i, enum bfs_iolog_type type,
			u64 off, u64 len)
{
	ck_assert_uint_lt(i, log->nr);
	ck_assert_int_eq(log->entries[i].type, type);
	ck_assert_uint_eq(log->entries[i].off, off);
	ck_assert_uint_eq(log->entries[i].len, len);
}

START_TEST(test_record_entries)
{
	struct script s;
	struct bfs_iolog log;
	u8 buf[12288], data[12288];
	char text[64];

	script_run(&s);
	ck_assert_int_eq(bfs_iolog_open(s.logpath, &log), 0);
	ck_assert_uint_eq(log.sector_size, 512);
	ck_assert_uint_eq(log.nr, 9);
	check_entry(&log, 0, BFS_IOLOG_WRITE, 0, 4096);
	check_entry(&log, 1, BFS_IOLOG_WRITE, 1536, 1000);
	check_entry(&log, 2, BFS_IOLOG_FLUSH, 0, 0);
	check_entry(&log, 3, BFS_IOLOG_MARK, 0, 7);
	check_entry(&log, 4, BFS_IOLOG_FUA, 65536, 12288);
	check_entry(&log, 5, BFS_IOLOG_DISCARD, 8192, 16384);
	check_entry(&log, 6, BFS_IOLOG_DISCARD, 100001, 999);
	check_entry(&log, 7, BFS_IOLOG_WRITE, DEV_SIZE - 512, 512);
	check_entry(&log, 8, BFS_IOLOG_MARK, 0, 0);

	/* payloads */
	fill(data, sizeof(data), 1);
	ck_assert_int_eq(bfs_iolog_read_data(&log, 0, buf), 0);
	ck_assert_mem_eq(buf, data, 4096);
	fill(data, sizeof(data), 2);
	ck_assert_int_eq(bfs_iolog_read_data(&log, 1, buf), 0);
	ck_assert_mem_eq(buf, data, 1000);
	fill(data, sizeof(data), 3);
	ck_assert_int_eq(bfs_iolog_read_data(&log, 4, buf), 0);
	ck_assert_mem_eq(buf, data, 12288);
	memset(text, 0, sizeof(text));
	ck_assert_int_eq(bfs_iolog_read_data(&log, 3, text), 0);
	ck_assert_str_eq(text, "fsync 1");
	ck_assert_int_eq(bfs_iolog_read_data(&log, 2, buf), 0);
	ck_assert_int_eq(bfs_iolog_read_data(&log, 5, buf), -EINVAL);
	ck_assert_int_eq(bfs_iolog_read_data(&log, 9, buf), -EINVAL);
	ck_assert_int_eq(bfs_iolog_apply(&log, 9, s.dev, 0), -EINVAL);
	bfs_iolog_close(&log);
	bfs_iolog_close(&log);		/* idempotent */
	script_free(&s);
}
END_TEST

START_TEST(test_replay_full_and_prefixes)
{
	struct script s;
	struct bfs_iolog log;

	script_run(&s);
	ck_assert_int_eq(bfs_iolog_open(s.logpath, &log), 0);
	ck_assert_uint_eq(log.nr, s.nr);

	/* every prefix rebuilds the device as it was after that step */
	for (size_t n = 0; n <= log.nr; n++) {
		struct bfs_dev *img = replay(s.base, &log, n);
		struct bfs_dev *want = n ? s.snap[n - 1] : s.base;

		ck_assert_mem_eq(bfs_dev_mem(img), bfs_dev_mem(want), DEV_SIZE);
		bfs_dev_close(img);
	}
	bfs_iolog_close(&log);
	script_free(&s);
}
END_TEST

START_TEST(test_torn_writes)
{
	struct script s;
	struct bfs_iolog log;
	struct bfs_dev *img;
	u8 data[12288];

	script_run(&s);
	ck_assert_int_eq(bfs_iolog_open(s.logpath, &log), 0);

	/* entry 4: a 12 KiB FUA write at 64 KiB, torn after 5000 bytes */
	ck_assert_int_eq(bfs_dev_clone_mem(s.base, &img), 0);
	ck_assert_int_eq(bfs_iolog_apply(&log, 4, img, 5000), 0);
	fill(data, sizeof(data), 3);
	ck_assert_mem_eq(bfs_dev_mem(img) + 65536, data, 5000);
	ck_assert_mem_eq(bfs_dev_mem(img) + 65536 + 5000, bfs_dev_mem(s.base) + 65536 + 5000,
			 DEV_SIZE - 65536 - 5000);
	ck_assert_mem_eq(bfs_dev_mem(img), bfs_dev_mem(s.base), 65536);

	/* a torn discard zeroes only its start */
	ck_assert_int_eq(bfs_iolog_apply(&log, 5, img, 512), 0);
	ck_assert(all_zero(bfs_dev_mem(img) + 8192, 512));
	ck_assert_mem_eq(bfs_dev_mem(img) + 8192 + 512, bfs_dev_mem(s.base) + 8192 + 512, 1024);

	/* tearing more than the write is a caller bug */
	ck_assert_int_eq(bfs_iolog_apply(&log, 4, img, 12289), -EINVAL);
	/* marks and flushes change nothing */
	ck_assert_int_eq(bfs_iolog_apply(&log, 2, img, 0), 0);
	ck_assert_int_eq(bfs_iolog_apply(&log, 3, img, 0), 0);
	bfs_dev_close(img);
	bfs_iolog_close(&log);
	script_free(&s);
}
END_TEST

static u64 le64_at(const u8 *p)
{
	u64 v;

	memcpy(&v, p, 8);
	return le64_to_cpu((__le64){ v });
}

static u32 le32_at(const u8 *p)
{
	u32 v;

	memcpy(&v, p, 4);
	return le32_to_cpu((__le32){ v });
}

/* the bytes on disk, as dm-log-writes and replay-log define them */
START_TEST(test_raw_format)
{
	struct script s;
	size_t len;
	u8 *raw, data[12288];
	size_t pos;

	script_run(&s);
	raw = read_whole(s.logpath, &len);
	ck_assert_uint_eq(len % 512, 0);
	ck_assert_uint_eq(le64_at(raw + 0), 0x6a736677736872ULL);
	ck_assert_uint_eq(le64_at(raw + 8), 1);
	ck_assert_uint_eq(le64_at(raw + 16), 9);
	ck_assert_uint_eq(le32_at(raw + 24), 512);
	ck_assert(all_zero(raw + 32, 512 - 32));

	/* entry 0: write of sectors 0..7, payload right after the entry block */
	pos = 512;
	ck_assert_uint_eq(le64_at(raw + pos + 0), 0);
	ck_assert_uint_eq(le64_at(raw + pos + 8), 8);
	ck_assert_uint_eq(le64_at(raw + pos + 16), 0);
	ck_assert_uint_eq(le64_at(raw + pos + 24), 0);
	ck_assert(all_zero(raw + pos + 32, 512 - 32));
	fill(data, sizeof(data), 1);
	ck_assert_mem_eq(raw + pos + 512, data, 4096);

	/* entry 1: unaligned write, bfs extension, payload padded */
	pos += 512 + 4096;
	ck_assert_uint_eq(le64_at(raw + pos + 0), 1536);
	ck_assert_uint_eq(le64_at(raw + pos + 8), 2);
	ck_assert_uint_eq(le64_at(raw + pos + 16), BFS_IOLOG_F_BFS_BYTES);
	ck_assert_uint_eq(le64_at(raw + pos + 24), 1000);
	fill(data, sizeof(data), 2);
	ck_assert_mem_eq(raw + pos + 512, data, 1000);
	ck_assert(all_zero(raw + pos + 512 + 1000, 24));

	/* entry 2: flush */
	pos += 512 + 1024;
	ck_assert_uint_eq(le64_at(raw + pos + 8), 0);
	ck_assert_uint_eq(le64_at(raw + pos + 16), BFS_IOLOG_F_FLUSH);

	/* entry 3: mark, text inline after the header */
	pos += 512;
	ck_assert_uint_eq(le64_at(raw + pos + 16), BFS_IOLOG_F_MARK);
	ck_assert_uint_eq(le64_at(raw + pos + 24), 7);
	ck_assert_mem_eq(raw + pos + 32, "fsync 1\0", 8);

	/* entry 4: FUA write of 24 sectors at sector 128 */
	pos += 512;
	ck_assert_uint_eq(le64_at(raw + pos + 0), 128);
	ck_assert_uint_eq(le64_at(raw + pos + 8), 24);
	ck_assert_uint_eq(le64_at(raw + pos + 16), BFS_IOLOG_F_FUA);

	/* entry 5: discard of sectors 16..47, no payload */
	pos += 512 + 12288;
	ck_assert_uint_eq(le64_at(raw + pos + 0), 16);
	ck_assert_uint_eq(le64_at(raw + pos + 8), 32);
	ck_assert_uint_eq(le64_at(raw + pos + 16), BFS_IOLOG_F_DISCARD);

	/* entry 6: unaligned discard */
	pos += 512;
	ck_assert_uint_eq(le64_at(raw + pos + 0), 100001);
	ck_assert_uint_eq(le64_at(raw + pos + 8), 0);
	ck_assert_uint_eq(le64_at(raw + pos + 16), BFS_IOLOG_F_DISCARD | BFS_IOLOG_F_BFS_BYTES);
	ck_assert_uint_eq(le64_at(raw + pos + 24), 999);

	/* entries 7 and 8, then the end of the file */
	pos += 512 + 512 + 512 + 512;
	ck_assert_uint_eq(pos, len);
	free(raw);
	script_free(&s);
}
END_TEST

START_TEST(test_record_file_dev)
{
	char *devpath = bfs_unit_tmpfile("fdev");
	char *logpath = bfs_unit_tmpfile("flog");
	struct bfs_dev *dev, *base, *img;
	struct bfs_iolog log;
	u8 buf[65536];
	u8 *want;
	int fd = open(devpath, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, DEV_SIZE), 0);
	close(fd);
	ck_assert_int_eq(bfs_dev_open(devpath, BFS_DEV_EXCL, &dev), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);

	srand(7);
	for (unsigned i = 0; i < 200; i++) {
		size_t len = 1 + (size_t)rand() % sizeof(buf);
		u64 off = (u64)rand() % (DEV_SIZE - len);

		if (i % 3 == 0) {	/* mostly sector aligned, like a real fs */
			off &= ~511ULL;
			len = BFS_MAX(len & ~511UL, 512);
		}
		fill(buf, len, i);
		ck_assert_int_eq(bfs_dev_write(dev, off, buf, len), 0);
		if (i % 17 == 0)
			ck_assert_int_eq(bfs_dev_flush(dev), 0);
		if (i % 29 == 0) {
			int ret = bfs_dev_discard(dev, off, len);

			ck_assert(ret == 0 || ret == -EOPNOTSUPP);
		}
	}
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	img = replay(base, &log, log.nr);
	want = dev_image(dev);
	ck_assert_mem_eq(bfs_dev_mem(img), want, DEV_SIZE);

	/* replaying onto a file device works as well */
	bfs_dev_close(dev);
	ck_assert_int_eq(bfs_dev_open(devpath, 0, &dev), 0);
	ck_assert_int_eq(bfs_dev_write(dev, 0, bfs_dev_mem(base), DEV_SIZE), 0);
	for (size_t i = 0; i < log.nr; i++)
		ck_assert_int_eq(bfs_iolog_apply(&log, i, dev, 0), 0);
	free(want);
	want = dev_image(dev);
	ck_assert_mem_eq(bfs_dev_mem(img), want, DEV_SIZE);

	free(want);
	bfs_iolog_close(&log);
	bfs_dev_close(img);
	bfs_dev_close(base);
	bfs_dev_close(dev);
	unlink(devpath);
	unlink(logpath);
	free(devpath);
	free(logpath);
}
END_TEST

struct thread_arg {
	struct bfs_dev *dev;
	unsigned id;
};

#define NR_THREADS	4
#define WRITES_PER_THREAD 200

static void *writer_thread(void *p)
{
	struct thread_arg *a = p;
	u8 buf[4096];
	char mark[32];

	for (unsigned i = 0; i < WRITES_PER_THREAD; i++) {
		/* each thread owns a slice; later writes overwrite earlier ones */
		u64 slot = (u64)a->id * 32 + (i % 32);

		fill(buf, sizeof(buf), a->id * 1000 + i);
		if (bfs_dev_write(a->dev, slot * 4096, buf, sizeof(buf)))
			return (void *)1;
		if (i % 50 == 0) {
			snprintf(mark, sizeof(mark), "t%u-%u", a->id, i);
			if (bfs_dev_record_mark(a->dev, mark) || bfs_dev_flush(a->dev))
				return (void *)1;
		}
	}
	return NULL;
}

START_TEST(test_record_threads)
{
	char *logpath = bfs_unit_tmpfile("tlog");
	struct thread_arg args[NR_THREADS];
	pthread_t t[NR_THREADS];
	struct bfs_dev *dev, *base, *img;
	struct bfs_iolog log;
	size_t writes = 0, marks = 0;

	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	for (unsigned i = 0; i < NR_THREADS; i++) {
		args[i] = (struct thread_arg){ dev, i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer_thread, &args[i]), 0);
	}
	for (unsigned i = 0; i < NR_THREADS; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		ck_assert_ptr_null(ret);
	}
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	for (size_t i = 0; i < log.nr; i++) {
		writes += log.entries[i].type == BFS_IOLOG_WRITE;
		marks += log.entries[i].type == BFS_IOLOG_MARK;
	}
	ck_assert_uint_eq(writes, NR_THREADS * WRITES_PER_THREAD);
	ck_assert_uint_eq(marks, NR_THREADS * (WRITES_PER_THREAD / 50));
	img = replay(base, &log, log.nr);
	ck_assert_mem_eq(bfs_dev_mem(img), bfs_dev_mem(dev), DEV_SIZE);
	bfs_dev_close(img);
	bfs_iolog_close(&log);
	bfs_dev_close(base);
	bfs_dev_close(dev);
	unlink(logpath);
	free(logpath);
}
END_TEST

START_TEST(test_record_misc)
{
	char *logpath = bfs_unit_tmpfile("mlog");
	struct bfs_dev *dev, *base, *img;
	struct bfs_iolog log;
	char longmark[600];
	u8 *big = malloc(2 * MiB + 512);

	ck_assert_ptr_nonnull(big);
	ck_assert_int_eq(bfs_dev_open_mem(4 * MiB, &dev), 0);
	ck_assert_int_eq(bfs_dev_record_mark(dev, "x"), -EINVAL);
	ck_assert_int_eq(bfs_dev_record_stop(dev), -EINVAL);
	ck_assert_int_eq(bfs_dev_record_start(dev, "/nonexistent/dir/log"), -ENOENT);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);

	/* marks must fit the entry block, with a NUL: 512 - 32 - 1 bytes */
	memset(longmark, 'm', sizeof(longmark));
	longmark[480] = 0;
	ck_assert_int_eq(bfs_dev_record_mark(dev, longmark), -ENAMETOOLONG);
	longmark[479] = 0;
	ck_assert_int_eq(bfs_dev_record_mark(dev, longmark), 0);

	/* a payload bigger than the recorder's buffer */
	fill(big, 2 * MiB + 512, 11);
	ck_assert_int_eq(bfs_dev_write(dev, 512, big, 2 * MiB + 512), 0);
	ck_assert_int_eq(bfs_dev_write(dev, 3 * MiB + 7, big, 1000), 0);

	/* failed writes are not logged */
	bfs_dev_fail_writes_after(dev, 1);
	ck_assert_int_eq(bfs_dev_write(dev, 0, big, 512), 0);
	ck_assert_int_eq(bfs_dev_write(dev, 4096, big, 512), -EIO);
	bfs_dev_fail_writes_after(dev, 0);

	/* closing the device finishes the log too */
	bfs_dev_close(dev);
	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_uint_eq(log.nr, 4);
	check_entry(&log, 0, BFS_IOLOG_MARK, 0, 479);
	check_entry(&log, 1, BFS_IOLOG_WRITE, 512, 2 * MiB + 512);
	check_entry(&log, 2, BFS_IOLOG_WRITE, 3 * MiB + 7, 1000);
	check_entry(&log, 3, BFS_IOLOG_WRITE, 0, 512);
	img = replay(base, &log, log.nr);
	ck_assert_mem_eq(bfs_dev_mem(img) + 512, big, 2 * MiB + 512);
	ck_assert_mem_eq(bfs_dev_mem(img), big, 512);
	ck_assert_mem_eq(bfs_dev_mem(img) + 3 * MiB + 7, big, 1000);
	bfs_dev_close(img);
	bfs_iolog_close(&log);

	bfs_dev_close(base);
	free(big);
	unlink(logpath);
	free(logpath);
}
END_TEST

/* the super is current after each mark: a recorder that died leaves a log */
START_TEST(test_log_readable_while_recording)
{
	char *logpath = bfs_unit_tmpfile("live");
	struct bfs_dev *dev;
	struct bfs_iolog log;
	u8 buf[4096] = { 1 };

	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_uint_eq(log.nr, 0);
	bfs_iolog_close(&log);

	ck_assert_int_eq(bfs_dev_write(dev, 0, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	ck_assert_int_eq(bfs_dev_record_mark(dev, "one"), 0);
	ck_assert_int_eq(bfs_dev_write(dev, 4096, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_uint_eq(log.nr, 3);
	check_entry(&log, 2, BFS_IOLOG_MARK, 0, 3);
	bfs_iolog_close(&log);

	ck_assert_int_eq(bfs_dev_write_fua(dev, 8192, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_uint_eq(log.nr, 5);
	check_entry(&log, 4, BFS_IOLOG_FUA, 8192, 4096);
	bfs_iolog_close(&log);

	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	bfs_dev_close(dev);
	unlink(logpath);
	free(logpath);
}
END_TEST

/* ---- logs from elsewhere: a hand-built kernel-style log ---- */

static size_t put_entry(u8 *raw, size_t pos, u32 ss, u64 sector, u64 nr, u64 flags, u64 dlen)
{
	struct bfs_iolog_entry_hdr h = {
		.sector = cpu_to_le64(sector),
		.nr_sectors = cpu_to_le64(nr),
		.flags = cpu_to_le64(flags),
		.data_len = cpu_to_le64(dlen),
	};

	memset(raw + pos, 0, ss);
	memcpy(raw + pos, &h, sizeof(h));
	return pos + ss;
}

static size_t put_super(u8 *raw, u32 ss, u64 nr)
{
	struct bfs_iolog_super sb = {
		.magic = cpu_to_le64(BFS_IOLOG_MAGIC),
		.version = cpu_to_le64(BFS_IOLOG_VERSION),
		.nr_entries = cpu_to_le64(nr),
		.sectorsize = cpu_to_le32(ss),
	};

	memset(raw, 0, ss);
	memcpy(raw, &sb, sizeof(sb));
	return ss;
}

START_TEST(test_kernel_log)
{
	const u32 ss = 4096;
	char *path = bfs_unit_tmpfile("klog");
	u8 *raw = calloc(1, 16 * ss);
	struct bfs_dev *dev;
	struct bfs_iolog log;
	size_t pos;

	ck_assert_ptr_nonnull(raw);
	pos = put_super(raw, ss, 4);
	/* preflush + FUA write of 2 blocks at block 3, tagged REQ_META */
	pos = put_entry(raw, pos, ss, 3, 2,
			BFS_IOLOG_F_FLUSH | BFS_IOLOG_F_FUA | BFS_IOLOG_F_METADATA, 0);
	memset(raw + pos, 0xab, 2 * ss);
	pos += 2 * ss;
	pos = put_entry(raw, pos, ss, 1, 1, BFS_IOLOG_F_DISCARD, 0);
	pos = put_entry(raw, pos, ss, 0, 0, BFS_IOLOG_F_MARK, 17);
	memcpy(raw + pos - ss + 32, "dm-log-writes-end", 17);
	pos = put_entry(raw, pos, ss, 0, 0, BFS_IOLOG_F_FLUSH, 0);
	write_whole(path, raw, pos);

	ck_assert_int_eq(bfs_iolog_open(path, &log), 0);
	ck_assert_uint_eq(log.sector_size, ss);
	ck_assert_uint_eq(log.nr, 5);
	check_entry(&log, 0, BFS_IOLOG_FLUSH, 0, 0);
	check_entry(&log, 1, BFS_IOLOG_FUA, 3 * ss, 2 * ss);
	check_entry(&log, 2, BFS_IOLOG_DISCARD, ss, ss);
	check_entry(&log, 3, BFS_IOLOG_MARK, 0, 17);
	check_entry(&log, 4, BFS_IOLOG_FLUSH, 0, 0);

	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	memset(bfs_dev_mem(dev), 0x11, DEV_SIZE);
	for (size_t i = 0; i < log.nr; i++)
		ck_assert_int_eq(bfs_iolog_apply(&log, i, dev, 0), 0);
	ck_assert_int_eq(bfs_dev_mem(dev)[0], 0x11);
	ck_assert(all_zero(bfs_dev_mem(dev) + ss, ss));
	ck_assert_int_eq(bfs_dev_mem(dev)[2 * ss], 0x11);
	ck_assert_int_eq(bfs_dev_mem(dev)[3 * ss], 0xab);
	ck_assert_int_eq(bfs_dev_mem(dev)[5 * ss - 1], 0xab);
	ck_assert_int_eq(bfs_dev_mem(dev)[5 * ss], 0x11);

	/* an entry beyond the device fails on apply, not on open */
	bfs_dev_close(dev);
	ck_assert_int_eq(bfs_dev_open_mem(4 * ss, &dev), 0);
	ck_assert_int_eq(bfs_iolog_apply(&log, 1, dev, 0), -ERANGE);
	bfs_dev_close(dev);
	bfs_iolog_close(&log);
	unlink(path);
	free(path);
	free(raw);
}
END_TEST

/* ---- damaged logs ---- */

static int open_bytes(const char *path, const u8 *raw, size_t len)
{
	struct bfs_iolog log;
	int ret;

	write_whole(path, raw, len);
	ret = bfs_iolog_open(path, &log);
	if (!ret) {
		struct bfs_dev *dev;

		/* whatever parsed must also replay without harm */
		ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
		for (size_t i = 0; i < log.nr; i++)
			bfs_iolog_apply(&log, i, dev, 0);
		bfs_dev_close(dev);
		bfs_iolog_close(&log);
	} else {
		ck_assert_int_eq(log.fd, -1);
		ck_assert_ptr_null(log.entries);
	}
	return ret;
}

START_TEST(test_corrupt_header)
{
	struct script s;
	char *path = bfs_unit_tmpfile("bad");
	size_t len;
	u8 *raw, *bad;

	script_run(&s);
	raw = read_whole(s.logpath, &len);
	bad = malloc(len);
	ck_assert_ptr_nonnull(bad);

	ck_assert_int_eq(open_bytes(path, raw, len), 0);
	ck_assert_int_eq(open_bytes(path, raw, 0), -ENODATA);

	memcpy(bad, raw, len);
	bad[0] ^= 1;
	ck_assert_int_eq(open_bytes(path, bad, len), -EINVAL);

	memcpy(bad, raw, len);
	bad[8] = 2;
	ck_assert_int_eq(open_bytes(path, bad, len), -EPROTONOSUPPORT);

	memcpy(bad, raw, len);		/* sector size 513, 0, 256, 1 MiB */
	bad[24] = 1; bad[25] = 2;
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);
	bad[24] = 0; bad[25] = 0;
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);
	bad[24] = 0; bad[25] = 1;
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);
	bad[24] = 0; bad[25] = 0; bad[26] = 0x10;
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);

	memcpy(bad, raw, len);		/* more entries than the file holds */
	bad[16] = 0xff; bad[17] = 0xff;
	ck_assert_int_eq(open_bytes(path, bad, len), -ENODATA);
	memset(bad + 16, 0xff, 8);
	ck_assert_int_eq(open_bytes(path, bad, len), -ENODATA);

	memcpy(bad, raw, len);		/* one more entry than written */
	bad[16] = 10;
	ck_assert_int_eq(open_bytes(path, bad, len), -ENODATA);

	memcpy(bad, raw, len);		/* unknown flag on entry 0 */
	bad[512 + 16 + 3] = 0x80;
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);

	memcpy(bad, raw, len);		/* entry 0 claims a huge payload */
	memset(bad + 512 + 8, 0xff, 8);
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);
	bad[512 + 14] = 0;
	bad[512 + 15] = 0;
	ck_assert_int_eq(open_bytes(path, bad, len), -ENODATA);

	memcpy(bad, raw, len);		/* entry 0 empty: no flags, no sectors */
	memset(bad + 512 + 8, 0, 8);
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);

	memcpy(bad, raw, len);		/* entry 0 sector overflows a byte offset */
	memset(bad + 512, 0xff, 8);
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);

	memcpy(bad, raw, len);		/* entry 1 (bytes): length/sectors mismatch */
	bad[512 + 4608 + 24] = 0xff; bad[512 + 4608 + 25] = 0xff;
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);

	memcpy(bad, raw, len);		/* mark text longer than its block */
	bad[512 + 4608 + 1536 + 512 + 24] = 0xff;
	bad[512 + 4608 + 1536 + 512 + 25] = 0x1;
	ck_assert_int_eq(open_bytes(path, bad, len), -EBADMSG);

	free(bad);
	free(raw);
	unlink(path);
	free(path);
	script_free(&s);
}
END_TEST

START_TEST(test_truncated_everywhere)
{
	struct script s;
	char *path = bfs_unit_tmpfile("trunc");
	size_t len;
	u8 *raw;

	script_run(&s);
	raw = read_whole(s.logpath, &len);
	/* every cut short of the full log is an error, never a crash */
	for (size_t cut = 0; cut < len; cut += (cut < 1024 ? 1 : 97)) {
		int ret = open_bytes(path, raw, cut);

		ck_assert_msg(ret == -ENODATA, "cut at %zu: %d", cut, ret);
	}
	free(raw);
	unlink(path);
	free(path);
	script_free(&s);
}
END_TEST

START_TEST(test_fuzz_bytes)
{
	struct script s;
	char *path = bfs_unit_tmpfile("fuzz");
	size_t len;
	u8 *raw, *bad;

	script_run(&s);
	raw = read_whole(s.logpath, &len);
	bad = malloc(len);
	ck_assert_ptr_nonnull(bad);
	srand(1234);
	for (unsigned iter = 0; iter < 500; iter++) {
		memcpy(bad, raw, len);
		for (unsigned k = 0; k < 1 + iter % 4; k++) {
			/* aim at the super and the entry headers */
			size_t blk = (size_t)rand() % (len / 512);
			size_t at = blk * 512 + (size_t)rand() % 40;

			bad[at] = (u8)rand();
		}
		int ret = open_bytes(path, bad, len);

		ck_assert_int_le(ret, 0);
	}
	free(bad);
	free(raw);
	unlink(path);
	free(path);
	script_free(&s);
}
END_TEST

START_TEST(test_open_errors)
{
	struct bfs_iolog log;

	ck_assert_int_eq(bfs_iolog_open("/nonexistent/log", &log), -ENOENT);
	ck_assert_int_eq(log.fd, -1);
	bfs_iolog_close(&log);
	ck_assert_int_eq(bfs_iolog_open("/tmp", &log), -EISDIR);
	ck_assert_int_eq(bfs_iolog_open("/dev/null", &log), -EINVAL);
}
END_TEST

static Suite *iolog_suite(void)
{
	Suite *s = suite_create("iolog");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_record_entries);
	tcase_add_test(tc, test_replay_full_and_prefixes);
	tcase_add_test(tc, test_torn_writes);
	tcase_add_test(tc, test_raw_format);
	tcase_add_test(tc, test_record_file_dev);
	tcase_add_test(tc, test_record_threads);
	tcase_add_test(tc, test_record_misc);
	tcase_add_test(tc, test_log_readable_while_recording);
	tcase_add_test(tc, test_kernel_log);
	tcase_add_test(tc, test_corrupt_header);
	tcase_add_test(tc, test_truncated_everywhere);
	tcase_add_test(tc, test_fuzz_bytes);
	tcase_add_test(tc, test_open_errors);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(iolog_suite)
