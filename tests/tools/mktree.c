// SPDX-License-Identifier: MIT
/*
 * bfs-mktree: one generated tree of small files, written either into a
 * formatted bfs image (through the filesystem API, in-process: fast enough
 * for millions of files) or into a host directory (for mkfs.ext4 -d), so
 * bench/fsck-vs-e2fsck checks the same tree on both.
 *
 * usage: bfs-mktree [--empty] IMAGE NFILES [SEED]
 *        bfs-mktree [--empty] --dir DIR NFILES [SEED]
 *
 * --empty makes every file empty: only inodes and entries, so a tree of
 * ten million files fits a few GiB (the memory measurements of
 * doc/benchmarks.md at 10M).
 *
 * Layout: /tree/gGGGG/dDD/fNN: 50 files per directory, 16 directories per
 * group.  Sizes from a splitmix64 stream: 1 to 4096 bytes (median 2 KiB).
 */
#include <bfs/dev.h>
#include <bfs/fs.h>
#include <bfs/log.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILES_PER_DIR	50
#define DIRS_PER_GROUP	16
#define MAX_SIZE	4096

static u64 splitmix64(u64 *s)
{
	u64 z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* where the tree goes: the two back ends */
struct sink {
	int (*mkdir)(struct sink *s, u64 parent, const char *name, u64 *ino);
	int (*file)(struct sink *s, u64 dir, const char *name, const void *data, size_t len);
	struct bfs_fs *fs;
	char *root;	/* --dir: host paths are built from the inode "numbers" below */
	char **paths;
	size_t nr_paths;
};

static void log_stderr(enum bfs_log_level level, const char *msg, void *ctx)
{
	if (level != BFS_LOG_DEBUG)
		fprintf(stderr, "bfs-mktree: %s\n", msg);
}

static const struct bfs_creds creds = { 0, 0 };

static int fs_mkdir(struct sink *s, u64 parent, const char *name, u64 *ino)
{
	struct bfs_stat st;
	int ret = bfs_fs_mkdir(s->fs, parent, name, strlen(name), 0755, &creds, &st);

	*ino = st.ino;
	return ret;
}

static int fs_file(struct sink *s, u64 dir, const char *name, const void *data, size_t len)
{
	struct bfs_stat st;
	ssize_t n;
	int ret = bfs_fs_mknod(s->fs, dir, name, strlen(name), S_IFREG | 0644, 0, &creds, &st);

	if (ret || !len)
		return ret;
	n = bfs_fs_write(s->fs, st.ino, data, len, 0);
	return n < 0 ? (int)n : (size_t)n == len ? 0 : -EIO;
}

/* host directories are named by index into s->paths (index 0: the root) */
static int dir_mkdir(struct sink *s, u64 parent, const char *name, u64 *ino)
{
	char **n = realloc(s->paths, (s->nr_paths + 1) * sizeof(*n));
	char *path;

	if (!n)
		return -ENOMEM;
	s->paths = n;
	if (asprintf(&path, "%s/%s", s->paths[parent], name) < 0)
		return -ENOMEM;
	if (mkdir(path, 0755) && errno != EEXIST) {
		free(path);
		return -errno;
	}
	s->paths[s->nr_paths] = path;
	*ino = s->nr_paths++;
	return 0;
}

static int dir_file(struct sink *s, u64 dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", s->paths[dir], name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len)
		ret = -EIO;
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

static int make_tree(struct sink *s, u64 root, u64 nfiles, u64 seed, bool empty)
{
	static char data[MAX_SIZE];
	u64 tree, group = 0, dir = 0, i, rnd = seed;
	char name[32];
	int ret;

	memset(data, 'x', sizeof(data));
	ret = s->mkdir(s, root, "tree", &tree);
	for (i = 0; !ret && i < nfiles; i++) {
		if (i % (FILES_PER_DIR * DIRS_PER_GROUP) == 0) {
			snprintf(name, sizeof(name), "g%04llu",
				 (unsigned long long)(i / (FILES_PER_DIR * DIRS_PER_GROUP)));
			ret = s->mkdir(s, tree, name, &group);
		}
		if (!ret && i % FILES_PER_DIR == 0) {
			snprintf(name, sizeof(name), "d%02llu",
				 (unsigned long long)(i / FILES_PER_DIR % DIRS_PER_GROUP));
			ret = s->mkdir(s, group, name, &dir);
		}
		if (ret)
			break;
		snprintf(name, sizeof(name), "f%02llu", (unsigned long long)(i % FILES_PER_DIR));
		ret = s->file(s, dir, name, data, empty ? 0 : 1 + splitmix64(&rnd) % MAX_SIZE);
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct sink s = { 0 };
	const char *target;
	u64 nfiles, seed;
	bool empty = argc > 1 && !strcmp(argv[1], "--empty"), to_dir;
	struct bfs_dev *dev = NULL;
	int ret;

	argc -= empty;
	argv += empty;
	to_dir = argc > 1 && !strcmp(argv[1], "--dir");
	if (argc - to_dir < 3 || argc - to_dir > 4) {
		fprintf(stderr, "usage: bfs-mktree [--empty] IMAGE NFILES [SEED]\n"
			"       bfs-mktree [--empty] --dir DIR NFILES [SEED]\n");
		return 2;
	}
	target = argv[1 + to_dir];
	nfiles = strtoull(argv[2 + to_dir], NULL, 0);
	seed = argc - to_dir > 3 ? strtoull(argv[3 + to_dir], NULL, 0) : 1;
	bfs_log_set_hook(log_stderr, NULL);
	if (to_dir) {
		s.mkdir = dir_mkdir;
		s.file = dir_file;
		s.paths = malloc(sizeof(*s.paths));
		if (!s.paths || !(s.paths[0] = strdup(target)))
			return 1;
		s.nr_paths = 1;
		ret = make_tree(&s, 0, nfiles, seed, empty);
	} else {
		struct bfs_fs_opts opts = { 0 };

		s.mkdir = fs_mkdir;
		s.file = fs_file;
		ret = bfs_dev_open(target, BFS_DEV_EXCL, &dev);
		if (!ret)
			ret = bfs_fs_open(dev, &opts, &s.fs);
		if (!ret) {
			int r;

			ret = make_tree(&s, BFS_ROOT_INO, nfiles, seed, empty);
			r = bfs_fs_close(s.fs);
			ret = ret ? ret : r;
		}
		if (dev)
			bfs_dev_close(dev);
	}
	if (ret) {
		fprintf(stderr, "bfs-mktree: %s: %s\n", target, strerror(-ret));
		return 1;
	}
	return 0;
}
