// SPDX-License-Identifier: MIT
/*
 * Read-ahead hints: a walk that knows which nodes it reads next lets the
 * kernel fetch them while it checks the one in hand, so a cold cache does
 * not wait for one read at a time.
 */
#include <fcntl.h>

#include "dev_internal.h"

void bfs_dev_will_read(struct bfs_dev *dev, u64 off, u64 len)
{
	/*
	 * Metadata reads of a direct open go through its buffered twin
	 * (bfs_dev_pick_fd()), whose page cache the hint fills; without a twin,
	 * direct reads bypass that cache, and memory has nothing to fetch.
	 */
	int fd = dev->fd_buf >= 0 ? dev->fd_buf : dev->fd;

	if (fd < 0 || (fd == dev->fd && __atomic_load_n(&dev->direct, __ATOMIC_RELAXED)) ||
	    off >= dev->size)
		return;
	if (len > dev->size - off)
		len = dev->size - off;
	/* only a hint: a kernel or file that refuses it reads on demand as before */
	(void)posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}
