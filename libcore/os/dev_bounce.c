// SPDX-License-Identifier: MIT
/*
 * The aligned bounce buffer of direct transfers from memory O_DIRECT cannot
 * take (FUSE's write data sits 80 bytes into its request buffer): one per
 * thread, kept, so that each 1 MiB write does not fault in and zero 256
 * fresh pages before copying into them (perf of a mount under fio: nearly
 * every page fault of the daemon was in that copy).  Freed when the thread
 * exits.
 */
#include <pthread.h>

#include "dev_internal.h"

#define BOUNCE_ALIGN	4096U

struct bounce {
	u8	*p;
	size_t	len;
};

static pthread_once_t bounce_once = PTHREAD_ONCE_INIT;
static pthread_key_t bounce_key;
static bool bounce_key_ok;
static __thread struct bounce bounce_mine;

static void bounce_free(void *arg)
{
	struct bounce *b = arg;

	bfs_free(b->p);
	b->p = NULL;
	b->len = 0;
}

static void bounce_init_once(void)
{
	bounce_key_ok = !pthread_key_create(&bounce_key, bounce_free);
}

u8 *bfs_dev_bounce_get(unsigned align, size_t len)
{
	struct bounce *b = &bounce_mine;

	if (align > BOUNCE_ALIGN)
		return NULL;
	if (b->len >= len)
		return b->p;
	pthread_once(&bounce_once, bounce_init_once);
	if (!bounce_key_ok)
		return NULL;
	bfs_free(b->p);
	b->len = 0;
	b->p = bfs_aligned_alloc(BOUNCE_ALIGN, len);
	if (!b->p || pthread_setspecific(bounce_key, b)) {
		bfs_free(b->p);
		b->p = NULL;
		return NULL;
	}
	b->len = len;
	return b->p;
}
