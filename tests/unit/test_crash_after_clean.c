// SPDX-License-Identifier: MIT
/*
 * A journal that continues after a clean shutdown (the clean flag out of
 * date: an old superblock copy, a lost update) holds acknowledged updates.
 * Every open replays it (libcore/journal/read.c, check_clean), and a
 * read-write open makes it durable: clears the stale flag, checkpoints.
 * That open writes, so a power cut anywhere in it must lose nothing: every
 * crash state of it still holds every file fsync'd before.
 */
#include "crash_states.h"
#include "tu.h"

#include <bfs/fs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NR_FILES 6

static const char *file_name(unsigned i)
{
	static const char *const names[NR_FILES] = { "a", "bb", "ccc", "dddd", "eeeee", "f" };

	return names[i];
}

static size_t file_len(unsigned i) { return 1000 + 37000 * (size_t)i; }

/* every file there with its bytes, through a read-only or a read-write open */
static bool files_ok(struct bfs_dev *dev, bool rw, char *why)
{
	struct bfs_fs_opts ro = { .read_only = true };
	struct bfs_fs *fs;
	bool ok = true;
	int ret = bfs_fs_open(dev, rw ? NULL : &ro, &fs);

	if (ret) {
		snprintf(why, 512, "%s open failed: %d (%s)", rw ? "read-write" : "read-only", ret,
			 tu_last_err);
		return false;
	}
	for (unsigned i = 0; i < NR_FILES && ok; i++)
		ok = tu_pattern_file_ok(fs, file_name(i), file_len(i), i, why);
	ret = bfs_fs_close(fs);
	if (ok && ret) {
		snprintf(why, 512, "close failed: %d", ret);
		ok = false;
	}
	return ok;
}

/* the image a crash left after fsync'd writes, with its clean flag forged */
static struct bfs_dev *stale_clean_image(void)
{
	struct bfs_dev *dev = tu_mkfs_fs(64 * MiB, 0, 0, 0), *crashed;
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];
	struct bfs_fs *fs = tu_fs_open(dev);

	for (unsigned i = 0; i < NR_FILES; i++)
		tu_write_pattern_file(fs, file_name(i), file_len(i), i);
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &crashed), 0);	/* the power fails here */
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);

	ck_assert_int_eq(bfs_sb_read(crashed, &h, err), 0);
	ck_assert(!(le32_to_cpu(h.sb->flags) & BFS_SB_CLEAN));
	h.sb->flags = cpu_to_le32(le32_to_cpu(h.sb->flags) | BFS_SB_CLEAN);
	ck_assert_int_eq(bfs_sb_write(crashed, h.sb), 0);
	bfs_sb_handle_release(&h);
	return crashed;
}

START_TEST(test_open_replays_after_clean)
{
	struct bfs_dev *dev = stale_clean_image();
	char why[512];

	tu_log_reset();
	ck_assert_msg(files_ok(dev, false, why), "read-only open: %s", why);
	ck_assert_msg(files_ok(dev, true, why), "read-write open: %s", why);
	/* the read-write open made it durable: the flag is gone, the journal too */
	ck_assert_msg(files_ok(dev, true, why), "second open: %s", why);
	bfs_dev_close(dev);
}
END_TEST

static bool check_state(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	(void)ctx;
	(void)mk;
	/* a read-only look first (it must not need the interrupted writes), then a mount */
	return files_ok(img, false, why) && files_ok(img, true, why) && files_ok(img, true, why);
}

START_TEST(test_crash_replay_after_clean)
{
	char *logpath = bfs_unit_tmpfile("after-clean-log");
	struct bfs_dev *dev = stale_clean_image(), *base;
	char why[512];

	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	crash_mark(dev, 'c', 1);
	ck_assert_msg(files_ok(dev, true, why), "%s", why);
	crash_mark(dev, 'f', 1);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	crash_states_check("after-clean crash", logpath, base, 7, check_state, NULL, 3);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}
END_TEST

static Suite *crash_after_clean_suite(void)
{
	Suite *s = suite_create("crash_after_clean");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_open_replays_after_clean);
	tcase_add_test(tc, test_crash_replay_after_clean);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_after_clean_suite)
