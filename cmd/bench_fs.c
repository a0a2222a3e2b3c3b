// SPDX-License-Identifier: MIT
/*
 * bfs bench fs: the filesystem workloads users quote, run in-process through
 * the library (no FUSE, no kernel) on a freshly formatted sparse image:
 *
 *   append      J jobs (threads), each appending writes of a random size
 *               (4 KiB to 256 KiB in 4 KiB steps) at the end of its own file,
 *               then fsync.  fio's direct-I/O append job on a mount; there is
 *               no page cache in-process, so every write already goes
 *               straight to the filesystem, which is what O_DIRECT asks for.
 *   randwrite   4 KiB writes at random aligned offsets of a 1 GiB file that
 *               was written sequentially first (untimed), then fsync.  The
 *               library is synchronous: T threads (default 16) each with one
 *               write in flight stand in for fio's iodepth=64 on 2-8 CPUs;
 *               what counts is that the filesystem always has work queued.
 *   randread    4 KiB reads at random aligned offsets of the same file.
 *   seqread     the same file read front to back in 128 KiB reads (what a
 *               FUSE read request carries) by one thread.
 *   smallfiles  unpack a kernel-like tree (directories of ~50 files, sizes
 *               log-normal around 3 KiB, ~10 KiB mean: 20k files and ~200 MiB
 *               at full size), one write per file like tar, then sync.
 *   objects     4 MiB objects, each written in 1 MiB pieces and given a
 *               user.meta xattr, plus a 4 KiB record appended to a log file
 *               per object and an fsync of the log every K records; sync.
 *
 * Two more run only when asked for (--workload), for the commit path:
 *   createsync  J threads, each creating empty files in its own directory
 *               with an fsync after every create (mail spools, package
 *               managers): how well concurrent fsyncs share journal writes.
 *   creates     J threads creating empty files in their own directories,
 *               one sync at the end: whether writers to different leaves
 *               scale over one.
 *
 * Sizes, offsets and the tree are a function of the seed alone, and
 * bench/fs_tree_gen.py builds exactly the same tree and objects on a mounted
 * filesystem, so bench/fs-vs-peers compares like with like.
 */
#include "bench_fs.h"
#include "bench.h"
#include "lazy_lib.h"
#include "cmd.h"
#include "output.h"

#include <bfs/extent_format.h>
#include <bfs/fs.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/probe.h>
#include <bfs/super.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- workloads and their full sizes (divided by --size-scale) ---- */

/* the values seed the streams (bench/fs_tree_gen.py mirrors them): new ones go last */
enum fs_workload {
	W_APPEND, W_RANDWRITE, W_RANDREAD, W_SMALLFILES, W_OBJECTS, W_SEQREAD,
	W_DEFAULT_NR,				/* the ones after run only when named */
	W_CREATESYNC = W_DEFAULT_NR, W_CREATES, W_NR
};

static const char *const w_names[W_NR] = {
	"append", "randwrite", "randread", "smallfiles", "objects", "seqread", "createsync",
	"creates",
};

#define FULL_APPEND_BYTES	(2 * GiB)	/* over all jobs */
#define FULL_RAND_FILE		GiB
#define FULL_RAND_OPS		262144		/* each of randwrite, randread */
#define FULL_SMALL_FILES	20000
#define FULL_OBJECTS		256
#define FULL_CREATESYNC		8192		/* files over all threads */
#define FULL_CREATES		200000

#define IO_SIZE			4096
#define SEQ_READ_SIZE		(128 * 1024)
#define APPEND_MAX		(256 * 1024)
#define OBJECT_SIZE		(4 * MiB)
#define OBJECT_PIECE		MiB		/* what a 1 MiB FUSE request carries */
#define FILES_PER_DIR		50
#define DIRS_PER_GROUP		16
#define SMALL_MEDIAN		3000.0		/* bytes */
#define SMALL_SIGMA		1.5
#define SMALL_MAX		MiB
#define DATA_BUF		(2 * MiB)	/* random bytes every write takes a slice of */

struct result {
	bool	ran;
	u64	ops;		/* writes, reads, files or objects */
	u64	bytes;
	u64	ns;
	u64	fsyncs;		/* fsync/sync calls inside the timed part */
	u64	max_op_ns;	/* createsync, creates: the slowest single operation */
	unsigned threads;
};

struct fs_bench {
	/* options */
	u64	scale;
	u64	seed;
	unsigned jobs;
	unsigned threads;
	unsigned fsync_every;
	bool	want[W_NR];
	bool	json;
	bool	direct;		/* --direct */
	u32	data_chunk;	/* --data-chunk; 0: the format default */
	bool	is_direct;	/* what the image's filesystem allowed */
	const char *image_opt;
	/* state */
	char	*image;
	u64	image_size;
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	u8	*data;
	u64	rand_ino;	/* the 1 GiB file, once written */
	u64	rand_size;
	struct result res[W_NR];
};

static const struct bfs_creds root_creds = { 0, 0 };

/* ---- deterministic randomness (mirrored in bench/fs_tree_gen.py) ---- */

#define GAMMA	UINT64_C(0x9e3779b97f4a7c15)


/* stream @id of the run: one per workload and thread */

static u64 next_u64(u64 *s)
{
	return bench_mix64(*s += GAMMA);
}

/* uniform in (0, 1]: never 0, so log() is safe */
static double next_unit(u64 *s)
{
	return (double)((next_u64(s) >> 11) + 1) * 0x1.0p-53;
}

/* log-normal file size of the small-files tree (Box-Muller) */
static u64 small_file_size(u64 *s)
{
	double u1 = next_unit(s), u2 = next_unit(s);
	double z = lazy_m_sqrt(-2.0 * lazy_m_log(u1)) * lazy_m_cos(2.0 * M_PI * u2);
	double v = lazy_m_floor(SMALL_MEDIAN * lazy_m_exp(SMALL_SIGMA * z));

	return v > (double)SMALL_MAX ? SMALL_MAX : (u64)v;
}

/* 4 KiB to 256 KiB in 4 KiB steps */
static u64 append_size(u64 *s)
{
	return IO_SIZE * (1 + next_u64(s) % (APPEND_MAX / IO_SIZE));
}

/* a slice of the random buffer, different for each write */
static const u8 *data_at(const struct fs_bench *b, u64 n, u64 len)
{
	return b->data + (n * IO_SIZE * 7) % (DATA_BUF - len + 1) / IO_SIZE * IO_SIZE;
}

/* ---- sizes ---- */

static u64 scaled(const struct fs_bench *b, u64 full, u64 min)
{
	return BFS_MAX(full / b->scale, min);
}

static u64 append_total(const struct fs_bench *b)
{
	return scaled(b, FULL_APPEND_BYTES, (u64)b->jobs * APPEND_MAX);
}

static u64 rand_file_size(const struct fs_bench *b)
{
	return BFS_ROUND_UP(scaled(b, FULL_RAND_FILE, 4 * MiB), MiB);
}

static u64 rand_ops(const struct fs_bench *b)
{
	return scaled(b, FULL_RAND_OPS, b->threads);
}

static u64 small_files(const struct fs_bench *b)
{
	return scaled(b, FULL_SMALL_FILES, 10);
}

static u64 objects(const struct fs_bench *b)
{
	return scaled(b, FULL_OBJECTS, 2);
}

/* ---- helpers over the filesystem API ---- */

static u64 create_files(const struct fs_bench *b, bool sync)
{
	return scaled(b, sync ? FULL_CREATESYNC : FULL_CREATES, b->jobs);
}

static int create_in(struct bfs_fs *fs, u64 dir, const char *name, bool is_dir, u64 *ino)
{
	struct bfs_stat st;
	int ret = is_dir ?
		bfs_fs_mkdir(fs, dir, name, strlen(name), 0755, &root_creds, &st) :
		bfs_fs_mknod(fs, dir, name, strlen(name), S_IFREG | 0644, 0, &root_creds, &st);

	if (!ret)
		*ino = st.ino;
	return ret;
}

/* all of @len at @off, or an error: a short write would be a bug */
static int write_all(struct bfs_fs *fs, u64 ino, const void *buf, u64 len, u64 off)
{
	ssize_t n = bfs_fs_write(fs, ino, buf, len, off);

	if (n < 0)
		return (int)n;
	return (u64)n == len ? 0 : -EIO;
}

/* ---- running threads ---- */

struct job {
	struct fs_bench *b;
	unsigned idx;
	u64	ino;
	u64	ops;		/* to do, then done */
	u64	bytes;
	u64	fsyncs;
	u64	max_op_ns;
	int	ret;
};

/* run @fn on @nr jobs at once; the first error of any job */
static int run_jobs(struct job *jobs, unsigned nr, void *(*fn)(void *))
{
	pthread_t *tid = calloc(nr, sizeof(*tid));
	unsigned i, started = 0;
	int ret = 0;

	if (!tid)
		return -ENOMEM;
	for (i = 0; i < nr; i++, started++)
		if (pthread_create(&tid[i], NULL, fn, &jobs[i]))
			break;
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (started < nr)
		ret = -EAGAIN;
	for (i = 0; i < started && !ret; i++)
		ret = jobs[i].ret;
	free(tid);
	return ret;
}

static void sum_jobs(struct result *r, const struct job *jobs, unsigned nr)
{
	unsigned i;

	for (i = 0; i < nr; i++) {
		r->ops += jobs[i].ops;
		r->bytes += jobs[i].bytes;
		r->fsyncs += jobs[i].fsyncs;
		r->max_op_ns = BFS_MAX(r->max_op_ns, jobs[i].max_op_ns);
	}
	r->threads = nr;
}

/* ---- append ---- */

static void *append_job(void *arg)
{
	struct job *j = arg;
	struct fs_bench *b = j->b;
	u64 s = bench_stream_seed(b->seed, W_APPEND, j->idx), want = j->bytes, off = 0, n = 0;
	int ret = 0;

	while (off < want && !ret) {
		u64 len = append_size(&s);

		/* the last write of a job is cut to its share */
		len = BFS_MIN(len, want - off);
		ret = write_all(b->fs, j->ino, data_at(b, n + j->idx, len), len, off);
		off += len;
		n++;
	}
	/* fio's end_fsync=1: the appended data is durable when the job ends */
	if (!ret)
		ret = bfs_fs_fsync(b->fs, j->ino, false);
	j->ops = n;
	j->bytes = off;
	j->fsyncs = 1;
	j->ret = ret;
	return NULL;
}

/* the files are created before the clock starts, as fio lays out its jobs */
static int setup_append(struct fs_bench *b, struct job *jobs)
{
	u64 dir, total = append_total(b);
	char name[32];
	unsigned i;
	int ret = create_in(b->fs, BFS_ROOT_INO, "append", true, &dir);

	for (i = 0; i < b->jobs && !ret; i++) {
		snprintf(name, sizeof(name), "job%u", i);
		jobs[i] = (struct job){ .b = b, .idx = i,
			.bytes = BFS_ROUND_DOWN(total / b->jobs, IO_SIZE) };
		ret = create_in(b->fs, dir, name, false, &jobs[i].ino);
	}
	return ret;
}

static int run_append(struct fs_bench *b, struct result *r)
{
	struct job *jobs = calloc(b->jobs, sizeof(*jobs));
	u64 t0;
	int ret;

	if (!jobs)
		return -ENOMEM;
	ret = setup_append(b, jobs);
	if (!ret) {
		t0 = bfs_monotonic_ns();
		ret = run_jobs(jobs, b->jobs, append_job);
		r->ns = bfs_monotonic_ns() - t0;
		sum_jobs(r, jobs, b->jobs);
	}
	free(jobs);
	return ret;
}

/* ---- randwrite, randread ---- */

/* written sequentially in 1 MiB pieces and made durable, untimed (fio's layout) */
static int setup_rand_file(struct fs_bench *b)
{
	u64 off, size = rand_file_size(b);
	int ret;

	if (b->rand_ino)
		return 0;
	ret = create_in(b->fs, BFS_ROOT_INO, "random", false, &b->rand_ino);
	for (off = 0; off < size && !ret; off += MiB)
		ret = write_all(b->fs, b->rand_ino, data_at(b, off / MiB, MiB), MiB, off);
	if (!ret)
		ret = bfs_fs_fsync(b->fs, b->rand_ino, false);
	b->rand_size = size;
	return ret;
}

static void *rand_job(void *arg, bool write)
{
	struct job *j = arg;
	struct fs_bench *b = j->b;
	u64 s = bench_stream_seed(b->seed, write ? W_RANDWRITE : W_RANDREAD, j->idx), i;
	u64 blocks = b->rand_size / IO_SIZE;
	u8 buf[IO_SIZE];
	ssize_t n;
	int ret = 0;

	for (i = 0; i < j->ops && !ret; i++) {
		u64 off = next_u64(&s) % blocks * IO_SIZE;

		if (write) {
			ret = write_all(b->fs, b->rand_ino, data_at(b, i + j->idx, IO_SIZE),
					IO_SIZE, off);
		} else {
			n = bfs_fs_read(b->fs, b->rand_ino, buf, IO_SIZE, off);
			ret = n < 0 ? (int)n : n == IO_SIZE ? 0 : -EIO;
		}
	}
	j->bytes = i * IO_SIZE;
	j->ret = ret;
	return NULL;
}

static void *randwrite_job(void *arg)
{
	return rand_job(arg, true);
}

static void *randread_job(void *arg)
{
	return rand_job(arg, false);
}

static int run_rand(struct fs_bench *b, struct result *r, bool write)
{
	struct job *jobs = calloc(b->threads, sizeof(*jobs));
	u64 t0, ops = rand_ops(b);
	unsigned i;
	int ret;

	if (!jobs)
		return -ENOMEM;
	ret = setup_rand_file(b);
	for (i = 0; i < b->threads; i++)
		jobs[i] = (struct job){ .b = b, .idx = i,
			.ops = ops * (i + 1) / b->threads - ops * i / b->threads };
	if (!ret) {
		t0 = bfs_monotonic_ns();
		ret = run_jobs(jobs, b->threads, write ? randwrite_job : randread_job);
		/* durable at the end, as fio's end_fsync=1 */
		if (!ret && write)
			ret = bfs_fs_fsync(b->fs, b->rand_ino, false);
		r->ns = bfs_monotonic_ns() - t0;
		sum_jobs(r, jobs, b->threads);
		r->fsyncs = write;
	}
	free(jobs);
	return ret;
}

/* one thread reads the random-I/O file front to back */
static int run_seqread(struct fs_bench *b, struct result *r)
{
	u8 *buf = malloc(SEQ_READ_SIZE);
	u64 off = 0, t0;
	ssize_t n = 0;
	int ret = buf ? setup_rand_file(b) : -ENOMEM;

	t0 = bfs_monotonic_ns();
	for (; !ret && off < b->rand_size; off += (u64)n, r->ops++) {
		n = bfs_fs_read(b->fs, b->rand_ino, buf, SEQ_READ_SIZE, off);
		ret = n < 0 ? (int)n : n ? 0 : -EIO;
	}
	r->ns = bfs_monotonic_ns() - t0;
	r->bytes = off;
	r->threads = 1;
	free(buf);
	return ret;
}

/* ---- smallfiles ---- */

/* directory k of the tree: tree/gG/dK, 16 directories per group */
static int small_dir(struct fs_bench *b, u64 tree, u64 k, u64 *group, u64 *dir)
{
	char name[32];
	int ret = 0;

	if (k % DIRS_PER_GROUP == 0) {
		snprintf(name, sizeof(name), "g%03" PRIu64, k / DIRS_PER_GROUP);
		ret = create_in(b->fs, tree, name, true, group);
	}
	snprintf(name, sizeof(name), "d%05" PRIu64, k);
	return ret ?: create_in(b->fs, *group, name, true, dir);
}

static int run_smallfiles(struct fs_bench *b, struct result *r)
{
	u64 s = bench_stream_seed(b->seed, W_SMALLFILES, 0), nr = small_files(b);
	u64 tree, group = 0, dir = 0, ino, i, t0 = bfs_monotonic_ns();
	char name[32];
	int ret = create_in(b->fs, BFS_ROOT_INO, "tree", true, &tree);

	for (i = 0; i < nr && !ret; i++) {
		u64 len = small_file_size(&s);

		if (i % FILES_PER_DIR == 0)
			ret = small_dir(b, tree, i / FILES_PER_DIR, &group, &dir);
		snprintf(name, sizeof(name), "f%02" PRIu64 ".c", i % FILES_PER_DIR);
		if (!ret)
			ret = create_in(b->fs, dir, name, false, &ino);
		if (!ret && len)
			ret = write_all(b->fs, ino, data_at(b, i, len), len, 0);
		r->bytes += len;
	}
	/* unpacked and then sync(1): the whole tree durable */
	if (!ret)
		ret = bfs_fs_sync(b->fs);
	r->ns = bfs_monotonic_ns() - t0;
	r->ops = i;
	r->fsyncs = 1;
	r->threads = 1;
	return ret;
}

/* ---- objects ---- */

static int put_object(struct fs_bench *b, u64 dir, u64 i)
{
	char name[32], meta[160];
	u64 ino, off;
	int ret, len;

	snprintf(name, sizeof(name), "o%06" PRIu64, i);
	ret = create_in(b->fs, dir, name, false, &ino);
	for (off = 0; off < OBJECT_SIZE && !ret; off += OBJECT_PIECE)
		ret = write_all(b->fs, ino, data_at(b, i + off / OBJECT_PIECE, OBJECT_PIECE),
				OBJECT_PIECE, off);
	/* what an object store keeps next to the data: type, checksum, owner */
	len = snprintf(meta, sizeof(meta), "{\"content-type\":\"application/octet-stream\","
		       "\"etag\":\"%016" PRIx64 "%016" PRIx64 "\",\"size\":%" PRIu64 "}",
		       bench_mix64(i), bench_mix64(~i), (u64)OBJECT_SIZE);
	return ret ?: bfs_fs_setxattr(b->fs, ino, "user.meta", meta, (size_t)len, 0);
}

static int run_objects(struct fs_bench *b, struct result *r)
{
	u64 nr = objects(b), dir, log, i, t0 = bfs_monotonic_ns();
	int ret = create_in(b->fs, BFS_ROOT_INO, "objects", true, &dir);

	if (!ret)
		ret = create_in(b->fs, BFS_ROOT_INO, "objects.log", false, &log);
	for (i = 0; i < nr && !ret; i++) {
		ret = put_object(b, dir, i);
		if (!ret)
			ret = write_all(b->fs, log, data_at(b, i, IO_SIZE), IO_SIZE, i * IO_SIZE);
		r->bytes += OBJECT_SIZE + IO_SIZE;
		/* the log is the commit point: made durable every K records */
		if (!ret && (i + 1) % b->fsync_every == 0) {
			ret = bfs_fs_fsync(b->fs, log, false);
			r->fsyncs++;
		}
	}
	if (!ret) {
		ret = bfs_fs_sync(b->fs);
		r->fsyncs++;
	}
	r->ns = bfs_monotonic_ns() - t0;
	r->ops = i;
	r->threads = 1;
	return ret;
}

/* ---- createsync, creates ---- */

static void *create_job(void *arg, bool sync)
{
	struct job *j = arg;
	struct fs_bench *b = j->b;
	char name[32];
	u64 i, ino;
	int ret = 0;

	for (i = 0; i < j->ops && !ret; i++) {
		u64 t0 = bfs_monotonic_ns();

		snprintf(name, sizeof(name), "f%07" PRIu64, i);
		ret = create_in(b->fs, j->ino, name, false, &ino);
		if (!ret && sync) {
			ret = bfs_fs_fsync(b->fs, ino, false);
			j->fsyncs++;
		}
		/* a writer held up by a checkpoint shows here, not in the mean */
		j->max_op_ns = BFS_MAX(j->max_op_ns, bfs_monotonic_ns() - t0);
	}
	j->ops = i;
	j->ret = ret;
	return NULL;
}

static void *createsync_job(void *arg)
{
	return create_job(arg, true);
}

static void *creates_job(void *arg)
{
	return create_job(arg, false);
}

/* one directory per thread, made before the clock starts */
static int run_create(struct fs_bench *b, struct result *r, bool sync)
{
	struct job *jobs = calloc(b->jobs, sizeof(*jobs));
	u64 top, nr = create_files(b, sync), t0;
	char name[32];
	unsigned i;
	int ret = jobs ? 0 : -ENOMEM;

	if (!ret)
		ret = create_in(b->fs, BFS_ROOT_INO, w_names[sync ? W_CREATESYNC : W_CREATES],
				true, &top);
	for (i = 0; i < b->jobs && !ret; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		jobs[i] = (struct job){ .b = b, .idx = i,
			.ops = nr * (i + 1) / b->jobs - nr * i / b->jobs };
		ret = create_in(b->fs, top, name, true, &jobs[i].ino);
	}
	if (!ret)
		ret = bfs_fs_sync(b->fs);
	t0 = bfs_monotonic_ns();
	if (!ret)
		ret = run_jobs(jobs, b->jobs, sync ? createsync_job : creates_job);
	if (!ret && !sync)
		ret = bfs_fs_sync(b->fs);
	r->ns = bfs_monotonic_ns() - t0;
	if (jobs)
		sum_jobs(r, jobs, b->jobs);
	r->fsyncs += !sync;
	free(jobs);
	return ret;
}

/* ---- the image ---- */

static u64 image_size(const struct fs_bench *b)
{
	u64 want = append_total(b) + rand_file_size(b) + rand_ops(b) * IO_SIZE +
		   small_files(b) * 16 * 1024 + objects(b) * (OBJECT_SIZE + IO_SIZE);

	return BFS_ROUND_UP(BFS_MAX(want * 4, 8 * GiB), GiB);
}

static int image_create(const struct bfs_cmd *cmd, struct fs_bench *b)
{
	int ret = bench_image_create(cmd, b->image_opt, "bfs-bench-fs", &b->image);

	if (!ret)
		b->image_size = image_size(b);
	return ret;
}

static int format_and_open(const struct bfs_cmd *cmd, struct fs_bench *b)
{
	struct bfs_format_opts fo = { .data_chunk = b->data_chunk };
	char err[BFS_ERR_LEN] = "";
	struct bfs_sb *sb;
	int ret = bfs_image_create(b->image, b->image_size);

	if (!ret)
		ret = bfs_dev_open(b->image, BFS_DEV_EXCL | (b->direct ? BFS_DEV_DIRECT_TRY : 0), &b->dev);
	if (!ret)
		b->is_direct = bfs_dev_is_direct(b->dev);
	if (ret)
		return bfs_cmd_error(cmd, "cannot set up '%s': %s", b->image, strerror(-ret));
	sb = calloc(1, BFS_SB_MAX_BYTES);
	ret = sb ? bfs_sb_layout(&fo, bfs_dev_size(b->dev), bfs_dev_sector_size(b->dev), sb,
				 err) : -ENOMEM;
	if (!ret)
		ret = bfs_mkfs(b->dev, sb);
	free(sb);
	if (ret)
		return bfs_cmd_error(cmd, "cannot format '%s': %s", b->image,
				     *err ? err : strerror(-ret));
	ret = bfs_fs_open(b->dev, NULL, &b->fs);
	if (ret) {
		b->fs = NULL;
		return bfs_cmd_error(cmd, "cannot open '%s': %s", b->image, strerror(-ret));
	}
	return 0;
}

static int close_fs(const struct bfs_cmd *cmd, struct fs_bench *b)
{
	int ret = 0;

	if (b->fs)
		ret = bfs_fs_close(b->fs);
	b->fs = NULL;
	if (b->dev)
		bfs_dev_close(b->dev);
	b->dev = NULL;
	return ret ? bfs_cmd_error(cmd, "closing the filesystem: %s", strerror(-ret)) : 0;
}

static void image_remove(struct fs_bench *b)
{
	bench_image_remove(&b->image);
}

/* ---- running the workloads ---- */

static int run_one(struct fs_bench *b, enum fs_workload w, struct result *r)
{
	switch (w) {
	case W_APPEND:
		return run_append(b, r);
	case W_RANDWRITE:
		return run_rand(b, r, true);
	case W_RANDREAD:
		return run_rand(b, r, false);
	case W_SMALLFILES:
		return run_smallfiles(b, r);
	case W_SEQREAD:
		return run_seqread(b, r);
	case W_CREATESYNC:
		return run_create(b, r, true);
	case W_CREATES:
		return run_create(b, r, false);
	default:
		return run_objects(b, r);
	}
}

static int run_workloads(const struct bfs_cmd *cmd, struct fs_bench *b)
{
	unsigned w;
	int ret;

	for (w = 0; w < W_NR; w++) {
		if (!b->want[w])
			continue;
		if (!b->json && bfs_progress_enabled())
			fprintf(stderr, "  %s...\r", w_names[w]);
		ret = run_one(b, w, &b->res[w]);
		if (!b->json && bfs_progress_enabled())
			fprintf(stderr, "%*s\r", 24, "");
		if (ret)
			return bfs_cmd_error(cmd, "%s: %s", w_names[w], strerror(-ret));
		b->res[w].ran = true;
	}
	return 0;
}

/* ---- output ---- */

static void describe_config(struct bfs_out *o, const struct fs_bench *b)
{
	out_str(o, "benchmark", "Benchmark", "fs");
	out_u64(o, "size_scale", "Size scale (1 = full)", b->scale);
	out_u64(o, "seed", "Seed", b->seed);
	out_u64(o, "append_jobs", "Append jobs", b->jobs);
	out_size(o, "append_bytes", "Append total", append_total(b));
	out_u64(o, "rand_threads", "Random I/O threads", b->threads);
	out_size(o, "rand_file_size", "Random I/O file", rand_file_size(b));
	out_u64(o, "rand_ops", "Random ops per phase", rand_ops(b));
	out_u64(o, "small_files", "Small files", small_files(b));
	out_u64(o, "objects", "Objects (4 MiB)", objects(b));
	out_u64(o, "fsync_every", "Log fsync every", b->fsync_every);
	out_size(o, "image_size", "Image size (sparse)", b->image_size);
	out_bool(o, "direct", "Direct I/O", b->is_direct);
	out_size(o, "data_chunk", "Data chunk size",
		 b->data_chunk ? b->data_chunk : BFS_DATA_CHUNK_DEFAULT);
}

static void describe_result(struct bfs_out *o, enum fs_workload w, const struct result *r)
{
	out_object(o, NULL, NULL);
	out_str(o, "workload", "Workload", "%s", w_names[w]);
	out_u64(o, "ops", "Ops", r->ops);
	out_u64(o, "bytes", "Bytes", r->bytes);
	out_u64(o, "total_ns", "Time (ns)", r->ns);
	out_u64(o, "ns_per_op", "ns/op", bench_ns_per_op(r->ns, r->ops));
	out_u64(o, "ops_per_sec", "ops/s", bench_per_sec(r->ops, r->ns));
	out_u64(o, "bytes_per_sec", "bytes/s", bench_per_sec(r->bytes, r->ns));
	out_u64(o, "threads", "Threads", r->threads);
	out_u64(o, "fsyncs", "fsync/sync calls", r->fsyncs);
	if (w >= W_DEFAULT_NR)
		out_u64(o, "max_op_ns", "Slowest op (ns)", r->max_op_ns);
	out_end(o);
}

static void print_table(const struct fs_bench *b)
{
	unsigned w;

	printf("\n%-11s %10s %12s %10s %10s %10s %8s\n", "workload", "ops", "bytes", "MB/s",
	       "IOPS", "ns/op", "threads");
	for (w = 0; w < W_NR; w++) {
		const struct result *r = &b->res[w];

		if (!r->ran)
			continue;
		printf("%-11s %10" PRIu64 " %12" PRIu64 " %10.1f %10" PRIu64 " %10" PRIu64
		       " %8u\n", w_names[w], r->ops, r->bytes,
		       r->ns ? (double)r->bytes * 1e3 / (double)r->ns : 0.0,
		       bench_per_sec(r->ops, r->ns), bench_ns_per_op(r->ns, r->ops), r->threads);
	}
	printf("\nMB = 10^6 bytes; IOPS = ops/s (files/s for smallfiles, objects/s for "
	       "objects).\n");
}

static void print_results(const struct fs_bench *b)
{
	struct bfs_out o = { 0 };
	unsigned w;

	describe_config(&o, b);
	out_array(&o, "results", "Results");
	/* text shows the results as a table instead */
	o.rows[o.nr - 1].flags |= OUT_JSON_ONLY;
	for (w = 0; w < W_NR; w++)
		if (b->res[w].ran)
			describe_result(&o, w, &b->res[w]);
	out_end(&o);
	out_print(&o, stdout, b->json);
	out_free(&o);
	if (!b->json)
		print_table(b);
}

/* ---- options ---- */



/* "append,randread": a comma-separated subset */
static int parse_workloads(struct fs_bench *b, const char *list)
{
	char *copy = strdup(list), *save = NULL, *w;
	unsigned i;
	int ret = copy ? 0 : -ENOMEM;

	for (w = copy ? strtok_r(copy, ",", &save) : NULL; w && !ret;
	     w = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < W_NR && strcmp(w, w_names[i]); i++)
			;
		if (i == W_NR)
			ret = -EINVAL;
		else
			b->want[i] = true;
	}
	free(copy);
	return ret;
}

static int parse_opt(const struct bfs_cmd *cmd, struct fs_bench *b, int c,
		     const struct bfs_opt *row, bool *picked)
{
	u64 v;

	switch (c) {
	case BENCH_OPT_SIZE_SCALE:
		if (bench_parse_count(optarg, 1, 1u << 20, &b->scale))
			return bfs_cmd_usage_error(cmd, "invalid size scale '%s' (1 to %u)",
						   optarg, 1u << 20);
		return 0;
	case BENCH_OPT_WORKLOAD:
		*picked = true;
		if (parse_workloads(b, optarg))
			return bfs_cmd_usage_error(cmd, "invalid workload list '%s' (append, "
						   "randwrite, randread, smallfiles, objects, "
						   "seqread, createsync, creates)",
						   optarg);
		return 0;
	case BENCH_OPT_JOBS:
	case BENCH_OPT_THREADS:
		if (bench_parse_count(optarg, 1, 256, &v))
			return bfs_cmd_usage_error(cmd, "invalid %s count '%s' (1 to 256)",
						   c == BENCH_OPT_JOBS ? "job" : "thread", optarg);
		*(c == BENCH_OPT_JOBS ? &b->jobs : &b->threads) = (unsigned)v;
		return 0;
	case BENCH_OPT_FSYNC_EVERY:
		if (bench_parse_count(optarg, 1, 1000000, &v))
			return bfs_cmd_usage_error(cmd, "invalid --fsync-every '%s'", optarg);
		b->fsync_every = (unsigned)v;
		return 0;
	case BENCH_OPT_SEED:
		if (bench_parse_count(optarg, 0, UINT64_MAX, &b->seed))
			return bfs_cmd_usage_error(cmd, "invalid seed '%s'", optarg);
		return 0;
	case BENCH_OPT_IMAGE:
		b->image_opt = optarg;
		return 0;
	case BENCH_OPT_DIRECT:
		b->direct = true;
		return 0;
	case BENCH_OPT_DATA_CHUNK:
		/* bfs_sb_layout() checks the range and says what is wrong */
		if (bfs_parse_size(optarg, &v) || !v || v > UINT32_MAX)
			return bfs_cmd_usage_error(cmd, "invalid data chunk size '%s'", optarg);
		b->data_chunk = (u32)v;
		return 0;
	case BENCH_OPT_JSON:
		b->json = true;
		return 0;
	default:
		return bench_opt_refused(cmd, row, "fs");
	}
}

static int parse_args(const struct bfs_cmd *cmd, struct fs_bench *b, int argc, char **argv)
{
	const struct bfs_opt *row;
	bool picked = false;
	unsigned w;
	int c, ret;

	optind = 0;
	while ((c = bfs_cmd_getopt(cmd, argc, argv, &row)) != -1) {
		ret = parse_opt(cmd, b, c, row, &picked);
		if (ret)
			return ret;
	}
	if (optind != argc)
		return bfs_cmd_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	for (w = 0; w < W_DEFAULT_NR && !picked; w++)
		b->want[w] = true;
	return 0;
}

/* random, incompressible data: compression must not flatter the numbers */
/*
 * Page-aligned, as fio's buffers are: the slices data_at() hands out then
 * go to an O_DIRECT image as they are, as a mount's writes do (the wire
 * shim receives them aligned).  malloc()'s 16-byte alignment made every
 * direct write bounce through a copy that neither fio nor the mount pays
 * (a third of the append workload's instructions).
 */
static u8 *random_data(u64 seed)
{
	u64 *p = bfs_aligned_alloc(4096, DATA_BUF), s = bench_mix64(seed ^ UINT64_C(0xda7a)), i;

	for (i = 0; p && i < DATA_BUF / 8; i++)
		p[i] = next_u64(&s);
	return (u8 *)p;
}

int bfs_bench_fs(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct fs_bench b = {
		.scale = 1, .seed = 42, .jobs = 8, .threads = 16, .fsync_every = 8,
	};
	int ret = parse_args(cmd, &b, argc, argv);

	if (ret)
		return ret;
	b.data = random_data(b.seed);
	if (!b.data)
		return bfs_cmd_error(cmd, "out of memory");
	ret = image_create(cmd, &b);
	if (!ret)
		ret = format_and_open(cmd, &b);
	if (!ret)
		ret = run_workloads(cmd, &b);
	/* a clean close is part of the run: its failure is the run's */
	ret = close_fs(cmd, &b) ?: ret;
	if (!ret)
		print_results(&b);
	image_remove(&b);
	free(b.data);
	return ret;
}
