// SPDX-License-Identifier: MIT
/*
 * The crash harness itself: the states crash_build_states() hands out must be
 * exactly the ones a power failure can leave, starting with the first logged
 * write (a log need not begin with a mark or a flush).
 */
#include "crash_states.h"
#include "unit.h"

#include <bfs/os.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEV_SIZE	(64 * 1024)
#define BLK		4096

/* what a state may hold: each block is either zero or its pattern byte */
struct seen {
	unsigned end_ok, states, with_a, flush_with_a;
};

static bool check_state(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct seen *s = ctx;
	u8 a[BLK], b[BLK];
	bool has_a, has_b;

	ck_assert_int_eq(bfs_dev_read(img, 0, a, BLK), 0);
	ck_assert_int_eq(bfs_dev_read(img, BLK, b, BLK), 0);
	has_a = a[0] == 0xaa;
	has_b = b[0] == 0xbb;
	s->states++;
	s->with_a += has_a;
	/* 'f 1': the flush after block A made it durable */
	if (mk.f >= 1 && !has_a) {
		snprintf(why, 512, "block A lost after its flush (marks f %u c %u)", mk.f, mk.c);
		return false;
	}
	if (mk.f >= 1)
		s->flush_with_a++;
	if (mk.f >= 2 && !has_b) {
		snprintf(why, 512, "block B lost after its flush");
		return false;
	}
	if (mk.f >= 2)
		s->end_ok++;
	return true;
}

/* a zeroed memory device, a copy of it as the base image, recording into a new log */
static char *record(const char *tag, struct bfs_dev **dev, struct bfs_dev **base)
{
	char *logpath = bfs_unit_tmpfile(tag);

	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, dev), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(*dev, base), 0);
	ck_assert_int_eq(bfs_dev_record_start(*dev, logpath), 0);
	return logpath;
}

static void done(char *logpath, struct bfs_dev *dev, struct bfs_dev *base)
{
	unlink(logpath);
	free(logpath);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}

START_TEST(test_first_entry_is_applied)
{
	struct bfs_dev *dev, *base;
	char *logpath = record("crash-states-log", &dev, &base);
	struct crash_result res;
	struct seen s = { 0 };
	u8 buf[BLK];

	/* entry 0 is a data write: no mark before it */
	memset(buf, 0xaa, sizeof(buf));
	ck_assert_int_eq(bfs_dev_write(dev, 0, buf, BLK), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	crash_mark(dev, 'f', 1);
	memset(buf, 0xbb, sizeof(buf));
	ck_assert_int_eq(bfs_dev_write(dev, BLK, buf, BLK), 0);
	ck_assert_int_eq(bfs_dev_flush(dev), 0);
	crash_mark(dev, 'f', 2);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	crash_build_states(logpath, base, 7, check_state, &s, &res);
	ck_assert_msg(res.failures == 0, "%u of %u states failed", res.failures, res.states);
	ck_assert_uint_eq(s.states, res.states);
	/* the end state and the flush after B must both hold A and B */
	ck_assert_uint_ge(s.end_ok, 1);
	ck_assert_uint_ge(s.flush_with_a, 2);
	ck_assert_uint_ge(res.flush_states, 2);
	done(logpath, dev, base);
}
END_TEST

/* a random state of the first interval may hold entry 0 or not, never more */
START_TEST(test_first_interval_random)
{
	struct bfs_dev *dev, *base;
	char *logpath = record("crash-states-log2", &dev, &base);
	struct crash_result res;
	struct seen s = { 0 };
	u8 buf[BLK];
	unsigned i;

	memset(buf, 0xaa, sizeof(buf));
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(bfs_dev_write(dev, 0, buf, BLK), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	setenv("BFS_CRASH_RANDOM_STATES", "16", 1);
	crash_build_states(logpath, base, 11, check_state, &s, &res);
	unsetenv("BFS_CRASH_RANDOM_STATES");
	ck_assert_uint_eq(res.failures, 0);
	ck_assert_uint_eq(res.random_states, 16);
	/* the end state holds A; some random state (16 coin flips x up to 4 writes) too */
	ck_assert_uint_ge(s.with_a, 2);
	ck_assert_uint_lt(s.with_a, s.states);
	done(logpath, dev, base);
}
END_TEST

static Suite *crash_states_suite(void)
{
	Suite *s = suite_create("crash_states");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_first_entry_is_applied);
	tcase_add_test(tc, test_first_interval_random);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_states_suite)
