// SPDX-License-Identifier: MIT
/* Message hook: the library formats, the program decides where it goes. */
#include <bfs/log.h>

#include <stdio.h>

static bfs_log_fn log_hook;
static void *log_ctx;

void bfs_log_set_hook(bfs_log_fn fn, void *ctx)
{
	log_hook = fn;
	log_ctx = ctx;
}

void bfs_log_get_hook(bfs_log_fn *fn, void **ctx)
{
	*fn = log_hook;
	*ctx = log_ctx;
}

void bfs_log(enum bfs_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_hook)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_hook(level, msg, log_ctx);
}

int bfs_err_line(char *err, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		va_start(ap, fmt);
		vsnprintf(err, BFS_ERR_LINE_LEN, fmt, ap);
		va_end(ap);
	}
	return ret;
}
