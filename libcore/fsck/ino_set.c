// SPDX-License-Identifier: MIT
/* A compact set of inode numbers with dense indices.  See ino_set.h. */
#include <bfs/os.h>

#include <errno.h>
#include <string.h>

#include "ino_set.h"

#define CHUNK_SHIFT	16
#define CHUNK_WORDS	((1u << CHUNK_SHIFT) / 64)
/* above this a bitmap (8 KiB + 2 KiB of ranks) is smaller than the list */
#define INO_SET_DENSE	5120

struct ino_chunk {
	u64	hi;		/* number >> CHUNK_SHIFT */
	size_t	base;		/* index of its first number */
	u32	nr, cap;
	u16	*low;		/* sparse: sorted low bits, nr of them */
	u64	*bits;		/* dense: CHUNK_WORDS words */
	u16	*rank;		/* dense: numbers in the words before each word, */
	u32	rank_end;	/* for words [0, rank_end) (past it no bit is set) */
};

struct ino_late {
	u64	ino;
	size_t	idx;
};

/*
 * A chunk becomes a bitmap as soon as its list would be bigger, while it is
 * still being filled (numbers come in ascending order): a list left to grow
 * to the end of the chunk reached 128 KiB (65536 numbers) and left the
 * holes of its doublings in the heap, most of the set's peak.  Ranks are
 * filled as the numbers pass each word, so they hold for the words a set
 * bit can be in.
 */
static int make_dense(struct ino_chunk *c)
{
	u64 *bits = bfs_zalloc(CHUNK_WORDS * sizeof(*bits));
	u16 *rank = bfs_malloc(CHUNK_WORDS * sizeof(*rank));
	u32 i, n = 0, end = c->nr ? (u32)(c->low[c->nr - 1] >> 6) + 1 : 0;

	if (!bits || !rank) {
		bfs_free(bits);
		bfs_free(rank);
		return -ENOMEM;
	}
	for (i = 0; i < c->nr; i++)
		bits[c->low[i] >> 6] |= 1ULL << (c->low[i] & 63);
	for (i = 0; i < end; i++) {
		rank[i] = (u16)n;
		n += (u32)__builtin_popcountll(bits[i]);
	}
	bfs_free(c->low);
	c->low = NULL;
	c->cap = 0;
	c->bits = bits;
	c->rank = rank;
	c->rank_end = end;
	return 0;
}

/* @low, above every number in dense chunk @c */
static void dense_add(struct ino_chunk *c, u16 low)
{
	u32 w = low >> 6;

	for (; c->rank_end <= w; c->rank_end++)
		c->rank[c->rank_end] = (u16)c->nr;
	c->bits[w] |= 1ULL << (low & 63);
	c->nr++;
}

static int add_late(struct ino_set *s, u64 ino, size_t idx)
{
	size_t pos = s->nr_late;

	if (s->nr_late == s->cap_late) {
		size_t cap = s->cap_late * 2 + 8;
		struct ino_late *n = bfs_realloc(s->late, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->late = n;
		s->cap_late = cap;
	}
	while (pos && s->late[pos - 1].ino > ino)
		pos--;
	memmove(&s->late[pos + 1], &s->late[pos], (s->nr_late - pos) * sizeof(*s->late));
	s->late[pos] = (struct ino_late){ .ino = ino, .idx = idx };
	s->nr_late++;
	return 0;
}

int ino_set_add(struct ino_set *s, u64 ino, size_t *idx)
{
	u64 hi = ino >> CHUNK_SHIFT;
	struct ino_chunk *c = s->nr_ch ? &s->ch[s->nr_ch - 1] : NULL;
	int ret;

	/* after one out of order, a chunk's indices would no longer be consecutive */
	if ((c && ino <= s->last) || s->nr_late) {
		ret = add_late(s, ino, s->nr);
		goto out;
	}
	if (!c || c->hi != hi) {
		if (s->nr_ch == s->cap_ch) {
			size_t cap = s->cap_ch * 2 + 16;
			struct ino_chunk *n = bfs_realloc(s->ch, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			s->ch = n;
			s->cap_ch = cap;
		}
		c = &s->ch[s->nr_ch++];
		*c = (struct ino_chunk){ .hi = hi, .base = s->nr };
	}
	if (!c->bits && c->nr == INO_SET_DENSE && (ret = make_dense(c)))
		return ret;
	if (c->bits) {
		dense_add(c, (u16)ino);
		s->last = ino;
		ret = 0;
		goto out;
	}
	if (c->nr == c->cap) {
		u32 cap = c->cap ? BFS_MIN(c->cap * 2, (u32)INO_SET_DENSE) : 64;
		u16 *n = bfs_realloc(c->low, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->low = n;
		c->cap = cap;
	}
	c->low[c->nr++] = (u16)ino;
	s->last = ino;
	ret = 0;
out:
	if (!ret)
		*idx = s->nr++;
	return ret;
}

static bool chunk_find(const struct ino_chunk *c, u16 low, size_t *idx)
{
	u32 lo = 0, hi = c->nr;

	if (c->bits) {
		u64 w = c->bits[low >> 6], bit = 1ULL << (low & 63);

		if (!(w & bit))
			return false;
		*idx = c->base + c->rank[low >> 6] + (size_t)__builtin_popcountll(w & (bit - 1));
		return true;
	}
	while (lo < hi) {
		u32 mid = (lo + hi) / 2;

		if (c->low[mid] == low) {
			*idx = c->base + mid;
			return true;
		}
		if (c->low[mid] < low)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool late_find(const struct ino_set *s, u64 ino, size_t *idx)
{
	size_t lo = 0, hi = s->nr_late;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->late[mid].ino == ino) {
			*idx = s->late[mid].idx;
			return true;
		}
		if (s->late[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

bool ino_set_find(const struct ino_set *s, u64 ino, size_t *idx)
{
	u64 hi = ino >> CHUNK_SHIFT;
	size_t lo = 0, n = s->nr_ch;

	while (lo < n) {
		size_t mid = (lo + n) / 2;

		if (s->ch[mid].hi == hi) {
			if (chunk_find(&s->ch[mid], (u16)ino, idx))
				return true;
			break;
		}
		if (s->ch[mid].hi < hi)
			lo = mid + 1;
		else
			n = mid;
	}
	return late_find(s, ino, idx);
}

size_t ino_set_bytes(const struct ino_set *s)
{
	size_t n = s->cap_ch * sizeof(*s->ch) + s->cap_late * sizeof(*s->late), i;

	for (i = 0; i < s->nr_ch; i++)
		n += s->ch[i].bits ? CHUNK_WORDS * (sizeof(u64) + sizeof(u16)) :
			s->ch[i].cap * sizeof(u16);
	return n;
}

void ino_set_free(struct ino_set *s)
{
	size_t i;

	for (i = 0; i < s->nr_ch; i++) {
		bfs_free(s->ch[i].low);
		bfs_free(s->ch[i].bits);
		bfs_free(s->ch[i].rank);
	}
	bfs_free(s->ch);
	bfs_free(s->late);
	memset(s, 0, sizeof(*s));
}
