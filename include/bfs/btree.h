/* SPDX-License-Identifier: MIT */
/*
 * Btree access: iterators, transactions and whole-tree tools
 * (libcore/btree/).  See doc/format/btree.md for the design.
 *
 * Iterators see committed data only (not the pending updates of a
 * transaction).  They hold no lock between calls: every peek/next/prev copies
 * the key into the iterator, so the returned pointer is valid until the next
 * call on the same iterator, and a thread holding an iterator may commit.
 *
 * Positions: for ordinary btrees peek returns the first key >= pos and next
 * moves past it.  For extent btrees peek returns the first extent whose END
 * is > pos (i.e. the extent containing pos.offset, or the next one) and next
 * continues from that extent's end.  prev walks backwards: it returns the
 * last key whose position is < the iterator position (extents: the last
 * extent ending at or before it) and moves the iterator to that key
 * (extents: to its start).
 *
 * Transactions collect updates to any btrees and apply them in one commit:
 * one journal entry (atomic after a crash), visible to readers once commit
 * returns.  Updates are applied in the order given.  In extent btrees an
 * insert trims or splits the extents it overlaps; a BFS_KEY_DELETED key with
 * a size deletes that range.
 *
 * Errors: -ENOENT (no key), -EUCLEAN (corrupt node, message via bfs_err()),
 * -ENOSPC (no space for new nodes; nothing was changed), -E2BIG (key too big
 * for a node, or a commit too big for one journal entry), -EINVAL (bad key),
 * -EROFS (read-only core, or a fatal error happened), -ENOMEM, -EIO.
 */
#ifndef BFS_BTREE_H
#define BFS_BTREE_H

#include <errno.h>

#include "btree_format.h"
#include "finding.h"

struct bfs_core;
struct btree_node;

const char *bfs_btree_id_name(unsigned id);
/* largest key (in u64s) a node of this filesystem holds */
u32 bfs_btree_max_key_u64s(struct bfs_core *c);

/* ---- iterators ---- */

enum bfs_iter_flags {
	BFS_ITER_PREFETCH	= 1 << 0,	/* sequential scan: read the next leaves ahead */
	BFS_ITER_FEW		= 1 << 1,	/* a few keys (a file read's extents): no batch ahead */
};

struct bfs_btree_iter {
	/* all private */
	struct bfs_core *c;
	u8	btree_id;
	unsigned flags;
	struct bfs_bpos pos;
	/* set: pos is stale, and is where a scan goes on after this key (iter.c) */
	const struct bfs_bkey *pos_from;
	struct btree_node *leaf;	/* referenced, not locked */
	u32	idx;			/* position in leaf when leaf_mod_seq matches */
	u64	leaf_mod_seq;
	u32	leaves_seen;
	bool	valid;			/* k holds the last key returned */
	struct bfs_bkey *k;		/* the current key (in kbuf or ahead) */
	struct bfs_bkey *kbuf;		/* owned copy */
	size_t	k_cap;
	u64	inline_k[16];
	/*
	 * keys after the current one, found with it while the leaf was
	 * locked: next() serves them without locking as long as the leaf's
	 * mod_seq shows it has not changed since.  ahead_k[] points into the
	 * leaf's written bsets (which never change while the leaf is
	 * referenced) or, for keys not yet written, to copies in ahead.
	 */
	u8	*ahead;
	u32	ahead_cap, ahead_len, ahead_n, ahead_i;
	u64	ahead_mod_seq;
	u32	ahead_idx[64];
	struct bfs_bkey *ahead_k[64];
};

void bfs_btree_iter_init(struct bfs_btree_iter *it, struct bfs_core *c,
			 enum bfs_btree_id id, struct bfs_bpos pos, unsigned flags);
void bfs_btree_iter_set_pos(struct bfs_btree_iter *it, struct bfs_bpos pos);
int bfs_btree_iter_peek(struct bfs_btree_iter *it, const struct bfs_bkey **k);
int bfs_btree_iter_next(struct bfs_btree_iter *it, const struct bfs_bkey **k);
int bfs_btree_iter_prev(struct bfs_btree_iter *it, const struct bfs_bkey **k);
void bfs_btree_iter_exit(struct bfs_btree_iter *it);

/*
 * Every key from @it's position on, in order:
 *
 *	bfs_btree_iter_init(&it, c, id, pos, 0);
 *	for_each_btree_key(&it, k, ret) {
 *		if (le64_to_cpu(k->inode) != ino)
 *			break;
 *		...
 *	}
 *	bfs_btree_iter_exit(&it);
 *	return ret;
 *
 * The loop ends with @ret 0 at the end of the btree (peek/next's -ENOENT is
 * consumed here, so no caller has to remember it) or peek/next's error; a
 * body that breaks leaves @ret as it was: 0, or the error the body stored.
 * A body error of -ENOENT therefore stays an error instead of looking like
 * the end of the btree.  The iterator still needs bfs_btree_iter_exit().
 */
#define for_each_btree_key(it, k, ret)							\
	for ((ret) = bfs_btree_iter_peek((it), &(k));					\
	     !(ret) || ((ret) == -ENOENT && ((ret) = 0, 0));				\
	     (ret) = bfs_btree_iter_next((it), &(k)))

/*
 * Point lookup: copies the key at exactly @pos (extents: the extent
 * containing pos.offset) into @buf.  -ENOENT if none, -ENOBUFS if @buf_len is
 * too small.
 */
int bfs_btree_lookup(struct bfs_core *c, enum bfs_btree_id id, struct bfs_bpos pos,
		     void *buf, size_t buf_len);

/* ---- transactions ---- */

struct bfs_trans;

int bfs_trans_begin(struct bfs_core *c, struct bfs_trans **out);
/* queue an insert/overwrite (the key is copied) */
int bfs_trans_update(struct bfs_trans *t, enum bfs_btree_id id, const struct bfs_bkey *k);
/* queue a delete of the key at @pos (not for extent btrees) */
int bfs_trans_delete(struct bfs_trans *t, enum bfs_btree_id id, struct bfs_bpos pos);
/* extent btrees: delete [start, end) of @inode in @snapshot */
int bfs_trans_delete_range(struct bfs_trans *t, enum bfs_btree_id id, u64 inode,
			   u64 start, u64 end, u32 snapshot);
/*
 * Apply every queued update atomically; *seq (may be NULL) is the journal seq
 * to pass to bfs_core_flush()/durability checks.  The queue is emptied
 * whether or not it succeeds; on error nothing was applied.  -E2BIG: the
 * updates do not fit in one journal entry (split them over several commits).
 */
int bfs_trans_commit(struct bfs_trans *t, u64 *seq);
void bfs_trans_end(struct bfs_trans *t);
/*
 * Values that depend on the commits before this one (a sum kept in a key,
 * such as a bucket's live sectors): the next commit calls @fn for each of
 * its updates to a non-extent btree once the commit can no longer fall back
 * to another way of committing, just before the first update is applied,
 * with every leaf it changes write-locked (or commit_lock held exclusive).
 * Two commits that write one position therefore call @fn in the order they
 * apply and reach the journal, without any lock of the caller's held across
 * the commit.  @fn may rewrite @k's value in place, not its position, type
 * or size.  Once @fn was called, the commit applies what it left or fails
 * (with an error, never retried).  The commit clears it.
 */
typedef void (*bfs_trans_fixup_fn)(void *ctx, enum bfs_btree_id id, struct bfs_bkey *k);
void bfs_trans_set_fixup(struct bfs_trans *t, bfs_trans_fixup_fn fn, void *ctx);

/* one-update transactions */
int bfs_btree_insert(struct bfs_core *c, enum bfs_btree_id id, const struct bfs_bkey *k);
int bfs_btree_delete(struct bfs_core *c, enum bfs_btree_id id, struct bfs_bpos pos);

/* ---- tools: walking, dumping, checking ---- */

struct bfs_btree_node_info {
	u8	btree_id;
	u8	level;
	u64	offset;			/* device byte offset */
	u64	seq;
	struct bfs_bpos min_key;
	struct bfs_bpos max_key;
	u32	nr_bsets;		/* on disk */
	u32	written;		/* bytes on disk */
	u32	node_size;
	u32	nr_keys;		/* live keys (merged view) */
	u64	live_bytes;
	bool	dirty;
	int	status;			/* 0, or the error reading it (-EUCLEAN ...) */
	unsigned code;			/* with status: enum bfs_problem_code */
	char	err[256];		/* why status != 0 */
};

/*
 * Depth-first walk of every node of btree @id, in key order, parents before
 * children.  @node_fn is called for every node (also unreadable ones, with
 * status set); @key_fn (may be NULL) for every live key of every readable
 * node.  A callback returning non-zero stops the walk and is returned.
 * Unreadable children are reported and skipped, so a walk of a damaged tree
 * visits everything that can be reached.  The walk excludes writers (it
 * holds the commit lock): callbacks must not commit.
 */
int bfs_btree_walk(struct bfs_core *c, enum bfs_btree_id id,
		   int (*node_fn)(void *ctx, const struct bfs_btree_node_info *ni),
		   int (*key_fn)(void *ctx, const struct bfs_btree_node_info *ni,
				 const struct bfs_bkey *k),
		   void *ctx);

/*
 * The device offset of every node of btree @id that a pointer names, with
 * its level: what bfs_btree_walk() gives @node_fn as ni->offset, reading
 * only the interior nodes (leaves are most of a tree).  Holds the commit
 * lock like the walk.
 */
int bfs_btree_walk_slots(struct bfs_core *c, enum bfs_btree_id id,
			 int (*fn)(void *ctx, u64 offset, unsigned level), void *ctx);

/*
 * Check the whole tree: node checksums and contents (as on every read), that
 * child ranges tile their parent's range exactly, levels decrease by one,
 * leaves are all at level 0, keys are in order across nodes.  Returns the
 * number of problems found (each reported with bfs_err()), or a negative
 * errno if the walk itself failed.
 */
long bfs_btree_verify(struct bfs_core *c, enum bfs_btree_id id);
/* the same check, each problem handed to @fn as a finding (nothing logged) */
long bfs_btree_check(struct bfs_core *c, enum bfs_btree_id id, bfs_finding_fn fn, void *ctx);
/*
 * ... and @node_seen (may be NULL) called for every node visited (progress),
 * @key_seen (may be NULL) for every leaf key, in key order, as the check
 * reads it (fsck's later checks collect what they need in the same walk)
 */
long bfs_btree_check_nodes(struct bfs_core *c, enum bfs_btree_id id, bfs_finding_fn fn,
			   void (*node_seen)(void *ctx),
			   void (*key_seen)(void *ctx, const struct bfs_bkey *k), void *ctx);

/* one key set (bset) of a node as it is on disk, for debugging tools */
struct bfs_bset_info {
	u32	index;
	u32	offset;			/* byte offset in the node */
	u32	bytes;			/* header + keys */
	u32	nr_keys;
	u64	journal_seq;
	bool	csum_checked;		/* false: the filesystem has no checksums */
	bool	csum_ok;
};

/*
 * Walk the bsets of the raw node @buf (btree_node_size bytes) as far as they
 * can be followed: @fn gets each one, in order.  Stops at the first block
 * that does not belong to this node (end of the node), at a bset whose size
 * runs past the node, or when @fn returns non-zero (returned).  Keys are not
 * validated here: bfs_btree_node_check() does that.
 */
int bfs_btree_node_bsets(struct bfs_core *c, const void *buf,
			 int (*fn)(void *ctx, const struct bfs_bset_info *b), void *ctx);
/*
 * The same walk without a core (node scan, image dump): the one decoder of
 * the bset framing.  Returns what @fn returned, or 0 at the node's end.
 */
int bfs_node_bsets_raw(const void *buf, u32 node_size, u32 block_size, unsigned csum_type,
		       int (*fn)(void *ctx, const struct bfs_bset_info *b), void *ctx);

struct bfs_btree_stats {
	u32	depth;			/* levels, 1 = root is a leaf */
	u64	nodes[BFS_BTREE_MAX_DEPTH];	/* per level */
	u64	keys;			/* live leaf keys */
	u64	key_bytes;
	u64	node_bytes;		/* nodes * node_size */
};

int bfs_btree_get_stats(struct bfs_core *c, enum bfs_btree_id id, struct bfs_btree_stats *s);

/*
 * Shrinking (libcore/btree/evacuate.c): copy every node of every btree that
 * ends beyond byte @limit to a slot below it, each a copy-on-write move whose
 * parent pointer (or root) changes with it, then checkpoint, so the new
 * tree is durable and the old slots are never written.  The caller fences
 * the allocator at @limit first (bfs_alloc_fence()) and is the only writer.
 * *moved: nodes copied; *left: nodes still beyond @limit (0 on success).
 * -ENOSPC if the space below ran out (the trees stay valid: each move is
 * whole or not at all).  @progress (may be NULL) is told nodes done of total.
 */
int bfs_btree_evacuate(struct bfs_core *c, u64 limit,
		       void (*progress)(void *ctx, u64 done, u64 total), void *ctx,
		       u64 *moved, u64 *left);
/* *nr: nodes of all btrees that end beyond byte @limit (reads interior nodes only) */
int bfs_btree_nodes_beyond(struct bfs_core *c, u64 limit, u64 *nr);

/*
 * Check one node image (e.g. read by a tool): @buf holds node_size bytes
 * read from @offset; @ptr (may be NULL) is the pointer that led there.
 * 0 or -EUCLEAN with the reason in @err (BFS_ERR_LEN).
 */
int bfs_btree_node_check(struct bfs_core *c, const void *buf, u64 offset,
			 const struct bfs_bkey *ptr, char *err);

#endif /* BFS_BTREE_H */
