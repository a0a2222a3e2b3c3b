// SPDX-License-Identifier: MIT
/*
 * Device sizes: how big an open descriptor is, and a device that grows
 * while open (online resize): the size is read once at open, so the grow
 * asks again, and extends an image file itself.
 */
#include "dev_internal.h"

#include <errno.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int bfs_os_fd_size(int fd, bool blockdev, u64 *size)
{
	struct stat st;

	if (blockdev)
		return ioctl(fd, BLKGETSIZE64, size) < 0 ? -errno : 0;
	if (fstat(fd, &st) < 0)
		return -errno;
	*size = (u64)st.st_size;
	return 0;
}

int bfs_dev_refresh_size(struct bfs_dev *dev)
{
	u64 size;
	int ret;

	if (dev->fd < 0)
		return 0;	/* memory devices keep their size */
	ret = bfs_os_fd_size(dev->fd, dev->blockdev, &size);
	if (ret)
		return ret;
	/* a device never shrinks under an open filesystem: that would be its end */
	if (size > dev->size)
		__atomic_store_n(&dev->size, size, __ATOMIC_RELEASE);
	return 0;
}

int bfs_dev_extend_file(struct bfs_dev *dev, u64 size)
{
	if (dev->fd < 0 || dev->blockdev)
		return -ENOTSUP;
	if (dev->readonly)
		return -EROFS;
	if (size <= dev->size)
		return 0;
	if (size > (u64)INT64_MAX)
		return -EFBIG;
	while (ftruncate(dev->fd, (off_t)size) < 0)
		if (errno != EINTR)
			return -errno;
	return bfs_dev_refresh_size(dev);
}
