// SPDX-License-Identifier: MIT
/* Building extent keys (their methods are in libcore/keys/data_keys.c). */
#include <inttypes.h>
#include <stdio.h>

#include <bfs/format.h>

#include "data.h"

struct bfs_bkey *bfs_extent_key(u64 *buf, u64 ino, u64 start, u64 end,
				const struct data_chunk *ch, u8 csum_type, u32 chunk_offset)
{
	struct bfs_bkey *k = (struct bfs_bkey *)buf;
	struct bfs_extent_v *v = (struct bfs_extent_v *)k->v;

	bfs_bkey_init(k, BFS_KEY_EXTENT, BFS_POS(ino, end, 0), BFS_EXTENT_VAL_U64S);
	k->size = cpu_to_le32((u32)(end - start));
	memset(v, 0, sizeof(*v));
	v->offset = cpu_to_le64(ch->dev_off);
	v->csum = cpu_to_le64(ch->csum);
	v->stored_bytes = cpu_to_le32(ch->stored_bytes);
	v->chunk_sectors = cpu_to_le32(ch->chunk_sectors);
	v->chunk_offset = cpu_to_le32(chunk_offset);
	v->gen = cpu_to_le32(ch->gen);
	v->compression = ch->compression;
	v->csum_type = csum_type;
	return k;
}

struct bfs_bkey *bfs_extent_key_unwritten(u64 *buf, u64 ino, u64 start, u64 end)
{
	struct bfs_bkey *k = (struct bfs_bkey *)buf;
	struct bfs_extent_v *v = (struct bfs_extent_v *)k->v;

	bfs_bkey_init(k, BFS_KEY_EXTENT, BFS_POS(ino, end, 0), BFS_EXTENT_VAL_U64S);
	k->size = cpu_to_le32((u32)(end - start));
	memset(v, 0, sizeof(*v));
	v->flags = BFS_EXTENT_F_UNWRITTEN;
	return k;
}
