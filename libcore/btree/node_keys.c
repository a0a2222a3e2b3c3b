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
 *
 * Why the search is laid out as it is: a lookup in a node that is not in the
 * CPU cache is bound by dependent cache misses, not by comparisons.  A plain
 * binary search over last[] and then over a chunk's 2 KiB of search keys
 * costs a dozen misses, one after the other.  Here the chunk is picked in
 * eyt[], an Eytzinger-ordered copy of last[] whose top levels are one or
 * two cache lines every search shares, with the line two levels down
 * prefetched at each step, and the entry the descent ends on names the
 * chunk, so no other array is read on the way; inside the chunk, the group
 * fences gl[] (two lines, three steps) pick one group of NODE_GROUP
 * entries, whose four lines are prefetched together before its search.  A
 * chunk's search keys past its entries are all ones, so neither search
 * needs the entry count or a case for a short group.  All of these
 * compare only inode and offset, as one 128-bit number and without
 * branches (a random key makes every branch of a binary search a coin
 * toss, and a mispredicted one costs as much as an L2 miss); only an entry
 * whose inode and offset equal the position's is compared in full, by the
 * key itself (snapshots).
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

/* inode, then offset: the order of search keys as one number */
typedef unsigned __int128 sk_num;

static inline sk_num sk_num_of(const struct node_sk *sk)
{
	return (sk_num)sk->inode << 64 | sk->offset;
}

static inline sk_num pos_num(struct bfs_bpos pos)
{
	return (sk_num)pos.inode << 64 | pos.offset;
}

static inline bool sk_eq(const struct node_sk *sk, struct bfs_bpos pos)
{
	return sk->inode == pos.inode && sk->offset == pos.offset;
}

/*
 * the group fences of @ch from the group holding slot @from on; a short
 * last group's fence is its padding, which picks that group as well as its
 * last entry would (the chunk's last entry is >= any position searched in it)
 */
static void set_groups(struct key_chunk *ch, u32 from)
{
	u32 g;

	for (g = from / NODE_GROUP; g < NODE_GROUPS; g++)
		ch->gl[g] = ch->sk[g * NODE_GROUP + NODE_GROUP - 1];
}

/* sk[nr, @old_nr) were entries (or stale): all ones again, then the fences */
static void pad_tail(struct key_chunk *ch, u32 old_nr)
{
	if (old_nr > ch->nr)
		memset(&ch->sk[ch->nr], 0xff, (old_nr - ch->nr) * sizeof(ch->sk[0]));
	set_groups(ch, ch->nr ? ch->nr - 1 : 0);
}

static void set_last(struct btree_node *n, u32 c)
{
	struct key_chunk *ch = n->ch[c];

	n->last[c] = ch->sk[ch->nr - 1];
}

/* in-order walk of the implicit tree rooted at @k: the sorted last[] into eyt[] */
static u32 eyt_fill(struct btree_node *n, u32 k, u32 c)
{
	if (k > n->nch)
		return c;
	c = eyt_fill(n, 2 * k, c);
	n->eyt[k].sk = n->last[c];
	n->eyt[k].ch = n->ch[c];
	n->eyt[k].c = c;
	n->eyt_of[c] = k;
	return eyt_fill(n, 2 * k + 1, c + 1);
}

/* after chunks were added or removed (last[] is complete) */
static void eyt_build(struct btree_node *n)
{
	eyt_fill(n, 1, 0);
}

/* last[c] changed, the chunks did not */
static void eyt_set(struct btree_node *n, u32 c)
{
	n->eyt[n->eyt_of[c]].sk = n->last[c];
}

static struct key_chunk *chunk_alloc(void)
{
	/* cache-line aligned, so gl[] and each group's sk[] lines are whole lines */
	return bfs_aligned_alloc(64, sizeof(struct key_chunk));
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
	bfs_free(n->eyt);
	bfs_free(n->eyt_of);
	n->ch = NULL;
	n->start = NULL;
	n->last = NULL;
	n->eyt = NULL;
	n->eyt_of = NULL;
	n->nch = n->ch_cap = n->nr = n->nr_spare = 0;
}

static int grow_index(struct btree_node *n, u32 want)
{
	struct key_chunk **ch;
	struct node_sk *last;
	struct node_eyt *eyt;
	u32 *start, *eyt_of, cap;

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
	eyt_of = bfs_realloc(n->eyt_of, cap * sizeof(*eyt_of));
	if (!eyt_of)
		return -ENOMEM;
	n->eyt_of = eyt_of;
	/* aligned memory cannot be realloc'd: copy the live part */
	eyt = bfs_aligned_alloc(64, (cap + 1) * sizeof(*eyt));
	if (!eyt)
		return -ENOMEM;
	if (n->eyt)
		memcpy(eyt, n->eyt, (n->nch + 1) * sizeof(*eyt));
	bfs_free(n->eyt);
	n->eyt = eyt;
	n->ch_cap = cap;
	return 0;
}

int bfs_node_reserve(struct btree_node *n, u32 extra)
{
	u32 spares = BFS_MIN(extra, (u32)ARRAY_SIZE(n->spare));
	int ret = grow_index(n, n->nch + extra + 1);

	while (!ret && n->nr_spare < spares) {
		struct key_chunk *ch = chunk_alloc();

		if (!ch)
			return -ENOMEM;
		n->spare[n->nr_spare++] = ch;
	}
	return ret;
}

/*
 * The entry of the first chunk whose last search key is >= pos's (NULL if
 * none), in eyt[].  Only a tie with that chunk's last key needs the key
 * itself: the caller checks for it.
 */
static inline const struct node_eyt *eyt_lower_bound(const struct btree_node *n,
						     struct bfs_bpos pos, bool *tie)
{
	const struct node_eyt *e = n->eyt;
	u32 k = 1, nch = n->nch;
	sk_num want = pos_num(pos);

	_Static_assert(sizeof(*e) == 32, "four eyt entries are two cache lines");
	while (k <= nch) {
		/* the four grandchildren of k share two lines: fetch them now */
		__builtin_prefetch(e + 4 * k);
		__builtin_prefetch(e + 4 * k + 2);
		k = 2 * k + (sk_num_of(&e[k].sk) < want);
	}
	/* undo the right turns taken after the last left turn */
	k >>= __builtin_ffs(~k);
	if (!k) {
		*tie = false;
		return NULL;
	}
	/* e[k] was read on the way down: its chunk and the tie test cost no further miss */
	*tie = sk_eq(&e[k].sk, pos);
	return &e[k];
}

/*
 * Lower bound of @want in the group sk[lo, lo + NODE_GROUP), which holds an
 * entry >= want, branch-free and unrolled: the range halves whatever the
 * comparison says, which only picks the half; four steps and no loop to
 * predict (a short group is padded with all ones).
 */
static inline u32 sk_lower_group(const struct node_sk *sk, u32 lo, sk_num want)
{
	_Static_assert(NODE_GROUP == 16, "sk_lower_group() takes four steps");
	lo = sk_num_of(&sk[lo + 8]) < want ? lo + 8 : lo;
	lo = sk_num_of(&sk[lo + 4]) < want ? lo + 4 : lo;
	lo = sk_num_of(&sk[lo + 2]) < want ? lo + 2 : lo;
	lo = sk_num_of(&sk[lo + 1]) < want ? lo + 1 : lo;
	return lo + (sk_num_of(&sk[lo]) < want);
}

/*
 * Entries whose inode and offset tie pos's: the snapshot decides, in the key
 * itself.  Every lookup that finds its key gets here.  The entry count sits
 * on a line of its own (the chunk's first), which nothing else a search
 * reads shares, so it is read only when pos's inode and offset are all
 * ones, the padding's value: only then can the padding tie.  (Reading it
 * always cost one more cache line per lookup that finds its key.)
 */
static u32 chunk_tie_walk(const struct key_chunk *ch, u32 j, struct bfs_bpos pos)
{
	bool pad_ties = !~pos.inode && !~pos.offset;

	while (j < NODE_CHUNK && sk_eq(&ch->sk[j], pos) && (!pad_ties || j < ch->nr) &&
	       bfs_bkey_cmp_pos(ch->k[j], pos) < 0)
		j++;
	return j;
}

/* lower bound of @pos in a chunk whose last key is >= pos; the caller prefetched gl[] */
static u32 chunk_search(const struct key_chunk *ch, struct bfs_bpos pos)
{
	const struct node_sk *gl = ch->gl;
	sk_num want = pos_num(pos);
	u32 g, j, lo;

	/*
	 * the first group whose fence is >= pos, in three branch-free steps
	 * over the eight fences (sorted, and padded with all ones past the
	 * chunk's entries, so one of them always is)
	 */
	_Static_assert(NODE_GROUPS == 8, "the fence search takes three steps");
	g = sk_num_of(&gl[3]) < want ? 4 : 0;
	g += sk_num_of(&gl[g + 1]) < want ? 2 : 0;
	g += sk_num_of(&gl[g]) < want;
	/* gl[g] >= pos: the answer is in group g; fetch its lines all at once */
	lo = g * NODE_GROUP;
	_Static_assert(NODE_GROUP * sizeof(ch->sk[0]) == 4 * 64, "a group is four lines of sk[]");
	__builtin_prefetch(&ch->sk[lo]);
	__builtin_prefetch(&ch->sk[lo + 4]);
	__builtin_prefetch(&ch->sk[lo + 8]);
	__builtin_prefetch(&ch->sk[lo + 12]);
	__builtin_prefetch(&ch->k[lo]);
	__builtin_prefetch(&ch->k[lo + 8]);
	/* below the group's fence, so within the group (at most slot NODE_CHUNK - 1) */
	j = sk_lower_group(ch->sk, lo, want);
	if (__builtin_expect(sk_eq(&ch->sk[j], pos), 0))
		j = chunk_tie_walk(ch, j, pos);
	return j;
}

/* the chunk for @pos by binary search over last[], comparing keys on ties */
static u32 chunk_pick_full(struct btree_node *n, struct bfs_bpos pos)
{
	u32 lo = 0, hi = n->nch;

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
	return lo;
}

u32 bfs_node_search(struct btree_node *n, struct bfs_bpos pos, struct node_slot *slot)
{
	bool tie;
	const struct node_eyt *e = eyt_lower_bound(n, pos, &tie);
	u32 lo = e ? e->c : n->nch, clo;
	struct key_chunk *ch = e ? e->ch : NULL;

	if (tie) {
		lo = chunk_pick_full(n, pos);
		ch = lo < n->nch ? n->ch[lo] : NULL;
	}
	if (lo == n->nch) {
		/* past the end: the insert slot is the end of the last chunk */
		if (slot) {
			slot->c = n->nch ? n->nch - 1 : 0;
			slot->off = n->nch ? n->ch[n->nch - 1]->nr : 0;
		}
		return n->nr;
	}
	__builtin_prefetch(&ch->gl[0]);
	__builtin_prefetch(&ch->gl[4]);
	clo = chunk_search(ch, pos);
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
	bool reshaped = false;		/* chunks added: eyt[] is rebuilt */

	if (!n->nch) {
		n->ch[0] = take_spare(n);
		n->ch[0]->nr = 0;
		pad_tail(n->ch[0], NODE_CHUNK);
		n->start[0] = 0;
		n->nch = 1;
		c = off = 0;
		reshaped = true;
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
		pad_tail(nc, NODE_CHUNK);
		set_groups(nc, 0);
		pad_tail(ch, NODE_CHUNK);
		reshaped = true;
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
	set_groups(ch, off);
	if (off == ch->nr - 1)
		set_last(n, c);
	for (j = c + 1; j < n->nch; j++)
		n->start[j]++;
	n->nr++;
	if (reshaped)
		eyt_build(n);
	else if (off == ch->nr - 1)
		eyt_set(n, c);
}

void bfs_node_key_remove(struct btree_node *n, u32 i)
{
	u32 c = bfs_node_chunk_of(n, i), off = i - n->start[c], j;
	struct key_chunk *ch = n->ch[c];

	memmove(&ch->k[off], &ch->k[off + 1], (ch->nr - off - 1) * sizeof(ch->k[0]));
	memmove(&ch->sk[off], &ch->sk[off + 1], (ch->nr - off - 1) * sizeof(ch->sk[0]));
	ch->sk[ch->nr - 1] = (struct node_sk){ UINT64_MAX, UINT64_MAX };	/* padding again */
	if (!--ch->nr) {
		drop_chunk(n, ch);
		memmove(&n->ch[c], &n->ch[c + 1], (n->nch - c - 1) * sizeof(n->ch[0]));
		memmove(&n->start[c], &n->start[c + 1], (n->nch - c - 1) * sizeof(n->start[0]));
		memmove(&n->last[c], &n->last[c + 1], (n->nch - c - 1) * sizeof(n->last[0]));
		n->nch--;
		eyt_build(n);
	} else {
		set_groups(ch, off ? off - 1 : 0);
		set_last(n, c);
		eyt_set(n, c);
		c++;
	}
	for (j = c; j < n->nch; j++)
		n->start[j]--;
	n->nr--;
}

int bfs_node_keys_set(struct btree_node *n, struct bfs_bkey *const *keys, u32 nr)
{
	/* leave room in every chunk so the first inserts don't split at once */
	return bfs_node_keys_set_fill(n, keys, nr, NODE_CHUNK * 3 / 4);
}

int bfs_node_keys_set_fill(struct btree_node *n, struct bfs_bkey *const *keys, u32 nr, u32 fill)
{
	u32 need = BFS_DIV_ROUND_UP(nr, fill), c, i;
	struct key_chunk **chunks;
	int ret;

	chunks = bfs_calloc(BFS_MAX(need, 1u), sizeof(*chunks));
	if (!chunks)
		return -ENOMEM;
	for (c = 0; c < need; c++) {
		chunks[c] = chunk_alloc();
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
		pad_tail(chunks[c], NODE_CHUNK);
		set_groups(chunks[c], 0);
		n->ch[c] = chunks[c];
		n->start[c] = i;
		set_last(n, c);
		i += cnt;
	}
	n->nch = need;
	n->nr = nr;
	eyt_build(n);
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
		pad_tail(ch, i);
		set_groups(ch, 0);
		n->ch[o] = ch;
		n->start[o] = total;
		set_last(n, o);
		total += j;
		o++;
	}
	n->nch = o;
	n->nr = total;
	eyt_build(n);
}
