// SPDX-License-Identifier: MIT
/*
 * fsck's compact inode set (libcore/fsck/ino_set.c) against a plain sorted
 * array: sparse and dense chunks, chunk boundaries, numbers added out of
 * order, misses between and around the members.  And the table of big link
 * counts (link_table.c) against a plain array.
 */
#include "unit.h"

#include <stdlib.h>

#include <bfs/os.h>

#include "fsck/ino_set.h"
#include "fsck/link_table.h"

#define MAX_INOS	200000

static u64 inos[MAX_INOS];
static size_t idx_of[MAX_INOS];

static u64 rng = 0x2545F4914F6CDD1DULL;

static u64 next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* members in increasing order: a dense run, a sparse stretch, a run across a chunk edge */
static size_t fill(struct ino_set *s)
{
	size_t n = 0, i;
	u64 ino;

	for (ino = 1; ino < 70000; ino++)		/* dense, crossing 65536 */
		if (ino % 17)
			inos[n++] = ino;
	for (ino = 1ULL << 20; ino < (1ULL << 20) + 400000; ino += 1 + next_rand() % 300)
		inos[n++] = ino;			/* sparse over several chunks */
	for (ino = (5ULL << 16) * 100 - 3000; ino < (5ULL << 16) * 100 + 9000; ino++)
		inos[n++] = ino;			/* dense again, across an edge */
	inos[n++] = (1ULL << 40) + 5;			/* far away, alone */
	for (i = 0; i < n; i++)
		ck_assert_int_eq(ino_set_add(s, inos[i], &idx_of[i]), 0);
	return n;
}

static bool member(u64 ino, size_t n, size_t *at)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (inos[mid] == ino) {
			*at = mid;
			return true;
		}
		if (inos[mid] < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

START_TEST(test_in_order)
{
	struct ino_set s = { 0 };
	size_t n = fill(&s), i, idx, at;

	ck_assert_uint_eq(s.nr, n);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(idx_of[i], i);
		ck_assert_msg(ino_set_find(&s, inos[i], &idx), "%llu missing",
			      (unsigned long long)inos[i]);
		ck_assert_uint_eq(idx, i);
	}
	/* every number near the members, and random ones: found exactly if a member */
	for (i = 0; i < 400000; i++) {
		u64 ino = i % 2 ? inos[next_rand() % n] + next_rand() % 5 - 2 : next_rand() % (1ULL << 24);
		bool want = member(ino, n, &at);

		ck_assert_int_eq(ino_set_find(&s, ino, &idx), want);
		if (want)
			ck_assert_uint_eq(idx, at);
	}
	ck_assert(!ino_set_find(&s, 0, &idx));
	ck_assert(!ino_set_find(&s, (1ULL << 40) + 4, &idx));
	ck_assert(!ino_set_find(&s, UINT64_MAX, &idx));
	/* a dense set costs well under 2 bytes a number */
	ck_assert_uint_lt(ino_set_bytes(&s), n * 2);
	ino_set_free(&s);
}
END_TEST

/* numbers a repair adds below the largest one get the next index too */
START_TEST(test_late)
{
	struct ino_set s = { 0 };
	size_t n = fill(&s), idx, a, b, c;

	ck_assert_int_eq(ino_set_add(&s, 17, &a), 0);		/* a gap of the dense run */
	ck_assert_int_eq(ino_set_add(&s, 51, &b), 0);		/* another gap */
	ck_assert_int_eq(ino_set_add(&s, 1ULL << 30, &c), 0);	/* in no chunk */
	ck_assert_uint_eq(a, n);
	ck_assert_uint_eq(b, n + 1);
	ck_assert_uint_eq(c, n + 2);
	ck_assert(ino_set_find(&s, 17, &idx) && idx == a);
	ck_assert(ino_set_find(&s, 1ULL << 30, &idx) && idx == c);
	ck_assert(ino_set_find(&s, 51, &idx) && idx == b);
	ck_assert(ino_set_find(&s, 3, &idx) && idx == 2);
	ck_assert(ino_set_find(&s, 16, &idx) && idx == 15);
	ck_assert(!ino_set_find(&s, 34, &idx));
	ck_assert_int_eq(ino_set_add(&s, (1ULL << 40) + 6, &a), 0);	/* in order again */
	ck_assert(ino_set_find(&s, (1ULL << 40) + 6, &idx) && idx == n + 3);
	ino_set_free(&s);
}
END_TEST

/* counts of scattered indices survive every growth of the table, updated in place */
/*
 * A chunk turns into a bitmap while it is still being filled (past 5120
 * numbers): lookups in between, the way pass 2 looks up as it adds, must
 * find every number so far at its index and nothing above the last.
 */
START_TEST(test_find_while_filling)
{
	struct ino_set s = { 0 };
	size_t n = 0, i, idx;
	u64 ino;

	for (ino = 3; ino < 3 * 65536; ino += 1 + next_rand() % 3) {
		inos[n] = ino;
		ck_assert_int_eq(ino_set_add(&s, ino, &idx_of[n]), 0);
		ck_assert_uint_eq(idx_of[n], n);
		ck_assert(ino_set_find(&s, ino, &idx) && idx == n);
		ck_assert(!ino_set_find(&s, ino + 1, &idx));
		ck_assert(!ino_set_find(&s, ino + 64, &idx));
		/* an earlier one, often in a word already passed */
		i = next_rand() % (n + 1);
		ck_assert(ino_set_find(&s, inos[i], &idx) && idx == i);
		n++;
	}
	for (i = 0; i < n; i++)
		ck_assert(ino_set_find(&s, inos[i], &idx) && idx == i);
	/* two full chunks and most of a third, all as bitmaps: ~10 KiB each */
	ck_assert_uint_lt(ino_set_bytes(&s), 3 * 10 * 1024 + 4096);
	ino_set_free(&s);
}
END_TEST

START_TEST(test_link_table)
{
	static u32 want[MAX_INOS];
	static bool in[MAX_INOS];
	struct link_table t = { 0 };
	size_t i, nr = 0;

	for (i = 0; i < 3 * MAX_INOS; i++) {
		size_t idx = (size_t)(next_rand() % MAX_INOS);

		if (!in[idx])
			nr++;
		/* up and down, to 0 and back: a count of 0 stays in the table */
		want[idx] = in[idx] && want[idx] ? want[idx] - 1 + (u32)(next_rand() % 3) : 7;
		in[idx] = true;
		ck_assert_int_eq(link_table_set(&t, idx, want[idx]), 0);
	}
	ck_assert_uint_eq(t.nr, nr);
	for (i = 0; i < MAX_INOS; i++)
		if (in[i])
			ck_assert_uint_eq(link_table_get(&t, i), want[i]);
		else
			ck_assert_uint_eq(link_table_get(&t, i), 0);
	/* at most half full, and no more than 4 slots an entry */
	ck_assert_uint_le(t.nr * 2, link_table_bytes(&t) / 16);
	ck_assert_uint_le(link_table_bytes(&t), nr * 4 * 16);
	link_table_free(&t);
	ck_assert_uint_eq(link_table_bytes(&t), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fsck_ino_set");
	TCase *tc = tcase_create("ino_set");

	/* a second of CPU, but a loaded machine (and ASan) stretches the wall time */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_in_order);
	tcase_add_test(tc, test_late);
	tcase_add_test(tc, test_find_while_filling);
	tcase_add_test(tc, test_link_table);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(suite)
