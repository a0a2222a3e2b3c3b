/* SPDX-License-Identifier: MIT */
/* Pieces shared by the benchmarks of `bfs bench` (cmd/bench_util.c). */
#ifndef BFS_CMD_BENCH_H
#define BFS_CMD_BENCH_H

#include "cmd.h"

/*
 * The ids of bfs bench's options (one table in cmd/bench.c, so that --help
 * and completion offer them all); each benchmark refuses the ones it lacks.
 */
enum bench_opt {
	BENCH_OPT_KEYS = 'n', BENCH_OPT_THREADS = 't', BENCH_OPT_JSON = 'j',
	BENCH_OPT_VALUE_SIZE = BFS_OPT_LONG, BENCH_OPT_BATCH, BENCH_OPT_SEED, BENCH_OPT_CACHE,
	BENCH_OPT_IMAGE, BENCH_OPT_NO_JOURNAL, BENCH_OPT_SIZE_SCALE, BENCH_OPT_WORKLOAD,
	BENCH_OPT_JOBS, BENCH_OPT_FSYNC_EVERY, BENCH_OPT_DIRECT, BENCH_OPT_DATA_CHUNK,
};

/* "option '--NAME' does not apply to 'bench BENCH'": the usage error */
int bench_opt_refused(const struct bfs_cmd *cmd, const struct bfs_opt *row, const char *bench);

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
