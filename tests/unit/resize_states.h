/* SPDX-License-Identifier: MIT */
/*
 * What the resize tests (test_resize.c offline, test_online.c online) check
 * in every state a power failure can leave (resize_states.c).
 */
#ifndef BFS_TESTS_RESIZE_STATES_H
#define BFS_TESTS_RESIZE_STATES_H

#include <bfs/dev.h>
#include <bfs/fs.h>

/* a memory device of @dev_size bytes holding a filesystem laid out for @fs_size */
struct bfs_dev *resize_make_fs(u64 dev_size, u64 fs_size);

/*
 * A crashed state of a resize from @old_size to @new_size bytes: the
 * superblock says one of the two (the new one once @durable), the
 * filesystem opens with every btree sound, @files_ok (may be NULL) accepts
 * its files, and nothing of it lies beyond its end (no node, no alloc key).
 * False and @why (512 bytes) if not.
 */
bool resize_state_ok(struct bfs_dev *img, u64 old_size, u64 new_size, bool durable,
		     bool (*files_ok)(void *ctx, struct bfs_fs *fs, char *why), void *ctx,
		     char *why);

#endif
