// SPDX-License-Identifier: MIT
/* Helpers shared by the subcommands: messages, size parsing, formatting. */
#include "cmd.h"

#include <bfs/log.h>
#include <bfs/probe.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

void bfs_cmd_usage(const struct bfs_cmd *cmd, FILE *f)
{
	fprintf(f, "usage: bfs %s %s\n", cmd->name, cmd->synopsis);
}

__attribute__((format(printf, 2, 0)))
static void vmsg(const struct bfs_cmd *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "bfs %s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int bfs_cmd_usage_error(const struct bfs_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	/* getopt has already said which option was bad, in one line: not twice */
	if (strcmp(fmt, "bad option")) {
		va_start(ap, fmt);
		vmsg(cmd, fmt, ap);
		va_end(ap);
	}
	bfs_cmd_usage(cmd, stderr);
	fprintf(stderr, "Try 'bfs %s --help' for more information.\n", cmd->name);
	return BFS_EXIT_USAGE;
}

int bfs_cmd_error(const struct bfs_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(cmd, fmt, ap);
	va_end(ap);
	return BFS_EXIT_ERROR;
}

int bfs_cmd_want_device(const struct bfs_cmd *cmd, int argc)
{
	if (optind + 1 == argc)
		return 0;
	return bfs_cmd_usage_error(cmd, optind >= argc ? "no device given" : "too many arguments");
}

int bfs_parse_size(const char *s, u64 *out)
{
	static const char units[] = "BKMGTPE";
	char *end;
	double v;
	const char *u;
	unsigned shift = 0;

	errno = 0;
	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	if (*end) {
		u = strchr(units, (char)(*end & ~0x20));
		if (!u || !*u)
			return -EINVAL;
		shift = (unsigned)(u - units) * 10;
		end++;
		if (*u != 'B' && (!strcasecmp(end, "iB") || !strcasecmp(end, "B")))
			end += strlen(end);
		if (*end)
			return -EINVAL;
	}
	v = ldexp(v, (int)shift);
	/* v is in [0, 2^64) past the first test: the cast truncates, as floor() (libm) would */
	if (v >= 18446744073709551616.0 || v != (double)(u64)v)
		return -EINVAL;
	*out = (u64)v;
	return 0;
}

const char *bfs_human_size(u64 bytes, char buf[32])
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	unsigned i = 0;
	double v = (double)bytes;

	while (v >= 1024 && i + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		i++;
	}
	if (!i)
		snprintf(buf, 32, "%" PRIu64 " B", bytes);
	else if (v == (double)(u64)v)	/* a whole number (v >= 0): no libm */
		snprintf(buf, 32, "%.0f %s", v, units[i]);
	else
		snprintf(buf, 32, "%.1f %s", v, units[i]);
	return buf;
}

const char *bfs_format_time_sec(s64 sec, char buf[64])
{
	time_t t = (time_t)sec;
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, 64, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, 64, "%" PRId64 " s", sec);
	return buf;
}

const char *bfs_format_time(u64 ns, char buf[64])
{
	return bfs_format_time_sec((s64)(ns / 1000000000ULL), buf);
}

void bfs_format_uuid(const u8 uuid[16], char out[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned i, o = 0;

	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[uuid[i] >> 4];
		out[o++] = hex[uuid[i] & 15];
	}
	out[o] = '\0';
}

static void log_stderr(enum bfs_log_level level, const char *msg, void *ctx)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };

	if (level == BFS_LOG_DEBUG && !getenv("BFS_DEBUG"))
		return;
	fprintf(stderr, "bfs: %s%s\n", prefix[level], msg);
}

void bfs_cmd_log_to_stderr(void)
{
	bfs_log_set_hook(log_stderr, NULL);
}

bool bfs_progress_enabled(void)
{
	return isatty(STDOUT_FILENO) && !getenv("BFS_NO_PROGRESS");
}

int bfs_cmd_refuse_mounted(const struct bfs_cmd *cmd, const char *path, bool allow_mounted,
			   const char *hint)
{
	char what[256];
	int ret = bfs_check_mounted(path, what, sizeof(what));

	if (ret == -ENOENT)
		return bfs_cmd_error(cmd, "'%s' does not exist", path);
	if (ret == -EISDIR)
		return bfs_cmd_error(cmd, "'%s' is a directory", path);
	if (ret < 0)
		return bfs_cmd_error(cmd, "cannot check whether '%s' is mounted: %s", path,
				     strerror(-ret));
	if (ret && !allow_mounted)
		return bfs_cmd_error(cmd, "'%s' is %s; unmount it first%s", path, what, hint);
	return 0;
}
