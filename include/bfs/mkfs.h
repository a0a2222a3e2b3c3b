/* SPDX-License-Identifier: MIT */
/*
 * Making a whole new filesystem (libcore/mkfs/): the layers in order, each
 * laying down its empty on-disk structures, then the superblock copies.
 */
#ifndef BFS_MKFS_H
#define BFS_MKFS_H

#include "super.h"

/*
 * Write the filesystem described by @sb (from bfs_sb_layout()) to @dev:
 * empty btrees and their roots in the clean section, every superblock copy
 * with BFS_SB_CLEAN set, then the root directory, lost+found and the
 * inode-number counter.  Writes metadata only.  *sb is the final superblock.
 */
int bfs_mkfs(struct bfs_dev *dev, struct bfs_sb *sb);
/*
 * The same, but no btree node goes into a bucket set in @avoid (a bitmap
 * indexed by bucket: space another filesystem still owns, for migrate).
 * The journal must not be in such a bucket (-EINVAL).
 */
int bfs_mkfs_avoid(struct bfs_dev *dev, struct bfs_sb *sb, const u64 *avoid);

#endif
