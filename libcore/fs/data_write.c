// SPDX-License-Identifier: MIT
/*
 * The write path: data is cut into block-aligned chunks where the chunk
 * policy says (chunk_policy.h); a partial first or last block is read and
 * merged first (copy-on-write: live data is never overwritten in place).  The chunks of
 * a batch are placed one after the other in the write point and written
 * together (bfs_dev_submit()), then one transaction per batch inserts
 * their extent keys (trimming what they overwrite), updates the buckets'
 * alloc keys and the inode.
 */
#include <sys/stat.h>

#include <bfs/checksum.h>
#include <bfs/log.h>

#include "data.h"
#include "range_lock.h"
#include "tail_buf.h"

#define GC_MAX_TRIES		128	/* copy-GC effort before a write gives up with ENOSPC */

/*
 * Another GC pass after this one?  Other writers may take what a pass freed
 * before we do: keep going while passes make room, a few times more while
 * other writers held extents GC wanted to move.
 */
static bool gc_progress(struct data_update *u, bool freed, bool busy)
{
	u->gc_tries += freed ? 1 : GC_MAX_TRIES / 8;
	return (freed || busy) && u->gc_tries < GC_MAX_TRIES;
}

/*
 * queue chunk @ch as extent [cs, ce) (bytes) of @ino (@fresh: no extent
 * there to account); on error its space is given up
 */
static int queue_chunk(struct bfs_fs_data *d, struct data_update *u, u64 ino, u64 cs, u64 ce,
		       const struct data_chunk *ch, bool fresh)
{
	u64 kbuf[EXTENT_KEY_U64S], s = cs >> BFS_SECTOR_SHIFT, e = ce >> BFS_SECTOR_SHIFT;
	int ret;

	ret = fresh ? 0 : data_account_overwrite(d, u, ino, s, e);
	if (!ret)
		ret = bfs_trans_update(u->t, BFS_BTREE_EXTENTS,
				       bfs_extent_key(kbuf, ino, s, e, ch, d->csum_type, 0));
	if (!ret)
		ret = data_update_add(u, ch->bucket, (s64)(e - s), 1);
	if (ret) {
		bfs_data_space_abort(d, ch->bucket);
		return ret;
	}
	u->inode_sectors += (s64)(e - s);
	return 0;
}

/*
 * Out of space: with changes queued in @u (chunks of this batch, or what
 * the caller queued before, such as the other edge of a hole punch), the
 * caller commits them first (copy-GC may move this inode's extents only
 * while none has an uncommitted change: it would account a moved extent
 * that the queued change then drops or trims a second time) and comes
 * back.  Then either hand the GC to a caller that can drop the inode lock
 * (-EAGAIN), or run it here and say whether to retry.
 */
static bool retry_after_gc(struct bfs_fs_data *d, struct data_update *u, u64 ino,
			   unsigned queued, int *ret)
{
	bool freed = false, busy = false;

	if (*ret != -ENOSPC || u->gc_tries >= GC_MAX_TRIES)
		return false;
	if (queued || u->nr) {
		*ret = 0;
		return false;
	}
	if (u->gc_unlocked) {
		*ret = -EAGAIN;
		return false;
	}
	if (bfs_data_copygc(d, ino, &freed, &busy))
		return false;
	return gc_progress(u, freed, busy);
}

/*
 * The chunks of one data_queue_write() call, placed and checksummed but
 * not yet written: their device writes go out together as one batch (runs
 * of whole chunks from the caller's buffer as one write each), and only
 * the chunks whose data is on the device get their keys queued.
 */
struct write_plan {
	struct plan_chunk {
		struct data_chunk ch;
		u64	cs, ce;		/* the extent's file bytes */
		u64	user;		/* bytes of the caller's range it holds */
		unsigned io;		/* the write that carries it */
		const u8 *csum_src;	/* checksum still to take (plan_csum()), of these bytes */
	} c[BFS_CHUNK_BATCH_MAX];
	struct bfs_dev_io io[BFS_CHUNK_BATCH_MAX];
	u8	*own[2 * BFS_CHUNK_BATCH_MAX];	/* merge buffers, compressed copies */
	unsigned nr, nr_io, nr_own;
	unsigned csum_type;
	bool	csum_pending;	/* some chunk's csum_src is set */
	bool	merged;		/* a chunk holds old data of the file (partial blocks) */
	bool	cached;		/* every write through the page cache (BFS_WRITE_CACHED) */
};

/*
 * Writes below this size go through the page cache (struct bfs_dev_io's
 * cached): waiting for the device once per small file or 4 KiB record
 * costs more than the copy, and the flush writes them back together.
 */
#define WRITE_DIRECT_MIN	(64 * KiB)

static void plan_io(struct write_plan *p, u64 dev_off, const void *buf, size_t len, u8 *own)
{
	p->io[p->nr_io++] = (struct bfs_dev_io){ .off = dev_off, .buf = (void *)buf, .len = len,
						 .write = true,
						 .cached = p->cached || len < WRITE_DIRECT_MIN };
	if (own)
		p->own[p->nr_own++] = own;
}

static void plan_chunk(struct write_plan *p, const struct data_chunk *ch, u64 cs, u64 ce,
		       u64 user)
{
	p->c[p->nr] = (struct plan_chunk){ .ch = *ch, .cs = cs, .ce = ce, .user = user,
					   .io = p->nr_io - 1 };
	p->nr++;
}

/*
 * The checksums of the chunks written straight from the caller's buffer,
 * taken while their device write is in flight (bfs_dev_submit_during()):
 * the device and the checksum only read the buffer, and the keys that
 * carry the checksums are queued only after both.
 */
static void plan_csum(void *arg)
{
	struct write_plan *p = arg;
	unsigned i;

	for (i = 0; i < p->nr; i++) {
		struct plan_chunk *c = &p->c[i];

		if (c->csum_src)
			c->ch.csum = bfs_csum(p->csum_type, c->csum_src, c->ch.stored_bytes);
	}
}

/*
 * Up to @k whole uncompressed chunks of @cm bytes straight from the
 * caller's buffer, consecutive in the open bucket: one device write; *nr =
 * chunks planned.
 */
static int plan_direct(struct bfs_fs_data *d, struct write_plan *p, const u8 *src, u64 pos,
		       u32 cm, u32 k, u32 *nr)
{
	u32 got, j;
	struct data_chunk ch = {
		.stored_bytes = cm,
		.disk_bytes = cm,
		.chunk_sectors = cm >> BFS_SECTOR_SHIFT,
		.compression = BFS_COMPRESSION_NONE,
	};
	u64 dev_off;
	int ret;

	*nr = 0;
	ret = bfs_data_space_get_multi(d, cm, k, &dev_off, &ch.bucket, &ch.gen, &got);
	if (ret)
		return ret;
	plan_io(p, dev_off, src, (size_t)got * cm, NULL);
	for (j = 0; j < got; j++) {
		ch.dev_off = dev_off + (u64)j * cm;
		plan_chunk(p, &ch, pos + (u64)j * cm, pos + (u64)(j + 1) * cm, cm);
		p->c[p->nr - 1].csum_src = src + (size_t)j * cm;	/* plan_csum() */
	}
	p->csum_pending = p->csum_pending || got;
	*nr = got;
	return 0;
}

/*
 * A chunk of its own buffer (merged edges, zeros, compressed), or a short
 * one the caller's data fills: placed, planned.  Its checksum is left to
 * plan_csum() like a whole chunk's: what it hashes (the caller's buffer,
 * a merge buffer or the compressed copy) is only freed or reused after
 * plan_commit(), and for a 4 KiB random write the hash is then taken with
 * the inode lock down.
 */
static int plan_buffered(struct bfs_fs_data *d, struct write_plan *p, const u8 *cbuf, u64 cs,
			 u64 ce, u64 user)
{
	struct data_chunk ch;
	const void *stored;
	u8 *owned;
	int ret;

	ret = bfs_data_chunk_place(d, cbuf, (u32)(ce - cs), &ch, &stored, &owned, false);
	if (ret)
		return ret;
	plan_io(p, ch.dev_off, stored, ch.disk_bytes, owned);
	plan_chunk(p, &ch, cs, ce, user);
	p->c[p->nr - 1].csum_src = stored;	/* plan_csum() */
	p->csum_pending = true;
	return 0;
}

/*
 * Write the plan's chunks and queue the keys of those written, in file
 * order up to the first failure (the later ones give their space up):
 * what is queued is always a prefix of the caller's range.
 */
static int plan_commit(struct bfs_fs_data *d, struct data_update *u, u64 ino,
		       struct write_plan *p, size_t *done)
{
	bool unlock = u->unlock_fs && !u->nr && p->nr_io && !p->merged, fresh = false;
	unsigned i;
	int ret = 0;

	/*
	 * Nothing of the file was read into the chunks and nothing is queued:
	 * the writes need no lock, only the keys do (queued below, against the
	 * extents as they are then).
	 */
	if (unlock)
		bfs_inode_unlock(u->unlock_fs, ino);
	if (p->nr_io == 1 && p->io[0].cached && p->csum_pending) {
		/*
		 * One copy into the page cache (a 4 KiB random write): over
		 * in less time than a ring round trip, so hash, then pwrite
		 */
		plan_csum(p);
		bfs_dev_submit(d->dev, p->io, 1);
	} else if (p->nr_io) {
		bfs_dev_submit_during(d->dev, p->io, p->nr_io,
				      p->csum_pending ? plan_csum : NULL, p);
	}
	if (unlock) {
		bfs_inode_lock_raw(u->unlock_fs, ino);
		u->relocked = true;
	}
	/*
	 * Appended chunks have nothing to overwrite: one scan of the batch's
	 * range (its chunks are consecutive in file order) instead of a lookup
	 * per chunk, which was a sixth of an in-process append's instructions
	 */
	if (p->nr > 1)
		fresh = !data_range_has_extents(d, ino, p->c[0].cs >> BFS_SECTOR_SHIFT,
						p->c[p->nr - 1].ce >> BFS_SECTOR_SHIFT);
	for (i = 0; i < p->nr; i++) {
		struct plan_chunk *c = &p->c[i];

		if (!ret)
			ret = p->io[c->io].ret;
		if (ret) {
			bfs_data_space_abort(d, c->ch.bucket);
			continue;
		}
		/* on error queue_chunk() gives this chunk's space up itself */
		ret = queue_chunk(d, u, ino, c->cs, c->ce, &c->ch, fresh);
		if (!ret)
			*done += c->user;
	}
	for (i = 0; i < p->nr_own; i++)
		bfs_free(p->own[i]);
	return ret;
}

/*
 * The chunk buffer for a chunk that is not written from the caller's
 * buffer: @cbuf (if any) for the first, a fresh one for each later one,
 * since all of them are written together at the end.
 */
static u8 *plan_cbuf(struct bfs_fs_data *d, struct write_plan *p, u8 *cbuf, bool *used)
{
	u8 *b;

	if (!*used && cbuf) {
		*used = true;
		return cbuf;
	}
	b = bfs_aligned_alloc(4096, d->chunk_max);
	if (b)
		p->own[p->nr_own++] = b;
	return b;
}

int data_queue_write(struct bfs_fs_data *d, struct data_update *u, u64 ino, const void *buf,
		     size_t len, u64 off, u8 *cbuf, size_t *done)
{
	u64 bs = d->block_size, cm = d->chunk.target, pos = off, end = off + len;
	unsigned max = d->chunk.batch;
	struct write_plan *p = bfs_malloc(sizeof(*p));
	bool cbuf_used = false;
	int ret = 0, cret;

	*done = 0;
	if (!p)
		return -ENOMEM;
	p->nr = p->nr_io = p->nr_own = 0;
	p->csum_type = d->csum_type;
	p->csum_pending = false;
	p->merged = false;
	p->cached = u->cached;
	if (bfs_data_space_low(d))
		max = DATA_SMALL_TRANS / 2;
	while (pos < end && p->nr < max) {
		u64 cs = BFS_ROUND_DOWN(pos, bs);
		u64 ce = bfs_chunk_end(&d->chunk, cs, end);
		u64 us = pos, ue = BFS_MIN(end, ce);
		u8 *b;
		int wret;

		if (buf && d->compression == BFS_COMPRESSION_NONE && us == cs && ue == cs + cm) {
			u32 k = (u32)BFS_MIN((end - pos) / cm, (u64)(max - p->nr)), got;

			do {
				ret = plan_direct(d, p, (const u8 *)buf + (pos - off), pos, (u32)cm,
						  k, &got);
			} while (retry_after_gc(d, u, ino, p->nr, &ret));
			pos += (u64)got * cm;
			if (ret || !got)
				break;
			continue;
		}
		if (buf && us == cs && ue == ce) {
			/*
			 * A shorter chunk the caller's data fills (a 4 KiB random
			 * write): checksummed and written from the caller's
			 * buffer, no copy
			 */
			do {
				wret = ret = plan_buffered(d, p, (const u8 *)buf + (us - off), cs, ce,
							   ue - us);
			} while (retry_after_gc(d, u, ino, p->nr, &ret));
			if (ret || wret)
				break;
			pos = ue;
			continue;
		}
		b = plan_cbuf(d, p, cbuf, &cbuf_used);
		if (!b) {
			ret = -ENOMEM;
			break;
		}
		if (us > cs || ue < ce)
			p->merged = true;
		if (us > cs) {
			ret = bfs_data_read_range(d, ino, b, bs, cs);
			if (ret)
				break;
		}
		if (ue < ce && !(us > cs && ce - bs == cs)) {
			ret = bfs_data_read_range(d, ino, b + (ce - bs - cs), bs, ce - bs);
			if (ret)
				break;
		}
		if (buf)
			memcpy(b + (us - cs), (const u8 *)buf + (us - off), ue - us);
		else
			memset(b + (us - cs), 0, ue - us);
		do {
			wret = ret = plan_buffered(d, p, b, cs, ce, ue - us);
		} while (retry_after_gc(d, u, ino, p->nr, &ret));
		if (ret || wret)
			break;	/* wret alone: out of space, commit the queued chunks first */
		pos = ue;
	}
	cret = plan_commit(d, u, ino, p, done);
	bfs_free(p);
	return cret ? cret : ret;
}

/*
 * Copy-GC for a writer that holds the lock of *inode and nothing uncommitted:
 * drop the lock so GC can move any inode's extents (this one's too), take it
 * again and re-read the inode, which may have changed meanwhile.  0: try
 * again; -ENOSPC: no more room can be made.
 */
static int gc_unlocked(struct bfs_fs *fs, struct bfs_inode *inode, struct data_update *u)
{
	bool freed = false, busy = false;
	int ret;

	bfs_inode_unlock(fs, inode->ino);
	ret = bfs_data_copygc(fs->data, BFS_GC_NO_INODE, &freed, &busy);
	bfs_inode_lock_raw(fs, inode->ino);
	if (!ret)
		ret = bfs_inode_read(fs, inode->ino, inode);
	if (!ret && !gc_progress(u, freed, busy))
		ret = -ENOSPC;
	return ret;
}

/*
 * bfs_data_write_locked(), and for a tail buffer's write-back (@mtime
 * non-zero): times set to @mtime, and the inode lock is never dropped, for
 * its I/O or for copy-GC (the lock holder may hold other stripes too).
 */
static ssize_t write_locked(struct bfs_fs *fs, struct bfs_inode *inode, const void *buf,
			    size_t len, u64 off, unsigned flags, s64 mtime)
{
	struct bfs_fs_data *d = fs->data;
	unsigned gc_tries = 0;
	size_t total = 0;
	int ret = 0;

	/* chunk buffers only where a chunk needs one (plan_cbuf()), not per call */
	while (total < len) {
		struct bfs_inode saved = *inode;
		struct data_update u;
		struct bfs_trans *t;
		size_t done = 0;
		int qret;

		ret = bfs_trans_begin(d->c, &t);
		if (ret)
			break;
		data_update_init(&u, t);
		u.gc_unlocked = !mtime;
		u.gc_tries = gc_tries;
		u.unlock_fs = mtime ? NULL : fs;
		u.cached = flags & BFS_WRITE_CACHED;
		qret = data_queue_write(d, &u, inode->ino, buf ? (const u8 *)buf + total : NULL,
					len - total, off + total, NULL, &done);
		if (u.relocked) {
			/* others may have changed the inode while its lock was down */
			ret = bfs_inode_read(fs, inode->ino, inode);
			if (ret) {
				data_update_abort(d, &u);
				done = 0;
				qret = ret;
			}
			saved = *inode;
		}
		if (done) {
			s64 now = mtime ? mtime : bfs_fs_now();

			inode->sectors = (u64)((s64)inode->sectors + u.inode_sectors);
			if (off + total + done > inode->size)
				inode->size = off + total + done;
			inode->mtime = inode->ctime = now;
			ret = bfs_inode_write(t, inode);
			if (!ret)
				ret = data_update_commit(d, &u, NULL);
			else
				data_update_abort(d, &u);
			if (ret) {
				*inode = saved;
				done = 0;
			} else if (!mtime) {
				/* a tail buffer made while the lock was down takes them too */
				bfs_tail_note_write(fs, inode->ino,
						    buf ? (const u8 *)buf + total : NULL, done,
						    off + total);
			}
		}
		bfs_trans_end(t);
		data_update_exit(&u);
		total += done;
		gc_tries = done ? 0 : u.gc_tries;
		if (!ret && qret == -EAGAIN) {
			/* out of space with nothing queued: GC without our inode lock */
			ret = gc_unlocked(fs, inode, &u);
			gc_tries = u.gc_tries;
			if (!ret)
				continue;
		}
		if (!ret)
			ret = qret;
		if (ret)
			break;
	}
	if (total)
		return (ssize_t)total;
	return ret;
}

ssize_t bfs_data_write_locked(struct bfs_fs *fs, struct bfs_inode *inode, const void *buf,
			      size_t len, u64 off, unsigned flags)
{
	return write_locked(fs, inode, buf, len, off, flags, 0);
}

ssize_t bfs_data_write_back(struct bfs_fs *fs, struct bfs_inode *inode, const void *buf,
			    size_t len, u64 off, s64 mtime)
{
	return write_locked(fs, inode, buf, len, off, 0, mtime ? mtime : bfs_fs_now());
}

/*
 * A write inside the file's size holding range @r (range_lock.h), no inode
 * lock: batches as in write_locked(), the inode key's sectors and times
 * added at apply time (bfs_range_inode_fixup()), so range writers of one
 * file commit in parallel.  Out of space with nothing queued, *again: the
 * caller writes the rest with the inode lock (copy-GC needs it).
 */
static ssize_t write_ranged(struct bfs_fs *fs, struct bfs_range *r, u64 ino, const void *buf,
			    size_t len, u64 off, unsigned flags, bool *again)
{
	struct bfs_fs_data *d = fs->data;
	size_t total = 0;
	int ret = 0;

	*again = false;
	while (total < len) {
		struct bfs_range_commit rc = { .r = r };
		struct data_update u;
		struct bfs_trans *t;
		size_t done = 0;
		int qret;

		ret = bfs_trans_begin(d->c, &t);
		if (ret)
			break;
		data_update_init(&u, t);
		u.gc_unlocked = true;
		u.cached = flags & BFS_WRITE_CACHED;
		qret = data_queue_write(d, &u, ino, buf ? (const u8 *)buf + total : NULL,
					len - total, off + total, NULL, &done);
		if (done) {
			struct bfs_inode snap;

			/* a placeholder value: the fixup writes the inode as it is then */
			bfs_range_inode_snapshot(fs, r, &snap);
			rc.sectors = u.inode_sectors;
			rc.now = bfs_fs_now();
			ret = bfs_inode_write(t, &snap);
			if (!ret) {
				u.key_fixup = bfs_range_inode_fixup;
				u.key_fixup_ctx = &rc;
				ret = data_update_commit(d, &u, NULL);
				bfs_range_commit_end(&rc, ret);
			} else {
				data_update_abort(d, &u);
			}
			if (ret)
				done = 0;
		}
		bfs_trans_end(t);
		data_update_exit(&u);
		total += done;
		if (!ret && qret == -EAGAIN) {
			*again = true;
			break;
		}
		if (!ret)
			ret = qret;
		if (ret)
			break;
	}
	if (total)
		return (ssize_t)total;
	return ret;
}

/* under the drained inode lock, *inode read: the write the ordinary way */
static ssize_t write_whole(struct bfs_fs *fs, struct bfs_inode *inode, const void *buf,
			   size_t len, u64 off, unsigned flags, bool buffer)
{
	ssize_t ret = bfs_iflags_may_write(inode->flags, inode->size, off);

	if (!ret && buffer)
		ret = bfs_tail_write(fs, inode, buf, len, off);
	if (!ret)
		ret = bfs_data_write_locked(fs, inode, buf, len, off, flags);
	return ret;
}

/*
 * Under the stripe lock (not drained), *inode read, [off, off + len)
 * inside its size: a range writer, unless the tail buffer takes it (only
 * when no range writer is in flight: a buffer never exists next to one)
 * or the range table is full.  Releases the lock.
 */
static ssize_t write_inside(struct bfs_fs *fs, struct bfs_inode *inode, const void *buf,
			    size_t len, u64 off, unsigned flags, bool buffer)
{
	u64 bs = fs->data->block_size, ino = inode->ino;
	struct bfs_range *r;
	bool again;
	ssize_t ret, more;

	if (buffer && !bfs_range_busy(fs, ino)) {
		ret = bfs_tail_write(fs, inode, buf, len, off);
		if (ret) {
			bfs_inode_unlock(fs, ino);
			return ret;
		}
	}
	/* whole blocks: a partial one is read and merged, so it is ours too */
	r = bfs_range_get(fs, inode, BFS_ROUND_DOWN(off, bs), BFS_ROUND_UP(off + len, bs));
	if (!r) {
		bfs_range_drain(fs, ino);
		ret = bfs_inode_read(fs, ino, inode);
		if (!ret)
			ret = bfs_data_write_locked(fs, inode, buf, len, off, flags);
		bfs_inode_unlock(fs, ino);
		return ret;
	}
	bfs_inode_unlock(fs, ino);
	ret = write_ranged(fs, r, ino, buf, len, off, flags, &again);
	bfs_range_put(fs, r);
	if (!again)
		return ret;
	/* out of space: the rest with the inode lock, which copy-GC needs */
	if (ret < 0)
		ret = 0;
	bfs_inode_lock_raw(fs, ino);
	more = bfs_data_file_read(fs, ino, inode, -EINVAL);
	if (more)
		return ret ? ret : more;
	more = write_whole(fs, inode, buf ? (const u8 *)buf + ret : NULL, len - (size_t)ret,
			   off + (u64)ret, flags, false);
	bfs_inode_unlock(fs, ino);
	if (more < 0)
		return ret ? ret : more;
	return ret + more;
}

ssize_t bfs_fs_write_flags(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off,
			   unsigned flags)
{
	bool buffer = !(flags & BFS_WRITE_THROUGH);
	struct bfs_inode inode;
	ssize_t ret;

	if (fs->read_only)
		return -EROFS;
	if (!len)
		return 0;
	if (off > BFS_DATA_MAX_BYTES || len > BFS_DATA_MAX_BYTES - off)
		return -EFBIG;
	/*
	 * Not drained: range writers of the file may be in flight (they hold
	 * no buffer, and its size, mode and flags cannot change meanwhile)
	 */
	bfs_inode_lock_nodrain(fs, ino);
	/* a small write into the file's tail buffer: a copy (tail_buf.h) */
	ret = buffer ? bfs_tail_write_fast(fs, ino, buf, len, off) : 0;
	if (ret) {
		bfs_inode_unlock(fs, ino);
		return ret;
	}
	/* what is buffered goes first: this write is not one the buffer takes */
	bfs_tail_flush_locked(fs, ino);
	ret = bfs_data_file_read(fs, ino, &inode, -EINVAL);
	if (ret)
		return ret;
	ret = bfs_iflags_may_write(inode.flags, inode.size, off);
	if (!ret && off + len <= inode.size && fs->ranges)
		return write_inside(fs, &inode, buf, len, off, flags, buffer);
	if (!ret && bfs_range_busy(fs, ino)) {
		/* it changes the size: the range writers go first */
		bfs_range_drain(fs, ino);
		ret = bfs_inode_read(fs, ino, &inode);
	}
	if (!ret)
		ret = write_whole(fs, &inode, buf, len, off, flags, buffer);
	bfs_inode_unlock(fs, ino);
	return ret;
}

ssize_t bfs_fs_write(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off)
{
	return bfs_fs_write_flags(fs, ino, buf, len, off, 0);
}
