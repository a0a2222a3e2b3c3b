/* SPDX-License-Identifier: MIT */
/*
 * The filesystem layer (libcore/fs/): a POSIX filesystem on top of the btree
 * and journal, addressed by inode number like the FUSE low-level API.  The
 * FUSE mount, fsck, the debug shell and migrate all go through this API.
 *
 * Conventions
 *  - Every function returns 0 (or a byte count) or a negative errno, with the
 *    errno a POSIX filesystem would give (-ENOENT, -EEXIST, -ENOTDIR,
 *    -EISDIR, -ENOTEMPTY, -ENAMETOOLONG, -ENOSPC, -EROFS, -EIO, -EINVAL,
 *    -EXDEV never).  -EUCLEAN: corrupt metadata (message via bfs_err()).
 *  - Names are byte strings with an explicit length: 1..255 bytes, any byte
 *    but '/' and NUL; "." and ".." are answered by lookup and readdir but
 *    never stored.
 *  - Permission checks are the caller's (the kernel does them with FUSE's
 *    default_permissions); this layer enforces filesystem semantics only
 *    (types, emptiness, loops, link limits, and the immutable and
 *    append-only flags, which the kernel does not know for FUSE inodes;
 *    sticky bits are the caller's too).
 *  - Every modifying call is one atomic transaction.  It is durable after
 *    bfs_fs_fsync() of the inode (or its directory, for entries),
 *    bfs_fs_sync() or a clean bfs_fs_close().
 *  - Thread-safe: calls may run concurrently from many threads.
 *  - Inode numbers are never reused while a stale handle could name them:
 *    the (ino, generation) pair is unique for the life of the filesystem.
 */
#ifndef BFS_FS_H
#define BFS_FS_H

#include <sys/types.h>
#include <time.h>

#include "dev.h"
#include "finding.h"
#include "fs_format.h"
#include "types.h"

struct bfs_fs;

#define BFS_ROOT_INO		1	/* as FUSE numbers the root */
/* BFS_NAME_MAX, BFS_LINK_MAX, BFS_SYMLINK_MAX and the xattr limits: fs_format.h */

/* one data bucket's live sectors, as a walk of the extents btree counted them */
struct bfs_bucket_live {
	u32	gen;		/* the generation every counted extent carries */
	u32	sectors;	/* written, live sectors in the bucket */
};

struct bfs_fs_opts {
	bool	read_only;	/* no writes at all, not even journal replay */
	bool	no_replay;	/* damaged journal: open as of the last clean close */
	u64	cache_bytes;	/* btree node cache; 0 = default */
	/*
	 * fsck: check (and, if @check_roots says so and the open is
	 * writable, repair) the inode counter and the root directory with
	 * bfs_fs_check_roots() before they are required
	 */
	bfs_fix_fn check_roots;
	void	*check_ctx;
	/*
	 * with @check_roots: the highest inode number the keys name, if the
	 * caller counted it already (bfs_fs_key_max_ino() over every key from
	 * (1,0,0) of the inodes, dirents, xattrs and extents btrees, as they
	 * are after replay); 0: the check sweeps those btrees itself
	 */
	u64	known_max_ino;
	/* fsck: replay what is consistent of a damaged journal (bfs_core_opts) */
	bool	salvage_journal;
	bfs_finding_fn journal_finding;
	void	*journal_finding_ctx;
	/* migrate: buckets held for bfs_fs_import_*() (bitmap; see bfs/import.h) */
	const u64 *avoid_buckets;
	/*
	 * Read-write opens: make everything done so far durable every this
	 * many milliseconds (ext4's commit=), so that work nobody fsync'd is
	 * lost only up to one interval back.  0: only fsync/sync/close do.
	 */
	u32	commit_ms;
	/* with commit_ms 0: the superblock's interval (set-option commit=), else this */
	u32	commit_default_ms;
	/* discard data buckets once their emptying is durable (-o discard) */
	bool	discard;
	/*
	 * read-only opens for fsck: the data half takes each bucket's live
	 * sectors from its alloc key instead of counting them from a sweep of
	 * the extents btree (fsck's allocation check recounts them itself);
	 * statfs's numbers are then what the alloc keys say
	 */
	bool	check_only;
	/*
	 * bfs_fs_attach_prepared() for fsck -y: every data bucket's live
	 * sectors (the superblock's nbuckets entries, by bucket number), as
	 * fsck's walk of the extents btree on this same core counted them
	 * after replay, every extent pointing into [first_bucket, nbuckets)
	 * and each bucket's extents of one generation.  A writable open takes
	 * them instead of sweeping the extents btree again; if a bucket's
	 * generation disagrees with its alloc key (stale pointers), it sweeps
	 * after all, and names them.  NULL: the open counts for itself.
	 */
	const struct bfs_bucket_live *known_live;
};

int bfs_fs_open(struct bfs_dev *dev, const struct bfs_fs_opts *opts, struct bfs_fs **out);
/* sweeps of the extents btree the opens made to count live sectors (tests: fsck's) */
u64 bfs_fs_live_sweep_count(void);
/*
 * The same on core @c, opened read-only already (fsck -n: pass 1's open,
 * whose journal replay and node cache pass 2 then shares); @opts (not
 * NULL) must say read_only, and what it says about the core (cache, replay) is the
 * core's business now.  Takes @c: bfs_fs_close() closes it, and so does a
 * failure here.
 */
struct bfs_core;
int bfs_fs_attach(struct bfs_core *c, const struct bfs_fs_opts *opts, struct bfs_fs **out);
/*
 * fsck -y, opened once: the filesystem layer of a core the caller opens
 * read-only first (to check its btrees before anything is written) and
 * that becomes writable in place.  bfs_fs_prepare() sets @co's space hooks
 * (space_init, space_replay_key, space_ctx), so that the data half learns
 * its buckets before the core's replay may place nodes, as in
 * bfs_fs_open()'s own core; the caller opens the core with them
 * (read-only) and then either hands it over with bfs_fs_attach_prepared()
 * (@opts read-write or not: a read-write one makes the core writable,
 * bfs_core_make_writable(), then starts as bfs_fs_open() would; takes @c and
 * @fs, closing and freeing both on failure) or frees @fs with
 * bfs_fs_prepared_free() (after closing the core itself).
 */
struct bfs_core_opts;
int bfs_fs_prepare(struct bfs_dev *dev, struct bfs_core_opts *co, struct bfs_fs **out);
int bfs_fs_attach_prepared(struct bfs_fs *fs, struct bfs_core *c, const struct bfs_fs_opts *opts);
void bfs_fs_prepared_free(struct bfs_fs *fs);
/* flush everything, record a clean shutdown, free (also on error) */
int bfs_fs_close(struct bfs_fs *fs);
/* make everything done so far durable (sync(2)) */
int bfs_fs_sync(struct bfs_fs *fs);
/* change the periodic commit interval (0 stops it); read-only: nothing to do */
/* the interval a commit_ms of 0 means for @fs: the superblock's, else @fallback_ms */
u32 bfs_fs_commit_default_ms(struct bfs_fs *fs, u32 fallback_ms);
int bfs_fs_set_commit_interval(struct bfs_fs *fs, u32 ms);

struct bfs_stat {
	u64	ino;
	u64	generation;
	u32	mode;		/* S_IFMT | permission bits */
	u32	uid, gid;
	u32	nlink;
	u64	size;
	u64	blocks;		/* 512-byte units allocated */
	u64	rdev;
	u32	blksize;	/* preferred I/O size */
	u32	flags;		/* BFS_INODE_* below */
	struct timespec atime, mtime, ctime, btime;
};

#define BFS_INODE_IMMUTABLE	(1U << 0)
#define BFS_INODE_APPEND	(1U << 1)
#define BFS_INODE_NODUMP	(1U << 2)
#define BFS_INODE_NOATIME	(1U << 3)

/* which fields of struct bfs_setattr to apply */
#define BFS_SET_MODE		(1U << 0)	/* permission bits only */
#define BFS_SET_UID		(1U << 1)
#define BFS_SET_GID		(1U << 2)
#define BFS_SET_SIZE		(1U << 3)	/* truncate up or down */
#define BFS_SET_ATIME		(1U << 4)
#define BFS_SET_MTIME		(1U << 5)
#define BFS_SET_ATIME_NOW	(1U << 6)
#define BFS_SET_MTIME_NOW	(1U << 7)
#define BFS_SET_CTIME		(1U << 8)
#define BFS_SET_FLAGS		(1U << 9)
/* with BFS_SET_MODE: a stored access ACL follows the new bits, in the same transaction */
#define BFS_SET_ACL_MODE	(1U << 10)

struct bfs_setattr {
	u32	valid;
	u32	mode, uid, gid, flags;
	u64	size;
	struct timespec atime, mtime, ctime;
};

/* creation: who owns the new inode (the caller applies umask to mode) */
struct bfs_creds {
	u32	uid, gid;
};

int bfs_fs_getattr(struct bfs_fs *fs, u64 ino, struct bfs_stat *st);
int bfs_fs_setattr(struct bfs_fs *fs, u64 ino, const struct bfs_setattr *sa, struct bfs_stat *st);
int bfs_fs_lookup(struct bfs_fs *fs, u64 dir, const char *name, size_t len, struct bfs_stat *st);

/* regular files, FIFOs, sockets, character and block devices */
int bfs_fs_mknod(struct bfs_fs *fs, u64 dir, const char *name, size_t len, u32 mode, u64 rdev,
		 const struct bfs_creds *cr, struct bfs_stat *st);
int bfs_fs_mkdir(struct bfs_fs *fs, u64 dir, const char *name, size_t len, u32 mode,
		 const struct bfs_creds *cr, struct bfs_stat *st);
int bfs_fs_symlink(struct bfs_fs *fs, u64 dir, const char *name, size_t len, const char *target,
		   const struct bfs_creds *cr, struct bfs_stat *st);
/* the target into @buf (not NUL-terminated); returns its length */
ssize_t bfs_fs_readlink(struct bfs_fs *fs, u64 ino, char *buf, size_t size);
int bfs_fs_link(struct bfs_fs *fs, u64 ino, u64 newdir, const char *name, size_t len,
		struct bfs_stat *st);
/*
 * Remove a name.  An inode whose link count drops to zero lives on while it
 * is open (bfs_fs_inode_open/release) and is freed at the last release, or
 * by the next open of the filesystem after a crash (an orphan list).
 */
int bfs_fs_unlink(struct bfs_fs *fs, u64 dir, const char *name, size_t len);
int bfs_fs_rmdir(struct bfs_fs *fs, u64 dir, const char *name, size_t len);

#define BFS_RENAME_NOREPLACE	(1U << 0)
#define BFS_RENAME_EXCHANGE	(1U << 1)
/* rename(2) / renameat2(2) semantics, including -EINVAL for moving a directory into itself */
int bfs_fs_rename(struct bfs_fs *fs, u64 olddir, const char *oldname, size_t oldlen,
		  u64 newdir, const char *newname, size_t newlen, unsigned flags);

/*
 * Directory listing from @cookie (0 = start; "." and ".." come first).
 * @fn gets each entry and the cookie to resume after it; returning non-zero
 * stops the listing (and is not an error).  Cookies stay valid while the
 * directory changes: an entry present for the whole listing is returned
 * exactly once.
 */
typedef int (*bfs_filldir_fn)(void *ctx, const char *name, size_t len, u64 ino, u32 type,
			      u64 next_cookie);
int bfs_fs_readdir(struct bfs_fs *fs, u64 dir, u64 cookie, bfs_filldir_fn fn, void *ctx);

/*
 * References keep unlinked inodes alive: one per open file or directory,
 * and (the FUSE mount) one per lookup the kernel has not forgotten, so that
 * an inode the kernel still knows answers getattr, setattr and write-back
 * until its FORGET.  _open takes one (-ENOENT if the inode is gone),
 * _release drops one, _forget drops @n; the last one frees an unlinked
 * inode.
 */
int bfs_fs_inode_open(struct bfs_fs *fs, u64 ino);
int bfs_fs_inode_release(struct bfs_fs *fs, u64 ino);
int bfs_fs_inode_forget(struct bfs_fs *fs, u64 ino, u64 n);

/*
 * Access times (libcore/fs/atime.c).  Reads do not change atime by
 * themselves; the caller reports an access with bfs_fs_touch_atime(),
 * which applies @policy (and the inode's BFS_INODE_NOATIME flag):
 * relatime updates atime when it is not after mtime or ctime, or a day
 * old; strictatime always; never: no update.
 */
#define BFS_ATIME_RELATIME	0
#define BFS_ATIME_STRICT	1
#define BFS_ATIME_NEVER		2
/* would an access now change atime? (to tell whether the access must reach us) */
bool bfs_fs_atime_due(const struct bfs_stat *st, unsigned policy);
int bfs_fs_touch_atime(struct bfs_fs *fs, u64 ino, unsigned policy);

/* data: holes read as zeros; a checksum mismatch is -EIO, never wrong data */
ssize_t bfs_fs_read(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off);
/*
 * bfs_fs_read(), and *@atime_due: whether the inode the read saw says an
 * access changes atime under @policy.  Only then need the caller call
 * bfs_fs_touch_atime(): most reads under relatime take the inode lock and
 * look the inode up once, not twice.  Not due stays right until the
 * caller's update: atime only moves forward, and a write meanwhile came
 * after this access.
 */
ssize_t bfs_fs_read_due(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off,
			unsigned policy, bool *atime_due);
ssize_t bfs_fs_write(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off);
/*
 * BFS_WRITE_CACHED: the caller's own I/O is buffered (a file opened without
 * O_DIRECT): its data goes to the device through the host page cache
 * whatever its size, so the write returns without waiting for the device
 * and the next fsync makes it durable, as a kernel filesystem's buffered
 * write does.  Without it, writes of 64 KiB and more go direct.
 */
#define BFS_WRITE_CACHED	(1U << 0)
/*
 * BFS_WRITE_THROUGH: not held back in memory (a file opened with O_DIRECT).
 * Without it, a small write at a file's end may be buffered in memory and
 * written back later (at fsync, sync, the periodic commit, close, or when
 * anything else touches the file): doc/io.md "Small appends".
 */
#define BFS_WRITE_THROUGH	(1U << 1)
ssize_t bfs_fs_write_flags(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off,
			   unsigned flags);

#define BFS_FALLOC_KEEP_SIZE	(1U << 0)
#define BFS_FALLOC_PUNCH_HOLE	(1U << 1)	/* with KEEP_SIZE */
#define BFS_FALLOC_ZERO_RANGE	(1U << 2)
int bfs_fs_fallocate(struct bfs_fs *fs, u64 ino, unsigned mode, u64 off, u64 len);
/* data and metadata of @ino (and, for a directory, its entries) durable */
int bfs_fs_fsync(struct bfs_fs *fs, u64 ino, bool datasync);

#define BFS_XATTR_CREATE	(1U << 0)
#define BFS_XATTR_REPLACE	(1U << 1)
/* names with their namespace prefix: user., trusted., security., system.posix_acl_* */
int bfs_fs_setxattr(struct bfs_fs *fs, u64 ino, const char *name, const void *value,
		    size_t size, unsigned flags);
/* size == 0: return the value's size only; -ERANGE if @size is too small; -ENODATA if none */
ssize_t bfs_fs_getxattr(struct bfs_fs *fs, u64 ino, const char *name, void *value, size_t size);
/* NUL-separated names; size == 0 returns the size needed */
ssize_t bfs_fs_listxattr(struct bfs_fs *fs, u64 ino, char *list, size_t size);
int bfs_fs_removexattr(struct bfs_fs *fs, u64 ino, const char *name);
/*
 * 1 if @ino has a security.capability xattr, 0 if not, or an error: for a
 * write path that drops it, cheap for an open inode (kept in memory with
 * its open count, looked up again after any xattr change)
 */
int bfs_fs_has_caps(struct bfs_fs *fs, u64 ino);

/*
 * What a page cache in front of the filesystem (the FUSE kernel's) may hold
 * of an inode, kept with its references (bfs_fs_inode_open) by the FUSE
 * daemon: a direct write must drop the pages a read filled while it was in
 * flight, and need not when none can exist (cmd/fuse_ops.c).
 *  bfs_fs_cache_open()   an open through the cache, before any read through
 *                        it; from then on pages may be cached
 *  bfs_fs_cache_close()  its release (its pages may stay cached)
 *  bfs_fs_cache_fill()   before a read that may fill pages outside such an
 *                        open (a mapping of an uncached one)
 *  bfs_fs_cache_state()  after a write: NONE, no page can hold data older
 *                        than it; OPEN, an open through the cache exists
 *                        (or the inode has no references: nothing known);
 *                        LEFT, none exists but pages may remain.  *gen for:
 *  bfs_fs_cache_clear()  after every cached page was dropped (following a
 *                        LEFT): NONE from now on, unless an open or a fill
 *                        came since that bfs_fs_cache_state()
 * Pages may be cached until the last reference goes (the kernel evicts the
 * inode before its FORGET) or bfs_fs_cache_clear().
 */
enum bfs_cache_state { BFS_CACHE_NONE, BFS_CACHE_OPEN, BFS_CACHE_LEFT };
void bfs_fs_cache_open(struct bfs_fs *fs, u64 ino);
void bfs_fs_cache_close(struct bfs_fs *fs, u64 ino);
void bfs_fs_cache_fill(struct bfs_fs *fs, u64 ino);
enum bfs_cache_state bfs_fs_cache_state(struct bfs_fs *fs, u64 ino, u32 *gen);
void bfs_fs_cache_clear(struct bfs_fs *fs, u64 ino, u32 gen);

/*
 * POSIX ACLs (libcore/fs/acl.c), values in Linux's xattr form.  Permission
 * checks are the caller's (the kernel's); this layer keeps the mode and the
 * access ACL in step and does the inheritance of default ACLs.
 *  bfs_fs_set_acl()  set (@value) or remove (NULL) the access or default
 *                    ACL: -EINVAL malformed, -EACCES a default ACL on a
 *                    non-directory; an access ACL sets the permission bits
 *  bfs_fs_set_acl_kill_sgid()  the same, and with @kill_sgid the setting of
 *                    an access ACL also clears S_ISGID (the caller is
 *                    outside the file's group and lacks CAP_FSETID: the
 *                    kernel's posix_acl_update_mode())
 *  (chmod: bfs_fs_setattr() with BFS_SET_MODE | BFS_SET_ACL_MODE)
 *  bfs_fs_acl_new()  before creating in @dir: the mode of the new inode
 *                    (*mode: the requested one, unmasked) and the ACLs it
 *                    inherits; without a default ACL the umask applies
 *  bfs_fs_acl_new_apply()  after the create: store what it inherited
 */
struct bfs_acl_new {
	void	*access, *dflt;
	size_t	access_len, dflt_len;
};
int bfs_fs_set_acl(struct bfs_fs *fs, u64 ino, bool dflt, const void *value, size_t size);
int bfs_fs_set_acl_kill_sgid(struct bfs_fs *fs, u64 ino, bool dflt, const void *value,
			     size_t size, bool kill_sgid);
int bfs_fs_acl_new(struct bfs_fs *fs, u64 dir, u32 *mode, u32 umask, struct bfs_acl_new *n);
int bfs_fs_acl_new_apply(struct bfs_fs *fs, u64 ino, const struct bfs_acl_new *n);
void bfs_fs_acl_new_free(struct bfs_acl_new *n);

struct bfs_statfs {
	u32	bsize;
	u64	blocks, bfree, bavail;	/* in bsize units */
	u64	files, ffree;
	u32	namemax;
};
int bfs_fs_statfs(struct bfs_fs *fs, struct bfs_statfs *st);

/* physical map of a file (debug shell, fsck) */
struct bfs_fs_extent {
	u64	logical;	/* bytes */
	u64	len;		/* bytes */
	u64	physical;	/* device byte offset, 0 for a hole/unwritten */
	u32	flags;		/* BFS_EXTENT_* */
};
#define BFS_EXTENT_COMPRESSED	(1U << 0)
#define BFS_EXTENT_UNWRITTEN	(1U << 1)	/* fallocated, reads as zeros */
int bfs_fs_map(struct bfs_fs *fs, u64 ino, int (*fn)(void *ctx, const struct bfs_fs_extent *e),
	       void *ctx);

/* the btree core below, for tools (dump-btree, debug, fsck) */
struct bfs_core *bfs_fs_core(struct bfs_fs *fs);

/* ---- appended by the namespace half ---- */

struct bfs_sb;
/*
 * mkfs step after bfs_core_format() and the first superblock write: opens the
 * core on @dev, creates the root directory (BFS_ROOT_INO), lost+found and the
 * inode-number counter in one transaction, closes cleanly and re-reads the
 * superblock into *sb (a BFS_SB_MAX_BYTES buffer).
 */
int bfs_fs_format(struct bfs_dev *dev, struct bfs_sb *sb);
/* the same, placing no node in a bucket set in @avoid (bitmap, may be NULL) */
int bfs_fs_format_avoid(struct bfs_dev *dev, struct bfs_sb *sb, const u64 *avoid);
/*
 * fsck, before the filesystem can be opened: the keys without which
 * bfs_fs_open() fails - the inode-number counter (missing, or not past every
 * inode number in use) and the root directory (missing or not a directory).
 * Each problem goes to @fix; what it says yes to is repaired on @c (opened
 * writable) in one transaction.  Returns the number of problems, or -errno.
 * @max_ino: the highest inode number the keys name, if the caller counted it
 * (bfs_fs_key_max_ino()), else 0: the check sweeps four btrees for it.
 */
struct bfs_core;
long bfs_fs_check_roots(struct bfs_core *c, bfs_fix_fn fix, void *ctx, u64 max_ino);
/*
 * The highest inode number key @k of btree @id names (its own, a dirent's
 * target), 0 if none: what the counter must be past.  Only keys from
 * (1,0,0) of the inodes, dirents, xattrs and extents btrees count.
 */
struct bfs_bkey;
u64 bfs_fs_key_max_ino(unsigned id, const struct bfs_bkey *k);

#endif /* BFS_FS_H */
