// SPDX-License-Identifier: MIT
/*
 * bfs_image_restore(): the extents of a dump written back at their offsets.
 * The target reads as zeros elsewhere (the caller's promise), so all-zero
 * blocks are not written and a restored file stays sparse.
 *
 * The superblock regions go last, after a flush of everything else: until
 * then the target holds no valid superblock, so an interrupted restore is
 * never taken for a filesystem (every tool says there is none), and once any
 * superblock copy is on the device, all it points to is.  Restoring again
 * writes the same bytes: an interrupted restore is finished by rerunning it.
 */
#include "internal.h"

#define BLOCK	4096U

static bool all_zero(const u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* write the non-zero BLOCK-aligned pieces of one extent */
static int put(struct bfs_dev *dev, const struct bfs_image_extent *e)
{
	u64 off = e->offset, end = e->offset + e->len;

	while (off < end) {
		u64 next = BFS_MIN(BFS_ROUND_DOWN(off, BLOCK) + BLOCK, end);
		const u8 *p = e->data + (off - e->offset);
		int ret;

		if (!all_zero(p, (size_t)(next - off))) {
			ret = bfs_dev_write(dev, off, p, (size_t)(next - off));
			if (ret)
				return ret;
		}
		off = next;
	}
	return 0;
}

/* the superblock regions, kept back until the rest is durable */
#define HELD_MAX	32
#define HELD_MAX_BYTES	(4 * MiB)

struct held {
	struct bfs_image_extent e[HELD_MAX];
	unsigned nr;
	u64 bytes;
};

static int hold(struct held *h, const struct bfs_image_extent *e, char *err)
{
	u8 *copy;

	if (h->nr == HELD_MAX || h->bytes + e->len > HELD_MAX_BYTES) {
		IMG_ERR(err, "the dump holds more superblock regions than a filesystem has "
			"(%u, %llu bytes)", h->nr + 1, (unsigned long long)(h->bytes + e->len));
		return -EUCLEAN;
	}
	copy = bfs_malloc(e->len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, e->data, e->len);
	h->e[h->nr] = *e;
	h->e[h->nr++].data = copy;
	h->bytes += e->len;
	return 0;
}

static void held_free(struct held *h)
{
	while (h->nr)
		bfs_free((void *)h->e[--h->nr].data);
}

static int put_err(struct bfs_dev *dev, const struct bfs_image_extent *e, char *err)
{
	int ret = put(dev, e);

	if (ret)
		IMG_ERR(err, "cannot write %u bytes at offset %llu of '%s': %s", e->len,
			(unsigned long long)e->offset, bfs_dev_path(dev), strerror(-ret));
	return ret;
}

static int flush_err(struct bfs_dev *dev, char *err)
{
	int ret = bfs_dev_flush(dev);

	if (ret)
		IMG_ERR(err, "cannot flush '%s': %s", bfs_dev_path(dev), strerror(-ret));
	return ret;
}

int bfs_image_restore(struct bfs_image_reader *r, struct bfs_dev *dev, u64 total,
		      bfs_image_progress_fn progress, void *ctx, struct bfs_image_stats *st,
		      char *err)
{
	u64 dev_size = le64_to_cpu(bfs_image_reader_header(r)->dev_size);
	struct bfs_image_extent e;
	struct held h = { .nr = 0 };
	unsigned i;
	int ret;

	memset(st, 0, sizeof(*st));
	err[0] = 0;
	if (bfs_dev_size(dev) < dev_size) {
		IMG_ERR(err, "'%s' holds %llu bytes, the dump needs %llu", bfs_dev_path(dev),
			(unsigned long long)bfs_dev_size(dev), (unsigned long long)dev_size);
		return -ENOSPC;
	}
	st->records = 1;
	while ((ret = bfs_image_reader_next(r, &e, err)) == 1) {
		ret = e.kind == BFS_IMAGE_KIND_SUPER ? hold(&h, &e, err) : put_err(dev, &e, err);
		if (ret)
			goto out;
		st->records++;
		st->extent_bytes += e.len;
		if (e.kind < BFS_IMAGE_KIND_NR)
			st->kind_bytes[e.kind] += e.len;
		if (progress)
			progress(ctx, bfs_image_reader_pos(r), total);
	}
	if (ret)
		goto out;
	st->records++;
	ret = flush_err(dev, err);
	for (i = 0; !ret && i < h.nr; i++)
		ret = put_err(dev, &h.e[i], err);
	if (!ret)
		ret = flush_err(dev, err);
	/* the trailer and the superblocks held to the end are the last of it: all done */
	if (!ret && progress)
		progress(ctx, total, total);
out:
	held_free(&h);
	return ret;
}
