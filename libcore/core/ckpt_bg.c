// SPDX-License-Identifier: MIT
/*
 * The checkpoint thread: writes the snapshots that commits take when the
 * journal or the cache fills up, so no writer waits for a whole checkpoint
 * (doc/commit.md).  One checkpoint at a time: ck_busy is claimed before the
 * snapshot and dropped once its writes are done, by whoever wrote them.
 */
#include "../btree/internal.h"

static void *ckpt_thread(void *arg)
{
	struct bfs_core *c = arg;

	bfs_mutex_lock(&c->ck_lock);
	for (;;) {
		struct ckpt_snap *s = c->ck_job;

		/* a snapshot queued before stop is still written: its nodes are clean */
		if (!s) {
			if (c->ck_stop)
				break;
			bfs_cond_wait(&c->ck_wait, &c->ck_lock);
			continue;
		}
		c->ck_job = NULL;
		bfs_mutex_unlock(&c->ck_lock);
		/* a failure makes the core fatal */
		if (!bfs_ckpt_write(c, s))
			STAT_INC(c, checkpoints_background);
		bfs_free(s);
		bfs_mutex_lock(&c->ck_lock);
		c->ck_busy = false;
		bfs_cond_broadcast(&c->ck_wait);
	}
	bfs_mutex_unlock(&c->ck_lock);
	return NULL;
}

int bfs_ckpt_thread_start(struct bfs_core *c)
{
	int ret;

	c->ck_stop = false;
	ret = bfs_thread_create(&c->ck_thread, ckpt_thread, c);
	if (!ret)
		c->ck_thread_on = true;
	return ret;
}

void bfs_ckpt_thread_stop(struct bfs_core *c)
{
	if (!c->ck_thread_on)
		return;
	bfs_mutex_lock(&c->ck_lock);
	c->ck_stop = true;
	bfs_cond_broadcast(&c->ck_wait);
	bfs_mutex_unlock(&c->ck_lock);
	bfs_thread_join(c->ck_thread);
	c->ck_thread_on = false;
}

int bfs_ckpt_queue(struct bfs_core *c, struct ckpt_snap *s)
{
	int ret = -EAGAIN;

	bfs_mutex_lock(&c->ck_lock);
	if (c->ck_thread_on && !c->ck_stop && !c->ck_job) {
		c->ck_job = s;
		bfs_cond_broadcast(&c->ck_wait);
		ret = 0;
	}
	bfs_mutex_unlock(&c->ck_lock);
	return ret;
}

void bfs_ckpt_wait_idle(struct bfs_core *c)
{
	bfs_mutex_lock(&c->ck_lock);
	while (c->ck_busy)
		bfs_cond_wait(&c->ck_wait, &c->ck_lock);
	bfs_mutex_unlock(&c->ck_lock);
}

bool bfs_ckpt_try_begin(struct bfs_core *c)
{
	bool ok;

	bfs_mutex_lock(&c->ck_lock);
	ok = !c->ck_busy;
	c->ck_busy = true;
	bfs_mutex_unlock(&c->ck_lock);
	return ok;
}

void bfs_ckpt_end(struct bfs_core *c)
{
	bfs_mutex_lock(&c->ck_lock);
	c->ck_busy = false;
	bfs_cond_broadcast(&c->ck_wait);
	bfs_mutex_unlock(&c->ck_lock);
}
