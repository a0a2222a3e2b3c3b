/* SPDX-License-Identifier: MIT */
/* Private to libcore/journal/: the in-memory journal. */
#ifndef BFS_JOURNAL_TYPES_H
#define BFS_JOURNAL_TYPES_H

#include <bfs/journal.h>
#include <bfs/os.h>

/* an entry being filled by appends, or being written */
struct journal_buf {
	struct bfs_jset	*jset;		/* max_bytes, block aligned */
	u32		u64s;		/* payload filled so far */
};

struct bfs_journal {
	struct bfs_dev	*dev;
	u64		start;		/* byte offset of ring bucket 0 */
	u32		nbuckets;
	u32		bucket_size;
	u32		block_size;
	u8		uuid[16];
	u32		max_bytes;	/* largest entry, header and padding included */
	u32		max_u64s;	/* payload capacity of one entry */
	u32		soft_u64s;	/* appends to a non-empty entry stop here */

	bfs_mutex	lock;		/* protects everything below */
	bfs_cond	wait;		/* broadcast on every state change */

	bool		read_done;	/* bfs_journal_read() succeeded */
	int		err;		/* sticky: a write failed, the journal is dead */

	/*
	 * buf[cur] is the open entry (seq cur_seq).  While a write is in
	 * progress, buf[cur ^ 1] holds entry cur_seq - 1 and only the writer
	 * touches it.
	 */
	struct journal_buf buf[2];
	unsigned	cur;
	u64		cur_seq;
	bool		writing;	/* some thread owns the write path */

	u64		written_seq;	/* newest seq written; durable (all writes flush) */
	u64		last_seq;	/* oldest seq still needed (in memory) */
	u64		durable_last_seq; /* last_seq of the newest durable entry */

	/* ring position of the next write */
	u32		wr_bucket;
	u32		wr_offset;
	/* per ring bucket: newest live seq written into it, 0 = none */
	u64		*bucket_seq;

	bool		needs_reset;	/* the last read found damage or garbage */
	u64		replay_first;
	u64		replay_last;

	int		(*reclaim_fn)(void *ctx, u64 want_seq);
	void		*reclaim_ctx;
	/* the flusher: writes entries that appends filled (journal.c) */
	bfs_thread	flusher;
	bfs_cond	flusher_wake;	/* flush_wanted or flusher_stop set (not every change) */
	bool		flusher_on, flusher_stop;
	bool		flush_wanted;	/* the open entry is full: write it */
	u64		flusher_writes;	/* write attempts made for flush_wanted */
	int		flusher_ret;	/* result of the last one (-ENOSPC: ring full) */
	u32		(*pre_write_fn)(void *ctx, void *buf, u32 max_u64s);
	void		*pre_write_ctx;
	u32		reserve_u64s;
};

static inline u64 journal_bucket_offset(const struct bfs_journal *j, u32 bucket)
{
	return j->start + (u64)bucket * j->bucket_size;
}

#endif /* BFS_JOURNAL_TYPES_H */
