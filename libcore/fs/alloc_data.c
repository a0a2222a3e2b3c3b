// SPDX-License-Identifier: MIT
/*
 * Data space: whole buckets taken from the metadata allocator, one shared
 * write point appending into an open bucket, per-bucket live sectors and
 * generations (in memory here, persisted in the alloc btree by every data
 * commit), and emptied buckets that become reusable only once the commit
 * that emptied them is durable.  See doc/format/data.md, "Space".
 */
#include <inttypes.h>

#include <bfs/log.h>

/* the core's metadata allocator: data buckets are carved out of it */
#include <bfs/alloc.h>
#include "data.h"

u64 bfs_data_bucket_of(struct bfs_fs_data *d, u64 dev_off)
{
	return dev_off / d->bucket_size;
}

bool bfs_data_bucket_valid(struct bfs_fs_data *d, u64 bucket)
{
	return bucket >= d->first_bucket && bucket < d->nbuckets;
}

u32 bfs_data_bucket_gen(struct bfs_fs_data *d, u64 bucket)
{
	return __atomic_load_n(&d->b[bucket].gen, __ATOMIC_RELAXED);
}

/*
 * Metadata slots data must leave free.  bfs_core_reserve_nodes() refuses a
 * commit of 16 or more updates (data commits are that big) unless
 * 2 * 16 * (depth + 1) + 2 + 4 * (depth + 1) slots are free; keep that plus
 * some slack back, so that ENOSPC comes from the data allocator, before any
 * data is written, and not from a commit after it.
 */
static u64 reserve_slots(struct bfs_fs_data *d)
{
	u64 depth = bfs_core_max_depth(d->c), need;

	need = 2 * 16 * (depth + 1) + 2 + 4 * (depth + 1) + 16;
	return BFS_MAX(need, d->reserve_slots);
}

/* copy-GC may dip into half of the reserve: moving data is how space comes back */
static __thread bool gc_reserve;

void bfs_data_gc_reserve(bool on)
{
	gc_reserve = on;
}

bool bfs_data_space_available(struct bfs_fs_data *d)
{
	u64 spb = d->bucket_size / d->node_size;
	bool ok;

	bfs_mutex_lock(&d->lock);
	ok = (d->wp_bucket && d->wp_fill + d->chunk_max <= d->bucket_size) || d->nr_pending;
	bfs_mutex_unlock(&d->lock);
	return ok || bfs_alloc_nr_free(d->a) >= spb + reserve_slots(d);
}

bool bfs_data_space_low(struct bfs_fs_data *d)
{
	return bfs_alloc_nr_free(d->a) < 2 * reserve_slots(d);
}

/* d->lock held: queue an emptied, closed, idle bucket for release */
static void maybe_free_locked(struct bfs_fs_data *d, u64 bucket)
{
	struct bfs_bucket *bk = &d->b[bucket];

	if (!bk->data || bk->open || bk->inflight || bk->committing || bk->live ||
	    bk->pending_free || bk->shared)
		return;
	if (d->nr_pending == d->cap_pending) {
		size_t cap = d->cap_pending ? d->cap_pending * 2 : 64;
		u64 *p = bfs_realloc(d->pending, cap * sizeof(*p));

		if (!p)
			return;	/* leaked until the next open: safe, unlike early reuse */
		d->pending = p;
		d->cap_pending = cap;
	}
	bk->pending_free = true;
	d->pending[d->nr_pending++] = bucket;
}

/*
 * -o discard: the buckets released by one call are discarded as one batch
 * (adjacent buckets merged into one request) before they go back to the
 * allocator: while being discarded they are still the data allocator's,
 * so nothing can be written into them and then lost to the discard.
 * d->lock is held on entry and dropped.  A device without discard support
 * turns it off; a failed discard loses nothing (the space is free anyway).
 * A release running meanwhile puts its buckets back undiscarded.
 */
static int release_discarding(struct bfs_fs_data *d, u64 upto)
{
	u64 *rel = NULL, run_start = 0, run_end = 0;
	size_t i = 0, nr = 0, j;
	int ret;

	d->discarding = true;
	rel = bfs_malloc((d->nr_pending ? d->nr_pending : 1) * sizeof(*rel));
	while (rel && i < d->nr_pending && d->pending_removed + i < upto) {
		u64 b = d->pending[i++];
		struct bfs_bucket *bk = &d->b[b];

		bk->pending_free = false;
		if (bk->live || bk->open || bk->inflight || bk->committing || !bk->data || bk->shared)
			continue;
		rel[nr++] = b;
	}
	memmove(d->pending, d->pending + i, (d->nr_pending - i) * sizeof(*d->pending));
	d->nr_pending -= i;
	d->pending_removed += i;
	bfs_mutex_unlock(&d->lock);

	/* pending is FIFO, not sorted: runs of adjacent buckets in that order */
	for (j = 0; j <= nr && d->fs->discard; j++) {
		if (j < nr && run_end && rel[j] == run_end) {
			run_end++;
			continue;
		}
		if (run_end) {
			ret = bfs_dev_discard(d->dev, run_start * d->bucket_size,
					      (run_end - run_start) * d->bucket_size);
			if (ret == -EOPNOTSUPP || ret == -ENOTTY || ret == -EINVAL) {
				bfs_warn("data: the device does not support discard; "
					 "discarding is off (error %d)", ret);
				d->fs->discard = false;
			}
		}
		if (j < nr) {
			run_start = rel[j];
			run_end = rel[j] + 1;
		}
	}

	bfs_mutex_lock(&d->lock);
	for (j = 0; j < nr; j++) {
		struct bfs_bucket *bk = &d->b[rel[j]];

		if (bk->live || bk->open || bk->inflight || bk->committing || !bk->data || bk->shared)
			continue;
		bk->data = false;
		d->nr_data_buckets--;
		bfs_alloc_bucket_put(d->a, rel[j]);
	}
	d->discarding = false;
	bfs_mutex_unlock(&d->lock);
	bfs_free(rel);
	return 0;
}

int bfs_data_release_pending(struct bfs_fs_data *d, bool force)
{
	u64 upto;
	size_t i = 0;
	int ret;

	bfs_mutex_lock(&d->lock);
	/* pending is FIFO: entries numbered below upto were queued before the flush */
	upto = d->pending_removed + d->nr_pending;
	i = d->nr_pending;
	bfs_mutex_unlock(&d->lock);
	if (!i || !force)
		return 0;
	i = 0;
	/* each of those buckets was emptied by a commit that returned before this flush */
	ret = bfs_core_flush(d->c);
	if (ret)
		return ret;
	bfs_mutex_lock(&d->lock);
	if (d->fs->discard && !d->discarding)
		return release_discarding(d, upto);
	while (i < d->nr_pending && d->pending_removed + i < upto) {
		u64 b = d->pending[i++];
		struct bfs_bucket *bk = &d->b[b];

		bk->pending_free = false;
		if (bk->live || bk->open || bk->inflight || bk->committing || !bk->data || bk->shared)
			continue;
		bk->data = false;
		d->nr_data_buckets--;
		if (!d->fence || b < d->fence)
			bfs_alloc_bucket_put(d->a, b);	/* a fenced one stays taken */
	}
	memmove(d->pending, d->pending + i, (d->nr_pending - i) * sizeof(*d->pending));
	d->nr_pending -= i;
	d->pending_removed += i;
	bfs_mutex_unlock(&d->lock);
	return 0;
}

/* d->lock held; may drop it to flush the journal or checkpoint */
static int open_bucket_locked(struct bfs_fs_data *d)
{
	bool checkpointed = false;
	u64 b;
	int ret;

	for (;;) {
		if (d->wp_bucket)
			return 0;	/* someone else opened one meanwhile */
		ret = bfs_alloc_bucket_find(d->a, reserve_slots(d) / (gc_reserve ? 2 : 1),
					    &d->find_cursor, &b);
		if (!ret)
			break;
		if (ret != -ENOSPC)
			return ret;
		if (d->nr_pending) {
			/* emptied data buckets: they only wait for the journal */
			bfs_mutex_unlock(&d->lock);
			ret = bfs_data_release_pending(d, true);
			bfs_mutex_lock(&d->lock);
		} else if (!checkpointed && bfs_alloc_nr_pending(d->a)) {
			/* node slots freed by copy-on-write come back at a checkpoint */
			checkpointed = true;
			bfs_mutex_unlock(&d->lock);
			ret = bfs_core_checkpoint(d->c);
			bfs_mutex_lock(&d->lock);
		} else {
			return -ENOSPC;
		}
		if (ret)
			return ret;
	}
	/* pointers into the bucket's previous life become stale (readers look without d->lock) */
	__atomic_store_n(&d->b[b].gen, d->b[b].gen + 1, __ATOMIC_RELAXED);
	d->b[b].data = true;
	d->b[b].open = true;
	d->b[b].live = 0;
	d->nr_data_buckets++;
	d->wp_bucket = b;
	d->wp_fill = 0;
	return 0;
}

static void close_wp_locked(struct bfs_fs_data *d)
{
	u64 b = d->wp_bucket;

	if (!b)
		return;
	d->wp_bucket = 0;
	d->b[b].open = false;
	maybe_free_locked(d, b);
}

u64 bfs_data_fence(struct bfs_fs_data *d, u64 fence, u64 *free_bytes)
{
	u64 b, live = 0, reserve;

	bfs_mutex_lock(&d->lock);
	if (d->wp_bucket >= fence)
		close_wp_locked(d);	/* the write point must not append there any more */
	d->fence = fence;
	for (b = fence; b < d->nbuckets; b++) {
		live += d->b[b].live;
		/* a free bucket is taken, so neither data nor a node lands in it */
		if (!d->b[b].data)
			bfs_alloc_bucket_get(d->a, b);
	}
	bfs_mutex_unlock(&d->lock);
	*free_bytes = bfs_alloc_nr_free_buckets(d->a) * d->bucket_size;
	reserve = reserve_slots(d) * d->node_size;
	*free_bytes = *free_bytes > reserve ? *free_bytes - reserve : 0;
	return live;
}

int bfs_data_space_get_multi(struct bfs_fs_data *d, u32 unit, u32 max_units, u64 *dev_off,
			     u64 *bucket, u32 *gen, u32 *units)
{
	u32 n;
	int ret;

	if (unit > d->bucket_size || !max_units)
		return -EINVAL;
	bfs_mutex_lock(&d->lock);
	for (;;) {
		if (d->wp_bucket && d->wp_fill + unit <= d->bucket_size)
			break;
		close_wp_locked(d);
		ret = open_bucket_locked(d);
		if (ret) {
			bfs_mutex_unlock(&d->lock);
			return ret;
		}
	}
	n = (u32)BFS_MIN((u64)max_units, (d->bucket_size - d->wp_fill) / unit);
	*bucket = d->wp_bucket;
	*dev_off = d->wp_bucket * d->bucket_size + d->wp_fill;
	*gen = d->b[d->wp_bucket].gen;
	*units = n;
	d->wp_fill += (u64)n * unit;
	d->b[d->wp_bucket].inflight += n;
	bfs_mutex_unlock(&d->lock);
	return 0;
}

int bfs_data_space_get(struct bfs_fs_data *d, u32 bytes, u64 *dev_off, u64 *bucket, u32 *gen)
{
	u32 units;

	return bfs_data_space_get_multi(d, bytes, 1, dev_off, bucket, gen, &units);
}

void bfs_data_space_abort(struct bfs_fs_data *d, u64 bucket)
{
	bfs_mutex_lock(&d->lock);
	d->b[bucket].inflight--;
	maybe_free_locked(d, bucket);
	bfs_mutex_unlock(&d->lock);
}

void bfs_data_stats(struct bfs_fs_data *d, u64 *total, u64 *free_bytes)
{
	u64 fb = bfs_alloc_nr_free_buckets(d->a), f, reserve;

	bfs_mutex_lock(&d->lock);
	f = (fb + d->nr_pending) * d->bucket_size;
	if (d->wp_bucket)
		f += d->bucket_size - d->wp_fill;
	bfs_mutex_unlock(&d->lock);
	reserve = reserve_slots(d) * d->node_size;
	*free_bytes = f > reserve ? f - reserve : 0;
	*total = bfs_alloc_nr_total(d->a) * d->node_size;
}

/* ---- accounting ---- */

void data_update_init(struct data_update *u, struct bfs_trans *t)
{
	*u = (struct data_update){ .t = t };
}

void data_update_exit(struct data_update *u)
{
	bfs_free(u->d);
	u->d = NULL;
	u->nr = u->cap = 0;
}

int data_update_add(struct data_update *u, u64 bucket, s64 sectors, u32 inflight)
{
	size_t i;

	for (i = 0; i < u->nr; i++) {
		if (u->d[i].bucket == bucket) {
			u->d[i].sectors += sectors;
			u->d[i].inflight += inflight;
			return 0;
		}
	}
	if (u->nr == u->cap) {
		size_t cap = u->cap ? u->cap * 2 : 16;
		struct data_delta *p = bfs_realloc(u->d, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		u->d = p;
		u->cap = cap;
	}
	u->d[u->nr++] = (struct data_delta){ .bucket = bucket, .sectors = sectors,
					     .inflight = inflight };
	return 0;
}

/* the sectors of old extent @k inside [start, end) leave its bucket and the inode */
static int account_old(struct bfs_fs_data *d, struct data_update *u, const struct bfs_bkey *k,
		       u64 start, u64 end)
{
	u64 ks = bfs_bkey_start(k), ke = le64_to_cpu(k->offset), n;

	if (k->type != BFS_KEY_EXTENT)
		return 0;
	n = BFS_MIN(end, ke) - BFS_MAX(start, ks);
	u->inode_sectors -= (s64)n;
	if (!extent_is_unwritten(k)) {
		const struct bfs_extent_v *v = extent_val(k);
		u64 b = bfs_data_bucket_of(d, le64_to_cpu(v->offset));

		/* a stale pointer's sectors were never counted in the new life */
		if (bfs_data_bucket_valid(d, b) && le32_to_cpu(v->gen) == bfs_data_bucket_gen(d, b))
			return data_update_add(u, b, -(s64)n, 0);
	}
	return 0;
}

static int account_scan(struct bfs_fs_data *d, struct data_update *u, u64 ino, u64 start,
			u64 end)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(ino, start, 0), 0);
	for_each_btree_key(&it, k, ret) {
		if (le64_to_cpu(k->inode) != ino || bfs_bkey_start(k) >= end)
			break;
		ret = account_old(d, u, k, start, end);
		if (ret)
			break;
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

int data_range_has_extents(struct bfs_fs_data *d, u64 ino, u64 start, u64 end)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret, found = 0;

	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(ino, start, 0), 0);
	for_each_btree_key(&it, k, ret) {
		/* extents do not overlap: the first one ending after start decides */
		found = le64_to_cpu(k->inode) == ino && bfs_bkey_start(k) < end;
		break;
	}
	bfs_btree_iter_exit(&it);
	return ret ? ret : found;
}

/*
 * An overwrite of written data (the common case: a random write into a
 * file laid out before) finds each old extent with a point lookup, which
 * copies one key; an iterator batches the keys after it too, and for a
 * 4 KiB write into 16 KiB chunks that batch was a seventh of the FUSE
 * daemon's time under fio (doc/benchmarks.md, session 5, randwrite).  At
 * the first hole the rest is scanned.
 */
int data_account_overwrite(struct bfs_fs_data *d, struct data_update *u, u64 ino,
			   u64 start, u64 end)
{
	u64 kbuf[EXTENT_KEY_U64S + 8];
	const struct bfs_bkey *k = (const struct bfs_bkey *)kbuf;
	int ret;

	while (start < end) {
		ret = bfs_btree_lookup(d->c, BFS_BTREE_EXTENTS, BFS_POS(ino, start, 0), kbuf,
				       sizeof(kbuf));
		if (ret == -ENOENT || ret == -ENOBUFS)
			return account_scan(d, u, ino, start, end);
		if (ret)
			return ret;
		ret = account_old(d, u, k, start, end);
		if (ret)
			return ret;
		start = le64_to_cpu(k->offset);
	}
	return 0;
}

static void alloc_key(u64 *buf, u64 bucket, u32 gen, u64 live)
{
	struct bfs_bkey *k = (struct bfs_bkey *)buf;
	struct bfs_alloc_v *v = (struct bfs_alloc_v *)k->v;

	bfs_bkey_init(k, BFS_KEY_ALLOC, BFS_POS(bucket, 0, 0), BFS_ALLOC_VAL_U64S);
	memset(v, 0, sizeof(*v));
	v->gen = cpu_to_le32(gen);
	v->data_type = live ? BFS_BUCKET_USER : BFS_BUCKET_FREE;
	v->live_sectors = cpu_to_le64(live);
}

/*
 * Called by the commit with the alloc key's leaf write-locked, just before
 * it is applied (bfs_trans_set_fixup()): the bucket's live sectors as of
 * the commits applied before this one, plus ours.  A commit that writes
 * the same key holds the same leaf lock from here to its journal append,
 * so the journal has the values in the order they were computed, and
 * replay ends with the last.
 */
static void alloc_fixup(void *ctx, enum bfs_btree_id id, struct bfs_bkey *k)
{
	struct data_update *u = ctx;
	struct bfs_fs_data *d = u->fixup_d;
	u64 b = le64_to_cpu(k->inode);
	size_t i;

	if (id != BFS_BTREE_ALLOC || k->type != BFS_KEY_ALLOC) {
		if (u->key_fixup)
			u->key_fixup(u->key_fixup_ctx, id, k);
		return;
	}
	for (i = 0; i < u->nr; i++) {
		struct data_delta *x = &u->d[i];
		struct bfs_bucket *bk = &d->b[x->bucket];

		if (x->bucket != b || !x->staged || x->fixed)
			continue;
		bfs_mutex_lock(&d->lock);
		if ((s64)bk->live + x->sectors < 0) {
			bfs_warn("data: bucket %" PRIu64 " live sectors would go negative (%" PRId64 ")",
				 x->bucket, (s64)bk->live + x->sectors);
			x->sectors = -(s64)bk->live;
		}
		bk->live += (u64)x->sectors;
		alloc_key((u64 *)k, b, bk->gen, bk->live);
		x->fixed = true;
		bfs_mutex_unlock(&d->lock);
		return;
	}
}

int data_update_commit(struct bfs_fs_data *d, struct data_update *u, u64 *seq)
{
	u64 buf[BFS_BKEY_U64S + BFS_ALLOC_VAL_U64S];
	size_t i;
	int ret = 0;

	bfs_mutex_lock(&d->lock);
	for (i = 0; i < u->nr; i++)
		d->b[u->d[i].bucket].committing++;	/* not released before we return */
	for (i = 0; i < u->nr && !ret; i++) {
		struct data_delta *x = &u->d[i];
		struct bfs_bucket *bk = &d->b[x->bucket];

		if (!x->sectors && !x->inflight)
			continue;
		/* the value is a placeholder until alloc_fixup() */
		alloc_key(buf, x->bucket, bk->gen, bk->live);
		ret = bfs_trans_update(u->t, BFS_BTREE_ALLOC, (struct bfs_bkey *)buf);
		x->staged = !ret;
	}
	bfs_mutex_unlock(&d->lock);
	if (!ret) {
		u->fixup_d = d;
		bfs_trans_set_fixup(u->t, alloc_fixup, u);
		ret = bfs_trans_commit(u->t, seq);
	}
	bfs_mutex_lock(&d->lock);
	for (i = 0; i < u->nr; i++) {
		struct data_delta *x = &u->d[i];
		struct bfs_bucket *bk = &d->b[x->bucket];

		/* a failed commit after alloc_fixup(): nothing was applied, or the core is dead */
		if (ret && x->fixed)
			bk->live -= (u64)x->sectors;
		x->staged = x->fixed = false;
		bk->inflight -= x->inflight;
		bk->committing--;
		maybe_free_locked(d, x->bucket);
	}
	bfs_mutex_unlock(&d->lock);
	return ret;
}

void data_update_abort(struct bfs_fs_data *d, struct data_update *u)
{
	size_t i;

	bfs_mutex_lock(&d->lock);
	for (i = 0; i < u->nr; i++) {
		d->b[u->d[i].bucket].inflight -= u->d[i].inflight;
		maybe_free_locked(d, u->d[i].bucket);
	}
	bfs_mutex_unlock(&d->lock);
}

/* ---- open ---- */

static int load_alloc(struct bfs_fs_data *d, u64 *stored_live)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, d->c, BFS_BTREE_ALLOC, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_alloc_v *v = (const struct bfs_alloc_v *)k->v;
		u64 b = le64_to_cpu(k->inode);

		if (k->type != BFS_KEY_ALLOC)
			continue;
		if (!bfs_data_bucket_valid(d, b)) {
			bfs_warn("data: alloc key for bucket %" PRIu64 " outside the device", b);
			continue;
		}
		if (d->b[b].gen != le32_to_cpu(v->gen))
			d->b[b].gen = le32_to_cpu(v->gen);
		stored_live[b] = le64_to_cpu(v->live_sectors);
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

/*
 * Live sectors are recounted from the extents at every open: the alloc keys
 * are written in the same transactions, so they agree unless something is
 * wrong, and then the extents are the truth (and a stale pointer is named).
 */
static u64 live_sweeps;

u64 bfs_fs_live_sweep_count(void)
{
	return __atomic_load_n(&live_sweeps, __ATOMIC_RELAXED);
}

static int count_extents(struct bfs_fs_data *d)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	__atomic_add_fetch(&live_sweeps, 1, __ATOMIC_RELAXED);
	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_extent_v *v;
		u64 b;

		if (k->type != BFS_KEY_EXTENT || extent_is_unwritten(k))
			continue;
		v = extent_val(k);
		b = bfs_data_bucket_of(d, le64_to_cpu(v->offset));
		if (!bfs_data_bucket_valid(d, b) || le32_to_cpu(v->gen) != d->b[b].gen) {
			bfs_warn("data: inode %" PRIu64 " sectors %" PRIu64 "..%" PRIu64
				 ": stale or bad pointer to device offset %" PRIu64 " (gen %u)",
				 le64_to_cpu(k->inode), bfs_bkey_start(k), le64_to_cpu(k->offset),
				 le64_to_cpu(v->offset), le32_to_cpu(v->gen));
			continue;
		}
		d->b[b].live += bfs_bkey_size(k);
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

/*
 * The counts of a walk the caller made of this core's extents btree
 * (bfs_fs_opts.known_live): what count_extents() would find, as long as
 * every bucket's extents carry the gen its alloc key gives it.  1: taken;
 * 0: a bucket disagrees (stale pointers), count_extents() must sweep and
 * name them.
 */
static int take_known_live(struct bfs_fs_data *d, const struct bfs_bucket_live *known)
{
	u64 b;

	for (b = d->first_bucket; b < d->nbuckets; b++)
		if (known[b].sectors && known[b].gen != d->b[b].gen)
			return 0;
	for (b = d->first_bucket; b < d->nbuckets; b++)
		if (d->b[b].live != known[b].sectors)	/* see bfs_data_table_alloc() */
			d->b[b].live = known[b].sectors;
	return 1;
}

/*
 * A data bucket that btree nodes use too: the node was placed there before
 * this layer could say the bucket is taken (see doc/format/data.md, "Open").
 * Take the rest of its slots and never give the bucket back to the metadata
 * allocator this session: its node slots are the btree's to free.
 */
static void mark_shared(struct bfs_fs_data *d, u64 b)
{
	u64 off;

	bfs_err("data: bucket %" PRIu64 " holds file data but btree nodes use it too", b);
	for (off = b * d->bucket_size; off < (b + 1) * d->bucket_size; off += d->node_size)
		bfs_alloc_mark_used(d->a, off);
	d->b[b].shared = true;
}

/*
 * The bucket table is a mapping of its own (24 bytes a bucket): zero
 * without being touched, so the buckets nothing writes (free space, for
 * fsck and the tools every bucket without data) cost no resident memory,
 * where calloc() may hand back heap pages it has to clear, all of them.
 */
static size_t table_bytes(u64 nbuckets)
{
	/* a mapping cannot be empty */
	return (size_t)BFS_MAX(nbuckets, (u64)1) * sizeof(struct bfs_bucket);
}

struct bfs_bucket *bfs_data_table_alloc(u64 nbuckets)
{
	if (nbuckets > SIZE_MAX / sizeof(struct bfs_bucket))
		return NULL;
	return bfs_map_anon(table_bytes(nbuckets));
}

void bfs_data_table_free(struct bfs_bucket *b, u64 nbuckets)
{
	bfs_unmap(b, table_bytes(nbuckets));
}

int bfs_data_alloc_setup(struct bfs_fs_data *d)
{
	d->a = bfs_core_alloc(d->c);
	d->b = bfs_data_table_alloc(d->nbuckets);
	if (!d->b)
		return -ENOMEM;
	d->find_cursor = d->nbuckets;
	bfs_mutex_init(&d->lock);
	bfs_mutex_init(&d->gc_lock);
	/* room for the btrees to split and rewrite nodes, even when data filled the rest */
	d->reserve_slots = bfs_alloc_nr_total(d->a) / 64;
	return 0;
}

/*
 * Bucket @b holds data when replay ends, but nodes of the btrees just loaded
 * are in it already.  No crash leaves that (a node's slot goes back to data
 * only once no root on disk reaches it), so something is wrong - unless the
 * alloc key is, which the extents counted after replay tell
 * (bfs_data_alloc_init() calls the bucket shared only if they point into
 * it).  Until then its free slots are held, so replay's splits do not land
 * on what may be data.
 */
static int hold_free_slots(struct bfs_fs_data *d, u64 b)
{
	u64 off;

	bfs_log(BFS_LOG_DEBUG, "data: bucket %" PRIu64 " holds data by its alloc key and btree "
		"nodes before replay: the replayed extents decide", b);
	d->b[b].premark_nodes = true;
	for (off = b * d->bucket_size; off < (b + 1) * d->bucket_size; off += d->node_size) {
		if (d->nr_held_slots == d->cap_held_slots) {
			size_t cap = d->cap_held_slots ? d->cap_held_slots * 2 : 64;
			u64 *n = bfs_realloc(d->held_slots, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			d->held_slots = n;
			d->cap_held_slots = cap;
		}
		if (!bfs_alloc_mark_used(d->a, off))
			d->held_slots[d->nr_held_slots++] = off;
	}
	return 0;
}

/* after replay: give the held slots back, but for buckets found shared */
static void release_held_slots(struct bfs_fs_data *d)
{
	size_t i;

	for (i = 0; i < d->nr_held_slots; i++) {
		u64 b = bfs_data_bucket_of(d, d->held_slots[i]);

		if (!d->b[b].shared)
			bfs_alloc_free_now(d->a, d->held_slots[i]);
		d->b[b].premark_nodes = false;
	}
	bfs_free(d->held_slots);
	d->held_slots = NULL;
	d->nr_held_slots = d->cap_held_slots = 0;
}

/* before replay: take bucket @b away from the metadata allocator */
static int premark(struct bfs_fs_data *d, u64 b)
{
	if (!bfs_data_bucket_valid(d, b) || d->b[b].premarked || d->b[b].premark_nodes)
		return 0;
	if (bfs_alloc_bucket_get(d->a, b))
		return hold_free_slots(d, b);
	d->b[b].premarked = true;
	return 0;
}

static bool alloc_says_data(const struct bfs_bkey *k)
{
	const struct bfs_alloc_v *v = (const struct bfs_alloc_v *)k->v;

	return v->data_type != BFS_BUCKET_FREE || le64_to_cpu(v->live_sectors);
}

/*
 * Before replay, once every replayed alloc key has been seen
 * (bfs_data_premark_key()): take each bucket that holds data when replay
 * ends - by the last alloc key replayed for it, or by the committed one if
 * no key replays it.  A bucket that held data only part way through the
 * journal window is not taken: nothing is written during replay, and what
 * its splits put there is the filesystem once replay has ended.  Such a
 * bucket may even hold nodes of the loaded trees: a checkpoint that did not
 * finish links nodes with in-place writes (a parent's new bset) that went
 * into a bucket emptied since the last finished one, while the alloc keys
 * saying so are in nodes only its new roots reach.  (Taking them was wrong
 * twice: the open called such a bucket shared, and a full filesystem was
 * left without the node slots its replay needed: the open failed, ENOSPC.)
 */
int bfs_data_premark_committed(struct bfs_fs_data *d)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 b;
	int ret, err = 0;

	bfs_btree_iter_init(&it, d->c, BFS_BTREE_ALLOC, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		b = le64_to_cpu(k->inode);
		if (k->type == BFS_KEY_ALLOC && bfs_bkey_val_u64s(k) >= BFS_ALLOC_VAL_U64S &&
		    bfs_data_bucket_valid(d, b) && alloc_says_data(k))
			d->b[b].replayed |= BUCKET_COMMITTED_DATA;
	}
	bfs_btree_iter_exit(&it);
	for (b = d->first_bucket; b < d->nbuckets; b++) {
		u8 r = d->b[b].replayed;
		bool data = r & BUCKET_REPLAYED ? r & BUCKET_REPLAYED_DATA : r & BUCKET_COMMITTED_DATA;

		if (r)
			d->b[b].replayed = 0;	/* a write would make the page resident */
		/* data may be here: conservative until the extents are counted after replay */
		if (data && !err)
			err = premark(d, b);
		else if ((r & (BUCKET_COMMITTED_DATA | BUCKET_REPLAYED_DATA_ONCE)) &&
			 bfs_alloc_bucket_in_use(d->a, b))
			bfs_log(BFS_LOG_DEBUG, "data: bucket %" PRIu64 ": btree nodes are in it before "
				"replay, and the replay leaves it without data", b);
	}
	if (ret == -EUCLEAN && bfs_core_is_read_only(d->c))
		ret = 0;	/* bfs_fs_data_init() says more */
	return ret ? ret : err;
}

void bfs_data_premark_key(struct bfs_fs_data *d, const struct bfs_bkey *k)
{
	u64 b = le64_to_cpu(k->inode);
	u8 *r;

	if (k->type != BFS_KEY_ALLOC || bfs_bkey_val_u64s(k) < BFS_ALLOC_VAL_U64S ||
	    !bfs_data_bucket_valid(d, b))
		return;
	/* keys come in journal order: the last one is what replay leaves */
	r = &d->b[b].replayed;
	*r = (u8)((*r & ~BUCKET_REPLAYED_DATA) | BUCKET_REPLAYED);
	if (alloc_says_data(k))
		*r |= BUCKET_REPLAYED_DATA | BUCKET_REPLAYED_DATA_ONCE;
}

int bfs_data_alloc_init(struct bfs_fs_data *d)
{
	u64 *stored, b;
	int ret;

	stored = bfs_calloc(d->nbuckets, sizeof(*stored));
	if (!stored)
		return -ENOMEM;
	ret = load_alloc(d, stored);
	if (!ret && d->fs->check_only) {
		/* nothing is written, and fsck recounts: the alloc keys' word is enough */
		for (b = d->first_bucket; b < d->nbuckets; b++) {
			/* written only where they change: the free buckets' pages stay unmapped */
			if (d->b[b].premarked)
				d->b[b].premarked = false;
			if (d->b[b].live != stored[b])
				d->b[b].live = stored[b];
			if (stored[b]) {
				d->b[b].data = true;
				d->nr_data_buckets++;
				if (d->b[b].premark_nodes)
					mark_shared(d, b);
			}
		}
		release_held_slots(d);
		bfs_free(stored);
		return 0;
	}
	if (!ret && !(d->fs->known_live && take_known_live(d, d->fs->known_live)))
		ret = count_extents(d);
	if (ret == -EUCLEAN && d->fs->read_only) {
		/* tools look at damaged filesystems read-only: go on with what was read */
		bfs_warn("data: space accounting incomplete (error %d), read-only open goes on", ret);
		ret = 0;
	}
	for (b = d->first_bucket; b < d->nbuckets && !ret; b++) {
		struct bfs_bucket *bk = &d->b[b];
		bool premarked = bk->premarked;

		if (premarked)
			bk->premarked = false;	/* not written otherwise: see bfs_data_table_alloc() */
		if (bk->live != stored[b])
			bfs_warn("data: bucket %" PRIu64 " has %" PRIu64 " live sectors, alloc key says %"
				 PRIu64, b, bk->live, stored[b]);
		if (!bk->live) {
			/* marked before replay, empty after it: metadata may have it back */
			if (premarked && !bk->shared)
				bfs_alloc_bucket_put(d->a, b);
			continue;
		}
		bk->data = true;
		d->nr_data_buckets++;
		/* premark_nodes: btree nodes in it since before replay, and data after it */
		if (!premarked && bfs_alloc_bucket_get(d->a, b))
			mark_shared(d, b);
	}
	release_held_slots(d);
	bfs_free(stored);
	return ret;
}

int bfs_data_bucket_adopt(struct bfs_fs_data *d, u64 b, u32 gen, u64 live)
{
	struct bfs_bucket *bk;
	int ret = 0;

	if (!bfs_data_bucket_valid(d, b))
		return -EINVAL;
	bfs_mutex_lock(&d->lock);
	bk = &d->b[b];
	__atomic_store_n(&bk->gen, gen, __ATOMIC_RELAXED);
	if (live && !bk->data && !bk->open) {
		ret = bfs_alloc_bucket_get(d->a, b);
		if (ret == -EBUSY) {
			/* a node was placed there since open: keep both, as at open */
			mark_shared(d, b);
			ret = 0;
		}
		if (!ret) {
			bk->data = true;
			d->nr_data_buckets++;
		}
	}
	if (!ret)
		bk->live = live;
	bfs_mutex_unlock(&d->lock);
	return ret;
}

void bfs_data_alloc_exit(struct bfs_fs_data *d)
{
	if (!d->b)
		return;
	bfs_mutex_destroy(&d->lock);
	bfs_mutex_destroy(&d->gc_lock);
	bfs_data_table_free(d->b, d->nbuckets);
	bfs_free(d->pending);
	bfs_free(d->held_slots);
	d->held_slots = NULL;
	d->b = NULL;
}
