// SPDX-License-Identifier: MIT
/*
 * The merged, sorted view of a node's keys: pointers to the newest version
 * of every position, kept in chunks of at most NODE_CHUNK pointers.
 *
 * Why chunks: a big node holds thousands of keys; one flat sorted array
 * would cost a memmove of half the node's pointers on every insert of a new
 * position.  With chunks an insert moves at most one chunk and bumps the
 * start index of the chunks after it; lookups first pick the chunk by its
 * last key, then search inside it.  Chunks are never empty.
 *
 * Changes happen under the node's write lock; everything that may allocate
 * is done beforehand by bfs_node_reserve(), so inserting cannot fail.
 */
#include "internal.h"

static inline struct node_sk sk_of(const struct bfs_bkey *k)
{
	return (struct node_sk){ le64_to_cpu(k->inode), le64_to_cpu(k->offset) };
}

/* compare without touching the key unless inode and offset tie */
static inline int sk_cmp(const struct node_sk *sk, struct bfs_bpos pos)
{
	if (sk->inode != pos.inode)
		return sk->inode < pos.inode ? -1 : 1;
	if (sk->offset != pos.offset)
		return sk->offset < pos.offset ? -1 : 1;
	return 0;
}

static void set_last(struct btree_node *n, u32 c)
{
	struct key_chunk *ch = n->ch[c];

	n->last[c] = ch->sk[ch->nr - 1];
}

static struct key_chunk *take_spare(struct btree_node *n)
{
	return n->spare[--n->nr_spare];
}

static void drop_chunk(struct btree_node *n, struct key_chunk *ch)
{
	if (n->nr_spare < ARRAY_SIZE(n->spare))
		n->spare[n->nr_spare++] = ch;
	else
		bfs_free(ch);
}

void bfs_node_keys_free(struct btree_node *n)
{
	u32 i;

	for (i = 0; i < n->nch; i++)
		bfs_free(n->ch[i]);
	for (i = 0; i < n->nr_spare; i++)
		bfs_free(n->spare[i]);
	bfs_free(n->ch);
	bfs_free(n->start);
	bfs_free(n->last);
	n->ch = NULL;
	n->start = NULL;
	n->last = NULL;
	n->nch = n->ch_cap = n->nr = n->nr_spare = 0;
}

static int grow_index(struct btree_node *n, u32 want)
{
	struct key_chunk **ch;
	struct node_sk *last;
	u32 *start, cap;

	if (want <= n->ch_cap)
		return 0;
	cap = BFS_MAX(want, n->ch_cap * 2);
	cap = BFS_MAX(cap, 8u);
	ch = bfs_realloc(n->ch, cap * sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	n->ch = ch;
	start = bfs_realloc(n->start, cap * sizeof(*start));
	if (!start)
		return -ENOMEM;
	n->start = start;
	last = bfs_realloc(n->last, cap * sizeof(*last));
	if (!last)
		return -ENOMEM;
	n->last = last;
	n->ch_cap = cap;
	return 0;
}

int bfs_node_reserve(struct btree_node *n, u32 extra)
{
	u32 spares = BFS_MIN(extra, (u32)ARRAY_SIZE(n->spare));
	int ret = grow_index(n, n->nch + extra + 1);

	while (!ret && n->nr_spare < spares) {
		struct key_chunk *ch = bfs_malloc(sizeof(*ch));

		if (!ch)
			return -ENOMEM;
		n->spare[n->nr_spare++] = ch;
	}
	return ret;
}

u32 bfs_node_search(struct btree_node *n, struct bfs_bpos pos, struct node_slot *slot)
{
	u32 lo = 0, hi = n->nch, clo, chi;
	struct key_chunk *ch;

	/* the first chunk whose last key is >= pos */
	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		int cmp = sk_cmp(&n->last[mid], pos);

		if (!cmp)
			cmp = bfs_bkey_cmp_pos(n->ch[mid]->k[n->ch[mid]->nr - 1], pos);
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n->nch) {
		/* past the end: the insert slot is the end of the last chunk */
		if (slot) {
			slot->c = n->nch ? n->nch - 1 : 0;
			slot->off = n->nch ? n->ch[n->nch - 1]->nr : 0;
		}
		return n->nr;
	}
	ch = n->ch[lo];
	clo = 0;
	chi = ch->nr - 1;	/* the last key is >= pos */
	while (clo < chi) {
		u32 mid = clo + (chi - clo) / 2;
		int cmp = sk_cmp(&ch->sk[mid], pos);

		if (!cmp)
			cmp = bfs_bkey_cmp_pos(ch->k[mid], pos);
		if (cmp < 0)
			clo = mid + 1;
		else
			chi = mid;
	}
	if (slot) {
		slot->c = lo;
		slot->off = clo;
	}
	return n->start[lo] + clo;
}

u32 bfs_node_lower_bound(struct btree_node *n, struct bfs_bpos pos)
{
	return bfs_node_search(n, pos, NULL);
}

u32 bfs_node_upper_bound(struct btree_node *n, struct bfs_bpos pos)
{
	/* positions are discrete: "> pos" is ">= successor(pos)" */
	return bfs_bpos_eq(pos, BFS_POS_MAX) ? n->nr : bfs_node_lower_bound(n, bfs_bpos_successor(pos));
}

void bfs_node_key_insert_at(struct btree_node *n, struct node_slot slot, struct bfs_bkey *k)
{
	struct key_chunk *ch;
	u32 c = slot.c, off = slot.off, j;

	if (!n->nch) {
		n->ch[0] = take_spare(n);
		n->ch[0]->nr = 0;
		n->start[0] = 0;
		n->nch = 1;
		c = off = 0;
	}
	ch = n->ch[c];
	if (ch->nr == NODE_CHUNK) {
		struct key_chunk *nc = take_spare(n);
		u32 keep = off == NODE_CHUNK && c == n->nch - 1 ? NODE_CHUNK : NODE_CHUNK / 2;

		/* appending at the very end starts a new chunk: sequential inserts fill chunks */
		nc->nr = NODE_CHUNK - keep;
		memcpy(nc->k, ch->k + keep, nc->nr * sizeof(ch->k[0]));
		memcpy(nc->sk, ch->sk + keep, nc->nr * sizeof(ch->sk[0]));
		ch->nr = keep;
		memmove(&n->ch[c + 2], &n->ch[c + 1], (n->nch - c - 1) * sizeof(n->ch[0]));
		memmove(&n->start[c + 2], &n->start[c + 1], (n->nch - c - 1) * sizeof(n->start[0]));
		memmove(&n->last[c + 2], &n->last[c + 1], (n->nch - c - 1) * sizeof(n->last[0]));
		n->ch[c + 1] = nc;
		n->start[c + 1] = n->start[c] + keep;
		n->nch++;
		set_last(n, c);
		if (nc->nr)
			set_last(n, c + 1);
		if (off > keep || (off == keep && keep == NODE_CHUNK)) {
			c++;
			off -= keep;
			ch = nc;
		}
	}
	memmove(&ch->k[off + 1], &ch->k[off], (ch->nr - off) * sizeof(ch->k[0]));
	memmove(&ch->sk[off + 1], &ch->sk[off], (ch->nr - off) * sizeof(ch->sk[0]));
	ch->k[off] = k;
	ch->sk[off] = sk_of(k);
	ch->nr++;
	if (off == ch->nr - 1)
		set_last(n, c);
	for (j = c + 1; j < n->nch; j++)
		n->start[j]++;
	n->nr++;
}

void bfs_node_key_remove(struct btree_node *n, u32 i)
{
	u32 c = bfs_node_chunk_of(n, i), off = i - n->start[c], j;
	struct key_chunk *ch = n->ch[c];

	memmove(&ch->k[off], &ch->k[off + 1], (ch->nr - off - 1) * sizeof(ch->k[0]));
	memmove(&ch->sk[off], &ch->sk[off + 1], (ch->nr - off - 1) * sizeof(ch->sk[0]));
	if (!--ch->nr) {
		drop_chunk(n, ch);
		memmove(&n->ch[c], &n->ch[c + 1], (n->nch - c - 1) * sizeof(n->ch[0]));
		memmove(&n->start[c], &n->start[c + 1], (n->nch - c - 1) * sizeof(n->start[0]));
		memmove(&n->last[c], &n->last[c + 1], (n->nch - c - 1) * sizeof(n->last[0]));
		n->nch--;
	} else {
		set_last(n, c);
		c++;
	}
	for (j = c; j < n->nch; j++)
		n->start[j]--;
	n->nr--;
}

int bfs_node_keys_set(struct btree_node *n, struct bfs_bkey *const *keys, u32 nr)
{
	/* leave room in every chunk so the first inserts don't split at once */
	const u32 fill = NODE_CHUNK * 3 / 4;
	u32 need = BFS_DIV_ROUND_UP(nr, fill), c, i;
	struct key_chunk **chunks;
	int ret;

	chunks = bfs_calloc(BFS_MAX(need, 1u), sizeof(*chunks));
	if (!chunks)
		return -ENOMEM;
	for (c = 0; c < need; c++) {
		chunks[c] = bfs_malloc(sizeof(*chunks[c]));
		if (!chunks[c]) {
			while (c--)
				bfs_free(chunks[c]);
			bfs_free(chunks);
			return -ENOMEM;
		}
	}
	for (c = 0; c < n->nch; c++)
		drop_chunk(n, n->ch[c]);
	n->nch = 0;
	n->nr = 0;
	ret = grow_index(n, need + 1);
	if (ret) {
		for (c = 0; c < need; c++)
			bfs_free(chunks[c]);
		bfs_free(chunks);
		return ret;
	}
	for (c = 0, i = 0; c < need; c++) {
		u32 cnt = BFS_MIN(fill, nr - i);

		u32 j;

		chunks[c]->nr = cnt;
		memcpy(chunks[c]->k, keys + i, cnt * sizeof(keys[0]));
		for (j = 0; j < cnt; j++)
			chunks[c]->sk[j] = sk_of(keys[i + j]);
		n->ch[c] = chunks[c];
		n->start[c] = i;
		set_last(n, c);
		i += cnt;
	}
	n->nch = need;
	n->nr = nr;
	bfs_free(chunks);
	return 0;
}

void bfs_node_keys_compact(struct btree_node *n, bool (*drop)(struct bfs_bkey *k, void *ctx),
			   struct bfs_bkey *(*map)(struct bfs_bkey *k, void *ctx), void *ctx)
{
	u32 c, o = 0, total = 0;

	for (c = 0; c < n->nch; c++) {
		struct key_chunk *ch = n->ch[c];
		u32 i, j = 0;

		for (i = 0; i < ch->nr; i++) {
			if (drop && drop(ch->k[i], ctx))
				continue;
			ch->sk[j] = ch->sk[i];
			ch->k[j++] = map ? map(ch->k[i], ctx) : ch->k[i];
		}
		ch->nr = j;
		if (!j) {
			drop_chunk(n, ch);
			continue;
		}
		n->ch[o] = ch;
		n->start[o] = total;
		set_last(n, o);
		total += j;
		o++;
	}
	n->nch = o;
	n->nr = total;
}
