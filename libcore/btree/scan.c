// SPDX-License-Identifier: MIT
/*
 * The btree node scan (see btree_scan.h).  Slots are read in batches of a
 * whole bucket where buckets are small, one node at a time otherwise; only a
 * slot whose first block carries the node magic is read in full, so the cost
 * is one header block per empty slot plus the nodes themselves.
 */
#include <bfs/btree.h>
#include <bfs/btree_scan.h>
#include <bfs/checksum.h>
#include <bfs/format.h>
#include <bfs/os.h>

void bfs_node_scan_geom_from_sb(const struct bfs_sb *sb, struct bfs_node_scan_geom *g)
{
	*g = (struct bfs_node_scan_geom){
		.block_size = le32_to_cpu(sb->block_size),
		.node_size = le32_to_cpu(sb->btree_node_size),
		.bucket_size = le32_to_cpu(sb->bucket_size),
		.first_bucket = le64_to_cpu(sb->first_bucket),
		.nbuckets = le64_to_cpu(sb->nbuckets),
		.journal_bucket = le64_to_cpu(sb->journal_bucket),
		.journal_nbuckets = le32_to_cpu(sb->journal_nbuckets),
		.csum_type = sb->csum_type,
		.node_id = bfs_sb_node_id(sb),
	};
}

struct examine {
	struct bfs_scanned_node *n;
};

static int examine_bset(void *ctx, const struct bfs_bset_info *b)
{
	struct bfs_scanned_node *n = ((struct examine *)ctx)->n;

	if (b->csum_checked && !b->csum_ok) {
		/* a bad bset ends what can be trusted: later ones were appended after it */
		n->nr_bad_bsets++;
		return 1;
	}
	n->nr_bsets++;
	n->written = b->offset + b->bytes;
	n->journal_seq = BFS_MAX(n->journal_seq, b->journal_seq);
	return 0;
}

void bfs_node_examine(const struct bfs_node_scan_geom *g, u64 offset, const void *buf,
		      struct bfs_scanned_node *n)
{
	const struct bfs_btree_node *h = buf;
	struct examine ex = { n };

	*n = (struct bfs_scanned_node){
		.offset = offset,
		.seq = le64_to_cpu(h->seq),
		.btree_id = h->btree_id,
		.level = h->level,
		.min_key = bfs_bpos_from_disk(&h->min_key),
		.max_key = bfs_bpos_from_disk(&h->max_key),
	};
	if (le64_to_cpu(h->magic) != BFS_BTREE_NODE_MAGIC)
		return;
	if (g->csum_type &&
	    le64_to_cpu(h->csum) != bfs_csum(g->csum_type, (const u8 *)buf + 16, sizeof(*h) - 16))
		return;
	if (h->btree_id >= BFS_BTREE_NR || h->level >= BFS_BTREE_MAX_DEPTH ||
	    bfs_bpos_cmp(n->min_key, n->max_key) > 0)
		return;
	if (g->node_id && le64_to_cpu(h->node_id) != g->node_id) {
		n->foreign = true;	/* never a source for this filesystem's trees */
		return;
	}
	n->header_ok = true;
	bfs_node_bsets_raw(buf, g->node_size, g->block_size, g->csum_type, examine_bset, &ex);
}

static bool in_journal(const struct bfs_node_scan_geom *g, u64 bucket)
{
	return bucket >= g->journal_bucket && bucket < g->journal_bucket + g->journal_nbuckets;
}

int bfs_node_scan(struct bfs_dev *dev, const struct bfs_node_scan_geom *g,
		  int (*fn)(void *ctx, const struct bfs_scanned_node *n, const void *buf),
		  void (*progress)(void *ctx, u64 done, u64 total), void *ctx,
		  u64 *read_errors)
{
	u64 per_bucket, total, done = 0, b, dev_size = bfs_dev_size(dev), next_data = 0;
	u8 *buf;
	int ret = 0;

	if (!g->node_size || !g->block_size || g->bucket_size < g->node_size ||
	    g->bucket_size % g->node_size || g->first_bucket > g->nbuckets)
		return -EINVAL;
	per_bucket = g->bucket_size / g->node_size;
	total = (g->nbuckets - g->first_bucket) * per_bucket;
	buf = bfs_aligned_alloc(4096, g->node_size);
	if (!buf)
		return -ENOMEM;
	if (read_errors)
		*read_errors = 0;
	for (b = g->first_bucket; b < g->nbuckets && !ret; b++) {
		u64 s;

		if (in_journal(g, b)) {
			done += per_bucket;
			continue;
		}
		for (s = 0; s < per_bucket && !ret; s++, done++) {
			u64 off = b * g->bucket_size + s * g->node_size;
			struct bfs_scanned_node n;

			if (progress && !(done & 255))
				progress(ctx, done, total);
			if (off + g->node_size > dev_size)
				break;
			/* a hole of a sparse image holds no node: jump over it */
			if (off >= next_data)
				next_data = bfs_dev_data_from(dev, off);
			if (next_data >= off + g->node_size) {
				u64 skip = BFS_MIN(next_data, (b + 1) * g->bucket_size);

				done += (skip - off) / g->node_size - 1;
				s += (skip - off) / g->node_size - 1;
				continue;
			}
			/* the magic is in the first block: read the rest only for a node */
			if (bfs_dev_read(dev, off, buf, g->block_size)) {
				if (read_errors)
					(*read_errors)++;
				continue;
			}
			if (le64_to_cpu(((struct bfs_btree_node *)buf)->magic) != BFS_BTREE_NODE_MAGIC)
				continue;
			if (bfs_dev_read(dev, off + g->block_size, buf + g->block_size,
					 g->node_size - g->block_size)) {
				if (read_errors)
					(*read_errors)++;
				continue;
			}
			bfs_node_examine(g, off, buf, &n);
			ret = fn(ctx, &n, buf);
		}
	}
	if (progress && !ret)
		progress(ctx, total, total);
	bfs_free(buf);
	return ret;
}
