// SPDX-License-Identifier: MIT
/*
 * Reading and writing superblock copies.
 *
 * Reading trusts the primary copy when it is valid, like e2fsprogs; only when
 * it is unreadable or invalid are the backups consulted, and then the valid
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

/* candidate backup offsets: the fixed ones for this device size */
static unsigned backup_offsets(struct bfs_dev *dev, u64 offs[BFS_SB_MAX_COPIES])
{
	return bfs_sb_copy_offsets(bfs_dev_size(dev), offs);
}

int bfs_sb_read(struct bfs_dev *dev, struct bfs_sb_handle *h, char *err)
{
	u64 offs[BFS_SB_MAX_COPIES];
	struct bfs_sb *buf, *best = NULL;
	unsigned nr, i, best_copy = 0;
	char copy_err[BFS_ERR_LEN];
	int ret, first_backup_ret = 0;

	memset(h, 0, sizeof(*h));
	buf = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_MAX_BYTES);
	if (!buf)
		return -ENOMEM;
	memset(buf, 0, BFS_SB_MAX_BYTES);
	ret = bfs_sb_read_copy(dev, BFS_SB_OFFSET, buf, h->primary_err);
	if (!ret) {
		h->sb = buf;
		h->offset = BFS_SB_OFFSET;
		return 0;
	}
	h->primary_ret = ret;
	/* an unsupported but valid primary is final: a backup would be older */
	if (ret == -EPROTONOSUPPORT) {
		if (err)
			snprintf(err, BFS_ERR_LEN, "%s", h->primary_err);
		bfs_free(buf);
		return ret;
	}

	nr = backup_offsets(dev, offs);
	for (i = 1; i < nr; i++) {
		struct bfs_sb *cand = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_MAX_BYTES);
		int r;

		if (!cand)
			break;
		memset(cand, 0, BFS_SB_MAX_BYTES);
		r = bfs_sb_read_copy(dev, offs[i], cand, copy_err);
		if (r) {
			if (!first_backup_ret)
				first_backup_ret = r;
			bfs_free(cand);
			continue;
		}
		if (!best || le64_to_cpu(cand->seq) > le64_to_cpu(best->seq)) {
			bfs_free(best);
			best = cand;
			best_copy = i;
			h->offset = offs[i];
		} else {
			bfs_free(cand);
		}
	}
	bfs_free(buf);
	if (!best) {
		if (err)
			snprintf(err, BFS_ERR_LEN, "%s%s", h->primary_err,
				 h->primary_ret == -ENODATA && first_backup_ret == -ENODATA ?
				 "" : "; no valid backup superblock either");
		return h->primary_ret == -ENODATA && first_backup_ret == -ENODATA ?
			-ENODATA : h->primary_ret;
	}
	h->sb = best;
	h->copy = best_copy;
	h->used_backup = true;
	return 0;
}

void bfs_sb_handle_release(struct bfs_sb_handle *h)
{
	bfs_free(h->sb);
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
