/* SPDX-License-Identifier: MIT */
/*
 * Offline check and repair (libcore/fsck/), shaped like e2fsck: passes only
 * detect problems and call bfs_fix_problem(); the problem table
 * (libcore/fsck/problem.c) holds every message and whether it is safe to fix
 * in preen mode; the answer policy (-n / -y / -p / ask) lives in one place.
 */
#ifndef BFS_FSCK_H
#define BFS_FSCK_H

#include "super.h"

/* fsck(8) exit codes */
#define BFS_FSCK_OK		0
#define BFS_FSCK_CORRECTED	1
#define BFS_FSCK_REBOOT		2
#define BFS_FSCK_UNCORRECTED	4
#define BFS_FSCK_ERROR		8
#define BFS_FSCK_USAGE		16
#define BFS_FSCK_CANCELED	32

enum bfs_fsck_mode {
	BFS_FSCK_MODE_NO,	/* -n: report only, open read-only */
	BFS_FSCK_MODE_YES,	/* -y: fix everything */
	BFS_FSCK_MODE_PREEN,	/* -p: fix what is safe, stop on the rest */
	BFS_FSCK_MODE_ASK,	/* ask the ask() hook */
};

enum bfs_problem_code {
	PR_SB_PRIMARY_INVALID,
	PR_SB_BACKUP_INVALID,
	PR_SB_BACKUP_STALE,
	PR_JOURNAL_UNREPLAYABLE,
	PR_BTREE_UNREADABLE,
	PR_BTREE_DAMAGED,
	PR_FS_SKIPPED,
	PR_DIRENT_DIR_MISSING,
	PR_DIRENT_TARGET_MISSING,
	PR_DIRENT_TYPE,
	PR_DIR_PARENT,
	PR_INODE_NLINK,
	PR_INODE_UNATTACHED,
	PR_INODE_LOST,
	PR_INODE_SECTORS,
	PR_EXTENT_NO_INODE,
	PR_NR
};

struct bfs_fsck {
	struct bfs_dev *dev;
	enum bfs_fsck_mode mode;
	bool verbose;
	/* interactive answer for BFS_FSCK_MODE_ASK; NULL answers no */
	bool (*ask)(void *ctx, const char *prompt);
	/* where problem reports and progress lines go */
	void (*print)(void *ctx, const char *line);
	void *ctx;

	/* results */
	unsigned nr_problems, nr_fixed, nr_unfixed;
	bool preen_stopped;	/* -p met a problem it may not fix */
	bool btrees_damaged;	/* pass 1 found damage: later passes are skipped */
	struct bfs_sb_handle sb;
};

/*
 * Report problem @code (with a detail message) and decide whether to fix it.
 * Returns true if the caller should repair it now.
 */
bool bfs_fix_problem(struct bfs_fsck *f, enum bfs_problem_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* tell the user what was done after a repair failed */
void bfs_fsck_repair_failed(struct bfs_fsck *f, enum bfs_problem_code code, int err);

/* run every pass; returns the fsck(8) exit code */
int bfs_fsck_run(struct bfs_fsck *f);
void bfs_fsck_release(struct bfs_fsck *f);
void bfs_fsck_printf(struct bfs_fsck *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
