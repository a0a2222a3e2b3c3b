// SPDX-License-Identifier: MIT
/*
 * FUSE over io_uring for bfs mount (see fuse_uring.h and
 * doc/fuse-transport.md).  The wire structures are the kernel's
 * (include/uapi/linux/fuse.h, protocol 7.42), defined here because
 * Debian 12's headers predate them.
 *
 * One thread per ring entry: bfs serves a request to the end on the
 * thread that took it (device I/O included), so a queue with one thread
 * would hold the mount to one request per CPU at a time; several threads
 * per queue, each waiting on its own small io_uring, keep as many in
 * flight as the /dev/fuse loop's threads did, and need no lock between
 * them.  The kernel hands a request to the entry of its queue that was
 * made available last, so a lightly loaded queue keeps using the same,
 * warm, thread.
 */
#include "fuse_uring.h"
#include "fuse_ops.h"
#include "fuse_wire.h"

#include <bfs/log.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#ifdef BFS_HAVE_LIBURING

#include <linux/fuse.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/sysinfo.h>
#include <unistd.h>

/* ---- the kernel's wire structures (include/uapi/linux/fuse.h) ---- */

#define URING_IN_OUT_HEADER_SZ	128
#define URING_OP_IN_OUT_SZ	128

struct uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;	/* the request's id, given back with its reply */
	uint32_t payload_sz;	/* bytes in the payload buffer, each way */
	uint32_t padding;
	uint64_t reserved;
};

struct uring_req_header {
	char	in_out[URING_IN_OUT_HEADER_SZ];	/* fuse_in_header, then fuse_out_header */
	char	op_in[URING_OP_IN_OUT_SZ];	/* the request's first argument (its fixed part) */
	struct uring_ent_in_out ring_ent_in_out;
};

enum { URING_CMD_REGISTER = 1, URING_CMD_COMMIT_AND_FETCH = 2 };

/* in the SQE's command area (IORING_SETUP_SQE128 gives 80 bytes) */
struct uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t	padding[6];
};

_Static_assert(sizeof(struct uring_cmd_req) <= 80, "fits the SQE128 command area");
_Static_assert(sizeof(struct fuse_in_header) + URING_OP_IN_OUT_SZ < 4096, "head fits a page");

/* ---- state ---- */

#define TAG_STOP	((uint64_t)1)	/* the stop eventfd's poll */
#define TAG_ENT		((uint64_t)2)	/* the entry's command */
#define URING_PAGE	4096UL

struct uring_ent {
	pthread_t	thread;
	bool		started;
	unsigned	qid;
	struct io_uring	ring;
	bool		ring_ok;
	struct uring_req_header *hdr;	/* page-aligned */
	char		*area;		/* one page of room for the head, then the payload */
	char		*payload;	/* area + URING_PAGE: page-aligned, like a WRITE's data */
	struct iovec	iov[2];
	unsigned	last_cmd;	/* what to submit again after -EINTR/-EAGAIN */
	uint64_t	unique;		/* the request being served; 0: none */
	uint64_t	commit_id;
	bool		replied;
};

static struct {
	struct fuse_session *se;
	enum bfs_uring_mode mode;
	unsigned	per_queue;	/* entries (threads) per queue */
	unsigned	queues;
	size_t		payload_sz;
	struct uring_ent *ents;
	unsigned	nents;
	int		stop_fd;	/* eventfd: every thread polls it */
	pthread_mutex_t	lock;
	pthread_cond_t	cond;
	unsigned	reported;	/* threads that have registered or failed */
	unsigned	failed;
	int		first_err;
	atomic_bool	active;
	atomic_uint	busy;		/* entries serving a request now */
	atomic_uint	busy_max;	/* the most at once, logged at the stop */
	atomic_uint	*qbusy;		/* the same per queue */
	atomic_uint	qbusy_max;	/* the most at once on one queue */
} ur = {
	.stop_fd = -1,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

/* the entry whose request this thread is serving */
static _Thread_local struct uring_ent *cur_ent;

static const char param_path[] = "/sys/module/fuse/parameters/enable_uring";

/* the kernel's parameter: 1 Y, 0 N, -1 absent (no FUSE over io_uring in this kernel) */
static int kernel_param(void)
{
	char c = 0;
	FILE *f = fopen(param_path, "r");

	if (!f)
		return -1;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c == 'Y' || c == 'y' || c == '1';
}

/* the kernel makes one queue per possible CPU (num_possible_cpus()) */
static unsigned possible_cpus(void)
{
	unsigned lo, hi, n = 0;
	char buf[256], *p;
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");

	if (f) {
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		/* "0-3,8-11": count every range */
		while (p && *p && *p != '\n') {
			if (sscanf(p, "%u-%u", &lo, &hi) == 2 && hi >= lo)
				n += hi - lo + 1;
			else if (sscanf(p, "%u", &lo) == 1)
				n++;
			p = strchr(p, ',');
			if (p)
				p++;
		}
	}
	if (!n)
		n = (unsigned)get_nprocs_conf();
	return n ? n : 1;
}

int bfs_fuse_uring_check(enum bfs_uring_mode mode, const char **why)
{
	int param, fd;

	if (mode != BFS_URING_ON)
		return 0;
	param = kernel_param();
	if (param < 0) {
		/* fuse may be a module not loaded yet: opening the device loads it */
		fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
		param = kernel_param();
	}
	if (param < 0) {
		*why = "this kernel has no FUSE over io_uring (Linux 6.14 or later, "
		       "built with CONFIG_FUSE_IO_URING)";
		return -ENOTSUP;
	}
	if (!param) {
		/*
		 * The parameter is the administrator's, for every FUSE daemon
		 * of the machine: bfs does not turn it on by itself.
		 */
		*why = "FUSE over io_uring is off in the kernel "
		       "(/sys/module/fuse/parameters/enable_uring is N; root can write Y to it)";
		return -EPERM;
	}
	return 0;
}

void bfs_fuse_uring_setup(struct fuse_session *se, enum bfs_uring_mode mode, unsigned entries)
{
	ur.se = se;
	ur.mode = mode;
	ur.per_queue = entries ? entries : 1;
	atomic_store(&ur.active, false);
}

bool bfs_fuse_uring_wanted(void)
{
	return ur.se && ur.mode != BFS_URING_OFF;
}

bool bfs_fuse_uring_active(void)
{
	return atomic_load(&ur.active);
}

/* ---- one entry's thread ---- */

static struct io_uring_sqe *ent_sqe(struct uring_ent *e, unsigned cmd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
	struct uring_cmd_req *req;

	if (!sqe)
		return NULL;	/* cannot be: one command in flight, room for four */
	memset(sqe, 0, 128);
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fuse_session_fd(ur.se);
	sqe->cmd_op = cmd;
	io_uring_sqe_set_data64(sqe, TAG_ENT);
	req = (struct uring_cmd_req *)sqe->cmd;
	req->qid = (uint16_t)e->qid;
	if (cmd == URING_CMD_REGISTER) {
		sqe->addr = (uint64_t)(uintptr_t)e->iov;
		sqe->len = 2;
	} else {
		req->commit_id = e->commit_id;
	}
	e->last_cmd = cmd;
	return sqe;
}

/* the reply to the request @e holds (bfs_fuse_uring_send(), or an error of our own) */
static void ent_commit(struct uring_ent *e, int error, size_t payload)
{
	struct fuse_out_header out = {
		.len = (uint32_t)(sizeof(out) + payload),
		.error = error,
		.unique = e->unique,
	};

	memcpy(e->hdr->in_out, &out, sizeof(out));
	e->hdr->ring_ent_in_out.payload_sz = (uint32_t)payload;
	e->replied = true;
	if (!ent_sqe(e, URING_CMD_COMMIT_AND_FETCH))
		bfs_err("FUSE io_uring: no submission slot for a reply");
}

bool bfs_fuse_uring_send(const struct iovec *iov, int count, ssize_t *ret)
{
	struct uring_ent *e = cur_ent;
	const struct fuse_out_header *out;
	size_t total = 0, all;
	int i;

	if (!e || e->replied || count < 1 || iov[0].iov_len != sizeof(*out))
		return false;
	out = iov[0].iov_base;
	if (!out->unique || out->unique != e->unique)
		return false;	/* a notification, an interrupt's answer: /dev/fuse */
	all = iov[0].iov_len;
	for (i = 1; i < count; i++)
		all += iov[i].iov_len;
	if (all - sizeof(*out) > ur.payload_sz) {
		bfs_err("FUSE io_uring: a %zu-byte reply does not fit the %zu-byte buffer",
			all, ur.payload_sz);
		ent_commit(e, -EIO, 0);
		*ret = (ssize_t)all;
		return true;
	}
	for (i = 1; i < count; i++) {
		/* a READ's reply was made in place (bfs_fuse_wire_reply_buf()) */
		if (iov[i].iov_base != e->payload + total)
			memmove(e->payload + total, iov[i].iov_base, iov[i].iov_len);
		total += iov[i].iov_len;
	}
	ent_commit(e, out->error, total);
	*ret = (ssize_t)all;
	return true;
}

static void busy_note(atomic_uint *max, unsigned now)
{
	unsigned m = atomic_load_explicit(max, memory_order_relaxed);

	while (now > m && !atomic_compare_exchange_weak_explicit(max, &m, now,
								 memory_order_relaxed,
								 memory_order_relaxed))
		;
}

/*
 * One more request being served on queue @qid: the most at once, on the
 * mount and on one queue, say whether the entries were enough (logged
 * at the stop)
 */
static void busy_enter(unsigned qid)
{
	busy_note(&ur.busy_max, atomic_fetch_add_explicit(&ur.busy, 1, memory_order_relaxed) + 1);
	busy_note(&ur.qbusy_max,
		  atomic_fetch_add_explicit(&ur.qbusy[qid], 1, memory_order_relaxed) + 1);
}

static void busy_exit(unsigned qid)
{
	atomic_fetch_sub_explicit(&ur.qbusy[qid], 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&ur.busy, 1, memory_order_relaxed);
}

/*
 * A request: the kernel put its fuse_in_header in in_out, its first
 * argument in op_in and the rest in the payload.  libfuse wants them in
 * one piece, so the head goes just before the payload, in the page kept
 * for it: the payload is not copied, and a WRITE's data stays
 * page-aligned for O_DIRECT.
 */
static void ent_serve(struct uring_ent *e)
{
	struct fuse_in_header in;
	uint32_t payload = e->hdr->ring_ent_in_out.payload_sz;
	size_t op_len;
	struct fuse_buf buf;
	char *head;

	memcpy(&in, e->hdr->in_out, sizeof(in));
	e->unique = in.unique;
	e->commit_id = e->hdr->ring_ent_in_out.commit_id;
	e->replied = false;
	if (in.len < sizeof(in) + (size_t)payload || payload > ur.payload_sz ||
	    (op_len = in.len - sizeof(in) - payload) > URING_OP_IN_OUT_SZ) {
		bfs_err("FUSE io_uring: malformed request (opcode %u, length %u, payload %u)",
			in.opcode, in.len, payload);
		ent_commit(e, -EIO, 0);
		return;
	}
	head = e->payload - sizeof(in) - op_len;
	memcpy(head, &in, sizeof(in));
	memcpy(head + sizeof(in), e->hdr->op_in, op_len);
	memset(&buf, 0, sizeof(buf));
	buf.mem = head;
	buf.size = in.len;
	bfs_fuse_wire_note(head, in.len, payload ? NULL : e->payload, ur.payload_sz);
	busy_enter(e->qid);
	cur_ent = e;
	fuse_session_process_buf(ur.se, &buf);
	cur_ent = NULL;
	busy_exit(e->qid);
	/*
	 * Every request on the ring has a reply (FORGETs come on /dev/fuse)
	 * and bfs replies before returning; without one the entry would be
	 * stuck, so the kernel gets an error instead.
	 */
	if (!e->replied) {
		bfs_warn("FUSE io_uring: no reply to request %llu (opcode %u)",
			 (unsigned long long)e->unique, in.opcode);
		ent_commit(e, -EIO, 0);
	}
	e->unique = 0;
}

static void ent_report(int err)
{
	pthread_mutex_lock(&ur.lock);
	ur.reported++;
	if (err) {
		if (!ur.failed++)
			ur.first_err = err;
	}
	pthread_cond_broadcast(&ur.cond);
	pthread_mutex_unlock(&ur.lock);
}

static int ent_register(struct uring_ent *e)
{
	struct io_uring_params p;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	cpu_set_t cpus;
	int ret;

	CPU_ZERO(&cpus);
	CPU_SET(e->qid, &cpus);
	/* an offline CPU's queue is served from anywhere */
	(void)sched_setaffinity(0, sizeof(cpus), &cpus);
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQE128;
	ret = io_uring_queue_init_params(4, &e->ring, &p);
	if (ret)
		return ret;
	e->ring_ok = true;
	sqe = io_uring_get_sqe(&e->ring);
	io_uring_prep_poll_add(sqe, ur.stop_fd, POLLIN);
	io_uring_sqe_set_data64(sqe, TAG_STOP);
	if (!ent_sqe(e, URING_CMD_REGISTER))
		return -EIO;
	ret = io_uring_submit(&e->ring);
	if (ret < 0)
		return ret;
	/* a refused REGISTER completes at once; an accepted one waits for a request */
	if (!io_uring_peek_cqe(&e->ring, &cqe) && io_uring_cqe_get_data64(cqe) == TAG_ENT &&
	    cqe->res < 0) {
		ret = cqe->res;
		io_uring_cqe_seen(&e->ring, cqe);
		return ret;
	}
	return 0;
}

/* false: the thread ends (stop, unmount, a failure) */
static bool ent_complete(struct uring_ent *e, struct io_uring_cqe *cqe)
{
	int res = cqe->res;

	if (io_uring_cqe_get_data64(cqe) == TAG_STOP)
		return false;
	if (res == -EINTR || res == -EAGAIN) {
		ent_sqe(e, e->last_cmd);	/* again */
		return true;
	}
	if (res < 0) {
		/* -ENOTCONN, -ECONNABORTED: unmounted, or the daemon is going */
		if (res != -ENOTCONN && res != -ECONNABORTED && res != -ECANCELED)
			bfs_err("FUSE io_uring: queue %u: %s", e->qid, strerror(-res));
		return false;
	}
	ent_serve(e);
	return true;
}

static void *ent_thread(void *arg)
{
	struct uring_ent *e = arg;
	struct io_uring_cqe *cqe;
	sigset_t all;
	bool go = true;
	int ret;

	/* the signals are the main loop's (libfuse's handlers end it) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	ret = ent_register(e);
	ent_report(ret);
	if (ret)
		return NULL;
	while (go) {
		ret = io_uring_submit_and_wait(&e->ring, 1);
		if (ret < 0 && ret != -EINTR) {
			bfs_err("FUSE io_uring: queue %u: %s", e->qid, strerror(-ret));
			break;
		}
		while (go && !io_uring_peek_cqe(&e->ring, &cqe)) {
			go = ent_complete(e, cqe);
			io_uring_cqe_seen(&e->ring, cqe);
		}
	}
	/* a reply still queued (the stop came while serving) goes out */
	io_uring_submit(&e->ring);
	return NULL;
}

/* ---- start and stop ---- */

static void ents_free(void)
{
	unsigned i;

	for (i = 0; i < ur.nents; i++) {
		struct uring_ent *e = &ur.ents[i];

		if (e->ring_ok)
			io_uring_queue_exit(&e->ring);
		free(e->hdr);
		free(e->area);
	}
	free(ur.ents);
	ur.ents = NULL;
	free(ur.qbusy);
	ur.qbusy = NULL;
	ur.nents = 0;
	if (ur.stop_fd >= 0)
		close(ur.stop_fd);
	ur.stop_fd = -1;
}

static int ents_alloc(void)
{
	unsigned i;

	ur.nents = ur.queues * ur.per_queue;
	ur.ents = calloc(ur.nents, sizeof(*ur.ents));
	ur.qbusy = calloc(ur.queues, sizeof(*ur.qbusy));
	if (!ur.ents || !ur.qbusy) {
		if (!ur.ents)
			ur.nents = 0;	/* nothing for ents_free() to walk */
		return -ENOMEM;
	}
	for (i = 0; i < ur.nents; i++) {
		struct uring_ent *e = &ur.ents[i];
		void *p;

		e->qid = i % ur.queues;
		if (posix_memalign(&p, URING_PAGE, URING_PAGE))
			return -ENOMEM;
		e->hdr = p;
		memset(e->hdr, 0, URING_PAGE);
		/* virtual until used: a thread touches what its requests need */
		if (posix_memalign(&p, URING_PAGE, URING_PAGE + ur.payload_sz))
			return -ENOMEM;
		e->area = p;
		e->payload = e->area + URING_PAGE;
		e->iov[0].iov_base = e->hdr;
		e->iov[0].iov_len = sizeof(struct uring_req_header);
		e->iov[1].iov_base = e->payload;
		e->iov[1].iov_len = ur.payload_sz;
	}
	ur.stop_fd = eventfd(0, EFD_CLOEXEC);
	return ur.stop_fd < 0 ? -errno : 0;
}

static void fallback(const char *why, int err)
{
	if (ur.mode == BFS_URING_ON)
		bfs_warn("FUSE transport: /dev/fuse (io_uring asked for, but %s%s%s)", why,
			 err ? ": " : "", err ? strerror(-err) : "");
	else
		bfs_info("FUSE transport: /dev/fuse%s%s%s", why ? " (" : "", why ? why : "",
			 why ? ")" : "");
}

static void uring_start(uint64_t flags, uint32_t max_write, uint32_t max_pages);

/*
 * Runs on the libfuse worker that wrote the INIT reply, which libfuse's
 * loop cancels when it ends (SIGTERM): not in the middle of this, which
 * waits on a condition (a cancellation point) and would leave the lock
 * held and the threads it started unjoined.
 */
void bfs_fuse_uring_start(uint64_t flags, uint32_t max_write, uint32_t max_pages)
{
	int cancel;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	uring_start(flags, max_write, max_pages);
	pthread_setcancelstate(cancel, NULL);
}

static void uring_start(uint64_t flags, uint32_t max_write, uint32_t max_pages)
{
	size_t pages = (flags & FUSE_MAX_PAGES) ? max_pages : 32;	/* the kernel's default */
	unsigned i;
	int ret;

	if (!bfs_fuse_uring_wanted()) {
		if (ur.se)
			fallback("nouring", 0);
		return;
	}
	if (!(flags & BFS_FUSE_OVER_IO_URING)) {
		fallback(kernel_param() < 0 ? "the kernel has no FUSE over io_uring" :
			 "the kernel does not offer FUSE over io_uring", 0);
		return;
	}
	/* the kernel takes max(FUSE_MIN_READ_BUFFER, max_write, max_pages pages) */
	ur.payload_sz = 8192;
	if (max_write > ur.payload_sz)
		ur.payload_sz = max_write;
	if (pages * URING_PAGE > ur.payload_sz)
		ur.payload_sz = pages * URING_PAGE;
	ur.payload_sz = (ur.payload_sz + URING_PAGE - 1) & ~(URING_PAGE - 1);
	ur.queues = possible_cpus();
	ur.reported = ur.failed = 0;
	ur.first_err = 0;
	atomic_store(&ur.busy, 0);
	atomic_store(&ur.busy_max, 0);
	atomic_store(&ur.qbusy_max, 0);
	ret = ents_alloc();
	if (ret) {
		ents_free();
		fallback("no memory for the ring entries", ret);
		return;
	}
	for (i = 0; i < ur.nents; i++) {
		ret = pthread_create(&ur.ents[i].thread, NULL, ent_thread, &ur.ents[i]);
		if (ret) {
			ent_report(-ret);
			continue;
		}
		ur.ents[i].started = true;
	}
	pthread_mutex_lock(&ur.lock);
	while (ur.reported < ur.nents)
		pthread_cond_wait(&ur.cond, &ur.lock);
	ret = ur.failed ? ur.first_err : 0;
	pthread_mutex_unlock(&ur.lock);
	if (ret) {
		/*
		 * The kernel switches to the ring only when every queue has an
		 * entry; some may have, so /dev/fuse stays in use only if one
		 * queue has none.  Simplest and exact: stop them all.
		 */
		bfs_fuse_uring_stop();
		fallback("the kernel refused the ring", ret);
		return;
	}
	atomic_store(&ur.active, true);
	bfs_info("FUSE transport: io_uring (%u queues x %u entries, %zu KiB payload)",
		 ur.queues, ur.per_queue, ur.payload_sz >> 10);
}

void bfs_fuse_uring_stop(void)
{
	uint64_t one = 1;
	unsigned i;

	if (!ur.ents)
		return;
	if (write(ur.stop_fd, &one, sizeof(one)) != sizeof(one))
		bfs_err("FUSE io_uring: cannot stop the queues: %s", strerror(errno));
	for (i = 0; i < ur.nents; i++) {
		if (ur.ents[i].started)
			pthread_join(ur.ents[i].thread, NULL);
	}
	atomic_store(&ur.active, false);
	bfs_info("FUSE io_uring: at most %u requests served at once (%u on one queue of %u entries)",
		 atomic_load(&ur.busy_max), atomic_load(&ur.qbusy_max), ur.per_queue);
	ents_free();
}

#else /* !BFS_HAVE_LIBURING */

int bfs_fuse_uring_check(enum bfs_uring_mode mode, const char **why)
{
	if (mode != BFS_URING_ON)
		return 0;
	*why = "bfs was built without liburing";
	return -ENOTSUP;
}

void bfs_fuse_uring_setup(struct fuse_session *se, enum bfs_uring_mode mode, unsigned entries)
{
	(void)se;
	(void)mode;
	(void)entries;
}

bool bfs_fuse_uring_wanted(void)
{
	return false;
}

void bfs_fuse_uring_start(uint64_t flags, uint32_t max_write, uint32_t max_pages)
{
	(void)flags;
	(void)max_write;
	(void)max_pages;
	bfs_info("FUSE transport: /dev/fuse (built without liburing)");
}

bool bfs_fuse_uring_send(const struct iovec *iov, int count, ssize_t *ret)
{
	(void)iov;
	(void)count;
	(void)ret;
	return false;
}

void bfs_fuse_uring_stop(void)
{
}

bool bfs_fuse_uring_active(void)
{
	return false;
}

#endif
