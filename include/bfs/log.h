/* SPDX-License-Identifier: MIT */
/*
 * Messages from libcore.  The library never prints: it formats a message and
 * hands it to the hook the program installed (cmd/ prints to stderr, tests
 * may capture).  Without a hook, messages are dropped.
 */
#ifndef BFS_LOG_H
#define BFS_LOG_H

#include <stdarg.h>

enum bfs_log_level { BFS_LOG_ERR, BFS_LOG_WARN, BFS_LOG_INFO, BFS_LOG_DEBUG };

typedef void (*bfs_log_fn)(enum bfs_log_level level, const char *msg, void *ctx);

void bfs_log_set_hook(bfs_log_fn fn, void *ctx);
/* the hook installed now (fsck holds back an open's messages, then passes them on) */
void bfs_log_get_hook(bfs_log_fn *fn, void **ctx);
void bfs_log(enum bfs_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define bfs_err(...)	bfs_log(BFS_LOG_ERR, __VA_ARGS__)
#define bfs_warn(...)	bfs_log(BFS_LOG_WARN, __VA_ARGS__)
#define bfs_info(...)	bfs_log(BFS_LOG_INFO, __VA_ARGS__)

/* one-line reasons ("err" buffers) are this long; BFS_ERR_LEN is the same */
#define BFS_ERR_LINE_LEN	256

/*
 * Write a one-line reason into @err (BFS_ERR_LEN bytes; may be NULL) and
 * return @ret: the "fill err, return -EINVAL" of validators and layouts.
 */
int bfs_err_line(char *err, int ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* BFS_LOG_H */
