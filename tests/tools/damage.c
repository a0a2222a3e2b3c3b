// SPDX-License-Identifier: MIT
/*
 * bfs-damage: a seeded damage generator over a bfs image, for the fsck
 * convergence harness (tests/damage/converge.sh).
 *
 * usage: bfs-damage [--seed N] [--count N] MODE IMAGE
 *        bfs-damage --list
 *        bfs-damage --inventory IMAGE
 *
 * It first finds what the image uses, through libcore: the superblock
 * copies, every valid journal entry (bfs_journal_walk), every btree node
 * reachable from the roots (bfs_btree_walk, after the journal is replayed in
 * memory), the data chunks the extent keys point to, and node-sized slots
 * that still hold an older node nothing points to any more.  Then it makes
 * --count mutations (default 1) of the kind MODE names:
 *
 *   random   bit flips, byte sets and zeroed blocks anywhere in the used part
 *            (superblock copies, journal entries, nodes, data); no checksum
 *            is fixed up, so mostly the checksums catch these
 *   super    a field of the fixed superblock or a byte of its clean section
 *            (the roots), checksum recomputed; the primary or one backup
 *   node     a node header field, header checksum recomputed
 *   bset     a bset header field, bset checksum recomputed
 *   key      a key header field or a value byte, bset checksum recomputed
 *   ptr      a child pointer of an interior node (offset, seq, level, btree,
 *            min key, max key), bset checksum recomputed
 *   extent   a field of an extent value, bset checksum recomputed
 *   journal  a journal entry header field, sub-entry header or payload
 *            byte, entry checksum recomputed
 *   swap     two nodes exchange places
 *   dup      a node is copied over another one
 *   stale    an older version of a node replaces the current one: an
 *            unreferenced older node of the same btree and range if the
 *            device holds one, else the node without its newest bset
 *   any      a mode chosen at random for each mutation
 *
 * --inventory prints what was found (nodes, older nodes, journal entries, data
 * chunks) and damages nothing.
 *
 * The same seed on the same image makes the same damage.  Every mutation is
 * printed as one line ("damage: MODE WHAT at OFFSET: OLD -> NEW"), so a
 * failing case can be reproduced and understood.  Exit status: 0 damage
 * done, 3 the image has nothing this mode can damage, 1 error, 2 usage.
 */
#include <bfs/btree.h>
#include <bfs/checksum.h>
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/journal.h>
#include <bfs/journal_format.h>
#include <bfs/log.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_TARGET	3

static void log_quiet(enum bfs_log_level level, const char *msg, void *ctx)
{
}

/* ---- deterministic randomness (splitmix64) ---- */

static u64 rnd_state;

static u64 rnd(void)
{
	u64 z = (rnd_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u64 below(u64 n)
{
	return n ? rnd() % n : 0;
}

/* ---- little-endian fields of any width ---- */

static u64 get_le(const u8 *p, unsigned w)
{
	u64 v = 0;
	unsigned i;

	for (i = 0; i < w; i++)
		v |= (u64)p[i] << (8 * i);
	return v;
}

static void put_le(u8 *p, unsigned w, u64 v)
{
	unsigned i;

	for (i = 0; i < w; i++)
		p[i] = (u8)(v >> (8 * i));
}

/*
 * A new value for a field of @w bytes: the kinds of wrong a real bug or a
 * bad sector produces (one bit, off by one, zero, all ones, garbage).
 */
static u64 bad_value(u64 old, unsigned w)
{
	u64 mask = w >= 8 ? ~0ULL : (1ULL << (8 * w)) - 1, v;

	switch (below(7)) {
	case 0: v = old ^ (1ULL << below(8 * w)); break;
	case 1: v = old + 1; break;
	case 2: v = old - 1; break;
	case 3: v = 0; break;
	case 4: v = mask; break;
	case 5: v = old ^ (1ULL << (8 * w - 1 - below(4))); break;	/* a high bit */
	default: v = rnd(); break;
	}
	v &= mask;
	return v == old ? (old ^ 1) & mask : v;
}

/* ---- what the image uses ---- */

struct node {
	u64	off;
	u64	seq;
	u8	btree, level;
	u32	written;
	struct bfs_bpos min, max;
};

struct range {
	u64	off;
	u32	len;
};

struct image {
	struct bfs_dev *dev;
	struct bfs_sb *sb;		/* the copy bfs_sb_read chose */
	u32	node_size, block_size, bucket_size;
	u8	csum_type;
	u64	sb_copies[BFS_SB_MAX_COPIES];
	unsigned nr_sb_copies;
	struct node *nodes, *stale;
	size_t	nr_nodes, nr_stale;
	struct range *jsets, *data;
	size_t	nr_jsets, nr_data;
	u8	*buf, *buf2;		/* node_size (at least 64 KiB) each */
	struct bfs_core *c;		/* read-only, for bfs_btree_node_bsets() */
};

static int push(void **arr, size_t *nr, size_t size, const void *e)
{
	void *n = realloc(*arr, (*nr + 1) * size);

	if (!n)
		return -ENOMEM;
	memcpy((u8 *)n + *nr * size, e, size);
	*arr = n;
	(*nr)++;
	return 0;
}

static bool is_live(const struct image *im, u64 off)
{
	size_t i;

	for (i = 0; i < im->nr_nodes; i++)
		if (im->nodes[i].off == off)
			return true;
	return false;
}

static int node_fn(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct image *im = ctx;
	struct node n = {
		.off = ni->offset, .seq = ni->seq, .btree = ni->btree_id, .level = ni->level,
		.written = ni->written, .min = ni->min_key, .max = ni->max_key,
	};
	const struct bfs_btree_node *h = (const void *)im->buf;

	if (ni->status || !ni->written || is_live(im, ni->offset))
		return 0;
	/* only what is on disk (replay in memory may have changed or moved nodes) */
	if (bfs_dev_read(im->dev, ni->offset, im->buf, im->node_size) ||
	    le64_to_cpu(h->magic) != BFS_BTREE_NODE_MAGIC || le64_to_cpu(h->seq) != ni->seq)
		return 0;
	return push((void **)&im->nodes, &im->nr_nodes, sizeof(n), &n);
}

static int key_fn(void *ctx, const struct bfs_btree_node_info *ni, const struct bfs_bkey *k)
{
	struct image *im = ctx;
	const struct bfs_extent_v *e = bfs_bkey_val(k);
	struct range r;

	if (k->type != BFS_KEY_EXTENT || bfs_bkey_val_u64s(k) < BFS_EXTENT_VAL_U64S ||
	    (e->flags & BFS_EXTENT_F_UNWRITTEN) || !le64_to_cpu(e->offset))
		return 0;
	r.off = le64_to_cpu(e->offset);
	r.len = le32_to_cpu(e->stored_bytes);
	if (!r.len || r.off + r.len > bfs_dev_size(im->dev))
		return 0;
	return push((void **)&im->data, &im->nr_data, sizeof(r), &r);
}

static int jset_fn(void *ctx, u64 offset, const struct bfs_jset *j)
{
	struct image *im = ctx;
	struct range r = { offset, (u32)bfs_jset_bytes(j) };

	return push((void **)&im->jsets, &im->nr_jsets, sizeof(r), &r);
}

/* node slots outside the trees that still hold a node: older versions */
static int scan_stale(struct image *im)
{
	u64 start = le64_to_cpu(im->sb->first_bucket) * im->bucket_size;
	u64 end = le64_to_cpu(im->sb->nbuckets) * im->bucket_size;
	u64 jstart = le64_to_cpu(im->sb->journal_bucket) * im->bucket_size;
	u64 jend = jstart + (u64)le32_to_cpu(im->sb->journal_nbuckets) * im->bucket_size;
	const struct bfs_btree_node *h = (const void *)im->buf;
	u64 off;
	int ret;

	for (off = start; off + im->node_size <= end; off += im->node_size) {
		if (off >= jstart && off < jend)
			continue;
		if (bfs_dev_read(im->dev, off, im->buf, sizeof(*h)) ||
		    le64_to_cpu(h->magic) != BFS_BTREE_NODE_MAGIC || is_live(im, off))
			continue;
		struct node n = {
			.off = off, .seq = le64_to_cpu(h->seq), .btree = h->btree_id,
			.level = h->level, .min = bfs_bpos_from_disk(&h->min_key),
			.max = bfs_bpos_from_disk(&h->max_key),
		};
		ret = push((void **)&im->stale, &im->nr_stale, sizeof(n), &n);
		if (ret)
			return ret;
	}
	return 0;
}

static int image_open(struct image *im, const char *path)
{
	struct bfs_journal_geom g;
	struct bfs_sb_handle h;
	struct bfs_journal *j;
	char err[BFS_ERR_LEN];
	unsigned id;
	int ret;

	ret = bfs_dev_open(path, 0, &im->dev);
	if (ret)
		return ret;
	ret = bfs_sb_read(im->dev, &h, err);
	if (ret) {
		fprintf(stderr, "bfs-damage: %s: %s\n", path, err);
		return ret;
	}
	im->sb = h.sb;		/* kept: the handle is not released */
	im->node_size = le32_to_cpu(im->sb->btree_node_size);
	im->block_size = le32_to_cpu(im->sb->block_size);
	im->bucket_size = le32_to_cpu(im->sb->bucket_size);
	im->csum_type = im->sb->csum_type;
	im->nr_sb_copies = im->sb->nr_copies;
	for (id = 0; id < im->nr_sb_copies && id < BFS_SB_MAX_COPIES; id++)
		im->sb_copies[id] = le64_to_cpu(im->sb->copy_offset[id]);
	im->buf = malloc(BFS_MAX(im->node_size, 64 * KiB));
	im->buf2 = malloc(BFS_MAX(im->node_size, 64 * KiB));
	if (!im->buf || !im->buf2)
		return -ENOMEM;

	bfs_journal_geom_from_sb(im->sb, im->dev, &g);
	ret = bfs_journal_open(&g, &j);
	if (ret)
		return ret;
	ret = bfs_journal_walk(j, jset_fn, im);
	bfs_journal_close(j);
	if (ret)
		return ret;

	/*
	 * After an unclean shutdown the trees on disk are the ones replay starts
	 * from, and replay (in memory) splits and rewrites many of their nodes:
	 * walk both, keeping what is on disk.
	 */
	if (!(le32_to_cpu(im->sb->flags) & BFS_SB_CLEAN) &&
	    !bfs_core_open(im->dev, &(struct bfs_core_opts){ .read_only = true, .no_replay = true },
			   &im->c)) {
		for (id = 0; id < BFS_BTREE_NR && !ret; id++)
			ret = bfs_btree_walk(im->c, id, node_fn, NULL, im);
		bfs_core_close(im->c);
		if (ret)
			return ret;
	}
	ret = bfs_core_open(im->dev, &(struct bfs_core_opts){ .read_only = true }, &im->c);
	if (ret) {
		fprintf(stderr, "bfs-damage: %s: cannot open the btrees (%s): damage it "
			"before, not after\n", path, strerror(-ret));
		return ret;
	}
	for (id = 0; id < BFS_BTREE_NR && !ret; id++)
		ret = bfs_btree_walk(im->c, id, node_fn, id == BFS_BTREE_EXTENTS ? key_fn : NULL, im);
	return ret ? ret : scan_stale(im);
}

/* ---- writing back ---- */

static int write_at(struct image *im, u64 off, const void *buf, size_t len)
{
	int ret = bfs_dev_write(im->dev, off, buf, len);

	if (ret)
		fprintf(stderr, "bfs-damage: write at %llu: %s\n", (unsigned long long)off,
			strerror(-ret));
	return ret;
}

static void node_csum(struct image *im, u8 *node)
{
	struct bfs_btree_node *h = (void *)node;

	h->csum = cpu_to_le64(bfs_csum(im->csum_type, node + 16, sizeof(*h) - 16));
}

/* recompute a bset's checksum if its (possibly damaged) size stays in the node */
static void bset_csum(struct image *im, u8 *node, u32 boff)
{
	struct bfs_bset *b = (void *)(node + boff);
	u64 end = (u64)boff + sizeof(*b) + (u64)le32_to_cpu(b->u64s) * 8;

	if (end <= im->node_size)
		b->csum = cpu_to_le64(bfs_csum(im->csum_type, node + boff + 8, end - boff - 8));
}

/* ---- finding things inside nodes ---- */

struct bsets {
	struct bfs_bset_info b[64];
	unsigned nr;
};

static int bset_fn(void *ctx, const struct bfs_bset_info *b)
{
	struct bsets *l = ctx;

	if (l->nr < ARRAY_SIZE(l->b))
		l->b[l->nr++] = *b;
	return 0;
}

/* keys of one bset as far as their sizes can be followed; offsets in the node */
static unsigned bset_keys(struct image *im, const u8 *node, const struct bfs_bset_info *bi,
			  u32 *offs, unsigned max, int want_type, unsigned min_val_u64s)
{
	u32 off = bi->offset + sizeof(struct bfs_bset), end = bi->offset + bi->bytes;
	unsigned nr = 0;

	while (off + sizeof(struct bfs_bkey) <= end && nr < max) {
		const struct bfs_bkey *k = (const void *)(node + off);
		u32 bytes = (u32)bfs_bkey_bytes(k);

		if (bytes < sizeof(*k) || off + bytes > end)
			break;
		if ((want_type < 0 || k->type == want_type) &&
		    bfs_bkey_val_u64s(k) >= min_val_u64s)
			offs[nr++] = off;
		off += bytes;
	}
	return nr;
}

static const char *btree_name(unsigned id)
{
	return bfs_btree_id_name(id);
}

static void say_node(const struct node *n, char *buf, size_t len)
{
	snprintf(buf, len, "%s level %u node at %llu", btree_name(n->btree), n->level,
		 (unsigned long long)n->off);
}

/*
 * A random key (of @type, or any if < 0, with a value of at least
 * @min_val_u64s) in a random bset of a random node accepted by @want.  The
 * node is left in im->buf.
 */
static int pick_key(struct image *im, bool (*want)(const struct node *), int type,
		    unsigned min_val_u64s, const struct node **np, struct bfs_bset_info *bip,
		    u32 *koff)
{
	size_t cands[4096], nr = 0, i;
	u32 offs[2048];
	int tries;

	for (i = 0; i < im->nr_nodes && nr < ARRAY_SIZE(cands); i++)
		if (want(&im->nodes[i]))
			cands[nr++] = i;
	for (tries = 0; nr && tries < 32; tries++) {
		const struct node *n = &im->nodes[cands[below(nr)]];
		struct bsets l = { .nr = 0 };
		unsigned nk;

		if (bfs_dev_read(im->dev, n->off, im->buf, im->node_size))
			continue;
		bfs_btree_node_bsets(im->c, im->buf, bset_fn, &l);
		if (!l.nr)
			continue;
		*bip = l.b[below(l.nr)];
		nk = bset_keys(im, im->buf, bip, offs, ARRAY_SIZE(offs), type, min_val_u64s);
		if (!nk)
			continue;
		*np = n;
		*koff = offs[below(nk)];
		return 0;
	}
	return -ENOENT;
}

static bool any_node(const struct node *n) { return true; }
static bool interior_node(const struct node *n) { return n->level > 0; }
static bool extent_leaf(const struct node *n) { return n->btree == BFS_BTREE_EXTENTS && !n->level; }

/* ---- the modes ---- */

struct field {
	const char *name;
	u16	off;
	u8	w;
};

static int mutate_field(struct image *im, u8 *base, const struct field *f, char *what, size_t len)
{
	u64 old = get_le(base + f->off, f->w), v = bad_value(old, f->w);

	put_le(base + f->off, f->w, v);
	snprintf(what, len, "%s: %llu -> %llu", f->name, (unsigned long long)old,
		 (unsigned long long)v);
	return 0;
}

static int do_random(struct image *im)
{
	static const char *const ops[] = { "bit flip", "byte set", "zeroed block" };
	u64 off = 0, start = 0, len = 0;
	const char *where = NULL;
	unsigned op = (unsigned)below(10);
	u8 byte, nb;
	size_t i;

	op = op < 4 ? 0 : op < 8 ? 1 : 2;
	for (int tries = 0; tries < 16 && !len; tries++) {
		switch (below(4)) {
		case 0:
			where = "superblock";
			start = im->sb_copies[below(im->nr_sb_copies)];
			len = le32_to_cpu(im->sb->bytes);
			break;
		case 1:
			if (!im->nr_jsets)
				break;
			where = "journal entry";
			i = below(im->nr_jsets);
			start = im->jsets[i].off;
			len = im->jsets[i].len;
			break;
		case 2: {
			const struct node *n;

			if (!im->nr_nodes)
				break;
			n = &im->nodes[below(im->nr_nodes)];
			where = "btree node";
			start = n->off;
			len = n->written;
			break;
		}
		default:
			if (!im->nr_data)
				break;
			where = "file data";
			i = below(im->nr_data);
			start = im->data[i].off;
			len = im->data[i].len;
			break;
		}
	}
	if (!len)
		return -ENOENT;
	off = start + below(len);
	if (op == 2) {
		u64 blk = off / im->block_size * im->block_size;

		memset(im->buf, 0, im->block_size);
		printf("damage: random %s: %s at %llu, block %llu (%u bytes)\n", ops[op], where,
		       (unsigned long long)start, (unsigned long long)blk, im->block_size);
		return write_at(im, blk, im->buf, im->block_size);
	}
	if (bfs_dev_read(im->dev, off, &byte, 1))
		return -EIO;
	nb = op == 0 ? byte ^ (u8)(1u << below(8)) : (u8)below(256);
	if (nb == byte)
		nb ^= 0xff;
	printf("damage: random %s: %s at %llu, byte %llu: 0x%02x -> 0x%02x\n", ops[op], where,
	       (unsigned long long)start, (unsigned long long)off, byte, nb);
	return write_at(im, off, &nb, 1);
}

#define SBF(n, w) { #n, offsetof(struct bfs_sb, n), w }
static const struct field sb_fields[] = {
	SBF(bytes, 4), SBF(version, 2), SBF(version_min, 2), SBF(seq, 8),
	{ "uuid", 32, 8 }, { "label", 48, 8 }, SBF(compat, 8), SBF(ro_compat, 8),
	SBF(incompat, 8), SBF(time_written, 8), SBF(dev_size, 8), SBF(block_size, 4),
	SBF(btree_node_size, 4), SBF(bucket_size, 4), SBF(flags, 4), SBF(nbuckets, 8),
	SBF(first_bucket, 8), SBF(journal_bucket, 8), SBF(journal_nbuckets, 4),
	SBF(csum_type, 1), SBF(compression_type, 1), SBF(compression_level, 1),
	SBF(nr_copies, 1), { "copy_offset[1]", 216, 8 }, SBF(hash_seed, 8),
	{ "reserved[0]", 248, 8 },
};

static int do_super(struct image *im)
{
	unsigned copy = below(4) || im->nr_sb_copies < 2 ? 0 :
			1 + (unsigned)below(im->nr_sb_copies - 1);
	u64 off = im->sb_copies[copy];
	struct bfs_sb *sb = (void *)im->buf;
	u32 bytes;
	char what[160];

	if (bfs_dev_read(im->dev, off, im->buf, BFS_SB_MAX_BYTES))
		return -EIO;
	bytes = le32_to_cpu(sb->bytes);
	if (bytes > sizeof(*sb) + 8 && bytes <= BFS_SB_MAX_BYTES && below(3) == 0) {
		/* the sections: the clean section holds the btree roots */
		u32 at = sizeof(*sb) + (u32)below(bytes - sizeof(*sb));
		u8 old = im->buf[at];

		im->buf[at] ^= (u8)(1u << below(8));
		snprintf(what, sizeof(what), "section byte %u: 0x%02x -> 0x%02x", at, old,
			 im->buf[at]);
	} else {
		mutate_field(im, im->buf, &sb_fields[below(ARRAY_SIZE(sb_fields))], what,
			     sizeof(what));
	}
	bytes = le32_to_cpu(sb->bytes);
	if (bytes >= 16 && bytes <= BFS_SB_MAX_BYTES)
		sb->csum = cpu_to_le64(bfs_sb_csum(sb));
	printf("damage: super %s copy at %llu, %s\n", copy ? "backup" : "primary",
	       (unsigned long long)off, what);
	return write_at(im, off, im->buf, BFS_SB_MAX_BYTES);
}

#define NF(n, w) { #n, offsetof(struct bfs_btree_node, n), w }
static const struct field node_fields[] = {
	NF(seq, 8), NF(btree_id, 1), NF(level, 1), NF(flags, 2), NF(pad, 4),
	{ "min_key.inode", 32, 8 }, { "min_key.offset", 40, 8 }, { "min_key.snapshot", 48, 4 },
	{ "max_key.inode", 56, 8 }, { "max_key.offset", 64, 8 }, { "max_key.snapshot", 72, 4 },
	{ "reserved", 80, 8 },
};

static int do_node(struct image *im)
{
	const struct node *n;
	char what[160], where[96];

	if (!im->nr_nodes)
		return -ENOENT;
	n = &im->nodes[below(im->nr_nodes)];
	if (bfs_dev_read(im->dev, n->off, im->buf, im->node_size))
		return -EIO;
	mutate_field(im, im->buf, &node_fields[below(ARRAY_SIZE(node_fields))], what, sizeof(what));
	node_csum(im, im->buf);
	say_node(n, where, sizeof(where));
	printf("damage: node header of %s, %s\n", where, what);
	return write_at(im, n->off, im->buf, sizeof(struct bfs_btree_node));
}

#define BF(n, w) { #n, offsetof(struct bfs_bset, n), w }
static const struct field bset_fields[] = {
	BF(node_seq, 8), BF(journal_seq, 8), BF(u64s, 4), BF(offset, 4),
};

static int do_bset(struct image *im)
{
	struct bsets l = { .nr = 0 };
	const struct node *n;
	char what[160], where[96];
	unsigned i;

	for (int tries = 0; tries < 32; tries++) {
		if (!im->nr_nodes)
			break;
		n = &im->nodes[below(im->nr_nodes)];
		if (bfs_dev_read(im->dev, n->off, im->buf, im->node_size))
			return -EIO;
		l.nr = 0;
		bfs_btree_node_bsets(im->c, im->buf, bset_fn, &l);
		if (!l.nr)
			continue;
		i = (unsigned)below(l.nr);
		mutate_field(im, im->buf + l.b[i].offset, &bset_fields[below(ARRAY_SIZE(bset_fields))],
			     what, sizeof(what));
		bset_csum(im, im->buf, l.b[i].offset);
		say_node(n, where, sizeof(where));
		printf("damage: bset %u (node offset %u) of %s, %s\n", i, l.b[i].offset, where, what);
		return write_at(im, n->off, im->buf, im->node_size);
	}
	return -ENOENT;
}

#define KF(n, w) { #n, offsetof(struct bfs_bkey, n), w }
static const struct field key_fields[] = {
	KF(u64s, 2), KF(type, 1), KF(flags, 1), KF(size, 4), KF(inode, 8), KF(offset, 8),
	KF(snapshot, 4), KF(pad, 4),
};

static int do_key(struct image *im)
{
	struct bfs_bset_info bi;
	const struct node *n;
	char what[160], where[96];
	struct bfs_bkey *k;
	u32 koff;

	if (pick_key(im, any_node, -1, 0, &n, &bi, &koff))
		return -ENOENT;
	k = (void *)(im->buf + koff);
	if (bfs_bkey_val_u64s(k) && below(3) == 0) {
		u32 at = (u32)below(bfs_bkey_val_u64s(k) * 8);
		u8 *p = (u8 *)bfs_bkey_val(k) + at, old = *p;

		*p = (u8)bad_value(old, 1);
		snprintf(what, sizeof(what), "value byte %u: 0x%02x -> 0x%02x", at, old, *p);
	} else {
		mutate_field(im, (u8 *)k, &key_fields[below(ARRAY_SIZE(key_fields))], what,
			     sizeof(what));
	}
	bset_csum(im, im->buf, bi.offset);
	say_node(n, where, sizeof(where));
	printf("damage: key at node offset %u (bset %u) of %s, %s\n", koff, bi.index, where, what);
	return write_at(im, n->off, im->buf, im->node_size);
}

static int do_ptr(struct image *im)
{
	struct bfs_bset_info bi;
	const struct node *n;
	char what[160], where[96];
	struct bfs_bkey *k;
	u8 *v;
	u32 koff;

	if (pick_key(im, interior_node, BFS_KEY_BTREE_PTR, BFS_BTREE_PTR_VAL_U64S, &n, &bi, &koff))
		return -ENOENT;
	k = (void *)(im->buf + koff);
	v = bfs_bkey_val(k);
	switch (below(8)) {
	case 0: {	/* at another node: misdirected */
		u64 old = get_le(v, 8), to = im->nodes[below(im->nr_nodes)].off;

		if (to == old)
			to += im->node_size;
		put_le(v, 8, to);
		snprintf(what, sizeof(what), "offset: %llu -> %llu (another slot)",
			 (unsigned long long)old, (unsigned long long)to);
		break;
	}
	case 1: mutate_field(im, v, &(struct field){ "offset", 0, 8 }, what, sizeof(what)); break;
	case 2: mutate_field(im, v, &(struct field){ "seq", 8, 8 }, what, sizeof(what)); break;
	case 3: mutate_field(im, v, &(struct field){ "min_key.inode", 16, 8 }, what, sizeof(what)); break;
	case 4: mutate_field(im, v, &(struct field){ "min_key.offset", 24, 8 }, what, sizeof(what)); break;
	case 5: mutate_field(im, v, &(struct field){ "level", 40, 1 }, what, sizeof(what)); break;
	case 6: mutate_field(im, v, &(struct field){ "btree_id", 41, 1 }, what, sizeof(what)); break;
	default: mutate_field(im, (u8 *)k, &(struct field){ "max_key.offset", 16, 8 }, what,
			      sizeof(what)); break;
	}
	bset_csum(im, im->buf, bi.offset);
	say_node(n, where, sizeof(where));
	printf("damage: child pointer at node offset %u (bset %u) of %s, %s\n", koff, bi.index,
	       where, what);
	return write_at(im, n->off, im->buf, im->node_size);
}

#define EF(n, w) { #n, offsetof(struct bfs_extent_v, n), w }
static const struct field extent_fields[] = {
	EF(offset, 8), EF(csum, 8), EF(stored_bytes, 4), EF(chunk_sectors, 4),
	EF(chunk_offset, 4), EF(gen, 4), EF(compression, 1), EF(csum_type, 1), EF(flags, 1),
	EF(pad, 1),
};

static int do_extent(struct image *im)
{
	struct bfs_bset_info bi;
	const struct node *n;
	char what[160], where[96];
	struct bfs_bkey *k;
	u32 koff;

	if (pick_key(im, extent_leaf, BFS_KEY_EXTENT, BFS_EXTENT_VAL_U64S, &n, &bi, &koff))
		return -ENOENT;
	k = (void *)(im->buf + koff);
	if (below(8) == 0)
		mutate_field(im, (u8 *)k, &(struct field){ "key size", 4, 4 }, what, sizeof(what));
	else
		mutate_field(im, bfs_bkey_val(k), &extent_fields[below(ARRAY_SIZE(extent_fields))],
			     what, sizeof(what));
	bset_csum(im, im->buf, bi.offset);
	say_node(n, where, sizeof(where));
	printf("damage: extent %llu:%llu at node offset %u (bset %u) of %s, %s\n",
	       (unsigned long long)le64_to_cpu(k->inode), (unsigned long long)le64_to_cpu(k->offset),
	       koff, bi.index, where, what);
	return write_at(im, n->off, im->buf, im->node_size);
}

#define JF(n, w) { #n, offsetof(struct bfs_jset, n), w }
static const struct field jset_fields[] = {
	JF(seq, 8), JF(last_seq, 8), JF(flags, 4), JF(u64s, 4), JF(reserved, 8), { "uuid", 16, 8 },
};

static int do_journal(struct image *im)
{
	const struct range *r;
	struct bfs_jset *j = (void *)im->buf;
	u64 bucket_end, avail, end;
	char what[160];
	u32 u64s;

	if (!im->nr_jsets)
		return -ENOENT;
	r = &im->jsets[below(im->nr_jsets)];
	bucket_end = (r->off / im->bucket_size + 1) * im->bucket_size;
	avail = BFS_MIN(bucket_end - r->off, (u64)BFS_MAX(im->node_size, 64 * KiB));
	if (r->len > avail || bfs_dev_read(im->dev, r->off, im->buf, avail))
		return -ENOENT;
	u64s = le32_to_cpu(j->u64s);
	if (u64s && below(2)) {
		/* a sub-entry: header fields or a payload byte */
		const struct bfs_jset_entry *e, *pick = NULL;
		unsigned nr = 0;

		for_each_jset_entry(j, e)
			if (below(++nr) == 0)
				pick = e;
		if (pick && below(2)) {
			static const struct field ef[] = {
				{ "u64s", 0, 2 }, { "type", 2, 1 }, { "btree_id", 3, 1 },
				{ "level", 4, 1 }, { "pad", 5, 1 },
			};
			char f[128];

			mutate_field(im, (u8 *)pick, &ef[below(ARRAY_SIZE(ef))], f, sizeof(f));
			snprintf(what, sizeof(what), "sub-entry at entry offset %zu, %s",
				 (size_t)((const u8 *)pick - im->buf), f);
		} else {
			u32 at = (u32)(sizeof(*j) + below((u64)u64s * 8));
			u8 old = im->buf[at];

			im->buf[at] = (u8)bad_value(old, 1);
			snprintf(what, sizeof(what), "payload byte %u: 0x%02x -> 0x%02x", at, old,
				 im->buf[at]);
		}
	} else {
		mutate_field(im, im->buf, &jset_fields[below(ARRAY_SIZE(jset_fields))], what,
			     sizeof(what));
	}
	end = sizeof(*j) + (u64)le32_to_cpu(j->u64s) * 8;
	if (end <= avail)
		j->csum = cpu_to_le64(bfs_xxh3(im->buf + BFS_JSET_CSUM_OFFSET,
					       end - BFS_JSET_CSUM_OFFSET));
	printf("damage: journal entry at %llu (seq %llu), %s\n", (unsigned long long)r->off,
	       (unsigned long long)get_le(im->buf + offsetof(struct bfs_jset, seq), 8), what);
	return write_at(im, r->off, im->buf, BFS_MIN(avail, BFS_ROUND_UP(BFS_MAX(end, r->len),
								       (u64)im->block_size)));
}

static int do_swap(struct image *im, bool dup)
{
	const struct node *a, *b;
	char wa[96], wb[96];
	int ret;

	if (im->nr_nodes < 2)
		return -ENOENT;
	a = &im->nodes[below(im->nr_nodes)];
	do
		b = &im->nodes[below(im->nr_nodes)];
	while (b == a);
	if (bfs_dev_read(im->dev, a->off, im->buf, im->node_size) ||
	    bfs_dev_read(im->dev, b->off, im->buf2, im->node_size))
		return -EIO;
	say_node(a, wa, sizeof(wa));
	say_node(b, wb, sizeof(wb));
	if (dup) {
		printf("damage: dup %s copied over %s\n", wa, wb);
		return write_at(im, b->off, im->buf, im->node_size);
	}
	printf("damage: swap %s and %s\n", wa, wb);
	ret = write_at(im, b->off, im->buf, im->node_size);
	return ret ? ret : write_at(im, a->off, im->buf2, im->node_size);
}

static bool overlaps(const struct node *a, const struct node *b)
{
	return a->btree == b->btree && a->level == b->level &&
	       bfs_bpos_cmp(a->min, b->max) <= 0 && bfs_bpos_cmp(b->min, a->max) <= 0;
}

/* an unreferenced older node of the same btree, level and range */
static int stale_older_node(struct image *im)
{
	size_t pairs[1024][2], nr = 0, i, s;
	const struct node *n, *old;
	char wn[96], wo[96];

	for (i = 0; i < im->nr_nodes; i++)
		for (s = 0; s < im->nr_stale && nr < ARRAY_SIZE(pairs); s++)
			if (overlaps(&im->nodes[i], &im->stale[s])) {
				pairs[nr][0] = i;
				pairs[nr++][1] = s;
			}
	if (!nr)
		return -ENOENT;
	i = below(nr);
	n = &im->nodes[pairs[i][0]];
	old = &im->stale[pairs[i][1]];
	if (bfs_dev_read(im->dev, old->off, im->buf, im->node_size))
		return -EIO;
	say_node(n, wn, sizeof(wn));
	say_node(old, wo, sizeof(wo));
	printf("damage: stale %s replaced by the older %s (seq %llu)\n", wn, wo,
	       (unsigned long long)old->seq);
	return write_at(im, n->off, im->buf, im->node_size);
}

/* the node as it was before its newest bset was appended */
static int stale_bset(struct image *im)
{
	const struct node *n;
	char wn[96];

	for (int tries = 0; tries < 32 && im->nr_nodes; tries++) {
		struct bsets l = { .nr = 0 };

		n = &im->nodes[below(im->nr_nodes)];
		if (bfs_dev_read(im->dev, n->off, im->buf, im->node_size))
			return -EIO;
		bfs_btree_node_bsets(im->c, im->buf, bset_fn, &l);
		if (l.nr < 2)
			continue;
		say_node(n, wn, sizeof(wn));
		printf("damage: stale %s loses its newest bset %u (node offset %u, %u bytes)\n", wn,
		       l.nr - 1, l.b[l.nr - 1].offset, l.b[l.nr - 1].bytes);
		memset(im->buf, 0, im->block_size);
		return write_at(im, n->off + l.b[l.nr - 1].offset, im->buf,
				BFS_MIN(im->block_size, im->node_size - l.b[l.nr - 1].offset));
	}
	return -ENOENT;
}

static int do_stale(struct image *im)
{
	bool first = below(4) != 0;
	int ret = first ? stale_older_node(im) : stale_bset(im);

	if (ret == -ENOENT)
		ret = first ? stale_bset(im) : stale_older_node(im);
	return ret;
}

static const struct {
	const char *name;
	int (*fn)(struct image *im);
} modes[] = {
	{ "random", do_random },
	{ "super", do_super },
	{ "node", do_node },
	{ "bset", do_bset },
	{ "key", do_key },
	{ "ptr", do_ptr },
	{ "extent", do_extent },
	{ "journal", do_journal },
	{ "swap", NULL },
	{ "dup", NULL },
	{ "stale", do_stale },
};

static int run_mode(struct image *im, unsigned m)
{
	if (!strcmp(modes[m].name, "swap"))
		return do_swap(im, false);
	if (!strcmp(modes[m].name, "dup"))
		return do_swap(im, true);
	return modes[m].fn(im);
}

static int usage(void)
{
	fprintf(stderr, "usage: bfs-damage [--seed N] [--count N] MODE IMAGE\n"
			"       bfs-damage --list\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct image im = { 0 };
	unsigned long count = 1, done = 0, i;
	u64 seed = 1;
	int m = -1, a, ret = 0;
	bool any, inventory = false;

	bfs_log_set_hook(log_quiet, NULL);
	if (argc == 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; i < ARRAY_SIZE(modes); i++)
			printf("%s\n", modes[i].name);
		return 0;
	}
	for (a = 1; a < argc - 2; a++) {
		if (!strcmp(argv[a], "--seed") && a + 1 < argc - 2)
			seed = strtoull(argv[++a], NULL, 0);
		else if (!strcmp(argv[a], "--count") && a + 1 < argc - 2)
			count = strtoul(argv[++a], NULL, 0);
		else
			return usage();
	}
	if (argc == 3 && !strcmp(argv[1], "--inventory"))
		inventory = true;
	else if (argc < 3)
		return usage();
	any = inventory || !strcmp(argv[argc - 2], "any");
	for (i = 0; i < ARRAY_SIZE(modes) && !any; i++)
		if (!strcmp(argv[argc - 2], modes[i].name))
			m = (int)i;
	if (m < 0 && !any)
		return usage();
	/* the mode is part of the seed: seed 5 of "key" is not seed 5 of "node" */
	rnd_state = seed * 1000003 + (u64)(m + 1);

	ret = image_open(&im, argv[argc - 1]);
	if (ret) {
		fprintf(stderr, "bfs-damage: %s: %s\n", argv[argc - 1], strerror(-ret));
		return 1;
	}
	if (inventory) {
		for (i = 0; i < im.nr_nodes; i++)
			printf("node %llu %s level %u seq %llu written %u\n",
			       (unsigned long long)im.nodes[i].off, btree_name(im.nodes[i].btree),
			       im.nodes[i].level, (unsigned long long)im.nodes[i].seq,
			       im.nodes[i].written);
		for (i = 0; i < im.nr_stale; i++)
			printf("older-node %llu %s level %u seq %llu\n",
			       (unsigned long long)im.stale[i].off, btree_name(im.stale[i].btree),
			       im.stale[i].level, (unsigned long long)im.stale[i].seq);
		for (i = 0; i < im.nr_jsets; i++)
			printf("journal-entry %llu bytes %u\n", (unsigned long long)im.jsets[i].off,
			       im.jsets[i].len);
		for (i = 0; i < im.nr_data; i++)
			printf("data %llu bytes %u\n", (unsigned long long)im.data[i].off,
			       im.data[i].len);
		count = 0;
	}
	for (i = 0; i < count && ret != -EIO; i++) {
		unsigned mm = any ? (unsigned)below(ARRAY_SIZE(modes)) : (unsigned)m;

		ret = run_mode(&im, mm);
		if (!ret)
			done++;
	}
	if (!ret || ret == -ENOENT)
		ret = bfs_dev_flush(im.dev);
	/* read-only: closing it writes nothing over the damage */
	bfs_core_close(im.c);
	bfs_dev_close(im.dev);
	if (ret && ret != -ENOENT) {
		fprintf(stderr, "bfs-damage: %s\n", strerror(-ret));
		return 1;
	}
	if (!done && !inventory) {
		printf("damage: nothing to damage for mode %s\n", argv[argc - 2]);
		return NO_TARGET;
	}
	return 0;
}
