// SPDX-License-Identifier: MIT
/*
 * Unit tests for libcore/os/dev.c: memory and file devices, argument checks,
 * locking, discard, O_DIRECT and failure injection.
 *
 * Block devices are only tested when BFS_TEST_BLKDEV names a scratch block
 * device (its contents are destroyed), e.g. a loop device.
 */
#include "os/sysdeps.h"	/* <sys/stat.h> without the __le64 clash */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bfs/dev.h>
#include <bfs/os.h>

#include "unit.h"

#define MEM_SIZE	(1 * MiB)

/* a file of @size bytes (sparse), path returned malloc'd */
static char *make_file(const char *tag, u64 size)
{
	char *path = bfs_unit_tmpfile(tag);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
	return path;
}

static void drop_file(char *path)
{
	unlink(path);
	free(path);
}

static void fill(u8 *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (u8)(seed * 131 + i * 7 + (i >> 9));
}

static bool all_zero(const u8 *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i])
			return false;
	return true;
}

/* write/read round trips and range checks common to every device kind */
static void check_rw(struct bfs_dev *dev)
{
	u64 size = bfs_dev_size(dev);
	u8 in[8192], out[8192];

	fill(in, sizeof(in), 1);
	ck_assert_int_eq(bfs_dev_write(dev, 0, in, sizeof(in)), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 0, out, sizeof(out)), 0);
	ck_assert_mem_eq(in, out, sizeof(in));

	/* unaligned offset and length */
	fill(in, 777, 2);
	ck_assert_int_eq(bfs_dev_write(dev, 12345, in, 777), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 12345, out, 777), 0);
	ck_assert_mem_eq(in, out, 777);

	/* the last byte, and zero-length transfers at the end */
	ck_assert_int_eq(bfs_dev_write(dev, size - 1, in, 1), 0);
	ck_assert_int_eq(bfs_dev_read(dev, size - 1, out, 1), 0);
	ck_assert_int_eq(out[0], in[0]);
	ck_assert_int_eq(bfs_dev_write(dev, size, in, 0), 0);
	ck_assert_int_eq(bfs_dev_read(dev, size, out, 0), 0);

	/* past the end, and ranges whose end overflows a u64 */
	ck_assert_int_eq(bfs_dev_read(dev, size - 1, out, 2), -ERANGE);
	ck_assert_int_eq(bfs_dev_write(dev, size - 1, in, 2), -ERANGE);
	ck_assert_int_eq(bfs_dev_read(dev, size + 1, out, 0), -ERANGE);
	ck_assert_int_eq(bfs_dev_write(dev, UINT64_MAX, in, 2), -ERANGE);
	ck_assert_int_eq(bfs_dev_read(dev, UINT64_MAX - 1, out, 4), -ERANGE);
	ck_assert_int_eq(bfs_dev_discard(dev, size - 512, 1024), -ERANGE);
	ck_assert_int_eq(bfs_dev_discard(dev, UINT64_MAX, 2), -ERANGE);

	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	ck_assert_int_eq(bfs_dev_write_fua(dev, 4096, in, 512), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 4096, out, 512), 0);
	ck_assert_mem_eq(in, out, 512);
}

START_TEST(test_mem_basic)
{
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(MEM_SIZE, &dev), 0);
	ck_assert_uint_eq(bfs_dev_size(dev), MEM_SIZE);
	ck_assert_uint_eq(bfs_dev_sector_size(dev), 512);
	ck_assert(!bfs_dev_is_blockdev(dev));
	ck_assert(!bfs_dev_is_readonly(dev));
	ck_assert_ptr_nonnull(bfs_dev_path(dev));
	ck_assert_ptr_nonnull(bfs_dev_mem(dev));
	ck_assert(all_zero(bfs_dev_mem(dev), MEM_SIZE));
	check_rw(dev);
	bfs_dev_close(dev);

	ck_assert_int_eq(bfs_dev_open_mem(0, &dev), -EINVAL);
	ck_assert_ptr_null(dev);
	bfs_dev_close(NULL);
}
END_TEST

START_TEST(test_mem_large_is_lazy)
{
	struct bfs_dev *dev;
	u8 b = 0x5a;

	/* 1 GiB of calloc must not touch the pages */
	ck_assert_int_eq(bfs_dev_open_mem(1 * GiB, &dev), 0);
	ck_assert_int_eq(bfs_dev_write(dev, 1 * GiB - 1, &b, 1), 0);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_clone_mem)
{
	struct bfs_dev *a, *b;
	u8 buf[4096], out[4096];

	ck_assert_int_eq(bfs_dev_open_mem(MEM_SIZE, &a), 0);
	fill(buf, sizeof(buf), 3);
	ck_assert_int_eq(bfs_dev_write(a, 8192, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(a, &b), 0);
	ck_assert_uint_eq(bfs_dev_size(b), MEM_SIZE);
	ck_assert_mem_eq(bfs_dev_mem(a), bfs_dev_mem(b), MEM_SIZE);

	/* independent copies */
	memset(out, 0xff, sizeof(out));
	ck_assert_int_eq(bfs_dev_write(b, 8192, out, sizeof(out)), 0);
	ck_assert_int_eq(bfs_dev_read(a, 8192, out, sizeof(out)), 0);
	ck_assert_mem_eq(buf, out, sizeof(buf));
	bfs_dev_close(a);
	bfs_dev_close(b);
}
END_TEST

START_TEST(test_file_basic)
{
	char *path = make_file("dev", MEM_SIZE);
	struct bfs_dev *dev, *clone;
	u8 in[4096], out[4096];
	int fd;

	ck_assert_int_eq(bfs_dev_open(path, 0, &dev), 0);
	ck_assert_uint_eq(bfs_dev_size(dev), MEM_SIZE);
	ck_assert_uint_eq(bfs_dev_sector_size(dev), 512);
	ck_assert(!bfs_dev_is_blockdev(dev));
	ck_assert(!bfs_dev_is_readonly(dev));
	ck_assert_str_eq(bfs_dev_path(dev), path);
	ck_assert_ptr_null(bfs_dev_mem(dev));
	check_rw(dev);

	/* the data really is in the file */
	fill(in, sizeof(in), 4);
	ck_assert_int_eq(bfs_dev_write(dev, 65536, in, sizeof(in)), 0);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, out, sizeof(out), 65536), (ssize_t)sizeof(out));
	close(fd);
	ck_assert_mem_eq(in, out, sizeof(in));

	/* a memory clone of a file device */
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &clone), 0);
	ck_assert_mem_eq(bfs_dev_mem(clone) + 65536, in, sizeof(in));
	bfs_dev_close(clone);
	bfs_dev_close(dev);
	drop_file(path);
}
END_TEST

START_TEST(test_file_rdonly)
{
	char *path = make_file("ro", MEM_SIZE);
	struct bfs_dev *dev;
	u8 buf[512] = { 1 };

	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY, &dev), 0);
	ck_assert(bfs_dev_is_readonly(dev));
	ck_assert_int_eq(bfs_dev_read(dev, 0, buf, sizeof(buf)), 0);
	ck_assert(all_zero(buf, sizeof(buf)));
	ck_assert_int_eq(bfs_dev_write(dev, 0, buf, sizeof(buf)), -EROFS);
	ck_assert_int_eq(bfs_dev_write_fua(dev, 0, buf, sizeof(buf)), -EROFS);
	ck_assert_int_eq(bfs_dev_discard(dev, 0, 512), -EROFS);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	bfs_dev_close(dev);
	drop_file(path);
}
END_TEST

START_TEST(test_open_errors)
{
	char *dir = bfs_unit_tmpfile("dir");
	char *fifo = bfs_unit_tmpfile("fifo");
	struct bfs_dev *dev = (void *)1;

	ck_assert_int_eq(bfs_dev_open("/nonexistent/bfs/dev", 0, &dev), -ENOENT);
	ck_assert_ptr_null(dev);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	ck_assert_int_eq(bfs_dev_open(dir, 0, &dev), -EISDIR);
	ck_assert_int_eq(bfs_dev_open(dir, BFS_DEV_RDONLY, &dev), -EISDIR);
	ck_assert_int_eq(bfs_dev_open("/dev/null", 0, &dev), -ENODEV);
	/* a FIFO must be refused, not block the open */
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(bfs_dev_open(fifo, 0, &dev), -ENODEV);
	rmdir(dir);
	unlink(fifo);
	free(dir);
	free(fifo);
}
END_TEST

/* a holder that lets go of its device after @ms milliseconds */
struct late_release {
	struct bfs_dev *dev;
	unsigned ms;
};

static void *release_later(void *arg)
{
	struct late_release *r = arg;
	struct timespec ts = { r->ms / 1000, (long)(r->ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
	bfs_dev_close(r->dev);
	return NULL;
}

/*
 * bfs_dev_open_wait(): an open that finds the lock held waits until the
 * holder lets go, or is -EBUSY when the holder keeps it past the timeout; the
 * timer's signal of that wait interrupts nothing afterwards.
 */
START_TEST(test_flock_wait)
{
	char *path = make_file("lockwait", MEM_SIZE);
	struct late_release r = { .ms = 100 };
	struct timespec nap = { 0, 150 * 1000 * 1000 };
	struct bfs_dev *a, *b;
	pthread_t t;

	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &r.dev), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, release_later, &r), 0);
	/* 0, not -EBUSY: it ended when the holder let go */
	ck_assert_int_eq(bfs_dev_open_wait(path, BFS_DEV_EXCL, 10ULL * 1000000000, &a), 0);
	pthread_join(t, NULL);

	/* held throughout: busy after the wait, by exclusive and shared openers */
	ck_assert_int_eq(bfs_dev_open_wait(path, BFS_DEV_EXCL, 50 * 1000000, &b), -EBUSY);
	ck_assert_int_eq(bfs_dev_open_wait(path, BFS_DEV_RDONLY, 50 * 1000000, &b), -EBUSY);
	/* no timer signal left over to cut a later sleep short */
	ck_assert_int_eq(nanosleep(&nap, NULL), 0);
	/* no waiting asked for: as bfs_dev_open() */
	ck_assert_int_eq(bfs_dev_open_wait(path, BFS_DEV_EXCL, 0, &b), -EBUSY);

	/* a shared holder, and an exclusive opener waiting for it */
	bfs_dev_close(a);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY, &r.dev), 0);
	ck_assert_int_eq(bfs_dev_open_wait(path, BFS_DEV_RDONLY, 50 * 1000000, &b), 0);
	bfs_dev_close(b);
	ck_assert_int_eq(pthread_create(&t, NULL, release_later, &r), 0);
	ck_assert_int_eq(bfs_dev_open_wait(path, BFS_DEV_EXCL, 10ULL * 1000000000, &a), 0);
	pthread_join(t, NULL);
	bfs_dev_close(a);
	drop_file(path);
}
END_TEST

START_TEST(test_flock)
{
	char *path = make_file("lock", MEM_SIZE);
	struct bfs_dev *a, *b, *c;

	/* exclusive keeps out everyone but NOLOCK readers */
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &a), 0);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &b), -EBUSY);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL | BFS_DEV_RDONLY, &b), -EBUSY);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY, &b), -EBUSY);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY | BFS_DEV_NOLOCK, &b), 0);
	bfs_dev_close(b);
	bfs_dev_close(a);

	/* readers share, and keep an exclusive opener out */
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY, &a), 0);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY, &b), 0);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &c), -EBUSY);
	bfs_dev_close(a);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &c), -EBUSY);
	bfs_dev_close(b);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &c), 0);
	bfs_dev_close(c);
	drop_file(path);
}
END_TEST

static blkcnt_t file_blocks(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_blocks;
}

START_TEST(test_discard_file)
{
	const size_t len = 4 * MiB;
	char *path = make_file("discard", len);
	struct bfs_dev *dev;
	u8 *buf = malloc(len);
	blkcnt_t before, after;
	int ret;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(bfs_dev_open(path, 0, &dev), 0);
	memset(buf, 0xaa, len);
	ck_assert_int_eq(bfs_dev_write(dev, 0, buf, len), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	before = file_blocks(path);

	ret = bfs_dev_discard(dev, 1 * MiB, 2 * MiB);
	if (ret == -EOPNOTSUPP)
		goto out;	/* the test filesystem cannot punch holes */
	ck_assert_int_eq(ret, 0);
	after = file_blocks(path);
	ck_assert_int_le(after, before - (2 * MiB) / 512);
	ck_assert_uint_eq(bfs_dev_size(dev), len);

	ck_assert_int_eq(bfs_dev_read(dev, 0, buf, len), 0);
	ck_assert_int_eq(buf[1 * MiB - 1], 0xaa);
	ck_assert(all_zero(buf + 1 * MiB, 2 * MiB));
	ck_assert_int_eq(buf[3 * MiB], 0xaa);

	/* partial blocks still read back as zeros */
	ck_assert_int_eq(bfs_dev_discard(dev, 100, 1000), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 0, buf, 4096), 0);
	ck_assert_int_eq(buf[99], 0xaa);
	ck_assert(all_zero(buf + 100, 1000));
	ck_assert_int_eq(buf[1100], 0xaa);
	ck_assert_int_eq(bfs_dev_discard(dev, 0, 0), 0);
out:
	bfs_dev_close(dev);
	free(buf);
	drop_file(path);
}
END_TEST

START_TEST(test_discard_mem)
{
	struct bfs_dev *dev;
	u8 *mem;

	ck_assert_int_eq(bfs_dev_open_mem(MEM_SIZE, &dev), 0);
	mem = bfs_dev_mem(dev);
	memset(mem, 0x11, MEM_SIZE);
	ck_assert_int_eq(bfs_dev_discard(dev, 4096, 8192 + 3), 0);
	ck_assert_int_eq(mem[4095], 0x11);
	ck_assert(all_zero(mem + 4096, 8192 + 3));
	ck_assert_int_eq(mem[4096 + 8192 + 3], 0x11);
	ck_assert_int_eq(bfs_dev_discard(dev, MEM_SIZE, 1), -ERANGE);
	bfs_dev_close(dev);
}
END_TEST

static void check_fail_injection(struct bfs_dev *dev)
{
	u8 buf[512], out[512];

	fill(buf, sizeof(buf), 9);
	bfs_dev_fail_writes_after(dev, 3);
	ck_assert_int_eq(bfs_dev_write(dev, 0, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_dev_write_fua(dev, 512, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_dev_write(dev, 1024, buf, sizeof(buf)), 0);
	/* the budget is spent but nothing failed yet: flush still works */
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	ck_assert_int_eq(bfs_dev_write(dev, 1536, buf, sizeof(buf)), -EIO);
	ck_assert_int_eq(bfs_dev_write(dev, 2048, buf, sizeof(buf)), -EIO);
	ck_assert_int_eq(bfs_dev_write_fua(dev, 2048, buf, sizeof(buf)), -EIO);
	ck_assert_int_eq(bfs_dev_discard(dev, 0, 512), -EIO);
	ck_assert_int_eq(bfs_dev_flush(dev), -EIO);
	/* reads keep working; failed writes changed nothing */
	ck_assert_int_eq(bfs_dev_read(dev, 1024, out, sizeof(out)), 0);
	ck_assert_mem_eq(buf, out, sizeof(buf));
	ck_assert_int_eq(bfs_dev_read(dev, 1536, out, sizeof(out)), 0);
	ck_assert(all_zero(out, sizeof(out)));

	bfs_dev_fail_writes_after(dev, 0);
	ck_assert_int_eq(bfs_dev_write(dev, 1536, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
}

START_TEST(test_fail_injection_mem)
{
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(MEM_SIZE, &dev), 0);
	check_fail_injection(dev);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_fail_injection_file)
{
	char *path = make_file("fail", MEM_SIZE);
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open(path, 0, &dev), 0);
	check_fail_injection(dev);
	bfs_dev_close(dev);
	drop_file(path);
}
END_TEST

/*
 * BFS_DEV_DIRECT_TRY: any buffer, offset and length, whatever the mode the
 * file ended up in; what one path writes the other reads, and the file holds
 * it (checked through a separate buffered descriptor).
 */
#define TRY_SIZE	(4 * MiB)

static void check_try(const char *path, bool want_direct)
{
	struct bfs_dev *dev;
	u8 *in = bfs_aligned_alloc(4096, 3 * MiB), *out = bfs_aligned_alloc(4096, 3 * MiB);
	u8 *file = malloc(3 * MiB);
	int fd;

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(file);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_DIRECT_TRY | BFS_DEV_EXCL, &dev), 0);
	ck_assert(bfs_dev_is_direct(dev) == want_direct);
	fill(in, 3 * MiB, 9);

	/* aligned everything: straight through */
	ck_assert_int_eq(bfs_dev_write(dev, 0, in, 8192), 0);
	/* an unaligned buffer larger than one bounce buffer */
	ck_assert_int_eq(bfs_dev_write(dev, 8192, in + 8193, 2 * MiB + 512), 0);
	/* unaligned offset and length: the buffered twin */
	ck_assert_int_eq(bfs_dev_write(dev, 3 * MiB - 1000, in + 5, 700), 0);
	ck_assert_int_eq(bfs_dev_write_fua(dev, 2 * MiB + 9000, in + 77, 4096), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);

	/* read back in every combination, across the pieces */
	memset(out, 0, 3 * MiB);
	ck_assert_int_eq(bfs_dev_read(dev, 0, out, 8192), 0);
	ck_assert_mem_eq(out, in, 8192);
	ck_assert_int_eq(bfs_dev_read(dev, 8192, out + 1, 2 * MiB + 512), 0);
	ck_assert_mem_eq(out + 1, in + 8193, 2 * MiB + 512);
	ck_assert_int_eq(bfs_dev_read(dev, 3 * MiB - 1000, out, 700), 0);
	ck_assert_mem_eq(out, in + 5, 700);
	ck_assert_int_eq(bfs_dev_read(dev, 2 * MiB + 9000, out + 3, 4096), 0);
	ck_assert_mem_eq(out + 3, in + 77, 4096);
	/* a direct read of a range just written through the buffered twin */
	ck_assert_int_eq(bfs_dev_read(dev, 2 * MiB + 8704, out, 4608), 0);
	ck_assert_mem_eq(out + 296, in + 77, 4096);
	/* range errors still come first */
	ck_assert_int_eq(bfs_dev_read(dev, TRY_SIZE - 100, out + 1, 200), -ERANGE);
	bfs_dev_close(dev);

	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, file, 3 * MiB, 0), (ssize_t)(3 * MiB));
	close(fd);
	ck_assert_mem_eq(file, in, 8192);
	ck_assert_mem_eq(file + 8192, in + 8193, 2 * MiB + 512);
	ck_assert_mem_eq(file + 2 * MiB + 9000, in + 77, 4096);
	ck_assert_mem_eq(file + 3 * MiB - 1000, in + 5, 700);
	bfs_free(in);
	bfs_free(out);
	free(file);
}

START_TEST(test_direct_try)
{
	char *path = make_file("direct-try", TRY_SIZE);
	int fd = open(path, O_RDONLY | O_DIRECT);

	/* direct where the test filesystem allows it */
	if (fd >= 0)
		close(fd);
	check_try(path, fd >= 0);
	drop_file(path);
}
END_TEST

/* a filesystem that refuses O_DIRECT gets buffered I/O, not an error */
START_TEST(test_direct_try_refused)
{
	/* the pid in the name: test programs (and builds) run side by side */
	char shm[64];
	int fd;
	bool direct;

	snprintf(shm, sizeof(shm), "/dev/shm/bfs-test-direct-try-%d", (int)getpid());
	fd = open(shm, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	direct = fd >= 0;

	if (fd < 0)
		fd = open(shm, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return;		/* no /dev/shm here */
	ck_assert_int_eq(ftruncate(fd, TRY_SIZE), 0);
	close(fd);
	/* either way the device works; which way is what the filesystem said */
	check_try(shm, direct);
	unlink(shm);
}
END_TEST

START_TEST(test_direct)
{
	char *path = make_file("direct", MEM_SIZE);
	struct bfs_dev *dev;
	u8 *buf = bfs_aligned_alloc(4096, 8192);
	u8 *out = bfs_aligned_alloc(4096, 8192);
	int ret;

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(out);
	ret = bfs_dev_open(path, BFS_DEV_DIRECT, &dev);
	if (ret == -EINVAL)
		goto out;	/* the test filesystem has no O_DIRECT */
	ck_assert_int_eq(ret, 0);

	fill(buf, 8192, 5);
	ck_assert_int_eq(bfs_dev_write(dev, 4096, buf, 4096), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 4096, out, 4096), 0);
	ck_assert_mem_eq(buf, out, 4096);
	/* misaligned offset, length and buffer are refused up front */
	ck_assert_int_eq(bfs_dev_write(dev, 100, buf, 4096), -EINVAL);
	ck_assert_int_eq(bfs_dev_write(dev, 4096, buf, 100), -EINVAL);
	ck_assert_int_eq(bfs_dev_write(dev, 4096, buf + 1, 4096), -EINVAL);
	ck_assert_int_eq(bfs_dev_read(dev, 4096, out + 8, 512), -EINVAL);
	/* range errors win over alignment errors */
	ck_assert_int_eq(bfs_dev_read(dev, MEM_SIZE, out, 512), -ERANGE);
	bfs_dev_close(dev);
out:
	bfs_free(buf);
	bfs_free(out);
	drop_file(path);
}
END_TEST

struct thread_arg {
	struct bfs_dev *dev;
	unsigned id;
};

static void *writer_thread(void *p)
{
	struct thread_arg *a = p;
	u8 buf[4096];

	for (unsigned i = 0; i < 64; i++) {
		fill(buf, sizeof(buf), a->id * 1000 + i);
		if (bfs_dev_write(a->dev, ((u64)a->id * 64 + i) * 4096, buf, sizeof(buf)))
			return (void *)1;
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct thread_arg args[4];
	pthread_t t[4];
	struct bfs_dev *dev;
	u8 buf[4096];

	ck_assert_int_eq(bfs_dev_open_mem(MEM_SIZE, &dev), 0);
	for (unsigned i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ dev, i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer_thread, &args[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		ck_assert_ptr_null(ret);
	}
	for (unsigned id = 0; id < 4; id++)
		for (unsigned i = 0; i < 64; i++) {
			fill(buf, sizeof(buf), id * 1000 + i);
			ck_assert_mem_eq(bfs_dev_mem(dev) + (id * 64 + i) * 4096, buf, sizeof(buf));
		}
	bfs_dev_close(dev);
}
END_TEST

/* record on a real device: the log is in units of its logical block size */
static void check_blockdev_record(struct bfs_dev *dev)
{
	char *logpath = bfs_unit_tmpfile("blklog");
	unsigned ss = bfs_dev_sector_size(dev);
	struct bfs_dev *base, *img;
	struct bfs_iolog log;
	u8 buf[16384], *want;

	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	fill(buf, sizeof(buf), 7);
	ck_assert_int_eq(bfs_dev_write(dev, 3 * 4096, buf, 8192), 0);
	ck_assert_int_eq(bfs_dev_write(dev, 5, buf, 100), 0);
	ck_assert_int_eq(bfs_dev_write_fua(dev, 1 * MiB, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_uint_eq(log.sector_size, ss);
	ck_assert_uint_eq(log.nr, 4);
	ck_assert_int_eq(bfs_dev_clone_mem(base, &img), 0);
	for (size_t i = 0; i < log.nr; i++)
		ck_assert_int_eq(bfs_iolog_apply(&log, i, img, 0), 0);
	want = malloc(2 * MiB);
	ck_assert_ptr_nonnull(want);
	ck_assert_int_eq(bfs_dev_read(dev, 0, want, 2 * MiB), 0);
	ck_assert_mem_eq(bfs_dev_mem(img), want, 2 * MiB);
	free(want);
	bfs_iolog_close(&log);
	bfs_dev_close(img);
	bfs_dev_close(base);
	unlink(logpath);
	free(logpath);
}

static void check_direct_io(struct bfs_dev *dev)
{
	unsigned ss = bfs_dev_sector_size(dev);
	u8 *buf = bfs_aligned_alloc(4096, 2 * 4096);
	u8 *out = bfs_aligned_alloc(4096, 2 * 4096);

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(out);
	fill(buf, 8192, 8);
	ck_assert_int_eq(bfs_dev_write(dev, 4 * ss, buf, ss), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 4 * ss, out, ss), 0);
	ck_assert_mem_eq(buf, out, ss);
	ck_assert_int_eq(bfs_dev_write(dev, ss / 2, buf, ss), -EINVAL);
	ck_assert_int_eq(bfs_dev_write(dev, 0, buf, ss / 2), -EINVAL);
	ck_assert_int_eq(bfs_dev_write(dev, 0, buf + ss / 2, ss), -EINVAL);
	bfs_free(buf);
	bfs_free(out);
}

/* destructive: only with BFS_TEST_BLKDEV=/dev/loopN */
START_TEST(test_blockdev)
{
	const char *path = getenv("BFS_TEST_BLKDEV");
	struct bfs_dev *dev, *other;
	u8 buf[4096], out[4096];
	int ret;

	if (!path || !*path)
		return;
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &dev), 0);
	ck_assert(bfs_dev_is_blockdev(dev));
	ck_assert_uint_gt(bfs_dev_size(dev), 0);
	ck_assert(bfs_is_pow2(bfs_dev_sector_size(dev)));
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &other), -EBUSY);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_RDONLY, &other), -EBUSY);
	check_rw(dev);

	fill(buf, sizeof(buf), 6);
	ck_assert_int_eq(bfs_dev_write(dev, 0, buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	ret = bfs_dev_discard(dev, 0, sizeof(buf));
	ck_assert(ret == 0 || ret == -EOPNOTSUPP);
	ck_assert_int_eq(bfs_dev_read(dev, 0, out, sizeof(out)), 0);
	check_blockdev_record(dev);
	bfs_dev_close(dev);

	/* O_DIRECT in units of the logical block size */
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_DIRECT, &dev), 0);
	check_direct_io(dev);
	bfs_dev_close(dev);
}
END_TEST

static Suite *dev_suite(void)
{
	Suite *s = suite_create("dev");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_mem_basic);
	tcase_add_test(tc, test_mem_large_is_lazy);
	tcase_add_test(tc, test_clone_mem);
	tcase_add_test(tc, test_file_basic);
	tcase_add_test(tc, test_file_rdonly);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_flock);
	tcase_add_test(tc, test_flock_wait);
	tcase_add_test(tc, test_discard_file);
	tcase_add_test(tc, test_discard_mem);
	tcase_add_test(tc, test_fail_injection_mem);
	tcase_add_test(tc, test_fail_injection_file);
	tcase_add_test(tc, test_direct);
	tcase_add_test(tc, test_direct_try);
	tcase_add_test(tc, test_direct_try_refused);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_blockdev);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(dev_suite)
