// SPDX-License-Identifier: MIT
/*
 * Structural changes, all copy-on-write: a full node is compacted (its live
 * keys written to one new node) or split in two new nodes; sparse siblings
 * are merged into one new node.  The parent's pointers change in the same
 * commit, under the parent's write lock, so readers (who descend with lock
 * coupling) see either the old or the new nodes, never a mix.  The old
 * node's slot is only reused once no on-disk root can reach it (alloc.h).
 *
 * Called by the single writer (commit_lock held).  Every function allocates
 * all new nodes before changing anything, so -ENOSPC leaves the tree as it
 * was.
 */
#include <stdio.h>

#include "internal.h"

u64 bfs_new_node_seq(struct bfs_core *c)
{
	/* splitmix64 over a counter seeded randomly at open: unique and unguessable enough */
	u64 z = __atomic_add_fetch(&c->node_seq_next, UINT64_C(0x9E3779B97F4A7C15), __ATOMIC_RELAXED);

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return (z ^ (z >> 31)) | 1;
}

static u32 usable_bytes(struct bfs_core *c)
{
	return c->node_size - (u32)sizeof(struct bfs_btree_node) - (u32)sizeof(struct bfs_bset);
}

/* live keys of @n in order */
static struct bfs_bkey **live_keys(struct btree_node *n, u32 *nr, u64 *bytes)
{
	struct bfs_bkey **arr = bfs_malloc((n->nr + 1) * sizeof(*arr));
	u32 i, cnt = 0;
	u64 b = 0;

	if (!arr)
		return NULL;
	for (i = 0; i < n->nr; i++) {
		if (bfs_bkey_deleted(node_key(n, i)))
			continue;
		arr[cnt++] = node_key(n, i);
		b += bfs_bkey_bytes(node_key(n, i));
	}
	*nr = cnt;
	*bytes = b;
	return arr;
}

/* the old node is out of the tree: no new readers can reach it */
static void retire(struct bfs_core *c, struct btree_node *n)
{
	bfs_write_lock(&n->lock);
	n->dead = true;
	bfs_node_changed(n);
	bfs_rwlock_unlock(&n->lock);
	bfs_cache_kill(c, n);
}

static void set_root(struct bfs_core *c, u8 id, struct btree_node *nr)
{
	struct btree_root *r = &c->trees[id];
	struct btree_node *old;

	bfs_write_lock(&r->root_lock);
	old = r->node;
	r->node = nr;		/* takes over the caller's reference */
	bfs_rwlock_unlock(&r->root_lock);
	bfs_cache_put(c, old);
}

static void discard_new(struct bfs_core *c, struct btree_node *n)
{
	if (!n)
		return;
	retire(c, n);
	bfs_cache_put(c, n);
}

/* insert pointers to @nn (and a whiteout at @del if given) into @parent */
static void parent_update(struct bfs_core *c, struct btree_node *parent,
			  struct btree_node **nn, unsigned cnt, const struct bfs_bpos *del)
{
	u64 buf[BFS_BTREE_PTR_KEY_U64S];
	struct bfs_bkey *k = (struct bfs_bkey *)buf;
	unsigned i;

	bfs_write_lock(&parent->lock);
	if (del) {
		struct bfs_bkey w;

		bfs_bkey_init(&w, BFS_KEY_DELETED, *del, 0);
		bfs_node_insert(c, parent, &w, parent->journal_seq);
	}
	for (i = 0; i < cnt; i++) {
		bfs_node_ptr(nn[i], k);
		bfs_node_insert(c, parent, k, parent->journal_seq);
	}
	bfs_rwlock_unlock(&parent->lock);
	bfs_cache_set_dirty(c, parent, true);
}

static int parent_prepare(struct bfs_core *c, struct btree_node *parent, unsigned nkeys)
{
	int ret;

	/* keys[] may be reallocated: readers must not be looking */
	bfs_write_lock(&parent->lock);
	ret = bfs_node_reserve(parent, nkeys) ?:
		bfs_node_reserve_pending(parent, nkeys * BFS_BTREE_PTR_KEY_U64S * 8);
	bfs_rwlock_unlock(&parent->lock);
	return ret;
}

static int rewrite(struct bfs_core *c, u8 id, struct btree_path *p, unsigned level,
		   const struct bfs_bpos *insert, bool move)
{
	struct btree_node *n = p->n[level], *parent = NULL, *nn[2] = { NULL, NULL }, *root = NULL;
	struct bfs_bkey **keys;
	u32 nr, split = 0, i;
	u64 bytes, acc = 0;
	unsigned cnt;
	int ret;

	keys = live_keys(n, &nr, &bytes);
	if (!keys)
		return -ENOMEM;
	if (move && bytes > usable_bytes(c))
		move = false;	/* cannot happen for a node that was written; split if it does */
	cnt = move || bytes * 3 <= (u64)usable_bytes(c) * 2 || nr < 2 ? 1 : 2;

	if (level + 1 < p->depth) {
		parent = p->n[level + 1];
		if (!bfs_node_fits(c, parent, cnt * BFS_BTREE_PTR_KEY_U64S * 8)) {
			/* make room above first; the path is stale afterwards */
			ret = bfs_btree_node_rewrite(c, id, p, level + 1, NULL);
			bfs_free(keys);
			return ret ?: -EAGAIN;
		}
		ret = parent_prepare(c, parent, cnt);
		if (ret)
			goto out;
	} else if (cnt == 2 && n->level + 1 >= BFS_BTREE_MAX_DEPTH) {
		ret = -ENOSPC;
		goto out;
	}

	if (cnt == 2) {
		/*
		 * Appending past the last key (sequential inserts): keep the left
		 * node nearly full instead of leaving a trail of half-empty nodes
		 * and copying half a node on every split.
		 */
		bool append = insert && nr && bfs_bpos_cmp(*insert, bfs_bkey_pos(keys[nr - 1])) > 0;
		u64 want = append ? bytes - bytes / 8 : bytes / 2;

		for (split = 0; split + 1 < nr; split++) {
			acc += bfs_bkey_bytes(keys[split]);
			if (acc >= want)
				break;
		}
		ret = bfs_cache_new_node(c, id, n->level, n->min, bfs_bkey_pos(keys[split]), &nn[0]);
		if (!ret)
			ret = bfs_cache_new_node(c, id, n->level,
						 bfs_bpos_successor(bfs_bkey_pos(keys[split])), n->max, &nn[1]);
		if (!ret)
			ret = bfs_node_fill(c, nn[0], keys, split + 1);
		if (!ret)
			ret = bfs_node_fill(c, nn[1], keys + split + 1, nr - split - 1);
	} else {
		ret = bfs_cache_new_node(c, id, n->level, n->min, n->max, &nn[0]);
		if (!ret)
			ret = bfs_node_fill(c, nn[0], keys, nr);
	}
	if (!ret && !parent && cnt == 2) {
		u64 b0[BFS_BTREE_PTR_KEY_U64S], b1[BFS_BTREE_PTR_KEY_U64S];
		struct bfs_bkey *pk[2] = { (struct bfs_bkey *)b0, (struct bfs_bkey *)b1 };

		ret = bfs_cache_new_node(c, id, n->level + 1, BFS_POS_MIN, BFS_POS_MAX, &root);
		if (!ret) {
			bfs_node_ptr(nn[0], pk[0]);
			bfs_node_ptr(nn[1], pk[1]);
			ret = bfs_node_fill(c, root, pk, 2);
		}
	}
	if (ret) {
		discard_new(c, nn[0]);
		discard_new(c, nn[1]);
		discard_new(c, root);
		goto out;
	}
	for (i = 0; i < cnt; i++) {
		nn[i]->journal_seq = n->journal_seq;
		bfs_cache_account(c, nn[i]);
	}

	/* publish */
	if (parent) {
		parent_update(c, parent, nn, cnt, NULL);
	} else if (root) {
		bfs_cache_account(c, root);
		set_root(c, id, root);
	} else {
		bfs_cache_ref(c, nn[0]);
		set_root(c, id, nn[0]);
	}
	retire(c, n);
	for (i = 0; i < cnt; i++)
		bfs_cache_put(c, nn[i]);
	if (cnt == 2)
		STAT_INC(c, splits);
	else
		STAT_INC(c, compactions);
out:
	bfs_free(keys);
	return ret;
}

int bfs_btree_node_rewrite(struct bfs_core *c, u8 id, struct btree_path *p, unsigned level,
			   const struct bfs_bpos *insert)
{
	return rewrite(c, id, p, level, insert, false);
}

int bfs_btree_node_move(struct bfs_core *c, u8 id, struct btree_path *p, unsigned level)
{
	return rewrite(c, id, p, level, NULL, true);
}

static u32 live_children(struct btree_node *n)
{
	u32 i, cnt = 0;

	for (i = 0; i < n->nr; i++)
		cnt += !bfs_bkey_deleted(node_key(n, i));
	return cnt;
}

int bfs_btree_merge_siblings(struct bfs_core *c, u8 id, struct btree_path *p,
			     struct btree_node *left, struct btree_node *right)
{
	struct btree_node *parent = p->n[left->level + 1], *m = NULL;
	struct bfs_bkey **lk, **rk, **all;
	u32 lnr, rnr;
	u64 lb, rb;
	int ret;

	if (!bfs_node_fits(c, parent, (BFS_BTREE_PTR_KEY_U64S + BFS_BKEY_U64S) * 8))
		return 0;	/* merging is an optimisation: skip rather than split the parent */
	lk = live_keys(left, &lnr, &lb);
	rk = live_keys(right, &rnr, &rb);
	all = bfs_malloc((lnr + rnr + 1) * sizeof(*all));
	ret = lk && rk && all ? 0 : -ENOMEM;
	if (!ret)
		ret = parent_prepare(c, parent, 2);
	if (!ret)
		ret = bfs_cache_new_node(c, id, left->level, left->min, right->max, &m);
	if (!ret) {
		memcpy(all, lk, lnr * sizeof(*all));
		memcpy(all + lnr, rk, rnr * sizeof(*all));
		ret = bfs_node_fill(c, m, all, lnr + rnr);
		if (ret)
			discard_new(c, m);
	}
	if (!ret) {
		m->journal_seq = BFS_MAX(left->journal_seq, right->journal_seq);
		bfs_cache_account(c, m);
		parent_update(c, parent, &m, 1, &left->max);
		retire(c, left);
		retire(c, right);
		STAT_INC(c, merges);
		/* a root with one child left is replaced by that child */
		if (left->level + 2u == p->depth && live_children(parent) == 1) {
			bfs_cache_ref(c, m);
			set_root(c, id, m);
			retire(c, parent);
		}
		bfs_cache_put(c, m);
	}
	bfs_free(lk);
	bfs_free(rk);
	bfs_free(all);
	return ret ?: 1;
}
