// SPDX-License-Identifier: MIT
/*
 * bfs-dio-race: buffered reads racing AIO direct writes, as xfstests'
 * generic/451 (aio-dio-cycle-write) does, without xfstests.  Two reader
 * processes read FILE through buffered opens in a loop while the main one
 * writes all of it with one AIO O_DIRECT write, alternating two patterns,
 * and after each write's completion reads it back through a new buffered
 * open: a page the readers filled while the write was in flight must not
 * be what that read returns.
 *
 * usage: bfs-dio-race FILE SECONDS
 * exit 0: no stale read in SECONDS; 1: a stale read (reported); 2: error.
 * AIO by raw syscalls (io_setup, io_submit, io_getevents): no libaio.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIZE	655360	/* generic/451's FSIZE */
#define READERS	2

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void reader(const char *path, char *buf)
{
	for (;;) {
		int fd = open(path, O_RDONLY);

		if (fd >= 0) {
			if (pread(fd, buf, SIZE, 0) < 0)
				_exit(2);
			close(fd);
		}
	}
}

static int aio_write_all(aio_context_t ctx, const char *path, const char *buf)
{
	struct iocb cb = { 0 }, *cbs[1] = { &cb };
	struct io_event ev;
	int fd = open(path, O_RDWR | O_DIRECT);

	if (fd < 0)
		return -errno;
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_fildes = (unsigned)fd;
	cb.aio_buf = (unsigned long)buf;
	cb.aio_nbytes = SIZE;
	if (syscall(SYS_io_submit, ctx, 1L, cbs) != 1 ||
	    syscall(SYS_io_getevents, ctx, 1L, 1L, &ev, NULL) != 1) {
		close(fd);
		return -errno;
	}
	close(fd);
	return ev.res == SIZE ? 0 : ev.res < 0 ? (int)ev.res : -EIO;
}

static int read_back(const char *path, char *got)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, got, SIZE, 0);
	close(fd);
	return n == SIZE ? 0 : n < 0 ? -errno : -EIO;
}

int main(int argc, char **argv)
{
	aio_context_t ctx = 0;
	pid_t pids[READERS];
	char *pat[2], *got;
	double end;
	long rounds = 0;
	int i, ret = 0, fd;

	if (argc != 3) {
		fprintf(stderr, "usage: bfs-dio-race FILE SECONDS\n");
		return 2;
	}
	end = now() + atof(argv[2]);
	for (i = 0; i < 2; i++) {
		if (posix_memalign((void **)&pat[i], 4096, SIZE))
			return 2;
		memset(pat[i], i ? 0x55 : 0xaa, SIZE);
	}
	got = malloc(SIZE);
	fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (!got || fd < 0 || pwrite(fd, pat[1], SIZE, 0) != SIZE || fsync(fd) || close(fd)) {
		perror(argv[1]);
		return 2;
	}
	if (syscall(SYS_io_setup, 16L, &ctx)) {
		perror("io_setup");
		return 2;
	}
	for (i = 0; i < READERS; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			reader(argv[1], got);
	}
	while (!ret && now() < end) {
		const char *want = pat[rounds % 2];

		ret = aio_write_all(ctx, argv[1], want);
		if (!ret)
			ret = read_back(argv[1], got);
		if (ret) {
			fprintf(stderr, "round %ld: %s\n", rounds, strerror(-ret));
			ret = 2;
		} else if (memcmp(got, want, SIZE)) {
			for (i = 0; got[i] == want[i]; i++)
				;
			fprintf(stderr, "stale data from a buffered read after an AIO direct write, "
				"round %ld: byte %d of %d reads 0x%02x, wrote 0x%02x\n",
				rounds, i, SIZE, (unsigned char)got[i], (unsigned char)want[i]);
			ret = 1;
		}
		rounds++;
	}
	for (i = 0; i < READERS; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	syscall(SYS_io_destroy, ctx);
	if (!ret)
		printf("%ld AIO direct writes, each read back through a new buffered open\n", rounds);
	return ret;
}
