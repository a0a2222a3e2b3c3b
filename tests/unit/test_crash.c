// SPDX-License-Identifier: MIT
/*
 * Crash harness for the btree and journal (CrashMonkey / dm-log-writes
 * style, in process).
 *
 * A workload of transactions (inserts, overwrites, deletes, extent inserts
 * and range deletes, mixed across two btrees) runs on a memory device whose
 * writes are recorded.  Marks in the log say when a transaction began to
 * commit ("c T") and when everything up to transaction T was made durable
 * ("f T").  From the log we build device states a power failure could leave:
 *   - every flush point (all writes before it applied), sampled evenly when
 *     there are more than BFS_CRASH_MAX_FLUSH_STATES;
 *   - random points between flushes, where each unflushed write survives or
 *     not at random and one of them may be torn.
 * Each state must open (replaying the journal), pass bfs_btree_verify(), and
 * hold exactly the state after some transaction T with
 *   last durable transaction <= T <= last transaction begun before the crash,
 * which proves both durability and atomicity of transactions.
 *
 * Environment: BFS_CRASH_OPS (operations, default 200000), BFS_CRASH_SEED,
 * BFS_CRASH_RANDOM_STATES (per flush interval, default 2),
 * BFS_CRASH_MAX_FLUSH_STATES (default 80), BFS_CRASH_DEV_MB (default 128).
 * `make crash-soak` runs it much longer with several seeds.
 */
#include "crash_states.h"
#include "unit.h"

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EXT_INODES	4
#define EXT_UNITS	4096	/* offsets per extent inode */
/* far above the inode numbers of the filesystem mkfs makes (root etc.) */
#define EXT_INODE_BASE	1000100
#define PT_INODE	1000000

#define env_u64 crash_env_u64
#define splitmix crash_splitmix

static u64 mix(u64 a)
{
	return splitmix(&a);
}

/* ---- the model: per position, the history of (transaction, value) ---- */

struct change {
	u32 txn;
	u32 val;	/* 0: absent */
};

struct history {
	struct change *c;
	u32 nr, cap;
};

static void hist_push(struct history *h, u32 txn, u32 val)
{
	if (h->nr && h->c[h->nr - 1].txn == txn) {
		h->c[h->nr - 1].val = val;
		return;
	}
	if (h->nr == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 2;
		h->c = bfs_realloc(h->c, h->cap * sizeof(*h->c));
		ck_assert_ptr_nonnull(h->c);
	}
	h->c[h->nr++] = (struct change){ txn, val };
}

/* value after transaction @t */
static u32 hist_at(const struct history *h, u32 t)
{
	u32 lo = 0, hi = h->nr;

	while (lo < hi) {
		u32 mid = (lo + hi) / 2;

		if (h->c[mid].txn <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? h->c[lo - 1].val : 0;
}

struct model {
	u64 nr_points;		/* point keys: offset = index * 7 + 3 */
	struct history *points;
	struct history *units;	/* EXT_INODES * EXT_UNITS */
	u32 next_val;
};

static u64 point_offset(u64 idx)
{
	return idx * 7 + 3;
}

/* point values: 1..4 words; word 0 is the value id, the rest derive from it */
static u32 val_words(u32 val)
{
	return 1 + val % 4;
}

static void fill_value(u64 *w, u32 val)
{
	u32 i;

	w[0] = val;
	for (i = 1; i < val_words(val); i++)
		w[i] = mix((u64)val * 31 + i);
}

/* ---- the workload ---- */

struct workload {
	struct model m;
	u64 rng;
	u32 txn;		/* last transaction committed */
	u64 ops, keys_made;
};

static void op_point_update(struct workload *w, struct bfs_trans *t, bool fresh)
{
	u64 buf[BFS_BKEY_U64S + 4];
	struct bfs_bkey *k = (void *)buf;
	u64 idx;
	u32 val;

	if (fresh || !w->keys_made)
		idx = w->keys_made++;
	else
		idx = splitmix(&w->rng) % w->keys_made;
	ck_assert_uint_lt(idx, w->m.nr_points);
	val = ++w->m.next_val;
	bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(PT_INODE, point_offset(idx), 0), val_words(val));
	fill_value((u64 *)bfs_bkey_val(k), val);
	ck_assert_int_eq(bfs_trans_update(t, BFS_BTREE_INODES, k), 0);
	hist_push(&w->m.points[idx], w->txn + 1, val);
}

static void op_point_delete(struct workload *w, struct bfs_trans *t)
{
	u64 idx;

	if (!w->keys_made)
		return;
	idx = splitmix(&w->rng) % w->keys_made;
	ck_assert_int_eq(bfs_trans_delete(t, BFS_BTREE_INODES,
					  BFS_POS(PT_INODE, point_offset(idx), 0)), 0);
	hist_push(&w->m.points[idx], w->txn + 1, 0);
}

static void op_extent(struct workload *w, struct bfs_trans *t, bool del)
{
	u64 buf[BFS_BKEY_U64S + 1];
	struct bfs_bkey *k = (void *)buf;
	u32 ino = (u32)(splitmix(&w->rng) % EXT_INODES);
	u32 len = 1 + (u32)(splitmix(&w->rng) % 64);
	u32 start = (u32)(splitmix(&w->rng) % (EXT_UNITS - len));
	u32 val = del ? 0 : ++w->m.next_val, i;

	if (del) {
		ck_assert_int_eq(bfs_trans_delete_range(t, BFS_BTREE_EXTENTS, EXT_INODE_BASE + ino,
							start, start + len, 0), 0);
	} else {
		bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(EXT_INODE_BASE + ino, start + len, 0), 1);
		k->size = cpu_to_le32(len);
		((u64 *)bfs_bkey_val(k))[0] = val;
		ck_assert_int_eq(bfs_trans_update(t, BFS_BTREE_EXTENTS, k), 0);
	}
	for (i = start; i < start + len; i++)
		hist_push(&w->m.units[ino * EXT_UNITS + i], w->txn + 1, val);
}

static void one_op(struct workload *w, struct bfs_trans *t)
{
	u64 r = splitmix(&w->rng) % 100;

	if (r < 55)
		op_point_update(w, t, true);
	else if (r < 72)
		op_point_update(w, t, false);
	else if (r < 85)
		op_point_delete(w, t);
	else if (r < 97)
		op_extent(w, t, false);
	else
		op_extent(w, t, true);
	w->ops++;
}

#define mark crash_mark

static struct bfs_core *open_core(struct bfs_dev *dev)
{
	struct bfs_core_opts opts = { .cache_bytes = 16 * MiB };
	struct bfs_core *c;
	int ret = bfs_core_open(dev, &opts, &c);

	ck_assert_msg(ret == 0, "open failed: %d", ret);
	return c;
}

static void run_workload(struct workload *w, struct bfs_dev *dev, u64 nr_ops)
{
	struct bfs_core *c = open_core(dev);
	u32 next_flush = 50 + (u32)(splitmix(&w->rng) % 350);
	unsigned reopens = 0;

	while (w->ops < nr_ops) {
		struct bfs_trans *t;
		u32 n = 1 + (u32)(splitmix(&w->rng) % 8), i;

		ck_assert_int_eq(bfs_trans_begin(c, &t), 0);
		for (i = 0; i < n; i++)
			one_op(w, t);
		mark(dev, 'c', w->txn + 1);
		ck_assert_int_eq(bfs_trans_commit(t, NULL), 0);
		bfs_trans_end(t);
		w->txn++;

		if (w->txn < next_flush)
			continue;
		next_flush = w->txn + 50 + (u32)(splitmix(&w->rng) % 350);
		if (reopens < 2 && w->ops > nr_ops / 3 * (reopens + 1)) {
			/* a clean close and reopen, crash points inside included */
			ck_assert_int_eq(bfs_core_close(c), 0);
			mark(dev, 'f', w->txn);
			c = open_core(dev);
			reopens++;
			continue;
		}
		ck_assert_int_eq(bfs_core_flush(c), 0);
		mark(dev, 'f', w->txn);
	}
	ck_assert_int_eq(bfs_core_close(c), 0);
	mark(dev, 'f', w->txn);
}

/* ---- checking one crashed state ---- */

struct check {
	const struct model *m;
	u32 lo, hi;		/* T must lie in [lo, hi] */
	u64 *cand;		/* bitmap over [lo, hi] */
	u64 *match;		/* scratch of the same size */
	u32 *actual_units;
	u8 *seen_points;
	char why[512];
	bool failed;
};

static void fail_check(struct check *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_check(struct check *ck, const char *fmt, ...)
{
	va_list ap;

	if (ck->failed)
		return;
	ck->failed = true;
	va_start(ap, fmt);
	vsnprintf(ck->why, sizeof(ck->why), fmt, ap);
	va_end(ap);
}

/* narrow the candidate transactions to those where @h had value @actual */
static void constrain(struct check *ck, const struct history *h, u32 actual, const char *what,
		      u64 where)
{
	u32 lo = ck->lo, hi = ck->hi, t, v;
	size_t words = (hi - lo) / 64 + 1, i;
	u64 *match = ck->match;
	bool any = false;

	/* fast path: no change inside the window */
	if (!h->nr || h->c[h->nr - 1].txn <= lo) {
		v = hist_at(h, lo);
		if (v != actual)
			fail_check(ck, "%s %llu: holds %u, durable value is %u (window %u..%u)",
				   what, (unsigned long long)where, actual, v, lo, hi);
		return;
	}
	memset(match, 0, words * 8);
	for (t = lo; t <= hi; t++)
		if (hist_at(h, t) == actual)
			match[(t - lo) / 64] |= 1ULL << ((t - lo) % 64);
	for (i = 0; i < words; i++) {
		ck->cand[i] &= match[i];
		any |= ck->cand[i] != 0;
	}
	if (!any)
		fail_check(ck, "%s %llu: holds %u, no transaction in %u..%u leaves that together "
			   "with the other keys (value at %u: %u)", what,
			   (unsigned long long)where, actual, lo, hi, lo, hist_at(h, lo));
}

static int check_point_key(struct check *ck, const struct bfs_bkey *k)
{
	u64 off = le64_to_cpu(k->offset), idx, want[4];
	const u64 *v = bfs_bkey_val(k);
	u32 val;

	if (le64_to_cpu(k->inode) < PT_INODE)
		return 0;	/* the filesystem's own keys (root directory, ...) */
	if (le64_to_cpu(k->inode) != PT_INODE || off % 7 != 3 || (idx = off / 7) >= ck->m->nr_points) {
		fail_check(ck, "key at %llu:%llu was never written",
			   (unsigned long long)le64_to_cpu(k->inode), (unsigned long long)off);
		return -1;
	}
	if (k->type != BFS_KEY_COOKIE || !bfs_bkey_val_u64s(k)) {
		fail_check(ck, "point %llu: wrong type %u or empty value", (unsigned long long)idx,
			   k->type);
		return -1;
	}
	val = (u32)v[0];
	fill_value(want, val);
	if (bfs_bkey_val_u64s(k) != val_words(val) ||
	    memcmp(v, want, val_words(val) * 8)) {
		fail_check(ck, "point %llu: value %u has wrong length or contents",
			   (unsigned long long)idx, val);
		return -1;
	}
	ck->seen_points[idx] = 1;
	constrain(ck, &ck->m->points[idx], val, "point", idx);
	return ck->failed ? -1 : 0;
}

static int check_extent_key(struct check *ck, const struct bfs_bkey *k)
{
	u64 ino = le64_to_cpu(k->inode) - EXT_INODE_BASE;
	u64 end = le64_to_cpu(k->offset), start = bfs_bkey_start(k), i;

	if (ino >= EXT_INODES || end > EXT_UNITS || !bfs_bkey_size(k) ||
	    k->type != BFS_KEY_COOKIE || bfs_bkey_val_u64s(k) != 1) {
		fail_check(ck, "extent %llu:%llu (size %u) was never written",
			   (unsigned long long)le64_to_cpu(k->inode), (unsigned long long)end,
			   bfs_bkey_size(k));
		return -1;
	}
	for (i = start; i < end; i++) {
		if (ck->actual_units[ino * EXT_UNITS + i]) {
			fail_check(ck, "extents overlap at %llu:%llu", (unsigned long long)ino,
				   (unsigned long long)i);
			return -1;
		}
		ck->actual_units[ino * EXT_UNITS + i] = (u32)((const u64 *)bfs_bkey_val(k))[0];
	}
	return 0;
}

static int scan(struct bfs_core *c, enum bfs_btree_id id, struct check *ck)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, c, id, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k))
		if ((id == BFS_BTREE_INODES ? check_point_key(ck, k) : check_extent_key(ck, k)))
			break;
	bfs_btree_iter_exit(&it);
	return ret == -ENOENT ? 0 : ret;
}

static bool check_state(struct bfs_dev *dev, const struct model *m, u32 lo, u32 hi,
			u64 points_made, char *why)
{
	struct check ck = { .m = m, .lo = lo, .hi = BFS_MAX(lo, hi) };
	size_t words = (ck.hi - lo) / 64 + 1;
	struct bfs_core *c;
	u64 i;
	int ret, id;

	hi = ck.hi;
	ret = bfs_core_open(dev, &(struct bfs_core_opts){ .cache_bytes = 16 * MiB }, &c);
	if (ret) {
		snprintf(why, 512, "open failed: %s", strerror(-ret));
		return false;
	}
	for (id = 0; id < BFS_BTREE_NR; id++) {
		long bad = bfs_btree_verify(c, id);

		if (bad) {
			snprintf(why, 512, "btree %s: verify found %ld problems",
				 bfs_btree_id_name(id), bad);
			bfs_core_close(c);
			return false;
		}
	}
	ck.cand = bfs_calloc(words, 8);
	ck.match = bfs_calloc(words, 8);
	ck.actual_units = bfs_calloc(EXT_INODES * EXT_UNITS, sizeof(u32));
	ck.seen_points = bfs_calloc(m->nr_points, 1);
	for (i = 0; i < words * 64; i++)
		if (i <= hi - lo)
			ck.cand[i / 64] |= 1ULL << (i % 64);

	ret = scan(c, BFS_BTREE_INODES, &ck);
	if (!ret && !ck.failed)
		ret = scan(c, BFS_BTREE_EXTENTS, &ck);
	if (ret && !ck.failed)
		fail_check(&ck, "scan failed: %s", strerror(-ret));
	for (i = 0; !ck.failed && i < points_made; i++)
		if (!ck.seen_points[i])
			constrain(&ck, &m->points[i], 0, "point", i);
	for (i = 0; !ck.failed && i < EXT_INODES * EXT_UNITS; i++)
		constrain(&ck, &m->units[i], ck.actual_units[i], "extent unit", i);

	ret = bfs_core_close(c);
	if (ret && !ck.failed)
		fail_check(&ck, "close after recovery failed: %s", strerror(-ret));
	if (ck.failed)
		snprintf(why, 512, "%s", ck.why);
	bfs_free(ck.cand);
	bfs_free(ck.match);
	bfs_free(ck.actual_units);
	bfs_free(ck.seen_points);
	return !ck.failed;
}

struct check_ctx {
	const struct model *m;
	u64 points_made;
};

static bool check_cb(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct check_ctx *cc = ctx;

	return check_state(img, cc->m, mk.f, mk.c, cc->points_made, why);
}

START_TEST(test_crash_btree)
{
	u64 nr_ops = env_u64("BFS_CRASH_OPS", 200000);
	u64 dev_bytes = env_u64("BFS_CRASH_DEV_MB", 128) * MiB;
	struct workload w = { .rng = env_u64("BFS_CRASH_SEED", 1) };
	struct bfs_format_opts fo = { 0 };
	struct crash_result res;
	struct check_ctx cc;
	struct bfs_dev *dev, *base;
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("crash-log");
	u64 i;

	w.m.nr_points = nr_ops;
	w.m.points = bfs_calloc(nr_ops, sizeof(*w.m.points));
	w.m.units = bfs_calloc(EXT_INODES * EXT_UNITS, sizeof(*w.m.units));
	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);

	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	run_workload(&w, dev, nr_ops);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	cc = (struct check_ctx){ .m = &w.m, .points_made = w.keys_made };
	crash_build_states(logpath, base, w.rng ^ 0x5555, check_cb, &cc, &res);
	printf("crash: %llu operations in %u transactions, %llu distinct keys, %zu log entries; "
	       "%u crash states checked (%u flush points, %u random), %u failed\n",
	       (unsigned long long)w.ops, w.txn, (unsigned long long)w.keys_made, res.log_entries,
	       res.states, res.flush_states, res.random_states, res.failures);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);

	unlink(logpath);
	free(logpath);
	for (i = 0; i < nr_ops; i++)
		bfs_free(w.m.points[i].c);
	for (i = 0; i < EXT_INODES * EXT_UNITS; i++)
		bfs_free(w.m.units[i].c);
	bfs_free(w.m.points);
	bfs_free(w.m.units);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}
END_TEST

static Suite *crash_suite(void)
{
	Suite *s = suite_create("crash");
	TCase *tc = tcase_create("btree");

	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, test_crash_btree);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_suite)
