// SPDX-License-Identifier: MIT
/*
 * rename(2) and renameat2(2) (NOREPLACE, EXCHANGE) in one transaction.
 *
 * fs->rename_lock is held for the whole call, as the VFS holds
 * s_vfs_rename_mutex: only renames change a directory's parent, so while it
 * is held the ".." chain walked by the loop check cannot change.  The (up to)
 * four inodes involved are then locked in stripe order, and the lookups done
 * before locking are repeated under the locks.
 *
 * Each inode is read once into a small table, changed in memory and written
 * once at the end (a transaction cannot read its own updates); the old and
 * new directory may be the same entry of the table.
 */
#include "ns.h"

struct rename_ctx {
	struct bfs_fs	*fs;
	struct bfs_ns_inode tab[4];
	unsigned	nr;
};

/* the table entry of @ino, read on first use */
static int get(struct rename_ctx *r, u64 ino, struct bfs_ns_inode **out)
{
	unsigned i;
	int ret;

	for (i = 0; i < r->nr; i++) {
		if (r->tab[i].i.ino == ino) {
			*out = &r->tab[i];
			return 0;
		}
	}
	ret = bfs_ns_inode_read(r->fs, ino, &r->tab[r->nr]);
	if (ret)
		return ret;
	*out = &r->tab[r->nr++];
	return 0;
}

/* is @dir @anc or below it?  Walks ".." (stable under rename_lock) */
static int is_under(struct bfs_fs *fs, u64 dir, u64 anc)
{
	struct bfs_ns_inode d;
	unsigned steps;
	int ret;

	for (steps = 0; steps < (1U << 20); steps++) {
		if (dir == anc)
			return 1;
		if (dir == BFS_ROOT_INO)
			return 0;
		ret = bfs_ns_inode_read(fs, dir, &d);
		if (ret)
			return ret == -ENOENT ? -EUCLEAN : ret;
		dir = d.parent;
	}
	bfs_err("directory %llu: \"..\" chain does not reach the root", (unsigned long long)dir);
	return -EUCLEAN;
}

static int check_loop(struct bfs_fs *fs, const struct bfs_ns_inode *moved, u64 newdir)
{
	int ret;

	if (!S_ISDIR(moved->i.mode))
		return 0;
	ret = is_under(fs, newdir, moved->i.ino);
	return ret > 0 ? -EINVAL : ret;
}

static int do_rename(struct rename_ctx *r, u64 olddir, const char *oldname, size_t oldlen,
		     u64 newdir, const char *newname, size_t newlen, unsigned flags,
		     const struct bfs_dirent_ref *src, const struct bfs_dirent_ref *tgt)
{
	struct bfs_fs *fs = r->fs;
	struct bfs_ns_inode *od, *nd, *si, *ti = NULL;
	struct bfs_trans *t = NULL;
	bool exchange = flags & BFS_RENAME_EXCHANGE, free_after = false;
	u64 newslot = 0;
	s64 now;
	unsigned i;
	int ret;

	if ((ret = get(r, olddir, &od)) || (ret = get(r, newdir, &nd)))
		return ret;
	if (!S_ISDIR(od->i.mode) || !S_ISDIR(nd->i.mode))
		return -ENOTDIR;
	if (!nd->i.nlink)
		return -ENOENT;
	ret = get(r, src->ino, &si);
	if (!ret && tgt)
		ret = get(r, tgt->ino, &ti);
	if (ret)
		return ret == -ENOENT ? -EUCLEAN : ret;

	if (tgt && (flags & BFS_RENAME_NOREPLACE))
		return -EEXIST;
	if (!tgt && exchange)
		return -ENOENT;
	/* same entry, or two names of one inode: nothing to do (POSIX) */
	if ((olddir == newdir && tgt && tgt->slot == src->slot) || (tgt && tgt->ino == src->ino))
		return 0;
	/*
	 * The order of the checks is Linux's (do_renameat2, then vfs_rename):
	 * moving a directory below itself is -EINVAL before any type check, and
	 * replacing an ancestor of the source is -ENOTEMPTY (-EINVAL for an
	 * exchange) whatever the types.
	 */
	ret = check_loop(fs, si, newdir);
	if (ret)
		return ret;
	if (tgt) {
		ret = check_loop(fs, ti, olddir);
		if (ret == -EINVAL && !exchange)
			ret = -ENOTEMPTY;
		if (ret)
			return ret;
	}
	if (tgt && !exchange) {
		if (S_ISDIR(si->i.mode) && !S_ISDIR(ti->i.mode))
			return -ENOTDIR;
		if (!S_ISDIR(si->i.mode) && S_ISDIR(ti->i.mode))
			return -EISDIR;
	}
	if (tgt && !exchange && S_ISDIR(ti->i.mode)) {
		ret = bfs_dir_empty(fs, ti->i.ino);
		if (ret)
			return ret;
	}
	/* the old directory loses an entry, the new one gains one (and loses the target) */
	ret = bfs_iflags_may_change(od->i.flags);
	if (!ret)
		ret = (tgt || exchange) ? bfs_iflags_may_change(nd->i.flags) :
					  bfs_iflags_may_add_entry(nd->i.flags);
	if (!ret)
		ret = bfs_iflags_may_change(si->i.flags);
	if (!ret && ti)
		ret = bfs_iflags_may_change(ti->i.flags);
	if (ret)
		return ret;

	now = bfs_fs_now();
	od->i.mtime = od->i.ctime = now;
	nd->i.mtime = nd->i.ctime = now;
	si->i.ctime = now;
	if (ti)
		ti->i.ctime = now;
	if (olddir != newdir) {
		/* directories moving between parents: "..", and the parents' link counts */
		if (S_ISDIR(si->i.mode)) {
			si->parent = newdir;
			od->i.nlink--;
			nd->i.nlink++;
		}
		if (exchange && S_ISDIR(ti->i.mode)) {
			ti->parent = olddir;
			nd->i.nlink--;
			od->i.nlink++;
		}
		if (od->i.nlink > BFS_LINK_MAX || nd->i.nlink > BFS_LINK_MAX)
			return -EMLINK;
	}
	if (tgt && !exchange) {
		if (S_ISDIR(ti->i.mode)) {
			ti->i.nlink = 0;
			nd->i.nlink--;
		} else {
			ti->i.nlink--;
		}
	}
	if (!tgt) {
		ret = bfs_dir_free_slot(fs, newdir, newname, newlen, &newslot);
		if (ret)
			return ret;
	}

	ret = bfs_trans_begin(fs->c, &t);
	if (ret)
		return ret;
	if (exchange) {
		ret = bfs_dir_add(t, olddir, src->slot, oldname, oldlen, ti->i.ino,
				  bfs_ns_dtype(ti->i.mode));
		if (!ret)
			ret = bfs_dir_add(t, newdir, tgt->slot, newname, newlen, si->i.ino,
					  bfs_ns_dtype(si->i.mode));
	} else {
		/*
		 * Removal first: it may delete whiteouts the new entry then
		 * reuses.  A new entry later in the same directory's slot
		 * space may extend the chain through the old slot: keep a
		 * whiteout there.
		 */
		ret = bfs_dir_remove(fs, t, olddir, src->slot,
				     olddir == newdir && !tgt && newslot > src->slot);
		if (!ret)
			ret = bfs_dir_add(t, newdir, tgt ? tgt->slot : newslot, newname, newlen,
					  si->i.ino, bfs_ns_dtype(si->i.mode));
	}
	for (i = 0; i < r->nr && !ret; i++) {
		if (&r->tab[i] == ti && !exchange && !ti->i.nlink)
			ret = bfs_ns_inode_unlinked(fs, t, ti, &free_after);
		else
			ret = bfs_ns_inode_write(t, &r->tab[i]);
	}
	if (!ret)
		ret = bfs_trans_commit(t, NULL);
	bfs_trans_end(t);
	/* the replaced file, an orphan now (its inode lock is still held) */
	if (!ret && free_after)
		ret = bfs_ns_inode_free_unlinked(fs, ti->i.ino);
	return ret;
}

int bfs_fs_rename(struct bfs_fs *fs, u64 olddir, const char *oldname, size_t oldlen,
		  u64 newdir, const char *newname, size_t newlen, unsigned flags)
{
	struct bfs_dirent_ref src, tgt, src2, tgt2;
	struct bfs_ns_inode d;
	bool have_tgt;
	u64 inos[4];
	int ret;

	if (fs->read_only)
		return -EROFS;
	if ((flags & ~(BFS_RENAME_NOREPLACE | BFS_RENAME_EXCHANGE)) ||
	    (flags & BFS_RENAME_NOREPLACE && flags & BFS_RENAME_EXCHANGE))
		return -EINVAL;
	if ((ret = bfs_ns_check_name(oldname, oldlen)) || (ret = bfs_ns_check_name(newname, newlen)))
		return ret;
	if (bfs_ns_is_dot(oldname, oldlen) || bfs_ns_is_dot(newname, newlen))
		return -EBUSY;

	bfs_mutex_lock(&fs->rename_lock);
again:
	ret = bfs_ns_inode_read(fs, olddir, &d);
	if (!ret && !S_ISDIR(d.i.mode))
		ret = -ENOTDIR;
	if (!ret)
		ret = bfs_ns_inode_read(fs, newdir, &d);
	if (!ret && !S_ISDIR(d.i.mode))
		ret = -ENOTDIR;
	if (!ret)
		ret = bfs_dir_lookup(fs, olddir, oldname, oldlen, &src);
	if (!ret) {
		ret = bfs_dir_lookup(fs, newdir, newname, newlen, &tgt);
		have_tgt = !ret;
		ret = ret == -ENOENT ? 0 : ret;
	}
	if (ret)
		goto out;

	inos[0] = olddir;
	inos[1] = newdir;
	inos[2] = src.ino;
	inos[3] = have_tgt ? tgt.ino : 0;
	bfs_inode_lockv(fs, inos, 4);
	/* the names may have changed before we got the locks: check again */
	ret = bfs_dir_lookup(fs, olddir, oldname, oldlen, &src2);
	if (!ret) {
		ret = bfs_dir_lookup(fs, newdir, newname, newlen, &tgt2);
		if (ret == -ENOENT ? have_tgt : !ret && (!have_tgt || tgt2.ino != tgt.ino)) {
			bfs_inode_unlockv(fs, inos, 4);
			goto again;
		}
		ret = ret == -ENOENT ? 0 : ret;
	}
	if (!ret && src2.ino != src.ino) {
		bfs_inode_unlockv(fs, inos, 4);
		goto again;
	}
	if (!ret) {
		struct rename_ctx r = { .fs = fs };

		ret = do_rename(&r, olddir, oldname, oldlen, newdir, newname, newlen, flags,
				&src2, have_tgt ? &tgt2 : NULL);
	}
	bfs_inode_unlockv(fs, inos, 4);
out:
	bfs_mutex_unlock(&fs->rename_lock);
	return ret;
}
