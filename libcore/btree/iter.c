// SPDX-License-Identifier: MIT
/*
 * Reader side: descent with lock coupling, iterators, point lookups and
 * readahead for sequential scans.
 *
 * An iterator keeps a reference (not a lock) on its current leaf and the
 * index of the last key returned; if the leaf has not changed since
 * (mod_seq), the next key is found without a search.  A call that has to
 * look at the leaf locks it shared, finds the key and a batch of the keys
 * after it (fill_ahead()) and unlocks; the calls after it hand out that
 * batch without locking while mod_seq says the leaf is unchanged.  So
 * iterators never block writers for longer than one batch and a thread may
 * commit while holding one.
 */
#include <stdio.h>

#include "internal.h"

__thread bool bfs_btree_quiet;

int bfs_btree_descend_read(struct bfs_core *c, u8 id, struct bfs_bpos pos, unsigned target_level,
			   struct btree_node **out)
{
	struct btree_root *r = &c->trees[id];
	struct btree_node *n, *child;
	const struct bfs_bkey *k;
	int ret;

again:
	bfs_read_lock(&r->root_lock);
	n = r->node;
	bfs_cache_ref(c, n);
	bfs_rwlock_unlock(&r->root_lock);
	bfs_read_lock(&n->lock);
	if (n->dead) {
		/* the root was replaced between reading the pointer and locking it */
		bfs_rwlock_unlock(&n->lock);
		bfs_cache_put(c, n);
		goto again;
	}
	while (n->level > target_level) {
		k = bfs_node_child(n, pos, NULL);
		if (!k) {
			char p[64];

			bfs_err("btree %s level %u node at %llu: no child pointer covers %s",
				bfs_btree_id_name(id), n->level, (unsigned long long)n->offset,
				bfs_node_pos_text(pos, p, sizeof(p)));
			ret = -EUCLEAN;
			goto err;
		}
		ret = bfs_cache_get(c, id, k, &child);
		if (ret)
			goto err;
		/* lock coupling: the child is locked before the parent is let go */
		bfs_read_lock(&child->lock);
		bfs_rwlock_unlock(&n->lock);
		bfs_cache_put(c, n);
		n = child;
	}
	*out = n;
	return 0;
err:
	bfs_rwlock_unlock(&n->lock);
	bfs_cache_put(c, n);
	return ret;
}

/* ---- readahead ---- */

/*
 * The next @count leaves from @pos, as their parents name them, go to the
 * page cache: the iterator's own read then finds them there, and the node
 * cache holds none of them before it gets there.
 */
static void readahead_hint(struct bfs_core *c, u8 id, struct bfs_bpos pos, unsigned count)
{
	while (count) {
		struct btree_node *n;
		struct node_slot s;
		struct bfs_bpos max;
		u32 i;

			if (bfs_btree_descend_read(c, id, pos, 1, &n))
			return;
		max = n->max;
		/* a root that is a leaf has nothing ahead of it */
		for (i = n->level == 1 ? bfs_node_search(n, pos, &s) : n->nr; i < n->nr && count;
		     i++, node_slot_next(n, &s)) {
			const struct bfs_bkey *k = node_slot_key(n, s);

			if (bfs_bkey_deleted(k) || k->type != BFS_KEY_BTREE_PTR)
				continue;
			bfs_dev_will_read(c->dev, le64_to_cpu(bkey_ptr_val(k)->offset), c->node_size);
			STAT_INC(c, readahead_hints);
			count--;
		}
		if (n->level != 1)
			max = BFS_POS_MAX;
		bfs_rwlock_unlock(&n->lock);
		bfs_cache_put(c, n);
		if (bfs_bpos_eq(max, BFS_POS_MAX))
			return;
		pos = bfs_bpos_successor(max);
	}
}

/* the next @count leaves from @pos, loaded into the node cache */
static void readahead_load(struct bfs_core *c, u8 id, struct bfs_bpos pos, unsigned count)
{
	/* a fresh descent always follows current pointers, never stale ones */
	while (count--) {
		struct btree_node *n;
		struct bfs_bpos max;

		if (bfs_btree_descend_read(c, id, pos, 0, &n))
			return;
		max = n->max;
		bfs_rwlock_unlock(&n->lock);
		bfs_cache_put(c, n);
		if (bfs_bpos_eq(max, BFS_POS_MAX))
			return;
		pos = bfs_bpos_successor(max);
	}
}

static void *readahead_thread(void *arg)
{
	struct bfs_core *c = arg;

	bfs_btree_quiet = true;
	bfs_mutex_lock(&c->ra_lock);
	while (!c->ra_stop) {
		struct bfs_bpos pos;
		unsigned count;
		u8 id;

		if (c->ra_head == c->ra_tail) {
			bfs_cond_wait(&c->ra_wait, &c->ra_lock);
			continue;
		}
		id = c->ra_queue[c->ra_tail % 16].id;
		pos = c->ra_queue[c->ra_tail % 16].pos;
		count = c->ra_queue[c->ra_tail % 16].count;
		c->ra_tail++;
		bfs_mutex_unlock(&c->ra_lock);

			if (c->cache.ra_hint)
			readahead_hint(c, id, pos, count);
		else
			readahead_load(c, id, pos, count);
		bfs_mutex_lock(&c->ra_lock);
	}
	bfs_mutex_unlock(&c->ra_lock);
	return NULL;
}

void bfs_readahead_start(struct bfs_core *c)
{
	bfs_mutex_init(&c->ra_lock);
	bfs_cond_init(&c->ra_wait);
	c->ra_stop = false;
	c->ra_running = !bfs_thread_create(&c->ra_thread, readahead_thread, c);
}

void bfs_readahead_stop(struct bfs_core *c)
{
	if (!c->ra_running)
		return;
	bfs_mutex_lock(&c->ra_lock);
	c->ra_stop = true;
	bfs_cond_broadcast(&c->ra_wait);
	bfs_mutex_unlock(&c->ra_lock);
	bfs_thread_join(c->ra_thread);
	c->ra_running = false;
	bfs_cond_destroy(&c->ra_wait);
	bfs_mutex_destroy(&c->ra_lock);
}

static void readahead_queue(struct bfs_core *c, u8 id, struct bfs_bpos pos, unsigned count)
{
	if (!c->ra_running)
		return;
	bfs_mutex_lock(&c->ra_lock);
	if (c->ra_head - c->ra_tail < 16) {
		c->ra_queue[c->ra_head % 16].id = id;
		c->ra_queue[c->ra_head % 16].pos = pos;
		c->ra_queue[c->ra_head % 16].count = (u8)count;
		c->ra_head++;
		bfs_cond_signal(&c->ra_wait);
	}
	bfs_mutex_unlock(&c->ra_lock);
}

/* ---- iterators ---- */

void bfs_btree_iter_init(struct bfs_btree_iter *it, struct bfs_core *c, enum bfs_btree_id id,
			 struct bfs_bpos pos, unsigned flags)
{
	memset(it, 0, offsetof(struct bfs_btree_iter, inline_k));
	it->c = c;
	it->btree_id = (u8)id;
	it->pos = pos;
	it->flags = flags;
	it->kbuf = (struct bfs_bkey *)it->inline_k;
	it->k = it->kbuf;
	it->k_cap = sizeof(it->inline_k);
	it->ahead = NULL;
	it->ahead_cap = it->ahead_len = it->ahead_n = it->ahead_i = 0;
}

static void ahead_drop(struct bfs_btree_iter *it)
{
	it->ahead_n = it->ahead_i = 0;
	it->ahead_len = 0;
}

void bfs_btree_iter_set_pos(struct bfs_btree_iter *it, struct bfs_bpos pos)
{
	it->pos = pos;
	it->pos_from = NULL;
	it->valid = false;
	ahead_drop(it);
}

void bfs_btree_iter_exit(struct bfs_btree_iter *it)
{
	if (it->leaf)
		bfs_cache_put(it->c, it->leaf);
	it->leaf = NULL;
	if (it->kbuf != (struct bfs_bkey *)it->inline_k)
		bfs_free(it->kbuf);
	it->kbuf = (struct bfs_bkey *)it->inline_k;
	it->k = it->kbuf;
	it->k_cap = sizeof(it->inline_k);
	bfs_free(it->ahead);
	it->ahead = NULL;
	it->ahead_cap = 0;
	ahead_drop(it);
}

static int copy_key(struct bfs_btree_iter *it, const struct bfs_bkey *k)
{
	size_t bytes = bfs_bkey_bytes(k);

	if (bytes > it->k_cap) {
		struct bfs_bkey *nk = bfs_malloc(bytes);

		if (!nk)
			return -ENOMEM;
		if (it->kbuf != (struct bfs_bkey *)it->inline_k)
			bfs_free(it->kbuf);
		it->kbuf = nk;
		it->k_cap = bytes;
	}
	memcpy(it->kbuf, k, bytes);
	it->k = it->kbuf;
	return 0;
}

#define AHEAD_BYTES	(4 * KiB)
/* keys looked up this far ahead of the one being read (enough misses in flight) */
#define AHEAD_PREFETCH	8

/*
 * Find the live keys following index @i while the leaf is locked, so a
 * sequential scan takes the leaf lock once per batch instead of per key.
 *
 * Keys in the leaf's written bsets are handed out in place, not copied:
 * data[0, written) is only ever appended to, never rewritten, and the node
 * buffer is not freed or reused while the iterator holds its reference, so
 * such a key stays intact however the leaf changes until the next call.
 * Keys still in the pending area are copied: a node write frees it.
 */
static void fill_ahead(struct bfs_btree_iter *it, struct btree_node *n, u32 i, struct node_slot s)
{
	ahead_drop(it);
	if (!it->ahead) {
		it->ahead = bfs_malloc(AHEAD_BYTES);
		if (!it->ahead)
			return;
		it->ahead_cap = AHEAD_BYTES;
	}
	/* chunk by chunk: the next entry is an increment, not a search of the chunk starts */
	node_slot_next(n, &s);
	for (i++; s.c < n->nch; s.c++, s.off = 0) {
		const struct key_chunk *ch = n->ch[s.c];
		u32 nr = ch->nr, off = s.off;
		/* data[] as one unsigned range: a key outside it is pending */
		uintptr_t data = (uintptr_t)n->data;

		for (; off < nr; off++, i++) {
			if (it->ahead_n == ARRAY_SIZE(it->ahead_idx))
				goto out;
			struct bfs_bkey *k = ch->k[off];
			size_t bytes;

			/*
			 * keys of a merged view lie all over the node's bsets, so
			 * the hardware prefetcher cannot guess them: ask for a few
			 * ahead
			 */
			if (off + AHEAD_PREFETCH < nr)
				__builtin_prefetch(ch->k[off + AHEAD_PREFETCH]);
			if (bfs_bkey_deleted(k))
				continue;
			if (__builtin_expect((uintptr_t)k - data >= it->c->node_size, 0)) {
				bytes = bfs_bkey_bytes(k);
				if (it->ahead_len + bytes > it->ahead_cap)
					goto out;
				memcpy(it->ahead + it->ahead_len, k, bytes);
				k = (struct bfs_bkey *)(it->ahead + it->ahead_len);
				it->ahead_len += (u32)bytes;
			}
			it->ahead_k[it->ahead_n] = k;
			it->ahead_idx[it->ahead_n++] = i;
		}
	}
out:
	it->ahead_mod_seq = n->mod_seq;
}

/*
 * The position a scan goes on from, if the last step left it to be worked
 * out: the position after the key returned before the current one (or
 * that key's, in an extents btree).  A key followed that one, so it is not
 * the last position.
 */
static void sync_pos(struct bfs_btree_iter *it)
{
	const struct bfs_bkey *k = it->pos_from;

	if (!k)
		return;
	it->pos_from = NULL;
	it->pos = bfs_btree_is_extents(it->btree_id) ? bfs_bkey_pos(k) :
						       bfs_bpos_successor(bfs_bkey_pos(k));
}

/* lock the leaf covering @pos, reusing the current one if it still does */
static int lock_leaf(struct bfs_btree_iter *it, struct bfs_bpos pos)
{
	struct btree_node *n = it->leaf;
	int ret;

	if (n) {
		bfs_read_lock(&n->lock);
		if (!n->dead && bfs_bpos_cmp(pos, n->min) >= 0 && bfs_bpos_cmp(pos, n->max) <= 0)
			return 0;
		bfs_rwlock_unlock(&n->lock);
		bfs_cache_put(it->c, n);
		it->leaf = NULL;
	}
	ret = bfs_btree_descend_read(it->c, it->btree_id, pos, 0, &n);
	if (ret)
		return ret;
	it->leaf = n;
	it->leaf_mod_seq = n->mod_seq - 1;	/* no cached index yet */
	return 0;
}

static int found(struct btree_node *n, struct bfs_btree_iter *it, u32 i, struct node_slot s,
		 bool fwd)
{
	int ret = copy_key(it, node_slot_key(n, s));

	it->idx = i;
	it->leaf_mod_seq = n->mod_seq;
	/* BFS_ITER_FEW: copying a batch would cost more than the keys wanted */
	if (fwd && !ret && !(it->flags & BFS_ITER_FEW))
		fill_ahead(it, n, i, s);
	else
		ahead_drop(it);
	bfs_rwlock_unlock(&n->lock);
	it->valid = !ret;
	return ret;
}

/* index (and slot) of the first key >= pos, or > pos if @strict */
static u32 node_bound(struct btree_node *n, struct bfs_bpos pos, bool strict, struct node_slot *s)
{
	if (strict) {
		if (bfs_bpos_eq(pos, BFS_POS_MAX)) {
			*s = (struct node_slot){ n->nch, 0 };
			return n->nr;
		}
		pos = bfs_bpos_successor(pos);
	}
	return bfs_node_search(n, pos, s);
}

/* first live key at/after pos (strictly after if @strict); hint: start index */
static int peek_fwd(struct bfs_btree_iter *it, struct bfs_bpos pos, bool strict, bool use_hint)
{
	struct btree_node *n;
	int ret;

	for (;;) {
		struct node_slot s;
		u32 i;

		ret = lock_leaf(it, pos);
		if (ret)
			return ret;
		n = it->leaf;
		if (use_hint && n->mod_seq == it->leaf_mod_seq && it->idx + 1 < n->nr) {
			i = it->idx + 1;
			s = node_slot_of(n, i);
		} else {
			i = node_bound(n, pos, strict, &s);
		}
		use_hint = false;
		while (i < n->nr && bfs_bkey_deleted(node_slot_key(n, s))) {
			i++;
			node_slot_next(n, &s);
		}
		if (i < n->nr)
			return found(n, it, i, s, true);
		if (bfs_bpos_eq(n->max, BFS_POS_MAX)) {
			bfs_rwlock_unlock(&n->lock);
			it->valid = false;
			return -ENOENT;
		}
		pos = bfs_bpos_successor(n->max);
		strict = false;
		bfs_rwlock_unlock(&n->lock);
		if ((it->flags & BFS_ITER_PREFETCH) || ++it->leaves_seen >= 2) {
			/* a sweep does not come back: the cache need not keep the leaf */
			bfs_cache_put_passed(it->c, n);
			it->leaf = NULL;
			readahead_queue(it->c, it->btree_id, pos, 4);
		}
	}
}

/* last live key before pos (at or before if @incl) */
static int peek_back(struct bfs_btree_iter *it, struct bfs_bpos pos, bool incl)
{
	struct btree_node *n;
	int ret;

	for (;;) {
		s64 i;

		ret = lock_leaf(it, pos);
		if (ret)
			return ret;
		n = it->leaf;
		i = (s64)(incl ? bfs_node_upper_bound(n, pos) : bfs_node_lower_bound(n, pos)) - 1;
		while (i >= 0 && bfs_bkey_deleted(node_key(n, (u32)i)))
			i--;
		if (i >= 0)
			return found(n, it, (u32)i, node_slot_of(n, (u32)i), false);
		if (bfs_bpos_eq(n->min, BFS_POS_MIN)) {
			bfs_rwlock_unlock(&n->lock);
			it->valid = false;
			return -ENOENT;
		}
		pos = bfs_bpos_predecessor(n->min);
		incl = true;
		bfs_rwlock_unlock(&n->lock);
	}
}

int bfs_btree_iter_peek(struct bfs_btree_iter *it, const struct bfs_bkey **k)
{
	int ret;

	sync_pos(it);
	ahead_drop(it);
	ret = peek_fwd(it, it->pos, bfs_btree_is_extents(it->btree_id), false);

	if (!ret && k)
		*k = it->k;
	return ret;
}

int bfs_btree_iter_next(struct bfs_btree_iter *it, const struct bfs_bkey **k)
{
	bool ext;
	int ret;

	if (!it->valid)
		return bfs_btree_iter_peek(it, k);
	/*
	 * The common step: the next key of the batch, the leaf unchanged.
	 * Where the scan stands is only noted (the key just passed), not
	 * worked out: every other step does that first (sync_pos()), and the
	 * noted key stays where it is until then (kbuf and ahead are only
	 * rewritten by those steps; data[] while the leaf is referenced).
	 */
	if (it->ahead_i < it->ahead_n && it->leaf &&
	    bfs_node_mod_seq(it->leaf) == it->ahead_mod_seq) {
		it->pos_from = it->k;
		it->k = it->ahead_k[it->ahead_i];
		it->idx = it->ahead_idx[it->ahead_i++];
		if (k)
			*k = it->k;
		return 0;
	}
	sync_pos(it);
	ext = bfs_btree_is_extents(it->btree_id);
	if (ext) {
		it->pos = bfs_bkey_pos(it->k);
	} else {
		if (bfs_bpos_eq(bfs_bkey_pos(it->k), BFS_POS_MAX)) {
			it->valid = false;
			return -ENOENT;
		}
		it->pos = bfs_bpos_successor(bfs_bkey_pos(it->k));
	}
	ret = peek_fwd(it, it->pos, ext, true);
	if (!ret && k)
		*k = it->k;
	return ret;
}

int bfs_btree_iter_prev(struct bfs_btree_iter *it, const struct bfs_bkey **k)
{
	bool ext = bfs_btree_is_extents(it->btree_id);
	int ret;

	sync_pos(it);
	ret = peek_back(it, it->pos, ext);

	if (ret)
		return ret;
	if (ext) {
		struct bfs_bpos p = bfs_bkey_pos(it->k);

		p.offset = bfs_bkey_start(it->k);
		it->pos = p;
	} else {
		it->pos = bfs_bkey_pos(it->k);
	}
	if (k)
		*k = it->k;
	return 0;
}

int bfs_btree_lookup(struct bfs_core *c, enum bfs_btree_id id, struct bfs_bpos pos,
		     void *buf, size_t buf_len)
{
	struct btree_node *n;
	const struct bfs_bkey *k;
	bool ext = bfs_btree_is_extents(id);
	struct node_slot s;
	u32 i;
	int ret;

	if ((unsigned)id >= BFS_BTREE_NR)
		return -EINVAL;
	ret = bfs_btree_descend_read(c, (u8)id, pos, 0, &n);
	if (ret)
		return ret;
	if (ext) {
		/* the only candidate is the first extent ending after pos */
		i = node_bound(n, pos, true, &s);
		while (i < n->nr && bfs_bkey_deleted(node_slot_key(n, s))) {
			i++;
			node_slot_next(n, &s);
		}
		if (i == n->nr && !bfs_bpos_eq(n->max, BFS_POS_MAX)) {
			struct bfs_btree_iter it;

			bfs_rwlock_unlock(&n->lock);
			bfs_cache_put(c, n);
			bfs_btree_iter_init(&it, c, id, pos, 0);
			ret = bfs_btree_iter_peek(&it, &k);
			if (!ret && (le64_to_cpu(k->inode) != pos.inode || bfs_bkey_start(k) > pos.offset ||
				     le32_to_cpu(k->snapshot) != pos.snapshot))
				ret = -ENOENT;
			if (!ret)
				ret = bfs_bkey_bytes(k) > buf_len ? -ENOBUFS : (memcpy(buf, k, bfs_bkey_bytes(k)), 0);
			bfs_btree_iter_exit(&it);
			return ret;
		}
		k = i < n->nr ? node_slot_key(n, s) : NULL;
		if (!k || le64_to_cpu(k->inode) != pos.inode || bfs_bkey_start(k) > pos.offset ||
		    le32_to_cpu(k->snapshot) != pos.snapshot)
			k = NULL;
	} else {
		i = bfs_node_search(n, pos, &s);
		k = i < n->nr ? node_slot_key(n, s) : NULL;
		if (k && (bfs_bkey_cmp_pos(k, pos) || bfs_bkey_deleted(k)))
			k = NULL;
	}
	if (!k)
		ret = -ENOENT;
	else if (bfs_bkey_bytes(k) > buf_len)
		ret = -ENOBUFS;
	else
		memcpy(buf, k, bfs_bkey_bytes(k));
	bfs_rwlock_unlock(&n->lock);
	bfs_cache_put(c, n);
	return ret;
}
