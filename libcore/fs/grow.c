// SPDX-License-Identifier: MIT
/*
 * Growing an open filesystem (bfs resize on a mounted one; see
 * include/bfs/online.h).  The order is the offline grow's, with the
 * allocators last:
 *   1. the new superblock, from the in-memory one (bfs_resize_layout()),
 *      goes to every copy with bfs_resize_commit(): the backups (the new
 *      end copy lies beyond the old end, where nothing of the old
 *      filesystem is), flush, the primary, flush; then the old end copy,
 *      now inside the new bucket space, is cleared;
 *   2. only then do the node and data allocators get the new buckets.
 * A crash before the primary is durable leaves the old filesystem (nothing
 * was written into the new space); after it, the new one, whose new buckets
 * are free (no alloc key names them).
 */
#include <bfs/alloc.h>
#include <bfs/log.h>
#include <bfs/online.h>
#include <bfs/resize.h>
#include <bfs/super.h>

#include <string.h>

#include "data.h"
#include "fs_internal.h"

struct grow_ctx {
	u64	new_size;
	char	*err;
};

static int grow_sb(void *ctx, struct bfs_dev *dev, const struct bfs_sb *cur, struct bfs_sb *next)
{
	struct grow_ctx *g = ctx;
	int ret;

	if (g->new_size == le64_to_cpu(cur->dev_size))
		return -EALREADY;
	if (g->new_size < le64_to_cpu(cur->dev_size))
		return bfs_err_line(g->err, -EOPNOTSUPP, "a mounted filesystem cannot shrink "
				    "(unmount it and run 'bfs resize' on the device)");
	ret = bfs_resize_layout(cur, g->new_size, next, g->err);
	if (ret)
		return ret;
	if (le64_to_cpu(next->nbuckets) < le64_to_cpu(cur->nbuckets))
		return bfs_err_line(g->err, -EINVAL, "the new size holds fewer buckets");
	return bfs_resize_commit(dev, cur, next);
}

/* the bucket table and both allocators take buckets up to @nbuckets */
static int data_grow(struct bfs_fs_data *d, u64 nbuckets)
{
	struct bfs_bucket *b = bfs_data_table_alloc(nbuckets), *old;
	u64 old_nbuckets = d->nbuckets;
	int ret;

	if (!b)
		return -ENOMEM;
	bfs_mutex_lock(&d->lock);
	memcpy(b, d->b, d->nbuckets * sizeof(*b));
	ret = bfs_alloc_grow(d->a, nbuckets);
	if (ret) {
		bfs_mutex_unlock(&d->lock);
		bfs_data_table_free(b, nbuckets);
		return ret;
	}
	old = d->b;
	d->b = b;
	d->nbuckets = nbuckets;
	d->find_cursor = nbuckets;	/* new data goes to the new space first */
	d->reserve_slots = bfs_alloc_nr_total(d->a) / 64;
	bfs_mutex_unlock(&d->lock);
	bfs_data_table_free(old, old_nbuckets);	/* every user holds an inode lock, or gc_lock, or d->lock */
	return 0;
}

int bfs_fs_grow(struct bfs_fs *fs, u64 new_size, u64 *old_size, char *err)
{
	struct bfs_fs_data *d = fs->data;
	struct grow_ctx g = { .new_size = new_size, .err = err };
	int ret;

	err[0] = '\0';
	*old_size = le64_to_cpu(fs->sb->dev_size);
	if (fs->read_only)
		return bfs_err_line(err, -EROFS, "the filesystem is open read-only");
	ret = bfs_dev_refresh_size(fs->dev);
	if (!ret && new_size > bfs_dev_size(fs->dev))
		ret = bfs_dev_extend_file(fs->dev, new_size);
	if (ret == -ENOTSUP)
		ret = 0;	/* a block device: checked below */
	if (ret)
		return bfs_err_line(err, ret, "cannot get the device to %llu bytes: %s",
				    (unsigned long long)new_size, strerror(-ret));
	if (!new_size)
		g.new_size = bfs_dev_size(fs->dev);
	if (g.new_size > bfs_dev_size(fs->dev))
		return bfs_err_line(err, -ENOSPC, "the device holds only %llu bytes (grow the "
				    "partition or volume first)",
				    (unsigned long long)bfs_dev_size(fs->dev));
	bfs_mutex_lock(&d->gc_lock);
	bfs_fs_quiesce(fs);
	ret = bfs_core_sb_update(fs->c, grow_sb, &g);
	if (!ret)
		ret = data_grow(d, le64_to_cpu(fs->sb->nbuckets));
	bfs_fs_unquiesce(fs);
	bfs_mutex_unlock(&d->gc_lock);
	if (ret == -ENOMEM)
		/* the superblock is grown; the space comes with the next mount */
		bfs_err_line(err, ret, "out of memory for the bucket table");
	else if (ret && ret != -EALREADY && !err[0])
		bfs_err_line(err, ret, "writing the superblock failed: %s", strerror(-ret));
	return ret;
}
