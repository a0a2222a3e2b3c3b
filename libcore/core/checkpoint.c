// SPDX-License-Identifier: MIT
/*
 * Checkpoints: write every dirty node so the journal can drop old entries.
 *
 *  1. flush the journal: every key in a node is then in a durable entry
 *     (write-ahead rule of journal.h);
 *  2. write dirty nodes level by level, leaves first, with a device flush
 *     after each level: a parent's new bset may point to new children, which
 *     must be on disk before it;
 *  3. record the new roots: they go into every journal entry from now on
 *     (pre-write hook); one entry is forced out so the newest durable entry
 *     carries them (no journal: the superblock's clean section is rewritten);
 *  4. only then move the journal's last_seq and let the allocator reuse the
 *     slots of nodes replaced since the previous checkpoint - no root that
 *     replay could start from reaches them any more.
 *
 * A crash anywhere in between leaves the previous tree intact (new nodes went
 * to free slots; appended bsets only add keys the journal still replays).
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

static int write_nodes(struct bfs_core *c)
{
	struct btree_node **arr;
	size_t nr, i;
	int ret;

	ret = bfs_cache_dirty_nodes(c, &arr, &nr);
	if (ret)
		return ret;
	if (nr)
		qsort(arr, nr, sizeof(*arr), cmp_level);
	for (i = 0; i < nr; i++) {
		struct btree_node *n = arr[i];

		if (!ret) {
			bfs_write_lock(&n->lock);
			if (!n->dead && n->dirty)
				ret = bfs_node_write(c, n);
			bfs_rwlock_unlock(&n->lock);
			if (!ret)
				bfs_cache_set_dirty(c, n, false);
			if (!ret && (i + 1 == nr || arr[i + 1]->level != n->level))
				ret = bfs_dev_flush(c->dev);
		}
		bfs_cache_put(c, n);
	}
	bfs_free(arr);
	return ret;
}

static void record_roots(struct bfs_core *c)
{
	unsigned id;

	bfs_mutex_lock(&c->roots_lock);
	for (id = 0; id < BFS_BTREE_NR; id++) {
		u64 buf[BFS_BTREE_PTR_KEY_U64S];
		struct bfs_bkey *k = (struct bfs_bkey *)buf;

		bfs_node_ptr(c->trees[id].node, k);
		c->trees[id].disk = *bkey_ptr_val(k);
	}
	bfs_mutex_unlock(&c->roots_lock);
}

int bfs_core_checkpoint_locked(struct bfs_core *c)
{
	u64 new_last = 0;
	int ret;

	if (c->read_only || core_fatal(c))
		return c->read_only ? -EROFS : core_fatal(c);
	if (bfs_core_any_damaged(c))
		return -EUCLEAN;	/* salvage: a damaged tree has no root to record yet */
	in_checkpoint = true;
	if (c->j) {
		ret = bfs_journal_flush(c->j);
		if (ret)
			goto fatal;
		new_last = bfs_journal_cur_seq(c->j);
	}
	ret = write_nodes(c);
	if (ret)
		goto fatal;
	record_roots(c);
	if (c->j) {
		struct bfs_jset_entry pad;

		bfs_jset_entry_init(&pad, BFS_JSET_ENTRY_PAD, 0, 0, 0);
		ret = bfs_journal_add(c->j, &pad, 1, NULL);
		if (!ret)
			ret = bfs_journal_flush(c->j);
		if (ret)
			goto fatal;
		bfs_journal_set_last_seq(c->j, new_last);
	} else {
		/* no journal: the clean section is the only record of the roots */
		ret = bfs_core_write_clean(c, true);
		if (ret)
			goto fatal;
	}
	bfs_alloc_release_pending(c->alloc);
	c->journal_bytes = 0;
	c->free_check_at = 0;
	STAT_INC(c, checkpoints);
	in_checkpoint = false;
	return 0;
fatal:
	in_checkpoint = false;
	bfs_core_set_fatal(c, ret, "checkpoint failed");
	return ret;
}

int bfs_core_checkpoint(struct bfs_core *c)
{
	int ret = bfs_core_check_writable(c);

	if (ret)
		return ret;
	bfs_mutex_lock(&c->commit_lock);
	ret = bfs_core_checkpoint_locked(c);
	bfs_mutex_unlock(&c->commit_lock);
	return ret;
}

int bfs_core_maybe_checkpoint(struct bfs_core *c)
{
	bool need = false;
	u64 dirty;

	if (c->read_only)
		return 0;
	if (c->j) {
		u64 entries = bfs_journal_cur_seq(c->j) - bfs_journal_last_seq(c->j) + 1;
		u64 est = c->journal_bytes + entries * (c->block_size + 64 + 64 * 8);

		u64 b = c->sbh.sb ? le32_to_cpu(c->sbh.sb->bucket_size) : 0;
		/* the ring keeps a spare bucket and entries never straddle buckets */
		u64 usable = c->journal_capacity > 3 * b ? c->journal_capacity - 2 * b :
			c->journal_capacity / 3;

		need = est * 2 > usable;
		/*
		 * Whatever the estimate says, never let the ring get down to its
		 * last bucket (asking costs a walk over the buckets: only once
		 * half a bucket was used since the last checkpoint).
		 */
		if (!need && est * 2 > b && est >= c->free_check_at) {
			u64 free = bfs_journal_free_bytes(c->j);

			if (free < 2 * b)
				need = true;
			else	/* no need to ask again before half that room is used */
				c->free_check_at = est + (free - 2 * b) / 2;
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
		need = true;
	return need ? bfs_core_checkpoint_locked(c) : 0;
}

int bfs_core_reserve_nodes(struct bfs_core *c, u32 nr_updates, bool only_deletes)
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
