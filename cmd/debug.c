// SPDX-License-Identifier: MIT
/*
 * bfs debug: a shell over an image, in the spirit of debugfs and xfs_db.
 * This file holds the option parsing, the three modes (one request with -R,
 * a command file with -f whose transcript is a golden test file, and the
 * interactive readline shell), the shell's command table and the dispatch.
 * The commands themselves live in cmd/debug_*.c, grouped by area.
 */
#include "cmd.h"
#include "debug.h"

#include <bfs/fs.h>
#include <bfs/log.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int dbg_cmd_help(struct dbg *d, int argc, char **argv);
static int dbg_cmd_quit(struct dbg *d, int argc, char **argv) { return DBG_QUIT; }

#define RO	0
#define CORE	DBG_NEED_CORE
#define FS	DBG_NEED_FS
#define W	DBG_WRITE

const struct dbg_cmd dbg_cmds[] = {
	/* look */
	{ "super", dbg_cmd_super, "", "print the superblock as it is on disk", RO, 0, 0 },
	{ "stats", dbg_cmd_stats, "", "space used per btree and by data", CORE, 0, 0 },
	{ "ls", dbg_cmd_ls, "[-l] [PATH]", "list a directory (sorted by name)", FS, 0, 2 },
	{ "cd", dbg_cmd_cd, "[DIR]", "change the current directory (default /)", FS, 0, 1 },
	{ "pwd", dbg_cmd_pwd, "", "print the current directory", FS, 0, 0 },
	{ "stat", dbg_cmd_stat, "PATH", "print an inode (PATH or <INUM>)", FS, 1, 1 },
	{ "cat", dbg_cmd_cat, "PATH", "print a file's contents", FS, 1, 1 },
	{ "dump", dbg_cmd_dump, "PATH HOSTFILE", "copy a file out of the image", FS, 2, 2 },
	{ "rdump", dbg_cmd_rdump, "DIR HOSTDIR", "copy a directory tree out of the image into HOSTDIR",
	  FS, 2, 2 },
	{ "xattrs", dbg_cmd_xattrs, "PATH", "list extended attributes and their values", FS, 1, 1 },
	{ "extents", dbg_cmd_extents, "PATH", "physical map of a file", FS, 1, 1 },
	/* btrees */
	{ "btrees", dbg_cmd_btrees, "", "every btree: root, depth, nodes and keys", CORE, 0, 0 },
	{ "keys", dbg_cmd_keys, "BTREE [START [END]]", "print the keys of a btree in a range",
	  CORE, 1, 3 },
	{ "node", dbg_cmd_node, "ADDR", "decode the btree node at a device byte offset", CORE, 1, 1 },
	{ "find", dbg_cmd_find, "POS BTREE", "the key at a position and the nodes leading to it",
	  CORE, 2, 2 },
	{ "journal", dbg_cmd_journal, "[SEQ]", "journal entries, or the contents of one entry",
	  RO, 0, 1 },
	{ "bucket", dbg_cmd_bucket, "N", "what a bucket holds and its alloc key", CORE, 1, 1 },
	/* write */
	{ "set-super", dbg_cmd_set_super, "FIELD VALUE", "change a superblock field (raw write)",
	  W, 2, 2 },
	{ "set-inode", dbg_cmd_set_inode, "INUM FIELD VALUE",
	  "change an inode field (INUM: number, <N> or path)", FS | W, 3, 3 },
	{ "del-key", dbg_cmd_del_key, "BTREE POS", "delete the key at a position", CORE | W, 2, 2 },
	{ "put-key", dbg_cmd_put_key, "BTREE TYPE POS [size=N] [hex=BYTES]",
	  "insert or overwrite a key", CORE | W, 3, 5 },
	{ "corrupt", dbg_cmd_corrupt, "ADDR OFFSET [LEN]",
	  "flip bytes at ADDR+OFFSET, checksums left wrong (raw write)", W, 2, 3 },
	{ "write", dbg_cmd_write, "HOSTFILE PATH", "copy a host file into the image", FS | W, 2, 2 },
	{ "mkdir", dbg_cmd_mkdir, "PATH", "make a directory", FS | W, 1, 1 },
	{ "symlink", dbg_cmd_symlink, "TARGET PATH", "make a symbolic link to TARGET", FS | W, 2, 2 },
	{ "rm", dbg_cmd_rm, "PATH", "remove a file, symlink or empty directory", FS | W, 1, 1 },
	/* the shell */
	{ "help", dbg_cmd_help, "[COMMAND]", "list the commands, or describe one", RO, 0, 1 },
	{ "quit", dbg_cmd_quit, "", "leave the shell (also exit, or end of input)", RO, 0, 0 },
	{ NULL, NULL, NULL, NULL, 0, 0, 0 }
};

#undef RO
#undef CORE
#undef FS
#undef W

const struct dbg_cmd *dbg_find_cmd(const char *name)
{
	const struct dbg_cmd *c, *match = NULL;
	size_t len = strlen(name);

	if (!strcmp(name, "exit") || !strcmp(name, "q"))
		name = "quit";
	for (c = dbg_cmds; c->name; c++) {
		if (!strcmp(c->name, name))
			return c;
		if (len && !strncmp(c->name, name, len)) {
			if (match)
				return NULL;	/* ambiguous */
			match = c;
		}
	}
	return match;
}

static void cmd_usage_line(const struct dbg_cmd *c, FILE *f)
{
	fprintf(f, "%s%s%s", c->name, *c->args ? " " : "", c->args);
}

static int dbg_cmd_help(struct dbg *d, int argc, char **argv)
{
	const struct dbg_cmd *c;

	if (argc == 2) {
		c = dbg_find_cmd(argv[1]);
		if (!c)
			return dbg_err(d, "unknown command '%s'", argv[1]);
		printf("usage: ");
		cmd_usage_line(c, stdout);
		printf("\n%s%s\n", c->help, c->flags & DBG_WRITE ? " (needs -w)" : "");
		return 0;
	}
	for (c = dbg_cmds; c->name; c++) {
		int n = printf("  %s%s%s", c->name, *c->args ? " " : "", c->args);

		printf("%*s%s\n", n < 40 ? 40 - n : 1, "", c->help);
	}
	return 0;
}

/*
 * Split a line into words: blanks separate, "..." and '...' quote, a
 * backslash escapes the next character.  Returns the number of words or -1
 * for an unterminated quote / too many words.  Works in place.
 */
static int split_words(char *line, char **argv, int max)
{
	char *in = line, *out = line;
	int argc = 0;

	for (;;) {
		char quote = 0;

		while (*in == ' ' || *in == '\t' || *in == '\n' || *in == '\r')
			in++;
		if (!*in)
			return argc;
		if (argc == max)
			return -1;
		argv[argc++] = out;
		while (*in && (quote || (*in != ' ' && *in != '\t' && *in != '\n' && *in != '\r'))) {
			if (quote && *in == quote) {
				quote = 0;
				in++;
			} else if (!quote && (*in == '"' || *in == '\'')) {
				quote = *in++;
			} else if (*in == '\\' && in[1] && quote != '\'') {
				in++;
				*out++ = *in++;
			} else {
				*out++ = *in++;
			}
		}
		if (quote)
			return -1;
		if (*in)
			in++;
		*out++ = '\0';
	}
}

#define DBG_MAX_ARGS 64

/* the checks every command gets: argument count, -w, what must be open */
static int may_run(struct dbg *d, const struct dbg_cmd *c, int nargs)
{
	bool writes_keys = (c->flags & DBG_WRITE) && (c->flags & (DBG_NEED_FS | DBG_NEED_CORE));

	if (nargs < c->min_args || (c->max_args >= 0 && nargs > c->max_args)) {
		fflush(stdout);
		fprintf(stderr, "%s: usage: ", c->name);
		cmd_usage_line(c, stderr);
		fputc('\n', stderr);
		return DBG_FAIL;
	}
	if ((c->flags & DBG_WRITE) && !d->writable)
		return dbg_err(d, "the image is open read-only: start bfs debug with -w to write");
	if (writes_keys && d->raw_written)
		return dbg_err(d, "after a raw write (set-super, corrupt) the image stays open "
			       "read-only; start a new session for this");
	if (writes_keys && !d->rw && dbg_reopen_rw(d))
		return DBG_FAIL;
	if ((c->flags & DBG_NEED_FS) && !d->fs)
		return dbg_err(d, "no filesystem: %s", d->why_no_fs);
	if ((c->flags & DBG_NEED_CORE) && !d->core)
		return dbg_err(d, "no btrees: %s", d->why_no_core);
	if (writes_keys && !d->rw)
		return dbg_err(d, "the filesystem could only be opened read-only");
	return 0;
}

int dbg_run_line(struct dbg *d, const char *text)
{
	char *argv[DBG_MAX_ARGS + 1];
	const struct dbg_cmd *c;
	char *line = strdup(text);
	int argc, ret;

	if (!line)
		return dbg_err(d, "out of memory");
	d->cmd = "bfs debug";
	argc = split_words(line, argv, DBG_MAX_ARGS);
	if (argc <= 0) {
		free(line);
		return argc < 0 ? dbg_err(d, "unterminated quote or too many words") : 0;
	}
	argv[argc] = NULL;
	c = dbg_find_cmd(argv[0]);
	if (!c) {
		ret = dbg_err(d, "unknown or ambiguous command '%s' (try help)", argv[0]);
		free(line);
		return ret;
	}
	d->cmd = c->name;
	ret = may_run(d, c, argc - 1);
	if (!ret)
		ret = c->fn(d, argc, argv);
	fflush(stdout);
	free(line);
	return ret;
}

/*
 * -f FILE: echo every command after the prompt so that the output is a
 * transcript (golden test files are exactly that); comment lines are echoed
 * as they are, blank lines skipped.
 */
static int run_file(struct dbg *d, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int failed = 0;

	if (!f) {
		fprintf(stderr, "bfs debug: cannot open '%s': %s\n", path, strerror(errno));
		return DBG_FAIL;
	}
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *s = line;
		int ret;

		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			continue;
		if (*s == '#') {
			printf("%s\n", line);
			continue;
		}
		printf("bfs: %s\n", s);
		ret = dbg_run_line(d, s);
		if (ret == DBG_QUIT)
			break;
		if (ret)
			failed = 1;
	}
	free(line);
	if (f != stdin)
		fclose(f);
	return failed;
}

/*
 * libcore messages go to stderr, after what the commands printed so far,
 * and not as "bfs: ...", which would read as a command in a transcript
 */
static void log_hook(enum bfs_log_level level, const char *msg, void *ctx)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };

	if (level == BFS_LOG_DEBUG && !getenv("BFS_DEBUG"))
		return;
	fflush(stdout);
	fprintf(stderr, "bfs debug: %s%s\n", prefix[level], msg);
}

static const struct bfs_opt debug_opts[] = {
	BFS_OPT("write", 'w', 0, NULL, "allow the write commands (the filesystem is reopened\n"
		"read-write at the first key or file write)"),
	BFS_OPT("request", 'R', 0, "CMD", "run one shell command and exit"),
	BFS_OPT("file", 'f', 0, "FILE", "run the commands in FILE (- for stdin), echoing each\n"
		"after the prompt \"bfs: \"; # lines are comments", .values = BFS_VAL_FILE),
	{ 0 }
};

static int cmd_debug(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct dbg d = { .cwd = BFS_ROOT_INO, .cwd_path = "/" };
	const char *request = NULL, *file = NULL;
	int c, ret, flags;

	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'w':
			d.writable = true;
			break;
		case 'R':
			request = optarg;
			break;
		case 'f':
			file = optarg;
			break;
		default:
			return bfs_cmd_usage_error(cmd, "bad option");
		}
	}
	ret = bfs_cmd_want_device(cmd, argc);
	if (ret)
		return ret;
	if (request && file)
		return bfs_cmd_usage_error(cmd, "-R and -f exclude each other");
	d.devpath = argv[optind];

	bfs_log_set_hook(log_hook, NULL);
	/* keys print decoded even when only the btree core opens */
	flags = d.writable ? BFS_DEV_EXCL : BFS_DEV_RDONLY;
	ret = bfs_dev_open(d.devpath, flags, &d.dev);
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", d.devpath, strerror(-ret));
	/* read-only even with -w until a write needs more (dbg_reopen_rw) */
	dbg_open_fs(&d, false);

	if (request)
		ret = dbg_run_line(&d, request);
	else if (file)
		ret = run_file(&d, file);
	else if (isatty(STDIN_FILENO) && dbg_readline_load())
		ret = dbg_interactive(&d);
	else {
		if (isatty(STDIN_FILENO))
			fprintf(stderr, "bfs debug: libreadline.so.8 not found: no prompt, history or completion\n");
		ret = run_file(&d, "-");
	}
	if (ret == DBG_QUIT)
		ret = 0;

	fflush(stdout);
	if (dbg_close_fs(&d))
		ret = DBG_FAIL;
	bfs_dev_close(d.dev);
	return ret ? BFS_EXIT_ERROR : BFS_EXIT_OK;
}

const struct bfs_cmd bfs_cmd_debug = {
	.name = "debug",
	.fn = cmd_debug,
	.summary = "interactive shell to inspect and repair a bfs image",
	.synopsis = "[-w] [-R REQUEST] [-f CMDFILE] DEVICE",
	.opts = debug_opts,
	.help =
	"Without -R or -f the shell reads commands interactively (readline, with\n"
	"history in ~/.bfs_debug_history and tab completion).  Type 'help' for the\n"
	"commands.  The exit status is 1 if any command failed, else 0.\n",
	.args = BFS_ARG_DEVICE,
};
