// SPDX-License-Identifier: MIT
/*
 * Read-error injection (libcore/os/fault.c): the ranges given fail every
 * read that touches them with -EIO, by either read path (bfs_dev_read and
 * a bfs_dev_submit batch), on memory and file devices, and nothing else.
 */
#include "tu.h"

#include <bfs/dev.h>
#include <bfs/log.h>
#include <bfs/os.h>

#include <fcntl.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void check_reads(struct bfs_dev *dev)
{
	u8 buf[8192];
	struct bfs_dev_io io[3] = {
		{ .off = 0, .buf = buf, .len = 4096 },
		{ .off = 65536, .buf = buf + 4096, .len = 512 },
		{ .off = 1 << 20, .buf = buf, .len = 4096, .write = true },
	};

	/* 65536+1 and 0x20000+4096: a byte, and a sector-sized range */
	ck_assert_int_eq(bfs_dev_read(dev, 0, buf, 4096), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 65536 - 512, buf, 512), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 65536, buf, 512), -EIO);
	ck_assert_int_eq(bfs_dev_read(dev, 65536 + 2, buf, 100), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 0x20000 + 4095, buf, 1), -EIO);
	ck_assert_int_eq(bfs_dev_read(dev, 0x20000 + 4096, buf, 4096), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 0x1f000, buf, 8192), -EIO);
	/* a batch: only the read that touches a range fails; writes are untouched */
	ck_assert_int_eq(bfs_dev_submit(dev, io, 3), -EIO);
	ck_assert_int_eq(io[0].ret, 0);
	ck_assert_int_eq(io[1].ret, -EIO);
	ck_assert_int_eq(io[2].ret, 0);
	ck_assert_int_eq(bfs_dev_write(dev, 65536, buf, 512), 0);
}

START_TEST(test_mem_device)
{
	struct bfs_dev *dev;
	char err[BFS_ERR_LINE_LEN] = "";
	u8 buf[512];

	ck_assert_int_eq(bfs_dev_open_mem(4 << 20, &dev), 0);
	ck_assert_int_eq(bfs_dev_set_read_faults(dev, "65537,0x20000+4096", err), 0);
	check_reads(dev);
	/* cleared: everything reads again */
	ck_assert_int_eq(bfs_dev_set_read_faults(dev, NULL, err), 0);
	ck_assert_int_eq(bfs_dev_read(dev, 65536, buf, 512), 0);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_bad_specs)
{
	static const char *const bad[] = {
		"x", "12+", "12+0", "12,,", "-5", "12+3x", "18446744073709551615+2", "1;2",
	};
	struct bfs_dev *dev;
	char err[BFS_ERR_LINE_LEN];

	ck_assert_int_eq(bfs_dev_open_mem(1 << 20, &dev), 0);
	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
		err[0] = 0;
		ck_assert_msg(bfs_dev_set_read_faults(dev, bad[i], err) == -EINVAL, "'%s' accepted",
			      bad[i]);
		ck_assert_msg(err[0], "no reason for '%s'", bad[i]);
	}
	ck_assert_int_eq(bfs_dev_set_read_faults(dev, "4096+512,", err), 0);
	bfs_dev_close(dev);
}
END_TEST

/* the environment variable, on an image file (both descriptors of a direct device) */
START_TEST(test_env_on_file)
{
	char *path = bfs_unit_tmpfile("fault-img");
	struct bfs_dev *dev;
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	setenv("BFS_FAULT_READ", "65537,0x20000+4096", 1);
	ck_assert_int_eq(bfs_dev_open(path, 0, &dev), 0);
	check_reads(dev);
	bfs_dev_close(dev);
	/* a bad value fails the open, with a reason in the log */
	setenv("BFS_FAULT_READ", "12+", 1);
	tu_log_reset();
	ck_assert_int_eq(bfs_dev_open(path, 0, &dev), -EINVAL);
	ck_assert_msg(strstr(tu_last_err, "BFS_FAULT_READ"), "%s", tu_last_err);
	unsetenv("BFS_FAULT_READ");
	ck_assert_int_eq(bfs_dev_open(path, 0, &dev), 0);
	bfs_dev_close(dev);
	unlink(path);
	free(path);
}
END_TEST

static Suite *dev_fault_suite(void)
{
	Suite *s = suite_create("dev_fault");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_mem_device);
	tcase_add_test(tc, test_bad_specs);
	tcase_add_test(tc, test_env_on_file);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(dev_fault_suite)
