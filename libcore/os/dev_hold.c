// SPDX-License-Identifier: MIT
/*
 * Held ranges of a device: writes into them go to an in-memory copy.
 * migrate builds a whole bfs on a device that must remain a valid ext
 * filesystem until the end; the only places bfs cannot avoid are its
 * superblock areas, so those are held and written out in one commit.
 */
#include "sysdeps.h"

#include "dev_internal.h"

#define BFS_DEV_MAX_HELD	8

struct bfs_dev_held {
	u64	off, len;
	u8	*copy;
};

int bfs_dev_hold(struct bfs_dev *dev, u64 off, u64 len)
{
	struct bfs_dev_held *h;
	unsigned i;
	int ret;

	if (!len || off > dev->size || len > dev->size - off || len > SIZE_MAX)
		return -EINVAL;
	if (dev->nr_held == BFS_DEV_MAX_HELD)
		return -EINVAL;
	for (i = 0; i < dev->nr_held; i++) {
		h = &dev->held[i];
		if (off < h->off + h->len && h->off < off + len)
			return -EINVAL;
	}
	if (!dev->held) {
		dev->held = bfs_calloc(BFS_DEV_MAX_HELD, sizeof(*dev->held));
		if (!dev->held)
			return -ENOMEM;
	}
	h = &dev->held[dev->nr_held];
	h->copy = bfs_malloc((size_t)len);
	if (!h->copy)
		return -ENOMEM;
	ret = bfs_dev_raw_read(dev, off, h->copy, (size_t)len, false);
	if (ret) {
		bfs_free(h->copy);
		return ret;
	}
	h->off = off;
	h->len = len;
	dev->nr_held++;
	return 0;
}

void bfs_dev_unhold(struct bfs_dev *dev)
{
	unsigned i;

	for (i = 0; i < dev->nr_held; i++)
		bfs_free(dev->held[i].copy);
	dev->nr_held = 0;
}

void bfs_dev_held_release(struct bfs_dev *dev)
{
	bfs_dev_unhold(dev);
	bfs_free(dev->held);
	dev->held = NULL;
}

/* the held range containing @off, or the distance to the next one in *gap */
static struct bfs_dev_held *held_at(struct bfs_dev *dev, u64 off, u64 *gap)
{
	unsigned i;

	*gap = UINT64_MAX;
	for (i = 0; i < dev->nr_held; i++) {
		struct bfs_dev_held *h = &dev->held[i];

		if (off >= h->off && off < h->off + h->len)
			return h;
		if (h->off > off)
			*gap = BFS_MIN(*gap, h->off - off);
	}
	return NULL;
}

int bfs_dev_held_io(struct bfs_dev *dev, u64 off, void *buf, size_t len, bool write, bool fua)
{
	u8 *p = buf;
	int ret = 0;

	while (len && !ret) {
		u64 gap;
		struct bfs_dev_held *h = held_at(dev, off, &gap);
		size_t n;

		if (h) {
			n = (size_t)BFS_MIN((u64)len, h->off + h->len - off);
			if (write)
				memcpy(h->copy + (off - h->off), p, n);
			else
				memcpy(p, h->copy + (off - h->off), n);
		} else {
			n = (size_t)BFS_MIN((u64)len, gap);
			ret = write ? bfs_dev_raw_write(dev, off, p, n, fua, false)
				    : bfs_dev_raw_read(dev, off, p, n, false);
		}
		p += n;
		off += n;
		len -= n;
	}
	return ret;
}
