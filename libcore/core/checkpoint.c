// SPDX-License-Identifier: MIT
/*
 * Checkpoints: write every dirty node so the journal can drop old entries.
 *
 * In two halves (doc/commit.md): a snapshot under commit_lock that only
 * works in memory, and the writes, which need no lock and run on the
 * checkpoint thread (ckpt_bg.c) when a commit found the journal or the cache
 * filling up, or in the caller for an explicit checkpoint (close, tools).
 */
#include <stdio.h>

#include "../btree/internal.h"

static __thread bool in_checkpoint;

static int cmp_level(const void *a, const void *b)
{
	const struct btree_node *x = *(struct btree_node *const *)a, *y = *(struct btree_node *const *)b;

	return x->level != y->level ? (x->level < y->level ? -1 : 1) :
		x->offset < y->offset ? -1 : x->offset > y->offset;
}


void bfs_core_set_fatal(struct bfs_core *c, int err, const char *what)
{
	if (!core_fatal(c))
		bfs_err("btree core: %s (error %d): no more writes until reopened", what, err);
	__atomic_store_n(&c->fatal, err ? err : -EIO, __ATOMIC_RELEASE);
}

int bfs_core_check_writable(struct bfs_core *c)
{
	if (c->read_only)
		return -EROFS;
	return core_fatal(c) ? -EROFS : 0;
}

/* may a checkpoint run at all? */
static int ckpt_check(struct bfs_core *c)
{
	if (c->read_only)
		return -EROFS;
	if (core_fatal(c))
		return core_fatal(c);
	if (bfs_core_any_damaged(c))
		return -EUCLEAN;	/* salvage: a damaged tree has no root to record yet */
	return 0;
}

static void snap_free(struct bfs_core *c, struct ckpt_snap *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		bfs_cache_put(c, s->nodes[i]);
	bfs_free(s->nodes);
	bfs_free(s->io);
	s->nodes = NULL;
	s->io = NULL;
	s->nr = 0;
}

/*
 * Commit_lock held, so every key in a node belongs to a commit that is
 * already in the journal (commits append before they let go of the lock),
 * in an entry <= the open one.  Memory work only: each dirty node's pending
 * keys become a bset at the end of its data[], frozen from then on; the node
 * is clean, and new keys go to pending again for the next checkpoint.
 */
int bfs_ckpt_snapshot(struct bfs_core *c, struct ckpt_snap *s)
{
	unsigned id;
	size_t i;
	int ret;

	memset(s, 0, sizeof(*s));
	/*
	 * Commits after the snapshot go to a later entry, so bsets they write
	 * (journal_seq) are newer than the sealed ones: a rebuild from a scan
	 * prefers a node that replaced a sealed one over the stale copy.
	 * Before anything changes, so a failure leaves nothing half done.
	 */
	if (c->j) {
		s->new_last = bfs_journal_cur_seq(c->j);
		ret = bfs_journal_close_entry(c->j);
		if (ret)
			return ret;
	}
	ret = bfs_cache_dirty_nodes(c, &s->nodes, &s->nr);
	if (ret)
		return ret;
	s->io = bfs_calloc(s->nr + 1, sizeof(*s->io));
	if (!s->io) {
		snap_free(c, s);
		return -ENOMEM;
	}
	if (s->nr)
		qsort(s->nodes, s->nr, sizeof(*s->nodes), cmp_level);
	for (i = 0; i < s->nr; i++) {
		struct btree_node *n = s->nodes[i];

		/* readers must not be looking while the view moves into data[] */
		bfs_write_lock(&n->lock);
		if (!n->dead && n->dirty)
			bfs_node_write_prepare(c, n, &s->io[i]);
		bfs_rwlock_unlock(&n->lock);
		bfs_cache_set_dirty(c, n, false);
	}
	for (id = 0; id < BFS_BTREE_NR; id++) {
		u64 buf[BFS_BTREE_PTR_KEY_U64S];

		bfs_node_ptr(c->trees[id].node, (struct bfs_bkey *)buf);
		s->roots[id] = *bkey_ptr_val((struct bfs_bkey *)buf);
	}

	s->alloc_pending = bfs_alloc_nr_pending(c->alloc);
	s->journal_bytes = __atomic_load_n(&c->journal_bytes, __ATOMIC_RELAXED);
	return 0;
}

/*
 * No lock needed: commits go on meanwhile (their keys are in pending, not
 * in the frozen bsets; the nodes they replace stay allocated until the next
 * checkpoint).  Consumes the snapshot's references.
 *
 *  1. flush the journal: every frozen key is then in a durable entry
 *     (write-ahead rule of journal.h);
 *  2. write the frozen bsets level by level, leaves first, with a device
 *     flush after each level: a parent's new bset may point to new
 *     children, which must be on disk before it;
 *  3. record the snapshot's roots: they go into every journal entry from
 *     now on (pre-write hook); one entry is forced out so the newest
 *     durable entry carries them (no journal: the superblock's clean
 *     section is rewritten);
 *  4. only then move the journal's last_seq and let the allocator reuse the
 *     slots of nodes replaced before the snapshot - no root that replay
 *     could start from reaches them any more.
 *
 * A crash anywhere in between leaves the previous tree intact (new nodes
 * went to free slots; appended bsets only add keys the journal still
 * replays from the previous last_seq).
 */
int bfs_ckpt_write(struct bfs_core *c, struct ckpt_snap *s)
{
	bool level_wrote = false;
	unsigned id;
	size_t i;
	int ret = 0;

	in_checkpoint = true;
	if (c->j)
		ret = bfs_journal_flush(c->j);
	for (i = 0; i < s->nr && !ret; i++) {
		struct btree_node *n = s->nodes[i];

		ret = bfs_node_write_io(c, n, &s->io[i]);
		level_wrote |= s->io[i].len != 0;
		if (!ret && level_wrote && (i + 1 == s->nr || s->nodes[i + 1]->level != n->level)) {
			ret = bfs_dev_flush(c->dev);
			level_wrote = false;
		}
	}
	snap_free(c, s);
	if (!ret) {
		bfs_mutex_lock(&c->roots_lock);
		for (id = 0; id < BFS_BTREE_NR; id++)
			c->trees[id].disk = s->roots[id];
		bfs_mutex_unlock(&c->roots_lock);
	}
	if (!ret && c->j) {
		struct bfs_jset_entry pad;

		bfs_jset_entry_init(&pad, BFS_JSET_ENTRY_PAD, 0, 0, 0);
		ret = bfs_journal_add(c->j, &pad, 1, NULL);
		if (!ret)
			ret = bfs_journal_flush(c->j);
		if (!ret)
			bfs_journal_set_last_seq(c->j, s->new_last);
	} else if (!ret) {
		/* no journal: the clean section is the only record of the roots */
		ret = bfs_core_write_clean(c, true);
	}
	if (!ret) {
		bfs_alloc_release_first(c->alloc, s->alloc_pending);
		__atomic_fetch_sub(&c->journal_bytes, s->journal_bytes, __ATOMIC_RELAXED);
		__atomic_store_n(&c->free_check_at, 0, __ATOMIC_RELAXED);
		STAT_INC(c, checkpoints);
	}
	in_checkpoint = false;
	if (ret)
		bfs_core_set_fatal(c, ret, "checkpoint failed");
	return ret;
}

/* the whole checkpoint in this thread (commit_lock held) */
int bfs_core_checkpoint_locked(struct bfs_core *c)
{
	struct ckpt_snap s;
	int ret = ckpt_check(c);

	if (ret)
		return ret;
	/* only commit_lock holders start one: once idle, the slot is ours */
	bfs_ckpt_wait_idle(c);
	ret = ckpt_check(c);
	if (ret)
		return ret;
	if (!bfs_ckpt_try_begin(c))
		return -EDEADLK;
	ret = bfs_ckpt_snapshot(c, &s);
	if (ret)
		bfs_core_set_fatal(c, ret, "checkpoint failed");
	else
		ret = bfs_ckpt_write(c, &s);
	bfs_ckpt_end(c);
	return ret;
}

int bfs_core_checkpoint(struct bfs_core *c)
{
	int ret = bfs_core_check_writable(c);

	if (ret)
		return ret;
	bfs_commit_lock(c);
	ret = bfs_core_checkpoint_locked(c);
	bfs_commit_unlock(c);
	return ret;
}

/*
 * 0: no checkpoint needed; 1: one should start (half the journal or half
 * the cache used); 2: writers must wait for one (three quarters, or the
 * ring close to its last bucket).
 */
static int ckpt_need(struct bfs_core *c)
{
	int need = 0;
	u64 dirty;

	if (c->j) {
		u64 entries = bfs_journal_cur_seq(c->j) - bfs_journal_last_seq(c->j) + 1;
		u64 est = __atomic_load_n(&c->journal_bytes, __ATOMIC_RELAXED) +
			entries * (c->block_size + 64 + 64 * 8);
		u64 b = c->sbh.sb ? le32_to_cpu(c->sbh.sb->bucket_size) : 0;
		/* the ring keeps a spare bucket and entries never straddle buckets */
		u64 usable = c->journal_capacity > 3 * b ? c->journal_capacity - 2 * b :
			c->journal_capacity / 3;

		if (est * 2 > usable)
			need = est * 4 > usable * 3 ? 2 : 1;
		/*
		 * Whatever the estimate says, never let the ring get down to its
		 * last bucket (asking costs a walk over the buckets: only once
		 * half a bucket was used since the last checkpoint, and again
		 * once half the room left was used).
		 */
		if (need < 2 && est * 2 > b &&
		    est >= __atomic_load_n(&c->free_check_at, __ATOMIC_RELAXED)) {
			u64 free = bfs_journal_free_bytes(c->j);

			if (free < 2 * b) {
				need = 2;
			} else {
				__atomic_store_n(&c->free_check_at, est + (free - 2 * b) / 2,
						 __ATOMIC_RELAXED);
				if (free < 4 * b)
					need = BFS_MAX(need, 1);
			}
		}
	}
	/*
	 * Dirty nodes cannot be evicted: once they hold half the cache, write
	 * them (their unwritten keys cost little memory, the node image a lot).
	 */
	bfs_mutex_lock(&c->cache.lock);
	dirty = c->cache.nr_dirty * (u64)c->node_size;
	bfs_mutex_unlock(&c->cache.lock);
	if (dirty * 2 > c->cache.budget)
		need = BFS_MAX(need, dirty * 4 > c->cache.budget * 3 ? 2 : 1);
	return need;
}

bool bfs_core_checkpoint_due(struct bfs_core *c)
{
	int need = c->read_only ? 0 : ckpt_need(c);
	bool busy;

	if (need != 1)
		return need > 0;
	/* one in progress and not falling behind: bfs_core_maybe_checkpoint() lets writers go on */
	bfs_mutex_lock(&c->ck_lock);
	busy = c->ck_busy;
	bfs_mutex_unlock(&c->ck_lock);
	return !busy;
}

int bfs_core_maybe_checkpoint(struct bfs_core *c)
{
	struct ckpt_snap *s;
	int need, ret;

	if (c->read_only)
		return 0;
	need = ckpt_need(c);
	if (!need)
		return 0;
	if (!bfs_ckpt_try_begin(c)) {
		/* one is being written: writers go on unless it is falling behind */
		if (need < 2)
			return 0;
		bfs_ckpt_wait_idle(c);
		if (!ckpt_need(c))
			return core_fatal(c);
		if (!bfs_ckpt_try_begin(c))
			return -EDEADLK;
	}
	ret = ckpt_check(c);
	s = ret ? NULL : bfs_malloc(sizeof(*s));
	if (!ret && !s)
		ret = -ENOMEM;
	if (!ret) {
		ret = bfs_ckpt_snapshot(c, s);
		if (ret)
			bfs_core_set_fatal(c, ret, "checkpoint failed");
	}
	if (!ret && !bfs_ckpt_queue(c, s))
		return 0;	/* the thread writes it, frees it and ends the checkpoint */
	if (!ret)
		ret = bfs_ckpt_write(c, s);
	bfs_free(s);
	bfs_ckpt_end(c);
	return ret;
}

static u64 reserve_need(struct bfs_core *c, u32 nr_updates, bool only_deletes)
{
	u32 depth = 1, id;
	u64 need;

	for (id = 0; id < BFS_BTREE_NR; id++)
		depth = BFS_MAX(depth, c->trees[id].node->level + 1u);
	/* each update may split one node per level plus add a root */
	need = (u64)BFS_MIN(nr_updates, 16u) * 2 * (depth + 1) + 2;
	/* keep some slots back for deletes, so a full filesystem can be emptied */
	if (!only_deletes)
		need += 4 * (depth + 1);
	return need;
}

bool bfs_core_nodes_short(struct bfs_core *c, u32 nr_updates, bool only_deletes)
{
	return bfs_alloc_nr_free(c->alloc) < reserve_need(c, nr_updates, only_deletes);
}

int bfs_core_reserve_nodes(struct bfs_core *c, u32 nr_updates, bool only_deletes)
{
	u64 need = reserve_need(c, nr_updates, only_deletes);

	if (bfs_alloc_nr_free(c->alloc) >= need)
		return 0;
	if (bfs_alloc_nr_pending(c->alloc)) {
		int ret = bfs_core_checkpoint_locked(c);

		if (ret)
			return ret;
		if (bfs_alloc_nr_free(c->alloc) >= need)
			return 0;
	}
	return -ENOSPC;
}

/* journal hooks */

int bfs_core_reclaim_hook(void *ctx, u64 want_seq)
{
	struct bfs_core *c = ctx;

	/*
	 * Writing nodes here is not safe: they may hold keys of the open
	 * journal entry, which the hook must not flush (write-ahead rule), and
	 * inside a commit or checkpoint we would wait for ourselves.  Commits
	 * checkpoint early (bfs_core_maybe_checkpoint) so the ring never fills;
	 * getting here means that estimate was wrong.
	 */
	bfs_err("btree core: journal full (want seq %llu, %s)", (unsigned long long)want_seq,
		in_checkpoint ? "in a checkpoint" : bfs_committing == c ? "in a commit" : "outside a commit");
	return -ENOSPC;
}

u32 bfs_core_pre_write_hook(void *ctx, void *buf, u32 max_u64s)
{
	struct bfs_core *c = ctx;
	u64 *out = buf;
	u32 used = 0, id;

	bfs_mutex_lock(&c->roots_lock);
	for (id = 0; id < BFS_BTREE_NR && used + 1 + BFS_BTREE_PTR_VAL_U64S <= max_u64s; id++) {
		bfs_jset_entry_init((struct bfs_jset_entry *)&out[used], BFS_JSET_ENTRY_BTREE_ROOT, (u8)id,
				    c->trees[id].disk.level, BFS_BTREE_PTR_VAL_U64S);
		memcpy(&out[used + 1], &c->trees[id].disk, sizeof(c->trees[id].disk));
		used += 1 + BFS_BTREE_PTR_VAL_U64S;
	}
	bfs_mutex_unlock(&c->roots_lock);
	return used;
}
