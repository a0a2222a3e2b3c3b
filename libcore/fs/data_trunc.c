// SPDX-License-Identifier: MIT
/*
 * Removing and preallocating file ranges: truncate, inode deletion, punch
 * hole, zero range and fallocate.
 *
 * Each operation builds one transaction (a "range op"): zeroed partial
 * blocks, deleted or unwritten extents, the alloc keys of every bucket that
 * gains or loses sectors, and the inode.  So the common case is atomic.  A
 * huge range is split into transactions of at most RANGE_BATCH keys (no
 * huge journal entries); then ranges are removed before the size shrinks,
 * so a crash half way leaves zeros below the old size, never old data
 * beyond a new size.
 */
#include <sys/stat.h>

#include <bfs/log.h>

#include "data.h"

#define RANGE_BATCH	256

struct range_op {
	struct bfs_fs_data *d;
	struct bfs_inode *inode;
	struct data_update u;
	struct bfs_trans *t;
	unsigned nr;		/* keys queued */
	unsigned max;
	u8	*cbuf;		/* chunk_max bytes, for zeroing partial blocks */
};

static int op_begin(struct range_op *op)
{
	int ret = bfs_trans_begin(op->d->c, &op->t);

	if (ret)
		return ret;
	data_update_init(&op->u, op->t);
	op->nr = 0;
	/* the btree core reserves node slots in proportion to the updates */
	op->max = bfs_data_space_low(op->d) ? DATA_SMALL_TRANS : RANGE_BATCH;
	return 0;
}

static bool op_full(struct range_op *op)
{
	return op->nr + op->u.nr + 1 >= op->max;
}

static void op_abort(struct range_op *op)
{
	data_update_abort(op->d, &op->u);
	bfs_trans_end(op->t);
	data_update_exit(&op->u);
	op->t = NULL;
}

/* commit what is queued (with the inode if @write_inode) and end the transaction */
static int op_commit(struct range_op *op, bool write_inode)
{
	struct bfs_inode saved = *op->inode;
	int ret = 0;

	if (!op->nr && !write_inode) {
		op_abort(op);
		return 0;
	}
	op->inode->sectors = (u64)((s64)op->inode->sectors + op->u.inode_sectors);
	if (write_inode)
		ret = bfs_inode_write(op->t, op->inode);
	if (!ret)
		ret = data_update_commit(op->d, &op->u, NULL);
	else
		data_update_abort(op->d, &op->u);
	if (ret)
		*op->inode = saved;
	bfs_trans_end(op->t);
	data_update_exit(&op->u);
	op->t = NULL;
	return ret;
}

static int op_next(struct range_op *op, bool write_inode)
{
	int ret = op_commit(op, write_inode);

	return ret ? ret : op_begin(op);
}

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

/*
 * Queue the deletion of sectors [*start, end) until the op is full; *start
 * moves past what was queued (to @end when nothing is left).
 */
static int op_punch(struct range_op *op, u64 *start, u64 end)
{
	struct bfs_fs_data *d = op->d;
	u64 ino = op->inode->ino;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(ino, *start, 0), 0);
	for_each_btree_key(&it, k, ret) {
		u64 ks = bfs_bkey_start(k), ke = le64_to_cpu(k->offset), s, e;

		if (le64_to_cpu(k->inode) != ino || ks >= end)
			break;
		if (k->type != BFS_KEY_EXTENT)
			continue;
		if (op_full(op)) {
			bfs_btree_iter_exit(&it);
			return 0;	/* *start says where to go on */
		}
		s = BFS_MAX(ks, *start);
		e = BFS_MIN(ke, end);
		ret = account_extent(d, &op->u, k, s, e);
		if (!ret)
			ret = bfs_trans_delete_range(op->t, BFS_BTREE_EXTENTS, ino, s, e, 0);
		if (ret)
			break;
		*start = e;
		op->nr++;
	}
	bfs_btree_iter_exit(&it);
	if (ret)
		return ret;
	*start = end;
	return 0;
}

/*
 * Queue unwritten extents over sectors [*pos, end) until the op is full:
 * over holes only (@holes), or replacing what is there (zero range).
 */
static int op_unwritten(struct range_op *op, u64 *pos, u64 end, bool holes)
{
	struct bfs_fs_data *d = op->d;
	u64 ino = op->inode->ino;
	int ret = 0;

	while (*pos < end && !op_full(op) && !ret) {
		u64 kbuf[EXTENT_KEY_U64S], e = end;

		if (holes) {
			struct bfs_btree_iter it;
			const struct bfs_bkey *k;
			bool skip = false;

			bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(ino, *pos, 0), 0);
			ret = bfs_btree_iter_peek(&it, &k);
			if (!ret && le64_to_cpu(k->inode) == ino && bfs_bkey_start(k) < end) {
				if (bfs_bkey_start(k) <= *pos) {
					*pos = BFS_MIN(le64_to_cpu(k->offset), end);	/* data: skip */
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
			e = BFS_MIN(e, *pos + BFS_EXTENT_UNWRITTEN_MAX_SECTORS);
		} else {
			e = BFS_MIN(end, *pos + BFS_EXTENT_UNWRITTEN_MAX_SECTORS);
			ret = data_account_overwrite(d, &op->u, ino, *pos, e);
			if (ret)
				break;
		}
		ret = bfs_trans_update(op->t, BFS_BTREE_EXTENTS,
				       bfs_extent_key_unwritten(kbuf, ino, *pos, e));
		if (ret)
			break;
		op->u.inode_sectors += (s64)(e - *pos);
		*pos = e;
		op->nr++;
	}
	return ret;
}

/* does [off, off + len) hold written (not unwritten) data? */
static int range_has_data(struct bfs_fs_data *d, u64 ino, u64 off, u64 len, bool *has)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 s = off >> BFS_SECTOR_SHIFT, e = BFS_DIV_ROUND_UP(off + len, BFS_SECTOR_SIZE);
	int ret;

	*has = false;
	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(ino, s, 0), 0);
	for_each_btree_key(&it, k, ret) {
		if (le64_to_cpu(k->inode) != ino || bfs_bkey_start(k) >= e)
			break;
		if (k->type == BFS_KEY_EXTENT && !extent_is_unwritten(k)) {
			*has = true;
			break;
		}
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

/*
 * Queue zeros over [off, off + len), inside one block, if the block holds
 * data (copy-on-write of that block).  Out of space with other changes of
 * this inode queued, the op is committed first, so copy-GC may run.
 */
static int op_zero(struct range_op *op, u64 off, u64 len)
{
	struct bfs_fs_data *d = op->d;
	u64 bs = d->block_size;
	size_t done = 0;
	bool has;
	int ret;

	if (!len)
		return 0;
	ret = range_has_data(d, op->inode->ino, BFS_ROUND_DOWN(off, bs), bs, &has);
	if (ret || !has)
		return ret;
	if (op_full(op)) {
		ret = op_next(op, true);
		if (ret)
			return ret;
	}
	if (!op->cbuf) {
		op->cbuf = bfs_malloc(d->chunk_max);
		if (!op->cbuf)
			return -ENOMEM;
	}
	ret = data_queue_write(d, &op->u, op->inode->ino, NULL, len, off, op->cbuf, &done);
	if (!ret && !done && op->u.nr) {
		/* out of space: copy-GC needs this inode without uncommitted changes */
		ret = op_next(op, true);
		if (!ret)
			ret = data_queue_write(d, &op->u, op->inode->ino, NULL, len, off, op->cbuf,
					       &done);
	}
	if (!ret && !done)
		ret = -ENOSPC;
	if (!ret)
		op->nr++;
	return ret;
}

static void op_exit(struct range_op *op)
{
	if (op->t)
		op_abort(op);
	bfs_free(op->cbuf);
}

int bfs_fs_data_truncate(struct bfs_fs *fs, struct bfs_trans *t, struct bfs_inode *inode,
			 u64 new_size)
{
	struct bfs_fs_data *d = fs->data;
	u64 bs = d->block_size, bend = BFS_ROUND_UP(new_size, bs), start, old_size;
	struct bfs_inode tmp = *inode;
	struct range_op op = { .d = d, .inode = &tmp };
	int ret;

	if (new_size > BFS_DATA_MAX_BYTES)
		return -EFBIG;
	/*
	 * The caller already put the new size into *inode, so take the old one
	 * from the btree: the size it had is what needs zeroing and deleting.
	 */
	ret = bfs_inode_read(fs, inode->ino, &tmp);
	if (ret)
		return ret;
	old_size = tmp.size;
	ret = op_begin(&op);
	if (ret)
		return ret;
	/* the tail of the new last block: zero now, or a later extension shows it */
	if (new_size % bs && new_size < old_size)
		ret = op_zero(&op, new_size, bend - new_size);
	/* everything beyond, also unwritten extents fallocate KEEP_SIZE left past the size */
	start = bend >> BFS_SECTOR_SHIFT;
	while (!ret) {
		ret = op_punch(&op, &start, UINT64_MAX);
		if (ret || start == UINT64_MAX)
			break;
		/* the old size still, and the sectors this batch leaves (a crash here: fsck agrees) */
		ret = op_next(&op, true);
	}
	if (!ret) {
		tmp.size = new_size;
		ret = op_commit(&op, true);
	}
	op_exit(&op);
	inode->sectors = tmp.sectors;
	return ret;
}

int bfs_fs_data_delete_inode(struct bfs_fs *fs, struct bfs_trans *t, struct bfs_inode *inode)
{
	struct bfs_inode tmp = *inode;
	struct range_op op = { .d = fs->data, .inode = &tmp };
	u64 start = 0;
	int ret;

	/* the caller deletes the inode in @t: only the extents go here */
	ret = op_begin(&op);
	while (!ret) {
		ret = op_punch(&op, &start, UINT64_MAX);
		if (ret)
			break;
		ret = op_next(&op, false);
		if (start == UINT64_MAX)
			break;
	}
	op_exit(&op);
	inode->sectors = tmp.sectors;
	return ret;
}

/* bytes of [start, end) (block aligned) that no extent covers */
static int hole_bytes(struct bfs_fs_data *d, u64 ino, u64 start, u64 end, u64 *holes)
{
	u64 s = start >> BFS_SECTOR_SHIFT, e = end >> BFS_SECTOR_SHIFT, covered = 0;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS, BFS_POS(ino, s, 0), 0);
	for_each_btree_key(&it, k, ret) {
		if (le64_to_cpu(k->inode) != ino || bfs_bkey_start(k) >= e)
			break;
		if (k->type == BFS_KEY_EXTENT)
			covered += BFS_MIN(e, le64_to_cpu(k->offset)) - BFS_MAX(s, bfs_bkey_start(k));
	}
	bfs_btree_iter_exit(&it);
	*holes = ((e - s) - covered) << BFS_SECTOR_SHIFT;
	return ret;
}

static int fallocate_locked(struct bfs_fs *fs, struct bfs_inode *inode, unsigned mode,
			    u64 off, u64 len)
{
	struct bfs_fs_data *d = fs->data;
	struct range_op op = { .d = d, .inode = inode };
	u64 bs = d->block_size, end = off + len;
	u64 as = BFS_ROUND_UP(off, bs), ae = BFS_ROUND_DOWN(end, bs);
	bool keep = mode & BFS_FALLOC_KEEP_SIZE;
	u64 pos, stop;
	int ret;

	if (!(mode & (BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_ZERO_RANGE))) {
		u64 tot, f, holes;

		/*
		 * Space is reserved only logically: with copy-on-write a later
		 * write needs new space anyway, so preallocated blocks could not
		 * guarantee it.  Refuse what plainly does not fit.
		 */
		ret = hole_bytes(d, inode->ino, BFS_ROUND_DOWN(off, bs), BFS_ROUND_UP(end, bs),
				 &holes);
		if (ret)
			return ret;
		bfs_data_stats(d, &tot, &f);
		if (holes > f)
			return -ENOSPC;
	}
	ret = op_begin(&op);
	if (ret)
		return ret;
	if (mode & (BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_ZERO_RANGE)) {
		/* partial blocks at the edges are rewritten with zeros */
		if (as > ae) {
			ret = op_zero(&op, off, len);
		} else {
			ret = op_zero(&op, off, as - off);
			if (!ret)
				ret = op_zero(&op, ae, end - ae);
		}
		pos = as >> BFS_SECTOR_SHIFT;
		stop = as < ae ? ae >> BFS_SECTOR_SHIFT : pos;
	} else {
		pos = BFS_ROUND_DOWN(off, bs) >> BFS_SECTOR_SHIFT;
		stop = BFS_ROUND_UP(end, bs) >> BFS_SECTOR_SHIFT;
	}
	while (!ret && pos < stop) {
		if (mode & BFS_FALLOC_PUNCH_HOLE)
			ret = op_punch(&op, &pos, stop);
		else
			ret = op_unwritten(&op, &pos, stop, !(mode & BFS_FALLOC_ZERO_RANGE));
		if (!ret && pos < stop)
			ret = op_next(&op, true);
	}
	if (!ret) {
		if (!keep && !(mode & BFS_FALLOC_PUNCH_HOLE) && end > inode->size)
			inode->size = end;
		inode->ctime = bfs_fs_now();
		if (mode & (BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_ZERO_RANGE))
			inode->mtime = inode->ctime;
		ret = op_commit(&op, true);
	}
	op_exit(&op);
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
	ret = bfs_data_lock_file(fs, ino, &inode, -ENODEV);
	if (ret)
		return ret;
	if (inode.flags & BFS_INODE_IMMUTABLE)
		ret = -EPERM;
	else if ((inode.flags & BFS_INODE_APPEND) && (mode & ~BFS_FALLOC_KEEP_SIZE))
		ret = -EPERM;
	else
		ret = fallocate_locked(fs, &inode, mode, off, len);
	bfs_inode_unlock(fs, ino);
	return ret;
}
