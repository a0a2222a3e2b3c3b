// SPDX-License-Identifier: MIT
/*
 * bfs debug: parsing of command arguments (positions, btree and key type
 * names, numbers) and resolving paths inside the image through fs.h.
 */
#include "debug.h"

#include <bfs/btree.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int dbg_err(struct dbg *d, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", d->cmd ? d->cmd : "bfs debug");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return DBG_FAIL;
}

/* the same syntax as bfs dump-btree --start */
int dbg_parse_pos(const char *s, struct bfs_bpos *p)
{
	return bfs_bpos_parse(s, p);
}

const char *dbg_pos_text(struct bfs_bpos p, char buf[64])
{
	if (bfs_bpos_eq(p, BFS_POS_MIN))
		return strcpy(buf, "min");
	bfs_bpos_to_text(buf, 64, p);
	return buf;
}

const char *const dbg_btree_names[] = {
#define x(n, nr, name) [nr] = name,
	BFS_BTREE_IDS(x)
#undef x
	[BFS_BTREE_NR] = NULL,
};

int dbg_parse_btree(const char *s)
{
	unsigned id;
	u64 v;

	for (id = 0; id < BFS_BTREE_NR; id++)
		if (!strcmp(s, bfs_btree_id_name(id)))
			return (int)id;
	if (!dbg_parse_u64(s, &v) && v < BFS_BTREE_NR)
		return (int)v;
	return -1;
}

int dbg_parse_key_type(const char *s)
{
	unsigned t;
	u64 v;

	for (t = 0; t < BFS_KEY_TYPE_NR; t++)
		if (bfs_bkey_type_ops(t) && !strcmp(s, bfs_bkey_type_name(t)))
			return (int)t;
	if (!dbg_parse_u64(s, &v) && v < BFS_KEY_TYPE_NR)
		return (int)v;
	return -1;
}

int dbg_parse_u64(const char *s, u64 *v)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	return 0;
}

static int parse_inum(const char *s, u64 *ino)
{
	size_t len = strlen(s);
	char buf[32];

	if (len < 3 || s[len - 1] != '>' || len - 2 >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s + 1, len - 2);
	buf[len - 2] = '\0';
	return dbg_parse_u64(buf, ino);
}

int dbg_resolve(struct dbg *d, const char *path, u64 *ino, struct bfs_stat *st)
{
	struct bfs_stat s;
	const char *p = path, *e;
	u64 cur;
	int ret;

	if (*path == '<') {
		if (parse_inum(path, &cur))
			return -EINVAL;
		ret = bfs_fs_getattr(d->fs, cur, &s);
		goto out;
	}
	cur = *path == '/' ? BFS_ROOT_INO : d->cwd;
	ret = bfs_fs_getattr(d->fs, cur, &s);
	while (!ret && *p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		if ((size_t)(e - p) > BFS_NAME_MAX)
			return -ENAMETOOLONG;
		if (!S_ISDIR(s.mode))
			return -ENOTDIR;
		ret = bfs_fs_lookup(d->fs, cur, p, (size_t)(e - p), &s);
		cur = s.ino;
		p = e;
	}
out:
	if (ret)
		return ret;
	*ino = cur;
	if (st)
		*st = s;
	return 0;
}

int dbg_resolve_parent(struct dbg *d, const char *path, u64 *dir, const char **name,
		       size_t *len)
{
	char buf[DBG_PATH_MAX];
	size_t n = strlen(path);
	struct bfs_stat st;
	char *slash;
	int ret;

	while (n > 1 && path[n - 1] == '/')
		n--;
	if (!n || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, n);
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash) {
		*name = path;
		*len = n;
		*dir = d->cwd;
		return 0;
	}
	*name = path + (slash + 1 - buf);
	*len = n - (size_t)(slash + 1 - buf);
	if (!*len)
		return -EINVAL;		/* "/" itself */
	if (*len > BFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (slash == buf)
		slash[1] = '\0';	/* parent is / */
	else
		*slash = '\0';
	ret = dbg_resolve(d, buf, dir, &st);
	if (!ret && !S_ISDIR(st.mode))
		ret = -ENOTDIR;
	return ret;
}

/* set-inode: what bfs_fs_setattr can change */
const char *const dbg_inode_fields[] = {
	"mode", "uid", "gid", "size", "flags", "atime", "mtime", "ctime",
	"nlink", "generation", "sectors", "parent", NULL
};
