// SPDX-License-Identifier: MIT
/*
 * I/O log: recording a device's writes in the dm-log-writes format, and
 * reading such a log back (crash harness, tools).  The layout is in
 * include/bfs/iolog_format.h and doc/format/iolog.md.
 *
 * The recorder buffers the log in memory and writes it out in large pieces;
 * the super's entry count is rewritten after every FUA write and mark (as the
 * kernel does) and on stop, so a process dying mid-test still leaves a log
 * that is valid up to its last mark.
 */

#include "sysdeps.h"

#include <bfs/iolog_format.h>
#include <bfs/log.h>

#include "dev_internal.h"

#define BFS_IOLOG_BUF_SIZE	(1U << 20)
#define BFS_IOLOG_HDR_SIZE	sizeof(struct bfs_iolog_entry_hdr)
/* chunk size when replaying a large write through a buffer */
#define BFS_IOLOG_APPLY_CHUNK	(1U << 20)

struct bfs_iolog_rec {
	int	fd;
	u32	ss;		/* log sector size */
	u64	pos;		/* log file offset of buf[0] */
	u8	*buf;
	size_t	buf_len;
	u64	nr_entries;
	int	err;		/* sticky: logging stops at the first error */
	char	*path;
};

/* ---- recording: buffered append ---- */

static int rec_flush_buf(struct bfs_iolog_rec *rec)
{
	int ret;

	if (!rec->buf_len)
		return 0;
	ret = bfs_os_pwrite_all(rec->fd, rec->pos, rec->buf, rec->buf_len);
	if (ret)
		return ret;
	rec->pos += rec->buf_len;
	rec->buf_len = 0;
	return 0;
}

/* append @len bytes of @data, or of zeros if @data is NULL */
static int rec_put(struct bfs_iolog_rec *rec, const void *data, size_t len)
{
	const u8 *p = data;
	int ret;

	/* big payloads skip the copy into the buffer */
	if (data && len >= BFS_IOLOG_BUF_SIZE / 2) {
		ret = rec_flush_buf(rec);
		if (ret)
			return ret;
		ret = bfs_os_pwrite_all(rec->fd, rec->pos, data, len);
		if (!ret)
			rec->pos += len;
		return ret;
	}

	while (len) {
		size_t n = BFS_MIN(len, BFS_IOLOG_BUF_SIZE - rec->buf_len);

		if (p) {
			memcpy(rec->buf + rec->buf_len, p, n);
			p += n;
		} else {
			memset(rec->buf + rec->buf_len, 0, n);
		}
		rec->buf_len += n;
		len -= n;
		if (rec->buf_len == BFS_IOLOG_BUF_SIZE) {
			ret = rec_flush_buf(rec);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* pad the log to a multiple of the log sector size */
static int rec_pad(struct bfs_iolog_rec *rec)
{
	u64 end = rec->pos + rec->buf_len;
	u64 rem = end & (rec->ss - 1);

	return rem ? rec_put(rec, NULL, rec->ss - rem) : 0;
}

static int rec_write_super(struct bfs_iolog_rec *rec)
{
	struct bfs_iolog_super sb = {
		.magic		= cpu_to_le64(BFS_IOLOG_MAGIC),
		.version	= cpu_to_le64(BFS_IOLOG_VERSION),
		.nr_entries	= cpu_to_le64(rec->nr_entries),
		.sectorsize	= cpu_to_le32(rec->ss),
	};

	return bfs_os_pwrite_all(rec->fd, 0, &sb, sizeof(sb));
}

/* make the log on disk consistent: everything buffered, then the count */
static int rec_sync(struct bfs_iolog_rec *rec)
{
	int ret = rec_flush_buf(rec);

	return ret ? ret : rec_write_super(rec);
}

static int rec_entry(struct bfs_iolog_rec *rec, const struct bfs_iolog_entry_hdr *hdr,
		     const void *text, size_t text_len,
		     const void *payload, size_t payload_len)
{
	int ret;

	ret = rec_put(rec, hdr, sizeof(*hdr));
	if (!ret && text_len)
		ret = rec_put(rec, text, text_len);
	if (!ret)
		ret = rec_pad(rec);
	if (!ret && payload_len)
		ret = rec_put(rec, payload, payload_len);
	if (!ret)
		ret = rec_pad(rec);
	if (!ret)
		rec->nr_entries++;
	return ret;
}

static u64 rec_type_flags(enum bfs_iolog_type type)
{
	switch (type) {
	case BFS_IOLOG_FLUSH:	return BFS_IOLOG_F_FLUSH;
	case BFS_IOLOG_FUA:	return BFS_IOLOG_F_FUA;
	case BFS_IOLOG_DISCARD:	return BFS_IOLOG_F_DISCARD;
	case BFS_IOLOG_MARK:	return BFS_IOLOG_F_MARK;
	case BFS_IOLOG_WRITE:	break;
	}
	return 0;
}

static int rec_append_io(struct bfs_iolog_rec *rec, enum bfs_iolog_type type,
			 u64 off, const void *buf, u64 len)
{
	bool has_data = type == BFS_IOLOG_WRITE || type == BFS_IOLOG_FUA;
	u64 mask = rec->ss - 1;
	struct bfs_iolog_entry_hdr hdr = {
		.flags = cpu_to_le64(rec_type_flags(type)),
	};
	int ret;

	if ((off | len) & mask) {
		/* bfs extension: byte granular offset and length */
		hdr.flags = cpu_to_le64(rec_type_flags(type) | BFS_IOLOG_F_BFS_BYTES);
		hdr.sector = cpu_to_le64(off);
		hdr.data_len = cpu_to_le64(len);
		if (has_data)
			hdr.nr_sectors = cpu_to_le64(BFS_DIV_ROUND_UP(len, rec->ss));
	} else {
		hdr.sector = cpu_to_le64(off / rec->ss);
		hdr.nr_sectors = cpu_to_le64(len / rec->ss);
	}

	ret = rec_entry(rec, &hdr, NULL, 0, has_data ? buf : NULL, has_data ? len : 0);
	/* like the kernel: the super is kept current at FUA writes and marks */
	if (!ret && type == BFS_IOLOG_FUA)
		ret = rec_sync(rec);
	return ret;
}

static void rec_fail(struct bfs_iolog_rec *rec, int err)
{
	if (rec->err)
		return;
	rec->err = err;
	bfs_err("%s: writing I/O log failed (%s); recording stopped",
		rec->path, strerror(-err));
}

void bfs_iolog_rec_io(struct bfs_dev *dev, enum bfs_iolog_type type,
		      u64 off, const void *buf, u64 len)
{
	struct bfs_iolog_rec *rec;

	bfs_mutex_lock(&dev->rec_lock);
	rec = dev->rec;
	if (rec && !rec->err) {
		int ret = rec_append_io(rec, type, off, buf, len);

		if (ret)
			rec_fail(rec, ret);
	}
	bfs_mutex_unlock(&dev->rec_lock);
}

/* ---- recording: start / mark / stop ---- */

static void rec_free(struct bfs_iolog_rec *rec)
{
	if (rec->fd >= 0)
		close(rec->fd);
	bfs_free(rec->buf);
	bfs_free(rec->path);
	bfs_free(rec);
}

static int rec_create(const char *logpath, u32 ss, struct bfs_iolog_rec **out)
{
	struct bfs_iolog_rec *rec = bfs_zalloc(sizeof(*rec));
	int ret;

	if (!rec)
		return -ENOMEM;
	rec->fd = -1;
	rec->ss = ss;
	rec->buf = bfs_malloc(BFS_IOLOG_BUF_SIZE);
	rec->path = strdup(logpath);
	if (!rec->buf || !rec->path) {
		ret = -ENOMEM;
		goto err;
	}
	rec->fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (rec->fd < 0) {
		ret = -errno;
		goto err;
	}
	/* block 0: the super, zero padded; the entry count is filled in later */
	ret = rec_put(rec, NULL, ss);
	if (!ret)
		ret = rec_sync(rec);
	if (ret)
		goto err;
	*out = rec;
	return 0;
err:
	rec_free(rec);
	return ret;
}

int bfs_dev_record_start(struct bfs_dev *dev, const char *logpath)
{
	struct bfs_iolog_rec *rec = NULL;
	/* the kernel logs in units of the device's logical block size */
	u32 ss = BFS_MAX(dev->sector_size, BFS_IOLOG_MIN_SECTOR_SIZE);
	int ret;

	if (!bfs_is_pow2(ss) || ss > BFS_IOLOG_MAX_SECTOR_SIZE)
		return -EINVAL;
	if (bfs_dev_recording(dev))
		return -EBUSY;
	ret = rec_create(logpath, ss, &rec);
	if (ret)
		return ret;

	bfs_mutex_lock(&dev->rec_lock);
	if (dev->rec) {
		ret = -EBUSY;
	} else {
		__atomic_store_n(&dev->rec, rec, __ATOMIC_RELEASE);
		rec = NULL;
	}
	bfs_mutex_unlock(&dev->rec_lock);
	if (rec)
		rec_free(rec);
	return ret;
}

int bfs_dev_record_mark(struct bfs_dev *dev, const char *mark)
{
	struct bfs_iolog_rec *rec;
	struct bfs_iolog_entry_hdr hdr = {
		.flags = cpu_to_le64(BFS_IOLOG_F_MARK),
	};
	size_t len = strlen(mark);
	int ret;

	bfs_mutex_lock(&dev->rec_lock);
	rec = dev->rec;
	if (!rec) {
		ret = -EINVAL;
		goto out;
	}
	ret = rec->err;
	if (ret)
		goto out;
	/* the text shares the entry block and keeps a NUL, as in the kernel */
	if (len > rec->ss - BFS_IOLOG_HDR_SIZE - 1) {
		ret = -ENAMETOOLONG;
		goto out;
	}
	hdr.data_len = cpu_to_le64(len);
	ret = rec_entry(rec, &hdr, mark, len, NULL, 0);
	if (!ret)
		ret = rec_sync(rec);
	if (ret)
		rec_fail(rec, ret);
out:
	bfs_mutex_unlock(&dev->rec_lock);
	return ret;
}

static struct bfs_iolog_rec *rec_detach(struct bfs_dev *dev)
{
	struct bfs_iolog_rec *rec;

	bfs_mutex_lock(&dev->rec_lock);
	rec = dev->rec;
	__atomic_store_n(&dev->rec, NULL, __ATOMIC_RELEASE);
	bfs_mutex_unlock(&dev->rec_lock);
	return rec;
}

static int rec_finish(struct bfs_iolog_rec *rec)
{
	int ret = rec->err;

	if (!ret)
		ret = rec_sync(rec);
	if (close(rec->fd) < 0 && !ret)
		ret = -errno;
	rec->fd = -1;
	rec_free(rec);
	return ret;
}

int bfs_dev_record_stop(struct bfs_dev *dev)
{
	struct bfs_iolog_rec *rec = rec_detach(dev);

	return rec ? rec_finish(rec) : -EINVAL;
}

void bfs_iolog_rec_release(struct bfs_dev *dev)
{
	struct bfs_iolog_rec *rec = rec_detach(dev);

	if (rec)
		rec_finish(rec);
}

/* ---- reading a log ---- */

struct iolog_parser {
	struct bfs_iolog *log;
	const char	*path;
	u64		file_size;
	size_t		cap;
	u64		idx;	/* entry number in the file, for messages */
};

#define iolog_bad(p, err, fmt, ...)					\
	({								\
		bfs_err("%s: entry %llu: " fmt, (p)->path,		\
			(unsigned long long)(p)->idx, ##__VA_ARGS__);	\
		(err);							\
	})

static int iolog_push(struct iolog_parser *p, enum bfs_iolog_type type,
		      u64 off, u64 len, u64 data_pos)
{
	struct bfs_iolog *log = p->log;

	if (log->nr == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		struct bfs_iolog_entry *e = bfs_realloc(log->entries, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		log->entries = e;
		p->cap = cap;
	}
	log->entries[log->nr++] = (struct bfs_iolog_entry) {
		.type = type, .off = off, .len = len, .data_pos = data_pos,
	};
	return 0;
}

/* @sectors log sectors in bytes, or -EBADMSG if that does not fit in a u64 */
static int iolog_sectors_to_bytes(u64 sectors, u32 ss, u64 *bytes)
{
	if (sectors > UINT64_MAX / ss)
		return -EBADMSG;
	*bytes = sectors * ss;
	return 0;
}

static int iolog_parse_mark(struct iolog_parser *p, u64 flags, u64 nr_sectors,
			    u64 data_len, u64 pos, u64 *next)
{
	u32 ss = p->log->sector_size;

	if (flags != BFS_IOLOG_F_MARK || nr_sectors)
		return iolog_bad(p, -EBADMSG, "mark with flags %#llx, %llu sectors",
				 (unsigned long long)flags, (unsigned long long)nr_sectors);
	if (data_len > ss - BFS_IOLOG_HDR_SIZE)
		return iolog_bad(p, -EBADMSG, "mark text of %llu bytes",
				 (unsigned long long)data_len);
	*next = pos + ss;
	return iolog_push(p, BFS_IOLOG_MARK, 0, data_len, pos + BFS_IOLOG_HDR_SIZE);
}

static int iolog_parse_discard(struct iolog_parser *p, u64 flags, u64 sector,
			       u64 nr_sectors, u64 data_len, u64 pos, u64 *next)
{
	u32 ss = p->log->sector_size;
	u64 off, len;

	if (flags & (BFS_IOLOG_F_FLUSH | BFS_IOLOG_F_FUA))
		return iolog_bad(p, -EBADMSG, "discard with flush/FUA flags");
	if (flags & BFS_IOLOG_F_BFS_BYTES) {
		if (nr_sectors)
			return iolog_bad(p, -EBADMSG, "byte discard with sectors");
		off = sector;
		len = data_len;
	} else if (data_len || iolog_sectors_to_bytes(sector, ss, &off) ||
		   iolog_sectors_to_bytes(nr_sectors, ss, &len)) {
		return iolog_bad(p, -EBADMSG, "bad discard range");
	}
	if (!len || len > UINT64_MAX - off)
		return iolog_bad(p, -EBADMSG, "bad discard range");
	*next = pos + ss;
	return iolog_push(p, BFS_IOLOG_DISCARD, off, len, 0);
}

/* a write, FUA write or flush; a kernel preflush+write becomes two entries */
static int iolog_parse_write(struct iolog_parser *p, u64 flags, u64 sector,
			     u64 nr_sectors, u64 data_len, u64 pos, u64 *next)
{
	u32 ss = p->log->sector_size;
	u64 off, len, payload, data_pos = pos + ss;
	int ret;

	if (iolog_sectors_to_bytes(nr_sectors, ss, &payload))
		return iolog_bad(p, -EBADMSG, "bad write length");
	if (flags & BFS_IOLOG_F_BFS_BYTES) {
		off = sector;
		len = data_len;
		if (!len || BFS_DIV_ROUND_UP(len, ss) != nr_sectors)
			return iolog_bad(p, -EBADMSG, "byte write of %llu bytes in %llu sectors",
					 (unsigned long long)len,
					 (unsigned long long)nr_sectors);
	} else {
		len = payload;
		/* old kernels set data_len for inline (DAX) payloads */
		if (iolog_sectors_to_bytes(sector, ss, &off) || (data_len && data_len != len))
			return iolog_bad(p, -EBADMSG, "bad write range");
	}
	if (len > UINT64_MAX - off)
		return iolog_bad(p, -EBADMSG, "write range overflows");
	if (!len && !(flags & BFS_IOLOG_F_FLUSH))
		return iolog_bad(p, -EBADMSG, "empty entry (flags %#llx)",
				 (unsigned long long)flags);
	if (payload > p->file_size - data_pos)
		return iolog_bad(p, -ENODATA, "payload truncated");

	if (flags & BFS_IOLOG_F_FLUSH) {
		ret = iolog_push(p, BFS_IOLOG_FLUSH, 0, 0, 0);
		if (ret)
			return ret;
	}
	*next = data_pos + payload;
	if (!len)
		return 0;
	return iolog_push(p, (flags & BFS_IOLOG_F_FUA) ? BFS_IOLOG_FUA : BFS_IOLOG_WRITE,
			  off, len, data_pos);
}

static int iolog_parse_entry(struct iolog_parser *p, u64 pos, u64 *next)
{
	struct bfs_iolog_entry_hdr hdr;
	u64 flags, sector, nr_sectors, data_len;
	int ret;

	if (p->file_size - pos < p->log->sector_size)
		return iolog_bad(p, -ENODATA, "log truncated");
	ret = bfs_os_pread_all(p->log->fd, pos, &hdr, sizeof(hdr));
	if (ret)
		return ret;
	flags = le64_to_cpu(hdr.flags);
	sector = le64_to_cpu(hdr.sector);
	nr_sectors = le64_to_cpu(hdr.nr_sectors);
	data_len = le64_to_cpu(hdr.data_len);

	if (flags & ~BFS_IOLOG_F_KNOWN)
		return iolog_bad(p, -EBADMSG, "unknown flags %#llx",
				 (unsigned long long)flags);
	if (flags & BFS_IOLOG_F_MARK)
		return iolog_parse_mark(p, flags, nr_sectors, data_len, pos, next);
	if (flags & BFS_IOLOG_F_DISCARD)
		return iolog_parse_discard(p, flags, sector, nr_sectors, data_len, pos, next);
	return iolog_parse_write(p, flags, sector, nr_sectors, data_len, pos, next);
}

static int iolog_file_size(int fd, u64 *size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))	/* block: a kernel log device */
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	return bfs_os_fd_size(fd, S_ISBLK(st.st_mode), size);
}

static int iolog_read_super(struct iolog_parser *p, u64 *nr_entries)
{
	struct bfs_iolog_super sb;
	u32 ss;
	int ret;

	if (p->file_size < sizeof(sb)) {
		bfs_err("%s: I/O log truncated: no super", p->path);
		return -ENODATA;
	}
	ret = bfs_os_pread_all(p->log->fd, 0, &sb, sizeof(sb));
	if (ret)
		return ret;
	if (le64_to_cpu(sb.magic) != BFS_IOLOG_MAGIC) {
		bfs_err("%s: not a dm-log-writes log (bad magic)", p->path);
		return -EINVAL;
	}
	if (le64_to_cpu(sb.version) != BFS_IOLOG_VERSION) {
		bfs_err("%s: unsupported I/O log version %llu", p->path,
			(unsigned long long)le64_to_cpu(sb.version));
		return -EPROTONOSUPPORT;
	}
	ss = le32_to_cpu(sb.sectorsize);
	if (!bfs_is_pow2(ss) || ss < BFS_IOLOG_MIN_SECTOR_SIZE || ss > BFS_IOLOG_MAX_SECTOR_SIZE) {
		bfs_err("%s: bad I/O log sector size %u", p->path, ss);
		return -EBADMSG;
	}
	p->log->sector_size = ss;
	*nr_entries = le64_to_cpu(sb.nr_entries);
	/* every entry takes at least one sector: reject absurd counts early */
	if (p->file_size < ss || *nr_entries > (p->file_size - ss) / ss) {
		bfs_err("%s: I/O log truncated: %llu entries do not fit in %llu bytes",
			p->path, (unsigned long long)*nr_entries,
			(unsigned long long)p->file_size);
		return -ENODATA;
	}
	return 0;
}

int bfs_iolog_open(const char *logpath, struct bfs_iolog *log)
{
	struct iolog_parser p = { .log = log, .path = logpath };
	u64 nr_entries, pos;
	int ret;

	memset(log, 0, sizeof(*log));
	log->fd = open(logpath, O_RDONLY | O_CLOEXEC);
	if (log->fd < 0)
		return -errno;

	ret = iolog_file_size(log->fd, &p.file_size);
	if (!ret)
		ret = iolog_read_super(&p, &nr_entries);
	pos = log->sector_size;
	for (p.idx = 0; !ret && p.idx < nr_entries; p.idx++)
		ret = iolog_parse_entry(&p, pos, &pos);
	if (ret)
		bfs_iolog_close(log);
	return ret;
}

void bfs_iolog_close(struct bfs_iolog *log)
{
	if (log->fd >= 0)
		close(log->fd);
	bfs_free(log->entries);
	memset(log, 0, sizeof(*log));
	log->fd = -1;
}

int bfs_iolog_read_data(const struct bfs_iolog *log, size_t i, void *buf)
{
	const struct bfs_iolog_entry *e;

	if (i >= log->nr)
		return -EINVAL;
	e = &log->entries[i];
	switch (e->type) {
	case BFS_IOLOG_WRITE:
	case BFS_IOLOG_FUA:
	case BFS_IOLOG_MARK:
		return bfs_os_pread_all(log->fd, e->data_pos, buf, e->len);
	case BFS_IOLOG_FLUSH:
		return 0;
	case BFS_IOLOG_DISCARD:
		break;
	}
	return -EINVAL;		/* a discard has a length but no payload */
}

/* a plain memory device: read the payload straight into its buffer */
static bool iolog_apply_direct(struct bfs_dev *dev)
{
	return dev->mem && !dev->readonly && !bfs_dev_recording(dev) &&
	       !__atomic_load_n(&dev->fail_after, __ATOMIC_RELAXED);
}

static int iolog_apply_write(const struct bfs_iolog *log, const struct bfs_iolog_entry *e,
			     struct bfs_dev *dev, u64 len)
{
	size_t chunk = (size_t)BFS_MIN(len, BFS_IOLOG_APPLY_CHUNK);
	u64 done = 0;
	void *buf;
	int ret = 0;

	if (iolog_apply_direct(dev)) {
		if (e->off > dev->size || len > dev->size - e->off)
			return -ERANGE;
		return bfs_os_pread_all(log->fd, e->data_pos, dev->mem + e->off, len);
	}

	/* aligned, in case the target was opened with O_DIRECT */
	buf = bfs_aligned_alloc(BFS_MAX(dev->sector_size, 4096U), chunk);
	if (!buf)
		return -ENOMEM;
	while (!ret && done < len) {
		size_t n = (size_t)BFS_MIN(len - done, chunk);

		ret = bfs_os_pread_all(log->fd, e->data_pos + done, buf, n);
		if (!ret)
			ret = bfs_dev_write(dev, e->off + done, buf, n);
		done += n;
	}
	bfs_free(buf);
	return ret;
}

static int iolog_write_zeroes(struct bfs_dev *dev, u64 off, u64 len)
{
	size_t chunk = (size_t)BFS_MIN(len, BFS_IOLOG_APPLY_CHUNK);
	void *buf = bfs_aligned_alloc(BFS_MAX(dev->sector_size, 4096U), chunk);
	u64 done = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	memset(buf, 0, chunk);
	while (!ret && done < len) {
		size_t n = (size_t)BFS_MIN(len - done, chunk);

		ret = bfs_dev_write(dev, off + done, buf, n);
		done += n;
	}
	bfs_free(buf);
	return ret;
}

/*
 * Discarded ranges replay as zeros, whatever the target: block devices may
 * return old data after BLKDISCARD, and a replay must be deterministic.
 */
static int iolog_apply_discard(struct bfs_dev *dev, u64 off, u64 len)
{
	int ret;

	if (dev->blockdev)
		return iolog_write_zeroes(dev, off, len);
	ret = bfs_dev_discard(dev, off, len);
	if (ret == -EOPNOTSUPP)
		ret = iolog_write_zeroes(dev, off, len);
	return ret;
}

int bfs_iolog_apply(const struct bfs_iolog *log, size_t i, struct bfs_dev *dev, u64 torn_bytes)
{
	const struct bfs_iolog_entry *e;
	u64 len;

	if (i >= log->nr)
		return -EINVAL;
	e = &log->entries[i];
	if (torn_bytes > e->len)
		return -EINVAL;
	len = torn_bytes ? torn_bytes : e->len;

	switch (e->type) {
	case BFS_IOLOG_WRITE:
	case BFS_IOLOG_FUA:
		return iolog_apply_write(log, e, dev, len);
	case BFS_IOLOG_DISCARD:
		return iolog_apply_discard(dev, e->off, len);
	case BFS_IOLOG_FLUSH:
	case BFS_IOLOG_MARK:
		break;
	}
	return 0;
}
