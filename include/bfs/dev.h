/* SPDX-License-Identifier: MIT */
/*
 * Block device access: the only I/O path of libcore (libcore/os/dev.c).
 *
 * A bfs_dev is a regular file, a block device or an anonymous memory buffer
 * (for tests and fuzzing).  All calls return 0 or a negative errno.  Reads and
 * writes are all-or-nothing: a short transfer is reported as -EIO, an access
 * beyond the end of the device as -ERANGE.
 *
 * Recording mode: when a recorder is attached, every write, flush and discard
 * (and explicit marks) is appended to a log file in the dm-log-writes format
 * (doc/format/iolog.md, bfs/iolog_format.h).  The crash harness replays
 * prefixes and subsets of that log onto a copy of the starting image to build
 * the device states a power failure could leave behind.
 */
#ifndef BFS_DEV_H
#define BFS_DEV_H

#include "types.h"

struct bfs_dev;

enum bfs_dev_flags {
	BFS_DEV_RDONLY	= 1 << 0,	/* open read-only */
	BFS_DEV_DIRECT	= 1 << 1,	/* O_DIRECT; buffers must be aligned */
	BFS_DEV_EXCL	= 1 << 2,	/* O_EXCL for block devices, flock for files */
	BFS_DEV_NOLOCK	= 1 << 3,	/* read-only open without the shared lock */
	/*
	 * O_DIRECT where the filesystem or device allows it, buffered where it
	 * refuses; any buffer, offset and length: sector-aligned I/O from an
	 * unaligned buffer goes through an aligned bounce buffer, I/O at
	 * unaligned offsets or lengths through a second, buffered descriptor
	 */
	BFS_DEV_DIRECT_TRY = 1 << 4,
	/*
	 * through the page cache.  Without it and without BFS_DEV_DIRECT an
	 * open is BFS_DEV_DIRECT_TRY, unless BFS_BUFFERED_IO=1 is in the
	 * environment; a filesystem that refuses O_DIRECT at open or in the
	 * first aligned transfer (EINVAL) gets buffered I/O instead.
	 */
	BFS_DEV_BUFFERED = 1 << 5,
};

/* -EROFS for a read-write open of a read-only block device (losetup -r) */
int bfs_dev_open(const char *path, unsigned flags, struct bfs_dev **out);
/*
 * The same, and a file's lock (BFS_DEV_EXCL, or the shared one of a
 * read-only open) that another holds is waited for, up to @wait_ns: the
 * open returns as that holder lets go, or -EBUSY after @wait_ns.  A block
 * device claimed by another O_EXCL opener is -EBUSY at once.
 */
int bfs_dev_open_wait(const char *path, unsigned flags, u64 wait_ns, struct bfs_dev **out);
/* a zero-filled memory device of @size bytes (tests, fuzzing) */
int bfs_dev_open_mem(u64 size, struct bfs_dev **out);
/* a memory device whose contents are copied from @src */
int bfs_dev_clone_mem(struct bfs_dev *src, struct bfs_dev **out);
void bfs_dev_close(struct bfs_dev *dev);

u64 bfs_dev_size(const struct bfs_dev *dev);
/* read the size again (it only ever grows: online resize); memory devices keep theirs */
int bfs_dev_refresh_size(struct bfs_dev *dev);
/* make an image file @size bytes long (sparse), never shorter; -ENOTSUP for others */
int bfs_dev_extend_file(struct bfs_dev *dev, u64 size);
unsigned bfs_dev_sector_size(const struct bfs_dev *dev);	/* logical block size */
bool bfs_dev_is_blockdev(const struct bfs_dev *dev);
bool bfs_dev_is_readonly(const struct bfs_dev *dev);
/* is I/O going around the page cache (BFS_DEV_DIRECT, or _TRY where it worked)? */
bool bfs_dev_is_direct(const struct bfs_dev *dev);
const char *bfs_dev_path(const struct bfs_dev *dev);
/* for memory devices: the backing buffer (NULL otherwise) */
u8 *bfs_dev_mem(struct bfs_dev *dev);

int bfs_dev_read(struct bfs_dev *dev, u64 off, void *buf, size_t len);
/*
 * [@off, @off + @len) will be read soon: the kernel may fetch it in the
 * background (files and block devices read through the page cache; a
 * hint only, nothing happens elsewhere or if it is refused)
 */
void bfs_dev_will_read(struct bfs_dev *dev, u64 off, u64 len);
/*
 * The first offset >= @off that may hold data: image files skip their holes
 * (SEEK_DATA), which read as zeros; devices and memory return @off.  Whole-
 * device scans use it so a sparse 1 TiB image costs what it holds.
 */
u64 bfs_dev_data_from(struct bfs_dev *dev, u64 off);
int bfs_dev_write(struct bfs_dev *dev, u64 off, const void *buf, size_t len);
/*
 * A batch of reads and writes, in flight together (io_uring where the
 * kernel and the sandbox allow it, one after the other where not) and all
 * complete on return.  Nothing orders them: writes of one batch reach the
 * device in any order and are durable only after a flush, so they must not
 * overlap each other or a read of the same batch.  Each entry gets its
 * own result in @ret: an entry that fails the checks of bfs_dev_read() or
 * bfs_dev_write() (-ERANGE, -EROFS, -EINVAL) is not carried out, the others
 * are, and the call returns the first error in entry order.  The recorder sees each write when it
 * completed, in the order of completion.
 */
struct bfs_dev_io {
	u64	off;
	void	*buf;
	size_t	len;
	bool	write;
	/*
	 * through the page cache even on a direct device (BFS_DEV_DIRECT_TRY):
	 * small writes that the next flush writes back together, instead of
	 * one device round trip each
	 */
	bool	cached;
	int	ret;	/* out: 0 or a negative errno */
};

int bfs_dev_submit(struct bfs_dev *dev, struct bfs_dev_io *io, unsigned nr);
/*
 * bfs_dev_submit() that runs @work(@arg) once, while the transfers are in
 * flight where they go through io_uring (before them where they do not):
 * CPU work that only reads the buffers being written, such as the
 * checksums of the data, costs no time of its own next to the device's.
 * Runs @work even if the batch fails.
 */
int bfs_dev_submit_during(struct bfs_dev *dev, struct bfs_dev_io *io, unsigned nr,
			  void (*work)(void *arg), void *arg);

/* make all completed writes durable (fdatasync / BLKFLSBUF-free flush) */
int bfs_dev_flush(struct bfs_dev *dev);
/* write + flush of just this range (FUA-like); recorded as a FUA write */
int bfs_dev_write_fua(struct bfs_dev *dev, u64 off, const void *buf, size_t len);
/* drop the range: BLKDISCARD on block devices, hole punch on files */
int bfs_dev_discard(struct bfs_dev *dev, u64 off, u64 len);

/*
 * Failure injection (any kind of device): after @nr_writes more successful
 * writes/discards, every write and discard fails with -EIO, and once one has
 * failed so does flush.  Reads keep working.  0 turns it off again.
 */
void bfs_dev_fail_writes_after(struct bfs_dev *dev, u64 nr_writes);

/*
 * Read-error injection (libcore/os/fault.c, doc/testing.md): reads touching
 * the ranges of @spec, "OFFSET[+LEN][,...]" (bytes; LEN 1 by default), fail
 * with -EIO from now on; NULL or "" clears them.  -EINVAL (and @err) for a
 * bad spec.  bfs_dev_open() takes the same from BFS_FAULT_READ.
 */
int bfs_dev_set_read_faults(struct bfs_dev *dev, const char *spec, char *err);

/*
 * Without barriers, flushes and FUA writes do not wait for the device (they
 * are still logged when recording): for a tool whose commit point is one
 * later write (migrate), where nothing before it needs to be durable one
 * piece at a time.  The first flush after turning barriers back on makes
 * everything durable.
 */
void bfs_dev_set_barriers(struct bfs_dev *dev, bool on);

/* ---- held ranges ---- */

/*
 * Hold [off, off + len) in memory: from now on writes to it change only a
 * copy (taken from the device now) and reads of it see that copy, so a
 * filesystem can be built on a device whose superblock areas must stay
 * untouched until one final commit (migrate).  Held writes are neither
 * counted by failure injection nor recorded.  At most 8 ranges, not
 * overlapping: -EINVAL, -ENOMEM.  bfs_dev_unhold() forgets every held copy
 * (read them out first); the device then behaves as before.
 */
int bfs_dev_hold(struct bfs_dev *dev, u64 off, u64 len);
void bfs_dev_unhold(struct bfs_dev *dev);

/* ---- recording mode ---- */

/*
 * start logging every write/flush/discard to @logpath (truncated); the log's
 * sector size is the device's logical sector size.  -EBUSY if already on.
 */
int bfs_dev_record_start(struct bfs_dev *dev, const char *logpath);
/*
 * add a named mark record (e.g. "fsync 17") to the log; at most log sector
 * size - 33 bytes (479 for 512), else -ENAMETOOLONG
 */
int bfs_dev_record_mark(struct bfs_dev *dev, const char *mark);
/*
 * finish the log (writes the entry count into its header); -EINVAL if not
 * recording, else the first error that stopped the recording.  Closing the
 * device finishes the log too.
 */
int bfs_dev_record_stop(struct bfs_dev *dev);

/* ---- reading an I/O log back (crash harness, tools) ---- */

enum bfs_iolog_type {
	BFS_IOLOG_WRITE,
	BFS_IOLOG_FLUSH,	/* everything before it is durable */
	BFS_IOLOG_FUA,		/* a write that is durable by itself */
	BFS_IOLOG_DISCARD,
	BFS_IOLOG_MARK,
};

struct bfs_iolog_entry {
	enum bfs_iolog_type type;
	u64	off;		/* bytes */
	u64	len;		/* bytes (mark: length of the text) */
	u64	data_pos;	/* position of the payload in the log file */
};

struct bfs_iolog {
	int	fd;
	u32	sector_size;
	size_t	nr;
	struct bfs_iolog_entry *entries;
};

/*
 * bfs_iolog_open() validates the whole log: -EINVAL not a log (bad magic),
 * -EPROTONOSUPPORT other version, -EBADMSG malformed entry, -ENODATA
 * truncated.  A kernel preflush+write record yields two entries (FLUSH, then
 * WRITE/FUA).  bfs_iolog_close() is safe after a failed open.
 */
int bfs_iolog_open(const char *logpath, struct bfs_iolog *log);
void bfs_iolog_close(struct bfs_iolog *log);
/*
 * read an entry's payload (len bytes: write data or mark text) into @buf;
 * -EINVAL for a discard, which has no payload
 */
int bfs_iolog_read_data(const struct bfs_iolog *log, size_t i, void *buf);
/*
 * Apply entry @i to @dev.  If @torn_bytes is non-zero only the first
 * torn_bytes of a write are applied (a torn write); 0 applies all of it.
 * torn_bytes > len is -EINVAL.  Discards replay as zeros; flushes and marks
 * change nothing.
 */
int bfs_iolog_apply(const struct bfs_iolog *log, size_t i, struct bfs_dev *dev, u64 torn_bytes);

#endif /* BFS_DEV_H */
