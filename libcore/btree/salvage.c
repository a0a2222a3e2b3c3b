// SPDX-License-Identifier: MIT
/*
 * Salvaging the keys of a damaged leaf (see btree_repair.h).  The rules are
 * those of bfs_node_parse(), applied leniently: a bad bset is skipped rather
 * than failing the node (a later one is found by its seq and offset, which
 * its predecessor's size cannot forge), a bad key is dropped rather than
 * failing its bset, and keys are sorted rather than required in order.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <bfs/btree.h>
#include <bfs/btree_repair.h>
#include <bfs/checksum.h>
#include <bfs/os.h>

struct skey {
	struct bfs_bkey *k;
	u32	bset;			/* newer bsets win */
	u32	idx;			/* stable order */
};

static int cmp_skey(const void *a, const void *b)
{
	const struct skey *x = a, *y = b;
	int c = bfs_bpos_cmp(bfs_bkey_pos(x->k), bfs_bkey_pos(y->k));

	if (c)
		return c;
	if (x->bset != y->bset)
		return x->bset < y->bset ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void __attribute__((format(printf, 6, 7)))
report(bfs_finding_fn fn, void *ctx, const struct bfs_scanned_node *sn, unsigned code,
       const struct bfs_bkey *k, const char *fmt, ...)
{
	struct bfs_finding f = {
		.code = (enum bfs_problem_code)code,
		.loc = { .btree = sn->btree_id, .node = sn->offset, .has_pos = k != NULL },
	};
	va_list ap;
	size_t n;

	if (!fn)
		return;
	if (k)
		f.loc.pos = bfs_bkey_pos(k);
	n = (size_t)snprintf(f.detail, sizeof(f.detail), "btree %s node at %llu: ",
			     bfs_btree_id_name(sn->btree_id), (unsigned long long)sn->offset);
	va_start(ap, fmt);
	if (n < sizeof(f.detail))
		vsnprintf(f.detail + n, sizeof(f.detail) - n, fmt, ap);
	va_end(ap);
	fn(ctx, &f);
}

int bfs_node_salvage(const struct bfs_node_scan_geom *g, const void *buf,
		     const struct bfs_scanned_node *sn, bfs_finding_fn fn, void *ctx,
		     struct bfs_salvaged *out)
{
	const u8 *base = buf;
	bool extents = bfs_btree_is_extents(sn->btree_id) && !sn->level;
	u32 off = sizeof(struct bfs_btree_node), bset = 0, nr = 0, i, o;
	struct skey *sk;
	char kbuf[200];

	memset(out, 0, sizeof(*out));
	sk = bfs_malloc((g->node_size / (BFS_BKEY_U64S * 8) + 1) * sizeof(*sk));
	if (!sk)
		return -ENOMEM;

	while (off + sizeof(struct bfs_bset) <= g->node_size) {
		const struct bfs_bset *b = (const void *)(base + off);
		u64 end = off + sizeof(*b) + (u64)le32_to_cpu(b->u64s) * 8;
		bool sorted = true, good = true;
		struct bfs_bpos prev = BFS_POS_MIN;
		u32 koff, cnt = 0;

		if (le64_to_cpu(b->node_seq) != sn->seq)
			break;
		if (le32_to_cpu(b->offset) != off || end > g->node_size) {
			report(fn, ctx, sn, PR_BTREE_BSET_BAD_SIZE, NULL,
			       "key set %u at node offset %u has a bad offset or size", bset, off);
			out->dropped++;
			break;
		}
		if (g->csum_type && le64_to_cpu(b->csum) !=
		    bfs_csum(g->csum_type, (const u8 *)b + 8, (size_t)(end - off - 8))) {
			report(fn, ctx, sn, PR_BTREE_BSET_CSUM, NULL,
			       "key set %u at node offset %u fails its checksum: its keys are dropped",
			       bset, off);
			out->dropped++;
			good = false;
		}
		for (koff = off + sizeof(*b); good && koff < end; ) {
			struct bfs_bkey *k = (struct bfs_bkey *)(base + koff);
			u32 ku = bfs_bkey_u64s(k);
			char kerr[BFS_BKEY_ERR_LEN];
			struct bfs_bpos pos;

			if (ku < BFS_BKEY_U64S || koff + (u64)ku * 8 > end) {
				report(fn, ctx, sn, PR_BTREE_KEY_OVERRUN, NULL,
				       "key at node offset %u runs past key set %u: the rest of "
				       "the key set is dropped", koff, bset);
				out->dropped++;
				break;
			}
			koff += ku * 8;
			pos = bfs_bkey_pos(k);
			if (bfs_bkey_validate(k, extents, kerr, sizeof(kerr)) ||
			    k->type == BFS_KEY_BTREE_PTR) {
				if (k->type == BFS_KEY_BTREE_PTR)
					snprintf(kerr, sizeof(kerr), "a child pointer in a leaf");
				bfs_bkey_to_text(kbuf, sizeof(kbuf), k);
				report(fn, ctx, sn, PR_BTREE_KEY_INVALID, k, "%s (key %s)", kerr, kbuf);
				out->dropped++;
				continue;
			}
			if (bfs_bpos_cmp(pos, sn->min_key) < 0 || bfs_bpos_cmp(pos, sn->max_key) > 0) {
				bfs_bkey_to_text(kbuf, sizeof(kbuf), k);
				report(fn, ctx, sn, PR_BTREE_KEY_OUTSIDE_NODE, k,
				       "key outside the node's range (key %s)", kbuf);
				out->dropped++;
				continue;
			}
			if (cnt && bfs_bpos_cmp(prev, pos) >= 0)
				sorted = false;
			prev = pos;
			sk[nr] = (struct skey){ k, bset, nr };
			nr++;
			cnt++;
		}
		if (!sorted)
			report(fn, ctx, sn, PR_BTREE_KEY_ORDER, NULL,
			       "keys of key set %u are out of order: sorted", bset);
		bset++;
		off = (u32)BFS_ROUND_UP(end, (u64)g->block_size);
	}

	qsort(sk, nr, sizeof(*sk), cmp_skey);
	out->k = bfs_malloc((nr + 1) * sizeof(*out->k));
	if (!out->k) {
		bfs_free(sk);
		return -ENOMEM;
	}
	/* one key per position: the last of a run of equal positions is the newest */
	for (i = 0, o = 0; i < nr; i++) {
		if (i + 1 < nr && bfs_bpos_eq(bfs_bkey_pos(sk[i].k), bfs_bkey_pos(sk[i + 1].k)))
			continue;
		out->k[o++] = sk[i].k;
	}
	out->nr = o;
	bfs_free(sk);
	return 0;
}

void bfs_salvaged_free(struct bfs_salvaged *s)
{
	bfs_free(s->k);
	s->k = NULL;
	s->nr = 0;
}
