// SPDX-License-Identifier: MIT
/*
 * Removing and preallocating file ranges: truncate, inode deletion, punch
 * hole, zero range and fallocate.  Each runs in transactions of its own
 * (batches of at most RANGE_BATCH keys, so a huge file never needs one huge
 * journal entry), committed under the inode lock the caller holds, with the
 * alloc keys of every bucket that loses sectors in the same transaction.
 * Ranges are removed before the size shrinks, so a crash half way leaves
 * zeros below the old size, never old data beyond a new size.
 */
#include <sys/stat.h>

#include <bfs/log.h>

#include "data.h"

#define RANGE_BATCH	256
#define KEEP_SIZE	UINT64_MAX

/* sectors [s, e) of extent @k go away: take them off the inode and the bucket */
static int account_extent(struct bfs_fs_data *d, struct data_update *u, const struct bfs_bkey *k,
			  u64 s, u64 e)
{
	const struct bfs_extent_v *v = extent_val(k);
	u64 b;

	u->inode_sectors -= (s64)(e - s);
	if (v->flags & BFS_EXTENT_F_UNWRITTEN)
		return 0;
	b = bfs_data_bucket_of(d, le64_to_cpu(v->offset));
	if (!bfs_data_bucket_valid(d, b) || le32_to_cpu(v->gen) != bfs_data_bucket_gen(d, b))
		return 0;
	return data_update_add(u, b, -(s64)(e - s), 0);
}

/* commit @u with the inode (if @write_inode), or just end an empty transaction */
static int commit_range(struct bfs_fs_data *d, struct data_update *u, struct bfs_inode *inode,
			bool write_inode, bool empty)
{
	struct bfs_inode saved = *inode;
	int ret = 0;

	if (empty && !write_inode)
		return 0;
	inode->sectors = (u64)((s64)inode->sectors + u->inode_sectors);
	if (write_inode)
		ret = bfs_inode_write(u->t, inode);
	if (!ret)
		ret = data_update_commit(d, u, NULL);
	else
		data_update_abort(d, u);
	if (ret)
		*inode = saved;
	return ret;
}

/*
 * Delete sectors [start, end) of the inode; the last transaction also sets
 * the size to @new_size (unless KEEP_SIZE) and writes the inode.
 */
static int punch_range(struct bfs_fs *fs, struct bfs_inode *inode, u64 start, u64 end,
		       bool write_inode, u64 new_size)
{
	struct bfs_fs_data *d = fs->data;
	int ret = 0;

	while (!ret) {
		struct bfs_btree_iter it;
		const struct bfs_bkey *k;
		struct data_update u;
		struct bfs_trans *t;
		unsigned n = 0, max = RANGE_BATCH;
		bool more = false;

		if (bfs_data_space_low(d))
			max = DATA_SMALL_TRANS;
		ret = bfs_trans_begin(d->c, &t);
		if (ret)
			return ret;
		data_update_init(&u, t);
		bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(inode->ino, start, 0), 0);
		for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
			u64 ks = bfs_bkey_start(k), ke = le64_to_cpu(k->offset), s, e;

			if (le64_to_cpu(k->inode) != inode->ino || ks >= end)
				break;
			if (k->type != BFS_KEY_EXTENT)
				continue;
			if (n + u.nr + 1 >= max) {
				more = true;
				break;
			}
			s = BFS_MAX(ks, start);
			e = BFS_MIN(ke, end);
			ret = account_extent(d, &u, k, s, e);
			if (!ret)
				ret = bfs_trans_delete_range(t, BFS_BTREE_EXTENTS, inode->ino, s, e, 0);
			if (ret)
				break;
			start = e;
			n++;
		}
		bfs_btree_iter_exit(&it);
		if (ret == -ENOENT)
			ret = 0;
		if (!ret) {
			if (!more && new_size != KEEP_SIZE)
				inode->size = new_size;
			ret = commit_range(d, &u, inode, write_inode && (n || !more), !n);
		}
		bfs_trans_end(t);
		data_update_exit(&u);
		if (!more)
			break;
	}
	return ret;
}

/* does block-aligned [off, off + len) hold written (non-unwritten) data? */
static int range_has_data(struct bfs_fs_data *d, u64 ino, u64 off, u64 len, bool *has)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 s = off >> BFS_SECTOR_SHIFT, e = (off + len) >> BFS_SECTOR_SHIFT;
	int ret;

	*has = false;
	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(ino, s, 0), 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		if (le64_to_cpu(k->inode) != ino || bfs_bkey_start(k) >= e)
			break;
		if (k->type == BFS_KEY_EXTENT && !extent_is_unwritten(k)) {
			*has = true;
			break;
		}
	}
	bfs_btree_iter_exit(&it);
	return ret == -ENOENT ? 0 : ret;
}

/* write zeros over [off, off + len) inside one block, if the block holds data */
static int zero_partial(struct bfs_fs *fs, struct bfs_inode *inode, u64 off, u64 len)
{
	struct bfs_fs_data *d = fs->data;
	u64 bs = d->block_size;
	struct data_update u;
	struct bfs_trans *t;
	size_t done = 0;
	bool has;
	u8 *cbuf;
	int ret;

	if (!len)
		return 0;
	ret = range_has_data(d, inode->ino, BFS_ROUND_DOWN(off, bs), bs, &has);
	if (ret || !has)
		return ret;
	cbuf = bfs_malloc(d->chunk_max);
	if (!cbuf)
		return -ENOMEM;
	ret = bfs_trans_begin(d->c, &t);
	if (!ret) {
		data_update_init(&u, t);
		ret = data_queue_write(d, &u, inode->ino, NULL, len, off, cbuf, &done);
		if (done)
			ret = commit_range(d, &u, inode, true, false);
		else if (!ret)
			ret = -ENOSPC;	/* the block needed space that copy-GC could not find */
		bfs_trans_end(t);
		data_update_exit(&u);
	}
	bfs_free(cbuf);
	return ret;
}

int bfs_fs_data_truncate(struct bfs_fs *fs, struct bfs_trans *t, struct bfs_inode *inode,
			 u64 new_size)
{
	struct bfs_fs_data *d = fs->data;
	u64 bs = d->block_size, bend = BFS_ROUND_UP(new_size, bs);
	struct bfs_inode tmp = *inode;
	int ret = 0;

	if (new_size > BFS_DATA_MAX_BYTES)
		return -EFBIG;
	if (new_size % bs)
		ret = zero_partial(fs, &tmp, new_size, bend - new_size);
	/* also drops unwritten extents that fallocate KEEP_SIZE left beyond a larger size */
	if (!ret)
		ret = punch_range(fs, &tmp, bend >> BFS_SECTOR_SHIFT, UINT64_MAX, true, new_size);
	inode->sectors = tmp.sectors;
	return ret;
}

int bfs_fs_data_delete_inode(struct bfs_fs *fs, struct bfs_trans *t, struct bfs_inode *inode)
{
	struct bfs_inode tmp = *inode;
	int ret;

	ret = punch_range(fs, &tmp, 0, UINT64_MAX, false, KEEP_SIZE);
	inode->sectors = tmp.sectors;
	return ret;
}

/*
 * Unwritten extents over sectors [start, end): over holes only (@holes), or
 * replacing whatever is there (zero range).
 */
static int insert_unwritten(struct bfs_fs *fs, struct bfs_inode *inode, u64 start, u64 end,
			    bool holes)
{
	struct bfs_fs_data *d = fs->data;
	u64 pos = start;
	int ret = 0;

	while (pos < end && !ret) {
		struct data_update u;
		struct bfs_trans *t;
		unsigned n = 0, max = bfs_data_space_low(d) ? DATA_SMALL_TRANS / 2 : RANGE_BATCH;

		ret = bfs_trans_begin(d->c, &t);
		if (ret)
			return ret;
		data_update_init(&u, t);
		while (pos < end && n + u.nr < max && !ret) {
			u64 kbuf[EXTENT_KEY_U64S], e = end;

			if (holes) {
				struct bfs_btree_iter it;
				const struct bfs_bkey *k;

				bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS,
						    BFS_POS(inode->ino, pos, 0), 0);
				bool skip = false;

				ret = bfs_btree_iter_peek(&it, &k);
				if (!ret && le64_to_cpu(k->inode) == inode->ino &&
				    bfs_bkey_start(k) < end) {
					if (bfs_bkey_start(k) <= pos) {
						pos = le64_to_cpu(k->offset);	/* skip data */
						skip = true;
					} else {
						e = bfs_bkey_start(k);
					}
				}
				bfs_btree_iter_exit(&it);
				if (ret == -ENOENT)
					ret = 0;
				if (ret || skip)
					continue;
			} else {
				e = BFS_MIN(end, pos + BFS_EXTENT_UNWRITTEN_MAX_SECTORS);
				ret = data_account_overwrite(d, &u, inode->ino, pos, e);
			}
			e = BFS_MIN(e, pos + BFS_EXTENT_UNWRITTEN_MAX_SECTORS);
			if (!ret)
				ret = bfs_trans_update(t, BFS_BTREE_EXTENTS,
						       bfs_extent_key_unwritten(kbuf, inode->ino, pos, e));
			u.inode_sectors += (s64)(e - pos);
			pos = e;
			n++;
		}
		if (!ret)
			ret = commit_range(d, &u, inode, true, !n);
		bfs_trans_end(t);
		data_update_exit(&u);
	}
	return ret;
}

static int fallocate_locked(struct bfs_fs *fs, struct bfs_inode *inode, unsigned mode,
			    u64 off, u64 len)
{
	struct bfs_fs_data *d = fs->data;
	u64 bs = d->block_size, end = off + len;
	u64 as = BFS_ROUND_UP(off, bs), ae = BFS_ROUND_DOWN(end, bs);
	bool keep = mode & BFS_FALLOC_KEEP_SIZE;
	int ret = 0;

	if (mode & (BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_ZERO_RANGE)) {
		/* partial blocks at the edges are rewritten with zeros */
		if (as > ae) {
			ret = zero_partial(fs, inode, off, len);
		} else {
			ret = zero_partial(fs, inode, off, as - off);
			if (!ret)
				ret = zero_partial(fs, inode, ae, end - ae);
		}
		if (!ret && as < ae) {
			if (mode & BFS_FALLOC_PUNCH_HOLE)
				ret = punch_range(fs, inode, as >> BFS_SECTOR_SHIFT,
						  ae >> BFS_SECTOR_SHIFT, true, KEEP_SIZE);
			else
				ret = insert_unwritten(fs, inode, as >> BFS_SECTOR_SHIFT,
						       ae >> BFS_SECTOR_SHIFT, false);
		}
	} else {
		u64 f, tot;

		/*
		 * Space is reserved only logically: with copy-on-write a later
		 * write needs new space anyway, so preallocated blocks could not
		 * guarantee it.  Refuse what plainly does not fit.
		 */
		bfs_data_stats(d, &tot, &f);
		if (len > f)
			return -ENOSPC;
		ret = insert_unwritten(fs, inode, BFS_ROUND_DOWN(off, bs) >> BFS_SECTOR_SHIFT,
				       BFS_ROUND_UP(end, bs) >> BFS_SECTOR_SHIFT, true);
	}
	if (!ret && ((!keep && !(mode & BFS_FALLOC_PUNCH_HOLE) && end > inode->size) ||
		     (mode & (BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_ZERO_RANGE)))) {
		struct bfs_trans *t;
		struct bfs_inode saved = *inode;

		if (!keep && !(mode & BFS_FALLOC_PUNCH_HOLE) && end > inode->size)
			inode->size = end;
		inode->ctime = bfs_fs_now();
		if (mode & (BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_ZERO_RANGE))
			inode->mtime = inode->ctime;
		ret = bfs_trans_begin(d->c, &t);
		if (!ret) {
			ret = bfs_inode_write(t, inode);
			if (!ret)
				ret = bfs_trans_commit(t, NULL);
			bfs_trans_end(t);
		}
		if (ret)
			*inode = saved;
	}
	return ret;
}

int bfs_fs_fallocate(struct bfs_fs *fs, u64 ino, unsigned mode, u64 off, u64 len)
{
	struct bfs_inode inode;
	int ret;

	if (fs->read_only)
		return -EROFS;
	if (mode & ~(BFS_FALLOC_KEEP_SIZE | BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & BFS_FALLOC_PUNCH_HOLE) &&
	    ((mode & BFS_FALLOC_ZERO_RANGE) || !(mode & BFS_FALLOC_KEEP_SIZE)))
		return -EOPNOTSUPP;
	if (!len)
		return -EINVAL;
	if (off > BFS_DATA_MAX_BYTES || len > BFS_DATA_MAX_BYTES - off)
		return -EFBIG;
	bfs_inode_lock(fs, ino);
	ret = bfs_inode_read(fs, ino, &inode);
	if (!ret && S_ISDIR(inode.mode))
		ret = -EISDIR;
	else if (!ret && !S_ISREG(inode.mode))
		ret = -ENODEV;
	if (!ret)
		ret = fallocate_locked(fs, &inode, mode, off, len);
	bfs_inode_unlock(fs, ino);
	return ret;
}
