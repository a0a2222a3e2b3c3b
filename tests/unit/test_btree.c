// SPDX-License-Identifier: MIT
/*
 * Btree core: format/open/close, inserts and lookups, iterators across
 * nodes, a random workload against a reference model (with reopen), extent
 * trimming, cache budget, ENOSPC, journal replay after a crash.
 */
#include "test_btree_util.h"

#include <unistd.h>

#define MODEL_N 20000

static struct bfs_dev *dev;
static struct bfs_core *c;

static void scan_count(struct bfs_core *core, enum bfs_btree_id id, u64 *nr, bool backward)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	struct bfs_bpos prev = backward ? BFS_POS_MAX : BFS_POS_MIN;
	bool first = true;
	int ret;

	*nr = 0;
	bfs_btree_iter_init(&it, core, id, backward ? BFS_POS_MAX : BFS_POS_MIN, 0);
	for (ret = backward ? bfs_btree_iter_prev(&it, &k) : bfs_btree_iter_peek(&it, &k); !ret;
	     ret = backward ? bfs_btree_iter_prev(&it, &k) : bfs_btree_iter_next(&it, &k)) {
		int cmp = bfs_bpos_cmp(bfs_bkey_pos(k), prev);

		ck_assert(first || (backward ? cmp < 0 : cmp > 0));
		prev = bfs_bkey_pos(k);
		first = false;
		(*nr)++;
	}
	ck_assert_int_eq(ret, -ENOENT);
	bfs_btree_iter_exit(&it);
}

START_TEST(test_format_open_close)
{
	unsigned id;
	u64 nr;

	tu_log_reset();
	dev = tu_mkfs(64 * MiB, 64 * KiB, 0, 0);
	c = tu_open(dev, false, 0);
	for (id = 0; id < BFS_BTREE_NR; id++) {
		ck_assert_int_eq(bfs_btree_verify(c, id), 0);
		scan_count(c, id, &nr, false);
		ck_assert_int_eq(nr, 0);
	}
	ck_assert_int_eq(bfs_core_close(c), 0);
	ck_assert(le32_to_cpu(((struct bfs_sb *)(bfs_dev_mem(dev) + 4096))->flags) & BFS_SB_CLEAN);
	c = tu_open(dev, false, 0);
	ck_assert(!(le32_to_cpu(((struct bfs_sb *)(bfs_dev_mem(dev) + 4096))->flags) & BFS_SB_CLEAN));
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
}
END_TEST

static void insert_seq(struct bfs_core *core, u64 n, u32 nval)
{
	u64 buf[64], i;

	for (i = 0; i < n; i++)
		ck_assert_int_eq(bfs_btree_insert(core, BFS_BTREE_INODES, tu_key(buf, i / 100, i % 100, i, nval)), 0);
}

static void check_seq(struct bfs_core *core, u64 n)
{
	u64 buf[64], i;

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(bfs_btree_lookup(core, BFS_BTREE_INODES, BFS_POS(i / 100, i % 100, 0),
						  buf, sizeof(buf)), 0);
		ck_assert_int_eq(tu_val((struct bfs_bkey *)buf), i);
	}
	ck_assert_int_eq(bfs_btree_lookup(core, BFS_BTREE_INODES, BFS_POS(n / 100, n % 100, 0) ,
					  buf, sizeof(buf)), -ENOENT);
}

START_TEST(test_insert_lookup_iterate)
{
	const u64 n = 20000;
	struct bfs_btree_stats st;
	u64 nr, i;

	/* loop 0: journal, 1: no journal, 2: 4 KiB nodes (deeper tree, interior merges) */
	tu_log_reset();
	dev = tu_mkfs(64 * MiB, _i == 2 ? 4 * KiB : 16 * KiB, 0, 0);
	c = tu_open(dev, _i == 1, 0);
	insert_seq(c, n, 2);
	check_seq(c, n);
	ck_assert_int_eq(bfs_btree_get_stats(c, BFS_BTREE_INODES, &st), 0);
	ck_assert_uint_ge(st.depth, 2);
	ck_assert_int_eq(st.keys, n);
	scan_count(c, BFS_BTREE_INODES, &nr, false);
	ck_assert_int_eq(nr, n);
	scan_count(c, BFS_BTREE_INODES, &nr, true);
	ck_assert_int_eq(nr, n);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);

	c = tu_open(dev, _i == 1, 0);
	check_seq(c, n);
	scan_count(c, BFS_BTREE_INODES, &nr, false);
	ck_assert_int_eq(nr, n);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	if (_i == 2) {
		ck_assert_int_eq(bfs_btree_get_stats(c, BFS_BTREE_INODES, &st), 0);
		ck_assert_uint_ge(st.depth, 3);
	}
	/* delete everything: leaves merge and the tree shrinks back to one leaf */
	for (i = 0; i < n; i++)
		ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_INODES, BFS_POS(i / 100, i % 100, 0)), 0);
	scan_count(c, BFS_BTREE_INODES, &nr, true);
	ck_assert_int_eq(nr, 0);
	ck_assert_int_eq(bfs_btree_get_stats(c, BFS_BTREE_INODES, &st), 0);
	ck_assert_uint_eq(st.depth, 1);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	c = tu_open(dev, _i == 1, 0);
	scan_count(c, BFS_BTREE_INODES, &nr, false);
	ck_assert_int_eq(nr, 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}
END_TEST

/*
 * A key the iterator hands out stays intact until the next call, whatever
 * happens to its leaf meanwhile: scans hand out keys of the written bsets in
 * place and copies of unwritten ones, and here the holder overwrites the
 * key, checkpoints (pending keys move, nodes are written) and deletes runs
 * of keys ahead (leaves merge, nodes die) while holding it.
 */
START_TEST(test_iter_keys_stable)
{
	const u64 n = 6000;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 buf[64], saved[64], i, seen = 0, prev = 0, deleted = 0;
	int ret;

	tu_log_reset();
	dev = tu_mkfs(64 * MiB, 16 * KiB, 0, 0);
	c = tu_open(dev, false, 0);
	insert_seq(c, n, 2);
	ck_assert_int_eq(bfs_core_checkpoint(c), 0);
	/* every third key unwritten again: batches mix written and pending keys */
	for (i = 0; i < n; i += 3)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, tu_key(buf, i / 100, i % 100, i, 2)), 0);

	/* loop 1: BFS_ITER_FEW, each key found in the leaf, no batch ahead */
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS_MIN,
			    BFS_ITER_PREFETCH | (_i ? BFS_ITER_FEW : 0));
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		u64 idx = le64_to_cpu(k->inode) * 100 + le64_to_cpu(k->offset);

		ck_assert(!seen || idx > prev);
		ck_assert_uint_eq(tu_val(k) % (1ull << 32), idx);
		prev = idx;
		seen++;
		memcpy(saved, k, bfs_bkey_bytes(k));
		if (seen % 5)
			continue;	/* let the next keys come from the batch */
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES,
						  tu_key(buf, idx / 100, idx % 100, idx | (1ull << 32), 2)), 0);
		if (seen % 15 == 0)
			ck_assert_int_eq(bfs_core_checkpoint(c), 0);
		if (seen % 200 == 0) {
			for (i = idx + 20; i < idx + 60 && i < n; i++, deleted++)
				ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_INODES,
								  BFS_POS(i / 100, i % 100, 0)), 0);
			ck_assert_int_eq(bfs_core_checkpoint(c), 0);
		}
		ck_assert_msg(!memcmp(saved, k, bfs_bkey_bytes((struct bfs_bkey *)saved)),
			      "key %llu changed under the iterator", (unsigned long long)idx);
	}
	ck_assert_int_eq(ret, -ENOENT);
	bfs_btree_iter_exit(&it);
	ck_assert_uint_eq(seen, n - deleted);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}
END_TEST

/* ---- random workload against a model ---- */

static u64 rng_state = 88172645463325252ULL;

static u64 rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void model_compare(struct bfs_core *core, const u64 *model)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 i = 0, seen = 0, expect = 0;
	int ret;

	for (i = 0; i < MODEL_N; i++)
		expect += model[i] != 0;
	bfs_btree_iter_init(&it, core, BFS_BTREE_DIRENTS, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		u64 idx = le64_to_cpu(k->inode) * 1000 + le64_to_cpu(k->offset);

		ck_assert_uint_lt(idx, MODEL_N);
		ck_assert_msg(model[idx] == tu_val(k), "key %llu: model %llu tree %llu",
			      (unsigned long long)idx, (unsigned long long)model[idx],
			      (unsigned long long)tu_val(k));
		ck_assert_uint_eq(bfs_bkey_val_u64s(k), 1 + model[idx] % 7);
		seen++;
	}
	ck_assert_int_eq(ret, -ENOENT);
	bfs_btree_iter_exit(&it);
	ck_assert_uint_eq(seen, expect);
	ck_assert_int_eq(bfs_btree_verify(core, BFS_BTREE_DIRENTS), 0);
}

START_TEST(test_random_model)
{
	u64 *model = bfs_calloc(MODEL_N, sizeof(u64));
	u64 buf[64], op;
	struct bfs_trans *t;
	struct bfs_core_stats st;

	tu_log_reset();
	dev = tu_mkfs(128 * MiB, 16 * KiB, 0, 0);
	c = tu_open(dev, _i, 4 * MiB);
	ck_assert_int_eq(bfs_trans_begin(c, &t), 0);
	/* the journal variant runs the full 100k+, the no-journal one a shorter run */
	for (op = 0; op < (_i ? 40000u : 120000u); op++) {
		u64 idx = rnd() % MODEL_N, r = rnd();
		struct bfs_bpos pos = BFS_POS(idx / 1000, idx % 1000, 0);

		/* deletes come in bursts so that nodes get sparse and merge */
		if ((op / 20000) % 2 == 1 ? r % 3 != 0 : r % 4 == 0) {
			ck_assert_int_eq(bfs_trans_delete(t, BFS_BTREE_DIRENTS, pos), 0);
			model[idx] = 0;
		} else {
			u64 v = (r >> 8) | 1;

			ck_assert_int_eq(bfs_trans_update(t, BFS_BTREE_DIRENTS,
				tu_key(buf, pos.inode, pos.offset, v, 1 + v % 7)), 0);
			model[idx] = v;
		}
		/* several updates per commit now and then */
		if (r % 5)
			ck_assert_int_eq(bfs_trans_commit(t, NULL), 0);
		if (op % 30000 == 29999) {
			ck_assert_int_eq(bfs_trans_commit(t, NULL), 0);
			model_compare(c, model);
		}
	}
	ck_assert_int_eq(bfs_trans_commit(t, NULL), 0);
	bfs_trans_end(t);
	model_compare(c, model);
	bfs_core_get_stats(c, &st);
	ck_assert_uint_gt(st.splits, 10);
	if (!_i)
		ck_assert_uint_gt(st.merges, 0);
	ck_assert_int_eq(bfs_core_close(c), 0);

	c = tu_open(dev, _i, 4 * MiB);
	model_compare(c, model);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	bfs_free(model);
	ck_assert_int_eq(tu_nr_errs, 0);
}
END_TEST

START_TEST(test_iter_prev_next)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 buf[16], i;

	tu_log_reset();
	dev = tu_mkfs(64 * MiB, 4 * KiB, 0, 0);
	c = tu_open(dev, false, 0);
	/* even offsets only, enough for many 4K leaves */
	for (i = 0; i < 4000; i++)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_XATTRS, tu_key(buf, 1, i * 2, i, 1)), 0);

	bfs_btree_iter_init(&it, c, BFS_BTREE_XATTRS, BFS_POS(1, 1001, 0), 0);
	ck_assert_int_eq(bfs_btree_iter_peek(&it, &k), 0);
	ck_assert_int_eq(le64_to_cpu(k->offset), 1002);
	ck_assert_int_eq(bfs_btree_iter_prev(&it, &k), 0);
	ck_assert_int_eq(le64_to_cpu(k->offset), 1000);
	ck_assert_int_eq(bfs_btree_iter_prev(&it, &k), 0);
	ck_assert_int_eq(le64_to_cpu(k->offset), 998);
	ck_assert_int_eq(bfs_btree_iter_next(&it, &k), 0);
	ck_assert_int_eq(le64_to_cpu(k->offset), 1000);
	/* walk back to the start across many leaves */
	for (i = 500; i-- > 0; ) {
		ck_assert_int_eq(bfs_btree_iter_prev(&it, &k), 0);
		ck_assert_int_eq(le64_to_cpu(k->offset), i * 2);
	}
	ck_assert_int_eq(bfs_btree_iter_prev(&it, &k), -ENOENT);
	bfs_btree_iter_set_pos(&it, BFS_POS(1, 7990, 0));
	ck_assert_int_eq(bfs_btree_iter_peek(&it, &k), 0);
	for (i = 3995; i < 4000; i++) {
		ck_assert_int_eq(le64_to_cpu(k->offset), i * 2);
		ck_assert_int_eq(bfs_btree_iter_next(&it, &k), i == 3999 ? -ENOENT : 0);
	}
	bfs_btree_iter_exit(&it);
	/* other btrees stay empty */
	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(1, 2, 0), buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
}
END_TEST

/* ---- extents ---- */

/* test_extent keys: value word 0 is the "data offset" of the extent's start */
static void ext_insert(struct bfs_core *core, u64 ino, u64 start, u64 end, u64 data)
{
	u64 buf[8];
	struct bfs_bkey *k = (struct bfs_bkey *)buf;

	bfs_bkey_init(k, BFS_KEY_TEST_EXTENT, BFS_POS(ino, end, 0), 1);
	k->size = cpu_to_le32((u32)(end - start));
	k->v[0] = cpu_to_le64(data);
	ck_assert_int_eq(bfs_btree_insert(core, BFS_BTREE_EXTENTS, k), 0);
}

/* the extents of @ino as "start-end@data " */
static void ext_dump(struct bfs_core *core, u64 ino, char *out, size_t len)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	size_t o = 0;
	int ret;

	out[0] = 0;
	bfs_btree_iter_init(&it, core, BFS_BTREE_EXTENTS, BFS_POS(ino, 0, 0), 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret && le64_to_cpu(k->inode) == ino;
	     ret = bfs_btree_iter_next(&it, &k))
		o += (size_t)snprintf(out + o, len - o, "%llu-%llu@%llu ",
				      (unsigned long long)bfs_bkey_start(k),
				      (unsigned long long)le64_to_cpu(k->offset),
				      (unsigned long long)le64_to_cpu(k->v[0]));
	bfs_btree_iter_exit(&it);
}

START_TEST(test_extents)
{
	struct bfs_trans *t;
	char s[4096];
	u64 buf[8], i;

	tu_log_reset();
	dev = tu_mkfs(64 * MiB, 4 * KiB, 0, 0);
	c = tu_open(dev, false, 0);

	ext_insert(c, 5, 0, 100, 1000);
	ext_dump(c, 5, s, sizeof(s));
	ck_assert_str_eq(s, "0-100@1000 ");
	/* split in the middle */
	ext_insert(c, 5, 30, 40, 5000);
	ext_dump(c, 5, s, sizeof(s));
	ck_assert_str_eq(s, "0-30@1000 30-40@5000 40-100@1040 ");
	/* trim the back of one and the front of another */
	ext_insert(c, 5, 20, 50, 7000);
	ext_dump(c, 5, s, sizeof(s));
	ck_assert_str_eq(s, "0-20@1000 20-50@7000 50-100@1050 ");
	/* exact overwrite */
	ext_insert(c, 5, 20, 50, 8000);
	ext_dump(c, 5, s, sizeof(s));
	ck_assert_str_eq(s, "0-20@1000 20-50@8000 50-100@1050 ");
	/* cover everything */
	ext_insert(c, 5, 0, 200, 9000);
	ext_dump(c, 5, s, sizeof(s));
	ck_assert_str_eq(s, "0-200@9000 ");
	/* other inodes are untouched */
	ext_insert(c, 4, 0, 10, 1);
	ext_insert(c, 6, 0, 10, 2);
	ext_dump(c, 5, s, sizeof(s));
	ck_assert_str_eq(s, "0-200@9000 ");
	/* punch a hole */
	ck_assert_int_eq(bfs_trans_begin(c, &t), 0);
	ck_assert_int_eq(bfs_trans_delete_range(t, BFS_BTREE_EXTENTS, 5, 50, 60, 0), 0);
	ck_assert_int_eq(bfs_trans_commit(t, NULL), 0);
	bfs_trans_end(t);
	ext_dump(c, 5, s, sizeof(s));
	ck_assert_str_eq(s, "0-50@9000 60-200@9060 ");
	/* lookup finds the extent containing an offset */
	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_EXTENTS, BFS_POS(5, 55, 0), buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_EXTENTS, BFS_POS(5, 60, 0), buf, sizeof(buf)), 0);
	ck_assert_int_eq(le64_to_cpu(((struct bfs_bkey *)buf)->offset), 200);
	/* many small extents over several leaves, then one that covers them all */
	for (i = 0; i < 2000; i++)
		ext_insert(c, 7, i * 10, i * 10 + 5, i);
	ext_insert(c, 7, 3, 19997, 42);
	ext_dump(c, 7, s, sizeof(s));
	ck_assert_str_eq(s, "0-3@0 3-19997@42 ");
	/* two overlapping extents in one transaction */
	ck_assert_int_eq(bfs_trans_begin(c, &t), 0);
	{
		struct bfs_bkey *k = (struct bfs_bkey *)buf;

		bfs_bkey_init(k, BFS_KEY_TEST_EXTENT, BFS_POS(8, 100, 0), 1);
		k->size = cpu_to_le32(100);
		k->v[0] = cpu_to_le64(0);
		ck_assert_int_eq(bfs_trans_update(t, BFS_BTREE_EXTENTS, k), 0);
		bfs_bkey_init(k, BFS_KEY_TEST_EXTENT, BFS_POS(8, 60, 0), 1);
		k->size = cpu_to_le32(20);
		k->v[0] = cpu_to_le64(500);
		ck_assert_int_eq(bfs_trans_update(t, BFS_BTREE_EXTENTS, k), 0);
	}
	ck_assert_int_eq(bfs_trans_commit(t, NULL), 0);
	bfs_trans_end(t);
	ext_dump(c, 8, s, sizeof(s));
	ck_assert_str_eq(s, "0-40@0 40-60@500 60-100@60 ");
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_EXTENTS), 0);

	ck_assert_int_eq(bfs_core_close(c), 0);
	c = tu_open(dev, false, 0);
	ext_dump(c, 5, s, sizeof(s));
	ck_assert_str_eq(s, "0-50@9000 60-200@9060 ");
	ext_dump(c, 8, s, sizeof(s));
	ck_assert_str_eq(s, "0-40@0 40-60@500 60-100@60 ");
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_cache_budget)
{
	struct bfs_core_stats st;
	u64 nr, budget = 8 * 16 * KiB;

	tu_log_reset();
	dev = tu_mkfs(64 * MiB, 16 * KiB, 0, 0);
	c = tu_open(dev, false, budget);
	insert_seq(c, 30000, 3);
	ck_assert_int_eq(bfs_core_checkpoint(c), 0);
	bfs_core_get_stats(c, &st);
	ck_assert_uint_le(st.cache_bytes, budget + 4 * 20 * KiB);
	scan_count(c, BFS_BTREE_INODES, &nr, false);
	ck_assert_int_eq(nr, 30000);
	check_seq(c, 30000);
	bfs_core_get_stats(c, &st);
	ck_assert_uint_gt(st.cache_evictions, 0);
	ck_assert_uint_le(st.cache_bytes, budget + 4 * 20 * KiB);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}
END_TEST

/*
 * Read-ahead loads leaves into a cache that has room for them and only
 * hints them to the page cache under a small budget; either way a sweep
 * sees every key once, in order.
 */
START_TEST(test_readahead_mode)
{
	static const u64 budgets[] = { 8 * 16 * KiB, 0 };
	struct bfs_core_stats st;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 nr, prev = 0;
	int ret;

	tu_log_reset();
	dev = tu_mkfs(64 * MiB, 16 * KiB, 0, 0);
	c = tu_open(dev, false, 0);
	insert_seq(c, 30000, 3);
	/*
	 * a sweep asks for read-ahead when it finds a leaf's keys end before
	 * the leaf does: with every other key gone, half the leaves
	 */
	for (u64 i = 1; i < 30000; i += 2)
		ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_INODES, BFS_POS(i / 100, i % 100, 0)), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	for (unsigned b = 0; b < ARRAY_SIZE(budgets); b++) {
		c = tu_open(dev, false, budgets[b]);
		nr = 0;
		bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS_MIN, BFS_ITER_PREFETCH);
		for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
			u64 idx = le64_to_cpu(k->inode) * 100 + le64_to_cpu(k->offset);

			ck_assert(!nr || idx > prev);
			prev = idx;
			nr++;
		}
		ck_assert_int_eq(ret, -ENOENT);
		bfs_btree_iter_exit(&it);
		ck_assert_int_eq(nr, 15000);
		/* the thread takes the requests in its own time: give it 10 s */
		for (unsigned i = 0; i < 1000; i++) {
			bfs_core_get_stats(c, &st);
			if (st.readahead_hints || !budgets[b])
				break;
			usleep(10 * 1000);
		}
		if (budgets[b])
			ck_assert_uint_gt(st.readahead_hints, 0);
		else
			ck_assert_uint_eq(st.readahead_hints, 0);
		ck_assert_int_eq(bfs_core_close(c), 0);
	}
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}
END_TEST

START_TEST(test_enospc)
{
	u64 buf[64], i;
	int ret = 0;
	u64 nr;

	tu_log_reset();
	dev = tu_mkfs(8 * MiB, 64 * KiB, 0, 0);
	c = tu_open(dev, _i, 0);
	for (i = 0; i < 1000000 && !ret; i++)
		ret = bfs_btree_insert(c, BFS_BTREE_INODES, tu_key(buf, i, 0, i, 40));
	ck_assert_int_eq(ret, -ENOSPC);
	i--;
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	scan_count(c, BFS_BTREE_INODES, &nr, false);
	ck_assert_int_eq(nr, i);
	/* deletes still work and give space back */
	ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_INODES, BFS_POS(0, 0, 0)), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	c = tu_open(dev, _i, 0);
	scan_count(c, BFS_BTREE_INODES, &nr, false);
	ck_assert_int_eq(nr, i - 1);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
}
END_TEST

/* ---- journal: replay after a crash ---- */

static u64 space_inits, space_keys;

static int space_init(void *ctx, struct bfs_core *core)
{
	u64 buf[16];

	(void)ctx;
	space_inits++;
	/* the committed trees are readable at this point */
	return bfs_btree_lookup(core, BFS_BTREE_INODES, BFS_POS(1, 0, 0), buf, sizeof(buf));
}

static int space_replay_key(void *ctx, struct bfs_core *core, unsigned id, const struct bfs_bkey *k)
{
	(void)ctx;
	(void)core;
	ck_assert_uint_lt(id, BFS_BTREE_NR);
	ck_assert_uint_ge(bfs_bkey_u64s(k), BFS_BKEY_U64S);
	space_keys++;
	return 0;
}

START_TEST(test_replay)
{
	struct bfs_dev *crashed;
	struct bfs_trans *t;
	u64 buf[16], i, seq, nr;

	tu_log_reset();
	dev = tu_mkfs(64 * MiB, 16 * KiB, 0, 8);
	c = tu_open(dev, false, 0);
	insert_seq(c, 5000, 1);
	ck_assert_int_eq(bfs_core_checkpoint(c), 0);
	/* after the checkpoint: more keys, an atomic pair, deletes, flushed */
	ck_assert_int_eq(bfs_trans_begin(c, &t), 0);
	for (i = 5000; i < 8000; i++) {
		ck_assert_int_eq(bfs_trans_update(t, BFS_BTREE_INODES, tu_key(buf, i / 100, i % 100, i, 1)), 0);
		ck_assert_int_eq(bfs_trans_update(t, BFS_BTREE_DIRENTS, tu_key(buf, i, 0, i, 1)), 0);
		ck_assert_int_eq(bfs_trans_commit(t, &seq), 0);
	}
	ck_assert_int_eq(bfs_core_flush_seq(c, seq), 0);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_INODES, BFS_POS(i / 100, i % 100, 0)), 0);
	ck_assert_int_eq(bfs_core_flush(c), 0);
	/* not flushed: may or may not survive, must not break anything */
	ck_assert_int_eq(bfs_trans_update(t, BFS_BTREE_INODES, tu_key(buf, 999, 0, 1, 1)), 0);
	ck_assert_int_eq(bfs_trans_commit(t, NULL), 0);
	bfs_trans_end(t);

	/* crash: copy the device as it is now, never close the first core cleanly */
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &crashed), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);

	/* read-only first: replays in memory, writes nothing */
	{
		struct bfs_core_opts ro = { .read_only = true };
		u64 size = bfs_dev_size(crashed);
		u8 *before = bfs_malloc(size);

		memcpy(before, bfs_dev_mem(crashed), size);
		ck_assert_int_eq(bfs_core_open(crashed, &ro, &c), 0);
		ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(79, 99, 0), buf, sizeof(buf)), 0);
		ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(0, 5, 0), buf, sizeof(buf)), -ENOENT);
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, tu_key(buf, 1, 1, 1, 1)), -EROFS);
		ck_assert_int_eq(bfs_core_close(c), 0);
		ck_assert(!memcmp(before, bfs_dev_mem(crashed), size));
		bfs_free(before);
	}
	{
		struct bfs_core_opts o = { .space_init = space_init, .space_replay_key = space_replay_key };

		space_inits = space_keys = 0;
		ck_assert_int_eq(bfs_core_open(crashed, &o, &c), 0);
		ck_assert_uint_eq(space_inits, 1);
		ck_assert_uint_gt(space_keys, 0);
	}
	for (i = 100; i < 8000; i++) {
		ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(i / 100, i % 100, 0),
						  buf, sizeof(buf)), 0);
		ck_assert_int_eq(tu_val((struct bfs_bkey *)buf), i);
	}
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(0, i, 0), buf, sizeof(buf)),
				 -ENOENT);
	scan_count(c, BFS_BTREE_DIRENTS, &nr, false);
	ck_assert_int_eq(nr, 3000);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_DIRENTS), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	/* and a clean reopen after the replay */
	c = tu_open(crashed, false, 0);
	scan_count(c, BFS_BTREE_DIRENTS, &nr, false);
	ck_assert_int_eq(nr, 3000);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(crashed);
}
END_TEST

START_TEST(test_journal_wraps)
{
	u64 buf[64], i, nr;

	/* a small journal: checkpoints must keep it from filling */
	tu_log_reset();
	dev = tu_mkfs(64 * MiB, 16 * KiB, 64 * KiB, 4);
	c = tu_open(dev, false, 0);
	for (i = 0; i < 20000; i++) {
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_ALLOC, tu_key(buf, i % 97, i, i, 4)), 0);
		/* flushes make many small entries: the ring wraps many times */
		if (i % 50 == 0 || (i > 5000 && i < 8000))
			ck_assert_int_eq(bfs_core_flush(c), 0);
	}
	ck_assert_int_eq(bfs_core_close(c), 0);
	c = tu_open(dev, false, 0);
	scan_count(c, BFS_BTREE_ALLOC, &nr, false);
	ck_assert_int_eq(nr, 20000);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}
END_TEST

/*
 * A crash in the middle of a checkpoint: the device stops taking writes
 * after N of them; the image left behind must open, replay and hold every
 * key that was flushed, for every N.
 */
START_TEST(test_crash_mid_checkpoint)
{
	struct bfs_dev *crashed;
	u64 buf[16], i, nr, n;
	const u64 keys = 4000;

	for (n = 1 + 4 * (u64)_i; n < 70; n += 8) {
		tu_log_reset();
		dev = tu_mkfs(64 * MiB, 4 * KiB, 0, 16);
		c = tu_open(dev, false, 0);
		for (i = 0; i < keys / 2; i++)
			ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES,
							  tu_key(buf, i * 7919 % 1000, i, i, 1)), 0);
		ck_assert_int_eq(bfs_core_checkpoint(c), 0);
		/* dirty many leaves, split some, delete some */
		for (; i < keys; i++)
			ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES,
							  tu_key(buf, i * 7919 % 1000, i, i, 1)), 0);
		for (i = 0; i < 200; i++)
			ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_INODES,
							  BFS_POS(i * 7919 % 1000, i, 0)), 0);
		ck_assert_int_eq(bfs_core_flush(c), 0);

		bfs_log_set_hook(NULL, NULL);
		bfs_dev_fail_writes_after(dev, n);
		(void)bfs_core_checkpoint(c);
		ck_assert_int_eq(bfs_dev_clone_mem(dev, &crashed), 0);
		(void)bfs_core_close(c);
		bfs_dev_close(dev);

		tu_log_reset();
		c = tu_open(crashed, false, 0);
		for (i = 0; i < keys; i++)
			ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES,
							  BFS_POS(i * 7919 % 1000, i, 0), buf, sizeof(buf)),
					 i < 200 ? -ENOENT : 0);
		scan_count(c, BFS_BTREE_INODES, &nr, false);
		ck_assert_int_eq(nr, keys - 200);
		ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
		ck_assert_int_eq(bfs_core_close(c), 0);
		bfs_dev_close(crashed);
	}
}
END_TEST

/* the end of the btree ends for_each_btree_key with 0; a body's error stays */
START_TEST(test_for_each_btree_key)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 n = 0;
	int ret;

	dev = tu_mkfs(64 * MiB, 64 * KiB, 0, 0);
	c = tu_open(dev, false, 0);
	insert_seq(c, 250, 1);

	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS_MIN, 0);
	for_each_btree_key(&it, k, ret)
		ck_assert_uint_eq(tu_val(k), n++);
	bfs_btree_iter_exit(&it);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(n, 250);

	/* nothing from here on: no iteration, and still 0 */
	n = 0;
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS(3, 0, 0), 0);
	for_each_btree_key(&it, k, ret)
		n++;
	bfs_btree_iter_exit(&it);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(n, 0);

	/* a break leaves ret as the body set it, -ENOENT included */
	n = 0;
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS_MIN, 0);
	for_each_btree_key(&it, k, ret) {
		if (++n == 10) {
			ret = -ENOENT;
			break;
		}
	}
	bfs_btree_iter_exit(&it);
	ck_assert_int_eq(ret, -ENOENT);
	n = 0;
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS(1, 0, 0), 0);
	for_each_btree_key(&it, k, ret) {
		ck_assert_uint_eq(le64_to_cpu(k->inode), 1);
		if (++n == 100)
			break;
	}
	bfs_btree_iter_exit(&it);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(n, 100);

	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
}
END_TEST

/*
 * Lookups and iteration over keys that differ only in the snapshot, through
 * the whole tree (test_node_keys covers one node's view): the node search
 * compares inode and offset alone until they tie, then the keys.  Enough
 * of them at one (inode, offset) to fill several groups, chunks and
 * leaves, inserted out of order across a flush.
 */
START_TEST(test_snapshot_lookups)
{
	const u32 nsnap = 700;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 buf[16], n = 0;
	u32 i, s;
	int ret;

	dev = tu_mkfs(64 * MiB, 64 * KiB, 0, 0);
	c = tu_open(dev, false, 0);
	for (i = 0; i < nsnap; i++) {
		s = (i * 389) % nsnap;		/* every snapshot once, out of order */
		for (u64 off = 9; off <= 11; off++) {
			struct bfs_bkey *nk = tu_key(buf, 5, off, off * 10000 + 2 * s, 1);

			nk->snapshot = cpu_to_le32(2 * s);	/* even ones only */
			ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, nk), 0);
		}
		if (i == nsnap / 2)
			ck_assert_int_eq(bfs_core_flush(c), 0);
	}
	for (s = 0; s < 2 * nsnap + 2; s++) {
		struct bfs_bpos pos = { .inode = 5, .offset = 10, .snapshot = s };

		ret = bfs_btree_lookup(c, BFS_BTREE_INODES, pos, buf, sizeof(buf));
		if (s % 2 || s >= 2 * nsnap) {
			ck_assert_int_eq(ret, -ENOENT);
			continue;
		}
		ck_assert_int_eq(ret, 0);
		ck_assert_uint_eq(le32_to_cpu(((struct bfs_bkey *)buf)->snapshot), s);
		ck_assert_uint_eq(tu_val((struct bfs_bkey *)buf), 100000 + s);
	}
	/* from an odd snapshot: the next even one of the same offset comes first */
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, (struct bfs_bpos){ 5, 10, 301 }, 0);
	for_each_btree_key(&it, k, ret) {
		ck_assert_uint_eq(bfs_bpos_cmp(bfs_bkey_pos(k),
					       n < nsnap - 151 ? (struct bfs_bpos){ 5, 10, (u32)(302 + 2 * n) } :
					       (struct bfs_bpos){ 5, 11, (u32)(2 * (n - (nsnap - 151))) }), 0);
		if (++n == nsnap)
			break;
	}
	bfs_btree_iter_exit(&it);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(n, nsnap);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
}
END_TEST

static Suite *btree_suite(void)
{
	Suite *s = suite_create("btree");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_format_open_close);
	tcase_add_loop_test(tc, test_insert_lookup_iterate, 0, 3);
	tcase_add_loop_test(tc, test_random_model, 0, 2);
	tcase_add_test(tc, test_iter_prev_next);
	tcase_add_test(tc, test_for_each_btree_key);
	tcase_add_test(tc, test_snapshot_lookups);
	tcase_add_loop_test(tc, test_iter_keys_stable, 0, 2);
	tcase_add_test(tc, test_extents);
	tcase_add_test(tc, test_cache_budget);
	tcase_add_test(tc, test_readahead_mode);
	tcase_add_loop_test(tc, test_enospc, 0, 2);
	tcase_add_test(tc, test_replay);
	tcase_add_test(tc, test_journal_wraps);
	tcase_add_loop_test(tc, test_crash_mid_checkpoint, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(btree_suite)
