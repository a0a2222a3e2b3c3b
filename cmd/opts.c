// SPDX-License-Identifier: MIT
/*
 * Option tables (cmd/opts.h): getopt's strings built from the rows, the
 * --help option lines printed from them.
 */
#include "cmd.h"

#include <stdlib.h>
#include <string.h>

/* what getopt_long wants, built from one table */
struct getopt_tables {
	const struct bfs_opt *opts;	/* the table these were built from */
	char optstring[2 + 3 * BFS_CMD_MAX_OPTS];
	struct option longopts[BFS_CMD_MAX_OPTS + 2];
	const struct bfs_opt *rows[BFS_CMD_MAX_OPTS + 2];	/* longopts[i]'s row */
};

static bool same_name(const struct bfs_opt *a, const struct bfs_opt *b)
{
	return (a->name && b->name && !strcmp(a->name, b->name)) ||
	       (a->letter && a->letter == b->letter);
}

/* 0, or -1 with the reason said: @table breaks an invariant of opts.h */
static int check_table(const struct bfs_cmd *cmd, const struct bfs_opt *table, bool settings)
{
	static bool said;
	const struct bfs_opt *o, *p;
	size_t n = 0;

	for (o = table; o && (o->name || o->letter); o++, n++) {
		if (!o->help || o->letter == 'h' || (o->name && !strcmp(o->name, "help")) ||
		    n >= BFS_CMD_MAX_OPTS || (settings && (!o->name || !o->arg)))
			goto bad;
		for (p = table; p < o; p++)
			if (same_name(o, p))
				goto bad;
	}
	return 0;
bad:
	if (!said)	/* the help scan and the parse both get here */
		fprintf(stderr, "bfs %s: internal error: bad option table row '%s'\n", cmd->name,
			o->name ? o->name : "");
	said = true;
	return -1;
}

static int build(const struct bfs_cmd *cmd, struct getopt_tables *t)
{
	const struct bfs_opt *o;
	size_t n = 0, s = 0;

	if (t->opts == cmd->opts && t->optstring[0])
		return 0;
	if (check_table(cmd, cmd->opts, false) || check_table(cmd, cmd->settings, true))
		return -1;
	memset(t, 0, sizeof(*t));
	t->opts = cmd->opts;
	t->optstring[s++] = 'h';
	bfs_for_each_opt(o, cmd) {
		if (o->letter) {
			t->optstring[s++] = o->letter;
			if (o->arg)
				t->optstring[s++] = ':';
		}
		if (o->name) {
			t->longopts[n] = (struct option){
				o->name, o->arg ? required_argument : no_argument, NULL, bfs_opt_id(o)
			};
			t->rows[n++] = o;
		}
	}
	t->longopts[n] = (struct option){ "help", no_argument, NULL, 'h' };
	return 0;
}

static const struct bfs_opt *row_of(const struct bfs_cmd *cmd, int id)
{
	const struct bfs_opt *o;

	bfs_for_each_opt(o, cmd)
		if (bfs_opt_id(o) == id)
			return o;
	return NULL;
}

/* one command runs per process: one set of tables, rebuilt if the command changes */
static struct getopt_tables tables;

int bfs_cmd_getopt(const struct bfs_cmd *cmd, int argc, char **argv,
		   const struct bfs_opt **row)
{
	struct getopt_tables *t = &tables;
	int c, idx = -1;

	if (build(cmd, t))
		return '?';
	c = getopt_long(argc, argv, t->optstring, t->longopts, &idx);
	if (row)
		*row = c == '?' || c == -1 ? NULL : idx >= 0 ? t->rows[idx] : row_of(cmd, c);
	return c;
}

bool bfs_cmd_wants_help(const struct bfs_cmd *cmd, int argc, char **argv)
{
	char **copy = calloc((size_t)argc + 1, sizeof(*copy));
	int c, saved_opterr = opterr;
	bool help = false;

	/* a bad table: the command's own parse says so (and fails) */
	if (!copy || build(cmd, &tables)) {
		free(copy);
		return false;
	}
	memcpy(copy, argv, (size_t)argc * sizeof(*copy));
	opterr = 0;
	optind = 0;	/* a new scan: getopt forgets any earlier one */
	while ((c = bfs_cmd_getopt(cmd, argc, copy, NULL)) != -1)
		if (c == 'h')
			help = true;
	opterr = saved_opterr;
	optind = 0;
	free(copy);
	return help;
}

/* "  -L, --label=LABEL", "      --discard", "  -C FD"; a setting: "  label=TEXT" */
static int left_column(const struct bfs_opt *o, bool setting, char *buf, size_t len)
{
	if (setting)
		return snprintf(buf, len, "  %s=%s", o->name, o->arg);
	if (!o->name)
		return snprintf(buf, len, "  -%c%s%s", o->letter, o->arg ? " " : "",
				o->arg ? o->arg : "");
	return snprintf(buf, len, "  %c%c%c --%s%s%s", o->letter ? '-' : ' ',
			o->letter ? o->letter : ' ', o->letter ? ',' : ' ', o->name,
			o->arg ? "=" : "", o->arg ? o->arg : "");
}

static void print_row(FILE *f, const char *left, const char *help, int width)
{
	const char *nl;
	int n = fprintf(f, "%s", left), len;

	/* a long left column puts the text on the next line */
	if (n + 2 > width) {
		fputc('\n', f);
		n = 0;
	}
	for (;;) {
		nl = strchr(help, '\n');
		len = nl ? (int)(nl - help) : (int)strlen(help);
		fprintf(f, "%*s%.*s\n", width - n, "", len, help);
		if (!nl || !nl[1])
			break;
		help = nl + 1;
		n = 0;
	}
}

/* the help text's column: past the longest left column, within reason */
#define HELP_COLUMN_MIN	20
#define HELP_COLUMN_MAX	26

/* "TITLE:" (if not NULL) and a line per row of @table (and of @extra, if not NULL) */
static void print_rows(FILE *f, const char *title, const struct bfs_opt *table,
		       const struct bfs_opt *extra, bool settings)
{
	const struct bfs_opt *o;
	char left[96];
	int width = HELP_COLUMN_MIN, n;

	bfs_for_each_row(o, table) {
		n = left_column(o, settings, left, sizeof(left)) + 2;
		if (n > width && n <= HELP_COLUMN_MAX)
			width = n;
	}
	if (title)
		fprintf(f, "\n%s:\n", title);
	bfs_for_each_row(o, table) {
		left_column(o, settings, left, sizeof(left));
		print_row(f, left, o->help, width);
	}
	if (extra) {
		left_column(extra, settings, left, sizeof(left));
		print_row(f, left, extra->help, width);
	}
}

void bfs_cmd_print_settings(const struct bfs_cmd *cmd, FILE *f)
{
	print_rows(f, NULL, cmd->settings, NULL, true);
}

void bfs_cmd_print_help(const struct bfs_cmd *cmd, FILE *f)
{
	static const struct bfs_opt help =
		BFS_OPT("help", 'h', 0, NULL, "show this help and exit");

	fprintf(f, "usage: bfs %s %s\n\n%s.\n", cmd->name, cmd->synopsis, cmd->summary);
	if (cmd->help_head && *cmd->help_head)
		fprintf(f, "\n%s", cmd->help_head);
	if (cmd->settings)
		print_rows(f, cmd->settings_title ? cmd->settings_title : "Settings",
			   cmd->settings, NULL, true);
	print_rows(f, cmd->opts_title ? cmd->opts_title : "Options", cmd->opts, &help, false);
	if (cmd->help && *cmd->help)
		fprintf(f, "\n%s", cmd->help);
}
