// SPDX-License-Identifier: MIT
/*
 * Cancelling fsck (SIGINT/SIGTERM in bfs fsck set f->cancel): the run
 * returns BFS_FSCK_CANCELED (32), starts no repair after the flag is set
 * and no pass after the running one, and what it leaves is sound: a second
 * fsck -y finishes the repairs and a third is clean, the files intact.
 */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/dev.h>
#include <bfs/format.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>

#define DEV_SIZE	(32 * MiB)
#define MAX_REPORTS	16

struct run {
	volatile sig_atomic_t cancel;
	unsigned cancel_after;		/* set the flag at this report (0: never) */
	unsigned nr;
	enum bfs_problem_code code[MAX_REPORTS];
	bool	fixed[MAX_REPORTS];
	unsigned last_pass;
};

static void quiet_log(enum bfs_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "bfs %d: %s\n", level, msg);
}

static void print_line(void *ctx, const char *line)
{
	(void)ctx;
	if (getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "fsck: %s\n", line);
}

/* the signal arrives just after report @cancel_after, as if ^C were pressed then */
static void collect(void *ctx, const struct bfs_fsck_report *r)
{
	struct run *run = ctx;

	if (run->nr < MAX_REPORTS) {
		run->code[run->nr] = r->code;
		run->fixed[run->nr] = r->fixed;
	}
	if (++run->nr == run->cancel_after)
		run->cancel = 1;
}

static void progress(void *ctx, unsigned pass, u64 cur, u64 max)
{
	struct run *run = ctx;

	(void)cur;
	(void)max;
	run->last_pass = pass;
}

static int run_fsck(struct bfs_dev *dev, enum bfs_fsck_mode mode, struct run *run)
{
	struct bfs_fsck f = {
		.dev = dev, .mode = mode, .print = print_line, .report = collect,
		.progress = progress, .ctx = run, .cancel = &run->cancel,
	};
	int rc;

	rc = bfs_fsck_run(&f);
	bfs_fsck_release(&f);
	ck_assert_uint_eq(f.cancelled, rc == BFS_FSCK_CANCELED);
	return rc;
}

static struct bfs_dev *mkfs(void)
{
	struct bfs_format_opts o = { 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";
	struct bfs_dev *dev;

	bfs_log_set_hook(quiet_log, NULL);
	ck_assert_ptr_nonnull(sb);
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	ck_assert_msg(!bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), "layout: %s", err);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	bfs_free(sb);
	return dev;
}

static struct bfs_fs *fs_open(struct bfs_dev *dev)
{
	struct bfs_fs *fs = NULL;

	ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
	return fs;
}

static u64 mkfile(struct bfs_fs *fs, const char *name, u8 fill, size_t len)
{
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat st;
	u8 *buf = bfs_malloc(len);

	ck_assert_ptr_nonnull(buf);
	memset(buf, fill, len);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name), S_IFREG | 0644, 0,
				      &cr, &st), 0);
	ck_assert_int_eq(bfs_fs_write(fs, st.ino, buf, len, 0), (ssize_t)len);
	bfs_free(buf);
	return st.ino;
}

static void check_file(struct bfs_fs *fs, u64 ino, u8 fill, size_t len)
{
	u8 *buf = bfs_malloc(len);
	size_t i;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf, len, 0), (ssize_t)len);
	for (i = 0; i < len; i++)
		ck_assert_msg(buf[i] == fill, "inode %llu byte %zu", (unsigned long long)ino, i);
	bfs_free(buf);
}

/*
 * Two damaged inodes (link counts off by one), which pass 3 reports one
 * after the other; returns the file that is not damaged.
 */
static u64 damage_two_inodes(struct bfs_dev *dev)
{
	struct bfs_fs *fs = fs_open(dev);
	u64 ino[3], kbuf[64];
	unsigned i;

	for (i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "f%u", i);
		ino[i] = mkfile(fs, name, (u8)(i + 1), 5000);
	}
	for (i = 0; i < 2; i++) {
		struct bfs_bkey *k = (void *)kbuf;
		struct bfs_inode_v *v = bfs_bkey_val(k);

		ck_assert_int_eq(bfs_btree_lookup(bfs_fs_core(fs), BFS_BTREE_INODES,
						  BFS_POS(ino[i], 0, 0), kbuf, sizeof(kbuf)), 0);
		v->nlink = cpu_to_le32(le32_to_cpu(v->nlink) + 1);
		ck_assert_int_eq(bfs_btree_insert(bfs_fs_core(fs), BFS_BTREE_INODES, k), 0);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	return ino[2];
}

/* set before the run: nothing is checked, nothing written */
START_TEST(test_cancel_before_run)
{
	struct bfs_dev *dev = mkfs();
	struct run run = { .cancel = 1 };

	damage_two_inodes(dev);
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, &run), BFS_FSCK_CANCELED);
	ck_assert_uint_eq(run.nr, 0);
	run = (struct run){ 0 };
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_NO, &run), BFS_FSCK_UNCORRECTED);
	ck_assert_uint_eq(run.nr, 2);
	bfs_dev_close(dev);
}
END_TEST

/* set after the first problem of pass 3 was fixed: the second is not */
START_TEST(test_cancel_between_repairs)
{
	struct bfs_dev *dev = mkfs();
	struct run run = { .cancel_after = 1 };
	struct bfs_fs *fs;
	u64 good = damage_two_inodes(dev);

	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, &run), BFS_FSCK_CANCELED);
	ck_assert_uint_eq(run.nr, 2);
	ck_assert_int_eq(run.code[0], PR_INODE_NLINK);
	ck_assert(run.fixed[0]);
	ck_assert_int_eq(run.code[1], PR_INODE_NLINK);
	ck_assert(!run.fixed[1]);

	/* what the cancelled run left: one problem, which the next run fixes */
	run = (struct run){ 0 };
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, &run), BFS_FSCK_CORRECTED);
	ck_assert_uint_eq(run.nr, 1);
	run = (struct run){ 0 };
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_NO, &run), BFS_FSCK_OK);
	fs = fs_open(dev);
	check_file(fs, good, 3, 5000);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* -n: the same answers, and the run stops with 32 */
START_TEST(test_cancel_check_only)
{
	struct bfs_dev *dev = mkfs();
	struct run run = { .cancel_after = 1 };

	damage_two_inodes(dev);
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_NO, &run), BFS_FSCK_CANCELED);
	ck_assert_uint_eq(run.nr, 2);
	ck_assert_uint_eq(run.last_pass, 3);
	bfs_dev_close(dev);
}
END_TEST

static Suite *fsck_cancel_suite(void)
{
	Suite *s = suite_create("fsck_cancel");
	TCase *tc = tcase_create("cancel");

	tcase_add_test(tc, test_cancel_before_run);
	tcase_add_test(tc, test_cancel_between_repairs);
	tcase_add_test(tc, test_cancel_check_only);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(fsck_cancel_suite)
