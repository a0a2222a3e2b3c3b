/* SPDX-License-Identifier: MIT */
/*
 * Offline check and repair (libcore/fsck/), shaped like e2fsck: passes only
 * detect problems and call bfs_fix_problem(); the problem list
 * (include/bfs/fsck_problems.h) holds every message and whether it is safe
 * to fix in preen mode; the answer policy (-n / -y / -p / ask) lives in one place.
 */
#ifndef BFS_FSCK_H
#define BFS_FSCK_H

#include <signal.h>

#include "finding.h"
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

/* one problem as fsck reported it, with what was decided (the --json record) */
struct bfs_fsck_report {
	enum bfs_problem_code code;
	unsigned pass;			/* the pass that found it */
	const char *name;		/* "BTREE_DAMAGED" */
	const char *message;		/* the table's message */
	const char *detail;		/* what exactly, where */
	unsigned flags;			/* BFS_PR_* */
	struct bfs_fsck_loc loc;
	bool	fixed;			/* false: left as it is (or the repair failed) */
	bool	repair_failed;
};

struct fsck_early;

struct bfs_fsck {
	struct bfs_dev *dev;
	enum bfs_fsck_mode mode;
	bool verbose;
	bool check_data;	/* -c: read every extent and verify its data */
	/* interactive answer for BFS_FSCK_MODE_ASK; NULL answers no */
	bool (*ask)(void *ctx, const char *prompt);
	/* where problem reports and progress lines go */
	void (*print)(void *ctx, const char *line);
	/* every problem with its decision, after it is printed (optional) */
	void (*report)(void *ctx, const struct bfs_fsck_report *r);
	/*
	 * how far pass @pass is: @cur of @max units of real work (superblock
	 * copies, btree nodes, inode numbers swept); optional, called often
	 */
	void (*progress)(void *ctx, unsigned pass, u64 cur, u64 max);
	void *ctx;
	u64 cache_bytes;	/* node cache budget for the passes; 0 = the core's default */
	/*
	 * set (by a signal handler) to cancel: no repair is started after it,
	 * the running pass finishes, no later pass starts and the run returns
	 * BFS_FSCK_CANCELED; optional
	 */
	const volatile sig_atomic_t *cancel;

	/* results */
	unsigned pass;		/* the pass running, or the last one that ran (from 1; 0: none) */
	unsigned nr_problems, nr_fixed, nr_unfixed;
	bool preen_stopped;	/* -p met a problem it may not fix */
	bool cancelled;		/* *cancel was seen set */
	bool btrees_damaged;	/* pass 1 found damage: later passes are skipped */
	bool journal_salvage;	/* the journal is damaged and was not repaired: later
				   passes open read-only, replaying what is consistent */
	enum bfs_problem_code last_code;	/* the last problem decided, and where */
	struct bfs_fsck_loc last_loc;
	struct bfs_sb_handle sb;
	struct fsck_early *early;	/* pass 1's walk for pass 2 (libcore/fsck's own) */
};

/*
 * Report problem @code (with a detail message) and decide whether to fix it.
 * Returns true if the caller should repair it now.
 */
bool bfs_fix_problem(struct bfs_fsck *f, enum bfs_problem_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* the same, with the problem's location */
bool bfs_fix_problem_at(struct bfs_fsck *f, enum bfs_problem_code code,
			const struct bfs_fsck_loc *loc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* a finding from a libcore check, decided like any problem */
bool bfs_fix_finding(struct bfs_fsck *f, const struct bfs_finding *fd);
/* tell the user what was done after a repair failed */
void bfs_fsck_repair_failed(struct bfs_fsck *f, enum bfs_problem_code code, int err);

/* call @fn for every problem code, in table order (man page, --list-problems) */
void bfs_fsck_list_problems(void (*fn)(void *ctx, enum bfs_problem_code code), void *ctx);

/*
 * "superblock", "journal", "btrees", ... for pass @pass, numbered from 1 as
 * e2fsck numbers its passes (f->pass, the progress hook, reports); NULL for
 * 0 and past the last
 */
const char *bfs_fsck_pass_name(unsigned pass);

/* run every pass; returns the fsck(8) exit code */
int bfs_fsck_run(struct bfs_fsck *f);
void bfs_fsck_release(struct bfs_fsck *f);
void bfs_fsck_printf(struct bfs_fsck *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* whether the run was cancelled (f->cancel set); once true, stays true */
bool bfs_fsck_cancelled(struct bfs_fsck *f);
/* for the passes: the running pass (f->pass) is at @cur of @max; calls the hook, if any */
void bfs_fsck_progress(struct bfs_fsck *f, u64 cur, u64 max);

#endif
