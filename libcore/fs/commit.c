// SPDX-License-Identifier: MIT
/*
 * Periodic commit (bfs set-option commit=SECONDS, like ext4's commit=): a
 * read-write filesystem makes everything written durable at most that many
 * seconds later, so a crash loses at most that much of what was not
 * fsync'd.  One thread per open filesystem sleeps on a condition variable
 * and calls bfs_fs_sync(); an idle filesystem costs no I/O, because a sync
 * with nothing new in the journal writes nothing.
 */
#include <bfs/log.h>
#include <bfs/os.h>

#include "fs_internal.h"

struct bfs_fs_committer {
	struct bfs_fs	*fs;
	u64		interval_ns;
	bfs_mutex	lock;
	bfs_cond	wake;
	bool		stop;
	bool		warned;
	bfs_thread	thread;
};

static void *commit_thread(void *arg)
{
	struct bfs_fs_committer *cm = arg;

	bfs_mutex_lock(&cm->lock);
	while (!cm->stop) {
		u64 until = bfs_monotonic_ns() + cm->interval_ns, now;
		int ret;

		/* sleep the whole interval, whatever wakes the wait early */
		while (!cm->stop && (now = bfs_monotonic_ns()) < until)
			bfs_cond_timedwait(&cm->wake, &cm->lock, until - now);
		if (cm->stop)
			break;
		bfs_mutex_unlock(&cm->lock);
		ret = bfs_fs_sync(cm->fs);
		bfs_mutex_lock(&cm->lock);
		if (ret && !cm->warned) {
			bfs_warn("periodic commit failed (error %d); later ones are tried too", ret);
			cm->warned = true;
		}
	}
	bfs_mutex_unlock(&cm->lock);
	return NULL;
}

int bfs_fs_commit_start(struct bfs_fs *fs, unsigned secs)
{
	struct bfs_fs_committer *cm;
	int ret;

	if (!secs || fs->read_only)
		return 0;
	cm = bfs_zalloc(sizeof(*cm));
	if (!cm)
		return -ENOMEM;
	cm->fs = fs;
	cm->interval_ns = (u64)secs * 1000000000u;
	bfs_mutex_init(&cm->lock);
	bfs_cond_init(&cm->wake);
	ret = bfs_thread_create(&cm->thread, commit_thread, cm);
	if (ret) {
		bfs_cond_destroy(&cm->wake);
		bfs_mutex_destroy(&cm->lock);
		bfs_free(cm);
		return ret;
	}
	fs->committer = cm;
	return 0;
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
	bfs_cond_destroy(&cm->wake);
	bfs_mutex_destroy(&cm->lock);
	bfs_free(cm);
	fs->committer = NULL;
}
