// SPDX-License-Identifier: MIT
/*
 * Range locks (range_lock.h): one small table per inode stripe, under a
 * mutex of its own that is only ever held for a few stores (it is taken
 * by commit fixups with btree leaves locked, so nothing is waited for
 * under it but its condition variable).  Lock order: the stripe's inode
 * lock > btree locks > this table's lock.
 */
#include <inttypes.h>

#include <bfs/log.h>

#include "ns.h"
#include "range_lock.h"

#define RANGES_PER_STRIPE	32	/* in flight per stripe; more: the ordinary way */
#define RANGE_INODES		4	/* files with range writers per stripe */

struct range_inode {
	u64	ino;			/* 0: free */
	unsigned holders;
	struct bfs_inode inode;		/* as committed, while it has holders */
};

struct bfs_range {
	struct range_stripe *s;
	struct range_inode *ri;		/* NULL: free entry */
	u64	start, end;		/* bytes */
};

struct range_stripe {
	bfs_mutex lock;
	bfs_cond ended;			/* a range was put */
	unsigned nr;			/* ranges held (read unlocked: atomic) */
	struct bfs_range r[RANGES_PER_STRIPE];
	struct range_inode ri[RANGE_INODES];
};

/*
 * A stripe's table is allocated by its first range writer: 2 KiB a stripe,
 * half a megabyte for all of them, is more than a read-only open (fsck,
 * bfs debug) or a filesystem without overwrites of written files should
 * pay (fsck's whole peak memory is about 4 MB)
 */
struct bfs_range_locks {
	struct range_stripe *s[BFS_INODE_LOCKS];	/* NULL until first used (atomic) */
	u64	ranged, overlap_waits, drain_waits, full;	/* atomic */
};

static void count(u64 *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

int bfs_range_locks_init(struct bfs_fs *fs)
{
	struct bfs_range_locks *rl = bfs_zalloc(sizeof(*rl));

	if (!rl)
		return -ENOMEM;
	fs->ranges = rl;
	return 0;
}

static void stripe_free(struct range_stripe *s)
{
	bfs_cond_destroy(&s->ended);
	bfs_mutex_destroy(&s->lock);
	bfs_free(s);
}

/* @ino's stripe table, allocated if @create; NULL if none (yet, or no memory) */
static struct range_stripe *stripe_get(struct bfs_fs *fs, u64 ino, bool create)
{
	struct range_stripe **slot = &fs->ranges->s[ino % BFS_INODE_LOCKS];
	struct range_stripe *s = __atomic_load_n(slot, __ATOMIC_ACQUIRE), *none = NULL;
	unsigned j;

	if (s || !create)
		return s;
	s = bfs_zalloc(sizeof(*s));
	if (!s)
		return NULL;
	bfs_mutex_init(&s->lock);
	bfs_cond_init(&s->ended);
	for (j = 0; j < RANGES_PER_STRIPE; j++)
		s->r[j].s = s;
	/* the caller holds the inode stripe lock, so no race; should one come, one table wins */
	if (__atomic_compare_exchange_n(slot, &none, s, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return s;
	stripe_free(s);
	return none;
}

void bfs_range_locks_exit(struct bfs_fs *fs)
{
	struct bfs_range_locks *rl = fs->ranges;
	unsigned i;

	if (!rl)
		return;
	for (i = 0; i < BFS_INODE_LOCKS; i++)
		if (rl->s[i])
			stripe_free(rl->s[i]);
	bfs_free(rl);
	fs->ranges = NULL;
}

static struct range_inode *find_inode(struct range_stripe *s, u64 ino)
{
	unsigned i;

	for (i = 0; i < RANGE_INODES; i++)
		if (s->ri[i].ino == ino)
			return &s->ri[i];
	return NULL;
}

bool bfs_range_busy(struct bfs_fs *fs, u64 ino)
{
	struct range_stripe *s;
	bool busy;

	if (!fs->ranges)
		return false;
	s = stripe_get(fs, ino, false);
	if (!s || !__atomic_load_n(&s->nr, __ATOMIC_ACQUIRE))
		return false;
	bfs_mutex_lock(&s->lock);
	busy = find_inode(s, ino) != NULL;
	bfs_mutex_unlock(&s->lock);
	return busy;
}

/*
 * The caller holds the stripe lock, so no range of @ino can be registered
 * meanwhile: once its holders are gone, they stay gone.
 */
void bfs_range_drain(struct bfs_fs *fs, u64 ino)
{
	struct range_stripe *s;
	bool waited = false;

	if (!fs->ranges)
		return;
	s = stripe_get(fs, ino, false);
	/* pairs with the release in bfs_range_put(): a zero means every commit is in */
	if (!s || !__atomic_load_n(&s->nr, __ATOMIC_ACQUIRE))
		return;
	bfs_mutex_lock(&s->lock);
	while (find_inode(s, ino)) {
		waited = true;
		bfs_cond_wait(&s->ended, &s->lock);
	}
	bfs_mutex_unlock(&s->lock);
	if (waited)
		count(&fs->ranges->drain_waits);
}

void bfs_range_drain_all(struct bfs_fs *fs)
{
	unsigned i;

	for (i = 0; fs->ranges && i < BFS_INODE_LOCKS; i++) {
		struct range_stripe *s = stripe_get(fs, i, false);

		if (!s || !__atomic_load_n(&s->nr, __ATOMIC_ACQUIRE))
			continue;
		bfs_mutex_lock(&s->lock);
		while (s->nr)
			bfs_cond_wait(&s->ended, &s->lock);
		bfs_mutex_unlock(&s->lock);
	}
}

static bool overlaps(struct range_stripe *s, u64 ino, u64 start, u64 end)
{
	unsigned i;

	for (i = 0; i < RANGES_PER_STRIPE; i++) {
		const struct bfs_range *r = &s->r[i];

		if (r->ri && r->ri->ino == ino && r->start < end && start < r->end)
			return true;
	}
	return false;
}

struct bfs_range *bfs_range_get(struct bfs_fs *fs, const struct bfs_inode *inode, u64 start,
				u64 end)
{
	struct range_stripe *s;
	struct range_inode *ri;
	struct bfs_range *r = NULL;
	struct bfs_inode fresh;
	bool first = false;
	unsigned i;

	if (!fs->ranges)
		return NULL;
	s = stripe_get(fs, inode->ino, true);
	if (!s) {
		count(&fs->ranges->full);
		return NULL;
	}
	bfs_mutex_lock(&s->lock);
	while (overlaps(s, inode->ino, start, end)) {
		count(&fs->ranges->overlap_waits);
		bfs_cond_wait(&s->ended, &s->lock);
	}
	for (i = 0; i < RANGES_PER_STRIPE && !r; i++)
		if (!s->r[i].ri)
			r = &s->r[i];
	ri = find_inode(s, inode->ino);
	if (!ri && r) {
		ri = find_inode(s, 0);
		if (ri) {
			/* the first holder: nobody else changes the inode until the last one is gone */
			ri->ino = inode->ino;
			ri->inode = *inode;
			first = true;
		}
	}
	if (!r || !ri) {
		bfs_mutex_unlock(&s->lock);
		count(&fs->ranges->full);
		return NULL;
	}
	ri->holders++;
	r->ri = ri;
	r->start = start;
	r->end = end;
	__atomic_add_fetch(&s->nr, 1, __ATOMIC_RELEASE);
	bfs_mutex_unlock(&s->lock);
	if (first) {
		/*
		 * The caller read @inode while the range writers before us may
		 * still have been committing (the last one left since): its
		 * sectors and times are the btree's now.  Read with the table
		 * unlocked (fixups take it with leaves locked); no other holder
		 * can join before we return, the caller has the stripe lock.
		 */
		if (bfs_inode_read(fs, inode->ino, &fresh)) {
			bfs_range_put(fs, r);
			return NULL;
		}
		bfs_mutex_lock(&s->lock);
		ri->inode = fresh;
		bfs_mutex_unlock(&s->lock);
	}
	count(&fs->ranges->ranged);
	return r;
}

void bfs_range_put(struct bfs_fs *fs, struct bfs_range *r)
{
	struct range_stripe *s = r->s;

	(void)fs;
	bfs_mutex_lock(&s->lock);
	if (!--r->ri->holders)
		r->ri->ino = 0;
	r->ri = NULL;
	__atomic_sub_fetch(&s->nr, 1, __ATOMIC_RELEASE);
	bfs_cond_broadcast(&s->ended);
	bfs_mutex_unlock(&s->lock);
}

void bfs_range_inode_snapshot(struct bfs_fs *fs, struct bfs_range *r, struct bfs_inode *out)
{
	(void)fs;
	bfs_mutex_lock(&r->s->lock);
	*out = r->ri->inode;
	bfs_mutex_unlock(&r->s->lock);
}

/*
 * With the inode key's leaf write-locked (or commit_lock exclusive), just
 * before it is applied: the inode as the range commits applied before
 * this one left it, plus ours.  Times only move forward.
 */
void bfs_range_inode_fixup(void *ctx, enum bfs_btree_id id, struct bfs_bkey *k)
{
	struct bfs_range_commit *rc = ctx;
	struct range_stripe *s = rc->r->s;
	struct bfs_inode *i = &rc->r->ri->inode;
	struct bfs_ns_inode n;

	if (id != BFS_BTREE_INODES || k->type != BFS_KEY_INODE ||
	    le64_to_cpu(k->inode) != i->ino || rc->fixed)
		return;
	bfs_mutex_lock(&s->lock);
	if ((s64)i->sectors + rc->sectors < 0) {
		bfs_warn("inode %" PRIu64 ": sectors would go negative (%" PRId64 ")", i->ino,
			 (s64)i->sectors + rc->sectors);
		rc->sectors = -(s64)i->sectors;
	}
	i->sectors = (u64)((s64)i->sectors + rc->sectors);
	if (rc->now > i->mtime)
		i->mtime = rc->now;
	if (rc->now > i->ctime)
		i->ctime = rc->now;
	n = (struct bfs_ns_inode){ .i = *i };
	bfs_ns_inode_encode(&n, bfs_bkey_val(k));
	rc->fixed = true;
	bfs_mutex_unlock(&s->lock);
}

void bfs_range_commit_end(struct bfs_range_commit *rc, int ret)
{
	struct range_stripe *s = rc->r->s;

	/* a failed commit after the fixup: nothing was applied, or the core is dead */
	if (ret && rc->fixed) {
		bfs_mutex_lock(&s->lock);
		rc->r->ri->inode.sectors -= (u64)rc->sectors;
		bfs_mutex_unlock(&s->lock);
	}
	rc->fixed = false;
}

void bfs_range_stats(struct bfs_fs *fs, struct bfs_range_stats *st)
{
	struct bfs_range_locks *rl = fs->ranges;

	*st = (struct bfs_range_stats){ 0 };
	if (!rl)
		return;
	st->ranged = __atomic_load_n(&rl->ranged, __ATOMIC_RELAXED);
	st->overlap_waits = __atomic_load_n(&rl->overlap_waits, __ATOMIC_RELAXED);
	st->drain_waits = __atomic_load_n(&rl->drain_waits, __ATOMIC_RELAXED);
	st->full = __atomic_load_n(&rl->full, __ATOMIC_RELAXED);
}
