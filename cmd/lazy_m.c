// SPDX-License-Identifier: MIT
/*
 * libm, loaded by bench fs for its log-normal file sizes (lazy_lib.h): the
 * only subcommand that needs it.  The functions are glibc's own, so the
 * sizes stay bit for bit those of bench/fs_tree_gen.py (Python's math
 * module calls the same libm).
 */
#include "lazy_lib.h"


static const char *const m_sonames[] = { "libm.so.6", "libm.so", NULL };
struct bfs_lazy_lib lazy_m = { .sonames = m_sonames, .package = "the C library's libm" };

#define LAZY_MATH(name)								\
	double lazy_m_##name(double x)						\
	{									\
		static double (*real_)(double);					\
		double (*fn_)(double) = __atomic_load_n(&real_, __ATOMIC_ACQUIRE); \
										\
		if (!fn_) {							\
			fn_ = (double (*)(double))bfs_lazy_lib_sym(&lazy_m, #name); \
			if (!fn_)						\
				lazy_lib_missing();				\
			__atomic_store_n(&real_, fn_, __ATOMIC_RELEASE);	\
		}								\
		return fn_(x);							\
	}

LAZY_MATH(cos)
LAZY_MATH(exp)
LAZY_MATH(floor)
LAZY_MATH(log)
LAZY_MATH(sqrt)
