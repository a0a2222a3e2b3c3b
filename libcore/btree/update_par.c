// SPDX-License-Identifier: MIT
/*
 * Parallel commits (doc/commit.md): with commit_lock held shared, the tree's
 * shape cannot change (whatever splits, merges, snapshots or replays holds
 * it exclusive), so a commit descends without node locks, write-locks the
 * leaves it will change and keeps them until its journal append is done:
 * two commits to one leaf are journalled in the order they applied, and
 * commits to different leaves run side by side.
 *
 * The leaves of all updates are found first, with no leaf locked (a cache
 * miss then delays nobody), and locked in lock order; only leaves an
 * extent's trimming scan reaches beyond those are locked on the way.
 *
 * Everything that would change the shape or wait out of lock order is
 * refused with -EAGAIN before anything is applied; the caller then commits
 * the exclusive way.
 */
#include <stdlib.h>

#include "internal.h"

struct par_op {
	u8	btree_id;
	u8	leaf;			/* index in the leaf set */
	u8	pad[6];
	/* struct bfs_bkey follows */
};

/* lock order of leaves: btree, then position */
static int leaf_cmp(const struct btree_node *a, const struct btree_node *b)
{
	if (a->btree_id != b->btree_id)
		return a->btree_id < b->btree_id ? -1 : 1;
	return bfs_bpos_cmp(a->min, b->min);
}

static bool leaf_covers(const struct btree_node *n, u8 id, struct bfs_bpos pos)
{
	return n->btree_id == id && bfs_bpos_cmp(pos, n->min) >= 0 && bfs_bpos_cmp(pos, n->max) <= 0;
}

int bfs_leaf_set_get(struct bfs_core *c, struct leaf_set *ls, u8 id, struct bfs_bpos pos, u32 *idx)
{
	struct btree_path p;
	struct btree_node *leaf;
	bool in_order = true;
	u32 i;
	int ret;

	/* a leaf's range is fixed at its creation, and nobody replaces it meanwhile */
	for (i = 0; i < ls->nr; i++)
		if (leaf_covers(ls->n[i], id, pos)) {
			*idx = i;
			return 0;
		}
	if (ls->nr == LEAF_SET_MAX)
		return -EAGAIN;
	ret = bfs_path_traverse(c, id, pos, &p);
	if (ret)
		return ret;
	leaf = p.n[0];
	for (i = 0; i < ls->nr; i++)
		if (leaf_cmp(leaf, ls->n[i]) < 0)
			in_order = false;
	/*
	 * Waiting only for leaves after every one held cannot deadlock; readers
	 * never wait for a leaf while holding one.
	 */
	if (!ls->locked)
		;
	else if (in_order)
		bfs_write_lock(&leaf->lock);
	else if (!bfs_write_trylock(&leaf->lock)) {
		bfs_path_put(c, &p);
		return -EAGAIN;
	}
	bfs_cache_ref(c, leaf);
	bfs_path_put(c, &p);
	ls->n[ls->nr] = leaf;
	ls->bytes[ls->nr] = 0;
	ls->changed[ls->nr] = false;
	*idx = ls->nr++;
	return 0;
}

int bfs_par_collect(struct bfs_core *c, struct par_commit *pc, u8 id, const struct bfs_bkey *k)
{
	u32 li;

	/* an extent update's first leaf: the one its trimming scan starts in */
	return bfs_leaf_set_get(c, &pc->ls, id, bfs_btree_is_extents(id) ?
				BFS_POS(le64_to_cpu(k->inode), bfs_bkey_start(k),
					le32_to_cpu(k->snapshot)) : bfs_bkey_pos(k), &li);
}

static int cmp_leaf_ptr(const void *a, const void *b)
{
	return leaf_cmp(*(struct btree_node *const *)a, *(struct btree_node *const *)b);
}

void bfs_par_lock_all(struct par_commit *pc)
{
	u32 i;

	/* in lock order, so these waits cannot deadlock */
	qsort(pc->ls.n, pc->ls.nr, sizeof(pc->ls.n[0]), cmp_leaf_ptr);
	for (i = 0; i < pc->ls.nr; i++)
		bfs_write_lock(&pc->ls.n[i]->lock);
	pc->ls.locked = true;
}

static int add_op(struct bfs_core *c, struct par_commit *pc, u8 id, const struct bfs_bkey *k)
{
	size_t u = bfs_bkey_u64s(k);
	struct par_op *op;
	u32 li;
	int ret = bfs_leaf_set_get(c, &pc->ls, id, bfs_bkey_pos(k), &li) ?:
		bfs_key_list_reserve(&pc->ops, 1 + u);

	if (ret)
		return ret;
	pc->ops.buf[pc->ops.used] = 0;
	op = (struct par_op *)&pc->ops.buf[pc->ops.used];
	op->btree_id = id;
	op->leaf = (u8)li;
	memcpy(&pc->ops.buf[pc->ops.used + 1], k, u * 8);
	pc->ops.used += 1 + u;
	pc->ls.bytes[li] += bfs_bkey_bytes(k);
	return 0;
}

int bfs_par_plan(struct bfs_core *c, struct par_commit *pc, u8 id, const struct bfs_bkey *k)
{
	struct key_list l = { 0 };
	size_t off;
	int ret;

	if (!bfs_btree_is_extents(id) || (bfs_bkey_deleted(k) && !bfs_bkey_size(k)))
		return add_op(c, pc, id, k);
	/* a second extent update's trimming would depend on the first's result */
	if (pc->extents_seen & (1u << id))
		return -EAGAIN;
	pc->extents_seen |= 1u << id;
	ret = bfs_extent_ops(c, id, k, &l, &pc->ls);
	for (off = 0; !ret && off < l.used; off += bfs_bkey_u64s((const struct bfs_bkey *)(l.buf + off)))
		ret = add_op(c, pc, id, (const struct bfs_bkey *)(l.buf + off));
	bfs_free(l.buf);
	return ret;
}

int bfs_par_check_room(struct bfs_core *c, struct par_commit *pc)
{
	u32 i;

	for (i = 0; i < pc->ls.nr; i++)
		if (!bfs_node_fits(c, pc->ls.n[i], pc->ls.bytes[i]))
			return -EAGAIN;		/* a split: exclusive */
	return 0;
}

int bfs_par_apply(struct bfs_core *c, struct par_commit *pc, u64 jseq,
		  int (*emit)(void *ctx, u8 id, const struct bfs_bkey *k), void *ctx,
		  bool *applied_any)
{
	u32 usable = c->node_size - (u32)sizeof(struct bfs_btree_node) - (u32)sizeof(struct bfs_bset);
	size_t off = 0;
	int ret = 0;

	while (!ret && off < pc->ops.used) {
		const struct par_op *op = (const void *)&pc->ops.buf[off];
		const struct bfs_bkey *k = (const void *)&pc->ops.buf[off + 1];
		struct btree_node *leaf = pc->ls.n[op->leaf];

		/* keys[] may be reallocated: the write lock keeps readers out */
		ret = bfs_node_prepare_insert(c, leaf, bfs_bkey_bytes(k));
		if (!ret) {
			bfs_node_insert(c, leaf, k, jseq);
			pc->ls.changed[op->leaf] = true;
			*applied_any = true;
			if (bfs_bkey_deleted(k) && leaf->live_bytes * 4 < usable)
				pc->sparse = true;
			ret = emit(ctx, op->btree_id, k);
		}
		off += 1 + bfs_bkey_u64s(k);
	}
	return ret;
}

void bfs_par_fixup(struct par_commit *pc, bfs_trans_fixup_fn fn, void *ctx)
{
	size_t off;

	for (off = 0; off < pc->ops.used;) {
		const struct par_op *op = (const void *)&pc->ops.buf[off];
		struct bfs_bkey *k = (void *)&pc->ops.buf[off + 1];

		if (!bfs_btree_is_extents(op->btree_id))
			fn(ctx, (enum bfs_btree_id)op->btree_id, k);
		off += 1 + bfs_bkey_u64s(k);
	}
}

void bfs_par_end(struct bfs_core *c, struct par_commit *pc)
{
	u32 i;

	for (i = 0; i < pc->ls.nr; i++) {
		struct btree_node *n = pc->ls.n[i];

		/* before commit_lock is let go: a snapshot must find it dirty */
		if (pc->ls.changed[i])
			bfs_cache_set_dirty(c, n, true);
		if (pc->ls.locked)
			bfs_rwlock_unlock(&n->lock);
		bfs_cache_put(c, n);
	}
	pc->ls.nr = 0;
	pc->ls.locked = false;
	bfs_free(pc->ops.buf);
	pc->ops = (struct key_list){ 0 };
}
