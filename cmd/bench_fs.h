/* SPDX-License-Identifier: MIT */
/*
 * bfs bench fs: the filesystem workloads users quote, run in-process on the
 * library (cmd/bench_fs.c).  cmd/bench.c lists it in its benchmark table.
 */
#ifndef BFS_CMD_BENCH_FS_H
#define BFS_CMD_BENCH_FS_H

#include "cmd.h"

/* argv[0] is "fs"; the options follow (see the help text in bench_fs.c) */
int bfs_bench_fs(const struct bfs_cmd *cmd, int argc, char **argv);

/* the lines bfs bench --help shows for it: a literal, to concatenate */
#define BFS_BENCH_FS_HELP \
	"  fs                the workloads users quote, in-process on a fresh image:\n" \
	"                    append (direct-I/O appends), randwrite and randread\n" \
	"                    (4 KiB, QD64 equivalent), smallfiles (kernel-like tree,\n" \
	"                    then sync), objects (4 MiB + xattr, fsync'd log),\n" \
	"                    seqread (the randread file, 128 KiB reads); in\n" \
	"                    MB/s, IOPS and ns/op; createsync (a file and its fsync\n" \
	"                    per op, J threads) and creates (J threads, one sync)\n" \
	"                    only when named\n"

#endif /* BFS_CMD_BENCH_FS_H */
