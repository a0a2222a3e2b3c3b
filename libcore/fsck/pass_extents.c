// SPDX-License-Identifier: MIT
/*
 * Extents against their inode and the device layout, and file sizes.
 * Key validation (as on every read) already checked each extent by itself:
 * known flags, compression and checksum types, chunk fields that agree.
 * What needs the rest of the filesystem is checked here:
 *   - the extent belongs to a regular file (else it is dropped);
 *   - its chunk lies in one bucket of the data area: block aligned, inside
 *     [first_bucket, nbuckets) and the device, not in the journal, not over
 *     a superblock copy (else the extent is dropped: the range becomes a
 *     hole, reported by path and byte range);
 *   - written data lies within the file's size rounded up to a block
 *     (unwritten extents may lie beyond it: fallocate with KEEP_SIZE);
 *   - a file's size is at most the largest file size (a flipped high bit
 *     would make a file that reads zeros for days): it is set to its low
 *     bits if they end inside the file's last data block (the likely
 *     original), else to the end of the file's data (fsck_check_size(), run
 *     by pass_fs.c's last sweep, which sees every inode and where its data
 *     ends after the drops).
 * Which bucket owns what, and generations, are pass_alloc.c's.
 */
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/format.h>
#include <bfs/fs_format.h>
#include <bfs/fs_repair.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_check.h"

#define MAX_FILE_SECTORS	(BFS_DATA_MAX_BYTES >> BFS_SECTOR_SHIFT)

void fsck_layout_init(struct fs_check *fc)
{
	const struct bfs_sb *sb = bfs_core_sb(fc->c);
	struct fsck_layout *l = &fc->lay;
	unsigned i;

	l->block = le32_to_cpu(sb->block_size);
	l->bucket = le32_to_cpu(sb->bucket_size);
	l->first = le64_to_cpu(sb->first_bucket);
	l->nbuckets = le64_to_cpu(sb->nbuckets);
	l->dev_size = bfs_dev_size(bfs_core_dev(fc->c));
	l->journal = le64_to_cpu(sb->journal_bucket);
	l->journal_end = l->journal + le32_to_cpu(sb->journal_nbuckets);
	l->nr_copies = 0;
	for (i = 0; i < sb->nr_copies && i < BFS_SB_MAX_COPIES; i++)
		l->copy[l->nr_copies++] = le64_to_cpu(sb->copy_offset[i]);
}

bool fsck_extent_ptr_bad(struct fs_check *fc, const struct bfs_extent_v *v, char *why, size_t len)
{
	const struct fsck_layout *l = &fc->lay;
	u64 off = le64_to_cpu(v->offset);
	u64 end = off + BFS_ROUND_UP((u64)le32_to_cpu(v->stored_bytes), l->block);
	u64 b = off / l->bucket;
	unsigned i;

	if (off % l->block) {
		snprintf(why, len, "device offset %llu is not block aligned", (unsigned long long)off);
		return true;
	}
	if (b < l->first || b >= l->nbuckets) {
		snprintf(why, len, "device offset %llu is outside the buckets", (unsigned long long)off);
		return true;
	}
	if (end > (b + 1) * l->bucket || end > l->dev_size) {
		snprintf(why, len, "chunk at device offset %llu runs past the end of bucket %llu",
			 (unsigned long long)off, (unsigned long long)b);
		return true;
	}
	if (b >= l->journal && b < l->journal_end) {
		snprintf(why, len, "device offset %llu is in journal bucket %llu",
			 (unsigned long long)off, (unsigned long long)b);
		return true;
	}
	for (i = 0; i < l->nr_copies; i++) {
		u64 c = l->copy[i];

		if (off < c + BFS_SB_REGION && end > c) {
			snprintf(why, len, "chunk at device offset %llu is over superblock copy %u",
				 (unsigned long long)off, i);
			return true;
		}
	}
	return false;
}

/* sectors of a file of @size bytes rounded up to a block: written data ends there */
static u64 eof_sectors(struct fs_check *fc, u64 size)
{
	u64 bs = le32_to_cpu(bfs_core_sb(fc->c)->block_size);

	if (size > BFS_DATA_MAX_BYTES)
		return MAX_FILE_SECTORS;	/* the size is cut to the data's end below */
	return BFS_ROUND_UP(size, bs) >> BFS_SECTOR_SHIFT;
}

/* the outcome of a drop: true if it was done */
static bool dropped(struct fs_check *fc, enum bfs_problem_code code, int ret)
{
	fsck_repair(fc, code, ret);
	return !ret;
}

/*
 * What the extent check needs of an extent's inode: from pass 2's tables
 * (type, size in sectors) for most files, from the inode for a big one.
 */
struct ext_inode {
	bool	found;		/* false: there is no such inode */
	u32	mode;
	u64	eof;		/* sectors of the size rounded up to a block */
};

/* the size of @ino in bytes for a message (the tables hold sectors) */
static u64 stored_size(struct fs_check *fc, u64 ino)
{
	struct bfs_inode_v v;

	return fsck_inode_read(fc, ino, &v) ? 0 : le64_to_cpu(v.size);
}

/* extent @k against its inode @i; true if it was dropped whole */
static bool check_extent(struct fs_check *fc, const struct bfs_bkey *k, const struct ext_inode *i)
{
	const struct bfs_extent_v *v = bfs_bkey_val(k);
	u64 ino = le64_to_cpu(k->inode), start = bfs_bkey_start(k), end = le64_to_cpu(k->offset);
	bool unwritten = v->flags & BFS_EXTENT_F_UNWRITTEN;
	struct bfs_fsck_loc loc;
	char why[160];
	u64 eof;

	if (!i->found || !S_ISREG(i->mode)) {
		loc = fsck_file_loc(fc, ino, start << BFS_SECTOR_SHIFT, k);
		if (bfs_fix_problem_at(fc->f, PR_EXTENT_NO_INODE, &loc,
				       "inode %llu (%s) bytes %llu..%llu: %s", (unsigned long long)ino,
				       loc.path, (unsigned long long)start << BFS_SECTOR_SHIFT,
				       (unsigned long long)end << BFS_SECTOR_SHIFT,
				       i->found ? "not a regular file" : "no such inode"))
			return dropped(fc, PR_EXTENT_NO_INODE, fsck_drop_extent(fc, k));
		return false;
	}
	if (!unwritten && fsck_extent_ptr_bad(fc, v, why, sizeof(why))) {
		loc = fsck_file_loc(fc, ino, start << BFS_SECTOR_SHIFT, k);
		if (bfs_fix_problem_at(fc->f, PR_EXTENT_PTR_BAD, &loc,
				       "inode %llu (%s) bytes %llu..%llu: %s", (unsigned long long)ino,
				       loc.path, (unsigned long long)start << BFS_SECTOR_SHIFT,
				       (unsigned long long)end << BFS_SECTOR_SHIFT, why))
			return dropped(fc, PR_EXTENT_PTR_BAD, fsck_drop_extent(fc, k));
		return false;
	}
	eof = i->eof;
	if (!unwritten && end > eof) {
		u64 from = BFS_MAX(start, eof);

		loc = fsck_file_loc(fc, ino, from << BFS_SECTOR_SHIFT, k);
		if (bfs_fix_problem_at(fc->f, PR_EXTENT_PAST_EOF, &loc,
				       "inode %llu (%s) bytes %llu..%llu, the file's size is %llu",
				       (unsigned long long)ino, loc.path,
				       (unsigned long long)from << BFS_SECTOR_SHIFT,
				       (unsigned long long)end << BFS_SECTOR_SHIFT,
				       (unsigned long long)stored_size(fc, ino)))
			return dropped(fc, PR_EXTENT_PAST_EOF, fsck_drop_range(fc, k, from, end)) &&
			       from == start;
	}
	return false;
}

/*
 * The inode of @ino for the extent check: a file whose size the tables
 * hold needs no read; a big one is read with @cur (in inode order, one
 * lookup per inode): a tree of small files reads no inodes leaf here
 */
static int ext_inode(struct fs_check *fc, struct fsck_inode_cur *cur, u64 ino,
		     struct ext_inode *i)
{
	size_t idx;
	int ret;

	i->found = fsck_find(fc, ino, &idx);
	if (!i->found)
		return 0;
	i->mode = fsck_type(fc, idx);
	if (!S_ISREG(i->mode))
		return 0;
	if (fc->eof[idx] < FSCK_EOF_BIG) {
		i->eof = eof_sectors(fc, (u64)fc->eof[idx] << BFS_SECTOR_SHIFT);
		return 0;
	}
	ret = fsck_icur_seek(cur, ino);
	if (ret)
		return ret;
	i->found = cur->valid;
	i->mode = le32_to_cpu(cur->v.mode);
	i->eof = eof_sectors(fc, le64_to_cpu(cur->v.size));
	return 0;
}

void fsck_set_size(struct bfs_ns_inode *i, u64 size)
{
	i->i.size = size;
}

void fsck_check_size(struct fs_check *fc, u64 ino, const struct bfs_inode_v *v, u64 data_end)
{
	u64 bs = le32_to_cpu(bfs_core_sb(fc->c)->block_size), isize = le64_to_cpu(v->size);
	u64 end = BFS_MIN(data_end, MAX_FILE_SECTORS) << BFS_SECTOR_SHIFT;
	u64 low = isize & (BFS_DATA_MAX_BYTES - 1), size = end;
	struct bfs_fsck_loc loc;

	if (!S_ISREG(le32_to_cpu(v->mode)) || isize <= BFS_DATA_MAX_BYTES)
		return;
	/* flipped high bits: the low ones are the size if they end in the last data block */
	if (low <= end && low + bs > end)
		size = low;
	loc = fsck_file_loc(fc, ino, 0, NULL);
	if (bfs_fix_problem_at(fc->f, PR_INODE_SIZE_BAD, &loc,
			       "inode %llu (%s): size %llu, its data ends at byte %llu; new size %llu",
			       (unsigned long long)ino, loc.path, (unsigned long long)isize,
			       (unsigned long long)end, (unsigned long long)size))
		fsck_repair(fc, PR_INODE_SIZE_BAD, fsck_inode_update(fc, ino, fsck_set_size, size));
}

/* every extent against its inode (looked up once per big file with data) */
int fsck_check_extents(struct fs_check *fc, void (*each)(void *ctx, const struct bfs_bkey *k),
		       void *ctx)
{
	struct fsck_inode_cur cur;
	struct ext_inode i = { 0 };
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 last = 0;
	bool have = false;	/* @i holds inode @last */
	int ret;

	/* repairs commit while the iterators are between keys: allowed (btree.h) */
	fsck_icur_init(fc, &cur);
	bfs_btree_iter_init(&it, fc->c, BFS_BTREE_EXTENTS, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		u64 ino = le64_to_cpu(k->inode), copy[BFS_BKEY_U64S + BFS_EXTENT_VAL_U64S];
		const struct bfs_bkey *ek = k;

		fsck_sweep_progress(fc, ino);
		if (k->type != BFS_KEY_EXTENT)
			continue;
		if (!have || ino != last) {
			ret = ext_inode(fc, &cur, ino, &i);
			if (ret)
				break;
			last = ino;
			have = true;
		}
		/* a drop changes the leaf under @k; what it trimmed still points where it did */
		if (each && bfs_bkey_bytes(k) <= sizeof(copy))
			ek = memcpy(copy, k, bfs_bkey_bytes(k));
		if (!check_extent(fc, k, &i) && each)
			each(ctx, ek);
	}
	bfs_btree_iter_exit(&it);
	fsck_icur_exit(&cur);
	fsck_free_eof(fc);
	fsck_sweep_done(fc);
	return ret;
}
