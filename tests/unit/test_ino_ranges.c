// SPDX-License-Identifier: MIT
/*
 * Inode numbers handed out of per-thread ranges (libcore/fs/ino_alloc.c):
 * unique across crashes, reopens and filesystems.
 *
 * test_ino_crash: two threads create files in their own directories, with
 * fsyncs among them so that the journal is written while both run, on a
 * recorded device.  Every crash state must open, hold only files of the
 * run, each with the number it was created with, no number twice, and an
 * inode counter above every number in use (what fsck checks); then two
 * threads create more files in the crashed image, and none of the new
 * numbers may be one in use or one below the replayed counter.
 *
 * test_ino_reopen: a range reserved in one open filesystem is never used in
 * another, not even in the same thread when the new one is opened at the
 * same address: a thread creates a file in image A, A is closed, image B
 * (fresh) is opened, another thread creates many files in B, then the
 * first one a few: all numbers in B distinct, the counter above them all.
 * The same after B is closed and reopened, where the close has moved the
 * counter back to just past the highest number in use (the unused rest of
 * the ranges given back).
 *
 * Environment: BFS_CRASH_INO_FILES (per thread, default 300), BFS_CRASH_SEED,
 * BFS_CRASH_INO_MIB (the device, default 64) and the crash_states.h
 * variables.
 */
#include "crash_states.h"
#include "tu.h"
#include "unit.h"

#include <bfs/fs.h>
#include <bfs/fs_repair.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define THREADS		2
#define FSYNC_EVERY	40
#define NEW_FILES	80	/* per thread, in each crash state */

struct creator {
	struct bfs_fs	*fs;
	u64		dir;
	const char	*prefix;
	u32		nr, fsync_every;
	u64		*inos;	/* [nr]: the number file i got */
};

static void *create_files(void *arg)
{
	struct creator *cr = arg;
	struct bfs_creds creds = { 0, 0 };
	struct bfs_stat st;
	char name[32];
	u32 i;

	for (i = 0; i < cr->nr; i++) {
		snprintf(name, sizeof(name), "%s%u", cr->prefix, i);
		int ret = bfs_fs_mknod(cr->fs, cr->dir, name, strlen(name), S_IFREG | 0644, 0, &creds,
				       &st);

		/* the library's last error says why (tu.c's hook keeps it) */
		ck_assert_msg(!ret, "create %s: %d (%s)", name, ret, tu_last_err);
		cr->inos[i] = st.ino;
		if (cr->fsync_every && i % cr->fsync_every == cr->fsync_every - 1)
			ck_assert_int_eq(bfs_fs_fsync(cr->fs, st.ino, false), 0);
	}
	return NULL;
}

/* run one creator per entry of @cr at once */
static void run_creators(struct creator *cr, int n)
{
	pthread_t th[THREADS];
	int i;

	ck_assert_int_le(n, THREADS);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, create_files, &cr[i]), 0);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
}

/* ---- the numbers in use ---- */

struct ino_set {
	u64	*inos;
	size_t	nr;
	/* optional: names "f<i>" must have the number inos_by_name[i] */
	const u64 *by_name;
	u32	nr_names;
	bool	bad_name;
};

static int collect(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct ino_set *s = ctx;
	char buf[32];
	unsigned long i;
	char *end;

	(void)type;
	(void)next;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	s->inos = bfs_realloc(s->inos, (s->nr + 1) * sizeof(*s->inos));
	ck_assert_ptr_nonnull(s->inos);
	s->inos[s->nr++] = ino;
	if (s->by_name && len < sizeof(buf) && name[0] == 'f') {
		memcpy(buf, name + 1, len - 1);
		buf[len - 1] = '\0';
		i = strtoul(buf, &end, 10);
		if (*end || i >= s->nr_names || s->by_name[i] != ino)
			s->bad_name = true;
	} else if (s->by_name) {
		s->bad_name = true;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* sort @s; the first number that is there twice, or 0 */
static u64 first_dup(struct ino_set *s)
{
	size_t i;

	if (s->nr < 2)
		return 0;
	qsort(s->inos, s->nr, sizeof(*s->inos), cmp_u64);
	for (i = 1; i < s->nr; i++)
		if (s->inos[i] == s->inos[i - 1])
			return s->inos[i];
	return 0;
}

/* ---- crash states ---- */

struct run {
	u64	dirs[THREADS];
	u64	*inos[THREADS];
	u32	nr;
	unsigned checked_new;
};

static bool check_state(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct run *r = ctx;
	struct creator cr[THREADS];
	struct ino_set s = { 0 };
	u64 counter, dup, *fresh[THREADS] = { 0 };
	struct bfs_fs *fs;
	bool ok = false;
	size_t in_use;
	int t, ret;
	u32 i;

	(void)mk;
	ret = bfs_fs_open(img, &(struct bfs_fs_opts){ 0 }, &fs);
	if (ret) {
		snprintf(why, 512, "open failed: %s (%s)", strerror(-ret), tu_last_err);
		return false;
	}
	for (t = 0; t < THREADS && !ret; t++) {
		s.by_name = r->inos[t];
		s.nr_names = r->nr;
		ret = bfs_fs_readdir(fs, r->dirs[t], 0, collect, &s);
	}
	if (!ret)
		ret = bfs_ns_counter_read(fs, &counter);
	if (ret) {
		snprintf(why, 512, "reading the tree failed: %s", strerror(-ret));
		goto out;
	}
	if (s.bad_name) {
		snprintf(why, 512, "a file has a number it was not created with");
		goto out;
	}
	if ((dup = first_dup(&s))) {
		snprintf(why, 512, "inode %llu is in use twice", (unsigned long long)dup);
		goto out;
	}
	if (s.nr && counter <= s.inos[s.nr - 1]) {
		snprintf(why, 512, "the counter is %llu, inode %llu is in use",
			 (unsigned long long)counter, (unsigned long long)s.inos[s.nr - 1]);
		goto out;
	}

	/* new files after the crash: above the counter, and distinct */
	in_use = s.nr;
	for (t = 0; t < THREADS; t++) {
		fresh[t] = bfs_calloc(NEW_FILES, sizeof(u64));
		cr[t] = (struct creator){ .fs = fs, .dir = r->dirs[t], .prefix = "new",
					  .nr = NEW_FILES, .inos = fresh[t] };
	}
	run_creators(cr, THREADS);
	for (t = 0; t < THREADS; t++)
		for (i = 0; i < NEW_FILES; i++) {
			if (fresh[t][i] < counter) {
				snprintf(why, 512, "a new file got %llu, below the counter %llu",
					 (unsigned long long)fresh[t][i],
					 (unsigned long long)counter);
				goto out;
			}
			s.inos = bfs_realloc(s.inos, (s.nr + 1) * sizeof(*s.inos));
			s.inos[s.nr++] = fresh[t][i];
		}
	if ((dup = first_dup(&s))) {
		snprintf(why, 512, "after the crash, inode %llu was handed out again (%zu in use)",
			 (unsigned long long)dup, in_use);
		goto out;
	}
	r->checked_new++;
	ok = true;
out:
	for (t = 0; t < THREADS; t++)
		bfs_free(fresh[t]);
	bfs_free(s.inos);
	ret = bfs_fs_close(fs);
	if (ok && ret) {
		snprintf(why, 512, "close failed: %s", strerror(-ret));
		ok = false;
	}
	return ok;
}

static struct bfs_dev *fresh_fs(u64 bytes)
{
	struct bfs_format_opts fo = { 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN];
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(bytes, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	bfs_free(sb);
	return dev;
}

START_TEST(test_ino_crash)
{
	struct run r = { .nr = (u32)crash_env_u64("BFS_CRASH_INO_FILES", 300) };
	char *logpath = bfs_unit_tmpfile("crash-ino-log");
	struct bfs_dev *dev = fresh_fs(crash_env_u64("BFS_CRASH_INO_MIB", 64) * MiB), *base;
	struct bfs_creds creds = { 0, 0 };
	struct creator cr[THREADS];
	struct bfs_stat st;
	struct bfs_fs *fs;
	char name[8];
	int t;

	tu_log_reset();
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	for (t = 0; t < THREADS; t++) {
		snprintf(name, sizeof(name), "d%d", t);
		ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, name, strlen(name), 0755, &creds,
					      &st), 0);
		r.dirs[t] = st.ino;
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	for (t = 0; t < THREADS; t++) {
		r.inos[t] = bfs_calloc(r.nr, sizeof(u64));
		cr[t] = (struct creator){ .fs = fs, .dir = r.dirs[t], .prefix = "f", .nr = r.nr,
					  .fsync_every = FSYNC_EVERY, .inos = r.inos[t] };
	}
	run_creators(cr, THREADS);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);

	crash_states_check("crash-ino", logpath, base, crash_env_u64("BFS_CRASH_SEED", 1),
			   check_state, &r, 2 * r.nr / FSYNC_EVERY / 2);
	printf("crash-ino: %u files per thread; new files created in %u crash states\n", r.nr,
	       r.checked_new);
	ck_assert_uint_gt(r.checked_new, 0);
	for (t = 0; t < THREADS; t++)
		bfs_free(r.inos[t]);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}
END_TEST

/* every number in use in @fs's directories @dirs, checked distinct and below the counter */
static void check_numbers(struct bfs_fs *fs, const u64 *dirs, int nr_dirs)
{
	struct ino_set s = { 0 };
	u64 counter;
	int i;

	for (i = 0; i < nr_dirs; i++)
		ck_assert_int_eq(bfs_fs_readdir(fs, dirs[i], 0, collect, &s), 0);
	ck_assert_int_eq(bfs_ns_counter_read(fs, &counter), 0);
	ck_assert_uint_gt(s.nr, 0);
	ck_assert_msg(!first_dup(&s), "inode %llu in use twice", (unsigned long long)first_dup(&s));
	ck_assert_uint_gt(counter, s.inos[s.nr - 1]);
	bfs_free(s.inos);
}

/* the highest number in use in @dir */
static u64 highest(struct bfs_fs *fs, u64 dir)
{
	struct ino_set s = { 0 };
	u64 max;

	ck_assert_int_eq(bfs_fs_readdir(fs, dir, 0, collect, &s), 0);
	ck_assert_uint_gt(s.nr, 0);
	first_dup(&s);
	max = s.inos[s.nr - 1];
	bfs_free(s.inos);
	return max;
}

START_TEST(test_ino_reopen)
{
	struct bfs_dev *a = fresh_fs(64 * MiB), *b = fresh_fs(64 * MiB);
	struct bfs_creds creds = { 0, 0 };
	u64 inos[2][200], root = BFS_ROOT_INO, counter;
	struct creator cr[2];
	u32 i;
	struct bfs_stat st;
	struct bfs_fs *fs;

	tu_log_reset();
	/* this thread reserves a range in A, then A is gone */
	ck_assert_int_eq(bfs_fs_open(a, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, "a", 1, S_IFREG | 0644, 0, &creds, &st), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	/* B: this thread and another create at once */
	ck_assert_int_eq(bfs_fs_open(b, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	cr[0] = (struct creator){ .fs = fs, .dir = root, .prefix = "x", .nr = 3, .inos = inos[0] };
	cr[1] = (struct creator){ .fs = fs, .dir = root, .prefix = "y", .nr = 200,
				  .inos = inos[1] };
	run_creators(&cr[1], 1);
	create_files(&cr[0]);
	check_numbers(fs, &root, 1);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	/*
	 * B reopened: the close gave back the unused numbers, so the counter
	 * is the highest in use + 1; another thread reserves from there, and
	 * this thread's range of the last open must not be used again.
	 */
	ck_assert_int_eq(bfs_fs_open(b, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	ck_assert_int_eq(bfs_ns_counter_read(fs, &counter), 0);
	ck_assert_uint_eq(counter, highest(fs, root) + 1);
	cr[0].fs = cr[1].fs = fs;
	cr[1].prefix = "w";
	run_creators(&cr[1], 1);
	cr[0].prefix = "z";
	create_files(&cr[0]);
	for (i = 0; i < cr[0].nr; i++)
		ck_assert_uint_ge(inos[0][i], counter);
	check_numbers(fs, &root, 1);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	/* and after the reopen, it is still so (the counter was persisted) */
	ck_assert_int_eq(bfs_fs_open(b, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	check_numbers(fs, &root, 1);
	ck_assert_int_eq(bfs_ns_counter_read(fs, &counter), 0);
	ck_assert_uint_eq(counter, highest(fs, root) + 1);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(a);
	bfs_dev_close(b);
}
END_TEST

static Suite *ino_ranges_suite(void)
{
	Suite *s = suite_create("ino_ranges");
	TCase *tc = tcase_create("ino");

	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, test_ino_reopen);
	tcase_add_test(tc, test_ino_crash);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(ino_ranges_suite)
