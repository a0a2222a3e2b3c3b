// SPDX-License-Identifier: MIT
/*
 * Loading a shared library on first use (include/bfs/lazy_lib.h says why).
 * RTLD_LOCAL: its symbols serve the wrappers and resolve nothing else.
 */
#include <bfs/lazy_lib.h>

#include <dlfcn.h>
#include <errno.h>

#include <bfs/log.h>

int bfs_lazy_lib_load(struct bfs_lazy_lib *lib)
{
	const char *err = NULL;

	if (__atomic_load_n(&lib->handle, __ATOMIC_ACQUIRE))
		return 0;
	if (__atomic_load_n(&lib->failed, __ATOMIC_RELAXED))
		return -ENOENT;
	for (const char *const *s = lib->sonames; *s; s++) {
		void *h = dlopen(*s, RTLD_NOW | RTLD_LOCAL);

		if (h) {
			void *old = NULL;

			/* two threads may both load it: dlopen counts, one handle is kept */
			if (!__atomic_compare_exchange_n(&lib->handle, &old, h, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				dlclose(h);
			return 0;
		}
		err = dlerror();
	}
	if (!__atomic_exchange_n(&lib->failed, true, __ATOMIC_RELAXED))
		bfs_err("cannot load %s (%s): install %s", lib->sonames[0],
			err ? err : "not found", lib->package);
	return -ENOENT;
}

void *bfs_lazy_lib_sym(struct bfs_lazy_lib *lib, const char *name)
{
	void *p;

	if (bfs_lazy_lib_load(lib))
		return NULL;
	p = dlsym(lib->handle, name);
	if (!p)
		bfs_err("%s has no %s: install %s", lib->sonames[0], name, lib->package);
	return p;
}
