// SPDX-License-Identifier: MIT
/*
 * Concurrency: writer threads commit multi-btree transactions while reader
 * threads look up and scan.  Every key a writer has committed must be
 * visible to readers; scans must always be ordered; nothing may deadlock.
 */
#include "test_btree_util.h"

#define WRITERS		3
#define READERS		3
#define PER_WRITER	12000

static struct bfs_core *c;
static u64 committed[WRITERS];	/* keys [0, committed) of each writer are in */
static volatile bool stop;

/*
 * ck_assert in a worker thread longjmps out of the wrong thread unless check
 * runs in fork mode (make soak turns it off): workers record their first
 * failure here and the main thread asserts it after the join.
 */
static char thread_failure[256];
static int thread_failed;

static void thread_fail(int line, const char *what, long long got)
{
	if (!__atomic_exchange_n(&thread_failed, 1, __ATOMIC_ACQ_REL))
		snprintf(thread_failure, sizeof(thread_failure), "line %d: %s (got %lld)",
			 line, what, got);
}

/* on failure record it and leave through the thread's cleanup label */
#define T_CHECK_EQ(expr, want) do {					\
	long long _v = (long long)(expr);				\
	if (_v != (long long)(want)) {					\
		thread_fail(__LINE__, #expr " == " #want, _v);		\
		goto out;						\
	}								\
} while (0)
#define T_CHECK(cond)	T_CHECK_EQ(!!(cond), 1)

static void *writer(void *arg)
{
	u64 w = (u64)(uintptr_t)arg, i, buf[16];
	struct bfs_trans *t;

	if (bfs_trans_begin(c, &t)) {
		thread_fail(__LINE__, "bfs_trans_begin", 0);
		return NULL;
	}
	for (i = 0; i < PER_WRITER && !__atomic_load_n(&thread_failed, __ATOMIC_ACQUIRE); i++) {
		/* the same key in two btrees, atomically */
		T_CHECK_EQ(bfs_trans_update(t, BFS_BTREE_INODES, tu_key(buf, w + 1, i, i, 2)), 0);
		T_CHECK_EQ(bfs_trans_update(t, BFS_BTREE_DIRENTS, tu_key(buf, w + 1, i, i, 1)), 0);
		T_CHECK_EQ(bfs_trans_commit(t, NULL), 0);
		/* delete every 7th key again to exercise whiteouts and merges */
		if (i % 7 == 6) {
			T_CHECK_EQ(bfs_trans_delete(t, BFS_BTREE_DIRENTS, BFS_POS(w + 1, i - 3, 0)), 0);
			T_CHECK_EQ(bfs_trans_commit(t, NULL), 0);
		}
		__atomic_store_n(&committed[w], i + 1, __ATOMIC_RELEASE);
		if (i % 3000 == 0 && w == 0)
			T_CHECK_EQ(bfs_core_flush(c), 0);
	}
out:
	bfs_trans_end(t);
	return NULL;
}

static void *reader(void *arg)
{
	u64 r = (u64)(uintptr_t)arg * 7919 + 1, buf[16], loops = 0;
	struct bfs_btree_iter it;

	while ((!__atomic_load_n(&stop, __ATOMIC_ACQUIRE) || loops < 2) &&
	       !__atomic_load_n(&thread_failed, __ATOMIC_ACQUIRE)) {
		u64 w, n, i;
		const struct bfs_bkey *k;
		struct bfs_bpos prev = BFS_POS_MIN;
		int ret;

		/* point lookups of committed keys */
		for (i = 0; i < 500; i++) {
			r = r * 6364136223846793005ULL + 1442695040888963407ULL;
			w = (r >> 33) % WRITERS;
			n = __atomic_load_n(&committed[w], __ATOMIC_ACQUIRE);
			if (!n)
				continue;
			n = (r >> 13) % n;
			if (bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(w + 1, n, 0),
					     buf, sizeof(buf)) || tu_val((struct bfs_bkey *)buf) != n) {
				thread_fail(__LINE__, "lookup of a committed key", (long long)n);
				return NULL;
			}
		}
		/* an ordered scan of one writer's range */
		w = loops % WRITERS;
		n = __atomic_load_n(&committed[w], __ATOMIC_ACQUIRE);
		i = 0;
		bfs_btree_iter_init(&it, c, BFS_BTREE_INODES, BFS_POS(w + 1, 0, 0), 0);
		for (ret = bfs_btree_iter_peek(&it, &k); !ret && le64_to_cpu(k->inode) == w + 1;
		     ret = bfs_btree_iter_next(&it, &k)) {
			T_CHECK(!i || bfs_bpos_cmp(prev, bfs_bkey_pos(k)) < 0);
			prev = bfs_bkey_pos(k);
			i++;
		}
		T_CHECK(ret == 0 || ret == -ENOENT);
		T_CHECK(i >= n);
		bfs_btree_iter_exit(&it);
		loops++;
	}
	return NULL;
out:
	bfs_btree_iter_exit(&it);
	return NULL;
}

static void run(bool no_journal, u64 cache)
{
	bfs_thread wt[WRITERS], rt[READERS];
	struct bfs_dev *dev;
	u64 i, w, buf[16];

	tu_log_reset();
	stop = false;
	thread_failed = 0;
	memset(committed, 0, sizeof(committed));
	dev = tu_mkfs(256 * MiB, 16 * KiB, 0, 16);
	c = tu_open(dev, no_journal, cache);
	for (i = 0; i < READERS; i++)
		ck_assert_int_eq(bfs_thread_create(&rt[i], reader, (void *)(uintptr_t)i), 0);
	for (i = 0; i < WRITERS; i++)
		ck_assert_int_eq(bfs_thread_create(&wt[i], writer, (void *)(uintptr_t)i), 0);
	for (i = 0; i < WRITERS; i++)
		bfs_thread_join(wt[i]);
	__atomic_store_n(&stop, true, __ATOMIC_RELEASE);
	for (i = 0; i < READERS; i++)
		bfs_thread_join(rt[i]);
	ck_assert_msg(!thread_failed, "worker thread: %s", thread_failure);

	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_INODES), 0);
	ck_assert_int_eq(bfs_btree_verify(c, BFS_BTREE_DIRENTS), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	c = tu_open(dev, no_journal, cache);
	for (w = 0; w < WRITERS; w++)
		for (i = 0; i < PER_WRITER; i++) {
			int want = i % 7 == 3 && i + 3 < PER_WRITER ? -ENOENT : 0;

			ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(w + 1, i, 0),
							  buf, sizeof(buf)), 0);
			ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_DIRENTS, BFS_POS(w + 1, i, 0),
							  buf, sizeof(buf)), want);
		}
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(dev);
	ck_assert_int_eq(tu_nr_errs, 0);
}

START_TEST(test_threads)
{
	run(false, 0);
}
END_TEST

START_TEST(test_threads_small_cache)
{
	/* evictions and reloads while readers and writers race */
	run(true, 24 * 16 * KiB);
}
END_TEST

static Suite *threads_suite(void)
{
	Suite *s = suite_create("btree_threads");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_threads_small_cache);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(threads_suite)
