// SPDX-License-Identifier: MIT
/*
 * Buckets of file data emptied and given to btree nodes, and crashes in the
 * middle of the checkpoints that write those nodes (doc/format/data.md,
 * "Open").  A checkpoint writes its nodes first and records the new roots
 * in the journal last, so a crash in between leaves the trees of the
 * previous roots plus every bset appended in place: a parent's new bset can
 * reach a node in a bucket that held data for a while since the last
 * finished checkpoint, while the alloc keys saying the bucket is empty are
 * in nodes only a new root reaches.  The journal still holds those keys, so
 * nothing is wrong, and an open must not say "holds file data but btree
 * nodes use it too": it did, taking before replay every bucket any alloc
 * key of the journal window said held data.
 *
 * The workload churns files on a small filesystem that fills up, so buckets
 * go from data to nodes and back.  A killed process leaves the writes it
 * issued, in order, so the states checked are prefixes of the write log:
 * each one that ends at a flush or just before a journal write (among them
 * every checkpoint's last node write).  Each must pass fsck -n and open
 * with no such message (fsck -n also caught two windows this workload
 * found: a truncate split into several commits, an unlink whose extents
 * went before its name).  At least one state must have nodes in a bucket
 * that held data in the journal window (the open says so at debug level),
 * else the test proves nothing.  BFS_CRASH_REUSE_OPS: operations (600).
 */
#include "crash_states.h"
#include "tu.h"
#include "unit.h"

#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_FILES	256
#define MAX_LEN		(192 * KiB)

struct reuse {
	u64	jstart, jend;		/* the journal's bytes on the device */
	unsigned states, nodes_states, shared_errs, failures;
};

/* messages of the open being checked, counted on top of tu.c's hook */
static bfs_log_fn tu_hook;
static void *tu_hook_ctx;
static unsigned nr_shared, nr_nodes_first;

static void count_hook(enum bfs_log_level level, const char *msg, void *ctx)
{
	if (strstr(msg, "holds file data but btree nodes use it too"))
		__atomic_fetch_add(&nr_shared, 1, __ATOMIC_RELAXED);
	if (level == BFS_LOG_DEBUG && strstr(msg, "btree nodes are in it before replay"))
		__atomic_fetch_add(&nr_nodes_first, 1, __ATOMIC_RELAXED);
	tu_hook(level, msg, ctx);
}

static u64 rnd(u64 *s)
{
	return crash_splitmix(s);
}

static void churn(struct bfs_fs *fs, struct bfs_dev *dev, unsigned ops, u64 seed)
{
	static u8 buf[MAX_LEN];
	struct bfs_creds cr = { 0, 0 };
	u64 ino[MAX_FILES] = { 0 };
	char name[32];
	unsigned i, j, syncs = 0;

	tu_fill_random(buf, sizeof(buf), seed);
	for (i = 0; i < ops; i++) {
		unsigned op = (unsigned)(rnd(&seed) % 100), f = (unsigned)(rnd(&seed) % MAX_FILES);
		struct bfs_stat st;
		int ret = 0;

		snprintf(name, sizeof(name), "f%u", f);
		if (op < 40 || !ino[f]) {
			size_t len = 4096 + (size_t)(rnd(&seed) % (MAX_LEN - 4096));

			if (!ino[f]) {
				ret = bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name), S_IFREG | 0644, 0,
						   &cr, &st);
				if (!ret)
					ino[f] = st.ino;
			}
			if (!ret) {
				ssize_t n = bfs_fs_write(fs, ino[f], buf, len, rnd(&seed) % (512 * KiB));

				ret = n < 0 ? (int)n : 0;
			}
		} else if (op < 65) {
			/* a file with data: an orphan first, then its extents go */
			ret = bfs_fs_unlink(fs, BFS_ROOT_INO, name, strlen(name));
			if (!ret)
				ino[f] = 0;
		} else if (op < 80) {
			struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = rnd(&seed) % (256 * KiB) };

			ret = bfs_fs_setattr(fs, ino[f], &sa, &st);
		} else {
			/* metadata only: a burst of names and inodes, then gone again */
			for (j = 0; j < 24 && !ret; j++) {
				snprintf(name, sizeof(name), "m%u-%u", i, j);
				ret = bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name), S_IFREG | 0644, 0,
						   &cr, &st);
			}
			for (j = 0; j < 24; j++) {
				snprintf(name, sizeof(name), "m%u-%u", i, j);
				if (j % 3)
					bfs_fs_unlink(fs, BFS_ROOT_INO, name, strlen(name));
			}
		}
		ck_assert_msg(!ret || ret == -ENOSPC, "op %u (%u): %d (%s)", i, op, ret, tu_last_err);

		if (i % 10 == 9) {
			ck_assert_int_eq(bfs_fs_sync(fs), 0);
			crash_mark(dev, 'f', ++syncs);
		}
	}
}

static void fsck_line(void *ctx, const char *line)
{
	char *last = ctx;

	if (!last[0])
		snprintf(last, 512, "%s", line);
}

/* fsck -n, then an open as a mount does; neither may call a bucket shared */
static void check_state(struct reuse *r, struct bfs_dev *run, const char *kind, size_t at)
{
	struct bfs_dev *img;
	char why[512] = "", first[512] = "";
	struct bfs_fsck f = { .mode = BFS_FSCK_MODE_NO, .print = fsck_line, .ctx = first };
	struct bfs_fs *fs;
	int rc;

	ck_assert_int_eq(bfs_dev_clone_mem(run, &img), 0);
	f.dev = img;
	nr_shared = nr_nodes_first = 0;
	rc = bfs_fsck_run(&f);
	bfs_fsck_release(&f);
	if (rc != BFS_FSCK_OK) {
		snprintf(why, sizeof(why), "fsck -n: exit %d, %u problems (%s)", rc, f.nr_problems,
			 first);
	} else {
		rc = bfs_fs_open(img, &(struct bfs_fs_opts){ 0 }, &fs);
		if (rc)
			snprintf(why, sizeof(why), "open failed: %d (%s)", rc, tu_last_err);
		else if ((rc = bfs_fs_close(fs)))
			snprintf(why, sizeof(why), "close failed: %d (%s)", rc, tu_last_err);
	}
	if (!why[0] && nr_shared)
		snprintf(why, sizeof(why), "%u times \"holds file data but btree nodes use it "
			 "too\" (fsck found nothing)", nr_shared);
	r->states++;
	r->nodes_states += nr_nodes_first > 0;
	if (nr_nodes_first && getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "crash state %u (%s, log entry %zu): nodes in %u buckets of data\n",
			r->states, kind, at, nr_nodes_first);
	r->shared_errs += nr_shared;
	if (why[0] && ++r->failures <= 5)
		fprintf(stderr, "crash state %u (%s, log entry %zu): %s\n", r->states, kind, at, why);
	bfs_dev_close(img);
}

static bool in_journal(const struct reuse *r, const struct bfs_iolog_entry *e)
{
	return e->off < r->jend && e->off + e->len > r->jstart;
}

/* every prefix of the log that ends at a flush or just before a journal write */
static void check_prefixes(struct reuse *r, const char *logpath, struct bfs_dev *base)
{
	struct bfs_iolog log;
	struct bfs_dev *run;
	bool wrote = false;
	size_t i;

	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(base, &run), 0);
	for (i = 0; i < log.nr; i++) {
		const struct bfs_iolog_entry *e = &log.entries[i];
		bool data = e->type == BFS_IOLOG_WRITE || e->type == BFS_IOLOG_FUA ||
			    e->type == BFS_IOLOG_DISCARD;

		if (e->type == BFS_IOLOG_FLUSH && wrote) {
			check_state(r, run, "flush", i);
			wrote = false;
		} else if (data && in_journal(r, e) && wrote) {
			check_state(r, run, "before a journal write", i);
			wrote = false;
		}
		if (data) {
			ck_assert_int_eq(bfs_iolog_apply(&log, i, run, 0), 0);
			wrote = true;
		}
	}
	check_state(r, run, "end", log.nr);
	bfs_dev_close(run);
	bfs_iolog_close(&log);
}

START_TEST(test_crash_bucket_reuse)
{
	u64 dev_bytes = 16 * MiB;
	unsigned ops = (unsigned)crash_env_u64("BFS_CRASH_REUSE_OPS", 600);
	struct bfs_format_opts fo = { .btree_node_size = 4096, .bucket_size = 64 * KiB };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("crash-bucket-reuse-log");
	struct reuse r = { 0 };
	struct bfs_dev *dev, *base;
	struct bfs_fs *fs;

	tu_log_reset();
	bfs_log_get_hook(&tu_hook, &tu_hook_ctx);
	bfs_log_set_hook(count_hook, tu_hook_ctx);
	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	r.jstart = le64_to_cpu(sb->journal_bucket) * le32_to_cpu(sb->bucket_size);
	r.jend = r.jstart + (u64)le32_to_cpu(sb->journal_nbuckets) * le32_to_cpu(sb->bucket_size);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);

	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	churn(fs, dev, ops, 0xb0c4e7);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	ck_assert_uint_eq(nr_shared, 0);

	check_prefixes(&r, logpath, base);
	printf("crash-bucket-reuse: %u ops, %u crash states, %u with nodes in a bucket of data "
	       "before replay, %u failed\n", ops, r.states, r.nodes_states, r.failures);
	ck_assert_msg(r.failures == 0, "%u of %u crash states failed", r.failures, r.states);
	ck_assert_msg(r.nodes_states > 0, "no crash state had btree nodes in a bucket of data "
		      "before replay: the workload no longer builds the case");
	unlink(logpath);
	free(logpath);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}
END_TEST

static Suite *crash_bucket_reuse_suite(void)
{
	Suite *s = suite_create("crash_bucket_reuse");
	TCase *tc = tcase_create("crash");

	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_crash_bucket_reuse);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_bucket_reuse_suite)
