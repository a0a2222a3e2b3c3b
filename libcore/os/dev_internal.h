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

	/* held ranges (dev_hold.c): their writes stay in memory */
	struct bfs_dev_held *held;
	unsigned	nr_held;
};

/* dev.c: I/O of a checked range, past the held ranges */
int bfs_dev_raw_read(struct bfs_dev *dev, u64 off, void *buf, size_t len);
int bfs_dev_raw_write(struct bfs_dev *dev, u64 off, const void *buf, size_t len, bool fua);

/* dev_hold.c: I/O of a device with held ranges, split at their edges */
int bfs_dev_held_io(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool write, bool fua);
void bfs_dev_held_release(struct bfs_dev *dev);

/* dev.c: pread/pwrite the whole range, retrying EINTR and short transfers */
int bfs_os_pread_all(int fd, u64 off, void *buf, size_t len);
int bfs_os_pwrite_all(int fd, u64 off, const void *buf, size_t len);

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
