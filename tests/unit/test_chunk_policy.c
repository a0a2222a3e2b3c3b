// SPDX-License-Identifier: MIT
/*
 * The chunk-size policy (libcore/fs/chunk_policy.c, bfs format
 * --data-chunk, bfs set-option data_chunk=): where the policy cuts, that the
 * writer cuts there (seen in the extents btree), that partial overwrites of
 * small and large chunks read back right, that a changed target applies to
 * new writes only, that fsck finds an image with mixed chunk sizes clean,
 * and the options section's data_chunk_shift (validation, old sections).
 */
#include "tu.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <bfs/btree.h>
#include <bfs/extent_format.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include "fs/chunk_policy.h"

#define DEV_SIZE	(128 * MiB)

/* ---- the policy alone ---- */

START_TEST(test_policy_cuts)
{
	struct bfs_chunk_policy p;

	bfs_chunk_policy_init(&p, 16 * KiB, 4096, 64 * KiB, 1 * MiB);
	ck_assert_uint_eq(p.target, 16 * KiB);
	/* aligned: chunks end on multiples of the target */
	ck_assert_uint_eq(bfs_chunk_end(&p, 0, 1 * MiB), 16 * KiB);
	ck_assert_uint_eq(bfs_chunk_end(&p, 4 * KiB, 1 * MiB), 16 * KiB);
	ck_assert_uint_eq(bfs_chunk_end(&p, 16 * KiB, 1 * MiB), 32 * KiB);
	/* a small write gets just its blocks */
	ck_assert_uint_eq(bfs_chunk_end(&p, 36 * KiB, 40 * KiB), 40 * KiB);
	ck_assert_uint_eq(bfs_chunk_end(&p, 36 * KiB, 37 * KiB + 1), 40 * KiB);
	ck_assert_uint_eq(bfs_chunk_end(&p, 40 * KiB, 40 * KiB + 1), 44 * KiB);
	/* about 2 MiB per transaction, within the bounds */
	ck_assert_uint_eq(p.batch, 128);
	bfs_chunk_policy_init(&p, 4 * KiB, 4096, 64 * KiB, 1 * MiB);
	ck_assert_uint_eq(p.batch, 256);
	bfs_chunk_policy_init(&p, 0, 4096, 64 * KiB, 1 * MiB);
	ck_assert_uint_eq(p.target, 64 * KiB);
	ck_assert_uint_eq(p.batch, 32);
	/* small buckets: the chunk stays within chunk_max, the batch small */
	bfs_chunk_policy_init(&p, 64 * KiB, 4096, 16 * KiB, 16 * KiB);
	ck_assert_uint_eq(p.target, 16 * KiB);
	ck_assert_uint_eq(p.batch, 32);
	bfs_chunk_policy_init(&p, 4 * KiB, 4096, 4 * KiB, 4 * KiB);
	ck_assert_uint_eq(p.target, 4 * KiB);
	ck_assert_uint_eq(p.batch, 32);
	/* never below a block */
	bfs_chunk_policy_init(&p, 4 * KiB, 16 * KiB, 64 * KiB, 1 * MiB);
	ck_assert_uint_eq(p.target, 16 * KiB);
	ck_assert_uint_eq(bfs_chunk_end(&p, 16 * KiB, 20 * KiB), 32 * KiB);
}
END_TEST

/* ---- the superblock option ---- */

static struct bfs_sb *new_sb(u32 data_chunk)
{
	struct bfs_format_opts o = { .block_size = 4096, .data_chunk = data_chunk };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";

	ck_assert_ptr_nonnull(sb);
	ck_assert_msg(!bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), "layout: %s", err);
	return sb;
}

static int validate(struct bfs_sb *sb, char *err)
{
	sb->csum = cpu_to_le64(bfs_sb_csum(sb));
	return bfs_sb_validate(sb, BFS_SB_MAX_BYTES, 0, err);
}

static struct bfs_sb_options *options(struct bfs_sb *sb)
{
	struct bfs_sb_field *f = bfs_sb_field_get(sb, BFS_SB_FIELD_OPTIONS);

	ck_assert_ptr_nonnull(f);
	return (void *)f->data;
}

START_TEST(test_sb_option)
{
	struct bfs_sb *sb = new_sb(0);
	char err[BFS_ERR_LEN];
	u32 bad[] = { 0, 2048, 3 * 4096, 128 * KiB, 4096 + 1 };
	unsigned i;

	/* format's default: 16 KiB, written down */
	ck_assert_uint_eq(bfs_sb_data_chunk(sb), BFS_DATA_CHUNK_DEFAULT);
	ck_assert_uint_eq(options(sb)->data_chunk_shift, 14);
	ck_assert(le64_to_cpu(sb->compat) & BFS_FEAT_COMPAT_DATA_CHUNK);
	/* a filesystem from before: no section, 64 KiB */
	bfs_sb_field_delete(sb, BFS_SB_FIELD_OPTIONS);
	sb->compat = cpu_to_le64(le64_to_cpu(sb->compat) & ~BFS_FEAT_COMPAT_DATA_CHUNK);
	ck_assert_uint_eq(bfs_sb_data_chunk(sb), BFS_EXTENT_CHUNK_MAX);
	ck_assert_int_eq(validate(sb, err), 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ck_assert_int_eq(bfs_sb_set_data_chunk(sb, bad[i], err), -EINVAL);
		ck_assert_ptr_nonnull(strstr(err, "4K to 64K"));
	}
	ck_assert_uint_eq(bfs_sb_data_chunk(sb), BFS_EXTENT_CHUNK_MAX);
	ck_assert_int_eq(bfs_sb_set_data_chunk(sb, 8 * KiB, err), 0);
	ck_assert_uint_eq(bfs_sb_data_chunk(sb), 8 * KiB);
	ck_assert(le64_to_cpu(sb->compat) & BFS_FEAT_COMPAT_DATA_CHUNK);
	ck_assert_uint_eq(options(sb)->data_chunk_shift, 13);
	ck_assert_int_eq(validate(sb, err), 0);
	/* a chunk must hold a whole block */
	bfs_free(sb);
	{
		struct bfs_format_opts o = { .block_size = 16384 };

		sb = bfs_zalloc(BFS_SB_MAX_BYTES);
		ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
		ck_assert_int_eq(bfs_sb_set_data_chunk(sb, 8 * KiB, err), -EINVAL);
		ck_assert_ptr_nonnull(strstr(err, "block size"));
		ck_assert_int_eq(bfs_sb_set_data_chunk(sb, 16 * KiB, err), 0);
		o.data_chunk = 4096;
		ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), -EINVAL);
		/* and lie in one bucket */
		o = (struct bfs_format_opts){ .bucket_size = 16384 };
		ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
		ck_assert_uint_eq(bfs_sb_data_chunk(sb), 16384);
		/* the default follows the block and bucket sizes, and compression */
		o = (struct bfs_format_opts){ .block_size = 65536 };
		ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
		ck_assert_uint_eq(bfs_sb_data_chunk(sb), 64 * KiB);
		o = (struct bfs_format_opts){ .bucket_size = 8192, .block_size = 4096,
					      .btree_node_size = 4096 };
		ck_assert_msg(!bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), "layout: %s", err);
		ck_assert_uint_eq(bfs_sb_data_chunk(sb), 8 * KiB);
		o = (struct bfs_format_opts){ .compression_type = BFS_COMPRESSION_ZSTD };
		ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
		ck_assert_uint_eq(bfs_sb_data_chunk(sb), 64 * KiB);
		o = (struct bfs_format_opts){ .bucket_size = 16384 };
		o.data_chunk = 32768;
		ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), -EINVAL);
		ck_assert_ptr_nonnull(strstr(err, "bucket size"));
		o.data_chunk = 16384;
		ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
		ck_assert_uint_eq(bfs_sb_data_chunk(sb), 16384);
	}
	bfs_free(sb);

	/* format sets it; the validator checks the shift and its padding */
	sb = new_sb(16 * KiB);
	ck_assert_uint_eq(bfs_sb_data_chunk(sb), 16 * KiB);
	ck_assert_int_eq(validate(sb, err), 0);
	options(sb)->data_chunk_shift = 11;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "data_chunk_shift"));
	options(sb)->data_chunk_shift = 17;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	options(sb)->data_chunk_shift = 14;
	options(sb)->pad3[5] = 1;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	options(sb)->pad3[5] = 0;
	options(sb)->errors = BFS_ERRORS_NR;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	options(sb)->errors = BFS_ERRORS_RO;
	ck_assert_int_eq(validate(sb, err), 0);

	/*
	 * A section as tools before data_chunk_shift wrote it (32 bytes of
	 * payload) is valid and means 64 KiB; setting the option grows it.
	 */
	ck_assert_ptr_nonnull(bfs_sb_field_resize(sb, BFS_SB_FIELD_OPTIONS,
						  (8 + BFS_SB_OPTIONS_V1_BYTES) / 8));
	ck_assert_int_eq(validate(sb, err), 0);
	ck_assert_uint_eq(bfs_sb_data_chunk(sb), BFS_EXTENT_CHUNK_MAX);
	ck_assert_int_eq(bfs_sb_set_commit_secs(sb, 5, err), 0);
	ck_assert_int_eq(bfs_sb_set_data_chunk(sb, 4 * KiB, err), 0);
	ck_assert_uint_eq(bfs_sb_data_chunk(sb), 4 * KiB);
	ck_assert_uint_eq(bfs_sb_commit_secs(sb), 5);
	ck_assert_int_eq(validate(sb, err), 0);
	bfs_free(sb);
}
END_TEST

/* ---- the writer ---- */

static struct bfs_dev *mkfs_chunk(u32 data_chunk)
{
	struct bfs_sb *sb = new_sb(data_chunk);
	struct bfs_dev *dev;

	tu_log_reset();
	tu_log_count_warnings("data:");
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	ck_assert_msg(!bfs_mkfs(dev, sb), "mkfs: %s", tu_last_err);
	bfs_free(sb);
	return dev;
}

/* write @len bytes of @model at @off to @ino and into @model */
static void put(struct bfs_fs *fs, u64 ino, u8 *model, size_t len, u64 off, u64 seed)
{
	ssize_t n;

	tu_fill_random(model + off, len, seed);
	n = bfs_fs_write(fs, ino, model + off, len, off);
	ck_assert_msg(n == (ssize_t)len, "write %zu at %llu: %zd (%s)", len,
		      (unsigned long long)off, n, tu_last_err);
}

/* the file reads as @model[0, size), whole and in unaligned pieces */
static void check_file(struct bfs_fs *fs, u64 ino, const u8 *model, u64 size)
{
	u8 *buf = bfs_malloc(size);
	u64 off;

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf, size, 0), (ssize_t)size);
	ck_assert(!memcmp(buf, model, size));
	for (off = 1000; off + 5000 <= size; off += 37 * KiB + 123) {
		ck_assert_int_eq(bfs_fs_read(fs, ino, buf, 5000, off), 5000);
		ck_assert(!memcmp(buf, model + off, 5000));
	}
	bfs_free(buf);
}

/* one extent key of a file: [start, end) bytes and where its chunk lies in the file */
struct ext {
	u64 start, end, chunk_start, chunk_bytes;
};

/* the written extents of @ino, in order; returns how many (at most @max) */
static unsigned extents(struct bfs_fs *fs, u64 ino, struct ext *e, unsigned max)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	unsigned nr = 0;
	int ret;

	bfs_btree_iter_init(&it, bfs_fs_core(fs), BFS_BTREE_EXTENTS, BFS_POS(ino, 0, 0), 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		const struct bfs_extent_v *v = (const void *)k->v;
		u64 s = bfs_bkey_start(k) << BFS_SECTOR_SHIFT;

		if (le64_to_cpu(k->inode) != ino) {
			ret = -ENOENT;
			break;
		}
		if (k->type != BFS_KEY_EXTENT || (v->flags & BFS_EXTENT_F_UNWRITTEN))
			continue;
		ck_assert_uint_lt(nr, max);
		e[nr].start = s;
		e[nr].end = le64_to_cpu(k->offset) << BFS_SECTOR_SHIFT;
		e[nr].chunk_start = s - ((u64)le32_to_cpu(v->chunk_offset) << BFS_SECTOR_SHIFT);
		e[nr].chunk_bytes = (u64)le32_to_cpu(v->chunk_sectors) << BFS_SECTOR_SHIFT;
		ck_assert_uint_eq(le32_to_cpu(v->stored_bytes), e[nr].chunk_bytes);
		nr++;
	}
	ck_assert_int_eq(ret, -ENOENT);
	bfs_btree_iter_exit(&it);
	return nr;
}

/* the key covering byte @off of the file */
static const struct ext *covering(const struct ext *e, unsigned nr, u64 off)
{
	unsigned i;

	for (i = 0; i < nr; i++)
		if (e[i].start <= off && off < e[i].end)
			return &e[i];
	ck_abort_msg("no extent covers byte %llu", (unsigned long long)off);
	return NULL;
}

#define MAX_EXT	4096

/*
 * A sequential 1 MiB write is cut into aligned chunks of the target; an
 * unaligned write starting mid-chunk gets a short first chunk up to the
 * next boundary; a small write gets a chunk of its own blocks only.
 */
static void check_cuts(u32 target)
{
	struct bfs_dev *dev = mkfs_chunk(target);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 seq = tu_mkfile(fs, "seq"), odd = tu_mkfile(fs, "odd"), size = 1 * MiB, off;
	u8 *model = bfs_zalloc(2 * MiB);
	struct ext *e = bfs_malloc(MAX_EXT * sizeof(*e));
	unsigned nr, i;

	ck_assert_ptr_nonnull(model);
	ck_assert_ptr_nonnull(e);
	put(fs, seq, model, size, 0, 1);
	nr = extents(fs, seq, e, MAX_EXT);
	ck_assert_uint_eq(nr, size / target);
	for (i = 0; i < nr; i++) {
		ck_assert_uint_eq(e[i].start, (u64)i * target);
		ck_assert_uint_eq(e[i].end, (u64)(i + 1) * target);
		ck_assert_uint_eq(e[i].chunk_start, e[i].start);
		ck_assert_uint_eq(e[i].chunk_bytes, target);
	}
	/* a 4 KiB read anywhere reads and verifies one chunk of the target */
	for (off = 0; off < size; off += 52 * KiB)
		ck_assert_uint_eq(covering(e, nr, off)->chunk_bytes, target);
	check_file(fs, seq, model, size);

	/* unaligned start and end: [6000, 6000 + 300000) */
	memset(model, 0, 2 * MiB);
	put(fs, odd, model, 300000, 6000, 2);
	nr = extents(fs, odd, e, MAX_EXT);
	ck_assert_uint_eq(e[0].start, 4096);
	ck_assert_uint_eq(e[0].end, BFS_MAX((u64)target, 8192));
	for (i = 0; i < nr; i++) {
		ck_assert_uint_le(e[i].chunk_bytes, target);
		if (i)
			ck_assert_uint_eq(e[i].start % target, 0);
		if (i + 1 < nr)
			ck_assert_uint_eq(e[i].end % target, 0);
	}
	ck_assert_uint_eq(e[nr - 1].end, BFS_ROUND_UP(306000, 4096));
	/* a small random write: a chunk of its blocks, whatever the target */
	put(fs, odd, model, 4096, 700 * KiB, 3);
	put(fs, odd, model, 100, 900 * KiB + 50, 4);
	nr = extents(fs, odd, e, MAX_EXT);
	ck_assert_uint_eq(covering(e, nr, 700 * KiB)->chunk_bytes, 4096);
	ck_assert_uint_eq(covering(e, nr, 900 * KiB)->chunk_bytes, 4096);
	check_file(fs, odd, model, 900 * KiB + 150);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(e);
	bfs_free(model);
	bfs_dev_close(dev);
}

START_TEST(test_writer_cuts)
{
	static const u32 targets[] = { 4 * KiB, 16 * KiB, 64 * KiB };

	check_cuts(targets[_i]);
}
END_TEST

/*
 * Overwrites inside and across small and large chunks (unaligned, partial
 * blocks, whole chunks) read back right, also after a reopen, and fsck
 * with data checks finds nothing.
 */
static void fsck_clean(struct bfs_dev *dev)
{
	struct bfs_fsck f = { .dev = dev, .mode = BFS_FSCK_MODE_NO, .check_data = true };
	int rc = bfs_fsck_run(&f);

	ck_assert_msg(rc == BFS_FSCK_OK, "fsck: exit %d, %u problems (%s)", rc, f.nr_problems,
		      tu_last_err);
	bfs_fsck_release(&f);
}

START_TEST(test_partial_overwrites)
{
	static const u32 targets[] = { 4 * KiB, 16 * KiB, 64 * KiB };
	struct bfs_dev *dev = mkfs_chunk(targets[_i]);
	struct bfs_fs *fs = tu_fs_open(dev);
	const u64 size = 768 * KiB;
	u8 *model = bfs_zalloc(size);
	u64 ino = tu_mkfile(fs, "f"), r = 0x9e3779b97f4a7c15ULL;
	unsigned i;

	ck_assert_ptr_nonnull(model);
	put(fs, ino, model, size, 0, 7);
	for (i = 0; i < 200; i++) {
		u64 len, off;

		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		switch (i % 4) {
		case 0:		/* a few bytes inside one block */
			len = 1 + r % 300;
			break;
		case 1:		/* a block, aligned */
			len = 4096;
			break;
		case 2:		/* across chunk boundaries, unaligned */
			len = 1 + (r >> 8) % (100 * KiB);
			break;
		default:	/* a whole target, aligned below */
			len = targets[_i];
			break;
		}
		off = (r >> 20) % (size - len);
		if (i % 4 == 1 || i % 4 == 3)
			off = BFS_ROUND_DOWN(off, i % 4 == 1 ? 4096 : targets[_i]);
		put(fs, ino, model, len, off, r);
		if (i % 40 == 0)
			check_file(fs, ino, model, size);
	}
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fsck_clean(dev);
	bfs_free(model);
	bfs_dev_close(dev);
}
END_TEST

/* as bfs set-option does it: change the on-disk superblock of a closed filesystem */
static void set_data_chunk(struct bfs_dev *dev, u32 bytes)
{
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];

	ck_assert_msg(!bfs_sb_read(dev, &h, err), "%s", err);
	ck_assert_int_eq(bfs_sb_set_data_chunk(h.sb, bytes, err), 0);
	ck_assert_int_eq(bfs_sb_write(dev, h.sb), 0);
	bfs_sb_handle_release(&h);
}

static u64 lookup(struct bfs_fs *fs, const char *name)
{
	struct bfs_stat st;

	ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, name, strlen(name), &st), 0);
	return st.ino;
}

/*
 * 64 KiB chunks, then set-option data_chunk=4K: data written before keeps
 * its chunks, new writes (new files and overwrites of old ones) get 4 KiB
 * chunks; everything reads back and fsck finds the mixed image clean.
 */
START_TEST(test_set_option_new_writes)
{
	struct bfs_dev *dev = mkfs_chunk(64 * KiB);
	struct bfs_fs *fs = tu_fs_open(dev);
	const u64 size = 512 * KiB;
	u8 *old = bfs_zalloc(size), *young = bfs_zalloc(size);
	struct ext *e = bfs_malloc(MAX_EXT * sizeof(*e));
	u64 a = tu_mkfile(fs, "a"), b;
	const struct ext *x;
	unsigned nr, i;

	ck_assert_ptr_nonnull(e);
	put(fs, a, old, size, 0, 11);
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	set_data_chunk(dev, 4 * KiB);
	fs = tu_fs_open(dev);
	a = lookup(fs, "a");
	nr = extents(fs, a, e, MAX_EXT);
	ck_assert_uint_eq(nr, size / (64 * KiB));
	for (i = 0; i < nr; i++)
		ck_assert_uint_eq(e[i].chunk_bytes, 64 * KiB);
	b = tu_mkfile(fs, "b");
	put(fs, b, young, size, 0, 12);
	nr = extents(fs, b, e, MAX_EXT);
	ck_assert_uint_eq(nr, size / (4 * KiB));
	for (i = 0; i < nr; i++)
		ck_assert_uint_eq(e[i].chunk_bytes, 4 * KiB);
	/* 20 KiB into the middle of an old chunk: new 4 KiB chunks there only */
	put(fs, a, old, 20 * KiB, 100 * KiB, 13);
	nr = extents(fs, a, e, MAX_EXT);
	for (i = 0; i < 5; i++) {
		x = covering(e, nr, 100 * KiB + i * 4 * KiB);
		ck_assert_uint_eq(x->chunk_bytes, 4 * KiB);
	}
	/* the trimmed old key before and after still points at its 64 KiB chunk */
	x = covering(e, nr, 96 * KiB);
	ck_assert_uint_eq(x->chunk_bytes, 64 * KiB);
	ck_assert_uint_eq(x->chunk_start, 64 * KiB);
	x = covering(e, nr, 120 * KiB);
	ck_assert_uint_eq(x->chunk_bytes, 64 * KiB);
	ck_assert_uint_eq(x->chunk_start, 64 * KiB);
	ck_assert_uint_eq(covering(e, nr, 300 * KiB)->chunk_bytes, 64 * KiB);
	check_file(fs, a, old, size);
	check_file(fs, b, young, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fsck_clean(dev);

	/* and back to 16 KiB: a third size in the same file */
	set_data_chunk(dev, 16 * KiB);
	fs = tu_fs_open(dev);
	a = lookup(fs, "a");
	put(fs, a, old, 64 * KiB, 256 * KiB, 14);
	nr = extents(fs, a, e, MAX_EXT);
	ck_assert_uint_eq(covering(e, nr, 256 * KiB)->chunk_bytes, 16 * KiB);
	check_file(fs, a, old, size);
	check_file(fs, lookup(fs, "b"), young, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fsck_clean(dev);
	bfs_free(e);
	bfs_free(old);
	bfs_free(young);
	bfs_dev_close(dev);
}
END_TEST

/* compressed small chunks: stored raw (nothing to save), still read back right */
START_TEST(test_zstd_small_chunks)
{
	struct bfs_format_opts o = {
		.block_size = 4096, .data_chunk = 16 * KiB,
		.compression_type = BFS_COMPRESSION_ZSTD,
	};
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	const u64 size = 256 * KiB;
	u8 *model = bfs_zalloc(size);
	struct ext *e = bfs_malloc(MAX_EXT * sizeof(*e));
	u64 ino, i;
	unsigned nr;

	tu_log_reset();
	ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &dev), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	fs = tu_fs_open(dev);
	ino = tu_mkfile(fs, "text");
	for (i = 0; i < size; i++)
		model[i] = "compressible text, over and over\n"[i % 33];
	ck_assert_int_eq(bfs_fs_write(fs, ino, model, size, 0), (ssize_t)size);
	put(fs, ino, model, 5000, 30000, 21);
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	nr = 0;
	{
		struct bfs_btree_iter it;
		const struct bfs_bkey *k;
		int ret;

		/* whole 16 KiB chunks of text compress (stored_bytes below chunk size) */
		bfs_btree_iter_init(&it, bfs_fs_core(fs), BFS_BTREE_EXTENTS, BFS_POS(ino, 0, 0), 0);
		for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
			const struct bfs_extent_v *v = (const void *)k->v;

			if (le64_to_cpu(k->inode) != ino)
				break;
			ck_assert_uint_le(le32_to_cpu(v->chunk_sectors), 16 * KiB >> BFS_SECTOR_SHIFT);
			nr += v->compression == BFS_COMPRESSION_ZSTD;
		}
		bfs_btree_iter_exit(&it);
	}
	ck_assert_uint_ge(nr, size / (16 * KiB) - 2);
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fsck_clean(dev);
	bfs_free(e);
	bfs_free(model);
	bfs_free(sb);
	bfs_dev_close(dev);
}
END_TEST

static Suite *chunk_policy_suite(void)
{
	Suite *s = suite_create("chunk_policy");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_policy_cuts);
	tcase_add_test(tc, test_sb_option);
	tcase_add_loop_test(tc, test_writer_cuts, 0, 3);
	tcase_add_loop_test(tc, test_partial_overwrites, 0, 3);
	tcase_add_test(tc, test_set_option_new_writes);
	tcase_add_test(tc, test_zstd_small_chunks);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(chunk_policy_suite)
