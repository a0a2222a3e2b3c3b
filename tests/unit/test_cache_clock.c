// SPDX-License-Identifier: MIT
/*
 * The node cache's CLOCK list (libcore/btree/cache.c): clean nodes stay on
 * the list while referenced, so eviction must pass over the ones in use;
 * a node a split unhashes while a reader holds it is freed by that
 * reader's last put, with or without the cache lock (a budget well above
 * the cache's size makes the last put lockless, a small one does not).
 */
#include "test_btree_util.h"

#include "btree/internal.h"

#define NODE	(16 * KiB)
#define SMALL	(8 * NODE)
#define KEYS	30000

/* bytes charged for the hashed nodes: what bc->bytes must be */
static u64 hashed_bytes(struct bfs_core *c)
{
	struct btree_cache *bc = &c->cache;
	u64 n = 0;

	for (u64 i = 0; i <= bc->mask; i++)
		for (struct btree_node *p = bc->table[i]; p; p = p->hnext)
			n += p->mem;
	return n;
}

static struct bfs_core *fill(struct bfs_dev **dev, u64 budget)
{
	struct bfs_core *c;
	u64 buf[64];

	tu_log_reset();
	*dev = tu_mkfs(64 * MiB, NODE, 0, 0);
	c = tu_open(*dev, false, budget);
	for (u64 i = 0; i < KEYS; i++)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, tu_key(buf, 1, i * 2, i, 3)), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	return tu_open(*dev, false, budget);
}

/*
 * An iterator's leaf stays referenced while lookups of every other leaf
 * push the cache far past its budget: it must survive (same node, still
 * hashed) and the scan go on with the right keys.
 */
START_TEST(test_held_leaf_survives_eviction)
{
	struct bfs_dev *dev;
	struct bfs_core *c = fill(&dev, SMALL);
	struct bfs_btree_iter it;
	struct bfs_core_stats st0, st1;
	const struct bfs_bkey *k;
	struct btree_node *held;
	u64 buf[64], nr = 0;
	int ret;

	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS(1, 0, 0), 0);
	ck_assert_int_eq(bfs_btree_iter_peek(&it, &k), 0);
	held = it.leaf;
	ck_assert_ptr_nonnull(held);
	bfs_core_get_stats(c, &st0);
	for (u64 i = 1; i < KEYS; i += 7)
		ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(1, i * 2, 0), buf,
						  sizeof(buf)), 0);
	bfs_core_get_stats(c, &st1);
	ck_assert_uint_gt(st1.cache_evictions, st0.cache_evictions);
	ck_assert_ptr_eq(it.leaf, held);
	ck_assert(held->hashed);
	ck_assert_uint_gt(__atomic_load_n(&held->ref, __ATOMIC_RELAXED), 0);
	do {
		ck_assert_uint_eq(tu_val(k), nr);
		nr++;
	} while (!(ret = bfs_btree_iter_next(&it, &k)));
	ck_assert_int_eq(ret, -ENOENT);
	ck_assert_uint_eq(nr, KEYS);
	bfs_btree_iter_exit(&it);
	ck_assert_uint_eq(c->cache.bytes, hashed_bytes(c));
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}
END_TEST

/*
 * Inserts split the leaf an iterator holds (the old node is unhashed
 * while referenced); the iterator's exit must free it: nothing charged
 * to the cache but the hashed nodes.  Under both budgets.
 */
static void unhashed_freed_by_last_put(u64 budget, bool roomy)
{
	struct bfs_dev *dev;
	struct bfs_core *c = fill(&dev, budget);
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	struct btree_node *held;
	u64 buf[64];

	ck_assert(__atomic_load_n(&c->cache.roomy, __ATOMIC_RELAXED) == roomy);
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS(1, 0, 0), 0);
	ck_assert_int_eq(bfs_btree_iter_peek(&it, &k), 0);
	held = it.leaf;
	/* odd offsets between the first leaf's keys: it has to split */
	for (u64 i = 0; i < KEYS / 4 && held->hashed; i++)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, tu_key(buf, 1, i * 2 + 1, i, 3)),
				 0);
	ck_assert(!held->hashed);
	ck_assert_uint_ne(__atomic_load_n(&held->ref, __ATOMIC_RELAXED) & REF_UNHASHED, 0);
	ck_assert_uint_ne(c->cache.bytes, hashed_bytes(c));
	bfs_btree_iter_exit(&it);
	ck_assert_uint_eq(c->cache.bytes, hashed_bytes(c));
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}

START_TEST(test_unhashed_freed_lockless)
{
	unhashed_freed_by_last_put(256 * MiB, true);
}
END_TEST

START_TEST(test_unhashed_freed_locked)
{
	unhashed_freed_by_last_put(SMALL, false);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cache_clock");
	TCase *tc = tcase_create("clock");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_held_leaf_survives_eviction);
	tcase_add_test(tc, test_unhashed_freed_lockless);
	tcase_add_test(tc, test_unhashed_freed_locked);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(suite)
