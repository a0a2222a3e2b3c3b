// SPDX-License-Identifier: MIT
/*
 * Reading files and mapping their extents.  Reads take the inode lock so an
 * extent's chunk cannot be freed and reused between looking up the key and
 * reading the data (that would be caught by the checksum, but as an error).
 *
 * A read of several extents collects them first and reads their chunks in
 * one batch (bfs_dev_submit(): in flight together), then checks and copies
 * each; a chunk the read wants whole lands in the caller's buffer directly.
 */
#include <inttypes.h>
#include <sys/stat.h>

#include <bfs/log.h>

#include "data.h"

#define DATA_READ_BATCH	32	/* extents whose chunks are read together */

/* one extent's part of a read: bytes [from, from + len) of its chunk to out */
struct extent_piece {
	u64	ino, foff;		/* for messages */
	u64	from;
	u8	*out;
	size_t	len;
	struct data_chunk_read r;
};

struct read_batch {
	struct extent_piece p[DATA_READ_BATCH];
	struct bfs_dev_io io[DATA_READ_BATCH];
	unsigned nr;
};

/*
 * Check extent @k and add its part to @b: 0 added, 1 nothing to read
 * (unwritten: zeros already in @out), -EIO (logged), -ENOMEM.
 */
static int piece_add(struct bfs_fs_data *d, struct read_batch *b, const struct bfs_bkey *k,
		     u64 skip, void *out, size_t len)
{
	const struct bfs_extent_v *v = extent_val(k);
	struct extent_piece *p = &b->p[b->nr];
	u64 dev_off = le64_to_cpu(v->offset), bk;
	u32 chunk = le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT;
	char why[256];
	int ret;

	*p = (struct extent_piece){
		.ino = le64_to_cpu(k->inode),
		.foff = (bfs_bkey_start(k) << BFS_SECTOR_SHIFT) + skip,
		.from = ((u64)le32_to_cpu(v->chunk_offset) << BFS_SECTOR_SHIFT) + skip,
		.out = out,
		.len = len,
	};
	if (v->flags & BFS_EXTENT_F_UNWRITTEN) {
		memset(out, 0, len);
		return 1;
	}
	bk = bfs_data_bucket_of(d, dev_off);
	if (!bfs_data_bucket_valid(d, bk) || le32_to_cpu(v->gen) != bfs_data_bucket_gen(d, bk)) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": stale data pointer to device offset %"
			PRIu64 " (gen %u, bucket gen %u)", p->ino, p->foff, dev_off, le32_to_cpu(v->gen),
			bfs_data_bucket_valid(d, bk) ? bfs_data_bucket_gen(d, bk) : 0);
		return -EIO;
	}
	if (p->from + len > chunk) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": extent at device offset %" PRIu64
			" is malformed", p->ino, p->foff, dev_off);
		return -EIO;
	}
	ret = bfs_data_chunk_read_prep(d->block_size, v, !p->from && len == chunk ? out : NULL,
				       &p->r, &b->io[b->nr], why, sizeof(why));
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": data %s", p->ino, p->foff, why);
		return -EIO;
	}
	b->nr++;
	return 0;
}

/* read the batch's chunks together, then check and copy each: the first error */
static int batch_read(struct bfs_fs_data *d, struct read_batch *b)
{
	unsigned i;
	int ret = 0;

	if (!b->nr)
		return 0;
	bfs_dev_submit(d->dev, b->io, b->nr);	/* each read's own result is in its ret */
	for (i = 0; i < b->nr; i++) {
		struct extent_piece *p = &b->p[i];
		char why[256];
		u8 *plain;
		int pret;

		if (ret) {
			bfs_data_chunk_read_drop(&p->r);
			continue;
		}
		pret = bfs_data_chunk_read_done(&p->r, b->io[i].ret, &plain, why, sizeof(why));
		if (pret == -ENOMEM) {
			ret = pret;
		} else if (pret) {
			bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": data %s", p->ino,
				p->foff, why);
			ret = -EIO;
		} else if (plain != p->out) {
			memcpy(p->out, plain + p->from, p->len);
			bfs_free(plain);
		}
	}
	b->nr = 0;
	return ret;
}

int bfs_data_extent_read(struct bfs_fs_data *d, const struct bfs_bkey *k, u64 skip, void *out,
			 size_t len)
{
	struct read_batch *b = bfs_malloc(sizeof(*b));
	int ret;

	if (!b)
		return -ENOMEM;
	b->nr = 0;
	ret = piece_add(d, b, k, skip, out, len);
	if (!ret)
		ret = batch_read(d, b);
	bfs_free(b);
	return ret < 0 ? ret : 0;
}

int bfs_data_read_range(struct bfs_fs_data *d, u64 ino, void *buf, size_t len, u64 off)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 end = off + len, done = off;	/* bytes below done are filled or queued */
	struct read_batch *b = bfs_malloc(sizeof(*b));
	u8 *out = buf;
	int ret, bret;

	if (!b)
		return -ENOMEM;
	b->nr = 0;
	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS,
			    BFS_POS(ino, off >> BFS_SECTOR_SHIFT, 0), 0);
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
		ret = piece_add(d, b, k, s - ks, out + (s - off), e - s);
		if (ret < 0)
			break;
		done = e;
		if (b->nr == DATA_READ_BATCH) {
			ret = batch_read(d, b);
			if (ret)
				break;
		}
	}
	bfs_btree_iter_exit(&it);
	/* what is queued is read even after an error, to free its buffers */
	bret = batch_read(d, b);
	bfs_free(b);
	if (ret && ret != -ENOENT)
		return ret;
	if (bret)
		return bret;
	if (done < end)
		memset(out + (done - off), 0, end - done);
	return 0;
}

int bfs_data_lock_file(struct bfs_fs *fs, u64 ino, struct bfs_inode *inode, int not_reg)
{
	int ret;

	bfs_inode_lock(fs, ino);
	ret = bfs_inode_read(fs, ino, inode);
	if (!ret && S_ISDIR(inode->mode))
		ret = -EISDIR;
	else if (!ret && !S_ISREG(inode->mode))
		ret = not_reg;
	if (ret)
		bfs_inode_unlock(fs, ino);
	return ret;
}

ssize_t bfs_fs_read(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off)
{
	struct bfs_inode inode;
	int ret;

	ret = bfs_data_lock_file(fs, ino, &inode, -EINVAL);
	if (ret)
		return ret;
	if (off >= inode.size) {
		bfs_inode_unlock(fs, ino);
		return 0;
	}
	len = (size_t)BFS_MIN((u64)len, inode.size - off);
	ret = bfs_data_read_range(fs->data, ino, buf, len, off);
	bfs_inode_unlock(fs, ino);
	return ret ? ret : (ssize_t)len;
}

int bfs_fs_map(struct bfs_fs *fs, u64 ino, int (*fn)(void *ctx, const struct bfs_fs_extent *e),
	       void *ctx)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fs->c, BFS_BTREE_EXTENTS, BFS_POS(ino, 0, 0), 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
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
	return ret == -ENOENT ? 0 : ret;
}
