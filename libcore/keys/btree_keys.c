// SPDX-License-Identifier: MIT
/* The btree core's own key types: whiteouts, child pointers, test values. */
#include <stdio.h>

#include <bfs/btree_format.h>
#include <bfs/os.h>

#include "keys.h"

static void ptr_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_btree_ptr *p = (const void *)k->v;
	struct bfs_bpos min = bfs_bpos_from_disk(&p->min_key);

	snprintf(buf, len, "node %llu seq %016llx level %u btree %u min %llu:%llu:%u",
		 (unsigned long long)le64_to_cpu(p->offset), (unsigned long long)le64_to_cpu(p->seq),
		 p->level, p->btree_id, (unsigned long long)min.inode,
		 (unsigned long long)min.offset, min.snapshot);
}

static void hex_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const u8 *v = bfs_bkey_val(k);
	size_t n = bfs_bkey_val_u64s(k) * 8, i, o = 0;

	if (len)
		buf[0] = 0;
	for (i = 0; i < n && i < 16 && o + 3 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%02x", v[i]);
	if (i < n && o + 4 < len)
		snprintf(buf + o, len - o, "...");
}

const struct bfs_bkey_ops bfs_key_ops_DELETED = { .max_val_u64s = 0 };
const struct bfs_bkey_ops bfs_key_ops_BTREE_PTR = {
	.min_val_u64s = BFS_BTREE_PTR_VAL_U64S,
	.max_val_u64s = BFS_BTREE_PTR_VAL_U64S,
	.val_to_text = ptr_to_text,
};
const struct bfs_bkey_ops bfs_key_ops_COOKIE = { .val_to_text = hex_to_text };

/* tests of extent trimming: value word 0 is the "data offset" of the start */
static void test_extent_cut_front(struct bfs_bkey *k, u64 n)
{
	k->v[0] = cpu_to_le64(le64_to_cpu(k->v[0]) + n);
}

const struct bfs_bkey_ops bfs_key_ops_TEST_EXTENT = {
	.min_val_u64s = 1,
	.max_val_u64s = 1,
	.val_to_text = hex_to_text,
	.cut_front = test_extent_cut_front,
};
