/* SPDX-License-Identifier: MIT */
/* The passes of bfs fsck, run in this order by bfs_fsck_run(). */
#ifndef BFS_FSCK_PASSES_H
#define BFS_FSCK_PASSES_H

struct bfs_fsck;

int bfs_fsck_pass_super(struct bfs_fsck *f);
int bfs_fsck_pass_btree(struct bfs_fsck *f);
int bfs_fsck_pass_fs(struct bfs_fsck *f);

#endif
