/* SPDX-License-Identifier: MIT */
/*
 * bfs mount: the FUSE low-level operations (cmd/fuse_ops.c), the mount
 * options (cmd/mount_opts.c) and the command (cmd/mount.c).
 *
 * The operations are a thin translation layer: each one calls the
 * filesystem API of include/bfs/fs.h and replies; the filesystem logic
 * (and its locking) lives in libcore/fs/.  Permission checks are the
 * kernel's: bfs always mounts with default_permissions.  File locks
 * (flock, POSIX locks) are left to the kernel, which keeps them local to
 * this mount: that is exact, because nothing else can open the image
 * while it is mounted.
 */
#ifndef BFS_FUSE_OPS_H
#define BFS_FUSE_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <stdbool.h>

#include <bfs/fs.h>
#include <bfs/os.h>

/* the FUSE subtype: /proc/mounts says fuse.bcowfs (fuseblk.bcowfs for block devices) */
#define BFS_FUSE_SUBTYPE	BFS_FS_TYPE

/*
 * Remount requests reach the mount process as a setxattr of this name on
 * the root of the mount, with a -o list as the value ("ro,commit=5,...");
 * trusted.*: the kernel lets only CAP_SYS_ADMIN set it.  Never stored.
 */
#define BFS_FUSE_CTL_REMOUNT	"trusted.bcowfs.remount"

struct bfs_mount_opts {
	bool	remount;	/* change a running mount (cmd/mount_remount.c) */
	bool	read_only;
	bool	no_replay;	/* norecovery: ro, journal not replayed */
	bool	allow_other;
	bool	allow_root;
	bool	writeback;	/* FUSE_CAP_WRITEBACK_CACHE */
	bool	debug;
	bool	clone_fd;
	bool	discard;	/* discard freed data buckets (in batches) */
	bool	noacl;		/* POSIX ACLs off */
	unsigned max_threads;
	unsigned uring;		/* enum bfs_uring_mode (fuse_uring.h): uring, nouring, or auto */
	u64	cache_bytes;	/* btree node cache, 0 = the library's default */
	double	attr_timeout;	/* seconds */
	double	entry_timeout;
	unsigned commit_secs;	/* periodic commit interval, 0 = BFS_MOUNT_COMMIT_DEFAULT */
	bool	errors_set;	/* errors=: overrides the filesystem's (set-option errors=) */
	unsigned errors;	/* enum bfs_errors */
	unsigned atime;		/* BFS_ATIME_*: relatime (default), strictatime, noatime */
	bool	nodiratime;	/* directories: no atime updates */
	char	*kernel_opts;	/* mount flags passed on to FUSE (nodev, noexec...) */
};

/* ext4's default commit interval: at most this much unsynced work is lost in a crash */
#define BFS_MOUNT_COMMIT_DEFAULT	5

/* defaults: rw, default_permissions, 10 threads, 60 s caching, no writeback */
void bfs_mount_opts_init(struct bfs_mount_opts *o);
void bfs_mount_opts_free(struct bfs_mount_opts *o);
/*
 * parse one -o list ("ro,cache_size=256M,allow_other"); returns 0, or -1
 * after printing what is wrong to stderr prefixed by @who
 */
int bfs_mount_opts_parse(struct bfs_mount_opts *o, const char *list, const char *who);
/*
 * -o remount: apply @o to the bfs mount at @dir, in the kernel and in its
 * mount process; 0, or -1 after printing why not
 */
int bfs_mount_remount(const char *who, const char *dir, const struct bfs_mount_opts *o);

/* what every operation needs, passed to fuse_session_new() as userdata */
struct bfs_fuse {
	struct bfs_fs	*fs;		/* NULL once DESTROY has closed it */
	struct fuse_session *se;	/* for invalidations; NULL: none sent */
	bfs_rwlock	life;		/* FORGET (read) against DESTROY (write) */
	/* DESTROY: close the filesystem and the device (mount.c) */
	void		(*close)(void *ctx);
	void		*close_ctx;
	double		attr_timeout;
	double		entry_timeout;
	bool		writeback;
	bool		read_only;	/* now (remount,ro sets it) */
	bool		opened_ro;	/* the filesystem is open read-only: no remount,rw */
	bool		want_acl;	/* -o acl (the default) */
	bool		acl;		/* POSIX ACLs on: the kernel has both capabilities */
	unsigned	atime;		/* BFS_ATIME_* for files */
	unsigned	dir_atime;	/* and for directories */
	/* the control channel (cmd/mount_control.c) */
	unsigned	commit_secs;	/* -o commit=, or 0: the filesystem's interval applies */
	bool		errors_set;	/* -o errors= given: set-option errors= does not apply */
	unsigned	errors;		/* enum bfs_errors in force */
	bool		errors_seen;	/* remount-ro or panic already happened */
};

/* the mount a request is for, and its filesystem */
static inline struct bfs_fuse *fuse_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static inline struct bfs_fs *fs_of(fuse_req_t req)
{
	return fuse_of(req)->fs;
}

extern const struct fuse_lowlevel_ops bfs_fuse_ops;

/*
 * cmd/mount_control.c: answer a BFS_IOC_CTL request (resize, set-option on
 * the mounted filesystem; doc/control.md)
 */
void bfs_mount_control(fuse_req_t req, struct bfs_fuse *f, const void *in, size_t in_size,
		       size_t out_size);
/*
 * An operation failed with @err: a metadata (-EUCLEAN) or I/O error applies
 * the errors= behaviour (log; remount-ro: refuse writes from now on; panic:
 * stop the filesystem)
 */
void bfs_mount_on_error(struct bfs_fuse *f, int err, const char *op);
/* close the filesystem now (DESTROY does it too; later calls do nothing) */
void bfs_fuse_close(struct bfs_fuse *f);

#endif /* BFS_FUSE_OPS_H */
