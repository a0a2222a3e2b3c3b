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
 *
 * The second test has the threads overwrite one file instead, each its
 * own blocks of it (block b is thread b % THREADS's), so that they split
 * the same 16 KiB extents side by side: range writers off the inode lock
 * (range_lock.h, doc/commit.md "Range writers"), whose sectors and times
 * reach the inode key by a fixup at apply time.  Every crash state must
 * also keep the file's size and its st_blocks (fsck compares the inode's
 * sectors with its extents; the test with what the file must hold).
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

enum { PER_FILE, SHARED };

struct dpar {
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	int	mode;			/* PER_FILE or SHARED (ino[] all the same) */
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

static u32 block_at(int mode, unsigned t, u32 i)
{
	u64 x = (u64)t * 0x9E3779B97F4A7C15ULL + (u64)i * 0xBF58476D1CE4E5B9ULL;

	x ^= x >> 29;
	if (mode == SHARED)
		return (u32)(x % (BLOCKS / THREADS)) * THREADS + t;	/* its own blocks */
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

/*
 * SHARED: every other 16 KiB of the file starts as a hole, so that the
 * writes into it change the inode's sectors (an overwrite does not)
 */
static bool hole_at_start(int mode, u32 b)
{
	return mode == SHARED && (b / THREADS) % 2;
}

static bool all_zero(const u64 *buf)
{
	u32 j;

	for (j = 0; j < BLK / 8; j++)
		if (buf[j])
			return false;
	return true;
}

/* file @t's blocks (SHARED: the blocks of thread @t in the one file); *data: those with data */
static bool check_file(struct dpar *p, struct bfs_fs *fs, unsigned t, u32 acked, u64 *buf,
		       u64 *data, char *why)
{
	u32 b, j;

	for (b = p->mode == SHARED ? t : 0; b < BLOCKS; b += p->mode == SHARED ? THREADS : 1) {
		u32 need = last_write(p, t, b, acked), i;
		ssize_t n = bfs_fs_read(fs, p->ino[t], buf, BLK, (u64)b * BLK);

		if (n != BLK) {
			snprintf(why, 512, "file %u block %u: read gave %zd", t, b, n);
			return false;
		}
		if (!need && hole_at_start(p->mode, b) && all_zero(buf))
			continue;	/* still the hole */
		(*data)++;
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
	for (t = 0; t < THREADS && ok; t++) {
		struct bfs_stat st;
		u64 data = 0;

		ok = check_file(p, fs, t, (u32)acked[t], buf, &data, why);
		if (p->mode == SHARED)
			continue;
		/* every block written, none grown: the size and the 512-byte blocks stay */
		ok = ok && !bfs_fs_getattr(fs, p->ino[t], &st);
		if (ok && (st.size != (u64)BLOCKS * BLK || st.blocks != data * BLK / 512)) {
			snprintf(why, 512, "file %u: size %llu, %llu blocks", t,
				 (unsigned long long)st.size, (unsigned long long)st.blocks);
			ok = false;
		}
	}
	if (ok && p->mode == SHARED) {
		struct bfs_stat st;
		u64 data = 0;

		/* the size stays; the 512-byte blocks are those of the blocks with data */
		for (t = 0; t < THREADS && ok; t++)
			ok = check_file(p, fs, t, (u32)acked[t], buf, &data, why);
		ok = ok && !bfs_fs_getattr(fs, p->ino[0], &st);
		if (ok && (st.size != (u64)BLOCKS * BLK || st.blocks != data * BLK / 512)) {
			snprintf(why, 512, "size %llu, %llu blocks, %llu blocks hold data",
				 (unsigned long long)st.size, (unsigned long long)st.blocks,
				 (unsigned long long)data);
			ok = false;
		}
	}
	bfs_free(buf);
	return crash_close_recovered(fs, ok, why);
}

static void run(int mode, const char *name, u64 seed)
{
	u64 dev_bytes = 64 * MiB;
	struct bfs_format_opts fo = { .data_chunk = 16 * KiB };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct dpar *p = bfs_zalloc(sizeof(*p));
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile(name);
	struct bfs_core_stats cs;
	struct bfs_dev *base;
	u64 *buf = bfs_aligned_alloc(BLK, BLK);
	unsigned t;
	u32 i, b;

	tu_log_reset();
	tu_log_count_warnings("data: ");
	p->mode = mode;
	p->writes = (u32)crash_env_u64("BFS_CRASH_DATA_PAR_WRITES", 400);
	ck_assert_int_eq(bfs_dev_open_mem(dev_bytes, &p->dev), 0);
	crash_acks_init(&p->acks, p->dev, MAX_ACKS);
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(p->dev, sb), 0);

	/* the files, laid out and durable before the log starts */
	ck_assert_int_eq(bfs_fs_open(p->dev, &(struct bfs_fs_opts){ 0 }, &p->fs), 0);
	for (t = 0; t < THREADS; t++) {
		char fname[16];

		snprintf(fname, sizeof(fname), "f%u", t);
		p->ino[t] = mode == SHARED && t ? p->ino[0] : tu_mkfile(p->fs, fname);
		for (b = 0; mode == PER_FILE && b < BLOCKS; b++) {
			fill(buf, t, 0, b);
			ck_assert_int_eq(bfs_fs_write(p->fs, p->ino[t], buf, BLK, (u64)b * BLK), BLK);
		}
		p->block_of[t] = bfs_calloc(p->writes + 1, sizeof(u16));
		for (i = 1; i <= p->writes; i++)
			p->block_of[t][i] = (u16)block_at(mode, t, i);
	}
	if (mode == SHARED) {
		/* one 16 KiB extent per THREADS blocks (a write splits it), every other one a hole */
		u64 *group = bfs_aligned_alloc(BLK, (size_t)THREADS * BLK);
		struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = (u64)BLOCKS * BLK };

		for (b = 0; b < BLOCKS; b += THREADS) {
			if (hole_at_start(mode, b))
				continue;
			for (t = 0; t < THREADS; t++)
				fill(group + (size_t)t * BLK / 8, t, 0, b + t);
			ck_assert_int_eq(bfs_fs_write(p->fs, p->ino[0], group, (size_t)THREADS * BLK,
						      (u64)b * BLK), (ssize_t)THREADS * BLK);
		}
		ck_assert_int_eq(bfs_fs_setattr(p->fs, p->ino[0], &sa, NULL), 0);
		bfs_free(group);
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
	printf("%s: %u threads x %u writes, %llu commits, %llu parallel\n", name, THREADS,
	       p->writes, (unsigned long long)cs.commits, (unsigned long long)cs.commits_parallel);
	ck_assert_int_eq(bfs_fs_close(p->fs), 0);
	/* a clean close: every write durable */
	for (t = 0; t < THREADS; t++)
		crash_ack(&p->acks, t, p->writes);
	ck_assert_int_eq(bfs_dev_record_stop(p->dev), 0);
	ck_assert_uint_eq(tu_nr_warns, 0);

	crash_states_check(name, logpath, base, seed, check_cb, p, 10);
	for (t = 0; t < THREADS; t++)
		bfs_free(p->block_of[t]);
	crash_acks_destroy(&p->acks);
	bfs_free(buf);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(p->dev);
	bfs_free(p);
}

START_TEST(test_crash_data_parallel)
{
	run(PER_FILE, "crash-data-par", 0x5eed);
}
END_TEST

START_TEST(test_crash_data_parallel_one_file)
{
	run(SHARED, "crash-data-par-one-file", 0x5eef);
}
END_TEST

static Suite *crash_data_par_suite(void)
{
	Suite *s = suite_create("crash_data_par");
	TCase *tc = tcase_create("crash");

	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_crash_data_parallel);
	tcase_add_test(tc, test_crash_data_parallel_one_file);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_data_par_suite)
