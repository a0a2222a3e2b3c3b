// SPDX-License-Identifier: MIT
/*
 * The extent and alloc key types: validation, printing and cut_front (a
 * trimmed extent keeps pointing at its whole chunk; only chunk_offset moves,
 * so the chunk's checksum still covers what is read).
 */
#include <inttypes.h>
#include <stdio.h>

#include <bfs/extent_format.h>
#include <bfs/format.h>
#include <bfs/os.h>

#include "keys.h"

static int extent_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	const struct bfs_extent_v *v = ((const struct bfs_extent_v *)k->v);
	u32 size = bfs_bkey_size(k);

#define BAD(...) do { snprintf(err, err_len, __VA_ARGS__); return -EUCLEAN; } while (0)
	if (v->flags & ~BFS_EXTENT_F_KNOWN)
		BAD("extent: unknown flags 0x%x", v->flags);
	if (v->flags & BFS_EXTENT_F_UNWRITTEN)
		return 0;
	if (v->compression >= BFS_COMPRESSION_NR)
		BAD("extent: unknown compression type %u", v->compression);
	if (v->csum_type >= BFS_CSUM_NR)
		BAD("extent: unknown checksum type %u", v->csum_type);
	if (!le64_to_cpu(v->offset) || le64_to_cpu(v->offset) % BFS_SECTOR_SIZE)
		BAD("extent: bad device offset %" PRIu64, le64_to_cpu(v->offset));
	if ((u64)le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT > BFS_EXTENT_CHUNK_MAX)
		BAD("extent: chunk of %u sectors is too big", le32_to_cpu(v->chunk_sectors));
	if ((u64)le32_to_cpu(v->chunk_offset) + size > le32_to_cpu(v->chunk_sectors))
		BAD("extent: range %u+%u beyond its chunk of %u sectors",
		    le32_to_cpu(v->chunk_offset), size, le32_to_cpu(v->chunk_sectors));
	if (!le32_to_cpu(v->stored_bytes) || le32_to_cpu(v->stored_bytes) > BFS_EXTENT_CHUNK_MAX)
		BAD("extent: stored size %u out of range", le32_to_cpu(v->stored_bytes));
	if (v->compression == BFS_COMPRESSION_NONE &&
	    le32_to_cpu(v->stored_bytes) != le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT)
		BAD("extent: uncompressed chunk stores %u bytes for %u sectors",
		    le32_to_cpu(v->stored_bytes), le32_to_cpu(v->chunk_sectors));
#undef BAD
	return 0;
}

static void extent_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_extent_v *v = ((const struct bfs_extent_v *)k->v);

	if (v->flags & BFS_EXTENT_F_UNWRITTEN) {
		snprintf(buf, len, "unwritten");
		return;
	}
	snprintf(buf, len, "dev %" PRIu64 " gen %u chunk %u+%u/%u stored %u csum %016" PRIx64 "%s",
		 le64_to_cpu(v->offset), le32_to_cpu(v->gen), le32_to_cpu(v->chunk_offset),
		 bfs_bkey_size(k), le32_to_cpu(v->chunk_sectors), le32_to_cpu(v->stored_bytes),
		 le64_to_cpu(v->csum), v->compression == BFS_COMPRESSION_ZSTD ? " zstd" : "");
}

static void extent_cut_front(struct bfs_bkey *k, u64 n)
{
	struct bfs_extent_v *v = (struct bfs_extent_v *)k->v;

	if (!(v->flags & BFS_EXTENT_F_UNWRITTEN))
		v->chunk_offset = cpu_to_le32(le32_to_cpu(v->chunk_offset) + (u32)n);
}

static int alloc_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	const struct bfs_alloc_v *v = (const struct bfs_alloc_v *)k->v;

	if (v->data_type >= BFS_BUCKET_TYPE_NR) {
		snprintf(err, err_len, "alloc: unknown data type %u", v->data_type);
		return -EUCLEAN;
	}
	return 0;
}

static void alloc_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_alloc_v *v = (const struct bfs_alloc_v *)k->v;

	snprintf(buf, len, "gen %u %s live %" PRIu64, le32_to_cpu(v->gen),
		 v->data_type == BFS_BUCKET_USER ? "user" : "free", le64_to_cpu(v->live_sectors));
}

const struct bfs_bkey_ops bfs_key_ops_EXTENT = {
	.min_val_u64s = BFS_EXTENT_VAL_U64S,
	.max_val_u64s = BFS_EXTENT_VAL_U64S,
	.validate = extent_validate,
	.val_to_text = extent_to_text,
	.cut_front = extent_cut_front,
};

const struct bfs_bkey_ops bfs_key_ops_ALLOC = {
	.min_val_u64s = BFS_ALLOC_VAL_U64S,
	.max_val_u64s = BFS_ALLOC_VAL_U64S,
	.validate = alloc_validate,
	.val_to_text = alloc_to_text,
};
