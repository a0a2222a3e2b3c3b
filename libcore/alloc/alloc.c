// SPDX-License-Identifier: MIT
/*
 * Metadata slot allocator (see alloc.h).  A bitmap over node-sized slots of
 * the whole bucket area; slots that overlap the journal are pre-marked used
 * and never counted.  Next-fit allocation keeps consecutive node writes
 * close together on the device.
 */
#include <bfs/alloc.h>

#include <bfs/log.h>

#include <string.h>

struct bfs_alloc {
	bfs_mutex lock;
	struct bfs_alloc_geom g;
	u64	base;		/* byte offset of slot 0 */
	u64	nslots;
	u64	limit;		/* slots from here on are fenced (bfs_alloc_fence): never freed */
	u64	*used;		/* bitmap */
	u64	nr_free;
	u64	nr_total;
	u64	cursor;
	u64	*pending;	/* offsets freed with free_later */
	size_t	nr_pending, cap_pending;
};

static bool test_bit64(const u64 *map, u64 i) { return map[i / 64] >> (i % 64) & 1; }
static void set_bit64(u64 *map, u64 i) { map[i / 64] |= UINT64_C(1) << (i % 64); }
static void clear_bit64(u64 *map, u64 i) { map[i / 64] &= ~(UINT64_C(1) << (i % 64)); }

int bfs_alloc_init(const struct bfs_alloc_geom *g, struct bfs_alloc **out)
{
	struct bfs_alloc *a;
	u64 end, jstart, jend, i;

	if (!g->node_size || !bfs_is_pow2(g->node_size) || g->nbuckets <= g->first_bucket)
		return -EINVAL;
	a = bfs_zalloc(sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->g = *g;
	/* slots are node_size aligned on the device so offsets can be checked */
	a->base = BFS_ROUND_UP(g->first_bucket * g->bucket_size, (u64)g->node_size);
	end = BFS_ROUND_DOWN(g->nbuckets * g->bucket_size, (u64)g->node_size);
	a->nslots = end > a->base ? (end - a->base) / g->node_size : 0;
	a->used = bfs_calloc(BFS_DIV_ROUND_UP(a->nslots, 64) + 1, sizeof(u64));
	if (!a->used) {
		bfs_free(a);
		return -ENOMEM;
	}
	jstart = g->journal_bucket * g->bucket_size;
	jend = jstart + g->journal_nbuckets * g->bucket_size;
	for (i = 0; i < a->nslots; i++) {
		u64 s = a->base + i * g->node_size, e = s + g->node_size;

		if (g->journal_nbuckets && s < jend && e > jstart)
			set_bit64(a->used, i);
		else
			a->nr_total++;
	}
	a->nr_free = a->nr_total;
	a->limit = a->nslots;
	bfs_mutex_init(&a->lock);
	*out = a;
	return 0;
}

int bfs_alloc_grow(struct bfs_alloc *a, u64 nbuckets)
{
	u64 end, nslots, words, *used, i;

	bfs_mutex_lock(&a->lock);
	end = BFS_ROUND_DOWN(nbuckets * a->g.bucket_size, (u64)a->g.node_size);
	nslots = end > a->base ? (end - a->base) / a->g.node_size : 0;
	if (nbuckets < a->g.nbuckets || nslots < a->nslots) {
		bfs_mutex_unlock(&a->lock);
		return -EINVAL;
	}
	words = BFS_DIV_ROUND_UP(nslots, 64) + 1;
	used = bfs_realloc(a->used, words * sizeof(u64));
	if (!used) {
		bfs_mutex_unlock(&a->lock);
		return -ENOMEM;
	}
	memset(used + BFS_DIV_ROUND_UP(a->nslots, 64) + 1, 0,
	       (words - BFS_DIV_ROUND_UP(a->nslots, 64) - 1) * sizeof(u64));
	a->used = used;
	for (i = a->nslots; i < nslots && i % 64; i++)
		clear_bit64(a->used, i);
	a->nr_total += nslots - a->nslots;
	a->nr_free += nslots - a->nslots;
	a->nslots = nslots;
	a->g.nbuckets = nbuckets;
	bfs_mutex_unlock(&a->lock);
	return 0;
}

void bfs_alloc_exit(struct bfs_alloc *a)
{
	if (!a)
		return;
	bfs_mutex_destroy(&a->lock);
	bfs_free(a->used);
	bfs_free(a->pending);
	bfs_free(a);
}

static bool slot_of(struct bfs_alloc *a, u64 offset, u64 *slot)
{
	if (offset < a->base || (offset - a->base) % a->g.node_size)
		return false;
	*slot = (offset - a->base) / a->g.node_size;
	return *slot < a->nslots;
}

bool bfs_alloc_valid_offset(struct bfs_alloc *a, u64 offset)
{
	u64 s, jstart = a->g.journal_bucket * a->g.bucket_size;
	u64 jend = jstart + a->g.journal_nbuckets * a->g.bucket_size;

	if (!slot_of(a, offset, &s))
		return false;
	return !(a->g.journal_nbuckets && offset < jend && offset + a->g.node_size > jstart);
}

int bfs_alloc_mark_used(struct bfs_alloc *a, u64 offset)
{
	u64 s;
	int ret = 0;

	if (!bfs_alloc_valid_offset(a, offset) || !slot_of(a, offset, &s))
		return -EUCLEAN;
	bfs_mutex_lock(&a->lock);
	if (test_bit64(a->used, s)) {
		ret = -EEXIST;
	} else {
		set_bit64(a->used, s);
		a->nr_free--;
	}
	bfs_mutex_unlock(&a->lock);
	return ret;
}

int bfs_alloc_node(struct bfs_alloc *a, u64 *offset)
{
	u64 i, n;

	bfs_mutex_lock(&a->lock);
	if (!a->nr_free) {
		bfs_mutex_unlock(&a->lock);
		return -ENOSPC;
	}
	for (n = 0, i = a->cursor; n < a->nslots; n++, i = i + 1 == a->nslots ? 0 : i + 1) {
		/* skip full words quickly */
		if (i % 64 == 0 && a->used[i / 64] == UINT64_MAX && i + 64 <= a->nslots) {
			n += 63;
			i += 63;
			continue;
		}
		if (!test_bit64(a->used, i)) {
			set_bit64(a->used, i);
			a->nr_free--;
			a->cursor = i + 1 == a->nslots ? 0 : i + 1;
			*offset = a->base + i * a->g.node_size;
			bfs_mutex_unlock(&a->lock);
			return 0;
		}
	}
	bfs_mutex_unlock(&a->lock);
	return -ENOSPC;
}

static void free_locked(struct bfs_alloc *a, u64 offset)
{
	u64 s;

	if (!slot_of(a, offset, &s) || !test_bit64(a->used, s)) {
		bfs_warn("alloc: freeing slot at %llu that is not in use", (unsigned long long)offset);
		return;
	}
	if (s >= a->limit)
		return;
	clear_bit64(a->used, s);
	a->nr_free++;
}

void bfs_alloc_free_now(struct bfs_alloc *a, u64 offset)
{
	bfs_mutex_lock(&a->lock);
	free_locked(a, offset);
	bfs_mutex_unlock(&a->lock);
}

void bfs_alloc_free_later(struct bfs_alloc *a, u64 offset)
{
	bfs_mutex_lock(&a->lock);
	if (a->nr_pending == a->cap_pending) {
		size_t cap = a->cap_pending ? a->cap_pending * 2 : 64;
		u64 *p = bfs_realloc(a->pending, cap * sizeof(*p));

		if (!p) {
			/* leaking the slot until the next open is safe; reusing it early is not */
			bfs_mutex_unlock(&a->lock);
			return;
		}
		a->pending = p;
		a->cap_pending = cap;
	}
	a->pending[a->nr_pending++] = offset;
	bfs_mutex_unlock(&a->lock);
}

void bfs_alloc_release_first(struct bfs_alloc *a, u64 nr)
{
	size_t i, n;

	bfs_mutex_lock(&a->lock);
	n = (size_t)BFS_MIN(nr, (u64)a->nr_pending);
	for (i = 0; i < n; i++)
		free_locked(a, a->pending[i]);
	if (n) {
		memmove(a->pending, a->pending + n, (a->nr_pending - n) * sizeof(*a->pending));
		a->nr_pending -= n;
	}
	bfs_mutex_unlock(&a->lock);
}

void bfs_alloc_release_pending(struct bfs_alloc *a)
{
	size_t i;

	bfs_mutex_lock(&a->lock);
	for (i = 0; i < a->nr_pending; i++)
		free_locked(a, a->pending[i]);
	a->nr_pending = 0;
	bfs_mutex_unlock(&a->lock);
}

void bfs_alloc_fence(struct bfs_alloc *a, u64 end)
{
	u64 limit = end > a->base ? (end - a->base) / a->g.node_size : 0, i;

	bfs_mutex_lock(&a->lock);
	if (limit < a->limit) {
		for (i = limit; i < a->limit; i++)
			if (!test_bit64(a->used, i)) {
				set_bit64(a->used, i);
				a->nr_free--;
			}
		a->limit = limit;
	}
	bfs_mutex_unlock(&a->lock);
}

u64 bfs_alloc_nr_free(struct bfs_alloc *a)
{
	u64 n;

	bfs_mutex_lock(&a->lock);
	n = a->nr_free;
	bfs_mutex_unlock(&a->lock);
	return n;
}

u64 bfs_alloc_nr_total(struct bfs_alloc *a) { return a->nr_total; }

u64 bfs_alloc_nr_pending(struct bfs_alloc *a)
{
	u64 n;

	bfs_mutex_lock(&a->lock);
	n = a->nr_pending;
	bfs_mutex_unlock(&a->lock);
	return n;
}

/*
 * ---- whole buckets for file data (libcore/fs/alloc_data.c) ----
 *
 * Data owns whole buckets; every slot of a data bucket is marked used here so
 * metadata never lands in it, and a bucket is only handed to data when none
 * of its slots is used (or pending) by metadata.  Space is thus shared
 * dynamically between the two.
 */

static bool bucket_slots(struct bfs_alloc *a, u64 bucket, u64 *first, u64 *nr)
{
	u64 spb = a->g.bucket_size / a->g.node_size;
	u64 start = bucket * a->g.bucket_size;

	if (bucket < a->g.first_bucket || bucket >= a->g.nbuckets || start < a->base)
		return false;
	*first = (start - a->base) / a->g.node_size;
	*nr = spb;
	return *first + spb <= a->nslots;
}

static bool bucket_is_free_locked(struct bfs_alloc *a, u64 first, u64 nr)
{
	u64 i;

	if (nr >= 64 && !(first % 64)) {
		for (i = first; i < first + nr; i += 64)
			if (a->used[i / 64])
				return false;
		return true;
	}
	for (i = first; i < first + nr; i++)
		if (test_bit64(a->used, i))
			return false;
	return true;
}

static void bucket_set_locked(struct bfs_alloc *a, u64 first, u64 nr, bool used)
{
	u64 i;

	for (i = first; i < first + nr; i++) {
		if (used && !test_bit64(a->used, i)) {
			set_bit64(a->used, i);
			a->nr_free--;
		} else if (!used && test_bit64(a->used, i) && i < a->limit) {
			clear_bit64(a->used, i);
			a->nr_free++;
		}
	}
}

int bfs_alloc_bucket_get(struct bfs_alloc *a, u64 bucket)
{
	u64 first, nr;
	int ret = 0;

	if (!bucket_slots(a, bucket, &first, &nr))
		return -EINVAL;
	bfs_mutex_lock(&a->lock);
	if (bucket_is_free_locked(a, first, nr))
		bucket_set_locked(a, first, nr, true);
	else
		ret = -EBUSY;
	bfs_mutex_unlock(&a->lock);
	return ret;
}

bool bfs_alloc_bucket_in_use(struct bfs_alloc *a, u64 bucket)
{
	u64 first, nr;
	bool used;

	if (!bucket_slots(a, bucket, &first, &nr))
		return false;
	bfs_mutex_lock(&a->lock);
	used = !bucket_is_free_locked(a, first, nr);
	bfs_mutex_unlock(&a->lock);
	return used;
}

void bfs_alloc_bucket_put(struct bfs_alloc *a, u64 bucket)
{
	u64 first, nr;

	if (!bucket_slots(a, bucket, &first, &nr))
		return;
	bfs_mutex_lock(&a->lock);
	bucket_set_locked(a, first, nr, false);
	bfs_mutex_unlock(&a->lock);
}

int bfs_alloc_bucket_find(struct bfs_alloc *a, u64 reserve_slots, u64 *cursor, u64 *bucket)
{
	u64 spb = a->g.bucket_size / a->g.node_size, n = a->g.nbuckets - a->g.first_bucket;
	u64 b = *cursor, first, nr, i;

	bfs_mutex_lock(&a->lock);
	if (a->nr_free < spb + reserve_slots) {
		bfs_mutex_unlock(&a->lock);
		return -ENOSPC;
	}
	/* downwards from the cursor (top first: metadata allocates from the bottom), wrapping */
	for (i = 0; i < n; i++) {
		b = b > a->g.first_bucket && b <= a->g.nbuckets ? b - 1 : a->g.nbuckets - 1;
		if (!bucket_slots(a, b, &first, &nr))
			continue;
		if (bucket_is_free_locked(a, first, nr)) {
			bucket_set_locked(a, first, nr, true);
			*bucket = *cursor = b;
			bfs_mutex_unlock(&a->lock);
			return 0;
		}
	}
	bfs_mutex_unlock(&a->lock);
	return -ENOSPC;
}

u64 bfs_alloc_nr_free_buckets(struct bfs_alloc *a)
{
	u64 b, first, nr, n = 0;

	bfs_mutex_lock(&a->lock);
	for (b = a->g.first_bucket; b < a->g.nbuckets; b++)
		if (bucket_slots(a, b, &first, &nr) && bucket_is_free_locked(a, first, nr))
			n++;
	bfs_mutex_unlock(&a->lock);
	return n;
}
