// SPDX-License-Identifier: MIT
/*
 * Garbage collection of data buckets.
 *
 * A bucket whose live sectors drop to zero comes back by itself once the
 * commit that emptied it is durable (bfs_data_release_pending()).  But an
 * overwrite that trims an extent leaves the rest of its chunk live, so a
 * workload of small random overwrites leaves many buckets partly dead.
 * Copy-GC picks closed buckets at most 3/4 live, reads every extent still
 * pointing into them (verifying checksums), writes the data again through
 * the write point and replaces the extent keys, so the victims empty.
 *
 * The key is replaced under the inode's lock.  A writer out of space drops
 * its own inode lock and runs GC holding none, so GC may wait for inode
 * locks: no thread waits for gc_lock while holding an inode lock (callers
 * that cannot drop theirs only trylock gc_lock).  Those callers' GC only
 * trylocks inode locks and skips busy inodes (their buckets then do not
 * empty this time); their own lock stripe is exclusively theirs, with no
 * uncommitted extent change (bfs_data_copygc()'s contract), so those inodes
 * are moved without locking.  Before replacing, the key is looked up again
 * and must still be the one that was read.
 */
#include <inttypes.h>

#include <bfs/log.h>

#include "data.h"
#include "range_lock.h"

#define GC_MAX_VICTIMS	16

struct gc_ref {
	u64	ino, start, end;
	u64	dev_off;
	u32	gen;
};

struct gc_state {
	struct bfs_fs_data *d;
	u64	from;		/* evacuation: every bucket from here on is a victim */
	u64	victims[GC_MAX_VICTIMS];
	unsigned nr_victims;
	struct gc_ref *refs;
	size_t	nr_refs, cap_refs;
	bool	busy;		/* skipped extents of inodes locked by others */
	/* evacuation: told extents done of the total (may be NULL) */
	void	(*progress)(void *ctx, u64 done, u64 total);
	void	*pctx;
};

/*
 * Closed, idle buckets at most 3/4 live, emptiest first: each frees at
 * least a quarter of a bucket.
 */
static void pick_victims(struct gc_state *s)
{
	struct bfs_fs_data *d = s->d;
	u64 max_live = (d->bucket_size >> BFS_SECTOR_SHIFT) * 3 / 4, b;
	unsigned i;

	bfs_mutex_lock(&d->lock);
	for (b = d->first_bucket; b < d->nbuckets; b++) {
		struct bfs_bucket *bk = &d->b[b];

		if (!bk->data || bk->open || bk->inflight || bk->pending_free || !bk->live ||
		    bk->live > max_live)
			continue;
		if (s->nr_victims == GC_MAX_VICTIMS &&
		    bk->live >= d->b[s->victims[GC_MAX_VICTIMS - 1]].live)
			continue;
		if (s->nr_victims < GC_MAX_VICTIMS)
			s->nr_victims++;
		/* insertion into the sorted list */
		for (i = s->nr_victims - 1; i && d->b[s->victims[i - 1]].live > bk->live; i--)
			s->victims[i] = s->victims[i - 1];
		s->victims[i] = b;
	}
	bfs_mutex_unlock(&d->lock);
}

static bool is_victim(struct gc_state *s, u64 b)
{
	unsigned i;

	if (s->from)
		return b >= s->from;
	for (i = 0; i < s->nr_victims; i++)
		if (s->victims[i] == b)
			return true;
	return false;
}

/* every extent pointing into a victim (one pass over the extents btree) */
static int collect_refs(struct gc_state *s)
{
	struct bfs_fs_data *d = s->d;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_extent_v *v;
		u64 b;

		if (k->type != BFS_KEY_EXTENT || extent_is_unwritten(k))
			continue;
		v = extent_val(k);
		b = bfs_data_bucket_of(d, le64_to_cpu(v->offset));
		if (!is_victim(s, b) || le32_to_cpu(v->gen) != bfs_data_bucket_gen(d, b))
			continue;
		if (s->nr_refs == s->cap_refs) {
			size_t cap = s->cap_refs ? s->cap_refs * 2 : 64;
			struct gc_ref *p = bfs_realloc(s->refs, cap * sizeof(*p));

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			s->refs = p;
			s->cap_refs = cap;
		}
		s->refs[s->nr_refs++] = (struct gc_ref){
			.ino = le64_to_cpu(k->inode),
			.start = bfs_bkey_start(k),
			.end = le64_to_cpu(k->offset),
			.dev_off = le64_to_cpu(v->offset),
			.gen = le32_to_cpu(v->gen),
		};
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

/* the inode lock of r->ino is held: move the extent if it is still there */
static int move_extent(struct gc_state *s, const struct gc_ref *r, u8 *buf)
{
	struct bfs_fs_data *d = s->d;
	u64 kbuf[EXTENT_KEY_U64S], bytes = (r->end - r->start) << BFS_SECTOR_SHIFT;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	struct data_chunk ch;
	struct data_update u;
	struct bfs_trans *t;
	int ret;

	if (bytes > d->chunk_max)
		return -ESTALE;
	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(r->ino, r->start, 0), 0);
	ret = bfs_btree_iter_peek(&it, &k);
	if (!ret && (k->type != BFS_KEY_EXTENT || extent_is_unwritten(k) ||
		     le64_to_cpu(k->inode) != r->ino || bfs_bkey_start(k) != r->start ||
		     le64_to_cpu(k->offset) != r->end ||
		     le64_to_cpu(extent_val(k)->offset) != r->dev_off ||
		     le32_to_cpu(extent_val(k)->gen) != r->gen))
		ret = -ESTALE;	/* changed since the scan: leave it */
	if (!ret)
		ret = bfs_data_extent_read(d, k, 0, buf, bytes);
	bfs_btree_iter_exit(&it);
	if (ret)
		return ret == -ENOENT ? -ESTALE : ret;

	ret = bfs_data_chunk_write(d, buf, (u32)bytes, &ch);
	if (ret)
		return ret;
	ret = bfs_trans_begin(d->c, &t);
	if (ret) {
		bfs_data_space_abort(d, ch.bucket);
		return ret;
	}
	data_update_init(&u, t);
	/* same range, same inode: the inode's sectors do not change */
	ret = data_account_overwrite(d, &u, r->ino, r->start, r->end);
	if (!ret)
		ret = bfs_trans_update(t, BFS_BTREE_EXTENTS,
				       bfs_extent_key(kbuf, r->ino, r->start, r->end, &ch,
						      d->csum_type, 0));
	if (!ret)
		ret = data_update_add(&u, ch.bucket, (s64)(r->end - r->start), 1);
	if (ret) {
		bfs_data_space_abort(d, ch.bucket);
		bfs_trans_end(t);
		data_update_exit(&u);
		return ret;
	}
	ret = data_update_commit(d, &u, NULL);
	bfs_trans_end(t);
	data_update_exit(&u);
	return ret;
}

static int move_refs(struct gc_state *s, u64 held_ino)
{
	struct bfs_fs *fs = s->d->fs;
	u8 *buf = bfs_malloc(s->d->chunk_max);
	size_t i;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < s->nr_refs && !ret; i++) {
		const struct gc_ref *r = &s->refs[i];
		bool mine = held_ino != BFS_GC_NO_INODE &&
			    r->ino % BFS_INODE_LOCKS == held_ino % BFS_INODE_LOCKS;

		/* range writers of the file (range_lock.h) count as holders of its lock */
		if (held_ino == BFS_GC_NO_INODE) {
			bfs_inode_lock_raw(fs, r->ino);
		} else if (mine ? bfs_range_busy(fs, r->ino) : !bfs_inode_trylock(fs, r->ino)) {
			s->busy = true;
			continue;
		}
		ret = move_extent(s, r, buf);
		if (!mine)
			bfs_inode_unlock(fs, r->ino);
		if (ret == -ESTALE || ret == -EIO)
			ret = 0;	/* gone meanwhile, or unreadable: stays where it is */
		if (s->progress)
			s->progress(s->pctx, i + 1, s->nr_refs);
	}
	bfs_free(buf);
	return ret;
}

int bfs_data_copygc(struct bfs_fs_data *d, u64 held_ino, bool *freed, bool *busy)
{
	struct gc_state s = { .d = d };
	size_t pending;
	unsigned i;
	int ret;

	*freed = false;
	*busy = false;
	if (held_ino == BFS_GC_NO_INODE) {
		bfs_mutex_lock(&d->gc_lock);
	} else if (!bfs_mutex_trylock(&d->gc_lock)) {
		/* the running GC may be waiting for our inode lock */
		*busy = true;
		return 0;
	}
	/*
	 * Writers out of space queue up here: when the pass before ours made
	 * room, take it instead of moving more data (which would use the room
	 * up again, and starve every writer while passes follow each other).
	 */
	if (bfs_data_space_available(d)) {
		*freed = true;
		bfs_mutex_unlock(&d->gc_lock);
		return 0;
	}
	/* buckets already empty only wait for a journal flush: the cheap win */
	bfs_mutex_lock(&d->lock);
	pending = d->nr_pending;
	bfs_mutex_unlock(&d->lock);
	if (pending) {
		ret = bfs_data_release_pending(d, true);
		*freed = !ret;
		goto out;
	}
	pick_victims(&s);
	if (!s.nr_victims) {
		ret = 0;
		goto out;
	}
	ret = collect_refs(&s);
	if (!ret) {
		bfs_data_gc_reserve(true);
		ret = move_refs(&s, held_ino);
		bfs_data_gc_reserve(false);
		*busy = s.busy;
	}
	bfs_mutex_lock(&d->lock);
	for (i = 0; i < s.nr_victims; i++)
		if (!d->b[s.victims[i]].live)
			*freed = true;
	bfs_mutex_unlock(&d->lock);
	if (*freed && !ret)
		ret = bfs_data_release_pending(d, true);
out:
	bfs_mutex_unlock(&d->gc_lock);
	bfs_free(s.refs);
	/* space from the reserve was used to move: only report real progress */
	if (ret == -ENOSPC)
		ret = 0;
	return ret;
}

int bfs_data_evacuate(struct bfs_fs_data *d, u64 fence,
		      void (*progress)(void *ctx, u64 done, u64 total), void *ctx,
		      u64 *need_bytes, u64 *left)
{
	struct gc_state s = { .d = d, .from = fence, .progress = progress, .pctx = ctx };
	u64 b, live = 0, free_bytes;
	int ret = 0;

	*left = 0;
	*need_bytes = 0;
	if (fence <= d->first_bucket || fence > d->nbuckets)
		return -EINVAL;
	bfs_mutex_lock(&d->gc_lock);
	live = bfs_data_fence(d, fence, &free_bytes);
	*need_bytes = live << BFS_SECTOR_SHIFT;
	/* moving needs whole buckets: one more than the data, at least */
	if (*need_bytes + d->bucket_size > free_bytes) {
		ret = -ENOSPC;
		goto out;
	}
	if (!live)
		goto out;
	ret = collect_refs(&s);
	if (!ret) {
		bfs_data_gc_reserve(true);
		ret = move_refs(&s, BFS_GC_NO_INODE);
		bfs_data_gc_reserve(false);
	}
	if (!ret)
		ret = bfs_data_release_pending(d, true);
	bfs_mutex_lock(&d->lock);
	for (b = fence; b < d->nbuckets; b++)
		*left += d->b[b].live;
	bfs_mutex_unlock(&d->lock);
out:
	bfs_mutex_unlock(&d->gc_lock);
	bfs_free(s.refs);
	return ret;
}
