// SPDX-License-Identifier: MIT
/*
 * Chunks on the device: compression, checksums, placement in the write point
 * and the verified read of an extent's chunk.  A chunk is read and checked
 * as a whole (at most BFS_EXTENT_CHUNK_MAX bytes) before any byte of it is
 * returned, so a mismatch is always -EIO and never wrong data.
 */
#include <inttypes.h>
#include <stdio.h>

#include <zstd.h>

#include <bfs/checksum.h>
#include <bfs/log.h>

#include "data.h"

int bfs_data_chunk_write(struct bfs_fs_data *d, const void *data, u32 len, struct data_chunk *ch)
{
	const void *stored = data;
	u8 *cbuf = NULL;
	int ret;

	*ch = (struct data_chunk){
		.stored_bytes = len,
		.disk_bytes = len,
		.chunk_sectors = len >> BFS_SECTOR_SHIFT,
		.compression = BFS_COMPRESSION_NONE,
	};
	if (d->compression == BFS_COMPRESSION_ZSTD && len > d->block_size) {
		size_t bound = ZSTD_compressBound(len), n;

		/* aligned: on an O_DIRECT device it is written without a bounce */
		cbuf = bfs_aligned_alloc(4096, BFS_ROUND_UP(bound, (size_t)d->block_size));
		if (!cbuf)
			return -ENOMEM;
		n = ZSTD_compress(cbuf, bound, data, len, d->level);
		/* stored compressed only if that saves at least one block */
		if (!ZSTD_isError(n) && BFS_ROUND_UP(n, (size_t)d->block_size) < len) {
			u32 disk = BFS_ROUND_UP((u32)n, d->block_size);

			memset(cbuf + n, 0, disk - n);
			stored = cbuf;
			ch->stored_bytes = (u32)n;
			ch->disk_bytes = disk;
			ch->compression = BFS_COMPRESSION_ZSTD;
		}
	}
	ch->csum = bfs_csum(d->csum_type, stored, ch->stored_bytes);
	ret = bfs_data_space_get(d, ch->disk_bytes, &ch->dev_off, &ch->bucket, &ch->gen);
	if (!ret) {
		ret = bfs_dev_write(d->dev, ch->dev_off, stored, ch->disk_bytes);
		if (ret)
			bfs_data_space_abort(d, ch->bucket);
	}
	bfs_free(cbuf);
	return ret;
}

int bfs_data_chunk_load(struct bfs_dev *dev, u32 block_size, const struct bfs_extent_v *v,
			u8 **out, char *why, size_t why_len)
{
	u64 off = le64_to_cpu(v->offset);
	u32 stored = le32_to_cpu(v->stored_bytes);
	size_t chunk = (size_t)le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT;
	size_t disk = BFS_ROUND_UP((size_t)stored, (size_t)block_size);
	u8 *buf, *plain;
	size_t n;
	int ret;

	*out = NULL;
	if (!stored || stored > BFS_EXTENT_CHUNK_MAX || chunk > BFS_EXTENT_CHUNK_MAX) {
		snprintf(why, why_len, "malformed extent at device offset %" PRIu64, off);
		return -EUCLEAN;	/* key validation keeps such keys out */
	}
	/* aligned: on an O_DIRECT device it is read without a bounce */
	buf = bfs_aligned_alloc(4096, disk);
	if (!buf)
		return -ENOMEM;
	ret = bfs_dev_read(dev, off, buf, disk);
	if (ret) {
		snprintf(why, why_len, "read error at device offset %" PRIu64 ": %s", off,
			 strerror(-ret));
		bfs_free(buf);
		return -EIO;
	}
	if (v->csum_type != BFS_CSUM_NONE) {
		u64 have = bfs_csum(v->csum_type, buf, stored);

		if (have != le64_to_cpu(v->csum)) {
			snprintf(why, why_len, "checksum mismatch at device offset %" PRIu64
				 " (%u bytes): expected %016" PRIx64 ", found %016" PRIx64, off, stored,
				 le64_to_cpu(v->csum), have);
			bfs_free(buf);
			return -EBADMSG;
		}
	}
	if (v->compression == BFS_COMPRESSION_NONE) {
		*out = buf;
		return 0;
	}
	if (v->compression != BFS_COMPRESSION_ZSTD) {
		snprintf(why, why_len, "unknown compression %u at device offset %" PRIu64,
			 v->compression, off);
		bfs_free(buf);
		return -EUCLEAN;
	}
	plain = bfs_malloc(chunk);
	if (!plain) {
		bfs_free(buf);
		return -ENOMEM;
	}
	n = ZSTD_decompress(plain, chunk, buf, stored);
	bfs_free(buf);
	if (ZSTD_isError(n) || n != chunk) {
		snprintf(why, why_len, "zstd frame at device offset %" PRIu64 " (%u bytes) %s%s", off,
			 stored, ZSTD_isError(n) ? "does not decompress: " : "has the wrong size",
			 ZSTD_isError(n) ? ZSTD_getErrorName(n) : "");
		bfs_free(plain);
		return -EILSEQ;
	}
	*out = plain;
	return 0;
}

int bfs_data_extent_read(struct bfs_fs_data *d, const struct bfs_bkey *k, u64 skip, void *out,
			 size_t len)
{
	const struct bfs_extent_v *v = extent_val(k);
	u64 ino = le64_to_cpu(k->inode);
	u64 foff = (bfs_bkey_start(k) << BFS_SECTOR_SHIFT) + skip;
	u64 dev_off = le64_to_cpu(v->offset), b;
	u32 chunk = le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT;
	u64 from = ((u64)le32_to_cpu(v->chunk_offset) << BFS_SECTOR_SHIFT) + skip;
	char why[256];
	u8 *plain;
	int ret;

	if (v->flags & BFS_EXTENT_F_UNWRITTEN) {
		memset(out, 0, len);
		return 0;
	}
	b = bfs_data_bucket_of(d, dev_off);
	if (!bfs_data_bucket_valid(d, b) || le32_to_cpu(v->gen) != bfs_data_bucket_gen(d, b)) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": stale data pointer to device offset %"
			PRIu64 " (gen %u, bucket gen %u)", ino, foff, dev_off, le32_to_cpu(v->gen),
			bfs_data_bucket_valid(d, b) ? bfs_data_bucket_gen(d, b) : 0);
		return -EIO;
	}
	if (from + len > chunk) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": extent at device offset %" PRIu64
			" is malformed", ino, foff, dev_off);
		return -EIO;
	}
	ret = bfs_data_chunk_load(d->dev, d->block_size, v, &plain, why, sizeof(why));
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		bfs_err("inode %" PRIu64 " file offset %" PRIu64 ": data %s", ino, foff, why);
		return -EIO;
	}
	memcpy(out, plain + from, len);
	bfs_free(plain);
	return 0;
}

int bfs_data_read_range(struct bfs_fs_data *d, u64 ino, void *buf, size_t len, u64 off)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	u64 end = off + len, done = off;	/* bytes below done are filled */
	u8 *out = buf;
	int ret;

	bfs_btree_iter_init(&it, d->c, BFS_BTREE_EXTENTS,
			    BFS_POS(ino, off >> BFS_SECTOR_SHIFT, 0), 0);
	for_each_btree_key(&it, k, ret) {
		u64 ks = bfs_bkey_start(k) << BFS_SECTOR_SHIFT;
		u64 ke = le64_to_cpu(k->offset) << BFS_SECTOR_SHIFT;
		u64 s, e;

		if (le64_to_cpu(k->inode) != ino || ks >= end)
			break;
		if (k->type != BFS_KEY_EXTENT)
			continue;
		s = BFS_MAX(ks, off);
		e = BFS_MIN(ke, end);
		if (s >= e)
			continue;
		if (s > done)
			memset(out + (done - off), 0, s - done);	/* hole */
		ret = bfs_data_extent_read(d, k, s - ks, out + (s - off), e - s);
		if (ret)
			break;
		done = e;
	}
	bfs_btree_iter_exit(&it);
	if (ret)
		return ret;
	if (done < end)
		memset(out + (done - off), 0, end - done);
	return 0;
}
