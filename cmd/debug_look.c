// SPDX-License-Identifier: MIT
/*
 * bfs debug: reading the filesystem through fs.h (ls, cd, pwd, stat, cat,
 * dump, rdump, xattrs, extents).  Listings are sorted by name: readdir order
 * follows name hashes, which are seeded per filesystem, and transcripts must
 * not depend on the seed.
 */
#include "cmd.h"
#include "debug.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IO_CHUNK (256 * 1024)

struct dent {
	char	*name;
	u64	ino;
	u32	type;
};

struct dlist {
	struct dent *v;
	size_t	nr, cap;
	bool	dots;		/* keep "." and ".." */
	int	err;
};

static int dlist_add(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct dlist *l = ctx;

	if (!l->dots && ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2))))
		return 0;
	if (l->nr == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		struct dent *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->err = -ENOMEM;
			return 1;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->nr].name = strndup(name, len);
	if (!l->v[l->nr].name) {
		l->err = -ENOMEM;
		return 1;
	}
	l->v[l->nr].ino = ino;
	l->v[l->nr].type = type;
	l->nr++;
	return 0;
}

static int dent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dent *)a)->name, ((const struct dent *)b)->name);
}

static void dlist_free(struct dlist *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->v[i].name);
	free(l->v);
}

/* every entry of @dir, sorted by name */
static int read_dir(struct dbg *d, u64 dir, bool dots, struct dlist *l)
{
	int ret;

	*l = (struct dlist){ .dots = dots };
	ret = bfs_fs_readdir(d->fs, dir, 0, dlist_add, l);
	if (!ret)
		ret = l->err;
	if (ret) {
		dlist_free(l);
		return ret;
	}
	if (l->nr)
		qsort(l->v, l->nr, sizeof(*l->v), dent_cmp);
	return 0;
}

char **dbg_list_dir(struct dbg *d, u64 dir, bool mark_dirs)
{
	struct dlist l;
	char **out;
	size_t i;

	if (!d->fs || read_dir(d, dir, false, &l))
		return NULL;
	out = calloc(l.nr + 1, sizeof(*out));
	for (i = 0; out && i < l.nr; i++) {
		/* readdir types may be S_IFMT bits or DT_* values: accept both */
		bool isdir = mark_dirs && (l.v[i].type == S_IFDIR || l.v[i].type == S_IFDIR >> 12);

		if (isdir && asprintf(&out[i], "%s/", l.v[i].name) < 0)
			out[i] = NULL;
		else if (!isdir)
			out[i] = strdup(l.v[i].name);
	}
	dlist_free(&l);
	return out;
}

static void mode_string(u32 mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	out[0] = S_ISDIR(mode) ? 'd' : S_ISLNK(mode) ? 'l' : S_ISCHR(mode) ? 'c' :
		 S_ISBLK(mode) ? 'b' : S_ISFIFO(mode) ? 'p' : S_ISSOCK(mode) ? 's' : '-';
	for (i = 0; i < 9; i++)
		out[i + 1] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		out[3] = out[3] == 'x' ? 's' : 'S';
	if (mode & S_ISGID)
		out[6] = out[6] == 'x' ? 's' : 'S';
	if (mode & S_ISVTX)
		out[9] = out[9] == 'x' ? 't' : 'T';
	out[10] = '\0';
}

static int fail_errno(struct dbg *d, const char *what, int err)
{
	return dbg_err(d, "%s: %s", what, strerror(-err));
}

int dbg_cmd_ls(struct dbg *d, int argc, char **argv)
{
	const char *path = ".";
	bool lng = false;
	struct bfs_stat st;
	struct dlist l;
	u64 ino;
	size_t i;
	int a, ret;

	for (a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-l"))
			lng = true;
		else if (argv[a][0] == '-')
			return dbg_err(d, "unknown option '%s'", argv[a]);
		else
			path = argv[a];
	}
	ret = dbg_resolve(d, path, &ino, &st);
	if (ret)
		return fail_errno(d, path, ret);
	if (!S_ISDIR(st.mode))
		return dbg_err(d, "%s: not a directory", path);
	ret = read_dir(d, ino, lng, &l);
	if (ret)
		return fail_errno(d, path, ret);
	for (i = 0; i < l.nr; i++) {
		struct bfs_stat cst;
		char mode[11];

		if (!lng) {
			printf("%s\n", l.v[i].name);
			continue;
		}
		ret = bfs_fs_getattr(d->fs, l.v[i].ino, &cst);
		if (ret) {
			printf("%8" PRIu64 " ?????????? (%s) %s\n", l.v[i].ino, strerror(-ret),
			       l.v[i].name);
			continue;
		}
		mode_string(cst.mode, mode);
		printf("%8" PRIu64 " %s %5u %5u %5u %10" PRIu64 " %s", l.v[i].ino, mode, cst.nlink,
		       cst.uid, cst.gid, cst.size, l.v[i].name);
		if (S_ISLNK(cst.mode)) {
			char target[BFS_SYMLINK_MAX + 1];
			ssize_t n = bfs_fs_readlink(d->fs, l.v[i].ino, target, BFS_SYMLINK_MAX);

			if (n >= 0)
				printf(" -> %.*s", (int)n, target);
		}
		putchar('\n');
	}
	dlist_free(&l);
	return 0;
}

/* "/a/b" + "../c" -> "/a/c" */
static void join_path(char *cwd, size_t size, const char *rel)
{
	char buf[DBG_PATH_MAX];
	const char *p = rel;

	snprintf(buf, sizeof(buf), "%s", *rel == '/' ? "/" : cwd);
	while (*p) {
		const char *e;
		size_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		n = (size_t)(e - p);
		if (n == 1 && *p == '.') {
			;
		} else if (n == 2 && !memcmp(p, "..", 2)) {
			char *slash = strrchr(buf, '/');

			if (slash == buf)
				buf[1] = '\0';
			else if (slash)
				*slash = '\0';
		} else {
			size_t len = strlen(buf);

			snprintf(buf + len, sizeof(buf) - len, "%s%.*s", len > 1 ? "/" : "", (int)n, p);
		}
		p = e;
	}
	snprintf(cwd, size, "%s", buf);
}

int dbg_cmd_cd(struct dbg *d, int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/";
	struct bfs_stat st;
	u64 ino;
	int ret;

	ret = dbg_resolve(d, path, &ino, &st);
	if (ret)
		return fail_errno(d, path, ret);
	if (!S_ISDIR(st.mode))
		return dbg_err(d, "%s: not a directory", path);
	d->cwd = ino;
	if (*path == '<')
		snprintf(d->cwd_path, sizeof(d->cwd_path), "%s", path);
	else
		join_path(d->cwd_path, sizeof(d->cwd_path), path);
	return 0;
}

int dbg_cmd_pwd(struct dbg *d, int argc, char **argv)
{
	printf("%s (inode %" PRIu64 ")\n", d->cwd_path, d->cwd);
	return 0;
}

static const char *type_name(u32 mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	default: return "unknown";
	}
}

static void print_time(const char *name, struct timespec ts)
{
	char buf[64];

	/* tv_nsec is never negative: 1969-12-31 23:59:59 +500000000 ns is -0.5 s */
	printf("%-12s %s +%09ld ns\n", name, bfs_format_time_sec(ts.tv_sec, buf), ts.tv_nsec);
}

int dbg_cmd_stat(struct dbg *d, int argc, char **argv)
{
	struct bfs_stat st;
	char mode[11];
	u64 ino;
	int ret;

	ret = dbg_resolve(d, argv[1], &ino, &st);
	if (ret)
		return fail_errno(d, argv[1], ret);
	mode_string(st.mode, mode);
	printf("%-12s %" PRIu64 "\n", "inode:", st.ino);
	printf("%-12s %" PRIu64 "\n", "generation:", st.generation);
	printf("%-12s %s\n", "type:", type_name(st.mode));
	printf("%-12s %s (0%o)\n", "mode:", mode, st.mode & 07777);
	printf("%-12s %u\n", "links:", st.nlink);
	printf("%-12s %u\n", "uid:", st.uid);
	printf("%-12s %u\n", "gid:", st.gid);
	printf("%-12s %" PRIu64 "\n", "size:", st.size);
	printf("%-12s %" PRIu64 " (512-byte units)\n", "blocks:", st.blocks);
	printf("%-12s 0x%x%s%s%s%s\n", "flags:", st.flags,
	       st.flags & BFS_INODE_IMMUTABLE ? " immutable" : "",
	       st.flags & BFS_INODE_APPEND ? " append" : "",
	       st.flags & BFS_INODE_NODUMP ? " nodump" : "",
	       st.flags & BFS_INODE_NOATIME ? " noatime" : "");
	if (S_ISCHR(st.mode) || S_ISBLK(st.mode))
		printf("%-12s %" PRIu64 "\n", "rdev:", st.rdev);
	if (S_ISLNK(st.mode)) {
		char target[BFS_SYMLINK_MAX + 1];
		ssize_t n = bfs_fs_readlink(d->fs, ino, target, BFS_SYMLINK_MAX);

		if (n >= 0)
			printf("%-12s %.*s\n", "target:", (int)n, target);
	}
	print_time("atime:", st.atime);
	print_time("mtime:", st.mtime);
	print_time("ctime:", st.ctime);
	print_time("btime:", st.btime);
	return 0;
}

/* copy inode @ino to host fd @fd */
static int copy_out(struct dbg *d, u64 ino, u64 size, int fd)
{
	char *buf = malloc(IO_CHUNK);
	u64 off = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (off < size) {
		ssize_t n = bfs_fs_read(d->fs, ino, buf, IO_CHUNK, off);
		ssize_t w = 0;

		if (n < 0) {
			ret = (int)n;
			break;
		}
		if (!n)
			break;
		fflush(stdout);
		while (w < n) {
			ssize_t r = write(fd, buf + w, (size_t)(n - w));

			if (r < 0) {
				if (errno == EINTR)
					continue;
				ret = -errno;
				goto out;
			}
			w += r;
		}
		off += (u64)n;
	}
out:
	free(buf);
	return ret;
}

static int need_regular(struct dbg *d, const char *path, u64 *ino, struct bfs_stat *st)
{
	int ret = dbg_resolve(d, path, ino, st);

	if (ret)
		return fail_errno(d, path, ret);
	if (!S_ISREG(st->mode))
		return dbg_err(d, "%s: not a regular file", path);
	return 0;
}

int dbg_cmd_cat(struct dbg *d, int argc, char **argv)
{
	struct bfs_stat st;
	u64 ino;
	int ret;

	if (need_regular(d, argv[1], &ino, &st))
		return DBG_FAIL;
	fflush(stdout);
	ret = copy_out(d, ino, st.size, STDOUT_FILENO);
	if (ret)
		return fail_errno(d, argv[1], ret);
	return 0;
}

static int dump_file(struct dbg *d, u64 ino, const struct bfs_stat *st, const char *host)
{
	int fd = open(host, O_WRONLY | O_CREAT | O_TRUNC, st->mode & 0777);
	int ret;

	if (fd < 0)
		return -errno;
	ret = copy_out(d, ino, st->size, fd);
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

int dbg_cmd_dump(struct dbg *d, int argc, char **argv)
{
	struct bfs_stat st;
	u64 ino;
	int ret;

	if (need_regular(d, argv[1], &ino, &st))
		return DBG_FAIL;
	ret = dump_file(d, ino, &st, argv[2]);
	if (ret)
		return dbg_err(d, "%s -> %s: %s", argv[1], argv[2], strerror(-ret));
	return 0;
}

/* copy directory @dir into host directory @host (which exists) */
static int rdump_dir(struct dbg *d, u64 dir, const char *host, int depth)
{
	struct dlist l;
	size_t i;
	int failed = 0, ret;

	if (depth > 256)
		return dbg_err(d, "%s: directories nested too deeply", host);
	ret = read_dir(d, dir, false, &l);
	if (ret)
		return dbg_err(d, "reading directory %" PRIu64 ": %s", dir, strerror(-ret));
	for (i = 0; i < l.nr; i++) {
		struct bfs_stat st;
		char *path;

		if (asprintf(&path, "%s/%s", host, l.v[i].name) < 0) {
			failed = dbg_err(d, "out of memory");
			break;
		}
		ret = bfs_fs_getattr(d->fs, l.v[i].ino, &st);
		if (ret) {
			failed = dbg_err(d, "%s: %s", path, strerror(-ret));
		} else if (S_ISDIR(st.mode)) {
			if (mkdir(path, st.mode & 07777) && errno != EEXIST)
				failed = dbg_err(d, "mkdir %s: %s", path, strerror(errno));
			else if (rdump_dir(d, st.ino, path, depth + 1))
				failed = DBG_FAIL;
		} else if (S_ISREG(st.mode)) {
			ret = dump_file(d, st.ino, &st, path);
			if (ret)
				failed = dbg_err(d, "%s: %s", path, strerror(-ret));
		} else if (S_ISLNK(st.mode)) {
			char target[BFS_SYMLINK_MAX + 1];
			ssize_t n = bfs_fs_readlink(d->fs, st.ino, target, BFS_SYMLINK_MAX);

			if (n < 0) {
				failed = dbg_err(d, "%s: %s", path, strerror((int)-n));
			} else {
				target[n] = '\0';
				if (symlink(target, path))
					failed = dbg_err(d, "symlink %s: %s", path, strerror(errno));
			}
		} else {
			fflush(stdout);
			fprintf(stderr, "%s: %s: %s skipped\n", d->cmd, path, type_name(st.mode));
		}
		free(path);
	}
	dlist_free(&l);
	return failed;
}

int dbg_cmd_rdump(struct dbg *d, int argc, char **argv)
{
	struct bfs_stat st;
	u64 ino;
	int ret;

	ret = dbg_resolve(d, argv[1], &ino, &st);
	if (ret)
		return fail_errno(d, argv[1], ret);
	if (!S_ISDIR(st.mode))
		return dbg_err(d, "%s: not a directory", argv[1]);
	if (mkdir(argv[2], 0755) && errno != EEXIST)
		return dbg_err(d, "mkdir %s: %s", argv[2], strerror(errno));
	return rdump_dir(d, ino, argv[2], 0);
}

static void print_value(const u8 *v, size_t n)
{
	size_t i;
	bool text = true;

	for (i = 0; i < n; i++)
		if ((v[i] < 0x20 || v[i] > 0x7e) && !(i == n - 1 && !v[i]))
			text = false;
	if (text) {
		printf("\"%.*s\"", (int)(n && !v[n - 1] ? n - 1 : n), (const char *)v);
		return;
	}
	printf("0x");
	for (i = 0; i < n; i++)
		printf("%02x", v[i]);
}

int dbg_cmd_xattrs(struct dbg *d, int argc, char **argv)
{
	char *names = NULL, *name;
	u8 *value = NULL;
	struct dlist sorted = { 0 };
	ssize_t n;
	u64 ino;
	size_t i;
	int ret, failed = 0;

	ret = dbg_resolve(d, argv[1], &ino, NULL);
	if (ret)
		return fail_errno(d, argv[1], ret);
	n = bfs_fs_listxattr(d->fs, ino, NULL, 0);
	if (n < 0)
		return fail_errno(d, argv[1], (int)n);
	names = malloc((size_t)n + 1);
	value = malloc(BFS_XATTR_SIZE_MAX);
	if (!names || !value) {
		failed = dbg_err(d, "out of memory");
		goto out;
	}
	n = bfs_fs_listxattr(d->fs, ino, names, (size_t)n);
	if (n < 0) {
		failed = fail_errno(d, argv[1], (int)n);
		goto out;
	}
	/* sorted, so the order does not depend on the name hash seed */
	for (name = names; name < names + n; name += strlen(name) + 1)
		if (dlist_add(&sorted, name, strlen(name), 0, 0, 0))
			break;
	if (sorted.nr)
		qsort(sorted.v, sorted.nr, sizeof(*sorted.v), dent_cmp);
	for (i = 0; i < sorted.nr; i++) {
		ssize_t len = bfs_fs_getxattr(d->fs, ino, sorted.v[i].name, value,
					      BFS_XATTR_SIZE_MAX);

		if (len < 0) {
			failed = dbg_err(d, "%s: %s", sorted.v[i].name, strerror((int)-len));
			continue;
		}
		printf("%s (%zd bytes) = ", sorted.v[i].name, len);
		print_value(value, (size_t)len);
		putchar('\n');
	}
	printf("%zu xattr%s\n", sorted.nr, sorted.nr == 1 ? "" : "s");
out:
	dlist_free(&sorted);
	free(names);
	free(value);
	return failed;
}

static int print_extent(void *ctx, const struct bfs_fs_extent *e)
{
	u64 *n = ctx;
	char flags[64];

	snprintf(flags, sizeof(flags), "%s%s%s", !e->physical && !e->flags ? "hole " : "",
		 e->flags & BFS_EXTENT_COMPRESSED ? "compressed " : "",
		 e->flags & BFS_EXTENT_UNWRITTEN ? "unwritten " : "");
	if (*flags)
		flags[strlen(flags) - 1] = '\0';
	printf("%12" PRIu64 " %12" PRIu64 " %14" PRIu64 "  %s\n", e->logical, e->len, e->physical,
	       *flags ? flags : "-");
	(*n)++;
	return 0;
}

int dbg_cmd_extents(struct dbg *d, int argc, char **argv)
{
	u64 ino, n = 0;
	int ret;

	ret = dbg_resolve(d, argv[1], &ino, NULL);
	if (ret)
		return fail_errno(d, argv[1], ret);
	printf("%12s %12s %14s  %s\n", "logical", "length", "physical", "flags");
	ret = bfs_fs_map(d->fs, ino, print_extent, &n);
	if (ret)
		return fail_errno(d, argv[1], ret);
	printf("%" PRIu64 " extent%s\n", n, n == 1 ? "" : "s");
	return 0;
}
