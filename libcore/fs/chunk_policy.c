// SPDX-License-Identifier: MIT
/*
 * The chunk-size policy of the write path (chunk_policy.h).
 */
#include "chunk_policy.h"

/* a write transaction covers about this much data, whatever the chunk size */
#define BATCH_BYTES		(2 * MiB)
/*
 * At least BFS_CHUNK_BATCH_MIN chunks per transaction (what 64 KiB chunks
 * always had), at most BFS_CHUNK_BATCH_MAX, and beyond the minimum at most
 * one per BATCH_BUCKET_SHARE bytes of a bucket: each chunk puts an extent
 * key (about 90 bytes) and an alloc key in the journal, and a commit must
 * fit in one journal entry, which is at most a bucket.
 */
#define BATCH_BUCKET_SHARE	512

void bfs_chunk_policy_init(struct bfs_chunk_policy *p, u32 want, u32 block_size, u32 chunk_max,
			   u32 bucket_size)
{
	u32 t = want ? want : chunk_max;
	u32 batch;

	t = BFS_MIN(t, chunk_max);
	t = BFS_MAX(BFS_ROUND_DOWN(t, block_size), block_size);
	p->block_size = block_size;
	p->target = t;
	batch = BFS_MIN(BATCH_BYTES / t, BFS_CHUNK_BATCH_MAX);
	batch = BFS_MIN(batch, BFS_MAX(bucket_size / BATCH_BUCKET_SHARE, BFS_CHUNK_BATCH_MIN));
	p->batch = BFS_MAX(batch, BFS_CHUNK_BATCH_MIN);
}

u64 bfs_chunk_end(const struct bfs_chunk_policy *p, u64 cs, u64 end)
{
	u64 next = (cs / p->target + 1) * p->target;

	return BFS_MIN(next, BFS_ROUND_UP(end, p->block_size));
}
