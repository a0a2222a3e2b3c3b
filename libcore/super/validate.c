// SPDX-License-Identifier: MIT
/*
 * Superblock validation.  Nothing in a superblock read from disk is used
 * before every field has been checked here; the first problem found is
 * reported in one line that names the field and the offending value.
 */
#include <bfs/checksum.h>
#include <bfs/super.h>

#include <stdarg.h>
#include <stdio.h>

__attribute__((format(printf, 3, 4)))
static int sb_err(char *err, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err, BFS_ERR_LEN, fmt, ap);
		va_end(ap);
	}
	return ret;
}

#define bad(...)	sb_err(err, -EUCLEAN, __VA_ARGS__)
#define ull(x)		((unsigned long long)(x))

u64 bfs_sb_csum(const struct bfs_sb *sb)
{
	/*
	 * Clamped: callers that print a damaged superblock's checksum state
	 * (show-super, the debug shell) hand one whose size is not validated,
	 * and a superblock buffer is never smaller than the header nor larger
	 * than BFS_SB_MAX_BYTES.  A clamped size does not match the stored
	 * checksum of a valid superblock anyway: validation refuses it first.
	 */
	u32 bytes = BFS_MIN(BFS_MAX(le32_to_cpu(sb->bytes), (u32)sizeof(*sb)),
			    (u32)BFS_SB_MAX_BYTES);

	return bfs_xxh3((const u8 *)sb + 16, bytes - 16);
}

static int check_pow2(char *err, const char *field, u64 v, u64 min, u64 max)
{
	if (!bfs_is_pow2(v) || v < min || v > max)
		return bad("%s %llu is invalid (a power of two from %llu to %llu)",
			   field, ull(v), ull(min), ull(max));
	return 0;
}

static int validate_header(const struct bfs_sb *sb, size_t buf_bytes, char *err)
{
	u32 bytes = le32_to_cpu(sb->bytes);
	u16 version = le16_to_cpu(sb->version);
	u16 version_min = le16_to_cpu(sb->version_min);
	u64 csum;

	if (buf_bytes < sizeof(*sb))
		return bad("superblock truncated: %zu bytes, need %zu", buf_bytes, sizeof(*sb));
	if (le64_to_cpu(sb->magic) != BFS_SB_MAGIC)
		return sb_err(err, -ENODATA, "bad magic 0x%016llx (not a bfs superblock)",
			      ull(le64_to_cpu(sb->magic)));
	if (bytes < sizeof(*sb) || bytes > BFS_SB_MAX_BYTES || bytes % 8)
		return bad("superblock size %u is invalid (multiple of 8 from %zu to %llu)",
			   bytes, sizeof(*sb), ull(BFS_SB_MAX_BYTES));
	if (bytes > buf_bytes)
		return bad("superblock truncated: says %u bytes, only %zu read", bytes, buf_bytes);
	csum = bfs_sb_csum(sb);
	if (csum != le64_to_cpu(sb->csum))
		return bad("bad checksum: stored 0x%016llx, computed 0x%016llx",
			   ull(le64_to_cpu(sb->csum)), ull(csum));
	if (version_min > BFS_VERSION_CURRENT)
		return sb_err(err, -EPROTONOSUPPORT,
			      "format version %u needs bfs that reads version %u or newer "
			      "(this one reads %u to %u)", version, version_min,
			      BFS_VERSION_MIN, BFS_VERSION_CURRENT);
	if (version < BFS_VERSION_MIN || version < version_min)
		return bad("format version %u is invalid (oldest compatible %u, supported from %u)",
			   version, version_min, BFS_VERSION_MIN);
	if (le64_to_cpu(sb->incompat) & ~BFS_FEAT_INCOMPAT_KNOWN)
		return sb_err(err, -EPROTONOSUPPORT, "unsupported incompat features 0x%llx",
			      ull(le64_to_cpu(sb->incompat) & ~BFS_FEAT_INCOMPAT_KNOWN));
	if (le32_to_cpu(sb->flags) & ~BFS_SB_FLAGS_KNOWN)
		return bad("unknown flags 0x%x", le32_to_cpu(sb->flags) & ~BFS_SB_FLAGS_KNOWN);
	return 0;
}

static int validate_sizes(const struct bfs_sb *sb, char *err)
{
	u32 block = le32_to_cpu(sb->block_size);
	u32 node = le32_to_cpu(sb->btree_node_size);
	u32 bucket = le32_to_cpu(sb->bucket_size);
	int ret;

	ret = check_pow2(err, "block_size", block, BFS_MIN_BLOCK_SIZE, BFS_MAX_BLOCK_SIZE);
	if (!ret)
		ret = check_pow2(err, "btree_node_size", node, BFS_MIN_BTREE_NODE_SIZE,
				 BFS_MAX_BTREE_NODE_SIZE);
	if (!ret)
		ret = check_pow2(err, "bucket_size", bucket, BFS_MIN_BUCKET_SIZE,
				 BFS_MAX_BUCKET_SIZE);
	if (ret)
		return ret;
	if (node < block)
		return bad("btree_node_size %u is smaller than block_size %u", node, block);
	if (bucket < node)
		return bad("bucket_size %u is smaller than btree_node_size %u", bucket, node);
	if (sb->csum_type >= BFS_CSUM_NR)
		return bad("csum_type %u is unknown", sb->csum_type);
	if (sb->compression_type >= BFS_COMPRESSION_NR)
		return bad("compression_type %u is unknown", sb->compression_type);
	if (sb->compression_type == BFS_COMPRESSION_NONE && sb->compression_level)
		return bad("compression_level %u set without compression", sb->compression_level);
	if (sb->compression_type == BFS_COMPRESSION_ZSTD &&
	    (sb->compression_level < BFS_ZSTD_LEVEL_MIN ||
	     sb->compression_level > BFS_ZSTD_LEVEL_MAX))
		return bad("compression_level %u is out of range for zstd (%u to %u)",
			   sb->compression_level, BFS_ZSTD_LEVEL_MIN, BFS_ZSTD_LEVEL_MAX);
	if (sb->compression_type == BFS_COMPRESSION_ZSTD &&
	    !(le64_to_cpu(sb->incompat) & BFS_FEAT_INCOMPAT_ZSTD))
		return bad("compression_type zstd without the zstd incompat feature");
	return 0;
}

static int validate_buckets(const struct bfs_sb *sb, u64 dev_size, char *err)
{
	u64 bucket = le32_to_cpu(sb->bucket_size);
	u64 nbuckets = le64_to_cpu(sb->nbuckets);
	u64 first = le64_to_cpu(sb->first_bucket);
	u64 jstart = le64_to_cpu(sb->journal_bucket);
	u64 jnr = le32_to_cpu(sb->journal_nbuckets);
	u64 sb_dev_size = le64_to_cpu(sb->dev_size);

	if (sb_dev_size < BFS_MIN_DEV_SIZE)
		return bad("dev_size %llu is below the minimum %llu", ull(sb_dev_size),
			   ull(BFS_MIN_DEV_SIZE));
	if (dev_size && sb_dev_size > dev_size)
		return bad("dev_size %llu is larger than the device (%llu bytes): truncated image?",
			   ull(sb_dev_size), ull(dev_size));
	if (first * bucket < BFS_SB_HEAD_RESERVE)
		return bad("first_bucket %llu starts inside the superblock area (below %llu bytes)",
			   ull(first), ull(BFS_SB_HEAD_RESERVE));
	if (nbuckets <= first || nbuckets > sb_dev_size / bucket)
		return bad("nbuckets %llu is invalid (first_bucket %llu, device holds %llu buckets)",
			   ull(nbuckets), ull(first), ull(sb_dev_size / bucket));
	if (jnr < BFS_MIN_JOURNAL_BUCKETS)
		return bad("journal_nbuckets %llu is below the minimum %u", ull(jnr),
			   BFS_MIN_JOURNAL_BUCKETS);
	if (jstart < first || jstart + jnr > nbuckets)
		return bad("journal buckets %llu..%llu lie outside buckets %llu..%llu",
			   ull(jstart), ull(jstart + jnr - 1), ull(first), ull(nbuckets - 1));
	return 0;
}

static int validate_copies(const struct bfs_sb *sb, char *err)
{
	u64 bucket = le32_to_cpu(sb->bucket_size);
	u64 data_start = le64_to_cpu(sb->first_bucket) * bucket;
	u64 data_end = le64_to_cpu(sb->nbuckets) * bucket;
	u64 dev_size = le64_to_cpu(sb->dev_size);
	unsigned i, j;

	if (sb->nr_copies < 1 || sb->nr_copies > BFS_SB_MAX_COPIES)
		return bad("nr_copies %u is invalid (1 to %u)", sb->nr_copies, BFS_SB_MAX_COPIES);
	if (le64_to_cpu(sb->copy_offset[0]) != BFS_SB_OFFSET)
		return bad("copy_offset[0] %llu is not the primary location %u",
			   ull(le64_to_cpu(sb->copy_offset[0])), BFS_SB_OFFSET);
	for (i = 0; i < BFS_SB_MAX_COPIES; i++) {
		u64 off = le64_to_cpu(sb->copy_offset[i]);

		if (i >= sb->nr_copies) {
			if (off)
				return bad("copy_offset[%u] %llu set beyond nr_copies %u",
					   i, ull(off), sb->nr_copies);
			continue;
		}
		if (off % BFS_SB_IO_ALIGN || off + BFS_SB_REGION > dev_size)
			return bad("copy_offset[%u] %llu is misaligned or beyond the device",
				   i, ull(off));
		if (off < data_end && off + BFS_SB_REGION > data_start)
			return bad("copy_offset[%u] %llu overlaps the buckets", i, ull(off));
		for (j = 0; j < i; j++) {
			u64 other = le64_to_cpu(sb->copy_offset[j]);

			if (off < other + BFS_SB_REGION && other < off + BFS_SB_REGION)
				return bad("copy_offset[%u] %llu overlaps copy %u", i, ull(off), j);
		}
	}
	return 0;
}

static int validate_options(const struct bfs_sb_field *f, u64 off, char *err)
{
	const struct bfs_sb_options *o = (const void *)f->data;
	size_t bytes = (size_t)le32_to_cpu(f->u64s) * 8;
	unsigned i;

	if (bytes < sizeof(*f) + BFS_SB_OPTIONS_V1_BYTES)
		return bad("options section at byte %llu is too short (%u u64s)",
			   ull(off), le32_to_cpu(f->u64s));
	if (o->data_csum_set > 1)
		return bad("options: data_csum_set %u is not 0 or 1", o->data_csum_set);
	if (o->data_csum_type >= BFS_CSUM_NR || (!o->data_csum_set && o->data_csum_type))
		return bad("options: data_csum_type %u is invalid", o->data_csum_type);
	for (i = 0; i < sizeof(o->pad); i++)
		if (o->pad[i])
			return bad("options: padding byte %u is not zero", i);
	if (le32_to_cpu(o->commit_secs) > BFS_COMMIT_SECS_MAX)
		return bad("options: commit interval %u s is longer than %u s",
			   le32_to_cpu(o->commit_secs), BFS_COMMIT_SECS_MAX);
	if (o->pad2.v)
		return bad("options: padding word is not zero");
	for (i = 0; i < ARRAY_SIZE(o->reserved); i++)
		if (o->reserved[i].v)
			return bad("options: reserved word %u is not zero", i);
	if (bytes < sizeof(*f) + sizeof(*o))
		return 0;	/* written before errors and data_chunk_shift existed */
	if (o->errors >= BFS_ERRORS_NR)
		return bad("options: error behaviour %u is invalid", o->errors);
	if (o->data_chunk_shift && (o->data_chunk_shift < BFS_DATA_CHUNK_MIN_SHIFT ||
				    o->data_chunk_shift > BFS_DATA_CHUNK_MAX_SHIFT))
		return bad("options: data_chunk_shift %u is not 0 or %u to %u", o->data_chunk_shift,
			   BFS_DATA_CHUNK_MIN_SHIFT, BFS_DATA_CHUNK_MAX_SHIFT);
	for (i = 0; i < sizeof(o->pad3); i++)
		if (o->pad3[i])
			return bad("options: padding byte %u after data_chunk_shift is not zero", i);
	return 0;
}

static int validate_fields(const struct bfs_sb *sb, char *err)
{
	const u8 *p = (const u8 *)sb->fields;
	const u8 *end = (const u8 *)sb + le32_to_cpu(sb->bytes);
	u32 seen_types[64];
	unsigned nr_seen = 0, i;

	while (p < end) {
		const struct bfs_sb_field *f = (const void *)p;
		u64 off = (u64)(p - (const u8 *)sb);
		u32 u64s, type;

		if ((size_t)(end - p) < sizeof(*f))
			return bad("section at byte %llu is truncated", ull(off));
		u64s = le32_to_cpu(f->u64s);
		type = le32_to_cpu(f->type);
		if (!u64s || (u64)u64s * 8 > (u64)(end - p))
			return bad("section at byte %llu (type %u) has bad length %u u64s",
				   ull(off), type & ~BFS_SB_FIELD_REQUIRED, u64s);
		if ((type & BFS_SB_FIELD_REQUIRED) &&
		    (type & ~BFS_SB_FIELD_REQUIRED) != BFS_SB_FIELD_CLEAN)
			return sb_err(err, -EPROTONOSUPPORT,
				      "required section type %u is not supported",
				      type & ~BFS_SB_FIELD_REQUIRED);
		for (i = 0; i < nr_seen; i++)
			if (seen_types[i] == (type & ~BFS_SB_FIELD_REQUIRED))
				return bad("section type %u appears twice", type & ~BFS_SB_FIELD_REQUIRED);
		if (nr_seen == ARRAY_SIZE(seen_types))
			return bad("more than %zu sections", ARRAY_SIZE(seen_types));
		seen_types[nr_seen++] = type & ~BFS_SB_FIELD_REQUIRED;
		if ((type & ~BFS_SB_FIELD_REQUIRED) == BFS_SB_FIELD_OPTIONS) {
			int ret = validate_options(f, off, err);

			if (ret)
				return ret;
		}
		p += (size_t)u64s * 8;
	}
	return 0;
}

int bfs_sb_check_writable(const struct bfs_sb *sb, char *err)
{
	u64 unknown = le64_to_cpu(sb->ro_compat) & ~BFS_FEAT_RO_COMPAT_KNOWN;

	if (unknown)
		return sb_err(err, -EROFS, "unsupported ro_compat features 0x%llx: "
			      "read-only access only", ull(unknown));
	return 0;
}

int bfs_sb_validate(const struct bfs_sb *sb, size_t buf_bytes, u64 dev_size, char *err)
{
	unsigned i;
	int ret;

	ret = validate_header(sb, buf_bytes, err);
	if (!ret)
		ret = validate_sizes(sb, err);
	if (!ret)
		ret = validate_buckets(sb, dev_size, err);
	if (!ret)
		ret = validate_copies(sb, err);
	if (ret)
		return ret;
	for (i = 0; i < ARRAY_SIZE(sb->reserved); i++)
		if (sb->reserved[i].v)
			return bad("reserved word %u is not zero", i);
	return validate_fields(sb, err);
}
