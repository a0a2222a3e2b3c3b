// SPDX-License-Identifier: MIT
/*
 * The node buffer pool (libcore/btree/node_buf.c): inserts that dirty far
 * more nodes than the cache budget, once written, and a sweep of a btree
 * many times the budget leave no more node buffer pages resident than the
 * budget and the pool's slack, as mincore() counts them; the buffers cycled
 * through the pool are reused, not carved anew for every read; the cache
 * charges each node what of its buffer is resident.
 */
#include "test_btree_util.h"

#include <sys/mman.h>
#include <unistd.h>

#include "btree/internal.h"

#define NODE	(16 * KiB)
#define BUDGET	(8 * NODE)
#define KEYS	60000

/* bytes of the pool's slabs resident now */
static size_t pool_resident(struct bfs_core *c)
{
	struct node_bufs *b = &c->cache.bufs;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 0;

	for (u32 i = 0; i < b->nr_slab; i++) {
		size_t len = b->slab[i].slots * b->node_size, pages = len / page;
		unsigned char *vec = bfs_malloc(pages);

		ck_assert_ptr_nonnull(vec);
		ck_assert_int_eq(mincore(b->slab[i].base, len, vec), 0);
		for (size_t p = 0; p < pages; p++)
			n += (vec[p] & 1) * page;
		bfs_free(vec);
	}
	return n;
}

/*
 * A new filesystem with KEYS inode keys inserted, open under the BUDGET
 * cache; NULL (all closed again) where the node buffers are on the heap (a
 * sanitizer build, node_buf.c): there is no pool to measure there.
 */
static struct bfs_core *open_filled(struct bfs_dev **dev)
{
	struct bfs_core *c;
	u64 buf[64], i;

	tu_log_reset();
	*dev = tu_mkfs(64 * MiB, NODE, 0, 0);
	c = tu_open(*dev, false, BUDGET);
	if (!c->cache.bufs.ok) {
		ck_assert_int_eq(bfs_core_close(c), 0);
		bfs_dev_close(*dev);
		return NULL;
	}
	for (i = 0; i < KEYS; i++)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, tu_key(buf, i / 100, i % 100, i, 3)), 0);
	return c;
}

/* one sweep of the inodes btree: every key open_filled() inserted, in order */
static void sweep_all(struct bfs_core *c)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 nr = 0;
	int ret;

	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS_MIN, 0);
	for_each_btree_key(&it, k, ret) {
		ck_assert_uint_eq(tu_val(k), nr);
		nr++;
	}
	ck_assert_int_eq(ret, 0);
	bfs_btree_iter_exit(&it);
	ck_assert_uint_eq(nr, KEYS);
}

static void close_all(struct bfs_core *c, struct bfs_dev *dev)
{
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}

START_TEST(test_sweep_stays_in_budget)
{
	struct bfs_dev *dev;
	struct bfs_core *c = open_filled(&dev);
	struct bfs_core_stats st;
	size_t carved = 0;

	if (!c)
		return;
	/* dirty nodes go over the budget until written; then their pages go back */
	ck_assert_int_eq(bfs_core_checkpoint(c), 0);
	for (u32 s = 0; s < c->cache.bufs.nr_slab; s++)
		carved += c->cache.bufs.slab[s].slots;
	/* some slots went back (how many stay warm depends on what trims left) */
	ck_assert_uint_lt(pool_resident(c), carved * NODE);
	ck_assert_uint_le(pool_resident(c), BUDGET + (BFS_BTREE_NR + 2) * NODE);
	carved = 0;
	ck_assert_int_eq(bfs_core_close(c), 0);

	c = tu_open(dev, false, BUDGET);
	sweep_all(c);
	bfs_core_get_stats(c, &st);
	/* the tree is far larger than the budget: the sweep evicted most of it */
	ck_assert_uint_gt(st.cache_evictions, 4 * BUDGET / NODE);
	for (u32 s = 0; s < c->cache.bufs.nr_slab; s++)
		carved += c->cache.bufs.slab[s].slots;
	ck_assert_uint_lt(carved, st.cache_evictions);
	/* the budget, the roots of every btree held on top of it, and the warm slack */
	ck_assert_uint_le(pool_resident(c), BUDGET + (BFS_BTREE_NR + 2) * NODE);
	close_all(c, dev);
}
END_TEST

/* the sum of @fn over every node the cache holds now */
static size_t sum_cached(struct bfs_core *c,
			 size_t (*fn)(struct bfs_core *, const struct btree_node *))
{
	struct btree_cache *bc = &c->cache;
	size_t n = 0;

	for (u64 i = 0; i <= bc->mask; i++)
		for (struct btree_node *p = bc->table[i]; p; p = p->hnext)
			n += fn(c, p);
	return n;
}

/* what the cache charges for the data buffers of the nodes it holds now */
static size_t cached_data_bytes(struct bfs_core *c)
{
	return sum_cached(c, bfs_node_data_resident);
}

/*
 * The cache charges a root or interior node what its trim left resident,
 * not a whole node, and never less than what is resident: after a sweep
 * the pool's resident pages are what the cache charges plus the warm free
 * slots, page for page (mincore).
 */
START_TEST(test_resident_accounting)
{
	struct bfs_dev *dev;
	struct bfs_core *c = open_filled(&dev);
	struct btree_node *root;

	if (!c)
		return;
	ck_assert_int_eq(bfs_core_close(c), 0);

	c = tu_open(dev, false, BUDGET);
	/* the root of an empty btree: one block written, a page of its 16 KiB */
	root = c->trees[BFS_BTREE_XATTRS].node;
	ck_assert_ptr_nonnull(root);
	ck_assert_uint_le(root->written, 4096);
	ck_assert_uint_eq(root->buf_kept, 4096);
	ck_assert_uint_eq(bfs_node_data_resident(c, root), 4096);
	/*
	 * an interior root: what its bsets fill, rounded to pages (the
	 * checkpoints during the inserts decide how many it has)
	 */
	root = c->trees[BFS_BTREE_INODES].node;
	ck_assert_ptr_nonnull(root);
	ck_assert_uint_gt(root->level, 0);
	ck_assert_uint_eq(bfs_node_data_resident(c, root),
			  root->written < NODE ? BFS_ROUND_UP(root->written, 4096u) : NODE);
	sweep_all(c);
	ck_assert_uint_eq(pool_resident(c), cached_data_bytes(c) + c->cache.bufs.nr_warm * NODE);
	/* the budget holds in resident bytes: nothing is referenced now */
	ck_assert_uint_le(c->cache.bytes, BUDGET);
	close_all(c, dev);
}
END_TEST

static size_t is_unused_leaf(struct bfs_core *c, const struct btree_node *p)
{
	return !p->level && p->on_lru && !p->ref;
}

/* leaves in the cache that nothing holds (on the LRU) */
static size_t unused_leaves(struct bfs_core *c)
{
	return sum_cached(c, is_unused_leaf);
}

/*
 * Under a budget read-ahead only hints under (fsck's), a sweep frees the
 * leaves it has passed instead of filling the budget with them, and
 * bfs_core_trim_cache() lets go of the unused leaves and gives the free
 * buffers' pages back: what stays resident is what the cache holds.
 */
START_TEST(test_sweep_frees_passed_leaves)
{
	struct bfs_dev *dev;
	struct bfs_core *c = open_filled(&dev);

	if (!c)
		return;
	ck_assert_int_eq(bfs_core_close(c), 0);

	c = tu_open(dev, false, BUDGET);
	ck_assert(c->cache.ra_hint);
	for (int round = 0; round < 2; round++) {
		sweep_all(c);
		/* the two leaves before the iterator counts as a sweep, and its last */
		ck_assert_uint_le(unused_leaves(c), 3);
		bfs_core_trim_cache(c);
		ck_assert_uint_eq(unused_leaves(c), 0);
		ck_assert_uint_eq(c->cache.bufs.nr_warm, 0);
		ck_assert_uint_eq(pool_resident(c), cached_data_bytes(c));
	}
	close_all(c, dev);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("node_buf");
	TCase *tc = tcase_create("pool");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sweep_stays_in_budget);
	tcase_add_test(tc, test_resident_accounting);
	tcase_add_test(tc, test_sweep_frees_passed_leaves);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(suite)
