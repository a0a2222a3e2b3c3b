// SPDX-License-Identifier: MIT
/*
 * Block device access: regular files, block devices and memory buffers.
 *
 * Every read and write is all-or-nothing: short transfers are retried until
 * done, EINTR is retried, and anything else is reported as a negative errno.
 * Recording (iolog.c) sees each operation only after it completed, which is
 * the order dm-log-writes uses too.
 */

#include "sysdeps.h"

#include <bfs/log.h>

#include "dev_internal.h"

#define BFS_DEV_FILE_SECTOR_SIZE	512U
static const char bfs_mem_path[] = "(memory)";

/* ---- open / close ---- */

static struct bfs_dev *dev_alloc(const char *path)
{
	struct bfs_dev *dev = bfs_zalloc(sizeof(*dev));

	if (!dev)
		return NULL;
	dev->fd = -1;
	dev->fd_buf = -1;
	dev->path = strdup(path);
	if (!dev->path) {
		bfs_free(dev);
		return NULL;
	}
	bfs_mutex_init(&dev->rec_lock);
	return dev;
}

static void dev_free(struct bfs_dev *dev)
{
	bfs_dev_held_release(dev);
	bfs_dev_faults_release(dev);
	if (dev->fd >= 0)
		close(dev->fd);
	if (dev->fd_buf >= 0)
		close(dev->fd_buf);
	bfs_free(dev->mem);
	bfs_free(dev->path);
	bfs_mutex_destroy(&dev->rec_lock);
	bfs_free(dev);
}

/* only regular files and block devices are devices */
static int dev_check_type(mode_t mode)
{
	if (S_ISDIR(mode))
		return -EISDIR;
	if (!S_ISREG(mode) && !S_ISBLK(mode))
		return -ENODEV;
	return 0;
}

static int dev_open_fd(const char *path, unsigned flags, bool blockdev)
{
	/*
	 * O_NONBLOCK: should the path have been swapped for a FIFO since we
	 * looked at it, open must not hang; it is dropped again below.
	 */
	int oflags = O_CLOEXEC | O_NONBLOCK;
	int fd;

	oflags |= (flags & BFS_DEV_RDONLY) ? O_RDONLY : O_RDWR;
	if (flags & BFS_DEV_DIRECT)
		oflags |= O_DIRECT;
	/* on a block device O_EXCL is the kernel's exclusive claim */
	if ((flags & BFS_DEV_EXCL) && blockdev)
		oflags |= O_EXCL;

	fd = open(path, oflags);
	if (fd < 0) {
		int err = -errno;

		if (err == -EINVAL && (flags & BFS_DEV_DIRECT) && !(flags & BFS_DEV_DIRECT_TRY))
			bfs_err("%s: filesystem does not support O_DIRECT", path);
		return err;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/*
 * Advisory lock: exclusive opens keep everyone else out, read-only opens keep
 * an exclusive holder (mkfs, fsck -y) from changing the device underneath.
 * Another holder is waited for up to @wait_ns.
 */
static int dev_lock(struct bfs_dev *dev, unsigned flags, u64 wait_ns)
{
	int op;

	if (flags & BFS_DEV_EXCL)
		op = LOCK_EX;
	else if ((flags & BFS_DEV_RDONLY) && !(flags & BFS_DEV_NOLOCK))
		op = LOCK_SH;
	else
		return 0;

	while (flock(dev->fd, op | LOCK_NB) < 0) {
		if (errno == EINTR)
			continue;
		/* the caller says it in its own words: -EBUSY is "in use" */
		if (errno == EWOULDBLOCK)
			return bfs_os_flock_wait(dev->fd, op, wait_ns);
		return -errno;
	}
	return 0;
}

static int dev_probe(struct bfs_dev *dev, const struct stat *st)
{
	u64 size;
	int ssz;

	if (!dev->blockdev) {
		dev->size = (u64)st->st_size;
		dev->sector_size = BFS_DEV_FILE_SECTOR_SIZE;
		return 0;
	}
	if (bfs_os_fd_size(dev->fd, true, &size) || ioctl(dev->fd, BLKSSZGET, &ssz) < 0)
		return -errno;
	if (ssz <= 0 || !bfs_is_pow2((u64)ssz))
		return -ENODEV;
	/* a read-only device (losetup -r, write-protected) takes O_RDWR, then fails every write */
	if (!dev->readonly) {
		int ro = 0;

		if (ioctl(dev->fd, BLKROGET, &ro) == 0 && ro)
			return -EROFS;
	}
	dev->size = size;
	dev->sector_size = (unsigned)ssz;
	return 0;
}

/* BFS_BUFFERED_IO=1: every open without BFS_DEV_DIRECT goes through the page cache */
static bool dev_env_buffered(void)
{
	const char *s = getenv("BFS_BUFFERED_IO");

	return s && *s && strcmp(s, "0");
}

static int dev_open(const char *path, unsigned flags, u64 wait_ns, struct bfs_dev **out)
{
	struct bfs_dev *dev;
	struct stat st;
	int ret;

	*out = NULL;
	if (stat(path, &st) < 0)
		return -errno;
	ret = dev_check_type(st.st_mode);
	if (ret)
		return ret;

	dev = dev_alloc(path);
	if (!dev)
		return -ENOMEM;
	dev->blockdev = S_ISBLK(st.st_mode);
	dev->readonly = flags & BFS_DEV_RDONLY;
	if (!(flags & (BFS_DEV_DIRECT | BFS_DEV_BUFFERED)) && !dev_env_buffered())
		flags |= BFS_DEV_DIRECT_TRY;
	if (flags & BFS_DEV_DIRECT_TRY)
		flags |= BFS_DEV_DIRECT;
	dev->direct = flags & BFS_DEV_DIRECT;

	ret = dev_open_fd(path, flags, dev->blockdev);
	if (ret == -EINVAL && (flags & BFS_DEV_DIRECT_TRY)) {
		/* the filesystem refuses O_DIRECT (tmpfs, some FUSE): buffered it is */
		flags &= ~(unsigned)BFS_DEV_DIRECT;
		dev->direct = false;
		ret = dev_open_fd(path, flags, dev->blockdev);
	}
	if (ret < 0)
		goto err;
	dev->fd = ret;
	if (dev->direct && (flags & BFS_DEV_DIRECT_TRY)) {
		/* not O_EXCL: fd holds the exclusive claim already */
		ret = dev_open_fd(path, (flags & ~(unsigned)(BFS_DEV_DIRECT | BFS_DEV_EXCL)), false);
		if (ret < 0)
			goto err;
		dev->fd_buf = ret;
	}

	/* what we opened must be what we looked at */
	ret = fstat(dev->fd, &st) < 0 ? -errno : dev_check_type(st.st_mode);
	if (ret)
		goto err;
	if (S_ISBLK(st.st_mode) != dev->blockdev) {
		ret = -ENODEV;
		goto err;
	}
	if (dev->fd_buf >= 0) {
		struct stat sb;

		/* both descriptors must be the same file */
		if (fstat(dev->fd_buf, &sb) < 0 || sb.st_dev != st.st_dev || sb.st_ino != st.st_ino ||
		    sb.st_rdev != st.st_rdev) {
			ret = -ENODEV;
			goto err;
		}
	}

	ret = dev_lock(dev, flags, wait_ns);
	if (ret)
		goto err;
	ret = dev_probe(dev, &st);
	if (!ret)
		ret = bfs_dev_faults_from_env(dev);
	if (ret)
		goto err;
	*out = dev;
	return 0;
err:
	dev_free(dev);
	return ret;
}

int bfs_dev_open(const char *path, unsigned flags, struct bfs_dev **out)
{
	return dev_open(path, flags, 0, out);
}

int bfs_dev_open_wait(const char *path, unsigned flags, u64 wait_ns, struct bfs_dev **out)
{
	return dev_open(path, flags, wait_ns, out);
}

static int dev_open_mem_sized(u64 size, unsigned sector_size, struct bfs_dev **out)
{
	struct bfs_dev *dev;

	*out = NULL;
	if (!size)
		return -EINVAL;
	if (size > SIZE_MAX)
		return -ENOMEM;
	dev = dev_alloc(bfs_mem_path);
	if (!dev)
		return -ENOMEM;
	/* calloc of a large size maps fresh zero pages: no memset cost */
	dev->mem = bfs_calloc(1, (size_t)size);
	if (!dev->mem) {
		dev_free(dev);
		return -ENOMEM;
	}
	dev->size = size;
	dev->sector_size = sector_size;
	*out = dev;
	return 0;
}

int bfs_dev_open_mem(u64 size, struct bfs_dev **out)
{
	return dev_open_mem_sized(size, BFS_DEV_FILE_SECTOR_SIZE, out);
}

int bfs_dev_clone_mem(struct bfs_dev *src, struct bfs_dev **out)
{
	struct bfs_dev *dev;
	int ret;

	ret = dev_open_mem_sized(src->size, src->sector_size, &dev);
	if (ret)
		return ret;
	if (src->mem)
		memcpy(dev->mem, src->mem, (size_t)src->size);
	else
		ret = bfs_dev_read(src, 0, dev->mem, (size_t)src->size);
	if (ret) {
		bfs_dev_close(dev);
		return ret;
	}
	*out = dev;
	return 0;
}

void bfs_dev_close(struct bfs_dev *dev)
{
	if (!dev)
		return;
	bfs_iolog_rec_release(dev);
	dev_free(dev);
}

/* ---- properties ---- */

u64 bfs_dev_size(const struct bfs_dev *dev) { return dev->size; }
unsigned bfs_dev_sector_size(const struct bfs_dev *dev) { return dev->sector_size; }
bool bfs_dev_is_blockdev(const struct bfs_dev *dev) { return dev->blockdev; }
bool bfs_dev_is_readonly(const struct bfs_dev *dev) { return dev->readonly; }
bool bfs_dev_is_direct(const struct bfs_dev *dev)
{
	return dev->fd >= 0 && __atomic_load_n(&dev->direct, __ATOMIC_RELAXED);
}
const char *bfs_dev_path(const struct bfs_dev *dev) { return dev->path; }
u8 *bfs_dev_mem(struct bfs_dev *dev) { return dev->mem; }

/* ---- argument checks ---- */

/* written so that off + len cannot overflow */
static int dev_check_range(const struct bfs_dev *dev, u64 off, u64 len)
{
	if (off > dev->size || len > dev->size - off)
		return -ERANGE;
	return 0;
}

/*
 * The kernel rejects misaligned O_DIRECT I/O with EINVAL too, but only after
 * a partial transfer in some cases; refuse it up front instead.
 */
static int dev_check_direct(const struct bfs_dev *dev, u64 off, const void *buf, u64 len)
{
	u64 mask = dev->sector_size - 1;

	/* with a buffered twin every request can be served (dev_xfer) */
	if (dev->fd_buf >= 0 || !__atomic_load_n(&dev->direct, __ATOMIC_RELAXED))
		return 0;
	if ((off & mask) || (len & mask) || ((uintptr_t)buf & mask))
		return -EINVAL;
	return 0;
}

int bfs_dev_check_io(const struct bfs_dev *dev, u64 off, const void *buf, size_t len)
{
	int ret = dev_check_range(dev, off, len);

	return ret ? ret : dev_check_direct(dev, off, buf, len);
}

/* ---- failure injection ---- */

void bfs_dev_fail_writes_after(struct bfs_dev *dev, u64 nr_writes)
{
	__atomic_store_n(&dev->nr_writes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&dev->failed, false, __ATOMIC_RELAXED);
	__atomic_store_n(&dev->fail_after, nr_writes, __ATOMIC_RELEASE);
}

/* called once per write or discard: -EIO once the budget is used up */
int bfs_dev_inject_write(struct bfs_dev *dev)
{
	u64 limit = __atomic_load_n(&dev->fail_after, __ATOMIC_ACQUIRE);

	if (!limit)
		return 0;
	if (__atomic_fetch_add(&dev->nr_writes, 1, __ATOMIC_RELAXED) < limit)
		return 0;
	__atomic_store_n(&dev->failed, true, __ATOMIC_RELAXED);
	return -EIO;
}

/* a device that failed a write cannot flush either */
static bool dev_inject_failed(struct bfs_dev *dev)
{
	return __atomic_load_n(&dev->failed, __ATOMIC_RELAXED);
}

/* ---- data transfer ---- */

int bfs_os_pread_all(int fd, u64 off, void *buf, size_t len)
{
	u8 *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)		/* the file shrank under us */
			return -EIO;
		p += n;
		off += (u64)n;
		len -= (size_t)n;
	}
	return 0;
}

int bfs_os_pwrite_all(int fd, u64 off, const void *buf, size_t len)
{
	const u8 *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EIO;
		p += n;
		off += (u64)n;
		len -= (size_t)n;
	}
	return 0;
}

/* bounce buffers are at most this big (the thread's own, BFS_TBUF_DEV_BOUNCE, or one per request) */
#define DEV_BOUNCE_MAX	(2 * MiB)

int bfs_dev_pick_fd(const struct bfs_dev *dev, u64 off, const void *buf, size_t len, bool data,
		    bool *bounce)
{
	u64 mask = dev->sector_size - 1;

	*bounce = false;
	if (dev->fd_buf < 0 || !__atomic_load_n(&dev->direct, __ATOMIC_RELAXED))
		return dev->fd;
	if (!data || ((off | len) & mask))
		return dev->fd_buf;
	*bounce = (uintptr_t)buf & mask;
	return dev->fd;
}

bool bfs_dev_direct_refused(struct bfs_dev *dev, int fd, int ret)
{
	int fl;

	if (ret != -EINVAL || fd != dev->fd || dev->fd_buf < 0 ||
	    !__atomic_load_n(&dev->direct, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&dev->direct_ok, __ATOMIC_RELAXED))
		return false;
	fl = fcntl(dev->fd, F_GETFL);
	if (fl < 0 || fcntl(dev->fd, F_SETFL, fl & ~O_DIRECT) < 0)
		return false;
	__atomic_store_n(&dev->direct, false, __ATOMIC_RELAXED);
	bfs_info("%s: direct I/O refused, using the page cache", dev->path);
	return true;
}

void bfs_dev_direct_worked(struct bfs_dev *dev, int fd)
{
	if (fd == dev->fd && !__atomic_load_n(&dev->direct_ok, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&dev->direct, __ATOMIC_RELAXED))
		__atomic_store_n(&dev->direct_ok, true, __ATOMIC_RELAXED);
}

static int dev_bounce_xfer(struct bfs_dev *dev, u64 off, u8 *p, size_t len, bool write)
{
	size_t chunk = BFS_MIN(len, (size_t)DEV_BOUNCE_MAX);
	unsigned align = BFS_MAX(dev->sector_size, 4096U);
	u8 *mine = bfs_dev_bounce_get(align, chunk);
	u8 *bounce = mine ? mine : bfs_aligned_alloc(align, chunk);
	int ret = 0;

	if (!bounce)
		return -ENOMEM;
	while (len && !ret) {
		size_t n = BFS_MIN(len, chunk);

		if (write) {
			memcpy(bounce, p, n);
			ret = bfs_os_pwrite_all(dev->fd, off, bounce, n);
		} else {
			ret = bfs_os_pread_all(dev->fd, off, bounce, n);
			if (!ret)
				memcpy(p, bounce, n);
		}
		p += n;
		off += n;
		len -= n;
	}
	if (!mine)
		bfs_free(bounce);
	return ret;
}

/*
 * One read or write on a file or block device.  In BFS_DEV_DIRECT_TRY mode
 * an unaligned offset or length goes to the buffered descriptor (the kernel
 * keeps the page cache coherent with direct I/O on the same file: a direct
 * read writes back dirty cached pages of its range first, a direct write
 * drops them), and an unaligned buffer is bounced through aligned memory so
 * that the request itself still bypasses the page cache.
 */
int bfs_dev_xfer(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool write, bool data)
{
	bool bounce;
	int fd, ret;

	do {
		fd = bfs_dev_pick_fd(dev, off, buf, len, data, &bounce);
		if (bounce)
			ret = dev_bounce_xfer(dev, off, buf, len, write);
		else
			ret = write ? bfs_os_pwrite_all(fd, off, buf, len) :
				      bfs_os_pread_all(fd, off, buf, len);
	} while (bfs_dev_direct_refused(dev, fd, ret));
	if (!ret)
		bfs_dev_direct_worked(dev, fd);
	return ret;
}

int bfs_dev_do_read(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool data)
{
	int ret = bfs_dev_check_io(dev, off, buf, len);

	if (!ret)
		ret = bfs_dev_fault_read(dev, off, len);
	if (ret || !len)
		return ret;
	if (dev->nr_held)
		return bfs_dev_held_io(dev, off, buf, len, false, false);
	return bfs_dev_raw_read(dev, off, buf, len, data);
}

int bfs_dev_read(struct bfs_dev *dev, u64 off, void *buf, size_t len)
{
	return bfs_dev_do_read(dev, off, buf, len, false);
}

int bfs_dev_raw_read(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool data)
{
	if (dev->mem) {
		memcpy(buf, dev->mem + off, len);
		return 0;
	}
	return bfs_dev_xfer(dev, off, buf, len, false, data);
}

u64 bfs_dev_data_from(struct bfs_dev *dev, u64 off)
{
	off_t r;

	if (off >= dev->size)
		return dev->size;
	if (dev->mem || dev->blockdev)
		return off;
	r = lseek(dev->fd, (off_t)off, SEEK_DATA);
	if (r < 0)
		return errno == ENXIO ? dev->size : off;	/* ENXIO: only a hole is left */
	return (u64)r < dev->size ? (u64)r : dev->size;
}

static int dev_fdatasync(struct bfs_dev *dev)
{
	while (fdatasync(dev->fd) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

int bfs_dev_do_write(struct bfs_dev *dev, u64 off, const void *buf, size_t len, bool fua,
		     bool data)
{
	int ret;

	if (dev->readonly)
		return -EROFS;
	ret = bfs_dev_check_io(dev, off, buf, len);
	if (ret || !len)
		return ret;
	if (dev->nr_held)
		return bfs_dev_held_io(dev, off, (void *)buf, len, true, fua);
	return bfs_dev_raw_write(dev, off, buf, len, fua, data);
}

int bfs_dev_raw_write(struct bfs_dev *dev, u64 off, const void *buf, size_t len, bool fua,
		      bool data)
{
	int ret = bfs_dev_inject_write(dev);

	if (ret)
		return ret;

	if (dev->mem) {
		memcpy(dev->mem + off, buf, len);
	} else {
		ret = bfs_dev_xfer(dev, off, (void *)buf, len, true, data);
		if (!ret && fua && !dev->nobarrier)
			ret = dev_fdatasync(dev);
		if (ret)
			return ret;
	}
	if (bfs_dev_recording(dev))
		bfs_iolog_rec_io(dev, fua ? BFS_IOLOG_FUA : BFS_IOLOG_WRITE, off, buf, len);
	return 0;
}

int bfs_dev_write(struct bfs_dev *dev, u64 off, const void *buf, size_t len)
{
	return bfs_dev_do_write(dev, off, buf, len, false, false);
}

int bfs_dev_write_fua(struct bfs_dev *dev, u64 off, const void *buf, size_t len)
{
	return bfs_dev_do_write(dev, off, buf, len, true, false);
}

int bfs_dev_flush(struct bfs_dev *dev)
{
	if (dev_inject_failed(dev))
		return -EIO;
	if (dev->readonly)
		return 0;
	/*
	 * Logged before syncing: everything logged so far completed before
	 * fdatasync started and is durable once it returns; writes completing
	 * meanwhile land after the flush record, i.e. count as not yet durable.
	 */
	if (bfs_dev_recording(dev))
		bfs_iolog_rec_io(dev, BFS_IOLOG_FLUSH, 0, NULL, 0);
	if (dev->mem || dev->nobarrier)
		return 0;
	return dev_fdatasync(dev);
}

void bfs_dev_set_barriers(struct bfs_dev *dev, bool on)
{
	dev->nobarrier = !on;
}

static int dev_discard_blk(struct bfs_dev *dev, u64 off, u64 len)
{
	u64 range[2] = { off, len };

	if (ioctl(dev->fd, BLKDISCARD, range) < 0)
		return errno == ENOTTY ? -EOPNOTSUPP : -errno;
	return 0;
}

static int dev_discard_file(struct bfs_dev *dev, u64 off, u64 len)
{
	while (fallocate(dev->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			 (off_t)off, (off_t)len) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

int bfs_dev_discard(struct bfs_dev *dev, u64 off, u64 len)
{
	int ret;

	if (dev->readonly)
		return -EROFS;
	ret = dev_check_range(dev, off, len);
	if (ret || !len)
		return ret;
	ret = bfs_dev_inject_write(dev);
	if (ret)
		return ret;

	if (dev->mem)
		memset(dev->mem + off, 0, (size_t)len);
	else if (dev->blockdev)
		ret = dev_discard_blk(dev, off, len);
	else
		ret = dev_discard_file(dev, off, len);
	if (ret)
		return ret;
	if (bfs_dev_recording(dev))
		bfs_iolog_rec_io(dev, BFS_IOLOG_DISCARD, off, NULL, len);
	return 0;
}
