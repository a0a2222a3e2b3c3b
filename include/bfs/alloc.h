/* SPDX-License-Identifier: MIT */
/*
 * Metadata space allocator: hands out node-sized slots of the bucket area
 * [first_bucket, nbuckets) minus the journal.  Several nodes share a bucket
 * when bucket_size > btree_node_size.
 *
 * The used set is not persisted: at open it is rebuilt by walking the btrees
 * (every node reachable from a root is used).  A slot freed by a node rewrite
 * goes to a pending list tagged with the checkpoint epoch and only becomes
 * allocatable when bfs_alloc_release() says no root recorded on disk (journal
 * or superblock) can reach it any more.
 */
#ifndef BFS_ALLOC_H
#define BFS_ALLOC_H

#include <bfs/os.h>
#include <bfs/types.h>

struct bfs_alloc_geom {
	u64	bucket_size;
	u64	first_bucket;
	u64	nbuckets;
	u64	journal_bucket;
	u64	journal_nbuckets;
	u32	node_size;
};

struct bfs_alloc;

int bfs_alloc_init(const struct bfs_alloc_geom *g, struct bfs_alloc **out);
void bfs_alloc_exit(struct bfs_alloc *a);
/*
 * Online grow: the area ends at bucket @nbuckets now (not below the old
 * end); the new slots are free.  Only once the superblock saying so is
 * durable.
 */
int bfs_alloc_grow(struct bfs_alloc *a, u64 nbuckets);

/* mark the node at @offset used (open-time walk); -EUCLEAN if not a valid slot or already used */
int bfs_alloc_mark_used(struct bfs_alloc *a, u64 offset);
/* is @offset the start of a slot in the metadata area? */
bool bfs_alloc_valid_offset(struct bfs_alloc *a, u64 offset);

/* a free slot, next-fit; -ENOSPC if none is free */
int bfs_alloc_node(struct bfs_alloc *a, u64 *offset);
/* give back a slot that was never reachable from disk: reusable at once */
void bfs_alloc_free_now(struct bfs_alloc *a, u64 offset);
/* give back a slot an on-disk tree may still reach: pending until released */
void bfs_alloc_free_later(struct bfs_alloc *a, u64 offset);
/* everything freed with free_later before this call becomes reusable */
void bfs_alloc_release_pending(struct bfs_alloc *a);
/*
 * Only the @nr oldest pending slots (pending is FIFO): a checkpoint written
 * in the background releases what was pending when it took its snapshot,
 * not slots freed since, which its roots may still reach.
 */
void bfs_alloc_release_first(struct bfs_alloc *a, u64 nr);

/*
 * Shrinking: no slot ending beyond byte @end is handed out from now on.  The
 * free ones are taken at once (nr_free counts only the space below), and a
 * slot there that is freed later stays taken.  For the life of the handle.
 */
void bfs_alloc_fence(struct bfs_alloc *a, u64 end);

u64 bfs_alloc_nr_free(struct bfs_alloc *a);
u64 bfs_alloc_nr_total(struct bfs_alloc *a);
u64 bfs_alloc_nr_pending(struct bfs_alloc *a);

/*
 * Whole buckets for file data: every slot of the bucket is marked used so
 * metadata never lands in it.  get: -EBUSY if any slot is in use (or pending),
 * -EINVAL if not a bucket of the area.  find: a wholly free bucket, searched
 * downwards from below *cursor (the caller's; start it at nbuckets) and
 * wrapping, so data fills from the top, away from metadata; only while at
 * least @reserve_slots slots stay free for metadata, else -ENOSPC.
 * nr_free_buckets: wholly free buckets (a scan).  in_use: is any slot of
 * the bucket used (or pending)?  false for a bucket outside the area.
 */
int bfs_alloc_bucket_get(struct bfs_alloc *a, u64 bucket);
bool bfs_alloc_bucket_in_use(struct bfs_alloc *a, u64 bucket);
void bfs_alloc_bucket_put(struct bfs_alloc *a, u64 bucket);
int bfs_alloc_bucket_find(struct bfs_alloc *a, u64 reserve_slots, u64 *cursor, u64 *bucket);
u64 bfs_alloc_nr_free_buckets(struct bfs_alloc *a);

#endif /* BFS_ALLOC_H */
