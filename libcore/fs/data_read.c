// SPDX-License-Identifier: MIT
/*
 * Reading files and mapping their extents.
 *
 * A read looks its extents up under the inode lock, so that it sees one
 * state of the file, and collects their chunks; then the chunks are read
 * in one batch (bfs_dev_submit(): in flight together), checked and copied.
 * A chunk the read wants whole lands in the caller's buffer directly.
 *
 * bfs_fs_read() drops the lock for the device reads, so that the reads of
 * one file are in flight together and do not wait for its writers: copy-on-
 * write never changes a chunk in place, only frees it, and a freed chunk's
 * bucket gets a new generation before it is written again.  So once the
 * reads are back, unchanged bucket generations and good checksums mean the
 * data is what the keys pointed to when they were looked up; anything else
 * (a bucket reused or discarded meanwhile) is read again under the lock,
 * where errors are real.  Chunks without a checksum cannot tell, so their
 * reads keep the lock.
 */
#include <inttypes.h>
#include <sys/stat.h>

#include <bfs/log.h>

#include "data.h"
#include "tail_buf.h"

/* one extent's part of a read: bytes [from, from + len) of its chunk to out */
struct extent_piece {
	u64	ino, foff;		/* for messages */
	u64	bucket;
	u32	gen;
	u64	from;
	u8	*out;
	size_t	len;
	struct data_chunk_read r;
};

/*
 * The pieces of a read: most reads have one or two, kept in the plan itself
 * (no allocation); a longer read moves them to the heap.  Plans live on
 * their reader's stack and are never copied.
 */
#define PLAN_INLINE	4

struct read_plan {
	struct extent_piece *p;
	struct bfs_dev_io *io;
	unsigned nr, cap;
	bool	unchecked;		/* a chunk without checksum */
	bool	kept_used;		/* a piece reads into the thread's kept buffer */
	struct extent_piece p_inline[PLAN_INLINE];
	struct bfs_dev_io io_inline[PLAN_INLINE];
};

static void plan_init(struct read_plan *rp)
{
	rp->p = rp->p_inline;
	rp->io = rp->io_inline;
	rp->nr = 0;
	rp->cap = PLAN_INLINE;
	rp->unchecked = false;
	rp->kept_used = false;
}

static void plan_drop(struct read_plan *rp)
{
	unsigned i;

	for (i = 0; i < rp->nr; i++)
		bfs_data_chunk_read_drop(&rp->p[i].r);
	if (rp->p != rp->p_inline)
		bfs_free(rp->p);
	if (rp->io != rp->io_inline)
		bfs_free(rp->io);
	plan_init(rp);
}

/* a heap copy of @n elements of @size from @old (inline or heap) with room for @cap */
static void *plan_array(void *inl, void *old, size_t n, size_t cap, size_t size)
{
	void *p;

	if (old != inl)
		return bfs_realloc(old, cap * size);
	p = bfs_malloc(cap * size);
	if (p)
		memcpy(p, old, n * size);
	return p;
}

static int plan_grow(struct read_plan *rp)
{
	unsigned cap = 2 * rp->cap;
	struct extent_piece *p;
	struct bfs_dev_io *io;

	p = plan_array(rp->p_inline, rp->p, rp->nr, cap, sizeof(*p));
	if (!p)
		return -ENOMEM;
	rp->p = p;
	io = plan_array(rp->io_inline, rp->io, rp->nr, cap, sizeof(*io));
	if (!io)
		return -ENOMEM;	/* rp->p already has room for cap: harmless */
	rp->io = io;
	rp->cap = cap;
	return 0;
}

/*
 * Check extent @k and add its part to @rp: 0 added or nothing to read
 * (unwritten: zeros already in @out), -EIO (logged), -ENOMEM.
 */
static int piece_add(struct bfs_fs_data *d, struct read_plan *rp, const struct bfs_bkey *k,
		     u64 skip, void *out, size_t len)
{
	const struct bfs_extent_v *v = extent_val(k);
	u64 dev_off = le64_to_cpu(v->offset), bk;
	u32 chunk = le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT;
	struct extent_piece *p;
	char why[256];
	int ret;

	if (v->flags & BFS_EXTENT_F_UNWRITTEN) {
		memset(out, 0, len);
		return 0;
	}
	if (rp->nr == rp->cap && (ret = plan_grow(rp)))
		return ret;
	p = &rp->p[rp->nr];
	*p = (struct extent_piece){
		.ino = le64_to_cpu(k->inode),
		.foff = (bfs_bkey_start(k) << BFS_SECTOR_SHIFT) + skip,
		.gen = le32_to_cpu(v->gen),
		.from = ((u64)le32_to_cpu(v->chunk_offset) << BFS_SECTOR_SHIFT) + skip,
		.out = out,
		.len = len,
	};
	bk = p->bucket = bfs_data_bucket_of(d, dev_off);
	if (!bfs_data_bucket_valid(d, bk) || p->gen != bfs_data_bucket_gen(d, bk)) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": stale data pointer to device offset %"
			PRIu64 " (gen %u, bucket gen %u)", p->ino, p->foff, dev_off, p->gen,
			bfs_data_bucket_valid(d, bk) ? bfs_data_bucket_gen(d, bk) : 0);
		return -EIO;
	}
	if (p->from + len > chunk) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": extent at device offset %" PRIu64
			" is malformed", p->ino, p->foff, dev_off);
		return -EIO;
	}
	ret = bfs_data_chunk_read_prep(d->block_size, v, !p->from && len == chunk ? out : NULL,
				       !rp->kept_used, &p->r, &rp->io[rp->nr], why, sizeof(why));
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": data %s", p->ino, p->foff, why);
		return -EIO;
	}
	if (v->csum_type == BFS_CSUM_NONE)
		rp->unchecked = true;
	if (p->r.kept)
		rp->kept_used = true;
	rp->nr++;
	return 0;
}

/*
 * Look up logical bytes [off, off + len) of @ino: holes and unwritten
 * ranges are zeroed in @buf now, the rest is planned into @rp.
 */
static int read_collect(struct bfs_fs_data *d, u64 ino, void *buf, size_t len, u64 off,
			struct read_plan *rp)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 end = off + len, done = off;	/* bytes below done are filled or planned */
	u8 *out = buf;
	int ret;

	/* a read wants one extent or a few: no batch of keys copied ahead */
	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS,
			    BFS_POS(ino, off >> BFS_SECTOR_SHIFT, 0), BFS_ITER_FEW);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		u64 ks = bfs_bkey_start(k) << BFS_SECTOR_SHIFT;
		u64 ke = le64_to_cpu(k->offset) << BFS_SECTOR_SHIFT;
		u64 s, e;

		if (le64_to_cpu(k->inode) != ino || ks >= end)
			break;
		if (k->type != BFS_KEY_EXTENT)
			continue;
		s = BFS_MAX(ks, off);
		e = BFS_MIN(ke, end);
		if (s >= e)
			continue;
		if (s > done)
			memset(out + (done - off), 0, s - done);	/* hole */
		ret = piece_add(d, rp, k, s - ks, out + (s - off), e - s);
		if (ret)
			break;
		done = e;
		if (done == end)
			break;	/* covered: no look at the next key */
	}
	bfs_btree_iter_exit(&it);
	if (ret && ret != -ENOENT)
		return ret;
	if (done < end)
		memset(out + (done - off), 0, end - done);
	return 0;
}

/* did every chunk's bucket keep the generation its key had? */
static bool read_still_current(struct bfs_fs_data *d, const struct read_plan *rp)
{
	unsigned i;

	/* the data was read before the generations are: see the top of the file */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	for (i = 0; i < rp->nr; i++)
		if (bfs_data_bucket_gen(d, rp->p[i].bucket) != rp->p[i].gen)
			return false;
	return true;
}

/*
 * Check, decompress and copy each piece read; frees the plan.  @quiet: an
 * unlocked attempt, whose failures are not reported (the caller tries
 * again under the lock) and which stops at the first.
 */
static int read_finish(struct read_plan *rp, bool quiet)
{
	unsigned i;
	int ret = 0;

	for (i = 0; i < rp->nr; i++) {
		struct extent_piece *p = &rp->p[i];
		char why[256];
		u8 *plain;
		int pret;

		if (ret) {
			bfs_data_chunk_read_drop(&p->r);
			continue;
		}
		pret = bfs_data_chunk_read_done(&p->r, rp->io[i].ret, &plain, why, sizeof(why));
		if (pret == -ENOMEM || (pret && quiet)) {
			ret = pret;
		} else if (pret) {
			bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": data %s", p->ino,
				p->foff, why);
			ret = -EIO;
		} else if (plain != p->out) {
			memcpy(p->out, plain + p->from, p->len);
			if (!p->r.kept)
				bfs_free(plain);
		}
	}
	rp->nr = 0;
	plan_drop(rp);
	return ret;
}

int bfs_data_extent_read(struct bfs_fs_data *d, const struct bfs_bkey *k, u64 skip, void *out,
			 size_t len)
{
	struct read_plan rp;
	int ret;

	plan_init(&rp);
	ret = piece_add(d, &rp, k, skip, out, len);
	if (ret) {
		plan_drop(&rp);
		return ret;
	}
	bfs_dev_submit(d->dev, rp.io, rp.nr);	/* each read's own result is in its ret */
	return read_finish(&rp, false);
}

int bfs_data_read_range(struct bfs_fs_data *d, u64 ino, void *buf, size_t len, u64 off)
{
	struct read_plan rp;
	int ret;

	plan_init(&rp);
	ret = read_collect(d, ino, buf, len, off, &rp);
	if (ret) {
		plan_drop(&rp);
		return ret;
	}
	bfs_dev_submit(d->dev, rp.io, rp.nr);
	return read_finish(&rp, false);
}

int bfs_data_lock_file(struct bfs_fs *fs, u64 ino, struct bfs_inode *inode, int not_reg)
{
	bfs_inode_lock(fs, ino);
	return bfs_data_file_read(fs, ino, inode, not_reg);
}

int bfs_data_file_read(struct bfs_fs *fs, u64 ino, struct bfs_inode *inode, int not_reg)
{
	int ret;

	ret = bfs_inode_read(fs, ino, inode);
	if (!ret && S_ISDIR(inode->mode))
		ret = -EISDIR;
	else if (!ret && !S_ISREG(inode->mode))
		ret = not_reg;
	if (ret)
		bfs_inode_unlock(fs, ino);
	return ret;
}

/*
 * Reads the chunks without the inode lock (see the top of the file): 0
 * done, 1 read it again under the lock, or an error.
 */
static int read_unlocked(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off)
{
	struct read_plan rp;
	int ret;

	plan_init(&rp);
	ret = read_collect(fs->data, ino, buf, len, off, &rp);
	if (ret || rp.unchecked) {
		plan_drop(&rp);
		return ret ? ret : 1;
	}
	bfs_inode_unlock(fs, ino);
	bfs_dev_submit(fs->data->dev, rp.io, rp.nr);
	if (!read_still_current(fs->data, &rp)) {
		plan_drop(&rp);
		ret = 1;
	} else {
		ret = read_finish(&rp, true) ? 1 : 0;
	}
	if (ret)
		bfs_inode_lock_raw(fs, ino);
	return ret;
}

/* under the lock: the device's bytes, and over them those still buffered */
static int read_locked(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off)
{
	int ret = bfs_data_read_range(fs->data, ino, buf, len, off);

	if (!ret)
		bfs_tail_read_locked(fs, ino, buf, len, off);
	return ret;
}

/* bfs_fs_read(); *@atime: whether the inode it saw is due an atime update */
static ssize_t fs_read(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off,
		       unsigned policy, bool *atime)
{
	struct bfs_inode inode;
	int ret;

	struct bfs_tail_peek tp;

	/* a buffered tail is read, not written back (tail_buf.h) */
	bfs_inode_lock_raw(fs, ino);
	ret = bfs_data_file_read(fs, ino, &inode, -EINVAL);
	if (ret)
		return ret;
	bfs_tail_peek(fs, ino, &tp);
	bfs_tail_apply(&tp, &inode);
	*atime = policy != BFS_ATIME_NEVER && bfs_inode_atime_due(&inode, policy);
	if (off >= inode.size) {
		bfs_inode_unlock(fs, ino);
		return 0;
	}
	len = (size_t)BFS_MIN((u64)len, inode.size - off);
	ret = tp.have && bfs_tail_overlaps(fs, ino, off, len) ? 1 :
	      read_unlocked(fs, ino, buf, len, off);
	if (ret == 0)
		return (ssize_t)len;	/* the lock is gone */
	if (ret == 1) {
		/* raced with a writer, no checksums, or buffered: under the lock */
		if (bfs_inode_read(fs, ino, &inode))
			inode.size = 0;
		bfs_tail_peek(fs, ino, &tp);
		bfs_tail_apply(&tp, &inode);
		len = off < inode.size ? (size_t)BFS_MIN((u64)len, inode.size - off) : 0;
		ret = len ? read_locked(fs, ino, buf, len, off) : 0;
	}
	bfs_inode_unlock(fs, ino);
	return ret ? ret : (ssize_t)len;
}

ssize_t bfs_fs_read(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off)
{
	bool atime;

	return fs_read(fs, ino, buf, len, off, BFS_ATIME_NEVER, &atime);
}

ssize_t bfs_fs_read_due(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off,
			unsigned policy, bool *atime_due)
{
	*atime_due = false;
	return fs_read(fs, ino, buf, len, off, policy, atime_due);
}

int bfs_fs_map(struct bfs_fs *fs, u64 ino, int (*fn)(void *ctx, const struct bfs_fs_extent *e),
	       void *ctx)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	/* extents as they will be: what is buffered is written back first */
	if (bfs_tail_any(fs)) {
		bfs_inode_lock(fs, ino);
		bfs_inode_unlock(fs, ino);
	}
	bfs_btree_iter_init(&it, fs->c, BFS_BTREE_EXTENTS, BFS_POS(ino, 0, 0), 0);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_extent_v *v = extent_val(k);
		struct bfs_fs_extent e;

		if (le64_to_cpu(k->inode) != ino)
			break;
		if (k->type != BFS_KEY_EXTENT)
			continue;
		e = (struct bfs_fs_extent){
			.logical = bfs_bkey_start(k) << BFS_SECTOR_SHIFT,
			.len = (u64)bfs_bkey_size(k) << BFS_SECTOR_SHIFT,
		};
		if (v->flags & BFS_EXTENT_F_UNWRITTEN) {
			e.flags = BFS_EXTENT_UNWRITTEN;
		} else if (v->compression != BFS_COMPRESSION_NONE) {
			e.physical = le64_to_cpu(v->offset);	/* the whole compressed chunk */
			e.flags = BFS_EXTENT_COMPRESSED;
		} else {
			e.physical = le64_to_cpu(v->offset) +
				     ((u64)le32_to_cpu(v->chunk_offset) << BFS_SECTOR_SHIFT);
		}
		ret = fn(ctx, &e);
		if (ret)
			break;
	}
	bfs_btree_iter_exit(&it);
	return ret;
}
