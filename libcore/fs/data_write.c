// SPDX-License-Identifier: MIT
/*
 * The write path: data is cut into block-aligned chunks where the chunk
 * policy says (chunk_policy.h); a partial first or last block is read and
 * merged first (copy-on-write: live data is never overwritten in place).
 * Each chunk is written to the write point, then one transaction per batch
 * of chunks inserts their extent keys (trimming what they overwrite),
 * updates the buckets' alloc keys and the inode.
 */
#include <sys/stat.h>

#include <bfs/checksum.h>
#include <bfs/log.h>

#include "data.h"

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

/* queue chunk @ch as extent [cs, ce) (bytes) of @ino; on error its space is given up */
static int queue_chunk(struct bfs_fs_data *d, struct data_update *u, u64 ino, u64 cs, u64 ce,
		       const struct data_chunk *ch)
{
	u64 kbuf[EXTENT_KEY_U64S], s = cs >> BFS_SECTOR_SHIFT, e = ce >> BFS_SECTOR_SHIFT;
	int ret;

	ret = data_account_overwrite(d, u, ino, s, e);
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
 * Up to @k whole uncompressed chunks of @cm bytes straight from the caller's
 * buffer, consecutive in the open bucket, in one device write; *nr = chunks
 * queued.
 */
static int write_direct(struct bfs_fs_data *d, struct data_update *u, u64 ino, const u8 *src,
			u64 pos, u32 cm, u32 k, u32 *nr)
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
	ret = bfs_dev_write(d->dev, dev_off, src, (size_t)got * cm);
	for (j = 0; j < got; j++) {
		if (ret) {
			bfs_data_space_abort(d, ch.bucket);
			continue;
		}
		ch.dev_off = dev_off + (u64)j * cm;
		ch.csum = bfs_csum(d->csum_type, src + (size_t)j * cm, cm);
		/* on error queue_chunk() gives this chunk's space up itself */
		ret = queue_chunk(d, u, ino, pos + (u64)j * cm, pos + (u64)(j + 1) * cm, &ch);
		if (!ret)
			(*nr)++;
	}
	return ret;
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

int data_queue_write(struct bfs_fs_data *d, struct data_update *u, u64 ino, const void *buf,
		     size_t len, u64 off, u8 *cbuf, size_t *done)
{
	u64 bs = d->block_size, cm = d->chunk.target, pos = off, end = off + len;
	unsigned n = 0, max = d->chunk.batch;
	int ret = 0;

	if (bfs_data_space_low(d))
		max = DATA_SMALL_TRANS / 2;
	*done = 0;
	while (pos < end && n < max) {
		u64 cs = BFS_ROUND_DOWN(pos, bs);
		u64 ce = bfs_chunk_end(&d->chunk, cs, end);
		u64 us = pos, ue = BFS_MIN(end, ce);
		struct data_chunk ch;
		int wret;

		if (buf && d->compression == BFS_COMPRESSION_NONE && us == cs && ue == cs + cm) {
			u32 k = (u32)BFS_MIN((end - pos) / cm, (u64)(max - n)), got;

			do {
				ret = write_direct(d, u, ino, (const u8 *)buf + (pos - off), pos,
						   (u32)cm, k, &got);
			} while (retry_after_gc(d, u, ino, n, &ret));
			*done += (u64)got * cm;
			pos += (u64)got * cm;
			n += got;
			if (ret || !got)
				break;
			continue;
		}
		if (us > cs) {
			ret = bfs_data_read_range(d, ino, cbuf, bs, cs);
			if (ret)
				break;
		}
		if (ue < ce && !(us > cs && ce - bs == cs)) {
			ret = bfs_data_read_range(d, ino, cbuf + (ce - bs - cs), bs, ce - bs);
			if (ret)
				break;
		}
		if (buf)
			memcpy(cbuf + (us - cs), (const u8 *)buf + (us - off), ue - us);
		else
			memset(cbuf + (us - cs), 0, ue - us);
		do {
			wret = ret = bfs_data_chunk_write(d, cbuf, (u32)(ce - cs), &ch);
		} while (retry_after_gc(d, u, ino, n, &ret));
		if (ret || wret)
			break;	/* wret alone: out of space, commit the queued chunks first */
		ret = queue_chunk(d, u, ino, cs, ce, &ch);
		if (ret)
			break;
		*done += ue - us;
		pos = ue;
		n++;
	}
	return ret;
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
	bfs_inode_lock(fs, inode->ino);
	if (!ret)
		ret = bfs_inode_read(fs, inode->ino, inode);
	if (!ret && !gc_progress(u, freed, busy))
		ret = -ENOSPC;
	return ret;
}

ssize_t bfs_data_write_locked(struct bfs_fs *fs, struct bfs_inode *inode, const void *buf,
			      size_t len, u64 off)
{
	struct bfs_fs_data *d = fs->data;
	unsigned gc_tries = 0;
	size_t total = 0;
	u8 *cbuf;
	int ret = 0;

	/* aligned: on an O_DIRECT device chunks are written from it without a bounce */
	cbuf = bfs_aligned_alloc(4096, d->chunk_max);
	if (!cbuf)
		return -ENOMEM;
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
		u.gc_unlocked = true;
		u.gc_tries = gc_tries;
		qret = data_queue_write(d, &u, inode->ino, buf ? (const u8 *)buf + total : NULL,
					len - total, off + total, cbuf, &done);
		if (done) {
			s64 now = bfs_fs_now();

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
	bfs_free(cbuf);
	if (total)
		return (ssize_t)total;
	return ret;
}

ssize_t bfs_fs_write(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off)
{
	struct bfs_inode inode;
	ssize_t ret;

	if (fs->read_only)
		return -EROFS;
	if (!len)
		return 0;
	if (off > BFS_DATA_MAX_BYTES || len > BFS_DATA_MAX_BYTES - off)
		return -EFBIG;
	ret = bfs_data_lock_file(fs, ino, &inode, -EINVAL);
	if (ret)
		return ret;
	ret = bfs_iflags_may_write(inode.flags, inode.size, off);
	if (!ret)
		ret = bfs_data_write_locked(fs, &inode, buf, len, off);
	bfs_inode_unlock(fs, ino);
	return ret;
}
