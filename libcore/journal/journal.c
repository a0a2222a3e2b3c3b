// SPDX-License-Identifier: MIT
/*
 * Journal write side: appends into the open entry, writing entries, group
 * commit, ring space and reclaim.
 *
 * Two entry buffers: appends copy into the open one (buf[cur]) under the
 * lock; a writer swaps buffers and writes the closed one without the lock, so
 * appends carry on into the next entry while a write is in flight.  Exactly
 * one thread at a time owns the write path (j->writing); everyone else who
 * needs a write waits on j->wait and usually finds, when woken, that the
 * write it waited for covered its seq too (group commit).
 *
 * Every entry is written as a flush entry: bfs_dev_flush() first, so the
 * btree nodes (and everything else) written before it are durable before the
 * entry can be, then the entry with FUA.  So the newest valid entry on disk is
 * always a complete, durable point to replay to, and a crash can only tear
 * the one entry being written.  Entries are written when someone flushes or
 * when the open entry is full (about a bucket of updates), so the cost is
 * two device flushes per commit or per bucket of journal.
 */
#include "journal_types.h"

#include <bfs/checksum.h>
#include <bfs/log.h>

#include <inttypes.h>

/* the journal whose write path this thread owns (so hooks cannot wait for themselves) */
static __thread struct bfs_journal *journal_writer;

/* ---- open / close ---- */

static int geom_check(const struct bfs_journal_geom *g)
{
	u64 end;

	if (!g->dev || !bfs_is_pow2(g->block_size) || g->block_size < BFS_MIN_BLOCK_SIZE ||
	    g->block_size > BFS_MAX_BLOCK_SIZE)
		return -EINVAL;
	if (!bfs_is_pow2(g->bucket_size) || g->bucket_size < g->block_size ||
	    g->bucket_size < sizeof(struct bfs_jset) || g->bucket_size > BFS_MAX_BUCKET_SIZE)
		return -EINVAL;
	/* two buckets at least: one being filled, one kept free for the next entry */
	if (g->nbuckets < 2 || g->start % g->block_size)
		return -EINVAL;
	end = g->start + (u64)g->nbuckets * g->bucket_size;
	if (end > bfs_dev_size(g->dev))
		return -EINVAL;
	return 0;
}

void bfs_journal_geom_from_sb(const struct bfs_sb *sb, struct bfs_dev *dev,
			      struct bfs_journal_geom *g)
{
	*g = (struct bfs_journal_geom){
		.dev		= dev,
		.start		= le64_to_cpu(sb->journal_bucket) * le32_to_cpu(sb->bucket_size),
		.nbuckets	= le32_to_cpu(sb->journal_nbuckets),
		.bucket_size	= le32_to_cpu(sb->bucket_size),
		.block_size	= le32_to_cpu(sb->block_size),
	};
	memcpy(g->uuid, sb->uuid, sizeof(g->uuid));
}

int bfs_journal_open(const struct bfs_journal_geom *g, struct bfs_journal **out)
{
	struct bfs_journal *j;
	int ret = geom_check(g);

	if (ret) {
		bfs_err("journal: bad geometry: start %" PRIu64 " nbuckets %u bucket_size %u block_size %u",
			g->start, g->nbuckets, g->bucket_size, g->block_size);
		return ret;
	}
	j = bfs_zalloc(sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->dev = g->dev;
	j->start = g->start;
	j->nbuckets = g->nbuckets;
	j->bucket_size = g->bucket_size;
	j->block_size = g->block_size;
	memcpy(j->uuid, g->uuid, sizeof(j->uuid));
	j->max_bytes = BFS_MIN(g->bucket_size, (u32)BFS_JSET_MAX_BYTES);
	j->max_u64s = (j->max_bytes - sizeof(struct bfs_jset)) / 8;
	j->soft_u64s = j->max_u64s / 4;
	j->cur_seq = 1;
	j->last_seq = 1;

	j->bucket_seq = bfs_calloc(j->nbuckets, sizeof(*j->bucket_seq));
	for (unsigned i = 0; i < 2; i++)
		j->buf[i].jset = bfs_aligned_alloc(BFS_MAX(j->block_size, 4096U), j->max_bytes);
	if (!j->bucket_seq || !j->buf[0].jset || !j->buf[1].jset) {
		bfs_free(j->bucket_seq);
		bfs_free(j->buf[0].jset);
		bfs_free(j->buf[1].jset);
		bfs_free(j);
		return -ENOMEM;
	}
	bfs_mutex_init(&j->lock);
	bfs_cond_init(&j->wait);
	bfs_cond_init(&j->flusher_wake);
	*out = j;
	return 0;
}

void bfs_journal_close(struct bfs_journal *j)
{
	if (!j)
		return;
	bfs_journal_stop_flusher(j);
	bfs_cond_destroy(&j->flusher_wake);
	bfs_cond_destroy(&j->wait);
	bfs_mutex_destroy(&j->lock);
	bfs_free(j->buf[0].jset);
	bfs_free(j->buf[1].jset);
	bfs_free(j->bucket_seq);
	bfs_free(j);
}

/* ---- ring space ---- */

/* may bucket @b be overwritten? only if no entry the newest durable entry still needs is in it */
static bool bucket_reusable(const struct bfs_journal *j, u32 b)
{
	return !j->bucket_seq[b] || j->bucket_seq[b] < j->durable_last_seq;
}

/* after the entry being written (which records j->last_seq), is @b reusable? */
static bool bucket_reusable_after_write(const struct bfs_journal *j, u32 b)
{
	return !j->bucket_seq[b] || j->bucket_seq[b] < j->last_seq;
}

/* largest the open entry can become once the pre-write hook has run */
static u32 open_entry_max_bytes(const struct bfs_journal *j)
{
	u32 u64s = j->buf[j->cur].u64s;

	u64s += BFS_MIN(j->reserve_u64s, j->max_u64s - u64s);
	return BFS_ROUND_UP(sizeof(struct bfs_jset) + u64s * 8, j->block_size);
}

/*
 * Run the reclaim hook without the lock.  0 if last_seq moved forward (maybe
 * not yet far enough: the caller re-checks), -ENOSPC if it did not move.
 */
static int run_reclaim(struct bfs_journal *j, u64 want_seq)
{
	int (*fn)(void *ctx, u64 want_seq) = j->reclaim_fn;
	void *ctx = j->reclaim_ctx;
	u64 before = j->last_seq;
	int ret;

	if (!fn)
		return -ENOSPC;
	bfs_mutex_unlock(&j->lock);
	ret = fn(ctx, want_seq);
	bfs_mutex_lock(&j->lock);
	if (ret)
		return ret;
	return j->last_seq > before ? 0 : -ENOSPC;
}

/*
 * Where does the open entry go?  Called with the lock held and the write
 * path owned; may drop the lock to run the reclaim hook.
 *
 * The entry goes after the previous one if it fits in that bucket.  Moving to
 * the next bucket needs that bucket reusable now, and the bucket after it
 * reusable once this entry (recording the current last_seq) is durable: that
 * keeps one bucket free beyond the one being filled, so there is always
 * somewhere to write the entry that records a last_seq advanced by reclaim.
 */
static int journal_reserve_space(struct bfs_journal *j, u32 *bucket, u32 *offset)
{
	for (;;) {
		u32 nb = (j->wr_bucket + 1) % j->nbuckets;
		u32 nb2 = (nb + 1) % j->nbuckets;
		int ret;

		if (j->wr_offset + open_entry_max_bytes(j) <= j->bucket_size) {
			*bucket = j->wr_bucket;
			*offset = j->wr_offset;
			return 0;
		}
		if (!bucket_reusable(j, nb)) {
			/* cannot happen while the free-bucket invariant holds */
			bfs_err("journal: next bucket %u still holds seq %" PRIu64
				" needed by the durable last_seq %" PRIu64,
				nb, j->bucket_seq[nb], j->durable_last_seq);
			return -ENOSPC;
		}
		if (bucket_reusable_after_write(j, nb2)) {
			*bucket = nb;
			*offset = 0;
			return 0;
		}
		ret = run_reclaim(j, j->bucket_seq[nb2] + 1);
		if (ret) {
			if (ret == -ENOSPC)
				bfs_warn("journal: ring full: reclaim left last_seq at %" PRIu64
					 ", need %" PRIu64 " to reuse bucket %u",
					 j->last_seq, j->bucket_seq[nb2] + 1, nb2);
			return ret;
		}
	}
}

/* ---- writing entries ---- */

static int check_entries(const void *entries, u32 u64s);

/* run the pre-write hook (without the lock); returns the payload size */
static u32 journal_pre_write(struct bfs_journal *j, struct journal_buf *b,
			     u32 (*fn)(void *ctx, void *buf, u32 max_u64s), void *ctx,
			     u32 reserve)
{
	u32 max = BFS_MIN(reserve, j->max_u64s - b->u64s), used;

	if (!fn || !max)
		return b->u64s;
	used = fn(ctx, (u8 *)b->jset->start + (size_t)b->u64s * 8, max);
	if (used > max) {
		bfs_err("journal: pre-write hook used %u u64s of %u", used, max);
		used = max;
	}
	/* a malformed sub-entry would make replay reject the whole journal: drop it */
	if (check_entries((u8 *)b->jset->start + (size_t)b->u64s * 8, used)) {
		bfs_err("journal: pre-write hook returned malformed sub-entries; dropped");
		used = 0;
	}
	return b->u64s + used;
}

/* fill in the header and padding; returns the bytes to write */
static u32 journal_seal(struct bfs_journal *j, struct bfs_jset *jset, u64 seq, u64 last_seq,
			u32 u64s)
{
	size_t bytes = sizeof(*jset) + (size_t)u64s * 8;
	size_t disk = BFS_ROUND_UP(bytes, (size_t)j->block_size);

	jset->magic = cpu_to_le64(BFS_JSET_MAGIC);
	memcpy(jset->uuid, j->uuid, sizeof(jset->uuid));
	jset->seq = cpu_to_le64(seq);
	jset->last_seq = cpu_to_le64(last_seq);
	jset->flags = cpu_to_le32(BFS_JSET_FLUSH);
	jset->u64s = cpu_to_le32(u64s);
	jset->reserved = cpu_to_le64(0);
	memset((u8 *)jset + bytes, 0, disk - bytes);
	jset->csum = cpu_to_le64(bfs_xxh3((u8 *)jset + BFS_JSET_CSUM_OFFSET,
					  bytes - BFS_JSET_CSUM_OFFSET));
	return disk;
}

static int journal_do_io(struct bfs_journal *j, u64 off, const void *buf, u32 bytes)
{
	int ret = bfs_dev_flush(j->dev);

	return ret ?: bfs_dev_write_fua(j->dev, off, buf, bytes);
}

/*
 * Write the open entry.  Called with the lock held and the write path free;
 * returns with the lock held.  Appends go on into the next entry meanwhile.
 */
static int journal_write_locked(struct bfs_journal *j)
{
	u32 (*pre_fn)(void *ctx, void *buf, u32 max_u64s) = j->pre_write_fn;
	void *pre_ctx = j->pre_write_ctx;
	u32 reserve = j->reserve_u64s, bucket, offset, u64s, bytes;
	struct journal_buf *b;
	u64 seq, last_seq, off;
	int ret;

	j->writing = true;
	journal_writer = j;
	ret = journal_reserve_space(j, &bucket, &offset);
	if (ret)
		goto out;

	b = &j->buf[j->cur];
	seq = j->cur_seq;
	last_seq = BFS_MIN(j->last_seq, seq);
	j->cur ^= 1;
	j->buf[j->cur].u64s = 0;
	j->cur_seq++;
	bfs_cond_broadcast(&j->wait);
	bfs_mutex_unlock(&j->lock);

	u64s = journal_pre_write(j, b, pre_fn, pre_ctx, reserve);
	bytes = journal_seal(j, b->jset, seq, last_seq, u64s);
	off = journal_bucket_offset(j, bucket) + offset;
	ret = journal_do_io(j, off, b->jset, bytes);

	bfs_mutex_lock(&j->lock);
	if (ret) {
		/* the entry is lost and later seqs would leave a gap: stop for good */
		bfs_err("journal: writing entry seq %" PRIu64 " at offset %" PRIu64 " failed: %s",
			seq, off, strerror(-ret));
		j->err = ret;
		goto out;
	}
	j->written_seq = seq;
	j->durable_last_seq = last_seq;
	j->bucket_seq[bucket] = seq;
	j->wr_bucket = bucket;
	j->wr_offset = offset + bytes;
out:
	j->writing = false;
	journal_writer = NULL;
	bfs_cond_broadcast(&j->wait);
	return ret;
}

/* wait for the owner of the write path; -EDEADLK if that is this thread */
static int journal_wait_writer(struct bfs_journal *j)
{
	if (journal_writer == j)
		return -EDEADLK;
	bfs_cond_wait(&j->wait, &j->lock);
	return 0;
}

/* ---- appends ---- */

/* the sub-entry headers must tile exactly @u64s, or replay would reject the entry */
static int check_entries(const void *entries, u32 u64s)
{
	const __le64 *p = entries;
	u32 pos = 0;

	while (pos < u64s) {
		u32 total = bfs_jset_entry_total_u64s((const struct bfs_jset_entry *)(p + pos));

		if (total > u64s - pos) {
			bfs_err("journal: sub-entry at u64 %u (%u u64s) overruns the %u u64s appended",
				pos, total, u64s);
			return -EINVAL;
		}
		pos += total;
	}
	return 0;
}

u32 bfs_journal_max_add_u64s(struct bfs_journal *j)
{
	u32 ret;

	bfs_mutex_lock(&j->lock);
	ret = j->max_u64s - BFS_MIN(j->reserve_u64s, j->max_u64s);
	bfs_mutex_unlock(&j->lock);
	return ret;
}

/*
 * Lock held, write path free: have the flusher write the open entry and
 * wait until it has swapped buffers (cur_seq moved: the new open entry is
 * empty), not for the I/O.  Its error if it could not even start (a full
 * ring: -ENOSPC); a write error is j->err.
 */
static int ask_flusher(struct bfs_journal *j)
{
	u64 seq = j->cur_seq, gen = j->flusher_writes;

	j->flush_wanted = true;
	bfs_cond_signal(&j->flusher_wake);
	while (j->cur_seq == seq && j->flusher_writes == gen && j->flusher_on && !j->err)
		bfs_cond_wait(&j->wait, &j->lock);
	return j->cur_seq == seq && j->flusher_writes != gen ? j->flusher_ret : 0;
}

/*
 * Lock held, the open entry must go out: wait for a write in flight, else
 * hand it to the flusher (unless this thread is the writer), else write it
 * here.
 */
static int journal_push(struct bfs_journal *j)
{
	if (j->writing)
		return journal_wait_writer(j);
	if (j->flusher_on && journal_writer != j)
		return ask_flusher(j);
	return journal_write_locked(j);
}

int bfs_journal_add(struct bfs_journal *j, const void *entries, u32 u64s, u64 *seq_out)
{
	int ret;

	if (u64s && !entries)
		return -EINVAL;
	ret = check_entries(entries, u64s);
	if (ret)
		return ret;

	bfs_mutex_lock(&j->lock);
	ret = j->read_done ? 0 : -EINVAL;
	while (!ret) {
		struct journal_buf *b = &j->buf[j->cur];

		ret = j->err;
		if (ret)
			break;
		if ((u64)u64s + j->reserve_u64s > j->max_u64s) {
			ret = -E2BIG;
			break;
		}
		/*
		 * Entries don't cross buckets, so a big entry can leave much
		 * of a bucket unused: close an entry at a quarter bucket,
		 * unless this append alone needs more.
		 */
		if (b->u64s + u64s + j->reserve_u64s <= (b->u64s ? j->soft_u64s : j->max_u64s)) {
			memcpy((u8 *)b->jset->start + (size_t)b->u64s * 8, entries, (size_t)u64s * 8);
			b->u64s += u64s;
			if (seq_out)
				*seq_out = j->cur_seq;
			break;
		}
		/*
		 * The open entry is full: the flusher writes it (the caller may
		 * hold locks every committer needs: it waits only for the buffer
		 * swap, not for the I/O), else write it here; with a write in
		 * flight, wait for it.
		 */
		ret = journal_push(j);
	}
	bfs_mutex_unlock(&j->lock);
	return ret;
}

int bfs_journal_close_entry(struct bfs_journal *j)
{
	u64 seq;
	int ret = 0;

	bfs_mutex_lock(&j->lock);
	seq = j->cur_seq;
	while (!ret && j->cur_seq == seq && j->buf[j->cur].u64s) {
		ret = j->err;
		if (ret)
			break;
		if (!j->read_done) {
			ret = -EINVAL;
		} else {
			ret = journal_push(j);
		}
	}
	bfs_mutex_unlock(&j->lock);
	return ret;
}

/* ---- the flusher ---- */

static void *flusher_fn(void *arg)
{
	struct bfs_journal *j = arg;

	bfs_mutex_lock(&j->lock);
	while (!j->flusher_stop) {
		if (j->flush_wanted && !j->writing) {
			j->flush_wanted = false;
			/* a write error also stays in j->err for every later caller */
			j->flusher_ret = !j->err && j->buf[j->cur].u64s ? journal_write_locked(j) : 0;
			j->flusher_writes++;
			bfs_cond_broadcast(&j->wait);
			continue;
		}
		/* a write in flight delays a wanted one: its end is broadcast on j->wait */
		bfs_cond_wait(j->flush_wanted ? &j->wait : &j->flusher_wake, &j->lock);
	}
	bfs_mutex_unlock(&j->lock);
	return NULL;
}

int bfs_journal_start_flusher(struct bfs_journal *j)
{
	int ret;

	bfs_mutex_lock(&j->lock);
	if (j->flusher_on) {
		bfs_mutex_unlock(&j->lock);
		return 0;
	}
	j->flusher_stop = false;
	ret = bfs_thread_create(&j->flusher, flusher_fn, j);
	j->flusher_on = !ret;
	bfs_mutex_unlock(&j->lock);
	return ret;
}

void bfs_journal_stop_flusher(struct bfs_journal *j)
{
	bfs_mutex_lock(&j->lock);
	if (!j->flusher_on) {
		bfs_mutex_unlock(&j->lock);
		return;
	}
	j->flusher_stop = true;
	bfs_cond_signal(&j->flusher_wake);
	bfs_cond_broadcast(&j->wait);
	bfs_mutex_unlock(&j->lock);
	bfs_thread_join(j->flusher);
	bfs_mutex_lock(&j->lock);
	j->flusher_on = false;
	bfs_cond_broadcast(&j->wait);
	bfs_mutex_unlock(&j->lock);
}

/* ---- flushes ---- */

int bfs_journal_flush_seq(struct bfs_journal *j, u64 seq)
{
	int ret = 0;

	bfs_mutex_lock(&j->lock);
	seq = BFS_MIN(seq, j->cur_seq);
	while (!ret) {
		if (j->written_seq >= seq)
			break;
		ret = j->err;
		if (ret)
			break;
		if (!j->read_done) {
			ret = -EINVAL;
			break;
		}
		/*
		 * With no write in flight, written_seq == cur_seq - 1, so seq
		 * is the open entry.  With one in flight it may cover seq:
		 * wait and look again.
		 */
		ret = j->writing ? journal_wait_writer(j) : journal_write_locked(j);
	}
	bfs_mutex_unlock(&j->lock);
	return ret;
}

int bfs_journal_flush(struct bfs_journal *j)
{
	u64 seq;

	bfs_mutex_lock(&j->lock);
	seq = j->buf[j->cur].u64s ? j->cur_seq : j->cur_seq - 1;
	bfs_mutex_unlock(&j->lock);
	return bfs_journal_flush_seq(j, seq);
}

/* ---- state ---- */

/*
 * Room before reclaim is needed: the rest of the current bucket, plus every
 * bucket ahead that is free with the in-memory last_seq, less the spare that
 * each bucket move needs beyond it.
 */
u64 bfs_journal_free_bytes(struct bfs_journal *j)
{
	u32 b, ahead = 0;
	u64 ret;

	bfs_mutex_lock(&j->lock);
	for (b = (j->wr_bucket + 1) % j->nbuckets; b != j->wr_bucket; b = (b + 1) % j->nbuckets) {
		if (!bucket_reusable_after_write(j, b) || (!ahead && !bucket_reusable(j, b)))
			break;
		ahead++;
	}
	ret = j->bucket_size - BFS_MIN(j->wr_offset, j->bucket_size);
	if (ahead > 1)
		ret += (u64)(ahead - 1) * j->bucket_size;
	bfs_mutex_unlock(&j->lock);
	return ret;
}

void bfs_journal_set_last_seq(struct bfs_journal *j, u64 seq)
{
	bfs_mutex_lock(&j->lock);
	seq = BFS_MIN(seq, j->cur_seq);
	if (seq > j->last_seq) {
		j->last_seq = seq;
		bfs_cond_broadcast(&j->wait);
	}
	bfs_mutex_unlock(&j->lock);
}

static u64 journal_get(struct bfs_journal *j, const u64 *field)
{
	u64 v;

	bfs_mutex_lock(&j->lock);
	v = *field;
	bfs_mutex_unlock(&j->lock);
	return v;
}

u64 bfs_journal_cur_seq(struct bfs_journal *j) { return journal_get(j, &j->cur_seq); }
u64 bfs_journal_last_seq(struct bfs_journal *j) { return journal_get(j, &j->last_seq); }
u64 bfs_journal_durable_seq(struct bfs_journal *j) { return journal_get(j, &j->written_seq); }

void bfs_journal_set_reclaim(struct bfs_journal *j, int (*fn)(void *ctx, u64 want_seq), void *ctx)
{
	bfs_mutex_lock(&j->lock);
	j->reclaim_fn = fn;
	j->reclaim_ctx = ctx;
	bfs_mutex_unlock(&j->lock);
}

void bfs_journal_set_pre_write(struct bfs_journal *j,
			       u32 (*fn)(void *ctx, void *buf, u32 max_u64s),
			       void *ctx, u32 reserve_u64s)
{
	bfs_mutex_lock(&j->lock);
	j->pre_write_fn = fn;
	j->pre_write_ctx = ctx;
	j->reserve_u64s = fn ? reserve_u64s : 0;
	bfs_mutex_unlock(&j->lock);
}
