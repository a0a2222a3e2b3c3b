// SPDX-License-Identifier: MIT
/*
 * Structure-aware fuzzing of what bfs reads from disk.  A mutator that only
 * flips bytes exercises nothing but checksum rejection, so this one
 * recomputes checksums after mutating:
 *   - journal entries: random bytes of an entry's payload (sub-entry headers,
 *     keys) are changed and the entry's XXH3 is recomputed, so replay has to
 *     cope with well-checksummed garbage;
 *   - btree nodes: on a filesystem formatted without checksums, random bytes
 *     inside written node areas (headers, bsets, keys, values) are changed.
 * Every mutated image is opened (with replay), every btree verified, the
 * whole namespace walked and the files read, then closed.  Any result is
 * fine except a crash, a sanitizer report or a hang: errors must be clean.
 *
 * Environment: BFS_FUZZ_ITERS (per target, default 300), BFS_FUZZ_SEED.
 */
#include "crash_states.h"
#include "unit.h"

#include <bfs/btree.h>
#include <bfs/checksum.h>
#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/journal.h>
#include <bfs/journal_format.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <sys/stat.h>

#define DEV_BYTES	(32 * MiB)

static void quiet(enum bfs_log_level level, const char *msg, void *ctx)
{
}

static struct bfs_dev *make_image(bool csum, bool unclean)
{
	struct bfs_format_opts fo = { .csum_set = !csum, .csum_type = BFS_CSUM_NONE };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct bfs_creds cr = { 0, 0 };
	char err[BFS_ERR_LEN], name[16], data[3000];
	struct bfs_stat st, dir;
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	int i;

	ck_assert_int_eq(bfs_dev_open_mem(DEV_BYTES, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, DEV_BYTES, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	bfs_free(sb);
	ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, "d", 1, 0755, &cr, &dir), 0);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(bfs_fs_mknod(fs, i % 2 ? dir.ino : BFS_ROOT_INO, name, strlen(name),
					      S_IFREG | 0644, 0, &cr, &st), 0);
		memset(data, 'a' + i % 26, sizeof(data));
		ck_assert_int_eq(bfs_fs_write(fs, st.ino, data, (size_t)(i * 70), 0), i * 70);
		ck_assert_int_eq(bfs_fs_setxattr(fs, st.ino, "user.x", data, 20, 0), 0);
		if (i == 20 && !unclean) {
			ck_assert_int_eq(bfs_fs_close(fs), 0);
			ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
		}
	}
	if (unclean) {
		/* durable in the journal only: leave without closing (a crash) */
		ck_assert_int_eq(bfs_fs_sync(fs), 0);
		return dev;
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	return dev;
}

static int walk_dir(struct bfs_fs *fs, u64 dir, int depth);

static int visit(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct bfs_fs *fs = ctx;
	struct bfs_stat st;
	char buf[8192];

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (bfs_fs_lookup(fs, 0, name, len, &st) == 0)
		return 0;	/* (dir 0 does not exist: must fail cleanly) */
	if (bfs_fs_getattr(fs, ino, &st))
		return 0;
	if (S_ISREG(st.mode))
		bfs_fs_read(fs, ino, buf, sizeof(buf), 0);
	bfs_fs_listxattr(fs, ino, buf, sizeof(buf));
	bfs_fs_getxattr(fs, ino, "user.x", buf, sizeof(buf));
	return 0;
}

static int walk_dir(struct bfs_fs *fs, u64 dir, int depth)
{
	return depth > 4 ? 0 : bfs_fs_readdir(fs, dir, 0, visit, fs);
}

/* open, check, read everything, close: any error is fine, crashes are not */
static void exercise(struct bfs_dev *img)
{
	struct bfs_fs *fs;
	struct bfs_stat st;
	unsigned id;

	if (bfs_fs_open(img, NULL, &fs))
		return;
	for (id = 0; id < BFS_BTREE_NR; id++)
		bfs_btree_verify(bfs_fs_core(fs), id);
	walk_dir(fs, BFS_ROOT_INO, 0);
	if (!bfs_fs_lookup(fs, BFS_ROOT_INO, "d", 1, &st))
		walk_dir(fs, st.ino, 1);
	bfs_fs_close(fs);
}

/* ---- journal entries, checksums recomputed ---- */

struct jlist {
	u64 off[4096];
	u32 bytes[4096];
	unsigned nr;
};

static int collect_jset(void *ctx, u64 offset, const struct bfs_jset *j)
{
	struct jlist *l = ctx;

	if (l->nr < ARRAY_SIZE(l->off) && le32_to_cpu(j->u64s)) {
		l->off[l->nr] = offset;
		l->bytes[l->nr++] = (u32)bfs_jset_bytes(j);
	}
	return 0;
}

static void list_journal(struct bfs_dev *dev, struct jlist *l)
{
	struct bfs_journal_geom g;
	struct bfs_sb_handle h;
	struct bfs_journal *j;
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	bfs_journal_geom_from_sb(h.sb, dev, &g);
	ck_assert_int_eq(bfs_journal_open(&g, &j), 0);
	ck_assert_int_eq(bfs_journal_walk(j, collect_jset, l), 0);
	bfs_journal_close(j);
	bfs_sb_handle_release(&h);
}

START_TEST(test_fuzz_journal)
{
	u64 iters = crash_env_u64("BFS_FUZZ_ITERS", 300), rng = crash_env_u64("BFS_FUZZ_SEED", 1);
	struct bfs_dev *base = make_image(true, true), *img;
	struct jlist *l = bfs_zalloc(sizeof(*l));
	u64 i;

	bfs_log_set_hook(quiet, NULL);
	list_journal(base, l);
	ck_assert_uint_gt(l->nr, 0);
	for (i = 0; i < iters; i++) {
		unsigned e = (unsigned)(crash_splitmix(&rng) % l->nr), n, k;
		u8 *mem;
		struct bfs_jset *j;

		ck_assert_int_eq(bfs_dev_clone_mem(base, &img), 0);
		mem = bfs_dev_mem(img);
		j = (struct bfs_jset *)(mem + l->off[e]);
		n = 1 + (unsigned)(crash_splitmix(&rng) % 8);
		for (k = 0; k < n; k++) {
			/* mostly the payload; sometimes seq/last_seq/u64s in the header */
			u32 at = crash_splitmix(&rng) % 4 ? 64 + (u32)(crash_splitmix(&rng) %
							      (l->bytes[e] - 64)) :
							    32 + (u32)(crash_splitmix(&rng) % 24);

			((u8 *)j)[at] ^= (u8)(1 + crash_splitmix(&rng) % 255);
		}
		if (bfs_jset_bytes(j) <= l->bytes[e] + 4096)
			j->csum = cpu_to_le64(bfs_xxh3((u8 *)j + BFS_JSET_CSUM_OFFSET,
						       bfs_jset_bytes(j) - BFS_JSET_CSUM_OFFSET));
		exercise(img);
		bfs_dev_close(img);
	}
	bfs_log_set_hook(NULL, NULL);
	printf("fuzz: %llu mutated journals opened without a crash\n", (unsigned long long)iters);
	bfs_free(l);
	bfs_dev_close(base);
}
END_TEST

/* ---- btree nodes, on a filesystem without checksums ---- */

struct nlist {
	u64 off[256];
	u32 written[256];
	unsigned nr;
};

static int collect_node(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct nlist *l = ctx;

	if (l->nr < ARRAY_SIZE(l->off) && !ni->status) {
		l->off[l->nr] = ni->offset;
		l->written[l->nr++] = ni->written;
	}
	return 0;
}

START_TEST(test_fuzz_nodes)
{
	u64 iters = crash_env_u64("BFS_FUZZ_ITERS", 300), rng = crash_env_u64("BFS_FUZZ_SEED", 1);
	struct bfs_dev *base = make_image(false, false), *img;
	struct nlist l = { .nr = 0 };
	struct bfs_core *c;
	unsigned id;
	u64 i;

	ck_assert_int_eq(bfs_core_open(base, &(struct bfs_core_opts){ .read_only = true }, &c), 0);
	for (id = 0; id < BFS_BTREE_NR; id++)
		bfs_btree_walk(c, id, collect_node, NULL, &l);
	bfs_core_close(c);
	ck_assert_uint_gt(l.nr, 0);
	bfs_log_set_hook(quiet, NULL);
	for (i = 0; i < iters; i++) {
		unsigned e = (unsigned)(crash_splitmix(&rng) % l.nr), n, k;
		u8 *node;

		ck_assert_int_eq(bfs_dev_clone_mem(base, &img), 0);
		node = bfs_dev_mem(img) + l.off[e];
		n = 1 + (unsigned)(crash_splitmix(&rng) % 6);
		for (k = 0; k < n; k++)
			node[crash_splitmix(&rng) % l.written[e]] ^= (u8)(1 + crash_splitmix(&rng) % 255);
		exercise(img);
		bfs_dev_close(img);
	}
	bfs_log_set_hook(NULL, NULL);
	printf("fuzz: %llu mutated btree nodes opened without a crash\n", (unsigned long long)iters);
	bfs_dev_close(base);
}
END_TEST

static Suite *fuzz_suite(void)
{
	Suite *s = suite_create("fuzz");
	TCase *tc = tcase_create("structure_aware");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_fuzz_journal);
	tcase_add_test(tc, test_fuzz_nodes);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(fuzz_suite)
