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

int bfs_data_chunk_place(struct bfs_fs_data *d, const void *data, u32 len, struct data_chunk *ch,
			 const void **stored, u8 **owned, bool csum)
{
	u8 *cbuf = NULL;
	int ret;

	*stored = data;
	*owned = NULL;
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
			*stored = cbuf;
			ch->stored_bytes = (u32)n;
			ch->disk_bytes = disk;
			ch->compression = BFS_COMPRESSION_ZSTD;
		}
	}
	if (csum)
		ch->csum = bfs_csum(d->csum_type, *stored, ch->stored_bytes);
	ret = bfs_data_space_get(d, ch->disk_bytes, &ch->dev_off, &ch->bucket, &ch->gen);
	if (ret || *stored != cbuf) {
		bfs_free(cbuf);
		*stored = data;
		return ret;
	}
	*owned = cbuf;
	return 0;
}

int bfs_data_chunk_write(struct bfs_fs_data *d, const void *data, u32 len, struct data_chunk *ch)
{
	const void *stored;
	u8 *owned;
	int ret;

	ret = bfs_data_chunk_place(d, data, len, ch, &stored, &owned, true);
	if (ret)
		return ret;
	ret = bfs_dev_write(d->dev, ch->dev_off, stored, ch->disk_bytes);
	if (ret)
		bfs_data_space_abort(d, ch->bucket);
	bfs_free(owned);
	return ret;
}

int bfs_data_chunk_read_prep(u32 block_size, const struct bfs_extent_v *v, void *dst, bool keep,
			     struct data_chunk_read *r, struct bfs_dev_io *io, char *why,
			     size_t why_len)
{
	u64 off = le64_to_cpu(v->offset);
	u32 stored = le32_to_cpu(v->stored_bytes);
	size_t chunk = (size_t)le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT;
	size_t disk = BFS_ROUND_UP((size_t)stored, (size_t)block_size);

	*r = (struct data_chunk_read){ .v = *v, .disk = disk };
	*io = (struct bfs_dev_io){ .off = off, .len = disk };
	if (!stored || stored > BFS_EXTENT_CHUNK_MAX || chunk > BFS_EXTENT_CHUNK_MAX) {
		snprintf(why, why_len, "malformed extent at device offset %" PRIu64, off);
		return -EUCLEAN;	/* key validation keeps such keys out */
	}
	if (dst && v->compression == BFS_COMPRESSION_NONE && disk == stored && stored == chunk) {
		r->buf = dst;	/* the caller's buffer takes the whole chunk */
		r->in_place = true;
	} else if (keep && disk <= DATA_READ_KEEP_MAX &&
		   (r->buf = bfs_thread_buf(BFS_TBUF_DATA_READ, disk))) {
		r->kept = true;	/* page-aligned too */
	} else {
		/* aligned: on an O_DIRECT device it is read without a bounce */
		r->buf = bfs_aligned_alloc(4096, disk);
		if (!r->buf)
			return -ENOMEM;
	}
	io->buf = r->buf;
	return 0;
}

void bfs_data_chunk_read_drop(struct data_chunk_read *r)
{
	if (!r->in_place && !r->kept)
		bfs_free(r->buf);
	r->buf = NULL;
}

int bfs_data_chunk_read_done(struct data_chunk_read *r, int io_ret, u8 **out, char *why,
			     size_t why_len)
{
	const struct bfs_extent_v *v = &r->v;
	u64 off = le64_to_cpu(v->offset);
	u32 stored = le32_to_cpu(v->stored_bytes);
	size_t chunk = (size_t)le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT;
	u8 *plain;
	size_t n;

	*out = NULL;
	if (io_ret) {
		snprintf(why, why_len, "read error at device offset %" PRIu64 ": %s", off,
			 strerror(-io_ret));
		bfs_data_chunk_read_drop(r);
		return -EIO;
	}
	if (v->csum_type != BFS_CSUM_NONE) {
		u64 have = bfs_csum(v->csum_type, r->buf, stored);

		if (have != le64_to_cpu(v->csum)) {
			snprintf(why, why_len, "checksum mismatch at device offset %" PRIu64
				 " (%u bytes): expected %016" PRIx64 ", found %016" PRIx64, off, stored,
				 le64_to_cpu(v->csum), have);
			bfs_data_chunk_read_drop(r);
			return -EBADMSG;
		}
	}
	if (v->compression == BFS_COMPRESSION_NONE) {
		*out = r->buf;
		r->buf = NULL;
		return 0;
	}
	if (v->compression != BFS_COMPRESSION_ZSTD) {
		snprintf(why, why_len, "unknown compression %u at device offset %" PRIu64,
			 v->compression, off);
		bfs_data_chunk_read_drop(r);
		return -EUCLEAN;
	}
	plain = bfs_malloc(chunk);
	if (!plain) {
		bfs_data_chunk_read_drop(r);
		return -ENOMEM;
	}
	n = ZSTD_decompress(plain, chunk, r->buf, stored);
	bfs_data_chunk_read_drop(r);
	r->kept = false;	/* *out is plain, the caller's */
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

int bfs_data_chunk_load(struct bfs_dev *dev, u32 block_size, const struct bfs_extent_v *v,
			u8 **out, char *why, size_t why_len)
{
	struct data_chunk_read r;
	struct bfs_dev_io io;
	int ret;

	*out = NULL;
	ret = bfs_data_chunk_read_prep(block_size, v, NULL, false, &r, &io, why, why_len);
	if (ret)
		return ret;
	return bfs_data_chunk_read_done(&r, bfs_dev_read(dev, io.off, io.buf, io.len), out, why,
					why_len);
}
