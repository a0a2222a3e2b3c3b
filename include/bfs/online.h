/* SPDX-License-Identifier: MIT */
/*
 * Changing a filesystem while it is open read-write (a running bfs mount):
 * superblock settings that take effect at once, and growing onto more
 * device space (libcore/fs/online.c, grow.c; the mount's control channel,
 * doc/control.md, calls them).
 *
 * Both hold every inode lock while they work (no file operation runs
 * meanwhile) and write the superblock through bfs_core_sb_update(), in the
 * order of an offline change, so a crash leaves the old or the new state.
 */
#ifndef BFS_ONLINE_H
#define BFS_ONLINE_H

#include "core.h"
#include "fs.h"

/*
 * Change the superblock with @fn (see bfs_core_sb_update(): it edits @next
 * and writes it), then make the open filesystem use the new checksum type
 * and compression of new data.  -EROFS on a read-only open.
 */
int bfs_fs_sb_update(struct bfs_fs *fs, bfs_core_sb_fn fn, void *ctx);

/*
 * Grow the open filesystem to @new_size bytes (0: the size of its device,
 * read again; an image file shorter than @new_size is extended first).  The
 * new superblock (and the backup at the new end) is durable before any of
 * the new space is handed out, which then goes to the node and data
 * allocators.  With a message in @err (BFS_ERR_LEN): -EINVAL for a size it
 * cannot have, -EOPNOTSUPP for a shrink (it needs the filesystem
 * unmounted), -ENOSPC for a device smaller than @new_size; -EALREADY if it
 * has that size already.  @old_size gets the size before.
 */
int bfs_fs_grow(struct bfs_fs *fs, u64 new_size, u64 *old_size, char *err);

/*
 * errors=remount-ro and panic: every write fails with -EROFS from now on,
 * and the close writes nothing (the next open replays the journal, which
 * holds everything committed).  bfs_fs_error(): the error that stopped
 * writes (also after a failed metadata write), or 0.
 */
void bfs_fs_stop_writes(struct bfs_fs *fs, int err, const char *why);
int bfs_fs_error(struct bfs_fs *fs);

#endif /* BFS_ONLINE_H */
