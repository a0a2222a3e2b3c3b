// SPDX-License-Identifier: MIT
/*
 * Superblock settings that may change after format.  The fixed part holds
 * what format chose; the options section holds what only set-option can
 * change: the checksum type of new file data (which must be separate from
 * csum_type because btree node checks use csum_type for every node already
 * written), the periodic commit interval, the error behaviour (errors=)
 * and the chunk size of new file data (the last two in the part of the
 * section that older versions do not read, see BFS_SB_OPTIONS_V1_BYTES).
 * Every setter leaves @sb valid, so a caller can validate once
 * and write once: one bfs_sb_write() commits all changes or none.
 */
#include <bfs/super.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bfs/extent_format.h>
#include <bfs/log.h>

#define opt_err(err, ...) bfs_err_line((err), -EINVAL, __VA_ARGS__)

int bfs_sb_set_label(struct bfs_sb *sb, const char *label, char *err)
{
	size_t len = strlen(label);

	if (len > BFS_LABEL_SIZE)
		return opt_err(err, "label is longer than %u bytes", BFS_LABEL_SIZE);
	memset(sb->label, 0, sizeof(sb->label));
	memcpy(sb->label, label, len);
	return 0;
}

void bfs_sb_set_uuid(struct bfs_sb *sb, const u8 uuid[16])
{
	memcpy(sb->uuid, uuid, sizeof(sb->uuid));
}

int bfs_sb_set_compression(struct bfs_sb *sb, unsigned type, unsigned level, char *err)
{
	switch (type) {
	case BFS_COMPRESSION_NONE:
		if (level)
			return opt_err(err, "compression none takes no level (got %u)", level);
		break;
	case BFS_COMPRESSION_ZSTD:
		if (!level)
			level = BFS_ZSTD_LEVEL_DEFAULT;
		if (level < BFS_ZSTD_LEVEL_MIN || level > BFS_ZSTD_LEVEL_MAX)
			return opt_err(err, "zstd level %u is out of range (1 to 19)", level);
		/* an incompat bit is never cleared: old extents may be compressed */
		sb->incompat = cpu_to_le64(le64_to_cpu(sb->incompat) | BFS_FEAT_INCOMPAT_ZSTD);
		break;
	default:
		return opt_err(err, "unknown compression type %u", type);
	}
	sb->compression_type = (u8)type;
	sb->compression_level = (u8)level;
	return 0;
}

const struct bfs_sb_options *bfs_sb_options_get(const struct bfs_sb *sb)
{
	const struct bfs_sb_field *f = bfs_sb_field_get((struct bfs_sb *)sb, BFS_SB_FIELD_OPTIONS);

	return f ? (const void *)f->data : NULL;
}

/* the options section, created (zeroed) if absent; NULL if it does not fit */
static struct bfs_sb_options *options_get_or_add(struct bfs_sb *sb, char *err)
{
	const u32 u64s = (sizeof(struct bfs_sb_field) + sizeof(struct bfs_sb_options)) / 8;
	struct bfs_sb_field *f = bfs_sb_field_get(sb, BFS_SB_FIELD_OPTIONS);

	if (!f || le32_to_cpu(f->u64s) < u64s)
		f = bfs_sb_field_resize(sb, BFS_SB_FIELD_OPTIONS, u64s);
	if (!f && err)
		snprintf(err, BFS_ERR_LEN, "no room for the options section");
	if (f)
		sb->compat = cpu_to_le64(le64_to_cpu(sb->compat) | BFS_FEAT_COMPAT_ERRORS);
	return f ? (void *)f->data : NULL;
}

int bfs_sb_set_data_csum(struct bfs_sb *sb, unsigned type, char *err)
{
	struct bfs_sb_options *o;

	if (type >= BFS_CSUM_NR)
		return opt_err(err, "unknown checksum type %u", type);
	o = options_get_or_add(sb, err);
	if (!o)
		return -ENOSPC;
	o->data_csum_set = 1;
	o->data_csum_type = (u8)type;
	return 0;
}

int bfs_sb_set_commit_secs(struct bfs_sb *sb, unsigned secs, char *err)
{
	struct bfs_sb_options *o;

	if (secs > BFS_COMMIT_SECS_MAX)
		return opt_err(err, "commit interval %u s is longer than a day (%u s)", secs,
			       BFS_COMMIT_SECS_MAX);
	o = options_get_or_add(sb, err);
	if (!o)
		return -ENOSPC;
	o->commit_secs = cpu_to_le32(secs);
	return 0;
}

unsigned bfs_sb_commit_secs(const struct bfs_sb *sb)
{
	const struct bfs_sb_options *o = bfs_sb_options_get(sb);

	return o ? le32_to_cpu(o->commit_secs) : 0;
}

unsigned bfs_sb_data_csum_type(const struct bfs_sb *sb)
{
	const struct bfs_sb_options *o = bfs_sb_options_get(sb);

	return o && o->data_csum_set ? o->data_csum_type : sb->csum_type;
}

static const char *const errors_names[BFS_ERRORS_NR] = {
	[BFS_ERRORS_CONTINUE]	= "continue",
	[BFS_ERRORS_RO]		= "remount-ro",
	[BFS_ERRORS_PANIC]	= "panic",
};

const char *bfs_errors_name(unsigned errors)
{
	return errors < BFS_ERRORS_NR ? errors_names[errors] : "unknown";
}

int bfs_errors_parse(const char *name, unsigned *errors)
{
	unsigned i;

	for (i = 0; i < BFS_ERRORS_NR; i++)
		if (!strcmp(name, errors_names[i])) {
			*errors = i;
			return 0;
		}
	return -EINVAL;
}

int bfs_sb_set_errors(struct bfs_sb *sb, unsigned errors, char *err)
{
	struct bfs_sb_options *o;

	if (errors >= BFS_ERRORS_NR)
		return opt_err(err, "unknown error behaviour %u", errors);
	o = options_get_or_add(sb, err);
	if (!o)
		return -ENOSPC;
	o->errors = (u8)errors;
	return 0;
}

unsigned bfs_sb_errors(const struct bfs_sb *sb)
{
	const struct bfs_sb_field *f = bfs_sb_field_get((struct bfs_sb *)sb, BFS_SB_FIELD_OPTIONS);

	if (!f || (size_t)le32_to_cpu(f->u64s) * 8 < sizeof(*f) + sizeof(struct bfs_sb_options))
		return BFS_ERRORS_CONTINUE;
	return ((const struct bfs_sb_options *)f->data)->errors;
}

/* the options section's data_chunk_shift; 0 if absent or written before it existed */
static unsigned data_chunk_shift(const struct bfs_sb *sb)
{
	const struct bfs_sb_field *f = bfs_sb_field_get((struct bfs_sb *)sb, BFS_SB_FIELD_OPTIONS);

	if (!f || (size_t)le32_to_cpu(f->u64s) * 8 < sizeof(*f) + sizeof(struct bfs_sb_options))
		return 0;
	return ((const struct bfs_sb_options *)f->data)->data_chunk_shift;
}

int bfs_sb_set_data_chunk(struct bfs_sb *sb, u32 bytes, char *err)
{
	struct bfs_sb_options *o;
	unsigned shift;

	if (bytes < (1U << BFS_DATA_CHUNK_MIN_SHIFT) || bytes > BFS_EXTENT_CHUNK_MAX ||
	    (bytes & (bytes - 1)))
		return opt_err(err, "data chunk size %u is not a power of two from 4K to 64K", bytes);
	if (bytes < le32_to_cpu(sb->block_size))
		return opt_err(err, "data chunk size %u is smaller than the block size %u", bytes,
			       le32_to_cpu(sb->block_size));
	/* a chunk lies in one bucket */
	if (bytes > le32_to_cpu(sb->bucket_size))
		return opt_err(err, "data chunk size %u is larger than the bucket size %u", bytes,
			       le32_to_cpu(sb->bucket_size));
	o = options_get_or_add(sb, err);
	if (!o)
		return -ENOSPC;
	for (shift = 0; (1U << shift) < bytes; shift++)
		;
	o->data_chunk_shift = (u8)shift;
	sb->compat = cpu_to_le64(le64_to_cpu(sb->compat) | BFS_FEAT_COMPAT_DATA_CHUNK);
	return 0;
}

u32 bfs_data_chunk_default(const struct bfs_sb *sb)
{
	u32 c = sb->compression_type != BFS_COMPRESSION_NONE ? BFS_EXTENT_CHUNK_MAX :
		BFS_DATA_CHUNK_DEFAULT;

	c = BFS_MIN(c, le32_to_cpu(sb->bucket_size));
	return BFS_MAX(c, le32_to_cpu(sb->block_size));
}

u32 bfs_sb_data_chunk(const struct bfs_sb *sb)
{
	unsigned shift = data_chunk_shift(sb);

	if (shift)
		return UINT32_C(1) << shift;
	return (u32)BFS_MIN((u64)BFS_EXTENT_CHUNK_MAX, (u64)le32_to_cpu(sb->bucket_size));
}
