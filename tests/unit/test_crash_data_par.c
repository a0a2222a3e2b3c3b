// SPDX-License-Identifier: MIT
/*
 * Data commits in parallel (doc/commit.md, "Data commits"): threads
 * overwrite 4 KiB blocks of their own files at random and fsync now and
 * then, all at once, on a recorded device.  Their chunks share the write
 * point's buckets, so the commits of different files change the same
 * buckets' alloc keys side by side, with no lock of the data layer held
 * across them.  Every crash state the log allows must then
 *   - pass fsck (the alloc keys' live sectors are what the extents say:
 *     the journal holds each bucket's values in the order they were
 *     computed), and open without a live-sector warning;
 *   - hold, in every block, the last write to it that an fsync returned
 *     for before the crash, or a later one of the same thread, whole.
 * Each block's bytes name the thread, the write and the block, so a
 * crashed file says which write each of its blocks comes from.
 */
#include "crash_states.h"
#include "tu.h"
#include "unit.h"

#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define THREADS		4
#define BLOCKS		256		/* per file: 1 MiB */
#define BLK		4096
#define FSYNC_EVERY	8
#define MAX_ACKS	4096

struct dworker {
	struct dpar *p;
	unsigned idx;
	int	err;
};

struct dpar {
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	u64	ino[THREADS];
	u32	writes;			/* per thread */
	u16	*block_of[THREADS];	/* write i (from 1) of thread t went to block_of[t][i] */
	struct crash_acks acks;		/* (thread, upto): the thread's writes <= upto durable */
	struct dworker w[THREADS];
};

/* word j of block @b as written by write @i (0: the prefill) of thread @t */
static u64 word(unsigned t, u32 i, u32 b, u32 j)
{
	return (u64)t << 56 | (u64)i << 32 | (u64)b << 16 | j;
}

static void fill(u64 *buf, unsigned t, u32 i, u32 b)
{
	u32 j;

	for (j = 0; j < BLK / 8; j++)
		buf[j] = word(t, i, b, j);
}

static u32 block_at(unsigned t, u32 i)
{
	u64 x = (u64)t * 0x9E3779B97F4A7C15ULL + (u64)i * 0xBF58476D1CE4E5B9ULL;

	x ^= x >> 29;
	return (u32)(x % BLOCKS);
}

static void *writer(void *arg)
{
	struct dworker *w = arg;
	struct dpar *p = w->p;
	u64 *buf = bfs_aligned_alloc(BLK, BLK);
	u32 i;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (i = 1; i <= p->writes && !w->err; i++) {
		u32 b = p->block_of[w->idx][i];
		ssize_t n;

		fill(buf, w->idx, i, b);
		n = bfs_fs_write(p->fs, p->ino[w->idx], buf, BLK, (u64)b * BLK);
		if (n != BLK) {
			w->err = n < 0 ? (int)n : -EIO;
			break;
		}
		if (i % FSYNC_EVERY)
			continue;
		w->err = bfs_fs_fsync(p->fs, p->ino[w->idx], false);
		if (w->err)
			break;
		crash_ack(&p->acks, w->idx, i);
	}
	bfs_free(buf);
	return NULL;
}

/* the newest write of thread @t to block @b at or below @upto (0: the prefill) */
static u32 last_write(struct dpar *p, unsigned t, u32 b, u32 upto)
{
	for (; upto; upto--)
		if (p->block_of[t][upto] == b)
			return upto;
	return 0;
}

static bool check_file(struct dpar *p, struct bfs_fs *fs, unsigned t, u32 acked, u64 *buf,
		       char *why)
{
	u32 b, j;

	for (b = 0; b < BLOCKS; b++) {
		u32 need = last_write(p, t, b, acked), i;
		ssize_t n = bfs_fs_read(fs, p->ino[t], buf, BLK, (u64)b * BLK);

		if (n != BLK) {
			snprintf(why, 512, "file %u block %u: read gave %zd", t, b, n);
			return false;
		}
		i = (u32)(buf[0] >> 32 & 0xffffff);
		if (buf[0] >> 56 != t || i > p->writes || i < need ||
		    (i && p->block_of[t][i] != b)) {
			snprintf(why, 512, "file %u block %u: holds %#llx, the newest fsync'd "
				 "write to it is %u", t, b, (unsigned long long)buf[0], need);
			return false;
		}
		for (j = 0; j < BLK / 8; j++)
			if (buf[j] != word(t, i, b, j)) {
				snprintf(why, 512, "file %u block %u: word %u of write %u torn", t, b,
					 j, i);
				return false;
			}
	}
	return true;
}

static bool check_cb(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct dpar *p = ctx;
	u64 acked[THREADS];
	struct bfs_fs *fs;
	u64 *buf;
	unsigned t;
	bool ok = true;

	crash_acks_upto(&p->acks, mk.f, acked, THREADS);
	if (!crash_fsck_then_open(img, &fs, why))
		return false;
	buf = bfs_malloc(BLK);
	for (t = 0; t < THREADS && ok; t++)
		ok = check_file(p, fs, t, (u32)acked[t], buf, why);
	bfs_free(buf);
	return crash_close_recovered(fs, ok, why);
}

START_TEST(test_crash_data_parallel)
{
	u64 dev_bytes = 64 * MiB;
	struct bfs_format_opts fo = { .data_chunk = 16 * KiB };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct dpar *p = bfs_zalloc(sizeof(*p));
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("crash-data-par-log");
	struct bfs_core_stats cs;
	struct bfs_dev *base;
	u64 *buf = bfs_aligned_alloc(BLK, BLK);
	unsigned t;
	u32 i, b;

	tu_log_reset();
	tu_log_count_warnings("data: ");
	p->writes = (u32)crash_env_u64("BFS_CRASH_DATA_PAR_WRITES", 400);
	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &p->dev), 0);
	crash_acks_init(&p->acks, p->dev, MAX_ACKS);
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(p->dev, sb), 0);

	/* the files, laid out and durable before the log starts */
	ck_assert_int_eq(bfs_fs_open(p->dev, &(struct bfs_fs_opts){ 0 }, &p->fs), 0);
	for (t = 0; t < THREADS; t++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", t);
		p->ino[t] = tu_mkfile(p->fs, name);
		for (b = 0; b < BLOCKS; b++) {
			fill(buf, t, 0, b);
			ck_assert_int_eq(bfs_fs_write(p->fs, p->ino[t], buf, BLK, (u64)b * BLK), BLK);
		}
		p->block_of[t] = bfs_calloc(p->writes + 1, sizeof(u16));
		for (i = 1; i <= p->writes; i++)
			p->block_of[t][i] = (u16)block_at(t, i);
	}
	ck_assert_int_eq(bfs_fs_close(p->fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(p->dev, &base), 0);

	ck_assert_int_eq(bfs_dev_record_start(p->dev, logpath), 0);
	ck_assert_int_eq(bfs_fs_open(p->dev, &(struct bfs_fs_opts){ 0 }, &p->fs), 0);
	crash_mark(p->dev, 'f', 0);
	for (t = 0; t < THREADS; t++)
		p->w[t] = (struct dworker){ .p = p, .idx = t };
	crash_run_threads(THREADS, writer, p->w, sizeof(p->w[0]));
	for (t = 0; t < THREADS; t++)
		ck_assert_msg(!p->w[t].err, "thread %u: %d", t, p->w[t].err);
	bfs_core_get_stats(bfs_fs_core(p->fs), &cs);
	printf("crash-data-par: %u threads x %u writes, %llu commits, %llu parallel\n", THREADS,
	       p->writes, (unsigned long long)cs.commits, (unsigned long long)cs.commits_parallel);
	ck_assert_int_eq(bfs_fs_close(p->fs), 0);
	/* a clean close: every write durable */
	for (t = 0; t < THREADS; t++)
		crash_ack(&p->acks, t, p->writes);
	ck_assert_int_eq(bfs_dev_record_stop(p->dev), 0);
	ck_assert_uint_eq(tu_nr_warns, 0);

	crash_states_check("crash-data-par", logpath, base, 0x5eed, check_cb, p, 10);
	for (t = 0; t < THREADS; t++)
		bfs_free(p->block_of[t]);
	crash_acks_destroy(&p->acks);
	bfs_free(buf);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(p->dev);
	bfs_free(p);
}
END_TEST

static Suite *crash_data_par_suite(void)
{
	Suite *s = suite_create("crash_data_par");
	TCase *tc = tcase_create("crash");

	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_crash_data_parallel);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_data_par_suite)
