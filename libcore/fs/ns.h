/* SPDX-License-Identifier: MIT */
/*
 * Private declarations of the namespace half of the filesystem layer
 * (inode.c, dir.c, namei.c, rename.c, xattr.c, orphan.c, attr.c, keys.c,
 * fs.c, format.c).  doc/format/fs.md describes the keys.  What fsck may
 * use of it is declared in include/bfs/fs_repair.h.
 *
 * Rules every operation follows:
 *  - check fs->read_only first (-EROFS);
 *  - lock the inodes it reads and modifies (locks.c: striped mutexes, taken
 *    in ascending stripe order), read them, queue every change in ONE
 *    transaction, commit, unlock;
 *  - since a transaction cannot read its own pending writes, each inode is
 *    read once, changed in memory and written once, at the end.
 */
#ifndef BFS_FS_NS_H
#define BFS_FS_NS_H

#include <sys/stat.h>

#include <bfs/fs_repair.h>
#include <bfs/log.h>

#include "fs_internal.h"

/* ---- locks.c ---- */

#define BFS_NS_MAX_LOCKS	4
/* lock up to BFS_NS_MAX_LOCKS inodes (zeros ignored, stripes locked once) */
void bfs_inode_lockv(struct bfs_fs *fs, const u64 *inos, unsigned nr);
void bfs_inode_unlockv(struct bfs_fs *fs, const u64 *inos, unsigned nr);

/* ---- inode.c ---- */

int bfs_ns_inode_read(struct bfs_fs *fs, u64 ino, struct bfs_ns_inode *inode);
int bfs_ns_inode_write(struct bfs_trans *t, const struct bfs_ns_inode *inode);
void bfs_ns_inode_to_stat(struct bfs_fs *fs, const struct bfs_inode *inode, struct bfs_stat *st);
/*
 * One change to one inode, the shape of most calls that change an inode:
 *
 *	ret = bfs_ns_change_begin(fs, ino, &c);
 *	if (!ret)
 *		ret = ...check and change c.inode, queue more in c.t...;
 *	return bfs_ns_change_end(&c, ret);
 *
 * begin: -EROFS on a read-only filesystem, else lock @ino, read it into
 * c->inode and begin the transaction c->t.  end: with @ret 0, write c->inode
 * and commit; with an error, or BFS_NS_UNCHANGED (nothing to do: returns
 * 0), commit nothing; then end the transaction and unlock.  Returns @ret or
 * the write's or commit's error.
 */
#define BFS_NS_UNCHANGED	1
struct bfs_ns_change {
	struct bfs_fs		*fs;
	u64			ino;
	struct bfs_ns_inode	inode;
	struct bfs_trans	*t;
	bool			locked;
};
int bfs_ns_change_begin(struct bfs_fs *fs, u64 ino, struct bfs_ns_change *c);
int bfs_ns_change_end(struct bfs_ns_change *c, int ret);
/* a new in-memory inode; the caller sets ino */
void bfs_ns_inode_init(struct bfs_ns_inode *inode, u32 mode, u32 uid, u32 gid, u64 rdev, s64 now);
/* queue the counter update to @next_ino (callers hold ino_alloc_lock, or format) */
int bfs_ns_counter_write(struct bfs_trans *t, u64 next_ino);

/* ---- ino_alloc.c: inode numbers from ranges reserved per thread ---- */

/* numbers one counter write reserves for a thread: doubling from MIN to MAX */
#define BFS_INO_RANGE_MIN	64
#define BFS_INO_RANGE_MAX	16384
/* a new fs->ino_range_owner, unique in this process */
u64 bfs_ns_ino_owner_new(void);
/*
 * A number never handed out before, not even before a crash: from this
 * thread's range, or from a new one (its own commit; no transaction of the
 * caller may be open, as it may wait for the commit lock).
 */
int bfs_ns_ino_alloc(struct bfs_fs *fs, u64 *ino);
/* clean close, no create running or to come: the counter back to the highest number used + 1 */
int bfs_ns_ino_give_back(struct bfs_fs *fs);
/* queue the removal of everything of @inode: data, xattrs, symlink, entries, orphan */
int bfs_ns_inode_delete(struct bfs_fs *fs, struct bfs_trans *t, const struct bfs_ns_inode *inode);
/* largest value (bytes) a key of this filesystem holds */
size_t bfs_ns_max_val_bytes(struct bfs_fs *fs);
/* largest transaction (key u64s + per-key overhead) that is safe to commit */
size_t bfs_ns_trans_max_u64s(struct bfs_fs *fs);

/* ---- dir.c: hashed, linearly probed slots (dirents and xattrs) ---- */

/* tests: > 0 keeps only this many hash bits, to force collisions */
extern unsigned bfs_ns_debug_hash_bits;

u64 bfs_dirent_slot(struct bfs_fs *fs, const char *name, size_t len);
/* 0, -EINVAL (empty, '/' or NUL) or -ENAMETOOLONG */
int bfs_ns_check_name(const char *name, size_t len);
static inline bool bfs_ns_is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

/* 0 if @dir has no entries, -ENOTEMPTY, or an error */
int bfs_dir_empty(struct bfs_fs *fs, u64 dir);
/* queue the deletion of every key (whiteouts) left under @dir */
int bfs_dir_delete_keys(struct bfs_fs *fs, struct bfs_trans *t, u64 dir);

/* ---- xattr.c ---- */

int bfs_xattr_delete_all(struct bfs_fs *fs, struct bfs_trans *t, u64 ino);
/*
 * set (@value) or remove an xattr within @t (the caller holds the inode's
 * lock and writes the inode in @t): what bfs_fs_setxattr() does, as a part
 * of a larger change
 */
int bfs_xattr_update(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, const char *name,
		     const void *value, size_t size, unsigned flags);
/*
 * bfs_fs_setxattr() (@value) or bfs_fs_removexattr() (NULL) and, with
 * @mode, the permission bits set from it in the same transaction (a
 * removal that finds nothing still sets them), and a set-ID bit (07000)
 * that @mode lacks cleared: setfacl
 */
int bfs_xattr_set_mode(struct bfs_fs *fs, u64 ino, const char *name, const void *value,
		       size_t size, unsigned flags, const u32 *mode);
/* "user." ... for a namespace id, NULL if unknown */
const char *bfs_xattr_prefix(unsigned ns);

/* ---- acl.c ---- */

/*
 * chmod with ACLs: the access ACL's owner, group-class and other entries
 * take the permission bits of @mode, within @t (the caller holds the lock)
 */
int bfs_acl_chmod_trans(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, u32 mode);

/* ---- orphan.c ---- */

int bfs_open_inodes_init(struct bfs_fs *fs);
void bfs_open_inodes_exit(struct bfs_fs *fs);
/* open references to @ino (the caller holds its lock) */
u64 bfs_open_count(struct bfs_fs *fs, u64 ino);
/* an xattr of @ino changes (the caller holds its lock): bfs_fs_has_caps() looks again */
void bfs_open_caps_forget(struct bfs_fs *fs, u64 ino);
/*
 * @inode's link count reached zero in @t: keep it as an orphan while it is
 * open, else queue its deletion.  A regular file with data becomes an
 * orphan too (its extents are deleted in commits of their own, which must
 * not come before @t: a crash would leave the file linked and its data
 * gone), and *@free_after says so: once @t is committed, the caller frees
 * it with bfs_ns_inode_free_unlinked(), still holding its lock.
 */
int bfs_ns_inode_unlinked(struct bfs_fs *fs, struct bfs_trans *t, struct bfs_ns_inode *inode,
			  bool *free_after);
/* free unlinked inode @ino if nobody holds it open (the caller holds its lock) */
int bfs_ns_inode_free_unlinked(struct bfs_fs *fs, u64 ino);
/* free the orphans a crash left behind (open, read-write) */
int bfs_orphans_recover(struct bfs_fs *fs);
/* free unlinked inodes still open at close */
int bfs_open_inodes_close(struct bfs_fs *fs);

#endif /* BFS_FS_NS_H */
