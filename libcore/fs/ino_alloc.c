// SPDX-License-Identifier: MIT
/*
 * Handing out inode numbers from ranges reserved per thread
 * (doc/format/fs.md, "Inode numbers").
 *
 * The counter key on disk is the high-water mark of every number ever
 * reserved, not of every number used.  A thread that needs a number and has
 * none left takes fs->ino_alloc_lock, commits the counter moved up by a
 * whole range in a transaction of its own, and then hands the range out to
 * its own creates without the lock and without writing the counter.  So
 * creates in different threads neither wait for each other here nor write
 * the same key, and their inodes lie in different ranges (different leaves,
 * mostly).
 *
 * Why this is safe across a crash: the reservation has been appended to the
 * journal before any create that uses one of its numbers begins, so that
 * create's entry is the same one or a later one, and replay only ever
 * applies a prefix of the entries.  A replayed inode therefore always lies
 * below the replayed counter.  Numbers reserved but never used are skipped
 * for good (the counter never goes back), which costs nothing with 64-bit
 * numbers and which fsck accepts: only a counter at or below an inode in
 * use is damage (check_roots.c).
 *
 * A clean close gives the unused numbers back: it moves the counter down
 * to just past the highest number handed out while open (fs->ino_top), so
 * that remounts and short-lived programs (bfs debug -w) do not skip a range
 * each.  That is safe because no inode has a number between the two, and
 * the write comes after every create of this open in the journal; if it is
 * lost in a crash, the counter just stays where it was.
 *
 * Per thread and not per directory: a single-threaded program still gets
 * consecutive numbers wherever it creates, and the state is a few words of
 * thread-local storage.  The range belongs to one open filesystem, named by
 * fs->ino_range_owner (unique in the process for every open, so a range of
 * a closed filesystem is never used on another opened at the same address).
 */
#include "ns.h"

static u64 owners;	/* the last owner id handed to an opened filesystem */

static __thread struct {
	u64	owner;		/* fs->ino_range_owner of the range; 0: none */
	u64	next, end;	/* numbers next .. end - 1 are this thread's */
	u64	size;		/* of the last range reserved */
} range;

u64 bfs_ns_ino_owner_new(void)
{
	return __atomic_add_fetch(&owners, 1, __ATOMIC_RELAXED);
}

/*
 * The size of this thread's next range: small at first, so that a program
 * that creates a few files skips few numbers, doubling with every refill up
 * to BFS_INO_RANGE_MAX, so that a thread creating many files keeps its
 * inodes apart from another's: a 256 KiB leaf holds ~1700 inode keys, and
 * two threads whose newest inodes share a leaf wait for each other's
 * commits (the leaf is locked until the journal append, doc/commit.md).
 */
static u64 next_range_size(struct bfs_fs *fs)
{
	if (range.owner != fs->ino_range_owner || !range.size)
		return BFS_INO_RANGE_MIN;
	return BFS_MIN(range.size * 2, (u64)BFS_INO_RANGE_MAX);
}

/* move the counter up by a range (or to the limit) and make the range this thread's */
static int reserve(struct bfs_fs *fs)
{
	u64 size = next_range_size(fs);
	struct bfs_trans *t = NULL;
	u64 start, end;
	int ret;

	bfs_mutex_lock(&fs->ino_alloc_lock);
	start = fs->next_ino;
	end = start < BFS_INO_LIMIT - size ? start + size : BFS_INO_LIMIT;
	if (start >= end) {
		ret = -ENOSPC;
		goto out;
	}
	/*
	 * Commit under the lock: counter writes reach the journal in
	 * increasing order, so replay never moves the counter back.
	 */
	ret = bfs_trans_begin(fs->c, &t);
	if (!ret)
		ret = bfs_ns_counter_write(t, end);
	if (!ret)
		ret = bfs_trans_commit(t, NULL);
	bfs_trans_end(t);
	if (!ret) {
		fs->next_ino = end;
		range.owner = fs->ino_range_owner;
		range.next = start;
		range.end = end;
		range.size = size;
	}
out:
	bfs_mutex_unlock(&fs->ino_alloc_lock);
	return ret;
}

int bfs_ns_ino_alloc(struct bfs_fs *fs, u64 *ino)
{
	u64 top;
	int ret;

	if (range.owner != fs->ino_range_owner || range.next >= range.end) {
		ret = reserve(fs);
		if (ret)
			return ret;
	}
	*ino = range.next++;
	top = __atomic_load_n(&fs->ino_top, __ATOMIC_RELAXED);
	while (top <= *ino && !__atomic_compare_exchange_n(&fs->ino_top, &top, *ino + 1, true,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return 0;
}

int bfs_ns_ino_give_back(struct bfs_fs *fs)
{
	u64 top = BFS_MAX(fs->ino_base, __atomic_load_n(&fs->ino_top, __ATOMIC_RELAXED));
	struct bfs_trans *t = NULL;
	int ret = 0;

	bfs_mutex_lock(&fs->ino_alloc_lock);
	if (top < fs->next_ino) {
		ret = bfs_trans_begin(fs->c, &t);
		if (!ret)
			ret = bfs_ns_counter_write(t, top);
		if (!ret)
			ret = bfs_trans_commit(t, NULL);
		bfs_trans_end(t);
		if (!ret)
			fs->next_ino = top;
	}
	bfs_mutex_unlock(&fs->ino_alloc_lock);
	return ret;
}
