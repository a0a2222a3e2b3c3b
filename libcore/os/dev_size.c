// SPDX-License-Identifier: MIT
/*
 * A device that grows while open (online resize): the size is read once at
 * open, so the grow asks again, and extends an image file itself.
 */
#include "dev_internal.h"

#include <errno.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int bfs_dev_refresh_size(struct bfs_dev *dev)
{
	struct stat st;
	u64 size;

	if (dev->fd < 0)
		return 0;	/* memory devices keep their size */
	if (dev->blockdev) {
		if (ioctl(dev->fd, BLKGETSIZE64, &size) < 0)
			return -errno;
	} else {
		if (fstat(dev->fd, &st) < 0)
			return -errno;
		size = (u64)st.st_size;
	}
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
