// SPDX-License-Identifier: MIT
/*
 * bfs-nodeedit: change one field of a btree node in an image, with the node
 * header's and bset 0's checksums recomputed (unless --no-reseal), so that
 * fsck sees exactly that damage and not a checksum error.  For the fixture
 * corpus (fixtures/make-fixtures.sh), one problem code per image.
 *
 * usage: bfs-nodeedit [--no-reseal] [--bset N] IMAGE NODE_OFFSET FIELD=VALUE
 * (bset fields and keys are those of bset N, default 0)
 * FIELD is one of
 *   seq btree level min max node_id           the node header
 *   bset.u64s bset.offset bset.node_seq       bset 0
 *   key.N.u64s key.N.type key.N.flags key.N.inode key.N.offset key.N.size
 *                                              the Nth key of bset 0
 *   key.N.swap=M                               exchange keys N and M (same size)
 *   ptr.N.offset ptr.N.seq ptr.N.level ptr.N.btree ptr.N.min
 *                                              the Nth child pointer (interior)
 * Positions (min, max, ptr.N.min) are INODE:OFFSET:SNAPSHOT; numbers decimal
 * or 0x hex, +N / -N relative to the old value.  Prints the old and new value.
 */
#include <bfs/btree_format.h>
#include <bfs/checksum.h>
#include <bfs/dev.h>
#include <bfs/super.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(const char *msg)
{
	fprintf(stderr, "bfs-nodeedit: %s\n", msg);
	return 1;
}

static bool parse_pos(const char *s, struct bfs_bpos *p)
{
	unsigned long long a, b;
	unsigned c;

	if (sscanf(s, "%llu:%llu:%u", &a, &b, &c) != 3)
		return false;
	*p = BFS_POS(a, b, c);
	return true;
}

/* bset @idx of the node (the walk of bfs_node_bsets_raw), or NULL */
static struct bfs_bset *nth_bset(u8 *node, u32 node_size, u32 block_size, unsigned idx)
{
	u64 seq = le64_to_cpu(((struct bfs_btree_node *)node)->seq);
	u32 off = sizeof(struct bfs_btree_node);

	while (off + sizeof(struct bfs_bset) <= node_size) {
		struct bfs_bset *b = (struct bfs_bset *)(node + off);
		u64 end = off + sizeof(*b) + (u64)le32_to_cpu(b->u64s) * 8;

		if (le64_to_cpu(b->node_seq) != seq || end > node_size)
			return NULL;
		if (!idx--)
			return b;
		off = (u32)BFS_ROUND_UP(end, (u64)block_size);
	}
	return NULL;
}

static struct bfs_bset *the_bset;

static struct bfs_bkey *nth_key(u8 *node, u32 node_size, unsigned n)
{
	struct bfs_bset *b = the_bset;
	u8 *p = (u8 *)b->keys, *end = p + (size_t)le32_to_cpu(b->u64s) * 8;

	while (p + sizeof(struct bfs_bkey) <= end && p + sizeof(struct bfs_bkey) <= node + node_size) {
		struct bfs_bkey *k = (struct bfs_bkey *)p;

		if (bfs_bkey_u64s(k) < BFS_BKEY_U64S)
			return NULL;
		if (!n--)
			return k;
		p += bfs_bkey_bytes(k);
	}
	return NULL;
}

/* "+N" / "-N": relative to the old value */
static int rel;

/* set a little-endian field of @size bytes at @at, printing old -> new */
static void set_le(void *at, unsigned size, u64 v)
{
	u64 old = 0;

	memcpy(&old, at, size);
	old = le64_to_cpu((__le64){ old });
	if (rel)
		v = rel > 0 ? old + v : old - v;
	printf("%" PRIu64 " -> %" PRIu64 "\n", old, v);
	v = cpu_to_le64(v).v;
	memcpy(at, &v, size);
}

static void set_pos(struct bfs_bpos_disk *d, struct bfs_bpos p)
{
	struct bfs_bpos o = bfs_bpos_from_disk(d);

	printf("%" PRIu64 ":%" PRIu64 ":%u -> %" PRIu64 ":%" PRIu64 ":%u\n", o.inode, o.offset,
	       o.snapshot, p.inode, p.offset, p.snapshot);
	*d = bfs_bpos_to_disk(p);
}

int main(int argc, char **argv)
{
	bool reseal = true;
	struct bfs_sb_handle sbh = { 0 };
	char err[BFS_ERR_LEN], field[64], *eq;
	struct bfs_btree_node *h;
	struct bfs_bset *b0;
	struct bfs_dev *dev;
	const char *val;
	u32 node_size;
	u64 off, num = 0;
	unsigned n, m;
	u8 *node;
	int a = 1;

	unsigned bset_idx = 0;

	for (; a < argc && argv[a][0] == '-' && argv[a][1] == '-'; a++) {
		if (!strcmp(argv[a], "--no-reseal"))
			reseal = false;
		else if (!strcmp(argv[a], "--bset") && a + 1 < argc)
			bset_idx = (unsigned)strtoul(argv[++a], NULL, 0);
		else
			return die("unknown option");
	}
	if (argc - a != 3 || !(eq = strchr(argv[a + 2], '=')) ||
	    (size_t)(eq - argv[a + 2]) >= sizeof(field))
		return die("usage: bfs-nodeedit [--no-reseal] [--bset N] IMAGE NODE_OFFSET FIELD=VALUE");
	memcpy(field, argv[a + 2], (size_t)(eq - argv[a + 2]));
	field[eq - argv[a + 2]] = 0;
	val = eq + 1;
	off = strtoull(argv[a + 1], NULL, 0);
	rel = *val == '+' ? 1 : *val == '-' ? -1 : 0;
	num = strtoull(val + (rel != 0), NULL, 0);
	if (bfs_dev_open(argv[a], 0, &dev))
		return die("cannot open the image");
	if (bfs_sb_read(dev, &sbh, err))
		return die(err);
	node_size = le32_to_cpu(sbh.sb->btree_node_size);
	node = malloc(node_size);
	if (!node || bfs_dev_read(dev, off, node, node_size))
		return die("cannot read the node");
	h = (struct bfs_btree_node *)node;
	b0 = nth_bset(node, node_size, le32_to_cpu(sbh.sb->block_size), bset_idx);
	if (!b0)
		return die("no such bset");
	the_bset = b0;

	if (!strcmp(field, "seq")) {
		set_le(&h->seq, 8, num);
	} else if (!strcmp(field, "btree")) {
		set_le(&h->btree_id, 1, num);
	} else if (!strcmp(field, "level")) {
		set_le(&h->level, 1, num);
	} else if (!strcmp(field, "node_id")) {
		set_le(&h->node_id, 8, num);
	} else if (!strcmp(field, "min") || !strcmp(field, "max")) {
		struct bfs_bpos p;

		if (!parse_pos(val, &p))
			return die("bad position");
		set_pos(!strcmp(field, "min") ? &h->min_key : &h->max_key, p);
	} else if (!strcmp(field, "bset.u64s")) {
		set_le(&b0->u64s, 4, num);
	} else if (!strcmp(field, "bset.offset")) {
		set_le(&b0->offset, 4, num);
	} else if (!strcmp(field, "bset.node_seq")) {
		set_le(&b0->node_seq, 8, num);
	} else if (sscanf(field, "key.%u.", &n) == 1) {
		struct bfs_bkey *k = nth_key(node, node_size, n);
		const char *f = strchr(field + 4, '.');

		if (!k || !f)
			return die("no such key in bset 0");
		f++;
		if (!strcmp(f, "u64s"))
			set_le(&k->u64s, 2, num);
		else if (!strcmp(f, "type"))
			set_le(&k->type, 1, num);
		else if (!strcmp(f, "flags"))
			set_le(&k->flags, 1, num);
		else if (!strcmp(f, "inode"))
			set_le(&k->inode, 8, num);
		else if (!strcmp(f, "offset"))
			set_le(&k->offset, 8, num);
		else if (!strcmp(f, "size"))
			set_le(&k->size, 4, num);
		else if (!strcmp(f, "swap") && sscanf(val, "%u", &m) == 1) {
			struct bfs_bkey *k2 = nth_key(node, node_size, m);
			u8 tmp[512];
			size_t len = bfs_bkey_bytes(k);

			if (!k2 || bfs_bkey_bytes(k2) != len || len > sizeof(tmp))
				return die("keys to swap differ in size or do not exist");
			memcpy(tmp, k, len);
			memcpy(k, k2, len);
			memcpy(k2, tmp, len);
			printf("keys %u and %u swapped\n", n, m);
		} else {
			return die("unknown key field");
		}
	} else if (sscanf(field, "ptr.%u.", &n) == 1) {
		struct bfs_bkey *k = nth_key(node, node_size, n);
		const char *f = strchr(field + 4, '.');
		struct bfs_btree_ptr *p;

		if (!k || !f || k->type != BFS_KEY_BTREE_PTR)
			return die("no such child pointer in bset 0");
		p = (struct bfs_btree_ptr *)k->v;
		f++;
		if (!strcmp(f, "offset"))
			set_le(&p->offset, 8, num);
		else if (!strcmp(f, "seq"))
			set_le(&p->seq, 8, num);
		else if (!strcmp(f, "level"))
			set_le(&p->level, 1, num);
		else if (!strcmp(f, "btree"))
			set_le(&p->btree_id, 1, num);
		else if (!strcmp(f, "min")) {
			struct bfs_bpos pos;

			if (!parse_pos(val, &pos))
				return die("bad position");
			set_pos(&p->min_key, pos);
		} else {
			return die("unknown pointer field");
		}
	} else {
		return die("unknown field");
	}

	if (reseal) {
		u64 len = 24 + (u64)le32_to_cpu(b0->u64s) * 8;

		h->csum = cpu_to_le64(bfs_csum(sbh.sb->csum_type, node + 16, sizeof(*h) - 16));
		if ((size_t)((u8 *)b0 - node) + 8 + len <= node_size)
			b0->csum = cpu_to_le64(bfs_csum(sbh.sb->csum_type, (u8 *)b0 + 8, (size_t)len));
	}
	if (bfs_dev_write(dev, off, node, node_size) || bfs_dev_flush(dev))
		return die("cannot write the node");
	bfs_sb_handle_release(&sbh);
	bfs_dev_close(dev);
	free(node);
	return 0;
}
