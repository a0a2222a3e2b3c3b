// SPDX-License-Identifier: MIT
/*
 * The record stream of a dump (bfs/image_format.h): records are framed and
 * checksummed here and go through one zstd stream.  The reader trusts
 * nothing: every length, number, checksum and offset is checked before the
 * payload is handed out, and a stream that stops before its end record is
 * reported as cut short, never taken as complete.
 */
#include "internal.h"

#include <bfs/checksum.h>

#include <xxhash.h>
#include <zstd.h>

static u64 rec_csum(const struct bfs_image_rec *h, const void *payload, u32 len)
{
	return XXH3_64bits_withSeed(payload, len, XXH3_64bits(h, offsetof(struct bfs_image_rec, csum)));
}

/* ---- writer ---- */

struct img_writer {
	ZSTD_CStream	*zs;
	bfs_image_write_fn write;
	void		*ctx;
	u8		*out;
	size_t		out_size;
	u64		nr;
	u64		out_bytes;
};

int img_writer_open(bfs_image_write_fn write, void *ctx, int level, struct img_writer **out)
{
	struct img_writer *w = bfs_zalloc(sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->write = write;
	w->ctx = ctx;
	w->out_size = ZSTD_CStreamOutSize();
	w->out = bfs_malloc(w->out_size);
	w->zs = ZSTD_createCStream();
	if (!w->out || !w->zs ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->zs, ZSTD_c_compressionLevel, level ? level : 3)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->zs, ZSTD_c_checksumFlag, 1))) {
		img_writer_close(w, false, NULL);
		return -ENOMEM;
	}
	*out = w;
	return 0;
}

static int feed(struct img_writer *w, const void *buf, size_t len, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { buf, len, 0 };
	size_t left;
	int ret;

	do {
		ZSTD_outBuffer o = { w->out, w->out_size, 0 };

		left = ZSTD_compressStream2(w->zs, &o, &in, mode);
		if (ZSTD_isError(left))
			return -EIO;
		if (o.pos) {
			ret = w->write(w->ctx, w->out, o.pos);
			if (ret)
				return ret;
			w->out_bytes += o.pos;
		}
	} while (mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
	return 0;
}

int img_writer_rec(struct img_writer *w, u16 type, u16 kind, u64 offset, const void *buf,
		   u32 len)
{
	static const u8 zeros[8];
	struct bfs_image_rec h = {
		.magic = cpu_to_le32(BFS_IMAGE_REC_MAGIC),
		.type = cpu_to_le16(type),
		.kind = cpu_to_le16(kind),
		.len = cpu_to_le32(len),
		.nr = cpu_to_le32((u32)w->nr),
		.offset = cpu_to_le64(offset),
	};
	int ret;

	if (len > BFS_IMAGE_REC_MAX || w->nr > UINT32_MAX)
		return -E2BIG;
	h.csum = cpu_to_le64(rec_csum(&h, buf, len));
	ret = feed(w, &h, sizeof(h), ZSTD_e_continue);
	if (!ret)
		ret = feed(w, buf, len, ZSTD_e_continue);
	if (!ret && len % 8)
		ret = feed(w, zeros, 8 - len % 8, ZSTD_e_continue);
	if (!ret)
		w->nr++;
	return ret;
}

u64 img_writer_nr(const struct img_writer *w)
{
	return w->nr;
}

int img_writer_close(struct img_writer *w, bool ok, u64 *out_bytes)
{
	int ret = 0;

	if (!w)
		return 0;
	if (ok)
		ret = feed(w, NULL, 0, ZSTD_e_end);
	if (out_bytes)
		*out_bytes = w->out_bytes;
	ZSTD_freeCStream(w->zs);
	bfs_free(w->out);
	bfs_free(w);
	return ret;
}

/* ---- reader ---- */

struct bfs_image_reader {
	ZSTD_DStream	*zs;
	bfs_image_read_fn read;
	void		*ctx;
	u8		*in;		/* compressed input */
	size_t		in_size, in_pos, in_len;
	bool		in_eof;
	size_t		frame_left;	/* ZSTD_decompressStream's hint: 0 = frame complete */
	u64		in_total;	/* compressed bytes consumed */
	u8		*rec;		/* one decompressed record */
	u64		nr;		/* records read */
	u64		extent_bytes, nodes;
	bool		done;
	struct bfs_image_header hdr;
};

/*
 * Exactly @len decompressed bytes into @buf.  -ENODATA if the stream ends
 * first (@len == 0 bytes delivered and at a frame end is a clean end: 1).
 */
static int get(struct bfs_image_reader *r, void *buf, size_t len, char *err)
{
	ZSTD_outBuffer o = { buf, len, 0 };
	long n;

	while (o.pos < o.size) {
		ZSTD_inBuffer in = { r->in, r->in_len, r->in_pos };
		size_t ret, before = o.pos;

		if (r->in_pos == r->in_len && !r->in_eof) {
			n = r->read(r->ctx, r->in, r->in_size);
			if (n < 0) {
				IMG_ERR(err, "cannot read the dump: %s", strerror((int)-n));
				return (int)n;
			}
			r->in_pos = 0;
			r->in_len = (size_t)n;
			r->in_eof = n == 0;
			continue;
		}
		ret = ZSTD_decompressStream(r->zs, &o, &in);
		if (ZSTD_isError(ret)) {
			IMG_ERR(err, "dump is damaged: zstd: %s (at compressed byte %llu)",
				ZSTD_getErrorName(ret), (unsigned long long)(r->in_total + in.pos));
			return -EBADMSG;
		}
		/*
		 * 0 means a frame ended; a call that moved nothing would only
		 * say how much the next frame's header needs
		 */
		if (in.pos != r->in_pos || o.pos != before)
			r->frame_left = ret;
		r->in_total += in.pos - r->in_pos;
		r->in_pos = in.pos;
		if (o.pos < o.size && r->in_pos == r->in_len && r->in_eof) {
			if (!o.pos && !r->frame_left)
				return 1;	/* clean end of the stream, nothing asked was there */
			IMG_ERR(err, "dump is truncated: the stream ends inside record %llu",
				(unsigned long long)r->nr);
			return -ENODATA;
		}
	}
	return 0;
}

/* the next record: header checked, payload in r->rec */
static int next_rec(struct bfs_image_reader *r, struct bfs_image_rec *h, char *err)
{
	u32 len, pad;
	int ret;

	ret = get(r, h, sizeof(*h), err);
	if (ret == 1) {
		IMG_ERR(err, "dump is truncated: no end record after record %llu",
			(unsigned long long)r->nr);
		return -ENODATA;
	}
	if (ret)
		return ret;
	len = le32_to_cpu(h->len);
	if (le32_to_cpu(h->magic) != BFS_IMAGE_REC_MAGIC) {
		IMG_ERR(err, "dump is damaged: record %llu has bad magic 0x%08x",
			(unsigned long long)r->nr, le32_to_cpu(h->magic));
		return -EBADMSG;
	}
	if (le32_to_cpu(h->nr) != r->nr) {
		IMG_ERR(err, "dump is damaged: record %llu is numbered %u",
			(unsigned long long)r->nr, le32_to_cpu(h->nr));
		return -EBADMSG;
	}
	if (len > BFS_IMAGE_REC_MAX) {
		IMG_ERR(err, "dump is damaged: record %llu claims %u bytes (at most %llu)",
			(unsigned long long)r->nr, len, (unsigned long long)BFS_IMAGE_REC_MAX);
		return -EBADMSG;
	}
	pad = (8 - len % 8) % 8;
	ret = get(r, r->rec, (size_t)len + pad, err);
	if (ret == 1)
		ret = -ENODATA;
	if (ret) {
		if (ret == -ENODATA)
			IMG_ERR(err, "dump is truncated: the stream ends inside record %llu",
				(unsigned long long)r->nr);
		return ret;
	}
	for (; pad; pad--)
		if (r->rec[len + pad - 1]) {
			IMG_ERR(err, "dump is damaged: record %llu has non-zero padding",
				(unsigned long long)r->nr);
			return -EBADMSG;
		}
	if (le64_to_cpu(h->csum) != rec_csum(h, r->rec, len)) {
		IMG_ERR(err, "dump is damaged: bad checksum of record %llu (device offset %llu)",
			(unsigned long long)r->nr, (unsigned long long)le64_to_cpu(h->offset));
		return -EBADMSG;
	}
	r->nr++;
	return 0;
}

static int check_header(struct bfs_image_reader *r, const struct bfs_image_rec *h, char *err)
{
	const struct bfs_image_header *hd = (const void *)r->rec;
	unsigned i;

	if (le16_to_cpu(h->type) != BFS_IMAGE_REC_HEADER || le32_to_cpu(h->len) != sizeof(*hd)) {
		IMG_ERR(err, "not a bfs dump: the first record is not a header");
		return -EBADMSG;
	}
	if (le64_to_cpu(hd->magic) != BFS_IMAGE_MAGIC) {
		IMG_ERR(err, "not a bfs dump: bad header magic");
		return -EBADMSG;
	}
	if (le32_to_cpu(hd->version) != BFS_IMAGE_VERSION) {
		IMG_ERR(err, "dump format version %u is not supported (this bfs reads %u)",
			le32_to_cpu(hd->version), BFS_IMAGE_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (le32_to_cpu(hd->flags) & ~BFS_IMAGE_FLAGS_KNOWN) {
		IMG_ERR(err, "dump has unknown flags 0x%x", le32_to_cpu(hd->flags));
		return -EPROTONOSUPPORT;
	}
	if (!le64_to_cpu(hd->dev_size) || le64_to_cpu(hd->dev_size) > (UINT64_C(1) << 62)) {
		IMG_ERR(err, "dump is damaged: device size %llu",
			(unsigned long long)le64_to_cpu(hd->dev_size));
		return -EBADMSG;
	}
	for (i = 0; i < ARRAY_SIZE(hd->reserved); i++)
		if (le64_to_cpu(hd->reserved[i])) {
			IMG_ERR(err, "dump is damaged: header reserved word %u is not zero", i);
			return -EBADMSG;
		}
	r->hdr = *hd;
	/* the strings are used as C strings: make sure they end */
	r->hdr.tool[sizeof(r->hdr.tool) - 1] = 0;
	r->hdr.source[sizeof(r->hdr.source) - 1] = 0;
	return 0;
}

int bfs_image_reader_open(bfs_image_read_fn read, void *ctx, struct bfs_image_reader **out,
			  char *err)
{
	struct bfs_image_reader *r = bfs_zalloc(sizeof(*r));
	struct bfs_image_rec h;
	int ret;

	if (!r)
		return -ENOMEM;
	r->read = read;
	r->ctx = ctx;
	r->in_size = ZSTD_DStreamInSize();
	r->in = bfs_malloc(r->in_size);
	r->rec = bfs_malloc(BFS_IMAGE_REC_MAX + 8);
	r->zs = ZSTD_createDStream();
	if (!r->in || !r->rec || !r->zs) {
		bfs_image_reader_close(r);
		return -ENOMEM;
	}
	ret = get(r, &h, sizeof(h), err);
	if (ret == 1 || ret == -ENODATA) {
		IMG_ERR(err, "not a bfs dump: the file is empty or cut short");
		ret = -ENODATA;
	} else if (ret == -EBADMSG) {
		IMG_ERR(err, "not a bfs dump (not zstd-compressed, or damaged at the start)");
	}
	if (!ret) {
		/* re-run the header through the checked path */
		if (le32_to_cpu(h.magic) != BFS_IMAGE_REC_MAGIC || le32_to_cpu(h.nr) ||
		    le32_to_cpu(h.len) != sizeof(struct bfs_image_header)) {
			IMG_ERR(err, "not a bfs dump: the first record is not a header");
			ret = -EBADMSG;
		} else {
			ret = get(r, r->rec, sizeof(struct bfs_image_header), err);
			if (ret == 1)
				ret = -ENODATA;
			if (ret == -ENODATA)
				IMG_ERR(err, "dump is truncated inside its header");
			if (!ret && le64_to_cpu(h.csum) != rec_csum(&h, r->rec, le32_to_cpu(h.len))) {
				IMG_ERR(err, "dump is damaged: bad checksum of the header record");
				ret = -EBADMSG;
			}
			if (!ret)
				ret = check_header(r, &h, err);
			if (!ret)
				r->nr = 1;
		}
	}
	if (ret) {
		bfs_image_reader_close(r);
		return ret;
	}
	*out = r;
	return 0;
}

const struct bfs_image_header *bfs_image_reader_header(const struct bfs_image_reader *r)
{
	return &r->hdr;
}

u64 bfs_image_reader_pos(const struct bfs_image_reader *r)
{
	return r->in_total;
}

static int check_end(struct bfs_image_reader *r, const struct bfs_image_rec *h, char *err)
{
	const struct bfs_image_end *e = (const void *)r->rec;
	u8 probe;
	int ret;

	if (le32_to_cpu(h->len) != sizeof(*e) || le64_to_cpu(e->reserved)) {
		IMG_ERR(err, "dump is damaged: end record of %u bytes", le32_to_cpu(h->len));
		return -EBADMSG;
	}
	if (le64_to_cpu(e->nr_records) != r->nr - 1 ||
	    le64_to_cpu(e->extent_bytes) != r->extent_bytes || le64_to_cpu(e->nr_nodes) != r->nodes) {
		IMG_ERR(err, "dump is damaged: the end record counts %llu records, %llu bytes, "
			"%llu nodes; the stream had %llu, %llu, %llu",
			(unsigned long long)le64_to_cpu(e->nr_records),
			(unsigned long long)le64_to_cpu(e->extent_bytes),
			(unsigned long long)le64_to_cpu(e->nr_nodes), (unsigned long long)(r->nr - 1),
			(unsigned long long)r->extent_bytes, (unsigned long long)r->nodes);
		return -EBADMSG;
	}
	ret = get(r, &probe, 1, err);
	if (ret == 1) {
		if (r->frame_left) {
			IMG_ERR(err, "dump is truncated: the zstd frame is incomplete");
			return -ENODATA;
		}
		r->done = true;
		return 0;
	}
	if (!ret) {
		IMG_ERR(err, "dump is damaged: data after the end record");
		return -EBADMSG;
	}
	return ret;
}

int bfs_image_reader_next(struct bfs_image_reader *r, struct bfs_image_extent *e, char *err)
{
	u64 dev_size = le64_to_cpu(r->hdr.dev_size);
	struct bfs_image_rec h;
	u64 off;
	u32 len;
	int ret;

	if (r->done)
		return 0;
	ret = next_rec(r, &h, err);
	if (ret)
		return ret;
	switch (le16_to_cpu(h.type)) {
	case BFS_IMAGE_REC_EXTENT:
		break;
	case BFS_IMAGE_REC_END:
		return check_end(r, &h, err);
	default:
		IMG_ERR(err, "dump is damaged: record %llu has type %u",
			(unsigned long long)(r->nr - 1), le16_to_cpu(h.type));
		return -EBADMSG;
	}
	off = le64_to_cpu(h.offset);
	len = le32_to_cpu(h.len);
	if (!len || off > dev_size || len > dev_size - off ||
	    le16_to_cpu(h.kind) == BFS_IMAGE_KIND_NONE || le16_to_cpu(h.kind) >= BFS_IMAGE_KIND_NR) {
		IMG_ERR(err, "dump is damaged: extent record %llu (%u bytes at %llu, kind %u) does "
			"not fit the %llu-byte device", (unsigned long long)(r->nr - 1), len,
			(unsigned long long)off, le16_to_cpu(h.kind), (unsigned long long)dev_size);
		return -EBADMSG;
	}
	r->extent_bytes += len;
	if (le16_to_cpu(h.kind) == BFS_IMAGE_KIND_NODE && le32_to_cpu(r->hdr.node_size) &&
	    !(off % le32_to_cpu(r->hdr.node_size)))
		r->nodes++;
	*e = (struct bfs_image_extent){
		.offset = off,
		.len = len,
		.kind = le16_to_cpu(h.kind),
		.data = r->rec,
	};
	return 1;
}

void bfs_image_reader_close(struct bfs_image_reader *r)
{
	if (!r)
		return;
	ZSTD_freeDStream(r->zs);
	bfs_free(r->in);
	bfs_free(r->rec);
	bfs_free(r);
}
