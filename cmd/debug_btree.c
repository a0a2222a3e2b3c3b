// SPDX-License-Identifier: MIT
/*
 * bfs debug: the btree commands.  Keys are printed with bfs_bkey_to_text()
 * (the per-type hooks the layers register), nodes are checked with
 * bfs_btree_node_check() and found with bfs_btree_walk(): nothing here
 * decodes node contents by itself.
 */
#include "cmd.h"
#include "debug.h"

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <inttypes.h>
#include <string.h>

#define KEY_TEXT 4096

static void print_key(const char *indent, const struct bfs_bkey *k)
{
	char buf[KEY_TEXT];

	bfs_bkey_to_text(buf, sizeof(buf), k);
	printf("%s%s\n", indent, buf);
}

#define pos_text dbg_pos_text

/* ---- btrees, stats ---- */

struct root_info {
	bool	seen;
	struct bfs_btree_node_info ni;
};

static int root_cb(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct root_info *r = ctx;

	if (!r->seen) {
		r->ni = *ni;
		r->seen = true;
	}
	return 1;	/* the root comes first: stop there */
}

int dbg_cmd_btrees(struct dbg *d, int argc, char **argv)
{
	unsigned id;
	int failed = 0;

	printf("%-8s %12s %5s %6s %8s %10s %s\n", "btree", "root", "depth", "nodes", "keys",
	       "key bytes", "damaged");
	for (id = 0; id < BFS_BTREE_NR; id++) {
		struct bfs_btree_stats s;
		struct root_info r = { 0 };
		u64 nodes = 0;
		unsigned l;
		int ret;

		bfs_btree_walk(d->core, id, root_cb, NULL, &r);
		ret = bfs_btree_get_stats(d->core, id, &s);
		if (ret) {
			failed = dbg_err(d, "btree %s: %s", bfs_btree_id_name(id), strerror(-ret));
			continue;
		}
		for (l = 0; l < BFS_BTREE_MAX_DEPTH; l++)
			nodes += s.nodes[l];
		printf("%-8s %12" PRIu64 " %5u %6" PRIu64 " %8" PRIu64 " %10" PRIu64 " %s\n",
		       bfs_btree_id_name(id), r.ni.offset, s.depth, nodes, s.keys, s.key_bytes,
		       r.ni.status ? r.ni.err : "-");
	}
	return failed;
}

/* buckets per data type, from the alloc keys (the data allocator's records) */
static void data_type_stats(struct dbg *d, u64 bucket_size)
{
	static const char *const names[BFS_BUCKET_TYPE_NR] = { "free", "user" };
	u64 buckets[BFS_BUCKET_TYPE_NR + 1] = { 0 }, live[BFS_BUCKET_TYPE_NR + 1] = { 0 };
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	char h[32];
	unsigned t;
	int ret;

	bfs_btree_iter_init(&it, d->core, BFS_BTREE_ALLOC, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_alloc_v *a = bfs_bkey_val(k);

		if (k->type != BFS_KEY_ALLOC || bfs_bkey_val_u64s(k) < BFS_ALLOC_VAL_U64S)
			continue;
		t = a->data_type < BFS_BUCKET_TYPE_NR ? a->data_type : BFS_BUCKET_TYPE_NR;
		buckets[t]++;
		live[t] += le64_to_cpu(a->live_sectors);
	}
	bfs_btree_iter_exit(&it);
	if (ret)	/* the counts below are then of the keys before the damage */
		printf("%-22s reading stopped: %s\n", "alloc keys:", strerror(-ret));
	for (t = 0; t <= BFS_BUCKET_TYPE_NR; t++) {
		if (!buckets[t])
			continue;
		printf("%-22s %" PRIu64 " bucket%s (%s), %" PRIu64 " live sectors\n",
		       t < BFS_BUCKET_TYPE_NR ? names[t] : "unknown type", buckets[t],
		       buckets[t] == 1 ? "" : "s", bfs_human_size(buckets[t] * bucket_size, h), live[t]);
	}
}

int dbg_cmd_stats(struct dbg *d, int argc, char **argv)
{
	const struct bfs_sb *sb = bfs_core_sb(d->core);
	u64 bucket = le32_to_cpu(sb->bucket_size), node = le32_to_cpu(sb->btree_node_size);
	u64 total_nodes = 0, total_keys = 0;
	struct bfs_core_stats cs;
	char h1[32], h2[32];
	unsigned id;

	printf("%-10s %8s %10s %12s %12s\n", "btree", "nodes", "keys", "key bytes", "node bytes");
	for (id = 0; id < BFS_BTREE_NR; id++) {
		struct bfs_btree_stats s;
		u64 nodes = 0;
		unsigned l;

		if (bfs_btree_get_stats(d->core, id, &s))
			continue;
		for (l = 0; l < BFS_BTREE_MAX_DEPTH; l++)
			nodes += s.nodes[l];
		total_nodes += nodes;
		total_keys += s.keys;
		printf("%-10s %8" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
		       bfs_btree_id_name(id), nodes, s.keys, s.key_bytes, s.node_bytes);
	}
	printf("%-10s %8" PRIu64 " %10" PRIu64 " %12s %12" PRIu64 "\n", "total", total_nodes,
	       total_keys, "", total_nodes * node);

	bfs_core_get_stats(d->core, &cs);
	printf("\n%-22s %s\n", "bucket size:", bfs_human_size(bucket, h1));
	printf("%-22s %" PRIu64 " (%s)\n", "usable buckets:",
	       le64_to_cpu(sb->nbuckets) - le64_to_cpu(sb->first_bucket),
	       bfs_human_size((le64_to_cpu(sb->nbuckets) - le64_to_cpu(sb->first_bucket)) * bucket, h2));
	printf("%-22s %u buckets (%s)\n", "journal:", le32_to_cpu(sb->journal_nbuckets),
	       bfs_human_size(le32_to_cpu(sb->journal_nbuckets) * bucket, h1));
	printf("%-22s %" PRIu64 " of %" PRIu64 " node slots used (%s)\n", "btree metadata:",
	       cs.meta_slots_used, cs.meta_slots_total, bfs_human_size(cs.meta_slots_used * node, h1));
	printf("\nbuckets with alloc keys, by data type:\n");
	data_type_stats(d, bucket);
	if (d->fs) {
		struct bfs_statfs st;

		if (!bfs_fs_statfs(d->fs, &st)) {
			printf("\n%-22s %" PRIu64 " of %" PRIu64 " blocks used (%s of %s)\n", "statfs:",
			       st.blocks - st.bfree, st.blocks,
			       bfs_human_size((st.blocks - st.bfree) * st.bsize, h1),
			       bfs_human_size(st.blocks * st.bsize, h2));
			printf("%-22s %" PRIu64 " used, %" PRIu64 " free\n", "inodes:",
			       st.files - st.ffree, st.ffree);
		}
	}
	return 0;
}

/* ---- keys, find ---- */

int dbg_cmd_keys(struct dbg *d, int argc, char **argv)
{
	struct bfs_bpos start = BFS_POS_MIN, end = BFS_POS_MAX;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int id = dbg_parse_btree(argv[1]), ret;
	u64 n = 0;

	if (id < 0)
		return dbg_err(d, "unknown btree '%s'", argv[1]);
	if (argc > 2 && dbg_parse_pos(argv[2], &start))
		return dbg_err(d, "bad position '%s' (INODE:OFFSET[:SNAPSHOT], min, max)", argv[2]);
	if (argc > 3 && dbg_parse_pos(argv[3], &end))
		return dbg_err(d, "bad position '%s' (INODE:OFFSET[:SNAPSHOT], min, max)", argv[3]);

	bfs_btree_iter_init(&it, d->core, (enum bfs_btree_id)id, start, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		if (bfs_bkey_cmp_pos(k, end) > 0)
			break;
		if (bfs_bkey_cmp_pos(k, start) < 0)
			continue;	/* an extent reaching into the range from before */
		print_key("", k);
		n++;
	}
	bfs_btree_iter_exit(&it);
	if (ret)
		return dbg_err(d, "reading btree %s failed: %s", argv[1], strerror(-ret));
	printf("%" PRIu64 " key%s\n", n, n == 1 ? "" : "s");
	return 0;
}

struct find_ctx {
	struct bfs_bpos pos;
	int root_level;
};

static int find_node_cb(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct find_ctx *f = ctx;
	char a[64], b[64];

	if (bfs_bpos_cmp(f->pos, ni->min_key) < 0 || bfs_bpos_cmp(f->pos, ni->max_key) > 0)
		return 0;
	if (f->root_level < 0)
		f->root_level = ni->level;
	printf("%*slevel %u node at %" PRIu64 "  %s .. %s  %s%s\n", 2 * (f->root_level - ni->level),
	       "", ni->level, ni->offset, pos_text(ni->min_key, a), pos_text(ni->max_key, b),
	       ni->status ? "DAMAGED: " : "[ok]", ni->status ? ni->err : "");
	return 0;
}

int dbg_cmd_find(struct dbg *d, int argc, char **argv)
{
	struct find_ctx f = { .root_level = -1 };
	u64 buf[BFS_BKEY_VAL_MAX_BYTES / 8 + BFS_BKEY_U64S];
	int id = dbg_parse_btree(argv[2]), ret;

	if (dbg_parse_pos(argv[1], &f.pos))
		return dbg_err(d, "bad position '%s' (INODE:OFFSET[:SNAPSHOT], min, max)", argv[1]);
	if (id < 0)
		return dbg_err(d, "unknown btree '%s'", argv[2]);
	ret = bfs_btree_lookup(d->core, (enum bfs_btree_id)id, f.pos, buf, sizeof(buf));
	if (!ret) {
		struct bfs_bkey *k = (void *)buf;

		/* extents: the node path leads to the key's position, its end */
		print_key("key: ", k);
		f.pos = bfs_bkey_pos(k);
	} else if (ret == -ENOENT) {
		printf("no key at %s in btree %s\n", argv[1], bfs_btree_id_name((unsigned)id));
	} else {
		dbg_err(d, "lookup failed: %s", strerror(-ret));	/* the path shows where */
	}
	printf("path:\n");
	bfs_btree_walk(d->core, (enum bfs_btree_id)id, find_node_cb, NULL, &f);
	return ret ? DBG_FAIL : 0;
}

/* ---- node ---- */

struct node_ctx {
	u64	offset;
	bool	found;
	u64	keys;
};

static int node_find_cb(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct node_ctx *n = ctx;
	char a[64], b[64];

	if (ni->offset != n->offset)
		return 0;
	n->found = true;
	printf("in btree:     yes, level %u, range %s .. %s\n", ni->level, pos_text(ni->min_key, a),
	       pos_text(ni->max_key, b));
	if (ni->status) {
		printf("read:         FAILED: %s\n", ni->err);
		return 0;
	}
	printf("bsets:        %u, %u of %u bytes written%s\n", ni->nr_bsets, ni->written,
	       ni->node_size, ni->dirty ? " (dirty in memory)" : "");
	printf("live keys:    %u (%" PRIu64 " bytes)\n", ni->nr_keys, ni->live_bytes);
	return 0;
}

static int node_key_cb(void *ctx, const struct bfs_btree_node_info *ni, const struct bfs_bkey *k)
{
	struct node_ctx *n = ctx;

	if (ni->offset != n->offset)
		return 0;
	print_key("  ", k);
	n->keys++;
	return 0;
}

static int node_bset_cb(void *ctx, const struct bfs_bset_info *b)
{
	printf("  bset %u at +%u: %u bytes, %u keys, journal seq %" PRIu64 ", checksum %s\n",
	       b->index, b->offset, b->bytes, b->nr_keys, b->journal_seq,
	       !b->csum_checked ? "none" : b->csum_ok ? "[match]" : "[MISMATCH]");
	return 0;
}

int dbg_cmd_node(struct dbg *d, int argc, char **argv)
{
	const struct bfs_sb *sb = bfs_core_sb(d->core);
	u32 size = le32_to_cpu(sb->btree_node_size);
	struct node_ctx n = { 0 };
	const struct bfs_btree_node *h;
	char err[BFS_ERR_LEN], a[64], b[64];
	void *buf;
	int ret;

	if (dbg_parse_u64(argv[1], &n.offset))
		return dbg_err(d, "bad address '%s'", argv[1]);
	if (n.offset % size)
		return dbg_err(d, "%" PRIu64 " is not a multiple of the node size %u", n.offset, size);
	buf = bfs_aligned_alloc(4096, size);
	if (!buf)
		return dbg_err(d, "out of memory");
	ret = bfs_dev_read(d->dev, n.offset, buf, size);
	if (ret) {
		bfs_free(buf);
		return dbg_err(d, "cannot read %u bytes at %" PRIu64 ": %s", size, n.offset,
			       strerror(-ret));
	}
	h = buf;
	printf("node at %" PRIu64 " (%u bytes)\n", n.offset, size);
	printf("magic:        0x%016" PRIx64 " %s\n", le64_to_cpu(h->magic),
	       le64_to_cpu(h->magic) == BFS_BTREE_NODE_MAGIC ? "[ok]" : "[not a btree node]");
	printf("seq:          %016" PRIx64 "\n", le64_to_cpu(h->seq));
	printf("btree:        %s (%u)\n", h->btree_id < BFS_BTREE_NR ?
	       bfs_btree_id_name(h->btree_id) : "unknown", h->btree_id);
	printf("level:        %u\n", h->level);
	printf("range:        %s .. %s\n", pos_text(bfs_bpos_from_disk(&h->min_key), a),
	       pos_text(bfs_bpos_from_disk(&h->max_key), b));
	/* the checks every read does: checksums, key order, ranges, pointers */
	ret = bfs_btree_node_check(d->core, buf, n.offset, NULL, err);
	printf("check:        %s\n", ret ? err : "ok (checksums and contents)");
	if (le64_to_cpu(h->magic) == BFS_BTREE_NODE_MAGIC) {
		printf("key sets on disk:\n");
		bfs_btree_node_bsets(d->core, buf, node_bset_cb, NULL);
	}
	if (h->btree_id < BFS_BTREE_NR)
		bfs_btree_walk(d->core, h->btree_id, node_find_cb, node_key_cb, &n);
	if (!n.found)
		printf("in btree:     no (not reachable from the root: free, stale or another btree's)\n");
	bfs_free(buf);
	return ret ? DBG_FAIL : 0;
}

/* ---- bucket ---- */

struct bucket_ctx {
	u64	start, end;
	u64	nodes;
};

static int bucket_node_cb(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct bucket_ctx *b = ctx;

	if (ni->offset < b->start || ni->offset >= b->end)
		return 0;
	printf("  node at %" PRIu64 " (+%" PRIu64 "): btree %s level %u%s%s\n", ni->offset,
	       ni->offset - b->start, bfs_btree_id_name(ni->btree_id), ni->level,
	       ni->status ? " DAMAGED: " : "", ni->status ? ni->err : "");
	b->nodes++;
	return 0;
}

int dbg_cmd_bucket(struct dbg *d, int argc, char **argv)
{
	const struct bfs_sb *sb = bfs_core_sb(d->core);
	u64 bsize = le32_to_cpu(sb->bucket_size), node = le32_to_cpu(sb->btree_node_size);
	u64 first = le64_to_cpu(sb->first_bucket), nb = le64_to_cpu(sb->nbuckets);
	u64 jb = le64_to_cpu(sb->journal_bucket), jn = le32_to_cpu(sb->journal_nbuckets);
	struct bucket_ctx b = { 0 };
	u64 buf[BFS_BKEY_U64S + 16];
	unsigned id;
	u64 n;
	int ret;

	if (dbg_parse_u64(argv[1], &n))
		return dbg_err(d, "bad bucket number '%s'", argv[1]);
	if (n >= nb)
		return dbg_err(d, "bucket %" PRIu64 " is beyond the last bucket %" PRIu64, n, nb - 1);
	b.start = n * bsize;
	b.end = b.start + bsize;
	printf("bucket %" PRIu64 ": bytes %" PRIu64 " .. %" PRIu64 "\n", n, b.start, b.end - 1);
	if (n < first) {
		printf("use: reserved (before the first bucket %" PRIu64 ": superblock area)\n", first);
		return 0;
	}
	if (n >= jb && n < jb + jn) {
		printf("use: journal, bucket %" PRIu64 " of %" PRIu64 " of the ring\n", n - jb, jn);
		return 0;
	}
	/* what the metadata allocator rebuilds at open: the nodes reachable from the roots */
	for (id = 0; id < BFS_BTREE_NR; id++)
		bfs_btree_walk(d->core, id, bucket_node_cb, NULL, &b);
	printf("btree nodes: %" PRIu64 " of %" PRIu64 " node slots\n", b.nodes, bsize / node);

	/* the data allocator's record of the bucket: alloc key at (bucket, 0, 0) */
	ret = bfs_btree_lookup(d->core, BFS_BTREE_ALLOC, BFS_POS(n, 0, 0), buf, sizeof(buf));
	if (!ret)
		print_key("alloc key: ", (const struct bfs_bkey *)buf);
	else if (ret == -ENOENT)
		printf("alloc key: none (never held file data)\n");
	else
		printf("alloc key: cannot read the alloc btree: %s\n", strerror(-ret));
	return 0;
}
