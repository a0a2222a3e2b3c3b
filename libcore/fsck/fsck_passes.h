/* SPDX-License-Identifier: MIT */
/* The passes of bfs fsck, run in this order by bfs_fsck_run(). */
#ifndef BFS_FSCK_PASSES_H
#define BFS_FSCK_PASSES_H

struct bfs_fsck;

int bfs_fsck_pass_super(struct bfs_fsck *f);
int bfs_fsck_pass_journal(struct bfs_fsck *f);
/* a journal finding callback for opens after pass 1a has decided them all */
struct bfs_finding;
void bfs_fsck_journal_decided(void *ctx, const struct bfs_finding *fd);
int bfs_fsck_pass_btree(struct bfs_fsck *f);

#include <bfs/types.h>
#include <stddef.h>

/* a growing array of u64: append @v to (*a)[*nr], growing *cap; -ENOMEM */
int fsck_u64_push(u64 **a, size_t *nr, size_t *cap, u64 v);
int bfs_fsck_pass_fs(struct bfs_fsck *f);

#endif
