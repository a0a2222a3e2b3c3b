// SPDX-License-Identifier: MIT
/*
 * Open inodes and orphans (doc/format/fs.md, "Orphans").
 *
 * An inode whose last name goes away while it is open (bfs_fs_inode_open)
 * must live on until the last release.  The open counts are kept in memory
 * only; an unlinked-but-open inode is recorded on disk as an orphan key
 * (inodes btree, pos (0, ino)) in the same transaction that drops its last
 * link, so that after a crash the next read-write open finds and frees it.
 * The last release (or that open) frees the inode and the orphan key in one
 * transaction.
 *
 * Open counts change under the inode's lock, so an unlink deciding between
 * "orphan" and "free now" and a concurrent open or release see one order.
 */
#include "ns.h"

/* the FUSE mount holds a reference per inode the kernel has cached: many */
#define OPEN_BUCKETS	16384

/* what an open inode's security.capability is known to be (bfs_fs_has_caps()) */
enum caps_state {
	CAPS_UNKNOWN,	/* look it up */
	CAPS_NONE,
	CAPS_SOME,
};

struct open_entry {
	struct open_entry *next;
	u64	ino;
	u64	count;
	u32	cache_opens;	/* opens through a host page cache (bfs_fs_cache_open()) */
	u32	cache_gen;	/* bumped by each of those and each fill: bfs_fs_cache_clear() */
	u8	caps;		/* enum caps_state, under the table lock */
	bool	cached;		/* the host page cache may hold pages of it */
};

struct bfs_open_inodes {
	bfs_mutex	lock;		/* the table itself; counts also under inode locks */
	struct open_entry **buckets;	/* OPEN_BUCKETS, a mapping of its own */
};

/*
 * The bucket array (128 KiB) is mapped, not allocated: its pages are
 * resident only once a bucket in them is used, so an open that never opens
 * a file (fsck, the tools) does not pay for it, and from the heap calloc()
 * could hand back recycled pages it must clear.
 */
#define OPEN_TABLE_BYTES	(OPEN_BUCKETS * sizeof(struct open_entry *))

int bfs_open_inodes_init(struct bfs_fs *fs)
{
	fs->open = bfs_zalloc(sizeof(*fs->open));
	if (!fs->open)
		return -ENOMEM;
	fs->open->buckets = bfs_map_anon(OPEN_TABLE_BYTES);
	if (!fs->open->buckets) {
		bfs_free(fs->open);
		fs->open = NULL;
		return -ENOMEM;
	}
	bfs_mutex_init(&fs->open->lock);
	return 0;
}

void bfs_open_inodes_exit(struct bfs_fs *fs)
{
	unsigned i;

	if (!fs->open)
		return;
	for (i = 0; i < OPEN_BUCKETS; i++) {
		while (fs->open->buckets[i]) {
			struct open_entry *e = fs->open->buckets[i];

			fs->open->buckets[i] = e->next;
			bfs_free(e);
		}
	}
	bfs_mutex_destroy(&fs->open->lock);
	bfs_unmap(fs->open->buckets, OPEN_TABLE_BYTES);
	bfs_free(fs->open);
	fs->open = NULL;
}

static struct open_entry **find(struct bfs_open_inodes *o, u64 ino)
{
	struct open_entry **p = &o->buckets[ino % OPEN_BUCKETS];

	while (*p && (*p)->ino != ino)
		p = &(*p)->next;
	return p;
}

u64 bfs_open_count(struct bfs_fs *fs, u64 ino)
{
	struct open_entry **p;
	u64 n;

	bfs_mutex_lock(&fs->open->lock);
	p = find(fs->open, ino);
	n = *p ? (*p)->count : 0;
	bfs_mutex_unlock(&fs->open->lock);
	return n;
}

int bfs_fs_inode_open(struct bfs_fs *fs, u64 ino)
{
	struct bfs_ns_inode inode;
	struct open_entry **p;
	int ret;

	bfs_inode_lock(fs, ino);
	ret = bfs_ns_inode_read(fs, ino, &inode);
	if (!ret) {
		bfs_mutex_lock(&fs->open->lock);
		p = find(fs->open, ino);
		if (!*p) {
			*p = bfs_zalloc(sizeof(**p));
			if (*p)
				(*p)->ino = ino;
			else
				ret = -ENOMEM;
		}
		if (*p && (*p)->count == UINT64_MAX)
			ret = -EOVERFLOW;
		else if (*p)
			(*p)->count++;
		bfs_mutex_unlock(&fs->open->lock);
	}
	bfs_inode_unlock(fs, ino);
	return ret;
}

/* free an unlinked inode that nobody holds open any more; the caller holds its lock */
static int free_unlinked(struct bfs_fs *fs, u64 ino)
{
	struct bfs_ns_inode inode;
	struct bfs_trans *t;
	int ret;

	ret = bfs_ns_inode_read(fs, ino, &inode);
	if (ret == -ENOENT)
		return 0;
	if (ret || inode.i.nlink)
		return ret;
	if (fs->read_only)
		return 0;
	ret = bfs_trans_begin(fs->c, &t);
	if (ret)
		return ret;
	ret = bfs_ns_inode_delete(fs, t, &inode);
	if (ret) {
		bfs_trans_end(t);
		return ret;
	}
	return bfs_ns_commit(t);
}

int bfs_ns_inode_free_unlinked(struct bfs_fs *fs, u64 ino)
{
	int ret = bfs_open_count(fs, ino) ? 0 : free_unlinked(fs, ino);

	/* the name is gone already: the orphan stays for the next open to free */
	if (ret)
		bfs_warn("inode %llu: unlinked, freeing its data failed (error %d): the next "
			 "read-write open frees it", (unsigned long long)ino, ret);
	return 0;
}

/*
 * Drop @n references.  More than are held (a caller's miscount) drops them
 * all and says -EINVAL: the inode is then freed if unlinked, as it would be
 * at close anyway.
 */
static int inode_put(struct bfs_fs *fs, u64 ino, u64 n)
{
	struct open_entry **p, *e;
	bool last = false;
	int ret = 0;

	bfs_inode_lock(fs, ino);
	bfs_mutex_lock(&fs->open->lock);
	p = find(fs->open, ino);
	e = *p;
	if (!e) {
		ret = -EINVAL;
	} else {
		if (n > e->count)
			ret = -EINVAL;
		e->count = n >= e->count ? 0 : e->count - n;
		if (!e->count) {
			*p = e->next;
			bfs_free(e);
			last = true;
		}
	}
	bfs_mutex_unlock(&fs->open->lock);
	if (last) {
		int r = free_unlinked(fs, ino);

		ret = r ? r : ret;
	}
	bfs_inode_unlock(fs, ino);
	return ret;
}

int bfs_fs_inode_release(struct bfs_fs *fs, u64 ino)
{
	return inode_put(fs, ino, 1);
}

int bfs_fs_inode_forget(struct bfs_fs *fs, u64 ino, u64 n)
{
	return n ? inode_put(fs, ino, n) : 0;
}

#define XATTR_NAME_CAPS	"security.capability"

/*
 * Whether @ino has a security.capability xattr: the FUSE daemon asks before
 * every direct write, which must drop one (cmd/fuse_kill.c).  The answer is
 * kept with the open count, so an open inode costs one lookup rather than
 * one per write; bfs_open_caps_forget() drops it whenever an xattr of the
 * inode changes.  Both that and the lookup below run under the inode's
 * lock, and a change commits before its lock goes, so what is stored here
 * is never older than the last committed change.  An inode nobody holds
 * open has no entry and is looked up every time.
 */
int bfs_fs_has_caps(struct bfs_fs *fs, u64 ino)
{
	struct open_entry **p;
	ssize_t n;
	u8 st;

	bfs_mutex_lock(&fs->open->lock);
	p = find(fs->open, ino);
	st = *p ? (*p)->caps : CAPS_UNKNOWN;
	bfs_mutex_unlock(&fs->open->lock);
	if (st != CAPS_UNKNOWN)
		return st == CAPS_SOME;
	bfs_inode_lock_raw(fs, ino);
	n = bfs_fs_getxattr(fs, ino, XATTR_NAME_CAPS, NULL, 0);
	if (n >= 0 || n == -ENODATA) {
		bfs_mutex_lock(&fs->open->lock);
		p = find(fs->open, ino);
		if (*p)
			(*p)->caps = n >= 0 ? CAPS_SOME : CAPS_NONE;
		bfs_mutex_unlock(&fs->open->lock);
	}
	bfs_inode_unlock(fs, ino);
	if (n == -ENODATA)
		return 0;
	return n < 0 ? (int)n : 1;
}

void bfs_open_caps_forget(struct bfs_fs *fs, u64 ino)
{
	struct open_entry **p;

	bfs_mutex_lock(&fs->open->lock);
	p = find(fs->open, ino);
	if (*p)
		(*p)->caps = CAPS_UNKNOWN;
	bfs_mutex_unlock(&fs->open->lock);
}

/*
 * The host page cache (bfs_fs_cache_state()).  The entry lives while the
 * kernel knows the inode (its lookups hold references), so "cached" lasts
 * until the kernel evicts the inode and its pages with it, or until
 * bfs_fs_cache_clear() after every page was dropped.  All under the table
 * lock, whose order is what makes a fill or an open either seen by a
 * writer's look after its write, or later than the write.
 */
/* @ino's entry or NULL, the table locked */
static struct open_entry *lock_entry(struct bfs_fs *fs, u64 ino)
{
	bfs_mutex_lock(&fs->open->lock);
	return *find(fs->open, ino);
}

void bfs_fs_cache_open(struct bfs_fs *fs, u64 ino)
{
	struct open_entry *e = lock_entry(fs, ino);

	if (e) {
		e->cache_opens++;
		e->cache_gen++;
		e->cached = true;
	}
	bfs_mutex_unlock(&fs->open->lock);
}

void bfs_fs_cache_close(struct bfs_fs *fs, u64 ino)
{
	struct open_entry *e = lock_entry(fs, ino);

	/* its pages stay: e->cached too */
	if (e && e->cache_opens)
		e->cache_opens--;
	bfs_mutex_unlock(&fs->open->lock);
}

void bfs_fs_cache_fill(struct bfs_fs *fs, u64 ino)
{
	struct open_entry *e = lock_entry(fs, ino);

	if (e) {
		e->cache_gen++;
		e->cached = true;
	}
	bfs_mutex_unlock(&fs->open->lock);
}

enum bfs_cache_state bfs_fs_cache_state(struct bfs_fs *fs, u64 ino, u32 *gen)
{
	struct open_entry *e = lock_entry(fs, ino);
	enum bfs_cache_state st;

	/* no entry (not the FUSE daemon's use): nothing known, assume an open */
	if (!e || e->cache_opens)
		st = BFS_CACHE_OPEN;
	else
		st = e->cached ? BFS_CACHE_LEFT : BFS_CACHE_NONE;
	*gen = e ? e->cache_gen : 0;
	bfs_mutex_unlock(&fs->open->lock);
	return st;
}

void bfs_fs_cache_clear(struct bfs_fs *fs, u64 ino, u32 gen)
{
	struct open_entry *e = lock_entry(fs, ino);

	if (e && !e->cache_opens && e->cache_gen == gen)
		e->cached = false;
	bfs_mutex_unlock(&fs->open->lock);
}

int bfs_ns_inode_unlinked(struct bfs_fs *fs, struct bfs_trans *t, struct bfs_ns_inode *inode,
			  bool *free_after)
{
	struct bfs_bkey k;
	int ret;

	*free_after = false;
	if (!bfs_open_count(fs, inode->i.ino)) {
		if (!S_ISREG(inode->i.mode) || !inode->i.sectors)
			return bfs_ns_inode_delete(fs, t, inode);
		*free_after = true;
	}
	ret = bfs_ns_inode_write(t, inode);
	if (ret)
		return ret;
	bfs_bkey_init(&k, BFS_KEY_ORPHAN, BFS_POS(0, inode->i.ino, 0), 0);
	return bfs_trans_update(t, BFS_BTREE_INODES, &k);
}

/* the orphan keys, collected before any of them is freed */
static int orphans_list(struct bfs_fs *fs, u64 **out, size_t *nr)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	size_t cap = 0;
	int ret;

	*out = NULL;
	*nr = 0;
	bfs_btree_iter_init(&it, fs->c, BFS_BTREE_INODES, BFS_POS(0, 1, 0), 0);
	for_each_btree_key(&it, k, ret) {
		if (le64_to_cpu(k->inode))
			break;
		if (k->type != BFS_KEY_ORPHAN)
			continue;
		if (*nr == cap) {
			u64 *n = bfs_realloc(*out, (cap = cap * 2 + 16) * sizeof(u64));

			if (!n) {
				ret = -ENOMEM;
				break;
			}
			*out = n;
		}
		(*out)[(*nr)++] = le64_to_cpu(k->offset);
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

int bfs_orphans_recover(struct bfs_fs *fs)
{
	u64 *inos;
	size_t nr, i;
	int ret;

	ret = orphans_list(fs, &inos, &nr);
	for (i = 0; i < nr && !ret; i++) {
		struct bfs_ns_inode inode;
		struct bfs_trans *t = NULL;

		bfs_inode_lock(fs, inos[i]);
		ret = bfs_ns_inode_read(fs, inos[i], &inode);
		if (!ret && !inode.i.nlink) {
			ret = free_unlinked(fs, inos[i]);
		} else if (!ret || ret == -ENOENT) {
			/* linked again or already gone: only the orphan key is stale */
			ret = bfs_trans_begin(fs->c, &t);
			if (!ret)
				ret = bfs_trans_delete(t, BFS_BTREE_INODES, BFS_POS(0, inos[i], 0));
			ret = ret ? (bfs_trans_end(t), ret) : bfs_ns_commit(t);
		}
		bfs_inode_unlock(fs, inos[i]);
	}
	if (nr && !ret)
		bfs_info("freed %zu orphaned inode(s)", nr);
	bfs_free(inos);
	return ret;
}

int bfs_open_inodes_close(struct bfs_fs *fs)
{
	unsigned i;
	int ret = 0, r;

	for (i = 0; i < OPEN_BUCKETS; i++) {
		struct open_entry *e;

		while ((e = fs->open->buckets[i])) {
			u64 ino = e->ino;

			fs->open->buckets[i] = e->next;
			bfs_free(e);
			bfs_inode_lock(fs, ino);
			r = free_unlinked(fs, ino);
			bfs_inode_unlock(fs, ino);
			if (r && !ret)
				ret = r;
		}
	}
	return ret;
}
