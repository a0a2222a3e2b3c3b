// SPDX-License-Identifier: MIT
/* Crashed device states from an I/O log: see crash_states.h. */
#include "crash_states.h"
#include "tu.h"
#include "unit.h"

#include <bfs/btree.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

u64 crash_env_u64(const char *name, u64 def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

u64 crash_splitmix(u64 *state)
{
	u64 z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void crash_mark(struct bfs_dev *dev, char kind, u32 n)
{
	char m[32];

	snprintf(m, sizeof(m), "%c %u", kind, n);
	ck_assert_int_eq(bfs_dev_record_mark(dev, m), 0);
}

void crash_acks_init(struct crash_acks *a, struct bfs_dev *dev, u32 max)
{
	*a = (struct crash_acks){ .dev = dev, .max = max };
	bfs_mutex_init(&a->lock);
	a->ack = bfs_calloc((size_t)max + 1, sizeof(*a->ack));
	ck_assert_ptr_nonnull(a->ack);
}

void crash_acks_destroy(struct crash_acks *a)
{
	bfs_mutex_destroy(&a->lock);
	bfs_free(a->ack);
	a->ack = NULL;
}

void crash_ack(struct crash_acks *a, u32 thread, u64 value)
{
	/* the ack and its mark under one lock: the log's mark order is the acks' order */
	bfs_mutex_lock(&a->lock);
	if (a->nr < a->max) {
		a->nr++;
		a->ack[a->nr] = (struct crash_ack){ .thread = thread, .value = value };
		crash_mark(a->dev, 'f', a->nr);
	}
	bfs_mutex_unlock(&a->lock);
}

void crash_acks_upto(struct crash_acks *a, u32 f, u64 *acked, unsigned threads)
{
	u32 n;

	for (n = 0; n < threads; n++)
		acked[n] = 0;
	for (n = 1; n <= f && n <= a->nr; n++) {
		ck_assert_uint_lt(a->ack[n].thread, threads);
		acked[a->ack[n].thread] = BFS_MAX(acked[a->ack[n].thread], a->ack[n].value);
	}
}

void crash_run_threads(unsigned threads, void *(*fn)(void *), void *args, size_t size)
{
	bfs_thread *tid = bfs_calloc(threads, sizeof(*tid));
	unsigned t;

	ck_assert_ptr_nonnull(tid);
	for (t = 0; t < threads; t++)
		ck_assert_int_eq(bfs_thread_create(&tid[t], fn, (char *)args + t * size), 0);
	for (t = 0; t < threads; t++)
		bfs_thread_join(tid[t]);
	bfs_free(tid);
}

struct harness {
	struct bfs_iolog log;
	crash_check_fn check;
	void *ctx;
	u64 rng;
	struct crash_result *res;
};

static void read_mark(const struct bfs_iolog *log, size_t i, struct crash_marks *mk)
{
	char text[64] = "";
	unsigned v;

	if (log->entries[i].len >= sizeof(text))
		return;
	ck_assert_int_eq(bfs_iolog_read_data(log, i, text), 0);
	text[log->entries[i].len] = '\0';
	if (sscanf(text + 1, " %u", &v) != 1)
		return;
	if (text[0] == 'f' && v > mk->f)
		mk->f = v;
	else if (text[0] == 'c' && v > mk->c)
		mk->c = v;
}

static bool is_barrier(const struct bfs_iolog *log, size_t i)
{
	return log->entries[i].type == BFS_IOLOG_FLUSH;
}

static bool is_data(const struct bfs_iolog_entry *e)
{
	return e->type == BFS_IOLOG_WRITE || e->type == BFS_IOLOG_FUA ||
	       e->type == BFS_IOLOG_DISCARD;
}

static void check_one(struct harness *h, struct bfs_dev *img, struct crash_marks mk,
		      const char *kind, size_t at)
{
	char why[512] = "";

	h->res->states++;
	if (h->check(h->ctx, img, mk, why))
		return;
	h->res->failures++;
	if (h->res->failures <= 5)
		fprintf(stderr, "crash state %u (%s, log entry %zu, durable %u, begun %u): %s\n",
			h->res->states, kind, at, mk.f, mk.c, why);
}

/*
 * A state after the flush that precedes entry @first (whose image is
 * @at_flush, @mk its marks), crashed at entry @to: every write of
 * @first..@to survives or not at random (a FUA write always does), and one
 * may be torn to a multiple of 512 bytes.
 */
static void random_state(struct harness *h, struct bfs_dev *at_flush, size_t first, size_t to,
			 struct crash_marks mk)
{
	struct bfs_dev *img;
	size_t i, torn = SIZE_MAX;

	ck_assert_int_eq(bfs_dev_clone_mem(at_flush, &img), 0);
	if (crash_splitmix(&h->rng) % 2)
		torn = first + crash_splitmix(&h->rng) % (to - first + 1);
	for (i = first; i <= to; i++) {
		const struct bfs_iolog_entry *e = &h->log.entries[i];

		if (e->type == BFS_IOLOG_MARK) {
			read_mark(&h->log, i, &mk);
			continue;
		}
		if (!is_data(e))
			continue;
		if (i == torn && e->type == BFS_IOLOG_WRITE && e->len > 512) {
			u64 keep = 512 * (1 + crash_splitmix(&h->rng) % (e->len / 512));

			ck_assert_int_eq(bfs_iolog_apply(&h->log, i, img, BFS_MIN(keep, e->len)), 0);
		} else if (e->type == BFS_IOLOG_FUA || crash_splitmix(&h->rng) % 2) {
			ck_assert_int_eq(bfs_iolog_apply(&h->log, i, img, 0), 0);
		}
	}
	check_one(h, img, mk, "random", to);
	h->res->random_states++;
	bfs_dev_close(img);
}

/* check a copy of @run: opening it replays and writes, @run must stay as is */
static void flush_state(struct harness *h, struct bfs_dev *run, struct crash_marks mk, size_t at)
{
	struct bfs_dev *img;

	ck_assert_int_eq(bfs_dev_clone_mem(run, &img), 0);
	check_one(h, img, mk, "flush", at);
	h->res->flush_states++;
	bfs_dev_close(img);
}

/*
 * Walk the log from flush to flush.  @run always holds the image with every
 * write so far applied; at a sampled flush it is checked, and random states
 * of the interval after it are built from it before the interval is applied.
 * The start of the log counts as a flush (the base image is durable), so the
 * first interval begins at entry 0 whatever that entry is.
 */
void crash_build_states(const char *logpath, struct bfs_dev *base_img, u64 seed,
			crash_check_fn check, void *ctx, struct crash_result *res)
{
	u64 max_flush = crash_env_u64("BFS_CRASH_MAX_FLUSH_STATES", 80);
	u64 per_interval = crash_env_u64("BFS_CRASH_RANDOM_STATES", 2);
	struct harness h = { .check = check, .ctx = ctx, .rng = seed, .res = res };
	size_t i, first, end, nr_flushes = 0, flush_no = 0;
	struct crash_marks mk = { 0 };
	struct bfs_dev *run;

	memset(res, 0, sizeof(*res));
	ck_assert_int_eq(bfs_iolog_open(logpath, &h.log), 0);
	res->log_entries = h.log.nr;
	for (i = 0; i < h.log.nr; i++)
		nr_flushes += is_barrier(&h.log, i);
	ck_assert_int_eq(bfs_dev_clone_mem(base_img, &run), 0);
	for (first = 0;; first = end + 1) {
		bool sample = nr_flushes <= max_flush ||
			flush_no * max_flush / nr_flushes != (flush_no + 1) * max_flush / nr_flushes;
		u64 r;

		/* the interval is first..end-1; end is the next flush or the log's end */
		for (end = first; end < h.log.nr && !is_barrier(&h.log, end); end++)
			;
		if (first && sample)
			flush_state(&h, run, mk, first - 1);
		for (r = 0; sample && r < per_interval && end > first; r++)
			random_state(&h, run, first, first + crash_splitmix(&h.rng) % (end - first), mk);
		for (i = first; i < end; i++) {
			const struct bfs_iolog_entry *e = &h.log.entries[i];

			if (e->type == BFS_IOLOG_MARK)
				read_mark(&h.log, i, &mk);
			else if (is_data(e))
				ck_assert_int_eq(bfs_iolog_apply(&h.log, i, run, 0), 0);
		}
		flush_no++;
		if (end >= h.log.nr)
			break;
	}
	/* the final state: everything written */
	check_one(&h, run, mk, "end", h.log.nr);
	bfs_dev_close(run);
	bfs_iolog_close(&h.log);
}

void crash_states_check(const char *what, char *logpath, struct bfs_dev *base_img, u64 seed,
			crash_check_fn check, void *ctx, unsigned min_flush)
{
	struct crash_result res;

	crash_build_states(logpath, base_img, seed, check, ctx, &res);
	printf("%s: %zu log entries; %u crash states (%u flush points, %u random), %u failed\n",
	       what, res.log_entries, res.states, res.flush_states, res.random_states,
	       res.failures);
	ck_assert_uint_ge(res.flush_states, min_flush);
	ck_assert_msg(res.failures == 0, "%s: %u of %u crash states failed", what, res.failures,
		      res.states);
	unlink(logpath);
	free(logpath);
}

bool crash_open_verified(struct bfs_dev *img, struct bfs_fs **fs, char *why)
{
	int ret, id;

	ret = bfs_fs_open(img, &(struct bfs_fs_opts){ 0 }, fs);
	if (ret) {
		snprintf(why, 512, "open failed: %s", strerror(-ret));
		return false;
	}
	for (id = 0; id < BFS_BTREE_NR; id++) {
		long bad = bfs_btree_verify(bfs_fs_core(*fs), id);

		if (bad) {
			snprintf(why, 512, "btree %s: verify found %ld problems",
				 bfs_btree_id_name(id), bad);
			bfs_fs_close(*fs);
			*fs = NULL;
			return false;
		}
	}
	return true;
}

bool crash_fsck_then_open(struct bfs_dev *img, struct bfs_fs **fs, char *why)
{
	struct bfs_fsck f = { .dev = img, .mode = BFS_FSCK_MODE_NO };
	int rc;

	rc = bfs_fsck_run(&f);
	bfs_fsck_release(&f);
	if (rc != BFS_FSCK_OK) {
		snprintf(why, 512, "fsck: exit %d, %u problems (%s)", rc, f.nr_problems, tu_last_err);
		return false;
	}
	tu_nr_warns = 0;
	rc = bfs_fs_open(img, &(struct bfs_fs_opts){ 0 }, fs);
	if (rc) {
		snprintf(why, 512, "open failed: %s", strerror(-rc));
		return false;
	}
	if (tu_nr_warns) {
		snprintf(why, 512, "open warned %u times (%s)", tu_nr_warns, tu_last_err);
		bfs_fs_close(*fs);
		*fs = NULL;
		return false;
	}
	return true;
}

bool crash_close_recovered(struct bfs_fs *fs, bool ok, char *why)
{
	int rc = bfs_fs_close(fs);

	if (ok && rc) {
		snprintf(why, 512, "close after recovery failed: %s", strerror(-rc));
		return false;
	}
	return ok;
}
