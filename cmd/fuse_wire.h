/* SPDX-License-Identifier: MIT */
/*
 * bfs mount: a shim under libfuse on the /dev/fuse channel (cmd/fuse_wire.c),
 * installed with fuse_session_custom_io().  It sees every raw request and
 * every raw reply, and does only what Debian 12's libfuse 3.14 cannot:
 *
 *  - INIT: adds FUSE_HANDLE_KILLPRIV_V2, FUSE_DIRECT_IO_ALLOW_MMAP and
 *    FUSE_PARALLEL_DIROPS to the reply when the kernel offered them.  With KILLPRIV_V2 the kernel
 *    marks the superblock SB_NOSEC and stops asking for
 *    security.capability before every write(2); in exchange the
 *    filesystem clears set-ID bits itself, told by the flags below.
 *  - WRITE, SETATTR, OPEN: the kernel's "kill set-ID bits" flags, which
 *    libfuse drops, are kept for the thread that serves the request
 *    (bfs_fuse_wire_req_flags()).  libfuse serves a request on the thread
 *    that read it, and bfs replies before returning, so a thread-local is
 *    exact.
 *  - WRITE: the data is received page-aligned, beside libfuse's buffer,
 *    so that O_DIRECT takes it without an aligned copy
 *    (bfs_fuse_wire_write_data()); the same buffer then serves a READ's
 *    reply (bfs_fuse_wire_reply_buf()).
 *  - OPEN and CREATE replies with FOPEN_DIRECT_IO get
 *    FOPEN_PARALLEL_DIRECT_WRITES: direct writes inside the file then run
 *    under the kernel's shared inode lock.
 *  - INIT also asks for FUSE_OVER_IO_URING when fuse_uring.h wants it, and
 *    replies go to the ring entry of their request (fuse_uring.c).
 *
 * BFS_FUSE_WIRE=0 in the environment leaves the shim out: bfs then
 * behaves as with plain libfuse 3.14.  Nothing here knows about bfs.
 */
#ifndef BFS_FUSE_WIRE_H
#define BFS_FUSE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* bfs_fuse_wire_req_flags(): the caller lacks CAP_FSETID, clear set-ID bits as the VFS would */
#define BFS_WIRE_KILL_SUIDGID	(1U << 0)

/* false when BFS_FUSE_WIRE=0 asks for plain libfuse */
bool bfs_fuse_wire_wanted(void);
/* back to "no INIT seen" (a new session, or a test) */
void bfs_fuse_wire_reset(void);

/* struct fuse_custom_io's read and writev (the userdata is not used) */
ssize_t bfs_fuse_wire_read(int fd, void *buf, size_t len, void *userdata);
ssize_t bfs_fuse_wire_writev(int fd, struct iovec *iov, int count, void *userdata);

/*
 * A request this thread serves that did not come through
 * bfs_fuse_wire_read() (a ring entry's, fuse_uring.c): @buf, @len as
 * libfuse gets them; @reply, if not NULL, a page-aligned buffer of
 * @reply_cap bytes that bfs_fuse_wire_reply_buf() may hand out.
 */
void bfs_fuse_wire_note(const void *buf, size_t len, void *reply, size_t reply_cap);

/*
 * The data of the WRITE this thread is serving, given libfuse's pointer
 * @buf and @size: the same bytes, page-aligned, when the shim received
 * them aside (bfs_fuse_wire_read()); else @buf.  Valid until this thread
 * reads its next request.
 */
const void *bfs_fuse_wire_write_data(const void *buf, size_t size);

/*
 * A page-aligned buffer of at least @len bytes for the reply to the
 * request this thread is serving, when that request left nothing in it
 * (not a WRITE whose data it holds): the receive buffer above, reused,
 * so that a READ's reply is neither allocated nor faulted in each time.
 * Valid until this thread reads its next request (a reply is written to
 * the kernel before that); NULL: none to be had, allocate one.
 */
void *bfs_fuse_wire_reply_buf(size_t len);

/* BFS_WIRE_* of the request this thread is serving; 0 without KILLPRIV_V2 */
unsigned bfs_fuse_wire_req_flags(void);
/* INIT negotiated FUSE_HANDLE_KILLPRIV_V2: the filesystem clears set-ID bits */
bool bfs_fuse_wire_killpriv(void);
/* INIT negotiated FUSE_DIRECT_IO_ALLOW_MMAP: MAP_SHARED works on direct_io opens */
bool bfs_fuse_wire_dio_mmap(void);

#endif /* BFS_FUSE_WIRE_H */
