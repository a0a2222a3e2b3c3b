// SPDX-License-Identifier: MIT
/*
 * bfs bench: micro-benchmarks of libcore.  The first word picks the
 * benchmark from a small table (`bfs bench btree`; the filesystem issue adds
 * `fs`), the rest are its options.
 *
 * bench btree runs six phases on a fresh, sparse image file and times each
 * with the monotonic clock:
 *
 *   seq_insert   N keys in key order into an empty tree, then flush
 *   rand_insert  N random keys into a new empty tree (image formatted again),
 *                then flush; the phases below run on this tree
 *   rand_lookup  N lookups of random existing keys (split over T threads)
 *   seq_scan     iterate over every key in order (ops = keys)
 *   rand_mixed   N operations, 3 lookups : 1 overwrite (split over T threads),
 *                then flush
 *   rand_delete  delete every key, in insertion (random) order, then flush
 *
 * The key sets and operation streams are a function of the seed alone and
 * bench/lmdb_bench.c generates exactly the same ones (doc/benchmarks.md, "Key
 * sets"), so the two results can be divided operation by operation; both
 * print a digest of the random key set so bench/btree-vs-lmdb can check that
 * they agree.
 */
#include "bench_fs.h"
#include "bench.h"
#include "cmd.h"
#include "output.h"
#include "sb_options.h"

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/os.h>
#include <bfs/probe.h>
#include <bfs/super.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- key sets and operation streams (mirrored in bench/lmdb_bench.c) ---- */

#define BENCH_GAMMA		UINT64_C(0x9e3779b97f4a7c15)
#define BENCH_DEFAULT_SEED	UINT64_C(42)
#define BENCH_INODE		1	/* every key lives at (1, k, 0) */

/* the splitmix64 finalizer: a bijection of u64, so distinct inputs stay distinct */

/* key i: 0..N-1 for the sequential set, N distinct random u64 for the random one */
static u64 bench_key(u64 seed, bool rand, u64 i)
{
	return rand ? bench_mix64(seed + i * BENCH_GAMMA) : i;
}

/* the operation stream of one thread in one phase: splitmix64 */

static u64 stream_next(u64 *state)
{
	return bench_mix64(*state += BENCH_GAMMA);
}

/* value word j of key k after @gen overwrites; word 0 is the key itself (checked) */
static u64 value_word(u64 k, unsigned j, u64 gen)
{
	return j ? k + j * BENCH_GAMMA + gen : k;
}

/* ---- the btree benchmark ---- */

enum bench_op {
	OP_SEQ_INSERT, OP_RAND_INSERT, OP_RAND_LOOKUP, OP_SEQ_SCAN, OP_RAND_MIXED,
	OP_RAND_DELETE, OP_NR,
};

static const char *const op_names[OP_NR] = {
	"seq_insert", "rand_insert", "rand_lookup", "seq_scan", "rand_mixed", "rand_delete",
};

struct phase_result {
	u64	ops;
	u64	ns;
	u64	max_rss;		/* process peak so far, bytes */
	struct bfs_core_stats stats;	/* after the phase */
	struct bfs_core_stats delta;	/* counters moved by the phase */
};

struct btree_bench {
	/* options */
	u64	keys;
	u64	seed;
	u64	cache;
	unsigned threads;
	unsigned batch;
	unsigned value_size;
	bool	json;
	bool	no_journal;
	const char *image_opt;
	/* state */
	char	*image;
	u64	image_size;
	struct bfs_dev *dev;
	struct bfs_core *c;
	u64	digest;
	struct phase_result res[OP_NR];
	struct bfs_core_stats before;
	u64	t0;
};

static u32 key_u64s(const struct btree_bench *b)
{
	return (u32)(BFS_BKEY_U64S + b->value_size / 8);
}

/* ---- writes, batched @batch updates per transaction ---- */

struct writer {
	struct btree_bench *b;
	struct bfs_trans *t;
	unsigned queued;
	struct bfs_bkey *k;
};

static int writer_init(struct writer *w, struct btree_bench *b)
{
	*w = (struct writer){ .b = b };
	w->k = malloc((size_t)key_u64s(b) * 8);
	return w->k ? 0 : -ENOMEM;
}

static int writer_commit(struct writer *w)
{
	int ret;

	if (!w->t)
		return 0;
	ret = bfs_trans_commit(w->t, NULL);
	bfs_trans_end(w->t);
	w->t = NULL;
	w->queued = 0;
	return ret;
}

static void writer_exit(struct writer *w)
{
	if (w->t)
		bfs_trans_end(w->t);
	free(w->k);
}

/* one update: a key to insert, or NULL to delete @key */
static int writer_queue(struct writer *w, u64 key, const struct bfs_bkey *k)
{
	struct bfs_core *c = w->b->c;
	int ret;

	/* one op per transaction is the common case: use the one-update calls */
	if (w->b->batch == 1)
		return k ? bfs_btree_insert(c, BFS_BTREE_INODES, k) :
			   bfs_btree_delete(c, BFS_BTREE_INODES, BFS_POS(BENCH_INODE, key, 0));
	if (!w->t) {
		ret = bfs_trans_begin(c, &w->t);
		if (ret)
			return ret;
	}
	ret = k ? bfs_trans_update(w->t, BFS_BTREE_INODES, k) :
		  bfs_trans_delete(w->t, BFS_BTREE_INODES, BFS_POS(BENCH_INODE, key, 0));
	if (ret)
		return ret;
	return ++w->queued == w->b->batch ? writer_commit(w) : 0;
}

static int writer_put(struct writer *w, u64 key, u64 gen)
{
	unsigned j, nr = w->b->value_size / 8;

	bfs_bkey_init(w->k, BFS_KEY_COOKIE, BFS_POS(BENCH_INODE, key, 0), nr);
	for (j = 0; j < nr; j++)
		w->k->v[j] = cpu_to_le64(value_word(key, j, gen));
	return writer_queue(w, key, w->k);
}

static int writer_del(struct writer *w, u64 key)
{
	return writer_queue(w, key, NULL);
}

/* ---- phases ---- */

static int lookup_one(struct btree_bench *b, u64 key, struct bfs_bkey *buf)
{
	int ret = bfs_btree_lookup(b->c, BFS_BTREE_INODES, BFS_POS(BENCH_INODE, key, 0),
				   buf, (size_t)key_u64s(b) * 8);

	if (ret)
		return ret;
	/* a wrong answer must not pass for a fast one */
	if (buf->type != BFS_KEY_COOKIE || bfs_bkey_val_u64s(buf) != b->value_size / 8 ||
	    le64_to_cpu(buf->v[0]) != key)
		return -EBADMSG;
	return 0;
}

static int phase_insert(struct btree_bench *b, bool rand)
{
	struct writer w;
	u64 i;
	int ret = writer_init(&w, b);

	for (i = 0; i < b->keys && !ret; i++)
		ret = writer_put(&w, bench_key(b->seed, rand, i), 0);
	if (!ret)
		ret = writer_commit(&w);
	writer_exit(&w);
	/* durable at the end of the phase, as mdb_env_sync() on the other side */
	return ret ?: bfs_core_flush(b->c);
}

static int phase_delete(struct btree_bench *b)
{
	struct writer w;
	u64 i;
	int ret = writer_init(&w, b);

	/* the random keys were made in random order: deleting by index is random */
	for (i = 0; i < b->keys && !ret; i++)
		ret = writer_del(&w, bench_key(b->seed, true, i));
	if (!ret)
		ret = writer_commit(&w);
	writer_exit(&w);
	return ret ?: bfs_core_flush(b->c);
}

static int check_scan_key(const struct btree_bench *b, const struct bfs_bkey *k, u64 n,
			  u64 *last)
{
	u64 off = le64_to_cpu(k->offset);

	if (n && off <= *last)
		return -EBADMSG;	/* out of order */
	if (k->type != BFS_KEY_COOKIE || le64_to_cpu(k->v[0]) != off)
		return -EBADMSG;
	*last = off;
	return 0;
}

static int phase_scan(struct btree_bench *b, u64 *ops)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 n = 0, last = 0;
	int ret;

	bfs_btree_iter_init(&it, b->c, BFS_BTREE_INODES, BFS_POS(BENCH_INODE, 0, 0),
			    BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		if (le64_to_cpu(k->inode) != BENCH_INODE)
			break;
		if (bfs_bkey_deleted(k))
			continue;
		ret = check_scan_key(b, k, n, &last);
		if (ret)
			break;
		n++;
	}
	bfs_btree_iter_exit(&it);
	*ops = n;
	return ret ?: (n == b->keys ? 0 : -EBADMSG);
}

/* lookups and mixed run in T threads, each on its own share and stream */
struct worker {
	struct btree_bench *b;
	enum bench_op op;
	unsigned thread;
	u64	ops;
	int	ret;
};

static int work_lookups(struct btree_bench *b, unsigned thread, u64 ops)
{
	u64 s = bench_stream_seed(b->seed, OP_RAND_LOOKUP, thread), i;
	struct bfs_bkey *buf = malloc((size_t)key_u64s(b) * 8);
	int ret = buf ? 0 : -ENOMEM;

	for (i = 0; i < ops && !ret; i++)
		ret = lookup_one(b, bench_key(b->seed, true, stream_next(&s) % b->keys), buf);
	free(buf);
	return ret;
}

static int work_mixed(struct btree_bench *b, unsigned thread, u64 ops)
{
	u64 s = bench_stream_seed(b->seed, OP_RAND_MIXED, thread), i;
	struct bfs_bkey *buf = malloc((size_t)key_u64s(b) * 8);
	struct writer w;
	int ret = writer_init(&w, b);

	if (!buf)
		ret = -ENOMEM;
	for (i = 0; i < ops && !ret; i++) {
		u64 x = stream_next(&s), key = bench_key(b->seed, true, (x >> 2) % b->keys);

		/* one op in four overwrites the key with a new value */
		ret = x & 3 ? lookup_one(b, key, buf) : writer_put(&w, key, 1);
	}
	if (!ret)
		ret = writer_commit(&w);
	writer_exit(&w);
	free(buf);
	return ret;
}

static void *worker_fn(void *arg)
{
	struct worker *wk = arg;

	wk->ret = wk->op == OP_RAND_LOOKUP ? work_lookups(wk->b, wk->thread, wk->ops) :
					     work_mixed(wk->b, wk->thread, wk->ops);
	return NULL;
}

/* run the workers, in this thread if there is only one */
static int run_workers(struct worker *wk, unsigned nr)
{
	pthread_t *tid;
	unsigned t, started = 0;
	int ret = 0;

	if (nr == 1) {
		worker_fn(wk);
		return wk->ret;
	}
	tid = calloc(nr, sizeof(*tid));
	if (!tid)
		return -ENOMEM;
	for (t = 0; t < nr; t++, started++) {
		ret = -pthread_create(&tid[t], NULL, worker_fn, &wk[t]);
		if (ret)
			break;
	}
	for (t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	for (t = 0; t < started && !ret; t++)
		ret = wk[t].ret;
	free(tid);
	return ret;
}

static int phase_parallel(struct btree_bench *b, enum bench_op op)
{
	struct worker *wk = calloc(b->threads, sizeof(*wk));
	unsigned t;
	int ret;

	if (!wk)
		return -ENOMEM;
	/* thread t does ops [N*t/T, N*(t+1)/T): every op exactly once */
	for (t = 0; t < b->threads; t++)
		wk[t] = (struct worker){ .b = b, .op = op, .thread = t,
			.ops = b->keys * (t + 1) / b->threads - b->keys * t / b->threads };
	ret = run_workers(wk, b->threads);
	free(wk);
	if (!ret && op == OP_RAND_MIXED)
		ret = bfs_core_flush(b->c);
	return ret;
}

/* ---- the image ---- */

static u64 image_size(const struct btree_bench *b)
{
	u64 want = b->keys * ((u64)key_u64s(b) * 8) * 16;

	return BFS_ROUND_UP(BFS_MAX(want, 8 * GiB), GiB);
}

static int image_create(const struct bfs_cmd *cmd, struct btree_bench *b)
{
	int ret = bench_image_create(cmd, b->image_opt, "bfs-bench", &b->image);

	if (!ret)
		b->image_size = image_size(b);
	return ret;
}

static void image_remove(struct btree_bench *b)
{
	bench_image_remove(&b->image);
}

static void core_close(struct btree_bench *b)
{
	if (b->c)
		bfs_core_close(b->c);
	b->c = NULL;
	if (b->dev)
		bfs_dev_close(b->dev);
	b->dev = NULL;
}

/*
 * The btree layers only, not bfs_mkfs(): the filesystem layer would put its
 * root directory into the inodes btree, and the benchmark wants that tree
 * empty and to itself.
 */
static int format_dev(struct bfs_dev *dev, char *err)
{
	struct bfs_format_opts fo = { 0 };
	struct bfs_sb *sb = calloc(1, BFS_SB_MAX_BYTES);
	int ret;

	if (!sb)
		return -ENOMEM;
	ret = bfs_sb_layout(&fo, bfs_dev_size(dev), bfs_dev_sector_size(dev), sb, err);
	if (!ret)
		ret = bfs_core_format(dev, sb);
	if (!ret)
		ret = bfs_mkfs_write(dev, sb);
	free(sb);
	return ret;
}

/* a freshly formatted, empty filesystem: every earlier block dropped first */
static int image_reset(const struct bfs_cmd *cmd, struct btree_bench *b)
{
	struct bfs_core_opts co = { .no_journal = b->no_journal, .cache_bytes = b->cache };
	char err[BFS_ERR_LEN] = "";
	int ret;

	core_close(b);
	if (truncate(b->image, 0))
		return bfs_cmd_error(cmd, "cannot truncate '%s': %s", b->image, strerror(errno));
	ret = bfs_image_create(b->image, b->image_size);
	if (!ret)
		ret = bfs_dev_open(b->image, BFS_DEV_EXCL, &b->dev);
	if (ret)
		return bfs_cmd_error(cmd, "cannot set up '%s': %s", b->image, strerror(-ret));
	ret = format_dev(b->dev, err);
	if (ret)
		return bfs_cmd_error(cmd, "cannot format '%s': %s", b->image,
				     *err ? err : strerror(-ret));
	ret = bfs_core_open(b->dev, &co, &b->c);
	if (ret) {
		b->c = NULL;
		return bfs_cmd_error(cmd, "cannot open '%s': %s", b->image, strerror(-ret));
	}
	if (key_u64s(b) > bfs_btree_max_key_u64s(b->c))
		return bfs_cmd_usage_error(cmd, "--value-size %u is too big for a btree node",
					   b->value_size);
	return 0;
}

/* ---- timing one phase ---- */

static u64 max_rss_bytes(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) ? 0 : (u64)ru.ru_maxrss * 1024;
}

/* stats_delta() walks the stats as an array of counters */
_Static_assert(sizeof(struct bfs_core_stats) % sizeof(u64) == 0, "bfs_core_stats is all u64");

static void stats_delta(struct bfs_core_stats *d, const struct bfs_core_stats *a,
			const struct bfs_core_stats *z)
{
	const u64 *pa = (const u64 *)a, *pz = (const u64 *)z;
	u64 *pd = (u64 *)d;
	size_t i;

	/* every field is a u64 counter or gauge; gauges' deltas are not shown */
	for (i = 0; i < sizeof(*d) / sizeof(u64); i++)
		pd[i] = pz[i] - pa[i];
}

static void phase_start(struct btree_bench *b, enum bench_op op)
{
	if (!b->json && bfs_progress_enabled())
		fprintf(stderr, "  %s...\r", op_names[op]);
	bfs_core_get_stats(b->c, &b->before);
	b->t0 = bfs_monotonic_ns();
}

static void phase_end(struct btree_bench *b, enum bench_op op, u64 ops)
{
	struct phase_result *r = &b->res[op];

	r->ns = bfs_monotonic_ns() - b->t0;
	r->ops = ops;
	r->max_rss = max_rss_bytes();
	bfs_core_get_stats(b->c, &r->stats);
	stats_delta(&r->delta, &b->before, &r->stats);
	if (!b->json && bfs_progress_enabled())
		fprintf(stderr, "%*s\r", 24, "");
}

static int phase_error(const struct bfs_cmd *cmd, enum bench_op op, int ret)
{
	if (ret == -EBADMSG)
		return bfs_cmd_error(cmd, "%s: the btree returned wrong data", op_names[op]);
	return bfs_cmd_error(cmd, "%s: %s", op_names[op], strerror(-ret));
}

static int run_phases(const struct bfs_cmd *cmd, struct btree_bench *b)
{
	u64 ops;
	int ret, op;

	for (op = 0; op < OP_NR; op++) {
		/* each insert phase starts from an empty filesystem */
		if (op == OP_SEQ_INSERT || op == OP_RAND_INSERT) {
			ret = image_reset(cmd, b);
			if (ret)
				return ret;
		}
		ops = b->keys;
		phase_start(b, op);
		switch (op) {
		case OP_SEQ_INSERT:
		case OP_RAND_INSERT:
			ret = phase_insert(b, op == OP_RAND_INSERT);
			break;
		case OP_SEQ_SCAN:
			ret = phase_scan(b, &ops);
			break;
		case OP_RAND_DELETE:
			ret = phase_delete(b);
			break;
		default:
			ret = phase_parallel(b, op);
			break;
		}
		phase_end(b, op, ops);
		if (ret)
			return phase_error(cmd, op, ret);
	}
	return 0;
}

/* ---- output ---- */

static void describe_config(struct bfs_out *o, const struct btree_bench *b)
{
	out_str(o, "benchmark", "Benchmark", "btree");
	out_u64(o, "keys", "Keys", b->keys);
	out_size(o, "value_size", "Value size", b->value_size);
	out_u64(o, "threads", "Threads", b->threads);
	out_u64(o, "batch", "Ops per transaction", b->batch);
	out_u64(o, "seed", "Seed", b->seed);
	out_hex(o, "key_digest", "Random key set digest", b->digest);
	o->rows[o->nr - 1].flags |= OUT_JSON_ONLY;
	out_bool(o, "journal", "Journal", !b->no_journal);
	out_size(o, "cache_budget", "Node cache budget", b->res[OP_SEQ_INSERT].stats.cache_budget);
	out_size(o, "image_size", "Image size (sparse)", b->image_size);
}

static void describe_result(struct bfs_out *o, enum bench_op op, const struct phase_result *r)
{
	out_object(o, NULL, NULL);
	out_str(o, "op", "Operation", "%s", op_names[op]);
	out_u64(o, "ops", "Ops", r->ops);
	out_u64(o, "total_ns", "Time (ns)", r->ns);
	out_u64(o, "ns_per_op", "ns/op", bench_ns_per_op(r->ns, r->ops));
	out_u64(o, "ops_per_sec", "ops/s", bench_per_sec(r->ops, r->ns));
	out_size(o, "max_rss", "Peak RSS so far", r->max_rss);
	out_size(o, "cache_bytes", "Node cache", r->stats.cache_bytes);
	/* what the phase cost below the btree: the "why" of a number */
	out_u64(o, "commits", "Commits", r->delta.commits);
	out_u64(o, "commits_parallel", "Commits in parallel", r->delta.commits_parallel);
	out_u64(o, "node_reads", "Node reads", r->delta.node_reads);
	out_u64(o, "node_writes", "Node writes", r->delta.node_writes);
	out_size(o, "node_write_bytes", "Node bytes written", r->delta.node_write_bytes);
	out_u64(o, "cache_misses", "Cache misses", r->delta.cache_misses);
	out_u64(o, "splits", "Splits", r->delta.splits);
	out_u64(o, "merges", "Merges", r->delta.merges);
	out_u64(o, "compactions", "Compactions", r->delta.compactions);
	out_u64(o, "checkpoints", "Checkpoints", r->delta.checkpoints);
	out_u64(o, "meta_slots_used", "Node slots used", r->stats.meta_slots_used);
	out_u64(o, "meta_slots_total", "Node slots", r->stats.meta_slots_total);
	out_end(o);
}

static void print_table(const struct btree_bench *b)
{
	char h1[32], h2[32];
	int op;

	printf("\n%-12s %12s %10s %12s %12s %12s\n", "op", "ops", "ns/op", "ops/s",
	       "peak RSS", "node cache");
	for (op = 0; op < OP_NR; op++) {
		const struct phase_result *r = &b->res[op];

		printf("%-12s %12" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12s %12s\n",
		       op_names[op], r->ops, bench_ns_per_op(r->ns, r->ops), bench_per_sec(r->ops, r->ns),
		       bfs_human_size(r->max_rss, h1), bfs_human_size(r->stats.cache_bytes, h2));
	}
}

static void print_results(const struct btree_bench *b)
{
	struct bfs_out o = { 0 };
	int op;

	describe_config(&o, b);
	out_array(&o, "results", "Results");
	/* text shows the results as a table instead */
	o.rows[o.nr - 1].flags |= OUT_JSON_ONLY;
	for (op = 0; op < OP_NR; op++)
		describe_result(&o, op, &b->res[op]);
	out_end(&o);
	out_size(&o, "peak_rss", "Peak RSS", b->res[OP_NR - 1].max_rss);
	out_print(&o, stdout, b->json);
	out_free(&o);
	if (!b->json)
		print_table(b);
}

/* ---- options ---- */

static const struct bfs_opt bench_opts[] = {
	BFS_OPT("keys", 'n', 0, "N", "btree: keys per phase (default 1000000; k, M, G suffixes)"),
	BFS_OPT("threads", 't', 0, "T",
		"btree: threads for rand_lookup and rand_mixed (default 1);\n"
		"fs: threads issuing random I/O (default 16)"),
	BFS_OPT("value-size", 0, BENCH_OPT_VALUE_SIZE, "BYTES",
		"btree: value bytes per key, a multiple of 8 (default 16)"),
	BFS_OPT("batch", 0, BENCH_OPT_BATCH, "K", "btree: updates per transaction (default 1)"),
	BFS_OPT("cache", 0, BENCH_OPT_CACHE, "SIZE",
		"btree: node cache budget (default: the library's default)"),
	BFS_OPT("no-journal", 0, BENCH_OPT_NO_JOURNAL, NULL,
		"btree: open without the journal (durable only at flush)"),
	BFS_OPT("size-scale", 0, BENCH_OPT_SIZE_SCALE, "N",
		"fs: divide every size by N (default 1: full size)"),
	BFS_OPT("workload", 0, BENCH_OPT_WORKLOAD, "NAME",
		"fs: run only these (comma-separated; default all but\ncreatesync and creates)",
		.values = BFS_VAL_LIST, .words = "append randwrite randread smallfiles objects seqread createsync creates"),
	BFS_OPT("jobs", 0, BENCH_OPT_JOBS, "J", "fs: append jobs, createsync/creates threads (default 8)"),
	BFS_OPT("fsync-every", 0, BENCH_OPT_FSYNC_EVERY, "K",
		"fs: objects: fsync the log every K appends (default 8)"),
	BFS_OPT("direct", 0, BENCH_OPT_DIRECT, NULL, "fs: open the image with O_DIRECT where its\n"
		"filesystem allows it (default: through the page cache)"),
	BFS_OPT("data-chunk", 0, BENCH_OPT_DATA_CHUNK, "SIZE",
		"fs: format with this data chunk size (bfs-format(8))",
		.values = BFS_VAL_WORDS, .words = BFS_WORDS_DATA_CHUNK),
	BFS_OPT("seed", 0, BENCH_OPT_SEED, "S",
		"seed of the key sets, sizes, offsets and the tree\n"
		"(default 42)"),
	BFS_OPT("image", 0, BENCH_OPT_IMAGE, "PATH",
		"create the image here (must not exist; removed\n"
		"after); default: a temporary file in $TMPDIR or /tmp", .values = BFS_VAL_FILE),
	BFS_OPT("json", 'j', 0, NULL, "print JSON (keys are listed in bfs-bench(8))"),
	{ 0 }
};

/* "1000000", "1M", "10m", "20k": counts take decimal suffixes (powers of 1000) */

static int parse_opt(const struct bfs_cmd *cmd, struct btree_bench *b, int c,
		     const struct bfs_opt *row)
{
	u64 v = 0;

	switch (c) {
	case 'n':
		if (bench_parse_count(optarg, 1, UINT32_MAX, &b->keys))
			return bfs_cmd_usage_error(cmd, "invalid key count '%s'", optarg);
		return 0;
	case 't':
		if (bench_parse_count(optarg, 1, 1024, &v))
			return bfs_cmd_usage_error(cmd, "invalid thread count '%s' (1 to 1024)",
						   optarg);
		b->threads = (unsigned)v;
		return 0;
	case BENCH_OPT_VALUE_SIZE:
		if (bfs_parse_size(optarg, &v) || v < 8 || v > 4096 || v % 8)
			return bfs_cmd_usage_error(cmd, "invalid value size '%s' "
						   "(a multiple of 8 from 8 to 4096)", optarg);
		b->value_size = (unsigned)v;
		return 0;
	case BENCH_OPT_BATCH:
		if (bench_parse_count(optarg, 1, 1000000, &v))
			return bfs_cmd_usage_error(cmd, "invalid batch '%s' (1 to 1000000)",
						   optarg);
		b->batch = (unsigned)v;
		return 0;
	case BENCH_OPT_SEED:
		if (bench_parse_count(optarg, 0, UINT64_MAX, &b->seed))
			return bfs_cmd_usage_error(cmd, "invalid seed '%s'", optarg);
		return 0;
	case BENCH_OPT_CACHE:
		if (bfs_parse_size(optarg, &b->cache) || b->cache < MiB)
			return bfs_cmd_usage_error(cmd, "invalid cache size '%s' (at least 1M)",
						   optarg);
		return 0;
	case BENCH_OPT_IMAGE:
		b->image_opt = optarg;
		return 0;
	case BENCH_OPT_NO_JOURNAL:
		b->no_journal = true;
		return 0;
	case 'j':
		b->json = true;
		return 0;
	default:
		return bench_opt_refused(cmd, row, "btree");
	}
}

static u64 key_digest(const struct btree_bench *b)
{
	u64 h = 0, i;

	for (i = 0; i < b->keys; i++)
		h = bench_mix64(h ^ bench_key(b->seed, true, i));
	return h;
}

static int bench_btree(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct btree_bench b = {
		.keys = 1000000, .seed = BENCH_DEFAULT_SEED, .threads = 1, .batch = 1,
		.value_size = 16,
	};
	const struct bfs_opt *row;
	int c, ret;

	while ((c = bfs_cmd_getopt(cmd, argc, argv, &row)) != -1) {
		ret = parse_opt(cmd, &b, c, row);
		if (ret)
			return ret;
	}
	if (optind != argc)
		return bfs_cmd_usage_error(cmd, "unexpected argument '%s'", argv[optind]);

	b.digest = key_digest(&b);
	ret = image_create(cmd, &b);
	if (!ret)
		ret = run_phases(cmd, &b);
	if (!ret)
		print_results(&b);
	core_close(&b);
	image_remove(&b);
	return ret;
}

/* ---- the benchmark table ---- */

struct bench {
	const char *name;
	int (*run)(const struct bfs_cmd *cmd, int argc, char **argv);
};

static const struct bench benches[] = {
	{ "btree", bench_btree },
	{ "fs", bfs_bench_fs },
};

static void list_benches(char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = 0;
	for (i = 0; i < ARRAY_SIZE(benches) && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
					benches[i].name);
}

static int cmd_bench(const struct bfs_cmd *cmd, int argc, char **argv)
{
	char names[128];
	size_t i;

	list_benches(names, sizeof(names));
	if (argc < 2 || argv[1][0] == '-')
		return bfs_cmd_usage_error(cmd, "no benchmark given (%s)", names);
	for (i = 0; i < ARRAY_SIZE(benches); i++)
		if (!strcmp(argv[1], benches[i].name))
			/* the benchmark parses its options as a command of its own */
			return benches[i].run(cmd, argc - 1, argv + 1);
	return bfs_cmd_usage_error(cmd, "unknown benchmark '%s' (%s)", argv[1], names);
}

const struct bfs_cmd bfs_cmd_bench = {
	.name = "bench",
	.fn = cmd_bench,
	.summary = "measure the speed of libcore (btree, fs)",
	.synopsis = "BENCHMARK [options]",
	.help_head =
	"Benchmarks:\n"
	"  btree             inserts, lookups, a scan, mixed ops and deletes on a fresh\n"
	"                    image: seq_insert rand_insert rand_lookup seq_scan\n"
	"                    rand_mixed rand_delete, in ns/op and ops/s\n"
	BFS_BENCH_FS_HELP,
	.opts_title = "Options (btree: and fs: mark the options of one benchmark)",
	.opts = bench_opts,
	.help =
	"bench/btree-vs-lmdb runs the same key sets through LMDB and prints the\n"
	"ratio per operation.  Speed is never asserted: the numbers are for people.\n",
	.args = BFS_ARG_WORDS,
	.arg_words = "btree fs",
};
