/* SPDX-License-Identifier: MIT */
/*
 * A command's options as one table.  getopt_long's optstring and longopts,
 * the option lines of --help, and the bash completion of `bfs completion`
 * all come from the rows of struct bfs_cmd.opts, so none of them can name an
 * option the others lack; tests/integration/10-manpages.sh holds each man
 * page's OPTIONS section to the --help lines.
 *
 * Invariants of a table (checked when it is first used; a bad table makes
 * every run of the command fail, so 00-cli catches it):
 *   - every row has a long name or a short letter, and a help text;
 *   - no two rows share a long name or a letter;
 *   - 'h' and "help" are not in it: -h, --help are every command's and are
 *     found by getopt itself (bfs_cmd_wants_help), so "-L -h" is a label.
 */
#ifndef BFS_CMD_OPTS_H
#define BFS_CMD_OPTS_H

#include <stdbool.h>
#include <stdio.h>

struct bfs_cmd;

/* what completes an option's value (or a command's first argument) */
enum bfs_opt_values {
	BFS_VAL_ANY,		/* a size, a label: nothing to offer */
	BFS_VAL_FILE,		/* a file name */
	BFS_VAL_WORDS,		/* one of .words */
	BFS_VAL_LIST,		/* a comma-separated list of .words */
	BFS_VAL_BTREES,		/* a btree name, from libcore */
	BFS_VAL_COMPRESSION,	/* none, zstd, zstd:LEVEL */
	BFS_VAL_CSUM,		/* a checksum type, from libcore */
};

struct bfs_opt {
	const char *name;	/* long name, or NULL: short only */
	char letter;		/* short option, or 0: long only */
	int id;			/* what bfs_cmd_getopt() returns; 0: the letter */
	const char *arg;	/* the value's name in --help ("SIZE"), or NULL: a flag */
	const char *help;	/* --help text; each '\n' starts an indented line */
	enum bfs_opt_values values;
	const char *words;	/* BFS_VAL_WORDS, BFS_VAL_LIST: space separated */
};

/* a row: BFS_OPT("label", 'L', 0, "LABEL", "the label"[, .values = ..., .words = ...]) */
#define BFS_OPT(long_name, short_letter, row_id, arg_name, help_text, ...)		\
	{ .name = (long_name), .letter = (short_letter), .id = (row_id), .arg = (arg_name),	\
	  .help = help_text, __VA_ARGS__ }

/* ids of long-only options start here, above every letter */
#define BFS_OPT_LONG	256

/* each row @o of @table ({0} terminated, or NULL) */
#define bfs_for_each_row(o, table) for (o = (table); o && (o->name || o->letter); o++)
/* each row @o of @cmd's option table */
#define bfs_for_each_opt(o, cmd) bfs_for_each_row(o, (cmd)->opts)

/* the id bfs_cmd_getopt() returns for @o */
static inline int bfs_opt_id(const struct bfs_opt *o)
{
	return o->id ? o->id : o->letter;
}

/*
 * getopt_long over @cmd's table: the row's id, -1 at the end, '?' after a
 * bad option (getopt has printed why).  @row, if not NULL, is set to the
 * row matched.  optarg and optind are getopt's.
 */
int bfs_cmd_getopt(const struct bfs_cmd *cmd, int argc, char **argv,
		   const struct bfs_opt **row);

/*
 * Is -h or --help among @argv's options?  getopt decides, on a copy of @argv
 * and without messages, so an option's value ("-L -h") is not taken for it.
 */
bool bfs_cmd_wants_help(const struct bfs_cmd *cmd, int argc, char **argv);

/* "usage: ...", the summary, .help_head, .settings, the option lines and .help */
void bfs_cmd_print_help(const struct bfs_cmd *cmd, FILE *f);

/* the lines of --help for .settings ("  label=TEXT  the label ..."), untitled */
void bfs_cmd_print_settings(const struct bfs_cmd *cmd, FILE *f);

#endif /* BFS_CMD_OPTS_H */
