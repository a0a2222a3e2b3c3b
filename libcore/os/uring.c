// SPDX-License-Identifier: MIT
/*
 * Several transfers in flight at once through io_uring (liburing).
 *
 * Each thread that submits gets its own ring, made on first use and torn
 * down when the thread exits, so submitters never share a lock or a
 * completion queue: one FUSE thread's batch cannot steal another's
 * completions, and the batches of different requests are in flight together
 * because their threads are.  io_uring may be missing (old kernel, built
 * without liburing) or forbidden (container seccomp profiles answer EPERM or
 * ENOSYS): the first failed ring setup turns it off for the process and
 * bfs_os_uring_xfer() says -ENOSYS, on which the caller goes synchronous.
 * BFS_IO_URING=0 in the environment turns it off from the start.
 */
#include "dev_internal.h"

#include <stdlib.h>

#ifdef BFS_HAVE_LIBURING

#include <liburing.h>

#define URING_DEPTH	64U	/* entries per ring: in flight per thread */

enum { URING_UNKNOWN, URING_ON, URING_OFF };

static int uring_state = URING_UNKNOWN;	/* __atomic */
static pthread_once_t uring_once = PTHREAD_ONCE_INIT;
static pthread_key_t uring_key;
static __thread struct io_uring *uring_mine;

static void uring_free(void *p)
{
	struct io_uring *ring = p;

	io_uring_queue_exit(ring);
	bfs_free(ring);
}

/*
 * A forked child (a mount going to the background) must not share the
 * parent's ring: its mappings are the same memory.  It makes its own.
 */
static void uring_atfork_child(void)
{
	struct io_uring *ring = uring_mine;

	if (!ring)
		return;
	uring_mine = NULL;
	pthread_setspecific(uring_key, NULL);
	uring_free(ring);
}

static void uring_init_once(void)
{
	const char *env = getenv("BFS_IO_URING");

	if (pthread_key_create(&uring_key, uring_free) || (env && !strcmp(env, "0")) ||
	    pthread_atfork(NULL, NULL, uring_atfork_child))
		__atomic_store_n(&uring_state, URING_OFF, __ATOMIC_RELEASE);
}

static struct io_uring *uring_get(void)
{
	struct io_uring *ring;

	if (uring_mine)
		return uring_mine;
	pthread_once(&uring_once, uring_init_once);
	if (__atomic_load_n(&uring_state, __ATOMIC_ACQUIRE) == URING_OFF)
		return NULL;
	ring = bfs_zalloc(sizeof(*ring));
	if (!ring)
		return NULL;	/* this once synchronous; do not give io_uring up for it */
	if (io_uring_queue_init(URING_DEPTH, ring, 0) < 0) {
		bfs_free(ring);
		__atomic_store_n(&uring_state, URING_OFF, __ATOMIC_RELEASE);
		return NULL;
	}
	if (pthread_setspecific(uring_key, ring)) {
		uring_free(ring);
		return NULL;
	}
	__atomic_store_n(&uring_state, URING_ON, __ATOMIC_RELEASE);
	uring_mine = ring;
	return ring;
}

bool bfs_os_uring_available(void)
{
	return uring_get() != NULL;
}

static void uring_prep(struct io_uring_sqe *sqe, struct bfs_os_xfer *x, unsigned i)
{
	if (x->write)
		io_uring_prep_write(sqe, x->fd, (const u8 *)x->buf + x->done,
				    (unsigned)BFS_MIN(x->len - x->done, (size_t)1 << 30),
				    x->off + x->done);
	else
		io_uring_prep_read(sqe, x->fd, (u8 *)x->buf + x->done,
				   (unsigned)BFS_MIN(x->len - x->done, (size_t)1 << 30),
				   x->off + x->done);
	io_uring_sqe_set_data64(sqe, i);
}

/*
 * A completion of x: account it, and say whether x needs another
 * submission (short transfer, EINTR/EAGAIN).
 */
static bool uring_complete(struct bfs_os_xfer *x, int res)
{
	if (res == -EINTR || res == -EAGAIN)
		return true;
	if (res < 0) {
		x->ret = res;
		return false;
	}
	if (!res) {		/* end of file: the file shrank under us */
		x->ret = -EIO;
		return false;
	}
	x->done += (size_t)res;
	return x->done < x->len;
}

int bfs_os_uring_xfer(struct bfs_os_xfer *x, unsigned nr, unsigned *order,
		      void (*work)(void *arg), void *arg, bool *worked)
{
	struct io_uring *ring = uring_get();
	unsigned *queue, head = 0, tail = 0, inflight = 0, finished = 0, i;
	int ret = 0;

	if (!ring)
		return -ENOSYS;
	/* a ring of indices waiting for a submission slot: first all, then resubmissions */
	queue = bfs_malloc(sizeof(*queue) * (nr + 1));
	if (!queue)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		x[i].ret = 0;
		x[i].done = 0;
		queue[tail++] = i;
	}
	while (finished < nr) {
		struct io_uring_cqe *cqe;
		unsigned seen = 0, n;

		while (head != tail && inflight < URING_DEPTH) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

			if (!sqe)
				break;
			uring_prep(sqe, &x[queue[head]], queue[head]);
			head = (head + 1) % (nr + 1);
			inflight++;
		}
		if (work && !*worked) {
			/*
			 * The transfers go out first, the work runs while they are
			 * in flight; a failed submission is retried just below
			 */
			io_uring_submit(ring);
			work(arg);
			*worked = true;
		}
		ret = io_uring_submit_and_wait(ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN)
			break;	/* the ring itself failed: cannot happen with valid sqes */
		ret = 0;
		io_uring_for_each_cqe(ring, n, cqe) {
			unsigned k = (unsigned)io_uring_cqe_get_data64(cqe);

			seen++;
			inflight--;
			if (uring_complete(&x[k], cqe->res)) {
				queue[tail] = k;
				tail = (tail + 1) % (nr + 1);
			} else {
				if (order)
					order[finished] = k;
				finished++;
			}
		}
		io_uring_cq_advance(ring, seen);
	}
	if (ret) {
		/*
		 * Reap what is still in flight before the buffers go back to the
		 * caller: the kernel would write into freed memory otherwise.
		 */
		while (inflight) {
			struct io_uring_cqe *cqe;

			int wret = io_uring_wait_cqe(ring, &cqe);

			if (wret == 0) {
				io_uring_cqe_seen(ring, cqe);
				inflight--;
			} else if (wret != -EINTR) {
				abort();	/* buffers still owned by the kernel: no way out */
			}
		}
	}
	bfs_free(queue);
	return ret;
}

#else /* !BFS_HAVE_LIBURING */

bool bfs_os_uring_available(void)
{
	return false;
}

int bfs_os_uring_xfer(struct bfs_os_xfer *x, unsigned nr, unsigned *order,
		      void (*work)(void *arg), void *arg, bool *worked)
{
	return -ENOSYS;
}

#endif
