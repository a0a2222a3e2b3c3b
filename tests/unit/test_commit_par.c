// SPDX-License-Identifier: MIT
/*
 * Parallel commits under a filesystem (doc/commit.md): threads create,
 * overwrite (extent trimming of each other's neighbours' leaves), fsync and
 * unlink files in their own directories, and one in a directory they all
 * share, at once.  Afterwards every acknowledged file must be there with
 * the bytes last written, before and after a reopen (journal replay of a
 * core closed without its last checkpoint is covered by test_crash_commit),
 * and fsck with data checks must find the image clean.
 */
#include "tu.h"
#include "unit.h"

#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <stdio.h>
#include <sys/stat.h>

#define THREADS		4
#define FILES		1500		/* per thread */
#define FILE_BYTES	16384
#define SHARED_DIR	"shared"

struct worker {
	struct bfs_fs *fs;
	unsigned idx;
	u64	dir, shared;
	u64	ino[FILES];
	u8	alive[FILES];
	u8	seed[FILES];		/* content: tu_pattern(seed) over [0, FILE_BYTES) */
	int	err;			/* first failure: a check in a thread cannot longjmp */
	char	what[128];
};

static const struct bfs_creds root = { 0, 0 };

static void name_of(char *buf, size_t len, unsigned thread, unsigned i)
{
	snprintf(buf, len, "t%u-f%u", thread, i);
}

#define W_TRY(w, expr) do {						\
	long long _r = (long long)(expr);				\
	if (_r < 0) {							\
		(w)->err = (int)_r;					\
		snprintf((w)->what, sizeof((w)->what), "%s", #expr);	\
		return NULL;						\
	}								\
} while (0)

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	u8 *buf = bfs_malloc(FILE_BYTES);
	u64 rng = w->idx * 7919 + 1;
	unsigned i;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (i = 0; i < FILES && !w->err; i++) {
		struct bfs_stat st;
		char name[32];
		/* every fourth file in the directory all threads share */
		u64 dir = i % 4 == 3 ? w->shared : w->dir;
		u32 off;

		name_of(name, sizeof(name), w->idx, i);
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		W_TRY(w, bfs_fs_mknod(w->fs, dir, name, strlen(name), S_IFREG | 0644, 0, &root, &st));
		w->ino[i] = st.ino;
		w->alive[i] = 1;
		w->seed[i] = (u8)(rng >> 40);
		tu_pattern(buf, FILE_BYTES, w->seed[i]);
		W_TRY(w, bfs_fs_write(w->fs, st.ino, buf, FILE_BYTES, 0));
		/* an unaligned overwrite inside: extents trimmed on both sides */
		off = (u32)(rng >> 20) % (FILE_BYTES / 2);
		W_TRY(w, bfs_fs_write(w->fs, st.ino, buf + off, 1000 + (rng >> 50) % 3000, off));
		if (i % 16 == 0)
			W_TRY(w, bfs_fs_fsync(w->fs, st.ino, false));
		/* unlink an earlier one now and then: deletes, whiteouts, merges */
		if (i % 5 == 4) {
			unsigned j = (unsigned)((rng >> 8) % i);

			if (w->alive[j]) {
				name_of(name, sizeof(name), w->idx, j);
				W_TRY(w, bfs_fs_unlink(w->fs, j % 4 == 3 ? w->shared : w->dir,
						       name, strlen(name)));
				w->alive[j] = 0;
			}
		}
	}
	bfs_free(buf);
	return NULL;
}

static void check_files(struct bfs_fs *fs, struct worker *w)
{
	u8 *want = bfs_malloc(FILE_BYTES), *got = bfs_malloc(FILE_BYTES);
	unsigned t, i;

	for (t = 0; t < THREADS; t++)
		for (i = 0; i < FILES; i++) {
			struct bfs_stat st;
			char name[32];
			u64 dir = i % 4 == 3 ? w[t].shared : w[t].dir;
			int ret;

			name_of(name, sizeof(name), t, i);
			ret = bfs_fs_lookup(fs, dir, name, strlen(name), &st);
			if (!w[t].alive[i]) {
				ck_assert_msg(ret == -ENOENT, "%s: unlinked but lookup gives %d", name, ret);
				continue;
			}
			ck_assert_msg(!ret, "%s: lookup %d", name, ret);
			ck_assert_uint_eq(st.ino, w[t].ino[i]);
			ck_assert_uint_eq(st.size, FILE_BYTES);
			tu_pattern(want, FILE_BYTES, w[t].seed[i]);
			ck_assert_int_eq(bfs_fs_read(fs, st.ino, got, FILE_BYTES, 0), FILE_BYTES);
			ck_assert_msg(!memcmp(want, got, FILE_BYTES), "%s: wrong bytes", name);
		}
	bfs_free(want);
	bfs_free(got);
}

START_TEST(test_parallel_fs_stress)
{
	struct bfs_dev *dev = tu_mkfs_fs(256 * MiB, 0, 0, 0);
	struct bfs_fs *fs = tu_fs_open(dev);
	struct worker *w = bfs_calloc(THREADS, sizeof(*w));
	bfs_thread tid[THREADS];
	struct bfs_fsck f = { .dev = dev, .mode = BFS_FSCK_MODE_NO, .check_data = true };
	struct bfs_core_stats cs;
	struct bfs_stat st;
	u64 shared;
	unsigned i;
	int rc;

	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, SHARED_DIR, strlen(SHARED_DIR), 0755,
				      &root, &st), 0);
	shared = st.ino;
	for (i = 0; i < THREADS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "d%u", i);
		ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, name, strlen(name), 0755, &root, &st), 0);
		w[i].fs = fs;
		w[i].idx = i;
		w[i].dir = st.ino;
		w[i].shared = shared;
	}
	for (i = 0; i < THREADS; i++)
		ck_assert_int_eq(bfs_thread_create(&tid[i], worker_fn, &w[i]), 0);
	for (i = 0; i < THREADS; i++)
		bfs_thread_join(tid[i]);
	for (i = 0; i < THREADS; i++)
		ck_assert_msg(!w[i].err, "thread %u: %s: %d", i, w[i].what, w[i].err);
	bfs_core_get_stats(bfs_fs_core(fs), &cs);
	ck_assert_msg(cs.commits_parallel * 2 > cs.commits, "%llu of %llu commits parallel",
		      (unsigned long long)cs.commits_parallel, (unsigned long long)cs.commits);
	printf("commit-par: %llu commits, %llu parallel, %llu splits, %llu merges\n",
	       (unsigned long long)cs.commits, (unsigned long long)cs.commits_parallel,
	       (unsigned long long)cs.splits, (unsigned long long)cs.merges);
	check_files(fs, w);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	fs = tu_fs_open(dev);
	check_files(fs, w);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	rc = bfs_fsck_run(&f);
	ck_assert_msg(rc == BFS_FSCK_OK, "fsck: exit %d, %u problems (%s)", rc, f.nr_problems,
		      tu_last_err);
	bfs_fsck_release(&f);
	bfs_free(w);
	bfs_dev_close(dev);
}
END_TEST

static Suite *commit_par_suite(void)
{
	Suite *s = suite_create("commit_par");
	TCase *tc = tcase_create("fs");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_parallel_fs_stress);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(commit_par_suite)
