// SPDX-License-Identifier: MIT
/*
 * The periodic commit (ext4's commit=N): a thread that makes everything
 * done so far durable every interval, so that data nobody fsync'd is not
 * held in the open journal entry until unmount.  File data already reached
 * the device before its extent was committed; one journal flush (device
 * flush, then the entry) makes both durable, and costs nothing when
 * nothing changed since the last one.
 *
 * The thread sleeps on a condition variable so that close and a change of
 * interval wake it at once; it runs bfs_fs_sync(), which is safe next to
 * any other call.  A failed commit is reported once (the journal is dead
 * after a write error and every later one would fail the same way).
 */
#include <bfs/log.h>
#include <bfs/super.h>

#include "fs_internal.h"

struct bfs_fs_committer {
	bfs_thread	thread;
	bfs_mutex	lock;
	bfs_cond	wake;
	u64		interval_ns;	/* 0: idle until changed or stopped */
	bool		stop;
	bool		reported;
};

static void *commit_thread(void *arg)
{
	struct bfs_fs *fs = arg;
	struct bfs_fs_committer *cm = fs->committer;
	u64 next = 0;
	int ret;

	bfs_mutex_lock(&cm->lock);
	while (!cm->stop) {
		u64 now = bfs_monotonic_ns();

		if (!cm->interval_ns) {
			bfs_cond_wait(&cm->wake, &cm->lock);
			next = 0;
			continue;
		}
		if (!next || next > now + cm->interval_ns)
			next = now + cm->interval_ns;	/* first round, or a shorter interval */
		if (now < next) {
			bfs_cond_wait_ns(&cm->wake, &cm->lock, next - now);
			continue;
		}
		next = now + cm->interval_ns;
		bfs_mutex_unlock(&cm->lock);
		ret = bfs_fs_sync(fs);
		bfs_mutex_lock(&cm->lock);
		if (ret && !cm->reported) {
			cm->reported = true;
			bfs_err("periodic commit failed: %s (later commits may fail too)",
				strerror(-ret));
		}
	}
	bfs_mutex_unlock(&cm->lock);
	return NULL;
}

int bfs_fs_commit_start(struct bfs_fs *fs, u32 ms)
{
	struct bfs_fs_committer *cm;
	int ret;

	if (fs->read_only)
		return 0;
	cm = bfs_zalloc(sizeof(*cm));
	if (!cm)
		return -ENOMEM;
	bfs_mutex_init(&cm->lock);
	bfs_cond_init(&cm->wake);
	cm->interval_ns = (u64)ms * 1000000ULL;
	fs->committer = cm;
	ret = bfs_thread_create(&cm->thread, commit_thread, fs);
	if (ret) {
		fs->committer = NULL;
		bfs_cond_destroy(&cm->wake);
		bfs_mutex_destroy(&cm->lock);
		bfs_free(cm);
	}
	return ret;
}

void bfs_fs_commit_stop(struct bfs_fs *fs)
{
	struct bfs_fs_committer *cm = fs->committer;

	if (!cm)
		return;
	bfs_mutex_lock(&cm->lock);
	cm->stop = true;
	bfs_cond_signal(&cm->wake);
	bfs_mutex_unlock(&cm->lock);
	bfs_thread_join(cm->thread);
	fs->committer = NULL;
	bfs_cond_destroy(&cm->wake);
	bfs_mutex_destroy(&cm->lock);
	bfs_free(cm);
}

u32 bfs_fs_commit_default_ms(struct bfs_fs *fs, u32 fallback_ms)
{
	unsigned secs = bfs_sb_commit_secs(fs->sb);

	return secs ? secs * 1000u : fallback_ms;
}

int bfs_fs_set_commit_interval(struct bfs_fs *fs, u32 ms)
{
	struct bfs_fs_committer *cm = fs->committer;

	if (fs->read_only)
		return 0;
	if (!cm)
		return bfs_fs_commit_start(fs, ms);
	bfs_mutex_lock(&cm->lock);
	cm->interval_ns = (u64)ms * 1000000ULL;
	bfs_cond_signal(&cm->wake);
	bfs_mutex_unlock(&cm->lock);
	return 0;
}
