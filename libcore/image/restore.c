// SPDX-License-Identifier: MIT
/*
 * bfs_image_restore(): the extents of a dump written back at their offsets.
 * The target reads as zeros elsewhere (the caller's promise), so all-zero
 * blocks are not written and a restored file stays sparse.
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

int bfs_image_restore(struct bfs_image_reader *r, struct bfs_dev *dev, u64 total,
		      bfs_image_progress_fn progress, void *ctx, struct bfs_image_stats *st,
		      char *err)
{
	u64 dev_size = le64_to_cpu(bfs_image_reader_header(r)->dev_size);
	struct bfs_image_extent e;
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
		ret = put(dev, &e);
		if (ret) {
			IMG_ERR(err, "cannot write %u bytes at offset %llu of '%s': %s", e.len,
				(unsigned long long)e.offset, bfs_dev_path(dev), strerror(-ret));
			return ret;
		}
		st->records++;
		st->extent_bytes += e.len;
		if (e.kind < BFS_IMAGE_KIND_NR)
			st->kind_bytes[e.kind] += e.len;
		if (progress)
			progress(ctx, bfs_image_reader_pos(r), total);
	}
	if (ret)
		return ret;
	st->records++;
	ret = bfs_dev_flush(dev);
	if (ret)
		IMG_ERR(err, "cannot flush '%s': %s", bfs_dev_path(dev), strerror(-ret));
	return ret;
}
