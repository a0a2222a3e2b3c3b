// SPDX-License-Identifier: MIT
/* Offline grow and shrink: see include/bfs/resize.h for the rules and why they are safe. */
#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/os.h>
#include <bfs/resize.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bfs/log.h>

#include "data.h"
#include "fs_internal.h"

#define resize_err(err, ...) bfs_err_line((err), -EINVAL, __VA_ARGS__)

int bfs_resize_layout(const struct bfs_sb *sb, u64 new_size, struct bfs_sb *out, char *err)
{
	u64 offs[BFS_SB_MAX_COPIES], bucket = le32_to_cpu(sb->bucket_size);
	u64 first = le64_to_cpu(sb->first_bucket), nbuckets;
	u64 jend = le64_to_cpu(sb->journal_bucket) + le32_to_cpu(sb->journal_nbuckets);
	unsigned nr, i;
	char verr[BFS_ERR_LEN];

	if (new_size < BFS_MIN_DEV_SIZE)
		return resize_err(err, "%llu bytes is below the minimum size of %llu bytes",
				  (unsigned long long)new_size, (unsigned long long)BFS_MIN_DEV_SIZE);
	nr = bfs_sb_copy_offsets(new_size, offs);
	nbuckets = offs[nr - 1] / bucket;
	if (nbuckets < jend + BFS_MIN_FREE_BUCKETS)
		return resize_err(err, "%llu bytes leaves %llu buckets after the journal, the minimum "
				  "is %u", (unsigned long long)new_size,
				  (unsigned long long)(nbuckets > jend ? nbuckets - jend : 0),
				  BFS_MIN_FREE_BUCKETS);
	if (nbuckets <= first)
		return resize_err(err, "no buckets left");

	memcpy(out, sb, le32_to_cpu(sb->bytes));
	memset((u8 *)out + le32_to_cpu(sb->bytes), 0, BFS_SB_MAX_BYTES - le32_to_cpu(sb->bytes));
	out->dev_size = cpu_to_le64(new_size);
	out->nbuckets = cpu_to_le64(nbuckets);
	out->nr_copies = (u8)nr;
	for (i = 0; i < BFS_SB_MAX_COPIES; i++)
		out->copy_offset[i] = cpu_to_le64(i < nr ? offs[i] : 0);
	out->csum = cpu_to_le64(bfs_sb_csum(out));
	if (bfs_sb_validate(out, BFS_SB_MAX_BYTES, new_size, verr))
		return resize_err(err, "the resized superblock would be invalid: %s", verr);
	return 0;
}

struct usage_ctx {
	u64 start;			/* byte offset of the cut */
	struct bfs_resize_usage *u;
	u32 node_size;
};

static int usage_node(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct usage_ctx *uc = ctx;

	if (ni->offset + uc->node_size > uc->start) {
		uc->u->nodes++;
		uc->u->node_bytes += uc->node_size;
	}
	return 0;
}

/* calls @fn for every alloc key at or above bucket @nbuckets */
static int for_alloc_keys(struct bfs_core *c, u64 nbuckets,
			  int (*fn)(void *ctx, const struct bfs_bkey *k, const struct bfs_alloc_v *a),
			  void *ctx)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, c, BFS_BTREE_ALLOC, BFS_POS(nbuckets, 0, 0), BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		if (k->type != BFS_KEY_ALLOC || bfs_bkey_val_u64s(k) < BFS_ALLOC_VAL_U64S ||
		    le64_to_cpu(k->inode) < nbuckets)
			continue;
		ret = fn(ctx, k, bfs_bkey_val(k));
		if (ret)
			break;
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

static int usage_alloc(void *ctx, const struct bfs_bkey *k, const struct bfs_alloc_v *a)
{
	struct bfs_resize_usage *u = ctx;
	u64 live = le64_to_cpu(a->live_sectors);

	if (a->data_type != BFS_BUCKET_FREE || live) {
		u->data_buckets++;
		u->data_bytes += live << BFS_SECTOR_SHIFT;
	} else {
		u->free_alloc_keys++;
	}
	return 0;
}

int bfs_resize_usage(struct bfs_fs *fs, u64 nbuckets, struct bfs_resize_usage *u)
{
	struct bfs_core *c = bfs_fs_core(fs);
	const struct bfs_sb *sb = bfs_core_sb(c);
	struct usage_ctx uc = {
		.start = nbuckets * le32_to_cpu(sb->bucket_size),
		.u = u,
		.node_size = le32_to_cpu(sb->btree_node_size),
	};
	unsigned id;
	int ret;

	memset(u, 0, sizeof(*u));
	for (id = 0; id < BFS_BTREE_NR; id++) {
		ret = bfs_btree_walk(c, (enum bfs_btree_id)id, usage_node, NULL, &uc);
		if (ret)
			return ret;
	}
	return for_alloc_keys(c, nbuckets, usage_alloc, u);
}

int bfs_resize_evacuate(struct bfs_fs *fs, u64 nbuckets, u64 *need, u64 *avail, u64 *left)
{
	struct bfs_fs_data *d = fs->data;
	u64 free_bytes, sectors;
	int ret = bfs_data_evacuate(d, nbuckets, need, &sectors);

	bfs_data_fence(d, nbuckets, &free_bytes);	/* again: what the move left free */
	*avail = free_bytes;
	*left = sectors << BFS_SECTOR_SHIFT;
	return ret ?: bfs_fs_sync(fs);
}

struct drop_ctx {
	struct bfs_bpos *pos;
	size_t nr, cap;
};

static int collect_free(void *ctx, const struct bfs_bkey *k, const struct bfs_alloc_v *a)
{
	struct drop_ctx *d = ctx;

	if (a->data_type != BFS_BUCKET_FREE || le64_to_cpu(a->live_sectors))
		return -EBUSY;	/* data: the caller checked usage first */
	if (d->nr == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 64;
		struct bfs_bpos *p = bfs_realloc(d->pos, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		d->pos = p;
		d->cap = cap;
	}
	d->pos[d->nr++] = BFS_POS(le64_to_cpu(k->inode), le64_to_cpu(k->offset),
				  le32_to_cpu(k->snapshot));
	return 0;
}

/* keys deleted per transaction: keeps each journal entry small */
#define DROP_BATCH	64

int bfs_resize_drop_alloc_keys(struct bfs_fs *fs, u64 nbuckets)
{
	struct bfs_core *c = bfs_fs_core(fs);
	struct drop_ctx d = { 0 };
	size_t i, j;
	int ret;

	ret = for_alloc_keys(c, nbuckets, collect_free, &d);
	for (i = 0; !ret && i < d.nr; i += DROP_BATCH) {
		struct bfs_trans *t;

		ret = bfs_trans_begin(c, &t);
		if (ret)
			break;
		for (j = i; !ret && j < d.nr && j < i + DROP_BATCH; j++)
			ret = bfs_trans_delete(t, BFS_BTREE_ALLOC, d.pos[j]);
		if (!ret)
			ret = bfs_trans_commit(t, NULL);
		bfs_trans_end(t);
	}
	bfs_free(d.pos);
	return ret ?: bfs_fs_sync(fs);
}

int bfs_resize_commit(struct bfs_dev *dev, const struct bfs_sb *old_sb, struct bfs_sb *new_sb)
{
	void *zero;
	unsigned i, j;
	int ret = bfs_sb_write(dev, new_sb);

	if (ret)
		return ret;
	zero = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_REGION);
	if (!zero)
		return -ENOMEM;
	memset(zero, 0, BFS_SB_REGION);
	/* an old copy left in free space could later be taken for this filesystem */
	for (i = 0; i < old_sb->nr_copies && !ret; i++) {
		u64 off = le64_to_cpu(old_sb->copy_offset[i]);
		bool kept = false;

		for (j = 0; j < new_sb->nr_copies; j++)
			kept |= le64_to_cpu(new_sb->copy_offset[j]) == off;
		if (!kept && off + BFS_SB_REGION <= bfs_dev_size(dev))
			ret = bfs_dev_write(dev, off, zero, BFS_SB_REGION);
	}
	bfs_free(zero);
	return ret ?: bfs_dev_flush(dev);
}
