/* SPDX-License-Identifier: MIT */
/*
 * The libraries only some subcommands use, loaded when first needed
 * (include/bfs/lazy_lib.h): libfuse3 (mount), libext2fs with libcom_err
 * (migrate), libm (bench fs), libuuid (format and friends).  Linked, they
 * were about 0.7 MB of the RSS of every run, `bfs fsck` included
 * (doc/benchmarks.md, issue 10).
 *
 * LAZY_FN is BFS_LAZY_FN for libraries without an error value to return:
 * a subcommand calls lazy_lib_require() before its first use, to fail with
 * a clear message while nothing has been done; a wrapper reached without
 * that (a bug) logs the same message and exits.
 */
#ifndef BFS_CMD_LAZY_LIB_H
#define BFS_CMD_LAZY_LIB_H

#include <bfs/lazy_lib.h>

extern struct bfs_lazy_lib lazy_fuse, lazy_ext2fs, lazy_m, lazy_uuid;

/* load it (once); 0, or -ENOENT after logging why */
static inline int lazy_lib_require(struct bfs_lazy_lib *lib)
{
	return bfs_lazy_lib_load(lib);
}

/* a wrapper's library is missing (already logged): exit */
__attribute__((noreturn)) void lazy_lib_missing(void);

#define LAZY_FN(lib, ret, name, params, args)			\
	ret name params						\
	{							\
		BFS_LAZY_RESOLVE(lib, name, lazy_lib_missing())	\
		return fn_ args;				\
	}

#define LAZY_FN_VOID(lib, name, params, args)			\
	void name params					\
	{							\
		BFS_LAZY_RESOLVE(lib, name, lazy_lib_missing())	\
		fn_ args;					\
	}

/* libm's functions of the same name (lazy_m.c) */
double lazy_m_cos(double x);
double lazy_m_exp(double x);
double lazy_m_floor(double x);
double lazy_m_log(double x);
double lazy_m_sqrt(double x);

/* libext2fs's unix_io_manager (a variable: no wrapper can stand for it) */
struct struct_io_manager *lazy_ext2fs_unix_io_manager(void);

#endif
