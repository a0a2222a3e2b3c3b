// SPDX-License-Identifier: MIT
/*
 * bfs_image_dump(): every superblock region, the journal buckets and every
 * node-sized slot of the bucket area that starts with a btree node header
 * (bfs_node_scan()), reachable or not, so that the damage being reported is
 * in the dump.  The tree is never walked: what a walk would trust
 * (pointers, ranges) may be the very thing that is broken.  With --data, every other non-zero block
 * of the bucket area too.  Runs of zeros are left out (they restore as
 * holes).  Memory: one bucket of journal or one node at a time.
 */
#include "internal.h"

#include <bfs/btree_format.h>
#include <bfs/btree_scan.h>
#include <bfs/checksum.h>
#include <bfs/format.h>

#define SECTOR	512U

struct dump {
	struct bfs_dev	*dev;
	const struct bfs_image_dump_opts *o;
	struct img_writer *w;
	struct bfs_image_stats *st;
	struct img_obf	obf;
	u64		dev_size;
	u8		*buf;
	size_t		buf_size;
	u64		done, total;	/* progress: bytes of the device looked at */
	char		*err;
};

static int buf_reserve(struct dump *d, size_t n)
{
	u8 *b;

	if (n <= d->buf_size)
		return 0;
	b = bfs_aligned_alloc(4096, n);
	if (!b)
		return -ENOMEM;
	bfs_free(d->buf);
	d->buf = b;
	d->buf_size = n;
	return 0;
}

static int dev_read(struct dump *d, u64 off, u8 *buf, size_t len)
{
	int ret = bfs_dev_read(d->dev, off, buf, len);

	if (ret)
		IMG_ERR(d->err, "cannot read %zu bytes at offset %llu of '%s': %s", len,
			(unsigned long long)off, bfs_dev_path(d->dev), strerror(-ret));
	return ret;
}

static bool zero_sector(const u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

/* the non-zero runs of [buf, buf + len), device offset @off, as extent records */
static int emit(struct dump *d, u16 kind, u64 off, const u8 *buf, size_t len)
{
	size_t pos = 0;

	while (pos < len) {
		size_t start, end;
		int ret;

		while (pos < len && zero_sector(buf + pos, BFS_MIN((size_t)SECTOR, len - pos)))
			pos += SECTOR;
		if (pos >= len)
			break;
		start = pos;
		while (pos < len && pos - start < BFS_IMAGE_REC_MAX &&
		       !zero_sector(buf + pos, BFS_MIN((size_t)SECTOR, len - pos)))
			pos += SECTOR;
		end = BFS_MIN(BFS_MIN(pos, len), start + (size_t)BFS_IMAGE_REC_MAX);
		pos = end;
		ret = img_writer_rec(d->w, BFS_IMAGE_REC_EXTENT, kind, off + start, buf + start,
				     (u32)(end - start));
		if (ret) {
			IMG_ERR(d->err, "cannot write the dump: %s", strerror(-ret));
			return ret;
		}
		d->st->extent_bytes += end - start;
		d->st->kind_bytes[kind] += end - start;
	}
	return 0;
}

static void progress(struct dump *d, u64 bytes)
{
	d->done += bytes;
	if (d->o->progress)
		d->o->progress(d->o->progress_ctx, d->done, d->total);
}

/* ---- superblocks ---- */

static int dump_super(struct dump *d, const struct bfs_sb *sb)
{
	u64 offs[2 * BFS_SB_MAX_COPIES];
	unsigned n, i, j;
	int ret;

	n = bfs_sb_copy_offsets(d->dev_size, offs);
	for (i = 0; sb && i < sb->nr_copies && i < BFS_SB_MAX_COPIES; i++)
		offs[n++] = le64_to_cpu(sb->copy_offset[i]);
	ret = buf_reserve(d, BFS_SB_REGION);
	for (i = 0; !ret && i < n; i++) {
		size_t len;

		for (j = 0; j < i && offs[j] != offs[i]; j++)
			;
		if (j < i || offs[i] >= d->dev_size)
			continue;
		len = (size_t)BFS_MIN((u64)BFS_SB_REGION, d->dev_size - offs[i]);
		ret = dev_read(d, offs[i], d->buf, len);
		if (!ret)
			ret = emit(d, BFS_IMAGE_KIND_SUPER, offs[i], d->buf, len);
	}
	return ret;
}

/* ---- journal ---- */

static int dump_journal(struct dump *d, const struct bfs_sb *sb)
{
	u64 bucket = le32_to_cpu(sb->bucket_size);
	u64 first = le64_to_cpu(sb->journal_bucket) * bucket;
	u32 i, nr = le32_to_cpu(sb->journal_nbuckets);
	int ret = buf_reserve(d, (size_t)bucket);

	for (i = 0; !ret && i < nr; i++) {
		ret = dev_read(d, first + i * bucket, d->buf, (size_t)bucket);
		if (ret)
			break;
		if (d->o->obfuscate)
			img_obf_journal(&d->obf, d->buf, (size_t)bucket);
		ret = emit(d, BFS_IMAGE_KIND_JOURNAL, first + i * bucket, d->buf, (size_t)bucket);
		progress(d, bucket);
	}
	return ret;
}

/* ---- node slots ---- */

static int scan_node(void *ctx, const struct bfs_scanned_node *n, const void *buf)
{
	struct dump *d = ctx;
	size_t ns = d->obf.node_size;

	memcpy(d->buf, buf, ns);
	if (d->o->obfuscate)
		img_obf_node(&d->obf, d->buf);
	d->st->nodes++;
	return emit(d, BFS_IMAGE_KIND_NODE, n->offset, d->buf, ns);
}

static void scan_progress(void *ctx, u64 done, u64 total)
{
	struct dump *d = ctx;

	if (d->o->progress)
		d->o->progress(d->o->progress_ctx,
			       BFS_MIN(d->done + done * d->obf.node_size, d->total), d->total);
}

/*
 * Every slot of the bucket area that starts with a node header, whatever
 * its state: the btree layer's scan finds them (the same one fsck uses).
 */
static int dump_nodes(struct dump *d, const struct bfs_sb *sb)
{
	struct bfs_node_scan_geom g;
	u64 read_errors = 0;
	int ret;

	bfs_node_scan_geom_from_sb(sb, &g);
	ret = buf_reserve(d, g.node_size);
	if (!ret)
		ret = bfs_node_scan(d->dev, &g, scan_node, scan_progress, d, &read_errors);
	if (ret && !d->err[0])
		IMG_ERR(d->err, "node scan of '%s' failed: %s", bfs_dev_path(d->dev), strerror(-ret));
	if (read_errors)
		bfs_warn("%s: %llu node slots could not be read and are not in the dump",
			 bfs_dev_path(d->dev), (unsigned long long)read_errors);
	d->done += (le64_to_cpu(sb->nbuckets) - le64_to_cpu(sb->first_bucket) -
		    le32_to_cpu(sb->journal_nbuckets)) * le32_to_cpu(sb->bucket_size);
	return ret;
}

static bool node_magic(const u8 *p)
{
	return le64_to_cpu(((const struct bfs_btree_node *)p)->magic) == BFS_BTREE_NODE_MAGIC;
}

/* --data: every other non-zero block of the bucket area (the nodes are in already) */
static int dump_data(struct dump *d, const struct bfs_sb *sb)
{
	u64 bucket = le32_to_cpu(sb->bucket_size), ns = le32_to_cpu(sb->btree_node_size);
	u64 start = le64_to_cpu(sb->first_bucket) * bucket, end = le64_to_cpu(sb->nbuckets) * bucket;
	u64 jstart = le64_to_cpu(sb->journal_bucket) * bucket;
	u64 jend = jstart + (u64)le32_to_cpu(sb->journal_nbuckets) * bucket;
	size_t head = le32_to_cpu(sb->block_size);
	u64 off;
	int ret = buf_reserve(d, (size_t)ns);

	for (off = start; !ret && off + ns <= end; off += ns) {
		if (off >= jstart && off < jend)
			continue;
		ret = dev_read(d, off, d->buf, head);
		if (ret || node_magic(d->buf))
			continue;
		ret = dev_read(d, off + head, d->buf + head, (size_t)ns - head);
		if (!ret)
			ret = emit(d, BFS_IMAGE_KIND_DATA, off, d->buf, (size_t)ns);
		if ((off - start) / ns % 64 == 63)
			progress(d, 64 * ns);
	}
	return ret;
}

/* ---- the whole dump ---- */

static int write_header(struct dump *d, const struct bfs_sb *sb)
{
	struct bfs_image_header h = {
		.magic = cpu_to_le64(BFS_IMAGE_MAGIC),
		.version = cpu_to_le32(BFS_IMAGE_VERSION),
		.flags = cpu_to_le32((d->o->obfuscate ? BFS_IMAGE_OBFUSCATED : 0) |
				     (d->o->data ? BFS_IMAGE_DATA : 0) | (sb ? 0 : BFS_IMAGE_NO_SUPER)),
		.dev_size = cpu_to_le64(d->dev_size),
		.time = cpu_to_le64(bfs_realtime_ns()),
	};

	if (sb) {
		memcpy(h.uuid, sb->uuid, sizeof(h.uuid));
		memcpy(h.label, sb->label, sizeof(h.label));
		h.block_size = sb->block_size;
		h.node_size = sb->btree_node_size;
	}
	snprintf(h.tool, sizeof(h.tool), "%s", d->o->tool ? d->o->tool : "bfs");
	snprintf(h.source, sizeof(h.source), "%s", d->o->source ? d->o->source : "");
	return img_writer_rec(d->w, BFS_IMAGE_REC_HEADER, BFS_IMAGE_KIND_NONE, 0, &h, sizeof(h));
}

static int write_end(struct dump *d)
{
	struct bfs_image_end e = {
		.nr_records = cpu_to_le64(img_writer_nr(d->w)),
		.extent_bytes = cpu_to_le64(d->st->extent_bytes),
		.nr_nodes = cpu_to_le64(d->st->nodes),
	};

	return img_writer_rec(d->w, BFS_IMAGE_REC_END, BFS_IMAGE_KIND_NONE, 0, &e, sizeof(e));
}

int bfs_image_dump(struct bfs_dev *dev, const struct bfs_image_dump_opts *o,
		   struct bfs_image_stats *st, char *err)
{
	struct dump d = { .dev = dev, .o = o, .st = st, .err = err, .dev_size = bfs_dev_size(dev) };
	struct bfs_sb_handle sbh = { 0 };
	const struct bfs_sb *sb = NULL;
	char sberr[BFS_ERR_LEN];
	int ret;

	memset(st, 0, sizeof(*st));
	err[0] = 0;
	ret = bfs_sb_read(dev, &sbh, sberr);
	if (!ret) {
		sb = sbh.sb;
	} else if (ret == -ENOMEM) {
		return ret;
	} else {
		bfs_warn("%s: no valid superblock (%s): dumping the superblock regions only",
			 bfs_dev_path(dev), sberr);
	}
	if (sb) {
		d.obf.block_size = le32_to_cpu(sb->block_size);
		d.obf.node_size = le32_to_cpu(sb->btree_node_size);
		d.obf.csum_type = sb->csum_type;
		memcpy(d.obf.uuid, sb->uuid, sizeof(d.obf.uuid));
		d.total = (le64_to_cpu(sb->nbuckets) - le64_to_cpu(sb->first_bucket)) *
			  le32_to_cpu(sb->bucket_size);
		/* the journal once, the rest once for nodes and once more for data */
		if (o->data)
			d.total += d.total - (u64)le32_to_cpu(sb->journal_nbuckets) *
					     le32_to_cpu(sb->bucket_size);
	}
	if (o->obfuscate) {
		ret = bfs_random_bytes(&d.obf.key, sizeof(d.obf.key));
		if (ret) {
			IMG_ERR(err, "no random key for the obfuscation: %s", strerror(-ret));
			goto out;
		}
	}
	ret = img_writer_open(o->write, o->write_ctx, o->level, &d.w);
	if (ret) {
		IMG_ERR(err, "cannot start the zstd stream: %s", strerror(-ret));
		goto out;
	}
	ret = write_header(&d, sb);
	if (!ret)
		ret = dump_super(&d, sb);
	if (!ret && sb)
		ret = dump_journal(&d, sb);
	if (!ret && sb)
		ret = dump_nodes(&d, sb);
	if (!ret && sb && o->data)
		ret = dump_data(&d, sb);
	if (!ret)
		ret = write_end(&d);
	if (ret && !err[0])
		IMG_ERR(err, "cannot write the dump: %s", strerror(-ret));
	st->records = img_writer_nr(d.w);
	st->names = d.obf.names;
	st->raw = d.obf.raw;
	{
		int r2 = img_writer_close(d.w, !ret, &st->out_bytes);

		if (!ret && r2) {
			ret = r2;
			IMG_ERR(err, "cannot write the dump: %s", strerror(-ret));
		}
	}
out:
	bfs_free(d.buf);
	bfs_sb_handle_release(&sbh);
	return ret;
}
