// SPDX-License-Identifier: MIT
/*
 * The in-memory btree node.
 *
 * data[] mirrors what is on disk: header and the bsets written so far.  New
 * keys are appended, unsorted, to a separate pending buffer, so they never
 * move until the node is written; keys[] is the merged, sorted view of both
 * (one entry per position, the newest version), searched by binary search.
 * Writing a node appends one sorted bset built by walking keys[] and picking
 * the entries that point into pending (node_io.c).
 */
#include <stdio.h>

#include "internal.h"

struct btree_node *bfs_node_alloc(struct bfs_core *c)
{
	struct btree_node *n = bfs_zalloc(sizeof(*n));

	if (!n)
		return NULL;
	n->data = bfs_aligned_alloc(4096, c->node_size);
	if (!n->data) {
		bfs_free(n);
		return NULL;
	}
	memset(n->data, 0, c->node_size);
	bfs_rwlock_init(&n->lock);
	return n;
}

void bfs_node_free(struct btree_node *n)
{
	if (!n)
		return;
	bfs_rwlock_destroy(&n->lock);
	bfs_free(n->data);
	bfs_free(n->pending);
	bfs_free(n->keys);
	bfs_free(n);
}

size_t bfs_node_mem(struct bfs_core *c, struct btree_node *n)
{
	return sizeof(*n) + c->node_size + (n->pending ? c->node_size : 0) +
		(size_t)n->cap * sizeof(n->keys[0]);
}

/*
 * Binary search over keys[] with both possible next probes prefetched: the
 * keys of a big node are mostly cold, and this overlaps the cache misses of
 * consecutive steps.
 */
u32 bfs_node_lower_bound(struct btree_node *n, struct bfs_bpos pos)
{
	struct bfs_bkey **k = n->keys;
	u32 base = 0, len = n->nr;

	while (len > 1) {
		u32 half = len / 2;

		__builtin_prefetch(k[base + half / 2]);
		__builtin_prefetch(k[base + half + half / 2]);
		if (bfs_bkey_cmp_pos(k[base + half - 1], pos) < 0)
			base += half;
		len -= half;
	}
	return base + (len == 1 && bfs_bkey_cmp_pos(k[base], pos) < 0);
}

u32 bfs_node_upper_bound(struct btree_node *n, struct bfs_bpos pos)
{
	/* positions are discrete: "> pos" is ">= successor(pos)" */
	return bfs_bpos_eq(pos, BFS_POS_MAX) ? n->nr : bfs_node_lower_bound(n, bfs_bpos_successor(pos));
}

bool bfs_node_fits(struct bfs_core *c, struct btree_node *n, size_t bytes)
{
	size_t start = n->written ? n->written : sizeof(struct bfs_btree_node);

	return start + sizeof(struct bfs_bset) + n->pending_bytes + bytes <= c->node_size;
}

int bfs_node_reserve(struct btree_node *n, u32 extra)
{
	if (n->nr + extra > n->cap) {
		u32 cap = BFS_MAX(BFS_MAX(n->cap * 2, n->nr + extra), 64u);
		struct bfs_bkey **k = bfs_realloc(n->keys, (size_t)cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		n->keys = k;
		n->cap = cap;
	}
	return 0;
}

static int node_reserve_pending(struct bfs_core *c, struct btree_node *n)
{
	if (!n->pending) {
		n->pending = bfs_malloc(c->node_size);
		if (!n->pending)
			return -ENOMEM;
	}
	return 0;
}

void bfs_node_insert(struct bfs_core *c, struct btree_node *n, const struct bfs_bkey *k, u64 jseq)
{
	struct bfs_bpos pos = bfs_bkey_pos(k);
	size_t bytes = bfs_bkey_bytes(k);
	u32 idx = bfs_node_lower_bound(n, pos);
	bool match = idx < n->nr && !bfs_bkey_cmp_pos(n->keys[idx], pos);
	struct bfs_bkey *dst;

	if (bfs_bkey_deleted(k)) {
		/*
		 * keys[] holds every position present in any bset, so without a
		 * live entry there is nothing on disk to shadow: no whiteout.
		 */
		if (!match || bfs_bkey_deleted(n->keys[idx]))
			return;
		if (!n->written) {
			/* never written: nothing older on disk either */
			n->live_bytes -= bfs_bkey_bytes(n->keys[idx]);
			memmove(&n->keys[idx], &n->keys[idx + 1], (n->nr - idx - 1) * sizeof(n->keys[0]));
			n->nr--;
			n->mod_seq++;
			return;
		}
	}

	/* bfs_node_reserve() and the pending buffer were set up by the caller */
	if (node_reserve_pending(c, n))
		return;
	dst = (struct bfs_bkey *)(n->pending + n->pending_bytes);
	memcpy(dst, k, bytes);
	n->pending_bytes += (u32)bytes;

	if (match) {
		if (!bfs_bkey_deleted(n->keys[idx]))
			n->live_bytes -= bfs_bkey_bytes(n->keys[idx]);
		n->keys[idx] = dst;
	} else {
		memmove(&n->keys[idx + 1], &n->keys[idx], (n->nr - idx) * sizeof(n->keys[0]));
		n->keys[idx] = dst;
		n->nr++;
	}
	if (!bfs_bkey_deleted(k))
		n->live_bytes += bytes;
	if (jseq > n->journal_seq)
		n->journal_seq = jseq;
	n->mod_seq++;
}

int bfs_node_prepare_insert(struct bfs_core *c, struct btree_node *n)
{
	int ret = bfs_node_reserve(n, 1);

	return ret ?: node_reserve_pending(c, n);
}

const struct bfs_bkey *bfs_node_child(struct btree_node *n, struct bfs_bpos pos, u32 *idx)
{
	u32 i = bfs_node_lower_bound(n, pos);

	while (i < n->nr && bfs_bkey_deleted(n->keys[i]))
		i++;
	if (idx)
		*idx = i;
	return i < n->nr ? n->keys[i] : NULL;
}

int bfs_node_fill(struct bfs_core *c, struct btree_node *n, struct bfs_bkey *const *keys, u32 nr)
{
	u32 i;
	int ret;

	ret = bfs_node_reserve(n, nr);
	if (!ret)
		ret = node_reserve_pending(c, n);
	if (ret)
		return ret;
	for (i = 0; i < nr; i++) {
		size_t bytes = bfs_bkey_bytes(keys[i]);
		struct bfs_bkey *dst = (struct bfs_bkey *)(n->pending + n->pending_bytes);

		memcpy(dst, keys[i], bytes);
		n->pending_bytes += (u32)bytes;
		n->keys[n->nr++] = dst;
		n->live_bytes += bytes;
	}
	n->mod_seq++;
	return 0;
}

void bfs_node_ptr(struct btree_node *n, struct bfs_bkey *k)
{
	struct bfs_btree_ptr *p = (struct bfs_btree_ptr *)k->v;

	bfs_bkey_init(k, BFS_KEY_BTREE_PTR, n->max, BFS_BTREE_PTR_VAL_U64S);
	*p = (struct bfs_btree_ptr){
		.offset = cpu_to_le64(n->offset),
		.seq = cpu_to_le64(n->seq),
		.min_key = bfs_bpos_to_disk(n->min),
		.level = n->level,
		.btree_id = n->btree_id,
	};
}

const char *bfs_node_pos_text(struct bfs_bpos p, char *buf, size_t len)
{
	bfs_bpos_to_text(buf, len, p);
	return buf;
}
