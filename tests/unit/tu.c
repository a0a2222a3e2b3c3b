// SPDX-License-Identifier: MIT
#include "tu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

char tu_last_err[1024];
unsigned tu_nr_errs;
unsigned tu_nr_warns;
static char warn_prefix[64];
static bfs_mutex log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_hook(enum bfs_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	bfs_mutex_lock(&log_lock);
	if (getenv("BFS_TEST_VERBOSE"))
		fprintf(stderr, "bfs %d: %s\n", level, msg);
	if (level == BFS_LOG_ERR) {
		snprintf(tu_last_err, sizeof(tu_last_err), "%s", msg);
		tu_nr_errs++;
	} else if (level == BFS_LOG_WARN && warn_prefix[0] &&
		   !strncmp(msg, warn_prefix, strlen(warn_prefix))) {
		tu_nr_warns++;
	}
	bfs_mutex_unlock(&log_lock);
}

void tu_log_reset(void)
{
	bfs_log_set_hook(log_hook, NULL);
	bfs_mutex_lock(&log_lock);
	tu_last_err[0] = 0;
	tu_nr_errs = 0;
	tu_nr_warns = 0;
	bfs_mutex_unlock(&log_lock);
}

void tu_log_count_warnings(const char *prefix)
{
	bfs_mutex_lock(&log_lock);
	snprintf(warn_prefix, sizeof(warn_prefix), "%s", prefix ? prefix : "");
	bfs_mutex_unlock(&log_lock);
}

/* @with_fs: the whole bfs_mkfs(); else only the btree core's part */
/* format @dev (@size bytes) with the core alone, or the whole filesystem */
static void format_dev(struct bfs_dev *dev, u64 size, u32 node_size, u32 bucket_size,
		       u32 jbuckets, u8 compression, bool with_fs)
{
	struct bfs_format_opts o = {
		.btree_node_size = node_size,
		.bucket_size = bucket_size,
		.journal_nbuckets = jbuckets,
		.compression_type = compression,
		.block_size = 4096,
	};
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";
	int ret;

	ck_assert_ptr_nonnull(sb);
	ret = bfs_sb_layout(&o, size, 512, sb, err);
	ck_assert_msg(!ret, "layout: %d %s", ret, err);
	if (with_fs) {
		ret = bfs_mkfs(dev, sb);
		ck_assert_msg(!ret, "mkfs: %d (%s)", ret, tu_last_err);
		ck_assert(le32_to_cpu(sb->flags) & BFS_SB_CLEAN);
	} else {
		ck_assert_int_eq(bfs_core_format(dev, sb), 0);
		ck_assert_int_eq(bfs_mkfs_write(dev, sb), 0);
	}
	bfs_free(sb);
}

static struct bfs_dev *mkfs_mem(u64 size, u32 node_size, u32 bucket_size, u32 jbuckets,
				u8 compression, bool with_fs)
{
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(size, &dev), 0);
	format_dev(dev, size, node_size, bucket_size, jbuckets, compression, with_fs);
	return dev;
}

void tu_format_fs(struct bfs_dev *dev, u64 size, u32 node_size, u32 bucket_size, u8 compression)
{
	format_dev(dev, size, node_size, bucket_size, 0, compression, true);
}

struct bfs_dev *tu_mkfs(u64 size, u32 node_size, u32 bucket_size, u32 jbuckets)
{
	return mkfs_mem(size, node_size, bucket_size, jbuckets, BFS_COMPRESSION_NONE, false);
}

struct bfs_dev *tu_mkfs_fs(u64 size, u32 node_size, u32 bucket_size, u8 compression)
{
	return mkfs_mem(size, node_size, bucket_size, 0, compression, true);
}

void tu_pattern(u8 *buf, size_t len, u64 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(i * 131 + (i >> 9) + seed);
}

void tu_write_pattern_file(struct bfs_fs *fs, const char *name, size_t len, u64 seed)
{
	static const struct bfs_creds root = { 0, 0 };
	struct bfs_stat st;
	u8 *buf = bfs_malloc(len);

	ck_assert_ptr_nonnull(buf);
	tu_pattern(buf, len, seed);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name), S_IFREG | 0644, 0,
				      &root, &st), 0);
	ck_assert_int_eq(bfs_fs_write(fs, st.ino, buf, len, 0), (ssize_t)len);
	bfs_free(buf);
}

bool tu_pattern_file_ok(struct bfs_fs *fs, const char *name, size_t len, u64 seed, char *why)
{
	u8 *buf = bfs_malloc(len), *want = bfs_malloc(len);
	struct bfs_stat st;
	bool ok = false;
	size_t i;

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(want);
	tu_pattern(want, len, seed);
	if (bfs_fs_lookup(fs, BFS_ROOT_INO, name, strlen(name), &st) ||
	    bfs_fs_read(fs, st.ino, buf, len, 0) != (ssize_t)len) {
		snprintf(why, 512, "cannot read '%s'", name);
	} else if (memcmp(buf, want, len)) {
		for (i = 0; buf[i] == want[i]; i++)
			;
		snprintf(why, 512, "'%s' differs at byte %zu", name, i);
	} else {
		ok = true;
	}
	bfs_free(buf);
	bfs_free(want);
	return ok;
}

struct bfs_fs *tu_fs_open(struct bfs_dev *dev)
{
	struct bfs_fs_opts o = { 0 };
	struct bfs_fs *fs = NULL;
	int ret = bfs_fs_open(dev, &o, &fs);

	ck_assert_msg(!ret, "open: %d (%s)", ret, tu_last_err);
	ck_assert_uint_eq(tu_nr_warns, 0);
	return fs;
}

u64 tu_mkfile(struct bfs_fs *fs, const char *name)
{
	struct bfs_creds cr = { 0, 0 };
	struct bfs_stat st;
	int ret = bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name), S_IFREG | 0644, 0, &cr, &st);

	ck_assert_msg(!ret, "mknod %s: %d", name, ret);
	return st.ino;
}

void tu_fill_random(u8 *p, size_t n, u64 seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (u8)(seed >> 56);
	}
}
