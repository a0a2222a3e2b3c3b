// SPDX-License-Identifier: MIT
/*
 * Parallel commits (doc/commit.md).
 *
 * replay: threads overwrite the same positions (the same leaves), their own keys
 * (their own leaves, split as they fill) and overlapping extents of one
 * inode (trimmed in parallel), then flush; a copy of the device taken
 * without a clean close must replay to exactly the tree in memory, key for
 * key: for every position, the journal holds the overwrites in the order
 * they were applied.
 *
 * fs: threads create, overwrite (extent trimming), fsync and unlink files
 * in their own directories, and one in a directory they all share, at
 * once.  Afterwards every acknowledged file must be there with the bytes
 * last written, before and after a reopen, and fsck with data checks must
 * find the image clean.
 */
#include "test_btree_util.h"
#include "unit.h"

#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* ---- replay gives the tree in memory ---- */

#define R_THREADS	4
#define R_TXNS		4000		/* per thread */
#define SHARED_INO	5000000		/* above what mkfs makes */
#define OWN_INO		5000100		/* + thread */
#define EXT_INO		5000200		/* one inode's extents, all threads */
#define EXT_SPAN	4096

struct rworker {
	struct bfs_core *c;
	unsigned idx;
	int	err;
};

static void *replay_worker(void *arg)
{
	struct rworker *w = arg;
	u64 rng = w->idx * 104729 + 7, buf[16];
	struct bfs_trans *t;
	u32 i;

	if ((w->err = bfs_trans_begin(w->c, &t)))
		return NULL;
	for (i = 0; i < R_TXNS && !w->err; i++) {
		u64 v = (u64)w->idx << 32 | i, s, len;
		struct bfs_bkey *k = (struct bfs_bkey *)buf;

		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		/*
		 * transaction i of every thread writes position i: the threads
		 * race for each, and the last writer must win after replay too
		 */
		w->err = bfs_trans_update(t, BFS_BTREE_INODES, tu_key(buf, SHARED_INO, i, v, 2));
		if (!w->err)
			w->err = bfs_trans_update(t, BFS_BTREE_INODES,
						  tu_key(buf, OWN_INO + w->idx, i, v, 6));
		if (!w->err && i % 2) {
			s = (rng >> 20) % EXT_SPAN;
			len = 1 + (rng >> 40) % 64;
			bfs_bkey_init(k, BFS_KEY_TEST_EXTENT, BFS_POS(EXT_INO, s + len, 0), 1);
			k->size = cpu_to_le32((u32)len);
			k->v[0] = cpu_to_le64(v);
			w->err = bfs_trans_update(t, BFS_BTREE_EXTENTS, k);
		}
		if (!w->err && i % 7 == 6)
			w->err = bfs_trans_delete(t, BFS_BTREE_INODES, BFS_POS(OWN_INO + w->idx, i - 3, 0));
		/*
		 * now and then overwrite older keys of its own, far apart and
		 * backwards (leaves taken out of order: trylock), or so many
		 * that the leaf set overflows (the exclusive way)
		 */
		if (i >= 1000 && i % 25 == 0) {
			u32 j, n = i % 100 ? 4 : 24;

			for (j = 1; j <= n && !w->err; j++)
				w->err = bfs_trans_update(t, BFS_BTREE_INODES,
							  tu_key(buf, OWN_INO + w->idx, i - j * 40, v, 6));
		}
		if (!w->err)
			w->err = bfs_trans_commit(t, NULL);
	}
	bfs_trans_end(t);
	return NULL;
}

/* every key of btree @id, back to back */
static u8 *dump_btree(struct bfs_core *c, u8 id, size_t *len)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	size_t cap = 1 << 20, used = 0;
	u8 *out = bfs_malloc(cap);
	int ret;

	bfs_btree_iter_init(&it, c, id, BFS_POS_MIN, 0);
	for_each_btree_key(&it, k, ret) {
		size_t b = bfs_bkey_bytes(k);

		if (used + b > cap) {
			cap *= 2;
			out = bfs_realloc(out, cap);
			ck_assert_ptr_nonnull(out);
		}
		memcpy(out + used, k, b);
		used += b;
	}
	bfs_btree_iter_exit(&it);
	ck_assert_int_eq(ret, 0);
	*len = used;
	return out;
}

START_TEST(test_parallel_replay_matches_memory)
{
	struct bfs_dev *dev = tu_mkfs(128 * MiB, 4096, 0, 0), *copy;
	struct bfs_core *c = tu_open(dev, false, 4 * MiB), *c2;
	struct rworker w[R_THREADS];
	bfs_thread tid[R_THREADS];
	static const u8 ids[] = { BFS_BTREE_INODES, BFS_BTREE_EXTENTS };
	struct bfs_core_stats cs;
	unsigned i;

	for (i = 0; i < R_THREADS; i++) {
		w[i] = (struct rworker){ .c = c, .idx = i };
		ck_assert_int_eq(bfs_thread_create(&tid[i], replay_worker, &w[i]), 0);
	}
	for (i = 0; i < R_THREADS; i++)
		bfs_thread_join(tid[i]);
	for (i = 0; i < R_THREADS; i++)
		ck_assert_msg(!w[i].err, "thread %u: %d", i, w[i].err);
	bfs_core_get_stats(c, &cs);
	printf("commit-par replay: %llu commits, %llu parallel, %llu splits\n",
	       (unsigned long long)cs.commits, (unsigned long long)cs.commits_parallel,
	       (unsigned long long)cs.splits);
	ck_assert_msg(cs.commits_parallel * 2 > cs.commits && cs.splits >= 10,
		      "%llu of %llu commits parallel, %llu splits",
		      (unsigned long long)cs.commits_parallel, (unsigned long long)cs.commits,
		      (unsigned long long)cs.splits);
	ck_assert_int_eq(bfs_core_flush(c), 0);
	/* as a crash right now would leave it: no clean close, the journal replayed */
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &copy), 0);
	c2 = tu_open(copy, false, 0);
	for (i = 0; i < ARRAY_SIZE(ids); i++) {
		size_t la, lb;
		u8 *a = dump_btree(c, ids[i], &la), *b = dump_btree(c2, ids[i], &lb);

		ck_assert_msg(la == lb && !memcmp(a, b, la), "btree %s differs after replay "
			      "(%zu bytes of keys in memory, %zu replayed)", bfs_btree_id_name(ids[i]),
			      la, lb);
		ck_assert_int_eq(bfs_btree_verify(c2, ids[i]), 0);
		bfs_free(a);
		bfs_free(b);
	}
	ck_assert_int_eq(bfs_core_close(c2), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(copy);
	bfs_dev_close(dev);
}
END_TEST

/* ---- a filesystem ---- */

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
	TCase *tc = tcase_create("replay");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_parallel_replay_matches_memory);
	suite_add_tcase(s, tc);
	tc = tcase_create("fs");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_parallel_fs_stress);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(commit_par_suite)
