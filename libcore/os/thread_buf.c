// SPDX-License-Identifier: MIT
/*
 * Per-thread buffers kept across calls (include/bfs/os.h bfs_thread_buf()):
 * page-aligned, grown on demand, freed when the thread exits.  Kept because
 * a fresh buffer per request faults in and zeroes its pages before every
 * copy (perf of a mount under fio: nearly every page fault of the daemon was
 * in that copy).  One slot per user, so that a thread's device bounce
 * buffer and its FUSE receive buffer never alias.
 */
#include <bfs/os.h>

#include <pthread.h>

#define TBUF_ALIGN	4096U

struct tbuf {
	void	*p;
	size_t	len;
};

static pthread_once_t tbuf_once = PTHREAD_ONCE_INIT;
static pthread_key_t tbuf_key;
static bool tbuf_key_ok;
static __thread struct tbuf tbuf_mine[BFS_TBUF_NR];

static void tbuf_free(void *arg)
{
	struct tbuf *b = arg;

	for (unsigned i = 0; i < BFS_TBUF_NR; i++) {
		bfs_free(b[i].p);
		b[i].p = NULL;
		b[i].len = 0;
	}
}

static void tbuf_init_once(void)
{
	tbuf_key_ok = !pthread_key_create(&tbuf_key, tbuf_free);
}

void *bfs_thread_buf(unsigned slot, size_t len)
{
	struct tbuf *b = &tbuf_mine[slot];
	void *p;

	if (slot >= BFS_TBUF_NR)
		return NULL;
	if (b->len >= len)
		return b->p;
	pthread_once(&tbuf_once, tbuf_init_once);
	if (!tbuf_key_ok)
		return NULL;
	len = (len + TBUF_ALIGN - 1) & ~(size_t)(TBUF_ALIGN - 1);
	p = bfs_aligned_alloc(TBUF_ALIGN, len);
	/* the key's value is the array: its destructor frees every slot */
	if (!p || pthread_setspecific(tbuf_key, tbuf_mine)) {
		bfs_free(p);
		return NULL;
	}
	bfs_free(b->p);
	b->p = p;
	b->len = len;
	return p;
}
