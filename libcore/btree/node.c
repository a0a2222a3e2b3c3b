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
	/*
	 * Not zeroed: a node is either read whole from the device or written
	 * from scratch (node_write builds header, bsets and padding), and
	 * nothing reads past what was read or written.
	 */
	n->data = bfs_node_buf_get(c);
	if (!n->data) {
		bfs_free(n);
		return NULL;
	}
	bfs_rwlock_init(&n->lock);
	return n;
}

void bfs_node_free(struct bfs_core *c, struct btree_node *n)
{
	if (!n)
		return;
	bfs_rwlock_destroy(&n->lock);
	/* what the pool counted for it (a trim, not the bsets written since) */
	bfs_node_buf_put(c, n->data, n->buf_kept ? n->buf_kept : c->node_size);
	bfs_node_free_pending(n);
	bfs_node_keys_free(n);
	bfs_free(n);
}

/*
 * All of a node's buffer, or after the trim of a root or interior node what
 * it kept and the bsets written past that since: the budget then means
 * resident memory, and a cache of a few hundred KiB holds every root and
 * interior node a sweep needs (doc/fsck.md).
 */
size_t bfs_node_data_resident(struct bfs_core *c, const struct btree_node *n)
{
	size_t written = BFS_ROUND_UP((size_t)n->written, (size_t)4096);

	if (!n->buf_kept)
		return c->node_size;
	return BFS_MIN((size_t)c->node_size, BFS_MAX((size_t)n->buf_kept, written));
}

size_t bfs_node_mem(struct bfs_core *c, struct btree_node *n)
{
	return sizeof(*n) + bfs_node_data_resident(c, n) + n->pending_alloc +
		(size_t)(n->nch + n->nr_spare) * sizeof(struct key_chunk) +
		(size_t)n->ch_cap * (sizeof(n->ch[0]) + sizeof(n->start[0]) + sizeof(n->last[0]) +
				     sizeof(n->eyt[0]) + sizeof(n->eyt_of[0]));
}

bool bfs_node_fits(struct bfs_core *c, struct btree_node *n, size_t bytes)
{
	size_t start = n->written ? n->written : sizeof(struct bfs_btree_node);

	return start + sizeof(struct bfs_bset) + n->pending_bytes + bytes <= c->node_size;
}

/* small blocks: a dirty node costs memory for what it holds, not a whole node */
#define PEND_BLOCK	(4 * KiB)

int bfs_node_reserve_pending(struct btree_node *n, size_t bytes)
{
	struct pend_block *b = n->pending;
	size_t size;

	if (b && b->size - b->used >= bytes)
		return 0;
	size = BFS_MAX(bytes, PEND_BLOCK - sizeof(*b));
	b = bfs_malloc(sizeof(*b) + size);
	if (!b)
		return -ENOMEM;
	b->next = n->pending;
	b->used = 0;
	b->size = (u32)size;
	n->pending = b;
	n->pending_alloc += sizeof(*b) + size;
	return 0;
}

void bfs_node_free_pending(struct btree_node *n)
{
	while (n->pending) {
		struct pend_block *b = n->pending;

		n->pending = b->next;
		bfs_free(b);
	}
	n->pending_alloc = 0;
	n->pending_bytes = 0;
}

static struct bfs_bkey *pending_put(struct btree_node *n, const struct bfs_bkey *k)
{
	struct pend_block *b = n->pending;
	size_t bytes = bfs_bkey_bytes(k);
	struct bfs_bkey *dst = (struct bfs_bkey *)((u8 *)b->data + b->used);

	memcpy(dst, k, bytes);
	b->used += (u32)bytes;
	n->pending_bytes += (u32)bytes;
	return dst;
}

void bfs_node_insert(struct bfs_core *c, struct btree_node *n, const struct bfs_bkey *k, u64 jseq)
{
	struct bfs_bpos pos = bfs_bkey_pos(k);
	size_t bytes = bfs_bkey_bytes(k);
	struct node_slot slot;
	u32 idx = bfs_node_search(n, pos, &slot);
	struct bfs_bkey *old = idx < n->nr ? n->ch[slot.c]->k[slot.off] : NULL;
	bool match = old && !bfs_bkey_cmp_pos(old, pos);
	struct bfs_bkey *dst;

	if (bfs_bkey_deleted(k)) {
		/*
		 * keys[] holds every position present in any bset, so without a
		 * live entry there is nothing on disk to shadow: no whiteout.
		 */
		if (!match || bfs_bkey_deleted(old))
			return;
		if (!n->written) {
			/* never written: nothing older on disk either */
			n->live_bytes -= bfs_bkey_bytes(old);
			bfs_node_key_remove(n, idx);
			bfs_node_changed(n);
			return;
		}
	}

	/* room was made by bfs_node_prepare_insert(): this cannot fail */
	dst = pending_put(n, k);

	if (match) {
		if (!bfs_bkey_deleted(old))
			n->live_bytes -= bfs_bkey_bytes(old);
		/* same position: the search keys don't change */
		n->ch[slot.c]->k[slot.off] = dst;
	} else {
		bfs_node_key_insert_at(n, slot, dst);
	}
	if (!bfs_bkey_deleted(k))
		n->live_bytes += bytes;
	if (jseq > n->journal_seq)
		n->journal_seq = jseq;
	bfs_node_changed(n);
}

int bfs_node_prepare_insert(struct bfs_core *c, struct btree_node *n, size_t bytes)
{
	int ret = bfs_node_reserve(n, 1);

	return ret ?: bfs_node_reserve_pending(n, bytes);
}

const struct bfs_bkey *bfs_node_child(struct btree_node *n, struct bfs_bpos pos, u32 *idx)
{
	struct node_slot s;
	u32 i = bfs_node_search(n, pos, &s);
	const struct bfs_bkey *k = NULL;

	/* walk by slot: node_key() would search the chunk starts for every entry */
	for (; i < n->nr; i++, node_slot_next(n, &s)) {
		k = node_slot_key(n, s);
		if (!bfs_bkey_deleted(k))
			break;
	}
	if (idx)
		*idx = i;
	return i < n->nr ? k : NULL;
}

int bfs_node_fill(struct bfs_core *c, struct btree_node *n, struct bfs_bkey *const *keys, u32 nr)
{
	struct bfs_bkey **copies;
	u32 i;
	int ret;

	size_t total = 0;

	/* only for fresh nodes: nothing in the view or pending yet */
	for (i = 0; i < nr; i++)
		total += bfs_bkey_bytes(keys[i]);
	ret = bfs_node_reserve_pending(n, total);
	if (ret)
		return ret;
	copies = bfs_malloc((nr + 1) * sizeof(*copies));
	if (!copies)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		copies[i] = pending_put(n, keys[i]);
		n->live_bytes += bfs_bkey_bytes(keys[i]);
	}
	ret = bfs_node_keys_set(n, copies, nr);
	bfs_free(copies);
	bfs_node_changed(n);
	return ret;
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
