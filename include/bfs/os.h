/* SPDX-License-Identifier: MIT */
/*
 * Platform layer: threads, locks, memory and time.  libcore code above os/
 * uses these instead of calling libc/pthreads directly, so that a kernel port
 * replaces this header (and libcore/os/) and nothing else.
 */
#ifndef BFS_OS_H
#define BFS_OS_H

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>

#include "types.h"

/* ---- memory ---- */
static inline void *bfs_malloc(size_t n) { return malloc(n); }
static inline void *bfs_zalloc(size_t n) { return calloc(1, n); }
static inline void *bfs_calloc(size_t n, size_t size) { return calloc(n, size); }
static inline void *bfs_realloc(void *p, size_t n) { return realloc(p, n); }
static inline void bfs_free(void *p) { free(p); }
/* @align-aligned buffer (for O_DIRECT I/O); free with bfs_free() */
static inline void *bfs_aligned_alloc(size_t align, size_t n)
{
	void *p;

	return posix_memalign(&p, align, n) ? NULL : p;
}

/*
 * This thread's kept buffer for @slot: at least @len bytes, page-aligned,
 * valid until this thread's next call for the same slot (its contents are
 * not kept when it grows), freed when the thread exits; NULL if it cannot
 * be had (allocate one for the transfer instead).  libcore/os/thread_buf.c.
 */
enum bfs_thread_buf_slot {
	BFS_TBUF_DEV_BOUNCE,	/* direct I/O from unaligned memory (os/dev.c) */
	BFS_TBUF_FUSE_RX,	/* a FUSE request's body (cmd/fuse_wire.c) */
	BFS_TBUF_DATA_READ,	/* a small read's chunk (libcore/fs/data_io.c) */
	BFS_TBUF_NR
};
void *bfs_thread_buf(unsigned slot, size_t len);

/*
 * Anonymous memory straight from the kernel, page-aligned and zero on first
 * touch (pools whose pages must go back to the system exactly); NULL on
 * failure.  bfs_mem_release() drops the pages of [p, p+n) but keeps the
 * mapping: the next touch gets zeroed pages.
 */
static inline void *bfs_map_anon(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}
static inline void bfs_unmap(void *p, size_t n) { if (p) munmap(p, n); }
/* grow or shrink a bfs_map_anon() mapping of @old bytes, moving its pages, not copying */
static inline void *bfs_remap(void *p, size_t old, size_t n)
{
	void *q = mremap(p, old, n, MREMAP_MAYMOVE);

	return q == MAP_FAILED ? NULL : q;
}
static inline void bfs_mem_release(void *p, size_t n) { madvise(p, n, MADV_DONTNEED); }
/*
 * Give the heap's free pages back to the system: what a phase freed stays
 * resident otherwise, under whatever the next phase keeps above it.
 */
static inline void bfs_heap_trim(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* ---- time ---- */
static inline u64 bfs_clock_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (u64)ts.tv_sec * 1000000000ULL + (u64)ts.tv_nsec;
}
/* wall-clock time (timestamps stored on disk) */
static inline u64 bfs_realtime_ns(void) { return bfs_clock_ns(CLOCK_REALTIME); }
/* monotonic time (intervals, timeouts) */
static inline u64 bfs_monotonic_ns(void) { return bfs_clock_ns(CLOCK_MONOTONIC); }

/* ---- randomness (UUIDs, hash seeds) ---- */
static inline int bfs_random_bytes(void *buf, size_t len)
{
	u8 *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ---- locks and threads ---- */
typedef pthread_mutex_t bfs_mutex;
typedef pthread_rwlock_t bfs_rwlock;
typedef pthread_cond_t bfs_cond;
typedef pthread_t bfs_thread;

static inline void bfs_mutex_init(bfs_mutex *m) { pthread_mutex_init(m, NULL); }
static inline void bfs_mutex_destroy(bfs_mutex *m) { pthread_mutex_destroy(m); }
static inline void bfs_mutex_lock(bfs_mutex *m) { pthread_mutex_lock(m); }
static inline void bfs_mutex_unlock(bfs_mutex *m) { pthread_mutex_unlock(m); }
static inline bool bfs_mutex_trylock(bfs_mutex *m) { return !pthread_mutex_trylock(m); }

static inline void bfs_rwlock_init(bfs_rwlock *l) { pthread_rwlock_init(l, NULL); }
static inline void bfs_rwlock_destroy(bfs_rwlock *l) { pthread_rwlock_destroy(l); }
static inline void bfs_read_lock(bfs_rwlock *l) { pthread_rwlock_rdlock(l); }
static inline void bfs_write_lock(bfs_rwlock *l) { pthread_rwlock_wrlock(l); }
static inline void bfs_rwlock_unlock(bfs_rwlock *l) { pthread_rwlock_unlock(l); }
static inline bool bfs_write_trylock(bfs_rwlock *l) { return !pthread_rwlock_trywrlock(l); }
/* writers first: a stream of readers cannot starve a writer (no recursive read locks) */
static inline void bfs_rwlock_init_writer_first(bfs_rwlock *l)
{
	pthread_rwlockattr_t a;

	pthread_rwlockattr_init(&a);
#ifdef __GLIBC__	/* an enum, not a macro */
	pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
#endif
	pthread_rwlock_init(l, &a);
	pthread_rwlockattr_destroy(&a);
}

static inline void bfs_cond_init(bfs_cond *c) { pthread_cond_init(c, NULL); }
static inline void bfs_cond_destroy(bfs_cond *c) { pthread_cond_destroy(c); }
static inline void bfs_cond_wait(bfs_cond *c, bfs_mutex *m) { pthread_cond_wait(c, m); }
static inline void bfs_cond_signal(bfs_cond *c) { pthread_cond_signal(c); }
/*
 * wait at most @ns (a wall-clock deadline: a clock step only makes one
 * wait shorter or longer); spurious and timed-out wakeups both return
 */
static inline void bfs_cond_wait_ns(bfs_cond *c, bfs_mutex *m, u64 ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ns += (u64)ts.tv_nsec;
	ts.tv_sec += (time_t)(ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	pthread_cond_timedwait(c, m, &ts);
}
static inline void bfs_cond_broadcast(bfs_cond *c) { pthread_cond_broadcast(c); }
/* wait at most @timeout_ns: 0 when signalled (or spuriously woken), -ETIMEDOUT */
static inline int bfs_cond_timedwait(bfs_cond *c, bfs_mutex *m, u64 timeout_ns)
{
	u64 at = bfs_realtime_ns() + timeout_ns;
	struct timespec ts = { .tv_sec = (time_t)(at / 1000000000u), .tv_nsec = (long)(at % 1000000000u) };

	return -pthread_cond_timedwait(c, m, &ts);
}

/*
 * libcore's threads (journal flusher, commit, readahead, checkpoint) are
 * background workers, as kernel threads are: they start with every signal
 * blocked, so a signal sent to the process (^C, SIGTERM) reaches the
 * application's own thread, which is the one waiting for it, and never
 * runs its handler on a worker while the main thread sleeps on in poll().
 */
static inline int bfs_thread_create(bfs_thread *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}
static inline void bfs_thread_join(bfs_thread t) { pthread_join(t, NULL); }

#endif /* BFS_OS_H */
