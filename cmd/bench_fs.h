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
	"                    then sync), objects (4 MiB + xattr, fsync'd log); in\n" \
	"                    MB/s, IOPS and ns/op; createsync (a file and its fsync\n" \
	"                    per op, J threads) and creates (J threads, one sync)\n" \
	"                    only when named.  Options:\n" \
	"      --size-scale=N      divide every size by N (default 1: full size)\n" \
	"      --workload=NAME     comma-separated subset (default: the first five)\n" \
	"      --jobs=J            append jobs, createsync/creates threads (default 8)\n" \
	"      --threads=T         threads issuing random I/O (default 16)\n" \
	"      --fsync-every=K     objects: fsync the log every K appends (default 8)\n" \
	"      --seed=S            seed of sizes, offsets and the tree (default 42)\n" \
	"      --direct            open the image with O_DIRECT where its filesystem\n" \
	"                          allows it (default: through the page cache)\n" \
	"      --image=PATH, --json  as for btree\n"

#endif /* BFS_CMD_BENCH_FS_H */
