/* SPDX-License-Identifier: MIT */
/*
 * Resizing a filesystem offline (libcore/fs/resize.c, used by bfs resize).
 *
 * A resize changes only the superblock: dev_size, nbuckets and the copy
 * positions (the end copy follows the end of the device).  Growing adds
 * free buckets: the alloc btree has keys only for buckets that held data,
 * and btree node space is rebuilt at open.  Shrinking needs the cut range
 * [new nbuckets, old nbuckets) empty; bfs_resize_usage() says what is there.
 *
 * bfs_resize_evacuate() empties it: the allocators are fenced at the new
 * end, the file data there is moved below it (the copy-GC path: each extent
 * is written again and its key replaced in one transaction), then every
 * btree node there is copied below it (bfs_btree_evacuate(): copy-on-write
 * moves made durable by a checkpoint).  The journal ring lies at the start
 * of the bucket area and never moves: bfs_resize_layout() refuses a size
 * that would cut it or leave too few buckets after it.
 *
 * Crash safety: bfs_resize_commit() is one bfs_sb_write() (backups, flush,
 * primary, flush); the new end copy lies in space neither geometry uses and
 * the old one is cleared only after the new primary is durable, so a crash
 * leaves the old or the new filesystem, never a mix.
 */
#ifndef BFS_RESIZE_H
#define BFS_RESIZE_H

#include "fs.h"
#include "super.h"

/*
 * The superblock @sb would have on a device of @new_size bytes: @out (a
 * BFS_SB_MAX_BYTES buffer) is a copy of @sb with dev_size, nbuckets,
 * nr_copies and copy_offset[] changed, checksummed and validated.  -EINVAL
 * and @err if the filesystem cannot have that size (below the minimum, the
 * journal or the head reserve cut, too few buckets left).
 */
int bfs_resize_layout(const struct bfs_sb *sb, u64 new_size, struct bfs_sb *out, char *err);

/* what an open filesystem keeps at or above bucket @nbuckets */
struct bfs_resize_usage {
	u64	nodes;		/* btree nodes */
	u64	node_bytes;
	u64	data_buckets;	/* buckets holding file data */
	u64	data_bytes;	/* live file data in them */
	u64	free_alloc_keys; /* alloc keys of buckets without data (dropped on shrink) */
};
int bfs_resize_usage(struct bfs_fs *fs, u64 nbuckets, struct bfs_resize_usage *u);

/* what a shrink moves out of the cut range (bfs_resize_plan, bfs_resize_evacuate) */
struct bfs_resize_move {
	/*
	 * in: told the extents (stage 0) and then the btree nodes (stage 1)
	 * moved of the total (may be NULL)
	 */
	void	(*progress)(void *ctx, unsigned stage, u64 done, u64 total);
	void	*ctx;
	/* out */
	u64	need;		/* bytes to move: live file data and btree nodes */
	u64	data_need;	/* of which file data */
	u64	avail;		/* bytes below the new end they can use */
	u64	data_bytes;	/* file data moved */
	u64	nodes;		/* btree nodes moved */
	u64	left;		/* bytes still beyond the new end (0 unless an extent was unreadable) */
};

/*
 * Whether what lies at or above bucket @nbuckets fits below it: fills
 * need, data_need and avail; -ENOSPC if it does not.  Also on a read-only
 * open.  Fences the allocators there for the rest of the open, so that
 * nothing new lands beyond the new end.
 */
int bfs_resize_plan(struct bfs_fs *fs, u64 nbuckets, struct bfs_resize_move *m);

/*
 * bfs_resize_plan(), then move the file data and then the btree nodes at or
 * above bucket @nbuckets below it (fs open read-write, nothing else using
 * it).  -ENOSPC, with nothing moved, if they do not fit.  Durable on return.
 */
int bfs_resize_evacuate(struct bfs_fs *fs, u64 nbuckets, struct bfs_resize_move *m);

/*
 * Delete the alloc keys of data-free buckets at or above @nbuckets: after
 * the shrink they would lie outside the device.  Safe in the old geometry
 * too: a bucket without an alloc key is one that never held data (gen 0),
 * and no extent points into a bucket without live data.
 */
int bfs_resize_drop_alloc_keys(struct bfs_fs *fs, u64 nbuckets);

/* write @new_sb (from bfs_resize_layout) to every copy, then clear old copies no longer used */
int bfs_resize_commit(struct bfs_dev *dev, const struct bfs_sb *old_sb, struct bfs_sb *new_sb);

#endif /* BFS_RESIZE_H */
