// SPDX-License-Identifier: MIT
/*
 * Range writers (range_lock.h, doc/commit.md "Range writers"): threads
 * overwrite 4 KiB blocks of one file at random, each its own blocks (block
 * b is thread b % WRITERS's), inside the file's size and so off its inode
 * lock, while another thread truncates the file down and back up and
 * another stats it.  Truncation takes the inode lock, which waits until
 * no range writer is in flight and keeps new ones out, so at the end every
 * block holds the last write to it, or zeros when a truncate below it
 * began after that write had returned (either when the two overlapped in
 * time), and the inode's sectors are exactly those of the blocks that hold
 * data (fsck agrees: it counts the extents).
 */
#include "tu.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/os.h>

#include "fs/range_lock.h"	/* its counters */

#define WRITERS		4
#define BLOCKS		512		/* 2 MiB */
#define BLK		4096
#define FULL		((u64)BLOCKS * BLK)
#define TRUNCS		40

struct rw {
	struct bfs_fs *fs;
	u64	ino;
	u32	writes;			/* per writer */
	u64	clock;			/* atomic: orders writes and truncates */
	/* per block: its last write (0: the prefill) and when it started and returned */
	u32	last[BLOCKS];
	u64	w_start[BLOCKS], w_end[BLOCKS];
	/* truncates: to what, when they started and returned */
	u64	t_size[TRUNCS], t_start[TRUNCS], t_end[TRUNCS];
	bool	stop;			/* atomic */
	unsigned writers_done;		/* atomic */
	int	err[WRITERS + 2];
};

struct rw_arg {
	struct rw *r;
	unsigned idx;
};

static u64 tick(struct rw *r)
{
	return __atomic_add_fetch(&r->clock, 1, __ATOMIC_SEQ_CST);
}

static void fill(u64 *buf, u32 b, u32 i)
{
	u32 j;

	for (j = 0; j < BLK / 8; j++)
		buf[j] = (u64)(b + 1) << 40 | (u64)i << 16 | j;
}

static void *writer(void *arg)
{
	struct rw_arg *a = arg;
	struct rw *r = a->r;
	u64 *buf = bfs_aligned_alloc(BLK, BLK), x = 0x9E3779B97F4A7C15ULL * (a->idx + 1);
	u32 i;

	for (i = 1; i <= r->writes && buf; i++) {
		u32 b;
		u64 s;
		ssize_t n;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b = (u32)(x % (BLOCKS / WRITERS)) * WRITERS + a->idx;
		fill(buf, b, i);
		s = tick(r);
		n = bfs_fs_write(r->fs, r->ino, buf, BLK, (u64)b * BLK);
		if (n != BLK) {
			r->err[a->idx] = n < 0 ? (int)n : -EIO;
			break;
		}
		r->last[b] = i;
		r->w_start[b] = s;
		r->w_end[b] = tick(r);
	}
	__atomic_add_fetch(&r->writers_done, 1, __ATOMIC_RELEASE);
	bfs_free(buf);
	return NULL;
}

/*
 * Down to a random block boundary in the second half (the first stays
 * inside the size: range writers), then up to the whole size again: a
 * hole; while the writers run.
 */
static void *truncater(void *arg)
{
	struct rw_arg *a = arg;
	struct rw *r = a->r;
	unsigned k;
	u64 x = 12345;

	for (k = 0; k < TRUNCS && __atomic_load_n(&r->writers_done, __ATOMIC_ACQUIRE) < WRITERS;
	     k++) {
		struct bfs_setattr sa = { .valid = BFS_SET_SIZE };
		struct bfs_stat st;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		sa.size = (BLOCKS / 2 + (x >> 33) % (BLOCKS / 2)) * BLK;
		r->t_size[k] = sa.size;
		r->t_start[k] = tick(r);
		r->err[a->idx] = bfs_fs_setattr(r->fs, r->ino, &sa, &st);
		sa.size = FULL;
		if (!r->err[a->idx])
			r->err[a->idx] = bfs_fs_setattr(r->fs, r->ino, &sa, &st);
		r->t_end[k] = tick(r);
		if (r->err[a->idx])
			break;
		usleep(5000);
	}
	return NULL;
}

/* stat meanwhile: the size is never below what a truncate left, nor above FULL */
static void *statter(void *arg)
{
	struct rw_arg *a = arg;
	struct rw *r = a->r;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		struct bfs_stat st;

		r->err[a->idx] = bfs_fs_getattr(r->fs, r->ino, &st);
		if (!r->err[a->idx] && (st.size > FULL || st.blocks > FULL / 512))
			r->err[a->idx] = -ERANGE;
		if (r->err[a->idx])
			break;
	}
	return NULL;
}

START_TEST(test_range_writers_and_truncate)
{
	struct bfs_dev *dev = tu_mkfs_fs(256 * MiB, 0, 0, 0);
	struct rw *r = bfs_zalloc(sizeof(*r));
	struct rw_arg args[WRITERS + 2];
	bfs_thread tid[WRITERS + 2];
	u64 *buf = bfs_aligned_alloc(BLK, BLK), data_blocks = 0;
	struct bfs_fsck f = { 0 };
	struct bfs_range_stats rs;
	struct bfs_stat st;
	unsigned t;
	u32 b, j;

	tu_log_reset();
	tu_log_count_warnings("data:");
	r->writes = 4000;
	r->fs = tu_fs_open(dev);
	r->ino = tu_mkfile(r->fs, "f");
	for (b = 0; b < BLOCKS; b++) {
		fill(buf, b, 0);
		ck_assert_int_eq(bfs_fs_write(r->fs, r->ino, buf, BLK, (u64)b * BLK), BLK);
	}
	for (t = 0; t < WRITERS + 2; t++) {
		args[t] = (struct rw_arg){ .r = r, .idx = t };
		ck_assert_int_eq(bfs_thread_create(&tid[t], t < WRITERS ? writer :
						   t == WRITERS ? truncater : statter, &args[t]), 0);
	}
	for (t = 0; t <= WRITERS; t++)
		bfs_thread_join(tid[t]);
	__atomic_store_n(&r->stop, true, __ATOMIC_RELEASE);
	bfs_thread_join(tid[WRITERS + 1]);
	for (t = 0; t < WRITERS + 2; t++)
		ck_assert_msg(!r->err[t], "thread %u: %d", t, r->err[t]);

	for (b = 0; b < BLOCKS; b++) {
		bool must_zero = false, may_zero = false, zero = true;
		unsigned k;

		for (k = 0; k < TRUNCS; k++) {
			if (r->t_size[k] > (u64)b * BLK)
				continue;	/* this truncate kept the block */
			if (r->t_start[k] > r->w_end[b])
				must_zero = true;	/* began after the last write returned */
			else if (r->t_end[k] > r->w_start[b])
				may_zero = true;	/* overlapped it */
		}
		ck_assert_int_eq(bfs_fs_read(r->fs, r->ino, buf, BLK, (u64)b * BLK), BLK);
		for (j = 0; j < BLK / 8; j++)
			zero = zero && !buf[j];
		if (zero) {
			ck_assert_msg(must_zero || may_zero, "block %u: zeros, last write %u kept",
				      b, r->last[b]);
			continue;
		}
		ck_assert_msg(!must_zero, "block %u: data after a later truncate", b);
		data_blocks++;
		for (j = 0; j < BLK / 8; j++)
			ck_assert_msg(buf[j] == ((u64)(b + 1) << 40 | (u64)r->last[b] << 16 | j),
				      "block %u word %u: %#llx, last write %u", b, j,
				      (unsigned long long)buf[j], r->last[b]);
	}
	/* a tail buffer's bytes have no sectors yet: written back first */
	ck_assert_int_eq(bfs_fs_fsync(r->fs, r->ino, false), 0);
	ck_assert_int_eq(bfs_fs_getattr(r->fs, r->ino, &st), 0);
	ck_assert_uint_eq(st.size, FULL);
	ck_assert_msg(st.blocks == data_blocks * (BLK / 512), "%llu blocks, %llu hold data",
		      (unsigned long long)st.blocks, (unsigned long long)data_blocks);
	bfs_range_stats(r->fs, &rs);
	printf("range-write: %u writers x %u writes, %llu range writes (%llu waited for a range, "
	       "%llu drains waited), %llu blocks hold data\n", WRITERS, r->writes,
	       (unsigned long long)rs.ranged, (unsigned long long)rs.overlap_waits,
	       (unsigned long long)rs.drain_waits, (unsigned long long)data_blocks);
	/* most writes were inside the size: the path under test ran */
	ck_assert_uint_gt(rs.ranged, WRITERS * r->writes / 4);
	ck_assert_int_eq(bfs_fs_close(r->fs), 0);
	ck_assert_uint_eq(tu_nr_warns, 0);

	/* fsck counts the extents: the inode's sectors must be theirs */
	f.dev = dev;
	f.mode = BFS_FSCK_MODE_NO;
	ck_assert_int_eq(bfs_fsck_run(&f), BFS_FSCK_OK);
	bfs_fsck_release(&f);
	bfs_free(buf);
	bfs_free(r);
	bfs_dev_close(dev);
}
END_TEST

static Suite *range_write_suite(void)
{
	Suite *s = suite_create("range_write");
	TCase *tc = tcase_create("range");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_range_writers_and_truncate);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(range_write_suite)
