/* SPDX-License-Identifier: MIT */
/*
 * Test helpers shared by the unit tests (tu.c, linked into every test):
 * the captured log and formatted in-memory devices.
 */
#ifndef BFS_TESTS_TU_H
#define BFS_TESTS_TU_H

#include "unit.h"

#include <bfs/dev.h>
#include <bfs/types.h>

/*
 * The log hook tu_log_reset() installs keeps the last error and counts the
 * errors, and the warnings that start with the prefix given to
 * tu_log_count_warnings(); it is safe from any thread.  BFS_TEST_VERBOSE=1
 * prints every message.
 */
extern char tu_last_err[1024];
extern unsigned tu_nr_errs;
extern unsigned tu_nr_warns;

void tu_log_reset(void);
void tu_log_count_warnings(const char *prefix);

/* a formatted memory device, btree core only (0: the default size) */
struct bfs_dev *tu_mkfs(u64 size, u32 node_size, u32 bucket_size, u32 jbuckets);
/* a formatted memory device with the filesystem on it, as bfs_mkfs() makes it */
struct bfs_dev *tu_mkfs_fs(u64 size, u32 node_size, u32 bucket_size, u8 compression);
/* the same on a device the caller opened (an image file, say) */
void tu_format_fs(struct bfs_dev *dev, u64 size, u32 node_size, u32 bucket_size, u8 compression);

/*
 * Files whose contents a test checks: @len bytes of a pattern that depends
 * on @seed, written to @name in the root directory of @fs (as root), and
 * read back: false and @why (512 bytes) if @name does not hold exactly
 * those bytes.
 */
struct bfs_fs;
void tu_pattern(u8 *buf, size_t len, u64 seed);
void tu_write_pattern_file(struct bfs_fs *fs, const char *name, size_t len, u64 seed);
bool tu_pattern_file_ok(struct bfs_fs *fs, const char *name, size_t len, u64 seed, char *why);
/* open the filesystem on @dev; no warnings with the counted prefix may come */
struct bfs_fs *tu_fs_open(struct bfs_dev *dev);
/* a new regular file @name in the root directory: its inode number */
u64 tu_mkfile(struct bfs_fs *fs, const char *name);
/* @n bytes that depend on @seed alone */
void tu_fill_random(u8 *p, size_t n, u64 seed);

#endif
