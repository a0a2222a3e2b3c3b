// SPDX-License-Identifier: MIT
/*
 * Inode locks: BFS_INODE_LOCKS striped mutexes, inode ino uses stripe
 * ino % BFS_INODE_LOCKS.  Btree transactions have no conflict detection, so
 * these locks are what makes read-modify-write of inodes and directories
 * safe.  Several inodes are locked in ascending STRIPE order (two inodes may
 * share a stripe, and ascending inode order would not be a total order on
 * stripes), each stripe once.
 *
 * Writers inside a file's size hold a range of it instead (range_lock.h):
 * every lock here waits, holding the stripe, until the inode has no range
 * holder left, so its holder has the file to itself as before.  Only the
 * write path's bfs_inode_lock_nodrain() does not.
 */
#include "ns.h"
#include "range_lock.h"
#include "tail_buf.h"

static unsigned stripe(u64 ino)
{
	return (unsigned)(ino % BFS_INODE_LOCKS);
}

/* sorted, unique stripes of the non-zero @inos; returns how many */
static unsigned stripes_of(const u64 *inos, unsigned nr, unsigned *out)
{
	unsigned i, j, n = 0;

	for (i = 0; i < nr; i++) {
		unsigned s;

		if (!inos[i])
			continue;
		s = stripe(inos[i]);
		for (j = 0; j < n && out[j] < s; j++)
			;
		if (j < n && out[j] == s)
			continue;
		memmove(out + j + 1, out + j, (n - j) * sizeof(*out));
		out[j] = s;
		n++;
	}
	return n;
}

void bfs_inode_lockv(struct bfs_fs *fs, const u64 *inos, unsigned nr)
{
	unsigned s[BFS_NS_MAX_LOCKS], n, i;

	n = stripes_of(inos, BFS_MIN(nr, BFS_NS_MAX_LOCKS), s);
	for (i = 0; i < n; i++)
		bfs_mutex_lock(&fs->inode_locks[s[i]]);
	for (i = 0; i < BFS_MIN(nr, BFS_NS_MAX_LOCKS); i++)
		if (inos[i])
			bfs_range_drain(fs, inos[i]);
	for (i = 0; i < BFS_MIN(nr, BFS_NS_MAX_LOCKS); i++)
		if (inos[i])
			bfs_tail_flush_locked(fs, inos[i]);
}

void bfs_inode_unlockv(struct bfs_fs *fs, const u64 *inos, unsigned nr)
{
	unsigned s[BFS_NS_MAX_LOCKS], n, i;

	n = stripes_of(inos, BFS_MIN(nr, BFS_NS_MAX_LOCKS), s);
	for (i = n; i-- > 0;)
		bfs_mutex_unlock(&fs->inode_locks[s[i]]);
}

void bfs_inode_lock_nodrain(struct bfs_fs *fs, u64 ino)
{
	bfs_mutex_lock(&fs->inode_locks[stripe(ino)]);
}

void bfs_inode_lock_raw(struct bfs_fs *fs, u64 ino)
{
	bfs_mutex_lock(&fs->inode_locks[stripe(ino)]);
	bfs_range_drain(fs, ino);
}

bool bfs_inode_trylock(struct bfs_fs *fs, u64 ino)
{
	if (!bfs_mutex_trylock(&fs->inode_locks[stripe(ino)]))
		return false;
	if (!bfs_range_busy(fs, ino))
		return true;
	bfs_mutex_unlock(&fs->inode_locks[stripe(ino)]);
	return false;
}

void bfs_inode_lock(struct bfs_fs *fs, u64 ino)
{
	bfs_inode_lock_raw(fs, ino);
	bfs_tail_flush_locked(fs, ino);
}

void bfs_inode_unlock(struct bfs_fs *fs, u64 ino)
{
	bfs_mutex_unlock(&fs->inode_locks[stripe(ino)]);
}

void bfs_inode_lock2(struct bfs_fs *fs, u64 a, u64 b)
{
	u64 inos[2] = { a, b };

	bfs_inode_lockv(fs, inos, 2);
}

void bfs_inode_unlock2(struct bfs_fs *fs, u64 a, u64 b)
{
	u64 inos[2] = { a, b };

	bfs_inode_unlockv(fs, inos, 2);
}

/*
 * Every inode stripe (ascending, as above): no namespace or data operation
 * runs meanwhile.  Copy-GC takes gc_lock before inode locks (and only tries
 * gc_lock while holding one), so callers that need gc_lock take it first.
 */
void bfs_fs_quiesce(struct bfs_fs *fs)
{
	unsigned i;

	for (i = 0; i < BFS_INODE_LOCKS; i++)
		bfs_mutex_lock(&fs->inode_locks[i]);
	bfs_range_drain_all(fs);
}

void bfs_fs_unquiesce(struct bfs_fs *fs)
{
	unsigned i;

	for (i = BFS_INODE_LOCKS; i-- > 0;)
		bfs_mutex_unlock(&fs->inode_locks[i]);
}
