// SPDX-License-Identifier: MIT
/*
 * Loading a library on first use (lazy_lib.h says why).  RTLD_LOCAL: its
 * symbols serve only the wrappers, never resolve anything else.
 */
#include "lazy_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

int lazy_lib_require(struct lazy_lib *lib)
{
	const char *err = "not found";

	if (__atomic_load_n(&lib->handle, __ATOMIC_ACQUIRE))
		return 0;
	if (!lib->failed) {
		for (const char *const *s = lib->sonames; *s; s++) {
			void *h = dlopen(*s, RTLD_NOW | RTLD_LOCAL);

			if (h) {
				__atomic_store_n(&lib->handle, h, __ATOMIC_RELEASE);
				return 0;
			}
			err = dlerror();
		}
		lib->failed = true;
	}
	fprintf(stderr, "bfs: cannot load %s (%s): install %s\n",
		lib->sonames[0], err ? err : "not found", lib->package);
	return -ENOENT;
}

void *lazy_lib_sym(struct lazy_lib *lib, const char *name)
{
	void *p;

	if (lazy_lib_require(lib))
		exit(BFS_EXIT_ERROR);
	p = dlsym(lib->handle, name);
	if (!p) {
		fprintf(stderr, "bfs: %s has no %s: install %s\n", lib->sonames[0], name,
			lib->package);
		exit(BFS_EXIT_ERROR);
	}
	return p;
}
