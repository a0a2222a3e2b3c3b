/* SPDX-License-Identifier: MIT */
/*
 * Internals of the filesystem layer shared by its two halves:
 *   namespace  (fs.c, inode.c, dir*.c, xattr.c, rename.c, orphan.c, ...):
 *              inodes, directory entries, xattrs, open/unlinked inodes;
 *   data       (data*.c, extent*.c, alloc_data*.c, gc*.c, ...):
 *              file contents as extents, data space allocation with bucket
 *              generations in the alloc btree, checksums, compression, GC.
 *
 * Locking: btree transactions have no conflict detection, so every
 * read-modify-write of an inode happens under that inode's lock
 * (bfs_inode_lock()).  Operations on several inodes lock them in ascending
 * inode-number order; rename additionally holds fs->rename_lock (as the VFS
 * does) so that loop checks see a stable tree.
 */
#ifndef BFS_FS_INTERNAL_H
#define BFS_FS_INTERNAL_H

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/extent_format.h>
#include <bfs/fs_format.h>
#include <bfs/fs_repair.h>
#include <bfs/os.h>

#define BFS_INODE_LOCKS	256	/* striped: ino % BFS_INODE_LOCKS */

struct bfs_fs_data;		/* the data half's private state */
struct bfs_open_inodes;		/* open-count table (namespace half) */
struct bfs_fs_committer;		/* the periodic commit thread (commit.c) */
struct bfs_tail_bufs;		/* buffered small writes at files' ends (tail_buf.h) */
struct bfs_range_locks;		/* writers inside a file's size (range_lock.h) */

struct bfs_fs {
	struct bfs_dev		*dev;
	struct bfs_core		*c;
	const struct bfs_sb	*sb;
	bool			read_only;
	bool			discard;	/* discard data buckets as they become free */
	/* opened read-only to be checked (fsck -n): live sectors are not counted */
	bool			check_only;
	/* bfs_fs_opts.known_live during the open (the caller's), then NULL */
	const struct bfs_bucket_live *known_live;
	u64			hash_seed;	/* sb->hash_seed: dirent/xattr name hashes */

	bfs_mutex		inode_locks[BFS_INODE_LOCKS];
	bfs_mutex		rename_lock;
	bfs_mutex		ino_alloc_lock;
	u64			next_ino;	/* persisted: numbers below are reserved */
	u64			ino_range_owner; /* ino_alloc.c: names this open's ranges */
	u64			ino_base;	/* the counter when opened */
	u64			ino_top;	/* 1 + highest number handed out since (atomic) */

	struct bfs_open_inodes	*open;
	struct bfs_fs_data	*data;
	struct bfs_fs_committer	*committer;	/* NULL: no periodic commit */
	struct bfs_import	*import;	/* import.c: a session, or NULL */
	struct bfs_tail_bufs	*tails;		/* tail_buf.c: NULL before the data half */
	struct bfs_range_locks	*ranges;	/* range_lock.c */
};

/* commit.c: start the periodic commit (read-write, @ms > 0), stop it before close */
int bfs_fs_commit_start(struct bfs_fs *fs, u32 ms);
void bfs_fs_commit_stop(struct bfs_fs *fs);

/* locks.c: hold every inode lock (online changes of the superblock) */
void bfs_fs_quiesce(struct bfs_fs *fs);
void bfs_fs_unquiesce(struct bfs_fs *fs);

/*
 * Taking an inode's lock writes back what tail_buf.h buffered of it, so
 * that its holder sees the file as it is; _raw() does not (the buffered
 * write and read paths, which know about the buffer, and write-back itself).
 */
void bfs_inode_lock(struct bfs_fs *fs, u64 ino);
void bfs_inode_lock_raw(struct bfs_fs *fs, u64 ino);
/*
 * The stripe lock alone: range writers of @ino (range_lock.h) may be in
 * flight.  Only the write path, to decide whether to become one.
 */
void bfs_inode_lock_nodrain(struct bfs_fs *fs, u64 ino);
/* bfs_inode_lock_raw() if free now, without waiting; false: busy */
bool bfs_inode_trylock(struct bfs_fs *fs, u64 ino);
void bfs_inode_unlock(struct bfs_fs *fs, u64 ino);
/* lock two inodes in a deadlock-free order (same stripe locked once) */
void bfs_inode_lock2(struct bfs_fs *fs, u64 a, u64 b);
void bfs_inode_unlock2(struct bfs_fs *fs, u64 a, u64 b);

/* ---- namespace half: the inode record, used by the data half ---- */

/* struct bfs_inode, the decoded inode: include/bfs/fs_repair.h */

/*
 * The immutable and append-only attributes (chattr +i, +a), enforced here
 * because the kernel's FUSE inodes do not carry them.  As in the VFS:
 * an immutable inode changes in nothing but its attribute flags; an
 * append-only one only grows at its end, and keeps its names, mode, owner
 * and xattrs; directories with either flag keep their entries (immutable
 * ones get no new ones either).  Each returns 0 or -EPERM.
 */
static inline int bfs_iflags_may_change(u32 flags)
{
	return (flags & (BFS_INODE_IMMUTABLE | BFS_INODE_APPEND)) ? -EPERM : 0;
}
static inline int bfs_iflags_may_add_entry(u32 dir_flags)
{
	return (dir_flags & BFS_INODE_IMMUTABLE) ? -EPERM : 0;
}
static inline int bfs_iflags_may_write(u32 flags, u64 size, u64 off)
{
	if (flags & BFS_INODE_IMMUTABLE)
		return -EPERM;
	return (flags & BFS_INODE_APPEND) && off != size ? -EPERM : 0;
}

/* read inode @ino: -ENOENT if it does not exist */
int bfs_inode_read(struct bfs_fs *fs, u64 ino, struct bfs_inode *inode);
/* would an access now change atime (atime.c)? */
bool bfs_inode_atime_due(const struct bfs_inode *inode, unsigned policy);
/* queue the write of @inode in @t (the caller holds the inode lock) */
int bfs_inode_write(struct bfs_trans *t, const struct bfs_inode *inode);
s64 bfs_fs_now(void);

/* ---- data half: called by the namespace half ---- */

int bfs_fs_data_init(struct bfs_fs *fs);	/* at open, after the core */
void bfs_fs_data_exit(struct bfs_fs *fs);	/* at close, before the core */
/* flush data still buffered in memory (called by sync/fsync/close) */
int bfs_fs_data_flush(struct bfs_fs *fs, u64 ino);
/* give emptied buckets back (a journal flush first), discarding them with -o discard */
int bfs_fs_data_release(struct bfs_fs *fs);
/*
 * Queue into @t the removal of data beyond @new_size (truncate down: the
 * partial last block is zeroed) and update inode->sectors; the caller holds
 * the inode lock, sets inode->size and writes the inode in the same @t.
 */
int bfs_fs_data_truncate(struct bfs_fs *fs, struct bfs_trans *t, struct bfs_inode *inode,
			 u64 new_size);
/* free every extent of an inode being deleted, in @t */
int bfs_fs_data_delete_inode(struct bfs_fs *fs, struct bfs_trans *t, struct bfs_inode *inode);
/* free and used data blocks for statfs, in block_size units */
void bfs_fs_data_space(struct bfs_fs *fs, u64 *total, u64 *free);

/* ---- appended by the data half ---- */


/*
 * Hooks for struct bfs_core_opts (space_init, space_replay_key; space_ctx =
 * the struct bfs_fs being opened): they take the buckets holding file data
 * away from the metadata allocator before journal replay can allocate btree
 * nodes, which could otherwise land on file data.  bfs_fs_open() should set
 * them; if the open fails after the core opened, bfs_fs_data_exit() frees
 * what they set up.
 */
int bfs_fs_data_space_init(void *ctx, struct bfs_core *c);
int bfs_fs_data_space_replay_key(void *ctx, struct bfs_core *c, unsigned btree_id,
				 const struct bfs_bkey *k);

/*
 * Note on bfs_fs_data_truncate() and bfs_fs_data_delete_inode(): they do not
 * queue into @t but commit transactions of their own before returning
 * (under the caller's inode lock), because the alloc keys they write must be
 * computed and committed in order with every other data commit.  Truncate's
 * own transaction writes the inode with the new size and sectors too, so it
 * is atomic by itself in the common case; the caller's @t then writes the
 * same values again.  See doc/format/data.md.
 */

#endif /* BFS_FS_INTERNAL_H */
