/* SPDX-License-Identifier: MIT */
/*
 * Write-behind of small writes at the end of a file (tail_buf.c).
 *
 * A small write that lands in a file's last chunk (the second such write
 * to the file in a row, and those after it) is copied into an in-memory
 * buffer of that chunk and acknowledged; the buffer becomes one
 * ordinary write (a chunk, one transaction) when it is written back.  It
 * is written back:
 *   - by anyone who takes the inode's lock with bfs_inode_lock() (truncate,
 *     fallocate, setattr, xattrs, unlink, rename, release, ...): every
 *     operation but the buffered write and the read itself sees the file
 *     as if nothing were buffered;
 *   - by a write it cannot take (another chunk, a large or direct write);
 *   - by fsync of the file, sync, the periodic commit and unmount;
 *   - when the buffers' memory cap is reached (the oldest goes).
 * Reads copy what is buffered over what they read; inode reads
 * (bfs_ns_inode_read(): stat, lookup) see the buffered size and mtime.
 *
 * Locking: a buffer's data and its removal belong to the holder of the
 * inode's stripe lock; the table (and each buffer's size and times, which
 * unlocked inode readers look at) to the table's own mutex.
 */
#ifndef BFS_FS_TAIL_BUF_H
#define BFS_FS_TAIL_BUF_H

#include "fs_internal.h"

struct bfs_tail_bufs;

int bfs_tail_init(struct bfs_fs *fs);
void bfs_tail_exit(struct bfs_fs *fs);

/* any buffer at all?  (cheap: callers test it before anything else) */
bool bfs_tail_any(const struct bfs_fs *fs);

/*
 * Under @inode's lock (taken without write-back, bfs_inode_lock_raw()),
 * @inode read: buffer the write of @len bytes at @off if it fits the
 * file's tail.  Returns @len (buffered), 0 (not buffered: write it back
 * with bfs_tail_flush_locked() and write the ordinary way) or -errno.
 */
ssize_t bfs_tail_write(struct bfs_fs *fs, const struct bfs_inode *inode, const void *buf,
		       size_t len, u64 off);
/*
 * The same without the inode: when @ino has a buffer that takes the write
 * (its flags were checked when it was made and cannot change while it
 * exists); 0 otherwise.
 */
ssize_t bfs_tail_write_fast(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off);

/*
 * Under the stripe lock of @ino: write its buffer back.  On an error the
 * buffered bytes are lost (as a kernel's failed writeback loses its pages):
 * logged, returned, and kept for the next fsync of the file.
 */
int bfs_tail_flush_locked(struct bfs_fs *fs, u64 ino);
/* write every buffer back, taking the locks itself (the caller holds none): first error */
int bfs_tail_flush_all(struct bfs_fs *fs);
/* a write-back error of file @ino kept for its fsync (then forgotten); 0: none */
int bfs_tail_error(struct bfs_fs *fs, u64 ino);

/*
 * Unlocked inode readers: @inode as read from the btree, after *peek
 * looked at the buffer (before the btree read, so that a write-back
 * between the two is not missed).
 */
struct bfs_tail_peek {
	bool	have;
	u64	size;
	s64	mtime;
};
void bfs_tail_peek(struct bfs_fs *fs, u64 ino, struct bfs_tail_peek *p);
void bfs_tail_apply(const struct bfs_tail_peek *p, struct bfs_inode *inode);

/*
 * Under the inode lock: does [off, off + len) touch buffered bytes?  And
 * copy them over @buf (which holds what the device has).
 */
bool bfs_tail_overlaps(struct bfs_fs *fs, u64 ino, u64 off, size_t len);
void bfs_tail_read_locked(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off);

/*
 * Under the inode lock, after the ordinary write path committed @len bytes
 * at @off: a buffer made while it had the lock down (its device writes)
 * takes them too, so that writing it back does not undo them.
 */
void bfs_tail_note_write(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off);

#endif /* BFS_FS_TAIL_BUF_H */
