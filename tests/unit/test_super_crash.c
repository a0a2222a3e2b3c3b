// SPDX-License-Identifier: MIT
/*
 * A superblock update cut by a power failure is a crash state, not damage
 * (issue 9 item 8).  One bfs_sb_write() is recorded; every state a power
 * cut can leave (crash_states.h: each flush point, random subsets of the
 * unflushed copies, one torn) and every copy torn after each of its
 * sectors must make `fsck -n` exit 0 without writing, and `fsck -y` must
 * leave every copy equal (a following `fsck -n` says nothing), holding the
 * old or the new superblock - never anything else.
 */
#include "crash_states.h"
#include "unit.h"

#include <bfs/fsck.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DEV_BYTES	(32 * MiB)

struct out {
	char text[8192];
	size_t len;
};

static void print_line(void *ctx, const char *line)
{
	struct out *o = ctx;

	o->len += (size_t)snprintf(o->text + o->len, o->len < sizeof(o->text) ?
				   sizeof(o->text) - o->len : 0, "%s\n", line);
	if (o->len >= sizeof(o->text))
		o->len = sizeof(o->text) - 1;
}

static int run_fsck(struct bfs_dev *dev, enum bfs_fsck_mode mode, struct out *o)
{
	struct bfs_fsck f = { .dev = dev, .mode = mode, .print = print_line, .ctx = o };
	int rc;

	memset(o, 0, sizeof(*o));
	rc = bfs_fsck_run(&f);
	bfs_fsck_release(&f);
	return rc;
}

struct ctx {
	char old_label[BFS_LABEL_SIZE + 1], new_label[BFS_LABEL_SIZE + 1];
	unsigned interrupted;	/* states fsck called an interrupted update */
};

static bool check(void *vctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct ctx *c = vctx;
	struct bfs_dev *before;
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN], label[BFS_LABEL_SIZE + 1];
	struct out o;
	int rc;

	(void)mk;
	ck_assert_int_eq(bfs_dev_clone_mem(img, &before), 0);
	rc = run_fsck(img, BFS_FSCK_MODE_NO, &o);
	if (rc || memcmp(bfs_dev_mem(img), bfs_dev_mem(before), DEV_BYTES)) {
		snprintf(why, 512, "fsck -n exited %d%s: %.300s", rc,
			 rc ? "" : " but wrote", o.text);
		bfs_dev_close(before);
		return false;
	}
	bfs_dev_close(before);
	c->interrupted += !!strstr(o.text, "interrupted by a power cut");
	rc = run_fsck(img, BFS_FSCK_MODE_YES, &o);
	if (rc) {
		snprintf(why, 512, "fsck -y exited %d: %.300s", rc, o.text);
		return false;
	}
	rc = run_fsck(img, BFS_FSCK_MODE_NO, &o);
	if (rc || strstr(o.text, "superblock")) {
		snprintf(why, 512, "after fsck -y, fsck -n exited %d: %.300s", rc, o.text);
		return false;
	}
	ck_assert_int_eq(bfs_sb_read(img, &h, err), 0);
	bfs_sb_label(h.sb, label);
	bfs_sb_handle_release(&h);
	if (strcmp(label, c->old_label) && strcmp(label, c->new_label)) {
		snprintf(why, 512, "label '%s' is neither the old nor the new one", label);
		return false;
	}
	return true;
}

/* each write of the log torn after each of its sectors, everything before it applied */
static void torn_sweep(const char *logpath, struct bfs_dev *base, struct ctx *c,
		       unsigned *states, unsigned *failures)
{
	struct bfs_iolog log;
	struct bfs_dev *run;

	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(base, &run), 0);
	for (size_t i = 0; i < log.nr; i++) {
		const struct bfs_iolog_entry *e = &log.entries[i];

		if (e->type != BFS_IOLOG_WRITE && e->type != BFS_IOLOG_FUA)
			continue;
		for (u64 cut = 1; cut < e->len / 512; cut++) {
			struct bfs_dev *img;
			char why[512] = "";

			ck_assert_int_eq(bfs_dev_clone_mem(run, &img), 0);
			ck_assert_int_eq(bfs_iolog_apply(&log, i, img, cut * 512), 0);
			(*states)++;
			if (!check(c, img, (struct crash_marks){ 0 }, why) && ++*failures <= 5)
				fprintf(stderr, "write at %llu torn after %llu sectors: %s\n",
					(unsigned long long)e->off, (unsigned long long)cut, why);
			bfs_dev_close(img);
		}
		ck_assert_int_eq(bfs_iolog_apply(&log, i, run, 0), 0);
	}
	bfs_dev_close(run);
	bfs_iolog_close(&log);
}

START_TEST(test_sb_write_crash_states)
{
	struct bfs_format_opts fo = { .label = "before" };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("sb-crash-log");
	struct ctx c = { .old_label = "before", .new_label = "after" };
	struct bfs_sb_handle h;
	struct bfs_dev *dev, *base;
	struct crash_result res;
	unsigned torn = 0, torn_failures = 0;

	ck_assert_int_eq(bfs_dev_open_mem(DEV_BYTES, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, DEV_BYTES, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);

	/* one update of every copy: a new label */
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	memset(h.sb->label, 0, sizeof(h.sb->label));
	memcpy(h.sb->label, "after", 5);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	ck_assert_int_eq(bfs_sb_write(dev, h.sb), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	bfs_sb_handle_release(&h);

	/* three writes: many random subsets are cheap and cover all of them */
	setenv("BFS_CRASH_RANDOM_STATES", "16", 0);
	crash_build_states(logpath, base, 1, check, &c, &res);
	torn_sweep(logpath, base, &c, &torn, &torn_failures);
	printf("sb-crash: %zu log entries; %u crash states (%u flush points, %u random), %u failed; "
	       "%u torn copies, %u failed; %u said an update was interrupted\n", res.log_entries,
	       res.states, res.flush_states, res.random_states, res.failures, torn, torn_failures,
	       c.interrupted);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);
	ck_assert_msg(torn_failures == 0, "%u of %u torn copies failed", torn_failures, torn);
	/* the interesting states were there: not every state was trivially clean */
	ck_assert_uint_gt(c.interrupted, 0);
	unlink(logpath);
	free(logpath);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}
END_TEST

static Suite *super_crash_suite(void)
{
	Suite *s = suite_create("super_crash");
	TCase *tc = tcase_create("sb_write");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_sb_write_crash_states);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(super_crash_suite)
