/* SPDX-License-Identifier: MIT */
/*
 * The open filesystem core: superblock, journal, btrees, node cache and
 * metadata allocator (libcore/core/).
 *
 *   bfs_core_format()  after bfs_sb_layout(): writes an empty root node for
 *                      every btree and the clean section into *sb (the caller
 *                      then writes the superblock, with BFS_SB_CLEAN set)
 *   bfs_core_open()    reads the superblock, opens the journal and replays it
 *                      unless the filesystem was closed cleanly; a read-write
 *                      open clears BFS_SB_CLEAN on disk first, so a crash
 *                      from then on leads to replay; it is refused (-EROFS)
 *                      when the superblock has unknown ro_compat features
 *   bfs_core_flush()   everything committed so far becomes durable
 *   bfs_core_close()   flush, write every dirty node, record the roots in the
 *                      clean section and set BFS_SB_CLEAN; frees the handle
 *                      (also on error)
 *
 * All functions return 0 or a negative errno; -EUCLEAN means corrupt
 * metadata (a message naming the place went to bfs_err()), -EROFS a write on
 * a read-only core or after a fatal error.
 */
#ifndef BFS_CORE_H
#define BFS_CORE_H

#include "btree_format.h"
#include "dev.h"
#include "finding.h"
#include "format.h"

struct bfs_core;
struct bfs_alloc;

struct bfs_core_opts {
	bool	read_only;	/* never write the device (no replay writes either) */
	bool	no_replay;	/* ignore the journal: use the clean-section roots
				   (debugging damaged images; implies read_only) */
	bool	no_journal;	/* tests: don't use the journal; durability only
				   at bfs_core_flush()/checkpoints/close, which
				   rewrite the superblock's clean section */
	u64	cache_bytes;	/* node cache budget; 0 = BFS_CORE_DEFAULT_CACHE */
	/*
	 * fsck repair: open even when btrees are damaged, writable.  A damaged
	 * btree (bad root, unreadable interior node) is marked so
	 * (bfs_core_btree_damaged()) and may have no root at all; replayed keys
	 * that cannot be applied to it are kept aside for bfs_btree_rebuild();
	 * nothing is checkpointed at open.  Only fsck uses this.
	 */
	bool	salvage;

	/*
	 * fsck: instead of failing on a damaged journal, replay its
	 * consistent prefix (bfs_journal_recover(), salvage) and pass each
	 * piece of damage to @journal_finding (NULL: log it).  A read-write
	 * open makes the replayed state durable (checkpoint, then the roots
	 * and seq in the superblock's clean section) and erases the journal,
	 * so the next open finds a sound one.  Without it a read-write open
	 * still erases garbage found in the journal of a cleanly closed
	 * filesystem before it writes anything.
	 */
	bool	salvage_journal;
	bfs_finding_fn journal_finding;
	void	*journal_finding_ctx;

	/*
	 * Space used by upper layers (file data) must be known to the
	 * allocator before the core allocates any node, and replay can split
	 * nodes.  So open calls, when set, after the roots are loaded and
	 * before replay:
	 *   space_replay_key(ctx, c, id, k)  for every key replay will apply,
	 *                                 in order, before any is applied
	 *   space_init(ctx, c)            once, after those: mark what is in
	 *                                 use, by the committed btrees
	 *                                 (iterators work) and the keys seen
	 */
	int	(*space_init)(void *ctx, struct bfs_core *c);
	int	(*space_replay_key)(void *ctx, struct bfs_core *c, unsigned btree_id,
				    const struct bfs_bkey *k);
	void	*space_ctx;
	/*
	 * migrate: a bitmap indexed by bucket of space owned by someone else
	 * (the ext filesystem being converted); no node is placed there.
	 */
	const u64 *avoid_buckets;
};

/*
 * Default node cache budget.  Big on purpose: like LMDB's use of the page
 * cache, lookups are only fast while the nodes they touch are cached (a
 * miss reads a whole node).  Memory is only used as nodes are touched; tools
 * that walk huge filesystems (fsck) pass a small budget instead.
 */
#define BFS_CORE_DEFAULT_CACHE	(2 * GiB)

int bfs_core_format(struct bfs_dev *dev, struct bfs_sb *sb);
/* the same, with no root node in a bucket set in @avoid (bitmap, may be NULL) */
int bfs_core_format_avoid(struct bfs_dev *dev, struct bfs_sb *sb, const u64 *avoid);
int bfs_core_open(struct bfs_dev *dev, const struct bfs_core_opts *opts, struct bfs_core **out);
int bfs_core_close(struct bfs_core *c);
/*
 * Make read-only core @c writable in place, keeping what its open read and
 * replayed (node cache, journal state): what a writable open does after
 * replay is done now (the clean flag cleared, the replay checkpointed, the
 * journal's threads started).  For fsck, whose first pass must not write
 * before it has checked the btrees; the core must have been opened with
 * the space hooks of the layer that will write (bfs_fs_prepare()), not
 * with no_replay, on a writable device, and with nothing damaged (else
 * -EROFS, and it stays read-only).  After a failure it refuses writes.
 */
int bfs_core_make_writable(struct bfs_core *c);
/* bfs_core_open() calls so far in this process (tests: how often fsck opens) */
u64 bfs_core_open_count(void);
/*
 * Check the journal of the filesystem whose superblock is @sb as an open
 * would read it (clean or not, every sub-entry checked), replaying and
 * writing nothing, and pass each piece of damage to @fn.  For fsck, which
 * then repairs with an open with salvage_journal.
 */
int bfs_core_check_journal(struct bfs_dev *dev, const struct bfs_sb *sb, bfs_finding_fn fn,
			   void *ctx);
int bfs_core_flush(struct bfs_core *c);
/* make the commit that returned @seq (and everything before it) durable */
int bfs_core_flush_seq(struct bfs_core *c, u64 seq);
/*
 * Write every dirty node (appending one bset per node), then let the journal
 * drop everything older.  Runs by itself when the journal or the dirty part of
 * the cache fills up; exposed for tests and tools.
 */
int bfs_core_checkpoint(struct bfs_core *c);

/* salvage opens: was btree @id found damaged at open (or by replay)? */
bool bfs_core_btree_damaged(struct bfs_core *c, unsigned id);
/* and what was found (a problem code and one line), if it was */
bool bfs_core_btree_damage(struct bfs_core *c, unsigned id, unsigned *code, const char **what);

/*
 * fsck: note in the superblock section BFS_SB_FIELD_REPAIR that a rebuild of
 * btree @id happened and whether it lost data; written with the superblock
 * at the next clean close.
 */
int bfs_core_note_rebuild(struct bfs_core *c, unsigned id, bool lost_data);

/* for the filesystem's data allocator, which shares the bucket space */
struct bfs_alloc *bfs_core_alloc(struct bfs_core *c);
bool bfs_core_is_read_only(struct bfs_core *c);
/* levels of the deepest btree (1: its root is a leaf) */
unsigned bfs_core_max_depth(struct bfs_core *c);

/* the in-memory superblock (valid while the core is open) */
const struct bfs_sb *bfs_core_sb(struct bfs_core *c);
/*
 * Change the superblock of a read-write core: @fn gets the current one and
 * @next, a copy of it (a BFS_SB_MAX_BYTES buffer), changes @next and writes
 * it to @dev (bfs_sb_write() order); on 0 @next becomes the in-memory
 * superblock, which every later superblock write of the core starts from.
 * @fn runs under the commit lock: no commit, checkpoint or superblock write
 * runs meanwhile, and it must not commit.  -EROFS on a read-only core, the
 * fatal error after one, else what @fn returns.
 */
typedef int (*bfs_core_sb_fn)(void *ctx, struct bfs_dev *dev, const struct bfs_sb *cur,
			      struct bfs_sb *next);
int bfs_core_sb_update(struct bfs_core *c, bfs_core_sb_fn fn, void *ctx);
/*
 * Refuse every write from now on, as after a failed one (logged once with
 * @why; the close writes nothing either, so the next open replays the
 * journal).  bfs_core_error(): that error, or 0 while writes are allowed.
 */
void bfs_core_stop_writes(struct bfs_core *c, int err, const char *why);
int bfs_core_error(struct bfs_core *c);
struct bfs_dev *bfs_core_dev(struct bfs_core *c);

struct bfs_core_stats {
	u64	cache_bytes;		/* memory held by cached nodes */
	u64	cache_budget;
	u64	cache_nodes;
	u64	cache_dirty_nodes;
	u64	cache_hits;
	u64	cache_misses;
	u64	cache_evictions;
	u64	node_reads;
	u64	node_writes;		/* bset appends + full node writes */
	u64	node_write_bytes;
	u64	splits;
	u64	compactions;
	u64	merges;
	u64	checkpoints;
	u64	checkpoints_background;	/* of those, written by the checkpoint thread */
	u64	commits;
	u64	commits_parallel;	/* of those, applied with commit_lock shared (doc/commit.md) */
	u64	replayed_keys;
	u64	meta_slots_total;	/* node-sized slots usable for metadata */
	u64	meta_slots_used;
	u64	readahead_hints;	/* leaves handed to the page cache ahead of scans */
};

void bfs_core_get_stats(struct bfs_core *c, struct bfs_core_stats *s);

/*
 * Between phases that read different nodes (fsck's passes): the clean
 * leaves nobody holds leave the node cache, and the free node buffers give
 * their pages back, so the next phase's peak does not sit on this one's.
 */
void bfs_core_trim_cache(struct bfs_core *c);

#endif /* BFS_CORE_H */
