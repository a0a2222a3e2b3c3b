/* SPDX-License-Identifier: MIT */
/*
 * On-disk format: superblock and device layout.
 *
 * This header is the single place that knows byte offsets of on-disk
 * structures; doc/format.md describes the same layout in prose.  All integers
 * are little-endian (see types.h) and every structure has its size pinned by a
 * static assertion so that an accidental change of layout fails to compile.
 *
 * Device layout (offsets in bytes, B = bucket size):
 *
 *   0            4 KiB: left alone (partition tables, boot loaders)
 *   4096         primary superblock copy (region of BFS_SB_REGION bytes)
 *   512 KiB      first backup copy
 *   1 MiB        end of the head reserve; buckets start at first_bucket * B
 *   ...          buckets [first_bucket, nbuckets): journal, btree nodes, data
 *   END - 64 KiB second backup copy, END = device size rounded down to 64 KiB
 *
 * A bucket is never placed over a superblock copy.
 */
#ifndef BFS_FORMAT_H
#define BFS_FORMAT_H

#include "types.h"

/* "BFS\0SUP\x1a" read as a little-endian u64 */
#define BFS_SB_MAGIC		UINT64_C(0x1a50555300534642)

#define BFS_VERSION_CURRENT	1	/* format version this code writes */
#define BFS_VERSION_MIN		1	/* oldest format version it can read */

#define BFS_SB_OFFSET		4096		/* primary copy */
#define BFS_SB_BACKUP_OFFSET	(512 * KiB)	/* first backup copy */
#define BFS_SB_REGION		(64 * KiB)	/* space reserved per copy */
#define BFS_SB_MAX_BYTES	BFS_SB_REGION	/* largest encoded superblock */
#define BFS_SB_IO_ALIGN		4096		/* copies are read/written in 4K units */
#define BFS_SB_HEAD_RESERVE	(1 * MiB)	/* no bucket below this */
#define BFS_SB_MAX_COPIES	4

#define BFS_LABEL_SIZE		64

#define BFS_MIN_BLOCK_SIZE	512
#define BFS_MAX_BLOCK_SIZE	(64 * KiB)
#define BFS_MIN_BTREE_NODE_SIZE	(4 * KiB)
#define BFS_MAX_BTREE_NODE_SIZE	(2 * MiB)
#define BFS_MIN_BUCKET_SIZE	(4 * KiB)
#define BFS_MAX_BUCKET_SIZE	(128 * MiB)
#define BFS_MIN_JOURNAL_BUCKETS	4
#define BFS_MIN_FREE_BUCKETS	16	/* buckets left after journal at format */
#define BFS_MIN_DEV_SIZE	(8 * MiB)

enum bfs_csum_type {
	BFS_CSUM_NONE	= 0,
	BFS_CSUM_XXH3	= 1,	/* XXH3-64, seed 0 */
	BFS_CSUM_NR
};

enum bfs_compression_type {
	BFS_COMPRESSION_NONE	= 0,
	BFS_COMPRESSION_ZSTD	= 1,
	BFS_COMPRESSION_NR
};

#define BFS_ZSTD_LEVEL_MIN	1
#define BFS_ZSTD_LEVEL_MAX	19
#define BFS_ZSTD_LEVEL_DEFAULT	3

/* sb->flags */
#define BFS_SB_CLEAN		(1U << 0)	/* cleanly closed: no journal replay needed */
#define BFS_SB_ERRORS		(1U << 1)	/* errors were seen: run fsck */
#define BFS_SB_FLAGS_KNOWN	(BFS_SB_CLEAN | BFS_SB_ERRORS)

/*
 * Feature bits.  An implementation that finds an unknown bit set in
 *   incompat  must refuse the filesystem,
 *   ro_compat may open it read-only only,
 *   compat    may ignore it.
 */
#define BFS_FEAT_INCOMPAT_ZSTD	(UINT64_C(1) << 0)	/* extents may be zstd-compressed */
#define BFS_FEAT_INCOMPAT_KNOWN	(BFS_FEAT_INCOMPAT_ZSTD)
#define BFS_FEAT_RO_COMPAT_KNOWN	UINT64_C(0)
/*
 * Node headers carry the filesystem's node id (reserved[0] = hash_seed):
 * a node scan and every node read can tell this filesystem's nodes from
 * those a previous filesystem on the device left behind.  Readers that do
 * not know the bit ignore the field, so it is compat.
 */
#define BFS_FEAT_COMPAT_NODE_ID	(UINT64_C(1) << 0)
/* the options section is long enough to hold errors (bfs_sb_options.errors) */
#define BFS_FEAT_COMPAT_ERRORS	(UINT64_C(1) << 1)
/*
 * The options section carries data_chunk_shift (the chunk size new file
 * data is cut into).  Readers that do not know it read every chunk as
 * before and write 64 KiB chunks, so it is compat.
 */
#define BFS_FEAT_COMPAT_DATA_CHUNK	(UINT64_C(1) << 2)
#define BFS_FEAT_COMPAT_KNOWN	(BFS_FEAT_COMPAT_NODE_ID | BFS_FEAT_COMPAT_ERRORS | \
				 BFS_FEAT_COMPAT_DATA_CHUNK)

/*
 * Variable-length superblock section.  Sections follow the fixed part of the
 * superblock back to back; u64s counts the whole section including this
 * header, in units of 8 bytes.  A type with BFS_SB_FIELD_REQUIRED set must be
 * understood by the reader; other unknown types are skipped.
 */
struct bfs_sb_field {
	__le32	u64s;
	__le32	type;
	__le64	data[];
};
BFS_STATIC_SIZE(struct bfs_sb_field, 8);

#define BFS_SB_FIELD_REQUIRED	(1U << 31)

enum bfs_sb_field_type {
	/* clean-shutdown state: journal sequence and btree roots (see btree) */
	BFS_SB_FIELD_CLEAN	= 1,
	/* settings changed after format (bfs set-option); optional */
	BFS_SB_FIELD_OPTIONS	= 2,
	/* what repairs lost (struct bfs_sb_repair); optional, written by fsck */
	BFS_SB_FIELD_REPAIR	= 3,
};

/*
 * BFS_SB_FIELD_OPTIONS payload.  Optional: a reader that does not know it
 * uses the fixed part's values, which is always safe (it only decides what
 * new data is written with).
 */
struct bfs_sb_options {
	u8	data_csum_set;		/* 0: data uses csum_type; 1: data_csum_type */
	u8	data_csum_type;		/* enum bfs_csum_type of new file data */
	u8	pad[6];			/* zero */
	__le32	commit_secs;		/* periodic commit of a read-write open; 0: none */
	__le32	pad2;			/* zero */
	__le64	reserved[2];		/* zero */
	/*
	 * From here on only in sections at least this long (written with
	 * COMPAT_ERRORS or COMPAT_DATA_CHUNK): readers that know only the
	 * first BFS_SB_OPTIONS_V1_BYTES ignore the rest.
	 */
	u8	errors;			/* 32: enum bfs_errors: what a mount does on a metadata error */
	u8	data_chunk_shift;	/* 33: log2 of the chunk size of new data; 0: 64 KiB */
	u8	pad3[6];		/* 34: zero */
};
BFS_STATIC_SIZE(struct bfs_sb_options, 40);
/* the options section as the first format version wrote it (no errors, no data_chunk) */
#define BFS_SB_OPTIONS_V1_BYTES	32

/* errors= (ext4's): what a mount does when it meets corrupt metadata or an I/O error */
enum bfs_errors {
	BFS_ERRORS_CONTINUE	= 0,	/* log it, fail the operation, go on */
	BFS_ERRORS_RO		= 1,	/* log it, refuse every write from then on */
	BFS_ERRORS_PANIC	= 2,	/* log it, stop the filesystem (the mount ends) */
	BFS_ERRORS_NR,
};

#define BFS_COMMIT_SECS_MAX	86400	/* a day */
/* bfs_sb_options.data_chunk_shift, non-zero: 4 KiB to BFS_EXTENT_CHUNK_MAX */
#define BFS_DATA_CHUNK_MIN_SHIFT	12
#define BFS_DATA_CHUNK_MAX_SHIFT	16
/* new filesystems without compression: a 4 KiB random read reads 16 KiB */
#define BFS_DATA_CHUNK_DEFAULT		(16 * KiB)

/*
 * BFS_SB_FIELD_REPAIR payload: which btrees a repair could not restore
 * completely (bcachefs' btrees_lost_data): a rebuild that lost key ranges,
 * or restored ranges from nodes found by scanning the device (which may be
 * older versions).  Later passes and later fscks know where to look harder;
 * show-super prints it.  Bits accumulate.
 */
struct bfs_sb_repair {
	__le32	btrees_lost_data;	/*  0: bit per enum bfs_btree_id */
	__le32	flags;			/*  4: zero */
	__le64	nr_rebuilds;		/*  8: btree rebuilds so far */
	__le64	last_rebuild;		/* 16: seconds since the epoch */
	__le64	reserved;		/* 24: zero */
};
BFS_STATIC_SIZE(struct bfs_sb_repair, 32);

struct bfs_sb {
	__le64	magic;			/*   0 */
	__le64	csum;			/*   8: XXH3-64 of bytes [16, bytes) */
	__le32	bytes;			/*  16: fixed part + sections, multiple of 8 */
	__le16	version;		/*  20: format version that wrote this */
	__le16	version_min;		/*  22: oldest version able to read it */
	__le64	seq;			/*  24: bumped on every write; newest wins */
	u8	uuid[16];		/*  32: filesystem UUID */
	u8	label[BFS_LABEL_SIZE];	/*  48: NUL padded, not necessarily terminated */
	__le64	compat;			/* 112 */
	__le64	ro_compat;		/* 120 */
	__le64	incompat;		/* 128 */
	__le64	time_created;		/* 136: ns since the epoch */
	__le64	time_written;		/* 144: ns since the epoch */
	__le64	dev_size;		/* 152: bytes, at format time */
	__le32	block_size;		/* 160: bytes, power of two */
	__le32	btree_node_size;	/* 164: bytes, power of two */
	__le32	bucket_size;		/* 168: bytes, power of two */
	__le32	flags;			/* 172: BFS_SB_* */
	__le64	nbuckets;		/* 176: buckets are [first_bucket, nbuckets) */
	__le64	first_bucket;		/* 184 */
	__le64	journal_bucket;		/* 192: first journal bucket */
	__le32	journal_nbuckets;	/* 200: contiguous journal buckets */
	u8	csum_type;		/* 204: enum bfs_csum_type */
	u8	compression_type;	/* 205: enum bfs_compression_type */
	u8	compression_level;	/* 206: 0 when compression is none */
	u8	nr_copies;		/* 207: superblock copies in copy_offset[] */
	__le64	copy_offset[BFS_SB_MAX_COPIES]; /* 208: byte offsets, [0] = primary */
	__le64	hash_seed;		/* 240: per-filesystem seed for name hashes */
	__le64	reserved[33];		/* 248: zero */
	struct bfs_sb_field fields[];	/* 512 */
};
BFS_STATIC_SIZE(struct bfs_sb, 512);

#endif /* BFS_FORMAT_H */
