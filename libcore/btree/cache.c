// SPDX-License-Identifier: MIT
/*
 * The node cache: a hash table by device offset and a CLOCK-style list of
 * the clean nodes, bounded by a memory budget.
 *
 * Every hashed, loaded, clean node is on the list, referenced or not: a hit
 * and a release do not move it.  A hit marks it (lru_ref); eviction takes
 * nodes from the list's tail, frees the unreferenced unmarked ones and moves
 * referenced or marked ones to the head, unmarked.  Dirty nodes are not on
 * the list, so eviction only ever frees clean nodes nobody uses; the budget
 * can be exceeded while more nodes than fit are referenced or dirty (the
 * commit path then starts a checkpoint, which makes dirty nodes clean
 * again).  A node replaced by a rewrite is unhashed at once (REF_UNHASHED in
 * its count) and freed by its last reference.
 *
 * References are atomic counts.  A count only goes up from zero under the
 * cache lock (at the hash lookup), and eviction frees only nodes it sees at
 * zero under the lock, so a count at zero there stays at zero.  Dropping a
 * reference needs the lock only to free an unhashed node or, when the cache
 * is not well under its budget (`roomy`), to evict: a reader's descent locks
 * the cache once per level, at the hash lookup, and a mount's read never at
 * a release.  Taking a reference on a node one already holds never locks.
 */
#include <stdio.h>

#include "internal.h"

/* the smallest budget, in nodes, that read-ahead loads leaves into */
#define CACHE_RA_LOAD_NODES	64

static u64 hash_offset(u64 off)
{
	off ^= off >> 29;
	off *= UINT64_C(0x9E3779B97F4A7C15);
	return off ^ (off >> 32);
}

static u32 ref_count(const struct btree_node *n)
{
	return __atomic_load_n(&n->ref, __ATOMIC_ACQUIRE) & ~REF_UNHASHED;
}

/* after bc->bytes or the budget changed: may a last put skip eviction? */
static void note_bytes_locked(struct btree_cache *bc)
{
	bool roomy = !bc->ra_hint && bc->bytes <= bc->budget / 2;

	/* written only on a change: every put reads it */
	if (__atomic_load_n(&bc->roomy, __ATOMIC_RELAXED) != roomy)
		__atomic_store_n(&bc->roomy, roomy, __ATOMIC_RELAXED);
}

int bfs_cache_init(struct bfs_core *c, u64 budget)
{
	struct btree_cache *bc = &c->cache;
	u64 size = 1024;

	while (size < 2 * budget / c->node_size && size < (UINT64_C(1) << 18))
		size <<= 1;
	bc->table = bfs_calloc(size, sizeof(*bc->table));
	if (!bc->table)
		return -ENOMEM;
	bc->mask = size - 1;
	bc->budget = budget;
	/*
	 * Leaves loaded ahead of a sweep take their room from the nodes it
	 * holds: under a small budget they are evicted before use (doc/fsck.md),
	 * so read-ahead fills the page cache instead, which the RSS does not pay.
	 */
	bc->ra_hint = budget < CACHE_RA_LOAD_NODES * c->node_size;
	note_bytes_locked(bc);
	bc->lru.lru_next = bc->lru.lru_prev = &bc->lru;
	bfs_mutex_init(&bc->lock);
	bfs_cond_init(&bc->wait);
	bfs_node_bufs_init(c, budget);
	return 0;
}

static void unhash_locked(struct btree_cache *bc, struct btree_node *n)
{
	struct btree_node **pp = &bc->table[hash_offset(n->offset) & bc->mask];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	}
	n->hnext = NULL;
	n->hashed = false;
}

static void lru_del(struct btree_node *n)
{
	if (!n->on_lru)
		return;
	n->lru_prev->lru_next = n->lru_next;
	n->lru_next->lru_prev = n->lru_prev;
	n->on_lru = false;
}

static void lru_add(struct btree_cache *bc, struct btree_node *n)
{
	if (n->on_lru)
		return;
	n->lru_ref = false;
	n->lru_next = bc->lru.lru_next;
	n->lru_prev = &bc->lru;
	bc->lru.lru_next->lru_prev = n;
	bc->lru.lru_next = n;
	n->on_lru = true;
}

static void free_locked(struct bfs_core *c, struct btree_node *n)
{
	struct btree_cache *bc = &c->cache;

	lru_del(n);
	if (n->hashed)
		unhash_locked(bc, n);
	if (n->dirty)
		bc->nr_dirty--;
	bc->bytes -= n->mem;
	bc->nr--;
	bfs_node_free(c, n);
}

void bfs_cache_exit(struct bfs_core *c)
{
	struct btree_cache *bc = &c->cache;
	u64 i;

	if (!bc->table)
		return;
	for (i = 0; i <= bc->mask; i++)
		while (bc->table[i])
			free_locked(c, bc->table[i]);
	bfs_free(bc->table);
	bc->table = NULL;
	bfs_node_bufs_exit(c);
	bfs_cond_destroy(&bc->wait);
	bfs_mutex_destroy(&bc->lock);
}

static void evict_locked(struct bfs_core *c)
{
	struct btree_cache *bc = &c->cache;
	struct btree_node *first_kept = NULL;

	while (bc->bytes > bc->budget && bc->lru.lru_prev != &bc->lru) {
		struct btree_node *n = bc->lru.lru_prev;

		/* one pass at most: a release over budget must not walk the list again */
		if (n == first_kept)
			break;
		if (n->lru_ref || ref_count(n)) {
			/* in use or used lately: a second chance */
			lru_del(n);
			lru_add(bc, n);
			if (!first_kept)
				first_kept = n;
			continue;
		}
		free_locked(c, n);
		STAT_INC(c, cache_evictions);
	}
	note_bytes_locked(bc);
}

/*
 * Under a small budget a leaf read evicts the unused leaves first, before
 * its buffer is taken: the pool then holds the leaves in use, the roots and
 * the interior nodes, not one more leaf than the budget (the reads are the
 * same: a leaf on the LRU was one a point lookup or a sweep let go of).
 */
static void evict_leaves_locked(struct bfs_core *c)
{
	struct btree_cache *bc = &c->cache;
	struct btree_node *n = bc->lru.lru_prev, *prev;

	for (; n != &bc->lru; n = prev) {
		prev = n->lru_prev;
		if (!n->level && !ref_count(n)) {
			free_locked(c, n);
			STAT_INC(c, cache_evictions);
		}
	}
}

void bfs_core_trim_cache(struct bfs_core *c)
{
	struct btree_cache *bc = &c->cache;

	if (!bc->table)
		return;
	bfs_mutex_lock(&bc->lock);
	evict_leaves_locked(c);
	bfs_mutex_unlock(&bc->lock);
	bfs_node_bufs_release_free(c);
}

static struct btree_node *lookup_locked(struct btree_cache *bc, u64 offset)
{
	struct btree_node *n = bc->table[hash_offset(offset) & bc->mask];

	while (n && n->offset != offset)
		n = n->hnext;
	return n;
}

static void hash_locked(struct btree_cache *bc, struct btree_node *n)
{
	struct btree_node **pp = &bc->table[hash_offset(n->offset) & bc->mask];

	n->hnext = *pp;
	*pp = n;
	n->hashed = true;
	bc->nr++;
}

void bfs_cache_account(struct bfs_core *c, struct btree_node *n)
{
	size_t mem = bfs_node_mem(c, n);

	bfs_mutex_lock(&c->cache.lock);
	c->cache.bytes += mem - n->mem;
	n->mem = mem;
	note_bytes_locked(&c->cache);
	bfs_mutex_unlock(&c->cache.lock);
}

/* the caller holds a reference already (or the root pointer does): not on the LRU */
void bfs_cache_ref(struct bfs_core *c, struct btree_node *n)
{
	__atomic_fetch_add(&n->ref, 1, __ATOMIC_RELAXED);
}

void bfs_cache_put(struct bfs_core *c, struct btree_node *n)
{
	struct btree_cache *bc = &c->cache;
	u32 r;

	if (!n)
		return;
	if (__atomic_load_n(&bc->roomy, __ATOMIC_RELAXED)) {
		/*
		 * Nothing to evict: a node at zero stays where it is (on the
		 * list if clean), and after the decrement it is not touched,
		 * since eviction may free it at once; unless it was unhashed,
		 * when nobody can find it and this was the last reference.
		 */
		if (__atomic_sub_fetch(&n->ref, 1, __ATOMIC_ACQ_REL) != REF_UNHASHED)
			return;
		bfs_mutex_lock(&bc->lock);
		free_locked(c, n);
		bfs_mutex_unlock(&bc->lock);
		return;
	}
	r = __atomic_load_n(&n->ref, __ATOMIC_RELAXED);
	while ((r & ~REF_UNHASHED) > 1)
		if (__atomic_compare_exchange_n(&n->ref, &r, r - 1, true, __ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	/* maybe the last one: evict under the lock */
	bfs_mutex_lock(&bc->lock);
	if (!(__atomic_sub_fetch(&n->ref, 1, __ATOMIC_ACQ_REL) & ~REF_UNHASHED)) {
		if (!n->hashed)
			free_locked(c, n);
		evict_locked(c);
	}
	bfs_mutex_unlock(&bc->lock);
}

/*
 * A leaf a sweep has moved past.  Under a small budget (fsck's: the one
 * read-ahead only hints under) the sweep will not read it again, and kept
 * on the LRU it would only push the budget's worth of such leaves into
 * the RSS before anything useful is evicted; so the last reference frees
 * it at once and its buffer is the next leaf read's.  Point lookups' leaves,
 * the roots and the interior nodes keep the budget.  A mount's larger
 * cache keeps swept leaves (a directory listed again).
 */
void bfs_cache_put_passed(struct bfs_core *c, struct btree_node *n)
{
	struct btree_cache *bc = &c->cache;

	if (!bc->ra_hint || n->level) {
		bfs_cache_put(c, n);
		return;
	}
	bfs_mutex_lock(&bc->lock);
	if (!(__atomic_sub_fetch(&n->ref, 1, __ATOMIC_ACQ_REL) & ~REF_UNHASHED)) {
		if (!n->hashed || !n->dirty)
			free_locked(c, n);
		evict_locked(c);
	}
	bfs_mutex_unlock(&bc->lock);
}

static int check_cached(struct btree_node *n, u8 id, const struct bfs_bkey *ptr)
{
	const struct bfs_btree_ptr *p = bkey_ptr_val(ptr);

	if (n->seq == le64_to_cpu(p->seq) && n->btree_id == id && n->level == p->level &&
	    bfs_bpos_eq(n->min, bfs_bpos_from_disk(&p->min_key)) &&
	    bfs_bpos_eq(n->max, bfs_bkey_pos(ptr)))
		return 0;
	if (!bfs_btree_quiet)
		bfs_err("btree %s level %u node at %llu: cached node seq %016llx does not match the pointer's %016llx (stale or misdirected pointer)",
		bfs_btree_id_name(id), p->level, (unsigned long long)n->offset,
		(unsigned long long)n->seq, (unsigned long long)le64_to_cpu(p->seq));
	return -EUCLEAN;
}

static int bad_ptr(struct bfs_core *c, u8 id, const struct bfs_bkey *ptr, bool outside)
{
	char kbuf[200];

	bfs_bkey_to_text(kbuf, sizeof(kbuf), ptr);
	if (!bfs_btree_quiet)
		bfs_err("btree %s: bad child pointer%s (key %s)", bfs_btree_id_name(id),
			outside ? ": outside the metadata area" : "", kbuf);
	return -EUCLEAN;
}

int bfs_cache_get(struct bfs_core *c, u8 id, const struct bfs_bkey *ptr, struct btree_node **out)
{
	struct btree_cache *bc = &c->cache;
	const struct bfs_btree_ptr *p = bkey_ptr_val(ptr);
	u64 offset;
	struct btree_node *n, *fresh = NULL;
	int ret;

	if (ptr->type != BFS_KEY_BTREE_PTR || p->btree_id != id || p->level >= BFS_BTREE_MAX_DEPTH)
		return bad_ptr(c, id, ptr, false);
	/*
	 * Where the pointer points is checked on a miss, before the read: a
	 * node in the cache sits at an offset that was checked when it was
	 * read or allocated, and any other offset is a miss.
	 */
	offset = le64_to_cpu(p->offset);
	bfs_mutex_lock(&bc->lock);
	for (;;) {
		n = lookup_locked(bc, offset);
		if (n && n->loading) {
			bfs_cond_wait(&bc->wait, &bc->lock);
			continue;
		}
		if (n || fresh)
			break;
		/*
		 * A miss: allocate without the cache lock (node_size bytes, maybe
		 * from malloc), then look again, since another thread may have
		 * loaded the node meanwhile.
		 */
		if (bc->ra_hint && !p->level)
			evict_leaves_locked(c);
		bfs_mutex_unlock(&bc->lock);
		if (!bfs_alloc_valid_offset(c->alloc, offset))
			return bad_ptr(c, id, ptr, true);
		fresh = bfs_node_alloc(c);
		if (!fresh)
			return -ENOMEM;
		bfs_mutex_lock(&bc->lock);
	}
	if (n) {
		ret = check_cached(n, id, ptr);
		if (!ret) {
			/* the list is not touched (its neighbours' lines): a mark */
			if (!n->lru_ref)
				n->lru_ref = true;
			__atomic_fetch_add(&n->ref, 1, __ATOMIC_RELAXED);
			*out = n;
			/*
			 * only ever counted here, under the lock: no locked
			 * add (stats readers still see whole values)
			 */
			__atomic_store_n(&c->stats.cache_hits,
					 __atomic_load_n(&c->stats.cache_hits, __ATOMIC_RELAXED) + 1,
					 __ATOMIC_RELAXED);
		}
		bfs_mutex_unlock(&bc->lock);
		if (fresh)
			bfs_node_free(c, fresh);
		return ret;
	}
	n = fresh;
	n->offset = offset;
	n->seq = le64_to_cpu(p->seq);
	n->btree_id = id;
	n->level = p->level;
	n->min = bfs_bpos_from_disk(&p->min_key);
	n->max = bfs_bkey_pos(ptr);
	n->loading = true;
	n->ref = 1;
	hash_locked(bc, n);
	STAT_INC(c, cache_misses);
	bfs_mutex_unlock(&bc->lock);

	ret = bfs_node_read(c, n);

	bfs_mutex_lock(&bc->lock);
	n->loading = false;
	bfs_cond_broadcast(&bc->wait);
	if (ret) {
		free_locked(c, n);
	} else {
		/*
		 * Roots and interior nodes stay long: their unused tails go back.
		 * Not a leaf's: its buffer is soon reused, and refaulting the
		 * pages on each read cost more CPU (a fifth of fsck's) than the
		 * memory was worth.
		 */
		if (n->level || (bfs_bpos_eq(n->min, BFS_POS_MIN) && bfs_bpos_eq(n->max, BFS_POS_MAX)))
			n->buf_kept = (u32)bfs_node_buf_trim(c, n->data, n->written);
		n->mem = bfs_node_mem(c, n);
		bc->bytes += n->mem;
		if (n->torn && !c->read_only) {
			/* the next checkpoint seals the torn tail (node_io.c) */
			n->dirty = true;
			bc->nr_dirty++;
		} else {
			lru_add(bc, n);
		}
		*out = n;
		evict_locked(c);
	}
	bfs_mutex_unlock(&bc->lock);
	return ret;
}

int bfs_cache_new_node(struct bfs_core *c, u8 btree_id, u8 level, struct bfs_bpos min,
		       struct bfs_bpos max, struct btree_node **out)
{
	struct btree_cache *bc = &c->cache;
	struct btree_node *n;
	u64 offset;
	int ret;

	ret = bfs_alloc_node(c->alloc, &offset);
	if (ret)
		return ret;
	n = bfs_node_alloc(c);
	if (!n) {
		bfs_alloc_free_now(c->alloc, offset);
		return -ENOMEM;
	}
	n->offset = offset;
	n->seq = bfs_new_node_seq(c);
	n->btree_id = btree_id;
	n->level = level;
	n->min = min;
	n->max = max;
	n->ref = 1;
	n->dirty = true;

	bfs_mutex_lock(&bc->lock);
	if (lookup_locked(bc, offset)) {
		/* a slot was handed out while a node still lives there: a bug, refuse */
		bfs_mutex_unlock(&bc->lock);
		bfs_err("btree %s: slot %llu allocated twice", bfs_btree_id_name(btree_id),
			(unsigned long long)offset);
		bfs_node_free(c, n);
		return -EUCLEAN;
	}
	hash_locked(bc, n);
	bc->nr_dirty++;
	n->mem = bfs_node_mem(c, n);
	bc->bytes += n->mem;
	note_bytes_locked(bc);
	bfs_mutex_unlock(&bc->lock);
	*out = n;
	return 0;
}

void bfs_cache_seal_torn(struct bfs_core *c)
{
	struct btree_cache *bc = &c->cache;
	u64 i;

	/* as a writable core's load does (bfs_cache_get()): the next checkpoint seals them */
	bfs_mutex_lock(&bc->lock);
	for (i = 0; i <= bc->mask; i++) {
		struct btree_node *n;

		for (n = bc->table[i]; n; n = n->hnext) {
			if (!n->torn || n->dirty || n->loading || n->dead)
				continue;
			n->dirty = true;
			bc->nr_dirty++;
			lru_del(n);
		}
	}
	bfs_mutex_unlock(&bc->lock);
}

void bfs_cache_set_dirty(struct bfs_core *c, struct btree_node *n, bool dirty)
{
	struct btree_cache *bc = &c->cache;

	bfs_mutex_lock(&bc->lock);
	if (n->dirty != dirty) {
		n->dirty = dirty;
		if (dirty) {
			bc->nr_dirty++;
			lru_del(n);
		} else {
			bc->nr_dirty--;
			if (n->hashed)
				lru_add(bc, n);
		}
	}
	bc->bytes += bfs_node_mem(c, n) - n->mem;
	n->mem = bfs_node_mem(c, n);
	note_bytes_locked(bc);
	bfs_mutex_unlock(&bc->lock);
}

void bfs_cache_kill(struct bfs_core *c, struct btree_node *n)
{
	struct btree_cache *bc = &c->cache;
	bool written = n->written != 0;

	bfs_mutex_lock(&bc->lock);
	if (n->hashed) {
		unhash_locked(bc, n);
		lru_del(n);
		/* the caller holds a reference: whoever drops the last one frees it */
		__atomic_fetch_or(&n->ref, REF_UNHASHED, __ATOMIC_RELAXED);
	}
	if (n->dirty) {
		n->dirty = false;
		bc->nr_dirty--;
	}
	bfs_mutex_unlock(&bc->lock);
	if (written)
		bfs_alloc_free_later(c->alloc, n->offset);
	else
		bfs_alloc_free_now(c->alloc, n->offset);
}

int bfs_cache_dirty_nodes(struct bfs_core *c, struct btree_node ***out, size_t *nr)
{
	struct btree_cache *bc = &c->cache;
	struct btree_node **arr, *n;
	size_t cnt = 0;
	u64 i;

	bfs_mutex_lock(&bc->lock);
	arr = bfs_malloc((bc->nr_dirty + 1) * sizeof(*arr));
	if (!arr) {
		bfs_mutex_unlock(&bc->lock);
		return -ENOMEM;
	}
	for (i = 0; i <= bc->mask; i++)
		for (n = bc->table[i]; n; n = n->hnext)
			if (n->dirty && cnt < bc->nr_dirty) {
				__atomic_fetch_add(&n->ref, 1, __ATOMIC_RELAXED);
				lru_del(n);
				arr[cnt++] = n;
			}
	bfs_mutex_unlock(&bc->lock);
	*out = arr;
	*nr = cnt;
	return 0;
}
