// SPDX-License-Identifier: MIT
/*
 * Changing an open filesystem (include/bfs/online.h).  Growing it
 * (bfs_fs_grow, libcore/fs/grow.c): the new space is usable at once, a
 * shrink and a read-only open are refused, and every state a power failure
 * can leave during a grow followed by writes into the new space opens as
 * the old or the new filesystem, with what was durable intact.  Live
 * settings (bfs_fs_sb_update): new data follows them at once, they are on
 * disk, and stopping writes (errors=) refuses every later write.
 */
#include "unit.h"
#include "crash_states.h"
#include "resize_states.h"
#include "tu.h"

#include <bfs/btree.h>
#include <bfs/checksum.h>
#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/mkfs.h>
#include <bfs/online.h>
#include <bfs/os.h>
#include <bfs/resize.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_BYTES	(512 * 1024)
#define OLD_SIZE	(16 * MiB)
#define NEW_SIZE	(32 * MiB)

static const struct bfs_creds root_cr = { 0, 0 };

static struct bfs_dev *make_fs(void)
{
	return resize_make_fs(NEW_SIZE, OLD_SIZE);
}

static void write_file(struct bfs_fs *fs, const char *name)
{
	tu_write_pattern_file(fs, name, FILE_BYTES, (u8)name[0]);
}

static bool file_ok(struct bfs_fs *fs, const char *name, char *why)
{
	return tu_pattern_file_ok(fs, name, FILE_BYTES, (u8)name[0], why);
}

static u64 old_nbuckets(void)
{
	struct bfs_format_opts fo = { 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN];
	u64 nb;

	ck_assert_int_eq(bfs_sb_layout(&fo, OLD_SIZE, 512, sb, err), 0);
	nb = le64_to_cpu(sb->nbuckets);
	bfs_free(sb);
	return nb;
}

START_TEST(test_grow_then_use)
{
	struct bfs_dev *dev = make_fs();
	struct bfs_statfs before, after;
	struct bfs_resize_usage u;
	struct bfs_fs *fs;
	char err[BFS_ERR_LEN], why[512];
	u64 old;

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	write_file(fs, "a");
	ck_assert_int_eq(bfs_fs_statfs(fs, &before), 0);
	ck_assert_int_eq(bfs_fs_grow(fs, NEW_SIZE, &old, err), 0);
	ck_assert_uint_eq(old, OLD_SIZE);
	ck_assert_uint_eq(le64_to_cpu(bfs_core_sb(bfs_fs_core(fs))->dev_size), NEW_SIZE);
	ck_assert_int_eq(bfs_fs_statfs(fs, &after), 0);
	ck_assert_uint_gt(after.blocks, before.blocks + (NEW_SIZE - OLD_SIZE) / 2 / after.bsize);
	/* again: nothing to do; smaller: refused with a reason */
	ck_assert_int_eq(bfs_fs_grow(fs, NEW_SIZE, &old, err), -EALREADY);
	ck_assert_int_eq(bfs_fs_grow(fs, OLD_SIZE, &old, err), -EOPNOTSUPP);
	ck_assert_msg(strstr(err, "cannot shrink"), "%s", err);
	ck_assert_int_eq(bfs_fs_grow(fs, NEW_SIZE * 2, &old, err), -ENOSPC);
	ck_assert_msg(strstr(err, "holds only"), "%s", err);
	/* new data goes to the new space */
	write_file(fs, "b");
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert_int_eq(bfs_resize_usage(fs, old_nbuckets(), &u), 0);
	ck_assert_uint_ge(u.data_buckets, 1);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &fs), 0);
	ck_assert_msg(file_ok(fs, "a", why) && file_ok(fs, "b", why), "%s", why);
	ck_assert_int_eq(bfs_fs_grow(fs, 0, &old, err), -EROFS);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* writers and a reader run while the filesystem grows in steps: nothing lost, nothing beyond the end */
#define RACE_FILES	24
#define RACE_BYTES	(256 * 1024)

struct race {
	struct bfs_fs *fs;
	int done;	/* files written (atomic) */
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	char name[16];
	int i;

	for (i = 0; i < RACE_FILES; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		tu_write_pattern_file(r->fs, name, RACE_BYTES, (u64)i);
		__atomic_store_n(&r->done, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

START_TEST(test_grow_while_writing)
{
	struct bfs_dev *dev = make_fs();
	struct bfs_resize_usage u;
	struct race r = { 0 };
	bfs_thread t;
	char err[BFS_ERR_LEN], name[16], why[512];
	u64 size, old;
	int i;

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &r.fs), 0);
	ck_assert_int_eq(bfs_thread_create(&t, race_writer, &r), 0);
	/* a step each time the writer is one file further: the two interleave */
	for (size = OLD_SIZE + 2 * MiB, i = 0; size <= NEW_SIZE; size += 2 * MiB, i++) {
		while (__atomic_load_n(&r.done, __ATOMIC_ACQUIRE) < BFS_MIN(i, RACE_FILES))
			usleep(100);
		ck_assert_msg(bfs_fs_grow(r.fs, size, &old, err) == 0, "grow to %llu: %s",
			      (unsigned long long)size, err);
	}
	bfs_thread_join(t);
	ck_assert_int_eq(bfs_fs_close(r.fs), 0);

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &r.fs), 0);
	for (i = 0; i < BFS_BTREE_NR; i++)
		ck_assert_int_eq(bfs_btree_verify(bfs_fs_core(r.fs), i), 0);
	for (i = 0; i < RACE_FILES; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		ck_assert_msg(tu_pattern_file_ok(r.fs, name, RACE_BYTES, (u64)i, why), "%s", why);
	}
	ck_assert_int_eq(bfs_resize_usage(r.fs, le64_to_cpu(bfs_core_sb(bfs_fs_core(r.fs))->nbuckets),
					  &u), 0);
	ck_assert_uint_eq(u.nodes + u.data_buckets + u.free_alloc_keys, 0);
	ck_assert_int_eq(bfs_fs_close(r.fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* ---- live settings, stopped writes ---- */

static int set_zstd(void *ctx, struct bfs_dev *dev, const struct bfs_sb *cur, struct bfs_sb *next)
{
	char err[BFS_ERR_LEN];

	(void)ctx;
	(void)cur;
	ck_assert_int_eq(bfs_sb_set_compression(next, BFS_COMPRESSION_ZSTD, 3, err), 0);
	ck_assert_int_eq(bfs_sb_set_data_csum(next, BFS_CSUM_NONE, err), 0);
	return bfs_sb_write(dev, next);
}

static int fail_write(void *ctx, struct bfs_dev *dev, const struct bfs_sb *cur,
		      struct bfs_sb *next)
{
	(void)ctx;
	(void)dev;
	(void)cur;
	next->label[0] = 'x';	/* must not reach the in-memory superblock */
	return -EIO;
}

static u64 used_blocks(struct bfs_fs *fs)
{
	struct bfs_statfs st;

	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert_int_eq(bfs_fs_statfs(fs, &st), 0);
	return st.blocks - st.bfree;
}

static void write_zeros(struct bfs_fs *fs, const char *name)
{
	struct bfs_stat st;
	u8 *buf = bfs_zalloc(4 * MiB);

	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name), S_IFREG | 0644, 0,
				      &root_cr, &st), 0);
	ck_assert_int_eq(bfs_fs_write(fs, st.ino, buf, 4 * MiB, 0), 4 * MiB);
	bfs_free(buf);
}

START_TEST(test_live_options)
{
	struct bfs_dev *dev = make_fs();
	struct bfs_sb_handle h;
	struct bfs_fs *fs;
	char err[BFS_ERR_LEN];
	u64 u0, u1, u2;

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	u0 = used_blocks(fs);
	write_zeros(fs, "plain");
	u1 = used_blocks(fs);
	ck_assert_uint_ge(u1 - u0, 4 * MiB / 4096);
	ck_assert_int_eq(bfs_fs_sb_update(fs, fail_write, NULL), -EIO);
	ck_assert_uint_eq(bfs_core_sb(bfs_fs_core(fs))->label[0], 0);
	ck_assert_int_eq(bfs_fs_sb_update(fs, set_zstd, NULL), 0);
	ck_assert_uint_eq(bfs_core_sb(bfs_fs_core(fs))->compression_type, BFS_COMPRESSION_ZSTD);
	write_zeros(fs, "packed");
	u2 = used_blocks(fs);
	/* zeros: every 16 KiB chunk (format's default) shrinks to its one block */
	ck_assert_uint_le(u2 - u1, (u1 - u0) / 4);
	/* on disk at once, while open */
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert_uint_eq(h.sb->compression_type, BFS_COMPRESSION_ZSTD);
	ck_assert_uint_eq(bfs_sb_data_csum_type(h.sb), BFS_CSUM_NONE);
	bfs_sb_handle_release(&h);

	/* errors=remount-ro: every later write fails, fsync says so, close writes nothing */
	bfs_fs_stop_writes(fs, -EUCLEAN, "test");
	ck_assert_int_eq(bfs_fs_error(fs), -EUCLEAN);
	{
		struct bfs_stat st;

		ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, "late", 4, S_IFREG | 0644, 0,
					      &root_cr, &st), -EROFS);
	}
	ck_assert_int_ne(bfs_fs_sync(fs), 0);
	ck_assert_int_ne(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert(!(le32_to_cpu(h.sb->flags) & BFS_SB_CLEAN));	/* the next open replays */
	bfs_sb_handle_release(&h);
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &fs), 0);
	{
		struct bfs_stat st;

		ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, "packed", 6, &st), 0);
		ck_assert_uint_eq(st.size, 4 * MiB);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* ---- crash safety ---- */

/* units: 1 the grow, 2 a file written into the new space and synced */
static bool files_ok(void *ctx, struct bfs_fs *fs, char *why)
{
	const struct crash_marks *mk = ctx;

	return file_ok(fs, "a", why) && (mk->f < 2 || file_ok(fs, "b", why));
}

static bool check_state(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	(void)ctx;
	return resize_state_ok(img, OLD_SIZE, NEW_SIZE, mk.f >= 1, files_ok, &mk, why);
}

START_TEST(test_grow_online_crash)
{
	struct bfs_dev *dev = make_fs(), *base;
	char *logpath = bfs_unit_tmpfile("grow-online");
	struct bfs_fs *fs;
	char err[BFS_ERR_LEN];
	u64 old;

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	write_file(fs, "a");
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	/* the base image is the device as the open filesystem left it */
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	crash_mark(dev, 'f', 0);
	crash_mark(dev, 'c', 1);
	ck_assert_int_eq(bfs_fs_grow(fs, NEW_SIZE, &old, err), 0);
	crash_mark(dev, 'f', 1);
	crash_mark(dev, 'c', 2);
	write_file(fs, "b");
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	crash_mark(dev, 'f', 2);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	crash_states_check("grow-online", logpath, base, 11, check_state, NULL, 3);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}
END_TEST

static Suite *online_suite(void)
{
	Suite *s = suite_create("online");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_grow_then_use);
	tcase_add_test(tc, test_grow_while_writing);
	tcase_add_test(tc, test_live_options);
	tcase_add_test(tc, test_grow_online_crash);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(online_suite)
