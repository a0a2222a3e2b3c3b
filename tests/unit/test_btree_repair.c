// SPDX-License-Identifier: MIT
/*
 * Btree repair through fsck (libcore/fsck pass 1, libcore/btree/rebuild.c):
 * damage a filesystem's btree in one way, run `fsck -y`, and check that the
 * tree checks out, a second `fsck -n` is clean, and exactly the keys the
 * damage took are gone.  The last test cuts the power at every point of a
 * repair and checks that the next repair still gets everything back.
 */
#include "test_btree_util.h"
#include "crash_states.h"

#include <bfs/btree_format.h>
#include <bfs/btree_scan.h>
#include <bfs/checksum.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/mkfs.h>

#include <unistd.h>

#define NKEYS	4000
#define KEY_INO	1000000		/* above every real inode: fsck's fs passes ignore them */

static struct bfs_dev *good;
static u64 leaves[4096], interior[64];
static struct bfs_bpos leaf_min[4096], leaf_max[4096];
static unsigned nr_leaves, nr_interior;

static int collect(void *ctx, const struct bfs_btree_node_info *ni)
{
	(void)ctx;
	if (ni->level) {
		interior[nr_interior++] = ni->offset;
	} else {
		leaf_min[nr_leaves] = ni->min_key;
		leaf_max[nr_leaves] = ni->max_key;
		leaves[nr_leaves++] = ni->offset;
	}
	return 0;
}

static void make_image(u8 csum_type)
{
	struct bfs_format_opts o = {
		.btree_node_size = 4096, .block_size = 4096, .journal_nbuckets = 8,
		.csum_type = csum_type, .csum_set = true,
	};
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";
	struct bfs_core *c;
	u64 buf[16], i;

	tu_log_reset();
	ck_assert_int_eq(bfs_dev_open_mem(64 * MiB, &good), 0);
	ck_assert_msg(!bfs_sb_layout(&o, 64 * MiB, 512, sb, err), "%s", err);
	ck_assert_int_eq(bfs_mkfs(good, sb), 0);
	bfs_free(sb);
	c = tu_open(good, false, 0);
	for (i = 0; i < NKEYS; i++)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES,
						  tu_key(buf, KEY_INO + i / 8, i % 8, i, 2)), 0);
	nr_leaves = nr_interior = 0;
	ck_assert_int_eq(bfs_btree_walk(c, BFS_BTREE_INODES, collect, NULL, NULL), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	ck_assert_uint_gt(nr_leaves, 10);
	ck_assert_uint_ge(nr_interior, 1);
}

static void setup(void) { make_image(BFS_CSUM_XXH3); }
static void setup_nocsum(void) { make_image(BFS_CSUM_NONE); }
static void teardown(void) { bfs_dev_close(good); }

static struct bfs_dev *copy(void)
{
	struct bfs_dev *d;

	ck_assert_int_eq(bfs_dev_clone_mem(good, &d), 0);
	return d;
}

static void zero_block(struct bfs_dev *d, u64 off)
{
	static u8 z[4096];

	ck_assert_int_eq(bfs_dev_write(d, off, z, sizeof(z)), 0);
}

static int fsck(struct bfs_dev *d, enum bfs_fsck_mode mode, unsigned *problems)
{
	struct bfs_fsck f = { .dev = d, .mode = mode };
	int ret = bfs_fsck_run(&f);

	if (problems)
		*problems = f.nr_problems;
	bfs_fsck_release(&f);
	return ret;
}

/* how many of the original keys are there, and is nothing else there? */
static u64 count_keys(struct bfs_dev *d, bool *exact)
{
	struct bfs_core *c = tu_open(d, false, 0);
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 n = 0;
	int ret;

	*exact = true;
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS(KEY_INO, 0, 0), 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret && k; ret = bfs_btree_iter_next(&it, &k)) {
		u64 i = (le64_to_cpu(k->inode) - KEY_INO) * 8 + le64_to_cpu(k->offset);

		if (k->type != BFS_KEY_COOKIE || tu_val(k) != i || i >= NKEYS)
			*exact = false;
		n++;
	}
	ck_assert_msg(ret == 0 || ret == -ENOENT, "iterating: %d", ret);
	bfs_btree_iter_exit(&it);
	ck_assert_int_eq(bfs_core_close(c), 0);
	return n;
}

/* repair, then: second run clean, the tree complete but for @lost keys */
static void repair_and_check(struct bfs_dev *d, u64 lost_max)
{
	unsigned problems;
	bool exact;
	u64 n;

	ck_assert_int_eq(fsck(d, BFS_FSCK_MODE_YES, &problems), BFS_FSCK_CORRECTED);
	ck_assert_uint_gt(problems, 0);
	ck_assert_int_eq(fsck(d, BFS_FSCK_MODE_NO, &problems), BFS_FSCK_OK);
	n = count_keys(d, &exact);
	ck_assert_msg(exact, "keys that were never written appeared");
	ck_assert_msg(n + lost_max >= NKEYS && n <= NKEYS, "%llu of %u keys left (at most %llu lost)",
		      (unsigned long long)n, NKEYS, (unsigned long long)lost_max);
}

START_TEST(test_clean_image)
{
	struct bfs_dev *d = copy();
	bool exact;

	ck_assert_int_eq(fsck(d, BFS_FSCK_MODE_YES, NULL), BFS_FSCK_OK);
	ck_assert_uint_eq(count_keys(d, &exact), NKEYS);
	bfs_dev_close(d);
}
END_TEST

static unsigned scan_found;

static int scan_cb(void *ctx, const struct bfs_scanned_node *n, const void *buf)
{
	unsigned i;

	for (i = 0; i < nr_leaves; i++)
		if (n->offset == leaves[i] && n->header_ok && n->nr_bsets && !n->level &&
		    bfs_bpos_eq(n->min_key, leaf_min[i]) && bfs_bpos_eq(n->max_key, leaf_max[i]))
			scan_found++;
	return 0;
}

START_TEST(test_scan_finds_every_node)
{
	struct bfs_node_scan_geom g;
	struct bfs_sb_handle sbh = { 0 };
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_sb_read(good, &sbh, err), 0);
	bfs_node_scan_geom_from_sb(sbh.sb, &g);
	scan_found = 0;
	ck_assert_int_eq(bfs_node_scan(good, &g, scan_cb, NULL, NULL, NULL), 0);
	ck_assert_uint_eq(scan_found, nr_leaves);
	bfs_sb_handle_release(&sbh);
}
END_TEST

START_TEST(test_root_wiped)
{
	struct bfs_dev *d = copy();

	zero_block(d, interior[0]);	/* the walk visits the root first */
	ck_assert_int_eq(fsck(d, BFS_FSCK_MODE_NO, NULL), BFS_FSCK_UNCORRECTED);
	repair_and_check(d, 0);
	bfs_dev_close(d);
}
END_TEST

START_TEST(test_leaf_wiped)
{
	struct bfs_dev *d = copy();

	/* at most the leaf's own keys go (an older version may bring some back) */
	zero_block(d, leaves[nr_leaves / 2]);
	repair_and_check(d, NKEYS / 4);
	bfs_dev_close(d);
}
END_TEST

START_TEST(test_first_leaf_wiped)
{
	struct bfs_dev *d = copy();

	/* the first leaf holds the inode counter and the root directory: both come back */
	zero_block(d, leaves[0]);
	repair_and_check(d, NKEYS / 4);
	bfs_dev_close(d);
}
END_TEST

START_TEST(test_child_pointer_stale)
{
	struct bfs_dev *d = copy();
	u8 node[4096];
	struct bfs_bset *b = (struct bfs_bset *)(node + sizeof(struct bfs_btree_node));
	struct bfs_bkey *k = (struct bfs_bkey *)b->keys;
	struct bfs_btree_ptr *p = (struct bfs_btree_ptr *)k->v;

	/* the first pointer of the root gets a wrong seq, checksums recomputed */
	ck_assert_int_eq(bfs_dev_read(d, interior[0], node, sizeof(node)), 0);
	p->seq = cpu_to_le64(le64_to_cpu(p->seq) ^ 1);
	b->csum = cpu_to_le64(bfs_csum(BFS_CSUM_XXH3, (u8 *)b + 8, 24 + le32_to_cpu(b->u64s) * 8));
	ck_assert_int_eq(bfs_dev_write(d, interior[0], node, sizeof(node)), 0);
	repair_and_check(d, 0);
	bfs_dev_close(d);
}
END_TEST

START_TEST(test_bad_key_dropped)
{
	struct bfs_dev *d = copy();
	u8 node[4096];
	struct bfs_bset *b = (struct bfs_bset *)(node + sizeof(struct bfs_btree_node));
	struct bfs_bkey *k = (struct bfs_bkey *)b->keys;

	/* no checksums: a key with a reserved field set is caught by validation alone */
	ck_assert_int_eq(bfs_dev_read(d, leaves[3], node, sizeof(node)), 0);
	k->flags = 0x80;
	ck_assert_int_eq(bfs_dev_write(d, leaves[3], node, sizeof(node)), 0);
	repair_and_check(d, 1);
	bfs_dev_close(d);
}
END_TEST

START_TEST(test_keys_out_of_order)
{
	struct bfs_dev *d = copy();
	u8 node[4096], tmp[64];
	struct bfs_bset *b = (struct bfs_bset *)(node + sizeof(struct bfs_btree_node));
	struct bfs_bkey *k0 = (struct bfs_bkey *)b->keys, *k1;
	size_t len;

	ck_assert_int_eq(bfs_dev_read(d, leaves[2], node, sizeof(node)), 0);
	len = bfs_bkey_bytes(k0);
	k1 = (struct bfs_bkey *)((u8 *)k0 + len);
	ck_assert_uint_eq(bfs_bkey_bytes(k1), len);
	memcpy(tmp, k0, len);
	memcpy(k0, k1, len);
	memcpy(k1, tmp, len);
	ck_assert_int_eq(bfs_dev_write(d, leaves[2], node, sizeof(node)), 0);
	repair_and_check(d, 0);
	bfs_dev_close(d);
}
END_TEST

/*
 * A device reformatted without a discard still holds the old filesystem's
 * nodes: a scan must not take any of them for this filesystem's.
 */
START_TEST(test_old_filesystem_ignored)
{
	struct bfs_format_opts o = { .btree_node_size = 4096, .block_size = 4096,
				     .journal_nbuckets = 8 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct bfs_dev *d = copy();
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	struct bfs_core *c;
	char err[BFS_ERR_LEN];
	u64 buf[16], i, n = 0, root = 0;
	int ret;

	ck_assert_msg(!bfs_sb_layout(&o, 64 * MiB, 512, sb, err), "%s", err);
	ck_assert_int_eq(bfs_mkfs(d, sb), 0);
	c = tu_open(d, false, 0);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES,
						  tu_key(buf, KEY_INO + i, 0, 7777, 2)), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	/* the new filesystem's inodes root is a single leaf: wipe it */
	nr_leaves = nr_interior = 0;
	c = tu_open(d, false, 0);
	ck_assert_int_eq(bfs_btree_walk(c, BFS_BTREE_INODES, collect, NULL, NULL), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	root = nr_interior ? interior[0] : leaves[0];
	zero_block(d, root);
	ck_assert_int_eq(fsck(d, BFS_FSCK_MODE_YES, NULL), BFS_FSCK_CORRECTED);
	ck_assert_int_eq(fsck(d, BFS_FSCK_MODE_NO, NULL), BFS_FSCK_OK);
	c = tu_open(d, false, 0);
	bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS(KEY_INO, 0, 0), 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		ck_assert_msg(tu_val(k) == 7777, "a key of the old filesystem came back (%llu)",
			      (unsigned long long)tu_val(k));
		n++;
	}
	bfs_btree_iter_exit(&it);
	ck_assert_int_eq(bfs_core_close(c), 0);
	ck_assert_uint_le(n, 100);
	bfs_free(sb);
	bfs_dev_close(d);
}
END_TEST

/* ---- power cuts during a repair ---- */

struct repair_crash {
	unsigned checked;
};

static bool check_repaired(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct repair_crash *rc = ctx;
	unsigned problems;
	bool exact;
	int ret;
	u64 n;

	(void)mk;
	rc->checked++;
	ret = fsck(img, BFS_FSCK_MODE_YES, NULL);
	if (ret != BFS_FSCK_OK && ret != BFS_FSCK_CORRECTED) {
		snprintf(why, 512, "fsck -y after the crash exited %d", ret);
		return false;
	}
	ret = fsck(img, BFS_FSCK_MODE_NO, &problems);
	if (ret != BFS_FSCK_OK) {
		snprintf(why, 512, "fsck -n after the repair exited %d (%u problems)", ret, problems);
		return false;
	}
	n = count_keys(img, &exact);
	if (n != NKEYS || !exact) {
		snprintf(why, 512, "%llu of %u keys after the repair%s", (unsigned long long)n, NKEYS,
			 exact ? "" : ", some wrong");
		return false;
	}
	return true;
}

START_TEST(test_repair_power_cut)
{
	struct bfs_dev *d = copy(), *base = copy();
	char *logpath = bfs_unit_tmpfile("repair-log");
	struct repair_crash rc = { 0 };
	struct crash_result res;

	zero_block(d, interior[0]);
	zero_block(base, interior[0]);
	ck_assert_int_eq(bfs_dev_record_start(d, logpath), 0);
	ck_assert_int_eq(fsck(d, BFS_FSCK_MODE_YES, NULL), BFS_FSCK_CORRECTED);
	ck_assert_int_eq(bfs_dev_record_stop(d), 0);
	crash_build_states(logpath, base, 7, check_repaired, &rc, &res);
	printf("repair crash: %u states (%u flush points, %u random), %u failed\n", res.states,
	       res.flush_states, res.random_states, res.failures);
	ck_assert_uint_gt(res.states, 2);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);
	unlink(logpath);
	free(logpath);
	bfs_dev_close(base);
	bfs_dev_close(d);
}
END_TEST

static Suite *repair_suite(void)
{
	Suite *s = suite_create("btree_repair");
	TCase *tc = tcase_create("repair");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_clean_image);
	tcase_add_test(tc, test_scan_finds_every_node);
	tcase_add_test(tc, test_root_wiped);
	tcase_add_test(tc, test_leaf_wiped);
	tcase_add_test(tc, test_first_leaf_wiped);
	tcase_add_test(tc, test_child_pointer_stale);
	tcase_add_test(tc, test_repair_power_cut);
	tcase_add_test(tc, test_old_filesystem_ignored);
	suite_add_tcase(s, tc);
	tc = tcase_create("nocsum");
	tcase_add_checked_fixture(tc, setup_nocsum, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bad_key_dropped);
	tcase_add_test(tc, test_keys_out_of_order);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(repair_suite)
