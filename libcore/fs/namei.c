// SPDX-License-Identifier: MIT
/*
 * Names: lookup, create (mknod, mkdir, symlink), link, unlink, rmdir.
 *
 * Each modifying call is one transaction under the locks of the directory
 * and (for link/unlink/rmdir) the target inode.  The target of unlink and
 * rmdir is only known after a lookup, so it is looked up, both inodes are
 * locked in stripe order, and the lookup is repeated under the locks; if the
 * name changed meanwhile, start over.
 */
#include "ns.h"

int bfs_fs_lookup(struct bfs_fs *fs, u64 dir, const char *name, size_t len, struct bfs_stat *st)
{
	struct bfs_ns_inode d, inode;
	struct bfs_dirent_ref de;
	int ret;

	ret = bfs_ns_inode_read(fs, dir, &d);
	if (ret)
		return ret;
	if (!S_ISDIR(d.i.mode))
		return -ENOTDIR;
	if (len > BFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (bfs_ns_is_dot(name, len)) {
		if (len == 2 && (ret = bfs_ns_inode_read(fs, d.parent, &d)))
			return ret == -ENOENT ? -EUCLEAN : ret;
		bfs_ns_inode_to_stat(fs, &d.i, st);
		return 0;
	}
	ret = bfs_dir_lookup(fs, dir, name, len, &de);
	if (ret)
		return ret;
	ret = bfs_ns_inode_read(fs, de.ino, &inode);
	if (ret == -ENOENT) {
		bfs_err("directory %llu: entry '%.*s' points to missing inode %llu",
			(unsigned long long)dir, (int)len, name, (unsigned long long)de.ino);
		return -EUCLEAN;
	}
	if (!ret)
		bfs_ns_inode_to_stat(fs, &inode.i, st);
	return ret;
}

/* read and check a directory that is about to get or lose an entry */
static int dir_read_for_change(struct bfs_fs *fs, u64 dir, struct bfs_ns_inode *d)
{
	int ret = bfs_ns_inode_read(fs, dir, d);

	if (ret)
		return ret;
	if (!S_ISDIR(d->i.mode))
		return -ENOTDIR;
	/* removed but still open: no new entries */
	if (!d->i.nlink)
		return -ENOENT;
	return 0;
}

/* may a new entry called @name be made at all (before any lookup)? */
static int check_new_name(struct bfs_fs *fs, const char *name, size_t len)
{
	int ret;

	if (fs->read_only)
		return -EROFS;
	ret = bfs_ns_check_name(name, len);
	if (ret)
		return ret;
	/* "." and ".." always exist */
	return bfs_ns_is_dot(name, len) ? -EEXIST : 0;
}

/*
 * Where a new entry @name of @dir (locked) goes: @dir read into @d, a
 * directory that may get entries, the name not there yet, and a free slot
 * for it.
 */
static int new_entry_slot(struct bfs_fs *fs, u64 dir, const char *name, size_t len,
			  struct bfs_ns_inode *d, u64 *slot)
{
	struct bfs_dirent_ref de;
	int ret = dir_read_for_change(fs, dir, d);

	if (!ret)
		ret = bfs_iflags_may_add_entry(d->i.flags);
	if (ret)
		return ret;
	ret = bfs_dir_lookup(fs, dir, name, len, &de);
	if (ret != -ENOENT)
		return ret ? ret : -EEXIST;
	return bfs_dir_free_slot(fs, dir, name, len, slot);
}

static int create(struct bfs_fs *fs, u64 dir, const char *name, size_t len, u32 mode, u64 rdev,
		  const char *target, size_t target_len, const struct bfs_creds *cr,
		  struct bfs_stat *st)
{
	struct bfs_ns_inode d, inode;
	struct bfs_trans *t = NULL;
	u64 slot, ino;
	s64 now;
	int ret;

	ret = check_new_name(fs, name, len);
	if (ret)
		return ret;

	bfs_inode_lock(fs, dir);
	ret = new_entry_slot(fs, dir, name, len, &d, &slot);
	/* after the lookup, as mkdir(2): an existing name is EEXIST even in a full directory */
	if (!ret && S_ISDIR(mode) && d.i.nlink >= BFS_LINK_MAX)
		ret = -EMLINK;
	if (ret)
		goto out;
	/* before the transaction: a new range is a commit of its own */
	ret = bfs_ns_ino_alloc(fs, &ino);
	if (!ret)
		ret = bfs_trans_begin(fs->c, &t);
	if (ret)
		goto out;

	now = bfs_fs_now();
	bfs_ns_inode_init(&inode, mode, cr ? cr->uid : 0, cr ? cr->gid : 0, rdev, now);
	inode.i.ino = ino;
	if (S_ISDIR(mode)) {
		inode.parent = dir;
		d.i.nlink++;
	}
	if (S_ISLNK(mode))
		inode.i.size = target_len;
	d.i.mtime = d.i.ctime = now;

	/*
	 * The number's range reached the journal before this transaction
	 * began (ino_alloc.c), so no lock is held over this commit and the
	 * counter is not written: a failed create just skips its number.
	 */
	ret = bfs_ns_inode_write(t, &inode);
	if (!ret && target)
		ret = bfs_ns_symlink_write(fs, t, inode.i.ino, target, target_len);
	if (!ret)
		ret = bfs_dir_add(t, dir, slot, name, len, inode.i.ino, bfs_ns_dtype(mode));
	if (!ret)
		ret = bfs_ns_inode_write(t, &d);
	if (!ret)
		ret = bfs_trans_commit(t, NULL);
	if (!ret && st)
		bfs_ns_inode_to_stat(fs, &inode.i, st);
out:
	bfs_trans_end(t);
	bfs_inode_unlock(fs, dir);
	return ret;
}

int bfs_fs_mknod(struct bfs_fs *fs, u64 dir, const char *name, size_t len, u32 mode, u64 rdev,
		 const struct bfs_creds *cr, struct bfs_stat *st)
{
	switch (mode & S_IFMT) {
	case 0:
		mode |= S_IFREG;
		break;
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	case S_IFCHR:
	case S_IFBLK:
		return create(fs, dir, name, len, mode & (S_IFMT | 07777), rdev, NULL, 0, cr, st);
	default:
		return -EINVAL;
	}
	return create(fs, dir, name, len, mode & (S_IFMT | 07777), 0, NULL, 0, cr, st);
}

int bfs_fs_mkdir(struct bfs_fs *fs, u64 dir, const char *name, size_t len, u32 mode,
		 const struct bfs_creds *cr, struct bfs_stat *st)
{
	return create(fs, dir, name, len, S_IFDIR | (mode & 07777), 0, NULL, 0, cr, st);
}

int bfs_fs_symlink(struct bfs_fs *fs, u64 dir, const char *name, size_t len, const char *target,
		   const struct bfs_creds *cr, struct bfs_stat *st)
{
	size_t tlen = target ? strnlen(target, BFS_SYMLINK_MAX + 1) : 0;

	if (!tlen)
		return -ENOENT;
	if (tlen > BFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	return create(fs, dir, name, len, S_IFLNK | 0777, 0, target, tlen, cr, st);
}

int bfs_fs_link(struct bfs_fs *fs, u64 ino, u64 newdir, const char *name, size_t len,
		struct bfs_stat *st)
{
	struct bfs_ns_inode d, inode;
	struct bfs_trans *t = NULL;
	u64 slot;
	s64 now;
	int ret;

	ret = check_new_name(fs, name, len);
	if (ret)
		return ret;

	bfs_inode_lock2(fs, ino, newdir);
	ret = bfs_ns_inode_read(fs, ino, &inode);
	if (ret)
		goto out;
	if (S_ISDIR(inode.i.mode)) {
		ret = -EPERM;
		goto out;
	}
	/* an unlinked (open) inode cannot get a name back, as in linkat(2) */
	if (!inode.i.nlink) {
		ret = -ENOENT;
		goto out;
	}
	if (inode.i.nlink >= BFS_LINK_MAX) {
		ret = -EMLINK;
		goto out;
	}
	ret = bfs_iflags_may_change(inode.i.flags);
	if (!ret)
		ret = new_entry_slot(fs, newdir, name, len, &d, &slot);
	if (!ret)
		ret = bfs_trans_begin(fs->c, &t);
	if (ret)
		goto out;
	now = bfs_fs_now();
	inode.i.nlink++;
	inode.i.ctime = now;
	d.i.mtime = d.i.ctime = now;
	ret = bfs_dir_add(t, newdir, slot, name, len, ino, bfs_ns_dtype(inode.i.mode));
	if (!ret)
		ret = bfs_ns_inode_write(t, &inode);
	if (!ret)
		ret = bfs_ns_inode_write(t, &d);
	if (!ret)
		ret = bfs_trans_commit(t, NULL);
	if (!ret && st)
		bfs_ns_inode_to_stat(fs, &inode.i, st);
out:
	bfs_trans_end(t);
	bfs_inode_unlock2(fs, ino, newdir);
	return ret;
}

static int remove_name(struct bfs_fs *fs, u64 dir, const char *name, size_t len, bool rmdir)
{
	struct bfs_ns_inode d, inode;
	struct bfs_dirent_ref de, de2;
	struct bfs_trans *t = NULL;
	bool free_after = false;
	s64 now;
	int ret;

	if (fs->read_only)
		return -EROFS;
	if (len > BFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (bfs_ns_is_dot(name, len))
		return !rmdir ? -EISDIR : len == 1 ? -EINVAL : -ENOTEMPTY;
again:
	ret = bfs_ns_inode_read(fs, dir, &d);
	if (!ret && !S_ISDIR(d.i.mode))
		ret = -ENOTDIR;
	if (!ret)
		ret = bfs_dir_lookup(fs, dir, name, len, &de);
	if (ret)
		return ret;

	bfs_inode_lock2(fs, dir, de.ino);
	ret = bfs_dir_lookup(fs, dir, name, len, &de2);
	if (ret)
		goto out;
	if (de2.ino != de.ino) {
		bfs_inode_unlock2(fs, dir, de.ino);
		goto again;
	}
	ret = dir_read_for_change(fs, dir, &d);
	if (ret)
		goto out;
	ret = bfs_ns_inode_read(fs, de.ino, &inode);
	if (ret == -ENOENT) {
		bfs_err("directory %llu: entry '%.*s' points to missing inode %llu",
			(unsigned long long)dir, (int)len, name, (unsigned long long)de.ino);
		ret = -EUCLEAN;
	}
	if (ret)
		goto out;
	if (rmdir && !S_ISDIR(inode.i.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (!rmdir && S_ISDIR(inode.i.mode)) {
		ret = -EISDIR;
		goto out;
	}
	ret = bfs_iflags_may_change(d.i.flags);
	if (!ret)
		ret = bfs_iflags_may_change(inode.i.flags);
	if (ret)
		goto out;
	if (rmdir) {
		ret = bfs_dir_empty(fs, inode.i.ino);
		if (ret)
			goto out;
	}
	ret = bfs_trans_begin(fs->c, &t);
	if (ret)
		goto out;
	now = bfs_fs_now();
	d.i.mtime = d.i.ctime = now;
	inode.i.ctime = now;
	if (rmdir) {
		d.i.nlink--;
		inode.i.nlink = 0;
	} else {
		inode.i.nlink--;
	}
	ret = bfs_dir_remove(fs, t, dir, de.slot, false);
	if (!ret)
		ret = bfs_ns_inode_write(t, &d);
	if (!ret)
		ret = inode.i.nlink ? bfs_ns_inode_write(t, &inode) :
				      bfs_ns_inode_unlinked(fs, t, &inode, &free_after);
	if (!ret)
		ret = bfs_trans_commit(t, NULL);
	bfs_trans_end(t);
	t = NULL;
	if (!ret && free_after)
		ret = bfs_ns_inode_free_unlinked(fs, inode.i.ino);
out:
	bfs_trans_end(t);
	bfs_inode_unlock2(fs, dir, de.ino);
	return ret;
}

int bfs_fs_unlink(struct bfs_fs *fs, u64 dir, const char *name, size_t len)
{
	return remove_name(fs, dir, name, len, false);
}

int bfs_fs_rmdir(struct bfs_fs *fs, u64 dir, const char *name, size_t len)
{
	return remove_name(fs, dir, name, len, true);
}
