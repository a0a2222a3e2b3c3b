/* SPDX-License-Identifier: MIT */
/*
 * A finding: one problem a check in libcore found, as a problem code (see
 * fsck_problems.h) and a location.  Checks never print; they hand findings
 * to a callback, and the caller (fsck, dump-btree, the debug shell, the
 * mount) decides what to say or do.
 */
#ifndef BFS_FINDING_H
#define BFS_FINDING_H

#include "bkey.h"
#include "fsck_problems.h"

#define BFS_FINDING_DETAIL_LEN	512

/* where a problem is; unknown parts are left at their zero/"none" values */
struct bfs_fsck_loc {
	int	btree;			/* enum bfs_btree_id, or -1 */
	u64	node;			/* device offset of the node, 0: none */
	bool	has_pos;
	struct bfs_bpos pos;		/* key position, if has_pos */
	u64	inode;			/* 0: none */
	u64	offset;			/* byte offset in the file (with inode), or 0 */
	const char *path;		/* path of the inode where known, or NULL */
	/* a journal entry: its device byte offset (0: none), ring bucket and seq */
	u64	jentry;
	u32	jbucket;
	u64	jseq;
};

#define BFS_FSCK_LOC_NONE ((struct bfs_fsck_loc){ .btree = -1 })

struct bfs_finding {
	enum bfs_problem_code code;
	struct bfs_fsck_loc loc;
	char	detail[BFS_FINDING_DETAIL_LEN];
};

typedef void (*bfs_finding_fn)(void *ctx, const struct bfs_finding *f);
/* a finding that asks: true = repair it now (fsck's answer for its mode) */
typedef bool (*bfs_fix_fn)(void *ctx, const struct bfs_finding *f);

/* name ("BTREE_DAMAGED"), message and flags of a problem code */
const char *bfs_problem_name(enum bfs_problem_code code);
const char *bfs_problem_message(enum bfs_problem_code code);
const char *bfs_problem_prompt(enum bfs_problem_code code);
unsigned bfs_problem_flags(enum bfs_problem_code code);

#endif
