/* SPDX-License-Identifier: MIT */
/*
 * Shared libraries loaded on first use instead of linked (libcore/os/lazy_lib.c).
 * A linked library costs every process its mapped and relocated pages
 * whether it is used or not; `bfs fsck` never calls libblkid (device specs,
 * signatures), libzstd (compressed data, images) or libuuid (format), and
 * those pages were a fifth of its RSS on a small tree (doc/benchmarks.md,
 * issue 10).
 *
 * BFS_LAZY_FN defines a function of the library's own name and prototype
 * (its header declares it, so the compiler checks that the two agree) that
 * resolves the real one on its first call: the call sites do not change.
 * When the library cannot be loaded the wrapper logs why, once, and returns
 * @fail, a value the library itself returns for an error (NULL, -1, an
 * error code), so callers take their error path.
 */
#ifndef BFS_LAZY_LIB_H
#define BFS_LAZY_LIB_H

#include <stdbool.h>
#include <stddef.h>

struct bfs_lazy_lib {
	const char *const *sonames;	/* tried in order, NULL terminated */
	const char *package;		/* what to install, for the message */
	void *handle;			/* once loaded */
	bool failed;			/* tried, and logged why */
};

/* load @lib (once); 0, or -ENOENT after logging why */
int bfs_lazy_lib_load(struct bfs_lazy_lib *lib);
/* the address of @name in @lib, loading it first; NULL (logged) if missing */
void *bfs_lazy_lib_sym(struct bfs_lazy_lib *lib, const char *name);

#define BFS_LAZY_RESOLVE(lib, name, on_fail)					\
	static __typeof__(name) *real_;						\
	__typeof__(name) *fn_ = __atomic_load_n(&real_, __ATOMIC_ACQUIRE);	\
	if (!fn_) {								\
		fn_ = (__typeof__(name) *)bfs_lazy_lib_sym(&(lib), #name);	\
		if (!fn_)							\
			on_fail;						\
		__atomic_store_n(&real_, fn_, __ATOMIC_RELEASE);		\
	}

/* RET NAME PARAMS { return real NAME ARGS, or FAIL without it; } */
#define BFS_LAZY_FN(lib, ret, name, params, args, fail)	\
	ret name params						\
	{							\
		BFS_LAZY_RESOLVE(lib, name, return fail)	\
		return fn_ args;				\
	}

#define BFS_LAZY_FN_VOID(lib, name, params, args)	\
	void name params				\
	{						\
		BFS_LAZY_RESOLVE(lib, name, return)	\
		fn_ args;				\
	}

#endif
