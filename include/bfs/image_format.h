/* SPDX-License-Identifier: MIT */
/*
 * Format of a metadata dump (`bfs image dump`), doc/format/image.md says the
 * same in prose.
 *
 * A dump file is one zstd stream.  Decompressed, it is a sequence of
 * records, each a struct bfs_image_rec header followed by len bytes of
 * payload (then zero padding to a multiple of 8):
 *
 *   HEADER   exactly once, first: struct bfs_image_header
 *   EXTENT   any number: bytes to put back at device offset `offset`
 *   END      exactly once, last: struct bfs_image_end (counts to check)
 *
 * Every record carries its number (0, 1, 2 ...) and a checksum of its header
 * and payload, so a dropped, repeated, reordered or damaged record is found.
 * Anything after END, or a stream that stops before END, is an error.
 * Device ranges not covered by an extent restore as zeros.
 */
#ifndef BFS_IMAGE_FORMAT_H
#define BFS_IMAGE_FORMAT_H

#include "types.h"

/* "BFSR" read as a little-endian u32 */
#define BFS_IMAGE_REC_MAGIC	UINT32_C(0x52534642)
/* "BFS\0IMG\x1a" read as a little-endian u64 */
#define BFS_IMAGE_MAGIC		UINT64_C(0x1a474d4900534642)
#define BFS_IMAGE_VERSION	1

/* largest payload of one record: memory per record stays bounded */
#define BFS_IMAGE_REC_MAX	(1 * MiB)

enum bfs_image_rec_type {
	BFS_IMAGE_REC_HEADER	= 1,
	BFS_IMAGE_REC_EXTENT	= 2,
	BFS_IMAGE_REC_END	= 3,
};

/* what an extent holds (informational: restore writes them all alike) */
enum bfs_image_kind {
	BFS_IMAGE_KIND_NONE	= 0,	/* header and end records */
	BFS_IMAGE_KIND_SUPER	= 1,	/* a superblock region */
	BFS_IMAGE_KIND_JOURNAL	= 2,	/* journal buckets */
	BFS_IMAGE_KIND_NODE	= 3,	/* a btree node slot */
	BFS_IMAGE_KIND_DATA	= 4,	/* anything else (--data) */
	BFS_IMAGE_KIND_NR
};

struct bfs_image_rec {
	__le32	magic;		/*  0: BFS_IMAGE_REC_MAGIC */
	__le16	type;		/*  4: enum bfs_image_rec_type */
	__le16	kind;		/*  6: enum bfs_image_kind (extents), else 0 */
	__le32	len;		/*  8: payload bytes, at most BFS_IMAGE_REC_MAX */
	__le32	nr;		/* 12: record number, 0 for the header */
	__le64	offset;		/* 16: extents: device byte offset; else 0 */
	__le64	csum;		/* 24: XXH3-64 of the payload, seed XXH3-64 of bytes [0, 24) */
};
BFS_STATIC_SIZE(struct bfs_image_rec, 32);

/* header flags */
#define BFS_IMAGE_OBFUSCATED	(1U << 0)	/* names, targets, xattrs replaced */
#define BFS_IMAGE_DATA		(1U << 1)	/* file data included */
#define BFS_IMAGE_NO_SUPER	(1U << 2)	/* no valid superblock: only its regions, raw */
#define BFS_IMAGE_FLAGS_KNOWN	0x7U

struct bfs_image_header {
	__le64	magic;		/*   0: BFS_IMAGE_MAGIC */
	__le32	version;	/*   8: BFS_IMAGE_VERSION */
	__le32	flags;		/*  12: BFS_IMAGE_* */
	__le64	dev_size;	/*  16: size of the dumped device in bytes */
	__le64	time;		/*  24: when the dump was made, ns since the epoch */
	u8	uuid[16];	/*  32: filesystem UUID (zero without a superblock) */
	u8	label[64];	/*  48: filesystem label, NUL padded */
	char	tool[32];	/* 112: "bfs VERSION" that wrote it, NUL padded */
	char	source[256];	/* 144: the device path given to dump, NUL padded */
	__le32	block_size;	/* 400: the filesystem's, 0 without a superblock */
	__le32	node_size;	/* 404: likewise */
	__le64	reserved[13];	/* 408: zero */
};
BFS_STATIC_SIZE(struct bfs_image_header, 512);

struct bfs_image_end {
	__le64	nr_records;	/*  0: records before this one (header included) */
	__le64	extent_bytes;	/*  8: payload bytes of all extents */
	__le64	nr_nodes;	/* 16: btree node slots dumped */
	__le64	reserved;	/* 24: zero */
};
BFS_STATIC_SIZE(struct bfs_image_end, 32);

#endif /* BFS_IMAGE_FORMAT_H */
