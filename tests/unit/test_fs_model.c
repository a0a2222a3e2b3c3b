// SPDX-License-Identifier: MIT
/*
 * Randomized operation tester for the filesystem layer (the idea behind fsx
 * and the xfstests "random ops" tests): long random sequences of create,
 * mkdir, write, read, truncate, punch, rename (all forms), link, unlink,
 * rmdir, symlink, setxattr/removexattr, fsync and close-and-reopen run
 * against bfs and against an in-memory model.  Every result (return value,
 * errno, data read) must match the model, and after every reopen the whole
 * tree (names, types, link counts, sizes, contents, symlink targets, xattrs)
 * is compared.
 *
 * Each seed formats with a data chunk size of its own (64, 4, 16, 32, 8 KiB
 * in turn), so partial overwrites of small and large chunks are compared.
 *
 * Environment: BFS_MODEL_SEEDS (count, default 3), BFS_MODEL_OPS (per seed,
 * default 8000), BFS_MODEL_SEED (first seed, default 1).  `make soak` runs
 * it much longer.
 */
#include "unit.h"

#include <bfs/fs.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MAX_INODES	2048
#define MAX_FILE	(512 * 1024)	/* model files stay below this */
#define MAX_XATTRS	8
#define NR_NAMES	10

enum m_type { M_FREE, M_REG, M_DIR, M_LNK };

struct m_xattr {
	char name[32];
	u8 *val;
	size_t len;
};

struct m_dirent {
	char *name;
	size_t len;
	int child;
};

struct m_inode {
	enum m_type type;
	u64 ino;
	u32 nlink;
	u32 mode;
	/* regular files */
	u8 *data;
	u64 size;
	/* directories */
	struct m_dirent *ents;
	int nr_ents, cap_ents;
	int parent;
	/* symlinks */
	char target[128];
	struct m_xattr x[MAX_XATTRS];
	int nr_x;
};

struct model {
	struct m_inode in[MAX_INODES];
	u64 rng;
	struct bfs_fs *fs;
	struct bfs_dev *dev;
	unsigned long ops, reopens;
	char names[NR_NAMES][256];
	size_t name_len[NR_NAMES];
};

static u64 rnd(struct model *m)
{
	u64 z = (m->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u64 below(struct model *m, u64 n)
{
	return n ? rnd(m) % n : 0;
}

static u64 env_u64(const char *name, u64 def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

/* every failure names the operation number, to replay it with a debugger */
#define CHECK(m, cond, fmt, ...) \
	ck_assert_msg(cond, "op %lu: " fmt, (m)->ops, ##__VA_ARGS__)

/* ---- model helpers ---- */

static int m_alloc(struct model *m, enum m_type type, u64 ino)
{
	int i;

	for (i = 1; i < MAX_INODES; i++)
		if (m->in[i].type == M_FREE) {
			memset(&m->in[i], 0, sizeof(m->in[i]));
			m->in[i].type = type;
			m->in[i].ino = ino;
			return i;
		}
	return -1;
}

static void m_free(struct m_inode *n)
{
	int i;

	bfs_free(n->data);
	for (i = 0; i < n->nr_ents; i++)
		bfs_free(n->ents[i].name);
	bfs_free(n->ents);
	for (i = 0; i < n->nr_x; i++)
		bfs_free(n->x[i].val);
	memset(n, 0, sizeof(*n));
}

static int m_find(struct m_inode *dir, const char *name, size_t len)
{
	int i;

	for (i = 0; i < dir->nr_ents; i++)
		if (dir->ents[i].len == len && !memcmp(dir->ents[i].name, name, len))
			return i;
	return -1;
}

static void m_add(struct m_inode *dir, const char *name, size_t len, int child)
{
	if (dir->nr_ents == dir->cap_ents) {
		dir->cap_ents = dir->cap_ents ? dir->cap_ents * 2 : 8;
		dir->ents = bfs_realloc(dir->ents, dir->cap_ents * sizeof(*dir->ents));
	}
	dir->ents[dir->nr_ents].name = bfs_malloc(len);
	memcpy(dir->ents[dir->nr_ents].name, name, len);
	dir->ents[dir->nr_ents].len = len;
	dir->ents[dir->nr_ents].child = child;
	dir->nr_ents++;
}

static void m_remove(struct m_inode *dir, int idx)
{
	bfs_free(dir->ents[idx].name);
	dir->ents[idx] = dir->ents[--dir->nr_ents];
}

/* drop one link of inode @i; free it when the last goes (no open files here) */
static void m_unlink_inode(struct model *m, int i)
{
	struct m_inode *n = &m->in[i];

	if (n->type == M_DIR) {
		m->in[n->parent].nlink--;
		m_free(n);
		return;
	}
	if (--n->nlink == 0)
		m_free(n);
}

/* random existing directory (model index) */
static int pick_dir(struct model *m)
{
	int tries, i;

	for (tries = 0; tries < 32; tries++) {
		i = 1 + (int)below(m, MAX_INODES - 1);
		if (m->in[i].type == M_DIR)
			return i;
	}
	return 1;	/* the root */
}

static int pick_name(struct model *m)
{
	return (int)below(m, NR_NAMES);
}

/* is directory @a an ancestor of (or equal to) directory @b? */
static bool m_is_ancestor(struct model *m, int a, int b)
{
	for (;;) {
		if (a == b)
			return true;
		if (b == 1)
			return false;
		b = m->in[b].parent;
	}
}

/* ---- operations: model first, then bfs, then compare ---- */

static struct bfs_creds creds = { 0, 0 };

static void op_create(struct model *m, bool dir)
{
	int d = pick_dir(m), nm = pick_name(m), want = 0, ret;
	struct m_inode *dn = &m->in[d];
	struct bfs_stat st;

	if (m_find(dn, m->names[nm], m->name_len[nm]) >= 0)
		want = -EEXIST;
	if (dir)
		ret = bfs_fs_mkdir(m->fs, dn->ino, m->names[nm], m->name_len[nm], 0755, &creds, &st);
	else
		ret = bfs_fs_mknod(m->fs, dn->ino, m->names[nm], m->name_len[nm], S_IFREG | 0644, 0,
				   &creds, &st);
	CHECK(m, ret == want, "%s: got %d want %d", dir ? "mkdir" : "create", ret, want);
	if (ret)
		return;
	ret = m_alloc(m, dir ? M_DIR : M_REG, st.ino);
	CHECK(m, ret > 0, "model full");
	m->in[ret].nlink = dir ? 2 : 1;
	m->in[ret].parent = d;
	m->in[ret].mode = dir ? (S_IFDIR | 0755) : (S_IFREG | 0644);
	if (dir)
		dn->nlink++;
	m_add(dn, m->names[nm], m->name_len[nm], ret);
	CHECK(m, st.nlink == m->in[ret].nlink, "new inode nlink %u", st.nlink);
}

static void op_symlink(struct model *m)
{
	int d = pick_dir(m), nm = pick_name(m), want = 0, ret, i;
	struct m_inode *dn = &m->in[d];
	char target[128];
	struct bfs_stat st;

	snprintf(target, sizeof(target), "target-%llu/%.*s", (unsigned long long)below(m, 1000),
		 (int)below(m, 60), "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	if (m_find(dn, m->names[nm], m->name_len[nm]) >= 0)
		want = -EEXIST;
	ret = bfs_fs_symlink(m->fs, dn->ino, m->names[nm], m->name_len[nm], target, &creds, &st);
	CHECK(m, ret == want, "symlink: got %d want %d", ret, want);
	if (ret)
		return;
	i = m_alloc(m, M_LNK, st.ino);
	CHECK(m, i > 0, "model full");
	m->in[i].nlink = 1;
	m->in[i].mode = S_IFLNK | 0777;
	strcpy(m->in[i].target, target);
	m_add(dn, m->names[nm], m->name_len[nm], i);
}

/* a random existing entry: directory index and entry index, or -1 */
static int pick_entry(struct model *m, int *dir)
{
	int tries;

	for (tries = 0; tries < 16; tries++) {
		int d = pick_dir(m);

		if (m->in[d].nr_ents) {
			*dir = d;
			return (int)below(m, (u64)m->in[d].nr_ents);
		}
	}
	return -1;
}

static int pick_file(struct model *m)
{
	int d, e = pick_entry(m, &d);

	if (e < 0 || m->in[m->in[d].ents[e].child].type != M_REG)
		return -1;
	return m->in[d].ents[e].child;
}

static void fill(struct model *m, u8 *buf, size_t len)
{
	u64 seed = rnd(m);
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i % 8))
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		buf[i] = (u8)(seed >> (8 * (i % 8)));
	}
}

static void m_resize(struct m_inode *n, u64 size)
{
	if (size > n->size) {
		n->data = bfs_realloc(n->data, size ? size : 1);
		memset(n->data + n->size, 0, size - n->size);
	}
	n->size = size;
}

static void op_write(struct model *m)
{
	int f = pick_file(m);
	struct m_inode *n;
	u64 off, len;
	u8 *buf;
	ssize_t ret;

	if (f < 0)
		return;
	n = &m->in[f];
	off = below(m, 4) ? below(m, n->size + 1) : below(m, MAX_FILE - 70000);
	len = below(m, 3) ? 1 + below(m, 8192) : 1 + below(m, 65536);
	if (off + len > MAX_FILE)
		return;
	buf = bfs_malloc(len);
	fill(m, buf, len);
	ret = bfs_fs_write(m->fs, n->ino, buf, len, off);
	CHECK(m, ret == (ssize_t)len, "write ino %llu off %llu len %llu: %zd",
	      (unsigned long long)n->ino, (unsigned long long)off, (unsigned long long)len, ret);
	if (off + len > n->size)
		m_resize(n, off + len);
	memcpy(n->data + off, buf, len);
	bfs_free(buf);
}

static void check_range(struct model *m, struct m_inode *n, u64 off, u64 len)
{
	u8 *buf = bfs_malloc(len + 1);
	u64 want = off >= n->size ? 0 : BFS_MIN(len, n->size - off);
	ssize_t ret = bfs_fs_read(m->fs, n->ino, buf, len, off);

	CHECK(m, ret == (ssize_t)want, "read ino %llu off %llu len %llu: %zd, want %llu",
	      (unsigned long long)n->ino, (unsigned long long)off, (unsigned long long)len, ret,
	      (unsigned long long)want);
	if (want && memcmp(buf, n->data + off, want)) {
		u64 i;

		for (i = 0; i < want && buf[i] == n->data[off + i]; i++)
			;
		CHECK(m, 0, "read ino %llu off %llu len %llu: data differs at byte %llu",
		      (unsigned long long)n->ino, (unsigned long long)off,
		      (unsigned long long)len, (unsigned long long)(off + i));
	}
	bfs_free(buf);
}

static void op_read(struct model *m)
{
	int f = pick_file(m);
	struct m_inode *n;
	u64 off;

	if (f < 0)
		return;
	n = &m->in[f];
	off = below(m, n->size + 100);
	check_range(m, n, off, 1 + below(m, 70000));
}

static void op_truncate(struct model *m)
{
	int f = pick_file(m);
	struct bfs_setattr sa = { .valid = BFS_SET_SIZE };
	struct bfs_stat st;
	struct m_inode *n;
	int ret;

	if (f < 0)
		return;
	n = &m->in[f];
	sa.size = below(m, 2) ? below(m, n->size + 1) : below(m, MAX_FILE);
	ret = bfs_fs_setattr(m->fs, n->ino, &sa, &st);
	CHECK(m, ret == 0, "truncate: %d", ret);
	CHECK(m, st.size == sa.size, "truncate: size %llu", (unsigned long long)st.size);
	m_resize(n, sa.size);
}

static void op_punch(struct model *m)
{
	int f = pick_file(m), ret;
	struct m_inode *n;
	u64 off, len;

	if (f < 0)
		return;
	n = &m->in[f];
	off = below(m, n->size + 1);
	len = 1 + below(m, 40000);
	ret = bfs_fs_fallocate(m->fs, n->ino, BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_KEEP_SIZE, off, len);
	CHECK(m, ret == 0, "punch ino %llu %llu+%llu: %d", (unsigned long long)n->ino,
	      (unsigned long long)off, (unsigned long long)len, ret);
	if (off < n->size)
		memset(n->data + off, 0, BFS_MIN(len, n->size - off));
}

static void op_link(struct model *m)
{
	int f = pick_file(m), d = pick_dir(m), nm = pick_name(m), want = 0, ret;
	struct m_inode *dn = &m->in[d];
	struct bfs_stat st;

	if (f < 0)
		return;
	if (m_find(dn, m->names[nm], m->name_len[nm]) >= 0)
		want = -EEXIST;
	ret = bfs_fs_link(m->fs, m->in[f].ino, dn->ino, m->names[nm], m->name_len[nm], &st);
	CHECK(m, ret == want, "link: got %d want %d", ret, want);
	if (ret)
		return;
	m->in[f].nlink++;
	m_add(dn, m->names[nm], m->name_len[nm], f);
	CHECK(m, st.nlink == m->in[f].nlink, "link: nlink %u want %u", st.nlink, m->in[f].nlink);
}

static void op_unlink(struct model *m, bool rmdir)
{
	int d = pick_dir(m), nm = pick_name(m), e, want = 0, ret, c = 0;
	struct m_inode *dn = &m->in[d];

	e = m_find(dn, m->names[nm], m->name_len[nm]);
	if (e < 0) {
		want = -ENOENT;
	} else {
		c = dn->ents[e].child;
		if (rmdir && m->in[c].type != M_DIR)
			want = -ENOTDIR;
		else if (!rmdir && m->in[c].type == M_DIR)
			want = -EISDIR;
		else if (rmdir && m->in[c].nr_ents)
			want = -ENOTEMPTY;
	}
	ret = rmdir ? bfs_fs_rmdir(m->fs, dn->ino, m->names[nm], m->name_len[nm]) :
		      bfs_fs_unlink(m->fs, dn->ino, m->names[nm], m->name_len[nm]);
	CHECK(m, ret == want, "%s: got %d want %d", rmdir ? "rmdir" : "unlink", ret, want);
	if (ret)
		return;
	m_remove(dn, e);
	m_unlink_inode(m, c);
}

/* the errno rename(2) gives, or 0; *exchange_ok etc. computed by the caller */
static int rename_errno(struct model *m, int od, int oe, int nd, int ne, unsigned flags)
{
	int src, dst;

	if (oe < 0)
		return -ENOENT;
	src = m->in[od].ents[oe].child;
	if (flags & BFS_RENAME_EXCHANGE) {
		if (ne < 0)
			return -ENOENT;
		dst = m->in[nd].ents[ne].child;
		if (src == dst)
			return 0;
		if ((m->in[src].type == M_DIR && m_is_ancestor(m, src, nd)) ||
		    (m->in[dst].type == M_DIR && m_is_ancestor(m, dst, od)))
			return -EINVAL;
		return 0;
	}
	if (ne >= 0 && (flags & BFS_RENAME_NOREPLACE))
		return -EEXIST;
	/* Linux checks ancestry before types (do_renameat2's "trap") */
	if (m->in[src].type == M_DIR && m_is_ancestor(m, src, nd))
		return -EINVAL;
	if (ne < 0)
		return 0;
	dst = m->in[nd].ents[ne].child;
	if (m->in[dst].type == M_DIR && m_is_ancestor(m, dst, od))
		return -ENOTEMPTY;
	if (dst == src)
		return 0;
	if (m->in[src].type == M_DIR && m->in[dst].type != M_DIR)
		return -ENOTDIR;
	if (m->in[src].type != M_DIR && m->in[dst].type == M_DIR)
		return -EISDIR;
	if (m->in[dst].type == M_DIR && m->in[dst].nr_ents)
		return -ENOTEMPTY;
	return 0;
}

static void m_move(struct model *m, int od, int oe, int nd, const char *name, size_t len)
{
	int src = m->in[od].ents[oe].child;

	m_remove(&m->in[od], oe);
	m_add(&m->in[nd], name, len, src);
	if (m->in[src].type == M_DIR && od != nd) {
		m->in[od].nlink--;
		m->in[nd].nlink++;
		m->in[src].parent = nd;
	}
}

static void op_rename(struct model *m)
{
	int od = pick_dir(m), nd = pick_dir(m), on = pick_name(m), nn = pick_name(m);
	u64 r = below(m, 10);
	unsigned flags = r == 0 ? BFS_RENAME_NOREPLACE : r == 1 ? BFS_RENAME_EXCHANGE : 0;
	int oe = m_find(&m->in[od], m->names[on], m->name_len[on]);
	int ne = m_find(&m->in[nd], m->names[nn], m->name_len[nn]);
	int want = rename_errno(m, od, oe, nd, ne, flags), ret;
	int src, dst;

	ret = bfs_fs_rename(m->fs, m->in[od].ino, m->names[on], m->name_len[on], m->in[nd].ino,
			    m->names[nn], m->name_len[nn], flags);
	CHECK(m, ret == want, "rename %llu/%s -> %llu/%s flags %u: got %d want %d",
	      (unsigned long long)m->in[od].ino, m->names[on], (unsigned long long)m->in[nd].ino,
	      m->names[nn], flags, ret, want);
	if (ret)
		return;
	src = m->in[od].ents[oe].child;
	if (flags & BFS_RENAME_EXCHANGE) {
		dst = m->in[nd].ents[ne].child;
		if (src == dst)
			return;
		m->in[od].ents[oe].child = dst;
		m->in[nd].ents[ne].child = src;
		if (od != nd) {
			if (m->in[src].type == M_DIR) {
				m->in[src].parent = nd;
				m->in[od].nlink--;
				m->in[nd].nlink++;
			}
			if (m->in[dst].type == M_DIR) {
				m->in[dst].parent = od;
				m->in[nd].nlink--;
				m->in[od].nlink++;
			}
		}
		return;
	}
	if (ne >= 0) {
		dst = m->in[nd].ents[ne].child;
		if (dst == src)
			return;		/* POSIX: hard links to one inode, nothing happens */
		m_remove(&m->in[nd], ne);
		if (oe >= m->in[od].nr_ents || m->in[od].ents[oe].child != src)
			oe = m_find(&m->in[od], m->names[on], m->name_len[on]);
		m_unlink_inode(m, dst);
	}
	m_move(m, od, oe, nd, m->names[nn], m->name_len[nn]);
}

static void op_xattr(struct model *m)
{
	int d, e = pick_entry(m, &d), i, ret, want = 0;
	char name[32];
	struct m_inode *n;
	u8 val[300];
	size_t len = below(m, sizeof(val));
	bool remove = below(m, 4) == 0;

	if (e < 0)
		return;
	n = &m->in[m->in[d].ents[e].child];
	if (n->type == M_LNK)
		return;		/* user.* xattrs are not allowed on symlinks in Linux */
	snprintf(name, sizeof(name), "user.attr%llu", (unsigned long long)below(m, 6));
	for (i = 0; i < n->nr_x && strcmp(n->x[i].name, name); i++)
		;
	if (remove) {
		want = i < n->nr_x ? 0 : -ENODATA;
		ret = bfs_fs_removexattr(m->fs, n->ino, name);
		CHECK(m, ret == want, "removexattr: got %d want %d", ret, want);
		if (!ret) {
			bfs_free(n->x[i].val);
			n->x[i] = n->x[--n->nr_x];
		}
		return;
	}
	if (i == n->nr_x && n->nr_x == MAX_XATTRS)
		return;
	fill(m, val, len);
	ret = bfs_fs_setxattr(m->fs, n->ino, name, val, len, 0);
	CHECK(m, ret == 0, "setxattr: %d", ret);
	if (i == n->nr_x) {
		strcpy(n->x[n->nr_x].name, name);
		n->nr_x++;
	} else {
		bfs_free(n->x[i].val);
	}
	n->x[i].val = bfs_malloc(len + 1);
	memcpy(n->x[i].val, val, len);
	n->x[i].len = len;
}

/* ---- whole-tree comparison ---- */

struct seen {
	struct model *m;
	struct m_inode *dir;
	int count;
	bool failed;
	char why[512];
};

static int readdir_cb(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct seen *s = ctx;
	int e;

	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
		return 0;
	e = m_find(s->dir, name, len);
	if (e < 0 || s->m->in[s->dir->ents[e].child].ino != ino) {
		s->failed = true;
		snprintf(s->why, sizeof(s->why), "readdir of %llu: unexpected entry '%.*s' -> %llu",
			 (unsigned long long)s->dir->ino, (int)len, name, (unsigned long long)ino);
		return 1;
	}
	s->count++;
	return 0;
}

static void compare_inode(struct model *m, int i)
{
	struct m_inode *n = &m->in[i];
	struct bfs_stat st;
	char buf[4096];
	ssize_t len;
	int ret, x;

	ret = bfs_fs_getattr(m->fs, n->ino, &st);
	CHECK(m, ret == 0, "getattr %llu: %d", (unsigned long long)n->ino, ret);
	CHECK(m, (st.mode & S_IFMT) == (n->mode & S_IFMT), "ino %llu type %o want %o",
	      (unsigned long long)n->ino, st.mode & S_IFMT, n->mode & S_IFMT);
	CHECK(m, st.nlink == n->nlink, "ino %llu nlink %u want %u", (unsigned long long)n->ino,
	      st.nlink, n->nlink);
	if (n->type == M_REG) {
		CHECK(m, st.size == n->size, "ino %llu size %llu want %llu",
		      (unsigned long long)n->ino, (unsigned long long)st.size,
		      (unsigned long long)n->size);
		if (n->size)
			check_range(m, n, 0, n->size);
	} else if (n->type == M_LNK) {
		len = bfs_fs_readlink(m->fs, n->ino, buf, sizeof(buf));
		CHECK(m, len == (ssize_t)strlen(n->target) && !memcmp(buf, n->target, (size_t)len),
		      "readlink %llu", (unsigned long long)n->ino);
	} else {
		struct seen s = { .m = m, .dir = n };

		ret = bfs_fs_readdir(m->fs, n->ino, 0, readdir_cb, &s);
		CHECK(m, ret == 0 && !s.failed, "readdir %llu: %d %s", (unsigned long long)n->ino,
		      ret, s.why);
		CHECK(m, s.count == n->nr_ents, "readdir %llu: %d entries, want %d",
		      (unsigned long long)n->ino, s.count, n->nr_ents);
	}
	len = bfs_fs_listxattr(m->fs, n->ino, buf, sizeof(buf));
	CHECK(m, len >= 0, "listxattr: %zd", len);
	for (x = 0; x < n->nr_x; x++) {
		u8 val[400];
		ssize_t vl = bfs_fs_getxattr(m->fs, n->ino, n->x[x].name, val, sizeof(val));

		CHECK(m, vl == (ssize_t)n->x[x].len && !memcmp(val, n->x[x].val, n->x[x].len),
		      "xattr %s of %llu: %zd", n->x[x].name, (unsigned long long)n->ino, vl);
	}
}

static void compare_all(struct model *m)
{
	int i;

	for (i = 1; i < MAX_INODES; i++)
		if (m->in[i].type != M_FREE)
			compare_inode(m, i);
}

static void reopen(struct model *m)
{
	int ret = bfs_fs_close(m->fs);

	CHECK(m, ret == 0, "close: %d", ret);
	ret = bfs_fs_open(m->dev, &(struct bfs_fs_opts){ 0 }, &m->fs);
	CHECK(m, ret == 0, "open: %d", ret);
	m->reopens++;
	compare_all(m);
}

static void one_op(struct model *m)
{
	u64 r = below(m, 100);

	if (r < 10)
		op_create(m, false);
	else if (r < 15)
		op_create(m, true);
	else if (r < 35)
		op_write(m);
	else if (r < 48)
		op_read(m);
	else if (r < 54)
		op_truncate(m);
	else if (r < 58)
		op_punch(m);
	else if (r < 63)
		op_link(m);
	else if (r < 70)
		op_unlink(m, false);
	else if (r < 73)
		op_unlink(m, true);
	else if (r < 85)
		op_rename(m);
	else if (r < 88)
		op_symlink(m);
	else if (r < 95)
		op_xattr(m);
	else if (r < 99) {
		int f = pick_file(m);

		if (f >= 0)
			CHECK(m, bfs_fs_fsync(m->fs, m->in[f].ino, below(m, 2)) == 0, "fsync");
	} else {
		reopen(m);
	}
	m->ops++;
}

static void init_names(struct model *m)
{
	static const char *const base[NR_NAMES - 2] = {
		"a", "b", "dir", "file.txt", "x y", "\xff\xfe", "new\nline", "c",
	};
	int i;

	for (i = 0; i < NR_NAMES - 2; i++) {
		strcpy(m->names[i], base[i]);
		m->name_len[i] = strlen(base[i]);
	}
	memset(m->names[i], 'L', 255);	/* the longest legal name */
	m->name_len[i++] = 255;
	memset(m->names[i], 'M', 200);
	m->name_len[i] = 200;
}

static void run_seed(u64 seed, u64 nr_ops)
{
	struct model *m = bfs_zalloc(sizeof(*m));
	static const u32 chunks[] = { 0, 4 * KiB, 16 * KiB, 32 * KiB, 8 * KiB };
	struct bfs_format_opts fo = { .data_chunk = chunks[(seed - 1) % ARRAY_SIZE(chunks)] };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN];
	u64 dev_bytes = 256 * MiB;
	int i;

	m->rng = seed;
	init_names(m);
	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &m->dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(m->dev, sb), 0);
	ck_assert_int_eq(bfs_fs_open(m->dev, &(struct bfs_fs_opts){ 0 }, &m->fs), 0);
	/* the root, as mkfs made it: lost+found inside */
	m->in[1] = (struct m_inode){ .type = M_DIR, .ino = BFS_ROOT_INO, .nlink = 3, .parent = 1,
				     .mode = S_IFDIR | 0755 };
	i = m_alloc(m, M_DIR, 2);
	m->in[i].nlink = 2;
	m->in[i].parent = 1;
	m->in[i].mode = S_IFDIR | 0700;
	m_add(&m->in[1], "lost+found", 10, i);

	while (m->ops < nr_ops)
		one_op(m);
	reopen(m);
	printf("model seed %llu (data chunk %u): %lu operations, %lu reopens, all results "
	       "matched\n", (unsigned long long)seed, fo.data_chunk ? fo.data_chunk : 65536,
	       m->ops, m->reopens);
	ck_assert_int_eq(bfs_fs_close(m->fs), 0);
	bfs_dev_close(m->dev);
	for (i = 1; i < MAX_INODES; i++)
		if (m->in[i].type != M_FREE)
			m_free(&m->in[i]);
	bfs_free(sb);
	bfs_free(m);
}

START_TEST(test_fs_model)
{
	u64 first = env_u64("BFS_MODEL_SEED", 1);
	u64 seeds = env_u64("BFS_MODEL_SEEDS", 3), s;
	u64 ops = env_u64("BFS_MODEL_OPS", 8000);

	for (s = first; s < first + seeds; s++)
		run_seed(s, ops);
}
END_TEST

static Suite *model_suite(void)
{
	Suite *s = suite_create("fs_model");
	TCase *tc = tcase_create("random_ops");

	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, test_fs_model);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(model_suite)
