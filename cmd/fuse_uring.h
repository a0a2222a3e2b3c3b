/* SPDX-License-Identifier: MIT */
/*
 * bfs mount: FUSE over io_uring (Linux 6.14+, CONFIG_FUSE_IO_URING), beside
 * the /dev/fuse shim (fuse_wire.h), which hooks it in.  See
 * doc/fuse-transport.md.
 *
 * After FUSE_INIT has negotiated FUSE_OVER_IO_URING (fuse_wire.c adds the
 * flag to libfuse 3.14's reply), one queue per possible CPU gets threads
 * pinned to that CPU, each owning an io_uring and one ring entry: a header
 * buffer and a payload buffer the kernel fills with a request and takes
 * the reply from (FUSE_IO_URING_CMD_REGISTER, then COMMIT_AND_FETCH).  The
 * kernel serves a request on the queue of the CPU that issued it, so the
 * round trip needs no read(2)/write(2) and no cross-CPU wake-up.  Requests
 * go through libfuse's fuse_session_process_buf(); libfuse's reply comes
 * back through the shim's writev hook, which hands it here
 * (bfs_fuse_uring_send()).  INIT, FORGET, INTERRUPT and notifications stay
 * on /dev/fuse, served by libfuse's loop as before.
 *
 * Any failure before the kernel has every queue (no liburing, io_uring
 * forbidden, the kernel parameter off, a REGISTER refused) leaves the
 * kernel on /dev/fuse: the kernel switches only once every queue has an
 * entry.
 */
#ifndef BFS_FUSE_URING_H
#define BFS_FUSE_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

struct fuse_session;

/* the mount option: uring, nouring, or neither (use it when the kernel allows) */
enum bfs_uring_mode {
	BFS_URING_AUTO = 0,
	BFS_URING_ON,
	BFS_URING_OFF,
};

/* FUSE_OVER_IO_URING of <linux/fuse.h> 7.42 (flags2 bit 9) */
#define BFS_FUSE_OVER_IO_URING	(1ULL << 41)

/*
 * Before the mount: can BFS_URING_ON be had?  -ENOTSUP or -EPERM, with
 * @why set, when the kernel cannot or may not do it (AUTO, OFF: 0).
 */
int bfs_fuse_uring_check(enum bfs_uring_mode mode, const char **why);

/* before the first request: the session to serve, the mode, entries per queue */
void bfs_fuse_uring_setup(struct fuse_session *se, enum bfs_uring_mode mode, unsigned entries);

/* should INIT ask for FUSE_OVER_IO_URING? */
bool bfs_fuse_uring_wanted(void);

/*
 * The INIT reply has been written: @flags are the flags (flags | flags2 <<
 * 32) it carried, @max_write and @max_pages its limits.  Starts the
 * queues if FUSE_OVER_IO_URING is among them, and logs the transport.
 */
void bfs_fuse_uring_start(uint64_t flags, uint32_t max_write, uint32_t max_pages);

/*
 * The shim's writev: true if this thread is serving a ring request with
 * the reply's unique, the reply is then queued on that entry and *@ret
 * says what writev(2) would have.  False: write it to /dev/fuse.
 */
bool bfs_fuse_uring_send(const struct iovec *iov, int count, ssize_t *ret);

/* after the request loop: the queue threads stop (serving no more) and are joined */
void bfs_fuse_uring_stop(void);

/* true while ring queues serve requests (for the transport line and tests) */
bool bfs_fuse_uring_active(void);

#endif /* BFS_FUSE_URING_H */
