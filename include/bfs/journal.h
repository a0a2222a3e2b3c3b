/* SPDX-License-Identifier: MIT */
/*
 * The journal (libcore/journal/): a ring of buckets holding checksummed
 * entries (jsets, see journal_format.h and doc/format/journal.md).
 *
 * Invariants the implementation keeps:
 *  - seqs are written in order, +1 per entry; every entry is written as a
 *    FLUSH entry (device flush, then the entry with FUA), so once an entry's
 *    write returns it and everything written to the device before it is
 *    durable, and a crash can only lose or tear the entry being written;
 *  - an entry whose seq is >= the last_seq recorded in the newest durable
 *    entry is never overwritten; a bucket boundary is only crossed when the
 *    bucket after the new one is also reusable (or becomes so with the entry
 *    being written), so there is always room for the entry that records an
 *    advanced last_seq;
 *  - replay covers [newest.last_seq, newest.seq] of the newest valid entry;
 *    every seq in that range must be present and valid.
 *
 * Locking: one mutex inside struct bfs_journal; every call may be made from
 * any thread.  The reclaim and pre-write hooks are called without it.
 *
 * Rule for the btree layer (write-ahead): before writing a btree node that
 * contains keys journalled in seq S, call bfs_journal_flush_seq(S), so a
 * node on disk never holds updates the journal could lose in a crash.
 *
 * All functions return 0 or a negative errno:
 *   -EINVAL  bad geometry or argument, or append before bfs_journal_read()
 *   -E2BIG   an append that cannot fit in one entry (callers split)
 *   -ENOSPC  the ring is full and the reclaim hook could not free space
 *   -EUCLEAN corrupt journal inside the replay range (message via bfs_err())
 *   -EDEADLK a hook called back into the journal in a way that would wait
 *            for itself (see bfs_journal_set_reclaim())
 *   -EIO etc from the device; after a failed write the journal is dead and
 *            every later append/flush returns that error
 */
#ifndef BFS_JOURNAL_H
#define BFS_JOURNAL_H

#include "dev.h"
#include "finding.h"
#include "format.h"
#include "journal_format.h"
#include "super.h"		/* BFS_ERR_LEN */

struct bfs_journal;

struct bfs_journal_geom {
	struct bfs_dev *dev;
	u64	start;		/* bytes; multiple of block_size */
	u32	nbuckets;	/* >= 2 (format uses >= BFS_MIN_JOURNAL_BUCKETS) */
	u32	bucket_size;	/* bytes, power of two, >= block_size */
	u32	block_size;	/* bytes, power of two, 512 .. 64 KiB */
	u8	uuid[16];
};

/* the journal location recorded in a superblock */
void bfs_journal_geom_from_sb(const struct bfs_sb *sb, struct bfs_dev *dev,
			      struct bfs_journal_geom *g);

int  bfs_journal_open(const struct bfs_journal_geom *g, struct bfs_journal **out);
/* frees; does NOT flush: the caller flushes first */
void bfs_journal_close(struct bfs_journal *j);

/*
 * Scan the ring and replay: calls @fn for every sub-entry of every entry
 * with seq in [max(newest.last_seq, min_seq + 1), newest.seq], in seq order
 * and in the order the sub-entries were added.  A missing or corrupt entry
 * inside that range gives -EUCLEAN and a bfs_err() naming offset and seq; a
 * torn or corrupt entry after the newest valid one is the tail of an
 * interrupted write and ends the log.  Entries with another UUID are not
 * ours and are ignored.  @fn returning non-zero stops the scan and is
 * returned.  Must be called once before any append; afterwards appends
 * continue with seq max(newest, min_seq) + 1 (1 on an empty ring).
 */
int  bfs_journal_read(struct bfs_journal *j, u64 min_seq,
		      int (*fn)(void *ctx, u64 seq, const struct bfs_jset_entry *e),
		      void *ctx);

/*
 * bfs_journal_read() with choices.  What is a torn write (a crash state,
 * ignored) and what is damage is decided as doc/format/journal.md
 * ("Recovery") says; every piece of damage becomes one finding (problem
 * code, the entry's offset, bucket and seq) passed to @finding, or, without
 * it, one log line.
 *   clean    the filesystem was shut down cleanly at @min_seq: nothing is
 *            replayed and nothing in the journal is needed, so damage never
 *            fails the read; entries written after @min_seq are garbage
 *            (JOURNAL_STALE) and bfs_journal_needs_reset() says so, unless
 *            they are valid and continue the log right after @min_seq
 *            (JOURNAL_AFTER_CLEAN): the clean flag is out of date, and they
 *            are replayed as after a crash (@fn sees them; needs_reset
 *            stays false: they are needed until a checkpoint holds them);
 *   salvage  damage inside the replay range does not fail the read: the
 *            consistent prefix (every entry before the first damaged,
 *            missing or out-of-sequence one) is replayed, the rest is
 *            discarded; appends then use seqs above every entry on disk and
 *            start in a bucket the replayed entries do not use, and the
 *            first entry written needs nothing older (the caller makes the
 *            replayed state durable before anything else is written, as a
 *            checkpoint does), then calls bfs_journal_reset();
 *   check    called for every sub-entry of every valid entry after @min_seq
 *            during the scan, before anything is replayed; non-zero (with a message in
 *            @err, BFS_ERR_LEN) makes the entry damaged (JOURNAL_ENTRY_INVALID).
 */
struct bfs_journal_read_opts {
	u64	min_seq;
	bool	clean;
	bool	salvage;
	int	(*check)(void *ctx, u64 seq, const struct bfs_jset_entry *e, char *err);
	void	*check_ctx;
	bfs_finding_fn finding;
	void	*finding_ctx;
};
int  bfs_journal_recover(struct bfs_journal *j, const struct bfs_journal_read_opts *opts,
			 int (*fn)(void *ctx, u64 seq, const struct bfs_jset_entry *e),
			 void *ctx);
/* after a read: the journal holds damage or garbage that bfs_journal_reset() should erase */
bool bfs_journal_needs_reset(struct bfs_journal *j);
/*
 * Erase every entry of this filesystem in the ring (each block that starts
 * with journal magic is zeroed; a device flush follows) and restart it
 * empty: appends continue at ring bucket 0 with the next seq, needing
 * nothing older.  Only when nothing on disk needs the journal any more (a
 * clean filesystem, or roots and clean seq just written to the superblock).
 * Before the first append.
 */
int  bfs_journal_reset(struct bfs_journal *j);

/* after bfs_journal_read(): the seqs that were replayed (*first > *last: none) */
void bfs_journal_replay_range(struct bfs_journal *j, u64 *first, u64 *last);

/*
 * Append sub-entries (@u64s in total, laid out back to back with their
 * headers) to the open entry; *seq_out (may be NULL) is the seq of the entry
 * that will contain them.  If the open entry is full it is written out first
 * (without waiting for anyone else) and a new one opened.  May block while
 * the reclaim hook makes room.
 */
int  bfs_journal_add(struct bfs_journal *j, const void *entries, u32 u64s, u64 *seq_out);
/*
 * A thread that writes the open entry when appends fill it, so an append
 * (often made under the caller's own commit lock) waits for a buffer swap
 * instead of a device flush and a write.  Flushes (bfs_journal_flush_seq)
 * are still written by the first caller that needs one, which others then
 * share.  Started by the btree core on a writable open; stopped by
 * bfs_journal_close() at the latest.
 */
int  bfs_journal_start_flusher(struct bfs_journal *j);
void bfs_journal_stop_flusher(struct bfs_journal *j);
/*
 * Appends from now on go to a new entry: a non-empty open entry is handed
 * to the flusher, and this waits only until it took it (and for a write
 * already in flight), not for its I/O; without a flusher it is written
 * here.  A btree checkpoint snapshot uses it so that keys committed after
 * the snapshot carry a newer seq than every key it sealed.
 */
int  bfs_journal_close_entry(struct bfs_journal *j);
/* largest @u64s a single bfs_journal_add() accepts */
u32  bfs_journal_max_add_u64s(struct bfs_journal *j);

/*
 * Make every entry up to and including @seq durable, writing the open entry
 * if needed.  Concurrent callers share writes (group commit).  A @seq beyond
 * the open entry is treated as the open entry.
 */
int  bfs_journal_flush_seq(struct bfs_journal *j, u64 seq);
/*
 * Everything added so far; returns at once if that is already durable.  To
 * get a new entry written even with nothing added (e.g. so the pre-write hook
 * records roots that changed, or at unmount after the last node writes), use
 * bfs_journal_flush_seq(j, bfs_journal_cur_seq(j)).
 */
int  bfs_journal_flush(struct bfs_journal *j);

/*
 * Bytes of entries (headers and block padding included) that can surely be
 * written before the ring needs reclaim, with the current last_seq (a lower
 * bound: the current bucket is never counted as the spare).  Entries never
 * cross buckets, so each bucket change may also lose up to one entry's size
 * at the end of the bucket left.  For callers that checkpoint ahead of time
 * instead of from the reclaim hook (because the hook runs inside an append
 * and their checkpoint needs locks the appender holds).
 */
u64  bfs_journal_free_bytes(struct bfs_journal *j);

/* oldest seq still needed: entries below it may be overwritten; only moves forward */
void bfs_journal_set_last_seq(struct bfs_journal *j, u64 seq);
u64  bfs_journal_cur_seq(struct bfs_journal *j);	/* seq of the open (unwritten) entry */
u64  bfs_journal_last_seq(struct bfs_journal *j);
u64  bfs_journal_durable_seq(struct bfs_journal *j);	/* newest seq on stable storage */

/*
 * Called without journal locks when the ring has no room: must write dirty
 * btree nodes and call bfs_journal_set_last_seq() so that last_seq becomes at
 * least @want_seq; returns 0 or -errno (an error is passed to the caller of
 * add/flush).  want_seq is never beyond the open entry, so only seqs already
 * durable need to be unpinned; the hook may call bfs_journal_add() and
 * bfs_journal_flush_seq() for seqs < want_seq, but a flush of a later seq
 * from inside the hook returns -EDEADLK (it would wait for itself).
 */
void bfs_journal_set_reclaim(struct bfs_journal *j, int (*fn)(void *ctx, u64 want_seq),
			     void *ctx);
/*
 * Called without journal locks just before an entry is written, to append
 * sub-entries (the btree layer adds its roots to every entry so replay finds
 * them in the newest one).  Writes at most @max_u64s into @buf and returns
 * the u64s used.  Appends leave @reserve_u64s free in every entry for it.
 * The hook must not call bfs_journal_add() or flush.
 */
void bfs_journal_set_pre_write(struct bfs_journal *j,
			       u32 (*fn)(void *ctx, void *buf, u32 max_u64s),
			       void *ctx, u32 reserve_u64s);

/*
 * Every valid entry of this filesystem in the ring, in ring order (not seq
 * order), with its byte offset on the device; for debugging tools.  Needs no
 * bfs_journal_read().  @fn returning non-zero stops the walk and is returned.
 */
int  bfs_journal_walk(struct bfs_journal *j,
		      int (*fn)(void *ctx, u64 offset, const struct bfs_jset *jset), void *ctx);

/*
 * Check one entry read from byte @offset of the device; @avail bytes of
 * buffer follow @jset (the rest of its bucket).  Returns
 *   0         valid
 *   -ENODATA  no entry here (bad magic)
 *   -ESTALE   an entry of another filesystem (UUID differs)
 *   -EUCLEAN  ours but corrupt: flags, seq/last_seq, length out of bounds,
 *             bad checksum, sub-entry overrunning the entry
 * and, if @err is non-NULL, writes one line (BFS_ERR_LEN) saying exactly what
 * is wrong, naming offset and seq.
 */
int  bfs_jset_validate(const struct bfs_jset *jset, size_t avail, const u8 uuid[16],
		       u64 offset, char *err);

/* name of a sub-entry type ("btree_keys", ...) or "unknown" */
const char *bfs_jset_entry_type_name(unsigned type);

#endif /* BFS_JOURNAL_H */
