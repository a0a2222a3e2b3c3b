// SPDX-License-Identifier: MIT
/* Pieces shared by the benchmarks: generators, the image file, counts. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

u64 bench_mix64(u64 z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

u64 bench_stream_seed(u64 seed, unsigned a, unsigned b)
{
	return bench_mix64(seed ^ ((u64)a << 32) ^ (b + 1));
}

static const char *volatile image_to_remove;

static void remove_on_signal(int sig)
{
	if (image_to_remove)
		unlink(image_to_remove);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(const char *image)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	size_t i;

	image_to_remove = image;
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		signal(sigs[i], image ? remove_on_signal : SIG_DFL);
}

int bench_image_create(const struct bfs_cmd *cmd, const char *opt, const char *tag, char **path)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	if (opt) {
		*path = strdup(opt);
		fd = *path ? open(*path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
		if (fd < 0) {
			int err = errno;

			free(*path);
			*path = NULL;
			return bfs_cmd_error(cmd, "cannot create '%s': %s", opt,
					     err == EEXIST ? "it exists (the benchmark only "
					     "uses an image it creates)" : strerror(err));
		}
	} else {
		if (asprintf(path, "%s/%s-XXXXXX", dir && *dir ? dir : "/tmp", tag) < 0) {
			*path = NULL;
			return bfs_cmd_error(cmd, "out of memory");
		}
		fd = mkstemp(*path);
		if (fd < 0) {
			int ret = bfs_cmd_error(cmd, "cannot create '%s': %s", *path,
						strerror(errno));

			free(*path);
			*path = NULL;
			return ret;
		}
	}
	close(fd);
	catch_signals(*path);
	return 0;
}

void bench_image_remove(char **path)
{
	catch_signals(NULL);
	if (*path)
		unlink(*path);
	free(*path);
	*path = NULL;
}

u64 bench_per_sec(u64 n, u64 ns)
{
	return ns ? (u64)((double)n * 1e9 / (double)ns) : 0;
}

u64 bench_ns_per_op(u64 ns, u64 ops)
{
	return ops ? (ns + ops / 2) / ops : 0;
}

int bench_parse_count(const char *s, u64 min, u64 max, u64 *out)
{
	unsigned long long v, mult = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (*end == 'k' || *end == 'K')
		mult = 1000, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1000000, end++;
	else if (*end == 'g' || *end == 'G')
		mult = 1000000000, end++;
	if (*end || v > UINT64_MAX / mult || v * mult < min || v * mult > max)
		return -EINVAL;
	*out = v * mult;
	return 0;
}

int bench_opt_refused(const struct bfs_cmd *cmd, const struct bfs_opt *row, const char *bench)
{
	if (!row)
		return bfs_cmd_usage_error(cmd, "bad option");
	if (row->name)
		return bfs_cmd_usage_error(cmd, "option '--%s' does not apply to 'bench %s'",
					   row->name, bench);
	return bfs_cmd_usage_error(cmd, "option '-%c' does not apply to 'bench %s'", row->letter,
				   bench);
}
