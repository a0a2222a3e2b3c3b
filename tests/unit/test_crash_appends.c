// SPDX-License-Identifier: MIT
/*
 * Crash tests of small appends, which wait in a tail buffer in memory
 * (libcore/fs/tail_buf.c) until fsync, sync, close, a write the buffer
 * does not take, or anything else that takes the file's lock.
 *
 * Two files get appends of mostly a few bytes (some of a few hundred, a
 * few larger than a block, which go the ordinary way), each byte a
 * function of its file and offset, mixed with fsyncs of one file, syncs,
 * reads and stats checked in process, xattr changes (which write the
 * buffer back) and clean reopens, on a recorded memory device.  Every
 * crashed state built from the I/O log (crash_states.h) must open, pass
 * bfs_btree_verify(), and show each file
 *   - at least as long as when it was last fsync'd (or synced, or closed),
 *   - at most as long as after the last operation begun,
 *   - with exactly the bytes appended to it up to its length (a prefix of
 *     what was written: nothing lost in the middle, nothing stale),
 * and `fsck -n` of the image, after that recovery, must find nothing.  A
 * second run does the same while another thread syncs in a loop, as the
 * periodic commit does on a mount.
 *
 * Environment: BFS_CRASH_APPEND_OPS (default 1500), BFS_CRASH_SEED and the
 * crash_states.h variables.
 */
#include "crash_states.h"
#include "unit.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bfs/btree.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#define NR_FILES	2
#define MAX_BYTES	(512 * 1024)	/* per file */

static const char *const names[NR_FILES] = { "log0", "log1" };

static u8 pattern(unsigned f, u64 off)
{
	u64 x = (off + 1) * 0x9e3779b97f4a7c15ULL ^ (f + 1) * 0xbf58476d1ce4e5b9ULL;

	return (u8)(x >> 29);
}

struct appends {
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	u64 rng;
	u64 ino[NR_FILES];
	u64 len[NR_FILES];		/* now */
	/* per operation n: lengths after it, and lengths known durable at it */
	u64 (*after)[NR_FILES];
	u64 (*floor)[NR_FILES];
	u32 nr_ops, fsyncs, syncs, reopens;
	volatile bool stop;
};

static u64 below(struct appends *w, u64 n)
{
	return crash_splitmix(&w->rng) % n;
}

static void *sync_loop(void *arg)
{
	struct appends *w = arg;

	while (!w->stop) {
		ck_assert_int_eq(bfs_fs_sync(w->fs), 0);
		sched_yield();
	}
	return NULL;
}

static void open_fs(struct appends *w)
{
	unsigned f;

	ck_assert_int_eq(bfs_fs_open(w->dev, &(struct bfs_fs_opts){ 0 }, &w->fs), 0);
	for (f = 0; f < NR_FILES; f++) {
		struct bfs_stat st;

		ck_assert_int_eq(bfs_fs_lookup(w->fs, BFS_ROOT_INO, names[f], strlen(names[f]),
					       &st), 0);
		w->ino[f] = st.ino;
		ck_assert_uint_eq(st.size, w->len[f]);
	}
}

/* in process: @len bytes at @off read back as written, and the size */
static void check_read(struct appends *w, unsigned f)
{
	static u8 buf[8192];
	u64 off = w->len[f] ? below(w, w->len[f]) : 0, want, i;
	size_t len = 1 + (size_t)below(w, sizeof(buf));
	struct bfs_stat st;
	ssize_t n;

	ck_assert_int_eq(bfs_fs_getattr(w->fs, w->ino[f], &st), 0);
	ck_assert_uint_eq(st.size, w->len[f]);
	n = bfs_fs_read(w->fs, w->ino[f], buf, len, off);
	want = BFS_MIN((u64)len, w->len[f] - off);
	ck_assert_int_eq(n, (ssize_t)want);
	for (i = 0; i < want; i++)
		ck_assert_msg(buf[i] == pattern(f, off + i), "%s byte %llu read back wrong",
			      names[f], (unsigned long long)(off + i));
}

static void append(struct appends *w, unsigned f)
{
	static u8 buf[6000];
	u64 r = below(w, 100), len, i;

	len = r < 70 ? 1 + below(w, 16) : r < 95 ? 17 + below(w, 700) : 701 + below(w, 5000);
	if (w->len[f] + len > MAX_BYTES)
		return;
	for (i = 0; i < len; i++)
		buf[i] = pattern(f, w->len[f] + i);
	ck_assert_int_eq(bfs_fs_write(w->fs, w->ino[f], buf, len, w->len[f]), (ssize_t)len);
	w->len[f] += len;
}

static void run_workload(struct appends *w, u32 nr_ops, bool sync_thread)
{
	pthread_t th;
	u32 n;

	w->after = bfs_zalloc((size_t)(nr_ops + 1) * sizeof(*w->after));
	w->floor = bfs_zalloc((size_t)(nr_ops + 1) * sizeof(*w->floor));
	ck_assert(w->after && w->floor);
	memcpy(w->after[0], w->len, sizeof(w->len));
	memcpy(w->floor[0], w->len, sizeof(w->len));
	open_fs(w);
	if (sync_thread)
		ck_assert_int_eq(pthread_create(&th, NULL, sync_loop, w), 0);
	for (n = 1; n <= nr_ops; n++) {
		unsigned f = (unsigned)below(w, NR_FILES);
		u64 r = below(w, 100);
		bool durable = false;

		memcpy(w->floor[n], w->floor[n - 1], sizeof(w->len));
		crash_mark(w->dev, 'c', n);
		if (r < 80) {
			append(w, f);
		} else if (r < 86) {
			ck_assert_int_eq(bfs_fs_fsync(w->fs, w->ino[f], r & 1), 0);
			w->floor[n][f] = w->len[f];
			w->fsyncs++;
			durable = true;
		} else if (r < 88) {
			ck_assert_int_eq(bfs_fs_sync(w->fs), 0);
			memcpy(w->floor[n], w->len, sizeof(w->len));
			w->syncs++;
			durable = true;
		} else if (r < 96) {
			check_read(w, f);
		} else if (r < 98) {
			u8 v = (u8)n;

			ck_assert_int_eq(bfs_fs_setxattr(w->fs, w->ino[f], "user.n", &v, 1, 0), 0);
		} else if (!sync_thread) {
			ck_assert_int_eq(bfs_fs_close(w->fs), 0);
			memcpy(w->floor[n], w->len, sizeof(w->len));
			open_fs(w);
			w->reopens++;
			durable = true;
		}
		memcpy(w->after[n], w->len, sizeof(w->len));
		if (durable)
			crash_mark(w->dev, 'f', n);
	}
	if (sync_thread) {
		w->stop = true;
		ck_assert_int_eq(pthread_join(th, NULL), 0);
	}
	ck_assert_int_eq(bfs_fs_close(w->fs), 0);
	w->nr_ops = nr_ops;
}

static bool check_cb(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct appends *w = ctx;
	static u8 buf[MAX_BYTES];
	u32 hi = BFS_MIN(mk.c, w->nr_ops);
	struct bfs_fsck fsck = { .dev = img, .mode = BFS_FSCK_MODE_NO };
	struct bfs_fs *fs;
	unsigned f;
	int ret, rc;

	if (!crash_open_verified(img, &fs, why))
		return false;
	for (f = 0; f < NR_FILES; f++) {
		u64 lo = w->floor[BFS_MIN(mk.f, hi)][f], top = w->after[hi][f], i;
		struct bfs_stat st;
		ssize_t n;

		ret = bfs_fs_lookup(fs, BFS_ROOT_INO, names[f], strlen(names[f]), &st);
		if (ret) {
			snprintf(why, 512, "%s: lookup failed: %s", names[f], strerror(-ret));
			bfs_fs_close(fs);
			return false;
		}
		if (st.size < lo || st.size > top) {
			snprintf(why, 512, "%s: %llu bytes, fsync'd %llu, at most %llu written",
				 names[f], (unsigned long long)st.size, (unsigned long long)lo,
				 (unsigned long long)top);
			bfs_fs_close(fs);
			return false;
		}
		n = bfs_fs_read(fs, st.ino, buf, sizeof(buf), 0);
		if (n != (ssize_t)st.size) {
			snprintf(why, 512, "%s: read %zd of %llu bytes", names[f], n,
				 (unsigned long long)st.size);
			bfs_fs_close(fs);
			return false;
		}
		for (i = 0; i < st.size; i++) {
			if (buf[i] != pattern(f, i)) {
				snprintf(why, 512, "%s: byte %llu of %llu is not what was appended",
					 names[f], (unsigned long long)i,
					 (unsigned long long)st.size);
				bfs_fs_close(fs);
				return false;
			}
		}
	}
	if (!crash_close_recovered(fs, true, why))
		return false;
	rc = bfs_fsck_run(&fsck);
	bfs_fsck_release(&fsck);
	if (rc != BFS_FSCK_OK) {
		snprintf(why, 512, "fsck -n after recovery exited %d", rc);
		return false;
	}
	return true;
}

static void crash_appends_run(bool sync_thread, const char *what)
{
	u64 dev_bytes = 64 * MiB;
	struct appends w = { .rng = crash_env_u64("BFS_CRASH_SEED", 1) ^ sync_thread };
	struct bfs_format_opts fo = { .data_chunk = 16 * KiB };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("crash-appends-log");
	struct bfs_creds cr = { 0, 0 };
	struct bfs_dev *base;
	struct bfs_fs *fs;
	unsigned f;

	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &w.dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(w.dev, sb), 0);
	ck_assert_int_eq(bfs_fs_open(w.dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	for (f = 0; f < NR_FILES; f++) {
		struct bfs_stat st;

		ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, names[f], strlen(names[f]),
					      S_IFREG | 0644, 0, &cr, &st), 0);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(w.dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(w.dev, logpath), 0);
	run_workload(&w, (u32)crash_env_u64("BFS_CRASH_APPEND_OPS", 1500), sync_thread);
	ck_assert_int_eq(bfs_dev_record_stop(w.dev), 0);
	printf("crash-appends (%s): %u operations, %u fsyncs, %u syncs, %u reopens; %llu and %llu "
	       "bytes appended\n", what, w.nr_ops, w.fsyncs, w.syncs, w.reopens,
	       (unsigned long long)w.len[0], (unsigned long long)w.len[1]);
	crash_states_check(what, logpath, base, w.rng ^ 0x5151, check_cb, &w, 10);
	bfs_free(w.after);
	bfs_free(w.floor);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(w.dev);
}

START_TEST(test_crash_appends)
{
	crash_appends_run(false, "crash-appends");
}
END_TEST

START_TEST(test_crash_appends_syncing)
{
	crash_appends_run(true, "crash-appends, sync thread");
}
END_TEST

static Suite *crash_appends_suite(void)
{
	Suite *s = suite_create("crash_appends");
	TCase *tc = tcase_create("appends");

	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, test_crash_appends);
	tcase_add_test(tc, test_crash_appends_syncing);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_appends_suite)
