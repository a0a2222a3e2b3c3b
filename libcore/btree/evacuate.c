// SPDX-License-Identifier: MIT
/*
 * Moving btree nodes out of the space a shrink cuts (see bfs_btree_evacuate()
 * in btree.h).
 *
 * Every node is found by walking the interior nodes of every btree (a
 * node's place is in its parent's pointer, so leaves are not read); each one
 * beyond the limit is then copied, under commit_lock, by the ordinary
 * copy-on-write rewrite without a split: new slot (below the limit, the
 * allocator is fenced), parent pointer or root swapped, old node retired.  None of this is
 * journaled: like any split it reaches the disk at a checkpoint, which
 * writes the new nodes before it records the roots that reach them.  Until
 * then the on-disk trees are the old ones, whose slots stay untouched (freed
 * slots are only reused after the checkpoint, and fenced ones never), so a
 * crash at any point leaves either tree whole.
 *
 * Parents are moved before their children (highest level first): a child's
 * new pointer then lands in a node that is already below the limit.
 */
#include <stdlib.h>

#include "internal.h"

/* moves between checkpoints: bounds the dirty nodes held in memory */
#define EVAC_BATCH	256
/* a move retried after its parent was rewritten to make room */
#define EVAC_TRIES	8

struct evac_node {
	u8	id;
	u8	level;
	struct bfs_bpos min;
	u64	offset;
};

struct evac {
	u64	limit;
	u32	node_size;
	bool	record;		/* keep them in v[], or only count them */
	struct evac_node *v;
	size_t	nr, cap;
};

static int add(struct evac *e, u8 id, u8 level, struct bfs_bpos min, u64 offset)
{
	if (offset + e->node_size <= e->limit)
		return 0;
	if (!e->record) {
		e->nr++;
		return 0;
	}
	if (e->nr == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 64;
		struct evac_node *v = bfs_realloc(e->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		e->v = v;
		e->cap = cap;
	}
	e->v[e->nr++] = (struct evac_node){ id, level, min, offset };
	return 0;
}

/*
 * The children of interior node @n, from its pointers: a leaf's place is in
 * its parent's pointer, so leaves are not read (most of the metadata).
 */
static int collect_children(struct bfs_core *c, struct evac *e, u8 id, struct btree_node *n)
{
	u32 i;
	int ret = 0;

	for (i = 0; i < n->nr && !ret && n->level; i++) {
		const struct bfs_bkey *k = node_key(n, i);
		const struct bfs_btree_ptr *p = bkey_ptr_val(k);
		struct btree_node *child;

		if (bfs_bkey_deleted(k))
			continue;
		ret = add(e, id, n->level - 1, bfs_bpos_from_disk(&p->min_key),
			  le64_to_cpu(p->offset));
		if (ret || n->level == 1)
			continue;
		ret = bfs_cache_get(c, id, k, &child);
		if (!ret) {
			ret = collect_children(c, e, id, child);
			bfs_cache_put(c, child);
		}
	}
	return ret;
}

/* commit_lock held */
static int collect_all(struct bfs_core *c, struct evac *e)
{
	unsigned id;
	int ret = 0;

	e->nr = 0;
	for (id = 0; id < BFS_BTREE_NR && !ret; id++) {
		struct btree_node *root = c->trees[id].node;

		if (!root)
			return -EUCLEAN;	/* a salvage open whose root is unreadable */
		ret = add(e, (u8)id, root->level, root->min, root->offset) ?:
			collect_children(c, e, (u8)id, root);
	}
	return ret;
}

int bfs_btree_nodes_beyond(struct bfs_core *c, u64 limit, u64 *nr)
{
	struct evac e = { .limit = limit, .node_size = c->node_size };
	int ret;

	bfs_commit_lock(c);
	ret = collect_all(c, &e);
	bfs_commit_unlock(c);
	*nr = e.nr;
	return ret;
}

static int higher_first(const void *a, const void *b)
{
	const struct evac_node *x = a, *y = b;

	if (x->level != y->level)
		return x->level > y->level ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* 1: moved, 0: no longer in the tree (a rewrite above replaced it), or -errno */
static int move_one(struct bfs_core *c, const struct evac_node *en)
{
	struct btree_path p;
	unsigned tries;
	int ret;

	for (tries = 0; tries < EVAC_TRIES; tries++) {
		/* the node at en->level covering its own min is the node itself, if still there */
		ret = bfs_path_traverse(c, en->id, en->min, &p);
		if (ret)
			return ret;
		if (en->level >= p.depth || p.n[en->level]->offset != en->offset) {
			bfs_path_put(c, &p);
			return 0;
		}
		ret = bfs_btree_node_move(c, en->id, &p, en->level);
		bfs_path_put(c, &p);
		if (ret != -EAGAIN)
			return ret ?: 1;
	}
	bfs_err("btree %s: the node at %llu could not be moved after %u tries",
		bfs_btree_id_name(en->id), (unsigned long long)en->offset, EVAC_TRIES);
	return -EUCLEAN;
}

int bfs_btree_evacuate(struct bfs_core *c, u64 limit,
		       void (*progress)(void *ctx, u64 done, u64 total), void *ctx,
		       u64 *moved, u64 *left)
{
	struct evac e = { .limit = limit, .node_size = c->node_size, .record = true };
	unsigned pass;
	size_t i;
	int ret;

	*moved = 0;
	*left = 0;
	ret = bfs_core_check_writable(c);
	/* a second pass only if the first left something (it should not) */
	for (pass = 0; !ret && pass < 2; pass++) {
		bfs_commit_lock(c);
		ret = collect_all(c, &e);
		if (ret || !e.nr) {
			bfs_commit_unlock(c);
			break;
		}
		qsort(e.v, e.nr, sizeof(*e.v), higher_first);
		for (i = 0; i < e.nr && ret >= 0; i++) {
			ret = move_one(c, &e.v[i]);
			*moved += ret > 0;
			if (ret >= 0 && (i + 1) % EVAC_BATCH == 0) {
				ret = bfs_core_checkpoint_locked(c);
				if (progress)
					progress(ctx, i + 1, e.nr);
			}
		}
		if (ret >= 0)
			ret = bfs_core_checkpoint_locked(c);
		bfs_commit_unlock(c);
		if (progress && ret >= 0)
			progress(ctx, e.nr, e.nr);
	}
	if (!ret)
		ret = bfs_btree_nodes_beyond(c, limit, left);
	bfs_free(e.v);
	return ret;
}
