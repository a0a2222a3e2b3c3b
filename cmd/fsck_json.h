/* SPDX-License-Identifier: MIT */
/*
 * bfs fsck --json: every problem as the report hook gave it (code name, pass,
 * location, what was decided), collected during the run and printed at the
 * end with the passes, the counts and the exit code, as one JSON object.
 */
#ifndef BFS_CMD_FSCK_JSON_H
#define BFS_CMD_FSCK_JSON_H

#include <stdio.h>

#include <bfs/fsck.h>

struct fsck_json_problem {
	struct bfs_fsck_report r;	/* .detail and .loc.path point at the copies below */
	char	*detail;
	char	*path;
	char	*repair_error;		/* why the repair failed, if it did */
};

struct fsck_json {
	struct fsck_json_problem *v;
	size_t	nr, cap;
	unsigned lost;			/* records that could not be kept (out of memory) */
};

/* the report hook's record; a failed repair updates the record it belongs to */
void fsck_json_add(struct fsck_json *j, const struct bfs_fsck_report *r);

struct fsck_json_run {
	const char *device;
	const char *mode;		/* "check", "yes", "preen", "interactive" */
	const struct bfs_fsck *f;	/* NULL: the check did not start */
	bool	ran;			/* the passes ran (f's results are real) */
	const char *error;		/* an operational error before or during the run, or NULL */
	int	exit_code;
};

void fsck_json_print(FILE *out, const struct fsck_json *j, const struct fsck_json_run *run);
void fsck_json_free(struct fsck_json *j);

#endif
