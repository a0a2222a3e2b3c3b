// SPDX-License-Identifier: MIT
/*
 * Writer side (commit_lock held exclusive): finding the path to a leaf, inserting one
 * key with splits as needed, merging sparse leaves, and turning an extent
 * insert into the blind writes that trim or split the extents it overlaps.
 *
 * The writer reads nodes without their locks (nobody else changes them) and
 * takes a node's write lock only for the instant it changes it.
 */
#include <stdio.h>

#include "internal.h"

void bfs_path_put(struct bfs_core *c, struct btree_path *p)
{
	u32 i;

	for (i = 0; i < BFS_BTREE_MAX_DEPTH; i++) {
		if (p->n[i])
			bfs_cache_put(c, p->n[i]);
		p->n[i] = NULL;
	}
	p->depth = 0;
}

int bfs_path_traverse(struct bfs_core *c, u8 id, struct bfs_bpos pos, struct btree_path *p)
{
	struct btree_node *n = c->trees[id].node;
	int ret;

	memset(p, 0, sizeof(*p));
	bfs_cache_ref(c, n);
	p->depth = n->level + 1u;
	p->n[n->level] = n;
	while (n->level) {
		const struct bfs_bkey *k = bfs_node_child(n, pos, NULL);
		struct btree_node *child;

		if (!k) {
			char b[64];

			bfs_err("btree %s level %u node at %llu: no child pointer covers %s",
				bfs_btree_id_name(id), n->level, (unsigned long long)n->offset,
				bfs_node_pos_text(pos, b, sizeof(b)));
			ret = -EUCLEAN;
			goto err;
		}
		ret = bfs_cache_get(c, id, k, &child);
		if (ret)
			goto err;
		if (child->level + 1 != n->level) {
			bfs_cache_put(c, child);
			ret = -EUCLEAN;
			goto err;
		}
		p->n[child->level] = child;
		n = child;
	}
	return 0;
err:
	bfs_path_put(c, p);
	return ret;
}

int bfs_btree_insert_key(struct bfs_core *c, u8 id, const struct bfs_bkey *k, u64 jseq)
{
	struct bfs_bpos pos = bfs_bkey_pos(k);
	size_t bytes = bfs_bkey_bytes(k);
	struct btree_path p;
	unsigned tries;
	int ret;

	for (tries = 0; tries < 32; tries++) {
		struct btree_node *leaf;

		ret = bfs_path_traverse(c, id, pos, &p);
		if (ret)
			return ret;
		leaf = p.n[0];
		if (!bfs_node_fits(c, leaf, bytes)) {
			ret = bfs_btree_node_rewrite(c, id, &p, 0, &pos);
			bfs_path_put(c, &p);
			if (ret && ret != -EAGAIN)
				return ret;
			continue;
		}
		/* keys[] may be reallocated: readers must not be looking */
		bfs_write_lock(&leaf->lock);
		ret = bfs_node_prepare_insert(c, leaf, bytes);
		if (!ret)
			bfs_node_insert(c, leaf, k, jseq);
		bfs_rwlock_unlock(&leaf->lock);
		if (!ret)
			bfs_cache_set_dirty(c, leaf, true);
		bfs_path_put(c, &p);
		return ret;
	}
	bfs_err("btree %s: no room for a key of %zu bytes after 32 rewrites", bfs_btree_id_name(id), bytes);
	return -EUCLEAN;
}

static int maybe_merge_level(struct bfs_core *c, u8 id, struct bfs_bpos pos, unsigned level)
{
	u32 usable = c->node_size - (u32)sizeof(struct bfs_btree_node) - (u32)sizeof(struct bfs_bset);
	struct btree_node *node, *parent, *sib = NULL;
	struct btree_path p;
	bool merged = false;
	int side, ret;
	s64 i;
	u32 idx;

	ret = bfs_path_traverse(c, id, pos, &p);
	if (ret)
		return ret;
	if (level + 1 >= p.depth)
		goto out;
	node = p.n[level];
	if (node->live_bytes * 4 >= usable)
		goto out;
	parent = p.n[level + 1];
	idx = bfs_node_lower_bound(parent, node->max);
	/* the right sibling, else the left one: whichever fits together with this node */
	for (side = 0; side < 2 && !merged; side++) {
		if (!side)
			for (i = idx + 1; i < parent->nr && bfs_bkey_deleted(node_key(parent, i)); i++)
				;
		else
			for (i = (s64)idx - 1; i >= 0 && bfs_bkey_deleted(node_key(parent, i)); i--)
				;
		if (i < 0 || i >= parent->nr)
			continue;
		ret = bfs_cache_get(c, id, node_key(parent, i), &sib);
		if (ret)
			goto out;
		if (node->live_bytes + sib->live_bytes <= (u64)usable * 2 / 3) {
			ret = !side ? bfs_btree_merge_siblings(c, id, &p, node, sib) :
				bfs_btree_merge_siblings(c, id, &p, sib, node);
			merged = ret > 0;
			if (!ret)
				side = 2;	/* the parent has no room: no point trying the other side */
			if (ret > 0)
				ret = 0;
		}
		bfs_cache_put(c, sib);
		sib = NULL;
		if (ret)
			goto out;
	}
	ret = merged;
out:
	bfs_path_put(c, &p);
	return ret;
}

int bfs_btree_maybe_merge(struct bfs_core *c, u8 id, struct bfs_bpos pos)
{
	unsigned level;
	int ret = 0;

	/* a merge takes a pointer out of the parent, which may then be sparse too */
	for (level = 0; level < BFS_BTREE_MAX_DEPTH - 1; level++) {
		ret = maybe_merge_level(c, id, pos, level);
		if (ret <= 0)
			break;
	}
	return ret < 0 ? ret : 0;
}

/* ---- extents ---- */

int bfs_key_list_reserve(struct key_list *l, size_t u64s)
{
	if (l->used + u64s > l->cap) {
		size_t cap = BFS_MAX(l->cap * 2, l->used + u64s + 64);
		u64 *b = bfs_realloc(l->buf, cap * 8);

		if (!b)
			return -ENOMEM;
		l->buf = b;
		l->cap = cap;
	}
	return 0;
}

int bfs_key_list_add(struct key_list *l, const struct bfs_bkey *k)
{
	size_t u = bfs_bkey_u64s(k);
	int ret = bfs_key_list_reserve(l, u);

	if (ret)
		return ret;
	memcpy(l->buf + l->used, k, u * 8);
	l->used += u;
	return 0;
}

/* x trimmed to [start, end) (end == x's end for front cuts) */
static int add_piece(struct key_list *l, const struct bfs_bkey *x, u64 start, u64 end)
{
	u64 xs = bfs_bkey_start(x);
	struct bfs_bkey *k = bfs_malloc(bfs_bkey_bytes(x));
	const struct bfs_bkey_ops *ops = bfs_bkey_type_ops(x->type);
	int ret;

	if (!k)
		return -ENOMEM;
	memcpy(k, x, bfs_bkey_bytes(x));
	if (start > xs && ops && ops->cut_front)
		ops->cut_front(k, start - xs);
	k->offset = cpu_to_le64(end);
	k->size = cpu_to_le32((u32)(end - start));
	ret = bfs_key_list_add(l, k);
	bfs_free(k);
	return ret;
}

int bfs_extent_ops(struct bfs_core *c, u8 id, const struct bfs_bkey *k, struct key_list *out,
		   struct leaf_set *ls)
{
	u64 s = bfs_bkey_start(k), e = le64_to_cpu(k->offset);
	u64 inode = le64_to_cpu(k->inode);
	u32 snap = le32_to_cpu(k->snapshot);
	struct bfs_bpos pos = BFS_POS(inode, s, snap);
	bool strict = true, done = false;
	int ret = 0;

	while (!done && !ret) {
		struct btree_path p;
		struct btree_node *leaf;
		u32 i;

		if (ls) {
			u32 li;

			/* parallel commit: the leaf stays write-locked until the commit ends */
			ret = bfs_leaf_set_get(c, ls, id, pos, &li);
			if (ret)
				return ret;
			leaf = ls->n[li];
		} else {
			ret = bfs_path_traverse(c, id, pos, &p);
			if (ret)
				return ret;
			leaf = p.n[0];
		}
		i = strict ? bfs_node_upper_bound(leaf, pos) : bfs_node_lower_bound(leaf, pos);
		for (; i < leaf->nr && !ret; i++) {
			const struct bfs_bkey *x = node_key(leaf, i);
			u64 xs, xe;

			if (bfs_bkey_deleted(x))
				continue;
			if (le64_to_cpu(x->inode) != inode || bfs_bkey_start(x) >= e) {
				done = true;
				break;
			}
			if (le32_to_cpu(x->snapshot) != snap)
				continue;
			xs = bfs_bkey_start(x);
			xe = le64_to_cpu(x->offset);
			if (xs < s)
				ret = add_piece(out, x, xs, s);
			if (!ret && xe > e)
				ret = add_piece(out, x, e, xe);
			if (!ret && xe <= e && !(xe == e && !bfs_bkey_deleted(k))) {
				struct bfs_bkey w;

				bfs_bkey_init(&w, BFS_KEY_DELETED, bfs_bkey_pos(x), 0);
				ret = bfs_key_list_add(out, &w);
			}
		}
		if (!done && i >= leaf->nr && !bfs_bpos_eq(leaf->max, BFS_POS_MAX)) {
			pos = bfs_bpos_successor(leaf->max);
			strict = false;
		} else {
			done = true;
		}
		if (!ls)
			bfs_path_put(c, &p);
	}
	if (!ret && !bfs_bkey_deleted(k))
		ret = bfs_key_list_add(out, k);
	return ret;
}

/*
 * Apply one update: @emit is called for every blind write actually applied
 * (the journal records those, so replay needs no extent logic).
 */
int bfs_btree_apply_update(struct bfs_core *c, u8 id, const struct bfs_bkey *k, u64 jseq,
			   int (*emit)(void *ctx, u8 id, const struct bfs_bkey *k), void *ctx,
			   bool *applied_any)
{
	struct key_list l = { 0 };
	size_t off;
	int ret;

	if (!bfs_btree_is_extents(id) || (bfs_bkey_deleted(k) && !bfs_bkey_size(k))) {
		ret = bfs_btree_insert_key(c, id, k, jseq);
		if (!ret) {
			*applied_any = true;
			ret = emit(ctx, id, k);
		}
		return ret;
	}
	ret = bfs_extent_ops(c, id, k, &l, NULL);
	for (off = 0; !ret && off < l.used; ) {
		const struct bfs_bkey *op = (const struct bfs_bkey *)(l.buf + off);

		ret = bfs_btree_insert_key(c, id, op, jseq);
		if (!ret) {
			*applied_any = true;
			ret = emit(ctx, id, op);
		}
		off += bfs_bkey_u64s(op);
	}
	bfs_free(l.buf);
	return ret;
}
