/* SPDX-License-Identifier: MIT */
/*
 * Metadata dumps: `bfs image dump / restore / info` (libcore/image/).
 *
 * A dump holds every superblock copy, the journal and every node-sized slot
 * that carries a btree node header (reachable or not), optionally file data,
 * in the record stream of bfs/image_format.h compressed with zstd.  With
 * obfuscation, names, symlink targets, user xattr names and every xattr
 * value are replaced by strings of the same length, and the checksums that
 * were valid are recomputed, so the restored image checks as the original.
 *
 * The library never opens the dump file: the caller passes write and read
 * callbacks.  Dump and restore stream: memory is bounded by the geometry
 * (one bucket, one node, one record), not by the size of the filesystem.
 * All calls return 0 or a negative errno; on failure @err (BFS_ERR_LEN) says
 * what was wrong and where.
 */
#ifndef BFS_IMAGE_H
#define BFS_IMAGE_H

#include "dev.h"
#include "image_format.h"
#include "super.h"

/* write all @len bytes: 0 or a negative errno */
typedef int (*bfs_image_write_fn)(void *ctx, const void *buf, size_t len);
/* read up to @len bytes: the count, 0 at the end of the file, or a negative errno */
typedef long (*bfs_image_read_fn)(void *ctx, void *buf, size_t len);
/* @done of @total bytes of the device (dump) or of the records (restore) */
typedef void (*bfs_image_progress_fn)(void *ctx, u64 done, u64 total);

struct bfs_image_stats {
	u64	records;		/* records written or read, header and end included */
	u64	extent_bytes;		/* payload bytes of extents */
	u64	kind_bytes[BFS_IMAGE_KIND_NR];
	u64	nodes;			/* btree node slots */
	u64	names;			/* names, targets and values replaced */
	u64	raw;			/* sets whose framing broke: zeroed past the break */
	u64	out_bytes;		/* compressed bytes written (dump) */
};

struct bfs_image_dump_opts {
	bool	obfuscate;
	bool	data;			/* also every other non-zero block of the buckets */
	int	level;			/* zstd level, 0 = default */
	const char *source;		/* recorded in the header */
	const char *tool;		/* "bfs VERSION" */
	bfs_image_write_fn write;
	void	*write_ctx;
	bfs_image_progress_fn progress;	/* may be NULL */
	void	*progress_ctx;
};

/*
 * Dump @dev.  Without a valid superblock the superblock regions are dumped
 * raw (BFS_IMAGE_NO_SUPER) and the call still succeeds: a warning says so.
 */
int bfs_image_dump(struct bfs_dev *dev, const struct bfs_image_dump_opts *o,
		   struct bfs_image_stats *st, char *err);

/* ---- reading a dump ---- */

struct bfs_image_reader;

struct bfs_image_extent {
	u64	offset;
	u32	len;
	u16	kind;			/* enum bfs_image_kind */
	const u8 *data;			/* valid until the next call */
};

/* open the stream and read and check its header record */
int bfs_image_reader_open(bfs_image_read_fn read, void *ctx, struct bfs_image_reader **out,
			  char *err);
const struct bfs_image_header *bfs_image_reader_header(const struct bfs_image_reader *r);
/*
 * The next extent: 1 and *e filled, 0 when the end record was reached and
 * checked (and nothing follows it), or a negative errno: -EBADMSG for a
 * damaged or inconsistent record, -ENODATA for a stream cut short.
 */
int bfs_image_reader_next(struct bfs_image_reader *r, struct bfs_image_extent *e, char *err);
/* compressed bytes consumed so far (progress) */
u64 bfs_image_reader_pos(const struct bfs_image_reader *r);
void bfs_image_reader_close(struct bfs_image_reader *r);

/*
 * Write every extent of @r onto @dev, which must be at least the header's
 * dev_size and read as zeros wherever the dump has no extent (a new sparse
 * file, or a device the caller cleared).  All-zero blocks are skipped so a
 * file stays sparse.  Nothing is flushed until the end record has been
 * checked.
 */
int bfs_image_restore(struct bfs_image_reader *r, struct bfs_dev *dev, u64 total,
		      bfs_image_progress_fn progress, void *ctx, struct bfs_image_stats *st,
		      char *err);

#endif /* BFS_IMAGE_H */
