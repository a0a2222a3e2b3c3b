/* SPDX-License-Identifier: MIT */
/*
 * On-disk format of the journal (doc/format/journal.md says the same in
 * prose).
 *
 * The journal is a ring of journal_nbuckets contiguous buckets starting at
 * byte journal_bucket * bucket_size.  It holds entries ("jsets"):
 *
 *   struct bfs_jset header (64 bytes)
 *   payload: u64s * 8 bytes of sub-entries (struct bfs_jset_entry + data)
 *   zero padding up to the next multiple of block_size
 *
 * An entry starts on a block boundary and never crosses a bucket boundary;
 * the next entry starts at the next block boundary after it.  The checksum
 * is always XXH3-64 (seed 0) of bytes [16, 64 + u64s * 8), whatever the
 * filesystem's csum_type says: the journal is what recovery trusts, so it is
 * never left unchecked.  The padding is not checksummed.
 */
#ifndef BFS_JOURNAL_FORMAT_H
#define BFS_JOURNAL_FORMAT_H

#include "bkey.h"
#include "types.h"

/* "BFS\0JNL\x1a" read as a little-endian u64 */
#define BFS_JSET_MAGIC		UINT64_C(0x1a4c4e4a00534642)

/* jset->flags */
#define BFS_JSET_FLUSH		(1U << 0)	/* written after a device flush, with FUA */
#define BFS_JSET_FLAGS_KNOWN	(BFS_JSET_FLUSH)

/* largest entry, header and padding included (also capped by the bucket size) */
#define BFS_JSET_MAX_BYTES	(4 * MiB)

/*
 * Sub-entry: a typed, variable-length record inside a jset's payload.
 * u64s counts the data after this 8-byte header, so a sub-entry occupies
 * (1 + u64s) * 8 bytes.  Sub-entries are packed back to back and never cross
 * the end of their jset.
 */
struct bfs_jset_entry {
	__le16	u64s;		/* 0: data length in u64s, header excluded */
	u8	type;		/* 2: enum bfs_jset_entry_type */
	u8	btree_id;	/* 3 */
	u8	level;		/* 4: btree level the keys go to (0 = leaves) */
	u8	pad[3];		/* 5: zero */
	__le64	_data[];	/* 8 */
};
BFS_STATIC_SIZE(struct bfs_jset_entry, 8);

#define BFS_JSET_ENTRY_MAX_U64S	0xffffU

/*
 * Sub-entry types.  The journal itself treats every payload as opaque bytes;
 * replay (the btree layer) interprets them.  A reader must skip types it does
 * not know rather than fail, so new types can be added without a format bump
 * as long as ignoring them is safe.
 */
enum bfs_jset_entry_type {
	BFS_JSET_ENTRY_PAD		= 0,	/* ignored; fills space */
	BFS_JSET_ENTRY_BTREE_KEYS	= 1,	/* packed keys to replay into btree_id at level */
	BFS_JSET_ENTRY_BTREE_ROOT	= 2,	/* root pointer of btree_id (opaque bytes) */
	/* 3..255: reserved for future use (usage counters, clock, blacklist...) */
	BFS_JSET_ENTRY_NR
};

struct bfs_jset {
	__le64	magic;		/*  0: BFS_JSET_MAGIC */
	__le64	csum;		/*  8: XXH3-64 of bytes [16, 64 + u64s * 8) */
	u8	uuid[16];	/* 16: filesystem UUID; other UUIDs are ignored */
	__le64	seq;		/* 32: >= 1, +1 for every entry written */
	__le64	last_seq;	/* 40: oldest seq still needed for replay, <= seq */
	__le32	flags;		/* 48: BFS_JSET_* */
	__le32	u64s;		/* 52: payload length in u64s */
	__le64	reserved;	/* 56: zero */
	struct bfs_jset_entry start[];	/* 64: payload */
};
BFS_STATIC_SIZE(struct bfs_jset, 64);

#define BFS_JSET_CSUM_OFFSET	16	/* checksum covers everything from here */

/* ---- helpers (they trust the lengths: validate the jset first) ---- */

/* header + payload, without padding */
static inline size_t bfs_jset_bytes(const struct bfs_jset *j)
{
	return sizeof(*j) + (size_t)le32_to_cpu(j->u64s) * 8;
}

/* bytes the entry occupies on disk: header + payload rounded up to a block */
static inline size_t bfs_jset_disk_bytes(const struct bfs_jset *j, u32 block_size)
{
	return BFS_ROUND_UP(bfs_jset_bytes(j), (size_t)block_size);
}

static inline struct bfs_jset_entry *bfs_jset_entries_end(const struct bfs_jset *j)
{
	return (struct bfs_jset_entry *)((u8 *)j->start + (size_t)le32_to_cpu(j->u64s) * 8);
}

/* size of a sub-entry in u64s, header included */
static inline u32 bfs_jset_entry_total_u64s(const struct bfs_jset_entry *e)
{
	return 1 + le16_to_cpu(e->u64s);
}

static inline struct bfs_jset_entry *bfs_jset_entry_next(const struct bfs_jset_entry *e)
{
	return (struct bfs_jset_entry *)((__le64 *)e + bfs_jset_entry_total_u64s(e));
}

static inline void *bfs_jset_entry_data(const struct bfs_jset_entry *e)
{
	return (void *)e->_data;
}

/* fill in a sub-entry header; the caller writes u64s * 8 bytes of data after it */
static inline void bfs_jset_entry_init(struct bfs_jset_entry *e, u8 type, u8 btree_id,
				       u8 level, u16 u64s)
{
	*e = (struct bfs_jset_entry){
		.u64s = cpu_to_le16(u64s),
		.type = type,
		.btree_id = btree_id,
		.level = level,
	};
}

/* iterate over the sub-entries of a validated jset */
#define for_each_jset_entry(_jset, _e)					\
	for ((_e) = (_jset)->start;					\
	     (_e) < bfs_jset_entries_end(_jset);			\
	     (_e) = bfs_jset_entry_next(_e))

/* the end of a sub-entry's data */
static inline const __le64 *bfs_jset_entry_data_end(const struct bfs_jset_entry *e)
{
	return e->_data + le16_to_cpu(e->u64s);
}

/*
 * Is there a whole key at @k inside sub-entry @e?  A checksummed jset still
 * holds keys nothing has checked, so the key walk below trusts no length.
 * Only the first u64 (which holds u64s) is read before the length is known
 * to lie inside the sub-entry.
 */
static inline bool bfs_jset_key_fits(const struct bfs_jset_entry *e, const struct bfs_bkey *k)
{
	const __le64 *p = (const __le64 *)k, *end = bfs_jset_entry_data_end(e);

	return p < end && bfs_bkey_u64s(k) >= BFS_BKEY_U64S &&
	       bfs_bkey_u64s(k) <= (size_t)(end - p);
}

/*
 * The keys of a BFS_JSET_ENTRY_BTREE_KEYS sub-entry, in order:
 *
 *	for_each_jset_key(e, k)
 *		replay(k);
 *	if (!bfs_jset_keys_done(e, k))
 *		the key at k is malformed (its length does not fit @e);
 *
 * The walk stops at the first key that does not fit, so the body only ever
 * sees whole keys (their contents still need bfs_bkey_validate()).
 */
#define for_each_jset_key(_e, _k)							\
	for ((_k) = (const struct bfs_bkey *)(_e)->_data;				\
	     bfs_jset_key_fits((_e), (_k));						\
	     (_k) = (const struct bfs_bkey *)((const __le64 *)(_k) + bfs_bkey_u64s(_k)))

/* after for_each_jset_key(): did the walk reach the end of @e? */
static inline bool bfs_jset_keys_done(const struct bfs_jset_entry *e, const struct bfs_bkey *k)
{
	return (const __le64 *)k >= bfs_jset_entry_data_end(e);
}

#endif /* BFS_JOURNAL_FORMAT_H */
