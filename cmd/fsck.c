// SPDX-License-Identifier: MIT
/*
 * bfs fsck: offline check and repair with fsck(8) conventions: -n / -y / -p,
 * exit codes 0/1/4/8/16/32, and -n opens the device read-only and writes
 * nothing at all.
 */
#include "cmd.h"

#include <bfs/fsck.h>
#include <bfs/log.h>

#include <string.h>
#include <unistd.h>

static const struct option fsck_longopts[] = {
	{ "no",		no_argument, NULL, 'n' },
	{ "yes",	no_argument, NULL, 'y' },
	{ "preen",	no_argument, NULL, 'p' },
	{ "force",	no_argument, NULL, 'f' },
	{ "verbose",	no_argument, NULL, 'v' },
	{ "check-data",	no_argument, NULL, 'c' },
	{ "list-problems", no_argument, NULL, 'L' },
	{ NULL, 0, NULL, 0 }
};

static void print_line(void *ctx, const char *line)
{
	printf("%s%s\n", (const char *)ctx, line);
}

/*
 * libcore's own messages (what exactly is wrong, where) go to the same
 * stream as the problem reports, so they read in order
 */
static void log_stdout(enum bfs_log_level level, const char *msg, void *ctx)
{
	if (level == BFS_LOG_DEBUG)
		return;
	printf("%s%s%s\n", (const char *)ctx, level == BFS_LOG_ERR ? "error: " :
	       level == BFS_LOG_WARN ? "warning: " : "", msg);
}

static bool ask_tty(void *ctx, const char *prompt)
{
	char answer[16];

	printf("%s? [y/n] ", prompt);
	fflush(stdout);
	if (!fgets(answer, sizeof(answer), stdin))
		return false;
	return answer[0] == 'y' || answer[0] == 'Y';
}

/* NAME, flags and message of every problem, one per line (the man page's list) */
static void list_problem(void *ctx, enum bfs_problem_code code)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{ BFS_PR_PREEN, "preen" }, { BFS_PR_LOSS, "loss" },
		{ BFS_PR_FATAL, "fatal" }, { BFS_PR_NOFIX, "nofix" },
	};
	unsigned fl = bfs_problem_flags(code);
	char flags[64] = "";
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (fl & names[i].bit)
			snprintf(flags + strlen(flags), sizeof(flags) - strlen(flags), "%s%s",
				 flags[0] ? "," : "", names[i].name);
	printf("%s\t%s\t%s\n", bfs_problem_name(code), flags[0] ? flags : "-",
	       bfs_problem_message(code));
}

static int cmd_fsck(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct bfs_fsck f = { .mode = BFS_FSCK_MODE_ASK };
	char prefix[4096];
	int c, ret, modes = 0;

	while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			f.mode = BFS_FSCK_MODE_NO;
			modes++;
			break;
		case 'y':
			f.mode = BFS_FSCK_MODE_YES;
			modes++;
			break;
		case 'p':
		case 'a':
			f.mode = BFS_FSCK_MODE_PREEN;
			modes++;
			break;
		case 'f':
			break;	/* always a full check: bfs has no "clean, skip" shortcut yet */
		case 'v':
			f.verbose = true;
			break;
		case 'c':
			f.check_data = true;
			break;
		case 'L':
			bfs_fsck_list_problems(list_problem, NULL);
			return 0;
		default:
			bfs_cmd_usage_error(cmd, "bad option");
			return BFS_FSCK_USAGE;
		}
	}
	if (modes > 1) {
		bfs_cmd_usage_error(cmd, "only one of -n, -y and -p may be given");
		return BFS_FSCK_USAGE;
	}
	if (bfs_cmd_want_device(cmd, argc))
		return BFS_FSCK_USAGE;
	if (f.mode == BFS_FSCK_MODE_ASK) {
		if (!isatty(STDIN_FILENO)) {
			bfs_cmd_error(cmd, "need a terminal for interactive repairs; use -n, -y or -p");
			return BFS_FSCK_USAGE;
		}
		f.ask = ask_tty;
	}
	/* preen output is prefixed with the device, as fsck -A interleaves several */
	snprintf(prefix, sizeof(prefix), "%s%s", f.mode == BFS_FSCK_MODE_PREEN ? argv[optind] : "",
		 f.mode == BFS_FSCK_MODE_PREEN ? ": " : "");
	f.print = print_line;
	f.ctx = prefix;
	bfs_log_set_hook(log_stdout, prefix);

	ret = bfs_dev_open(argv[optind], f.mode == BFS_FSCK_MODE_NO ? BFS_DEV_RDONLY : BFS_DEV_EXCL,
			   &f.dev);
	if (ret == -EBUSY) {
		bfs_cmd_error(cmd, "'%s' is in use (mounted?); not checking it", argv[optind]);
		return BFS_FSCK_ERROR;
	}
	if (ret) {
		bfs_cmd_error(cmd, "cannot open '%s': %s", argv[optind], strerror(-ret));
		return BFS_FSCK_ERROR;
	}
	ret = bfs_fsck_run(&f);
	if (ret <= BFS_FSCK_CORRECTED)
		printf("%s: %s%u problem%s found, %u fixed\n", argv[optind],
		       ret == BFS_FSCK_OK ? "clean, " : "", f.nr_problems,
		       f.nr_problems == 1 ? "" : "s", f.nr_fixed);
	else if (ret == BFS_FSCK_UNCORRECTED)
		printf("%s: %u problem%s found, %u left unfixed\n", argv[optind],
		       f.nr_problems, f.nr_problems == 1 ? "" : "s", f.nr_unfixed);
	bfs_fsck_release(&f);
	bfs_dev_close(f.dev);
	return ret;
}

const struct bfs_cmd bfs_cmd_fsck = {
	.name = "fsck",
	.fn = cmd_fsck,
	.summary = "check and repair a bfs filesystem offline",
	.synopsis = "[-n|-y|-p] [-f] [-v] DEVICE",
	.help =
	"Options:\n"
	"  -n, --no          check only: open read-only and change nothing\n"
	"  -y, --yes         fix every problem found\n"
	"  -p, --preen       fix what is safe without asking (-a is the same)\n"
	"  -f, --force       check even if the filesystem seems clean\n"
	"  -v, --verbose     say what each pass does\n"
	"  -c, --check-data  read all file data and verify its checksums\n"
	"      --list-problems  list every problem fsck knows (name, flags, message)\n"
	"\nChecks the superblock and its backup copies (pass 0), then replays the\n"
	"journal (in memory with -n) and checks every btree (pass 1), then the\n"
	"directories, inodes, link counts and file data ownership (pass 2).\n"
	"Exit status (fsck(8)): 0 clean, 1 errors fixed, 4 errors left unfixed,\n"
	"8 operational error, 16 usage error.\n",
	.shortopts = "nypafvc",
	.longopts = fsck_longopts,
	.args = BFS_ARG_DEVICE,
};
