// SPDX-License-Identifier: MIT
/*
 * Extents over data that is already on the device (see bfs/import.h).
 * Held buckets are data buckets pinned with one in-flight reference each,
 * which keeps copy-GC and the release of empty buckets away from them until
 * bfs_fs_import_end().
 */
#include <sys/stat.h>

#include <bfs/checksum.h>
#include <bfs/import.h>

#include "data.h"
#include "ns.h"

#define IMPORT_BATCH	32	/* chunks per transaction, as the write path */
#define CSUM_CACHE	(1U << 16)	/* chunks whose checksum is remembered */

/*
 * Chunks start at multiples of chunk_max on the device, so two extents over
 * the same old blocks (a file and the converter's saved image) usually
 * share their chunks; their checksums are remembered here, so the data is
 * read once.  The bytes cannot change meanwhile: they are in held buckets.
 */
struct csum_slot {
	u64	dev_off;
	u32	len;
	u64	csum;
};

struct bfs_import {
	const u64	*held;
	struct csum_slot *cache;
};

static bool bit(const u64 *map, u64 b)
{
	return map[b / 64] & (UINT64_C(1) << (b % 64));
}

/* d->lock held: give back the pins of buckets [first_bucket, upto) of @avoid */
static void unpin_locked(struct bfs_fs_data *d, const u64 *avoid, u64 upto)
{
	u64 b;

	for (b = d->first_bucket; b < upto; b++) {
		if (!bit(avoid, b))
			continue;
		d->b[b].inflight--;
		d->b[b].data = false;
		d->nr_data_buckets--;
	}
}

int bfs_fs_import_begin(struct bfs_fs *fs, const u64 *avoid)
{
	struct bfs_fs_data *d = fs->data;
	struct bfs_import *imp;
	u64 b;

	if (fs->read_only)
		return -EROFS;
	if (fs->import)
		return -EBUSY;
	imp = bfs_zalloc(sizeof(*imp));
	if (imp)
		imp->cache = bfs_calloc(CSUM_CACHE, sizeof(struct csum_slot));
	if (!imp || !imp->cache) {
		bfs_free(imp);
		return -ENOMEM;
	}
	imp->held = avoid;
	bfs_mutex_lock(&d->lock);
	for (b = d->first_bucket; b < d->nbuckets; b++) {
		struct bfs_bucket *bk = &d->b[b];

		if (!bit(avoid, b))
			continue;
		/* the open passed the same bitmap: the node allocator never had it */
		if (bk->data || bk->open || bk->inflight || bk->live) {
			unpin_locked(d, avoid, b);
			bfs_mutex_unlock(&d->lock);
			bfs_free(imp->cache);
			bfs_free(imp);
			return -EBUSY;
		}
		bk->data = true;
		bk->inflight++;
		d->nr_data_buckets++;
	}
	bfs_mutex_unlock(&d->lock);
	fs->import = imp;
	return 0;
}

void bfs_fs_import_end(struct bfs_fs *fs)
{
	struct bfs_fs_data *d = fs->data;
	u64 b;

	if (!fs->import)
		return;
	/* an emptied bucket waits for the next journal flush, as any other */
	for (b = d->first_bucket; b < d->nbuckets; b++)
		if (bit(fs->import->held, b))
			bfs_data_space_abort(d, b);
	bfs_free(fs->import->cache);
	bfs_free(fs->import);
	fs->import = NULL;
}

static bool held(struct bfs_fs *fs, u64 b)
{
	struct bfs_fs_data *d = fs->data;

	return fs->import && bfs_data_bucket_valid(d, b) && bit(fs->import->held, b);
}

/* checksum of the old bytes at [dev_off, dev_off + len), read only on a miss */
static int chunk_csum(struct bfs_fs *fs, u64 dev_off, u32 len, u8 *buf, u64 *csum)
{
	struct bfs_fs_data *d = fs->data;
	struct csum_slot *s = &fs->import->cache[(dev_off / d->chunk_max) % CSUM_CACHE];
	int ret;

	if (s->len == len && s->dev_off == dev_off) {
		*csum = s->csum;
		return 0;
	}
	ret = bfs_dev_read(d->dev, dev_off, buf, len);
	if (ret)
		return ret;
	*csum = bfs_csum(d->csum_type, buf, len);
	*s = (struct csum_slot){ dev_off, len, *csum };
	return 0;
}

/*
 * The next chunk at @off: up to the next multiple of chunk_max, which never
 * crosses a bucket boundary (buckets are multiples of it).
 */
static u64 chunk_len(struct bfs_fs_data *d, u64 off, u64 left)
{
	return BFS_MIN(left, d->chunk_max - off % d->chunk_max);
}

/* queue up to IMPORT_BATCH chunks of the range; *done = bytes queued */
static int queue_import(struct bfs_fs *fs, struct data_update *u, u64 ino, u64 file_off,
			u64 dev_off, u64 len, unsigned flags, u8 *buf, u64 *done)
{
	struct bfs_fs_data *d = fs->data;
	u64 kbuf[EXTENT_KEY_U64S];
	unsigned n;
	int ret = 0;

	*done = 0;
	for (n = 0; n < IMPORT_BATCH && *done < len && !ret; n++) {
		u64 fo = file_off + *done, doff = dev_off + *done;
		u64 cl = chunk_len(d, flags & BFS_IMPORT_UNWRITTEN ? fo : doff, len - *done);
		u64 s = fo >> BFS_SECTOR_SHIFT, e = (fo + cl) >> BFS_SECTOR_SHIFT;
		struct bfs_bkey *k;

		ret = data_account_overwrite(d, u, ino, s, e);
		if (ret)
			break;
		if (flags & BFS_IMPORT_UNWRITTEN) {
			k = bfs_extent_key_unwritten(kbuf, ino, s, e);
		} else {
			struct data_chunk ch = {
				.dev_off = doff,
				.bucket = bfs_data_bucket_of(d, doff),
				.stored_bytes = (u32)cl,
				.disk_bytes = (u32)cl,
				.chunk_sectors = (u32)(cl >> BFS_SECTOR_SHIFT),
				.compression = BFS_COMPRESSION_NONE,
			};

			if (!held(fs, ch.bucket))
				return -EINVAL;
			ch.gen = bfs_data_bucket_gen(d, ch.bucket);
			ret = chunk_csum(fs, doff, (u32)cl, buf, &ch.csum);
			if (ret)
				break;
			k = bfs_extent_key(kbuf, ino, s, e, &ch, d->csum_type, 0);
			ret = data_update_add(u, ch.bucket, (s64)(e - s), 0);
			if (ret)
				break;
		}
		ret = bfs_trans_update(u->t, BFS_BTREE_EXTENTS, k);
		if (ret)
			break;
		u->inode_sectors += (s64)(e - s);
		*done += cl;
	}
	return ret;
}

int bfs_fs_import_extent(struct bfs_fs *fs, u64 ino, u64 file_off, u64 dev_off, u64 len,
			 unsigned flags)
{
	struct bfs_fs_data *d = fs->data;
	struct bfs_inode inode;
	u64 bs = d->block_size, pos = 0;
	u8 *buf;
	int ret;

	if (fs->read_only)
		return -EROFS;
	if (flags & ~BFS_IMPORT_UNWRITTEN)
		return -EINVAL;
	if (file_off % bs || len % bs || (!(flags & BFS_IMPORT_UNWRITTEN) && dev_off % bs))
		return -EINVAL;
	if (file_off > BFS_DATA_MAX_BYTES || len > BFS_DATA_MAX_BYTES - file_off)
		return -EFBIG;
	buf = bfs_malloc(d->chunk_max);
	if (!buf)
		return -ENOMEM;
	ret = bfs_data_lock_file(fs, ino, &inode, -EINVAL);
	if (ret) {
		bfs_free(buf);
		return ret;
	}
	while (pos < len && !ret) {
		struct bfs_inode saved = inode;
		struct data_update u;
		struct bfs_trans *t;
		u64 done = 0;

		ret = bfs_trans_begin(d->c, &t);
		if (ret)
			break;
		data_update_init(&u, t);
		ret = queue_import(fs, &u, ino, file_off + pos, dev_off + pos, len - pos, flags,
				   buf, &done);
		if (!ret) {
			inode.sectors = (u64)((s64)inode.sectors + u.inode_sectors);
			ret = bfs_inode_write(t, &inode);
		}
		if (!ret)
			ret = data_update_commit(d, &u, NULL);
		else
			data_update_abort(d, &u);
		if (ret)
			inode = saved;
		bfs_trans_end(t);
		data_update_exit(&u);
		pos += done;
	}
	bfs_inode_unlock(fs, ino);
	bfs_free(buf);
	return ret;
}

int bfs_fs_import_times(struct bfs_fs *fs, u64 ino, s64 atime, s64 mtime, s64 ctime, s64 btime)
{
	struct bfs_ns_change c;
	int ret = bfs_ns_change_begin(fs, ino, &c);

	if (!ret) {
		c.inode.i.atime = atime;
		c.inode.i.mtime = mtime;
		c.inode.i.ctime = ctime;
		c.inode.i.btime = btime;
	}
	return bfs_ns_change_end(&c, ret);
}
