// SPDX-License-Identifier: MIT
/*
 * Whole-tree tools: walking every node (dump-btree, fsck, the crash
 * harness), verifying a tree and collecting statistics.  A walk holds
 * commit_lock so the tree cannot change under it; readers go on.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static void node_info(struct bfs_core *c, struct btree_node *n, struct bfs_btree_node_info *ni)
{
	struct node_slot s = { 0, 0 };
	u32 i;

	memset(ni, 0, sizeof(*ni));
	ni->btree_id = n->btree_id;
	ni->level = n->level;
	ni->offset = n->offset;
	ni->seq = n->seq;
	ni->min_key = n->min;
	ni->max_key = n->max;
	ni->nr_bsets = n->nr_bsets;
	ni->written = n->written;
	ni->node_size = c->node_size;
	/* by slot: node_key() would search the chunk starts for every key */
	for (i = 0; i < n->nr; i++, node_slot_next(n, &s))
		ni->nr_keys += !bfs_bkey_deleted(node_slot_key(n, s));
	ni->live_bytes = n->live_bytes;
	ni->dirty = n->dirty;
}

/* read the node behind @ptr privately, to get the reason it is unreadable */
void bfs_node_explain(struct bfs_core *c, u8 id, const struct bfs_bkey *ptr, int ret,
		      struct bfs_btree_node_info *ni)
{
	const struct bfs_btree_ptr *p = bkey_ptr_val(ptr);
	struct btree_node *n = bfs_node_alloc(c);

	memset(ni, 0, sizeof(*ni));
	ni->btree_id = id;
	ni->level = p->level;
	ni->offset = le64_to_cpu(p->offset);
	ni->seq = le64_to_cpu(p->seq);
	ni->min_key = bfs_bpos_from_disk(&p->min_key);
	ni->max_key = bfs_bkey_pos(ptr);
	ni->node_size = c->node_size;
	ni->status = ret;
	ni->code = ret == -EUCLEAN ? PR_BTREE_NODE_NOT_A_NODE : PR_BTREE_NODE_READ_ERROR;
	snprintf(ni->err, sizeof(ni->err), "btree %s level %u node at %llu: %s",
		 bfs_btree_id_name(id), p->level, (unsigned long long)ni->offset, strerror(-ret));
	if (!n)
		return;
	n->offset = ni->offset;
	n->seq = ni->seq;
	n->btree_id = id;
	n->level = p->level;
	n->min = ni->min_key;
	n->max = ni->max_key;
	if (!bfs_alloc_valid_offset(c->alloc, n->offset)) {
		ni->code = PR_BTREE_PTR_OUTSIDE;
		snprintf(ni->err, sizeof(ni->err), "btree %s: child pointer to %llu is outside the metadata area",
			 bfs_btree_id_name(id), (unsigned long long)n->offset);
	} else if (!bfs_dev_read(c->dev, n->offset, n->data, c->node_size) &&
		   bfs_node_parse(c, n, ni->err, sizeof(ni->err)) && n->parse_code < PR_NR) {
		ni->code = n->parse_code;
	}
	bfs_node_free(c, n);
}

struct walk {
	struct bfs_core *c;
	u8	id;
	int	(*node_fn)(void *ctx, const struct bfs_btree_node_info *ni);
	int	(*key_fn)(void *ctx, const struct bfs_btree_node_info *ni, const struct bfs_bkey *k);
	void	*ctx;
};

/* children whose reads are hinted ahead of the one being walked */
#define WALK_AHEAD	8

/* the child at @s is read soon: let the device fetch it meanwhile */
static void hint_child(struct walk *w, struct btree_node *n, struct node_slot s)
{
	const struct bfs_bkey *k = node_slot_key(n, s);

	if (!bfs_bkey_deleted(k) && k->type == BFS_KEY_BTREE_PTR)
		bfs_dev_will_read(w->c->dev, le64_to_cpu(bkey_ptr_val(k)->offset), w->c->node_size);
}

static int walk_node(struct walk *w, struct btree_node *n)
{
	struct bfs_btree_node_info ni;
	struct node_slot s = { 0, 0 }, ahead = { 0, 0 };
	u32 i, next = 0;
	int ret = 0;

	node_info(w->c, n, &ni);
	if (w->node_fn)
		ret = w->node_fn(w->ctx, &ni);
	/* the walk holds the commit lock: the view does not change under the slots */
	for (i = 0; i < n->nr && !ret; i++, node_slot_next(n, &s)) {
		const struct bfs_bkey *k = node_slot_key(n, s);
		struct btree_node *child;
		int err;

		/* a cold cache reads the next children while this one is checked */
		for (; n->level && next < n->nr && next <= i + WALK_AHEAD;
		     next++, node_slot_next(n, &ahead))
			hint_child(w, n, ahead);
		if (bfs_bkey_deleted(k))
			continue;
		if (w->key_fn)
			ret = w->key_fn(w->ctx, &ni, k);
		if (ret || !n->level)
			continue;
		bfs_btree_quiet = true;
		err = bfs_cache_get(w->c, w->id, k, &child);
		bfs_btree_quiet = false;
		if (err) {
			struct bfs_btree_node_info bad;

			bfs_node_explain(w->c, w->id, k, err, &bad);
			if (w->node_fn)
				ret = w->node_fn(w->ctx, &bad);
			continue;
		}
		ret = walk_node(w, child);
		/* the walk does not come back to a leaf it has checked */
		bfs_cache_put_passed(w->c, child);
	}
	return ret;
}

int bfs_btree_walk(struct bfs_core *c, enum bfs_btree_id id,
		   int (*node_fn)(void *ctx, const struct bfs_btree_node_info *ni),
		   int (*key_fn)(void *ctx, const struct bfs_btree_node_info *ni,
				 const struct bfs_bkey *k),
		   void *ctx)
{
	struct walk w = { c, (u8)id, node_fn, key_fn, ctx };
	int ret;

	if ((unsigned)id >= BFS_BTREE_NR)
		return -EINVAL;
	if (!c->trees[id].node)
		return -EUCLEAN;	/* a salvage open whose root is unreadable */
	bfs_commit_lock(c);
	ret = walk_node(&w, c->trees[id].node);
	bfs_commit_unlock(c);
	return ret;
}

/* ---- node slots ---- */

struct slot_walk {
	struct bfs_core *c;
	u8	id;
	int	(*fn)(void *ctx, u64 offset, unsigned level);
	void	*ctx;
};

static int walk_slots(struct slot_walk *w, struct btree_node *n)
{
	int ret = w->fn(w->ctx, n->offset, n->level);
	u32 i;

	for (i = 0; i < n->nr && n->level && !ret; i++) {
		const struct bfs_bkey *k = node_key(n, i);
		u64 off;
		struct btree_node *child;

		if (bfs_bkey_deleted(k))
			continue;
		off = le64_to_cpu(bkey_ptr_val(k)->offset);
		/* a leaf's slot is known from its pointer: leaves are not read */
		if (n->level == 1) {
			ret = w->fn(w->ctx, off, 0);
			continue;
		}
		bfs_btree_quiet = true;
		ret = bfs_cache_get(w->c, w->id, k, &child);
		bfs_btree_quiet = false;
		if (ret) {
			/* unreadable: its slot is still taken, what is below it is not known */
			ret = w->fn(w->ctx, off, n->level - 1u);
			continue;
		}
		ret = walk_slots(w, child);
		bfs_cache_put(w->c, child);
	}
	return ret;
}

int bfs_btree_walk_slots(struct bfs_core *c, enum bfs_btree_id id,
			 int (*fn)(void *ctx, u64 offset, unsigned level), void *ctx)
{
	struct slot_walk w = { c, (u8)id, fn, ctx };
	int ret;

	if ((unsigned)id >= BFS_BTREE_NR)
		return -EINVAL;
	if (!c->trees[id].node)
		return -EUCLEAN;
	bfs_commit_lock(c);
	ret = walk_slots(&w, c->trees[id].node);
	bfs_commit_unlock(c);
	return ret;
}

/* ---- verify ---- */

struct verify {
	struct bfs_core *c;
	u8	id;
	bfs_finding_fn fn;
	void	(*node_seen)(void *ctx);
	void	(*key_seen)(void *ctx, const struct bfs_bkey *k);
	void	*ctx;
	long	errors;
	bool	have_prev;
	struct bfs_bpos prev;		/* last leaf key */
	struct bfs_bpos next_leaf_min;	/* expected min of the next leaf */
	bool	have_leaf;
	bool	at_end;			/* a leaf ending at POS_MAX was seen */
};

static void __attribute__((format(printf, 5, 6)))
finding(struct verify *v, unsigned code, u64 node, const struct bfs_bpos *pos, const char *fmt, ...)
{
	struct bfs_finding f = {
		.code = (enum bfs_problem_code)code,
		.loc = { .btree = v->id, .node = node, .has_pos = pos != NULL },
	};
	va_list ap;

	if (pos)
		f.loc.pos = *pos;
	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	v->errors++;
	if (v->fn)
		v->fn(v->ctx, &f);
}

static int verify_node(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct verify *v = ctx;
	char a[64], b[64];

	if (v->node_seen)
		v->node_seen(v->ctx);
	if (ni->status) {
		finding(v, ni->code ? ni->code : PR_BTREE_NODE_READ_ERROR, ni->offset, &ni->min_key,
			"%s", ni->err);
		/* its range is known from the pointer: don't blame the next leaf too */
		v->have_leaf = true;
		v->at_end = bfs_bpos_eq(ni->max_key, BFS_POS_MAX);
		v->next_leaf_min = bfs_bpos_successor(ni->max_key);
		v->prev = ni->max_key;
		v->have_prev = true;
	} else if (!ni->level) {
		if (v->at_end || (v->have_leaf ? !bfs_bpos_eq(ni->min_key, v->next_leaf_min) :
				  !bfs_bpos_eq(ni->min_key, BFS_POS_MIN)))
			finding(v, PR_BTREE_TOPOLOGY, ni->offset, &ni->min_key,
				"btree %s leaf at %llu starts at %s, expected %s",
				bfs_btree_id_name(ni->btree_id), (unsigned long long)ni->offset,
				bfs_node_pos_text(ni->min_key, a, sizeof(a)),
				bfs_node_pos_text(v->next_leaf_min, b, sizeof(b)));
		v->have_leaf = true;
		v->at_end = bfs_bpos_eq(ni->max_key, BFS_POS_MAX);
		v->next_leaf_min = bfs_bpos_successor(ni->max_key);
	}
	return 0;
}

static int verify_key(void *ctx, const struct bfs_btree_node_info *ni, const struct bfs_bkey *k)
{
	struct verify *v = ctx;
	struct bfs_bpos pos = bfs_bkey_pos(k);
	char kbuf[200];

	if (ni->level)
		return 0;
	if (bfs_bpos_cmp(pos, ni->min_key) < 0 || bfs_bpos_cmp(pos, ni->max_key) > 0 ||
	    (v->have_prev && bfs_bpos_cmp(v->prev, pos) >= 0)) {
		bfs_bkey_to_text(kbuf, sizeof(kbuf), k);
		finding(v, PR_BTREE_KEY_ORDER, ni->offset, &pos,
			"btree %s leaf at %llu: key out of order or outside the node (key %s)",
			bfs_btree_id_name(ni->btree_id), (unsigned long long)ni->offset, kbuf);
	} else if (bfs_btree_is_extents(ni->btree_id) && v->have_prev && v->prev.inode == pos.inode &&
		   v->prev.snapshot == pos.snapshot && bfs_bkey_start(k) < v->prev.offset) {
		bfs_bkey_to_text(kbuf, sizeof(kbuf), k);
		finding(v, PR_BTREE_EXTENT_OVERLAP, ni->offset, &pos,
			"btree %s leaf at %llu: extent overlaps the previous one (key %s)",
			bfs_btree_id_name(ni->btree_id), (unsigned long long)ni->offset, kbuf);
	}
	v->prev = pos;
	v->have_prev = true;
	if (v->key_seen)
		v->key_seen(v->ctx, k);
	return 0;
}

long bfs_btree_check(struct bfs_core *c, enum bfs_btree_id id, bfs_finding_fn fn, void *ctx)
{
	return bfs_btree_check_nodes(c, id, fn, NULL, NULL, ctx);
}

long bfs_btree_check_nodes(struct bfs_core *c, enum bfs_btree_id id, bfs_finding_fn fn,
			   void (*node_seen)(void *ctx),
			   void (*key_seen)(void *ctx, const struct bfs_bkey *k), void *ctx)
{
	struct verify v = { .c = c, .id = (u8)id, .fn = fn, .node_seen = node_seen,
			    .key_seen = key_seen, .ctx = ctx };
	int ret;

	if ((unsigned)id >= BFS_BTREE_NR)
		return -EINVAL;
	if (!c->trees[id].node) {
		/* the open recorded why (bad pointer, unreadable or malformed root) */
		unsigned code = PR_BTREE_ROOT_BAD;
		const char *what = NULL;

		bfs_core_btree_damage(c, id, &code, &what);
		if (what)
			finding(&v, code, le64_to_cpu(c->trees[id].disk.offset), NULL, "%s", what);
		else
			finding(&v, PR_BTREE_ROOT_BAD, le64_to_cpu(c->trees[id].disk.offset), NULL,
				"btree %s: the root node cannot be read", bfs_btree_id_name(id));
		return v.errors;
	}
	ret = bfs_btree_walk(c, id, verify_node, verify_key, &v);
	if (ret)
		return ret;
	if (!v.at_end)
		finding(&v, PR_BTREE_TOPOLOGY, 0, NULL,
			"btree %s: leaves do not reach the end of the key space", bfs_btree_id_name(id));
	return v.errors;
}

static void log_finding(void *ctx, const struct bfs_finding *f)
{
	bfs_err("verify: %s", f->detail);
}

long bfs_btree_verify(struct bfs_core *c, enum bfs_btree_id id)
{
	return bfs_btree_check(c, id, log_finding, NULL);
}

/* ---- bsets of a raw node (debugging tools) ---- */

int bfs_btree_node_bsets(struct bfs_core *c, const void *buf,
			 int (*fn)(void *ctx, const struct bfs_bset_info *b), void *ctx)
{
	return bfs_node_bsets_raw(buf, c->node_size, c->block_size, c->csum_type, fn, ctx);
}

/* ---- stats ---- */

static int stats_node(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct bfs_btree_stats *s = ctx;

	if (ni->level < BFS_BTREE_MAX_DEPTH)
		s->nodes[ni->level]++;
	s->depth = BFS_MAX(s->depth, ni->level + 1u);
	s->node_bytes += ni->node_size;
	if (!ni->level && !ni->status) {
		s->keys += ni->nr_keys;
		s->key_bytes += ni->live_bytes;
	}
	return 0;
}

int bfs_btree_get_stats(struct bfs_core *c, enum bfs_btree_id id, struct bfs_btree_stats *s)
{
	memset(s, 0, sizeof(*s));
	return bfs_btree_walk(c, id, stats_node, NULL, s);
}

int bfs_btree_node_check(struct bfs_core *c, const void *buf, u64 offset,
			 const struct bfs_bkey *ptr, char *err)
{
	const struct bfs_btree_node *h = buf;
	struct btree_node *n = bfs_node_alloc(c);
	int ret;

	if (!n)
		return -ENOMEM;
	memcpy(n->data, buf, c->node_size);
	n->offset = offset;
	if (ptr && ptr->type == BFS_KEY_BTREE_PTR) {
		const struct bfs_btree_ptr *p = bkey_ptr_val(ptr);

		n->seq = le64_to_cpu(p->seq);
		n->btree_id = p->btree_id;
		n->level = p->level;
		n->min = bfs_bpos_from_disk(&p->min_key);
		n->max = bfs_bkey_pos(ptr);
	} else {
		/* no pointer: check the node against its own header */
		n->seq = le64_to_cpu(h->seq);
		n->btree_id = h->btree_id;
		n->level = h->level;
		n->min = bfs_bpos_from_disk(&h->min_key);
		n->max = bfs_bpos_from_disk(&h->max_key);
	}
	ret = bfs_node_parse(c, n, err, BFS_ERR_LEN);
	bfs_node_free(c, n);
	return ret;
}
