// SPDX-License-Identifier: MIT
/* Offline grow and shrink: see include/bfs/resize.h for the rules and why they are safe. */
#include <bfs/alloc.h>
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
	if (nbuckets < jend + BFS_MIN_FREE_BUCKETS) {
		/* the ring is at a fixed place near the start: the end copy follows the buckets */
		u64 least = (jend + BFS_MIN_FREE_BUCKETS) * bucket + BFS_SB_REGION;

		return resize_err(err, "%llu bytes leaves %llu buckets after the journal, the minimum "
				  "is %u (the journal ring does not move): the smallest size is "
				  "%llu MiB", (unsigned long long)new_size,
				  (unsigned long long)(nbuckets > jend ? nbuckets - jend : 0),
				  BFS_MIN_FREE_BUCKETS,
				  (unsigned long long)BFS_DIV_ROUND_UP(least, MiB));
	}
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
	int ret;

	memset(u, 0, sizeof(*u));
	ret = bfs_btree_nodes_beyond(c, nbuckets * le32_to_cpu(sb->bucket_size), &u->nodes);
	if (ret)
		return ret;
	u->node_bytes = u->nodes * le32_to_cpu(sb->btree_node_size);
	return for_alloc_keys(c, nbuckets, usage_alloc, u);
}

/*
 * Nothing new goes beyond the new end from here on, data or node: the
 * metadata allocator and the data buckets are both fenced there.
 */
static void fence(struct bfs_fs *fs, u64 nbuckets, u64 *live_bytes, u64 *whole_free)
{
	struct bfs_core *c = bfs_fs_core(fs);

	bfs_alloc_fence(bfs_core_alloc(c), nbuckets * le32_to_cpu(bfs_core_sb(c)->bucket_size));
	*live_bytes = bfs_data_fence(fs->data, nbuckets, whole_free) << BFS_SECTOR_SHIFT;
}

/*
 * Room below the new end for the file data (@whole_free: whole buckets, one
 * of them kept spare to move through, if there is @data) and @node_bytes of
 * nodes, which also fit in the free slots of partly used buckets: of those,
 * only what the nodes can use counts.
 */
static u64 room(struct bfs_fs *fs, u64 whole_free, u64 node_bytes, bool data)
{
	struct bfs_core *c = bfs_fs_core(fs);
	struct bfs_alloc *a = bfs_core_alloc(c);
	u64 bucket = le32_to_cpu(bfs_core_sb(c)->bucket_size);
	u64 slots = bfs_alloc_nr_free(a) * le32_to_cpu(bfs_core_sb(c)->btree_node_size);
	u64 whole = bfs_alloc_nr_free_buckets(a) * bucket;
	u64 partial = slots > whole ? slots - whole : 0;
	u64 slack = data ? bucket : 0;

	return (whole_free > slack ? whole_free - slack : 0) + BFS_MIN(partial, node_bytes);
}

int bfs_resize_plan(struct bfs_fs *fs, u64 nbuckets, struct bfs_resize_move *m)
{
	struct bfs_resize_usage u;
	u64 live, whole_free;
	int ret = bfs_resize_usage(fs, nbuckets, &u);

	m->need = m->data_need = m->avail = m->data_bytes = m->nodes = m->left = 0;
	if (ret)
		return ret;
	fence(fs, nbuckets, &live, &whole_free);
	m->data_need = live;
	m->need = live + u.node_bytes;
	m->avail = room(fs, whole_free, u.node_bytes, live);
	return m->need > m->avail ? -ENOSPC : 0;
}

static void data_progress(void *ctx, u64 done, u64 total)
{
	struct bfs_resize_move *m = ctx;

	if (m->progress)
		m->progress(m->ctx, 0, done, total);
}

static void node_progress(void *ctx, u64 done, u64 total)
{
	struct bfs_resize_move *m = ctx;

	if (m->progress)
		m->progress(m->ctx, 1, done, total);
}

int bfs_resize_evacuate(struct bfs_fs *fs, u64 nbuckets, struct bfs_resize_move *m)
{
	struct bfs_core *c = bfs_fs_core(fs);
	u64 limit = nbuckets * le32_to_cpu(bfs_core_sb(c)->bucket_size);
	u64 node_size = le32_to_cpu(bfs_core_sb(c)->btree_node_size);
	u64 live, need, sectors = 0, nodes_left = 0;
	int ret = bfs_resize_plan(fs, nbuckets, m);

	if (ret)
		return ret;
	live = m->data_need;
	if (live) {
		ret = bfs_data_evacuate(fs->data, nbuckets, data_progress, m, &need, &sectors);
		m->data_bytes = ret ? 0 : live - BFS_MIN(live, sectors << BFS_SECTOR_SHIFT);
	}
	/* after the data: its moves change leaves, in place wherever they are */
	if (!ret)
		ret = bfs_btree_evacuate(c, limit, node_progress, m, &m->nodes, &nodes_left);
	m->left = (sectors << BFS_SECTOR_SHIFT) + nodes_left * node_size;
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
	u64 live, whole_free;
	size_t i, j;
	int ret;

	fence(fs, nbuckets, &live, &whole_free);	/* a split here must not land beyond */
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
