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
 * allocators.  -EINVAL and @err (BFS_ERR_LEN) for a size it cannot have,
 * a shrink (refused: it needs the filesystem unmounted) or a device
 * smaller than @new_size; -EALREADY if it has that size already.  @old_size
 * gets the size before.
 */
int bfs_fs_grow(struct bfs_fs *fs, u64 new_size, u64 *old_size, char *err);

#endif /* BFS_ONLINE_H */
