/* SPDX-License-Identifier: MIT */
/*
 * Building crashed device states from an I/O log (the CrashMonkey /
 * dm-log-writes method, in process), shared by the crash tests.
 *
 * A workload runs on a recorded memory device and puts marks in the log:
 * crash_mark(dev, 'c', N) before unit N (a transaction, an operation) starts
 * to change anything, crash_mark(dev, 'f', N) once everything up to unit N
 * is durable.  crash_build_states() then replays the log onto a copy of the
 * starting image and hands every state a power failure could leave to the
 * check callback, with the marks that held at that point:
 *   - every flush point (sampled evenly beyond BFS_CRASH_MAX_FLUSH_STATES);
 *   - BFS_CRASH_RANDOM_STATES random points after each sampled flush, where
 *     each write since the flush survives or not at random (FUA writes always
 *     do) and one may be torn to a multiple of 512 bytes.
 * A correct filesystem shows, in every state, the result of some unit T with
 * marks.f <= T <= marks.c.
 */
#ifndef BFS_TESTS_CRASH_STATES_H
#define BFS_TESTS_CRASH_STATES_H

#include <bfs/dev.h>
#include <bfs/os.h>

struct crash_marks {
	u32 f;		/* newest unit known durable */
	u32 c;		/* newest unit begun */
};

/* check one crashed image (it may be modified); false + @why (512 bytes) if wrong */
typedef bool (*crash_check_fn)(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why);

struct crash_result {
	unsigned states, flush_states, random_states, failures;
	size_t log_entries;
};

void crash_mark(struct bfs_dev *dev, char kind, u32 n);
void crash_build_states(const char *logpath, struct bfs_dev *base_img, u64 seed,
			crash_check_fn check, void *ctx, struct crash_result *res);

/*
 * crash_build_states(), then the line every crash test prints ("@what: N
 * crash states (F flush points, R random), X failed"), the checks that at
 * least @min_flush flush points were seen and no state failed, and the log
 * removed (@logpath freed)
 */
void crash_states_check(const char *what, char *logpath, struct bfs_dev *base_img, u64 seed,
			crash_check_fn check, void *ctx, unsigned min_flush);

struct bfs_fs;

/*
 * Open a crashed image's filesystem (replaying its journal) and verify every
 * btree; false + @why (512 bytes) if either fails, with nothing left open
 */
bool crash_open_verified(struct bfs_dev *img, struct bfs_fs **fs, char *why);

/*
 * The usual first steps of a filesystem crash check: `fsck -n` finds nothing,
 * then the filesystem opens (replaying the journal) without one warning;
 * false + @why (512 bytes) if not, with nothing left open
 */
bool crash_fsck_then_open(struct bfs_dev *img, struct bfs_fs **fs, char *why);

/*
 * Close a recovered filesystem: a close that fails is a failed state too.
 * Returns @ok, or false + @why if @ok and the close failed.
 */
bool crash_close_recovered(struct bfs_fs *fs, bool ok, char *why);

/*
 * Acknowledged progress of a workload's threads: when a thread's fsync
 * returns it calls crash_ack(thread, value), "thread's work up to @value is
 * durable", which stores ack N and puts 'f' mark N in the log under one lock,
 * so mark N names ack N in log order.  The check of a crashed state asks
 * crash_acks_upto() for the newest value each thread had acknowledged by the
 * state's marks.f.  Acks past @max are not recorded (nor marked).
 */
struct crash_ack {
	u32	thread;
	u64	value;
};

struct crash_acks {
	struct bfs_dev *dev;
	bfs_mutex lock;
	u32	nr, max;
	struct crash_ack *ack;		/* ack[1..nr]: mark 0 is the start */
};

void crash_acks_init(struct crash_acks *a, struct bfs_dev *dev, u32 max);
void crash_acks_destroy(struct crash_acks *a);
void crash_ack(struct crash_acks *a, u32 thread, u64 value);
/* @acked[t] (t < @threads): the greatest value thread t acked in marks 1..@f, else 0 */
void crash_acks_upto(struct crash_acks *a, u32 f, u64 *acked, unsigned threads);

/*
 * Run @fn on @threads threads at once, thread i on @args + i * @size (an
 * array of the workers' structs), and wait for all of them
 */
void crash_run_threads(unsigned threads, void *(*fn)(void *), void *args, size_t size);

u64 crash_env_u64(const char *name, u64 def);
u64 crash_splitmix(u64 *state);

#endif
