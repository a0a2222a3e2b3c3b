/* SPDX-License-Identifier: MIT */
/*
 * Importing data that is already on the device (libcore/fs/import.c), for
 * in-place conversion from another filesystem (bfs migrate).
 *
 * The converter knows which buckets the old filesystem still owns.  It makes
 * the new filesystem with bfs_mkfs_avoid() and opens it with
 * bfs_fs_opts.avoid_buckets set to the same bitmap, so no btree node lands
 * there, then calls bfs_fs_import_begin() before anything else: every
 * avoided bucket becomes a data bucket that nothing may reuse.  Extents
 * pointing at the old data are then created with bfs_fs_import_extent()
 * (their checksums are computed from the bytes on the device), and
 * bfs_fs_import_end() gives back the held buckets no extent points into.
 * Several extents (of different files) may point at the same sectors: a
 * bucket's live sectors count references.
 *
 * Errors: -EINVAL (unaligned range, a bucket that is not held, a file that
 * is not regular), -EROFS, the I/O errors of reading the old data, -ENOSPC.
 */
#ifndef BFS_IMPORT_H
#define BFS_IMPORT_H

#include "fs.h"

/*
 * @avoid_buckets: (nbuckets + 63) / 64 words, bit b set for bucket b; it
 * must stay valid until bfs_fs_import_end().  -EBUSY if a set bucket is in
 * use already (the filesystem was not opened with the same bitmap), and
 * nothing is held then.
 */
int bfs_fs_import_begin(struct bfs_fs *fs, const u64 *avoid_buckets);
void bfs_fs_import_end(struct bfs_fs *fs);

/*
 * Map file bytes [file_off, file_off + len) of regular file @ino onto device
 * bytes [dev_off, dev_off + len) (block-aligned, every bucket held), or, with
 * BFS_IMPORT_UNWRITTEN, make them an unwritten extent (dev_off ignored).
 * The inode's sectors grow; its size does not change (set it first).
 */
#define BFS_IMPORT_UNWRITTEN	(1U << 0)
int bfs_fs_import_extent(struct bfs_fs *fs, u64 ino, u64 file_off, u64 dev_off, u64 len,
			 unsigned flags);

/* set all four timestamps (ns since the epoch) as they were, birth time included */
int bfs_fs_import_times(struct bfs_fs *fs, u64 ino, s64 atime, s64 mtime, s64 ctime, s64 btime);

#endif /* BFS_IMPORT_H */
