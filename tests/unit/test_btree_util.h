/* SPDX-License-Identifier: MIT */
/* Helpers shared by the btree unit tests (header-only: each test is one program). */
#ifndef BFS_TEST_BTREE_UTIL_H
#define BFS_TEST_BTREE_UTIL_H

#include "tu.h"

#include <stdio.h>

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/dev.h>
#include <bfs/log.h>
#include <bfs/os.h>
#include <bfs/super.h>

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
