/* SPDX-License-Identifier: MIT */
/*
 * On-disk format of btree nodes, child pointers and the clean-shutdown
 * superblock section (doc/format/btree.md says the same in prose).
 *
 * A node occupies btree_node_size bytes at a node_size-aligned device offset:
 *
 *   struct bfs_btree_node header (96 bytes)
 *   bset 0 (struct bfs_bset + keys), right after the header
 *   bset 1 at the next block boundary after bset 0, bset 2 ... (appends)
 *   unwritten space
 *
 * Every bset carries the node's seq: the first block whose bset header does
 * not carry it ends the node (it is left over from an older node).  Keys in a
 * bset are sorted and unique; a later bset overrides an earlier one at the
 * same position (a BFS_KEY_DELETED key shadows it).
 */
#ifndef BFS_BTREE_FORMAT_H
#define BFS_BTREE_FORMAT_H

#include "bkey.h"

/*
 * The btrees: x(NAME, id, "name").  Ids are on disk (node headers, child
 * pointers, journal entries); names are what tools print and accept.
 */
#define BFS_BTREE_IDS(x)						\
	x(EXTENTS,	0,	"extents")	/* extent keys: pos is the end of the range */	\
	x(INODES,	1,	"inodes")					\
	x(DIRENTS,	2,	"dirents")					\
	x(XATTRS,	3,	"xattrs")					\
	x(ALLOC,	4,	"alloc")

enum bfs_btree_id {
#define x(n, nr, name) BFS_BTREE_##n = nr,
	BFS_BTREE_IDS(x)
#undef x
	BFS_BTREE_NR
};

static inline bool bfs_btree_is_extents(unsigned id)
{
	return id == BFS_BTREE_EXTENTS;
}

#define BFS_BTREE_MAX_DEPTH	8

/* "BFS\0NODE" read as a little-endian u64 */
#define BFS_BTREE_NODE_MAGIC	UINT64_C(0x45444f4e00534642)

struct bfs_btree_node {
	__le64	magic;			/*  0: BFS_BTREE_NODE_MAGIC */
	__le64	csum;			/*  8: csum_type of bytes [16, 96) */
	__le64	seq;			/* 16: node identity, unique per node written */
	u8	btree_id;		/* 24 */
	u8	level;			/* 25: 0 = leaf */
	__le16	flags;			/* 26: zero */
	__le32	pad;			/* 28: zero */
	struct bfs_bpos_disk min_key;	/* 32: smallest position the node covers */
	struct bfs_bpos_disk max_key;	/* 56: largest (inclusive) */
	__le64	node_id;		/* 80: the superblock's hash_seed with the
					       compat feature NODE_ID, else zero */
	__le64	reserved;		/* 88: zero */
};
BFS_STATIC_SIZE(struct bfs_btree_node, 96);

/* what node headers of filesystem @sb carry in node_id (0: nothing) */
#define bfs_sb_node_id(sb)						\
	((le64_to_cpu((sb)->compat) & BFS_FEAT_COMPAT_NODE_ID) ?		\
	 le64_to_cpu((sb)->hash_seed) ?: 1 : 0)

struct bfs_bset {
	__le64	csum;			/*  0: csum_type of bytes [8, 32 + u64s * 8) */
	__le64	node_seq;		/*  8: equals the node header's seq */
	__le64	journal_seq;		/* 16: newest journal seq of its keys */
	__le32	u64s;			/* 24: key data after this header */
	__le32	offset;			/* 28: byte offset of this bset in the node */
	__le64	keys[];			/* 32 */
};
BFS_STATIC_SIZE(struct bfs_bset, 32);

/*
 * Value of a BFS_KEY_BTREE_PTR key.  The key's position is the child's
 * max_key; the child's min_key is stored here, so a node read through the
 * pointer can be checked completely: location, identity (seq), btree, level
 * and range must all match the node header.
 */
struct bfs_btree_ptr {
	__le64	offset;			/*  0: byte offset of the node on the device */
	__le64	seq;			/*  8: the node header's seq */
	struct bfs_bpos_disk min_key;	/* 16 */
	u8	level;			/* 40: the child's level */
	u8	btree_id;		/* 41 */
	__le16	pad1;			/* 42: zero */
	__le32	pad2;			/* 44: zero */
};
BFS_STATIC_SIZE(struct bfs_btree_ptr, 48);

#define BFS_BTREE_PTR_VAL_U64S	(sizeof(struct bfs_btree_ptr) / 8)
#define BFS_BTREE_PTR_KEY_U64S	(BFS_BKEY_U64S + BFS_BTREE_PTR_VAL_U64S)

/*
 * BFS_SB_FIELD_CLEAN payload: written on clean close (and by format), read
 * when the superblock has BFS_SB_CLEAN so that open needs no replay.  Also
 * the fallback roots when the journal holds no entry newer than journal_seq.
 */
struct bfs_sb_clean {
	__le64	journal_seq;		/*  0: newest journal seq at close (0: none) */
	__le32	nr_roots;		/*  8 */
	__le32	flags;			/* 12: zero */
	struct bfs_btree_ptr roots[];	/* 16: one per btree, level/btree_id inside */
};
BFS_STATIC_SIZE(struct bfs_sb_clean, 16);

/*
 * Journal BFS_JSET_ENTRY_BTREE_ROOT sub-entry: btree_id and level in the
 * sub-entry header, data = struct bfs_btree_ptr of the root.
 * Journal BFS_JSET_ENTRY_BTREE_KEYS sub-entry: keys (struct bfs_bkey) back to
 * back, applied in order at replay (blind writes, no extent trimming).
 */

#endif /* BFS_BTREE_FORMAT_H */
