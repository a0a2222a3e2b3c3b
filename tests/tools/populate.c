// SPDX-License-Identifier: MIT
/*
 * bfs-populate: fill a formatted image through the filesystem layer with
 * directories, files (with a little data), hard links, symlinks and xattrs
 * whose names and values all contain "secret", so that a test can grep an
 * obfuscated dump for them.
 *
 * usage: bfs-populate IMAGE NFILES [--unclean]
 * NFILES files spread over NFILES/50 + 1 directories; every 7th file gets a
 * symlink, every 5th a user and a trusted xattr (every 25th a 5000-byte
 * value that needs continuation keys), every 11th a second link.  Names
 * have every length from 1 to 60 bytes past the "secret" prefix.
 * --unclean syncs but skips the clean close: the journal needs replay.
 */
#include <bfs/fs.h>
#include <bfs/log.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void log_stderr(enum bfs_log_level level, const char *msg, void *ctx)
{
	fprintf(stderr, "bfs-populate: %s\n", msg);
}

#define CHECK(expr) do { int _r = (int)(expr); if (_r < 0) { \
	fprintf(stderr, "bfs-populate: %s: %s\n", #expr, strerror(-_r)); exit(1); } } while (0)

static const char *name_of(char *buf, size_t size, const char *what, unsigned i)
{
	/* lengths vary: padding of (i % 61) letters */
	int n = snprintf(buf, size, "secret%s%u", what, i);
	unsigned pad = i % 61;

	while (pad-- && (size_t)n + 1 < size)
		buf[n++] = (char)('a' + pad % 26);
	buf[n] = 0;
	return buf;
}

#define N(what, i)	name, strlen(name_of(name, sizeof(name), what, i))

int main(int argc, char **argv)
{
	struct bfs_creds cr = { 1000, 1000 };
	struct bfs_stat st, dst;
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	unsigned n, i, ndirs;
	u64 *dirs;
	char name[128], target[256], value[5000];

	if (argc < 3) {
		fprintf(stderr, "usage: bfs-populate IMAGE NFILES [--unclean]\n");
		return 2;
	}
	bfs_log_set_hook(log_stderr, NULL);
	n = (unsigned)strtoul(argv[2], NULL, 10);
	ndirs = n / 50 + 1;
	dirs = calloc(ndirs, sizeof(*dirs));
	if (!dirs)
		return 1;
	CHECK(bfs_dev_open(argv[1], BFS_DEV_EXCL, &dev));
	CHECK(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs));
	for (i = 0; i < ndirs; i++) {
		CHECK(bfs_fs_mkdir(fs, i ? dirs[(i - 1) / 4] : BFS_ROOT_INO,
				   N("dir", i), 0755, &cr, &st));
		dirs[i] = st.ino;
	}
	for (i = 0; i < n; i++) {
		u64 dir = dirs[i % ndirs];

		CHECK(bfs_fs_mknod(fs, dir, N("file", i),
				   S_IFREG | 0644, 0, &cr, &st));
		if (i % 3 == 0) {
			snprintf(value, sizeof(value), "secretcontent of file %u\n", i);
			CHECK(bfs_fs_write(fs, st.ino, value, strlen(value), 0));
		}
		if (i % 5 == 0) {
			size_t len = i % 25 == 0 ? sizeof(value) : 40;

			memset(value, 'v', sizeof(value));
			for (size_t k = 0; k + 12 <= len; k += 64)
				memcpy(value + k, "secretvalue-", 12);
			name_of(name, sizeof(name), "attr", i);
			snprintf(target, sizeof(target), "user.%s", name);
			CHECK(bfs_fs_setxattr(fs, st.ino, target, value, len, 0));
			CHECK(bfs_fs_setxattr(fs, st.ino, "trusted.kept", value, 40, 0));
		}
		if (i % 11 == 0)
			CHECK(bfs_fs_link(fs, st.ino, dirs[(i + 1) % ndirs],
					  N("link", i), &dst));
		if (i % 7 == 0) {
			snprintf(target, sizeof(target), "../secretdir%u/secrettarget%u", i % ndirs, i);
			CHECK(bfs_fs_symlink(fs, dir, N("sym", i),
					     target, &cr, &st));
		}
	}
	/* some churn: removed names leave whiteouts and stale copies */
	for (i = 0; i < n; i += 13)
		CHECK(bfs_fs_unlink(fs, dirs[i % ndirs], N("file", i)));
	free(dirs);
	if (argc > 3 && !strcmp(argv[3], "--unclean")) {
		CHECK(bfs_fs_sync(fs));
		/* no close: exit with the journal holding what the nodes do not */
		return 0;
	}
	CHECK(bfs_fs_close(fs));
	bfs_dev_close(dev);
	return 0;
}
