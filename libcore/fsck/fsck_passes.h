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
 * once): the core is opened as pass 1 opens it (salvaging a damaged
 * journal, read-only), its journal findings handed to @fn (as
 * bfs_core_check_journal() hands them) and libcore's messages held back.
 * Returns 1 with the core kept for pass 1 (fsck_early.opened): without a
 * finding its messages are passed on at once; with findings pass 1a then
 * either keeps it (fsck_btree_open_keep(): the damage is left as it is,
 * pass 1 checks what this open salvaged; the messages are said then) or
 * drops it (fsck_btree_open_drop(): a repair writes, pass 1 opens again;
 * the messages are never said).  0 if the open failed: nothing kept,
 * nothing said, pass 1a reads the journal itself, and pass 1 opens again.
 */
struct bfs_finding;
int fsck_btree_open_first(struct bfs_fsck *f, void (*fn)(void *ctx, const struct bfs_finding *fd),
			  void *ctx);
void fsck_btree_open_keep(struct bfs_fsck *f);
void fsck_btree_open_drop(struct bfs_fsck *f);

#include <bfs/types.h>
#include <stddef.h>

/* a growing array of u64: append @v to (*a)[*nr], growing *cap; -ENOMEM */
int fsck_u64_push(u64 **a, size_t *nr, size_t *cap, u64 v);
int bfs_fsck_pass_fs(struct bfs_fsck *f);

#endif
