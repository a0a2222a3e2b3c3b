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
 * With "mmap", no buffered open at all: the readers map FILE through
 * O_DIRECT descriptors and read the mapping (each fault a page-cache fill
 * through a direct_io open), and the read-back is through a new such
 * mapping.
 *
 * usage: bfs-dio-race FILE SECONDS [mmap]
 * exit 0: no stale read in SECONDS; 1: a stale read (reported); 2: error.
 * AIO by raw syscalls (io_setup, io_submit, io_getevents): no libaio.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* a shared mapping through an O_DIRECT descriptor, or NULL */
static volatile char *map_direct(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECT);
	void *m;

	if (fd < 0)
		return NULL;
	m = mmap(NULL, SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

/* a page of the mapping a direct write dropped faults in again when read */
static void map_reader(const char *path)
{
	volatile char *m = map_direct(path);
	unsigned sum = 0;
	size_t i;

	if (!m)
		_exit(2);
	for (;;)
		for (i = 0; i < SIZE; i += 4096)
			sum += (unsigned char)m[i];
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

static int read_back(const char *path, char *got, bool map)
{
	int fd;
	ssize_t n;

	if (map) {
		volatile char *m = map_direct(path);

		if (!m)
			return -errno;
		for (n = 0; n < SIZE; n++)
			got[n] = m[n];
		munmap((void *)m, SIZE);
		return 0;
	}
	fd = open(path, O_RDONLY);
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
	bool map = argc == 4 && !strcmp(argv[3], "mmap");

	if (argc != 3 && !map) {
		fprintf(stderr, "usage: bfs-dio-race FILE SECONDS [mmap]\n");
		return 2;
	}
	end = now() + atof(argv[2]);
	for (i = 0; i < 2; i++) {
		if (posix_memalign((void **)&pat[i], 4096, SIZE))
			return 2;
		memset(pat[i], i ? 0x55 : 0xaa, SIZE);
	}
	got = malloc(SIZE);
	/* in mmap mode by O_DIRECT too: not one buffered open of FILE */
	fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY | (map ? O_DIRECT : 0), 0644);
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
		if (pids[i] == 0 && map)
			map_reader(argv[1]);
		else if (pids[i] == 0)
			reader(argv[1], got);
	}
	while (!ret && now() < end) {
		const char *want = pat[rounds % 2];

		ret = aio_write_all(ctx, argv[1], want);
		if (!ret)
			ret = read_back(argv[1], got, map);
		if (ret) {
			fprintf(stderr, "round %ld: %s\n", rounds, strerror(-ret));
			ret = 2;
		} else if (memcmp(got, want, SIZE)) {
			for (i = 0; got[i] == want[i]; i++)
				;
			fprintf(stderr, "stale data from a %s after an AIO direct write, "
				"round %ld: byte %d of %d reads 0x%02x, wrote 0x%02x\n",
				map ? "mapping" : "buffered read", rounds, i, SIZE,
				(unsigned char)got[i], (unsigned char)want[i]);
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
		printf("%ld AIO direct writes, each read back through a new %s\n", rounds,
		       map ? "mapping of an O_DIRECT open" : "buffered open");
	return ret;
}
