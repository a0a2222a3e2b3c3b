/* SPDX-License-Identifier: MIT */
/* Helpers shared by the btree unit tests (header-only: each test is one program). */
#ifndef BFS_TEST_BTREE_UTIL_H
#define BFS_TEST_BTREE_UTIL_H

#include "unit.h"

#include <stdio.h>

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/dev.h>
#include <bfs/log.h>
#include <bfs/os.h>
#include <bfs/super.h>

static char tu_last_err[1024];
static unsigned tu_nr_errs;
static bfs_mutex tu_log_lock = PTHREAD_MUTEX_INITIALIZER;

static void tu_log_hook(enum bfs_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (level != BFS_LOG_ERR)
		return;
	bfs_mutex_lock(&tu_log_lock);
	snprintf(tu_last_err, sizeof(tu_last_err), "%s", msg);
	tu_nr_errs++;
	if (getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "bfs err: %s\n", msg);
	bfs_mutex_unlock(&tu_log_lock);
}

static inline void tu_log_reset(void)
{
	bfs_log_set_hook(tu_log_hook, NULL);
	tu_last_err[0] = 0;
	tu_nr_errs = 0;
}

/* a fresh formatted memory device */
static inline struct bfs_dev *tu_mkfs(u64 size, u32 node_size, u32 bucket_size, u32 jbuckets)
{
	struct bfs_format_opts o = {
		.btree_node_size = node_size,
		.bucket_size = bucket_size,
		.journal_nbuckets = jbuckets,
		.block_size = 4096,
	};
	struct bfs_dev *dev;
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";
	int ret;

	ck_assert_ptr_nonnull(sb);
	ck_assert_int_eq(bfs_dev_open_mem(size, &dev), 0);
	ret = bfs_sb_layout(&o, size, 512, sb, err);
	ck_assert_msg(!ret, "layout: %d %s", ret, err);
	ck_assert_int_eq(bfs_core_format(dev, sb), 0);
	ck_assert_int_eq(bfs_mkfs_write(dev, sb), 0);
	bfs_free(sb);
	return dev;
}

static inline struct bfs_core *tu_open(struct bfs_dev *dev, bool no_journal, u64 cache)
{
	struct bfs_core_opts o = { .no_journal = no_journal, .cache_bytes = cache };
	struct bfs_core *c = NULL;
	int ret = bfs_core_open(dev, &o, &c);

	ck_assert_msg(!ret, "open: %d (%s)", ret, tu_last_err);
	return c;
}

/* a cookie key at (inode, offset) whose value is @nval words derived from @val */
static inline struct bfs_bkey *tu_key(u64 *buf, u64 inode, u64 offset, u64 val, u32 nval)
{
	struct bfs_bkey *k = (struct bfs_bkey *)buf;
	u32 i;

	bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(inode, offset, 0), nval);
	for (i = 0; i < nval; i++)
		k->v[i] = cpu_to_le64(val + i);
	return k;
}

static inline u64 tu_val(const struct bfs_bkey *k)
{
	return bfs_bkey_val_u64s(k) ? le64_to_cpu(k->v[0]) : 0;
}

#endif
