/* SPDX-License-Identifier: MIT */
/*
 * Progress of a long operation, for every command (fsck's passes, format's
 * discard, resize, migrate, image dumps and restores): one drawing of the
 * bar and one line format, whatever the command.  Two forms, as e2fsck's -C:
 *
 *   bar    one line redrawn in place on a terminal,
 *          "LABEL: NAME |=======        | 42.0%", at most ten times a
 *          second, erased when done.  Only drawn when the descriptor is a
 *          terminal and $BFS_NO_PROGRESS is not set.
 *   lines  "STAGE CUR MAX LABEL\n" on a descriptor, each time the value
 *          moves by a tenth of a percent, the stage changes or a stage
 *          ends: the format e2fsck writes for -C FD and that fsck(8) and
 *          systemd-fsck read.  Asked for explicitly, so $BFS_NO_PROGRESS
 *          does not turn them off.
 *
 * Usage:
 *	struct bfs_progress p;
 *	bfs_progress_init_bar(&p, STDOUT_FILENO, dev);	// or _lines(&p, fd, dev)
 *	bfs_progress_update(&p, stage, "discarding", done, total);  // often is fine
 *	bfs_progress_clear(&p);		// before printing to the bar's terminal
 *	bfs_progress_done(&p);		// erases the bar
 * A zeroed struct, or one whose init found nothing to draw on, does nothing;
 * every call is cheap when progress is off.  LABEL must outlive the struct.
 */
#ifndef BFS_CMD_PROGRESS_H
#define BFS_CMD_PROGRESS_H

#include <stdbool.h>

#include <bfs/types.h>

enum bfs_progress_kind { BFS_PROGRESS_OFF, BFS_PROGRESS_BAR, BFS_PROGRESS_LINES };

struct bfs_progress {
	enum bfs_progress_kind kind;
	int	fd;
	const char *label;
	unsigned stage;
	bool	started;	/* something was shown for @stage */
	unsigned permille;	/* last value shown */
	u64	drawn_ns;	/* bar: when it was last drawn */
	size_t	drawn_len;	/* bar: characters on the line now (0: erased) */
};

/*
 * What -C FD means for the commands that take it besides fsck (migrate,
 * image): lines on @fd when it was given (>= 0); without it (-1) a bar on
 * standard output when that is a terminal and $BFS_NO_PROGRESS is unset.
 */
void bfs_progress_init_cmd(struct bfs_progress *p, int fd, const char *label);
/* a bar on @fd if it is a terminal and $BFS_NO_PROGRESS is unset; else off */
void bfs_progress_init_bar(struct bfs_progress *p, int fd, const char *label);
/* machine-readable lines on @fd; ignores SIGPIPE from then on (a closed reader stops them) */
void bfs_progress_init_lines(struct bfs_progress *p, int fd, const char *label);
static inline bool bfs_progress_on(const struct bfs_progress *p)
{
	return p->kind != BFS_PROGRESS_OFF;
}

/* stage @stage (named @name on the bar) is at @cur of @max (@max 0: unknown, not shown) */
void bfs_progress_update(struct bfs_progress *p, unsigned stage, const char *name,
			 u64 cur, u64 max);
/* erase the bar so the terminal can be written; the next update redraws it */
void bfs_progress_clear(struct bfs_progress *p);
/* erase the bar for good; later updates are ignored */
void bfs_progress_done(struct bfs_progress *p);

#endif /* BFS_CMD_PROGRESS_H */
