/* SPDX-License-Identifier: MIT */
/*
 * Internal structures of the btree core, shared by libcore/btree/ and
 * libcore/core/.
 *
 * Locking (see doc/format/btree.md, "Concurrency"):
 *  - c->commit_lock held exclusive (bfs_commit_lock) serialises every writer
 *    that changes the tree's shape or needs it still: splits, merges,
 *    checkpoint snapshots, replay, walks.  That writer may read any node
 *    without taking its lock, because nobody else changes nodes.  Held
 *    shared, by parallel commits (trans.c, doc/commit.md): interior nodes
 *    do not change, and each commit write-locks the leaves it changes.  Checkpoint writes need neither it
 *    nor node locks: they write bsets the snapshot sealed (doc/commit.md).
 *  - node->lock: readers take it shared; the writer takes it exclusive only
 *    while changing that node, so readers never wait for writers working on
 *    other nodes.  Readers descend with lock coupling (child locked before
 *    the parent is released), so they always see either the old or the new
 *    tree around a split.
 *  - tree->root_lock protects tree->root (swapped on root split/collapse).
 *  - c->cache.lock protects the hash table, LRU, refcounts and accounting.
 */
#ifndef BFS_BTREE_INTERNAL_H
#define BFS_BTREE_INTERNAL_H

#include <bfs/bkey.h>
#include <bfs/btree.h>
#include <bfs/btree_format.h>
#include <bfs/checksum.h>
#include <bfs/core.h>
#include <bfs/dev.h>
#include <bfs/finding.h>
#include <bfs/journal.h>
#include <bfs/log.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <bfs/alloc.h>

struct pend_block {
	struct pend_block *next;
	u32	used, size;		/* bytes */
	u64	data[];
};

/* a piece of a node's sorted key view (node_keys.c) */
#define NODE_CHUNK	128
/* entries per group inside a chunk: a group's search keys are four cache lines */
#define NODE_GROUP	16
#define NODE_GROUPS	(NODE_CHUNK / NODE_GROUP)
/* inode and offset of a key, kept next to the pointer so searches rarely dereference */
struct node_sk {
	u64	inode;
	u64	offset;
};
struct key_chunk {
	u32	nr;
	u32	pad[15];		/* gl[] starts on its own cache line */
	/*
	 * search key of the last slot of each group of NODE_GROUP entries,
	 * gl[g] = sk[g * NODE_GROUP + NODE_GROUP - 1]: a search reads these
	 * two cache lines, then only the one group, instead of a binary search
	 * over all of sk[]
	 */
	struct node_sk gl[NODE_GROUPS];
	struct bfs_bkey *k[NODE_CHUNK];
	/*
	 * sk[nr, NODE_CHUNK) are all ones (above every position), so searches
	 * need neither nr nor a special case for the last, short group
	 */
	struct node_sk sk[NODE_CHUNK];
};

/*
 * One entry of a node's Eytzinger array: a chunk's last search key, and the
 * chunk itself, so the line the descent ends on also says where to go next.
 */
struct node_eyt {
	struct node_sk sk;
	struct key_chunk *ch;
	u32	c;			/* index of ch in n->ch[] */
	u32	pad;
};

struct btree_node {
	/* identity: fixed at creation */
	u64	offset;
	u64	seq;
	u8	btree_id;
	u8	level;
	struct bfs_bpos min, max;

	bfs_rwlock lock;
	u8	*data;			/* node_size; [0, written) is what is on disk */
	u32	written;		/* bytes on disk, block multiple; 0 = never written */
	/*
	 * what of data[] bfs_node_buf_trim() left resident (0: all of it);
	 * bsets written later fault in the pages up to written again
	 */
	u32	buf_kept;
	u32	nr_bsets;
	/*
	 * unwritten keys, appended in arrival order to a list of blocks that
	 * never move (keys[] points into them); newest block first
	 */
	struct pend_block *pending;
	u32	pending_bytes;		/* key bytes appended (dead copies included) */
	size_t	pending_alloc;		/* bytes allocated for blocks */
	/*
	 * merged view: one entry per position, sorted, newest version wins;
	 * entry i is node_key(n, i)
	 */
	struct key_chunk **ch;
	u32	*start;			/* index of the first entry of each chunk */
	struct node_sk *last;		/* search key of the last entry of each chunk */
	/*
	 * last[] again in Eytzinger order (eyt[1] is the root of an implicit
	 * binary tree, eyt[0] unused, 64-byte aligned), with each entry's chunk:
	 * the first levels of every search share one or two hot cache lines and
	 * the next levels can be prefetched; eyt_of[c] is the slot of chunk c.
	 * Rebuilt when chunks come or go, updated in place otherwise.
	 */
	struct node_eyt *eyt;
	u32	*eyt_of;
	u32	nch, ch_cap;
	u32	nr;			/* entries */
	struct key_chunk *spare[4];	/* preallocated for inserts */
	u32	nr_spare;
	u64	live_bytes;		/* bytes of non-deleted keys in keys[] */
	u64	journal_seq;		/* newest journal seq of pending keys */
	u64	mod_seq;		/* bumped whenever keys[] changes; read locklessly */
	bool	dirty;
	bool	dead;			/* replaced by a rewrite; kept while referenced */
	bool	torn;			/* a torn bset follows the last good one: seal it */
	u16	parse_code;		/* why bfs_node_parse() failed (enum bfs_problem_code) */

	/*
	 * cache state (c->cache.lock).  What a hit reads and writes (hnext,
	 * ref, lru_ref) is on the cache line of dead and mod_seq, which
	 * descents and scans read anyway: one line less per level
	 */
	/*
	 * atomic; up from 0 only under the cache lock; REF_UNHASHED once
	 * unhashed by bfs_cache_kill() (the last put then frees the node)
	 */
	u32	ref;
	bool	loading;
	bool	hashed;
	bool	on_lru;			/* hashed, loaded and clean, referenced or not */
	bool	lru_ref;		/* hit since eviction last passed it (CLOCK) */
	struct btree_node *hnext;
	int	load_err;
	size_t	mem;
	struct btree_node *lru_prev, *lru_next;
};

/* in btree_node.ref: the node was unhashed while referenced */
#define REF_UNHASHED	(UINT32_C(1) << 31)

/*
 * Node buffers (node_buf.c): node_size slots carved from mmap'd slabs, so
 * that a freed buffer's pages can go back to the system exactly.  Free slots
 * are warm (pages resident: reused without page faults) while the resident
 * ones stay within the cache budget, cold (released) past it.
 */
struct node_slab {
	u8	*base;
	size_t	slots;
};

struct node_bufs {
	bfs_mutex lock;
	bool	ok;			/* initialised (bfs_cache_init) */
	size_t	node_size;
	struct node_slab slab[40];	/* each twice the previous one's slots */
	u32	nr_slab;
	size_t	carved;			/* slots of the last slab handed out so far */
	size_t	out;			/* slots in use */
	size_t	out_bytes;		/* of them resident (a trim gives pages back) */
	size_t	max_resident;		/* out_bytes + warm slots allowed */
	u8	**warm, **cold;		/* free slots, stacks of nr_warm, nr_cold */
	size_t	nr_warm, nr_cold, cap_free;
};

struct btree_cache {
	bfs_mutex lock;
	bfs_cond wait;			/* a node finished loading */
	struct btree_node **table;
	u64	mask;
	u64	bytes;
	u64	budget;
	u64	nr;
	u64	nr_dirty;
	u64	dirty_bytes;
	/* read-ahead only hints the leaves to the page cache (a small budget) */
	bool	ra_hint;
	/*
	 * atomic; well under the budget (and not ra_hint's): a last put need
	 * not evict, so it takes no lock (bfs_cache_put())
	 */
	bool	roomy;
	struct btree_node lru;		/* list head: lru.lru_next = most recent */
	struct node_bufs bufs;
};

struct btree_root {
	bfs_rwlock root_lock;
	struct btree_node *node;	/* holds a reference */
	/* root as recorded on disk by the last checkpoint (c->roots_lock) */
	struct bfs_btree_ptr disk;
	/* salvage opens: found damaged; node may be NULL (root unreadable) */
	bool	damaged;
	u16	damage_code;		/* what was found first (enum bfs_problem_code) */
	char	damage[192];
	/* replayed keys that could not be applied (salvage): seq, then the key */
	u64	*stash;
	size_t	stash_u64s, stash_cap;
};

/*
 * A checkpoint between its snapshot (commit_lock held: every dirty node's
 * pending keys sealed into a bset in memory) and the end of its writes
 * (checkpoint.c, doc/commit.md).
 */
struct ckpt_snap {
	struct btree_node **nodes;	/* referenced, leaves first */
	struct node_wio *io;		/* what to write of each */
	size_t	nr;
	struct bfs_btree_ptr roots[BFS_BTREE_NR];	/* the tree the snapshot sealed */
	u64	new_last;		/* journal seq open at the snapshot */
	u64	alloc_pending;		/* slots pending then: reusable after it */
	u64	journal_bytes;		/* c->journal_bytes then */
};

struct bfs_core {
	struct bfs_dev *dev;
	struct bfs_sb_handle sbh;
	struct bfs_core_opts opts;
	u32	block_size;
	u32	node_size;
	u32	bucket_size;
	u8	csum_type;
	u8	uuid[16];
	u64	node_id;		/* node headers' node_id (0: not used) */
	bool	read_only;
	bool	replayed;		/* the open applied journal keys (a writer checkpoints them) */
	bool	allow_torn;		/* opened after a crash: a torn last bset ends a node */
	int	fatal;			/* sticky error: the core refuses writes (atomic: core_fatal()) */

	struct btree_root trees[BFS_BTREE_NR];
	struct btree_cache cache;
	struct bfs_alloc *alloc;
	struct bfs_journal *j;		/* NULL: no journal */
	u64	journal_capacity;	/* bytes */
	u64	journal_bytes;		/* added since the last checkpoint (estimate) */
	u64	free_check_at;		/* estimate at which to ask the journal for its room */
	u64	nojournal_seq;
	u64	clean_jseq;		/* journal_seq of the clean section read at open */

	bfs_rwlock commit_lock;		/* writer-first; shared: parallel commits (doc/commit.md) */
	bfs_mutex roots_lock;

	/* checkpoints: one at a time; the writes run on their own thread */
	bfs_mutex ck_lock;
	bfs_cond ck_wait;		/* ck_busy or ck_job changed */
	bool	ck_busy;		/* a snapshot was taken and is not yet written */
	struct ckpt_snap *ck_job;	/* for the thread, not yet picked up */
	bool	ck_thread_on, ck_stop;
	bfs_thread ck_thread;
	u64	node_seq_next;
	struct bfs_core_stats stats;

	/* readahead: one background thread reading leaves ahead of scans */
	bfs_mutex ra_lock;
	bfs_cond ra_wait;
	bfs_thread ra_thread;
	bool	ra_running, ra_stop;
	struct { u8 id; u8 count; struct bfs_bpos pos; } ra_queue[16];
	u32	ra_head, ra_tail;
};

/* set in threads whose node read errors are expected and not worth a message */
extern __thread bool bfs_btree_quiet;
/* the core whose commit this thread is in the middle of (journal reclaim hook) */
extern __thread struct bfs_core *bfs_committing;

#define STAT_INC(c, field) __atomic_fetch_add(&(c)->stats.field, 1, __ATOMIC_RELAXED)
#define STAT_ADD(c, field, v) __atomic_fetch_add(&(c)->stats.field, (v), __ATOMIC_RELAXED)

/* ---- node.c: the in-memory node ---- */
/* a node with an uninitialised node_size buffer (read or written before use) */
struct btree_node *bfs_node_alloc(struct bfs_core *c);
void bfs_node_free(struct bfs_core *c, struct btree_node *n);
/* why the node behind child pointer @ptr cannot be read (@ret from the read) */
void bfs_node_explain(struct bfs_core *c, u8 id, const struct bfs_bkey *ptr, int ret,
		      struct bfs_btree_node_info *ni);
size_t bfs_node_mem(struct bfs_core *c, struct btree_node *n);
/* the bytes of n->data that may be resident: what the cache charges for it */
size_t bfs_node_data_resident(struct bfs_core *c, const struct btree_node *n);
/* index of the first key >= pos (nr if none) */
u32 bfs_node_lower_bound(struct btree_node *n, struct bfs_bpos pos);
/* index of the first key > pos */
u32 bfs_node_upper_bound(struct btree_node *n, struct bfs_bpos pos);
/* would adding @bytes of keys still fit in the node's next write? */
bool bfs_node_fits(struct bfs_core *c, struct btree_node *n, size_t bytes);
/* ---- node_keys.c: the sorted view ---- */
/* where an entry is (or would be inserted): chunk and offset in it */
struct node_slot {
	u32	c, off;
};
/* lower bound of @pos: flat index, and its slot if @slot */
u32 bfs_node_search(struct btree_node *n, struct bfs_bpos pos, struct node_slot *slot);
void bfs_node_key_insert_at(struct btree_node *n, struct node_slot slot, struct bfs_bkey *k);
/* make sure @extra inserts can be done without allocating */
int bfs_node_reserve(struct btree_node *n, u32 extra);
void bfs_node_keys_free(struct btree_node *n);
void bfs_node_key_remove(struct btree_node *n, u32 i);
/* replace the whole view with @nr sorted keys */
int bfs_node_keys_set(struct btree_node *n, struct bfs_bkey *const *keys, u32 nr);
/* the same with @fill (1 to NODE_CHUNK) entries a chunk: full ones for leaves few inserts reach */
int bfs_node_keys_set_fill(struct btree_node *n, struct bfs_bkey *const *keys, u32 nr, u32 fill);
/* drop entries (@drop true) and/or replace pointers (@map), in order, in place */
void bfs_node_keys_compact(struct btree_node *n, bool (*drop)(struct bfs_bkey *k, void *ctx),
			   struct bfs_bkey *(*map)(struct bfs_bkey *k, void *ctx), void *ctx);

static inline u32 bfs_node_chunk_of(const struct btree_node *n, u32 i)
{
	u32 lo = 0, hi = n->nch;

	while (hi - lo > 1) {
		u32 mid = lo + (hi - lo) / 2;

		if (n->start[mid] <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static inline struct bfs_bkey *node_key(const struct btree_node *n, u32 i)
{
	u32 c = bfs_node_chunk_of(n, i);

	return n->ch[c]->k[i - n->start[c]];
}

/*
 * Walking the view by slot: the next entry is an increment, where
 * node_key(n, i + 1) would search the chunk starts again.
 */
static inline struct node_slot node_slot_of(const struct btree_node *n, u32 i)
{
	u32 c = bfs_node_chunk_of(n, i);

	return (struct node_slot){ c, i - n->start[c] };
}

static inline struct bfs_bkey *node_slot_key(const struct btree_node *n, struct node_slot s)
{
	return n->ch[s.c]->k[s.off];
}

/* the slot after @s (past the end: chunk nch) */
static inline void node_slot_next(const struct btree_node *n, struct node_slot *s)
{
	if (++s->off == n->ch[s->c]->nr) {
		s->c++;
		s->off = 0;
	}
}

/* the slot before @s, which is not the first */
static inline void node_slot_prev(const struct btree_node *n, struct node_slot *s)
{
	if (!s->off--) {
		s->c--;
		s->off = n->ch[s->c]->nr - 1;
	}
}

/* keys[] and pending ready for one more key of @bytes */
int bfs_node_prepare_insert(struct bfs_core *c, struct btree_node *n, size_t bytes);
/* room for @bytes more of pending keys without allocating */
int bfs_node_reserve_pending(struct btree_node *n, size_t bytes);
void bfs_node_free_pending(struct btree_node *n);
/* is @k one of the unwritten keys (not in data[])? */
static inline bool bfs_node_key_pending(struct bfs_core *c, const struct btree_node *n,
					const struct bfs_bkey *k)
{
	return (const u8 *)k < n->data || (const u8 *)k >= n->data + c->node_size;
}
/* insert/overwrite (caller holds the write lock and did prepare_insert) */
void bfs_node_insert(struct bfs_core *c, struct btree_node *n, const struct bfs_bkey *k, u64 jseq);
/* interior nodes: the child pointer covering @pos */
const struct bfs_bkey *bfs_node_child(struct btree_node *n, struct bfs_bpos pos, u32 *idx);
/* fill a fresh node (no keys) with @nr keys in order; they go to pending */
int bfs_node_fill(struct bfs_core *c, struct btree_node *n, struct bfs_bkey *const *keys, u32 nr);
void bfs_node_ptr(struct btree_node *n, struct bfs_bkey *k);	/* BFS_BTREE_PTR_KEY_U64S */
const char *bfs_node_pos_text(struct bfs_bpos p, char *buf, size_t len);

/* ---- node_io.c ---- */
/*
 * Check and parse @n->data (already read) against the pointer fields in n
 * (offset, seq, btree_id, level, min, max); builds the merged view.
 */
int bfs_node_parse(struct bfs_core *c, struct btree_node *n, char *err, size_t err_len);
int bfs_node_read(struct bfs_core *c, struct btree_node *n);
/* write the header (new node) and/or one bset of the pending keys */
int bfs_node_write(struct bfs_core *c, struct btree_node *n);
/*
 * The same in two steps.  prepare (node write lock held, no other writer):
 * seal the pending keys into a new bset in data[]; returns 1 if there is
 * something to write, described by @w.  io (no lock): write it; data[] in
 * that range never changes again, and the caller's reference keeps it.
 */
struct node_wio {
	u32	start, len;		/* bytes of data[] */
};
int bfs_node_write_prepare(struct bfs_core *c, struct btree_node *n, struct node_wio *w);
int bfs_node_write_io(struct bfs_core *c, struct btree_node *n, const struct node_wio *w);

/* ---- cache.c ---- */
int bfs_cache_init(struct bfs_core *c, u64 budget);
void bfs_cache_exit(struct bfs_core *c);
/* node_buf.c: a node_size buffer for node data (from the pool once set up), NULL */
u8 *bfs_node_buf_get(struct bfs_core *c);
/* @resident: what bfs_node_buf_trim() left of it, or node_size */
void bfs_node_buf_put(struct bfs_core *c, u8 *buf, size_t resident);
/*
 * the pages of @buf past its first @used bytes go back (nothing reads them
 * before a write); returns the bytes left resident, 0 if none went back
 */
size_t bfs_node_buf_trim(struct bfs_core *c, u8 *buf, size_t used);
void bfs_node_bufs_init(struct bfs_core *c, u64 budget);
void bfs_node_bufs_exit(struct bfs_core *c);
void bfs_node_bufs_release_free(struct bfs_core *c);
/* referenced node for child pointer @k (read if needed) */
int bfs_cache_get(struct bfs_core *c, u8 btree_id, const struct bfs_bkey *ptr,
		  struct btree_node **out);
void bfs_cache_put(struct bfs_core *c, struct btree_node *n);
void bfs_cache_put_passed(struct bfs_core *c, struct btree_node *n);
void bfs_cache_ref(struct bfs_core *c, struct btree_node *n);
/* a new (never written) node registered in the cache, referenced */
int bfs_cache_new_node(struct bfs_core *c, u8 btree_id, u8 level, struct bfs_bpos min,
		       struct bfs_bpos max, struct btree_node **out);
/* a read-only core becomes writable: cached nodes with a torn tail get sealed */
void bfs_cache_seal_torn(struct bfs_core *c);
void bfs_cache_set_dirty(struct bfs_core *c, struct btree_node *n, bool dirty);
/* n was replaced: unhash it and give its slot back */
void bfs_cache_kill(struct bfs_core *c, struct btree_node *n);
/* referenced array of all dirty live nodes (for the checkpoint) */
int bfs_cache_dirty_nodes(struct bfs_core *c, struct btree_node ***out, size_t *nr);
void bfs_cache_account(struct bfs_core *c, struct btree_node *n);

/* ---- iter.c ---- */
/* reader descent: leaf covering @pos, referenced and read-locked */
int bfs_btree_descend_read(struct bfs_core *c, u8 id, struct bfs_bpos pos, unsigned target_level,
			   struct btree_node **out);
void bfs_readahead_start(struct bfs_core *c);
void bfs_readahead_stop(struct bfs_core *c);

/* ---- update.c: writer paths (commit_lock held exclusive) ---- */
struct btree_path {
	struct btree_node *n[BFS_BTREE_MAX_DEPTH];
	u32	depth;			/* n[0] = leaf ... n[depth-1] = root */
};
int bfs_path_traverse(struct bfs_core *c, u8 id, struct bfs_bpos pos, struct btree_path *p);
void bfs_path_put(struct bfs_core *c, struct btree_path *p);
/* insert one key into a leaf (split as needed); no extent handling */
int bfs_btree_insert_key(struct bfs_core *c, u8 id, const struct bfs_bkey *k, u64 jseq);
/* one transaction update, extents expanded; @emit sees each blind write applied */
int bfs_btree_apply_update(struct bfs_core *c, u8 id, const struct bfs_bkey *k, u64 jseq,
			   int (*emit)(void *ctx, u8 id, const struct bfs_bkey *k), void *ctx,
			   bool *applied_any);
/* leaf at path->n[0] is sparse: merge it with a sibling if they fit in one */
int bfs_btree_maybe_merge(struct bfs_core *c, u8 id, struct bfs_bpos pos);

/* keys back to back (u64s) */
struct key_list {
	u64	*buf;
	size_t	used, cap;		/* u64s */
};
/* room for @u64s more */
int bfs_key_list_reserve(struct key_list *l, size_t u64s);
int bfs_key_list_add(struct key_list *l, const struct bfs_bkey *k);

/*
 * The leaves a parallel commit (commit_lock shared) holds, write-locked and
 * referenced, in the order taken (update_par.c, doc/commit.md).
 */
#define LEAF_SET_MAX	16
struct leaf_set {
	struct btree_node *n[LEAF_SET_MAX];
	size_t	bytes[LEAF_SET_MAX];	/* key bytes planned for each */
	bool	changed[LEAF_SET_MAX];
	u32	nr;
	bool	locked;			/* false: only referenced (bfs_par_collect) */
};
/*
 * index in @ls of the leaf covering @pos, locking it if new; -EAGAIN when
 * it would have to wait out of order or the set is full
 */
int bfs_leaf_set_get(struct bfs_core *c, struct leaf_set *ls, u8 id, struct bfs_bpos pos, u32 *idx);
/*
 * The blind writes (into @out) that insert extent @k (or delete its range if
 * it is a BFS_KEY_DELETED key with a size): existing extents overlapping
 * [start, end) are trimmed, split or deleted, then @k itself is added.
 * @ls: a parallel commit's leaves (each leaf read is locked into it), or
 * NULL with commit_lock exclusive.
 */
int bfs_extent_ops(struct bfs_core *c, u8 id, const struct bfs_bkey *k, struct key_list *out,
		   struct leaf_set *ls);

/* a commit applied with commit_lock shared (update_par.c) */
struct par_commit {
	struct leaf_set ls;
	struct key_list ops;		/* records: u64 header (btree id, leaf), then the key */
	u32	extents_seen;		/* bit per btree id */
	bool	sparse;			/* a leaf lost keys and may be merged */
};
/* first, for each update: reference the leaf it starts in, unlocked */
int bfs_par_collect(struct bfs_core *c, struct par_commit *pc, u8 id, const struct bfs_bkey *k);
/* then lock every leaf collected, in lock order */
void bfs_par_lock_all(struct par_commit *pc);
/* plan one update: lock any further leaves and record its blind writes; -EAGAIN: go exclusive */
int bfs_par_plan(struct bfs_core *c, struct par_commit *pc, u8 id, const struct bfs_bkey *k);
/* does every leaf have room for what was planned?  -EAGAIN if not */
int bfs_par_check_room(struct bfs_core *c, struct par_commit *pc);
/* insert the planned writes; @emit as for bfs_btree_apply_update */
int bfs_par_apply(struct bfs_core *c, struct par_commit *pc, u64 jseq,
		  int (*emit)(void *ctx, u8 id, const struct bfs_bkey *k), void *ctx,
		  bool *applied_any);
/* bfs_trans_set_fixup()'s @fn on each planned write to a non-extent btree */
void bfs_par_fixup(struct par_commit *pc, bfs_trans_fixup_fn fn, void *ctx);
/* mark changed leaves dirty, unlock and release them */
void bfs_par_end(struct bfs_core *c, struct par_commit *pc);

/* ---- split.c ---- */
/*
 * rewrite path->n[level] (compact or split); @insert: the position about to
 * be inserted, if known (an append splits near the end); -EAGAIN:
 * retraverse and retry
 */
int bfs_btree_node_rewrite(struct bfs_core *c, u8 id, struct btree_path *p, unsigned level,
			   const struct bfs_bpos *insert);
/* the same without a split: the node's live keys copied to a new slot (shrink) */
int bfs_btree_node_move(struct bfs_core *c, u8 id, struct btree_path *p, unsigned level);
/* 1: merged, 0: skipped (no room in the parent), or -errno */
int bfs_btree_merge_siblings(struct bfs_core *c, u8 id, struct btree_path *p,
			     struct btree_node *left, struct btree_node *right);
u64 bfs_new_node_seq(struct bfs_core *c);

/* ---- core ---- */
/* a whole checkpoint, waiting for one in the background first (commit_lock held) */
int bfs_core_checkpoint_locked(struct bfs_core *c);
/* checkpoint.c: the two halves of a checkpoint; ckpt_bg.c runs the second */
int bfs_ckpt_snapshot(struct bfs_core *c, struct ckpt_snap *s);
int bfs_ckpt_write(struct bfs_core *c, struct ckpt_snap *s);
/* ckpt_bg.c */
int bfs_ckpt_thread_start(struct bfs_core *c);
void bfs_ckpt_thread_stop(struct bfs_core *c);
/* hand a snapshot to the thread (it frees it); -EAGAIN: no thread, write it yourself */
int bfs_ckpt_queue(struct bfs_core *c, struct ckpt_snap *s);
/* wait until no checkpoint is between snapshot and written */
void bfs_ckpt_wait_idle(struct bfs_core *c);
/* claim the checkpoint slot: false if one is already busy */
bool bfs_ckpt_try_begin(struct bfs_core *c);
void bfs_ckpt_end(struct bfs_core *c);
bool bfs_core_any_damaged(struct bfs_core *c);
/* salvage: remember the first damage found in btree @id (the finding fsck reports) */
void bfs_core_note_damage(struct bfs_core *c, u8 id, unsigned code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* salvage: keep a replayed key that cannot be applied to damaged btree @id */
int bfs_core_stash_key(struct bfs_core *c, u8 id, const struct bfs_bkey *k, u64 seq);
int bfs_core_check_writable(struct bfs_core *c);
void bfs_core_set_fatal(struct bfs_core *c, int err, const char *what);
/* reserve slots for a commit of @nr_updates; -ENOSPC */
int bfs_core_reserve_nodes(struct bfs_core *c, u32 nr_updates, bool only_deletes);
/* would bfs_core_reserve_nodes() have to checkpoint or fail?  (commit_lock shared is enough) */
bool bfs_core_nodes_short(struct bfs_core *c, u32 nr_updates, bool only_deletes);
/*
 * commit_lock held: if the journal or the dirty cache is filling up, take a
 * snapshot for the checkpoint thread, or wait for the one it is writing
 * when that is falling behind
 */
int bfs_core_maybe_checkpoint(struct bfs_core *c);
/* would bfs_core_maybe_checkpoint() do anything?  (no lock needed) */
bool bfs_core_checkpoint_due(struct bfs_core *c);
/* record the roots in the clean section and write the superblock */
int bfs_core_write_clean(struct bfs_core *c, bool set_clean);
/* journal hooks (checkpoint.c) */
int bfs_core_reclaim_hook(void *ctx, u64 want_seq);
u32 bfs_core_pre_write_hook(void *ctx, void *buf, u32 max_u64s);
/* read the journal, load the roots, replay (replay.c) */
int bfs_core_journal_start(struct bfs_core *c, u64 clean_seq, bool replay,
			   int (*load_roots)(struct bfs_core *c, const struct bfs_btree_ptr *roots,
					     const bool *have),
			   bool *replayed);

static inline void bfs_commit_lock(struct bfs_core *c) { bfs_write_lock(&c->commit_lock); }
/* parallel commits (update_par.c): the tree's shape stays as it is */
static inline void bfs_commit_lock_shared(struct bfs_core *c) { bfs_read_lock(&c->commit_lock); }
static inline void bfs_commit_unlock(struct bfs_core *c) { bfs_rwlock_unlock(&c->commit_lock); }

/* written under commit_lock, read by any thread (writability checks) */
static inline int core_fatal(const struct bfs_core *c)
{
	return __atomic_load_n(&c->fatal, __ATOMIC_ACQUIRE);
}

/* under the write lock, after changing keys[] (or killing the node) */
static inline void bfs_node_changed(struct btree_node *n)
{
	__atomic_store_n(&n->mod_seq, n->mod_seq + 1, __ATOMIC_RELEASE);
}

static inline u64 bfs_node_mod_seq(const struct btree_node *n)
{
	return __atomic_load_n(&n->mod_seq, __ATOMIC_ACQUIRE);
}

static inline struct bfs_bset *bset_at(struct btree_node *n, u32 off)
{
	return (struct bfs_bset *)(n->data + off);
}

static inline const struct bfs_btree_ptr *bkey_ptr_val(const struct bfs_bkey *k)
{
	return (const struct bfs_btree_ptr *)k->v;
}

#endif /* BFS_BTREE_INTERNAL_H */
