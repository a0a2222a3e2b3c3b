/* SPDX-License-Identifier: MIT */
/*
 * Private state and helpers of the data half of the filesystem layer
 * (data*.c, extent*.c, alloc_data*.c, gc*.c); see doc/format/data.md.
 *
 * Locking, outermost first:
 *   inode lock (fs_internal.h)   every change to a file's extents, or
 *   a range of it (range_lock.h) a write inside its size: its blocks
 *   d->lock                      the bucket table, write point, free lists
 * Data commits hold no lock of this layer across the commit: a bucket's
 * alloc key value is computed from the bucket table at apply time, under
 * the btree's lock of the key's leaf (bfs_trans_set_fixup()), so commits
 * that write one bucket's key reach the journal in the order their values
 * were computed (doc/commit.md, "Data commits").
 * Data I/O happens under the inode lock or a range of it only.
 */
#ifndef BFS_FS_DATA_H
#define BFS_FS_DATA_H

#include "chunk_policy.h"
#include "fs_internal.h"

struct bfs_alloc;

struct bfs_bucket {
	u32	gen;
	bool	data;		/* owned by the data allocator */
	bool	open;		/* the write point appends to it */
	bool	pending_free;	/* emptied; reusable once that is durable */
	bool	shared;		/* btree nodes found in it at open: never released */
	bool	premarked;	/* open: taken from the metadata allocator before replay */
	bool	premark_nodes;	/* open: btree nodes were in it before replay; replay decides */
	u8	replayed;	/* open, before replay: what its alloc keys say (BUCKET_*) */
	u32	inflight;	/* chunks written into it, not committed yet */
	u32	committing;	/* data commits with a delta for it, not returned yet */
	u64	live;		/* sectors of extents pointing into it, as applied */
};

/* a zeroed table of @nbuckets buckets and its release (alloc_data.c) */
struct bfs_bucket *bfs_data_table_alloc(u64 nbuckets);
void bfs_data_table_free(struct bfs_bucket *b, u64 nbuckets);

/* struct bfs_bucket replayed */
enum {
	BUCKET_REPLAYED		= 1,	/* a replayed alloc key for it, */
	BUCKET_REPLAYED_DATA	= 2,	/* the last of which says data */
	BUCKET_REPLAYED_DATA_ONCE = 4,	/* one of them said data */
	BUCKET_COMMITTED_DATA	= 8,	/* the committed alloc btree says data */
};

struct bfs_fs_data {
	struct bfs_fs	*fs;
	struct bfs_core	*c;
	struct bfs_alloc *a;
	struct bfs_dev	*dev;
	u32	block_size;
	u32	bucket_size;
	u32	node_size;
	u32	chunk_max;		/* bytes of uncompressed data per chunk */
	struct bfs_chunk_policy chunk;	/* how new writes are cut (at most chunk_max) */
	u64	first_bucket, nbuckets;
	u8	csum_type;
	u8	compression;
	int	level;
	u64	reserve_slots;		/* metadata slots data never takes */

	bfs_mutex lock;
	bfs_mutex gc_lock;
	struct bfs_bucket *b;		/* indexed by bucket number */
	u64	wp_bucket;		/* write point: open bucket, 0 = none */
	u64	wp_fill;		/* bytes used in it */
	u64	find_cursor;		/* bfs_alloc_bucket_find() resumes below it */
	u64	*pending;		/* buckets waiting for a journal flush */
	size_t	nr_pending, cap_pending;
	u64	pending_removed;	/* entries ever taken off the front of pending */
	bool	discarding;		/* a release is discarding its batch (-o discard) */
	u64	nr_data_buckets;
	u64	fence;			/* 0, or: buckets from here on are never handed out (shrink) */
	/* open: free slots of premark_nodes buckets, held away from replay's splits */
	u64	*held_slots;
	size_t	nr_held_slots, cap_held_slots;
};

/* one chunk as written to the device, before its key is committed */
struct data_chunk {
	u64	dev_off;
	u64	bucket;
	u32	gen;
	u32	stored_bytes;		/* compressed or raw */
	u32	disk_bytes;		/* stored_bytes rounded up to the block size */
	u32	chunk_sectors;
	u64	csum;
	u8	compression;
};

/* the alloc-side effects of one data transaction */
struct data_delta {
	u64	bucket;
	s64	sectors;
	u32	inflight;		/* chunks of this update that end their in-flight state */
	bool	staged;			/* its alloc key is in the transaction */
	bool	fixed;			/* ... and its value computed: @sectors is in live */
};

struct data_update {
	struct bfs_trans *t;
	struct bfs_fs_data *fixup_d;	/* data_update_commit() */
	struct data_delta *d;
	size_t	nr, cap;
	s64	inode_sectors;
	/* data_queue_write(): out of space, return -EAGAIN instead of running
	   copy-GC under the inode lock (the caller can drop the lock for it) */
	bool	gc_unlocked;
	unsigned gc_tries;
	/*
	 * data_queue_write(): with nothing queued yet and every chunk replacing
	 * whole blocks, drop this fs's lock of the inode for the device writes
	 * (other writers' and readers' I/O to the file overlaps ours) and say
	 * so in @relocked: the caller re-reads the inode.  NULL: keep the lock.
	 */
	struct bfs_fs *unlock_fs;
	bool	relocked;
	/* data_queue_write(): every chunk through the page cache (BFS_WRITE_CACHED) */
	bool	cached;
	/* data_update_commit(): the fixup of the commit's non-alloc keys (an inode's), or NULL */
	bfs_trans_fixup_fn key_fixup;
	void	*key_fixup_ctx;
};

/* ---- extent.c: the extent and alloc key types ---- */
static inline const struct bfs_extent_v *extent_val(const struct bfs_bkey *k)
{
	return (const struct bfs_extent_v *)k->v;
}
static inline bool extent_is_unwritten(const struct bfs_bkey *k)
{
	return extent_val(k)->flags & BFS_EXTENT_F_UNWRITTEN;
}
/* build an extent key for [start, end) sectors of @ino in @buf (BFS_BKEY_U64S + VAL_U64S u64s) */
struct bfs_bkey *bfs_extent_key(u64 *buf, u64 ino, u64 start, u64 end,
				const struct data_chunk *ch, u8 csum_type, u32 chunk_offset);
struct bfs_bkey *bfs_extent_key_unwritten(u64 *buf, u64 ino, u64 start, u64 end);
#define EXTENT_KEY_U64S	(BFS_BKEY_U64S + BFS_EXTENT_VAL_U64S)

/* data.c: what new data is written with (checksum, compression), from @sb */
void bfs_data_options_load(struct bfs_fs_data *d, const struct bfs_sb *sb);

/* ---- alloc_data.c: buckets, write point, accounting ---- */
/* the bucket table and locks (geometry already in @d) */
int bfs_data_alloc_setup(struct bfs_fs_data *d);
/*
 * Before replay (core space hooks, every replayed key first): take every
 * bucket that holds data at the end of the replay by the last alloc key
 * replayed for it, or else the committed one (one that btree nodes already
 * use: its free slots, until the replayed extents say).
 */
int bfs_data_premark_committed(struct bfs_fs_data *d);
void bfs_data_premark_key(struct bfs_fs_data *d, const struct bfs_bkey *k);
/* at open, after replay: gens, live sectors counted from the extents, marks */
int bfs_data_alloc_init(struct bfs_fs_data *d);
void bfs_data_alloc_exit(struct bfs_fs_data *d);
/*
 * fsck, after recounting bucket @b: it holds @live sectors of generation
 * @gen.  The in-memory table says so from now on, and a bucket with live
 * data is taken from the metadata allocator (nodes written later in this
 * session stay out of it).
 */
int bfs_data_bucket_adopt(struct bfs_fs_data *d, u64 b, u32 gen, u64 live);
/* reserve @bytes (block multiple) in the write point; -ENOSPC */
int bfs_data_space_get(struct bfs_fs_data *d, u32 bytes, u64 *dev_off, u64 *bucket, u32 *gen);
/* 1..max_units consecutive units of @unit bytes, as many as the open bucket holds */
int bfs_data_space_get_multi(struct bfs_fs_data *d, u32 unit, u32 max_units, u64 *dev_off,
			     u64 *bucket, u32 *gen, u32 *units);
/* a chunk written but never committed: its space is lost, in-flight ends */
void bfs_data_space_abort(struct bfs_fs_data *d, u64 bucket);
u64 bfs_data_bucket_of(struct bfs_fs_data *d, u64 dev_off);
u32 bfs_data_bucket_gen(struct bfs_fs_data *d, u64 bucket);
bool bfs_data_bucket_valid(struct bfs_fs_data *d, u64 bucket);
/*
 * Few metadata slots left: keep transactions small, because the btree core
 * reserves slots in proportion to the number of updates (up to 16).
 */
bool bfs_data_space_low(struct bfs_fs_data *d);
/* could a chunk be placed now (open bucket room, emptied or free buckets)? */
bool bfs_data_space_available(struct bfs_fs_data *d);
#define DATA_SMALL_TRANS	6	/* updates per transaction when space is low */
/* this thread is copy-GC: it may use half of the metadata reserve */
void bfs_data_gc_reserve(bool on);
/* make emptied buckets reusable (flushes the journal first if @force) */
int bfs_data_release_pending(struct bfs_fs_data *d, bool force);
void bfs_data_stats(struct bfs_fs_data *d, u64 *total, u64 *free_bytes);

void data_update_init(struct data_update *u, struct bfs_trans *t);
void data_update_exit(struct data_update *u);
int data_update_add(struct data_update *u, u64 bucket, s64 sectors, u32 inflight);
/*
 * Old extents of @ino overlapping [start, end) sectors: their sectors leave
 * their buckets and the inode (queue the overwriting update yourself).
 */
/*
 * 1 if an extent of @ino may lie in sectors [start, end) (one that ends at
 * start may answer 1 too), 0 if none does, or a negative errno: one scan
 * where a batch of appended chunks would look up each chunk's range
 */
int data_range_has_extents(struct bfs_fs_data *d, u64 ino, u64 start, u64 end);
int data_account_overwrite(struct bfs_fs_data *d, struct data_update *u, u64 ino,
			   u64 start, u64 end);
/* add the alloc keys and commit (their values computed at apply time) */
int data_update_commit(struct bfs_fs_data *d, struct data_update *u, u64 *seq);
/* the transaction of @u will not be committed: end the in-flight state of its chunks */
void data_update_abort(struct bfs_fs_data *d, struct data_update *u);

/* ---- data_io.c: chunks on the device ---- */
/*
 * Compress (if the filesystem says so and it helps), checksum and place in
 * the write point @len bytes (block multiple, <= chunk_max), without
 * writing them: *stored is what to write (ch->disk_bytes at ch->dev_off),
 * @data or a compressed copy in *owned (NULL, or bfs_free() it once
 * written).  Until its key is queued, bfs_data_space_abort() gives the
 * space up.  Without @csum, ch->csum is the caller's to take, of the
 * ch->stored_bytes at *stored, before the key is queued.
 */
int bfs_data_chunk_place(struct bfs_fs_data *d, const void *data, u32 len, struct data_chunk *ch,
			 const void **stored, u8 **owned, bool csum);
/* bfs_data_chunk_place() and the device write */
int bfs_data_chunk_write(struct bfs_fs_data *d, const void *data, u32 len, struct data_chunk *ch);

/*
 * Reading a stored chunk in two halves around the device read, so that
 * the reads of several chunks can be in flight together: _prep() checks
 * the extent value and sets @io up (a read of the chunk's disk bytes into
 * a buffer of its own, or straight into @dst when @dst takes the whole
 * uncompressed, unpadded chunk; @dst may be NULL); _done() gets the read's
 * result and checks the checksum and decompresses: *out is the whole
 * uncompressed chunk (bfs_free() it, unless it is @dst).  -EIO (read),
 * -EBADMSG (checksum), -EILSEQ (zstd frame), -EUCLEAN (malformed): @why
 * says what and where.  _drop() frees what _prep() took when _done() is
 * not called.  The data path and fsck -c share them.
 */
struct data_chunk_read {
	struct bfs_extent_v v;
	u8	*buf;
	size_t	disk;
	bool	in_place;	/* buf is the caller's @dst */
	bool	kept;		/* buf is this thread's kept read buffer: never freed */
};

/*
 * @keep: the chunk may be read into this thread's kept buffer
 * (BFS_TBUF_DATA_READ, at most DATA_READ_KEEP_MAX bytes) instead of a fresh
 * one: for one chunk per read, whose data is copied out before the thread's
 * next read.  Saves an aligned allocation and its free per small read.
 */
#define DATA_READ_KEEP_MAX	(64U << 10)
int bfs_data_chunk_read_prep(u32 block_size, const struct bfs_extent_v *v, void *dst, bool keep,
			     struct data_chunk_read *r, struct bfs_dev_io *io, char *why,
			     size_t why_len);
/* *out is the caller's to free, unless r->kept is still set after the call */
int bfs_data_chunk_read_done(struct data_chunk_read *r, int io_ret, u8 **out, char *why,
			     size_t why_len);
void bfs_data_chunk_read_drop(struct data_chunk_read *r);
/* both halves with one read in between: bfs_data_chunk_load(), include/bfs/fs_repair.h */

/* ---- data_read.c ---- */
/*
 * Read, verify and decompress the chunk of extent @k; copies @len bytes from
 * byte @skip of the key's range into @out.  -EIO on a checksum mismatch or a
 * stale pointer (logged with inode, file offset and device offset).
 */
int bfs_data_extent_read(struct bfs_fs_data *d, const struct bfs_bkey *k, u64 skip, void *out,
			 size_t len);
/*
 * read logical bytes [off, off + len) of @ino (holes read as zeros, no size
 * clamp) under the caller's inode lock; the chunks are read together
 */
int bfs_data_read_range(struct bfs_fs_data *d, u64 ino, void *buf, size_t len, u64 off);
/*
 * Lock inode @ino and read it; it must be a regular file (-EISDIR for a
 * directory, @not_reg for anything else).  0 with the lock held, or an
 * error with the lock released.
 */
int bfs_data_lock_file(struct bfs_fs *fs, u64 ino, struct bfs_inode *inode, int not_reg);
/* the same checks for a caller that took the lock itself (released on error) */
int bfs_data_file_read(struct bfs_fs *fs, u64 ino, struct bfs_inode *inode, int not_reg);

/* ---- data_write.c ---- */
/* BFS_DATA_MAX_BYTES, the largest file: include/bfs/fs_repair.h */
/*
 * Write up to one batch of [off, off + len) (any alignment; @buf NULL writes
 * zeros) as chunks and queue their extent keys and accounting into @u;
 * *done = bytes queued.  @cbuf holds chunk_max bytes, or is NULL (chunk
 * buffers allocated where needed).
 */
int data_queue_write(struct bfs_fs_data *d, struct data_update *u, u64 ino, const void *buf,
		     size_t len, u64 off, u8 *cbuf, size_t *done);
/*
 * Write @len bytes at @off (@buf NULL: zeros) under the inode lock, updating
 * and writing *inode (size, sectors, times) in each batch's transaction;
 * returns bytes written (short on an error after some) or -errno.  Out of
 * space, it drops the inode lock between batches while copy-GC runs, and
 * re-reads *inode after taking it again.
 */
ssize_t bfs_data_write_locked(struct bfs_fs *fs, struct bfs_inode *inode, const void *buf,
			      size_t len, u64 off, unsigned flags);
/*
 * A tail buffer's write-back (tail_buf.c): as bfs_data_write_locked(), but
 * the inode's times become @mtime (when the buffered writes were made) and
 * the lock is never dropped.
 */
ssize_t bfs_data_write_back(struct bfs_fs *fs, struct bfs_inode *inode, const void *buf,
			    size_t len, u64 off, s64 mtime);

/* ---- gc.c ---- */
/*
 * Make buckets free: release emptied ones, else move the live data out of
 * buckets at most 3/4 live.  @held_ino: BFS_GC_NO_INODE when the caller holds
 * no inode lock (GC then waits for the inode locks it needs); else the inode
 * whose lock the caller holds, with no uncommitted extent change (GC then
 * only trylocks, and gives up at once if another GC runs).
 * *freed: room was made; *busy: extents of inodes locked by others were
 * skipped (trying again later may free more).
 */
#define BFS_GC_NO_INODE	UINT64_MAX
int bfs_data_copygc(struct bfs_fs_data *d, u64 held_ino, bool *freed, bool *busy);

/*
 * Move every extent out of buckets @fence and up (bfs resize, shrinking):
 * those buckets are fenced first, so neither data nor btree nodes go there
 * while it runs.  -ENOSPC (nothing moved) if the live data there does not
 * fit in the free space below; *left: live sectors still there afterwards
 * (extents that changed or could not be read meanwhile).  The caller holds
 * the filesystem alone: no other writer.  @progress (may be NULL) is told
 * the extents moved of the total.
 */
int bfs_data_evacuate(struct bfs_fs_data *d, u64 fence,
		      void (*progress)(void *ctx, u64 done, u64 total), void *ctx,
		      u64 *need_bytes, u64 *left);
/*
 * Fence buckets @fence and up (alloc_data.c); returns the live sectors in
 * them, and in *free_bytes the space new data can still get below them.
 */
u64 bfs_data_fence(struct bfs_fs_data *d, u64 fence, u64 *free_bytes);

#endif /* BFS_FS_DATA_H */
