// SPDX-License-Identifier: MIT
/*
 * bfs-fsimage: fill a formatted image with files, and read every file back,
 * for the fsck convergence harness (tests/damage/converge.sh).
 *
 * usage: bfs-fsimage populate [--seed N] [--files N] [--unclean] IMAGE
 *        bfs-fsimage manifest IMAGE
 *
 * populate makes directories, regular files of many sizes (empty, small,
 * several 64 KiB data chunks, sparse, compressible and incompressible),
 * symlinks, a hard link and xattrs, deterministically from the seed.  Half
 * of it is written, the filesystem closed and reopened (so older node
 * versions stay on disk), then the rest.  --unclean makes the second half
 * durable in the journal only and exits without closing, as a crash would,
 * so the next open has a journal to replay.
 *
 * manifest opens the image read-only through the filesystem layer (what the
 * mount uses; the journal is replayed in memory), walks the namespace from
 * the root and prints one line per name (depth first, each directory sorted
 * by name):
 *   KIND INO NLINK SIZE HASH PATH
 * KIND is f (regular), d, l (symlink) or o (other); HASH is the XXH64 of the
 * file's content (of a symlink's target; "-" for directories), or the error
 * that reading it gave ("EIO").  A file larger than 64 MiB is not read
 * (hash "TOOBIG"): a damaged size must not make the harness read for hours.
 * Exit status: 0, or 1 if the filesystem cannot be opened at all.
 */
#include <bfs/fs.h>
#include <bfs/log.h>
#include <bfs/os.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#define READ_CAP	(64ULL << 20)
#define MAX_DEPTH	32

static void log_quiet(enum bfs_log_level level, const char *msg, void *ctx)
{
	if (level == BFS_LOG_ERR && getenv("BFS_FSIMAGE_VERBOSE"))
		fprintf(stderr, "bfs-fsimage: %s\n", msg);
}

/* splitmix64: the same stream on every host for a seed */
static u64 rnd_next(u64 *s)
{
	u64 z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u64 rnd_below(u64 *s, u64 n)
{
	return n ? rnd_next(s) % n : 0;
}

/* ---- populate ---- */

static const struct bfs_creds creds = { 0, 0 };

static const u32 sizes[] = {
	0, 1, 37, 511, 4096, 4097, 12000, 65536, 65537, 131072 + 100, 200000, 300001,
};

static void fill(u64 *s, u8 *buf, size_t len)
{
	size_t i;

	if (rnd_below(s, 2)) {		/* compressible: repeated text */
		static const char txt[] = "the quick brown bfs jumps over the lazy btree; ";

		for (i = 0; i < len; i++)
			buf[i] = (u8)txt[(i + len) % (sizeof(txt) - 1)];
		return;
	}
	for (i = 0; i + 8 <= len; i += 8) {
		u64 v = rnd_next(s);

		memcpy(buf + i, &v, 8);
	}
	for (; i < len; i++)
		buf[i] = (u8)rnd_next(s);
}

static int make_file(struct bfs_fs *fs, u64 *s, u64 dir, const char *name, u8 *buf)
{
	size_t len = sizes[rnd_below(s, ARRAY_SIZE(sizes))];
	bool sparse = len > 8192 && rnd_below(s, 4) == 0;
	struct bfs_stat st;
	ssize_t n;
	int ret;

	ret = bfs_fs_mknod(fs, dir, name, strlen(name), S_IFREG | 0644, 0, &creds, &st);
	if (ret)
		return ret;
	fill(s, buf, len);
	if (sparse) {
		/* a hole in the middle: two separate writes */
		n = bfs_fs_write(fs, st.ino, buf, 4096, 0);
		if (n == 4096)
			n = bfs_fs_write(fs, st.ino, buf + len - 4096, 4096, len - 4096);
		if (n >= 0)
			memset(buf + 4096, 0, len - 8192);
		if (n == 4096)
			n = (ssize_t)len;
	} else {
		n = len ? bfs_fs_write(fs, st.ino, buf, len, 0) : 0;
	}
	if (n < 0)
		return (int)n;
	if ((size_t)n != len)
		return -EIO;
	if (rnd_below(s, 3) == 0)
		ret = bfs_fs_setxattr(fs, st.ino, "user.tag", name, strlen(name), 0);
	return ret;
}

static int populate_some(struct bfs_fs *fs, u64 *s, unsigned first, unsigned nr,
			 const u64 *dirs, unsigned nr_dirs, u8 *buf)
{
	char name[64], target[64];
	struct bfs_stat st;
	unsigned i;
	int ret = 0;

	for (i = first; i < first + nr && !ret; i++) {
		u64 dir = dirs[rnd_below(s, nr_dirs)];

		snprintf(name, sizeof(name), "file%03u", i);
		ret = make_file(fs, s, dir, name, buf);
		if (!ret && i % 7 == 3) {
			snprintf(name, sizeof(name), "link%03u", i);
			snprintf(target, sizeof(target), "../file%03u", i - 1);
			ret = bfs_fs_symlink(fs, dir, name, strlen(name), target, &creds, &st);
		}
		if (!ret && i % 11 == 5) {
			/* a second name for the file just made */
			snprintf(name, sizeof(name), "file%03u", i);
			ret = bfs_fs_lookup(fs, dir, name, strlen(name), &st);
			snprintf(name, sizeof(name), "hard%03u", i);
			if (!ret)
				ret = bfs_fs_link(fs, st.ino, dirs[0], name, strlen(name), &st);
		}
	}
	return ret;
}

static int populate(const char *path, u64 seed, unsigned files, bool unclean)
{
	u64 s = seed, dirs[8];
	unsigned nr_dirs = 1, half = files / 2;
	struct bfs_stat st;
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	char name[16];
	u8 *buf;
	int ret;

	buf = malloc(sizeof(u8) * 300001);
	if (!buf)
		return -ENOMEM;
	ret = bfs_dev_open(path, BFS_DEV_EXCL, &dev);
	if (ret)
		goto out_free;
	ret = bfs_fs_open(dev, NULL, &fs);
	if (ret)
		goto out_dev;
	dirs[0] = BFS_ROOT_INO;
	for (; nr_dirs < ARRAY_SIZE(dirs) && !ret; nr_dirs++) {
		/* a chain and a fan: d1, d1/d2, d3, ... */
		snprintf(name, sizeof(name), "d%u", nr_dirs);
		ret = bfs_fs_mkdir(fs, dirs[nr_dirs % 2 ? 0 : nr_dirs - 1], name, strlen(name),
				   0755, &creds, &st);
		dirs[nr_dirs] = st.ino;
	}
	if (!ret)
		ret = populate_some(fs, &s, 0, half, dirs, nr_dirs, buf);
	if (ret) {
		bfs_fs_close(fs);
		goto out_dev;
	}
	ret = bfs_fs_close(fs);
	if (!ret)
		ret = bfs_fs_open(dev, NULL, &fs);
	if (ret)
		goto out_dev;
	ret = populate_some(fs, &s, half, files - half, dirs, nr_dirs, buf);
	if (!ret && unclean) {
		/* durable in the journal only: leave without closing, as a crash would */
		ret = bfs_fs_sync(fs);
		if (!ret)
			exit(0);
	}
	if (bfs_fs_close(fs) && !ret)
		ret = -EIO;
out_dev:
	bfs_dev_close(dev);
out_free:
	free(buf);
	return ret;
}

/* ---- manifest ---- */

struct ent {
	char	*path;
	u64	ino;
};

struct walk {
	struct bfs_fs *fs;
	struct ent *e;
	size_t nr, cap;
	const char *dir_path;
	u64	dirs_seen[4096];
	size_t nr_dirs_seen;
};

static int collect(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct walk *w = ctx;
	size_t plen;

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	if (w->nr == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct ent *e = realloc(w->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		w->e = e;
		w->cap = cap;
	}
	plen = strlen(w->dir_path);
	w->e[w->nr].path = malloc(plen + len + 2);
	if (!w->e[w->nr].path)
		return -ENOMEM;
	snprintf(w->e[w->nr].path, plen + len + 2, "%s/%.*s",
		 strcmp(w->dir_path, "/") ? w->dir_path : "", (int)len, name);
	w->e[w->nr++].ino = ino;
	return 0;
}

static const char *err_name(int err)
{
	switch (err) {
	case EIO: return "EIO";
	case EUCLEAN: return "EUCLEAN";
	case ENOENT: return "ENOENT";
	case ENOMEM: return "ENOMEM";
	case EFBIG: return "EFBIG";
	case EINVAL: return "EINVAL";
	default: return "EOTHER";
	}
}

static void hash_file(struct bfs_fs *fs, const struct bfs_stat *st, char *out, size_t len)
{
	static u8 buf[65536];
	XXH64_state_t *h;
	u64 off = 0;
	ssize_t n;

	if (st->size > READ_CAP) {
		snprintf(out, len, "TOOBIG");
		return;
	}
	h = XXH64_createState();
	XXH64_reset(h, 0);
	while (off < st->size) {
		n = bfs_fs_read(fs, st->ino, buf, sizeof(buf), off);
		if (n < 0) {
			snprintf(out, len, "%s", err_name((int)-n));
			XXH64_freeState(h);
			return;
		}
		if (n == 0)
			break;	/* short file: the size will not match */
		XXH64_update(h, buf, (size_t)n);
		off += (u64)n;
	}
	snprintf(out, len, "%016llx", (unsigned long long)XXH64_digest(h));
	XXH64_freeState(h);
}

static int ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->path, ((const struct ent *)b)->path);
}

static void walk_dir(struct walk *w, u64 dir, const char *path, int depth)
{
	size_t first = w->nr, i, nr;
	struct bfs_stat st;
	char hash[32];
	ssize_t n;
	int ret;

	for (i = 0; i < w->nr_dirs_seen; i++)
		if (w->dirs_seen[i] == dir)
			return;		/* a directory cycle: damage, not ours to loop on */
	if (w->nr_dirs_seen < ARRAY_SIZE(w->dirs_seen))
		w->dirs_seen[w->nr_dirs_seen++] = dir;
	if (depth > MAX_DEPTH)
		return;
	w->dir_path = path;
	ret = bfs_fs_readdir(w->fs, dir, 0, collect, w);
	if (ret)
		printf("d %llu - - %s %s/\n", (unsigned long long)dir, err_name(-ret), path);
	nr = w->nr - first;
	qsort(w->e + first, nr, sizeof(*w->e), ent_cmp);
	for (i = first; i < first + nr; i++) {
		/* w->e moves when deeper directories add entries: index it each time */
		u64 ino = w->e[i].ino;
		char kind = 'o';

		ret = bfs_fs_getattr(w->fs, ino, &st);
		if (ret) {
			printf("? %llu - - %s %s\n", (unsigned long long)ino, err_name(-ret),
			       w->e[i].path);
			continue;
		}
		snprintf(hash, sizeof(hash), "-");
		if (S_ISREG(st.mode)) {
			kind = 'f';
			hash_file(w->fs, &st, hash, sizeof(hash));
		} else if (S_ISLNK(st.mode)) {
			char target[4096];

			kind = 'l';
			n = bfs_fs_readlink(w->fs, ino, target, sizeof(target));
			if (n < 0)
				snprintf(hash, sizeof(hash), "%s", err_name((int)-n));
			else
				snprintf(hash, sizeof(hash), "%016llx",
					 (unsigned long long)XXH64(target, (size_t)n, 0));
		} else if (S_ISDIR(st.mode)) {
			kind = 'd';
		}
		printf("%c %llu %u %llu %s %s\n", kind, (unsigned long long)ino, st.nlink,
		       (unsigned long long)(kind == 'd' ? 0 : st.size), hash, w->e[i].path);
		if (kind == 'd') {
			char *sub = strdup(w->e[i].path);

			if (sub) {
				walk_dir(w, ino, sub, depth + 1);
				free(sub);
			}
		}
	}
}

static int manifest(const char *path)
{
	struct walk w = { 0 };
	struct bfs_dev *dev;
	size_t i;
	int ret;

	ret = bfs_dev_open(path, BFS_DEV_RDONLY, &dev);
	if (ret)
		return ret;
	ret = bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &w.fs);
	if (ret) {
		bfs_dev_close(dev);
		return ret;
	}
	walk_dir(&w, BFS_ROOT_INO, "/", 0);
	for (i = 0; i < w.nr; i++)
		free(w.e[i].path);
	free(w.e);
	bfs_fs_close(w.fs);
	bfs_dev_close(dev);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: bfs-fsimage populate [--seed N] [--files N] [--unclean] IMAGE\n"
			"       bfs-fsimage manifest IMAGE\n");
	return 2;
}

int main(int argc, char **argv)
{
	unsigned files = 40;
	bool unclean = false;
	u64 seed = 1;
	int i, ret;

	bfs_log_set_hook(log_quiet, NULL);
	if (argc < 3)
		return usage();
	for (i = 2; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc - 1)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--files") && i + 1 < argc - 1)
			files = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--unclean"))
			unclean = true;
		else
			return usage();
	}
	if (!strcmp(argv[1], "populate")) {
		ret = populate(argv[argc - 1], seed, files, unclean);
	} else if (!strcmp(argv[1], "manifest") && argc == 3) {
		ret = manifest(argv[2]);
	} else {
		return usage();
	}
	if (ret) {
		fprintf(stderr, "bfs-fsimage: %s %s: %s\n", argv[1], argv[argc - 1], strerror(-ret));
		return 1;
	}
	return 0;
}
