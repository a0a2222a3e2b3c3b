/* SPDX-License-Identifier: MIT */
/*
 * Where the write path cuts file data into chunks (the unit that is
 * checksummed, compressed and read back whole; doc/format/data.md
 * "Choosing the chunk size").
 *
 * A filesystem has a target chunk size (bfs format --data-chunk, bfs
 * set-option data_chunk=).  Chunk boundaries fall on multiples of the
 * target in the file, as ZFS records do, so
 *   - a write of at most one target, aligned, is exactly one chunk: a
 *     database rewriting its pages replaces whole chunks and leaves no
 *     partly dead ones behind;
 *   - a write smaller than the target gets a chunk of just its blocks: small
 *     random writes get small chunks whatever the target;
 *   - a large write gets chunks of the target: a later random read of one
 *     block reads and verifies at most the target, not 64 KiB.
 */
#ifndef BFS_FS_CHUNK_POLICY_H
#define BFS_FS_CHUNK_POLICY_H

#include <bfs/types.h>

/* chunks per write transaction: at most this many, at least the minimum */
#define BFS_CHUNK_BATCH_MAX	256
#define BFS_CHUNK_BATCH_MIN	32

struct bfs_chunk_policy {
	u32	block_size;
	u32	target;		/* bytes, block multiple, at most chunk_max */
	u32	batch;		/* chunks per write transaction (about 2 MiB) */
};

/*
 * The policy for chunks of @want bytes (the superblock's data_chunk) on a
 * filesystem of @block_size blocks whose chunks hold at most @chunk_max
 * bytes and whose buckets are @bucket_size bytes.
 */
void bfs_chunk_policy_init(struct bfs_chunk_policy *p, u32 want, u32 block_size, u32 chunk_max,
			   u32 bucket_size);
/*
 * End (bytes) of the chunk that starts at block-aligned @cs of a write that
 * ends at @end (> cs): the next multiple of the target, or @end rounded up
 * to a block if that comes first.
 */
u64 bfs_chunk_end(const struct bfs_chunk_policy *p, u64 cs, u64 end);

#endif /* BFS_FS_CHUNK_POLICY_H */
