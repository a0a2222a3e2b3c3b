/* SPDX-License-Identifier: MIT */
/*
 * Superblock: layout computation, encode/validate, reading with fallback to
 * backup copies, writing every copy (libcore/super/).
 *
 * The in-memory superblock is the on-disk structure itself (struct bfs_sb in
 * a BFS_SB_MAX_BYTES buffer); accessors convert endianness.  Validation
 * functions fill @err (if non-NULL) with one line saying exactly which field
 * is wrong and why, and return -ENODATA (no bfs magic: not a bfs device),
 * -EUCLEAN (corrupt), -EPROTONOSUPPORT (newer
 * format or unknown incompat feature) or -EINVAL.
 */
#ifndef BFS_SUPER_H
#define BFS_SUPER_H

#include <errno.h>

#include "dev.h"
#include "format.h"
#include "log.h"

#define BFS_ERR_LEN BFS_ERR_LINE_LEN

/* options of bfs format; zero means "pick the default for this device" */
struct bfs_format_opts {
	u32	block_size;
	u32	bucket_size;
	u32	btree_node_size;
	u32	journal_nbuckets;
	const char *label;
	bool	have_uuid;
	u8	uuid[16];
	u8	csum_type;		/* default BFS_CSUM_XXH3 */
	bool	csum_set;
	u8	compression_type;
	u8	compression_level;	/* 0: default level for the type */
	bool	errors_set;		/* errors: enum bfs_errors (default continue) */
	u8	errors;
	u32	data_chunk;		/* bytes; 0: bfs_data_chunk_default() */
};

/*
 * Compute a new superblock for a device of @dev_size bytes whose logical
 * sector is @sector_size.  Fills *sb (a BFS_SB_MAX_BYTES buffer) completely,
 * including a fresh UUID (unless given), hash seed and creation time; does
 * not checksum it.  Impossible combinations give -EINVAL and a message.
 */
int bfs_sb_layout(const struct bfs_format_opts *opts, u64 dev_size,
		  unsigned sector_size, struct bfs_sb *sb, char *err);

/*
 * Check every field of @sb; @buf_bytes is how much of the buffer holds data
 * read from disk, @dev_size the current device size (0: don't check).
 */
int bfs_sb_validate(const struct bfs_sb *sb, size_t buf_bytes, u64 dev_size, char *err);
/*
 * May this code write to a filesystem with superblock @sb?  -EROFS (and a
 * message) when it has ro_compat features this code does not know.
 */
int bfs_sb_check_writable(const struct bfs_sb *sb, char *err);
/* checksum of an encoded superblock (covers bytes [16, bytes)) */
u64 bfs_sb_csum(const struct bfs_sb *sb);

/* where the superblock copies of a device of @dev_size bytes live */
unsigned bfs_sb_copy_offsets(u64 dev_size, u64 offsets[BFS_SB_MAX_COPIES]);

struct bfs_sb_handle {
	struct bfs_sb *sb;	/* valid superblock (a bfs_sb_buf_alloc() buffer) */
	unsigned copy;		/* index of the copy used, 0 = primary */
	u64	offset;		/* its byte offset */
	bool	used_backup;	/* primary was unreadable, invalid or outvoted */
	bool	outvoted;	/* primary valid, but agreeing backups outvoted it */
	int	primary_ret;	/* why the primary was rejected (0 if it wasn't) */
	char	primary_err[BFS_ERR_LEN];
};

/*
 * Read the primary superblock; if it is unreadable or invalid, use the valid
 * backup with the highest sequence number; if it is valid but two or more
 * agreeing backups outvote it (the majority rule, vote.c), use them and say
 * why in primary_err.  On failure @err says why the primary (and every
 * backup) was rejected.  Every opener reads through here.
 */
int bfs_sb_read(struct bfs_dev *dev, struct bfs_sb_handle *h, char *err);
/* the majority rule over a handle holding a valid primary (bfs_sb_read's last step) */
int bfs_sb_outvote(struct bfs_dev *dev, struct bfs_sb_handle *h);
/* copies of one write are byte for byte the same */
bool bfs_sb_same(const struct bfs_sb *a, const struct bfs_sb *b);
/* where two copies first differ past seq, checksum and write time: "at byte N (field)" */
void bfs_sb_diff_text(const struct bfs_sb *a, const struct bfs_sb *b, char *buf, size_t len);
void bfs_sb_handle_release(struct bfs_sb_handle *h);

/*
 * A zeroed BFS_SB_MAX_BYTES buffer, page-aligned, whose pages are resident
 * only once written (buf.c); NULL if out of memory.  Handles hold these:
 * what goes into a handle must come from here, freed by
 * bfs_sb_handle_release() or bfs_sb_buf_free() (NULL is fine).
 */
struct bfs_sb *bfs_sb_buf_alloc(void);
void bfs_sb_buf_free(struct bfs_sb *sb);

/* read and validate the copy at @offset into @buf (BFS_SB_MAX_BYTES) */
int bfs_sb_read_copy(struct bfs_dev *dev, u64 offset, struct bfs_sb *buf, char *err);

/*
 * Write @sb to every copy: bumps seq, sets time_written, recomputes the
 * checksum, writes backups first and the primary last, flushing in between so
 * that a crash leaves at least one valid copy.
 */
int bfs_sb_write(struct bfs_dev *dev, struct bfs_sb *sb);

/*
 * Crash states of bfs_sb_write() (libcore/super/crash.c): a power cut
 * leaves backups one write newer than the primary, or one copy torn (each
 * 512-byte sector old or new).  That is the designed write order, not
 * damage: the next read-write open rewrites every copy.
 *   bfs_sb_copy_interrupted()  backup @raw (BFS_SB_IO_ALIGN bytes as read,
 *       @valid if bfs_sb_read_copy() accepted it) against the primary @ref
 *       in force; @newer is a valid backup one write newer than @ref, if one
 *       was found (it tells which sectors are new)
 *   bfs_sb_primary_torn()  the invalid primary @raw against @ref, the
 *       newest backup, when every backup is valid and equal to @ref
 */
bool bfs_sb_copy_interrupted(const struct bfs_sb *ref, const struct bfs_sb *raw, bool valid,
			     const struct bfs_sb *newer);
bool bfs_sb_primary_torn(const struct bfs_sb *ref, const struct bfs_sb *raw);

/*
 * Write a new filesystem described by @sb (from bfs_sb_layout) to @dev:
 * clears every superblock region, lays down the empty on-disk structures of
 * the layers above, then writes all superblock copies and flushes.
 */
int bfs_mkfs_write(struct bfs_dev *dev, struct bfs_sb *sb);

/* variable-length sections */
struct bfs_sb_field *bfs_sb_field_get(struct bfs_sb *sb, u32 type);
/*
 * The one decoder of the section list: the section after @prev (the first
 * with NULL), or NULL at the end, at a zero-length section or at one that
 * runs past sb->bytes (validation reports those; readers just stop).
 */
const struct bfs_sb_field *bfs_sb_field_next(const struct bfs_sb *sb,
					     const struct bfs_sb_field *prev);
#define bfs_sb_for_each_field(sb, f) \
	for ((f) = bfs_sb_field_next((sb), NULL); (f); (f) = bfs_sb_field_next((sb), (f)))
/* create or resize section @type to @u64s (header included); NULL: no room */
struct bfs_sb_field *bfs_sb_field_resize(struct bfs_sb *sb, u32 type, u32 u64s);
void bfs_sb_field_delete(struct bfs_sb *sb, u32 type);

/*
 * Settings that may change after format (libcore/super/options.c, used by
 * bfs set-option).  Each changes @sb in memory only and keeps it valid;
 * bfs_sb_write() makes the change durable.  -EINVAL (and @err) for a bad
 * value, -ENOSPC if a section does not fit.
 */
int bfs_sb_set_label(struct bfs_sb *sb, const char *label, char *err);
void bfs_sb_set_uuid(struct bfs_sb *sb, const u8 uuid[16]);
/* compression of new data; zstd sets the ZSTD incompat bit, none leaves it */
int bfs_sb_set_compression(struct bfs_sb *sb, unsigned type, unsigned level, char *err);
/* checksum of new file data; metadata keeps csum_type (node checks use it) */
int bfs_sb_set_data_csum(struct bfs_sb *sb, unsigned type, char *err);
/* the checksum type new file data is written with */
unsigned bfs_sb_data_csum_type(const struct bfs_sb *sb);
/* everything written is durable at most @secs later (0: only fsync/unmount) */
int bfs_sb_set_commit_secs(struct bfs_sb *sb, unsigned secs, char *err);
unsigned bfs_sb_commit_secs(const struct bfs_sb *sb);
/* errors=: enum bfs_errors (format.h); an options section without the field says continue */
int bfs_sb_set_errors(struct bfs_sb *sb, unsigned errors, char *err);
unsigned bfs_sb_errors(const struct bfs_sb *sb);
/* "continue", "remount-ro", "panic"; parse: -EINVAL for anything else */
const char *bfs_errors_name(unsigned errors);
int bfs_errors_parse(const char *name, unsigned *errors);
/*
 * The chunk size new file data is cut into (a power of two, 4 KiB to
 * BFS_EXTENT_CHUNK_MAX, at least the block size, at most the bucket size):
 * what a small random read reads and verifies.  Sets
 * BFS_FEAT_COMPAT_DATA_CHUNK.
 */
int bfs_sb_set_data_chunk(struct bfs_sb *sb, u32 bytes, char *err);
/* bytes; when never set BFS_EXTENT_CHUNK_MAX, or the bucket size if smaller */
u32 bfs_sb_data_chunk(const struct bfs_sb *sb);
/*
 * What `bfs format` gives a filesystem without --data-chunk (doc/format/data.md,
 * "Choosing the chunk size"): BFS_DATA_CHUNK_DEFAULT, or the largest chunk
 * with compression, within the block and bucket sizes of @sb.
 */
u32 bfs_data_chunk_default(const struct bfs_sb *sb);
/*
 * The options section, or NULL if absent (validated by bfs_sb_validate).
 * Only its first BFS_SB_OPTIONS_V1_BYTES are sure to be there.
 */
const struct bfs_sb_options *bfs_sb_options_get(const struct bfs_sb *sb);

/* label as a C string (copies at most BFS_LABEL_SIZE bytes) */
void bfs_sb_label(const struct bfs_sb *sb, char out[BFS_LABEL_SIZE + 1]);

#endif /* BFS_SUPER_H */
