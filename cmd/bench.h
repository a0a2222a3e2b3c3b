/* SPDX-License-Identifier: MIT */
/* Pieces shared by the benchmarks of `bfs bench` (cmd/bench_util.c). */
#ifndef BFS_CMD_BENCH_H
#define BFS_CMD_BENCH_H

#include "cmd.h"

/* splitmix64's output function: the generators of every benchmark */
u64 bench_mix64(u64 z);
/* the seed of one stream (a phase or workload @a, a thread @b) of a run */
u64 bench_stream_seed(u64 seed, unsigned a, unsigned b);

/*
 * Create the benchmark's image file: @opt if given (it must not exist: the
 * benchmark only uses and removes an image it creates), else a new file
 * "TAG-XXXXXX" in $TMPDIR.  *path is malloc'd.  Until bench_image_remove(),
 * SIGINT/SIGTERM/SIGHUP remove the file, so an interrupted run does not leave
 * gigabytes behind.  Returns 0 or a command exit status (message printed).
 */
int bench_image_create(const struct bfs_cmd *cmd, const char *opt, const char *tag, char **path);
void bench_image_remove(char **path);

/* rates: @n operations (or bytes) in @ns nanoseconds, rounded */
u64 bench_per_sec(u64 n, u64 ns);
u64 bench_ns_per_op(u64 ns, u64 ops);

/* a decimal count with an optional k/M/G (10^3, 10^6, 10^9) suffix in [min, max] */
int bench_parse_count(const char *s, u64 min, u64 max, u64 *out);

#endif
