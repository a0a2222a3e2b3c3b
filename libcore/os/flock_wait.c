// SPDX-License-Identifier: MIT
/*
 * flock(2) that waits a bounded time (bfs_dev_open_wait()): a blocking
 * flock that a one-shot timer interrupts, the way flock(1) -w does it.
 * Blocking, so the wait ends the moment the holder lets go, not at the next
 * poll.  Not a waiting thread: a flock cannot be cancelled, so a thread
 * left behind at the timeout would take the lock later and keep it from
 * whoever is next.
 *
 * The timer fires at the deadline and then every FLOCK_WAIT_REPEAT_NS, so
 * that a signal that came between the setting of the timer and the flock
 * (a thread descheduled for the whole wait) is followed by one that finds
 * it blocked; the clock, not the signal, says the time is up.
 *
 * The timer signals this thread only (SIGEV_THREAD_ID), and its signal is
 * blocked and drained before the call returns: no other thread, and no
 * later system call of this one, sees an EINTR of ours.  The handler does
 * nothing and is installed once, without SA_RESTART; nothing else in bfs
 * uses FLOCK_WAIT_SIGNAL.
 */
#include "sysdeps.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "dev_internal.h"

#define FLOCK_WAIT_SIGNAL	(SIGRTMIN + 1)
#define FLOCK_WAIT_REPEAT_NS	(50 * 1000 * 1000)

/* glibc's <signal.h> leaves this one to the kernel headers */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id	_sigev_un._tid
#endif

static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
static int handler_err;

static void on_timer(int sig)
{
	(void)sig;
}

static void handler_install(void)
{
	struct sigaction sa = { .sa_handler = on_timer };

	sigemptyset(&sa.sa_mask);
	if (sigaction(FLOCK_WAIT_SIGNAL, &sa, NULL) < 0)
		handler_err = -errno;
}

/* what the timer may have queued for this thread: gone, and the mask as it was */
static void timer_drain(sigset_t *set, const sigset_t *old)
{
	const struct timespec zero = { 0, 0 };

	while (sigtimedwait(set, NULL, &zero) >= 0)
		;
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static int lock_until(int fd, int op, u64 deadline)
{
	for (;;) {
		if (!flock(fd, op))
			return 0;
		if (errno != EINTR)
			return -errno;
		/* the timer's, or another signal's: wait on if there is time left */
		if (bfs_monotonic_ns() >= deadline)
			return -EBUSY;
	}
}

int bfs_os_flock_wait(int fd, int op, u64 timeout_ns)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID };
	struct itimerspec its = {
		.it_value = { (time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000) },
		.it_interval = { 0, FLOCK_WAIT_REPEAT_NS },
	};
	u64 deadline = bfs_monotonic_ns() + timeout_ns;
	sigset_t set, old;
	timer_t timer;
	int ret;

	if (!timeout_ns)
		return -EBUSY;
	pthread_once(&handler_once, handler_install);
	if (handler_err)
		return handler_err;
	sigemptyset(&set);
	sigaddset(&set, FLOCK_WAIT_SIGNAL);
	ret = -pthread_sigmask(SIG_BLOCK, &set, &old);
	if (ret)
		return ret;
	sev.sigev_signo = FLOCK_WAIT_SIGNAL;
	sev.sigev_notify_thread_id = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) < 0) {
		ret = -errno;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return ret;
	}
	if (timer_settime(timer, 0, &its, NULL) < 0) {
		ret = -errno;
	} else {
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		ret = lock_until(fd, op, deadline);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	timer_delete(timer);
	timer_drain(&set, &old);
	return ret;
}
