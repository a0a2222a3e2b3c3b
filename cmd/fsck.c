// SPDX-License-Identifier: MIT
/*
 * bfs fsck: offline check and repair with fsck(8) conventions: -n / -y / -p,
 * exit codes 0/1/4/8/16/32 (SIGINT/SIGTERM cancel), -n opens the device read-only and writes nothing
 * at all, every line starts with the device (fsck -A interleaves several),
 * -C FD progress as e2fsck, UUID= and LABEL= devices as fstab names them,
 * and --json for monitoring scripts.
 */
#include "cmd.h"

#include <bfs/devspec.h>
#include <bfs/fsck.h>
#include <bfs/log.h>
#include <bfs/probe.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsck_json.h"
#include "progress.h"

/*
 * What fsck's sweeps keep at once (doc/fsck.md): the 5 roots and, for two
 * btrees of 3 levels swept side by side, an interior node and a leaf each;
 * the cache charges a node what of it is resident (a trimmed root or
 * interior node a few pages, a leaf 256 KiB), and 768K holds them all at
 * 10M files (512K reads 24% more there); read-ahead under a budget this
 * small goes to the page cache, so a larger one only saves a few re-reads
 */
#define FSCK_DEFAULT_CACHE	(768ull << 10)
#define FSCK_MIN_CACHE		(256ull << 10)

enum { OPT_LIST = BFS_OPT_LONG, OPT_JSON, OPT_CACHE };

static const struct bfs_opt fsck_opts[] = {
	BFS_OPT("no", 'n', 0, NULL, "check only: open read-only and change nothing"),
	BFS_OPT("yes", 'y', 0, NULL, "fix every problem found"),
	BFS_OPT("preen", 'p', 0, NULL, "fix what is safe without asking"),
	BFS_OPT(NULL, 'a', 0, NULL, "the same as -p"),
	BFS_OPT("force", 'f', 0, NULL, "check even if the filesystem seems clean"),
	BFS_OPT("verbose", 'v', 0, NULL, "say what each pass does"),
	BFS_OPT("check-data", 'c', 0, NULL, "read all file data and verify its checksums"),
	BFS_OPT("progress", 'C', 0, "FD",
		"progress: 0 draws a bar on the terminal, another FD gets\n"
		"\"pass current max device\" lines (as e2fsck, for fsck(8))"),
	BFS_OPT("json", 0, OPT_JSON, NULL,
		"print a JSON summary on stdout (the report goes to stderr)"),
	BFS_OPT("cache-size", 0, OPT_CACHE, "SIZE", "btree node cache (default 768K, at least 256K)"),
	BFS_OPT("version", 'V', 0, NULL, "print the version and exit"),
	BFS_OPT("list-problems", 0, OPT_LIST, NULL,
		"list every problem fsck knows (name, flags, message)"),
	{ 0 }
};

struct fsck_cmd {
	const struct bfs_cmd *cmd;
	struct bfs_fsck f;
	char	device[4096];		/* what every line starts with */
	FILE	*out;			/* the report: stdout, or stderr under --json */
	bool	json;
	struct fsck_json problems;
	struct bfs_progress progress;
	bool	yes_to_all;		/* "a" was answered */
	bool	no_more_input;		/* end of input: every later question is "no" */
	bool	started;		/* a pass reported progress (pass 0 always does) */
};

/*
 * SIGINT or SIGTERM: stop as e2fsck does, with exit status 32.  With -n
 * nothing is ever written, so the check stops at once (at its next progress
 * step, or at a second signal); otherwise no repair starts after the signal,
 * the running pass finishes what it was doing and the filesystem is closed
 * as after any run (libcore's f->cancel).
 */
static volatile sig_atomic_t cancel_requested;
static volatile sig_atomic_t cancel_readonly;	/* -n: a second signal ends it in the handler */

static void on_cancel_signal(int sig)
{
	static const char msg[] = "bfs fsck: cancelled (nothing was written)\n";

	(void)sig;
	if (cancel_requested && cancel_readonly) {
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
			_exit(BFS_FSCK_CANCELED);
		_exit(BFS_FSCK_CANCELED);
	}
	cancel_requested = 1;
}

static void catch_cancel_signals(bool readonly)
{
	struct sigaction sa = { .sa_handler = on_cancel_signal, .sa_flags = SA_RESTART };

	cancel_readonly = readonly;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

static void say(struct fsck_cmd *fc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct fsck_cmd *fc, const char *fmt, ...)
{
	va_list ap;

	bfs_progress_clear(&fc->progress);
	fprintf(fc->out, "%s: ", fc->device);
	va_start(ap, fmt);
	vfprintf(fc->out, fmt, ap);
	va_end(ap);
	fputc('\n', fc->out);
}

static void print_line(void *ctx, const char *line)
{
	say(ctx, "%s", line);
}

/*
 * libcore's own messages (what exactly is wrong, where) go to the same
 * stream as the problem reports, so they read in order.  What it says it is
 * doing ("replaying N journal entries", once for each pass that opens the
 * filesystem) is for -v: without it only problems and their reasons show.
 */
static void log_report(enum bfs_log_level level, const char *msg, void *ctx)
{
	struct fsck_cmd *fc = ctx;

	if (level == BFS_LOG_DEBUG || (level == BFS_LOG_INFO && !fc->f.verbose))
		return;
	say(ctx, "%s%s", level == BFS_LOG_ERR ? "error: " : level == BFS_LOG_WARN ? "warning: " : "",
	    msg);
}

static void report(void *ctx, const struct bfs_fsck_report *r)
{
	struct fsck_cmd *fc = ctx;

	if (fc->json)
		fsck_json_add(&fc->problems, r);
}

static void print_json(struct fsck_cmd *fc, int ret);

/* -n, cancelled: the device was opened read-only, so stopping here loses nothing */
static void stop_readonly_check(struct fsck_cmd *fc)
{
	bfs_progress_done(&fc->progress);
	fc->f.cancelled = true;
	say(fc, "check cancelled in pass %u (%s); nothing was written", fc->f.pass,
	    bfs_fsck_pass_name(fc->f.pass) ?: "?");
	print_json(fc, BFS_FSCK_CANCELED);
	exit(BFS_FSCK_CANCELED);
}

static void progress(void *ctx, unsigned pass, u64 cur, u64 max)
{
	struct fsck_cmd *fc = ctx;
	char name[64];

	fc->started = true;
	if (cancel_requested && fc->f.mode == BFS_FSCK_MODE_NO)
		stop_readonly_check(fc);

	snprintf(name, sizeof(name), "pass %u (%s)", pass, bfs_fsck_pass_name(pass) ?: "?");
	bfs_progress_update(&fc->progress, pass, name, cur, max);
}

/* y, n or a ("yes to all"), as words or letters; anything else is asked again */
static int parse_answer(const char *s)
{
	char w[8];
	size_t n = 0;

	while (isspace((unsigned char)*s))
		s++;
	while (*s && !isspace((unsigned char)*s) && n < sizeof(w) - 1)
		w[n++] = (char)tolower((unsigned char)*s++);
	w[n] = '\0';
	while (isspace((unsigned char)*s))
		s++;
	if (*s)
		return 0;
	if (!strcmp(w, "y") || !strcmp(w, "yes"))
		return 'y';
	if (!strcmp(w, "n") || !strcmp(w, "no"))
		return 'n';
	if (!strcmp(w, "a") || !strcmp(w, "all"))
		return 'a';
	return 0;
}

/*
 * poll(2) returns on a signal even under SA_RESTART, which fgets() would
 * not: ^C at the prompt cancels.  SIGINT and SIGTERM stay blocked between
 * the look at the flag and the wait, and ppoll() lets them in only while it
 * waits, so a ^C typed the moment the prompt appears is not lost in between
 * (it would leave poll() waiting for a line that never comes).  A terminal
 * hands over one line a read, so nothing waits in stdio's buffer meanwhile.
 * libcore's threads block signals (bfs_thread_create()), so the signal
 * comes to this thread; the wait still looks at the flag every quarter
 * second in case a thread of some library took it.  False when cancelled.
 */
static bool wait_for_answer(void)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	const struct timespec recheck = { .tv_sec = 0, .tv_nsec = 250 * 1000 * 1000 };
	sigset_t block, old;
	bool answered = false;
	int r;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	while (!cancel_requested) {
		r = ppoll(&p, 1, &recheck, &old);
		if (r > 0 || (r < 0 && errno != EINTR)) {
			answered = true;
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return answered;
}

static bool ask_tty(void *ctx, const char *prompt)
{
	struct fsck_cmd *fc = ctx;
	char line[256];
	int a;

	bfs_progress_clear(&fc->progress);
	if (fc->yes_to_all || fc->no_more_input) {
		say(fc, "%s? %s", prompt, fc->yes_to_all ? "yes (to all)" : "no (end of input)");
		return fc->yes_to_all;
	}
	for (;;) {
		fprintf(fc->out, "%s: %s? [y/n/a] ", fc->device, prompt);
		fflush(fc->out);
		if (!wait_for_answer()) {
			fputc('\n', fc->out);
			return false;	/* cancelled: libcore starts no more repairs */
		}
		if (!fgets(line, sizeof(line), stdin)) {
			fputc('\n', fc->out);
			say(fc, "end of input: answering no to this and every later question");
			fc->no_more_input = true;
			return false;
		}
		/* the rest of an overlong line is not a second answer */
		if (!strchr(line, '\n')) {
			int c;

			while ((c = getchar()) != EOF && c != '\n')
				;
			line[0] = '\0';
		}
		a = parse_answer(line);
		if (a == 'a')
			fc->yes_to_all = true;
		if (a)
			return a != 'n';
		fprintf(fc->out, "%s: please answer y (yes), n (no) or a (yes to all)\n", fc->device);
	}
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

static const char *mode_name(enum bfs_fsck_mode m)
{
	static const char *const names[] = {
		[BFS_FSCK_MODE_NO] = "check", [BFS_FSCK_MODE_YES] = "yes",
		[BFS_FSCK_MODE_PREEN] = "preen", [BFS_FSCK_MODE_ASK] = "interactive",
	};

	return names[m];
}

/* an operational error about the device: one line, and the JSON record if asked */
static int device_error(struct fsck_cmd *fc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int device_error(struct fsck_cmd *fc, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "bfs fsck: %s: %s\n", fc->device, msg);
	if (fc->json) {
		struct fsck_json_run run = {
			.device = fc->device, .mode = mode_name(fc->f.mode), .f = &fc->f,
			.error = msg, .exit_code = BFS_FSCK_ERROR,
		};

		fsck_json_print(stdout, &fc->problems, &run);
	}
	return BFS_FSCK_ERROR;
}

/* -C FD: 0 is a bar on the terminal, any other descriptor gets e2fsck's lines */
static int setup_progress(struct fsck_cmd *fc, const char *arg)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(arg, &end, 10);
	if (errno || end == arg || *end || fd < 0 || fd > 1 << 20) {
		bfs_cmd_usage_error(fc->cmd, "-C wants a file descriptor number, not '%s'", arg);
		return BFS_FSCK_USAGE;
	}
	if (fd == 0) {
		/* under --json, stdout carries the JSON: the bar goes to stderr */
		bfs_progress_init_bar(&fc->progress, fc->json ? STDERR_FILENO : STDOUT_FILENO,
				      fc->device);
		return 0;
	}
	if (fcntl((int)fd, F_GETFD) < 0) {
		bfs_cmd_usage_error(fc->cmd, "-C %ld: file descriptor %ld is not open", fd, fd);
		return BFS_FSCK_USAGE;
	}
	bfs_progress_init_lines(&fc->progress, (int)fd, fc->device);
	return 0;
}

/* UUID=/LABEL= as fstab(5) names devices, else the path as given */
static int find_device(struct fsck_cmd *fc, const char *arg)
{
	char err[BFS_ERR_LEN];
	int ret;

	snprintf(fc->device, sizeof(fc->device), "%s", arg);
	/*
	 * A partition's own tags: libblkid knows partition tables, so fsck(8)
	 * resolves them itself wherever the partition can be found at all
	 */
	if (!strncmp(arg, "PARTUUID=", 9) || !strncmp(arg, "PARTLABEL=", 10))
		return device_error(fc, "no such partition (fsck(8) and libblkid resolve "
				    "PARTUUID= and PARTLABEL=; name the device here)");
	if (!bfs_devspec_is_tag(arg))
		return 0;
	ret = bfs_devspec_resolve(arg, fc->device, sizeof(fc->device), err);
	if (ret)
		return device_error(fc, "%s", err);
	return 0;
}

/* fsck(8): a mounted filesystem is never repaired; -n only warns */
static int check_not_mounted(struct fsck_cmd *fc)
{
	char where[4096];
	int ret = bfs_check_mounted(fc->device, where, sizeof(where));

	if (ret == -ENOENT)
		return device_error(fc, "no such file or device");
	if (ret == -EISDIR)
		return device_error(fc, "is a directory, not a device or an image file");
	if (ret < 0)
		return device_error(fc, "cannot check whether it is mounted: %s", strerror(-ret));
	if (!ret)
		return 0;
	if (fc->f.mode != BFS_FSCK_MODE_NO)
		return device_error(fc, "in use (%s); not checking it", where);
	say(fc, "warning: in use (%s): the check may report changes in progress", where);
	return 0;
}

static void summary(struct fsck_cmd *fc, int ret)
{
	const struct bfs_fsck *f = &fc->f;

	if (ret <= BFS_FSCK_CORRECTED)
		fprintf(fc->out, "%s: %s%u problem%s found, %u fixed\n", fc->device,
			ret == BFS_FSCK_OK ? "clean, " : "", f->nr_problems,
			f->nr_problems == 1 ? "" : "s", f->nr_fixed);
	else if (ret == BFS_FSCK_UNCORRECTED)
		fprintf(fc->out, "%s: %u problem%s found, %u left unfixed\n", fc->device,
			f->nr_problems, f->nr_problems == 1 ? "" : "s", f->nr_unfixed);
	else if (ret == BFS_FSCK_CANCELED && !fc->started)
		fprintf(fc->out, "%s: check cancelled before it started\n", fc->device);
	else if (ret == BFS_FSCK_CANCELED)
		fprintf(fc->out, "%s: check cancelled after pass %u (%s): %u problem%s found, "
			"%u fixed; run fsck again\n", fc->device, f->pass,
			bfs_fsck_pass_name(f->pass) ?: "?", f->nr_problems,
			f->nr_problems == 1 ? "" : "s", f->nr_fixed);
}

/* the --json summary of a run that started (whatever its end) */
static void print_json(struct fsck_cmd *fc, int ret)
{
	struct fsck_json_run run = {
		.device = fc->device, .mode = mode_name(fc->f.mode), .f = &fc->f,
		.ran = ret != BFS_FSCK_CANCELED || fc->started,
		.error = ret == BFS_FSCK_ERROR ? "the check stopped on an operational error "
						 "(see the messages)" : NULL,
		.exit_code = ret,
	};

	if (fc->json)
		fsck_json_print(stdout, &fc->problems, &run);
}

static int parse_args(struct fsck_cmd *fc, int argc, char **argv)
{
	const char *progress_arg = NULL;
	int c, ret, modes = 0;

	while ((c = bfs_cmd_getopt(fc->cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'n':
			fc->f.mode = BFS_FSCK_MODE_NO;
			modes++;
			break;
		case 'y':
			fc->f.mode = BFS_FSCK_MODE_YES;
			modes++;
			break;
		case 'p':
		case 'a':
			fc->f.mode = BFS_FSCK_MODE_PREEN;
			modes++;
			break;
		case 'f':
			break;	/* always a full check: bfs has no "clean, skip" shortcut yet */
		case 'v':
			fc->f.verbose = true;
			break;
		case 'c':
			fc->f.check_data = true;
			break;
		case 'V':
			printf("fsck.bcowfs (bfs %s)\n", BFS_VERSION);
			return -1;
		case 'C':
			progress_arg = optarg;
			break;
		case OPT_JSON:
			fc->json = true;
			break;
		case OPT_CACHE:
			if (bfs_parse_size(optarg, &fc->f.cache_bytes) ||
			    fc->f.cache_bytes < FSCK_MIN_CACHE) {
				bfs_cmd_usage_error(fc->cmd, "bad --cache-size '%s' (at least 256K)", optarg);
				return BFS_FSCK_USAGE;
			}
			break;
		case OPT_LIST:
			bfs_fsck_list_problems(list_problem, NULL);
			return -1;
		default:
			bfs_cmd_usage_error(fc->cmd, "bad option");
			return BFS_FSCK_USAGE;
		}
	}
	if (modes > 1) {
		bfs_cmd_usage_error(fc->cmd, "only one of -n, -y and -p may be given");
		return BFS_FSCK_USAGE;
	}
	if (bfs_cmd_want_device(fc->cmd, argc))
		return BFS_FSCK_USAGE;
	snprintf(fc->device, sizeof(fc->device), "%s", argv[optind]);
	if (progress_arg) {
		ret = setup_progress(fc, progress_arg);
		if (ret)
			return ret;
	}
	return 0;
}

static int cmd_fsck(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct fsck_cmd fc = {
		.cmd = cmd, .f = { .mode = BFS_FSCK_MODE_ASK, .cache_bytes = FSCK_DEFAULT_CACHE },
	};
	int ret;

	ret = parse_args(&fc, argc, argv);
	if (ret)
		return ret < 0 ? BFS_FSCK_OK : ret;
	fc.out = fc.json ? stderr : stdout;
	if (fc.f.mode == BFS_FSCK_MODE_ASK && !isatty(STDIN_FILENO)) {
		/* nobody to ask (a script, a boot without console): look, don't touch */
		fc.f.mode = BFS_FSCK_MODE_NO;
		say(&fc, "no terminal to ask on: checking only, as with -n");
	}
	if (fc.f.mode == BFS_FSCK_MODE_ASK)
		fc.f.ask = ask_tty;
	fc.f.print = print_line;
	fc.f.report = report;
	fc.f.progress = progress;
	fc.f.cancel = &cancel_requested;
	fc.f.ctx = &fc;
	catch_cancel_signals(fc.f.mode == BFS_FSCK_MODE_NO);

	ret = find_device(&fc, argv[optind]);
	if (!ret)
		ret = check_not_mounted(&fc);
	if (ret)
		goto out;
	ret = bfs_dev_open(fc.device, fc.f.mode == BFS_FSCK_MODE_NO ? BFS_DEV_RDONLY : BFS_DEV_EXCL,
			   &fc.f.dev);
	if (ret == -EBUSY) {
		ret = device_error(&fc, "in use (mounted, or another bfs command has it); not checking it");
		goto out;
	}
	if (ret) {
		ret = device_error(&fc, "cannot open: %s", strerror(-ret));
		goto out;
	}
	bfs_log_set_hook(log_report, &fc);
	ret = bfs_fsck_run(&fc.f);
	bfs_progress_done(&fc.progress);
	bfs_cmd_log_to_stderr();
	summary(&fc, ret);
	print_json(&fc, ret);
	bfs_fsck_release(&fc.f);
	bfs_dev_close(fc.f.dev);
out:
	bfs_progress_done(&fc.progress);
	fsck_json_free(&fc.problems);
	return ret;
}

const struct bfs_cmd bfs_cmd_fsck = {
	.name = "fsck",
	.fn = cmd_fsck,
	.summary = "check and repair a bfs filesystem offline",
	.synopsis = "[-n|-y|-p] [-f] [-v] [-c] [-C FD] [--json] [--cache-size SIZE] DEVICE",
	.opts = fsck_opts,
	.help =
	"DEVICE is a path, or UUID=... or LABEL=... as in fstab(5).  Without -n, -y\n"
	"or -p each repair is asked on the terminal (y, n, or a: yes to all); with\n"
	"no terminal, fsck checks only, as with -n.\n"
	"\nChecks the superblock and its backup copies (pass 0), the journal (pass\n"
	"1), replays it (in memory with -n) and checks every btree (pass 2), then\n"
	"the directories, inodes, link counts and file data ownership (pass 3).\n"
	"Exit status (fsck(8)): 0 clean, 1 errors fixed, 4 errors left unfixed,\n"
	"8 operational error, 16 usage error, 32 cancelled by SIGINT or SIGTERM\n"
	"(with -n at once; otherwise no repair starts after it).\n",
	.args = BFS_ARG_DEVICE,
};
