// SPDX-License-Identifier: MIT
/*
 * The namespace half of the filesystem layer: inodes, names, directories,
 * rename, readdir cookies, hash collisions, orphans (with a simulated
 * crash), xattrs (64 KiB values on small nodes), key validation, and that
 * everything survives close + reopen.
 */
#include "tu.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/dev.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>
#include <bfs/log.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include "fs/ns.h"

static struct bfs_dev *dev;
static struct bfs_fs *fs;
static const struct bfs_creds cr = { .uid = 1000, .gid = 100 };

/*
 * A formatted memory device with a root directory.  256 KiB buckets by
 * default: a journal entry is at most a bucket, and a 64 KiB xattr value
 * must fit in one (its keys are one transaction).
 */
static struct bfs_dev *mkfs_mem_bucket(u64 size, u32 node_size, u32 bucket_size)
{
	tu_log_reset();
	return tu_mkfs_fs(size, node_size, bucket_size, BFS_COMPRESSION_NONE);
}

static struct bfs_dev *mkfs_mem(u64 size, u32 node_size)
{
	return mkfs_mem_bucket(size, node_size, 256 * KiB);
}

static struct bfs_fs *open_fs(struct bfs_dev *d, bool ro)
{
	struct bfs_fs_opts o = { .read_only = ro };
	struct bfs_fs *f;
	int ret = bfs_fs_open(d, &o, &f);

	ck_assert_msg(!ret, "open: %d %s", ret, tu_last_err);
	return f;
}

static void setup(void)
{
	dev = mkfs_mem(64 * MiB, 64 * KiB);
	fs = open_fs(dev, false);
}

static void teardown(void)
{
	if (fs)
		ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = NULL;
	bfs_dev_close(dev);
	dev = NULL;
	bfs_ns_debug_hash_bits = 0;
}

static void reopen(void)
{
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = open_fs(dev, false);
}

#define S(str) str, strlen(str)

static u64 mk(u64 dir, const char *name, u32 mode)
{
	struct bfs_stat st;
	int ret = S_ISDIR(mode) ? bfs_fs_mkdir(fs, dir, name, strlen(name), mode, &cr, &st) :
				  bfs_fs_mknod(fs, dir, name, strlen(name), mode, 0, &cr, &st);

	ck_assert_msg(!ret, "create %s: %d %s", name, ret, tu_last_err);
	return st.ino;
}

static int lookup(u64 dir, const char *name, struct bfs_stat *st)
{
	struct bfs_stat tmp;

	return bfs_fs_lookup(fs, dir, name, strlen(name), st ? st : &tmp);
}

static u64 ino_of(u64 dir, const char *name)
{
	struct bfs_stat st;

	ck_assert_int_eq(lookup(dir, name, &st), 0);
	return st.ino;
}

static u32 nlink_of(u64 ino)
{
	struct bfs_stat st;

	ck_assert_int_eq(bfs_fs_getattr(fs, ino, &st), 0);
	return st.nlink;
}

/* ---- readdir helpers ---- */

struct listing {
	char	**names;
	size_t	*lens;
	u64	*inos;
	u64	*cookies;
	size_t	nr, cap, stop_after;
};

static int fill(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct listing *l = ctx;

	if (l->nr == l->cap) {
		l->cap = l->cap * 2 + 64;
		l->names = realloc(l->names, l->cap * sizeof(*l->names));
		l->lens = realloc(l->lens, l->cap * sizeof(*l->lens));
		l->inos = realloc(l->inos, l->cap * sizeof(*l->inos));
		l->cookies = realloc(l->cookies, l->cap * sizeof(*l->cookies));
	}
	l->names[l->nr] = malloc(len + 1);
	memcpy(l->names[l->nr], name, len);
	l->names[l->nr][len] = 0;
	l->lens[l->nr] = len;
	l->inos[l->nr] = ino;
	l->cookies[l->nr] = next;
	l->nr++;
	return l->stop_after && l->nr >= l->stop_after;
}

static void listing_free(struct listing *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->names[i]);
	free(l->names);
	free(l->lens);
	free(l->inos);
	free(l->cookies);
	memset(l, 0, sizeof(*l));
}

static size_t count_entries(u64 dir)
{
	struct listing l = { 0 };
	size_t n;

	ck_assert_int_eq(bfs_fs_readdir(fs, dir, 0, fill, &l), 0);
	n = l.nr;
	listing_free(&l);
	return n;
}

static bool listed(const struct listing *l, const char *name)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (!strcmp(l->names[i], name))
			return true;
	return false;
}

/* ---- tests ---- */

START_TEST(test_root_and_format)
{
	struct bfs_stat st, lf;
	struct listing l = { 0 };

	ck_assert_int_eq(bfs_fs_getattr(fs, BFS_ROOT_INO, &st), 0);
	ck_assert(S_ISDIR(st.mode));
	ck_assert_int_eq(st.nlink, 3);
	ck_assert_int_eq(lookup(BFS_ROOT_INO, ".", &st), 0);
	ck_assert_int_eq(st.ino, BFS_ROOT_INO);
	ck_assert_int_eq(lookup(BFS_ROOT_INO, "..", &st), 0);
	ck_assert_int_eq(st.ino, BFS_ROOT_INO);
	ck_assert_int_eq(lookup(BFS_ROOT_INO, "lost+found", &lf), 0);
	ck_assert(S_ISDIR(lf.mode));
	ck_assert_int_eq(lf.mode & 07777, 0700);
	ck_assert_int_eq(lf.nlink, 2);
	ck_assert_int_eq(lookup(lf.ino, "..", &st), 0);
	ck_assert_int_eq(st.ino, BFS_ROOT_INO);
	ck_assert_int_eq(bfs_fs_readdir(fs, BFS_ROOT_INO, 0, fill, &l), 0);
	ck_assert_int_eq(l.nr, 3);
	ck_assert_str_eq(l.names[0], ".");
	ck_assert_int_eq(l.cookies[0], 1);
	ck_assert_str_eq(l.names[1], "..");
	ck_assert_int_eq(l.inos[1], BFS_ROOT_INO);
	ck_assert_str_eq(l.names[2], "lost+found");
	listing_free(&l);
	ck_assert_ptr_nonnull(bfs_fs_core(fs));
	ck_assert_int_eq(bfs_btree_verify(bfs_fs_core(fs), BFS_BTREE_INODES), 0);
}
END_TEST

START_TEST(test_create_kinds)
{
	struct bfs_stat st, d;
	char buf[BFS_SYMLINK_MAX + 1];
	u64 dir;
	s64 t0;

	ck_assert_int_eq(bfs_fs_getattr(fs, BFS_ROOT_INO, &d), 0);
	t0 = (s64)d.mtime.tv_sec * 1000000000 + d.mtime.tv_nsec;
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("file"), S_IFREG | 0644, 0, &cr, &st), 0);
	ck_assert(S_ISREG(st.mode));
	ck_assert_int_eq(st.mode & 07777, 0644);
	ck_assert_int_eq(st.uid, 1000);
	ck_assert_int_eq(st.gid, 100);
	ck_assert_int_eq(st.nlink, 1);
	ck_assert_int_eq(st.size, 0);
	ck_assert_int_ge(st.ino, BFS_FIRST_FREE_INO);
	ck_assert_int_eq(st.blksize, 4096);
	ck_assert_int_eq(bfs_fs_getattr(fs, BFS_ROOT_INO, &d), 0);
	ck_assert_int_ge((s64)d.mtime.tv_sec * 1000000000 + d.mtime.tv_nsec, t0);
	ck_assert_int_eq(d.mtime.tv_sec, d.ctime.tv_sec);
	ck_assert_int_eq(d.mtime.tv_nsec, d.ctime.tv_nsec);
	ck_assert_int_eq(d.mtime.tv_nsec, st.btime.tv_nsec);

	/* mode 0 is a regular file, as in mknod(2) */
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("plain"), 0600, 0, &cr, &st), 0);
	ck_assert(S_ISREG(st.mode));
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("fifo"), S_IFIFO | 0600, 0, &cr, &st), 0);
	ck_assert(S_ISFIFO(st.mode));
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("sock"), S_IFSOCK | 0600, 0, &cr, &st), 0);
	ck_assert(S_ISSOCK(st.mode));
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("chr"), S_IFCHR | 0600, 0x0103, &cr, &st), 0);
	ck_assert(S_ISCHR(st.mode));
	ck_assert_int_eq(st.rdev, 0x0103);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("blk"), S_IFBLK | 0600, 0x0801, &cr, &st), 0);
	ck_assert_int_eq(st.rdev, 0x0801);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("bad"), S_IFDIR | 0600, 0, &cr, &st), -EINVAL);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("bad"), S_IFLNK | 0600, 0, &cr, &st), -EINVAL);

	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, S("dir"), 0755, &cr, &st), 0);
	dir = st.ino;
	ck_assert(S_ISDIR(st.mode));
	ck_assert_int_eq(st.nlink, 2);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 4);
	ck_assert_int_eq(lookup(dir, "..", &st), 0);
	ck_assert_int_eq(st.ino, BFS_ROOT_INO);

	ck_assert_int_eq(bfs_fs_symlink(fs, dir, S("link"), "../file", &cr, &st), 0);
	ck_assert(S_ISLNK(st.mode));
	ck_assert_int_eq(st.size, 7);
	ck_assert_int_eq(bfs_fs_readlink(fs, st.ino, buf, sizeof(buf)), 7);
	ck_assert(!memcmp(buf, "../file", 7));
	ck_assert_int_eq(bfs_fs_readlink(fs, st.ino, buf, 3), 3);
	ck_assert(!memcmp(buf, "../", 3));
	ck_assert_int_eq(bfs_fs_readlink(fs, dir, buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(bfs_fs_symlink(fs, dir, S("empty"), "", &cr, &st), -ENOENT);

	/* the longest target, chunked over several keys on small nodes too */
	memset(buf, 'x', BFS_SYMLINK_MAX);
	buf[BFS_SYMLINK_MAX] = 0;
	buf[100] = '/';
	ck_assert_int_eq(bfs_fs_symlink(fs, dir, S("long"), buf, &cr, &st), 0);
	{
		char out[BFS_SYMLINK_MAX];

		ck_assert_int_eq(bfs_fs_readlink(fs, st.ino, out, sizeof(out)), BFS_SYMLINK_MAX);
		ck_assert(!memcmp(out, buf, BFS_SYMLINK_MAX));
	}
	{
		char big[BFS_SYMLINK_MAX + 2];

		memset(big, 'y', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		ck_assert_int_eq(bfs_fs_symlink(fs, dir, S("toolong"), big, &cr, &st), -ENAMETOOLONG);
	}

	/* errors */
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("file"), S_IFREG | 0644, 0, &cr, &st), -EEXIST);
	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, S("file"), 0755, &cr, &st), -EEXIST);
	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, S("."), 0755, &cr, &st), -EEXIST);
	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, S(".."), 0755, &cr, &st), -EEXIST);
	ck_assert_int_eq(bfs_fs_mknod(fs, 999999, S("x"), S_IFREG | 0644, 0, &cr, &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_mknod(fs, ino_of(BFS_ROOT_INO, "file"), S("x"), S_IFREG, 0, &cr, &st),
			 -ENOTDIR);
	ck_assert_int_eq(lookup(ino_of(BFS_ROOT_INO, "file"), "x", &st), -ENOTDIR);
	ck_assert_int_eq(lookup(BFS_ROOT_INO, "nope", &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_getattr(fs, 999999, &st), -ENOENT);

	/* everything persists */
	reopen();
	ck_assert_int_eq(lookup(BFS_ROOT_INO, "chr", &st), 0);
	ck_assert_int_eq(st.rdev, 0x0103);
	ck_assert_int_eq(lookup(dir, "link", &st), 0);
	ck_assert_int_eq(bfs_fs_readlink(fs, st.ino, buf, sizeof(buf)), 7);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 4);
}
END_TEST

START_TEST(test_names)
{
	char name[BFS_NAME_MAX + 2];
	struct bfs_stat st;
	struct listing l = { 0 };
	static const char odd[] = "new\nline\xff\x01 tab\t";
	unsigned i;

	memset(name, 'n', sizeof(name));
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, name, BFS_NAME_MAX, S_IFREG | 0644, 0, &cr, &st), 0);
	ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, name, BFS_NAME_MAX, &st), 0);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, name, BFS_NAME_MAX + 1, S_IFREG | 0644, 0, &cr, &st),
			 -ENAMETOOLONG);
	ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, name, BFS_NAME_MAX + 1, &st), -ENAMETOOLONG);
	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, name, BFS_NAME_MAX + 1, 0755, &cr, &st),
			 -ENAMETOOLONG);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, "a/b", 3, S_IFREG, 0, &cr, &st), -EINVAL);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, "a\0b", 3, S_IFREG, 0, &cr, &st), -EINVAL);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, "", 0, S_IFREG, 0, &cr, &st), -EINVAL);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S(odd), S_IFREG | 0644, 0, &cr, &st), 0);
	ck_assert_int_eq(lookup(BFS_ROOT_INO, odd, NULL), 0);
	/* every byte value but '/' and NUL, one name each */
	for (i = 1; i < 256; i++) {
		char c = (char)i;

		if (c == '/' || c == '.')
			continue;
		ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, &c, 1, S_IFREG | 0644, 0, &cr, &st), 0);
	}
	/* "..." and ".x" are ordinary names */
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("..."), S_IFREG, 0, &cr, &st), 0);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S(".x"), S_IFREG, 0, &cr, &st), 0);
	reopen();
	ck_assert_int_eq(bfs_fs_readdir(fs, BFS_ROOT_INO, 0, fill, &l), 0);
	/* . .. lost+found, the long name, odd, 253 single bytes, ... and .x */
	ck_assert_int_eq(l.nr, 3 + 1 + 1 + 253 + 2);
	ck_assert(listed(&l, odd));
	ck_assert(listed(&l, "\xff"));
	ck_assert(listed(&l, "\n"));
	listing_free(&l);
	for (i = 1; i < 256; i++) {
		char c = (char)i;

		if (c == '/' || c == '.')
			continue;
		ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, &c, 1, &st), 0);
		ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, &c, 1), 0);
	}
	ck_assert_int_eq(count_entries(BFS_ROOT_INO), 3 + 1 + 1 + 2);
}
END_TEST

START_TEST(test_link_unlink_rmdir)
{
	struct bfs_stat st;
	u64 f, d, sub;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	ck_assert_int_eq(bfs_fs_link(fs, f, d, S("f2"), &st), 0);
	ck_assert_int_eq(st.nlink, 2);
	ck_assert_int_eq(st.ino, f);
	ck_assert_int_eq(ino_of(d, "f2"), f);
	ck_assert_int_eq(bfs_fs_link(fs, f, d, S("f2"), &st), -EEXIST);
	ck_assert_int_eq(bfs_fs_link(fs, f, d, S(".."), &st), -EEXIST);
	ck_assert_int_eq(bfs_fs_link(fs, d, BFS_ROOT_INO, S("dlink"), &st), -EPERM);
	ck_assert_int_eq(bfs_fs_link(fs, f, f, S("x"), &st), -ENOTDIR);
	ck_assert_int_eq(bfs_fs_link(fs, 999999, d, S("x"), &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_link(fs, f, d, "a/b", 3, &st), -EINVAL);

	sub = mk(d, "sub", S_IFDIR | 0755);
	ck_assert_int_eq(nlink_of(d), 3);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("sub")), -EISDIR);
	ck_assert_int_eq(bfs_fs_rmdir(fs, d, S("f2")), -ENOTDIR);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, S("d")), -ENOTEMPTY);
	ck_assert_int_eq(bfs_fs_rmdir(fs, d, S(".")), -EINVAL);
	ck_assert_int_eq(bfs_fs_rmdir(fs, d, S("..")), -ENOTEMPTY);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S(".")), -EISDIR);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("nope")), -ENOENT);
	ck_assert_int_eq(bfs_fs_rmdir(fs, d, S("nope")), -ENOENT);
	ck_assert_int_eq(bfs_fs_unlink(fs, f, S("x")), -ENOTDIR);

	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), 0);
	ck_assert_int_eq(nlink_of(f), 1);
	ck_assert_int_eq(lookup(BFS_ROOT_INO, "f", NULL), -ENOENT);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("f2")), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, S("d")), -ENOTEMPTY);
	ck_assert_int_eq(bfs_fs_rmdir(fs, d, S("sub")), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, sub, &st), -ENOENT);
	ck_assert_int_eq(nlink_of(d), 2);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 4);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, S("d")), 0);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 3);
	ck_assert_int_eq(bfs_fs_getattr(fs, d, &st), -ENOENT);
	/* numbers are never reused */
	ck_assert_int_gt(mk(BFS_ROOT_INO, "g", S_IFREG | 0644), sub);
	reopen();
	ck_assert_int_gt(mk(BFS_ROOT_INO, "h", S_IFREG | 0644), sub + 1);
	ck_assert_int_eq(count_entries(BFS_ROOT_INO), 5);
}
END_TEST

/* set an inode's link count directly (the EMLINK limits) */
static void force_nlink(u64 ino, u32 nlink)
{
	struct bfs_ns_inode inode;
	struct bfs_trans *t;

	ck_assert_int_eq(bfs_ns_inode_read(fs, ino, &inode), 0);
	inode.i.nlink = nlink;
	ck_assert_int_eq(bfs_trans_begin(bfs_fs_core(fs), &t), 0);
	ck_assert_int_eq(bfs_ns_inode_write(t, &inode), 0);
	ck_assert_int_eq(bfs_ns_commit(t), 0);
}

START_TEST(test_link_max)
{
	struct bfs_stat st;
	u64 f, d;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	force_nlink(f, BFS_LINK_MAX - 1);
	ck_assert_int_eq(bfs_fs_link(fs, f, BFS_ROOT_INO, S("l1"), &st), 0);
	ck_assert_int_eq(st.nlink, BFS_LINK_MAX);
	ck_assert_int_eq(bfs_fs_link(fs, f, BFS_ROOT_INO, S("l2"), &st), -EMLINK);
	force_nlink(d, BFS_LINK_MAX);
	ck_assert_int_eq(bfs_fs_mkdir(fs, d, S("sub"), 0755, &cr, &st), -EMLINK);
	ck_assert_int_eq(bfs_fs_mknod(fs, d, S("file"), S_IFREG, 0, &cr, &st), 0);
	/* moving a directory into a full one */
	mk(BFS_ROOT_INO, "e", S_IFDIR | 0755);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("e"), d, S("e"), 0), -EMLINK);
}
END_TEST

START_TEST(test_setattr)
{
	struct bfs_setattr sa = { 0 };
	struct bfs_stat st, st2;
	u64 f, d;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	sa.valid = BFS_SET_MODE | BFS_SET_UID | BFS_SET_GID;
	sa.mode = S_IFDIR | 04711;	/* the type bits are ignored */
	sa.uid = 5;
	sa.gid = 6;
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_eq(st.mode, S_IFREG | 04711);
	ck_assert_int_eq(st.uid, 5);
	ck_assert_int_eq(st.gid, 6);

	sa.valid = BFS_SET_ATIME | BFS_SET_MTIME;
	sa.atime = (struct timespec){ .tv_sec = 1000, .tv_nsec = 5 };
	sa.mtime = (struct timespec){ .tv_sec = 2000, .tv_nsec = 7 };
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_eq(st.atime.tv_sec, 1000);
	ck_assert_int_eq(st.atime.tv_nsec, 5);
	ck_assert_int_eq(st.mtime.tv_sec, 2000);
	ck_assert_int_eq(st.mtime.tv_nsec, 7);
	ck_assert_int_gt(st.ctime.tv_sec, 2000);
	sa.valid = BFS_SET_CTIME | BFS_SET_ATIME_NOW;
	sa.ctime = (struct timespec){ .tv_sec = 3000, .tv_nsec = 0 };
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_eq(st.ctime.tv_sec, 3000);
	ck_assert_int_gt(st.atime.tv_sec, 3000);
	ck_assert_int_eq(st.mtime.tv_sec, 2000);
	sa.valid = BFS_SET_MTIME_NOW;
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_gt(st.mtime.tv_sec, 3000);
	/* times before 1970 */
	sa.valid = BFS_SET_MTIME;
	sa.mtime = (struct timespec){ .tv_sec = -10, .tv_nsec = 999999999 };
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_eq(st.mtime.tv_sec, -10);
	ck_assert_int_eq(st.mtime.tv_nsec, 999999999);
	sa.mtime.tv_nsec = 1000000000;
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), -EINVAL);

	sa.valid = BFS_SET_FLAGS;
	sa.flags = BFS_INODE_NODUMP | BFS_INODE_NOATIME;
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_eq(st.flags, BFS_INODE_NODUMP | BFS_INODE_NOATIME);
	sa.flags = 1U << 20;
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), -EOPNOTSUPP);

	sa.valid = BFS_SET_SIZE;
	sa.size = 12345;
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_eq(st.size, 12345);
	sa.size = 10;
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_eq(st.size, 10);
	ck_assert_int_eq(bfs_fs_setattr(fs, d, &sa, &st), -EISDIR);
	ck_assert_int_eq(bfs_fs_setattr(fs, 999999, &sa, &st), -ENOENT);

	reopen();
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st2), 0);
	ck_assert_int_eq(st2.size, 10);
	ck_assert_int_eq(st2.mode, S_IFREG | 04711);
	ck_assert_int_eq(st2.flags, BFS_INODE_NODUMP | BFS_INODE_NOATIME);
	ck_assert_int_eq(st2.ctime.tv_sec, st.ctime.tv_sec);
	ck_assert_int_eq(st2.ctime.tv_nsec, st.ctime.tv_nsec);
}
END_TEST

START_TEST(test_read_only)
{
	struct bfs_stat st;
	struct bfs_setattr sa = { .valid = BFS_SET_MODE, .mode = 0600 };
	u64 f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);

	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = open_fs(dev, true);
	ck_assert_int_eq(lookup(BFS_ROOT_INO, "f", &st), 0);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, S("g"), S_IFREG, 0, &cr, &st), -EROFS);
	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, S("g"), 0755, &cr, &st), -EROFS);
	ck_assert_int_eq(bfs_fs_symlink(fs, BFS_ROOT_INO, S("g"), "x", &cr, &st), -EROFS);
	ck_assert_int_eq(bfs_fs_link(fs, f, BFS_ROOT_INO, S("g"), &st), -EROFS);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), -EROFS);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, S("lost+found")), -EROFS);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("f"), BFS_ROOT_INO, S("g"), 0), -EROFS);
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), -EROFS);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.a", "b", 1, 0), -EROFS);
	ck_assert_int_eq(bfs_fs_removexattr(fs, f, "user.a"), -EROFS);
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
}
END_TEST

/* ---- readdir ---- */

START_TEST(test_readdir_cookies)
{
	struct listing l = { 0 }, rest = { 0 };
	char name[32];
	u64 d, cookie;
	unsigned i, removed = 0;
	size_t j, seen;

	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "e%u", i);
		mk(d, name, S_IFREG | 0644);
	}
	/* read 50, then change the directory, then resume */
	l.stop_after = 50;
	ck_assert_int_eq(bfs_fs_readdir(fs, d, 0, fill, &l), 0);
	ck_assert_int_eq(l.nr, 50);
	ck_assert_str_eq(l.names[0], ".");
	ck_assert_str_eq(l.names[1], "..");
	ck_assert_int_eq(l.inos[1], BFS_ROOT_INO);
	cookie = l.cookies[49];
	for (i = 0; i < 200; i += 2) {
		snprintf(name, sizeof(name), "e%u", i);
		if (!listed(&l, name))	/* removing unseen entries: they may or may not show */
			continue;
		ck_assert_int_eq(bfs_fs_unlink(fs, d, name, strlen(name)), 0);
		removed++;
	}
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "new%u", i);
		mk(d, name, S_IFREG | 0644);
	}
	ck_assert_int_eq(bfs_fs_readdir(fs, d, cookie, fill, &rest), 0);
	/* every old entry present throughout is returned exactly once overall */
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "e%u", i);
		seen = 0;
		for (j = 0; j < l.nr; j++)
			seen += !strcmp(l.names[j], name);
		for (j = 0; j < rest.nr; j++)
			seen += !strcmp(rest.names[j], name);
		if (lookup(d, name, NULL) == 0 || seen)
			ck_assert_msg(seen == 1 || (i % 2 == 0 && seen == 1), "%s seen %zu", name, seen);
	}
	for (j = 0; j < rest.nr; j++) {
		ck_assert_str_ne(rest.names[j], ".");
		ck_assert_str_ne(rest.names[j], "..");
	}
	/* cookies grow and resume right after each entry */
	for (j = 1; j < rest.nr; j++)
		ck_assert_int_gt(rest.cookies[j], rest.cookies[j - 1]);
	listing_free(&rest);
	ck_assert_int_eq(bfs_fs_readdir(fs, d, 1, fill, &rest), 0);
	ck_assert_str_eq(rest.names[0], "..");
	listing_free(&rest);
	ck_assert_int_eq(bfs_fs_readdir(fs, d, 2, fill, &rest), 0);
	ck_assert_str_ne(rest.names[0], "..");
	ck_assert_int_eq(rest.nr, 200 - removed + 100);
	listing_free(&rest);
	listing_free(&l);
	ck_assert_int_eq(bfs_fs_readdir(fs, ino_of(d, "e1"), 0, fill, &l), -ENOTDIR);
	ck_assert_int_eq(bfs_fs_readdir(fs, 999999, 0, fill, &l), -ENOENT);
}
END_TEST

START_TEST(test_big_directory)
{
	char name[32];
	u64 d;
	unsigned i;
	struct listing l = { 0 };

	d = mk(BFS_ROOT_INO, "big", S_IFDIR | 0755);
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "file-%05u", i);
		mk(d, name, S_IFREG | 0644);
	}
	ck_assert_int_eq(count_entries(d), 10002);
	reopen();
	ck_assert_int_eq(bfs_fs_readdir(fs, d, 0, fill, &l), 0);
	ck_assert_int_eq(l.nr, 10002);
	for (i = 0; i < 10000; i += 997) {
		snprintf(name, sizeof(name), "file-%05u", i);
		ck_assert(listed(&l, name));
		ck_assert_int_eq(lookup(d, name, NULL), 0);
	}
	listing_free(&l);
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "file-%05u", i);
		ck_assert_int_eq(bfs_fs_unlink(fs, d, name, strlen(name)), 0);
	}
	ck_assert_int_eq(count_entries(d), 2);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, S("big")), 0);
}
END_TEST

/* the dirents btree keys of @dir: live entries and whiteouts */
static void dir_keys(u64 dir, unsigned *live, unsigned *whiteouts)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	*live = *whiteouts = 0;
	bfs_btree_iter_init(&it, bfs_fs_core(fs), BFS_BTREE_DIRENTS, BFS_POS(dir, 0, 0), 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		if (le64_to_cpu(k->inode) != dir)
			break;
		if (getenv("BFS_TEST_VERBOSE")) {
			char text[512];

			bfs_bkey_to_text(text, sizeof(text), k);
			fprintf(stderr, "%s\n", text);
		}
		*live += k->type == BFS_KEY_DIRENT;
		*whiteouts += k->type == BFS_KEY_HASH_WHITEOUT;
	}
	bfs_btree_iter_exit(&it);
}

START_TEST(test_hash_collisions)
{
	char name[32];
	unsigned i, live, wo;
	u64 d;

	/* 2 hash bits: 4 home slots for 40 names, long probe chains */
	bfs_ns_debug_hash_bits = 2;
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		mk(d, name, S_IFREG | 0644);
	}
	dir_keys(d, &live, &wo);
	ck_assert_int_eq(live, 40);
	ck_assert_int_eq(wo, 0);
	/* delete in the middle of the chains: the rest must stay reachable */
	for (i = 0; i < 40; i += 3) {
		snprintf(name, sizeof(name), "c%u", i);
		ck_assert_int_eq(bfs_fs_unlink(fs, d, name, strlen(name)), 0);
	}
	dir_keys(d, &live, &wo);
	ck_assert_int_eq(live, 40 - 14);
	ck_assert_int_gt(wo, 0);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		ck_assert_int_eq(lookup(d, name, NULL), i % 3 ? 0 : -ENOENT);
	}
	ck_assert_int_eq(count_entries(d), 2 + 26);
	/* reinsert: whiteouts are reused, no duplicates */
	for (i = 0; i < 40; i += 3) {
		snprintf(name, sizeof(name), "c%u", i);
		mk(d, name, S_IFREG | 0644);
	}
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		ck_assert_int_eq(bfs_fs_mknod(fs, d, name, strlen(name), S_IFREG, 0, &cr, NULL), -EEXIST);
	}
	/* renames inside colliding chains */
	ck_assert_int_eq(bfs_fs_rename(fs, d, S("c1"), d, S("r1"), 0), 0);
	ck_assert_int_eq(bfs_fs_rename(fs, d, S("c2"), d, S("c4"), 0), 0);
	ck_assert_int_eq(bfs_fs_rename(fs, d, S("c5"), d, S("c7"), BFS_RENAME_EXCHANGE), 0);
	ck_assert_int_eq(lookup(d, "c1", NULL), -ENOENT);
	ck_assert_int_eq(lookup(d, "c2", NULL), -ENOENT);
	ck_assert_int_eq(lookup(d, "r1", NULL), 0);
	ck_assert_int_eq(count_entries(d), 2 + 39);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		ck_assert_int_eq(lookup(d, name, NULL), i == 1 || i == 2 ? -ENOENT : 0);
	}
	reopen();
	ck_assert_int_eq(count_entries(d), 2 + 39);
	/* remove everything: no whiteouts left behind, rmdir works */
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		if (i != 1 && i != 2)
			ck_assert_int_eq(bfs_fs_unlink(fs, d, name, strlen(name)), 0);
	}
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("r1")), 0);
	dir_keys(d, &live, &wo);
	ck_assert_int_eq(live, 0);
	ck_assert_int_eq(wo, 0);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, S("d")), 0);
}
END_TEST

START_TEST(test_hash_collision_chain_ends)
{
	unsigned live, wo;
	u64 d;

	/* 1 hash bit: home slots 3 and 4 only, one contiguous run of slots */
	bfs_ns_debug_hash_bits = 1;
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	mk(d, "a", S_IFREG);
	mk(d, "b", S_IFREG);
	mk(d, "c", S_IFREG);
	mk(d, "e", S_IFREG);
	/* removing the last of a chain also drops the whiteouts before it */
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("b")), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("c")), 0);
	dir_keys(d, &live, &wo);
	ck_assert_int_eq(live, 2);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("e")), 0);
	dir_keys(d, &live, &wo);
	ck_assert_int_eq(live, 1);
	/* a whiteout may stay only before 'a' (if 'b' sat in front of it) */
	ck_assert_int_le(wo, 1);
	ck_assert_int_eq(lookup(d, "a", NULL), 0);
	/* same-directory rename whose new slot lies after the old one */
	mk(d, "b", S_IFREG);
	mk(d, "c", S_IFREG);
	ck_assert_int_eq(bfs_fs_rename(fs, d, S("c"), d, S("z"), 0), 0);
	ck_assert_int_eq(lookup(d, "z", NULL), 0);
	ck_assert_int_eq(bfs_fs_rename(fs, d, S("a"), d, S("y"), 0), 0);
	ck_assert_int_eq(lookup(d, "y", NULL), 0);
	ck_assert_int_eq(lookup(d, "b", NULL), 0);
	ck_assert_int_eq(lookup(d, "z", NULL), 0);
	ck_assert_int_eq(count_entries(d), 5);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("y")), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("b")), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("z")), 0);
	dir_keys(d, &live, &wo);
	ck_assert_int_eq(live, 0);
	ck_assert_int_eq(wo, 0);
}
END_TEST

/* ---- rename ---- */

START_TEST(test_rename_basic)
{
	struct bfs_stat st, before;
	u64 a, b, f, g, sub;

	a = mk(BFS_ROOT_INO, "a", S_IFDIR | 0755);
	b = mk(BFS_ROOT_INO, "b", S_IFDIR | 0755);
	f = mk(a, "f", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &before), 0);

	/* same directory */
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("f"), a, S("f1"), 0), 0);
	ck_assert_int_eq(lookup(a, "f", NULL), -ENOENT);
	ck_assert_int_eq(ino_of(a, "f1"), f);
	ck_assert_int_eq(nlink_of(f), 1);
	/* same name: no-op */
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("f1"), a, S("f1"), 0), 0);
	ck_assert_int_eq(ino_of(a, "f1"), f);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("f1"), a, S("f1"), BFS_RENAME_NOREPLACE), -EEXIST);
	/* across directories */
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("f1"), b, S("f"), 0), 0);
	ck_assert_int_eq(ino_of(b, "f"), f);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert(st.ctime.tv_sec > before.ctime.tv_sec ||
		  (st.ctime.tv_sec == before.ctime.tv_sec && st.ctime.tv_nsec > before.ctime.tv_nsec));
	/* over an existing file: the target loses its link and is freed */
	g = mk(a, "g", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_rename(fs, b, S("f"), a, S("g"), 0), 0);
	ck_assert_int_eq(ino_of(a, "g"), f);
	ck_assert_int_eq(bfs_fs_getattr(fs, g, &st), -ENOENT);
	ck_assert_int_eq(count_entries(b), 2);
	/* over a hard link of a file with more links: the target survives */
	g = mk(b, "g", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_link(fs, g, b, S("g2"), &st), 0);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("g"), b, S("g2"), 0), 0);
	ck_assert_int_eq(nlink_of(g), 1);
	ck_assert_int_eq(ino_of(b, "g2"), f);
	/* two names of one inode: nothing happens */
	ck_assert_int_eq(bfs_fs_link(fs, f, a, S("same"), &st), 0);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("same"), b, S("g2"), 0), 0);
	ck_assert_int_eq(ino_of(a, "same"), f);
	ck_assert_int_eq(ino_of(b, "g2"), f);
	ck_assert_int_eq(nlink_of(f), 2);

	/* directories across parents: "..", nlinks */
	sub = mk(a, "sub", S_IFDIR | 0755);
	mk(sub, "inner", S_IFREG);
	ck_assert_int_eq(nlink_of(a), 3);
	ck_assert_int_eq(nlink_of(b), 2);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("sub"), b, S("sub"), 0), 0);
	ck_assert_int_eq(nlink_of(a), 2);
	ck_assert_int_eq(nlink_of(b), 3);
	ck_assert_int_eq(lookup(sub, "..", &st), 0);
	ck_assert_int_eq(st.ino, b);
	ck_assert_int_eq(lookup(sub, "inner", NULL), 0);

	/* errors */
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("nope"), b, S("x"), 0), -ENOENT);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("same"), 999999, S("x"), 0), -ENOENT);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("same"), f, S("x"), 0), -ENOTDIR);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("."), b, S("x"), 0), -EBUSY);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("same"), b, S(".."), 0), -EBUSY);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("same"), b, "x/y", 3, 0), -EINVAL);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("same"), b, S("x"), 4), -EINVAL);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("same"), b, S("x"),
				       BFS_RENAME_EXCHANGE | BFS_RENAME_NOREPLACE), -EINVAL);

	reopen();
	ck_assert_int_eq(nlink_of(b), 3);
	ck_assert_int_eq(lookup(sub, "..", &st), 0);
	ck_assert_int_eq(st.ino, b);
}
END_TEST

START_TEST(test_rename_types)
{
	struct bfs_stat st;
	u64 d1, d2, f, e;

	d1 = mk(BFS_ROOT_INO, "d1", S_IFDIR | 0755);
	d2 = mk(BFS_ROOT_INO, "d2", S_IFDIR | 0755);
	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	mk(d2, "x", S_IFREG);
	/* dir over file, file over dir, dir over non-empty dir */
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("d1"), BFS_ROOT_INO, S("f"), 0), -ENOTDIR);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("f"), BFS_ROOT_INO, S("d1"), 0), -EISDIR);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("d1"), BFS_ROOT_INO, S("d2"), 0), -ENOTEMPTY);
	/* NOREPLACE */
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("f"), BFS_ROOT_INO, S("d1"),
				       BFS_RENAME_NOREPLACE), -EEXIST);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("f"), BFS_ROOT_INO, S("f2"),
				       BFS_RENAME_NOREPLACE), 0);
	/* dir over an empty dir: the target is freed, parent nlink drops */
	e = mk(BFS_ROOT_INO, "e", S_IFDIR | 0755);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 6);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("d1"), BFS_ROOT_INO, S("e"), 0), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, e, &st), -ENOENT);
	ck_assert_int_eq(ino_of(BFS_ROOT_INO, "e"), d1);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 5);
	/* a dir over an empty dir in another parent */
	e = mk(d2, "empty", S_IFDIR | 0755);
	ck_assert_int_eq(nlink_of(d2), 3);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("e"), d2, S("empty"), 0), 0);
	ck_assert_int_eq(nlink_of(d2), 3);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 4);
	ck_assert_int_eq(lookup(d1, "..", &st), 0);
	ck_assert_int_eq(st.ino, d2);
	ck_assert_int_eq(bfs_fs_getattr(fs, e, &st), -ENOENT);
	(void)f;
}
END_TEST

START_TEST(test_rename_exchange)
{
	struct bfs_stat st;
	u64 a, b, f, d, g;

	a = mk(BFS_ROOT_INO, "a", S_IFDIR | 0755);
	b = mk(BFS_ROOT_INO, "b", S_IFDIR | 0755);
	f = mk(a, "f", S_IFREG | 0644);
	g = mk(a, "g", S_IFREG | 0644);
	d = mk(b, "d", S_IFDIR | 0755);
	mk(d, "inside", S_IFREG);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("f"), a, S("nope"), BFS_RENAME_EXCHANGE), -ENOENT);
	/* same directory, files */
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("f"), a, S("g"), BFS_RENAME_EXCHANGE), 0);
	ck_assert_int_eq(ino_of(a, "f"), g);
	ck_assert_int_eq(ino_of(a, "g"), f);
	ck_assert_int_eq(nlink_of(f), 1);
	ck_assert_int_eq(nlink_of(g), 1);
	/* a file and a (non-empty) directory across parents */
	ck_assert_int_eq(nlink_of(a), 2);
	ck_assert_int_eq(nlink_of(b), 3);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("f"), b, S("d"), BFS_RENAME_EXCHANGE), 0);
	ck_assert_int_eq(ino_of(a, "f"), d);
	ck_assert_int_eq(ino_of(b, "d"), g);
	ck_assert_int_eq(nlink_of(a), 3);
	ck_assert_int_eq(nlink_of(b), 2);
	ck_assert_int_eq(lookup(d, "..", &st), 0);
	ck_assert_int_eq(st.ino, a);
	ck_assert_int_eq(lookup(d, "inside", NULL), 0);
	ck_assert_int_eq(lookup(a, "f", &st), 0);
	ck_assert(S_ISDIR(st.mode));
	/* two directories */
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("a"), BFS_ROOT_INO, S("b"),
				       BFS_RENAME_EXCHANGE), 0);
	ck_assert_int_eq(ino_of(BFS_ROOT_INO, "a"), b);
	ck_assert_int_eq(ino_of(BFS_ROOT_INO, "b"), a);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 5);
	/* exchanging a directory with its own child would make a loop */
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("b"), a, S("f"), BFS_RENAME_EXCHANGE), -EINVAL);
	reopen();
	ck_assert_int_eq(ino_of(a, "f"), d);
	ck_assert_int_eq(lookup(d, "..", &st), 0);
	ck_assert_int_eq(st.ino, a);
}
END_TEST

START_TEST(test_rename_loops)
{
	u64 a, b, c;

	a = mk(BFS_ROOT_INO, "a", S_IFDIR | 0755);
	b = mk(a, "b", S_IFDIR | 0755);
	c = mk(b, "c", S_IFDIR | 0755);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("a"), a, S("x"), 0), -EINVAL);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("a"), b, S("x"), 0), -EINVAL);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("a"), c, S("x"), 0), -EINVAL);
	ck_assert_int_eq(bfs_fs_rename(fs, a, S("b"), c, S("x"), 0), -EINVAL);
	/* a directory over its own (non-empty) ancestor */
	ck_assert_int_eq(bfs_fs_rename(fs, b, S("c"), BFS_ROOT_INO, S("a"), 0), -ENOTEMPTY);
	/* upwards is fine */
	ck_assert_int_eq(bfs_fs_rename(fs, b, S("c"), BFS_ROOT_INO, S("c"), 0), 0);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("a"), c, S("a"), 0), 0);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 4);
	ck_assert_int_eq(nlink_of(c), 3);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("c"), b, S("c"), 0), -EINVAL);
}
END_TEST

/* ---- orphans ---- */

static bool orphan_key(struct bfs_fs *f, u64 ino)
{
	u64 buf[16];

	return !bfs_btree_lookup(bfs_fs_core(f), BFS_BTREE_INODES, BFS_POS(0, ino, 0), buf,
				 sizeof(buf));
}

START_TEST(test_orphans)
{
	struct bfs_stat st;
	u64 f, d;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.k", "v", 1, 0), 0);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_int_eq(st.nlink, 0);
	ck_assert(orphan_key(fs, f));
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.k", NULL, 0), 1);
	ck_assert_int_eq(bfs_fs_link(fs, f, BFS_ROOT_INO, S("again"), &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), -ENOENT);
	ck_assert(!orphan_key(fs, f));
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), -EINVAL);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), -ENOENT);

	/* an open directory removed: it stays readable (empty) until released */
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	ck_assert_int_eq(bfs_fs_inode_open(fs, d), 0);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, S("d")), 0);
	ck_assert_int_eq(count_entries(d), 2);
	ck_assert_int_eq(bfs_fs_mknod(fs, d, S("x"), S_IFREG, 0, &cr, &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_inode_release(fs, d), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, d, &st), -ENOENT);

	/* open but still linked: release frees nothing */
	f = mk(BFS_ROOT_INO, "g", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);

	/* open and replaced by a rename: an orphan too */
	mk(BFS_ROOT_INO, "h", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("h"), BFS_ROOT_INO, S("g"), 0), 0);
	ck_assert(orphan_key(fs, f));
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	/* a clean close frees it (its last release never came) */
	reopen();
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), -ENOENT);
	ck_assert(!orphan_key(fs, f));
}
END_TEST

/* the FUSE mount's lookup references: forget drops many at once */
START_TEST(test_orphans_forget)
{
	struct bfs_stat st;
	u64 f, i;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), 0);
	ck_assert(orphan_key(fs, f));
	ck_assert_int_eq(bfs_fs_inode_forget(fs, f, 0), 0);
	ck_assert_int_eq(bfs_fs_inode_forget(fs, f, 3), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_int_eq(bfs_fs_inode_forget(fs, f, 1), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), -ENOENT);
	ck_assert(!orphan_key(fs, f));
	ck_assert_int_eq(bfs_fs_inode_forget(fs, f, 1), -EINVAL);

	/* a miscount drops every reference and still frees the inode */
	f = mk(BFS_ROOT_INO, "g", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("g")), 0);
	ck_assert_int_eq(bfs_fs_inode_forget(fs, f, 7), -EINVAL);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), -ENOENT);
	ck_assert(!orphan_key(fs, f));
}
END_TEST

static struct bfs_stat stat_times(s64 atime_s, s64 mtime_s, s64 ctime_s, u32 flags)
{
	return (struct bfs_stat){
		.atime = { .tv_sec = atime_s }, .mtime = { .tv_sec = mtime_s },
		.ctime = { .tv_sec = ctime_s }, .flags = flags,
	};
}

START_TEST(test_atime)
{
	s64 now = bfs_fs_now() / 1000000000, day = 24 * 3600;
	struct bfs_stat st;
	u64 f;

	/* relatime: not after mtime or ctime, or a day old */
	st = stat_times(now - 10, now - 5, now - 20, 0);
	ck_assert(bfs_fs_atime_due(&st, BFS_ATIME_RELATIME));
	st = stat_times(now - 10, now - 20, now - 5, 0);
	ck_assert(bfs_fs_atime_due(&st, BFS_ATIME_RELATIME));
	st = stat_times(now - 10, now - 20, now - 20, 0);
	ck_assert(!bfs_fs_atime_due(&st, BFS_ATIME_RELATIME));
	ck_assert(bfs_fs_atime_due(&st, BFS_ATIME_STRICT));
	ck_assert(!bfs_fs_atime_due(&st, BFS_ATIME_NEVER));
	st = stat_times(now - day - 1, now - 2 * day, now - 2 * day, 0);
	ck_assert(bfs_fs_atime_due(&st, BFS_ATIME_RELATIME));
	st = stat_times(now - day - 1, now - 2 * day, now - 2 * day, BFS_INODE_NOATIME);
	ck_assert(!bfs_fs_atime_due(&st, BFS_ATIME_STRICT));

	/* touch: atime only, and only when due */
	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_int_eq(bfs_fs_touch_atime(fs, f, BFS_ATIME_RELATIME), 0);
	{
		struct bfs_stat after;

		ck_assert_int_eq(bfs_fs_getattr(fs, f, &after), 0);
		ck_assert(after.atime.tv_sec > st.atime.tv_sec ||
			  after.atime.tv_nsec > st.atime.tv_nsec);
		ck_assert(after.ctime.tv_sec == st.ctime.tv_sec &&
			  after.ctime.tv_nsec == st.ctime.tv_nsec);
		ck_assert_int_eq(bfs_fs_touch_atime(fs, f, BFS_ATIME_RELATIME), 0);
		ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
		ck_assert(after.atime.tv_nsec == st.atime.tv_nsec);
		ck_assert_int_eq(bfs_fs_touch_atime(fs, f, BFS_ATIME_NEVER), 0);
		ck_assert_int_eq(bfs_fs_getattr(fs, f, &after), 0);
		ck_assert(after.atime.tv_nsec == st.atime.tv_nsec);
	}
	ck_assert_int_eq(bfs_fs_touch_atime(fs, 999999, BFS_ATIME_STRICT), 0);
}
END_TEST

/* bfs_fs_read_due() says due exactly when the inode it read was */
START_TEST(test_read_atime_due)
{
	struct bfs_setattr sa = { .valid = BFS_SET_ATIME };
	char buf[16];
	struct bfs_stat st;
	bool due = true;
	u64 f;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_write(fs, f, "hello", 5, 0), 5);
	/* written after its atime: due under relatime */
	ck_assert_int_eq(bfs_fs_read_due(fs, f, buf, sizeof(buf), 0, BFS_ATIME_RELATIME, &due), 5);
	ck_assert(due);
	ck_assert(!memcmp(buf, "hello", 5));
	ck_assert_int_eq(bfs_fs_read_due(fs, f, buf, sizeof(buf), 0, BFS_ATIME_NEVER, &due), 5);
	ck_assert(!due);
	ck_assert_int_eq(bfs_fs_touch_atime(fs, f, BFS_ATIME_RELATIME), 0);
	/* read since: not due, but strictatime always is */
	ck_assert_int_eq(bfs_fs_read_due(fs, f, buf, sizeof(buf), 0, BFS_ATIME_RELATIME, &due), 5);
	ck_assert(!due);
	ck_assert_int_eq(bfs_fs_read_due(fs, f, buf, sizeof(buf), 0, BFS_ATIME_STRICT, &due), 5);
	ck_assert(due);
	/* also at the end of the file, as a read(2) there is an access */
	ck_assert_int_eq(bfs_fs_read_due(fs, f, buf, sizeof(buf), 100, BFS_ATIME_STRICT, &due), 0);
	ck_assert(due);
	/* atime set back (which moves ctime past it too): due again */
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	sa.atime = (struct timespec){ .tv_sec = st.atime.tv_sec - 2 * 24 * 3600 };
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), 0);
	ck_assert_int_eq(bfs_fs_read_due(fs, f, buf, sizeof(buf), 0, BFS_ATIME_RELATIME, &due), 5);
	ck_assert(due);
	/* errors leave it false */
	due = true;
	ck_assert_int_eq(bfs_fs_read_due(fs, BFS_ROOT_INO, buf, sizeof(buf), 0,
					 BFS_ATIME_STRICT, &due), -EISDIR);
	ck_assert(!due);
}
END_TEST

static int set_flags(u64 ino, u32 flags)
{
	struct bfs_setattr sa = { .valid = BFS_SET_FLAGS, .flags = flags };
	struct bfs_stat st;

	return bfs_fs_setattr(fs, ino, &sa, &st);
}

/* immutable and append-only are enforced by the filesystem layer */
START_TEST(test_inode_flags)
{
	struct bfs_setattr sa = { .valid = BFS_SET_MODE, .mode = 0600 };
	struct bfs_stat st;
	u64 f, d;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	ck_assert_int_eq(bfs_fs_write(fs, f, "abc", 3, 0), 3);
	ck_assert_int_eq(set_flags(f, BFS_INODE_IMMUTABLE), 0);
	ck_assert_int_eq(bfs_fs_write(fs, f, "x", 1, 3), -EPERM);
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &sa, &st), -EPERM);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.k", "v", 1, 0), -EPERM);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), -EPERM);
	ck_assert_int_eq(bfs_fs_link(fs, f, BFS_ROOT_INO, S("g"), &st), -EPERM);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("f"), d, S("f"), 0), -EPERM);
	ck_assert_int_eq(bfs_fs_fallocate(fs, f, 0, 0, 4096), -EPERM);

	ck_assert_int_eq(set_flags(f, BFS_INODE_APPEND), 0);
	ck_assert_int_eq(bfs_fs_write(fs, f, "x", 1, 0), -EPERM);
	ck_assert_int_eq(bfs_fs_write(fs, f, "x", 1, 3), 1);
	ck_assert_int_eq(bfs_fs_fallocate(fs, f, BFS_FALLOC_KEEP_SIZE | BFS_FALLOC_PUNCH_HOLE,
					  0, 1), -EPERM);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), -EPERM);

	/* directories: immutable keeps its entries and gets none; append keeps them */
	ck_assert_int_eq(bfs_fs_mknod(fs, d, S("old"), S_IFREG | 0644, 0, &cr, &st), 0);
	ck_assert_int_eq(set_flags(d, BFS_INODE_IMMUTABLE), 0);
	ck_assert_int_eq(bfs_fs_mknod(fs, d, S("new"), S_IFREG | 0644, 0, &cr, &st), -EPERM);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("old")), -EPERM);
	ck_assert_int_eq(set_flags(d, BFS_INODE_APPEND), 0);
	ck_assert_int_eq(bfs_fs_mknod(fs, d, S("new"), S_IFREG | 0644, 0, &cr, &st), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("old")), -EPERM);
	ck_assert_int_eq(bfs_fs_rename(fs, d, S("new"), BFS_ROOT_INO, S("new"), 0), -EPERM);

	ck_assert_int_eq(set_flags(d, 0), 0);
	ck_assert_int_eq(set_flags(f, 0), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, d, S("old")), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), 0);
}
END_TEST

/* an ACL value in Linux's xattr form: (tag, perm, id) triples */
static size_t acl_value(u8 *buf, const u16 (*e)[3], size_t n)
{
	struct bfs_acl_header h = { .version = cpu_to_le32(BFS_ACL_VERSION) };
	size_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = 0; i < n; i++) {
		struct bfs_acl_entry d = { .tag = cpu_to_le16(e[i][0]), .perm = cpu_to_le16(e[i][1]),
					   .id = cpu_to_le32(e[i][2]) };

		memcpy(buf + 4 + 8 * i, &d, sizeof(d));
	}
	return 4 + 8 * n;
}

START_TEST(test_acl)
{
	static const u16 named[][3] = {
		{ BFS_ACL_USER_OBJ, 6, 0 }, { BFS_ACL_USER, 4, 4242 }, { BFS_ACL_GROUP_OBJ, 0, 0 },
		{ BFS_ACL_MASK, 4, 0 }, { BFS_ACL_OTHER, 0, 0 },
	};
	static const u16 unsorted[][3] = {
		{ BFS_ACL_USER_OBJ, 6, 0 }, { BFS_ACL_GROUP_OBJ, 0, 0 }, { BFS_ACL_USER, 4, 4242 },
		{ BFS_ACL_MASK, 4, 0 }, { BFS_ACL_OTHER, 0, 0 },
	};
	static const u16 no_mask[][3] = {
		{ BFS_ACL_USER_OBJ, 6, 0 }, { BFS_ACL_USER, 4, 4242 }, { BFS_ACL_GROUP_OBJ, 0, 0 },
		{ BFS_ACL_OTHER, 0, 0 },
	};
	static const u16 base[][3] = {
		{ BFS_ACL_USER_OBJ, 7, 0 }, { BFS_ACL_GROUP_OBJ, 5, 0 }, { BFS_ACL_OTHER, 4, 0 },
	};
	struct bfs_acl_new na;
	struct bfs_stat st;
	u8 buf[64], got[64];
	u64 f, d;
	u32 mode;
	size_t n;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0600);
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	/* malformed: refused, nothing stored */
	n = acl_value(buf, unsorted, 5);
	ck_assert_int_eq(bfs_fs_set_acl(fs, f, false, buf, n), -EINVAL);
	n = acl_value(buf, no_mask, 4);
	ck_assert_int_eq(bfs_fs_set_acl(fs, f, false, buf, n), -EINVAL);
	ck_assert_int_eq(bfs_fs_set_acl(fs, f, false, buf, 7), -EINVAL);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "system.posix_acl_access", NULL, 0), -ENODATA);
	/* a named entry: stored, the group bits are the mask */
	n = acl_value(buf, named, 5);
	ck_assert_int_eq(bfs_fs_set_acl(fs, f, false, buf, n), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_uint_eq(st.mode & 0777, 0640);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "system.posix_acl_access", got, sizeof(got)),
			 (ssize_t)n);
	ck_assert(!memcmp(got, buf, n));
	/* chmod moves the mask, not the group entry (with the mode, one transaction) */
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &(struct bfs_setattr){
		.valid = BFS_SET_MODE | BFS_SET_ACL_MODE, .mode = 0600 }, &st), 0);
	ck_assert_uint_eq(st.mode & 07777, 0600);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "system.posix_acl_access", got, sizeof(got)),
			 (ssize_t)n);
	ck_assert_uint_eq(got[4 + 3 * 8 + 2], 0);	/* mask perm */
	ck_assert_uint_eq(got[4 + 1 * 8 + 2], 4);	/* user:4242 kept */
	/* without BFS_SET_ACL_MODE (a noacl mount) the stored ACL stays as it was */
	ck_assert_int_eq(bfs_fs_setattr(fs, f, &(struct bfs_setattr){
		.valid = BFS_SET_MODE, .mode = 0660 }, &st), 0);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "system.posix_acl_access", got, sizeof(got)),
			 (ssize_t)n);
	ck_assert_uint_eq(got[4 + 3 * 8 + 2], 0);
	/* removing an ACL that is not there changes nothing */
	ck_assert_int_eq(bfs_fs_set_acl(fs, d, false, NULL, 0), 0);
	/* equivalent to the mode: not stored, the mode set */
	n = acl_value(buf, base, 3);
	ck_assert_int_eq(bfs_fs_set_acl(fs, f, false, buf, n), 0);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "system.posix_acl_access", NULL, 0), -ENODATA);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_uint_eq(st.mode & 0777, 0754);
	/* default ACLs: directories only; inherited masked by the create mode, no umask */
	ck_assert_int_eq(bfs_fs_set_acl(fs, f, true, buf, n), -EACCES);
	mode = S_IFREG | 0666;
	ck_assert_int_eq(bfs_fs_acl_new(fs, d, &mode, 077, &na), 0);
	ck_assert_uint_eq(mode, S_IFREG | 0600);	/* the umask, no default ACL */
	ck_assert_ptr_null(na.access);
	n = acl_value(buf, named, 5);
	ck_assert_int_eq(bfs_fs_set_acl(fs, d, true, buf, n), 0);
	mode = S_IFDIR | 0750;
	ck_assert_int_eq(bfs_fs_acl_new(fs, d, &mode, 077, &na), 0);
	ck_assert_uint_eq(mode, S_IFDIR | 0640);	/* 6 & 7, mask 4 & 5, other 0 & 0 */
	ck_assert_ptr_nonnull(na.access);
	ck_assert_ptr_nonnull(na.dflt);
	ck_assert_uint_eq(na.dflt_len, n);
	bfs_fs_acl_new_free(&na);
	ck_assert_int_eq(bfs_fs_set_acl(fs, d, true, NULL, 0), 0);
	ck_assert_int_eq(bfs_fs_getxattr(fs, d, "system.posix_acl_default", NULL, 0), -ENODATA);
}
END_TEST

START_TEST(test_orphans_crash)
{
	struct bfs_dev *copy;
	struct bfs_fs *f2;
	struct bfs_stat st;
	u64 f, g, d;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	g = mk(BFS_ROOT_INO, "g", S_IFREG | 0644);
	d = mk(BFS_ROOT_INO, "d", S_IFDIR | 0755);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.big", "value", 5, 0), 0);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_inode_open(fs, g), 0);
	ck_assert_int_eq(bfs_fs_inode_open(fs, d), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), 0);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, S("d")), 0);
	ck_assert_int_eq(bfs_fs_sync(fs), 0);

	/* "crash": the device as it is now, without close or release */
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
	f2 = open_fs(copy, true);
	/* read-only: nothing freed */
	ck_assert_int_eq(bfs_fs_getattr(f2, f, &st), 0);
	ck_assert(orphan_key(f2, f));
	ck_assert_int_eq(bfs_fs_close(f2), 0);
	f2 = open_fs(copy, false);
	ck_assert_int_eq(bfs_fs_getattr(f2, f, &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_getattr(f2, d, &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_getattr(f2, g, &st), 0);
	ck_assert(!orphan_key(f2, f));
	ck_assert(!orphan_key(f2, d));
	ck_assert_int_eq(bfs_fs_getxattr(f2, f, "user.big", NULL, 0), -ENOENT);
	ck_assert_int_eq(bfs_fs_close(f2), 0);
	/* and it stays that way */
	f2 = open_fs(copy, false);
	ck_assert_int_eq(bfs_fs_getattr(f2, f, &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_close(f2), 0);
	bfs_dev_close(copy);

	/* the original is still live: release frees it normally */
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_inode_release(fs, g), 0);
	ck_assert_int_eq(bfs_fs_inode_release(fs, d), 0);
}
END_TEST

/* ---- xattrs ---- */

/*
 * bfs_fs_has_caps(): kept in memory for an open inode, so every change of
 * its xattrs (set, replace, remove, a failed create) must be seen by the
 * next call, and a closed inode is looked up afresh.
 */
START_TEST(test_has_caps)
{
	u64 f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644), g = mk(BFS_ROOT_INO, "g", S_IFREG | 0644);

	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 0);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 0);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "security.capability", "c", 1, 0), 0);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 1);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 1);
	ck_assert_int_eq(bfs_fs_has_caps(fs, g), 0);	/* per inode */
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "security.capability", "d", 1,
					 BFS_XATTR_CREATE), -EEXIST);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 1);
	ck_assert_int_eq(bfs_fs_removexattr(fs, f, "security.capability"), 0);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 0);
	/* another name leaves the answer as it is */
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "security.selinux", "ctx", 3, 0), 0);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "security.capability", "e", 1, 0), 0);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 1);
	ck_assert_int_eq(bfs_fs_removexattr(fs, f, "security.capability"), 0);
	ck_assert_int_eq(bfs_fs_has_caps(fs, f), 0);
	ck_assert_int_eq(bfs_fs_has_caps(fs, 999999), -ENOENT);
}
END_TEST

/*
 * bfs_fs_cache_*(): what the host page cache may hold, kept with the
 * references.  A write skips dropping pages (NONE) only while no open
 * through the cache and no fill happened since the inode got its first
 * reference or since the last clear; pages a closed open left (LEFT) stay
 * until a clear that no open or fill overtook.
 */
START_TEST(test_cache_state)
{
	u64 f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	u32 gen, gen2;

	/* no references: nothing known */
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_OPEN);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);		/* the kernel's lookup */
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_NONE);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);		/* a buffered open */
	bfs_fs_cache_open(fs, f);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);		/* and another */
	bfs_fs_cache_open(fs, f);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_OPEN);
	bfs_fs_cache_clear(fs, f, gen);				/* not while open */
	bfs_fs_cache_close(fs, f);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_OPEN);
	bfs_fs_cache_close(fs, f);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	/* closed: its pages may stay */
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_LEFT);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen2), BFS_CACHE_LEFT);
	ck_assert_uint_eq(gen, gen2);
	bfs_fs_cache_clear(fs, f, gen);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_NONE);
	/* a read through a direct open (a mapping) fills pages */
	bfs_fs_cache_fill(fs, f);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_LEFT);
	/* a fill, or an open and close, after the look overtakes the clear */
	bfs_fs_cache_fill(fs, f);
	bfs_fs_cache_clear(fs, f, gen);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_LEFT);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	bfs_fs_cache_open(fs, f);
	bfs_fs_cache_close(fs, f);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
	bfs_fs_cache_clear(fs, f, gen);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_LEFT);
	bfs_fs_cache_clear(fs, f, gen);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_NONE);
	/* the last reference (the kernel evicted the inode, pages and all) */
	bfs_fs_cache_fill(fs, f);
	ck_assert_int_eq(bfs_fs_inode_forget(fs, f, 1), 0);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_OPEN);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_NONE);
	/* a stray close, or calls for an inode without references, change nothing */
	bfs_fs_cache_close(fs, f);
	ck_assert_int_eq(bfs_fs_cache_state(fs, f, &gen), BFS_CACHE_NONE);
	bfs_fs_cache_open(fs, 999999);
	bfs_fs_cache_fill(fs, 999999);
	ck_assert_int_eq(bfs_fs_cache_state(fs, 999999, &gen), BFS_CACHE_OPEN);
	ck_assert_int_eq(bfs_fs_inode_release(fs, f), 0);
}
END_TEST

/*
 * bfs_fs_has_caps() from several threads (the FUSE workers' direct writes)
 * while one sets and removes the capability: every caller gets 0 or 1, and
 * the changer always sees its own change (for TSan: doc/commit.md).
 */
struct caps_race {
	u64 ino;
	int stop, bad;
};

static void *caps_reader(void *arg)
{
	struct caps_race *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		int n = bfs_fs_has_caps(fs, r->ino);

		if (n != 0 && n != 1)
			__atomic_store_n(&r->bad, n, __ATOMIC_RELEASE);
	}
	return NULL;
}

START_TEST(test_has_caps_threads)
{
	struct caps_race r = { .ino = mk(BFS_ROOT_INO, "f", S_IFREG | 0644) };
	pthread_t th[3];
	unsigned i;

	ck_assert_int_eq(bfs_fs_inode_open(fs, r.ino), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, caps_reader, &r), 0);
	for (i = 0; i < 200; i++) {
		ck_assert_int_eq(bfs_fs_setxattr(fs, r.ino, "security.capability", "c", 1, 0), 0);
		ck_assert_int_eq(bfs_fs_has_caps(fs, r.ino), 1);
		ck_assert_int_eq(bfs_fs_removexattr(fs, r.ino, "security.capability"), 0);
		ck_assert_int_eq(bfs_fs_has_caps(fs, r.ino), 0);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(r.bad, 0);
	ck_assert_int_eq(bfs_fs_inode_release(fs, r.ino), 0);
}
END_TEST

START_TEST(test_xattrs)
{
	char list[256], val[64];
	struct bfs_stat st, st2;
	u64 f;
	char longname[300];

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.a", val, sizeof(val)), -ENODATA);
	ck_assert_int_eq(bfs_fs_listxattr(fs, f, list, sizeof(list)), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.a", "hello", 5, 0), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st2), 0);
	ck_assert(st2.ctime.tv_sec > st.ctime.tv_sec ||
		  (st2.ctime.tv_sec == st.ctime.tv_sec && st2.ctime.tv_nsec > st.ctime.tv_nsec));
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.a", NULL, 0), 5);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.a", val, 4), -ERANGE);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.a", val, sizeof(val)), 5);
	ck_assert(!memcmp(val, "hello", 5));
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.a", "x", 1, BFS_XATTR_CREATE), -EEXIST);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.b", "x", 1, BFS_XATTR_REPLACE), -ENODATA);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.a", "bye", 3, BFS_XATTR_REPLACE), 0);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.a", val, sizeof(val)), 3);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.empty", "", 0, BFS_XATTR_CREATE), 0);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.empty", val, sizeof(val)), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "trusted.t", "1", 1, 0), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "security.selinux", "ctx", 3, 0), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "system.posix_acl_access", "acl", 3, 0), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "system.posix_acl_default", "dacl", 4, 0), 0);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "system.posix_acl_default", val, sizeof(val)), 4);
	/* unknown namespaces, bad names */
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "foo.bar", "x", 1, 0), -EOPNOTSUPP);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "system.other", "x", 1, 0), -EOPNOTSUPP);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "bogus", val, sizeof(val)), -EOPNOTSUPP);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.", "x", 1, 0), -EINVAL);
	memset(longname, 'n', sizeof(longname));
	memcpy(longname, "user.", 5);
	longname[255] = 0;
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, longname, "x", 1, 0), 0);
	longname[255] = 'n';
	longname[256] = 0;
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, longname, "x", 1, 0), -ERANGE);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, longname, val, sizeof(val)), -ERANGE);
	longname[255] = 0;
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.big", val, BFS_XATTR_SIZE_MAX + 1, 0), -E2BIG);
	ck_assert_int_eq(bfs_fs_setxattr(fs, 999999, "user.a", "x", 1, 0), -ENOENT);

	/* list: names with prefixes, size query, too small */
	{
		ssize_t need = bfs_fs_listxattr(fs, f, NULL, 0);
		char *big = malloc((size_t)need);
		size_t expect = sizeof("user.a") + sizeof("user.empty") + sizeof("trusted.t") +
				sizeof("security.selinux") + sizeof("system.posix_acl_access") +
				sizeof("system.posix_acl_default") + 256;

		ck_assert_int_eq(need, (ssize_t)expect);
		ck_assert_int_eq(bfs_fs_listxattr(fs, f, big, (size_t)need - 1), -ERANGE);
		ck_assert_int_eq(bfs_fs_listxattr(fs, f, big, (size_t)need), need);
		ck_assert_ptr_nonnull(memmem(big, (size_t)need, "user.a\0", 7));
		ck_assert_ptr_nonnull(memmem(big, (size_t)need, "\0system.posix_acl_access\0", 25) ||
				      !memcmp(big, "system.posix_acl_access", 24) ? big : NULL);
		ck_assert_ptr_nonnull(memmem(big, (size_t)need, "trusted.t", 10));
		free(big);
	}
	ck_assert_int_eq(bfs_fs_removexattr(fs, f, "user.a"), 0);
	ck_assert_int_eq(bfs_fs_removexattr(fs, f, "user.a"), -ENODATA);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.a", val, sizeof(val)), -ENODATA);
	/* directories and symlinks carry xattrs too */
	ck_assert_int_eq(bfs_fs_setxattr(fs, BFS_ROOT_INO, "user.dir", "d", 1, 0), 0);
	reopen();
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.empty", val, sizeof(val)), 0);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "security.selinux", val, sizeof(val)), 3);
	ck_assert_int_eq(bfs_fs_getxattr(fs, BFS_ROOT_INO, "user.dir", val, sizeof(val)), 1);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, longname, val, sizeof(val)), 1);
	/* unlink frees them with the inode */
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), 0);
	{
		struct bfs_btree_iter it;
		const struct bfs_bkey *k;

		bfs_btree_iter_init(&it, bfs_fs_core(fs), BFS_BTREE_XATTRS, BFS_POS(f, 0, 0), 0);
		ck_assert(bfs_btree_iter_peek(&it, &k) == -ENOENT || le64_to_cpu(k->inode) != f);
		bfs_btree_iter_exit(&it);
	}
}
END_TEST

static void fill_pattern(u8 *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (u8)(i * 31 + seed + (i >> 8));
}

/* big values on small nodes: chunked over many keys */
static void big_xattrs(void)
{
	size_t sizes[] = { BFS_XATTR_SIZE_MAX, 100, 20000, 0, BFS_XATTR_SIZE_MAX - 1 };
	u8 *v = malloc(BFS_XATTR_SIZE_MAX), *out = malloc(BFS_XATTR_SIZE_MAX);
	char name[32];
	unsigned i;
	u64 f;

	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	for (i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "user.big%u", i);
		fill_pattern(v, BFS_XATTR_SIZE_MAX, i);
		ck_assert_int_eq(bfs_fs_setxattr(fs, f, name, v, BFS_XATTR_SIZE_MAX, 0), 0);
	}
	/* shrinking and growing in place drops/adds chunks */
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		fill_pattern(v, sizes[i], 100 + i);
		ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.big0", v, sizes[i], 0), 0);
		ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.big0", out, BFS_XATTR_SIZE_MAX),
				 (ssize_t)sizes[i]);
		ck_assert(!memcmp(v, out, sizes[i]));
	}
	reopen();
	for (i = 1; i < 4; i++) {
		snprintf(name, sizeof(name), "user.big%u", i);
		fill_pattern(v, BFS_XATTR_SIZE_MAX, i);
		ck_assert_int_eq(bfs_fs_getxattr(fs, f, name, NULL, 0), BFS_XATTR_SIZE_MAX);
		ck_assert_int_eq(bfs_fs_getxattr(fs, f, name, out, BFS_XATTR_SIZE_MAX - 1), -ERANGE);
		ck_assert_int_eq(bfs_fs_getxattr(fs, f, name, out, BFS_XATTR_SIZE_MAX),
				 BFS_XATTR_SIZE_MAX);
		ck_assert(!memcmp(v, out, BFS_XATTR_SIZE_MAX));
	}
	ck_assert_int_eq(bfs_fs_removexattr(fs, f, "user.big2"), 0);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.big2", NULL, 0), -ENODATA);
	fill_pattern(v, BFS_XATTR_SIZE_MAX, 3);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.big3", out, BFS_XATTR_SIZE_MAX),
			 BFS_XATTR_SIZE_MAX);
	ck_assert(!memcmp(v, out, BFS_XATTR_SIZE_MAX));
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("f")), 0);
	free(v);
	free(out);
}

START_TEST(test_xattr_64k_nodes)
{
	ck_assert_int_lt(bfs_btree_max_key_u64s(bfs_fs_core(fs)) * 8, BFS_XATTR_SIZE_MAX);
	big_xattrs();
}
END_TEST

START_TEST(test_small_nodes)
{
	char target[BFS_SYMLINK_MAX + 1], out[BFS_SYMLINK_MAX];
	struct bfs_stat st;
	char name[BFS_NAME_MAX];

	/* 4 KiB nodes: keys of < 1 KiB, so symlinks and xattrs are chunked */
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
	dev = mkfs_mem(64 * MiB, 4 * KiB);
	fs = open_fs(dev, false);
	ck_assert_int_lt(bfs_btree_max_key_u64s(bfs_fs_core(fs)) * 8, 2048);
	memset(target, 't', BFS_SYMLINK_MAX);
	target[BFS_SYMLINK_MAX] = 0;
	ck_assert_int_eq(bfs_fs_symlink(fs, BFS_ROOT_INO, S("s"), target, &cr, &st), 0);
	memset(name, 'n', sizeof(name));
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, name, sizeof(name), S_IFREG, 0, &cr, NULL), 0);
	big_xattrs();
	ck_assert_int_eq(bfs_fs_readlink(fs, st.ino, out, sizeof(out)), BFS_SYMLINK_MAX);
	ck_assert(!memcmp(out, target, BFS_SYMLINK_MAX));
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, S("s")), 0);
	ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, name, sizeof(name), &st), 0);
}
END_TEST

START_TEST(test_xattr_too_big_for_journal)
{
	u8 *v = calloc(1, BFS_XATTR_SIZE_MAX);
	char out[8];
	u64 f;

	/* 64 KiB buckets: a journal entry cannot hold a 64 KiB value */
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
	dev = mkfs_mem_bucket(64 * MiB, 16 * KiB, 64 * KiB);
	fs = open_fs(dev, false);
	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.small", "1", 1, 0), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.small", v, BFS_XATTR_SIZE_MAX, 0), -E2BIG);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.small", out, sizeof(out)), 1);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.new", v, BFS_XATTR_SIZE_MAX, 0), -E2BIG);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.new", out, sizeof(out)), -ENODATA);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.new", v, 16000, 0), 0);
	reopen();
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.new", NULL, 0), 16000);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.small", out, sizeof(out)), 1);
	free(v);
}
END_TEST

START_TEST(test_xattr_collisions)
{
	char name[32], val[32];
	unsigned i;
	u64 f;

	bfs_ns_debug_hash_bits = 1;
	f = mk(BFS_ROOT_INO, "f", S_IFREG | 0644);
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "user.x%u", i);
		ck_assert_int_eq(bfs_fs_setxattr(fs, f, name, name, strlen(name), 0), 0);
	}
	for (i = 0; i < 20; i += 4) {
		snprintf(name, sizeof(name), "user.x%u", i);
		ck_assert_int_eq(bfs_fs_removexattr(fs, f, name), 0);
	}
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "user.x%u", i);
		ck_assert_int_eq(bfs_fs_getxattr(fs, f, name, val, sizeof(val)),
				 i % 4 ? (ssize_t)strlen(name) : -ENODATA);
	}
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.x0", "again", 5, BFS_XATTR_CREATE), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.x1", "z", 1, BFS_XATTR_CREATE), -EEXIST);
	reopen();
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.x0", val, sizeof(val)), 5);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.x19", val, sizeof(val)), 8);
	/* x0 x1 x2 x3 x5 x6 x7 x9 (8 bytes each with the NUL), x10 .. x19 but 12, 16 (9) */
	ck_assert_int_eq(bfs_fs_listxattr(fs, f, NULL, 0), 8 * 8 + 8 * 9);
}
END_TEST

START_TEST(test_statfs)
{
	struct bfs_statfs s;
	u64 before;

	ck_assert_int_eq(bfs_fs_statfs(fs, &s), 0);
	ck_assert_int_eq(s.bsize, 4096);
	ck_assert_int_eq(s.namemax, BFS_NAME_MAX);
	ck_assert_int_gt(s.blocks, 0);
	ck_assert_int_le(s.bfree, s.blocks);
	ck_assert_int_le(s.bavail, s.bfree);
	ck_assert_int_ge(s.files, s.ffree);
	before = s.files - s.ffree;
	mk(BFS_ROOT_INO, "f", S_IFREG);
	ck_assert_int_eq(bfs_fs_statfs(fs, &s), 0);
	ck_assert_int_eq(s.files - s.ffree, before + 1);
}
END_TEST

/* ---- key validation and printing ---- */

static int validate(const struct bfs_bkey *k, char *err)
{
	return bfs_bkey_validate(k, false, err, BFS_BKEY_ERR_LEN);
}

START_TEST(test_key_validation)
{
	u64 buf[64];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_dirent_v *dv = bfs_bkey_val(k);
	struct bfs_inode_v *iv = bfs_bkey_val(k);
	struct bfs_xattr_v *xv = bfs_bkey_val(k);
	char err[BFS_BKEY_ERR_LEN], text[512];
	struct bfs_ns_inode inode;

	/* a good dirent, then broken ones */
	memset(buf, 0, sizeof(buf));
	bfs_bkey_init(k, BFS_KEY_DIRENT, BFS_POS(1, 100, 0), 3);
	dv->ino = cpu_to_le64(7);
	dv->type = S_IFREG >> 12;
	dv->name_len = 5;
	memcpy(dv->name, "a\nb\xff" "c", 5);
	ck_assert_int_eq(validate(k, err), 0);
	bfs_bkey_to_text(text, sizeof(text), k);
	ck_assert_msg(strstr(text, "dirent 'a\\x0ab\\xffc' -> 7 (reg)"), "%s", text);
	dv->name_len = 17;
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	dv->name_len = 0;
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	dv->name_len = 5;
	dv->name[2] = '/';
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	dv->name[2] = 'b';
	dv->type = 3;
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	dv->type = S_IFDIR >> 12;
	dv->ino = cpu_to_le64(0);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	dv->ino = cpu_to_le64(7);
	dv->name_len = 2;
	memcpy(dv->name, "..", 2);
	memset(dv->name + 2, 0, 6);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	bfs_bkey_init(k, BFS_KEY_DIRENT, BFS_POS(1, 100, 0), 1);	/* too short */
	ck_assert_int_eq(validate(k, err), -EUCLEAN);

	/* inodes */
	bfs_ns_inode_init(&inode, S_IFREG | 0644, 1, 2, 0, 123456789012345678LL);
	inode.i.ino = 42;
	bfs_bkey_init(k, BFS_KEY_INODE, BFS_POS(42, 0, 0), BFS_INODE_V_U64S);
	bfs_ns_inode_encode(&inode, iv);
	ck_assert_int_eq(validate(k, err), 0);
	bfs_bkey_to_text(text, sizeof(text), k);
	ck_assert_msg(strstr(text, "ino 42 mode 0100644 nlink 1"), "%s", text);
	iv->mode = cpu_to_le32(0170644);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	iv->mode = cpu_to_le32(S_IFDIR | 0755);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);	/* directory without a parent */
	iv->parent = cpu_to_le64(1);
	ck_assert_int_eq(validate(k, err), 0);
	iv->flags = cpu_to_le32(1U << 30);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	bfs_bkey_init(k, BFS_KEY_INODE, BFS_POS(42, 0, 0), 4);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);

	/* xattrs */
	memset(buf, 0, sizeof(buf));
	bfs_bkey_init(k, BFS_KEY_XATTR, BFS_POS(1, 5 << 8, 0), 3);
	xv->ns = BFS_XATTR_USER;
	xv->name_len = 3;
	xv->value_len = cpu_to_le32(4);
	xv->inline_len = cpu_to_le32(4);
	memcpy(xv->data, "abcVVVV", 7);
	ck_assert_int_eq(validate(k, err), 0);
	bfs_bkey_to_text(text, sizeof(text), k);
	ck_assert_msg(strstr(text, "xattr user.abc value 4 bytes"), "%s", text);
	xv->ns = 9;
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	xv->ns = BFS_XATTR_USER;
	xv->inline_len = cpu_to_le32(40);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	xv->inline_len = cpu_to_le32(2);	/* the rest in chunks, but none */
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	xv->inline_len = cpu_to_le32(4);
	bfs_bkey_set_pos(k, BFS_POS(1, 5 << 8 | 1, 0));
	ck_assert_int_eq(validate(k, err), -EUCLEAN);

	/* orphans, whiteouts, counter, symlinks */
	bfs_bkey_init(k, BFS_KEY_ORPHAN, BFS_POS(0, 9, 0), 0);
	ck_assert_int_eq(validate(k, err), 0);
	bfs_bkey_init(k, BFS_KEY_ORPHAN, BFS_POS(0, 9, 0), 1);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	bfs_bkey_init(k, BFS_KEY_HASH_WHITEOUT, BFS_POS(3, 9, 0), 1);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	bfs_bkey_init(k, BFS_KEY_INODE_COUNTER, BFS_POS(0, 0, 0), 2);
	buf[4] = 1;
	buf[5] = 0;
	ck_assert_int_eq(validate(k, err), -EUCLEAN);
	bfs_bkey_init(k, BFS_KEY_SYMLINK, BFS_POS(5, 1, 0), 2);
	memset(buf + 4, 0, 16);
	((struct bfs_symlink_v *)bfs_bkey_val(k))->len = cpu_to_le16(100);
	((struct bfs_symlink_v *)bfs_bkey_val(k))->total = cpu_to_le16(100);
	ck_assert_int_eq(validate(k, err), -EUCLEAN);

	/* a corrupt key is refused by a transaction too */
	{
		struct bfs_trans *t;

		bfs_bkey_init(k, BFS_KEY_INODE, BFS_POS(42, 0, 0), 4);
		ck_assert_int_eq(bfs_trans_begin(bfs_fs_core(fs), &t), 0);
		ck_assert_int_ne(bfs_trans_update(t, BFS_BTREE_INODES, k), 0);
		bfs_trans_end(t);
	}
}
END_TEST

START_TEST(test_persistence)
{
	char val[16], buf[64];
	struct bfs_stat st;
	u64 d, f, s;

	d = mk(BFS_ROOT_INO, "dir", S_IFDIR | 0750);
	f = mk(d, "file", S_IFREG | 0640);
	ck_assert_int_eq(bfs_fs_symlink(fs, d, S("sym"), "file", &cr, &st), 0);
	s = st.ino;
	ck_assert_int_eq(bfs_fs_link(fs, f, BFS_ROOT_INO, S("hard"), &st), 0);
	ck_assert_int_eq(bfs_fs_setxattr(fs, f, "user.k", "v1", 2, 0), 0);
	ck_assert_int_eq(bfs_fs_rename(fs, BFS_ROOT_INO, S("dir"), BFS_ROOT_INO, S("dir2"), 0), 0);
	/* the journal alone (no clean close) brings it all back */
	ck_assert_int_eq(bfs_fs_fsync(fs, d, false), 0);
	{
		struct bfs_dev *copy;
		struct bfs_fs *f2;

		ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
		f2 = open_fs(copy, false);
		ck_assert_int_eq(bfs_fs_lookup(f2, BFS_ROOT_INO, S("dir2"), &st), 0);
		ck_assert_int_eq(st.ino, d);
		ck_assert_int_eq(bfs_fs_lookup(f2, d, S("file"), &st), 0);
		ck_assert_int_eq(st.nlink, 2);
		ck_assert_int_eq(bfs_fs_close(f2), 0);
		bfs_dev_close(copy);
	}
	reopen();
	ck_assert_int_eq(lookup(BFS_ROOT_INO, "dir", NULL), -ENOENT);
	ck_assert_int_eq(ino_of(BFS_ROOT_INO, "dir2"), d);
	ck_assert_int_eq(ino_of(d, "file"), f);
	ck_assert_int_eq(ino_of(BFS_ROOT_INO, "hard"), f);
	ck_assert_int_eq(nlink_of(f), 2);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_int_eq(st.mode, S_IFREG | 0640);
	ck_assert_int_eq(st.uid, 1000);
	ck_assert_int_eq(bfs_fs_readlink(fs, s, buf, sizeof(buf)), 4);
	ck_assert_int_eq(bfs_fs_getxattr(fs, f, "user.k", val, sizeof(val)), 2);
	ck_assert_int_eq(nlink_of(BFS_ROOT_INO), 4);
	ck_assert_int_eq(bfs_btree_verify(bfs_fs_core(fs), BFS_BTREE_DIRENTS), 0);
}
END_TEST

/* ---- concurrency ---- */

#define NR_THREADS	4
#define NR_DIRS		4

static u64 tdirs[NR_DIRS];

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg, i;
	char name[32], name2[32];
	struct bfs_stat st;

	for (i = 0; i < 400; i++) {
		u64 d1 = tdirs[rand_r(&seed) % NR_DIRS], d2 = tdirs[rand_r(&seed) % NR_DIRS];
		unsigned n = (unsigned)rand_r(&seed) % 40;

		snprintf(name, sizeof(name), "n%u", n);
		snprintf(name2, sizeof(name2), "n%u", (unsigned)rand_r(&seed) % 40);
		switch (rand_r(&seed) % 8) {
		case 0:
		case 1:
			bfs_fs_mknod(fs, d1, name, strlen(name), S_IFREG | 0644, 0, &cr, &st);
			break;
		case 2:
			bfs_fs_mkdir(fs, d1, name, strlen(name), 0755, &cr, &st);
			break;
		case 3:
			bfs_fs_unlink(fs, d1, name, strlen(name));
			break;
		case 4:
			bfs_fs_rmdir(fs, d1, name, strlen(name));
			break;
		case 5:
			bfs_fs_rename(fs, d1, name, strlen(name), d2, name2, strlen(name2),
				      rand_r(&seed) % 3 == 0 ? BFS_RENAME_EXCHANGE : 0);
			break;
		case 6:
			if (!bfs_fs_lookup(fs, d1, name, strlen(name), &st))
				bfs_fs_link(fs, st.ino, d2, name2, strlen(name2), &st);
			break;
		case 7: {
			/* whole top-level directories into each other: loops must be refused */
			unsigned a = (unsigned)rand_r(&seed) % NR_DIRS, b = (unsigned)rand_r(&seed) % NR_DIRS;
			char da[8], db[8];
			struct bfs_stat pa, pb;

			snprintf(da, sizeof(da), "t%u", a);
			snprintf(db, sizeof(db), "t%u", b);
			if (!bfs_fs_lookup(fs, tdirs[a], S(".."), &pa) &&
			    !bfs_fs_lookup(fs, tdirs[b], S(".."), &pb) && a != b)
				bfs_fs_rename(fs, pa.ino, S(da), tdirs[b], S(da), 0);
			break;
		}
		}
	}
	return NULL;
}

struct check_ctx {
	u64	dir;
	u32	subdirs;
	u64	entries;
};

static int check_fill(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next);

/* every entry points to an inode of its type, dir nlinks and ".." agree; returns #entries */
static u64 check_tree(u64 dir, unsigned depth)
{
	struct check_ctx c = { .dir = dir };
	struct bfs_stat st;

	ck_assert_int_lt(depth, 64);
	ck_assert_int_eq(bfs_fs_readdir(fs, dir, 2, check_fill, &c), 0);
	ck_assert_int_eq(bfs_fs_getattr(fs, dir, &st), 0);
	ck_assert_int_eq(st.nlink, 2 + c.subdirs);
	(void)depth;
	return c.entries;
}

static int check_fill(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct check_ctx *c = ctx;
	struct bfs_stat st, up;

	ck_assert_int_eq(bfs_fs_getattr(fs, ino, &st), 0);
	ck_assert_int_eq(st.mode >> 12, type);
	ck_assert_int_gt(st.nlink, 0);
	c->entries++;
	if (S_ISDIR(st.mode)) {
		c->subdirs++;
		ck_assert_int_eq(bfs_fs_lookup(fs, ino, S(".."), &up), 0);
		ck_assert_int_eq(up.ino, c->dir);
	}
	return 0;
}

/* recursion outside the readdir callback: collect subdirectories first */
static int collect_dirs(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct listing *l = ctx;

	if (type == (S_IFDIR >> 12))
		fill(l, name, len, ino, type, next);
	return 0;
}

static u64 walk(u64 dir, unsigned depth)
{
	struct listing l = { 0 };
	u64 n = check_tree(dir, depth);
	size_t i;

	ck_assert_int_eq(bfs_fs_readdir(fs, dir, 2, collect_dirs, &l), 0);
	for (i = 0; i < l.nr; i++)
		n += walk(l.inos[i], depth + 1);
	listing_free(&l);
	return n;
}

START_TEST(test_threads)
{
	bfs_thread th[NR_THREADS];
	char name[8];
	unsigned i;
	u64 before;

	for (i = 0; i < NR_DIRS; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		tdirs[i] = mk(BFS_ROOT_INO, name, S_IFDIR | 0755);
	}
	for (i = 0; i < NR_THREADS; i++)
		ck_assert_int_eq(bfs_thread_create(&th[i], worker, (void *)(uintptr_t)(i + 1)), 0);
	for (i = 0; i < NR_THREADS; i++)
		bfs_thread_join(th[i]);
	before = walk(BFS_ROOT_INO, 0);
	if (getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "threads: %llu entries\n", (unsigned long long)before);
	reopen();
	ck_assert_int_eq(walk(BFS_ROOT_INO, 0), before);
}
END_TEST

/* ---- random operations against a model ---- */

#define M_INOS	2048
#define M_NAMES	12

struct model {
	/* ents[slot]: directory entry (dir, name index) -> ino, 0 = none */
	u64	dir_of[M_INOS * 4];
	u8	name_of[M_INOS * 4];
	u64	ino_of[M_INOS * 4];
	unsigned nr_ents;
	u64	dirs[M_INOS];
	unsigned nr_dirs;
};

static struct model m;

static int m_find(u64 dir, unsigned name)
{
	unsigned i;

	for (i = 0; i < m.nr_ents; i++)
		if (m.dir_of[i] == dir && m.name_of[i] == name)
			return (int)i;
	return -1;
}

static void m_del(int i)
{
	m.nr_ents--;
	m.dir_of[i] = m.dir_of[m.nr_ents];
	m.name_of[i] = m.name_of[m.nr_ents];
	m.ino_of[i] = m.ino_of[m.nr_ents];
}

static void m_add(u64 dir, unsigned name, u64 ino)
{
	ck_assert_int_lt(m.nr_ents, ARRAY_SIZE(m.dir_of));
	m.dir_of[m.nr_ents] = dir;
	m.name_of[m.nr_ents] = (u8)name;
	m.ino_of[m.nr_ents++] = ino;
}

static bool m_is_dir(u64 ino)
{
	unsigned i;

	for (i = 0; i < m.nr_dirs; i++)
		if (m.dirs[i] == ino)
			return true;
	return false;
}

static void m_drop_dir(u64 ino)
{
	unsigned i;

	for (i = 0; i < m.nr_dirs; i++) {
		if (m.dirs[i] == ino) {
			m.dirs[i] = m.dirs[--m.nr_dirs];
			return;
		}
	}
}

static unsigned m_links(u64 ino)
{
	unsigned i, n = 0;

	for (i = 0; i < m.nr_ents; i++)
		n += m.ino_of[i] == ino;
	return n;
}

static bool m_empty(u64 dir)
{
	unsigned i;

	for (i = 0; i < m.nr_ents; i++)
		if (m.dir_of[i] == dir)
			return false;
	return true;
}

/* compare every model directory with the filesystem */
static void m_check(void)
{
	unsigned i, j;

	for (i = 0; i < m.nr_dirs; i++) {
		u64 dir = m.dirs[i];
		struct listing l = { 0 };
		unsigned expect = 0, subdirs = 0;

		ck_assert_int_eq(bfs_fs_readdir(fs, dir, 2, fill, &l), 0);
		for (j = 0; j < m.nr_ents; j++) {
			char name[8];
			struct bfs_stat st;

			if (m.dir_of[j] != dir)
				continue;
			expect++;
			subdirs += m_is_dir(m.ino_of[j]);
			snprintf(name, sizeof(name), "m%u", m.name_of[j]);
			ck_assert_int_eq(lookup(dir, name, &st), 0);
			ck_assert_int_eq(st.ino, m.ino_of[j]);
			if (!m_is_dir(st.ino))
				ck_assert_int_eq(st.nlink, m_links(st.ino));
		}
		ck_assert_int_eq(l.nr, expect);
		ck_assert_int_eq(nlink_of(dir), 2 + subdirs);
		listing_free(&l);
	}
}

static void m_step(unsigned *seed)
{
	unsigned op = (unsigned)rand_r(seed) % 10, n1 = (unsigned)rand_r(seed) % M_NAMES;
	unsigned n2 = (unsigned)rand_r(seed) % M_NAMES;
	u64 d1 = m.dirs[(unsigned)rand_r(seed) % m.nr_dirs];
	u64 d2 = m.dirs[(unsigned)rand_r(seed) % m.nr_dirs];
	int e1 = m_find(d1, n1), e2 = m_find(d2, n2);
	char a[8], b[8];
	struct bfs_stat st;
	int ret;

	snprintf(a, sizeof(a), "m%u", n1);
	snprintf(b, sizeof(b), "m%u", n2);
	switch (op) {
	case 0:
	case 1:
		ret = bfs_fs_mknod(fs, d1, S(a), S_IFREG | 0644, 0, &cr, &st);
		ck_assert_int_eq(ret, e1 >= 0 ? -EEXIST : 0);
		if (!ret)
			m_add(d1, n1, st.ino);
		break;
	case 2:
		ret = bfs_fs_mkdir(fs, d1, S(a), 0755, &cr, &st);
		ck_assert_int_eq(ret, e1 >= 0 ? -EEXIST : 0);
		if (!ret) {
			m_add(d1, n1, st.ino);
			m.dirs[m.nr_dirs++] = st.ino;
		}
		break;
	case 3:
		ret = bfs_fs_unlink(fs, d1, S(a));
		ck_assert_int_eq(ret, e1 < 0 ? -ENOENT : m_is_dir(m.ino_of[e1]) ? -EISDIR : 0);
		if (!ret)
			m_del(e1);
		break;
	case 4:
		ret = bfs_fs_rmdir(fs, d1, S(a));
		ck_assert_int_eq(ret, e1 < 0 ? -ENOENT : !m_is_dir(m.ino_of[e1]) ? -ENOTDIR :
				 !m_empty(m.ino_of[e1]) ? -ENOTEMPTY : 0);
		if (!ret) {
			m_drop_dir(m.ino_of[e1]);
			m_del(e1);
		}
		break;
	case 5:
		if (e1 < 0)
			break;
		ret = bfs_fs_link(fs, m.ino_of[e1], d2, S(b), &st);
		ck_assert_int_eq(ret, m_is_dir(m.ino_of[e1]) ? -EPERM : e2 >= 0 ? -EEXIST : 0);
		if (!ret)
			m_add(d2, n2, m.ino_of[e1]);
		break;
	default: {
		unsigned flags = op == 9 ? BFS_RENAME_EXCHANGE : op == 8 ? BFS_RENAME_NOREPLACE : 0;
		u64 src, tgt;

		ret = bfs_fs_rename(fs, d1, S(a), d2, S(b), flags);
		if (e1 < 0) {
			ck_assert_int_eq(ret, -ENOENT);
			break;
		}
		src = m.ino_of[e1];
		tgt = e2 >= 0 ? m.ino_of[e2] : 0;
		if (e2 >= 0 && flags == BFS_RENAME_NOREPLACE) {
			ck_assert_int_eq(ret, -EEXIST);
			break;
		}
		if (e2 < 0 && flags == BFS_RENAME_EXCHANGE) {
			ck_assert_int_eq(ret, -ENOENT);
			break;
		}
		if (src == tgt) {
			ck_assert_int_eq(ret, 0);
			break;
		}
		if (ret == -EINVAL || ret == -ENOTEMPTY) {
			/* loops and non-empty targets: only for directories */
			ck_assert(m_is_dir(src) || (tgt && m_is_dir(tgt)));
			break;
		}
		if (tgt && !flags && m_is_dir(src) != m_is_dir(tgt)) {
			ck_assert_int_eq(ret, m_is_dir(src) ? -ENOTDIR : -EISDIR);
			break;
		}
		ck_assert_msg(!ret, "rename %s -> %s: %d", a, b, ret);
		if (flags == BFS_RENAME_EXCHANGE) {
			m.ino_of[e1] = tgt;
			m.ino_of[e2] = src;
		} else {
			if (e2 >= 0) {
				ck_assert(!m_is_dir(tgt) || m_empty(tgt));
				if (m_is_dir(tgt))
					m_drop_dir(tgt);
				m.ino_of[e2] = src;
				m_del(e1);
			} else {
				m.dir_of[e1] = d2;
				m.name_of[e1] = (u8)n2;
			}
		}
		break;
	}
	}
}

/* the state after bfs_fs_sync() is what a crash right then leaves */
static void m_check_crash(void)
{
	struct bfs_fs *orig = fs;
	struct bfs_dev *copy;

	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
	fs = open_fs(copy, false);
	m_check();
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(copy);
	fs = orig;
}

START_TEST(test_model)
{
	unsigned seed = 12345, i;

	memset(&m, 0, sizeof(m));
	m.dirs[m.nr_dirs++] = mk(BFS_ROOT_INO, "model", S_IFDIR | 0755);
	for (i = 0; i < 6000; i++) {
		m_step(&seed);
		if (i % 1000 == 499)
			m_check_crash();
		if (i % 1000 == 999) {
			m_check();
			reopen();
			m_check();
		}
	}
	if (getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "model: %u entries, %u directories\n", m.nr_ents, m.nr_dirs);
	/* with colliding hashes too */
	bfs_ns_debug_hash_bits = 3;
	memset(&m, 0, sizeof(m));
	m.dirs[m.nr_dirs++] = mk(BFS_ROOT_INO, "model2", S_IFDIR | 0755);
	for (i = 0; i < 3000; i++) {
		m_step(&seed);
		if (i % 500 == 499) {
			m_check();
			reopen();
			m_check();
		}
	}
}
END_TEST

static Suite *fs_namespace_suite(void)
{
	Suite *s = suite_create("fs_namespace");
	TCase *tc = tcase_create("namespace");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_root_and_format);
	tcase_add_test(tc, test_create_kinds);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_link_unlink_rmdir);
	tcase_add_test(tc, test_link_max);
	tcase_add_test(tc, test_setattr);
	tcase_add_test(tc, test_read_only);
	tcase_add_test(tc, test_readdir_cookies);
	tcase_add_test(tc, test_big_directory);
	tcase_add_test(tc, test_hash_collisions);
	tcase_add_test(tc, test_hash_collision_chain_ends);
	tcase_add_test(tc, test_rename_basic);
	tcase_add_test(tc, test_rename_types);
	tcase_add_test(tc, test_rename_exchange);
	tcase_add_test(tc, test_rename_loops);
	tcase_add_test(tc, test_orphans);
	tcase_add_test(tc, test_orphans_forget);
	tcase_add_test(tc, test_atime);
	tcase_add_test(tc, test_read_atime_due);
	tcase_add_test(tc, test_inode_flags);
	tcase_add_test(tc, test_acl);
	tcase_add_test(tc, test_orphans_crash);
	tcase_add_test(tc, test_xattrs);
	tcase_add_test(tc, test_has_caps);
	tcase_add_test(tc, test_cache_state);
	tcase_add_test(tc, test_has_caps_threads);
	tcase_add_test(tc, test_xattr_64k_nodes);
	tcase_add_test(tc, test_small_nodes);
	tcase_add_test(tc, test_xattr_too_big_for_journal);
	tcase_add_test(tc, test_xattr_collisions);
	tcase_add_test(tc, test_statfs);
	tcase_add_test(tc, test_key_validation);
	tcase_add_test(tc, test_persistence);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_model);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(fs_namespace_suite)
