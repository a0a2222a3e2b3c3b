// SPDX-License-Identifier: MIT
/*
 * Rebuilding a damaged btree (see btree_repair.h).
 *
 *  1. sources: the readable leaves of the tree as it stands; the ranges they
 *     leave uncovered ("holes") are painted with scanned leaves of the same
 *     btree, newest first (highest bset journal seq; ties: more bsets, then
 *     device order), each taking only what is still uncovered;
 *  2. what stays uncovered is lost and reported;
 *  3. with @apply, a new empty root replaces the tree and every source's
 *     keys are inserted in key order (the normal insert path splits nodes),
 *     then the journal keys that replay could not apply are applied on top.
 *
 * New nodes are allocated from slots nothing found on the device uses
 * (bfs_core_protect_*), so until the caller's checkpoint records the new
 * root the old tree and every scanned node are intact.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <bfs/btree_repair.h>

#include "internal.h"

struct range {
	struct bfs_bpos lo, hi;
};

struct source {
	struct bfs_bpos lo, hi;
	long	cand;			/* index into cands, or -1: a readable leaf */
	u64	offset, seq;		/* the leaf (cand == -1) */
};

struct rebuild {
	struct bfs_core *c;
	u8	id;
	bfs_finding_fn fn;
	void	*ctx;
	struct bfs_rebuild_stats *st;
	struct source *src;
	size_t	nr_src, cap_src;
	struct range *holes;
	size_t	nr_holes, cap_holes;
	/* nodes the walk found unreadable: their check already said why */
	u64	*bad;
	size_t	nr_bad, cap_bad;
	/* the builder */
	bool	apply;
	u64	jseq;
	bool	have_last;
	struct bfs_bpos last;		/* last key inserted */
};

static void __attribute__((format(printf, 5, 6)))
report(struct rebuild *r, unsigned code, u64 node, const struct bfs_bpos *pos, const char *fmt, ...)
{
	struct bfs_finding f = {
		.code = (enum bfs_problem_code)code,
		.loc = { .btree = r->id, .node = node, .has_pos = pos != NULL },
	};
	va_list ap;

	if (!r->fn)
		return;
	if (pos)
		f.loc.pos = *pos;
	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	r->fn(r->ctx, &f);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	void *n;
	size_t c;

	if (need <= *cap)
		return 0;
	c = BFS_MAX(need, *cap * 2 + 16);
	n = bfs_realloc(*arr, c * elem);
	if (!n)
		return -ENOMEM;
	*arr = n;
	*cap = c;
	return 0;
}

static int add_source(struct rebuild *r, struct source s)
{
	int ret = grow((void **)&r->src, &r->cap_src, r->nr_src + 1, sizeof(s));

	if (!ret)
		r->src[r->nr_src++] = s;
	return ret;
}

static int add_hole(struct rebuild *r, struct bfs_bpos lo, struct bfs_bpos hi)
{
	int ret = grow((void **)&r->holes, &r->cap_holes, r->nr_holes + 1, sizeof(struct range));

	if (!ret)
		r->holes[r->nr_holes++] = (struct range){ lo, hi };
	return ret;
}

/* ---- 1. readable leaves and the holes between them ---- */

struct leaves {
	struct rebuild *r;
	struct bfs_bpos expect;		/* start of the next uncovered range */
	bool	done;			/* a leaf reached POS_MAX */
	int	err;
};

static int leaf_found(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct leaves *l = ctx;
	struct rebuild *r = l->r;
	int ret;

	if (ni->status) {
		ret = grow((void **)&r->bad, &r->cap_bad, r->nr_bad + 1, sizeof(u64));
		if (!ret)
			r->bad[r->nr_bad++] = ni->offset;
		return ret;
	}
	if (ni->level)
		return 0;
	/* readable leaves come in key order and never overlap (their parents checked) */
	if (l->done || bfs_bpos_cmp(ni->min_key, l->expect) < 0)
		return 0;
	if (bfs_bpos_cmp(ni->min_key, l->expect) > 0) {
		ret = add_hole(r, l->expect, bfs_bpos_predecessor(ni->min_key));
		if (ret)
			return ret;
	}
	ret = add_source(r, (struct source){ ni->min_key, ni->max_key, -1, ni->offset, ni->seq });
	if (ret)
		return ret;
	r->st->good_leaves++;
	if (bfs_bpos_eq(ni->max_key, BFS_POS_MAX))
		l->done = true;
	else
		l->expect = bfs_bpos_successor(ni->max_key);
	return 0;
}

static int find_leaves(struct rebuild *r)
{
	struct leaves l = { r, BFS_POS_MIN, false, 0 };
	int ret = 0;

	if (r->c->trees[r->id].node) {
		bool quiet = bfs_btree_quiet;

		bfs_btree_quiet = true;
		ret = bfs_btree_walk(r->c, r->id, leaf_found, NULL, &l);
		bfs_btree_quiet = quiet;
		if (ret)
			return ret;
	}
	if (!l.done)
		ret = add_hole(r, l.expect, BFS_POS_MAX);
	return ret;
}

/* ---- painting the holes with scanned leaves ---- */

static const struct bfs_scanned_node *cand_sort_base;

static int cmp_cand(const void *a, const void *b)
{
	const struct bfs_scanned_node *x = &cand_sort_base[*(const long *)a];
	const struct bfs_scanned_node *y = &cand_sort_base[*(const long *)b];

	if (x->journal_seq != y->journal_seq)
		return x->journal_seq > y->journal_seq ? -1 : 1;
	if (x->nr_bsets != y->nr_bsets)
		return x->nr_bsets > y->nr_bsets ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static bool is_source_leaf(struct rebuild *r, const struct bfs_scanned_node *n)
{
	size_t i;

	for (i = 0; i < r->nr_src; i++)
		if (r->src[i].cand < 0 && r->src[i].offset == n->offset && r->src[i].seq == n->seq)
			return true;
	return false;
}

/* give the uncovered parts of [lo, hi] to candidate @ci */
static int paint(struct rebuild *r, long ci, struct bfs_bpos lo, struct bfs_bpos hi)
{
	size_t i;
	int ret;

	for (i = 0; i < r->nr_holes; ) {
		struct range h = r->holes[i];
		struct bfs_bpos a, b;

		if (bfs_bpos_cmp(h.hi, lo) < 0 || bfs_bpos_cmp(h.lo, hi) > 0) {
			i++;
			continue;
		}
		a = bfs_bpos_cmp(h.lo, lo) > 0 ? h.lo : lo;
		b = bfs_bpos_cmp(h.hi, hi) < 0 ? h.hi : hi;
		ret = add_source(r, (struct source){ a, b, ci, 0, 0 });
		if (ret)
			return ret;
		r->st->scanned_pieces++;
		/* the hole loses [a, b]: what is left of it on either side stays */
		r->holes[i] = r->holes[--r->nr_holes];
		if (bfs_bpos_cmp(h.lo, a) < 0) {
			ret = add_hole(r, h.lo, bfs_bpos_predecessor(a));
			if (ret)
				return ret;
		}
		if (bfs_bpos_cmp(b, h.hi) < 0) {
			ret = add_hole(r, bfs_bpos_successor(b), h.hi);
			if (ret)
				return ret;
		}
		/* holes moved around: start over (their number stays small) */
		i = 0;
	}
	return 0;
}

static int fill_holes(struct rebuild *r, const struct bfs_scanned_node *cands, size_t nr)
{
	long *order;
	size_t i, n = 0;
	int ret = 0;

	if (!r->nr_holes || !nr)
		return 0;
	order = bfs_malloc(nr * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		const struct bfs_scanned_node *c = &cands[i];

		if (c->btree_id == r->id && !c->level && c->header_ok && c->nr_bsets &&
		    !is_source_leaf(r, c))
			order[n++] = (long)i;
	}
	cand_sort_base = cands;
	qsort(order, n, sizeof(*order), cmp_cand);
	for (i = 0; i < n && r->nr_holes && !ret; i++)
		ret = paint(r, order[i], cands[order[i]].min_key, cands[order[i]].max_key);
	bfs_free(order);
	return ret;
}

/* one finding per run of adjacent ranges restored from scanned nodes */
static void report_scanned(struct rebuild *r, const struct bfs_scanned_node *cands)
{
	size_t i = 0, j;

	while (i < r->nr_src) {
		u64 lo_seq, hi_seq;
		char a[64], b[64];

		if (r->src[i].cand < 0) {
			i++;
			continue;
		}
		lo_seq = hi_seq = cands[r->src[i].cand].journal_seq;
		for (j = i + 1; j < r->nr_src && r->src[j].cand >= 0 &&
		     bfs_bpos_eq(r->src[j].lo, bfs_bpos_successor(r->src[j - 1].hi)); j++) {
			lo_seq = BFS_MIN(lo_seq, cands[r->src[j].cand].journal_seq);
			hi_seq = BFS_MAX(hi_seq, cands[r->src[j].cand].journal_seq);
		}
		if (j - i == 1)
			report(r, PR_BTREE_RANGE_FROM_SCAN, cands[r->src[i].cand].offset,
			       &r->src[i].lo, "btree %s: keys %s..%s come from the node found at "
			       "%llu (journal seq %llu)", bfs_btree_id_name(r->id),
			       bfs_node_pos_text(r->src[i].lo, a, sizeof(a)),
			       bfs_node_pos_text(r->src[i].hi, b, sizeof(b)),
			       (unsigned long long)cands[r->src[i].cand].offset,
			       (unsigned long long)lo_seq);
		else
			report(r, PR_BTREE_RANGE_FROM_SCAN, cands[r->src[i].cand].offset,
			       &r->src[i].lo, "btree %s: keys %s..%s come from %zu nodes found on "
			       "the device (journal seq %llu..%llu)", bfs_btree_id_name(r->id),
			       bfs_node_pos_text(r->src[i].lo, a, sizeof(a)),
			       bfs_node_pos_text(r->src[j - 1].hi, b, sizeof(b)), j - i,
			       (unsigned long long)lo_seq, (unsigned long long)hi_seq);
		i = j;
	}
}

static int cmp_source(const void *a, const void *b)
{
	return bfs_bpos_cmp(((const struct source *)a)->lo, ((const struct source *)b)->lo);
}

static int cmp_range(const void *a, const void *b)
{
	return bfs_bpos_cmp(((const struct range *)a)->lo, ((const struct range *)b)->lo);
}

/* ---- 3. the new tree ---- */

static int emit(struct rebuild *r, const struct bfs_bkey *k, u64 node)
{
	struct bfs_bpos pos = bfs_bkey_pos(k);
	char kbuf[200];

	if (bfs_bkey_deleted(k))
		return 0;
	if (r->have_last && bfs_bpos_cmp(pos, r->last) <= 0) {
		bfs_bkey_to_text(kbuf, sizeof(kbuf), k);
		report(r, PR_BTREE_KEY_ORDER, node, &pos,
		       "btree %s: key does not follow the key before it: dropped (key %s)",
		       bfs_btree_id_name(r->id), kbuf);
		r->st->dropped_keys++;
		return 0;
	}
	if (bfs_btree_is_extents(r->id) && r->have_last && r->last.inode == pos.inode &&
	    r->last.snapshot == pos.snapshot && bfs_bkey_start(k) < r->last.offset) {
		bfs_bkey_to_text(kbuf, sizeof(kbuf), k);
		report(r, PR_BTREE_EXTENT_OVERLAP, node, &pos,
		       "btree %s: extent overlaps the one before it: dropped, the range becomes a "
		       "hole (key %s)", bfs_btree_id_name(r->id), kbuf);
		r->st->dropped_keys++;
		return 0;
	}
	r->last = pos;
	r->have_last = true;
	r->st->keys++;
	return r->apply ? bfs_btree_insert_key(r->c, r->id, k, r->jseq) : 0;
}

static bool in_range(const struct bfs_bkey *k, const struct source *s)
{
	struct bfs_bpos p = bfs_bkey_pos(k);

	return bfs_bpos_cmp(p, s->lo) >= 0 && bfs_bpos_cmp(p, s->hi) <= 0;
}

static int emit_leaf(struct rebuild *r, const struct source *s)
{
	u64 buf[BFS_BTREE_PTR_KEY_U64S];
	struct bfs_bkey *pk = (struct bfs_bkey *)buf;
	struct bfs_btree_ptr *p = (struct bfs_btree_ptr *)pk->v;
	struct btree_node *n;
	u32 i;
	int ret;

	bfs_bkey_init(pk, BFS_KEY_BTREE_PTR, s->hi, BFS_BTREE_PTR_VAL_U64S);
	memset(p, 0, sizeof(*p));
	p->offset = cpu_to_le64(s->offset);
	p->seq = cpu_to_le64(s->seq);
	p->min_key = bfs_bpos_to_disk(s->lo);
	p->level = 0;
	p->btree_id = r->id;
	ret = bfs_cache_get(r->c, r->id, pk, &n);
	if (ret)
		return ret;
	for (i = 0; i < n->nr && !ret; i++)
		ret = emit(r, node_key(n, i), s->offset);
	bfs_cache_put(r->c, n);
	return ret;
}

static bool walk_found_bad(const struct rebuild *r, u64 offset)
{
	size_t i;

	for (i = 0; i < r->nr_bad; i++)
		if (r->bad[i] == offset)
			return true;
	return false;
}

static int emit_scanned(struct rebuild *r, const struct source *s,
			const struct bfs_scanned_node *cn, bool first_use, u8 *buf)
{
	struct bfs_node_scan_geom g = {
		.block_size = r->c->block_size, .node_size = r->c->node_size,
		.csum_type = r->c->csum_type, .node_id = r->c->node_id,
	};
	struct bfs_salvaged sv;
	u32 i;
	int ret;

	ret = bfs_dev_read(r->c->dev, cn->offset, buf, r->c->node_size);
	if (ret)
		return ret;
	/*
	 * what the node itself loses is said once, however many pieces it
	 * fills, and not again for a node the check of the tree named already
	 */
	ret = bfs_node_salvage(&g, buf, cn, first_use && !walk_found_bad(r, cn->offset) ? r->fn :
			       NULL, r->ctx, &sv);
	if (ret)
		return ret;
	r->st->dropped_keys += first_use ? sv.dropped : 0;
	for (i = 0; i < sv.nr && !ret; i++)
		if (in_range(sv.k[i], s))
			ret = emit(r, sv.k[i], cn->offset);
	bfs_salvaged_free(&sv);
	return ret;
}

static int new_root(struct rebuild *r)
{
	struct btree_root *t = &r->c->trees[r->id];
	struct btree_node *n, *old;
	int ret;

	ret = bfs_cache_new_node(r->c, r->id, 0, BFS_POS_MIN, BFS_POS_MAX, &n);
	if (ret)
		return ret;
	bfs_cache_set_dirty(r->c, n, true);
	bfs_write_lock(&t->root_lock);
	old = t->node;
	t->node = n;
	bfs_rwlock_unlock(&t->root_lock);
	if (old)
		bfs_cache_put(r->c, old);
	return 0;
}

static int apply_stash(struct rebuild *r)
{
	struct btree_root *t = &r->c->trees[r->id];
	size_t off = 0;
	int ret = 0;

	while (off < t->stash_u64s && !ret) {
		u64 seq = t->stash[off++];
		const struct bfs_bkey *k = (const void *)&t->stash[off];

		off += bfs_bkey_u64s(k);
		ret = bfs_btree_insert_key(r->c, r->id, k, seq);
		r->st->stashed_keys++;
	}
	bfs_free(t->stash);
	t->stash = NULL;
	t->stash_u64s = t->stash_cap = 0;
	return ret;
}

static int build(struct rebuild *r, const struct bfs_scanned_node *cands, size_t nr_cands)
{
	struct btree_node *old;
	bool *used = NULL;
	u8 *buf = NULL;
	size_t i;
	int ret = 0;

	if (nr_cands) {
		used = bfs_zalloc(nr_cands * sizeof(*used));
		if (!used)
			return -ENOMEM;
	}
	buf = bfs_aligned_alloc(4096, r->c->node_size);
	if (!buf) {
		bfs_free(used);
		return -ENOMEM;
	}
	/*
	 * The readable leaves are read through the cache while the new tree
	 * grows beside them: hold the old root until every source is read.
	 */
	old = r->c->trees[r->id].node;
	if (old)
		bfs_cache_ref(r->c, old);
	if (r->apply)
		ret = new_root(r);
	for (i = 0; i < r->nr_src && !ret; i++) {
		const struct source *s = &r->src[i];

		if (s->cand < 0) {
			ret = emit_leaf(r, s);
		} else {
			ret = emit_scanned(r, s, &cands[s->cand], !used[s->cand], buf);
			used[s->cand] = true;
		}
	}
	if (!ret && r->apply)
		ret = apply_stash(r);
	if (old)
		bfs_cache_put(r->c, old);
	bfs_free(buf);
	bfs_free(used);
	return ret;
}

int bfs_btree_rebuild(struct bfs_core *c, enum bfs_btree_id id,
		      const struct bfs_scanned_node *cands, size_t nr_cands, bool apply,
		      bfs_finding_fn fn, void *ctx, struct bfs_rebuild_stats *st)
{
	struct bfs_rebuild_stats dummy;
	struct rebuild r = {
		.c = c, .id = (u8)id, .fn = fn, .ctx = ctx, .st = st ? st : &dummy, .apply = apply,
	};
	size_t i;
	int ret;

	if ((unsigned)id >= BFS_BTREE_NR)
		return -EINVAL;
	if (apply && (ret = bfs_core_check_writable(c)))
		return ret;
	memset(r.st, 0, sizeof(*r.st));
	ret = find_leaves(&r);
	if (!ret)
		ret = fill_holes(&r, cands, nr_cands);
	if (ret)
		goto out;
	if (r.nr_src)	/* qsort(NULL, 0) is undefined */
		qsort(r.src, r.nr_src, sizeof(*r.src), cmp_source);
	if (r.nr_holes)
		qsort(r.holes, r.nr_holes, sizeof(*r.holes), cmp_range);
	for (i = 0; i < r.nr_holes; i++) {
		char a[64], b[64];

		report(&r, PR_BTREE_RANGE_LOST, 0, &r.holes[i].lo,
		       "btree %s: no node holds keys %s..%s any more: they are lost",
		       bfs_btree_id_name(id), bfs_node_pos_text(r.holes[i].lo, a, sizeof(a)),
		       bfs_node_pos_text(r.holes[i].hi, b, sizeof(b)));
		r.st->lost_ranges++;
	}
	report_scanned(&r, cands);
	r.jseq = c->j ? bfs_journal_cur_seq(c->j) : 0;
	if (apply)
		bfs_commit_lock(c);
	ret = build(&r, cands, nr_cands);
	if (apply) {
		if (!ret)
			c->trees[id].damaged = false;
		else
			bfs_core_set_fatal(c, ret, "btree rebuild failed");
		bfs_commit_unlock(c);
	}
out:
	bfs_free(r.src);
	bfs_free(r.holes);
	bfs_free(r.bad);
	return ret;
}

void bfs_core_protect_slot(struct bfs_core *c, u64 offset)
{
	/* already used (reachable) or not a slot at all: nothing to do either way */
	(void)bfs_alloc_mark_used(c->alloc, offset);
}

void bfs_core_protect_bucket(struct bfs_core *c, u64 bucket)
{
	u64 s;

	if (!bfs_alloc_bucket_get(c->alloc, bucket))
		return;
	/* some slots are in use already (nodes share it): take the others one by one */
	for (s = 0; s < c->bucket_size / c->node_size; s++)
		(void)bfs_alloc_mark_used(c->alloc, bucket * c->bucket_size + s * c->node_size);
}
