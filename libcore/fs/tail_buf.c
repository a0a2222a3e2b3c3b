// SPDX-License-Identifier: MIT
/*
 * Write-behind tail buffers (tail_buf.h): a 4-byte append costs a copy
 * instead of a transaction that reads the file's last block back and
 * writes it again.
 *
 * A buffer holds file bytes [start, start + valid) of one inode, start
 * block-aligned at or below the file's size when it was made, and ends at
 * most at the next multiple of the chunk target, so that writing it back is
 * one write of one chunk.  It takes writes that begin inside or right at
 * the end of what it holds and end inside it.  Writing it back happens under
 * the inode's lock and never drops it (callers such as rename hold several
 * stripes); the buffer leaves the table only after its write committed, so
 * that an unlocked inode reader that missed it finds the committed size.
 */
#include <inttypes.h>

#include <bfs/log.h>

#include "data.h"
#include "tail_buf.h"

#define TAIL_SLOTS	64
#define TAIL_BYTES_MAX	(4 * MiB)	/* memory of all buffers together */
#define TAIL_HINTS	256		/* recent small appenders, by ino % TAIL_HINTS */

struct tail_buf {
	u64	ino;		/* 0: the slot is free */
	u64	start;		/* file offset of data[0] */
	u32	cap;		/* bytes data holds */
	u32	valid;		/* data[0, valid) are the file's bytes */
	u64	size;		/* the file's size */
	s64	mtime;
	u32	iflags;		/* the inode's flags when it was made */
	u64	seq;		/* smaller: older */
	bool	flushing;	/* being written back by its lock holder */
	u8	*data;
};

struct bfs_tail_bufs {
	unsigned nr;		/* slots in use (read without the lock by bfs_tail_any()) */
	unsigned max;		/* at most this many in use */
	bfs_mutex lock;
	u64	seq;
	int	err;		/* a write-back error not yet reported by fsync */
	u64	err_ino;
	struct tail_buf slot[TAIL_SLOTS];
	/*
	 * The inode of the last small write at a file's end that made no
	 * buffer, per hash: a buffer is made for the second one in a row.  A
	 * small file written once and closed gains nothing from a buffer (one
	 * transaction either way) and would pay for a second inode read and a
	 * copy; a log appender gains from its second write on.  Racy reads
	 * and writes (relaxed atomics): a hint only.
	 */
	u64	hint[TAIL_HINTS];
};

int bfs_tail_init(struct bfs_fs *fs)
{
	struct bfs_tail_bufs *tb = bfs_zalloc(sizeof(*tb));
	u32 target = BFS_MAX(fs->data->chunk.target, 1u);

	if (!tb)
		return -ENOMEM;
	bfs_mutex_init(&tb->lock);
	tb->max = (unsigned)BFS_MIN((u64)TAIL_SLOTS, BFS_MAX(TAIL_BYTES_MAX / target, 1));
	fs->tails = tb;
	return 0;
}

void bfs_tail_exit(struct bfs_fs *fs)
{
	struct bfs_tail_bufs *tb = fs->tails;
	unsigned i;

	if (!tb)
		return;
	/* bfs_fs_close() wrote everything back; a failed open has nothing */
	for (i = 0; i < TAIL_SLOTS; i++)
		bfs_free(tb->slot[i].data);
	bfs_mutex_destroy(&tb->lock);
	bfs_free(tb);
	fs->tails = NULL;
}

bool bfs_tail_any(const struct bfs_fs *fs)
{
	return fs->tails && __atomic_load_n(&fs->tails->nr, __ATOMIC_ACQUIRE);
}

static struct tail_buf *find(struct bfs_tail_bufs *tb, u64 ino)
{
	unsigned i;

	for (i = 0; i < TAIL_SLOTS; i++)
		if (tb->slot[i].ino == ino)
			return &tb->slot[i];
	return NULL;
}

/* does the buffer take @len bytes at @off? */
static bool takes(const struct tail_buf *e, u32 block_size, size_t len, u64 off)
{
	return !e->flushing && len && len <= block_size && off >= e->start &&
	       off <= e->start + e->valid && off + len <= e->start + e->cap;
}

/* copy a write the buffer takes (both locks held) */
static void put(struct tail_buf *e, const void *buf, size_t len, u64 off)
{
	u32 at = (u32)(off - e->start);

	memcpy(e->data + at, buf, len);
	e->valid = BFS_MAX(e->valid, at + (u32)len);
	e->size = BFS_MAX(e->size, off + len);
	e->mtime = bfs_fs_now();
}

ssize_t bfs_tail_write_fast(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off)
{
	struct bfs_tail_bufs *tb = fs->tails;
	struct tail_buf *e;
	ssize_t ret = 0;

	if (!buf || !bfs_tail_any(fs))
		return 0;
	bfs_mutex_lock(&tb->lock);
	e = find(tb, ino);
	if (e && takes(e, fs->data->block_size, len, off)) {
		ret = bfs_iflags_may_write(e->iflags, e->size, off);
		if (!ret) {
			put(e, buf, len, off);
			ret = (ssize_t)len;
		}
	}
	bfs_mutex_unlock(&tb->lock);
	return ret;
}

/*
 * Room for one more buffer: write the oldest back if its lock can be had
 * without waiting (we hold @ino's stripe: waiting could deadlock).
 */
static void make_room(struct bfs_fs *fs, u64 ino)
{
	struct bfs_tail_bufs *tb = fs->tails;
	struct tail_buf *old = NULL;
	unsigned i;
	u64 victim;

	bfs_mutex_lock(&tb->lock);
	for (i = 0; tb->nr >= tb->max && i < TAIL_SLOTS; i++) {
		struct tail_buf *e = &tb->slot[i];

		if (e->ino && !e->flushing && (!old || e->seq < old->seq))
			old = e;
	}
	victim = old ? old->ino : 0;
	bfs_mutex_unlock(&tb->lock);
	if (!victim)
		return;
	if (victim % BFS_INODE_LOCKS == ino % BFS_INODE_LOCKS) {
		bfs_tail_flush_locked(fs, victim);
	} else if (bfs_mutex_trylock(&fs->inode_locks[victim % BFS_INODE_LOCKS])) {
		bfs_tail_flush_locked(fs, victim);
		bfs_inode_unlock(fs, victim);
	}
}

ssize_t bfs_tail_write(struct bfs_fs *fs, const struct bfs_inode *inode, const void *buf,
		       size_t len, u64 off)
{
	struct bfs_tail_bufs *tb = fs->tails;
	struct bfs_fs_data *d = fs->data;
	u64 start = BFS_ROUND_DOWN(inode->size, (u64)d->block_size);
	u64 end = BFS_ROUND_DOWN(start, (u64)d->chunk.target) + d->chunk.target;
	struct tail_buf *e;
	u8 *data;
	int ret;

	if (!tb || !buf || !len || len > d->block_size || off < start || off > inode->size ||
	    off + len > end)
		return 0;
	if (__atomic_exchange_n(&tb->hint[inode->ino % TAIL_HINTS], inode->ino,
				__ATOMIC_RELAXED) != inode->ino)
		return 0;	/* the first small write at its end: the ordinary way */
	bfs_mutex_lock(&tb->lock);
	e = find(tb, inode->ino);
	bfs_mutex_unlock(&tb->lock);
	if (e)
		return 0;	/* one that does not take this write: the ordinary way */
	if (__atomic_load_n(&tb->nr, __ATOMIC_ACQUIRE) >= tb->max)
		make_room(fs, inode->ino);
	data = bfs_malloc(end - start);
	if (!data)
		return 0;
	/* the file's bytes of the block the buffer starts in: read once, here */
	if (inode->size > start) {
		ret = bfs_data_read_range(d, inode->ino, data, inode->size - start, start);
		if (ret) {
			bfs_free(data);
			return ret;
		}
	}
	bfs_mutex_lock(&tb->lock);
	e = tb->nr < tb->max ? find(tb, 0) : NULL;
	if (e) {
		*e = (struct tail_buf){
			.ino = inode->ino,
			.start = start,
			.cap = (u32)(end - start),
			.valid = (u32)(inode->size - start),
			.size = inode->size,
			.iflags = inode->flags,
			.seq = ++tb->seq,
			.data = data,
		};
		put(e, buf, len, off);
		__atomic_store_n(&tb->nr, tb->nr + 1, __ATOMIC_RELEASE);
	}
	bfs_mutex_unlock(&tb->lock);
	if (!e) {
		bfs_free(data);
		return 0;
	}
	return (ssize_t)len;
}

int bfs_tail_flush_locked(struct bfs_fs *fs, u64 ino)
{
	struct bfs_tail_bufs *tb = fs->tails;
	struct bfs_inode inode;
	struct tail_buf *e;
	u64 start;
	u32 valid;
	s64 mtime;
	ssize_t n;
	int ret;

	if (!bfs_tail_any(fs))
		return 0;
	bfs_mutex_lock(&tb->lock);
	e = find(tb, ino);
	if (!e || e->flushing) {
		bfs_mutex_unlock(&tb->lock);
		return 0;
	}
	e->flushing = true;
	start = e->start;
	valid = e->valid;
	mtime = e->mtime;
	bfs_mutex_unlock(&tb->lock);

	/* the data and the slot stay ours: only this stripe's holder changes them */
	ret = fs->read_only ? -EROFS : bfs_inode_read(fs, ino, &inode);
	if (!ret && valid) {
		n = bfs_data_write_back(fs, &inode, e->data, valid, start, mtime);
		ret = n < 0 ? (int)n : (size_t)n < valid ? -EIO : 0;
	}
	if (ret)
		bfs_err("inode %" PRIu64 ": writing back %u buffered bytes at offset %" PRIu64
			" failed: %s", ino, valid, start, strerror(-ret));

	bfs_mutex_lock(&tb->lock);
	bfs_free(e->data);
	*e = (struct tail_buf){ 0 };
	__atomic_store_n(&tb->nr, tb->nr - 1, __ATOMIC_RELEASE);
	if (ret && !tb->err) {
		tb->err = ret;
		tb->err_ino = ino;
	}
	bfs_mutex_unlock(&tb->lock);
	return ret;
}

int bfs_tail_flush_all(struct bfs_fs *fs)
{
	struct bfs_tail_bufs *tb = fs->tails;
	u64 inos[TAIL_SLOTS];
	unsigned i, nr = 0;
	int ret = 0, r;

	if (!bfs_tail_any(fs))
		return 0;
	/* those there now: buffers made meanwhile are the next sync's */
	bfs_mutex_lock(&tb->lock);
	for (i = 0; i < TAIL_SLOTS; i++)
		if (tb->slot[i].ino)
			inos[nr++] = tb->slot[i].ino;
	bfs_mutex_unlock(&tb->lock);
	for (i = 0; i < nr; i++) {
		bfs_inode_lock_raw(fs, inos[i]);
		r = bfs_tail_flush_locked(fs, inos[i]);
		bfs_inode_unlock(fs, inos[i]);
		ret = ret ? ret : r;
	}
	return ret;
}

int bfs_tail_error(struct bfs_fs *fs, u64 ino)
{
	struct bfs_tail_bufs *tb = fs->tails;
	int ret = 0;

	if (!tb)
		return 0;
	bfs_mutex_lock(&tb->lock);
	if (tb->err && tb->err_ino == ino) {
		ret = tb->err;
		tb->err = 0;
	}
	bfs_mutex_unlock(&tb->lock);
	return ret;
}

void bfs_tail_peek(struct bfs_fs *fs, u64 ino, struct bfs_tail_peek *p)
{
	struct bfs_tail_bufs *tb = fs->tails;
	struct tail_buf *e;

	p->have = false;
	if (!bfs_tail_any(fs))
		return;
	bfs_mutex_lock(&tb->lock);
	e = find(tb, ino);
	if (e) {
		p->have = true;
		p->size = e->size;
		p->mtime = e->mtime;
	}
	bfs_mutex_unlock(&tb->lock);
}

void bfs_tail_apply(const struct bfs_tail_peek *p, struct bfs_inode *inode)
{
	if (!p->have)
		return;
	inode->size = BFS_MAX(inode->size, p->size);
	if (p->mtime > inode->mtime)
		inode->mtime = p->mtime;
	if (p->mtime > inode->ctime)
		inode->ctime = p->mtime;
}

bool bfs_tail_overlaps(struct bfs_fs *fs, u64 ino, u64 off, size_t len)
{
	struct bfs_tail_bufs *tb = fs->tails;
	struct tail_buf *e;
	bool ret = false;

	if (!bfs_tail_any(fs))
		return false;
	bfs_mutex_lock(&tb->lock);
	e = find(tb, ino);
	if (e)
		ret = off < e->start + e->valid && off + len > e->start;
	bfs_mutex_unlock(&tb->lock);
	return ret;
}

void bfs_tail_read_locked(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off)
{
	struct bfs_tail_bufs *tb = fs->tails;
	struct tail_buf *e;

	if (!bfs_tail_any(fs))
		return;
	bfs_mutex_lock(&tb->lock);
	e = find(tb, ino);
	if (e) {
		u64 s = BFS_MAX(off, e->start), t = BFS_MIN(off + len, e->start + e->valid);

		if (s < t)
			memcpy((u8 *)buf + (s - off), e->data + (s - e->start), t - s);
	}
	bfs_mutex_unlock(&tb->lock);
}

void bfs_tail_note_write(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off)
{
	struct bfs_tail_bufs *tb = fs->tails;
	struct tail_buf *e;

	if (!bfs_tail_any(fs))
		return;
	bfs_mutex_lock(&tb->lock);
	e = find(tb, ino);
	if (e && !e->flushing) {
		u64 s = BFS_MAX(off, e->start), t = BFS_MIN(off + len, e->start + e->cap);

		/* only what continues the buffer's bytes: the rest is on the device now */
		if (s < t && s <= e->start + e->valid) {
			if (buf)
				memcpy(e->data + (s - e->start), (const u8 *)buf + (s - off), t - s);
			else
				memset(e->data + (s - e->start), 0, t - s);
			e->valid = BFS_MAX(e->valid, (u32)(t - e->start));
		}
		e->size = BFS_MAX(e->size, off + len);
	}
	bfs_mutex_unlock(&tb->lock);
}
