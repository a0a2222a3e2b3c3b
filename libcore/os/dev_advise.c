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
	/* memory has nothing to fetch; direct reads bypass the cache the hint fills */
	if (dev->fd < 0 || dev->direct || off >= dev->size)
		return;
	if (len > dev->size - off)
		len = dev->size - off;
	/* only a hint: a kernel or file that refuses it reads on demand as before */
	(void)posix_fadvise(dev->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}
