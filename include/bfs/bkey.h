/* SPDX-License-Identifier: MIT */
/*
 * Keys: positions, the on-disk key header and the key type registry
 * (doc/format/btree.md, "Keys").
 *
 * A key is a 32-byte header followed by a value; both are a multiple of 8
 * bytes and key sizes are counted in u64s.  Positions compare by inode, then
 * offset, then snapshot.  Extent keys (in extent btrees) cover the range
 * [pos.offset - size, pos.offset): the position is the END of the extent, so
 * "first key with pos > x" is the extent containing x, or the next one.
 *
 * The btree itself only understands BFS_KEY_DELETED (a whiteout that
 * shadows older versions of the same position) and BFS_KEY_BTREE_PTR.  The
 * other types' values are validated and printed by their methods, one const
 * table for the whole program (libcore/keys/, from BFS_BKEY_TYPES below), so
 * every tool validates every key the same way.
 */
#ifndef BFS_BKEY_H
#define BFS_BKEY_H

#include "types.h"

struct bfs_bpos {
	u64	inode;
	u64	offset;
	u32	snapshot;
};

#define BFS_POS(_i, _o, _s)	((struct bfs_bpos){ .inode = (_i), .offset = (_o), .snapshot = (_s) })
#define BFS_POS_MIN		BFS_POS(0, 0, 0)
#define BFS_POS_MAX		BFS_POS(UINT64_MAX, UINT64_MAX, UINT32_MAX)

static inline int bfs_bpos_cmp(struct bfs_bpos a, struct bfs_bpos b)
{
	if (a.inode != b.inode)
		return a.inode < b.inode ? -1 : 1;
	if (a.offset != b.offset)
		return a.offset < b.offset ? -1 : 1;
	if (a.snapshot != b.snapshot)
		return a.snapshot < b.snapshot ? -1 : 1;
	return 0;
}

static inline bool bfs_bpos_eq(struct bfs_bpos a, struct bfs_bpos b)
{
	return !bfs_bpos_cmp(a, b);
}

/* next position in key order (POS_MAX stays POS_MAX) */
static inline struct bfs_bpos bfs_bpos_successor(struct bfs_bpos p)
{
	if (++p.snapshot)
		return p;
	if (++p.offset)
		return p;
	if (++p.inode)
		return p;
	return BFS_POS_MAX;
}

/* previous position in key order (POS_MIN stays POS_MIN) */
static inline struct bfs_bpos bfs_bpos_predecessor(struct bfs_bpos p)
{
	if (p.snapshot--)
		return p;
	if (p.offset--)
		return p;
	if (p.inode--)
		return p;
	return BFS_POS_MIN;
}

/* position as stored on disk (node headers, pointers) */
struct bfs_bpos_disk {
	__le64	inode;
	__le64	offset;
	__le32	snapshot;
	__le32	pad;		/* zero */
};
BFS_STATIC_SIZE(struct bfs_bpos_disk, 24);

static inline struct bfs_bpos bfs_bpos_from_disk(const struct bfs_bpos_disk *d)
{
	return BFS_POS(le64_to_cpu(d->inode), le64_to_cpu(d->offset), le32_to_cpu(d->snapshot));
}

static inline struct bfs_bpos_disk bfs_bpos_to_disk(struct bfs_bpos p)
{
	return (struct bfs_bpos_disk){
		.inode = cpu_to_le64(p.inode),
		.offset = cpu_to_le64(p.offset),
		.snapshot = cpu_to_le32(p.snapshot),
	};
}

/*
 * Key header.  u64s counts the whole key (header + value) in 8-byte units;
 * a u16 allows keys up to 512 KiB, enough for 64 KiB xattr values.  The
 * largest key a btree accepts is further bounded by the node size
 * (bfs_btree_max_key_u64s()).
 */
struct bfs_bkey {
	__le16	u64s;		/*  0: header + value, in u64s */
	u8	type;		/*  2: enum bfs_bkey_type */
	u8	flags;		/*  3: zero (reserved) */
	__le32	size;		/*  4: extents: length in offset units; else 0 */
	__le64	inode;		/*  8 */
	__le64	offset;		/* 16: extents: END of the range */
	__le32	snapshot;	/* 24 */
	__le32	pad;		/* 28: zero */
	__le64	v[];		/* 32: value */
};
BFS_STATIC_SIZE(struct bfs_bkey, 32);

#define BFS_BKEY_U64S		(sizeof(struct bfs_bkey) / 8)
#define BFS_BKEY_MAX_U64S	0xffffU
/* values up to 64 KiB plus a 4 KiB header (xattr name etc) must fit */
#define BFS_BKEY_VAL_MAX_BYTES	(68 * KiB)

/*
 * Every key type, in one list: x(NAME, number, "name").  The enum, the names
 * and the table of per-type methods (libcore/keys/) all come from it.
 * Numbers are on disk: never reuse one.  0..31 belong to the btree core,
 * 32..255 to the filesystem.
 */
#define BFS_BKEY_TYPES(x)						\
	x(DELETED,	0,	"deleted")	/* whiteout: shadows older keys */	\
	x(BTREE_PTR,	1,	"btree_ptr")	/* interior nodes: bfs_btree_ptr */	\
	x(COOKIE,	2,	"cookie")	/* opaque value (tests, benchmarks) */	\
	x(TEST_EXTENT,	3,	"test_extent")	/* word 0: data offset (tests) */	\
	x(INODE,	32,	"inode")					\
	x(DIRENT,	33,	"dirent")					\
	x(EXTENT,	34,	"extent")					\
	x(XATTR,	35,	"xattr")					\
	x(ALLOC,	36,	"alloc")					\
	x(INODE_COUNTER, 40,	"inode_counter")				\
	x(ORPHAN,	41,	"orphan")					\
	x(SYMLINK,	42,	"symlink")					\
	x(HASH_WHITEOUT, 43,	"hash_whiteout")				\
	x(XATTR_DATA,	44,	"xattr_data")

enum bfs_bkey_type {
#define x(n, nr, name) BFS_KEY_##n = nr,
	BFS_BKEY_TYPES(x)
#undef x
	BFS_KEY_FS_FIRST	= 32,
	BFS_KEY_TYPE_NR		= 256,
};

static inline struct bfs_bpos bfs_bkey_pos(const struct bfs_bkey *k)
{
	return BFS_POS(le64_to_cpu(k->inode), le64_to_cpu(k->offset), le32_to_cpu(k->snapshot));
}

static inline void bfs_bkey_set_pos(struct bfs_bkey *k, struct bfs_bpos p)
{
	k->inode = cpu_to_le64(p.inode);
	k->offset = cpu_to_le64(p.offset);
	k->snapshot = cpu_to_le32(p.snapshot);
}

static inline u32 bfs_bkey_u64s(const struct bfs_bkey *k) { return le16_to_cpu(k->u64s); }
static inline size_t bfs_bkey_bytes(const struct bfs_bkey *k) { return (size_t)bfs_bkey_u64s(k) * 8; }
static inline u32 bfs_bkey_val_u64s(const struct bfs_bkey *k) { return bfs_bkey_u64s(k) - BFS_BKEY_U64S; }
static inline void *bfs_bkey_val(const struct bfs_bkey *k) { return (void *)k->v; }
static inline u32 bfs_bkey_size(const struct bfs_bkey *k) { return le32_to_cpu(k->size); }
static inline bool bfs_bkey_deleted(const struct bfs_bkey *k) { return k->type == BFS_KEY_DELETED; }

/* extents: first offset covered */
static inline u64 bfs_bkey_start(const struct bfs_bkey *k)
{
	return le64_to_cpu(k->offset) - le32_to_cpu(k->size);
}

static inline int bfs_bkey_cmp_pos(const struct bfs_bkey *k, struct bfs_bpos p)
{
	return bfs_bpos_cmp(bfs_bkey_pos(k), p);
}

/* initialise a key header; the caller fills val_u64s * 8 bytes of value */
static inline void bfs_bkey_init(struct bfs_bkey *k, u8 type, struct bfs_bpos pos, u32 val_u64s)
{
	*k = (struct bfs_bkey){ .u64s = cpu_to_le16((u16)(BFS_BKEY_U64S + val_u64s)), .type = type };
	bfs_bkey_set_pos(k, pos);
}

/* ---- per-type hooks ---- */

#define BFS_BKEY_ERR_LEN 160

struct bfs_bkey_ops {
	/* value size bounds in u64s (max 0: no limit beyond the key limit) */
	u32	min_val_u64s;
	u32	max_val_u64s;
	/* extra checks of the value; 0 or -EUCLEAN with a reason in @err */
	int	(*validate)(const struct bfs_bkey *k, char *err, size_t err_len);
	/* the value as text (the header is printed by bfs_bkey_to_text) */
	void	(*val_to_text)(char *buf, size_t len, const struct bfs_bkey *k);
	/*
	 * Extents: drop the first @n offset units of the value (e.g. advance a
	 * data pointer).  NULL: the value does not depend on the start.
	 */
	void	(*cut_front)(struct bfs_bkey *k, u64 n);
};

/* the methods of @type (NULL: unknown type, accepted as an opaque value) */
const struct bfs_bkey_ops *bfs_bkey_type_ops(unsigned type);
const char *bfs_bkey_type_name(unsigned type);

/*
 * Check a key on its own: header sanity, type known (unknown types are
 * accepted as opaque values), value size, type hook.  @is_extents: the key
 * belongs to an extent btree (size must be non-zero for live keys and not
 * underflow the offset).  0 or -EUCLEAN with one line in @err.
 */
int bfs_bkey_validate(const struct bfs_bkey *k, bool is_extents, char *err, size_t err_len);

/* "inode:offset:snapshot", a component at its maximum as "max", BFS_POS_MAX as "max" */
int bfs_bpos_to_text(char *buf, size_t len, struct bfs_bpos p);
/* what bfs_bpos_to_text() prints, the snapshot optional, or "min"; -EINVAL/-ERANGE */
int bfs_bpos_parse(const char *s, struct bfs_bpos *p);
/* "u64s 6 type cookie pos 1:2:0 size 0: <value>" */
int bfs_bkey_to_text(char *buf, size_t len, const struct bfs_bkey *k);

#endif /* BFS_BKEY_H */
