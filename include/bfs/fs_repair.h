/* SPDX-License-Identifier: MIT */
/*
 * What the filesystem layer offers its checker (libcore/fsck) below the
 * POSIX calls of fs.h: the decoded inode with its namespace fields, and the
 * namespace operations a repair is made of.  They check nothing (no
 * permission, no link count, no lock): the caller holds the filesystem
 * alone (an offline fsck) and queues each change in its own transaction.
 * libcore/fs/ns.h declares the rest of the namespace half for the fs layer
 * itself; fsck includes only this.
 */
#ifndef BFS_FS_REPAIR_H
#define BFS_FS_REPAIR_H

#include <sys/stat.h>

#include <bfs/btree.h>
#include <bfs/dev.h>
#include <bfs/extent_format.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>

/* decoded form of an inode key's value (struct bfs_inode_v in fs_format.h) */
struct bfs_inode {
	u64	ino;
	u64	generation;
	u32	mode, uid, gid, nlink, flags;
	u64	size;
	u64	sectors;	/* 512-byte sectors allocated to data */
	u64	rdev;
	s64	atime, mtime, ctime, btime;	/* ns since the epoch */
};

/* an inode with the namespace-only fields the shared struct does not carry */
struct bfs_ns_inode {
	struct bfs_inode i;
	u64	parent;		/* directories: ".." */
};

/* the inode key's value, and back (libcore/fs/inode.c; doc/format/fs.md) */
void bfs_ns_inode_encode(const struct bfs_ns_inode *inode, struct bfs_inode_v *v);
void bfs_ns_inode_decode(u64 ino, const struct bfs_inode_v *v, struct bfs_ns_inode *inode);
/* the inode-number counter: the next number to hand out */
int bfs_ns_counter_read(struct bfs_fs *fs, u64 *next_ino);
/* queue deletes of every key (@ino, >= @start) in @id */
int bfs_ns_delete_keys(struct bfs_fs *fs, struct bfs_trans *t, enum bfs_btree_id id, u64 ino,
		       u64 start);
/* symlink.c: queue the target keys of symlink @ino */
int bfs_ns_symlink_write(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, const char *target,
			 size_t len);
/* commit and free @t */
int bfs_ns_commit(struct bfs_trans *t);
/* d_type of a mode */
static inline u8 bfs_ns_dtype(u32 mode) { return (u8)((mode & S_IFMT) >> 12); }

/* ---- directories: hashed, linearly probed slots (libcore/fs/dir.c) ---- */

struct bfs_dirent_ref {
	u64	slot;
	u64	ino;
	u8	type;
};

/* find @name in @dir: 0 and *d, or -ENOENT */
int bfs_dir_lookup(struct bfs_fs *fs, u64 dir, const char *name, size_t len,
		   struct bfs_dirent_ref *d);
/* the slot a new entry @name goes to (first empty or whited-out slot of its chain) */
int bfs_dir_free_slot(struct bfs_fs *fs, u64 dir, const char *name, size_t len, u64 *slot);
int bfs_dir_add(struct bfs_trans *t, u64 dir, u64 slot, const char *name, size_t len, u64 ino,
		u8 type);
/*
 * Queue the removal of the entry at @slot.  Inside a probe chain it becomes a
 * whiteout; at the end of a chain it and the whiteouts before it are deleted.
 * @whiteout forces a whiteout (the same transaction adds an entry after it).
 */
int bfs_dir_remove(struct bfs_fs *fs, struct bfs_trans *t, u64 dir, u64 slot, bool whiteout);

/* ---- file data (libcore/fs/data_*.c, alloc_data.c) ---- */

/* largest file: offsets in sectors stay far from u64 limits */
#define BFS_DATA_MAX_BYTES	(UINT64_C(1) << 53)

/*
 * Read, check and decompress the chunk extent value @v points at: *out is
 * the whole uncompressed chunk (bfs_free() it).  -EIO (read), -EBADMSG
 * (checksum), -EILSEQ (zstd frame), -EUCLEAN (malformed): @why says what.
 */
int bfs_data_chunk_load(struct bfs_dev *dev, u32 block_size, const struct bfs_extent_v *v,
			u8 **out, char *why, size_t why_len);
/*
 * Does extent value @v point into a data bucket of this filesystem whose
 * generation is the one @v was written with (the data layer's table, as
 * loaded at open and adopted since)?
 */
bool bfs_fs_extent_bucket_current(struct bfs_fs *fs, const struct bfs_extent_v *v);
/*
 * After recounting bucket @b: it holds @live sectors of generation @gen.
 * The in-memory table says so from now on, and a bucket with live data is
 * taken from the metadata allocator (nodes written later stay out of it).
 */
int bfs_fs_bucket_adopt(struct bfs_fs *fs, u64 b, u32 gen, u64 live);

#endif /* BFS_FS_REPAIR_H */
