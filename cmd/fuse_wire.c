// SPDX-License-Identifier: MIT
/*
 * The /dev/fuse shim of bfs mount (see fuse_wire.h): look at raw requests
 * as they are read, adjust raw replies as they are written.  The wire
 * structures are the kernel's (<linux/fuse.h>); every field is read only
 * after checking that the request carries it, because the shim runs before
 * libfuse's own checks.
 */
#include "fuse_wire.h"
#include "fuse_uring.h"

#include <bfs/os.h>

#include <errno.h>
#include <linux/fuse.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* newer than the kernel headers of Debian 12 (kernel 6.6, protocol 7.39) */
#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP	(1ULL << 36)
#endif

/* what INIT settled; one session per process */
static struct {
	atomic_bool	killpriv;
	atomic_bool	dio_mmap;
	atomic_ullong	offered;	/* the INIT request's flags | flags2 << 32 */
} wire;

/* the request the calling thread read last */
static _Thread_local struct {
	uint64_t	unique;		/* 0: none (the kernel never uses 0) */
	uint32_t	opcode;
	unsigned	flags;		/* BFS_WIRE_* */
	const void	*data;		/* a WRITE's data, page-aligned (rx below); NULL: none */
	const void	*data_in;	/* where libfuse thinks that data is, in its buffer */
	size_t		data_len;
	void		*reply;		/* a ring entry's free payload buffer (fuse_uring.c) */
	size_t		reply_cap;
} cur;

/*
 * Where this thread's requests land after their first WIRE_HEAD bytes (see
 * bfs_fuse_wire_read()): the thread's BFS_TBUF_FUSE_RX buffer (page-aligned,
 * kept for its next request, freed when the thread exits).
 */
#define WIRE_HEAD	(sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in))

bool bfs_fuse_wire_wanted(void)
{
	const char *v = getenv("BFS_FUSE_WIRE");

	return !v || strcmp(v, "0") != 0;
}

void bfs_fuse_wire_reset(void)
{
	atomic_store(&wire.killpriv, false);
	atomic_store(&wire.dio_mmap, false);
	atomic_store(&wire.offered, 0);
	memset(&cur, 0, sizeof(cur));
}

void *bfs_fuse_wire_reply_buf(size_t len)
{
	if (cur.data)
		return NULL;	/* it holds this request's data */
	if (cur.reply)
		return len <= cur.reply_cap ? cur.reply : NULL;
	return bfs_thread_buf(BFS_TBUF_FUSE_RX, len ? len : 1);
}

const void *bfs_fuse_wire_write_data(const void *buf, size_t size)
{
	if (cur.data && cur.opcode == FUSE_WRITE && buf == cur.data_in && size == cur.data_len)
		return cur.data;
	return buf;
}

bool bfs_fuse_wire_killpriv(void)
{
	return atomic_load(&wire.killpriv);
}

bool bfs_fuse_wire_dio_mmap(void)
{
	return atomic_load(&wire.dio_mmap);
}

unsigned bfs_fuse_wire_req_flags(void)
{
	return bfs_fuse_wire_killpriv() ? cur.flags : 0;
}

/* the u32 at @off of the request's argument, if the request is that long */
static bool arg_u32(const void *arg, size_t len, size_t off, uint32_t *v)
{
	if (len < off + sizeof(*v))
		return false;
	memcpy(v, (const char *)arg + off, sizeof(*v));
	return true;
}

static void note_init(const void *arg, size_t len)
{
	uint32_t flags = 0, flags2 = 0;
	uint64_t offered;

	arg_u32(arg, len, offsetof(struct fuse_init_in, flags), &flags);
	if (flags & FUSE_INIT_EXT)
		arg_u32(arg, len, offsetof(struct fuse_init_in, flags2), &flags2);
	offered = flags | (uint64_t)flags2 << 32;
	atomic_store(&wire.offered, offered);
}

static void note_request(const void *buf, size_t n)
{
	const struct fuse_in_header *in = buf;
	const void *arg = in + 1;
	size_t len = n - sizeof(*in);
	uint32_t v;

	cur.unique = in->unique;
	cur.opcode = in->opcode;
	cur.flags = 0;
	switch (in->opcode) {
	case FUSE_INIT:
		note_init(arg, len);
		break;
	case FUSE_WRITE:
		if (arg_u32(arg, len, offsetof(struct fuse_write_in, write_flags), &v) &&
		    (v & FUSE_WRITE_KILL_SUIDGID))
			cur.flags |= BFS_WIRE_KILL_SUIDGID;
		break;
	case FUSE_SETATTR:
		if (arg_u32(arg, len, offsetof(struct fuse_setattr_in, valid), &v) &&
		    (v & FATTR_KILL_SUIDGID))
			cur.flags |= BFS_WIRE_KILL_SUIDGID;
		break;
	case FUSE_OPEN:
		if (arg_u32(arg, len, offsetof(struct fuse_open_in, open_flags), &v) &&
		    (v & FUSE_OPEN_KILL_SUIDGID))
			cur.flags |= BFS_WIRE_KILL_SUIDGID;
		break;
	}
}

/*
 * A WRITE is its two headers (WIRE_HEAD bytes) and then the data, so the
 * data would sit WIRE_HEAD bytes into libfuse's buffer: not aligned for
 * O_DIRECT, and the device write would copy it into aligned memory first.
 * So every request is read in two pieces: the first WIRE_HEAD bytes into
 * libfuse's buffer, the rest into this thread's page-aligned rx buffer.  A
 * WRITE's data stays there (bfs_fuse_wire_write_data() gives it to the
 * write handler); anything else is copied after its head, where libfuse
 * expects it (requests other than WRITE are small).  The kernel writes
 * the iovecs as it would one buffer, so nothing is lost or moved.
 */
static ssize_t read_split(int fd, void *buf, size_t len)
{
	const struct fuse_in_header *in = buf;
	struct fuse_write_in w;
	struct iovec iov[2];
	size_t rest;
	ssize_t n;
	void *data;

	if (len <= WIRE_HEAD || !(data = bfs_thread_buf(BFS_TBUF_FUSE_RX, len - WIRE_HEAD)))
		return read(fd, buf, len);
	iov[0].iov_base = buf;
	iov[0].iov_len = WIRE_HEAD;
	iov[1].iov_base = data;
	iov[1].iov_len = len - WIRE_HEAD;
	n = readv(fd, iov, 2);
	if (n <= (ssize_t)WIRE_HEAD)
		return n;
	rest = (size_t)n - WIRE_HEAD;
	if (in->opcode == FUSE_WRITE && in->len == (uint32_t)n) {
		memcpy(&w, in + 1, sizeof(w));
		if (w.size == rest) {
			cur.data = data;
			cur.data_in = (const char *)buf + WIRE_HEAD;
			cur.data_len = rest;
			return n;
		}
	}
	memcpy((char *)buf + WIRE_HEAD, data, rest);
	return n;
}

ssize_t bfs_fuse_wire_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n;

	(void)userdata;
	cur.data = NULL;
	cur.reply = NULL;
	n = read_split(fd, buf, len);
	if (n >= (ssize_t)sizeof(struct fuse_in_header))
		note_request(buf, (size_t)n);
	else
		cur.unique = 0;
	return n;
}

void bfs_fuse_wire_note(const void *buf, size_t len, void *reply, size_t reply_cap)
{
	cur.data = NULL;
	cur.reply = reply;
	cur.reply_cap = reply_cap;
	note_request(buf, len);
}

/*
 * The INIT reply: add what the kernel offered and we want.  KILLPRIV_V2
 * needs nothing from libfuse; DIRECT_IO_ALLOW_MMAP keeps mmap(MAP_SHARED)
 * working on the direct_io opens (fuse_ops.c gives O_DIRECT opens
 * direct_io only when both are on, see want_direct_io()).
 * PARALLEL_DIROPS (lookups and listings of one directory at once, instead
 * of one at a time under the kernel's per-directory mutex): libfuse 3.14
 * wants it by default (FUSE_CAP_PARALLEL_DIROPS) but never puts it in the
 * reply; the filesystem layer locks for itself.
 */
#define WIRE_WANTED	(FUSE_HANDLE_KILLPRIV_V2 | FUSE_DIRECT_IO_ALLOW_MMAP | FUSE_PARALLEL_DIROPS)

static void adjust_init(struct fuse_init_out *o, size_t len)
{
	uint64_t offered = atomic_load(&wire.offered);
	uint64_t add = offered & WIRE_WANTED;

	if (bfs_fuse_uring_wanted())
		add |= offered & BFS_FUSE_OVER_IO_URING;

	if (len < offsetof(struct fuse_init_out, flags2) + sizeof(o->flags2) ||
	    !(o->flags & FUSE_INIT_EXT))
		add &= 0xffffffffULL;	/* no room for, or no agreement on, flags2 */
	o->flags |= (uint32_t)add;
	if (add >> 32)
		o->flags2 |= (uint32_t)(add >> 32);
	atomic_store(&wire.dio_mmap, (add & FUSE_DIRECT_IO_ALLOW_MMAP) != 0);
	atomic_store(&wire.killpriv, (add & FUSE_HANDLE_KILLPRIV_V2) != 0);
}

/* the INIT reply has gone: the ring queues can register now (fuse_uring.h) */
static void init_sent(const struct fuse_init_out *o, size_t len)
{
	uint64_t flags = o->flags;

	if (len >= offsetof(struct fuse_init_out, flags2) + sizeof(o->flags2) &&
	    (o->flags & FUSE_INIT_EXT))
		flags |= (uint64_t)o->flags2 << 32;
	bfs_fuse_uring_start(flags, o->max_write,
			     len >= offsetof(struct fuse_init_out, max_pages) + sizeof(o->max_pages) ?
			     o->max_pages : 0);
}

/* a reply: to the ring entry of the request it answers, else to /dev/fuse */
static ssize_t wire_send(int fd, struct iovec *iov, int count)
{
	ssize_t n;

	if (bfs_fuse_uring_send(iov, count, &n))
		return n;
	return writev(fd, iov, count);
}

/* OPEN and CREATE replies end with a struct fuse_open_out (after the entry, for CREATE) */
static void adjust_open(void *reply, size_t len)
{
	char *at = (char *)reply + len - sizeof(struct fuse_open_out);
	struct fuse_open_out o;

	memcpy(&o, at, sizeof(o));
	if (o.open_flags & FOPEN_DIRECT_IO)
		o.open_flags |= FOPEN_PARALLEL_DIRECT_WRITES;
	memcpy(at, &o, sizeof(o));
}

/*
 * libfuse hands over a header and (for these replies) one argument; the
 * argument is copied and the copy adjusted, libfuse's memory is not
 * written.
 */
ssize_t bfs_fuse_wire_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	union {
		struct fuse_init_out	init;
		char			bytes[512];
	} copy;
	struct iovec mine[2];
	size_t len;
	ssize_t n;

	(void)userdata;
	if (count != 2 || iov[0].iov_len != sizeof(*out) || out->error || !cur.unique ||
	    out->unique != cur.unique)
		return wire_send(fd, iov, count);
	len = iov[1].iov_len;
	switch (cur.opcode) {
	case FUSE_INIT:
		if (len > sizeof(copy) || len < offsetof(struct fuse_init_out, max_background))
			break;
		memset(&copy, 0, sizeof(copy));
		memcpy(&copy, iov[1].iov_base, len);
		adjust_init(&copy.init, len);
		mine[0] = iov[0];
		mine[1].iov_base = &copy;
		mine[1].iov_len = len;
		n = writev(fd, mine, 2);
		if (n >= 0)
			init_sent(&copy.init, len);
		return n;
	case FUSE_OPEN:
	case FUSE_CREATE:
		if (len > sizeof(copy) || len < sizeof(struct fuse_open_out))
			break;
		memcpy(&copy, iov[1].iov_base, len);
		adjust_open(&copy, len);
		goto send;
	}
	return wire_send(fd, iov, count);
send:
	mine[0] = iov[0];
	mine[1].iov_base = &copy;
	mine[1].iov_len = len;
	return wire_send(fd, mine, 2);
}
