// SPDX-License-Identifier: MIT
/*
 * Choosing the geometry of a new filesystem: block, bucket and btree node
 * sizes, where the superblock copies and the journal go.  Defaults scale with
 * the device; every explicit option is checked against the others so that
 * `bfs format` can refuse an impossible combination with a clear message.
 */
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdarg.h>
#include <stdio.h>

#define DEFAULT_BLOCK_SIZE	4096
#define DEFAULT_NODE_SIZE	(256 * KiB)
#define DEFAULT_BUCKET_MIN	(64 * KiB)
#define DEFAULT_BUCKET_MAX	(2 * MiB)
#define DEFAULT_JOURNAL_MIN	8
#define DEFAULT_JOURNAL_MAX	1024
#define JOURNAL_MAX_BYTES	(1 * GiB)

#define layout_err(err, ...) bfs_err_line((err), -EINVAL, __VA_ARGS__)

unsigned bfs_sb_copy_offsets(u64 dev_size, u64 offsets[BFS_SB_MAX_COPIES])
{
	unsigned nr = 0;

	offsets[nr++] = BFS_SB_OFFSET;
	offsets[nr++] = BFS_SB_BACKUP_OFFSET;
	if (dev_size >= BFS_SB_HEAD_RESERVE + 2 * BFS_SB_REGION)
		offsets[nr++] = BFS_ROUND_DOWN(dev_size, BFS_SB_REGION) - BFS_SB_REGION;
	return nr;
}

static int check_size(char *err, const char *what, u64 v, u64 min, u64 max)
{
	if (!bfs_is_pow2(v))
		return layout_err(err, "%s %llu is not a power of two", what,
				  (unsigned long long)v);
	if (v < min || v > max)
		return layout_err(err, "%s %llu is out of range (%llu to %llu)", what,
				  (unsigned long long)v, (unsigned long long)min,
				  (unsigned long long)max);
	return 0;
}

static int pick_sizes(const struct bfs_format_opts *o, u64 dev_size,
		      unsigned sector_size, u32 *block, u32 *node, u32 *bucket, char *err)
{
	int ret;

	*block = o->block_size ? o->block_size : BFS_MAX(DEFAULT_BLOCK_SIZE, sector_size);
	ret = check_size(err, "block size", *block, BFS_MIN_BLOCK_SIZE, BFS_MAX_BLOCK_SIZE);
	if (ret)
		return ret;
	if (*block < sector_size)
		return layout_err(err, "block size %u is smaller than the device's sector size %u",
				  *block, sector_size);

	if (o->bucket_size) {
		*bucket = o->bucket_size;
	} else {
		u64 b = bfs_rounddown_pow2(dev_size / 4096);

		b = BFS_MIN(BFS_MAX(b, DEFAULT_BUCKET_MIN), DEFAULT_BUCKET_MAX);
		b = BFS_MAX(b, o->btree_node_size);
		b = BFS_MAX(b, *block);
		*bucket = (u32)b;
	}
	ret = check_size(err, "bucket size", *bucket, BFS_MIN_BUCKET_SIZE, BFS_MAX_BUCKET_SIZE);
	if (ret)
		return ret;

	*node = o->btree_node_size ? o->btree_node_size : BFS_MIN(DEFAULT_NODE_SIZE, *bucket);
	*node = BFS_MAX(*node, BFS_MIN_BTREE_NODE_SIZE);
	*node = o->btree_node_size ? *node : BFS_MAX(*node, *block);
	ret = check_size(err, "btree node size", *node, BFS_MIN_BTREE_NODE_SIZE,
			 BFS_MAX_BTREE_NODE_SIZE);
	if (ret)
		return ret;
	if (*bucket < *block)
		return layout_err(err, "bucket size %u is smaller than the block size %u",
				  *bucket, *block);
	if (*node < *block)
		return layout_err(err, "btree node size %u is smaller than the block size %u",
				  *node, *block);
	if (*node > *bucket)
		return layout_err(err, "btree node size %u is larger than the bucket size %u",
				  *node, *bucket);
	return 0;
}

static int pick_journal(const struct bfs_format_opts *o, u64 usable, u32 bucket,
			u32 *nr, char *err)
{
	u64 j;

	if (o->journal_nbuckets) {
		j = o->journal_nbuckets;
		if (j < BFS_MIN_JOURNAL_BUCKETS)
			return layout_err(err, "journal of %llu buckets is too small (at least %u)",
					  (unsigned long long)j, BFS_MIN_JOURNAL_BUCKETS);
	} else {
		j = usable >> 6;
		j = BFS_MAX(j, DEFAULT_JOURNAL_MIN);
		j = BFS_MIN(j, DEFAULT_JOURNAL_MAX);
		j = BFS_MIN(j, BFS_MAX(JOURNAL_MAX_BYTES / bucket, BFS_MIN_JOURNAL_BUCKETS));
		/* never let the journal eat more than a quarter of a small device */
		j = BFS_MIN(j, BFS_MAX(usable / 4, BFS_MIN_JOURNAL_BUCKETS));
	}
	if (usable < j + BFS_MIN_FREE_BUCKETS)
		return layout_err(err, "device too small for bucket size %u: %llu usable buckets, "
				  "need %llu for the journal and %u more",
				  bucket, (unsigned long long)usable,
				  (unsigned long long)j, BFS_MIN_FREE_BUCKETS);
	*nr = (u32)j;
	return 0;
}

static int pick_compression(const struct bfs_format_opts *o, struct bfs_sb *sb, char *err)
{
	unsigned level = o->compression_level;

	if (o->compression_type >= BFS_COMPRESSION_NR)
		return layout_err(err, "unknown compression type %u", o->compression_type);
	if (o->compression_type == BFS_COMPRESSION_NONE) {
		if (level)
			return layout_err(err, "a compression level needs a compression type");
	} else {
		if (!level)
			level = BFS_ZSTD_LEVEL_DEFAULT;
		if (level < BFS_ZSTD_LEVEL_MIN || level > BFS_ZSTD_LEVEL_MAX)
			return layout_err(err, "zstd level %u is out of range (%u to %u)", level,
					  BFS_ZSTD_LEVEL_MIN, BFS_ZSTD_LEVEL_MAX);
		sb->incompat = cpu_to_le64(le64_to_cpu(sb->incompat) | BFS_FEAT_INCOMPAT_ZSTD);
	}
	sb->compression_type = o->compression_type;
	sb->compression_level = (u8)level;
	return 0;
}

static int pick_identity(const struct bfs_format_opts *o, struct bfs_sb *sb, char *err)
{
	u64 seed;
	int ret;

	if (o->label) {
		size_t len = strlen(o->label);

		if (len > BFS_LABEL_SIZE)
			return layout_err(err, "label '%s' is %zu bytes long, at most %u allowed",
					  o->label, len, BFS_LABEL_SIZE);
		memcpy(sb->label, o->label, len);
	}
	if (o->have_uuid) {
		memcpy(sb->uuid, o->uuid, sizeof(sb->uuid));
	} else {
		ret = bfs_random_bytes(sb->uuid, sizeof(sb->uuid));
		if (ret)
			return layout_err(err, "cannot get random bytes for the uuid: %s",
					  strerror(-ret));
		sb->uuid[6] = (sb->uuid[6] & 0x0f) | 0x40;	/* version 4 */
		sb->uuid[8] = (sb->uuid[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	}
	ret = bfs_random_bytes(&seed, sizeof(seed));
	if (ret)
		return layout_err(err, "cannot get random bytes for the hash seed: %s",
				  strerror(-ret));
	sb->hash_seed = cpu_to_le64(seed);
	sb->compat = cpu_to_le64(le64_to_cpu(sb->compat) | BFS_FEAT_COMPAT_NODE_ID);
	return 0;
}

int bfs_sb_layout(const struct bfs_format_opts *o, u64 dev_size, unsigned sector_size,
		  struct bfs_sb *sb, char *err)
{
	u64 offsets[BFS_SB_MAX_COPIES], first, nbuckets, end;
	u32 block = 0, node = 0, bucket = 0, journal = 0;
	unsigned nr, i;
	int ret;

	memset(sb, 0, BFS_SB_MAX_BYTES);
	if (dev_size < BFS_MIN_DEV_SIZE)
		return layout_err(err, "device of %llu bytes is too small, bfs needs at least %llu",
				  (unsigned long long)dev_size,
				  (unsigned long long)BFS_MIN_DEV_SIZE);
	if (!sector_size)
		sector_size = 512;

	ret = pick_sizes(o, dev_size, sector_size, &block, &node, &bucket, err);
	if (ret)
		return ret;

	nr = bfs_sb_copy_offsets(dev_size, offsets);
	end = offsets[nr - 1];
	first = BFS_DIV_ROUND_UP(BFS_SB_HEAD_RESERVE, bucket);
	nbuckets = end / bucket;
	if (nbuckets <= first)
		return layout_err(err, "bucket size %u leaves no buckets on a %llu byte device",
				  bucket, (unsigned long long)dev_size);
	ret = pick_journal(o, nbuckets - first, bucket, &journal, err);
	if (ret)
		return ret;

	sb->magic = cpu_to_le64(BFS_SB_MAGIC);
	sb->bytes = cpu_to_le32(sizeof(*sb));
	sb->version = cpu_to_le16(BFS_VERSION_CURRENT);
	sb->version_min = cpu_to_le16(BFS_VERSION_MIN);
	sb->time_created = cpu_to_le64(bfs_realtime_ns());
	sb->dev_size = cpu_to_le64(dev_size);
	sb->block_size = cpu_to_le32(block);
	sb->btree_node_size = cpu_to_le32(node);
	sb->bucket_size = cpu_to_le32(bucket);
	sb->nbuckets = cpu_to_le64(nbuckets);
	sb->first_bucket = cpu_to_le64(first);
	sb->journal_bucket = cpu_to_le64(first);
	sb->journal_nbuckets = cpu_to_le32(journal);
	sb->csum_type = o->csum_set ? o->csum_type : BFS_CSUM_XXH3;
	if (sb->csum_type >= BFS_CSUM_NR)
		return layout_err(err, "unknown checksum type %u", sb->csum_type);
	sb->nr_copies = (u8)nr;
	for (i = 0; i < nr; i++)
		sb->copy_offset[i] = cpu_to_le64(offsets[i]);

	ret = pick_compression(o, sb, err);
	if (!ret)
		ret = bfs_sb_set_data_chunk(sb, o->data_chunk ? o->data_chunk :
					    bfs_data_chunk_default(sb), err);
	if (ret)
		return ret;
	ret = pick_identity(o, sb, err);
	if (ret || !o->errors_set)
		return ret;
	return bfs_sb_set_errors(sb, o->errors, err);
}
