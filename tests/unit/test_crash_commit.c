// SPDX-License-Identifier: MIT
/*
 * Crash states of concurrent commits (doc/commit.md): several threads
 * commit and flush at once on a recorded memory device while the checkpoint
 * thread writes snapshots behind them (a small cache and journal make it
 * run every few dozen commits), so the log interleaves journal entries
 * shared by several committers, background node writes and the entries
 * that record a checkpoint's roots; one thread also asks for a checkpoint
 * of its own now and then, which must wait for the background one.
 *
 * Transaction t (numbered when it begins, from one counter) inserts A(t)
 * and B(t), and may delete A(u) of an earlier transaction u of its own
 * thread.  Two runs: every thread writes the same two inodes (the same
 * leaves, one commit at a time), or each thread its own two (spread: small
 * nodes, so the threads commit to different leaves in parallel, with
 * commit_lock shared, and split them under each other).  In every crashed state, with S the set of transactions it holds
 * (B(t) present <=> t in S):
 *   - durability: every t <= marks.f is in S (a flush returned after t's
 *     commit had returned), and nothing > marks.c is;
 *   - atomicity: A(t) is there exactly when t is in S and the transaction
 *     that deleted it is not; values are intact;
 *   - order: per thread S is a prefix (a commit that returned before the
 *     next began is never lost while the later one survives).
 *
 * Environment: BFS_CRASH_COMMIT_TXNS (default 6000), BFS_CRASH_SEED,
 * BFS_CRASH_DEV_MB (default 64), and those of crash_states.h.
 */
#include "crash_states.h"
#include "unit.h"

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS		3
#define A_INODE		1000200		/* above the inodes mkfs makes; B is A + 1 */
#define VAL_U64S	3

struct txn_rec {
	u8	thread;
	bool	committed;
	u32	deletes;	/* the earlier transaction whose A this one deleted (0: none) */
	u32	deleted_by;	/* 0: A(t) never deleted */
	u32	prev;		/* the thread's previous transaction (0: none) */
};

struct run {
	struct bfs_core *c;
	struct bfs_dev *dev;
	bfs_mutex lock;		/* everything below */
	u32	next;		/* last number handed out */
	u32	done_upto;	/* every t <= done_upto committed */
	u32	max_txn;
	struct txn_rec *t;	/* [1, max_txn] */
	u64	seed;
	bool	spread;		/* thread i writes inodes A + 2i and A + 2i + 1 */
};

static u64 key_inode(const struct run *r, unsigned thread, char which)
{
	return A_INODE + (r->spread ? 2 * thread : 0) + (which == 'B');
}

struct worker {
	struct run *r;
	unsigned idx;
	u64	rng;
	u32	mine[64];	/* recent transactions of this thread whose A still exists */
	u32	nr_mine;
	u32	last;
};

static void fill(u64 *v, u32 t, char which)
{
	for (unsigned i = 0; i < VAL_U64S; i++)
		v[i] = crash_splitmix(&(u64){ (u64)t * 4 + (u64)which + i * 0x100000000ULL });
}

static void put_key(struct bfs_trans *tr, u64 inode, u32 t, char which)
{
	u64 buf[BFS_BKEY_U64S + VAL_U64S];
	struct bfs_bkey *k = (void *)buf;

	bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(inode, t, 0), VAL_U64S);
	fill((u64 *)bfs_bkey_val(k), t, which);
	ck_assert_int_eq(bfs_trans_update(tr, BFS_BTREE_INODES, k), 0);
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	u32 until_flush = 1 + (u32)(crash_splitmix(&w->rng) % 12);

	for (;;) {
		struct bfs_trans *tr;
		u32 t, del = 0;

		bfs_mutex_lock(&r->lock);
		t = r->next < r->max_txn ? ++r->next : 0;
		if (t && w->nr_mine && crash_splitmix(&w->rng) % 3 == 0) {
			u32 i = (u32)(crash_splitmix(&w->rng) % w->nr_mine);

			del = w->mine[i];
			w->mine[i] = w->mine[--w->nr_mine];
			r->t[del].deleted_by = t;
			r->t[t].deletes = del;
		}
		if (t) {
			r->t[t].thread = (u8)w->idx;
			r->t[t].prev = w->last;
		}
		bfs_mutex_unlock(&r->lock);
		if (!t)
			break;

		crash_mark(r->dev, 'c', t);
		ck_assert_int_eq(bfs_trans_begin(r->c, &tr), 0);
		put_key(tr, key_inode(r, w->idx, 'A'), t, 'A');
		put_key(tr, key_inode(r, w->idx, 'B'), t, 'B');
		if (del)
			ck_assert_int_eq(bfs_trans_delete(tr, BFS_BTREE_INODES,
							  BFS_POS(key_inode(r, w->idx, 'A'), del, 0)), 0);
		ck_assert_int_eq(bfs_trans_commit(tr, NULL), 0);
		bfs_trans_end(tr);
		w->last = t;
		if (w->nr_mine < ARRAY_SIZE(w->mine))
			w->mine[w->nr_mine++] = t;

		bfs_mutex_lock(&r->lock);
		r->t[t].committed = true;
		while (r->done_upto < r->max_txn && r->t[r->done_upto + 1].committed)
			r->done_upto++;
		bfs_mutex_unlock(&r->lock);

		/* now and then a checkpoint of its own, which waits for the thread's */
		if (w->idx == 0 && t % 700 == 0)
			ck_assert_int_eq(bfs_core_checkpoint(r->c), 0);
		if (--until_flush)
			continue;
		until_flush = 1 + (u32)(crash_splitmix(&w->rng) % 12);
		{
			u32 upto;

			/* everything that had committed when the flush began is durable after it */
			bfs_mutex_lock(&r->lock);
			upto = r->done_upto;
			bfs_mutex_unlock(&r->lock);
			ck_assert_int_eq(bfs_core_flush(r->c), 0);
			crash_mark(r->dev, 'f', upto);
		}
	}
	return NULL;
}

static struct bfs_core *open_core(struct bfs_dev *dev)
{
	/* a small cache: the dirty half fills after a few dozen commits */
	struct bfs_core_opts opts = { .cache_bytes = 2 * MiB };
	struct bfs_core *c;

	ck_assert_int_eq(bfs_core_open(dev, &opts, &c), 0);
	return c;
}

/* ---- checking one state ---- */

struct seen {
	u8	*a, *b;		/* per transaction: key present */
	char	*why;
	bool	bad;
};

static int check_key(struct seen *s, const struct run *r, const struct bfs_bkey *k)
{
	u64 ino = le64_to_cpu(k->inode), t = le64_to_cpu(k->offset), want[VAL_U64S];
	char which = (ino - A_INODE) % 2 ? 'B' : 'A';

	if (ino < A_INODE || ino >= A_INODE + 2 * THREADS)
		return 0;
	if (!t || t > r->max_txn || k->type != BFS_KEY_COOKIE ||
	    bfs_bkey_val_u64s(k) != VAL_U64S) {
		snprintf(s->why, 512, "key %c(%llu) was never written like this", which,
			 (unsigned long long)t);
		return -1;
	}
	fill(want, (u32)t, which);
	if (memcmp(bfs_bkey_val(k), want, sizeof(want))) {
		snprintf(s->why, 512, "key %c(%llu) has the wrong value", which,
			 (unsigned long long)t);
		return -1;
	}
	(which == 'A' ? s->a : s->b)[t] = 1;
	return 0;
}

static bool judge(struct seen *s, const struct run *r, struct crash_marks mk)
{
	u32 t;

	for (t = 1; t <= r->max_txn; t++) {
		const struct txn_rec *x = &r->t[t];
		bool in = s->b[t], want_a = in && !(x->deleted_by && s->b[x->deleted_by]);

		if (t <= mk.f && !in) {
			snprintf(s->why, 512, "transaction %u was flushed (f %u) but is lost", t, mk.f);
			return false;
		}
		if (t > mk.c && in) {
			snprintf(s->why, 512, "transaction %u is there but never began (c %u)", t, mk.c);
			return false;
		}
		if (s->a[t] != want_a) {
			snprintf(s->why, 512, "A(%u) is %s though transaction %u is %s and its "
				 "deleter %u is %s: not atomic", t, s->a[t] ? "there" : "gone", t,
				 in ? "in" : "out", x->deleted_by,
				 x->deleted_by && s->b[x->deleted_by] ? "in" : "out");
			return false;
		}
		if (in && x->prev && !s->b[x->prev]) {
			snprintf(s->why, 512, "transaction %u of thread %u survived but its previous "
				 "one, %u, did not", t, x->thread, x->prev);
			return false;
		}
	}
	return true;
}

static bool check_cb(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	const struct run *r = ctx;
	struct seen s = { .why = why };
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	struct bfs_core *c;
	bool ok = true;
	int id, ret = bfs_core_open(img, &(struct bfs_core_opts){ .cache_bytes = 16 * MiB }, &c);

	if (ret) {
		snprintf(why, 512, "open failed: %s", strerror(-ret));
		return false;
	}
	for (id = 0; id < BFS_BTREE_NR && ok; id++) {
		long bad = bfs_btree_verify(c, id);

		if (bad) {
			snprintf(why, 512, "btree %s: verify found %ld problems",
				 bfs_btree_id_name(id), bad);
			ok = false;
		}
	}
	s.a = bfs_calloc(r->max_txn + 1, 1);
	s.b = bfs_calloc(r->max_txn + 1, 1);
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS(A_INODE, 0, 0), 0);
	for (ret = ok ? bfs_btree_iter_peek(&it, &k) : -ENOENT; !ret;
	     ret = bfs_btree_iter_next(&it, &k))
		if (check_key(&s, r, k)) {
			ok = false;
			break;
		}
	bfs_btree_iter_exit(&it);
	if (ok && ret != -ENOENT) {
		snprintf(why, 512, "scan failed: %s", strerror(-ret));
		ok = false;
	}
	if (ok)
		ok = judge(&s, r, mk);
	ret = bfs_core_close(c);
	if (ok && ret) {
		snprintf(why, 512, "close after recovery failed: %s", strerror(-ret));
		ok = false;
	}
	bfs_free(s.a);
	bfs_free(s.b);
	return ok;
}

static void run_concurrent(bool spread)
{
	u64 dev_bytes = crash_env_u64("BFS_CRASH_DEV_MB", 64) * MiB;
	struct run r = {
		.max_txn = (u32)crash_env_u64("BFS_CRASH_COMMIT_TXNS", spread ? 4000 : 6000),
		.seed = crash_env_u64("BFS_CRASH_SEED", 1),
		.spread = spread,
	};
	struct worker w[THREADS];
	bfs_thread tid[THREADS];
	struct bfs_format_opts fo = { 0 };
	struct bfs_core_stats st;
	struct crash_result res;
	struct bfs_dev *base;
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("crash-commit-log");
	unsigned i;

	r.t = bfs_calloc(r.max_txn + 2, sizeof(*r.t));
	bfs_mutex_init(&r.lock);
	/* small nodes: each thread's keys span many leaves, which split as they fill */
	if (spread)
		fo.btree_node_size = 4096;
	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &r.dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(r.dev, sb), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(r.dev, &base), 0);

	ck_assert_int_eq(bfs_dev_record_start(r.dev, logpath), 0);
	r.c = open_core(r.dev);
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .r = &r, .idx = i, .rng = r.seed * 1000003 + i };
		ck_assert_int_eq(bfs_thread_create(&tid[i], worker_fn, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		bfs_thread_join(tid[i]);
	bfs_core_get_stats(r.c, &st);
	ck_assert_int_eq(bfs_core_close(r.c), 0);
	crash_mark(r.dev, 'f', r.max_txn);
	ck_assert_int_eq(bfs_dev_record_stop(r.dev), 0);
	/* the point of the test: checkpoints ran while the committers went on */
	ck_assert_msg(st.checkpoints_background >= 3, "only %llu background checkpoints",
		      (unsigned long long)st.checkpoints_background);
	/* and in the spread run, commits to different leaves went side by side, with splits */
	if (spread)
		ck_assert_msg(st.commits_parallel > r.max_txn / 2 && st.splits >= 10,
			      "%llu of %u commits parallel, %llu splits",
			      (unsigned long long)st.commits_parallel, r.max_txn,
			      (unsigned long long)st.splits);

	crash_build_states(logpath, base, r.seed ^ 0x7777, check_cb, &r, &res);
	printf("crash-commit%s: %u transactions in %u threads (%llu parallel, %llu splits), "
	       "%llu background checkpoints, %zu log entries; %u crash states checked "
	       "(%u flush points, %u random), %u failed\n", spread ? " (spread)" : "",
	       r.max_txn, THREADS, (unsigned long long)st.commits_parallel,
	       (unsigned long long)st.splits, (unsigned long long)st.checkpoints_background,
	       res.log_entries, res.states, res.flush_states, res.random_states, res.failures);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);

	unlink(logpath);
	free(logpath);
	bfs_free(r.t);
	bfs_free(sb);
	bfs_mutex_destroy(&r.lock);
	bfs_dev_close(base);
	bfs_dev_close(r.dev);
}

START_TEST(test_crash_concurrent_commits)
{
	run_concurrent(false);
}
END_TEST

START_TEST(test_crash_parallel_leaves)
{
	run_concurrent(true);
}
END_TEST

static Suite *crash_commit_suite(void)
{
	Suite *s = suite_create("crash_commit");
	TCase *tc = tcase_create("concurrent");

	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, test_crash_concurrent_commits);
	tcase_add_test(tc, test_crash_parallel_leaves);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_commit_suite)
