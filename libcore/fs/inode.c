// SPDX-License-Identifier: MIT
/*
 * Inode records: encoding of struct bfs_inode_v, reading and writing inode
 * keys, the inode-number counter, symlink targets and the deletion of a
 * whole inode (doc/format/fs.md, "Inodes").
 */
#include <bfs/journal_format.h>

#include "ns.h"
#include "tail_buf.h"

s64 bfs_fs_now(void)
{
	return (s64)bfs_realtime_ns();
}

size_t bfs_ns_max_val_bytes(struct bfs_fs *fs)
{
	return ((size_t)bfs_btree_max_key_u64s(fs->c) - BFS_BKEY_U64S) * 8;
}

size_t bfs_ns_trans_max_u64s(struct bfs_fs *fs)
{
	/*
	 * A commit is one journal entry: at most a bucket (and 4 MiB), less
	 * the entry header and the btree roots the core adds to every entry
	 * (libcore/core/core.c).  A commit that does not fit fails only after
	 * it changed the in-memory trees (a fatal error), so callers that can
	 * build large transactions check first.
	 */
	size_t max = BFS_MIN(le32_to_cpu(fs->sb->bucket_size), (u32)BFS_JSET_MAX_BYTES);
	size_t u64s = (max - sizeof(struct bfs_jset)) / 8;
	size_t reserve = BFS_BTREE_NR * (1 + BFS_BTREE_PTR_VAL_U64S) + 64;

	return u64s > reserve ? u64s - reserve : 0;
}

int bfs_ns_commit(struct bfs_trans *t)
{
	int ret = bfs_trans_commit(t, NULL);

	bfs_trans_end(t);
	return ret;
}

int bfs_ns_change_begin(struct bfs_fs *fs, u64 ino, struct bfs_ns_change *c)
{
	int ret;

	*c = (struct bfs_ns_change){ .fs = fs, .ino = ino };
	if (fs->read_only)
		return -EROFS;
	bfs_inode_lock(fs, ino);
	c->locked = true;
	ret = bfs_ns_inode_read(fs, ino, &c->inode);
	return ret ? ret : bfs_trans_begin(fs->c, &c->t);
}

int bfs_ns_change_end(struct bfs_ns_change *c, int ret)
{
	if (!ret)
		ret = bfs_ns_inode_write(c->t, &c->inode);
	if (!ret)
		ret = bfs_trans_commit(c->t, NULL);
	bfs_trans_end(c->t);
	c->t = NULL;
	if (c->locked)
		bfs_inode_unlock(c->fs, c->ino);
	c->locked = false;
	return ret == BFS_NS_UNCHANGED ? 0 : ret;
}

void bfs_ns_inode_init(struct bfs_ns_inode *inode, u32 mode, u32 uid, u32 gid, u64 rdev, s64 now)
{
	*inode = (struct bfs_ns_inode){
		.i = {
			/*
			 * Inode numbers are never reused (the counter only
			 * grows), so (ino, 1) is already unique: the
			 * generation is a constant.
			 */
			.generation = 1,
			.mode = mode,
			.uid = uid,
			.gid = gid,
			.nlink = S_ISDIR(mode) ? 2 : 1,
			.rdev = rdev,
			.atime = now,
			.mtime = now,
			.ctime = now,
			.btime = now,
		},
	};
}

void bfs_ns_inode_encode(const struct bfs_ns_inode *inode, struct bfs_inode_v *v)
{
	const struct bfs_inode *i = &inode->i;

	memset(v, 0, sizeof(*v));
	v->mode = cpu_to_le32(i->mode);
	v->uid = cpu_to_le32(i->uid);
	v->gid = cpu_to_le32(i->gid);
	v->nlink = cpu_to_le32(i->nlink);
	v->flags = cpu_to_le32(i->flags);
	v->size = cpu_to_le64(i->size);
	v->sectors = cpu_to_le64(i->sectors);
	v->rdev = cpu_to_le64(i->rdev);
	v->generation = cpu_to_le64(i->generation);
	v->atime = cpu_to_le64((u64)i->atime);
	v->mtime = cpu_to_le64((u64)i->mtime);
	v->ctime = cpu_to_le64((u64)i->ctime);
	v->btime = cpu_to_le64((u64)i->btime);
	v->parent = cpu_to_le64(inode->parent);
}

void bfs_ns_inode_decode(u64 ino, const struct bfs_inode_v *v, struct bfs_ns_inode *inode)
{
	struct bfs_inode *i = &inode->i;

	i->ino = ino;
	i->mode = le32_to_cpu(v->mode);
	i->uid = le32_to_cpu(v->uid);
	i->gid = le32_to_cpu(v->gid);
	i->nlink = le32_to_cpu(v->nlink);
	i->flags = le32_to_cpu(v->flags);
	i->size = le64_to_cpu(v->size);
	i->sectors = le64_to_cpu(v->sectors);
	i->rdev = le64_to_cpu(v->rdev);
	i->generation = le64_to_cpu(v->generation);
	i->atime = (s64)le64_to_cpu(v->atime);
	i->mtime = (s64)le64_to_cpu(v->mtime);
	i->ctime = (s64)le64_to_cpu(v->ctime);
	i->btime = (s64)le64_to_cpu(v->btime);
	inode->parent = le64_to_cpu(v->parent);
}

static int inode_lookup(struct bfs_fs *fs, u64 ino, struct bfs_ns_inode *inode)
{
	u64 buf[BFS_BKEY_U64S + 64];
	const struct bfs_bkey *k = (const void *)buf;
	int ret;

	if (!ino)
		return -ENOENT;
	ret = bfs_btree_lookup(fs->c, BFS_BTREE_INODES, BFS_POS(ino, 0, 0), buf, sizeof(buf));
	if (ret == -ENOBUFS) {
		bfs_err("inode %llu: inode key of %u u64s too large",
			(unsigned long long)ino, bfs_bkey_u64s(k));
		return -EUCLEAN;
	}
	if (ret)
		return ret;
	if (k->type != BFS_KEY_INODE || bfs_bkey_val_u64s(k) < BFS_INODE_V_U64S) {
		bfs_err("inode %llu: key of type %s where an inode should be",
			(unsigned long long)ino, bfs_bkey_type_name(k->type));
		return -EUCLEAN;
	}
	bfs_ns_inode_decode(ino, bfs_bkey_val(k), inode);
	return 0;
}

/*
 * As stat and lookup see it: with the size and mtime of writes still
 * buffered (tail_buf.h), looked at before the btree so that a write-back
 * in between is seen in the btree.  Holders of the inode lock find nothing
 * buffered: taking it wrote the buffer back.
 */
int bfs_ns_inode_read(struct bfs_fs *fs, u64 ino, struct bfs_ns_inode *inode)
{
	struct bfs_tail_peek tp;
	int ret;

	bfs_tail_peek(fs, ino, &tp);
	ret = inode_lookup(fs, ino, inode);
	if (!ret)
		bfs_tail_apply(&tp, &inode->i);
	return ret;
}

int bfs_ns_inode_write(struct bfs_trans *t, const struct bfs_ns_inode *inode)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S];
	struct bfs_bkey *k = (void *)buf;

	bfs_bkey_init(k, BFS_KEY_INODE, BFS_POS(inode->i.ino, 0, 0), BFS_INODE_V_U64S);
	bfs_ns_inode_encode(inode, bfs_bkey_val(k));
	return bfs_trans_update(t, BFS_BTREE_INODES, k);
}

int bfs_inode_read(struct bfs_fs *fs, u64 ino, struct bfs_inode *inode)
{
	struct bfs_ns_inode n;
	/* the data half: the inode as committed, without what is buffered */
	int ret = inode_lookup(fs, ino, &n);

	if (!ret)
		*inode = n.i;
	return ret;
}

int bfs_inode_write(struct bfs_trans *t, const struct bfs_inode *inode)
{
	struct bfs_ns_inode n = { .i = *inode };

	/*
	 * A directory's key also holds its parent, which struct bfs_inode does
	 * not carry: directories are written by the namespace half only.
	 */
	if (S_ISDIR(inode->mode))
		return -EINVAL;
	return bfs_ns_inode_write(t, &n);
}

void bfs_ns_inode_to_stat(struct bfs_fs *fs, const struct bfs_inode *i, struct bfs_stat *st)
{
	*st = (struct bfs_stat){
		.ino = i->ino,
		.generation = i->generation,
		.mode = i->mode,
		.uid = i->uid,
		.gid = i->gid,
		.nlink = i->nlink,
		.size = i->size,
		.blocks = i->sectors,
		.rdev = i->rdev,
		.blksize = le32_to_cpu(fs->sb->block_size),
		.flags = i->flags,
	};
#define TS(_ns) ((struct timespec){ .tv_sec = (time_t)((_ns) / 1000000000), \
				    .tv_nsec = (long)((_ns) % 1000000000) })
	st->atime = TS(i->atime);
	st->mtime = TS(i->mtime);
	st->ctime = TS(i->ctime);
	st->btime = TS(i->btime);
#undef TS
	/* timestamps before 1970: keep tv_nsec in [0, 1e9) */
	if (st->atime.tv_nsec < 0) { st->atime.tv_sec--; st->atime.tv_nsec += 1000000000; }
	if (st->mtime.tv_nsec < 0) { st->mtime.tv_sec--; st->mtime.tv_nsec += 1000000000; }
	if (st->ctime.tv_nsec < 0) { st->ctime.tv_sec--; st->ctime.tv_nsec += 1000000000; }
	if (st->btime.tv_nsec < 0) { st->btime.tv_sec--; st->btime.tv_nsec += 1000000000; }
}

/* ---- inode numbers ---- */

int bfs_ns_counter_write(struct bfs_trans *t, u64 next_ino)
{
	u64 buf[BFS_BKEY_U64S + sizeof(struct bfs_inode_counter_v) / 8];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_inode_counter_v *v = bfs_bkey_val(k);

	bfs_bkey_init(k, BFS_KEY_INODE_COUNTER, BFS_INODE_COUNTER_POS, sizeof(*v) / 8);
	memset(v, 0, sizeof(*v));
	v->next_ino = cpu_to_le64(next_ino);
	return bfs_trans_update(t, BFS_BTREE_INODES, k);
}

int bfs_ns_counter_read(struct bfs_fs *fs, u64 *next_ino)
{
	u64 buf[BFS_BKEY_U64S + 16];
	const struct bfs_bkey *k = (const void *)buf;
	const struct bfs_inode_counter_v *v = bfs_bkey_val(k);
	int ret;

	ret = bfs_btree_lookup(fs->c, BFS_BTREE_INODES, BFS_INODE_COUNTER_POS, buf, sizeof(buf));
	if (ret == -ENOENT || ret == -ENOBUFS || (!ret && k->type != BFS_KEY_INODE_COUNTER)) {
		bfs_err("inodes btree: no inode-number counter at 0:0:0 (not made by bfs format?)");
		return -EUCLEAN;
	}
	if (ret)
		return ret;
	*next_ino = le64_to_cpu(v->next_ino);
	return 0;
}

/* ---- deleting an inode ---- */

int bfs_ns_delete_keys(struct bfs_fs *fs, struct bfs_trans *t, enum bfs_btree_id id, u64 ino,
		       u64 start)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fs->c, id, BFS_POS(ino, start, 0), 0);
	for_each_btree_key(&it, k, ret) {
		if (le64_to_cpu(k->inode) != ino)
			break;
		ret = bfs_trans_delete(t, id, bfs_bkey_pos(k));
		if (ret)
			break;
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

int bfs_ns_inode_delete(struct bfs_fs *fs, struct bfs_trans *t, const struct bfs_ns_inode *inode)
{
	struct bfs_inode i = inode->i;
	u64 ino = i.ino;
	int ret = 0;

	if (S_ISREG(i.mode))
		ret = bfs_fs_data_delete_inode(fs, t, &i);
	if (!ret && S_ISDIR(i.mode))
		ret = bfs_dir_delete_keys(fs, t, ino);
	if (!ret)
		ret = bfs_xattr_delete_all(fs, t, ino);
	/* the inode key and its symlink chunks: every key (ino, *) */
	if (!ret)
		ret = bfs_ns_delete_keys(fs, t, BFS_BTREE_INODES, ino, 0);
	if (!ret) {
		u64 buf[BFS_BKEY_U64S + 8];

		/* the orphan entry, if it is one (no whiteout for a key never written) */
		ret = bfs_btree_lookup(fs->c, BFS_BTREE_INODES, BFS_POS(0, ino, 0), buf, sizeof(buf));
		if (ret == -ENOENT)
			ret = 0;
		else if (!ret || ret == -ENOBUFS)
			ret = bfs_trans_delete(t, BFS_BTREE_INODES, BFS_POS(0, ino, 0));
	}
	return ret;
}
