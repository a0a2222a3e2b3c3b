// SPDX-License-Identifier: MIT
/*
 * The bfs layout around the source: which buckets its used blocks occupy
 * (they stay where they are and become data buckets), where the journal
 * goes (a run of buckets ext does not use), what must be copied (used
 * blocks below the first bucket or above the last), and whether it fits.
 */
#include "migrate.h"
#include "output.h"

#include <bfs/format.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void set_busy(struct mig *m, u64 b)
{
	if (!(m->busy[b / 64] & (UINT64_C(1) << (b % 64)))) {
		m->busy[b / 64] |= UINT64_C(1) << (b % 64);
		m->nr_busy++;
	}
}

static bool busy(const struct mig *m, u64 b)
{
	return m->busy[b / 64] & (UINT64_C(1) << (b % 64));
}

bool mig_in_buckets(const struct mig *m, u64 off)
{
	return off >= m->head_end && off < m->tail_start;
}

u64 mig_region_end(const struct mig *m, u64 off)
{
	if (off < m->head_end)
		return m->head_end;
	if (off < m->tail_start)
		return m->tail_start;
	return UINT64_MAX;
}

struct used_acc {
	u64	copied;		/* used bytes outside the bucket area */
};

static int mark_run(struct mig *m, u64 start, u64 len, void *ctx)
{
	struct used_acc *acc = ctx;
	u64 s = start * m->bs, e = (start + len) * m->bs, b;

	m->used_bytes += e - s;
	for (b = s / m->bucket; b * m->bucket < e; b++) {
		u64 bs = BFS_MAX(s, b * m->bucket), be = BFS_MIN(e, (b + 1) * m->bucket);

		if (b >= m->first_bucket && b < m->nbuckets)
			set_busy(m, b);
		else
			acc->copied += be - bs;
	}
	return 0;
}

/* is any used ext block inside device bytes [off, off + len)? */
static bool ext_uses(struct mig *m, u64 off, u64 len)
{
	blk64_t s = off / m->bs, e = BFS_DIV_ROUND_UP(off + len, m->bs), n;

	if (s >= ext2fs_blocks_count(m->ext->super))
		return false;
	n = BFS_MIN(e, ext2fs_blocks_count(m->ext->super)) - s;
	return !ext2fs_test_block_bitmap_range2(m->ext->block_map, s, (unsigned)n);
}

/* the first run of free buckets long enough for @want, else the longest */
static void find_journal(struct mig *m, u64 want, u64 *start, u64 *len)
{
	u64 b, run = 0, best = 0, best_start = 0;

	for (b = m->first_bucket; b <= m->nbuckets; b++) {
		if (b < m->nbuckets && !busy(m, b)) {
			run++;
			if (run >= want) {
				*start = b + 1 - run;
				*len = want;
				return;
			}
			continue;
		}
		if (run > best) {
			best = run;
			best_start = b - run;
		}
		run = 0;
	}
	*start = best_start;
	*len = best;
}

static u64 pick_bucket(u64 dev_size, u32 bs)
{
	u64 b = bfs_rounddown_pow2(dev_size / 65536);

	/* small buckets waste less where ext data and free space share one */
	b = BFS_MAX(b, 64 * KiB);
	b = BFS_MIN(b, 1 * MiB);
	return BFS_MAX(b, (u64)bs);
}

int mig_plan(struct mig *m)
{
	struct bfs_format_opts o = { 0 };
	char err[BFS_ERR_LEN] = "", h1[32], h2[32];
	struct used_acc acc = { 0 };
	u64 jstart, jlen, need, last;
	int ret;

	m->dev_size = bfs_dev_size(m->dev);
	if (m->dev_size < m->ext_bytes)
		return mig_error(m, "the device (%s) is smaller than the ext filesystem on it (%s)",
				 bfs_human_size(m->dev_size, h1), bfs_human_size(m->ext_bytes, h2));
	if (m->bs < bfs_dev_sector_size(m->dev))
		return mig_error(m, "ext blocks of %u bytes are smaller than the device's sectors",
				 m->bs);
	m->bucket = pick_bucket(m->dev_size, m->bs);
	o.block_size = m->bs;
	o.bucket_size = (u32)m->bucket;
	o.btree_node_size = (u32)BFS_MIN(m->bucket, 256 * KiB);
	o.label = m->ext->super->s_volume_name[0] ? (const char *)m->ext->super->s_volume_name
						   : NULL;
	if (o.label && strnlen(o.label, sizeof(m->ext->super->s_volume_name)) ==
		       sizeof(m->ext->super->s_volume_name))
		o.label = NULL;	/* not NUL-terminated: leave it out rather than guess */
	o.have_uuid = true;
	memcpy(o.uuid, m->ext->super->s_uuid, 16);
	m->sb = calloc(1, BFS_SB_MAX_BYTES);
	if (!m->sb)
		return mig_error(m, "out of memory");
	ret = bfs_sb_layout(&o, m->dev_size, bfs_dev_sector_size(m->dev), m->sb, err);
	if (ret)
		return mig_error(m, "no bfs layout fits this device: %s", err);
	m->first_bucket = le64_to_cpu(m->sb->first_bucket);
	m->nbuckets = le64_to_cpu(m->sb->nbuckets);
	m->head_end = m->first_bucket * m->bucket;
	m->tail_start = m->nbuckets * m->bucket;
	m->nr_sb = bfs_sb_copy_offsets(m->dev_size, m->sb_offs);
	m->busy = calloc(BFS_DIV_ROUND_UP(m->nbuckets, 64), sizeof(u64));
	if (!m->busy)
		return mig_error(m, "out of memory");
	ret = mig_ext_used_runs(m, mark_run, &acc);
	if (ret)
		return ret;

	/*
	 * The end copy is the commit point: it is written first, and must land
	 * on space ext does not use, so a torn write there harms nothing.
	 */
	last = m->sb_offs[m->nr_sb - 1];
	if (m->nr_sb < 3 || ext_uses(m, last, BFS_SB_REGION))
		return mig_error(m, "ext uses the last 64 KiB of the device, where bfs keeps a "
				 "superblock copy; shrink the filesystem a little (resize2fs) first");

	find_journal(m, le32_to_cpu(m->sb->journal_nbuckets), &jstart, &jlen);
	if (jlen < BFS_MIN_JOURNAL_BUCKETS)
		return mig_error(m, "not enough free space: the journal needs %u free %s buckets "
				 "in a row and the longest run is %llu", BFS_MIN_JOURNAL_BUCKETS,
				 bfs_human_size(m->bucket, h1), (unsigned long long)jlen);
	m->sb->journal_bucket = cpu_to_le64(jstart);
	m->sb->journal_nbuckets = cpu_to_le32((u32)jlen);
	m->nr_free = m->nbuckets - m->first_bucket - m->nr_busy - jlen;

	/*
	 * What bfs needs besides the journal: btree nodes (inodes, names,
	 * extents; a generous 1 KiB per inode and 64 bytes per chunk, doubled
	 * for copy-on-write), the copies, and the metadata reserve.
	 */
	need = m->nr_inodes * 1024 + (m->used_bytes / (64 * KiB) + 1) * 64 * 2 + acc.copied;
	need += (m->nbuckets - m->first_bucket) * m->bucket / 64 + 32 * m->bucket;
	if (m->nr_free * m->bucket < need)
		return mig_error(m, "not enough free space: bfs needs about %s besides its journal "
				 "and the source leaves %s in whole free buckets",
				 bfs_human_size(need, h1), bfs_human_size(m->nr_free * m->bucket, h2));
	return 0;
}

void mig_plan_print(struct mig *m, bool json)
{
	struct ext2_super_block *s = m->ext->super;
	const char *kind = ext2fs_has_feature_journal(s) ?
		(ext2fs_has_feature_extents(s) || ext2fs_has_feature_flex_bg(s) ? "ext4" : "ext3")
		: (ext2fs_has_feature_extents(s) ? "ext4" : "ext2");
	struct bfs_out o = { 0 };

	out_object(&o, "source", "Source");
	out_str(&o, "type", "Type", "%s", kind);
	out_size(&o, "size", "Size", m->ext_bytes);
	out_size(&o, "block_size", "Block size", m->bs);
	out_size(&o, "used", "Used", m->used_bytes);
	out_u64(&o, "inodes", "Inodes", m->nr_inodes);
	out_u64(&o, "directories", "Directories", m->nr_dirs);
	out_u64(&o, "regular_files", "Regular files", m->nr_regs);
	out_size(&o, "file_data", "File data", m->data_bytes);
	out_u64(&o, "other_files", "Other files", m->nr_others);
	out_u64(&o, "extra_hard_links", "Extra hard links", m->nr_links);
	out_u64(&o, "inline_data_files", "Inline-data files", m->nr_inline);
	out_end(&o);
	out_object(&o, "bfs", "bfs layout");
	out_size(&o, "device_size", "Device size", m->dev_size);
	out_size(&o, "bucket_size", "Bucket size", m->bucket);
	out_size(&o, "btree_node_size", "Btree node size", le32_to_cpu(m->sb->btree_node_size));
	out_u64(&o, "first_bucket", "First bucket", m->first_bucket);
	out_u64(&o, "nbuckets", "Buckets", m->nbuckets);
	out_u64(&o, "journal_bucket", "Journal bucket", le64_to_cpu(m->sb->journal_bucket));
	out_u64(&o, "journal_nbuckets", "Journal buckets", le32_to_cpu(m->sb->journal_nbuckets));
	out_u64(&o, "ext_buckets", "Buckets kept for ext", m->nr_busy);
	out_note(&o, "(its blocks stay where they are)");
	out_u64(&o, "free_buckets", "Free buckets", m->nr_free);
	out_size(&o, "copied_below", "Copied below", m->head_end);
	out_note(&o, "(used ext blocks in the superblock areas are copied)");
	out_size(&o, "copied_from", "Copied from", m->tail_start);
	out_end(&o);
	out_str(&o, "saved_image", "Saved image", "/%s/%s", MIG_SAVED_DIR, MIG_SAVED_IMAGE);
	out_bool(&o, "data_copied", "Data copied", false);
	out_note(&o, "(extents point at the ext blocks, checksummed as they are made)");
	out_print(&o, stdout, json);
	out_free(&o);
}
