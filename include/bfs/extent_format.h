/* SPDX-License-Identifier: MIT */
/*
 * On-disk format of file data (doc/format/data.md says the same in prose):
 * the value of an extent key (BFS_KEY_EXTENT, extents btree) and of a bucket
 * allocation key (BFS_KEY_ALLOC, alloc btree).
 *
 * Extent keys: pos = (inode, END sector, 0), size = length in 512-byte
 * sectors.  The key points at a "chunk": at most BFS_EXTENT_CHUNK_MAX bytes
 * of file data written together, possibly compressed, checksummed as a whole.
 * A key may cover only part of its chunk (after an overwrite trimmed it):
 * chunk_offset says where in the uncompressed chunk the key's range starts,
 * so the whole stored chunk is still read and verified, and no data moves.
 *
 * Alloc keys: pos = (bucket index, 0, 0); one per bucket that ever held
 * data, never deleted, because the generation must survive.
 */
#ifndef BFS_EXTENT_FORMAT_H
#define BFS_EXTENT_FORMAT_H

#include "types.h"

#define BFS_SECTOR_SHIFT	9
#define BFS_SECTOR_SIZE		512

/* largest uncompressed chunk: a 4 KiB random read reads at most this much */
#define BFS_EXTENT_CHUNK_MAX	(64 * KiB)
/* largest unwritten (fallocated) extent key, in sectors */
#define BFS_EXTENT_UNWRITTEN_MAX_SECTORS	(UINT32_C(1) << 22)

/* bfs_extent_v.flags */
#define BFS_EXTENT_F_UNWRITTEN	(1U << 0)	/* no data: reads as zeros */
#define BFS_EXTENT_F_KNOWN	BFS_EXTENT_F_UNWRITTEN

struct bfs_extent_v {
	__le64	offset;		/*  0: device byte offset of the stored chunk (0: unwritten) */
	__le64	csum;		/*  8: csum_type checksum of the stored_bytes stored bytes */
	__le32	stored_bytes;	/* 16: bytes stored (compressed size, or raw length) */
	__le32	chunk_sectors;	/* 20: uncompressed length of the whole chunk */
	__le32	chunk_offset;	/* 24: sectors: where this key starts inside the chunk */
	__le32	gen;		/* 28: bucket generation when the chunk was written */
	u8	compression;	/* 32: enum bfs_compression_type */
	u8	csum_type;	/* 33: enum bfs_csum_type */
	u8	flags;		/* 34: BFS_EXTENT_F_* */
	u8	pad[5];		/* 35: zero */
};
BFS_STATIC_SIZE(struct bfs_extent_v, 40);

#define BFS_EXTENT_VAL_U64S	(sizeof(struct bfs_extent_v) / 8)

enum bfs_bucket_data_type {
	BFS_BUCKET_FREE		= 0,	/* no live data (may be metadata's or free) */
	BFS_BUCKET_USER		= 1,	/* file data */
	BFS_BUCKET_TYPE_NR
};

struct bfs_alloc_v {
	__le32	gen;		/*  0: bumped each time the empty bucket is reused for data */
	u8	data_type;	/*  4: enum bfs_bucket_data_type */
	u8	pad[3];		/*  5: zero */
	__le64	live_sectors;	/*  8: sectors of extents pointing into the bucket */
};
BFS_STATIC_SIZE(struct bfs_alloc_v, 16);

#define BFS_ALLOC_VAL_U64S	(sizeof(struct bfs_alloc_v) / 8)

#endif /* BFS_EXTENT_FORMAT_H */
