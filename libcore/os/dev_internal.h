/* SPDX-License-Identifier: MIT */
/*
 * Private to libcore/os/: the bfs_dev structure, shared by dev.c (I/O) and
 * iolog.c (recording and replay).
 */
#ifndef BFS_OS_DEV_INTERNAL_H
#define BFS_OS_DEV_INTERNAL_H

#include <bfs/dev.h>
#include <bfs/os.h>

struct bfs_iolog_rec;

struct bfs_dev {
	int		fd;		/* -1 for a memory device */
	u8		*mem;		/* memory device buffer, else NULL */
	u64		size;
	unsigned	sector_size;
	bool		blockdev;
	bool		readonly;
	bool		direct;
	bool		direct_ok;	/* a direct transfer succeeded: EINVAL is the caller's */
	bool		nobarrier;	/* bfs_dev_set_barriers(false) */
	/*
	 * BFS_DEV_DIRECT_TRY with O_DIRECT on: fd is direct, fd_buf a buffered
	 * descriptor of the same file for I/O the alignment rules refuse
	 * (-1 otherwise)
	 */
	int		fd_buf;
	char		*path;

	/* failure injection: 0 = off; accessed with __atomic builtins */
	u64		fail_after;
	u64		nr_writes;
	bool		failed;

	/*
	 * Recording: @rec is only dereferenced under @rec_lock; writers peek
	 * at it without the lock so that an unrecorded device pays nothing.
	 */
	bfs_mutex	rec_lock;
	struct bfs_iolog_rec *rec;

	/* read-error injection (fault.c): NULL = none */
	struct bfs_dev_faults *faults;

	/* held ranges (dev_hold.c): their writes stay in memory */
	struct bfs_dev_held *held;
	unsigned	nr_held;
};

/*
 * @data, in the functions below: file data (bfs_dev_submit()), which goes
 * around the page cache in BFS_DEV_DIRECT_TRY mode; everything else goes
 * through the buffered twin there, so that metadata written one block at a
 * time is not one device round trip per block (see doc/io.md)
 */
/* dev.c: bfs_dev_read() and bfs_dev_write()/_fua() */
int bfs_dev_do_read(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool data);
int bfs_dev_do_write(struct bfs_dev *dev, u64 off, const void *buf, size_t len, bool fua,
		     bool data);
/* dev.c: I/O of a checked range, past the held ranges */
int bfs_dev_raw_read(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool data);
int bfs_dev_raw_write(struct bfs_dev *dev, u64 off, const void *buf, size_t len, bool fua,
		      bool data);

/* dev.c: argument checks of a read or write (range; alignment in strict direct mode) */
int bfs_dev_check_io(const struct bfs_dev *dev, u64 off, const void *buf, size_t len);
/* fault.c: -EIO if a read of [off, off + len) touches an injected bad range */
int bfs_dev_fault_read(const struct bfs_dev *dev, u64 off, size_t len);
/* fault.c: BFS_FAULT_READ of the environment (at open); release at close */
int bfs_dev_faults_from_env(struct bfs_dev *dev);
void bfs_dev_faults_release(struct bfs_dev *dev);
/* dev.c: failure injection, once per write or discard: -EIO once the budget is used up */
int bfs_dev_inject_write(struct bfs_dev *dev);
/*
 * dev.c: the descriptor that serves [off, off + len) from @buf, and whether
 * @buf must go through an aligned bounce buffer (BFS_DEV_DIRECT_TRY)
 */
int bfs_dev_pick_fd(const struct bfs_dev *dev, u64 off, const void *buf, size_t len, bool data,
		    bool *bounce);
/*
 * this thread's bounce buffer of at least @len bytes aligned to @align,
 * valid until its next call on this thread; NULL if it cannot be had
 * (allocate one for the transfer instead)
 */
static inline u8 *bfs_dev_bounce_get(unsigned align, size_t len)
{
	return align > 4096U ? NULL : bfs_thread_buf(BFS_TBUF_DEV_BOUNCE, len);
}
/*
 * dev.c: after a transfer on @fd failed with @ret: was that the first
 * direct transfer refused with EINVAL (a filesystem that takes O_DIRECT at
 * open and not in I/O)?  Then the device has gone buffered: redo it.
 */
bool bfs_dev_direct_refused(struct bfs_dev *dev, int fd, int ret);
/* dev.c: a transfer on @fd succeeded: from now on EINVAL is not O_DIRECT's */
void bfs_dev_direct_worked(struct bfs_dev *dev, int fd);

/*
 * dev.c: one synchronous transfer on a file or block device (no checks, no
 * failure injection, no recording), falling back to buffered I/O if the
 * first direct transfer is refused
 */
int bfs_dev_xfer(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool write, bool data);

/* dev_hold.c: I/O of a device with held ranges, split at their edges */
int bfs_dev_held_io(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool write, bool fua);
void bfs_dev_held_release(struct bfs_dev *dev);

/* dev.c: pread/pwrite the whole range, retrying EINTR and short transfers */
int bfs_os_pread_all(int fd, u64 off, void *buf, size_t len);
int bfs_os_pwrite_all(int fd, u64 off, const void *buf, size_t len);

/* one transfer for uring.c: all of [off, off + len) between fd and buf */
struct bfs_os_xfer {
	int		fd;
	bool		write;
	u64		off;
	void		*buf;
	size_t		len;
	size_t		done;	/* bytes transferred so far */
	int		ret;	/* 0 or a negative errno, once complete */
};

/*
 * uring.c: run the @nr transfers concurrently and wait for all of them;
 * each one's result is in its ret, and @order (if not NULL, @nr entries)
 * receives their indices in the order they completed.  -ENOSYS: io_uring is
 * not available (nothing was done); another negative errno: the ring failed
 * (the transfers may have been done in part: redo them synchronously).
 * @work (if not NULL) runs once, after the first submission and before the
 * first wait, and *@worked says whether it ran.
 */
int bfs_os_uring_xfer(struct bfs_os_xfer *x, unsigned nr, unsigned *order,
		      void (*work)(void *arg), void *arg, bool *worked);
bool bfs_os_uring_available(void);

/*
 * flock_wait.c: flock(@fd, @op) (LOCK_EX or LOCK_SH), waiting up to
 * @timeout_ns for another holder to let go: 0, -EBUSY if it still holds
 * the lock then, or another negative errno
 */
int bfs_os_flock_wait(int fd, int op, u64 timeout_ns);

/* dev_size.c: the size in bytes of open @fd, a block device or a regular file */
int bfs_os_fd_size(int fd, bool blockdev, u64 *size);

/* iolog.c: append a record of a completed operation (no-op if not recording) */
void bfs_iolog_rec_io(struct bfs_dev *dev, enum bfs_iolog_type type,
		      u64 off, const void *buf, u64 len);
/* iolog.c: stop recording and free the recorder (on close) */
void bfs_iolog_rec_release(struct bfs_dev *dev);

static inline bool bfs_dev_recording(struct bfs_dev *dev)
{
	return __atomic_load_n(&dev->rec, __ATOMIC_ACQUIRE) != NULL;
}

#endif /* BFS_OS_DEV_INTERNAL_H */
