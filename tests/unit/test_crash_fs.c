// SPDX-License-Identifier: MIT
/*
 * Crash tests of filesystem operations.
 *
 * A workload of file and directory operations (create, write, truncate,
 * punch hole, rename, link, unlink, mkdir, rmdir, symlink, setxattr,
 * removexattr, setfacl, chmod of a file with an ACL, fsync of files and
 * directories) runs
 * on a recorded memory device.  After every operation the whole tree is
 * read back and its state hashed (names, types, sizes, link counts, file
 * contents, symlink targets, xattrs, permission bits and access ACLs: a
 * chmod or setfacl changes both at once or neither).  Each crashed state built from the I/O log (crash_states.h)
 * must open (replaying the journal), pass bfs_btree_verify(), and show
 * exactly the tree after some operation T with
 *   last fsync'd operation <= T <= last operation begun,
 * so everything fsync'd is there with its exact contents, and every
 * operation is atomic.  (In bfs every fsync flushes the whole journal, so
 * an fsync makes every earlier operation durable too; this test relies on
 * that documented behaviour.)
 *
 * The filesystem cuts data into 16 KiB chunks (BFS_CRASH_DATA_CHUNK, bytes,
 * 0 for format's default): writes of up to 96 KiB then span several
 * chunks, most of them cut at a chunk boundary inside the write.  Half the
 * writes ask for the page cache (BFS_WRITE_CACHED, a mount's buffered
 * writes), half go direct from 64 KiB on (a mount's O_DIRECT writes).
 *
 * Environment: BFS_CRASH_FS_OPS (default 1000), BFS_CRASH_SEED,
 * BFS_CRASH_DATA_CHUNK and the crash_states.h variables.
 */
#include "crash_states.h"
#include "unit.h"

#include <bfs/btree.h>
#include <bfs/checksum.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NR_DIRS		3
#define NR_FILES	6
#define MAX_OFF		(48 * 1024)
#define MAX_WRITE	(96 * 1024)

struct buf {
	char *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		b->cap = (b->len + len) * 2 + 256;
		b->p = bfs_realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

/* ---- hashing the whole tree ---- */

struct name_list {
	char (*names)[256];
	u64 *inos;
	int nr;
};

static int collect(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct name_list *l = ctx;

	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	l->names = bfs_realloc(l->names, (l->nr + 1) * sizeof(*l->names));
	l->inos = bfs_realloc(l->inos, (l->nr + 1) * sizeof(*l->inos));
	memcpy(l->names[l->nr], name, len);
	l->names[l->nr][len] = '\0';
	l->inos[l->nr++] = ino;
	return 0;
}

static int hash_dir(struct bfs_fs *fs, u64 dir, struct buf *out);

/* append the canonical description of inode @ino called @name */
static int hash_inode(struct bfs_fs *fs, const char *name, u64 ino, struct buf *out)
{
	static u8 data[MAX_OFF + MAX_WRITE + 4096];
	struct bfs_stat st;
	char line[512];
	ssize_t n;
	int ret;

	ret = bfs_fs_getattr(fs, ino, &st);
	if (ret)
		return ret;
	snprintf(line, sizeof(line), "%s %o %u %llu", name, st.mode, st.nlink,
		 (unsigned long long)(S_ISDIR(st.mode) ? 0 : st.size));
	buf_add(out, line, strlen(line) + 1);
	n = bfs_fs_listxattr(fs, ino, (char *)data, sizeof(data));
	if (n < 0)
		return (int)n;
	if (n > 0) {
		/* names in list order are hash order: the values of the known names */
		static const char *const names[] = { "user.a", "user.b", "user.c",
						     "system.posix_acl_access" };
		u8 val[512];
		size_t i;

		for (i = 0; i < ARRAY_SIZE(names); i++) {
			ssize_t vl = bfs_fs_getxattr(fs, ino, names[i], val, sizeof(val));

			if (vl == -ENODATA)
				continue;
			if (vl < 0)
				return (int)vl;
			buf_add(out, names[i], strlen(names[i]) + 1);
			buf_add(out, val, (size_t)vl);
		}
	}
	if (S_ISLNK(st.mode)) {
		n = bfs_fs_readlink(fs, ino, (char *)data, sizeof(data));
		if (n < 0)
			return (int)n;
		buf_add(out, data, (size_t)n);
	}
	if (S_ISREG(st.mode)) {
		u64 h;

		if (st.size > sizeof(data))
			return -EFBIG;
		n = bfs_fs_read(fs, ino, data, st.size, 0);
		if (n != (ssize_t)st.size)
			return n < 0 ? (int)n : -EIO;
		h = bfs_xxh3(data, st.size);
		buf_add(out, &h, sizeof(h));
	} else if (S_ISDIR(st.mode)) {
		buf_add(out, "{", 1);
		ret = hash_dir(fs, ino, out);
		buf_add(out, "}", 1);
	}
	return ret;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int hash_dir(struct bfs_fs *fs, u64 dir, struct buf *out)
{
	struct name_list l = { 0 };
	int ret, i;

	ret = bfs_fs_readdir(fs, dir, 0, collect, &l);
	for (i = 0; !ret && i < l.nr; i++) {
		struct bfs_stat st;

		ret = bfs_fs_lookup(fs, dir, l.names[i], strlen(l.names[i]), &st);
		if (!ret && st.ino != l.inos[i])
			ret = -EUCLEAN;
	}
	/* readdir order is hash order: sort names, inode numbers follow lookups */
	if (l.nr)
		qsort(l.names, (size_t)l.nr, sizeof(*l.names), cmp_names);
	for (i = 0; !ret && i < l.nr; i++) {
		struct bfs_stat st;

		ret = bfs_fs_lookup(fs, dir, l.names[i], strlen(l.names[i]), &st);
		if (!ret)
			ret = hash_inode(fs, l.names[i], st.ino, out);
	}
	bfs_free(l.names);
	bfs_free(l.inos);
	return ret;
}

static int tree_hash(struct bfs_fs *fs, u64 *h)
{
	struct buf b = { 0 };
	int ret = hash_dir(fs, BFS_ROOT_INO, &b);

	*h = bfs_xxh3(b.p, b.len);
	bfs_free(b.p);
	return ret;
}

/* ---- the workload ---- */

struct workload {
	struct bfs_fs *fs;
	struct bfs_dev *dev;
	u64 rng;
	u64 dirs[NR_DIRS];
	u32 nr_ops;
	u64 *hash;		/* hash[T]: the tree after operation T */
	u32 fsyncs;
};

static u64 below(struct workload *w, u64 n)
{
	return crash_splitmix(&w->rng) % n;
}

static void name_of(char *out, u64 i)
{
	snprintf(out, 16, "f%llu", (unsigned long long)i);
}

static u64 pick_dir(struct workload *w)
{
	return w->dirs[below(w, NR_DIRS)];
}

/*
 * setfacl u::rw-,u:1000+N:PERM,g::r--,m::PERM,o::---: a named entry, so the
 * ACL is stored and the group bits of the mode become the mask
 */
static size_t acl_value(u8 *buf, u32 n, u16 perm)
{
	const u16 ent[][3] = {
		{ BFS_ACL_USER_OBJ, 6, 0 }, { BFS_ACL_USER, perm, (u16)(1000 + n) },
		{ BFS_ACL_GROUP_OBJ, 4, 0 }, { BFS_ACL_MASK, perm, 0 }, { BFS_ACL_OTHER, 0, 0 },
	};
	struct bfs_acl_header h = { .version = cpu_to_le32(BFS_ACL_VERSION) };
	size_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = 0; i < ARRAY_SIZE(ent); i++) {
		struct bfs_acl_entry e = { .tag = cpu_to_le16(ent[i][0]),
					   .perm = cpu_to_le16(ent[i][1]),
					   .id = cpu_to_le32(ent[i][2]) };

		memcpy(buf + sizeof(h) + i * sizeof(e), &e, sizeof(e));
	}
	return sizeof(h) + ARRAY_SIZE(ent) * sizeof(struct bfs_acl_entry);
}

/* one operation; failures with an errno are fine (the model is the tree itself) */
static void one_op(struct workload *w)
{
	struct bfs_creds cr = { 0, 0 };
	u64 d = pick_dir(w), d2 = pick_dir(w);
	char n[16], n2[16];
	struct bfs_stat st;
	u64 r = below(w, 100);
	/* up to 16 KiB mostly; some of 64 KiB and more, which go direct unless cached */
	static u8 data[MAX_WRITE];

	name_of(n, below(w, NR_FILES));
	name_of(n2, below(w, NR_FILES));
	if (r < 15) {
		bfs_fs_mknod(w->fs, d, n, strlen(n), S_IFREG | 0644, 0, &cr, &st);
	} else if (r < 45) {
		if (!bfs_fs_lookup(w->fs, d, n, strlen(n), &st) && S_ISREG(st.mode)) {
			u64 off = below(w, MAX_OFF), i;
			u64 len = 1 + below(w, r < 40 ? 16384 : sizeof(data));
			unsigned flags = below(w, 2) ? BFS_WRITE_CACHED : 0;

			for (i = 0; i < len; i++)
				data[i] = (u8)crash_splitmix(&w->rng);
			ck_assert_int_eq(bfs_fs_write_flags(w->fs, st.ino, data, len, off, flags),
					 (ssize_t)len);
		}
	} else if (r < 49) {
		if (!bfs_fs_lookup(w->fs, d, n, strlen(n), &st) && S_ISREG(st.mode)) {
			struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = below(w, MAX_OFF) };

			ck_assert_int_eq(bfs_fs_setattr(w->fs, st.ino, &sa, &st), 0);
		}
	} else if (r < 52) {
		if (!bfs_fs_lookup(w->fs, d, n, strlen(n), &st) && S_ISREG(st.mode))
			ck_assert_int_eq(bfs_fs_fallocate(w->fs, st.ino, BFS_FALLOC_PUNCH_HOLE |
							  BFS_FALLOC_KEEP_SIZE, below(w, MAX_OFF),
							  1 + below(w, 20000)), 0);
	} else if (r < 58) {
		static const char *const xn[] = { "user.a", "user.b", "user.c" };

		/* user.* xattrs are for files and directories only (as in Linux) */
		if (!bfs_fs_lookup(w->fs, d, n, strlen(n), &st) && !S_ISLNK(st.mode)) {
			const char *x = xn[below(w, 3)];
			u64 vl = below(w, 300), i;

			for (i = 0; i < vl; i++)
				data[i] = (u8)crash_splitmix(&w->rng);
			if (below(w, 4))
				ck_assert_int_eq(bfs_fs_setxattr(w->fs, st.ino, x, data, vl, 0), 0);
			else
				bfs_fs_removexattr(w->fs, st.ino, x);
		}
	} else if (r < 61) {
		bfs_fs_symlink(w->fs, d, n, strlen(n), n2, &cr, &st);
	} else if (r < 64) {
		bfs_fs_rename(w->fs, d, n, strlen(n), d2, n2, strlen(n2), 0);
	} else if (r < 70) {
		if (!bfs_fs_lookup(w->fs, d, n, strlen(n), &st) && S_ISREG(st.mode))
			bfs_fs_link(w->fs, st.ino, d2, n2, strlen(n2), &st);
	} else if (r < 80) {
		bfs_fs_unlink(w->fs, d, n, strlen(n));
	} else if (r < 84) {
		bfs_fs_mkdir(w->fs, d, "sub", 3, 0755, &cr, &st);
	} else if (r < 87) {
		bfs_fs_rmdir(w->fs, d, "sub", 3);
	} else if (r < 89) {
		u8 acl[64];
		size_t len = acl_value(acl, (u32)below(w, 4), (u16)below(w, 8));

		if (!bfs_fs_lookup(w->fs, d, n, strlen(n), &st) && S_ISREG(st.mode))
			ck_assert_int_eq(bfs_fs_set_acl(w->fs, st.ino, false, acl, len), 0);
	} else if (r < 91) {
		/* chmod on a mount with ACLs: the mode and the access ACL together */
		struct bfs_setattr sa = { .valid = BFS_SET_MODE | BFS_SET_ACL_MODE,
					  .mode = (u32)below(w, 01000) };

		if (!bfs_fs_lookup(w->fs, d, n, strlen(n), &st) && S_ISREG(st.mode))
			ck_assert_int_eq(bfs_fs_setattr(w->fs, st.ino, &sa, &st), 0);
	} else {
		/* fsync a file or a directory: everything so far becomes durable */
		u64 ino = d;

		if (r < 96 && !bfs_fs_lookup(w->fs, d, n, strlen(n), &st))
			ino = st.ino;
		ck_assert_int_eq(bfs_fs_fsync(w->fs, ino, below(w, 2)), 0);
		crash_mark(w->dev, 'f', w->nr_ops);
		w->fsyncs++;
	}
}

/* the starting tree, made before recording begins */
static void make_dirs(struct workload *w)
{
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat st;
	char n[16];
	int i;

	ck_assert_int_eq(bfs_fs_open(w->dev, &(struct bfs_fs_opts){ 0 }, &w->fs), 0);
	for (i = 0; i < NR_DIRS; i++) {
		snprintf(n, sizeof(n), "d%d", i);
		ck_assert_int_eq(bfs_fs_mkdir(w->fs, BFS_ROOT_INO, n, strlen(n), 0755, &cr, &st), 0);
		w->dirs[i] = st.ino;
	}
	ck_assert_int_eq(bfs_fs_close(w->fs), 0);
}

static void run_workload(struct workload *w, u32 nr_ops)
{
	ck_assert_int_eq(bfs_fs_open(w->dev, &(struct bfs_fs_opts){ 0 }, &w->fs), 0);
	w->hash = bfs_calloc(nr_ops + 1, sizeof(*w->hash));
	ck_assert_int_eq(tree_hash(w->fs, &w->hash[0]), 0);
	crash_mark(w->dev, 'f', 0);
	while (w->nr_ops < nr_ops) {
		crash_mark(w->dev, 'c', w->nr_ops + 1);
		one_op(w);
		w->nr_ops++;
		ck_assert_int_eq(tree_hash(w->fs, &w->hash[w->nr_ops]), 0);
	}
	ck_assert_int_eq(bfs_fs_close(w->fs), 0);
	crash_mark(w->dev, 'f', w->nr_ops);
}

/* ---- checking a crashed state ---- */

static bool check_cb(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct workload *w = ctx;
	struct bfs_fs *fs;
	u32 t, hi = BFS_MIN(BFS_MAX(mk.c, mk.f), w->nr_ops);
	u64 h;
	int ret;

	if (!crash_open_verified(img, &fs, why))
		return false;
	ret = tree_hash(fs, &h);
	if (ret) {
		snprintf(why, 512, "reading the tree failed: %s", strerror(-ret));
		bfs_fs_close(fs);
		return false;
	}
	if (!crash_close_recovered(fs, true, why))
		return false;
	for (t = mk.f; t <= hi; t++)
		if (w->hash[t] == h)
			return true;
	snprintf(why, 512, "the tree matches no operation from %u (last fsync) to %u", mk.f, hi);
	return false;
}

/* run the workload on @dev (made here) and check every crash state of its log */
static void crash_fs_run(struct bfs_dev *dev, u64 dev_bytes, u32 nr_ops, const char *what)
{
	struct workload w = { .rng = crash_env_u64("BFS_CRASH_SEED", 1), .dev = dev };
	struct bfs_format_opts fo = {
		.data_chunk = (u32)crash_env_u64("BFS_CRASH_DATA_CHUNK", 16 * KiB),
	};
	struct crash_result res;
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("crash-fs-log");
	struct bfs_dev *base;

	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(w.dev, sb), 0);
	make_dirs(&w);
	ck_assert_int_eq(bfs_dev_clone_mem(w.dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(w.dev, logpath), 0);
	run_workload(&w, nr_ops);
	ck_assert_int_eq(bfs_dev_record_stop(w.dev), 0);

	crash_build_states(logpath, base, w.rng ^ 0x7777, check_cb, &w, &res);
	printf("crash-fs (%s): %u operations, %u fsyncs, %zu log entries; %u crash states checked "
	       "(%u flush points, %u random), %u failed\n", what, w.nr_ops, w.fsyncs,
	       res.log_entries, res.states, res.flush_states, res.random_states, res.failures);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);
	unlink(logpath);
	free(logpath);
	bfs_free(w.hash);
	bfs_free(sb);
	bfs_dev_close(base);
}

START_TEST(test_crash_fs)
{
	u64 dev_bytes = 64 * MiB;
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &dev), 0);
	crash_fs_run(dev, dev_bytes, (u32)crash_env_u64("BFS_CRASH_FS_OPS", 1000), "memory");
	bfs_dev_close(dev);
}
END_TEST

/*
 * The same on an image file opened as a mount opens it: O_DIRECT where the
 * test filesystem takes it, the data path's batches through io_uring, so
 * the log holds the writes of a batch in the order they completed.
 */
START_TEST(test_crash_fs_file)
{
	u64 dev_bytes = 64 * MiB;
	char *path = bfs_unit_tmpfile("crash-fs-img");
	struct bfs_dev *dev;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)dev_bytes), 0);
	close(fd);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &dev), 0);
	crash_fs_run(dev, dev_bytes, (u32)crash_env_u64("BFS_CRASH_FS_FILE_OPS", 300),
		     bfs_dev_is_direct(dev) ? "image file, direct" : "image file, buffered");
	bfs_dev_close(dev);
	unlink(path);
	free(path);
}
END_TEST

/*
 * chmod on a file with an access ACL while another thread keeps making
 * everything durable (as the periodic commit and other fsyncs do on a
 * mount): in every crash state the permission bits and the ACL's owner,
 * mask and other entries agree.  Were they two transactions, a flush
 * between them would leave a state where they do not.
 */
#define ACL_CHMODS	300

struct acl_race {
	struct bfs_fs	*fs;
	volatile bool	stop;
	unsigned	syncs;
};

static void *sync_loop(void *arg)
{
	struct acl_race *r = arg;

	while (!r->stop) {
		ck_assert_int_eq(bfs_fs_sync(r->fs), 0);
		r->syncs++;
	}
	return NULL;
}

static bool acl_agrees_cb(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	u64 ino = *(u64 *)ctx;
	struct bfs_fs *fs;
	struct bfs_stat st;
	u8 acl[64], scratch[64];
	ssize_t n;
	int ret;
	u32 want;

	(void)mk;
	ret = bfs_fs_open(img, &(struct bfs_fs_opts){ 0 }, &fs);
	if (ret) {
		snprintf(why, 512, "open failed: %s", strerror(-ret));
		return false;
	}
	ret = bfs_fs_getattr(fs, ino, &st);
	n = ret ? ret : bfs_fs_getxattr(fs, ino, "system.posix_acl_access", acl, sizeof(acl));
	bfs_fs_close(fs);
	if (n != (ssize_t)acl_value(scratch, 0, 0)) {
		snprintf(why, 512, "the file or its ACL is gone (%zd)", n);
		return false;
	}
	/* acl_value(): user_obj, user, group_obj, mask, other; perm at byte 2 of each */
	want = (u32)acl[4 + 0 * 8 + 2] << 6 | (u32)acl[4 + 3 * 8 + 2] << 3 | acl[4 + 4 * 8 + 2];
	if ((st.mode & 0777) == want)
		return true;
	snprintf(why, 512, "mode %03o, the access ACL says %03o", st.mode & 0777, want);
	return false;
}

START_TEST(test_crash_acl_chmod)
{
	u64 dev_bytes = 64 * MiB, rng = crash_env_u64("BFS_CRASH_SEED", 1), ino;
	struct bfs_format_opts fo = { 0 };
	struct bfs_creds cr = { 0, 0 };
	struct acl_race r = { 0 };
	struct crash_result res;
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("crash-acl-log");
	struct bfs_dev *dev, *base;
	struct bfs_stat st;
	pthread_t th;
	u8 acl[64];
	int i;

	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &r.fs), 0);
	ck_assert_int_eq(bfs_fs_mknod(r.fs, BFS_ROOT_INO, "f", 1, S_IFREG | 0644, 0, &cr, &st), 0);
	ino = st.ino;
	ck_assert_int_eq(bfs_fs_set_acl(r.fs, ino, false, acl, acl_value(acl, 0, 6)), 0);
	ck_assert_int_eq(bfs_fs_close(r.fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &r.fs), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, sync_loop, &r), 0);
	/* the yield lets flushes land among the chmods */
	for (i = 0; i < ACL_CHMODS; i++) {
		struct bfs_setattr sa = { .valid = BFS_SET_MODE | BFS_SET_ACL_MODE,
					  .mode = (u32)(crash_splitmix(&rng) % 01000) };

		ck_assert_int_eq(bfs_fs_setattr(r.fs, ino, &sa, &st), 0);
		sched_yield();
	}
	r.stop = true;
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(bfs_fs_close(r.fs), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	crash_build_states(logpath, base, rng, acl_agrees_cb, &ino, &res);
	printf("crash-acl: %d chmods, %u syncs beside them; %u crash states checked, %u failed\n",
	       i, r.syncs, res.states, res.failures);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);
	unlink(logpath);
	free(logpath);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}
END_TEST

static Suite *crash_fs_suite(void)
{
	Suite *s = suite_create("crash_fs");
	TCase *tc = tcase_create("fs");

	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, test_crash_fs);
	tcase_add_test(tc, test_crash_fs_file);
	tcase_add_test(tc, test_crash_acl_chmod);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_fs_suite)
