// SPDX-License-Identifier: MIT
/*
 * fsck pass 2 beyond directories: /lost+found, extents, allocation and
 * --check-data, on memory devices.  Each test damages a populated
 * filesystem in one way, runs fsck -y and checks what was reported (code,
 * inode, path, byte offset), that a second fsck -n is clean, and what the
 * files read afterwards: the ranges fsck reported as lost read as holes
 * (or EIO for bad data), everything else is intact.  -n never writes.
 * Randomized rounds mix such damage (BFS_FSCK_FS_ROUNDS, default 100, from
 * round BFS_FSCK_FS_FIRST: a failing round runs again by itself).
 */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/dev.h>
#include <bfs/extent_format.h>
#include <bfs/format.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>
#include <bfs/fsck.h>
#include <bfs/journal.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>

#define DEV_SIZE	(32 * MiB)
#define MAX_REPORTS	64

struct seen {
	unsigned nr;
	struct {
		enum bfs_problem_code code;
		u64	inode, offset;
		char	path[256];
		bool	fixed;
		bool	repair_failed;
	} r[MAX_REPORTS];
};

static void quiet_log(enum bfs_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "bfs %d: %s\n", level, msg);
}

static void print_line(void *ctx, const char *line)
{
	(void)ctx;
	if (getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "fsck: %s\n", line);
}

static void collect(void *ctx, const struct bfs_fsck_report *r)
{
	struct seen *s = ctx;

	if (s->nr == MAX_REPORTS)
		return;
	s->r[s->nr].code = r->code;
	s->r[s->nr].inode = r->loc.inode;
	s->r[s->nr].offset = r->loc.offset;
	s->r[s->nr].fixed = r->fixed;
	s->r[s->nr].repair_failed = r->repair_failed;
	snprintf(s->r[s->nr].path, sizeof(s->r[s->nr].path), "%s", r->loc.path ? r->loc.path : "");
	s->nr++;
}

static int run_fsck(struct bfs_dev *dev, enum bfs_fsck_mode mode, bool check_data, struct seen *s)
{
	struct bfs_fsck f = {
		.dev = dev, .mode = mode, .check_data = check_data,
		.print = print_line, .report = collect, .ctx = s,
	};
	int rc;

	memset(s, 0, sizeof(*s));
	rc = bfs_fsck_run(&f);
	bfs_fsck_release(&f);
	return rc;
}

/* the first report of @code, or NULL */
static const __typeof__(((struct seen *)0)->r[0]) *find(const struct seen *s,
							 enum bfs_problem_code code)
{
	unsigned i;

	for (i = 0; i < s->nr; i++)
		if (s->r[i].code == code)
			return &s->r[i];
	return NULL;
}

static struct bfs_dev *mkfs(u8 csum_type)
{
	struct bfs_format_opts o = { .csum_type = csum_type, .csum_set = true };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";
	struct bfs_dev *dev;

	bfs_log_set_hook(quiet_log, NULL);
	ck_assert_ptr_nonnull(sb);
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	ck_assert_msg(!bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), "layout: %s", err);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	bfs_free(sb);
	return dev;
}

static struct bfs_fs *fs_open(struct bfs_dev *dev)
{
	struct bfs_fs *fs = NULL;

	ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
	return fs;
}

/* fill byte of byte @i of file @seed */
static u8 pattern(unsigned seed, u64 i)
{
	return (u8)(seed * 31 + i / 512 * 7 + i);
}

static u64 mkfile(struct bfs_fs *fs, u64 dir, const char *name, unsigned seed, size_t len)
{
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat st;
	u8 *buf = bfs_malloc(len);
	size_t i;

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < len; i++)
		buf[i] = pattern(seed, i);
	ck_assert_int_eq(bfs_fs_mknod(fs, dir, name, strlen(name), S_IFREG | 0644, 0, &cr, &st), 0);
	ck_assert_int_eq(bfs_fs_write(fs, st.ino, buf, len, 0), (ssize_t)len);
	bfs_free(buf);
	return st.ino;
}

/*
 * Check file @ino reads @len bytes of @seed's pattern, except [hole, hole +
 * hole_len) which reads as zeros.
 */
static void check_file(struct bfs_fs *fs, u64 ino, unsigned seed, size_t len, u64 hole,
		       u64 hole_len)
{
	u8 *buf = bfs_malloc(len);
	size_t i;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf, len, 0), (ssize_t)len);
	for (i = 0; i < len; i++) {
		u8 want = i >= hole && i < hole + hole_len ? 0 : pattern(seed, i);

		ck_assert_msg(buf[i] == want, "inode %llu byte %zu: %u, want %u",
			      (unsigned long long)ino, i, buf[i], want);
	}
	bfs_free(buf);
}

/* the first extent of @ino */
static void first_extent(struct bfs_core *c, u64 ino, u64 *kbuf)
{
	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_EXTENTS, BFS_POS(ino, 1, 0), kbuf,
					  (BFS_BKEY_U64S + BFS_EXTENT_VAL_U64S) * 8), 0);
}

static u64 bucket_of(struct bfs_core *c, const struct bfs_bkey *k)
{
	const struct bfs_extent_v *v = bfs_bkey_val(k);

	return le64_to_cpu(v->offset) / le32_to_cpu(bfs_core_sb(c)->bucket_size);
}

static void put_alloc(struct bfs_core *c, u64 bucket, u32 gen, u64 live)
{
	u64 buf[BFS_BKEY_U64S + BFS_ALLOC_VAL_U64S];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_alloc_v *v = bfs_bkey_val(k);

	bfs_bkey_init(k, BFS_KEY_ALLOC, BFS_POS(bucket, 0, 0), BFS_ALLOC_VAL_U64S);
	memset(v, 0, sizeof(*v));
	v->gen = cpu_to_le32(gen);
	v->data_type = live ? BFS_BUCKET_USER : BFS_BUCKET_FREE;
	v->live_sectors = cpu_to_le64(live);
	ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_ALLOC, k), 0);
}

static void check_clean(struct bfs_dev *dev)
{
	struct seen s;
	int rc = run_fsck(dev, BFS_FSCK_MODE_NO, true, &s);

	ck_assert_msg(rc == BFS_FSCK_OK, "second fsck: exit %d, %u problems (first %s)", rc, s.nr,
		      s.nr ? bfs_problem_name(s.r[0].code) : "-");
}

/* a bucket reused under an extent: the extent is dropped, reported by path and offset */
START_TEST(test_stale_extent)
{
	u64 kbuf[BFS_BKEY_U64S + BFS_EXTENT_VAL_U64S];
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3);
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat dir;
	u64 f1, f2, b;
	struct seen s;

	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, "d", 1, 0755, &cr, &dir), 0);
	/* 192 KiB: chunks in three buckets of 64 KiB */
	f1 = mkfile(fs, dir.ino, "f1", 1, 192 * KiB);
	f2 = mkfile(fs, BFS_ROOT_INO, "f2", 2, 10000);
	first_extent(bfs_fs_core(fs), f1, kbuf);
	b = bucket_of(bfs_fs_core(fs), (void *)kbuf);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	fs = fs_open(dev);
	put_alloc(bfs_fs_core(fs), b, 2, 128);	/* the bucket's next life */
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, false, &s), BFS_FSCK_CORRECTED);
	ck_assert_ptr_nonnull(find(&s, PR_EXTENT_STALE));
	ck_assert_uint_eq(find(&s, PR_EXTENT_STALE)->inode, f1);
	ck_assert_uint_eq(find(&s, PR_EXTENT_STALE)->offset, 0);
	ck_assert_str_eq(find(&s, PR_EXTENT_STALE)->path, "/d/f1");
	ck_assert_ptr_nonnull(find(&s, PR_ALLOC_LEAKED));
	check_clean(dev);

	fs = fs_open(dev);
	check_file(fs, f1, 1, 192 * KiB, 0, 64 * KiB);
	check_file(fs, f2, 2, 10000, 0, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* -n reports and changes nothing at all */
START_TEST(test_no_writes)
{
	u64 kbuf[BFS_BKEY_U64S + BFS_EXTENT_VAL_U64S];
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3);
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_dev *copy;
	u64 f1, b;
	struct seen s;

	f1 = mkfile(fs, BFS_ROOT_INO, "f1", 1, 100 * KiB);
	first_extent(bfs_fs_core(fs), f1, kbuf);
	b = bucket_of(bfs_fs_core(fs), (void *)kbuf);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, "lost+found", 10), 0);
	put_alloc(bfs_fs_core(fs), b, 0, 3);
	put_alloc(bfs_fs_core(fs), 100, 1, 8);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_NO, true, &s), BFS_FSCK_UNCORRECTED);
	ck_assert_ptr_nonnull(find(&s, PR_LOST_FOUND_MISSING));
	ck_assert_ptr_nonnull(find(&s, PR_ALLOC_GEN_WRONG));
	ck_assert_ptr_nonnull(find(&s, PR_ALLOC_LEAKED));
	ck_assert(!memcmp(bfs_dev_mem(dev), bfs_dev_mem(copy), DEV_SIZE));

	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, true, &s), BFS_FSCK_CORRECTED);
	check_clean(dev);
	fs = fs_open(dev);
	check_file(fs, f1, 1, 100 * KiB, 0, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(copy);
	bfs_dev_close(dev);
}
END_TEST

/* remove the directory entry called @name from @dir behind the filesystem's back */
static void drop_dirent(struct bfs_core *c, u64 dir, const char *name)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	struct bfs_bpos pos = BFS_POS_MIN;
	bool found = false;
	int ret;

	bfs_btree_iter_init(&it, c, BFS_BTREE_DIRENTS, BFS_POS(dir, 0, 0), 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		const struct bfs_dirent_v *v = bfs_bkey_val(k);

		if (le64_to_cpu(k->inode) != dir)
			break;
		if (k->type == BFS_KEY_DIRENT && v->name_len == strlen(name) &&
		    !memcmp(v->name, name, v->name_len)) {
			pos = bfs_bkey_pos(k);
			found = true;
			break;
		}
	}
	bfs_btree_iter_exit(&it);
	ck_assert_msg(found, "no entry '%s' in %llu", name, (unsigned long long)dir);
	ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_DIRENTS, pos), 0);
}

/*
 * /lost+found gone and a directory unattached: a new /lost+found is made
 * first, then the directory is connected to it (never ENOENT)
 */
START_TEST(test_lost_found_recreated)
{
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3);
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat dir, st;
	char name[32];
	u64 f;
	struct seen s;

	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, "d", 1, 0755, &cr, &dir), 0);
	f = mkfile(fs, dir.ino, "f", 3, 5000);
	ck_assert_int_eq(bfs_fs_rmdir(fs, BFS_ROOT_INO, "lost+found", 10), 0);
	drop_dirent(bfs_fs_core(fs), BFS_ROOT_INO, "d");
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, false, &s), BFS_FSCK_CORRECTED);
	ck_assert_ptr_nonnull(find(&s, PR_LOST_FOUND_MISSING));
	ck_assert_ptr_nonnull(find(&s, PR_INODE_UNATTACHED));
	ck_assert(find(&s, PR_INODE_UNATTACHED)->fixed);
	ck_assert_uint_eq(find(&s, PR_INODE_UNATTACHED)->inode, dir.ino);
	check_clean(dev);

	fs = fs_open(dev);
	ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, "lost+found", 10, &st), 0);
	ck_assert(S_ISDIR(st.mode));
	snprintf(name, sizeof(name), "#%llu", (unsigned long long)dir.ino);
	ck_assert_int_eq(bfs_fs_lookup(fs, st.ino, name, strlen(name), &st), 0);
	ck_assert_uint_eq(st.ino, dir.ino);
	check_file(fs, f, 3, 5000, 0, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* lost+found's own entry gone: inode 2 goes back to /lost+found, not into itself */
START_TEST(test_lost_found_reattached)
{
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3);
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_stat st;
	struct seen s;

	drop_dirent(bfs_fs_core(fs), BFS_ROOT_INO, "lost+found");
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, false, &s), BFS_FSCK_CORRECTED);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_int_eq(s.r[0].code, PR_LOST_FOUND_UNATTACHED);
	check_clean(dev);
	fs = fs_open(dev);
	ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, "lost+found", 10, &st), 0);
	ck_assert_uint_eq(st.ino, 2);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/*
 * An extent whose generation was damaged upwards while its data is intact
 * keeps its data (the pointer is fixed); without checksums there is nothing
 * to vouch for it and it is dropped.
 */
static void gen_newer(u8 csum_type)
{
	u64 kbuf[BFS_BKEY_U64S + BFS_EXTENT_VAL_U64S];
	struct bfs_bkey *k = (void *)kbuf;
	struct bfs_dev *dev = mkfs(csum_type);
	struct bfs_fs *fs = fs_open(dev);
	struct seen s;
	u64 f1, f2;

	/* two small files: one write point, one bucket */
	f1 = mkfile(fs, BFS_ROOT_INO, "f1", 1, 8192);
	f2 = mkfile(fs, BFS_ROOT_INO, "f2", 2, 8192);
	first_extent(bfs_fs_core(fs), f2, kbuf);
	((struct bfs_extent_v *)bfs_bkey_val(k))->gen =
		cpu_to_le32(le32_to_cpu(((struct bfs_extent_v *)bfs_bkey_val(k))->gen) + 5);
	ck_assert_int_eq(bfs_btree_insert(bfs_fs_core(fs), BFS_BTREE_EXTENTS, k), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, false, &s), BFS_FSCK_CORRECTED);
	if (csum_type != BFS_CSUM_NONE) {
		ck_assert_ptr_nonnull(find(&s, PR_EXTENT_GEN_WRONG));
		ck_assert_ptr_null(find(&s, PR_EXTENT_STALE));
	} else {
		ck_assert_ptr_nonnull(find(&s, PR_EXTENT_STALE));
		ck_assert_str_eq(find(&s, PR_EXTENT_STALE)->path, "/f2");
	}
	check_clean(dev);
	fs = fs_open(dev);
	check_file(fs, f1, 1, 8192, 0, 0);
	check_file(fs, f2, 2, 8192, 0, csum_type != BFS_CSUM_NONE ? 0 : 8192);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}

START_TEST(test_gen_newer_verified)
{
	gen_newer(BFS_CSUM_XXH3);
}
END_TEST

START_TEST(test_gen_newer_no_csum)
{
	gen_newer(BFS_CSUM_NONE);
}
END_TEST

/* --check-data names each bad range; without -c the data is not read */
START_TEST(test_check_data)
{
	u64 kbuf[BFS_BKEY_U64S + BFS_EXTENT_VAL_U64S];
	struct bfs_bkey *k = (void *)kbuf;
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3);
	struct bfs_fs *fs = fs_open(dev);
	u8 *ondisk;
	u64 f1, f2;
	struct seen s;
	ssize_t n;
	u8 buf[4096];

	f1 = mkfile(fs, BFS_ROOT_INO, "f1", 1, 128 * KiB);
	f2 = mkfile(fs, BFS_ROOT_INO, "f2", 2, 4096);
	/* the chunk of f1 that starts at file byte 64K */
	ck_assert_int_eq(bfs_btree_lookup(bfs_fs_core(fs), BFS_BTREE_EXTENTS,
					  BFS_POS(f1, 129, 0), kbuf, sizeof(kbuf)), 0);
	ck_assert_uint_eq(bfs_bkey_start(k), 128);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ondisk = bfs_dev_mem(dev) + le64_to_cpu(((struct bfs_extent_v *)bfs_bkey_val(k))->offset);
	ondisk[1000] ^= 0xff;

	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, false, &s), BFS_FSCK_OK);
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, true, &s), BFS_FSCK_UNCORRECTED);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_int_eq(s.r[0].code, PR_DATA_CSUM);
	ck_assert_uint_eq(s.r[0].inode, f1);
	ck_assert_uint_eq(s.r[0].offset, 64 * KiB);
	ck_assert_str_eq(s.r[0].path, "/f1");
	ck_assert(!s.r[0].fixed);

	fs = fs_open(dev);
	n = bfs_fs_read(fs, f1, buf, sizeof(buf), 64 * KiB);
	ck_assert_int_eq(n, -EIO);
	check_file(fs, f2, 2, 4096, 0, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* a file size with a flipped high bit gets its low bits back */
START_TEST(test_size_flipped)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3);
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_inode_v *v;
	struct bfs_stat st;
	struct seen s;
	u64 f;

	f = mkfile(fs, BFS_ROOT_INO, "f", 4, 70000);
	ck_assert_int_eq(bfs_btree_lookup(bfs_fs_core(fs), BFS_BTREE_INODES, BFS_POS(f, 0, 0),
					  buf, sizeof(buf)), 0);
	v = bfs_bkey_val(k);
	v->size = cpu_to_le64(le64_to_cpu(v->size) | UINT64_C(1) << 60);
	ck_assert_int_eq(bfs_btree_insert(bfs_fs_core(fs), BFS_BTREE_INODES, k), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, false, &s), BFS_FSCK_CORRECTED);
	ck_assert_uint_eq(s.nr, 1);
	ck_assert_int_eq(s.r[0].code, PR_INODE_SIZE_BAD);
	check_clean(dev);
	fs = fs_open(dev);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_uint_eq(st.size, 70000);
	check_file(fs, f, 4, 70000, 0, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* set the size of inode @ino as stored (no extent is touched) */
static void set_stored_size(struct bfs_core *c, u64 ino, u64 size)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_inode_v *v = bfs_bkey_val(k);

	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(ino, 0, 0), buf, sizeof(buf)),
			 0);
	v->size = cpu_to_le64(size);
	ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, k), 0);
}

/*
 * Data past the size, for sizes pass 2's tables hold (up to 254 sectors)
 * and bigger ones (read from the inode): each file's data is cut at its
 * size rounded up to a block, the rest kept.
 */
START_TEST(test_past_eof_sizes)
{
	static const struct { size_t len; u64 size; } f[] = {
		{ 40000, 20000 },	/* small: the tables' size */
		{ 140000, 254 * 512 },	/* the largest the tables hold */
		{ 140000, 254 * 512 + 1 },	/* the smallest read from the inode */
		{ 300000, 200000 },	/* big */
		{ 8192, 8192 },		/* fine */
	};
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3);
	struct bfs_fs *fs = fs_open(dev);
	u64 ino[5], bs = le32_to_cpu(bfs_core_sb(bfs_fs_core(fs))->block_size);
	char name[8];
	struct seen s;
	unsigned i, j, nr = 0;

	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ino[i] = mkfile(fs, BFS_ROOT_INO, name, i + 1, f[i].len);
		set_stored_size(bfs_fs_core(fs), ino[i], f[i].size);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, false, &s), BFS_FSCK_CORRECTED);
	for (i = 0; i < 5; i++) {
		u64 cut = BFS_ROUND_UP(f[i].size, bs);
		bool found = false;

		for (j = 0; j < s.nr; j++) {
			if (s.r[j].code != PR_EXTENT_PAST_EOF || s.r[j].inode != ino[i])
				continue;
			/* one report an extent: the first where the size ends */
			if (found)
				ck_assert_uint_gt(s.r[j].offset, cut);
			else
				ck_assert_uint_eq(s.r[j].offset, cut);
			nr += !found;
			found = true;
			ck_assert(s.r[j].fixed);
		}
		ck_assert_msg(found == (cut < f[i].len), "file %u: past-the-end data %sreported", i,
			      found ? "" : "not ");
	}
	ck_assert_uint_eq(nr, 4);
	check_clean(dev);
	fs = fs_open(dev);
	for (i = 0; i < 5; i++)
		check_file(fs, ino[i], i + 1, f[i].size, 0, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* ---- random damage to what pass 2 checks: fsck -y converges, nothing unreported is lost ---- */

#define RND_FILES	8

static u64 rnd_state;

static u64 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static u64 rnd_below(u64 n)
{
	return n ? rnd() % n : 0;
}

/* a random key of btree @id of @type (copied into @buf), false if there is none */
static bool rnd_key(struct bfs_core *c, enum bfs_btree_id id, u8 type, u64 *buf, size_t len)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	unsigned n = 0;
	int ret;

	/* reservoir sampling: one pass, each key equally likely */
	bfs_btree_iter_init(&it, c, id, BFS_POS_MIN, 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		if (k->type != type || bfs_bkey_bytes(k) > len)
			continue;
		if (!rnd_below(++n))
			memcpy(buf, k, bfs_bkey_bytes(k));
	}
	bfs_btree_iter_exit(&it);
	return n > 0;
}

/* one random change behind the filesystem's back, of the kinds pass 2 repairs */
static void damage_one(struct bfs_fs *fs, unsigned kind)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_core *c = bfs_fs_core(fs);
	const struct bfs_sb *sb = bfs_core_sb(c);
	struct bfs_bkey *k = (void *)buf;
	u64 bucket = le32_to_cpu(sb->bucket_size), nb = le64_to_cpu(sb->nbuckets);

	switch (kind) {
	case 0: {	/* an extent's generation */
		struct bfs_extent_v *v = bfs_bkey_val(k);

		if (!rnd_key(c, BFS_BTREE_EXTENTS, BFS_KEY_EXTENT, buf, sizeof(buf)) ||
		    (v->flags & BFS_EXTENT_F_UNWRITTEN))
			return;
		v->gen = cpu_to_le32(le32_to_cpu(v->gen) + (rnd() & 1 ? 1 + (u32)rnd_below(3) : -1u));
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_EXTENTS, k), 0);
		break;
	}
	case 1: {	/* an extent's device offset: anywhere, block aligned */
		struct bfs_extent_v *v = bfs_bkey_val(k);
		u64 bs = le32_to_cpu(sb->block_size);

		if (!rnd_key(c, BFS_BTREE_EXTENTS, BFS_KEY_EXTENT, buf, sizeof(buf)) ||
		    (v->flags & BFS_EXTENT_F_UNWRITTEN))
			return;
		v->offset = cpu_to_le64(bs * (1 + rnd_below(DEV_SIZE / bs + 64)));
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_EXTENTS, k), 0);
		break;
	}
	case 2: {	/* an alloc key's fields */
		struct bfs_alloc_v *v = bfs_bkey_val(k);

		if (!rnd_key(c, BFS_BTREE_ALLOC, BFS_KEY_ALLOC, buf, sizeof(buf)))
			return;
		switch (rnd_below(3)) {
		case 0:
			v->gen = cpu_to_le32(le32_to_cpu(v->gen) + (rnd() & 1 ? 1 : -1u));
			break;
		case 1:
			v->live_sectors = cpu_to_le64(rnd_below(1000));
			break;
		default:
			v->data_type ^= 1;
			break;
		}
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_ALLOC, k), 0);
		break;
	}
	case 3:		/* an alloc key lost */
		if (rnd_key(c, BFS_BTREE_ALLOC, BFS_KEY_ALLOC, buf, sizeof(buf)))
			ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_ALLOC, bfs_bkey_pos(k)), 0);
		break;
	case 4:		/* an alloc key for a random bucket, maybe outside the device */
		put_alloc(c, rnd_below(nb + 16), (u32)rnd_below(3), rnd_below(200));
		break;
	case 5: {	/* a file's size or sector count */
		struct bfs_inode_v *v = bfs_bkey_val(k);

		if (!rnd_key(c, BFS_BTREE_INODES, BFS_KEY_INODE, buf, sizeof(buf)) ||
		    !S_ISREG(le32_to_cpu(v->mode)))
			return;
		if (rnd() & 1)
			v->size = cpu_to_le64(le64_to_cpu(v->size) | UINT64_C(1) << (53 + rnd_below(11)));
		else
			v->sectors = cpu_to_le64(rnd_below(4096));
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, k), 0);
		break;
	}
	case 6:		/* a directory entry lost (maybe lost+found's) */
		if (rnd_key(c, BFS_BTREE_DIRENTS, BFS_KEY_DIRENT, buf, sizeof(buf)))
			ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_DIRENTS, bfs_bkey_pos(k)), 0);
		break;
	case 7:		/* /lost+found removed, or its inode lost */
		if (rnd() & 1)
			bfs_fs_rmdir(fs, BFS_ROOT_INO, "lost+found", 10);
		else
			bfs_btree_delete(c, BFS_BTREE_INODES, BFS_POS(2, 0, 0));
		break;
	case 8: {	/* /lost+found replaced by a file */
		struct bfs_creds cr = { 0, 0 };
		struct bfs_stat st;

		if (!bfs_fs_rmdir(fs, BFS_ROOT_INO, "lost+found", 10))
			ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, "lost+found", 10,
						      S_IFREG | 0600, 0, &cr, &st), 0);
		break;
	}
	default: {	/* a copy of an extent far into another inode (a file, a directory...) */
		u64 ino = 1 + rnd_below(16), sz;

		if (!rnd_key(c, BFS_BTREE_EXTENTS, BFS_KEY_EXTENT, buf, sizeof(buf)))
			return;
		sz = bfs_bkey_size(k);
		k->inode = cpu_to_le64(ino);
		k->offset = cpu_to_le64(sz + 8 * (512 + rnd_below(4096)));
		ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_EXTENTS, k), 0);
		break;
	}
	}
	(void)bucket;
}

static bool reported(const struct seen *s, u64 ino)
{
	unsigned i;

	for (i = 0; i < s->nr; i++)
		if (s->r[i].inode == ino)
			return true;
	return s->nr == MAX_REPORTS;	/* too many to tell */
}

static void random_round(unsigned round)
{
	bool csum = round % 3;
	struct bfs_dev *dev = mkfs(csum ? BFS_CSUM_XXH3 : BFS_CSUM_NONE);
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_creds cr = { 0, 0 };
	u64 ino[RND_FILES], dirs[3] = { BFS_ROOT_INO };
	size_t len[RND_FILES];
	struct seen s1, s2;
	unsigned i, n;
	u8 *buf;
	int rc;

	for (i = 1; i < 3; i++) {
		struct bfs_stat st;
		char name[8];

		snprintf(name, sizeof(name), "d%u", i);
		ck_assert_int_eq(bfs_fs_mkdir(fs, dirs[i - 1], name, strlen(name), 0755, &cr, &st), 0);
		dirs[i] = st.ino;
	}
	for (i = 0; i < RND_FILES; i++) {
		char name[8];

		snprintf(name, sizeof(name), "f%u", i);
		len[i] = 1 + rnd_below(200 * KiB);
		ino[i] = mkfile(fs, dirs[rnd_below(3)], name, i, len[i]);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	fs = fs_open(dev);
	/*
	 * Without checksums a moved data pointer reads someone else's data and
	 * nothing can tell (only an alloc key may disagree): not in those rounds.
	 */
	for (n = 1 + (unsigned)rnd_below(3), i = 0; i < n; i++) {
		unsigned kind = (unsigned)rnd_below(10);

		damage_one(fs, !csum && kind == 1 ? 0 : kind);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	/* -c too: a pointer moved onto other live data is only found by reading it */
	rc = run_fsck(dev, BFS_FSCK_MODE_YES, true, &s1);
	ck_assert_msg(rc <= BFS_FSCK_CORRECTED || rc == BFS_FSCK_UNCORRECTED,
		      "round %u: first fsck exit %d", round, rc);
	for (i = 0; i < s1.nr; i++)
		ck_assert_msg(!s1.r[i].repair_failed, "round %u: repair of %s failed", round,
			      bfs_problem_name(s1.r[i].code));
	rc = run_fsck(dev, BFS_FSCK_MODE_NO, true, &s2);
	for (i = 0; i < s2.nr; i++)
		ck_assert_msg(s2.r[i].code == PR_DATA_CSUM || s2.r[i].code == PR_DATA_DECOMPRESS,
			      "round %u: second fsck found %s (exit %d)", round,
			      bfs_problem_name(s2.r[i].code), rc);

	/* every file reads back as written, unless fsck named it */
	fs = fs_open(dev);
	buf = bfs_malloc(200 * KiB);
	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < RND_FILES; i++) {
		ssize_t got = bfs_fs_read(fs, ino[i], buf, len[i], 0);
		bool same = got == (ssize_t)len[i];
		size_t j;

		for (j = 0; same && j < len[i]; j++)
			same = buf[j] == pattern(i, j);
		ck_assert_msg(same || reported(&s1, ino[i]),
			      "round %u: inode %llu reads back wrong (%zd), fsck did not name it",
			      round, (unsigned long long)ino[i], got);
	}
	bfs_free(buf);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}

/* set inode @ino's stored link count to @nlink */
static void put_nlink(struct bfs_core *c, u64 ino, u32 nlink)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_bkey *k = (void *)buf;

	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(ino, 0, 0), buf,
					  sizeof(buf)), 0);
	((struct bfs_inode_v *)bfs_bkey_val(k))->nlink = cpu_to_le32(nlink);
	ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, k), 0);
}

/* link counts past what fsck keeps in a byte are counted exactly, up and down */
START_TEST(test_many_links)
{
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3);
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat dir, st;
	char name[32];
	u64 f, g;
	unsigned i;
	struct seen s;

	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, "d", 1, 0755, &cr, &dir), 0);
	f = mkfile(fs, dir.ino, "f", 1, 100);
	g = mkfile(fs, BFS_ROOT_INO, "g", 2, 100);
	for (i = 0; i < 299; i++) {
		snprintf(name, sizeof(name), "l%u", i);
		ck_assert_int_eq(bfs_fs_link(fs, f, i % 2 ? BFS_ROOT_INO : dir.ino, name,
					     strlen(name), &st), 0);
		if (i < 254) {
			snprintf(name, sizeof(name), "m%u", i);
			ck_assert_int_eq(bfs_fs_link(fs, g, dir.ino, name, strlen(name), &st), 0);
		}
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	check_clean(dev);

	/* f: 300 links, says 299; g: exactly 255 links, says 256 */
	fs = fs_open(dev);
	put_nlink(bfs_fs_core(fs), f, 299);
	put_nlink(bfs_fs_core(fs), g, 256);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(run_fsck(dev, BFS_FSCK_MODE_YES, false, &s), BFS_FSCK_CORRECTED);
	ck_assert_uint_eq(s.nr, 2);
	ck_assert_int_eq(s.r[0].code, PR_INODE_NLINK);
	ck_assert_uint_eq(s.r[0].inode, f);
	/* named by its first entry in key order: one of its links */
	ck_assert_msg(!strncmp(s.r[0].path, "/l", 2) || !strcmp(s.r[0].path, "/d/f"), "%s",
		      s.r[0].path);
	ck_assert_int_eq(s.r[1].code, PR_INODE_NLINK);
	ck_assert_uint_eq(s.r[1].inode, g);
	ck_assert_str_eq(s.r[1].path, "/g");
	check_clean(dev);

	fs = fs_open(dev);
	ck_assert_int_eq(bfs_fs_getattr(fs, f, &st), 0);
	ck_assert_uint_eq(st.nlink, 300);
	ck_assert_int_eq(bfs_fs_getattr(fs, g, &st), 0);
	ck_assert_uint_eq(st.nlink, 255);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_random_damage)
{
	const char *e = getenv("BFS_FSCK_FS_ROUNDS"), *f = getenv("BFS_FSCK_FS_FIRST");
	unsigned first = f ? (unsigned)strtoul(f, NULL, 0) : 0, r;
	unsigned rounds = e ? (unsigned)strtoul(e, NULL, 0) : 100;

	for (r = first; r < first + rounds; r++) {
		rnd_state = 0x9e3779b97f4a7c15ull * (r + 1);
		random_round(r);
	}
}
END_TEST

/*
 * A file open and unlinked at a crash: on the orphan list, freed by the next
 * writable open.  fsck -n must see it as an orphan (not a lost inode) and
 * -y must check what the open left, not what pass 1 walked before it.
 */
START_TEST(test_orphan_at_crash)
{
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3), *copy;
	struct bfs_fs *fs = fs_open(dev);
	struct seen s;
	u64 f, kept, opens;
	int rc;

	kept = mkfile(fs, BFS_ROOT_INO, "kept", 1, 5000);
	f = mkfile(fs, BFS_ROOT_INO, "open", 2, 70000);
	ck_assert_int_eq(bfs_fs_inode_open(fs, f), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, "open", 4), 0);
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	opens = bfs_core_open_count();
	rc = run_fsck(copy, BFS_FSCK_MODE_NO, false, &s);
	ck_assert_msg(rc == BFS_FSCK_OK && !s.nr, "fsck -n: exit %d, %u problems (first %s)", rc,
		      s.nr, s.nr ? bfs_problem_name(s.r[0].code) : "-");
	/* the replay applies keys (the orphan): pass 2 still goes on with pass 1's open */
	ck_assert_uint_eq(bfs_core_open_count() - opens, 1);
	opens = bfs_core_open_count();
	rc = run_fsck(copy, BFS_FSCK_MODE_YES, false, &s);
	ck_assert_msg(rc == BFS_FSCK_OK && !s.nr, "fsck -y: exit %d, %u problems (first %s)", rc,
		      s.nr, s.nr ? bfs_problem_name(s.r[0].code) : "-");
	/* the orphan is freed by pass 2's open: pass 1's, made writable */
	ck_assert_uint_eq(bfs_core_open_count() - opens, 1);
	check_clean(copy);
	fs = fs_open(copy);
	check_file(fs, kept, 1, 5000, 0, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(copy);
	bfs_dev_close(dev);
}
END_TEST

/* fsck -n's one open: the filesystem on pass 1's read-only core, and only on one */
START_TEST(test_attach_read_only)
{
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3), *copy;
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_core_opts co = { .read_only = true };
	struct bfs_fs_opts ro = { .read_only = true }, rw = { 0 };
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat st;
	struct bfs_core *c;
	u64 ino = mkfile(fs, BFS_ROOT_INO, "f", 3, 9000);

	/* a crash after the sync: the file is in the journal, which the core replays */
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_core_open(copy, &co, &c), 0);
	ck_assert_int_eq(bfs_fs_attach(c, &rw, &fs), -EINVAL);	/* and c is closed */
	ck_assert_ptr_null(fs);
	ck_assert_int_eq(bfs_core_open(copy, &co, &c), 0);
	ck_assert_int_eq(bfs_fs_attach(c, &ro, &fs), 0);
	check_file(fs, ino, 3, 9000, 0, 0);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, "g", 1, S_IFREG | 0644, 0, &cr, &st),
			 -EROFS);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(copy);
	bfs_dev_close(dev);
}
END_TEST

/*
 * fsck opens the filesystem once in every mode: pass 1's read-only core
 * becomes pass 2's (made writable for -y, -p).  After a crash too: pass
 * 1's open replays with the data layer's space hooks, as a mount's, and
 * -n writes nothing.  The open does not sweep the extents btree for live
 * sectors: -n takes the alloc keys' counts, -y/-p pass 1's walk's.
 */
static void one_open(enum bfs_fsck_mode mode)
{
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3), *copy, *before;
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat dir, st;
	bool writes = mode != BFS_FSCK_MODE_NO;
	u64 ino[40], opens, sweeps;
	struct seen s;
	char name[16];
	unsigned i;
	int rc;

	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, "d", 1, 0755, &cr, &dir), 0);
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ino[i] = mkfile(fs, dir.ino, name, i, 3000 + i * 1000);
	}
	/* sound and cleanly closed: nothing to replay, one open */
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	opens = bfs_core_open_count();
	sweeps = bfs_fs_live_sweep_count();
	rc = run_fsck(dev, mode, false, &s);
	ck_assert_msg(rc == BFS_FSCK_OK && !s.nr, "clean: exit %d, %u problems", rc, s.nr);
	ck_assert_uint_eq(bfs_core_open_count() - opens, 1);
	ck_assert_uint_eq(bfs_fs_live_sweep_count() - sweeps, 0);

	/* a crash after a sync, and a link count pass 2 repairs: in the journal only */
	fs = fs_open(dev);
	put_nlink(bfs_fs_core(fs), ino[7], 5);
	ck_assert_int_eq(bfs_fs_unlink(fs, dir.ino, "f3", 2), 0);
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(copy, &before), 0);
	opens = bfs_core_open_count();
	sweeps = bfs_fs_live_sweep_count();
	rc = run_fsck(copy, mode, false, &s);
	ck_assert_msg(rc == (writes ? BFS_FSCK_CORRECTED : BFS_FSCK_UNCORRECTED) && s.nr == 1,
		      "crash: exit %d, %u problems", rc, s.nr);
	ck_assert_int_eq(s.r[0].code, PR_INODE_NLINK);
	ck_assert(s.r[0].fixed == writes);
	ck_assert_uint_eq(s.r[0].inode, ino[7]);
	ck_assert_uint_eq(bfs_core_open_count() - opens, 1);
	ck_assert_uint_eq(bfs_fs_live_sweep_count() - sweeps, 0);
	if (!writes) {
		/* the replay, and its split nodes, were in memory only */
		ck_assert_uint_eq(bfs_dev_size(copy), bfs_dev_size(before));
		ck_assert(!memcmp(bfs_dev_mem(copy), bfs_dev_mem(before), bfs_dev_size(copy)));
		bfs_dev_close(before);
		bfs_dev_close(copy);
		bfs_dev_close(dev);
		return;
	}
	bfs_dev_close(before);
	/* what was replayed, repaired and checkpointed through that one open is on the device */
	opens = bfs_core_open_count();
	check_clean(copy);
	ck_assert_uint_eq(bfs_core_open_count() - opens, 1);
	fs = fs_open(copy);
	for (i = 0; i < 40; i++)
		if (i != 3)
			check_file(fs, ino[i], i, 3000 + i * 1000, 0, 0);
	ck_assert_int_eq(bfs_fs_lookup(fs, dir.ino, "f3", 2, &st), -ENOENT);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(copy);
	bfs_dev_close(dev);
}

START_TEST(test_one_open_no)
{
	one_open(BFS_FSCK_MODE_NO);
}
END_TEST

/* the journal entries of a device, by seq: the two newest */
struct newest {
	u64 seq[2], offset[2];
};

static int note_entry(void *ctx, u64 offset, const struct bfs_jset *js)
{
	struct newest *n = ctx;
	u64 seq = le64_to_cpu(js->seq);

	if (seq > n->seq[0]) {
		n->seq[1] = n->seq[0];
		n->offset[1] = n->offset[0];
		n->seq[0] = seq;
		n->offset[0] = offset;
	} else if (seq > n->seq[1]) {
		n->seq[1] = seq;
		n->offset[1] = offset;
	}
	return 0;
}

/*
 * A damaged journal is read by one open with -n: pass 1's open salvages
 * it, read-only, and hands pass 1a its findings, and pass 1 and 2 go on
 * with it (before: that open, then pass 1a's own read, then pass 1's open
 * again).  -y repairs it with an open of its own, and pass 1 opens the
 * repaired filesystem once more: three, as before.
 */
START_TEST(test_damaged_journal_one_open)
{
	struct bfs_dev *dev = mkfs(BFS_CSUM_XXH3), *copy, *before;
	struct bfs_fs *fs = fs_open(dev);
	struct bfs_core_opts co = { .read_only = true };
	struct bfs_journal_geom jg;
	struct bfs_journal *j;
	struct newest n;
	struct bfs_core *c;
	struct seen s;
	char name[16];
	u64 opens;
	unsigned i;
	int rc;

	for (i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		mkfile(fs, BFS_ROOT_INO, name, i, 4000 + i * 1000);
		ck_assert_int_eq(bfs_fs_sync(fs), 0);
	}
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	/* an entry in the middle of the ring goes bad: damage, not a torn write */
	ck_assert_int_eq(bfs_core_open(copy, &co, &c), 0);
	memset(&n, 0, sizeof(n));
	bfs_journal_geom_from_sb(bfs_core_sb(c), copy, &jg);
	ck_assert_int_eq(bfs_journal_open(&jg, &j), 0);
	ck_assert_int_eq(bfs_journal_walk(j, note_entry, &n), 0);
	bfs_journal_close(j);
	bfs_core_close(c);
	ck_assert_uint_ne(n.offset[1], 0);
	bfs_dev_mem(copy)[n.offset[1] + 100] ^= 1;
	ck_assert_int_eq(bfs_dev_clone_mem(copy, &before), 0);

	opens = bfs_core_open_count();
	rc = run_fsck(copy, BFS_FSCK_MODE_NO, false, &s);
	ck_assert_int_eq(rc, BFS_FSCK_UNCORRECTED);
	ck_assert_uint_ge(s.nr, 1);
	ck_assert_int_eq(s.r[0].code, PR_JOURNAL_ENTRY_CORRUPT);
	ck_assert(!s.r[0].fixed);
	ck_assert_uint_eq(bfs_core_open_count() - opens, 1);
	ck_assert(!memcmp(bfs_dev_mem(copy), bfs_dev_mem(before), bfs_dev_size(copy)));

	opens = bfs_core_open_count();
	rc = run_fsck(copy, BFS_FSCK_MODE_YES, false, &s);
	ck_assert_msg(rc == BFS_FSCK_CORRECTED, "fsck -y: exit %d", rc);
	ck_assert_int_eq(s.r[0].code, PR_JOURNAL_ENTRY_CORRUPT);
	ck_assert(s.r[0].fixed);
	ck_assert_uint_eq(bfs_core_open_count() - opens, 3);
	check_clean(copy);
	bfs_dev_close(before);
	bfs_dev_close(copy);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_one_open_yes)
{
	one_open(BFS_FSCK_MODE_YES);
}
END_TEST

START_TEST(test_one_open_preen)
{
	one_open(BFS_FSCK_MODE_PREEN);
}
END_TEST

static Suite *fsck_fs_suite(void)
{
	Suite *s = suite_create("fsck_fs");
	TCase *tc = tcase_create("pass2");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stale_extent);
	tcase_add_test(tc, test_past_eof_sizes);
	tcase_add_test(tc, test_no_writes);
	tcase_add_test(tc, test_lost_found_recreated);
	tcase_add_test(tc, test_lost_found_reattached);
	tcase_add_test(tc, test_gen_newer_verified);
	tcase_add_test(tc, test_gen_newer_no_csum);
	tcase_add_test(tc, test_check_data);
	tcase_add_test(tc, test_size_flipped);
	tcase_add_test(tc, test_many_links);
	tcase_add_test(tc, test_orphan_at_crash);
	tcase_add_test(tc, test_attach_read_only);
	tcase_add_test(tc, test_one_open_yes);
	tcase_add_test(tc, test_one_open_no);
	tcase_add_test(tc, test_damaged_journal_one_open);
	tcase_add_test(tc, test_one_open_preen);
	tcase_add_test(tc, test_random_damage);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(fsck_fs_suite)
