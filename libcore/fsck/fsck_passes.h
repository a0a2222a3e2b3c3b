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
/*
 * Pass 1a's read of the journal done by pass 1's open (the ring is read
 * once): the core is opened as pass 1 opens it, its journal findings
 * counted and libcore's messages held back.  If there was none, the core
 * is kept for pass 1 (fsck_early.opened), the messages are passed on and 1
 * is returned; else (or if the open failed) 0, nothing kept, nothing said:
 * pass 1a reads the journal itself, and pass 1 opens again.
 */
int fsck_btree_open_first(struct bfs_fsck *f);

#include <bfs/types.h>
#include <stddef.h>

/* a growing array of u64: append @v to (*a)[*nr], growing *cap; -ENOMEM */
int fsck_u64_push(u64 **a, size_t *nr, size_t *cap, u64 v);
int bfs_fsck_pass_fs(struct bfs_fsck *f);

#endif
