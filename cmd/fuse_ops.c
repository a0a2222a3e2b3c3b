// SPDX-License-Identifier: MIT
/*
 * The FUSE low-level operations of bfs mount: each one translates a request
 * into one call of the filesystem API (include/bfs/fs.h) and replies.  The
 * kernel numbers inodes as we do (the root is 1), so FUSE inode numbers are
 * bfs inode numbers and no table is kept here.  Every entry the kernel gets
 * (lookup, create, mknod, mkdir, symlink, link, readdirplus) takes a
 * reference in the filesystem layer and FORGET drops them: an unlinked
 * inode the kernel still knows lives on until then, so getattr on an open
 * descriptor and the kernel's write-back of times after the last close
 * find it (a removed inode would answer ENOENT, and syncfs(2) would fail
 * with it).  Open files and directories hold a reference of their own.
 * The (ino, generation) pair is never reused.
 *
 * What the kernel does for us (see the FUSE notes in bfs-mount(8)):
 * permission checks (default_permissions), O_APPEND offsets, flock and
 * POSIX locks, and removing security.capability on cached writes,
 * truncation and chown.  Clearing set-ID bits is ours when the /dev/fuse
 * shim negotiated FUSE_HANDLE_KILLPRIV_V2 (fuse_wire.h: the kernel then
 * flags the requests that must clear them, see fuse_kill.h), the
 * kernel's otherwise (HANDLE_KILLPRIV off).
 * Not atime: FUSE marks its inodes S_NOATIME, so reads and listings that
 * reach us update atime under the mount's policy (see atime_open()).
 */
#include "fuse_ops.h"
#include "fuse_kill.h"
#include "fuse_wire.h"
#include "mount_control.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

/* FUSE requests carry up to this much data (256 pages, the kernel's limit) */
#define BFS_FUSE_MAX_WRITE	(1U << 20)
/*
 * Asynchronous requests (an application's direct I/O through libaio or
 * io_uring, readahead) the kernel keeps in flight to us at once.  Its
 * default, 12, caps fio's QD64 random reads at 12 outstanding requests and
 * halves their rate (doc/benchmarks.md, "Data path through FUSE"); with
 * more in flight than threads the rest wait in the kernel's queue, costing
 * nothing.  The kernel lowers it for unprivileged mounts
 * (/proc/sys/fs/fuse/max_user_bgreq).
 */
#define BFS_FUSE_MAX_BACKGROUND	128

/* fuse_file_info.fh of an open file: the open is direct_io (want_direct_io()) */
#define BFS_FH_DIRECT_IO	(1U << 0)
/* ... opened with O_DIRECT: its writes are not held in a tail buffer (BFS_WRITE_THROUGH) */
#define BFS_FH_O_DIRECT		(1U << 1)

/*
 * The kernel accepts errno values below 512 only; anything else (a project
 * error code) is reported as an I/O error rather than rejected.
 */
static void reply_err(fuse_req_t req, long ret)
{
	int err = ret < 0 ? (int)-ret : 0;

	bfs_mount_on_error(fuse_of(req), (int)ret, "a request");	/* errors= */
	if (err >= 512)
		err = EIO;
	fuse_reply_err(req, err);
}

static void stat_from_bfs(struct stat *st, const struct bfs_stat *b)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = b->ino;
	st->st_mode = b->mode;
	st->st_nlink = b->nlink;
	st->st_uid = b->uid;
	st->st_gid = b->gid;
	st->st_rdev = b->rdev;
	st->st_size = (off_t)b->size;
	st->st_blksize = b->blksize;
	st->st_blocks = (blkcnt_t)b->blocks;
	st->st_atim = b->atime;
	st->st_mtim = b->mtime;
	st->st_ctim = b->ctime;
}

static void fill_entry(fuse_req_t req, struct fuse_entry_param *e, const struct bfs_stat *b)
{
	memset(e, 0, sizeof(*e));
	e->ino = b->ino;
	e->generation = b->generation;
	stat_from_bfs(&e->attr, b);
	e->attr_timeout = fuse_of(req)->attr_timeout;
	e->entry_timeout = fuse_of(req)->entry_timeout;
}

/* the kernel's reference for the entry it is given (FORGET drops it) */
static int entry_ref(fuse_req_t req, const struct bfs_stat *b)
{
	return bfs_fs_inode_open(fs_of(req), b->ino);
}

/* (a reply frees @req, so what follows one takes the fs, not the request) */
static void entry_unref(struct bfs_fs *fs, u64 ino)
{
	bfs_fs_inode_forget(fs, ino, 1);
}

static void reply_entry(fuse_req_t req, int ret, const struct bfs_stat *b)
{
	struct bfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;

	if (!ret)
		ret = entry_ref(req, b);
	if (ret)
		return reply_err(req, ret);
	fill_entry(req, &e, b);
	if (fuse_reply_entry(req, &e))
		entry_unref(fs, b->ino);	/* interrupted: the kernel never got it */
}

static void reply_attr(fuse_req_t req, int ret, const struct bfs_stat *b)
{
	struct stat st;

	if (ret)
		return reply_err(req, ret);
	stat_from_bfs(&st, b);
	fuse_reply_attr(req, &st, fuse_of(req)->attr_timeout);
}

/*
 * The owner of a new inode: the caller's fsuid and fsgid, except that in
 * a set-group-ID directory the group is the directory's and new
 * directories inherit the set-group-ID bit (what the VFS's
 * inode_init_owner() does for kernel filesystems).  The kernel has already
 * applied the umask to @mode.
 */
static int new_owner(fuse_req_t req, fuse_ino_t parent, u32 *mode, struct bfs_creds *cr)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct bfs_stat dir;
	int ret;

	cr->uid = c->uid;
	cr->gid = c->gid;
	ret = bfs_fs_getattr(fs_of(req), parent, &dir);
	if (ret)
		return ret;
	if (dir.mode & S_ISGID) {
		cr->gid = dir.gid;
		if (S_ISDIR(*mode))
			*mode |= S_ISGID;
	}
	return 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct bfs_fuse *f = userdata;

	conn->max_write = BFS_FUSE_MAX_WRITE;
	conn->max_background = BFS_FUSE_MAX_BACKGROUND;
	conn->congestion_threshold = BFS_FUSE_MAX_BACKGROUND / 4 * 3;
	/* the kernel clears set-user-ID and set-group-ID bits itself */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	/* only this mount changes the filesystem, so caching is exact */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/*
	 * POSIX ACLs, with the umask left to us: a default ACL replaces it.
	 * Without both, ACLs stay off (f->acl).
	 */
	if (f->want_acl && (conn->capable & FUSE_CAP_POSIX_ACL) &&
	    (conn->capable & FUSE_CAP_DONT_MASK)) {
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
		f->acl = true;
	}
	/* name_to_handle_at / open_by_handle_at, NFS re-export: see op_lookup() */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* lsattr -d and chattr on directories */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	if (f->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) {
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
		conn->time_gran = 1;
	}
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	struct bfs_stat st;
	int ret;

	/*
	 * File handles (export support): the kernel finds an inode it no
	 * longer caches by a lookup of "." in it, whatever its type, and the
	 * parent of a directory by "..".  A removed inode is stale, as on
	 * ext4, even while it is still open.
	 */
	if (!strcmp(name, ".")) {
		ret = bfs_fs_getattr(fs_of(req), parent, &st);
		if (!ret && !st.nlink)
			ret = -ESTALE;
		return reply_entry(req, ret, &st);
	}
	ret = bfs_fs_lookup(fs_of(req), parent, name, strlen(name), &st);
	if (ret == -ENOENT) {
		/* a negative entry: the kernel may cache the absence too */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = fuse_of(req)->entry_timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	reply_entry(req, ret, &st);
}

/*
 * FORGET can still be in flight on another thread when DESTROY closes the
 * filesystem (it is the only request that can: umount needs the mount
 * idle), so forgets and destroy exclude each other.
 */
static void forget_one(struct bfs_fuse *f, fuse_ino_t ino, uint64_t nlookup)
{
	/* the kernel's own reference to the root was never taken here */
	if (ino != BFS_ROOT_INO)
		bfs_fs_inode_forget(f->fs, ino, nlookup);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct bfs_fuse *f = fuse_of(req);

	bfs_read_lock(&f->life);
	if (f->fs)
		forget_one(f, ino, nlookup);
	bfs_rwlock_unlock(&f->life);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct bfs_fuse *f = fuse_of(req);
	size_t i;

	bfs_read_lock(&f->life);
	for (i = 0; f->fs && i < count; i++)
		forget_one(f, forgets[i].ino, forgets[i].nlookup);
	bfs_rwlock_unlock(&f->life);
	fuse_reply_none(req);
}

/*
 * DESTROY: sent by the kernel at umount of a fuseblk mount, which waits for
 * the reply before it releases the device; called by libfuse itself when
 * the session ends otherwise.  Either way the filesystem is closed here,
 * so that umount(8) of a block device returns with everything on disk.
 */
void bfs_fuse_close(struct bfs_fuse *f)
{
	bfs_write_lock(&f->life);
	if (f->fs && f->close)
		f->close(f->close_ctx);
	f->fs = NULL;
	bfs_rwlock_unlock(&f->life);
}

static void op_destroy(void *userdata)
{
	bfs_fuse_close(userdata);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct bfs_stat st;

	reply_attr(req, bfs_fs_getattr(fs_of(req), ino, &st), &st);
}

static void setattr_times(struct bfs_setattr *sa, const struct stat *attr, int to_set)
{
	if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
		sa->valid |= BFS_SET_ATIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa->valid |= BFS_SET_ATIME;
		sa->atime = attr->st_atim;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		sa->valid |= BFS_SET_MTIME_NOW;
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa->valid |= BFS_SET_MTIME;
		sa->mtime = attr->st_mtim;
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		sa->valid |= BFS_SET_CTIME;
		sa->ctime = attr->st_ctim;
	}
}

/*
 * A chown or a truncation the kernel flagged (FATTR_KILL_SUIDGID): the
 * set-ID bits go in the same transaction as the change
 */
static int setattr_kill(fuse_req_t req, fuse_ino_t ino, struct bfs_setattr *sa)
{
	bool chown = sa->valid & (BFS_SET_UID | BFS_SET_GID);
	int ret;

	if (!(bfs_fuse_wire_req_flags() & BFS_WIRE_KILL_SUIDGID) ||
	    !(chown || (sa->valid & BFS_SET_SIZE)))
		return 0;
	ret = bfs_fuse_kill_add(req, ino, chown ? BFS_KILL_CHOWN : BFS_KILL_WRITE, sa);
	return ret < 0 ? ret : 0;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct bfs_setattr sa = { 0 };
	struct bfs_stat st;
	int ret;

	if (to_set & FUSE_SET_ATTR_MODE) {
		/* the access ACL's owner, group-class and other entries follow chmod */
		sa.valid |= BFS_SET_MODE | (fuse_of(req)->acl ? BFS_SET_ACL_MODE : 0);
		sa.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.valid |= BFS_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.valid |= BFS_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.valid |= BFS_SET_SIZE;
		sa.size = (u64)attr->st_size;
	}
	setattr_times(&sa, attr, to_set);
	ret = setattr_kill(req, ino, &sa);
	if (!ret)
		ret = bfs_fs_setattr(fs_of(req), ino, &sa, &st);
	reply_attr(req, ret, &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[BFS_SYMLINK_MAX + 1];
	ssize_t n;

	n = bfs_fs_readlink(fs_of(req), ino, buf, BFS_SYMLINK_MAX);
	if (n < 0)
		return reply_err(req, n);
	buf[n] = '\0';
	fuse_reply_readlink(req, buf);
}

/*
 * POSIX ACLs on (f->acl): the kernel passes the mode unmasked
 * (FUSE_CAP_DONT_MASK) and the caller's umask, and the filesystem layer
 * decides: the parent's default ACL, or the umask.  After the create the
 * inherited ACLs are stored; if that fails the new name goes again.
 */
static int acl_create_begin(fuse_req_t req, fuse_ino_t parent, u32 *mode, struct bfs_acl_new *na)
{
	memset(na, 0, sizeof(*na));
	if (!fuse_of(req)->acl)
		return 0;
	return bfs_fs_acl_new(fs_of(req), parent, mode, fuse_req_ctx(req)->umask, na);
}

static int acl_create_end(fuse_req_t req, fuse_ino_t parent, const char *name, int ret,
			  const struct bfs_stat *st, struct bfs_acl_new *na)
{
	if (!ret && (na->access || na->dflt)) {
		ret = bfs_fs_acl_new_apply(fs_of(req), st->ino, na);
		if (ret && S_ISDIR(st->mode))
			bfs_fs_rmdir(fs_of(req), parent, name, strlen(name));
		else if (ret)
			bfs_fs_unlink(fs_of(req), parent, name, strlen(name));
	}
	bfs_fs_acl_new_free(na);
	return ret;
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	struct bfs_creds cr;
	struct bfs_stat st;
	u32 m = mode;
	int ret;

	struct bfs_acl_new na;

	ret = new_owner(req, parent, &m, &cr);
	if (!ret)
		ret = acl_create_begin(req, parent, &m, &na);
	if (ret)
		return reply_err(req, ret);
	ret = bfs_fs_mknod(fs_of(req), parent, name, strlen(name), m, rdev, &cr, &st);
	ret = acl_create_end(req, parent, name, ret, &st, &na);
	reply_entry(req, ret, &st);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct bfs_creds cr;
	struct bfs_stat st;
	u32 m = mode | S_IFDIR;
	int ret;

	struct bfs_acl_new na;

	ret = new_owner(req, parent, &m, &cr);
	if (!ret)
		ret = acl_create_begin(req, parent, &m, &na);
	if (ret)
		return reply_err(req, ret);
	ret = bfs_fs_mkdir(fs_of(req), parent, name, strlen(name), m, &cr, &st);
	ret = acl_create_end(req, parent, name, ret, &st, &na);
	reply_entry(req, ret, &st);
}

static void op_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
	struct bfs_creds cr;
	struct bfs_stat st;
	u32 m = S_IFLNK | 0777;
	int ret;

	ret = new_owner(req, parent, &m, &cr);
	if (!ret)
		ret = bfs_fs_symlink(fs_of(req), parent, name, strlen(name), target, &cr, &st);
	reply_entry(req, ret, &st);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_err(req, bfs_fs_unlink(fs_of(req), parent, name, strlen(name)));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	reply_err(req, bfs_fs_rmdir(fs_of(req), parent, name, strlen(name)));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	unsigned bflags = 0;

	/* RENAME_WHITEOUT (overlayfs) and anything newer: not supported */
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return reply_err(req, -EINVAL);
	if (flags & RENAME_NOREPLACE)
		bflags |= BFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		bflags |= BFS_RENAME_EXCHANGE;
	reply_err(req, bfs_fs_rename(fs_of(req), parent, name, strlen(name),
				     newparent, newname, strlen(newname), bflags));
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct bfs_stat st;

	reply_entry(req, bfs_fs_link(fs_of(req), ino, newparent, newname, strlen(newname), &st),
		    &st);
}

/*
 * Reads served from the kernel's page cache never reach us, so atime
 * would not move.  An open after which a read must update atime (relatime:
 * the file changed since its last read, or a day went by; strictatime:
 * always) drops the cached pages, so that the first read comes here.
 */
static bool atime_open(fuse_req_t req, fuse_ino_t ino, unsigned policy)
{
	struct bfs_stat st;

	if (policy == BFS_ATIME_NEVER || fuse_of(req)->read_only)
		return false;
	return !bfs_fs_getattr(fs_of(req), ino, &st) && bfs_fs_atime_due(&st, policy);
}

/*
 * After a read or a listing has been replied to (so @req is gone: the
 * caller passes its bfs_fuse): record the access; an error fails nothing.
 * The kernel drops its cached atime after every read and listing
 * (fuse_invalidate_atime()), so stat(2) sees the new one whatever
 * attr_timeout is: no invalidation needed from here.
 */
static void atime_touch(struct bfs_fuse *f, fuse_ino_t ino, unsigned policy)
{
	if (policy != BFS_ATIME_NEVER && !f->read_only)
		bfs_fs_touch_atime(f->fs, ino, policy);
}

/*
 * direct_io for O_DIRECT opens, so that their writes run in parallel
 * (FOPEN_PARALLEL_DIRECT_WRITES, added by fuse_wire.c; without direct_io
 * the kernel's O_DIRECT path holds the inode lock across each write).
 * Only when INIT negotiated both FUSE_HANDLE_KILLPRIV_V2, because direct_io
 * writes skip the kernel's file_remove_privs() and only the kill flag
 * tells us to clear set-ID bits, and FUSE_DIRECT_IO_ALLOW_MMAP, which
 * keeps mmap(MAP_SHARED) working on the descriptor and makes the kernel
 * write back and drop the cached range around each direct write, so
 * buffered readers stay coherent.  Otherwise the kernel does O_DIRECT
 * itself on a cached open, as it always did.
 */
static bool want_direct_io(const struct fuse_file_info *fi)
{
	return (fi->flags & O_DIRECT) && bfs_fuse_wire_killpriv() && bfs_fuse_wire_dio_mmap();
}

/* open flags: page cache kept across opens (only we change the data) */
static void set_open_flags(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fi->direct_io = want_direct_io(fi);
	fi->fh = (fi->direct_io ? BFS_FH_DIRECT_IO : 0) |
		 ((fi->flags & O_DIRECT) ? BFS_FH_O_DIRECT : 0);
	fi->keep_cache = (fi->flags & O_ACCMODE) == O_WRONLY ||
			 !atime_open(req, ino, fuse_of(req)->atime);
	/*
	 * close(2) needs no FLUSH round trip: a tail buffer (tail_buf.c) is
	 * written back on RELEASE, fsync and the periodic commit, and every
	 * reader sees its bytes meanwhile; write-back errors reach fsync
	 */
	fi->noflush = 1;
	/* before the reply, so before any read through the open fills a page */
	if (!fi->direct_io)
		bfs_fs_cache_open(fs_of(req), ino);
}

/* a file open's release, or its undoing when its reply failed */
static int open_undo(struct bfs_fs *fs, fuse_ino_t ino, const struct fuse_file_info *fi)
{
	if (!(fi->fh & BFS_FH_DIRECT_IO))
		bfs_fs_cache_close(fs, ino);
	return bfs_fs_inode_release(fs, ino);
}

/* O_TRUNC reaches open() because libfuse enables FUSE_CAP_ATOMIC_O_TRUNC */
static int open_truncate(fuse_req_t req, fuse_ino_t ino, const struct fuse_file_info *fi)
{
	struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = 0 };
	struct bfs_stat st;
	int ret;

	/* the kernel has checked write permission, even for O_RDONLY | O_TRUNC */
	if (!(fi->flags & O_TRUNC))
		return 0;
	/*
	 * Set-ID bits go as a truncate(2) would take them: the kernel says
	 * so (FUSE_OPEN_KILL_SUIDGID) under KILLPRIV_V2, and does nothing at
	 * all without it (ATOMIC_O_TRUNC leaves the truncation to us), so
	 * then the caller's CAP_FSETID is looked up here
	 */
	if (!bfs_fuse_wire_killpriv())
		ret = bfs_fuse_kill_add(req, ino, BFS_KILL_UNLESS_FSETID, &sa);
	else if (bfs_fuse_wire_req_flags() & BFS_WIRE_KILL_SUIDGID)
		ret = bfs_fuse_kill_add(req, ino, BFS_KILL_WRITE, &sa);
	else
		ret = 0;
	if (ret < 0)
		return ret;
	ret = bfs_fs_setattr(fs_of(req), ino, &sa, &st);
	if (!ret && (sa.valid & BFS_SET_MODE))
		bfs_fuse_kill_notify(req, ino);
	return ret;
}

/*
 * What the VFS would refuse at open from the inode flags, had FUSE inodes
 * carried them: writing to an immutable file, and writing other than by
 * O_APPEND to an append-only one
 */
static int open_check_iflags(fuse_req_t req, fuse_ino_t ino, const struct fuse_file_info *fi)
{
	bool writing = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
	struct bfs_stat st;
	int ret;

	if (!writing)
		return 0;
	ret = bfs_fs_getattr(fs_of(req), ino, &st);
	if (ret)
		return ret;
	if (st.flags & BFS_INODE_IMMUTABLE)
		return -EPERM;
	if ((st.flags & BFS_INODE_APPEND) && (!(fi->flags & O_APPEND) || (fi->flags & O_TRUNC)))
		return -EPERM;
	return 0;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct bfs_fs *fs = fs_of(req);
	int ret;

	ret = open_check_iflags(req, ino, fi);
	if (!ret)
		ret = open_truncate(req, ino, fi);
	if (!ret)
		ret = bfs_fs_inode_open(fs_of(req), ino);
	if (ret)
		return reply_err(req, ret);
	set_open_flags(req, ino, fi);
	if (fuse_reply_open(req, fi))
		open_undo(fs, ino, fi);		/* the opener was interrupted */
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct bfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct bfs_creds cr;
	struct bfs_stat st;
	u32 m = (mode & ~S_IFMT) | S_IFREG;
	int ret;

	struct bfs_acl_new na;

	ret = new_owner(req, parent, &m, &cr);
	if (!ret)
		ret = acl_create_begin(req, parent, &m, &na);
	if (ret)
		return reply_err(req, ret);
	ret = bfs_fs_mknod(fs_of(req), parent, name, strlen(name), m, 0, &cr, &st);
	ret = acl_create_end(req, parent, name, ret, &st, &na);
	if (!ret)
		ret = entry_ref(req, &st);
	if (ret)
		return reply_err(req, ret);
	ret = bfs_fs_inode_open(fs_of(req), st.ino);
	if (ret) {
		entry_unref(fs, st.ino);
		return reply_err(req, ret);
	}
	fill_entry(req, &e, &st);
	set_open_flags(req, st.ino, fi);
	if (fuse_reply_create(req, &e, fi)) {
		open_undo(fs, st.ino, fi);
		entry_unref(fs, st.ino);
	}
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct bfs_fuse *f = fuse_of(req);
	char *buf, *mine = NULL;
	bool due;
	ssize_t n;

	if (off < 0)
		return reply_err(req, -EINVAL);
	/*
	 * Page-aligned: whole chunks are read into it directly, without a
	 * bounce.  The thread's receive buffer when it can be had (kept
	 * between requests: a 1 MiB read does not map and fault in 256
	 * fresh pages each time); fuse_reply_buf() has written the reply
	 * to the kernel when it returns.
	 */
	buf = bfs_fuse_wire_reply_buf(size);
	if (!buf && posix_memalign((void **)&mine, 4096, size ? size : 1))
		return reply_err(req, -ENOMEM);
	if (!buf)
		buf = mine;
	/*
	 * A direct_io open reads past the page cache, but a mapping of it
	 * faults pages in through the same open, and we cannot tell the two
	 * apart: either may fill pages (direct_write_inval())
	 */
	if (fi->fh & BFS_FH_DIRECT_IO)
		bfs_fs_cache_fill(fs_of(req), ino);
	/* the inode the read saw tells whether atime moves: no second look-up */
	n = bfs_fs_read_due(fs_of(req), ino, buf, size, (u64)off,
			    f->read_only ? BFS_ATIME_NEVER : f->atime, &due);
	if (n < 0) {
		reply_err(req, n);
	} else {
		fuse_reply_buf(req, buf, (size_t)n);
		if (due)
			atime_touch(f, ino, f->atime);
	}
	free(mine);
}

/*
 * After a direct_io write, before its reply: drop the cached pages of the
 * range.  The kernel drops them only before it sends the WRITE
 * (fuse_direct_io()), so a buffered read through another open that fills
 * a page while the write is in flight here reads the old bytes, and
 * keep_cache would serve them after the write completed (xfstests
 * generic/451).  Before the reply, so that no read that follows the
 * write's completion finds them.  Not for a write-back of mmap'd pages
 * (fi->writepage) through the open: the kernel would wait here for the
 * very pages under that write-back.  The kernel waits here for pages
 * under a READ in flight, which another worker serves (max_threads, 64
 * by default); it takes no inode lock, so the writer's is no deadlock.
 *
 * Only pages can be stale, and only opens without direct_io (set_open_flags())
 * and reads through a direct_io one (a mapping of it: op_read()) fill any;
 * the open-inode table keeps count (bfs_fs_cache_state()), so a file only
 * ever opened O_DIRECT, and not mapped, costs no notification (one write(2)
 * to /dev/fuse and a page-cache walk in the kernel).  Pages a closed open
 * left behind are dropped once, the whole file, after which none are.
 */
static void direct_write_inval(fuse_req_t req, fuse_ino_t ino, off_t off, size_t len)
{
	struct bfs_fuse *f = fuse_of(req);
	enum bfs_cache_state st;
	u32 gen;

	if (!f->se)
		return;
	st = bfs_fs_cache_state(f->fs, ino, &gen);
	if (st == BFS_CACHE_OPEN) {
		fuse_lowlevel_notify_inval_inode(f->se, ino, off, (off_t)len);
	} else if (st == BFS_CACHE_LEFT) {
		/*
		 * offset 0, length 0: every page.  The kernel handles the
		 * notification before write(2) returns, waiting for pages
		 * under a read (a fill counted before @gen); one counted
		 * after @gen keeps the inode cached.
		 */
		if (!fuse_lowlevel_notify_inval_inode(f->se, ino, 0, 0))
			bfs_fs_cache_clear(f->fs, ino, gen);
	}
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n;
	int ret = 0;

	if (off < 0)
		return reply_err(req, -EINVAL);
	/* privileges go before the data, as in the VFS's file_remove_privs() */
	if (bfs_fuse_wire_req_flags() & BFS_WIRE_KILL_SUIDGID)
		ret = bfs_fuse_kill_suidgid(req, ino, BFS_KILL_WRITE);
	if (!ret && (fi->fh & BFS_FH_DIRECT_IO))
		ret = bfs_fuse_kill_caps(req, ino);
	if (ret)
		return reply_err(req, ret);
	/*
	 * Not BFS_WRITE_CACHED for the application's buffered writes: on a
	 * quiet machine it made the objects workload (4 MiB writes, fsync
	 * every 8) 0.52 -> 0.34 of ext4, every fsync writing back all that the
	 * host cache held (doc/benchmarks.md, end of session 4).  Writes
	 * under 64 KiB go through the host cache anyway.
	 */
	/* page-aligned when the wire shim received it aside: no bounce for O_DIRECT */
	buf = bfs_fuse_wire_write_data(buf, size);
	n = bfs_fs_write_flags(fs_of(req), ino, buf, size, (u64)off,
			       (fi->fh & BFS_FH_O_DIRECT) ? BFS_WRITE_THROUGH : 0);
	if (n < 0)
		return reply_err(req, n);
	if (n && (fi->fh & BFS_FH_DIRECT_IO) && !fi->writepage)
		direct_write_inval(req, ino, off, (size_t)n);
	fuse_reply_write(req, (size_t)n);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	reply_err(req, open_undo(fs_of(req), ino, fi));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	reply_err(req, bfs_fs_fsync(fs_of(req), ino, datasync != 0));
}

/* an open directory keeps its inode, as an open file does, after rmdir */
static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct bfs_fs *fs = fs_of(req);
	int ret = bfs_fs_inode_open(fs, ino);

	if (ret)
		return reply_err(req, ret);
	fi->fh = 0;
	/* the kernel drops its copy of a listing when it changes the directory */
	fi->cache_readdir = 1;
	fi->keep_cache = !atime_open(req, ino, fuse_of(req)->dir_atime);
	if (fuse_reply_open(req, fi))
		bfs_fs_inode_release(fs, ino);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	reply_err(req, bfs_fs_inode_release(fs_of(req), ino));
}

static mode_t dirent_mode(u32 type)
{
	/* a DT_* value, or an S_IFMT one */
	return type <= 15 ? (mode_t)DTTOIF(type) : (mode_t)(type & S_IFMT);
}

/* ---- readdir: one reply buffer of the size the kernel asked for ---- */

struct dir_fill {
	fuse_req_t	req;
	char		*buf;
	size_t		size, used;
};

static int fill_one(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct dir_fill *d = ctx;
	struct stat st = { .st_ino = ino, .st_mode = dirent_mode(type) };
	char nm[BFS_NAME_MAX + 1];
	size_t n;

	if (len > BFS_NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(nm, name, len);
	nm[len] = '\0';
	n = fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, nm, &st, (off_t)next);
	if (n > d->size - d->used)
		return 1;	/* full: this entry comes first next time */
	d->used += n;
	return 0;
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dir_fill d = { .req = req, .size = size };
	struct bfs_fuse *f = fuse_of(req);
	int ret;

	d.buf = malloc(size ? size : 1);
	if (!d.buf)
		return reply_err(req, -ENOMEM);
	ret = bfs_fs_readdir(fs_of(req), ino, (u64)off, fill_one, &d);
	if (ret < 0 && !d.used) {
		reply_err(req, ret);
	} else {
		fuse_reply_buf(req, d.buf, d.used);
		atime_touch(f, ino, f->dir_atime);
	}
	free(d.buf);
}

/*
 * readdirplus: the listing is collected first and the attributes looked up
 * after bfs_fs_readdir() has returned, so that no filesystem call is made
 * from inside the listing callback.
 */
struct plus_ent {
	u64	ino, next;
	u32	type;
	bool	ref;		/* replied with attributes: a lookup reference taken */
	char	name[BFS_NAME_MAX + 1];
};

struct plus_fill {
	fuse_req_t	req;
	size_t		size, need;
	struct plus_ent	*ents;
	size_t		nr, alloc;
};

static int plus_collect(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct plus_fill *p = ctx;
	struct plus_ent *e;
	size_t n;

	if (len > BFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (p->nr == p->alloc) {
		size_t alloc = p->alloc ? p->alloc * 2 : 32;

		e = realloc(p->ents, alloc * sizeof(*e));
		if (!e)
			return -ENOMEM;
		p->ents = e;
		p->alloc = alloc;
	}
	e = &p->ents[p->nr];
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	n = fuse_add_direntry_plus(p->req, NULL, 0, e->name, NULL, 0);
	if (p->need + n > p->size)
		return 1;
	p->need += n;
	e->ino = ino;
	e->type = type;
	e->next = next;
	p->nr++;
	return 0;
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

/* *ref: the entry took a lookup reference (the kernel will FORGET it) */
static size_t plus_emit(fuse_req_t req, char *buf, size_t size, const struct plus_ent *pe,
			bool *ref)
{
	struct fuse_entry_param e;
	struct bfs_stat st;

	/*
	 * ino 0 hands the kernel a name without attributes (and without a
	 * lookup reference): for "." and "..", and for an entry that went
	 * away since it was listed.  Every other entry is a lookup: the
	 * kernel will FORGET it.
	 */
	*ref = false;
	if (is_dot_or_dotdot(pe->name) || bfs_fs_getattr(fs_of(req), pe->ino, &st) ||
	    entry_ref(req, &st)) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = pe->ino;
		e.attr.st_mode = dirent_mode(pe->type);
	} else {
		fill_entry(req, &e, &st);
		*ref = true;
	}
	return fuse_add_direntry_plus(req, buf, size, pe->name, &e, (off_t)pe->next);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	struct plus_fill p = { .req = req, .size = size };
	struct bfs_fuse *f = fuse_of(req);
	size_t used = 0, i;
	char *buf;
	int ret;

	ret = bfs_fs_readdir(fs_of(req), ino, (u64)off, plus_collect, &p);
	buf = malloc(size ? size : 1);
	if (!buf || (ret < 0 && !p.nr)) {
		reply_err(req, buf ? ret : -ENOMEM);
		goto out;
	}
	for (i = 0; i < p.nr; i++) {
		bool ref;
		size_t n = plus_emit(req, buf + used, size - used, &p.ents[i], &ref);

		if (n > size - used) {
			/* cannot happen: plus_collect() measured each entry */
			if (ref)
				entry_unref(f->fs, p.ents[i].ino);
			break;
		}
		used += n;
		p.ents[i].ref = ref;
	}
	p.nr = i;
	if (fuse_reply_buf(req, buf, used)) {
		/* interrupted: the kernel got none of these lookups */
		for (i = 0; i < p.nr; i++)
			if (p.ents[i].ref)
				entry_unref(f->fs, p.ents[i].ino);
	}
	atime_touch(f, ino, f->dir_atime);
out:
	free(buf);
	free(p.ents);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	reply_err(req, bfs_fs_fsync(fs_of(req), ino, datasync != 0));
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct bfs_statfs s;
	struct statvfs sv;
	int ret;

	ret = bfs_fs_statfs(fs_of(req), &s);
	if (ret)
		return reply_err(req, ret);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = s.bsize;
	sv.f_frsize = s.bsize;
	sv.f_blocks = s.blocks;
	sv.f_bfree = s.bfree;
	sv.f_bavail = s.bavail;
	sv.f_files = s.files;
	sv.f_ffree = s.ffree;
	sv.f_favail = s.ffree;
	sv.f_namemax = s.namemax;
	fuse_reply_statfs(req, &sv);
}

/* ---- extended attributes ---- */

/*
 * POSIX ACLs: with FUSE_CAP_POSIX_ACL the kernel checks them (it reads
 * them back with getxattr, which needs nothing special) and passes
 * setfacl through as these xattrs; the filesystem layer keeps the mode in
 * step.  A kernel without it would enforce none of it: the names are
 * refused then, as on a filesystem mounted noacl, and tools fall back to
 * chmod(2).
 */
static bool is_acl(const char *name)
{
	return !strncmp(name, "system.posix_acl_", 17);
}

/* 1: access ACL, 2: default ACL, 0: neither */
static int acl_kind(const char *name)
{
	if (!strcmp(name, "system.posix_acl_access"))
		return 1;
	return !strcmp(name, "system.posix_acl_default") ? 2 : 0;
}

/*
 * A remount request (cmd/mount_remount.c): "ro" flushes everything and
 * stops atime writes before the kernel makes the mount read-only; "rw"
 * comes after the kernel made it writable again (only if the filesystem
 * was opened read-write); commit= and the atime policy take effect at once.
 */
static int control_remount(struct bfs_fuse *f, const char *value, size_t size)
{
	struct bfs_mount_opts o;
	char *list;
	int ret = 0;

	if (!size || size > 1024 || memchr(value, '\0', size))
		return -EINVAL;
	list = strndup(value, size);
	if (!list)
		return -ENOMEM;
	bfs_mount_opts_init(&o);
	if (bfs_mount_opts_parse(&o, list, "bfs mount (remount)"))
		ret = -EINVAL;
	else if (!o.read_only && f->opened_ro)
		ret = -EROFS;
	if (!ret && o.read_only && !f->read_only) {
		f->read_only = true;
		ret = bfs_fs_sync(f->fs);
	} else if (!ret && !o.read_only) {
		f->read_only = false;
	}
	if (!ret) {
		f->atime = o.atime;
		f->dir_atime = o.nodiratime ? BFS_ATIME_NEVER : o.atime;
		f->commit_secs = o.commit_secs;
		if (o.errors_set) {
			f->errors_set = true;
			f->errors = o.errors;
		}
		ret = bfs_fs_set_commit_interval(f->fs, o.commit_secs ? 1000 * o.commit_secs :
						 bfs_fs_commit_default_ms(f->fs, 1000 * BFS_MOUNT_COMMIT_DEFAULT));
	}
	bfs_mount_opts_free(&o);
	free(list);
	return ret;
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	unsigned bflags = 0;

	if (ino == BFS_ROOT_INO && !strcmp(name, BFS_FUSE_CTL_REMOUNT))
		return reply_err(req, control_remount(fuse_of(req), value, size));
	if (is_acl(name) && (!fuse_of(req)->acl || !acl_kind(name)))
		return reply_err(req, -EOPNOTSUPP);
	if (is_acl(name) && acl_kind(name) == 2)
		return reply_err(req, bfs_fs_set_acl(fs_of(req), ino, true, value, size));
	if (is_acl(name))	/* the kernel drops its cached mode after it (fuse_set_acl()) */
		return reply_err(req, bfs_fs_set_acl_kill_sgid(fs_of(req), ino, false, value, size,
							       bfs_fuse_acl_kills_sgid(req, ino)));
	if (flags & ~(XATTR_CREATE | XATTR_REPLACE))
		return reply_err(req, -EINVAL);
	if (flags & XATTR_CREATE)
		bflags |= BFS_XATTR_CREATE;
	if (flags & XATTR_REPLACE)
		bflags |= BFS_XATTR_REPLACE;
	reply_err(req, bfs_fs_setxattr(fs_of(req), ino, name, value, size, bflags));
}

/* @size 0 asks for the size only (fuse_reply_xattr), else for the bytes */
static void reply_sized(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		reply_err(req, n);
	else if (!size)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = NULL;
	ssize_t n;

	if (is_acl(name) && !fuse_of(req)->acl)
		return reply_err(req, -EOPNOTSUPP);
	if (size && !(buf = malloc(size)))
		return reply_err(req, -ENOMEM);
	n = bfs_fs_getxattr(fs_of(req), ino, name, buf, size);
	reply_sized(req, n, buf, size);
	free(buf);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = NULL;
	ssize_t n;

	if (size && !(buf = malloc(size)))
		return reply_err(req, -ENOMEM);
	n = bfs_fs_listxattr(fs_of(req), ino, buf, size);
	reply_sized(req, n, buf, size);
	free(buf);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	if (is_acl(name) && (!fuse_of(req)->acl || !acl_kind(name)))
		return reply_err(req, -EOPNOTSUPP);
	if (is_acl(name))
		return reply_err(req, bfs_fs_set_acl(fs_of(req), ino, acl_kind(name) == 2, NULL, 0));
	reply_err(req, bfs_fs_removexattr(fs_of(req), ino, name));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			 struct fuse_file_info *fi)
{
	unsigned bmode = 0;

	/* collapse, insert and unshare ranges are not supported */
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		return reply_err(req, -EOPNOTSUPP);
	if (offset < 0 || length <= 0)
		return reply_err(req, -EINVAL);
	if (mode & FALLOC_FL_KEEP_SIZE)
		bmode |= BFS_FALLOC_KEEP_SIZE;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		bmode |= BFS_FALLOC_PUNCH_HOLE;
	if (mode & FALLOC_FL_ZERO_RANGE)
		bmode |= BFS_FALLOC_ZERO_RANGE;
	/*
	 * The VFS's file_modified() clears set-ID bits before an fallocate;
	 * under KILLPRIV_V2 the kernel leaves that to us but flags nothing in
	 * the request, so the caller's CAP_FSETID is looked up (only for a
	 * file that has such bits)
	 */
	if (bfs_fuse_wire_killpriv()) {
		int ret = bfs_fuse_kill_suidgid(req, ino, BFS_KILL_UNLESS_FSETID);

		if (ret)
			return reply_err(req, ret);
	}
	reply_err(req, bfs_fs_fallocate(fs_of(req), ino, bmode, (u64)offset, (u64)length));
}

/*
 * SEEK_DATA / SEEK_HOLE from the file's extent map (which comes in logical
 * order).  Data is an extent with a device location; holes and fallocated
 * (unwritten) ranges read as zeros and count as holes, as on ext4.
 */
struct seek_ctx {
	u64	off;		/* where the search starts */
	u64	data;		/* SEEK_DATA: first data at or after off */
	u64	hole;		/* SEEK_HOLE: first hole at or after off */
	bool	want_hole;
	bool	found;
};

static int seek_extent(void *ctx, const struct bfs_fs_extent *e)
{
	struct seek_ctx *s = ctx;
	u64 end = e->logical + e->len;

	if (!e->physical || (e->flags & BFS_EXTENT_UNWRITTEN) || end <= s->off)
		return 0;
	if (!s->want_hole) {
		s->data = e->logical > s->off ? e->logical : s->off;
		s->found = true;
		return 1;
	}
	if (e->logical > s->hole) {
		s->found = true;	/* a gap before this extent */
		return 1;
	}
	if (end > s->hole)
		s->hole = end;
	return 0;
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct seek_ctx s = { .off = (u64)off, .hole = (u64)off, .want_hole = whence == SEEK_HOLE };
	struct bfs_stat st;
	int ret;

	/* SEEK_SET, SEEK_CUR and SEEK_END never get here */
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return reply_err(req, -EINVAL);
	if (off < 0)
		return reply_err(req, -ENXIO);
	ret = bfs_fs_getattr(fs_of(req), ino, &st);
	if (ret)
		return reply_err(req, ret);
	if ((u64)off >= st.size)
		return reply_err(req, -ENXIO);
	ret = bfs_fs_map(fs_of(req), ino, seek_extent, &s);
	if (ret < 0)
		return reply_err(req, ret);
	if (s.want_hole) {
		fuse_reply_lseek(req, (off_t)(s.hole < st.size ? s.hole : st.size));
		return;
	}
	if (!s.found || s.data >= st.size)
		return reply_err(req, -ENXIO);
	fuse_reply_lseek(req, (off_t)s.data);
}

/* ---- FS_IOC_GETFLAGS / SETFLAGS: lsattr and chattr ---- */

static const struct {
	u32	fs_flag;	/* FS_*_FL (FS_IOC_GETFLAGS) */
	u32	xflag;		/* FS_XFLAG_* (FS_IOC_FSGETXATTR) */
	u32	bfs_flag;	/* BFS_INODE_* */
} iflag_map[] = {
	{ FS_IMMUTABLE_FL, FS_XFLAG_IMMUTABLE,	BFS_INODE_IMMUTABLE },
	{ FS_APPEND_FL,	   FS_XFLAG_APPEND,	BFS_INODE_APPEND },
	{ FS_NODUMP_FL,	   FS_XFLAG_NODUMP,	BFS_INODE_NODUMP },
	{ FS_NOATIME_FL,   FS_XFLAG_NOATIME,	BFS_INODE_NOATIME },
};

static u32 iflags_to(u32 bfs_flags, bool xflags)
{
	u32 out = 0;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(iflag_map); i++)
		if (bfs_flags & iflag_map[i].bfs_flag)
			out |= xflags ? iflag_map[i].xflag : iflag_map[i].fs_flag;
	return out;
}

/* -EOPNOTSUPP for flags we do not have (ext4's extents, compression...) */
static int iflags_from(u32 in, bool xflags, u32 *bfs_flags)
{
	size_t i;

	*bfs_flags = 0;
	for (i = 0; i < ARRAY_SIZE(iflag_map); i++) {
		u32 f = xflags ? iflag_map[i].xflag : iflag_map[i].fs_flag;

		if (in & f) {
			*bfs_flags |= iflag_map[i].bfs_flag;
			in &= ~f;
		}
	}
	return in ? -EOPNOTSUPP : 0;
}

static void iflags_set(fuse_req_t req, fuse_ino_t ino, u32 in, bool xflags)
{
	struct bfs_setattr sa = { .valid = BFS_SET_FLAGS };
	struct bfs_stat st;
	int ret;

	ret = iflags_from(in, xflags, &sa.flags);
	if (!ret)
		ret = bfs_fs_setattr(fs_of(req), ino, &sa, &st);
	if (ret)
		return reply_err(req, ret);
	/*
	 * The new ctime is a change the kernel does not see in an ioctl, and
	 * it may cache attributes for attr_timeout: drop them (attributes
	 * only, offset -1; no inode lock is taken, so the caller's is no
	 * deadlock) before chattr returns.
	 */
	if (fuse_of(req)->se)
		fuse_lowlevel_notify_inval_inode(fuse_of(req)->se, ino, -1, 0);
	fuse_reply_ioctl(req, 0, NULL, 0);
}

/*
 * The kernel sends these from its fileattr code (chattr's SETFLAGS reads
 * the old flags with FSGETXATTR first), with the argument sized as the
 * kernel uses it (4 bytes for the flags, not the long the ioctl number
 * claims), after checking ownership and CAP_LINUX_IMMUTABLE.
 */
static void op_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
		     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
		     size_t in_bufsz, size_t out_bufsz)
{
	struct fsxattr fx;
	struct bfs_stat st;
	u32 fsf;
	int ret;

	switch (cmd) {
	case FS_IOC_GETFLAGS:
	case FS_IOC_FSGETXATTR:
		if (out_bufsz < (cmd == FS_IOC_GETFLAGS ? sizeof(fsf) : sizeof(fx)))
			return reply_err(req, -EINVAL);
		ret = bfs_fs_getattr(fs_of(req), ino, &st);
		if (ret)
			return reply_err(req, ret);
		if (cmd == FS_IOC_GETFLAGS) {
			fsf = iflags_to(st.flags, false);
			fuse_reply_ioctl(req, 0, &fsf, sizeof(fsf));
			return;
		}
		memset(&fx, 0, sizeof(fx));
		fx.fsx_xflags = iflags_to(st.flags, true);
		fuse_reply_ioctl(req, 0, &fx, sizeof(fx));
		return;
	case FS_IOC_SETFLAGS:
		if (in_bufsz < sizeof(fsf))
			return reply_err(req, -EINVAL);
		memcpy(&fsf, in_buf, sizeof(fsf));
		return iflags_set(req, ino, fsf, false);
	case FS_IOC_FSSETXATTR:
		if (in_bufsz < sizeof(fx))
			return reply_err(req, -EINVAL);
		memcpy(&fx, in_buf, sizeof(fx));
		/* no extent size hints, project ids or CoW hints here */
		if (fx.fsx_extsize || fx.fsx_projid || fx.fsx_cowextsize)
			return reply_err(req, -EOPNOTSUPP);
		return iflags_set(req, ino, fx.fsx_xflags, true);
	case BFS_IOC_CTL:
		return bfs_mount_control(req, fuse_of(req), in_buf, in_bufsz, out_bufsz);
	default:
		reply_err(req, -ENOTTY);
	}
}

const struct fuse_lowlevel_ops bfs_fuse_ops = {
	.init		= op_init,
	.destroy	= op_destroy,
	.lookup		= op_lookup,
	.forget		= op_forget,
	.forget_multi	= op_forget_multi,
	.getattr	= op_getattr,
	.setattr	= op_setattr,
	.readlink	= op_readlink,
	.mknod		= op_mknod,
	.mkdir		= op_mkdir,
	.unlink		= op_unlink,
	.rmdir		= op_rmdir,
	.symlink	= op_symlink,
	.rename		= op_rename,
	.link		= op_link,
	.open		= op_open,
	.create		= op_create,
	.read		= op_read,
	.write		= op_write,
	.flush		= op_flush,
	.release	= op_release,
	.fsync		= op_fsync,
	.opendir	= op_opendir,
	.readdir	= op_readdir,
	.readdirplus	= op_readdirplus,
	.releasedir	= op_releasedir,
	.fsyncdir	= op_fsyncdir,
	.statfs		= op_statfs,
	.setxattr	= op_setxattr,
	.getxattr	= op_getxattr,
	.listxattr	= op_listxattr,
	.removexattr	= op_removexattr,
	.fallocate	= op_fallocate,
	.lseek		= op_lseek,
	.ioctl		= op_ioctl,
};
