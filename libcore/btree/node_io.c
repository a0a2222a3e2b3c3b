// SPDX-License-Identifier: MIT
/*
 * Reading, validating and writing btree nodes.
 *
 * Every node read is checked completely before use: header magic and
 * checksum, identity against the pointer that led to it (seq, btree, level,
 * range: catches stale and misdirected nodes), every bset's checksum and
 * bounds, every key's validity, order and range.  A failure is -EUCLEAN with
 * a message naming btree, level, device offset and the key.
 */
#include <stdio.h>

#include "internal.h"

static const char *id_name(unsigned id) { return bfs_btree_id_name(id); }

/* the merged view while parsing: a flat sorted array */
struct flat {
	struct bfs_bkey **k;
	u32	nr;
};

/* merge the sorted keys of a newer bset into @f; newer wins */
static int merge_bset(struct flat *f, struct bfs_bkey **nk, u32 cnt)
{
	struct bfs_bkey **out;
	u32 i = 0, j = 0, o = 0;

	if (!cnt)
		return 0;
	out = bfs_malloc((size_t)(f->nr + cnt) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	while (i < f->nr || j < cnt) {
		int cmp = i == f->nr ? 1 : j == cnt ? -1 :
			bfs_bpos_cmp(bfs_bkey_pos(f->k[i]), bfs_bkey_pos(nk[j]));

		if (cmp < 0) {
			out[o++] = f->k[i++];
		} else {
			if (!cmp)
				i++;
			out[o++] = nk[j++];
		}
	}
	bfs_free(f->k);
	f->k = out;
	f->nr = o;
	return 0;
}

#define NFAIL(pr, ...) do { n->parse_code = PR_BTREE_##pr; snprintf(err, err_len, __VA_ARGS__); \
			     ret = -EUCLEAN; goto out; } while (0)
/* the same, naming key k (formatted only on failure: parsing is a hot path) */
#define KFAIL(pr, ...) do { bfs_bkey_to_text(kbuf, sizeof(kbuf), k); NFAIL(pr, __VA_ARGS__); } while (0)
/*
 * Without checksums a bset torn by a crash shows up as bad keys; after a
 * crash (allow_torn) such a bset that is not the node's first ends the node,
 * as a torn checksummed bset does.  Otherwise it is damage.
 */
#define TORN_OK() (!first && c->allow_torn && !c->csum_type)
#define TFAIL(pr, ...) do { if (TORN_OK()) { torn_keys = true; goto torn_bset; } NFAIL(pr, __VA_ARGS__); } while (0)
#define TKFAIL(pr, ...) do { if (TORN_OK()) { torn_keys = true; goto torn_bset; } KFAIL(pr, __VA_ARGS__); } while (0)

int bfs_node_parse(struct bfs_core *c, struct btree_node *n, char *err, size_t err_len)
{
	const struct bfs_btree_node *h = (const void *)n->data;
	bool extents = bfs_btree_is_extents(n->btree_id) && n->level == 0;
	struct bfs_bkey **nk = NULL;
	struct flat f = { NULL, 0 };
	char where[128], kbuf[160], p1[64], p2[64];
	u32 off = sizeof(*h), i;
	bool first = true;
	int ret = 0;

	snprintf(where, sizeof(where), "btree %s level %u node at %llu", id_name(n->btree_id),
		 n->level, (unsigned long long)n->offset);
	kbuf[0] = 0;
	n->parse_code = PR_NR;
	n->live_bytes = 0;
	n->nr_bsets = 0;
	n->written = 0;

	if (le64_to_cpu(h->magic) != BFS_BTREE_NODE_MAGIC)
		NFAIL(NODE_NOT_A_NODE, "%s: bad magic %016llx (not a btree node)", where,
		      (unsigned long long)le64_to_cpu(h->magic));
	if (c->csum_type && le64_to_cpu(h->csum) != bfs_csum(c->csum_type, n->data + 16, sizeof(*h) - 16))
		NFAIL(NODE_HEADER_CSUM, "%s: bad header checksum", where);
	if (c->node_id && le64_to_cpu(h->node_id) != c->node_id)
		NFAIL(NODE_FOREIGN, "%s: node id %016llx is not this filesystem's (left over from "
		      "an earlier filesystem?)", where, (unsigned long long)le64_to_cpu(h->node_id));
	if (le64_to_cpu(h->seq) != n->seq)
		NFAIL(PTR_STALE, "%s: node seq %016llx but the pointer expects %016llx (stale or misdirected node)",
		      where, (unsigned long long)le64_to_cpu(h->seq), (unsigned long long)n->seq);
	if (h->btree_id != n->btree_id || h->level != n->level)
		NFAIL(PTR_MISDIRECTED, "%s: header says btree %u level %u (misdirected pointer)", where,
		      h->btree_id, h->level);
	if (!bfs_bpos_eq(bfs_bpos_from_disk(&h->min_key), n->min) ||
	    !bfs_bpos_eq(bfs_bpos_from_disk(&h->max_key), n->max))
		NFAIL(PTR_RANGE, "%s: node range %s..%s differs from its pointer's %s..%s", where,
		      bfs_node_pos_text(bfs_bpos_from_disk(&h->min_key), p1, sizeof(p1)),
		      bfs_node_pos_text(bfs_bpos_from_disk(&h->max_key), p2, sizeof(p2)),
		      bfs_node_pos_text(n->min, kbuf, 64), bfs_node_pos_text(n->max, kbuf + 64, 64));

	while (off + sizeof(struct bfs_bset) <= c->node_size) {
		struct bfs_bset *b = bset_at(n, off);
		u64 u64s = le32_to_cpu(b->u64s);
		u64 end = off + sizeof(*b) + u64s * 8;
		struct bfs_bpos prev = BFS_POS_MIN;
		bool torn_keys = false;
		u32 cnt = 0, koff;

		/* room for a bset's keys: the first bset's became the view (below) */
		if (!nk) {
			nk = bfs_malloc((c->node_size / (BFS_BKEY_U64S * 8) + 1) * sizeof(*nk));
			if (!nk) {
				ret = -ENOMEM;
				goto out;
			}
		}

		if (le64_to_cpu(b->node_seq) != n->seq) {
			if (first)
				NFAIL(NODE_NO_BSET, "%s: no bset after the header", where);
			break;	/* left over from an older node: end of this one */
		}
		if (le32_to_cpu(b->offset) != off || end > c->node_size) {
			if (!first && c->allow_torn) {
				bfs_warn("%s: torn bset at node offset %u ignored", where, off);
				n->torn = true;
				break;
			}
			NFAIL(BSET_BAD_SIZE, "%s: bset at node offset %u has bad offset/size (u64s %llu)", where, off,
			      (unsigned long long)u64s);
		}
		if (c->csum_type &&
		    le64_to_cpu(b->csum) != bfs_csum(c->csum_type, (u8 *)b + 8, (size_t)(end - off - 8))) {
			if (!first && c->allow_torn) {
				bfs_warn("%s: torn bset at node offset %u ignored", where, off);
				n->torn = true;
				break;
			}
			NFAIL(BSET_CSUM, "%s: bad checksum of bset %u at node offset %u", where, n->nr_bsets, off);
		}

		for (koff = off + sizeof(*b); koff < end; ) {
			struct bfs_bkey *k = (struct bfs_bkey *)(n->data + koff);
			u32 ku = bfs_bkey_u64s(k);
			struct bfs_bpos pos;
			char kerr[BFS_BKEY_ERR_LEN];

			if (ku < BFS_BKEY_U64S || koff + (u64)ku * 8 > end)
				TFAIL(KEY_OVERRUN, "%s: key at node offset %u overruns bset %u", where, koff, n->nr_bsets);
			if (bfs_bkey_validate(k, extents, kerr, sizeof(kerr)))
				TKFAIL(KEY_INVALID, "%s: invalid key: %s (key %s)", where, kerr, kbuf);
			pos = bfs_bkey_pos(k);
			if (cnt && bfs_bpos_cmp(prev, pos) >= 0)
				TKFAIL(KEY_ORDER, "%s: keys out of order in bset %u (key %s)", where, n->nr_bsets, kbuf);
			if (bfs_bpos_cmp(pos, n->min) < 0 || bfs_bpos_cmp(pos, n->max) > 0)
				TKFAIL(KEY_OUTSIDE_NODE, "%s: key outside the node range %s..%s (key %s)", where,
				      bfs_node_pos_text(n->min, p1, sizeof(p1)),
				      bfs_node_pos_text(n->max, p2, sizeof(p2)), kbuf);
			if (n->level) {
				const struct bfs_btree_ptr *p = bkey_ptr_val(k);

				if (k->type != BFS_KEY_BTREE_PTR && k->type != BFS_KEY_DELETED)
					KFAIL(KEY_INVALID, "%s: interior node holds a non-pointer key (key %s)", where, kbuf);
				if (k->type == BFS_KEY_BTREE_PTR &&
				    (p->level != n->level - 1 || p->btree_id != n->btree_id ||
				     bfs_bpos_cmp(bfs_bpos_from_disk(&p->min_key), pos) > 0))
					KFAIL(PTR_INVALID, "%s: bad child pointer (key %s)", where, kbuf);
			} else if (k->type == BFS_KEY_BTREE_PTR) {
				KFAIL(KEY_INVALID, "%s: leaf holds a child pointer (key %s)", where, kbuf);
			}
			nk[cnt++] = k;
			prev = pos;
			koff += ku * 8;
		}
torn_bset:
		if (torn_keys) {
			/* an unchecksummed bset torn by a crash: its keys are in the journal */
			bfs_warn("%s: torn bset at node offset %u ignored", where, off);
			n->torn = true;
			break;
		}
		kbuf[0] = 0;
		if (!f.nr && cnt) {
			/* the first bset's keys are the view as they are: no merge, no copy */
			f.k = nk;
			f.nr = cnt;
			nk = NULL;
		} else if (cnt && merge_bset(&f, nk, cnt)) {
			ret = -ENOMEM;
			goto out;
		}
		n->nr_bsets++;
		n->journal_seq = BFS_MAX(n->journal_seq, le64_to_cpu(b->journal_seq));
		off = (u32)BFS_ROUND_UP(end, (u64)c->block_size);
		n->written = off;
		first = false;
	}

	for (i = 0; i < f.nr; i++)
		if (!bfs_bkey_deleted(f.k[i]))
			n->live_bytes += bfs_bkey_bytes(f.k[i]);

	if (n->level) {
		/* children must tile [min, max] exactly */
		struct bfs_bpos expect = n->min;
		bool any = false;

		for (i = 0; i < f.nr; i++) {
			const struct bfs_bkey *k = f.k[i];

			if (bfs_bkey_deleted(k))
				continue;
			if (any && bfs_bpos_eq(expect, BFS_POS_MIN))
				KFAIL(TOPOLOGY, "%s: child pointer after the end of the range (key %s)", where, kbuf);
			if (!bfs_bpos_eq(bfs_bpos_from_disk(&bkey_ptr_val(k)->min_key), expect))
				KFAIL(TOPOLOGY, "%s: child pointers leave a gap or overlap at %s (key %s)", where,
				      bfs_node_pos_text(expect, p1, sizeof(p1)), kbuf);
			expect = bfs_bpos_eq(bfs_bkey_pos(k), BFS_POS_MAX) ? BFS_POS_MIN :
				bfs_bpos_successor(bfs_bkey_pos(k));
			any = true;
		}
		if (!any || !(bfs_bpos_eq(n->max, BFS_POS_MAX) ? bfs_bpos_eq(expect, BFS_POS_MIN) :
			      bfs_bpos_eq(expect, bfs_bpos_successor(n->max))))
			NFAIL(TOPOLOGY, "%s: child pointers do not cover the node range up to %s", where,
			      bfs_node_pos_text(n->max, p1, sizeof(p1)));
	}
	/*
	 * Under a hint-only read-ahead budget (fsck's) a leaf is read to be
	 * swept, seldom changed: its key index is packed (a quarter less
	 * heap for each leaf a sweep holds; an insert splits a full chunk).
	 */
	ret = bfs_node_keys_set_fill(n, f.k, f.nr,
				     c->cache.ra_hint && !n->level ? NODE_CHUNK : NODE_CHUNK * 3 / 4);
out:
	bfs_free(nk);
	bfs_free(f.k);
	if (ret)
		n->live_bytes = 0;
	return ret;
}

int bfs_node_read(struct bfs_core *c, struct btree_node *n)
{
	char err[BFS_ERR_LEN + 256];
	int ret;

	ret = bfs_dev_read(c->dev, n->offset, n->data, c->node_size);
	STAT_INC(c, node_reads);
	if (ret) {
		if (!bfs_btree_quiet)
			bfs_err("btree %s level %u node at %llu: read error %d", id_name(n->btree_id), n->level,
			(unsigned long long)n->offset, ret);
		return ret;
	}
	ret = bfs_node_parse(c, n, err, sizeof(err));
	if (ret == -EUCLEAN && !bfs_btree_quiet)
		bfs_err("%s", err);
	return ret;
}

struct write_ctx {
	struct bfs_core *c;
	struct btree_node *n;
	u8	*dst;			/* where the next key of the new bset goes */
	bool	new_node;
};

static bool in_pending(const struct write_ctx *w, const struct bfs_bkey *k)
{
	return bfs_node_key_pending(w->c, w->n, k);
}

static bool write_drop(struct bfs_bkey *k, void *ctx)
{
	/* a node's first bset has nothing older to shadow: whiteouts go */
	return ((struct write_ctx *)ctx)->new_node && in_pending(ctx, k) && bfs_bkey_deleted(k);
}

/* walking the view in order, the pending keys come out sorted: copy them into the bset */
static struct bfs_bkey *write_map(struct bfs_bkey *k, void *ctx)
{
	struct write_ctx *w = ctx;
	struct bfs_bkey *to = (struct bfs_bkey *)w->dst;

	if (!in_pending(w, k))
		return k;
	memcpy(to, k, bfs_bkey_bytes(k));
	w->dst += bfs_bkey_bytes(k);
	return to;
}

int bfs_node_write_prepare(struct bfs_core *c, struct btree_node *n, struct node_wio *w)
{
	struct bfs_btree_node *h = (struct bfs_btree_node *)n->data;
	u32 start = n->written, off = n->written ? n->written : sizeof(*h);
	struct bfs_bset *b = bset_at(n, off);
	u8 *dst = (u8 *)b->keys;
	struct write_ctx wc;
	u32 before, end, wend;

	w->start = start;
	w->len = 0;
	/* a torn bset left by a crash gets overwritten, even by an empty one */
	if (n->written && !n->pending_bytes && !n->torn)
		return 0;
	if (!n->written) {
		*h = (struct bfs_btree_node){
			.magic = cpu_to_le64(BFS_BTREE_NODE_MAGIC),
			.seq = cpu_to_le64(n->seq),
			.btree_id = n->btree_id,
			.level = n->level,
			.min_key = bfs_bpos_to_disk(n->min),
			.max_key = bfs_bpos_to_disk(n->max),
			.node_id = cpu_to_le64(c->node_id),
		};
		h->csum = cpu_to_le64(bfs_csum(c->csum_type, n->data + 16, sizeof(*h) - 16));
	}
	wc = (struct write_ctx){ c, n, dst, !n->written };
	before = n->nr;
	bfs_node_keys_compact(n, write_drop, write_map, &wc);
	if (n->nr != before)
		bfs_node_changed(n);
	dst = wc.dst;
	end = (u32)(dst - n->data);
	*b = (struct bfs_bset){
		.node_seq = cpu_to_le64(n->seq),
		.journal_seq = cpu_to_le64(n->journal_seq),
		.u64s = cpu_to_le32((end - off - (u32)sizeof(*b)) / 8),
		.offset = cpu_to_le32(off),
	};
	b->csum = cpu_to_le64(bfs_csum(c->csum_type, (u8 *)b + 8, end - off - 8));
	wend = (u32)BFS_ROUND_UP(end, c->block_size);
	memset(n->data + end, 0, wend - end);

	/*
	 * The keys now live in data[] and pending is no longer referenced.
	 * data[start, wend) is never changed again (later keys go to pending,
	 * later bsets after wend), so the I/O needs no lock.
	 */
	n->written = wend;
	n->nr_bsets++;
	n->torn = false;
	bfs_node_free_pending(n);
	w->len = wend - start;
	return 1;
}

int bfs_node_write_io(struct bfs_core *c, struct btree_node *n, const struct node_wio *w)
{
	int ret;

	if (!w->len)
		return 0;
	ret = bfs_dev_write(c->dev, n->offset + w->start, n->data + w->start, w->len);
	STAT_INC(c, node_writes);
	STAT_ADD(c, node_write_bytes, w->len);
	if (ret)
		bfs_err("btree %s level %u node at %llu: write error %d", id_name(n->btree_id),
			n->level, (unsigned long long)n->offset, ret);
	return ret;
}

int bfs_node_write(struct bfs_core *c, struct btree_node *n)
{
	struct node_wio w;

	bfs_node_write_prepare(c, n, &w);
	return bfs_node_write_io(c, n, &w);
}
