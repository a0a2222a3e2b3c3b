/* SPDX-License-Identifier: MIT */
/*
 * Range locks: writers inside a file's size, off its inode lock
 * (range_lock.c, doc/commit.md "Range writers").
 *
 * A write that changes no size takes the inode's stripe lock only long
 * enough to register the block-aligned byte range it writes; it then
 * writes and commits with the stripe lock down, excluding only writers of
 * overlapping ranges of the same file.  Everyone else who takes the inode
 * lock (bfs_inode_lock*(): truncate, extending writes, setattr, reads,
 * copy-GC, ...) waits, holding it, until the inode has no range holder, so
 * they exclude range writers as an exclusive lock would, and no range
 * writer can start while they hold it.
 *
 * While an inode has range holders, the inode as committed lives in a
 * record here: each range commit adds its sectors delta and times to it at
 * apply time, under the inode key's leaf lock (bfs_trans_set_fixup()), so
 * two range writers never lose each other's delta and the journal holds
 * the values in the order they were computed.
 */
#ifndef BFS_FS_RANGE_LOCK_H
#define BFS_FS_RANGE_LOCK_H

#include "fs_internal.h"

struct bfs_range;

int bfs_range_locks_init(struct bfs_fs *fs);
void bfs_range_locks_exit(struct bfs_fs *fs);

/* under the stripe lock of @ino: wait until @ino has no range holder */
void bfs_range_drain(struct bfs_fs *fs, u64 ino);
/* holding every stripe lock: wait until no inode has one */
void bfs_range_drain_all(struct bfs_fs *fs);
/* ... does it have one now?  (a trylock's answer: then it is busy) */
bool bfs_range_busy(struct bfs_fs *fs, u64 ino);

/*
 * Under the stripe lock of @inode (read under it): register the range
 * [start, end) of bytes, waiting for overlapping holders.  NULL: the
 * table is full (write the ordinary way).  The stripe lock may be
 * dropped once this returns.
 */
struct bfs_range *bfs_range_get(struct bfs_fs *fs, const struct bfs_inode *inode, u64 start,
				u64 end);
void bfs_range_put(struct bfs_fs *fs, struct bfs_range *r);

/*
 * One range commit's inode update: the caller queues bfs_inode_write() of
 * the snapshot (a placeholder value), then commits with
 * bfs_range_inode_fixup(@rc) called for the inode key, then calls
 * bfs_range_commit_end() with the commit's result.
 */
struct bfs_range_commit {
	struct bfs_range *r;
	s64	sectors;	/* delta */
	s64	now;
	bool	fixed;
};
void bfs_range_inode_snapshot(struct bfs_fs *fs, struct bfs_range *r, struct bfs_inode *out);
void bfs_range_inode_fixup(void *ctx, enum bfs_btree_id id, struct bfs_bkey *k);
void bfs_range_commit_end(struct bfs_range_commit *rc, int ret);

/* counters for benchmarks (bfs bench): range writes, waits for an overlap, drains that waited */
struct bfs_range_stats {
	u64	ranged, overlap_waits, drain_waits, full;
};
void bfs_range_stats(struct bfs_fs *fs, struct bfs_range_stats *s);

#endif /* BFS_FS_RANGE_LOCK_H */
