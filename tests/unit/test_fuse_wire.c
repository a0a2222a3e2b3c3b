// SPDX-License-Identifier: MIT
/*
 * The /dev/fuse shim of bfs mount (cmd/fuse_wire.c) over a socket pair that
 * stands for the kernel: what INIT negotiates, which raw replies change and
 * how, and that the kill flags of a request reach only the thread that read
 * it (the thread libfuse then serves it on).
 */
#include "unit.h"

#include <bfs/types.h>

#include "../../cmd/fuse_wire.c"

#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>

static int kern = -1, dev = -1;	/* the kernel's end, the daemon's end */

/*
 * cmd/fuse_uring.c, as the shim sees it: whether INIT asks for the ring,
 * what the INIT reply said, and which replies the ring takes
 */
static bool stub_uring_wanted;
static int stub_uring_started;
static u64 stub_uring_flags;
static u32 stub_uring_max_write;
static u64 stub_uring_unique;	/* the ring takes replies to this request */
static int stub_uring_sent;

bool bfs_fuse_uring_wanted(void)
{
	return stub_uring_wanted;
}

void bfs_fuse_uring_start(uint64_t flags, uint32_t max_write, uint32_t max_pages)
{
	(void)max_pages;
	stub_uring_started++;
	stub_uring_flags = flags;
	stub_uring_max_write = max_write;
}

bool bfs_fuse_uring_send(const struct iovec *iov, int count, ssize_t *ret)
{
	const struct fuse_out_header *out = iov[0].iov_base;

	if (!stub_uring_unique || out->unique != stub_uring_unique)
		return false;
	stub_uring_sent++;
	*ret = (ssize_t)(iov[0].iov_len + (count > 1 ? iov[1].iov_len : 0));
	return true;
}

static void pair_open(void)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	kern = sv[0];
	dev = sv[1];
	bfs_fuse_wire_reset();
	stub_uring_wanted = false;
	stub_uring_started = stub_uring_sent = 0;
	stub_uring_flags = stub_uring_unique = 0;
	stub_uring_max_write = 0;
}

static void pair_close(void)
{
	close(kern);
	close(dev);
}

/* the kernel sends a request: header and @len bytes of argument; the shim reads it */
static void request(u32 opcode, u64 unique, const void *arg, size_t len)
{
	char buf[512], got[512];
	struct fuse_in_header in = {
		.len = (u32)(sizeof(in) + len), .opcode = opcode, .unique = unique, .nodeid = 1,
	};

	memcpy(buf, &in, sizeof(in));
	memcpy(buf + sizeof(in), arg, len);
	ck_assert_int_eq(write(kern, buf, in.len), (ssize_t)in.len);
	ck_assert_int_eq(bfs_fuse_wire_read(dev, got, sizeof(got), NULL), (ssize_t)in.len);
	ck_assert(memcmp(got, buf, in.len) == 0);	/* passed on unchanged */
}

/* the daemon replies to @unique with @arg; returns what the kernel gets, in @out */
static size_t reply(u64 unique, int error, void *arg, size_t len, void *out)
{
	struct fuse_out_header oh = {
		.len = (u32)(sizeof(oh) + len), .error = error, .unique = unique,
	};
	struct iovec iov[2] = { { &oh, sizeof(oh) }, { arg, len } };
	char buf[512], before[512];
	ssize_t n;

	if (len)	/* an error reply has no argument: @arg may be NULL */
		memcpy(before, arg, len);
	ck_assert_int_eq(bfs_fuse_wire_writev(dev, iov, len ? 2 : 1, NULL), (ssize_t)oh.len);
	ck_assert(!len || memcmp(before, arg, len) == 0);	/* libfuse's memory is not written */
	n = read(kern, buf, sizeof(buf));
	ck_assert_int_eq(n, (ssize_t)oh.len);
	ck_assert(memcmp(buf, &oh, sizeof(oh)) == 0);
	memcpy(out, buf + sizeof(oh), len);
	return (size_t)n - sizeof(oh);
}

/* INIT as a 7.45 kernel sends it, offering @flags (flags2 when above 32 bits) */
static void init(u64 offered, u32 reply_flags, struct fuse_init_out *got)
{
	struct fuse_init_in in = {
		.major = 7, .minor = 45, .flags = (u32)offered | FUSE_INIT_EXT,
		.flags2 = (u32)(offered >> 32),
	};
	struct fuse_init_out out = { .major = 7, .minor = 38, .flags = reply_flags,
				     .max_write = 1 << 20 };

	request(FUSE_INIT, 2, &in, sizeof(in));
	ck_assert_uint_eq(reply(2, 0, &out, sizeof(out), got), sizeof(out));
}

START_TEST(test_init_adds_what_was_offered)
{
	struct fuse_init_out got;

	pair_open();
	init(FUSE_ASYNC_READ | FUSE_HANDLE_KILLPRIV_V2 | FUSE_DIRECT_IO_ALLOW_MMAP |
	     FUSE_PARALLEL_DIROPS | FUSE_POSIX_LOCKS, FUSE_ASYNC_READ | FUSE_INIT_EXT, &got);
	/* not POSIX_LOCKS: only what the shim is for */
	ck_assert_uint_eq(got.flags, FUSE_ASYNC_READ | FUSE_INIT_EXT | FUSE_HANDLE_KILLPRIV_V2 |
				     FUSE_PARALLEL_DIROPS);
	ck_assert_uint_eq(got.flags2, (u32)(FUSE_DIRECT_IO_ALLOW_MMAP >> 32));
	ck_assert_uint_eq(got.minor, 38);	/* nothing else moves */
	ck_assert(bfs_fuse_wire_killpriv());
	ck_assert(bfs_fuse_wire_dio_mmap());
	pair_close();
}
END_TEST

START_TEST(test_init_uring)
{
	struct fuse_init_out got;

	pair_open();
	/* wanted and offered: in the reply, and the ring starts with the reply's flags */
	stub_uring_wanted = true;
	init(FUSE_ASYNC_READ | BFS_FUSE_OVER_IO_URING, FUSE_ASYNC_READ | FUSE_INIT_EXT, &got);
	ck_assert_uint_eq(got.flags2, (u32)(BFS_FUSE_OVER_IO_URING >> 32));
	ck_assert_int_eq(stub_uring_started, 1);
	ck_assert(stub_uring_flags & BFS_FUSE_OVER_IO_URING);
	ck_assert_uint_eq(stub_uring_max_write, 1 << 20);
	pair_close();

	/* wanted, not offered (the kernel parameter is N): not asked for */
	pair_open();
	stub_uring_wanted = true;
	init(FUSE_ASYNC_READ, FUSE_ASYNC_READ | FUSE_INIT_EXT, &got);
	ck_assert_uint_eq(got.flags2, 0);
	ck_assert_int_eq(stub_uring_started, 1);
	ck_assert(!(stub_uring_flags & BFS_FUSE_OVER_IO_URING));
	pair_close();

	/* offered, not wanted (-o nouring) */
	pair_open();
	init(FUSE_ASYNC_READ | BFS_FUSE_OVER_IO_URING, FUSE_ASYNC_READ | FUSE_INIT_EXT, &got);
	ck_assert_uint_eq(got.flags2, 0);
	ck_assert(!(stub_uring_flags & BFS_FUSE_OVER_IO_URING));
	pair_close();
}
END_TEST

/* a reply the ring takes does not reach /dev/fuse; the others do */
START_TEST(test_uring_replies)
{
	struct fuse_out_header oh = { .len = sizeof(oh), .error = -ENOENT, .unique = 7 };
	struct iovec iov[1] = { { &oh, sizeof(oh) } };
	struct fuse_open_out o = { .fh = 1 }, got;
	char buf[64];

	pair_open();
	stub_uring_unique = 7;
	ck_assert_int_eq(bfs_fuse_wire_writev(dev, iov, 1, NULL), (ssize_t)sizeof(oh));
	ck_assert_int_eq(stub_uring_sent, 1);
	ck_assert_int_eq(recv(kern, buf, sizeof(buf), MSG_DONTWAIT), -1);
	/* an adjusted reply (OPEN) goes the same way */
	bfs_fuse_wire_note(&(struct fuse_in_header){ .len = 40, .opcode = FUSE_OPEN, .unique = 7 },
			   sizeof(struct fuse_in_header), NULL, 0);
	oh.error = 0;
	oh.len = sizeof(oh) + sizeof(o);
	{
		struct iovec two[2] = { { &oh, sizeof(oh) }, { &o, sizeof(o) } };

		ck_assert_int_eq(bfs_fuse_wire_writev(dev, two, 2, NULL), (ssize_t)oh.len);
	}
	ck_assert_int_eq(stub_uring_sent, 2);
	ck_assert_int_eq(recv(kern, buf, sizeof(buf), MSG_DONTWAIT), -1);
	/* another request's reply (a notification, an interrupt's): /dev/fuse */
	stub_uring_unique = 8;
	request(FUSE_OPEN, 9, &(struct fuse_open_in){ 0 }, sizeof(struct fuse_open_in));
	ck_assert_uint_eq(reply(9, 0, &o, sizeof(o), &got), sizeof(o));
	ck_assert_int_eq(stub_uring_sent, 2);
	pair_close();
}
END_TEST

/* a ring request lends its free payload buffer to a READ's reply */
START_TEST(test_uring_reply_buf)
{
	static char payload[8192] __attribute__((aligned(4096)));
	struct fuse_in_header in = { .len = 80, .opcode = FUSE_READ, .unique = 3 };

	pair_open();
	bfs_fuse_wire_note(&in, in.len, payload, sizeof(payload));
	ck_assert_ptr_eq(bfs_fuse_wire_reply_buf(4096), payload);
	ck_assert_ptr_eq(bfs_fuse_wire_reply_buf(sizeof(payload)), payload);
	ck_assert_ptr_null(bfs_fuse_wire_reply_buf(sizeof(payload) + 1));
	/* no buffer lent (the payload holds the request): the thread's own */
	bfs_fuse_wire_note(&in, in.len, NULL, 0);
	ck_assert_ptr_ne(bfs_fuse_wire_reply_buf(4096), payload);
	pair_close();
}
END_TEST

START_TEST(test_init_without_offer)
{
	struct fuse_init_out got;
	struct fuse_write_in w = { .size = 4, .write_flags = FUSE_WRITE_KILL_SUIDGID };

	pair_open();
	/* an older kernel: neither flag offered, the reply is libfuse's */
	init(FUSE_ASYNC_READ, FUSE_ASYNC_READ | FUSE_INIT_EXT, &got);
	ck_assert_uint_eq(got.flags, FUSE_ASYNC_READ | FUSE_INIT_EXT);
	ck_assert_uint_eq(got.flags2, 0);
	ck_assert(!bfs_fuse_wire_killpriv());
	ck_assert(!bfs_fuse_wire_dio_mmap());
	/* the kernel then clears set-ID bits itself: the flag is not passed on */
	request(FUSE_WRITE, 10, &w, sizeof(w));
	ck_assert_uint_eq(bfs_fuse_wire_req_flags(), 0);
	pair_close();
}
END_TEST

START_TEST(test_init_flags2_needs_init_ext)
{
	struct fuse_init_out got;

	pair_open();
	/* libfuse did not agree on FUSE_INIT_EXT: no flags2 in the reply */
	init(FUSE_HANDLE_KILLPRIV_V2 | FUSE_DIRECT_IO_ALLOW_MMAP, FUSE_ASYNC_READ, &got);
	ck_assert_uint_eq(got.flags, FUSE_ASYNC_READ | FUSE_HANDLE_KILLPRIV_V2);
	ck_assert_uint_eq(got.flags2, 0);
	ck_assert(bfs_fuse_wire_killpriv());
	ck_assert(!bfs_fuse_wire_dio_mmap());
	pair_close();
}
END_TEST

static void *other_thread(void *arg)
{
	unsigned *seen = arg;

	*seen = bfs_fuse_wire_req_flags();
	return NULL;
}

START_TEST(test_kill_flags_per_thread)
{
	struct fuse_write_in w = { .size = 4, .write_flags = FUSE_WRITE_KILL_SUIDGID };
	struct fuse_write_in plain = { .size = 4 };
	struct fuse_setattr_in sa = { .valid = FATTR_SIZE | FATTR_KILL_SUIDGID };
	struct fuse_open_in op = { .flags = O_WRONLY | O_TRUNC, .open_flags = FUSE_OPEN_KILL_SUIDGID };
	struct fuse_init_out got;
	unsigned seen = ~0U;
	pthread_t t;

	pair_open();
	init(FUSE_HANDLE_KILLPRIV_V2, FUSE_INIT_EXT, &got);
	request(FUSE_WRITE, 10, &w, sizeof(w));
	ck_assert_uint_eq(bfs_fuse_wire_req_flags(), BFS_WIRE_KILL_SUIDGID);
	/* a thread serving another request does not see this one's flags */
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, &seen), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(seen, 0);
	/* the next request on this thread replaces them */
	request(FUSE_WRITE, 12, &plain, sizeof(plain));
	ck_assert_uint_eq(bfs_fuse_wire_req_flags(), 0);
	request(FUSE_SETATTR, 14, &sa, sizeof(sa));
	ck_assert_uint_eq(bfs_fuse_wire_req_flags(), BFS_WIRE_KILL_SUIDGID);
	request(FUSE_OPEN, 16, &op, sizeof(op));
	ck_assert_uint_eq(bfs_fuse_wire_req_flags(), BFS_WIRE_KILL_SUIDGID);
	/* a request too short to hold the field: no flag read past its end */
	request(FUSE_WRITE, 18, &w, offsetof(struct fuse_write_in, write_flags));
	ck_assert_uint_eq(bfs_fuse_wire_req_flags(), 0);
	/* opcodes that carry no such flag */
	request(FUSE_GETATTR, 20, &w, sizeof(w));
	ck_assert_uint_eq(bfs_fuse_wire_req_flags(), 0);
	pair_close();
}
END_TEST

START_TEST(test_open_replies)
{
	struct fuse_open_in op = { .flags = O_RDWR | O_DIRECT };
	struct fuse_create_in cr = { .flags = O_RDWR | O_CREAT, .mode = 0644 };
	struct fuse_open_out oo = { .fh = 7, .open_flags = FOPEN_DIRECT_IO | FOPEN_NOFLUSH }, og;
	struct fuse_open_out cached = { .open_flags = FOPEN_KEEP_CACHE };
	struct {
		struct fuse_entry_out	e;
		struct fuse_open_out	o;
	} cre = { .e = { .nodeid = 5 }, .o = { .open_flags = FOPEN_DIRECT_IO } }, cg;
	struct fuse_init_out got;

	pair_open();
	init(FUSE_HANDLE_KILLPRIV_V2, FUSE_INIT_EXT, &got);
	request(FUSE_OPEN, 30, &op, sizeof(op));
	reply(30, 0, &oo, sizeof(oo), &og);
	ck_assert_uint_eq(og.open_flags, FOPEN_DIRECT_IO | FOPEN_NOFLUSH | FOPEN_PARALLEL_DIRECT_WRITES);
	ck_assert_uint_eq(og.fh, 7);
	/* a cached open stays as it was */
	request(FUSE_OPEN, 32, &op, sizeof(op));
	reply(32, 0, &cached, sizeof(cached), &og);
	ck_assert_uint_eq(og.open_flags, FOPEN_KEEP_CACHE);
	/* CREATE: the open_out after the entry */
	request(FUSE_CREATE, 34, &cr, sizeof(cr));
	reply(34, 0, &cre, sizeof(cre), &cg);
	ck_assert_uint_eq(cg.o.open_flags, FOPEN_DIRECT_IO | FOPEN_PARALLEL_DIRECT_WRITES);
	ck_assert_uint_eq(cg.e.nodeid, 5);
	/* a reply to another request (a notification, another thread's) is not touched */
	request(FUSE_OPEN, 36, &op, sizeof(op));
	reply(0, 0, &oo, sizeof(oo), &og);
	ck_assert_uint_eq(og.open_flags, FOPEN_DIRECT_IO | FOPEN_NOFLUSH);
	reply(99, 0, &oo, sizeof(oo), &og);
	ck_assert_uint_eq(og.open_flags, FOPEN_DIRECT_IO | FOPEN_NOFLUSH);
	/* an error reply: header only */
	request(FUSE_OPEN, 38, &op, sizeof(op));
	reply(38, -ENOENT, NULL, 0, &og);
	pair_close();
}
END_TEST

/*
 * The kernel sends @opcode with @arg (@len bytes) and @data (@dlen bytes);
 * the shim reads it into @got (@cap bytes, libfuse's buffer).  Returns the
 * bytes read.
 */
static ssize_t request_data(u32 opcode, u64 unique, const void *arg, size_t len,
			    const void *data, size_t dlen, char *got, size_t cap)
{
	struct fuse_in_header in = {
		.len = (u32)(sizeof(in) + len + dlen), .opcode = opcode, .unique = unique, .nodeid = 1,
	};
	struct iovec iov[3] = { { &in, sizeof(in) }, { (void *)arg, len }, { (void *)data, dlen } };

	ck_assert_int_eq(writev(kern, iov, 3), (ssize_t)in.len);
	return bfs_fuse_wire_read(dev, got, cap, NULL);
}

static void *data_elsewhere(void *arg)
{
	const char *in_buf = arg;

	/* another thread never gets this thread's data */
	return (void *)bfs_fuse_wire_write_data(in_buf, 1);
}

START_TEST(test_write_data_aligned)
{
	enum { CAP = 80 * 1024, N = 64 * 1024 + 13 };
	const size_t head = sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in);
	struct fuse_write_in w = { .offset = 4096, .size = N };
	struct fuse_write_in liar = { .size = 100 };
	struct fuse_setxattr_in sx = { .size = 5000 };
	char *got = malloc(CAP), *data = malloc(N), *at = got + head;
	const char *p;
	struct fuse_init_out ig;
	void *other;
	pthread_t t;

	ck_assert(got && data);
	for (size_t i = 0; i < N; i++)
		data[i] = (char)(i * 7 + 3);
	pair_open();
	init(FUSE_HANDLE_KILLPRIV_V2, FUSE_INIT_EXT, &ig);
	/* a WRITE: the headers where libfuse reads them, the data page-aligned aside */
	ck_assert_int_eq(request_data(FUSE_WRITE, 40, &w, sizeof(w), data, N, got, CAP),
			 (ssize_t)(head + N));
	ck_assert_uint_eq(((struct fuse_in_header *)got)->unique, 40);
	ck_assert(memcmp(got + sizeof(struct fuse_in_header), &w, sizeof(w)) == 0);
	p = bfs_fuse_wire_write_data(at, N);
	ck_assert_ptr_ne(p, at);
	ck_assert_uint_eq((uintptr_t)p % 4096, 0);
	ck_assert(memcmp(p, data, N) == 0);
	/* only for libfuse's pointer and size of that data */
	ck_assert_ptr_eq(bfs_fuse_wire_write_data(at, N - 1), at);
	ck_assert_ptr_eq(bfs_fuse_wire_write_data(got, N), got);
	ck_assert_int_eq(pthread_create(&t, NULL, data_elsewhere, at), 0);
	ck_assert_int_eq(pthread_join(t, &other), 0);
	ck_assert_ptr_eq(other, at);
	/* anything else arrives whole in libfuse's buffer, and forgets the data */
	ck_assert_int_eq(request_data(FUSE_SETXATTR, 42, &sx, sizeof(sx), data, 5000, got, CAP),
			 (ssize_t)(sizeof(struct fuse_in_header) + sizeof(sx) + 5000));
	ck_assert(memcmp(got + sizeof(struct fuse_in_header), &sx, sizeof(sx)) == 0);
	ck_assert(memcmp(got + sizeof(struct fuse_in_header) + sizeof(sx), data, 5000) == 0);
	ck_assert_ptr_eq(bfs_fuse_wire_write_data(at, N), at);
	/* a WRITE whose size is not what follows it: whole in libfuse's buffer, for libfuse to judge */
	ck_assert_int_eq(request_data(FUSE_WRITE, 44, &liar, sizeof(liar), data, 300, got, CAP),
			 (ssize_t)(head + 300));
	ck_assert(memcmp(at, data, 300) == 0);
	ck_assert_ptr_eq(bfs_fuse_wire_write_data(at, 100), at);
	ck_assert_ptr_eq(bfs_fuse_wire_write_data(at, 300), at);
	/* a WRITE of nothing, and one into a buffer too small to split: nothing aside */
	ck_assert_int_eq(request_data(FUSE_WRITE, 46, &liar, sizeof(liar), NULL, 0, got, CAP),
			 (ssize_t)head);
	ck_assert_ptr_eq(bfs_fuse_wire_write_data(at, 0), at);
	w.size = 4;
	/* (a socket truncates what does not fit; /dev/fuse would refuse the read) */
	ck_assert_int_eq(request_data(FUSE_WRITE, 48, &w, sizeof(w), data, 4, got, head),
			 (ssize_t)head);
	ck_assert_ptr_eq(bfs_fuse_wire_write_data(at, 4), at);
	pair_close();
	free(got);
	free(data);
}
END_TEST

START_TEST(test_reply_buf)
{
	enum { CAP = 80 * 1024, N = 8192 };
	const size_t head = sizeof(struct fuse_in_header) + sizeof(struct fuse_write_in);
	struct fuse_read_in r = { .offset = 0, .size = 4096 };
	struct fuse_write_in w = { .size = N };
	char *got = malloc(CAP), *data = calloc(1, N);
	const void *wd;
	char *p, *q;

	ck_assert(got && data);
	pair_open();
	/* a READ leaves the receive buffer free: it is the reply's, aligned, and kept */
	request_data(FUSE_READ, 50, &r, sizeof(r), NULL, 0, got, CAP);
	p = bfs_fuse_wire_reply_buf(4096);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % 4096, 0);
	memset(p, 0xa5, 4096);
	ck_assert_ptr_eq(bfs_fuse_wire_reply_buf(0), p);
	/* a WRITE's data is in it: no reply buffer while that data is served */
	request_data(FUSE_WRITE, 52, &w, sizeof(w), data, N, got, CAP);
	wd = bfs_fuse_wire_write_data(got + head, N);
	ck_assert_ptr_eq(wd, p);
	ck_assert(memcmp(wd, data, N) == 0);
	ck_assert_ptr_null(bfs_fuse_wire_reply_buf(16));
	/* the next request frees it again; more than it holds: a larger one */
	request_data(FUSE_READ, 54, &r, sizeof(r), NULL, 0, got, CAP);
	q = bfs_fuse_wire_reply_buf(4 << 20);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq((uintptr_t)q % 4096, 0);
	memset(q, 0x5a, 4 << 20);
	pair_close();
	free(got);
	free(data);
}
END_TEST

START_TEST(test_wanted)
{
	unsetenv("BFS_FUSE_WIRE");
	ck_assert(bfs_fuse_wire_wanted());
	setenv("BFS_FUSE_WIRE", "0", 1);
	ck_assert(!bfs_fuse_wire_wanted());
	setenv("BFS_FUSE_WIRE", "1", 1);
	ck_assert(bfs_fuse_wire_wanted());
	unsetenv("BFS_FUSE_WIRE");
}
END_TEST

static Suite *fuse_wire_suite(void)
{
	Suite *s = suite_create("fuse_wire");
	TCase *tc = tcase_create("fuse_wire");

	tcase_add_test(tc, test_init_adds_what_was_offered);
	tcase_add_test(tc, test_init_without_offer);
	tcase_add_test(tc, test_init_uring);
	tcase_add_test(tc, test_uring_replies);
	tcase_add_test(tc, test_uring_reply_buf);
	tcase_add_test(tc, test_init_flags2_needs_init_ext);
	tcase_add_test(tc, test_kill_flags_per_thread);
	tcase_add_test(tc, test_open_replies);
	tcase_add_test(tc, test_write_data_aligned);
	tcase_add_test(tc, test_reply_buf);
	tcase_add_test(tc, test_wanted);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(fuse_wire_suite)
