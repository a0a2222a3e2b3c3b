// SPDX-License-Identifier: MIT
/*
 * bfs migrate --rollback: put the ext filesystem back from the saved image.
 *
 * Everything is checked before the first write: the record on the image,
 * that the image still covers exactly the bytes ext used, that every part
 * inside the bucket area still points at its own offset (so the blocks are
 * where ext expects them, and nothing else may have reused them), and that
 * every byte reads back with a good checksum.  Only the copies of the
 * superblock areas then need writing: the tail first, then the first MiB
 * except the primary bfs superblock, and that last, so bfs stays openable
 * until the ext filesystem is whole again.  Whatever bfs wrote since the
 * conversion (new files, changes) is lost, as the man page says.
 */
#include "migrate.h"

#include <bfs/migrate_format.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK	(1024 * 1024)

struct rb_extent {
	u64	logical, len, physical;
	u32	flags;
};

struct rb {
	struct mig *m;
	struct bfs_migrate_saved rec;
	u64	ino;
	struct rb_extent *e;
	size_t	nr, cap;
	u64	head_end, tail_start, ext_bytes;
	u8	*head, *tail;		/* [0, head_end) and [tail_start, dev_size) */
};

static int map_cb(void *ctx, const struct bfs_fs_extent *fe)
{
	struct rb *r = ctx;

	if (r->nr == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		struct rb_extent *p = realloc(r->e, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->e = p;
		r->cap = cap;
	}
	r->e[r->nr++] = (struct rb_extent){ fe->logical, fe->len, fe->physical, fe->flags };
	return 0;
}

static int find_image(struct rb *r)
{
	struct mig *m = r->m;
	struct bfs_stat st;
	ssize_t n;
	int ret;

	ret = bfs_fs_lookup(m->fs, BFS_ROOT_INO, MIG_SAVED_DIR, strlen(MIG_SAVED_DIR), &st);
	if (!ret)
		ret = bfs_fs_lookup(m->fs, st.ino, MIG_SAVED_IMAGE, strlen(MIG_SAVED_IMAGE), &st);
	if (ret == -ENOENT)
		return mig_error(m, "there is no /%s/%s: this filesystem was not converted by bfs "
				 "migrate, or the saved image was deleted; cannot roll back",
				 MIG_SAVED_DIR, MIG_SAVED_IMAGE);
	if (ret)
		return mig_error(m, "cannot find the saved image: %s", strerror(-ret));
	r->ino = st.ino;
	n = bfs_fs_getxattr(m->fs, r->ino, MIG_SAVED_XATTR, &r->rec, sizeof(r->rec));
	if (n != (ssize_t)sizeof(r->rec) || le64_to_cpu(r->rec.magic) != BFS_MIGRATE_MAGIC)
		return mig_error(m, "/%s/%s has no valid migration record; cannot roll back",
				 MIG_SAVED_DIR, MIG_SAVED_IMAGE);
	if (le32_to_cpu(r->rec.version) != BFS_MIGRATE_VERSION)
		return mig_error(m, "the migration record has version %u, this bfs reads %u",
				 le32_to_cpu(r->rec.version), BFS_MIGRATE_VERSION);
	r->ext_bytes = le64_to_cpu(r->rec.ext_bytes);
	r->head_end = le64_to_cpu(r->rec.head_end);
	r->tail_start = le64_to_cpu(r->rec.tail_start);
	if (le64_to_cpu(r->rec.dev_size) != bfs_dev_size(m->dev) || st.size != r->ext_bytes ||
	    r->ext_bytes > bfs_dev_size(m->dev) || r->head_end > 16 * MiB ||
	    r->tail_start > bfs_dev_size(m->dev) || r->head_end > r->tail_start ||
	    bfs_dev_size(m->dev) - r->tail_start > 16 * MiB)
		return mig_error(m, "the migration record does not fit this device (resized since "
				 "the conversion?); cannot roll back");
	return 0;
}

/* does the image still cover exactly ext's bytes, in place where it must be? */
static int check_extents(struct rb *r)
{
	struct mig *m = r->m;
	u64 total = 0;
	size_t i;
	int ret;

	ret = bfs_fs_map(m->fs, r->ino, map_cb, r);
	if (ret)
		return mig_error(m, "cannot read the saved image's extents: %s", strerror(-ret));
	for (i = 0; i < r->nr; i++) {
		struct rb_extent *e = &r->e[i];
		bool inside = e->logical >= r->head_end && e->logical + e->len <= r->tail_start;
		bool outside = e->logical + e->len <= r->head_end || e->logical >= r->tail_start;

		if (!e->physical || (e->flags & (BFS_EXTENT_UNWRITTEN | BFS_EXTENT_COMPRESSED)) ||
		    e->logical + e->len > r->ext_bytes || (!inside && !outside) ||
		    (inside && e->physical != e->logical))
			return mig_error(m, "the saved image was changed since the conversion (bytes "
					 "%llu..%llu are not where ext had them); cannot roll back",
					 (unsigned long long)e->logical,
					 (unsigned long long)(e->logical + e->len - 1));
		total += e->len;
	}
	if (total != le64_to_cpu(r->rec.used_bytes))
		return mig_error(m, "the saved image holds %llu bytes of ext blocks, the conversion "
				 "saved %llu; cannot roll back", (unsigned long long)total,
				 (unsigned long long)le64_to_cpu(r->rec.used_bytes));
	return 0;
}

/* read everything (checksums verified); keep the copies of the superblock areas */
static int verify_and_collect(struct rb *r)
{
	struct mig *m = r->m;
	u8 *buf = malloc(READ_CHUNK);
	size_t i;
	int ret = 0;

	if (!buf)
		return mig_error(m, "out of memory");
	for (i = 0; i < r->nr && !ret; i++) {
		struct rb_extent *e = &r->e[i];
		u64 done;

		for (done = 0; done < e->len && !ret; done += READ_CHUNK) {
			u64 off = e->logical + done, n = BFS_MIN((u64)READ_CHUNK, e->len - done);
			ssize_t got = bfs_fs_read(m->fs, r->ino, buf, n, off);

			if (got != (ssize_t)n) {
				ret = mig_error(m, "ext bytes %llu..%llu no longer read back intact "
						"(%s); cannot roll back", (unsigned long long)off,
						(unsigned long long)(off + n - 1),
						got < 0 ? strerror((int)-got) : "short read");
				break;
			}
			if (off < r->head_end)
				memcpy(r->head + off, buf, n);
			else if (off >= r->tail_start)
				memcpy(r->tail + (off - r->tail_start), buf, n);
		}
		mig_progress(m, MIG_PASS_VERIFY, i + 1, r->nr);
	}
	free(buf);
	return ret;
}

/* the superblock areas as ext had them: bfs's copies cleared, ext's blocks back */
static int read_areas(struct rb *r)
{
	struct mig *m = r->m;
	u64 dev = bfs_dev_size(m->dev);
	int ret;

	r->head = malloc(r->head_end);
	r->tail = malloc(dev - r->tail_start + 1);
	if (!r->head || !r->tail)
		return mig_error(m, "out of memory");
	ret = bfs_dev_read(m->dev, 0, r->head, r->head_end);
	if (!ret)
		ret = bfs_dev_read(m->dev, r->tail_start, r->tail, dev - r->tail_start);
	if (ret)
		return mig_error(m, "cannot read the device: %s", strerror(-ret));
	m->nr_sb = bfs_sb_copy_offsets(dev, m->sb_offs);
	for (unsigned i = 0; i < m->nr_sb; i++) {
		u64 o = m->sb_offs[i];

		if (o + BFS_SB_REGION <= r->head_end)
			memset(r->head + o, 0, BFS_SB_REGION);
		else if (o >= r->tail_start && o + BFS_SB_REGION <= dev)
			memset(r->tail + (o - r->tail_start), 0, BFS_SB_REGION);
	}
	return 0;
}

static int write_back(struct rb *r)
{
	struct mig *m = r->m;
	u64 dev = bfs_dev_size(m->dev), prim = m->sb_offs[0] + BFS_SB_REGION;
	int ret;

	ret = bfs_dev_write(m->dev, r->tail_start, r->tail, dev - r->tail_start);
	if (!ret && r->head_end > prim)
		ret = bfs_dev_write(m->dev, prim, r->head + prim, r->head_end - prim);
	if (!ret)
		ret = bfs_dev_flush(m->dev);
	/* the primary bfs superblock goes last: until here the device opens as bfs */
	if (!ret)
		ret = bfs_dev_write(m->dev, 0, r->head, BFS_MIN(prim, r->head_end));
	if (!ret)
		ret = bfs_dev_flush(m->dev);
	if (ret)
		return mig_error(m, "writing the ext metadata back failed: %s", strerror(-ret));
	return 0;
}

int mig_rollback(struct mig *m)
{
	struct bfs_fs_opts o = { .read_only = true };
	struct rb r = { .m = m };
	int ret;

	ret = bfs_fs_open(m->dev, &o, &m->fs);
	if (ret == -ENODATA)
		return mig_error(m, "'%s' holds no bfs filesystem", m->path);
	if (ret)
		return mig_error(m, "cannot open the bfs filesystem on '%s': %s", m->path,
				 strerror(-ret));
	ret = find_image(&r);
	if (!ret)
		ret = check_extents(&r);
	if (!ret)
		ret = read_areas(&r);
	if (!ret)
		ret = verify_and_collect(&r);
	bfs_fs_close(m->fs);
	m->fs = NULL;
	if (!ret)
		ret = write_back(&r);
	free(r.e);
	free(r.head);
	free(r.tail);
	return ret;
}
