// SPDX-License-Identifier: MIT
/*
 * Bad input: damaged nodes and journal entries must give -EUCLEAN and a
 * message naming the place, never a crash or a hang.  Each case damages one
 * thing in a copy of a good image, recomputing checksums where the damage is
 * meant to get past them.
 */
#include "test_btree_util.h"

#include <bfs/btree_format.h>
#include <bfs/checksum.h>
#include <bfs/journal_format.h>

static struct bfs_dev *good;
static u64 leaves[4096], interior[64];
static unsigned nr_leaves, nr_interior;

static int collect(void *ctx, const struct bfs_btree_node_info *ni)
{
	(void)ctx;
	ck_assert_int_eq(ni->status, 0);
	if (ni->level)
		interior[nr_interior++] = ni->offset;
	else
		leaves[nr_leaves++] = ni->offset;
	return 0;
}

static void setup(void)
{
	struct bfs_core *c;
	u64 buf[16], i;

	tu_log_reset();
	good = tu_mkfs(64 * MiB, 4 * KiB, 0, 8);
	c = tu_open(good, false, 0);
	for (i = 0; i < 3000; i++)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, tu_key(buf, i, 0, i, 1)), 0);
	nr_leaves = nr_interior = 0;
	ck_assert_int_eq(bfs_btree_walk(c, BFS_BTREE_INODES, collect, NULL, NULL), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	ck_assert_uint_gt(nr_leaves, 10);
	ck_assert_uint_ge(nr_interior, 1);
}

static void teardown(void)
{
	bfs_dev_close(good);
}

static struct bfs_dev *copy(void)
{
	struct bfs_dev *d;

	ck_assert_int_eq(bfs_dev_clone_mem(good, &d), 0);
	return d;
}

static void reseal_bset0(u8 *node)
{
	struct bfs_bset *b = (struct bfs_bset *)(node + sizeof(struct bfs_btree_node));
	size_t len = 24 + (size_t)le32_to_cpu(b->u64s) * 8;

	b->csum = cpu_to_le64(bfs_csum(BFS_CSUM_XXH3, (u8 *)b + 8, len));
}

static void reseal_header(u8 *node)
{
	struct bfs_btree_node *h = (struct bfs_btree_node *)node;

	h->csum = cpu_to_le64(bfs_csum(BFS_CSUM_XXH3, node + 16, sizeof(*h) - 16));
}

static struct bfs_bkey *first_key(u8 *node)
{
	return (struct bfs_bkey *)(node + sizeof(struct bfs_btree_node) + sizeof(struct bfs_bset));
}

/* open, scan everything: must fail with -EUCLEAN and a message with @want */
static void expect_corrupt(struct bfs_dev *d, const char *want, u64 offset)
{
	struct bfs_core_opts o = { .read_only = true };
	struct bfs_core *c = NULL;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	char off[32];
	int ret;

	tu_log_reset();
	ret = bfs_core_open(d, &o, &c);
	if (!ret) {
		bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS_MIN, 0);
		for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k))
			;
		bfs_btree_iter_exit(&it);
		ck_assert_int_eq(ret, -EUCLEAN);
		/* the tree walk reports it too, and keeps going */
		ck_assert_int_gt(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
		ck_assert_int_eq(bfs_core_close(c), 0);
	} else {
		ck_assert_int_eq(ret, -EUCLEAN);
	}
	ck_assert_msg(strstr(tu_last_err, want), "message '%s' lacks '%s'", tu_last_err, want);
	snprintf(off, sizeof(off), "%llu", (unsigned long long)offset);
	ck_assert_msg(!offset || strstr(tu_last_err, off), "message '%s' lacks offset %s", tu_last_err, off);
	bfs_dev_close(d);
}

START_TEST(test_good_image)
{
	struct bfs_core *c;

	c = tu_open(good, false, 0);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
}
END_TEST

START_TEST(test_bad_bset_checksum)
{
	struct bfs_dev *d = copy();
	u64 off = leaves[nr_leaves / 2];

	bfs_dev_mem(d)[off + 200] ^= 0x40;
	expect_corrupt(d, "bad checksum", off);
}
END_TEST

START_TEST(test_bad_header)
{
	struct bfs_dev *d = copy();
	u64 off = leaves[3];

	bfs_dev_mem(d)[off + 40] ^= 1;	/* min_key: header checksum */
	expect_corrupt(d, "bad header checksum", off);
	d = copy();
	off = leaves[4];
	memset(bfs_dev_mem(d) + off, 0, 8);
	expect_corrupt(d, "bad magic", off);
}
END_TEST

START_TEST(test_keys_out_of_order)
{
	struct bfs_dev *d = copy();
	u64 off = leaves[nr_leaves / 3];
	u8 *node = bfs_dev_mem(d) + off;
	struct bfs_bkey *k0 = first_key(node);
	struct bfs_bkey *k1 = (struct bfs_bkey *)((u64 *)k0 + bfs_bkey_u64s(k0));
	u64 tmp[16];

	ck_assert_int_eq(bfs_bkey_u64s(k0), bfs_bkey_u64s(k1));
	memcpy(tmp, k0, bfs_bkey_bytes(k0));
	memcpy(k0, k1, bfs_bkey_bytes(k0));
	memcpy(k1, tmp, bfs_bkey_bytes(k0));
	reseal_bset0(node);
	expect_corrupt(d, "out of order", off);
}
END_TEST

START_TEST(test_key_outside_range)
{
	struct bfs_dev *d = copy();
	u64 off = leaves[nr_leaves / 2];
	u8 *node = bfs_dev_mem(d) + off;
	struct bfs_bkey *k0 = first_key(node);

	/* the middle leaf's range does not start at 0 */
	k0->inode = cpu_to_le64(0);
	reseal_bset0(node);
	expect_corrupt(d, "outside the node range", off);
}
END_TEST

START_TEST(test_wrong_child_pointer)
{
	struct bfs_dev *d = copy();
	u64 off = interior[0];
	u8 *node = bfs_dev_mem(d) + off;
	struct bfs_bkey *k0 = first_key(node);
	struct bfs_bkey *k1 = (struct bfs_bkey *)((u64 *)k0 + bfs_bkey_u64s(k0));
	struct bfs_btree_ptr *p0 = (struct bfs_btree_ptr *)k0->v, *p1 = (struct bfs_btree_ptr *)k1->v;
	__le64 t = p0->offset;

	ck_assert_int_eq(k0->type, BFS_KEY_BTREE_PTR);
	/* swap where the first two pointers lead: each now finds the other's node */
	p0->offset = p1->offset;
	p1->offset = t;
	reseal_bset0(node);
	/* both pointers are wrong; which one is reported last depends on the walk */
	expect_corrupt(d, "stale or misdirected", 0);
}
END_TEST

START_TEST(test_child_pointer_outside)
{
	struct bfs_dev *d = copy();
	u64 off = interior[0];
	u8 *node = bfs_dev_mem(d) + off;
	struct bfs_bkey *k0 = first_key(node);
	struct bfs_btree_ptr *p0 = (struct bfs_btree_ptr *)k0->v;

	p0->offset = cpu_to_le64(12345);
	reseal_bset0(node);
	expect_corrupt(d, "outside the metadata area", 12345);
}
END_TEST

START_TEST(test_bad_level)
{
	struct bfs_dev *d = copy();
	u64 off = leaves[1];
	u8 *node = bfs_dev_mem(d) + off;

	((struct bfs_btree_node *)node)->level = 3;
	reseal_header(node);
	expect_corrupt(d, "misdirected", off);
}
END_TEST

START_TEST(test_bset_overrun)
{
	struct bfs_dev *d = copy();
	u64 off = leaves[5];
	u8 *node = bfs_dev_mem(d) + off;
	struct bfs_bset *b = (struct bfs_bset *)(node + sizeof(struct bfs_btree_node));

	b->u64s = cpu_to_le32(1u << 20);
	expect_corrupt(d, "bad offset/size", off);
}
END_TEST

START_TEST(test_key_overrun)
{
	struct bfs_dev *d = copy();
	u64 off = leaves[6];
	u8 *node = bfs_dev_mem(d) + off;

	first_key(node)->u64s = cpu_to_le16(60000);
	reseal_bset0(node);
	expect_corrupt(d, "overruns", off);
}
END_TEST

/* a journal entry in the middle of the replay range with a bad checksum (0) or missing (1) */
START_TEST(test_bad_journal_entry)
{
	const struct bfs_sb *sb = (const struct bfs_sb *)(bfs_dev_mem(good) + 4096);
	struct bfs_core *c;
	struct bfs_dev *d;
	u64 buf[16], i, jstart, jend, pos, found = 0;
	u32 bs = le32_to_cpu(sb->block_size);
	int ret;

	jstart = le64_to_cpu(sb->journal_bucket) * le32_to_cpu(sb->bucket_size);
	jend = jstart + (u64)le32_to_cpu(sb->journal_nbuckets) * le32_to_cpu(sb->bucket_size);
	c = tu_open(good, false, 0);
	for (i = 0; i < 20; i++) {
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_DIRENTS, tu_key(buf, i, 0, i, 1)), 0);
		ck_assert_int_eq(bfs_core_flush(c), 0);
	}
	ck_assert_int_eq(bfs_dev_clone_mem(good, &d), 0);	/* crash image */
	ck_assert_int_eq(bfs_core_close(c), 0);

	/* damage the entry holding key 10 (payload, so the checksum fails) */
	for (pos = jstart; pos < jend; pos += bs) {
		struct bfs_jset *j = (struct bfs_jset *)(bfs_dev_mem(d) + pos);
		struct bfs_jset_entry *e;

		if (le64_to_cpu(j->magic) != BFS_JSET_MAGIC || le32_to_cpu(j->u64s) > bs)
			continue;
		for_each_jset_entry(j, e)
			if (e->type == BFS_JSET_ENTRY_BTREE_KEYS && e->btree_id == BFS_BTREE_DIRENTS &&
			    le64_to_cpu(((struct bfs_bkey *)e->_data)->inode) == 10) {
				if (_i)
					memset(j, 0, 64);	/* a gap in the seqs */
				else
					((u8 *)((struct bfs_bkey *)e->_data)->v)[0] ^= 1;
				found = pos;
				break;
			}
	}
	ck_assert_uint_ne(found, 0);
	tu_log_reset();
	c = NULL;
	ret = bfs_core_open(d, NULL, &c);
	ck_assert_int_eq(ret, -EUCLEAN);
	ck_assert_ptr_null(c);
	ck_assert_uint_gt(tu_nr_errs, 0);
	/* no_replay still opens it (read-only, clean-section roots) for inspection */
	{
		struct bfs_core_opts o = { .no_replay = true };

		ck_assert_int_eq(bfs_core_open(d, &o, &c), 0);
		ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
		ck_assert_int_eq(bfs_core_close(c), 0);
	}
	bfs_dev_close(d);
}
END_TEST

static int root_info(void *ctx, const struct bfs_btree_node_info *ni)
{
	*(struct bfs_btree_node_info *)ctx = *ni;
	return 1;
}

/*
 * A torn last bset after a crash is the tail of an interrupted write: it is
 * ignored (the journal has its keys) and sealed by the next checkpoint, so a
 * later clean open does not mistake it for corruption.
 */
START_TEST(test_torn_bset_after_crash)
{
	struct bfs_btree_node_info ni;
	struct bfs_dev *d, *crashed;
	struct bfs_core *c;
	struct bfs_bset *b;
	u64 buf[16], i;

	tu_log_reset();
	d = tu_mkfs(64 * MiB, 16 * KiB, 0, 8);
	c = tu_open(d, false, 0);
	for (i = 0; i < 50; i++)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_XATTRS, tu_key(buf, 1, i, i, 1)), 0);
	ck_assert_int_eq(bfs_core_checkpoint(c), 0);
	ck_assert_int_eq(bfs_btree_walk(c, BFS_BTREE_XATTRS, root_info, NULL, &ni), 1);
	ck_assert_int_eq(ni.level, 0);
	/* later updates elsewhere, flushed to the journal only */
	ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_DIRENTS, tu_key(buf, 2, 0, 7, 1)), 0);
	ck_assert_int_eq(bfs_core_flush(c), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(d, &crashed), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(d);

	/* fake the start of a bset write that never completed */
	b = (struct bfs_bset *)(bfs_dev_mem(crashed) + ni.offset + ni.written);
	b->node_seq = cpu_to_le64(ni.seq);
	b->offset = cpu_to_le32(ni.written);
	b->u64s = cpu_to_le32(5);
	b->csum = cpu_to_le64(12345);

	c = tu_open(crashed, false, 0);
	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_XATTRS, BFS_POS(1, 49, 0), buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_DIRENTS, BFS_POS(2, 0, 0), buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	ck_assert_uint_eq(tu_nr_errs, 0);
	/* clean now: a torn bset would be corruption, so it must be gone */
	c = tu_open(crashed, false, 0);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_XATTRS), 0);
	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_XATTRS, BFS_POS(1, 0, 0), buf, sizeof(buf)), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	ck_assert_uint_eq(tu_nr_errs, 0);
	bfs_dev_close(crashed);
}
END_TEST

static Suite *corrupt_suite(void)
{
	Suite *s = suite_create("btree_corrupt");
	TCase *tc = tcase_create("corrupt");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_good_image);
	tcase_add_test(tc, test_bad_bset_checksum);
	tcase_add_test(tc, test_bad_header);
	tcase_add_test(tc, test_keys_out_of_order);
	tcase_add_test(tc, test_key_outside_range);
	tcase_add_test(tc, test_wrong_child_pointer);
	tcase_add_test(tc, test_child_pointer_outside);
	tcase_add_test(tc, test_bad_level);
	tcase_add_test(tc, test_bset_overrun);
	tcase_add_test(tc, test_key_overrun);
	tcase_add_loop_test(tc, test_bad_journal_entry, 0, 2);
	suite_add_tcase(s, tc);
	tc = tcase_create("torn");
	tcase_add_test(tc, test_torn_bset_after_crash);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(corrupt_suite)
