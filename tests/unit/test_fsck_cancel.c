// SPDX-License-Identifier: MIT
/*
 * Cancelling fsck (SIGINT/SIGTERM in bfs fsck set f->cancel): the run
 * returns BFS_FSCK_CANCELED (32), starts no repair after the flag is set
 * and no pass after the running one, and what it leaves is sound: a second
 * fsck -y finishes the repairs and a third is clean, the files intact.
 */
#include "unit.h"
#include "tu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bfs/btree.h>
#include <bfs/dev.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>

#define MAX_REPORTS	16

struct run {
	volatile sig_atomic_t cancel;
	unsigned cancel_after;		/* set the flag at this report (0: never) */
	unsigned nr;
	enum bfs_problem_code code[MAX_REPORTS];
	bool	fixed[MAX_REPORTS];
	unsigned last_pass;
};

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

/*
 * Two damaged inodes (link counts off by one), which pass 4 reports one
 * after the other, and a file "good" that is not damaged.
 */
static void damage_two_inodes(struct bfs_dev *dev)
{
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 ino[2], kbuf[64];
	unsigned i;

	ino[0] = tu_mkfile(fs, "f0");
	ino[1] = tu_mkfile(fs, "f1");
	tu_write_pattern_file(fs, "good", 5000, 3);
	for (i = 0; i < 2; i++) {
		struct bfs_bkey *k = (void *)kbuf;
		struct bfs_inode_v *v = bfs_bkey_val(k);

		ck_assert_int_eq(bfs_btree_lookup(bfs_fs_core(fs), BFS_BTREE_INODES,
						  BFS_POS(ino[i], 0, 0), kbuf, sizeof(kbuf)), 0);
		v->nlink = cpu_to_le32(le32_to_cpu(v->nlink) + 1);
		ck_assert_int_eq(bfs_btree_insert(bfs_fs_core(fs), BFS_BTREE_INODES, k), 0);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
}

/* set before the run: nothing is checked, nothing written */
START_TEST(test_cancel_before_run)
{
	struct bfs_dev *dev = tu_mkfs_fs(32 * MiB, 0, 0, 0);
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

/* set after the first problem of pass 4 was fixed: the second is not */
START_TEST(test_cancel_between_repairs)
{
	struct bfs_dev *dev = tu_mkfs_fs(32 * MiB, 0, 0, 0);
	struct run run = { .cancel_after = 1 };
	struct bfs_fs *fs;
	char why[512];

	damage_two_inodes(dev);

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
	fs = tu_fs_open(dev);
	ck_assert_msg(tu_pattern_file_ok(fs, "good", 5000, 3, why), "%s", why);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* -n: the same answers, and the run stops with 32 */
START_TEST(test_cancel_check_only)
{
	struct bfs_dev *dev = tu_mkfs_fs(32 * MiB, 0, 0, 0);
	struct run run = { .cancel_after = 1 };

	damage_two_inodes(dev);
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_NO, &run), BFS_FSCK_CANCELED);
	ck_assert_uint_eq(run.nr, 2);
	ck_assert_uint_eq(run.last_pass, 4);
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
