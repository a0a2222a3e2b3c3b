// SPDX-License-Identifier: MIT
/*
 * Small writes at files' ends buffered in memory (libcore/fs/tail_buf.c):
 * thousands of 4-byte appends are buffered (not one transaction each) and
 * read back, stat'd and mapped right; an fsx-like random mix of buffered
 * appends and tail overwrites with reads, truncates, punches, zero ranges,
 * fallocate, large and write-through (O_DIRECT) writes, xattrs, extent
 * maps, fsyncs and reopens on three files against a model; more files
 * than there are buffers (the oldest is written back); a writer of whole
 * blocks, which drops the inode lock for its device writes, racing an
 * appender whose buffer is made meanwhile (it must take the writer's data
 * too, not write stale bytes back over it).
 *
 * BFS_TAIL_FSX_OPS / BFS_TAIL_FSX_SEED run the random mix longer or
 * differently, BFS_TAIL_RACE_ROUNDS the race longer (default 200).
 */
#include "tu.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <bfs/fs.h>
#include <bfs/os.h>

#include "fs/tail_buf.h"

static u64 rnd_state = 0x2545f4914f6cdd1dULL;
static u64 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static u64 size_of(struct bfs_fs *fs, u64 ino)
{
	struct bfs_stat st;

	ck_assert_int_eq(bfs_fs_getattr(fs, ino, &st), 0);
	return st.size;
}

static void check_file(struct bfs_fs *fs, u64 ino, const u8 *model, u64 size, const char *when)
{
	u8 *buf = bfs_malloc(size + 4096);
	ssize_t n;
	u64 i;

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(size_of(fs, ino) == size, "%s: size %llu, expected %llu", when,
		      (unsigned long long)size_of(fs, ino), (unsigned long long)size);
	n = bfs_fs_read(fs, ino, buf, size + 4096, 0);
	ck_assert_msg(n == (ssize_t)size, "%s: read %zd of %llu (%s)", when, n,
		      (unsigned long long)size, tu_last_err);
	for (i = 0; i < size; i++)
		if (buf[i] != model[i])
			ck_abort_msg("%s: byte %llu is %02x, expected %02x", when,
				     (unsigned long long)i, buf[i], model[i]);
	bfs_free(buf);
}

static int count_extents(void *ctx, const struct bfs_fs_extent *e)
{
	(void)e;
	(*(unsigned *)ctx)++;
	return 0;
}

START_TEST(test_small_appends)
{
	struct bfs_dev *dev = tu_mkfs_fs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 ino = tu_mkfile(fs, "log");
	enum { N = 20000 };
	u8 *model = bfs_malloc(4 * N + 4);
	unsigned i, extents = 0;
	struct bfs_stat st;

	ck_assert_ptr_nonnull(model);
	for (i = 0; i < N; i++) {
		u8 rec[4] = { (u8)i, (u8)(i >> 8), (u8)(i >> 16), '\n' };

		ck_assert_int_eq(bfs_fs_write(fs, ino, rec, 4, (u64)i * 4), 4);
		memcpy(model + (size_t)i * 4, rec, 4);
		/* the first goes the ordinary way (a small file written once gains nothing) */
		if (i == 0)
			ck_assert_msg(!bfs_tail_any(fs), "the first small append was buffered");
		if (i == 1)
			ck_assert_msg(bfs_tail_any(fs), "a second 4-byte append was not buffered");
		if (i % 997 == 0)
			check_file(fs, ino, model, (u64)(i + 1) * 4, "while appending");
	}
	/* stat and lookup see the buffered size */
	ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, "log", 3, &st), 0);
	ck_assert_uint_eq(st.size, 4 * N);
	ck_assert_uint_ne((u64)st.mtime.tv_sec, 0);
	/* the extent map writes the buffer back first, and covers the whole file */
	ck_assert_int_eq(bfs_fs_map(fs, ino, count_extents, &extents), 0);
	ck_assert_uint_gt(extents, 0);
	ck_assert(!bfs_tail_any(fs));
	check_file(fs, ino, model, 4 * N, "after the map");
	/* fsync writes the buffer back */
	ck_assert_int_eq(bfs_fs_write(fs, ino, "tail", 4, 4 * N), 4);
	memcpy(model + 4 * N, "tail", 4);
	ck_assert(bfs_tail_any(fs));
	ck_assert_int_eq(bfs_fs_fsync(fs, ino, true), 0);
	ck_assert(!bfs_tail_any(fs));
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	check_file(fs, ino, model, 4 * N + 4, "after reopening");
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
	bfs_free(model);
}
END_TEST

#define NR_FILES	3

/* random operations on three files against models, mostly small appends */
static void tail_fsx(struct bfs_dev *dev, unsigned ops, u64 max)
{
	struct bfs_fs *fs = tu_fs_open(dev);
	u8 *model[NR_FILES], *buf = bfs_malloc(max);
	u64 ino[NR_FILES], size[NR_FILES] = { 0 };
	unsigned i, f, buffered = 0;

	if (getenv("BFS_TAIL_FSX_OPS"))
		ops = (unsigned)atoi(getenv("BFS_TAIL_FSX_OPS"));
	if (getenv("BFS_TAIL_FSX_SEED"))
		rnd_state = (u64)atoll(getenv("BFS_TAIL_FSX_SEED"));
	for (f = 0; f < NR_FILES; f++) {
		char name[8];

		snprintf(name, sizeof(name), "f%u", f);
		ino[f] = tu_mkfile(fs, name);
		model[f] = bfs_zalloc(max);
		ck_assert_ptr_nonnull(model[f]);
	}
	for (i = 0; i < ops; i++) {
		unsigned op = (unsigned)(rnd() % 100);
		u64 off, len, s;

		f = (unsigned)(rnd() % NR_FILES);
		s = size[f];
		if (op < 50) {				/* small append */
			len = 1 + rnd() % (rnd() % 4 ? 16 : 4096);
			off = s;
		} else if (op < 58) {			/* small overwrite near the end */
			len = 1 + rnd() % 200;
			off = s > 8192 ? s - rnd() % 8192 : rnd() % (s + 1);
		} else if (op < 62) {			/* anywhere, any size */
			off = rnd() % (max / 2);
			len = 1 + rnd() % 100000;
		} else {
			off = rnd() % (s + 4096);
			len = 1 + rnd() % 20000;
		}
		if (off + len > max)
			len = max - off;
		if (!len)
			continue;
		if (op < 66) {
			/* 62..65: write-through, as an O_DIRECT file's writes */
			unsigned flags = op >= 62 ? BFS_WRITE_THROUGH : 0;

			tu_fill_random(buf, len, rnd());
			ck_assert_int_eq(bfs_fs_write_flags(fs, ino[f], buf, len, off, flags),
					 (ssize_t)len);
			memcpy(model[f] + off, buf, len);
			size[f] = BFS_MAX(s, off + len);
			buffered += bfs_tail_any(fs);
		} else if (op < 78) {			/* read */
			ssize_t n = bfs_fs_read(fs, ino[f], buf, len, off);
			u64 want = off >= s ? 0 : BFS_MIN(len, s - off);

			ck_assert_int_eq(n, (ssize_t)want);
			ck_assert_msg(!memcmp(buf, model[f] + off, want),
				      "op %u: read of f%u %llu+%llu differs", i, f,
				      (unsigned long long)off, (unsigned long long)len);
		} else if (op < 82) {			/* truncate */
			struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = off };
			struct bfs_stat st;

			ck_assert_int_eq(bfs_fs_setattr(fs, ino[f], &sa, &st), 0);
			if (off < s)
				memset(model[f] + off, 0, s - off);
			size[f] = off;
		} else if (op < 85) {			/* punch */
			ck_assert_int_eq(bfs_fs_fallocate(fs, ino[f], BFS_FALLOC_PUNCH_HOLE |
							  BFS_FALLOC_KEEP_SIZE, off, len), 0);
			if (off < s)
				memset(model[f] + off, 0, BFS_MIN(off + len, s) - off);
		} else if (op < 88) {			/* zero range, or fallocate */
			bool zero = rnd() % 2, keep = rnd() % 2;

			ck_assert_int_eq(bfs_fs_fallocate(fs, ino[f],
							  (zero ? BFS_FALLOC_ZERO_RANGE : 0) |
							  (keep ? BFS_FALLOC_KEEP_SIZE : 0), off, len), 0);
			if (zero && off < s)
				memset(model[f] + off, 0, BFS_MIN(off + len, s) - off);
			if (!keep)
				size[f] = BFS_MAX(s, off + len);
		} else if (op < 91) {			/* the extent map: SEEK_DATA, FIEMAP */
			unsigned n = 0;

			ck_assert_int_eq(bfs_fs_map(fs, ino[f], count_extents, &n), 0);
		} else if (op < 94) {			/* an xattr: takes the file's lock */
			u8 v = (u8)i;

			ck_assert_int_eq(bfs_fs_setxattr(fs, ino[f], "user.x", &v, 1, 0), 0);
		} else if (op < 98) {
			ck_assert_int_eq(bfs_fs_fsync(fs, ino[f], op & 1), 0);
		} else {				/* reopen */
			ck_assert_int_eq(bfs_fs_close(fs), 0);
			fs = tu_fs_open(dev);
		}
		ck_assert_msg(size_of(fs, ino[f]) == size[f], "op %u (%u): f%u size %llu, expected %llu",
			      i, op, f, (unsigned long long)size_of(fs, ino[f]),
			      (unsigned long long)size[f]);
		if (i % 100 == 0)
			check_file(fs, ino[f], model[f], size[f], "during the run");
	}
	ck_assert_msg(buffered > 0, "no write was buffered");
	for (f = 0; f < NR_FILES; f++)
		check_file(fs, ino[f], model[f], size[f], "at the end");
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	for (f = 0; f < NR_FILES; f++) {
		check_file(fs, ino[f], model[f], size[f], "after reopening");
		bfs_free(model[f]);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(buf);
}

START_TEST(test_tail_fsx)
{
	struct bfs_dev *dev = tu_mkfs_fs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);

	tail_fsx(dev, 3000, 1 * MiB);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_tail_fsx_zstd)
{
	struct bfs_dev *dev = tu_mkfs_fs(64 * MiB, 4 * KiB, 32 * KiB, BFS_COMPRESSION_ZSTD);

	tail_fsx(dev, 1500, 512 * KiB);
	bfs_dev_close(dev);
}
END_TEST

/* more files with buffers than there are buffers: the oldest are written back */
START_TEST(test_many_files)
{
	struct bfs_dev *dev = tu_mkfs_fs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	enum { FILES = 200, ROUNDS = 30 };
	u64 ino[FILES];
	unsigned i, r;

	for (i = 0; i < FILES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "m%u", i);
		ino[i] = tu_mkfile(fs, name);
	}
	for (r = 0; r < ROUNDS; r++)
		for (i = 0; i < FILES; i++) {
			u8 rec[3] = { (u8)i, (u8)r, (u8)(i ^ r) };

			ck_assert_int_eq(bfs_fs_write(fs, ino[i], rec, 3, (u64)r * 3), 3);
		}
	for (i = 0; i < FILES; i++) {
		u8 got[3 * ROUNDS];

		ck_assert_uint_eq(size_of(fs, ino[i]), 3 * ROUNDS);
		ck_assert_int_eq(bfs_fs_read(fs, ino[i], got, sizeof(got), 0), (ssize_t)sizeof(got));
		for (r = 0; r < ROUNDS; r++) {
			ck_assert_uint_eq(got[r * 3], (u8)i);
			ck_assert_uint_eq(got[r * 3 + 1], (u8)r);
			ck_assert_uint_eq(got[r * 3 + 2], (u8)(i ^ r));
		}
	}
	ck_assert_int_eq(bfs_fs_sync(fs), 0);
	ck_assert(!bfs_tail_any(fs));
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	for (i = 0; i < FILES; i++)
		ck_assert_uint_eq(size_of(fs, ino[i]), 3 * ROUNDS);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/*
 * The race: B writes whole blocks from the block that holds the end of the
 * file (the device writes without the inode lock); A appends at the old
 * end at the same time, so A's buffer may be made from the blocks B is
 * replacing.  Either order is a valid result for the bytes A wrote, but
 * every other byte of B's range must be B's.
 */
#define RACE_BASE	(256 * KiB - 100)	/* the file's size before each round */
#define RACE_B_OFF	(256 * KiB - 4 * KiB)
#define RACE_B_LEN	(64 * KiB)
#define RACE_A_RECS	24

struct race {
	struct bfs_fs *fs;
	u64 ino;
	unsigned round;
	pthread_barrier_t go;
};

static u8 race_b_byte(unsigned round, u64 off)
{
	return (u8)((round * 31 + off) & 0x7f);
}

static void *race_b(void *arg)
{
	struct race *r = arg;
	static u8 buf[RACE_B_LEN];
	u64 i;

	for (i = 0; i < RACE_B_LEN; i++)
		buf[i] = race_b_byte(r->round, RACE_B_OFF + i);
	pthread_barrier_wait(&r->go);
	ck_assert_int_eq(bfs_fs_write(r->fs, r->ino, buf, RACE_B_LEN, RACE_B_OFF), RACE_B_LEN);
	return NULL;
}

static void *race_a(void *arg)
{
	struct race *r = arg;
	unsigned j;

	pthread_barrier_wait(&r->go);
	for (j = 0; j < RACE_A_RECS; j++) {
		u8 rec[5] = { 0x80 | (u8)j, 0x81, 0x82, 0x83, 0x84 };

		ck_assert_int_eq(bfs_fs_write(r->fs, r->ino, rec, 5, RACE_BASE + 5 * j), 5);
	}
	return NULL;
}

START_TEST(test_race_unlocked_writer)
{
	struct bfs_dev *dev = tu_mkfs_fs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct race r = { .fs = tu_fs_open(dev) };
	u8 *buf = bfs_malloc(RACE_BASE + RACE_B_LEN);
	const char *env = getenv("BFS_TAIL_RACE_ROUNDS");
	unsigned rounds = env ? (unsigned)atoi(env) : 200;
	u64 i;

	ck_assert_ptr_nonnull(buf);
	r.ino = tu_mkfile(r.fs, "race");
	memset(buf, 0x7f, RACE_BASE);
	ck_assert_int_eq(bfs_fs_write(r.fs, r.ino, buf, RACE_BASE, 0), RACE_BASE);
	for (r.round = 0; r.round < rounds; r.round++) {
		struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = RACE_BASE };
		struct bfs_stat st;
		pthread_t a, b;

		/* the old bytes of the tail block, unlike any round's */
		ck_assert_int_eq(bfs_fs_setattr(r.fs, r.ino, &sa, &st), 0);
		memset(buf, 0xff, 4096);
		ck_assert_int_eq(bfs_fs_write(r.fs, r.ino, buf, RACE_BASE - RACE_B_OFF, RACE_B_OFF),
				 RACE_BASE - RACE_B_OFF);
		ck_assert_int_eq(pthread_barrier_init(&r.go, NULL, 2), 0);
		ck_assert_int_eq(pthread_create(&b, NULL, race_b, &r), 0);
		ck_assert_int_eq(pthread_create(&a, NULL, race_a, &r), 0);
		ck_assert_int_eq(pthread_join(a, NULL), 0);
		ck_assert_int_eq(pthread_join(b, NULL), 0);
		pthread_barrier_destroy(&r.go);
		ck_assert_uint_eq(size_of(r.fs, r.ino), RACE_B_OFF + RACE_B_LEN);
		ck_assert_int_eq(bfs_fs_read(r.fs, r.ino, buf, RACE_B_LEN, RACE_B_OFF), RACE_B_LEN);
		for (i = 0; i < RACE_B_LEN; i++) {
			u64 off = RACE_B_OFF + i;
			bool a_byte = off >= RACE_BASE && off < RACE_BASE + 5 * RACE_A_RECS &&
				      (buf[i] & 0x80);

			ck_assert_msg(a_byte || buf[i] == race_b_byte(r.round, off),
				      "round %u: byte %llu is %02x, neither the appender's nor the "
				      "writer's", r.round, (unsigned long long)off, buf[i]);
		}
	}
	ck_assert_int_eq(bfs_fs_close(r.fs), 0);
	bfs_dev_close(dev);
	bfs_free(buf);
}
END_TEST

static Suite *tail_buf_suite(void)
{
	Suite *s = suite_create("tail_buf");
	TCase *tc = tcase_create("tail");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_small_appends);
	tcase_add_test(tc, test_tail_fsx);
	tcase_add_test(tc, test_tail_fsx_zstd);
	tcase_add_test(tc, test_many_files);
	tcase_add_test(tc, test_race_unlocked_writer);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(tail_buf_suite)
