/* SPDX-License-Identifier: MIT */
/*
 * Shared libraries loaded when a subcommand first needs them instead of
 * linked into every run.  A linked library costs each process its mapped
 * and relocated pages whether it is used or not: libfuse3 (mount),
 * libext2fs and libcom_err (migrate) and libm (bench fs) were about 0.65 MB
 * of the RSS of `bfs fsck` (doc/benchmarks.md, issue 10).
 *
 * LAZY_FN defines a function of the library's own name and prototype (the
 * library's header declares it, so the compiler checks the two agree) that
 * resolves the real one on its first call; the call sites do not change.
 * A subcommand calls lazy_lib_require() before its first use, to fail with
 * a clear message while nothing has been done; a wrapper reached without
 * that (a bug) prints the same message and exits.
 */
#ifndef BFS_CMD_LAZY_LIB_H
#define BFS_CMD_LAZY_LIB_H

#include <stdbool.h>
#include <stddef.h>

struct lazy_lib {
	const char *const *sonames;	/* tried in order, NULL terminated */
	const char *package;		/* what to install, for the message */
	void *handle;			/* once loaded */
	bool failed;
};

/* load it (once); 0, or -ENOENT after printing why */
int lazy_lib_require(struct lazy_lib *lib);
/* the address of NAME in it, loading it first; prints why and exits if it cannot */
void *lazy_lib_sym(struct lazy_lib *lib, const char *name);

/* the libraries cmd/ loads so (lazy_fuse.c, lazy_ext2fs.c, lazy_m.c) */
extern struct lazy_lib lazy_fuse, lazy_ext2fs, lazy_m;

/* libm's functions of the same name (lazy_m.c) */
double lazy_m_cos(double x);
double lazy_m_exp(double x);
double lazy_m_log(double x);
double lazy_m_sqrt(double x);

/* libext2fs's unix_io_manager (a variable: no wrapper can stand for it) */
struct struct_io_manager *lazy_ext2fs_unix_io_manager(void);

#define LAZY_RESOLVE(lib, name)							\
	static __typeof__(name) *real_;						\
	__typeof__(name) *fn_ = __atomic_load_n(&real_, __ATOMIC_ACQUIRE);	\
	if (!fn_) {								\
		fn_ = (__typeof__(name) *)lazy_lib_sym(&(lib), #name);		\
		__atomic_store_n(&real_, fn_, __ATOMIC_RELEASE);		\
	}

/* RET NAME PARAMS { return real NAME ARGS; } */
#define LAZY_FN(lib, ret, name, params, args)	\
	ret name params				\
	{					\
		LAZY_RESOLVE(lib, name)		\
		return fn_ args;		\
	}

#define LAZY_FN_VOID(lib, name, params, args)	\
	void name params			\
	{					\
		LAZY_RESOLVE(lib, name)		\
		fn_ args;			\
	}

#endif
