// SPDX-License-Identifier: MIT
/*
 * Reading and writing superblock copies.
 *
 * Reading trusts the primary copy when it is valid, like e2fsprogs, unless
 * the backups outvote it (vote.c); when it is unreadable or invalid the valid
 * backup with the highest sequence number wins.  Writing updates the backups
 * first and the primary last with a flush in between, so that a crash in the
 * middle leaves either the old or the new superblock valid at the primary
 * location and never neither.
 */
#include <bfs/checksum.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>

static size_t sb_io_bytes(u32 bytes)
{
	return BFS_ROUND_UP((size_t)bytes, BFS_SB_IO_ALIGN);
}

int bfs_sb_read_copy(struct bfs_dev *dev, u64 offset, struct bfs_sb *buf, char *err)
{
	u64 dev_size = bfs_dev_size(dev);
	size_t len;
	u32 bytes;
	int ret;

	if (offset + BFS_SB_IO_ALIGN > dev_size) {
		if (err)
			snprintf(err, BFS_ERR_LEN, "device too small (%llu bytes) to hold a "
				 "superblock at offset %llu", (unsigned long long)dev_size,
				 (unsigned long long)offset);
		return -ENODATA;
	}
	ret = bfs_dev_read(dev, offset, buf, BFS_SB_IO_ALIGN);
	if (ret)
		goto io_err;
	len = BFS_SB_IO_ALIGN;
	bytes = le32_to_cpu(buf->bytes);
	/* read the rest only for a plausible superblock; validation says the rest */
	if (le64_to_cpu(buf->magic) == BFS_SB_MAGIC && bytes > len && bytes <= BFS_SB_MAX_BYTES) {
		size_t want = sb_io_bytes(bytes);

		if (offset + want > dev_size)
			want = (size_t)(dev_size - offset);
		ret = bfs_dev_read(dev, offset + len, (u8 *)buf + len, want - len);
		if (ret)
			goto io_err;
		len = want;
	}
	return bfs_sb_validate(buf, len, dev_size, err);
io_err:
	if (err)
		snprintf(err, BFS_ERR_LEN, "read error at offset %llu: %s",
			 (unsigned long long)offset, strerror(-ret));
	return ret;
}

struct sb_search {
	struct bfs_sb *best;
	unsigned best_copy;
	u64 best_offset;
	u64 tried[2 * BFS_SB_MAX_COPIES];
	unsigned nr_tried;
	bool any_magic;		/* some copy looked like bfs: damage, not "not bfs" */
};

static bool already_tried(struct sb_search *s, u64 offset)
{
	unsigned i;

	for (i = 0; i < s->nr_tried; i++)
		if (s->tried[i] == offset)
			return true;
	if (s->nr_tried < ARRAY_SIZE(s->tried))
		s->tried[s->nr_tried++] = offset;
	return false;
}

/* read the backup at @offset; keep it if it is the newest valid one so far */
static void try_backup(struct bfs_dev *dev, struct sb_search *s, unsigned copy, u64 offset)
{
	char err[BFS_ERR_LEN];
	struct bfs_sb *cand;
	int ret;

	if (already_tried(s, offset))
		return;
	cand = bfs_sb_buf_alloc();
	if (!cand)
		return;
	ret = bfs_sb_read_copy(dev, offset, cand, err);
	s->any_magic |= ret != -ENODATA;
	if (!ret && (!s->best || le64_to_cpu(cand->seq) > le64_to_cpu(s->best->seq))) {
		bfs_sb_buf_free(s->best);
		s->best = cand;
		s->best_copy = copy;
		s->best_offset = offset;
		return;
	}
	bfs_sb_buf_free(cand);
}

/*
 * Backups: the fixed offsets for the current device size, then the offsets
 * a valid backup itself lists (they differ when the device has grown since
 * format, which moves the computed end-of-device location).
 */
static void search_backups(struct bfs_dev *dev, struct sb_search *s)
{
	u64 offs[BFS_SB_MAX_COPIES];
	unsigned nr = bfs_sb_copy_offsets(bfs_dev_size(dev), offs), i;

	already_tried(s, BFS_SB_OFFSET);
	for (i = 1; i < nr; i++)
		try_backup(dev, s, i, offs[i]);
	if (!s->best)
		return;
	for (i = 1; i < s->best->nr_copies; i++)
		try_backup(dev, s, i, le64_to_cpu(s->best->copy_offset[i]));
}

int bfs_sb_read(struct bfs_dev *dev, struct bfs_sb_handle *h, char *err)
{
	struct sb_search s = { 0 };
	struct bfs_sb *buf;
	int ret;

	memset(h, 0, sizeof(*h));
	buf = bfs_sb_buf_alloc();
	if (!buf)
		return -ENOMEM;
	ret = bfs_sb_read_copy(dev, BFS_SB_OFFSET, buf, h->primary_err);
	if (!ret) {
		h->sb = buf;
		h->offset = BFS_SB_OFFSET;
		return bfs_sb_outvote(dev, h);
	}
	bfs_sb_buf_free(buf);
	h->primary_ret = ret;
	/* an unsupported but valid primary is final: a backup would be older */
	if (ret == -EPROTONOSUPPORT) {
		if (err)
			snprintf(err, BFS_ERR_LEN, "%s", h->primary_err);
		return ret;
	}
	s.any_magic = ret != -ENODATA;
	search_backups(dev, &s);
	if (!s.best) {
		if (err)
			snprintf(err, BFS_ERR_LEN, "%s%s", h->primary_err,
				 s.any_magic ? "; no valid backup superblock either" : "");
		return s.any_magic ? (ret == -ENODATA ? -EUCLEAN : ret) : -ENODATA;
	}
	h->sb = s.best;
	h->copy = s.best_copy;
	h->offset = s.best_offset;
	h->used_backup = true;
	return 0;
}

void bfs_sb_handle_release(struct bfs_sb_handle *h)
{
	bfs_sb_buf_free(h->sb);
	h->sb = NULL;
}

int bfs_sb_write(struct bfs_dev *dev, struct bfs_sb *sb)
{
	size_t len = sb_io_bytes(le32_to_cpu(sb->bytes));
	unsigned i, nr = sb->nr_copies;
	u8 *io;
	int ret;

	if (nr < 1 || nr > BFS_SB_MAX_COPIES || len > BFS_SB_MAX_BYTES)
		return -EINVAL;
	sb->seq = cpu_to_le64(le64_to_cpu(sb->seq) + 1);
	sb->time_written = cpu_to_le64(bfs_realtime_ns());
	sb->csum = cpu_to_le64(bfs_sb_csum(sb));

	io = bfs_aligned_alloc(BFS_SB_IO_ALIGN, len);
	if (!io)
		return -ENOMEM;
	memset(io, 0, len);
	memcpy(io, sb, le32_to_cpu(sb->bytes));

	/* backups first (highest copy first), primary last */
	for (i = nr; i-- > 1;) {
		ret = bfs_dev_write(dev, le64_to_cpu(sb->copy_offset[i]), io, len);
		if (ret)
			goto out;
	}
	ret = bfs_dev_flush(dev);
	if (ret)
		goto out;
	ret = bfs_dev_write(dev, le64_to_cpu(sb->copy_offset[0]), io, len);
	if (!ret)
		ret = bfs_dev_flush(dev);
out:
	bfs_free(io);
	return ret;
}

void bfs_sb_label(const struct bfs_sb *sb, char out[BFS_LABEL_SIZE + 1])
{
	memcpy(out, sb->label, BFS_LABEL_SIZE);
	out[BFS_LABEL_SIZE] = '\0';
}
