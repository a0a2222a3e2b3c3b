// SPDX-License-Identifier: MIT
/*
 * lmdb_bench: the LMDB side of bench/btree-vs-lmdb.  It runs the phases of
 * `bfs bench btree` (cmd/bench.c) on the same key sets and operation streams
 * and prints the same JSON, so the two can be divided op by op:
 *
 *   seq_insert   keys 0..N-1 in order into a new environment, then sync
 *   rand_insert  N random keys into another new environment, then sync;
 *                the phases below run on it
 *   rand_lookup  N lookups of random existing keys, split over T threads
 *   seq_scan     a cursor over every key in order
 *   rand_mixed   N ops, 3 lookups : 1 overwrite, split over T threads, then sync
 *   rand_delete  delete every key in insertion (random) order, then sync
 *
 * Keys are 8-byte big-endian (memcmp order = numeric order, as bfs sorts
 * offsets), values the same bytes bfs stores.  The environment is opened
 * MDB_WRITEMAP | MDB_NOSYNC | MDB_NOTLS: no fsync per commit (bfs does not
 * flush per commit either), writes through the map.  Writes commit one
 * transaction per --batch updates; rand_lookup and seq_scan use one read
 * transaction per thread for the whole phase (how LMDB's own benchmarks
 * read); rand_mixed renews a read transaction per lookup so that it sees the
 * updates committed so far.
 *
 * Build: cc -O2 -o lmdb_bench bench/lmdb_bench.c -llmdb -lpthread
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* asprintf, mkdtemp */
#endif
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef uint64_t u64;

/* ---- key sets and operation streams: identical to cmd/bench.c ---- */

#define BENCH_GAMMA	UINT64_C(0x9e3779b97f4a7c15)

static u64 mix64(u64 z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static u64 bench_key(u64 seed, bool rand, u64 i)
{
	return rand ? mix64(seed + i * BENCH_GAMMA) : i;
}

static u64 stream_seed(u64 seed, unsigned phase, unsigned thread)
{
	return mix64(seed ^ ((u64)phase << 32) ^ (thread + 1));
}

static u64 stream_next(u64 *state)
{
	return mix64(*state += BENCH_GAMMA);
}

static u64 value_word(u64 k, unsigned j, u64 gen)
{
	return j ? k + j * BENCH_GAMMA + gen : k;
}

enum bench_op {
	OP_SEQ_INSERT, OP_RAND_INSERT, OP_RAND_LOOKUP, OP_SEQ_SCAN, OP_RAND_MIXED,
	OP_RAND_DELETE, OP_NR,
};

static const char *const op_names[OP_NR] = {
	"seq_insert", "rand_insert", "rand_lookup", "seq_scan", "rand_mixed", "rand_delete",
};

/* ---- state ---- */

struct result {
	u64	ops, ns, max_rss;
};

struct bench {
	u64	keys, seed;
	unsigned threads, batch, value_size;
	bool	json;
	char	*dir;		/* environment directory (created, removed) */
	MDB_env	*env;
	MDB_dbi	dbi;
	struct result res[OP_NR];
};

/* the environment directory, removed on every way out (it may hold gigabytes) */
static char *env_dir;

static void remove_env_dir(void)
{
	char path[4096];

	if (!env_dir)
		return;
	snprintf(path, sizeof(path), "%s/data.mdb", env_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lock.mdb", env_dir);
	unlink(path);
	rmdir(env_dir);
}

static __attribute__((noreturn)) void die(const char *what, int rc)
{
	fprintf(stderr, "lmdb_bench: %s: %s\n", what, mdb_strerror(rc));
	exit(1);
}

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000u + (u64)ts.tv_nsec;
}

static u64 max_rss_bytes(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : (u64)ru.ru_maxrss * 1024;
}

/* big-endian, so that LMDB's memcmp order is numeric order */
static void put_be64(unsigned char *p, u64 v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static u64 get_le64(const unsigned char *p)
{
	u64 v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le64(unsigned char *p, u64 v)
{
	int i;

	for (i = 0; i < 8; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

/* the value bytes bfs stores: little-endian words */
static void make_value(const struct bench *b, u64 k, u64 gen, unsigned char *buf)
{
	unsigned j;

	for (j = 0; j < b->value_size / 8; j++)
		put_le64(buf + 8 * j, value_word(k, j, gen));
}

/* ---- environment ---- */

static void env_remove(struct bench *b)
{
	if (b->env)
		mdb_env_close(b->env);
	b->env = NULL;
	remove_env_dir();
	/* remove_env_dir() removed the directory too; the next env needs it */
	mkdir(b->dir, 0700);
}

/* a new, empty environment: every phase that inserts starts from nothing */
static void env_fresh(struct bench *b)
{
	/* generous: per key 16 B of node header and key, the value, half-empty pages */
	size_t map = (size_t)(b->keys * (u64)(b->value_size + 64) * 4);
	MDB_txn *txn;
	int rc;

	env_remove(b);
	map = (map < ((size_t)1 << 30) ? (size_t)1 << 30 : map);
	if ((rc = mdb_env_create(&b->env)) ||
	    (rc = mdb_env_set_mapsize(b->env, map)) ||
	    (rc = mdb_env_set_maxreaders(b->env, b->threads + 8)) ||
	    (rc = mdb_env_open(b->env, b->dir, MDB_WRITEMAP | MDB_NOSYNC | MDB_NOTLS, 0644)))
		die("opening the environment", rc);
	if ((rc = mdb_txn_begin(b->env, NULL, 0, &txn)) ||
	    (rc = mdb_dbi_open(txn, NULL, 0, &b->dbi)) ||
	    (rc = mdb_txn_commit(txn)))
		die("opening the database", rc);
}

/* ---- writes, @batch per transaction ---- */

struct writer {
	struct bench *b;
	MDB_txn	*txn;
	unsigned queued;
	unsigned char key[8];
	unsigned char *val;
};

static void writer_init(struct writer *w, struct bench *b)
{
	*w = (struct writer){ .b = b, .val = malloc(b->value_size) };
	if (!w->val)
		die("malloc", ENOMEM);
}

static void writer_commit(struct writer *w)
{
	int rc;

	if (!w->txn)
		return;
	rc = mdb_txn_commit(w->txn);
	if (rc)
		die("commit", rc);
	w->txn = NULL;
	w->queued = 0;
}

static void writer_exit(struct writer *w)
{
	writer_commit(w);
	free(w->val);
}

/* insert/overwrite @k (put) or delete it */
static void writer_op(struct writer *w, u64 k, bool put, u64 gen)
{
	MDB_val key = { 8, w->key }, val = { w->b->value_size, w->val };
	int rc;

	if (!w->txn && (rc = mdb_txn_begin(w->b->env, NULL, 0, &w->txn)))
		die("write transaction", rc);
	put_be64(w->key, k);
	if (put) {
		make_value(w->b, k, gen, w->val);
		rc = mdb_put(w->txn, w->b->dbi, &key, &val, 0);
	} else {
		rc = mdb_del(w->txn, w->b->dbi, &key, NULL);
	}
	if (rc)
		die(put ? "put" : "delete", rc);
	if (++w->queued == w->b->batch)
		writer_commit(w);
}

static void sync_env(struct bench *b)
{
	int rc = mdb_env_sync(b->env, 1);

	if (rc)
		die("sync", rc);
}

/* ---- phases ---- */

static void phase_insert(struct bench *b, bool rand)
{
	struct writer w;
	u64 i;

	writer_init(&w, b);
	for (i = 0; i < b->keys; i++)
		writer_op(&w, bench_key(b->seed, rand, i), true, 0);
	writer_exit(&w);
	sync_env(b);
}

static void phase_delete(struct bench *b)
{
	struct writer w;
	u64 i;

	writer_init(&w, b);
	for (i = 0; i < b->keys; i++)
		writer_op(&w, bench_key(b->seed, true, i), false, 0);
	writer_exit(&w);
	sync_env(b);
}

static void lookup_one(struct bench *b, MDB_txn *txn, u64 k)
{
	unsigned char kb[8];
	MDB_val key = { 8, kb }, val;
	int rc;

	put_be64(kb, k);
	rc = mdb_get(txn, b->dbi, &key, &val);
	if (rc)
		die("get", rc);
	if (val.mv_size != b->value_size || get_le64(val.mv_data) != k) {
		fprintf(stderr, "lmdb_bench: wrong value for key %" PRIu64 "\n", k);
		exit(1);
	}
}

static u64 phase_scan(struct bench *b)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val key, val;
	u64 n = 0;
	int rc;

	if ((rc = mdb_txn_begin(b->env, NULL, MDB_RDONLY, &txn)) ||
	    (rc = mdb_cursor_open(txn, b->dbi, &cur)))
		die("scan", rc);
	for (rc = mdb_cursor_get(cur, &key, &val, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &key, &val, MDB_NEXT)) {
		if (key.mv_size != 8 || val.mv_size != b->value_size) {
			fprintf(stderr, "lmdb_bench: scan found a bad record\n");
			exit(1);
		}
		n++;
	}
	if (rc != MDB_NOTFOUND)
		die("scan", rc);
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return n;
}

struct worker {
	struct bench *b;
	enum bench_op op;
	unsigned thread;
	u64	ops;
};

static void work_lookups(struct bench *b, unsigned thread, u64 ops)
{
	u64 s = stream_seed(b->seed, OP_RAND_LOOKUP, thread), i;
	MDB_txn *txn;
	int rc = mdb_txn_begin(b->env, NULL, MDB_RDONLY, &txn);

	if (rc)
		die("read transaction", rc);
	for (i = 0; i < ops; i++)
		lookup_one(b, txn, bench_key(b->seed, true, stream_next(&s) % b->keys));
	mdb_txn_abort(txn);
}

static void work_mixed(struct bench *b, unsigned thread, u64 ops)
{
	u64 s = stream_seed(b->seed, OP_RAND_MIXED, thread), i;
	struct writer w;
	MDB_txn *rtxn;
	int rc = mdb_txn_begin(b->env, NULL, MDB_RDONLY, &rtxn);

	if (rc)
		die("read transaction", rc);
	mdb_txn_reset(rtxn);
	writer_init(&w, b);
	for (i = 0; i < ops; i++) {
		u64 x = stream_next(&s), k = bench_key(b->seed, true, (x >> 2) % b->keys);

		if (!(x & 3)) {
			writer_op(&w, k, true, 1);
			continue;
		}
		/* a fresh snapshot per lookup: it sees every committed update */
		if ((rc = mdb_txn_renew(rtxn)))
			die("renew", rc);
		lookup_one(b, rtxn, k);
		mdb_txn_reset(rtxn);
	}
	writer_exit(&w);
	mdb_txn_abort(rtxn);
}

static void *worker_fn(void *arg)
{
	struct worker *wk = arg;

	if (wk->op == OP_RAND_LOOKUP)
		work_lookups(wk->b, wk->thread, wk->ops);
	else
		work_mixed(wk->b, wk->thread, wk->ops);
	return NULL;
}

static void phase_parallel(struct bench *b, enum bench_op op)
{
	struct worker *wk = calloc(b->threads, sizeof(*wk));
	pthread_t *tid = calloc(b->threads, sizeof(*tid));
	unsigned t;

	if (!wk || !tid)
		die("calloc", ENOMEM);
	for (t = 0; t < b->threads; t++)
		wk[t] = (struct worker){ .b = b, .op = op, .thread = t,
			.ops = b->keys * (t + 1) / b->threads - b->keys * t / b->threads };
	if (b->threads == 1) {
		worker_fn(&wk[0]);
	} else {
		for (t = 0; t < b->threads; t++)
			if (pthread_create(&tid[t], NULL, worker_fn, &wk[t]))
				die("pthread_create", EAGAIN);
		for (t = 0; t < b->threads; t++)
			pthread_join(tid[t], NULL);
	}
	free(wk);
	free(tid);
	if (op == OP_RAND_MIXED)
		sync_env(b);
}

static void run_phases(struct bench *b)
{
	int op;

	for (op = 0; op < OP_NR; op++) {
		u64 t0, ops = b->keys;

		if (op == OP_SEQ_INSERT || op == OP_RAND_INSERT)
			env_fresh(b);
		t0 = now_ns();
		switch (op) {
		case OP_SEQ_INSERT:
		case OP_RAND_INSERT:
			phase_insert(b, op == OP_RAND_INSERT);
			break;
		case OP_SEQ_SCAN:
			ops = phase_scan(b);
			if (ops != b->keys) {
				fprintf(stderr, "lmdb_bench: scan saw %" PRIu64 " keys\n", ops);
				exit(1);
			}
			break;
		case OP_RAND_DELETE:
			phase_delete(b);
			break;
		default:
			phase_parallel(b, op);
			break;
		}
		b->res[op] = (struct result){ .ops = ops, .ns = now_ns() - t0,
					      .max_rss = max_rss_bytes() };
	}
}

/* ---- output ---- */

static u64 ops_per_sec(const struct result *r)
{
	return r->ns ? (u64)((double)r->ops * 1e9 / (double)r->ns) : 0;
}

static u64 ns_per_op(const struct result *r)
{
	return r->ops ? (r->ns + r->ops / 2) / r->ops : 0;
}

static u64 key_digest(const struct bench *b)
{
	u64 h = 0, i;

	for (i = 0; i < b->keys; i++)
		h = mix64(h ^ bench_key(b->seed, true, i));
	return h;
}

static void print_json(const struct bench *b)
{
	int op;

	printf("{\n  \"benchmark\": \"lmdb\",\n  \"keys\": %" PRIu64 ",\n"
	       "  \"value_size\": %u,\n  \"threads\": %u,\n  \"batch\": %u,\n"
	       "  \"seed\": %" PRIu64 ",\n  \"key_digest\": \"0x%016" PRIx64 "\",\n"
	       "  \"lmdb_version\": \"%s\",\n  \"results\": [\n",
	       b->keys, b->value_size, b->threads, b->batch, b->seed, key_digest(b),
	       mdb_version(NULL, NULL, NULL));
	for (op = 0; op < OP_NR; op++) {
		const struct result *r = &b->res[op];

		printf("    { \"op\": \"%s\", \"ops\": %" PRIu64 ", \"total_ns\": %" PRIu64
		       ", \"ns_per_op\": %" PRIu64 ", \"ops_per_sec\": %" PRIu64
		       ", \"max_rss\": %" PRIu64 " }%s\n", op_names[op], r->ops, r->ns,
		       ns_per_op(r), ops_per_sec(r), r->max_rss, op + 1 < OP_NR ? "," : "");
	}
	printf("  ],\n  \"peak_rss\": %" PRIu64 "\n}\n", b->res[OP_NR - 1].max_rss);
}

static void print_text(const struct bench *b)
{
	int op;

	printf("%s: %" PRIu64 " keys, value %u bytes, %u thread(s), batch %u\n\n",
	       mdb_version(NULL, NULL, NULL), b->keys, b->value_size, b->threads, b->batch);
	printf("%-12s %12s %10s %12s %12s\n", "op", "ops", "ns/op", "ops/s", "peak RSS MiB");
	for (op = 0; op < OP_NR; op++) {
		const struct result *r = &b->res[op];

		printf("%-12s %12" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n",
		       op_names[op], r->ops, ns_per_op(r), ops_per_sec(r), r->max_rss >> 20);
	}
}

/* ---- options ---- */

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: lmdb_bench [--keys N] [--threads T] [--value-size B] [--batch K]\n"
		"                  [--seed S] [--dir DIR] [--json]\n"
		"Runs the phases of 'bfs bench btree' through LMDB on the same key sets.\n"
		"DIR (default $TMPDIR or /tmp) gets a temporary environment directory.\n");
	exit(rc);
}

/* decimal, with k/M/G meaning powers of 1000 (as bfs bench) */
static u64 parse_count(const char *s, u64 min, u64 max)
{
	unsigned long long v, mult = 1;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'k' || *end == 'K')
		mult = 1000, end++;
	else if (*end == 'm' || *end == 'M')
		mult = 1000000, end++;
	else if (*end == 'g' || *end == 'G')
		mult = 1000000000, end++;
	if (errno || end == s || *s == '-' || *end || v > UINT64_MAX / mult ||
	    v * mult < min || v * mult > max) {
		fprintf(stderr, "lmdb_bench: invalid number '%s'\n", s);
		usage(2);
	}
	return v * mult;
}

static const char *parse_args(struct bench *b, int argc, char **argv)
{
	const char *dir = getenv("TMPDIR");
	int i;

	dir = dir && *dir ? dir : "/tmp";
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--json")) {
			b->json = true;
			continue;
		}
		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			usage(0);
		if (!v)
			usage(2);
		i++;
		if (!strcmp(a, "--keys") || !strcmp(a, "-n"))
			b->keys = parse_count(v, 1, UINT32_MAX);
		else if (!strcmp(a, "--threads") || !strcmp(a, "-t"))
			b->threads = (unsigned)parse_count(v, 1, 1024);
		else if (!strcmp(a, "--value-size"))
			b->value_size = (unsigned)parse_count(v, 8, 4096);
		else if (!strcmp(a, "--batch"))
			b->batch = (unsigned)parse_count(v, 1, 1000000);
		else if (!strcmp(a, "--seed"))
			b->seed = parse_count(v, 0, UINT64_MAX);
		else if (!strcmp(a, "--dir"))
			dir = v;
		else
			usage(2);
	}
	if (b->value_size % 8) {
		fprintf(stderr, "lmdb_bench: --value-size must be a multiple of 8 (as in bfs)\n");
		usage(2);
	}
	return dir;
}

int main(int argc, char **argv)
{
	struct bench b = { .keys = 1000000, .seed = 42, .threads = 1, .batch = 1,
			   .value_size = 16 };
	const char *dir = parse_args(&b, argc, argv);

	if (asprintf(&b.dir, "%s/lmdb-bench-XXXXXX", dir) < 0 || !mkdtemp(b.dir)) {
		fprintf(stderr, "lmdb_bench: cannot create a directory in '%s': %s\n", dir,
			strerror(errno));
		return 1;
	}
	env_dir = b.dir;
	atexit(remove_env_dir);
	run_phases(&b);
	if (b.env)
		mdb_env_close(b.env);
	b.env = NULL;
	if (b.json)
		print_json(&b);
	else
		print_text(&b);
	return ferror(stdout) || fflush(stdout) ? 1 : 0;
}
