// SPDX-License-Identifier: MIT
/*
 * File data: read/write round trips against an in-memory model, holes,
 * a 1 TiB sparse file, truncate, punch hole / zero range / fallocate, a
 * random-operation tester (fsx-like) also on zstd with small buckets,
 * checksum mismatches and stale pointers, zstd, ENOSPC, fill/delete/refill
 * cycles, statfs, copy-GC, persistence, fsync durability, the replay space
 * hooks and concurrent writers (also with copy-GC under contention).
 *
 * BFS_FSX_OPS / BFS_FSX_SEED run the random tester longer or differently.
 */
#include "tu.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/dev.h>
#include <bfs/format.h>
#include <bfs/fs.h>
#include <bfs/log.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include "fs/fs_internal.h"	/* the core space hooks of the data layer */

static struct bfs_dev *mkfs(u64 size, u32 bucket, u32 node, u8 compression)
{
	tu_log_reset();
	/* "data: ..." warnings: accounting found wrong at open */
	tu_log_count_warnings("data:");
	return tu_mkfs_fs(size, node, bucket, compression);
}

static u64 lookup(struct bfs_fs *fs, const char *name)
{
	struct bfs_stat st;

	ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, name, strlen(name), &st), 0);
	return st.ino;
}

static struct bfs_stat getattr(struct bfs_fs *fs, u64 ino)
{
	struct bfs_stat st;

	ck_assert_int_eq(bfs_fs_getattr(fs, ino, &st), 0);
	return st;
}

static void set_size(struct bfs_fs *fs, u64 ino, u64 size)
{
	struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = size };
	struct bfs_stat st;

	ck_assert_int_eq(bfs_fs_setattr(fs, ino, &sa, &st), 0);
	ck_assert_uint_eq(st.size, size);
}

static u64 rnd_state = 88172645463325252ULL;
static u64 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void write_all(struct bfs_fs *fs, u64 ino, const void *buf, size_t len, u64 off)
{
	ssize_t n = bfs_fs_write(fs, ino, buf, len, off);

	ck_assert_msg(n == (ssize_t)len, "write %zu at %llu: %zd (%s)", len,
		      (unsigned long long)off, n, tu_last_err);
}

/* the whole file equals @model[0, size) */
static void check_file(struct bfs_fs *fs, u64 ino, const u8 *model, u64 size)
{
	u8 *buf = bfs_malloc(size + 8192);
	ssize_t n;
	u64 i;

	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(getattr(fs, ino).size, size);
	n = bfs_fs_read(fs, ino, buf, size + 8192, 0);
	ck_assert_msg(n == (ssize_t)size, "read %zd, size %llu (%s)", n, (unsigned long long)size,
		      tu_last_err);
	for (i = 0; i < size; i++)
		if (buf[i] != model[i])
			ck_abort_msg("byte %llu: %02x, expected %02x", (unsigned long long)i, buf[i],
				     model[i]);
	bfs_free(buf);
}

/* ---- round trips ---- */

START_TEST(test_roundtrip)
{
	struct bfs_dev *dev = mkfs(128 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	const u64 max = 1 * MiB;
	u8 *model = bfs_zalloc(max), *buf = bfs_malloc(max);
	u64 ino = tu_mkfile(fs, "f"), size = 0;
	unsigned i;

	ck_assert_ptr_nonnull(model);
	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < 300; i++) {
		u64 off, len;

		switch (rnd() % 4) {
		case 0:	/* small, unaligned */
			len = 1 + rnd() % 9000;
			break;
		case 1:	/* block aligned */
			len = 4096 * (1 + rnd() % 20);
			break;
		case 2:	/* spanning several chunks */
			len = 1 + rnd() % (300 * KiB);
			break;
		default:
			len = 1 + rnd() % 512;
			break;
		}
		off = rnd() % (max - len);
		if (rnd() % 3 == 0)
			off = BFS_ROUND_DOWN(off, 4096);
		if (rnd() % 8 == 0)
			off = size < max - len ? size : off;	/* append */
		tu_fill_random(buf, len, rnd());
		write_all(fs, ino, buf, len, off);
		memcpy(model + off, buf, len);
		size = BFS_MAX(size, off + len);
		if (i % 50 == 0)
			check_file(fs, ino, model, size);
		/* a random read of a random range */
		{
			u64 ro = rnd() % size, rl = 1 + rnd() % (size - ro);
			ssize_t n = bfs_fs_read(fs, ino, buf, rl, ro);

			ck_assert_int_eq(n, (ssize_t)rl);
			ck_assert(!memcmp(buf, model + ro, rl));
		}
	}
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	check_file(fs, lookup(fs, "f"), model, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(model);
	bfs_free(buf);
	bfs_dev_close(dev);
}
END_TEST

/*
 * Small reads: one chunk per read lands in the thread's kept buffer
 * (data_io.c), a read of more chunks than the plan holds inline moves its
 * pieces to the heap (data_read.c).  From threads that exit (their kept
 * buffers freed: ASan's leak check) and on zstd too (a decompressed chunk is
 * the caller's, the kept compressed one is not).
 */
struct small_reader {
	struct bfs_fs *fs;
	u64	ino, size, seed;
	const u8 *model;
	unsigned bad;
};

static void *small_reads(void *arg)
{
	struct small_reader *r = arg;
	u8 *buf = bfs_malloc(64 * KiB);
	u64 st = r->seed;
	unsigned i;

	if (!buf) {
		r->bad++;
		return NULL;
	}
	for (i = 0; i < 400; i++) {
		u64 len, off;
		ssize_t n;

		st ^= st << 13;
		st ^= st >> 7;
		st ^= st << 17;
		/* within one chunk, across two, or a whole aligned one */
		len = i % 3 == 2 ? 16 * KiB : 1 + st % (i % 3 ? 40 * KiB : 4 * KiB);
		off = (st >> 20) % (r->size - len);
		if (i % 3 == 2)
			off = BFS_ROUND_DOWN(off, 16 * KiB);
		n = bfs_fs_read(r->fs, r->ino, buf, len, off);
		if (n != (ssize_t)len || memcmp(buf, r->model + off, len))
			r->bad++;
	}
	bfs_free(buf);
	return NULL;
}

static void small_reads_on(u8 compression)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, compression);
	struct bfs_fs *fs = tu_fs_open(dev);
	const u64 size = 2 * MiB;
	u8 *model = bfs_malloc(size), *buf = bfs_malloc(size);
	struct small_reader r[4];
	pthread_t t[4];
	u64 ino = tu_mkfile(fs, "f");
	unsigned i, round;

	ck_assert_ptr_nonnull(model);
	ck_assert_ptr_nonnull(buf);
	tu_fill_random(model, size, 7);
	if (compression != BFS_COMPRESSION_NONE)
		for (i = 0; i < size; i++)
			model[i] &= 0x0f;	/* compressible, and compressed */
	write_all(fs, ino, model, size, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);	/* on the device, nothing buffered */
	fs = tu_fs_open(dev);
	for (round = 0; round < 2; round++) {	/* the second round: fresh threads */
		for (i = 0; i < 4; i++) {
			r[i] = (struct small_reader){ .fs = fs, .ino = ino, .size = size,
						      .seed = 1 + i + 10 * round, .model = model };
			ck_assert_int_eq(pthread_create(&t[i], NULL, small_reads, &r[i]), 0);
		}
		for (i = 0; i < 4; i++) {
			ck_assert_int_eq(pthread_join(t[i], NULL), 0);
			ck_assert_uint_eq(r[i].bad, 0);
		}
	}
	/* unaligned, 64 and more chunks: past the inline pieces, grown twice and more */
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf, size - 5000, 1234), (ssize_t)(size - 5000));
	ck_assert(!memcmp(buf, model + 1234, size - 5000));
	/* and this thread's small reads between the long ones */
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf, 100, 20000), 100);
	ck_assert(!memcmp(buf, model + 20000, 100));
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf, 300 * KiB, 7), (ssize_t)(300 * KiB));
	ck_assert(!memcmp(buf, model + 7, 300 * KiB));
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(model);
	bfs_free(buf);
	bfs_dev_close(dev);
}

START_TEST(test_small_reads_kept)
{
	small_reads_on(BFS_COMPRESSION_NONE);
	small_reads_on(BFS_COMPRESSION_ZSTD);
}
END_TEST

START_TEST(test_sparse)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 ino = tu_mkfile(fs, "sparse"), big = 1 * TiB;
	u8 buf[8192], zero[8192] = { 0 };
	struct bfs_stat st;

	tu_fill_random(buf, sizeof(buf), 7);
	write_all(fs, ino, buf, 4096, big - 4096);
	write_all(fs, ino, buf, 100, 1 * MiB + 3);
	st = getattr(fs, ino);
	ck_assert_uint_eq(st.size, big);
	ck_assert_uint_le(st.blocks, 64);
	memset(buf + 4096, 0xaa, 4096);
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf + 4096, 4096, 0), 4096);
	ck_assert(!memcmp(buf + 4096, zero, 4096));
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf + 4096, 4096, big / 2 + 12345), 4096);
	ck_assert(!memcmp(buf + 4096, zero, 4096));
	/* the tail of the written block after the 100 bytes, and the head before */
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf + 4096, 4096, 1 * MiB), 4096);
	ck_assert(!memcmp(buf + 4096, zero, 3));
	ck_assert(!memcmp(buf + 4096 + 3, buf, 100));
	ck_assert(!memcmp(buf + 4096 + 103, zero, 4096 - 103));
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf + 4096, 8192, big - 4096), 4096);
	ck_assert(!memcmp(buf + 4096, buf, 4096));
	ck_assert_int_eq(bfs_fs_read(fs, ino, buf, 10, big), 0);
	/* truncate the TiB file down: space comes back, the head is intact */
	set_size(fs, ino, 2 * MiB);
	ck_assert_uint_le(getattr(fs, ino).blocks, 8);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_truncate)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 ino = tu_mkfile(fs, "t"), size = 200 * KiB + 77;
	u8 *model = bfs_zalloc(MiB);

	tu_fill_random(model, size, 3);
	write_all(fs, ino, model, size, 0);
	check_file(fs, ino, model, size);

	set_size(fs, ino, 100000);			/* unaligned: tail of its block zeroed */
	memset(model + 100000, 0, MiB - 100000);
	check_file(fs, ino, model, 100000);
	set_size(fs, ino, 300000);			/* up: a hole */
	check_file(fs, ino, model, 300000);
	set_size(fs, ino, 65536);			/* aligned */
	memset(model + 65536, 0, MiB - 65536);
	check_file(fs, ino, model, 65536);
	set_size(fs, ino, 65536 + 4096 * 3 + 5);
	check_file(fs, ino, model, 65536 + 4096 * 3 + 5);
	set_size(fs, ino, 0);
	ck_assert_uint_eq(getattr(fs, ino).blocks, 0);
	write_all(fs, ino, model, 5000, 10);
	memmove(model + 10, model, 5000);
	memset(model, 0, 10);
	check_file(fs, ino, model, 5010);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	check_file(fs, ino, model, 5010);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(model);
	bfs_dev_close(dev);
}
END_TEST

struct map_ctx {
	unsigned nr, unwritten, compressed;
	u64 first_physical, bytes;
};

static int map_fn(void *ctx, const struct bfs_fs_extent *e)
{
	struct map_ctx *m = ctx;

	if (!m->nr)
		m->first_physical = e->physical;
	m->nr++;
	m->bytes += e->len;
	m->unwritten += !!(e->flags & BFS_EXTENT_UNWRITTEN);
	m->compressed += !!(e->flags & BFS_EXTENT_COMPRESSED);
	return 0;
}

START_TEST(test_fallocate)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 ino = tu_mkfile(fs, "fa"), size = 512 * KiB;
	u8 *model = bfs_zalloc(2 * MiB);
	struct map_ctx m = { 0 };

	tu_fill_random(model, size, 5);
	write_all(fs, ino, model, size, 0);
	/* punch: unaligned edges zeroed, size kept */
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_PUNCH_HOLE, 1000, 1000), -EOPNOTSUPP);
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_KEEP_SIZE,
					  10000, 100000), 0);
	memset(model + 10000, 0, 100000);
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_PUNCH_HOLE | BFS_FALLOC_KEEP_SIZE,
					  200001, 10), 0);
	memset(model + 200001, 0, 10);
	check_file(fs, ino, model, size);
	/* zero range, extending the file */
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_ZERO_RANGE, 300000, 400000), 0);
	memset(model + 300000, 0, 400000);
	size = 700000;
	check_file(fs, ino, model, size);
	/* zero range with KEEP_SIZE beyond the end keeps the size */
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_ZERO_RANGE | BFS_FALLOC_KEEP_SIZE,
					  600000, 400000), 0);
	memset(model + 600000, 0, 100000);
	check_file(fs, ino, model, size);
	/* plain fallocate: unwritten extents over holes, size grows, reads zeros */
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, 0, 0, 1 * MiB + 100), 0);
	size = 1 * MiB + 100;
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_map(fs, ino, map_fn, &m), 0);
	ck_assert_uint_gt(m.unwritten, 0);
	ck_assert_uint_ge(getattr(fs, ino).blocks * 512, size - 4096);
	/* writes into an unwritten extent */
	tu_fill_random(model + 800000, 5000, 9);
	write_all(fs, ino, model + 800000, 5000, 800000);
	check_file(fs, ino, model, size);
	/* KEEP_SIZE beyond the end: blocks allocated, size unchanged, truncate drops them */
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_KEEP_SIZE, 4 * MiB, MiB), 0);
	ck_assert_uint_eq(getattr(fs, ino).size, size);
	set_size(fs, ino, size);
	ck_assert_uint_le(getattr(fs, ino).blocks * 512, BFS_ROUND_UP(size, 4096));
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, 0, 0, 1 * TiB * 1024), -ENOSPC);
	/* already allocated: needs no space, however full the filesystem */
	ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_KEEP_SIZE, 0, size), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(model);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_checksum)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 ino = tu_mkfile(fs, "c");
	u8 buf[3 * 65536], out[3 * 65536];
	struct map_ctx m = { 0 };
	unsigned errs;

	tu_fill_random(buf, sizeof(buf), 11);
	write_all(fs, ino, buf, sizeof(buf), 0);
	ck_assert_int_eq(bfs_fs_map(fs, ino, map_fn, &m), 0);
	/* format's default chunk size */
	ck_assert_uint_eq(m.nr, sizeof(buf) / BFS_DATA_CHUNK_DEFAULT);
	ck_assert_uint_gt(m.first_physical, 0);
	/* flip one byte of the first chunk (and block) on the device */
	bfs_dev_mem(dev)[m.first_physical + 3000] ^= 0x40;
	errs = tu_nr_errs;
	ck_assert_int_eq(bfs_fs_read(fs, ino, out, 4096, 0), -EIO);
	ck_assert_uint_gt(tu_nr_errs, errs);
	ck_assert_msg(strstr(tu_last_err, "checksum") && strstr(tu_last_err, "inode"), "%s", tu_last_err);
	ck_assert_int_eq(bfs_fs_read(fs, ino, out, sizeof(out), 0), -EIO);
	/* the other chunks still read fine */
	ck_assert_int_eq(bfs_fs_read(fs, ino, out, 65536, 65536), 65536);
	ck_assert(!memcmp(out, buf + 65536, 65536));
	/* overwriting the damaged range makes it readable again */
	write_all(fs, ino, buf, 65536, 0);
	ck_assert_int_eq(bfs_fs_read(fs, ino, out, sizeof(out), 0), (ssize_t)sizeof(out));
	ck_assert(!memcmp(out, buf, sizeof(out)));
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* an extent whose generation does not match its bucket's is a stale pointer: -EIO */
START_TEST(test_stale_pointer)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 a = tu_mkfile(fs, "a"), b = tu_mkfile(fs, "b"), kbuf[32];
	struct bfs_bkey *k = (struct bfs_bkey *)kbuf;
	struct bfs_extent_v *v = (struct bfs_extent_v *)k->v;
	u8 buf[65536], out[65536];

	tu_fill_random(buf, sizeof(buf), 41);
	write_all(fs, a, buf, sizeof(buf), 0);
	/* file b gets a copy of a's extent key, with the wrong generation */
	ck_assert_int_eq(bfs_btree_lookup(bfs_fs_core(fs), BFS_BTREE_EXTENTS,
					  BFS_POS(a, 0, 0), kbuf, sizeof(kbuf)), 0);
	ck_assert_int_eq(k->type, BFS_KEY_EXTENT);
	v->gen = cpu_to_le32(le32_to_cpu(v->gen) + 1);
	bfs_bkey_set_pos(k, BFS_POS(b, le64_to_cpu(k->offset), 0));
	ck_assert_int_eq(bfs_btree_insert(bfs_fs_core(fs), BFS_BTREE_EXTENTS, k), 0);
	set_size(fs, b, sizeof(buf));
	ck_assert_int_eq(bfs_fs_read(fs, b, out, sizeof(out), 0), -EIO);
	ck_assert_msg(strstr(tu_last_err, "stale"), "%s", tu_last_err);
	/* a's own pointer is fine */
	ck_assert_int_eq(bfs_fs_read(fs, a, out, sizeof(out), 0), (ssize_t)sizeof(out));
	ck_assert(!memcmp(buf, out, sizeof(out)));
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

static u64 free_bytes(struct bfs_fs *fs)
{
	struct bfs_statfs s;

	ck_assert_int_eq(bfs_fs_statfs(fs, &s), 0);
	return s.bfree * s.bsize;
}

START_TEST(test_zstd)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_ZSTD);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 a = tu_mkfile(fs, "text"), b = tu_mkfile(fs, "random"), f0, f1, f2;
	size_t len = 4 * MiB, i;
	u8 *text = bfs_malloc(len), *rnd_buf = bfs_malloc(MiB);
	struct map_ctx m = { 0 };

	for (i = 0; i < len; i++)
		text[i] = "the quick brown fox jumps over the lazy dog\n"[i % 44];
	tu_fill_random(rnd_buf, MiB, 13);
	f0 = free_bytes(fs);
	write_all(fs, a, text, len, 0);
	f1 = free_bytes(fs);
	ck_assert_msg(f0 - f1 < len / 4, "compressible 4 MiB took %llu bytes",
		      (unsigned long long)(f0 - f1));
	ck_assert_int_eq(bfs_fs_map(fs, a, map_fn, &m), 0);
	ck_assert_uint_eq(m.compressed, m.nr);
	write_all(fs, b, rnd_buf, MiB, 0);
	f2 = free_bytes(fs);
	ck_assert_uint_ge(f1 - f2, MiB);
	memset(&m, 0, sizeof(m));
	ck_assert_int_eq(bfs_fs_map(fs, b, map_fn, &m), 0);
	ck_assert_uint_eq(m.compressed, 0);
	/* overwrite the middle of a compressed extent, then read everything */
	memcpy(text + 100000, rnd_buf, 5000);
	write_all(fs, a, rnd_buf, 5000, 100000);
	check_file(fs, a, text, len);
	check_file(fs, b, rnd_buf, MiB);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	check_file(fs, a, text, len);
	check_file(fs, b, rnd_buf, MiB);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(text);
	bfs_free(rnd_buf);
	bfs_dev_close(dev);
}
END_TEST

/* write 1 MiB files until ENOSPC; returns how many were written completely */
static unsigned fill(struct bfs_fs *fs, const char *prefix, u8 *buf, u64 *bytes)
{
	unsigned n;

	*bytes = 0;
	for (n = 0;; n++) {
		char name[64];
		u64 ino;
		ssize_t w;
		struct bfs_creds cr = { 0, 0 };
		struct bfs_stat st;
		int ret;

		snprintf(name, sizeof(name), "%s%u", prefix, n);
		ret = bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name), S_IFREG | 0644, 0, &cr, &st);
		if (ret == -ENOSPC)
			return n;
		ck_assert_int_eq(ret, 0);
		ino = st.ino;
		tu_fill_random(buf, MiB, n);
		w = bfs_fs_write(fs, ino, buf, MiB, 0);
		if (w > 0)
			*bytes += (u64)w;
		if (w != (ssize_t)MiB) {
			ck_assert_msg(w == -ENOSPC || (w >= 0 && w < (ssize_t)MiB), "write: %zd", w);
			ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, name, strlen(name)), 0);
			return n;
		}
	}
}

static void verify_files(struct bfs_fs *fs, const char *prefix, unsigned nr, u8 *buf, u8 *model)
{
	unsigned n;

	for (n = 0; n < nr; n++) {
		char name[64];

		snprintf(name, sizeof(name), "%s%u", prefix, n);
		tu_fill_random(model, MiB, n);
		ck_assert_int_eq(bfs_fs_read(fs, lookup(fs, name), buf, MiB, 0), (ssize_t)MiB);
		ck_assert_msg(!memcmp(buf, model, MiB), "file %s differs", name);
	}
}

START_TEST(test_enospc_cycles)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 256 * KiB, 64 * KiB, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u8 *buf = bfs_malloc(MiB), *model = bfs_malloc(MiB);
	u64 f_empty = free_bytes(fs), bytes, first = 0;
	unsigned round, nr, n;

	for (round = 0; round < 3; round++) {
		nr = fill(fs, "f", buf, &bytes);
		ck_assert_uint_gt(nr, 20);
		if (!round)
			first = bytes;
		ck_assert_msg(bytes + 2 * MiB >= first, "round %u: %llu bytes, first %llu", round,
			      (unsigned long long)bytes, (unsigned long long)first);
		/* statfs told the truth: about what it said was free could be written */
		ck_assert_msg(bytes + 4 * MiB >= f_empty, "round %u: %llu bytes written, %llu free",
			      round, (unsigned long long)bytes, (unsigned long long)f_empty);
		ck_assert_msg(free_bytes(fs) < 4 * MiB, "round %u: %llu free after %u files",
			      round, (unsigned long long)free_bytes(fs), nr);
		/* nothing written before ENOSPC is damaged, also after a reopen */
		verify_files(fs, "f", nr, buf, model);
		ck_assert_int_eq(bfs_fs_close(fs), 0);
		fs = tu_fs_open(dev);
		verify_files(fs, "f", nr, buf, model);
		for (n = 0; n < nr; n++) {
			char name[64];

			struct bfs_core_stats cs;
			int ret;

			snprintf(name, sizeof(name), "f%u", n);
			ret = bfs_fs_unlink(fs, BFS_ROOT_INO, name, strlen(name));
			bfs_core_get_stats(bfs_fs_core(fs), &cs);
			ck_assert_msg(!ret, "unlink %s: %d, slots %llu used of %llu", name, ret,
				      (unsigned long long)cs.meta_slots_used,
				      (unsigned long long)cs.meta_slots_total);
		}
		ck_assert_msg(free_bytes(fs) + 2 * MiB >= f_empty, "free %llu, empty %llu",
			      (unsigned long long)free_bytes(fs), (unsigned long long)f_empty);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(buf);
	bfs_free(model);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_space_accounting)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u8 *buf = bfs_malloc(4 * MiB);
	u64 f0, f1, f2, ino = tu_mkfile(fs, "s");

	tu_fill_random(buf, 4 * MiB, 1);
	f0 = free_bytes(fs);
	write_all(fs, ino, buf, 4 * MiB, 0);
	f1 = free_bytes(fs);
	ck_assert_uint_ge(f0 - f1, 4 * MiB);
	ck_assert_uint_le(f0 - f1, 6 * MiB);
	ck_assert_uint_eq(getattr(fs, ino).blocks, 4 * MiB / 512);
	/* overwriting in place many times does not leak */
	for (int i = 0; i < 10; i++)
		write_all(fs, ino, buf, 4 * MiB, 0);
	ck_assert_uint_eq(getattr(fs, ino).blocks, 4 * MiB / 512);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, "s", 1), 0);
	f2 = free_bytes(fs);
	ck_assert_msg(f2 + MiB >= f0, "free after delete %llu, before %llu",
		      (unsigned long long)f2, (unsigned long long)f0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(buf);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_fsync_durable)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev), *fs2;
	struct bfs_dev *clone;
	u8 buf[100000], out[100000];
	u64 ino = tu_mkfile(fs, "d");

	tu_fill_random(buf, sizeof(buf), 21);
	write_all(fs, ino, buf, sizeof(buf), 12345);
	ck_assert_int_eq(bfs_fs_fsync(fs, ino, false), 0);
	ck_assert_int_eq(bfs_fs_fsync(fs, BFS_ROOT_INO, false), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &clone), 0);
	fs2 = tu_fs_open(clone);
	ino = lookup(fs2, "d");
	ck_assert_uint_eq(getattr(fs2, ino).size, sizeof(buf) + 12345);
	ck_assert_int_eq(bfs_fs_read(fs2, ino, out, sizeof(out), 12345), (ssize_t)sizeof(out));
	ck_assert(!memcmp(buf, out, sizeof(out)));
	ck_assert_int_eq(bfs_fs_close(fs2), 0);
	bfs_dev_close(clone);
	/* fdatasync after an overwrite */
	tu_fill_random(buf, 5000, 22);
	write_all(fs, lookup(fs, "d"), buf, 5000, 12345);
	ck_assert_int_eq(bfs_fs_fsync(fs, lookup(fs, "d"), true), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &clone), 0);
	fs2 = tu_fs_open(clone);
	ck_assert_int_eq(bfs_fs_read(fs2, lookup(fs2, "d"), out, sizeof(out), 12345),
			 (ssize_t)sizeof(out));
	ck_assert(!memcmp(buf, out, sizeof(out)));
	ck_assert_int_eq(bfs_fs_close(fs2), 0);
	bfs_dev_close(clone);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* small random overwrites leave buckets partly dead: copy-GC must reclaim them */
START_TEST(test_copygc)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 256 * KiB, 64 * KiB, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	u64 f0 = free_bytes(fs), ino = tu_mkfile(fs, "g");
	u64 size = BFS_ROUND_DOWN(f0 / 2, 64 * KiB), written = 0;
	u64 total = 2 * free_bytes(fs);
	u8 *model = bfs_malloc(size), blk[4096];
	unsigned i = 0;

	tu_fill_random(model, size, 31);
	write_all(fs, ino, model, size, 0);
	while (written < total) {
		u64 off = (rnd() % (size / 4096)) * 4096;

		tu_fill_random(blk, sizeof(blk), i++);
		write_all(fs, ino, blk, sizeof(blk), off);
		memcpy(model + off, blk, sizeof(blk));
		written += sizeof(blk);
	}
	check_file(fs, ino, model, size);
	ck_assert_uint_eq(getattr(fs, ino).blocks, size / 512);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	check_file(fs, ino, model, size);
	/*
	 * Thousands of extents in many buckets: unlink gives the space back
	 * (less what the metadata reserve grew by: the extents btree got deeper)
	 */
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, "g", 1), 0);
	ck_assert_uint_ge(free_bytes(fs) + 4 * MiB, f0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	ck_assert_uint_ge(free_bytes(fs) + 4 * MiB, f0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(model);
	bfs_dev_close(dev);
}
END_TEST

/* random operations on one file against a model, reopening now and then */
/* runs of repeated bytes: zstd compresses them, a little */
static void fill_runs(u8 *p, size_t n, u64 seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (i % 64 == 0)
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		p[i] = (u8)(seed >> (56 - (i % 64 / 16) * 8));
	}
}

static int count_compressed(void *ctx, const struct bfs_fs_extent *e)
{
	*(unsigned *)ctx += !!(e->flags & BFS_EXTENT_COMPRESSED);
	return 0;
}

static void fsx(struct bfs_dev *dev, unsigned ops, u64 max, bool compressible)
{
	struct bfs_fs *fs = tu_fs_open(dev);
	u8 *model = bfs_zalloc(max), *buf = bfs_malloc(max);
	u64 ino = tu_mkfile(fs, "fsx"), size = 0;
	unsigned i;

	if (getenv("BFS_FSX_OPS"))
		ops = (unsigned)atoi(getenv("BFS_FSX_OPS"));
	if (getenv("BFS_FSX_SEED"))
		rnd_state = (u64)atoll(getenv("BFS_FSX_SEED"));
	for (i = 0; i < ops; i++) {
		u64 off = rnd() % max, len = 1 + rnd() % (max - off);
		unsigned op = rnd() % 16;

		if (rnd() % 2)
			len = 1 + rnd() % BFS_MIN(len, 20000);
		if (op < 6) {				/* write */
			if (compressible)
				fill_runs(buf, len, rnd());
			else
				tu_fill_random(buf, len, rnd());
			write_all(fs, ino, buf, len, off);
			memcpy(model + off, buf, len);
			size = BFS_MAX(size, off + len);
		} else if (op < 8) {			/* truncate */
			if (off < size)
				memset(model + off, 0, size - off);
			size = off;
			set_size(fs, ino, size);
		} else if (op < 10) {			/* punch */
			ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_PUNCH_HOLE |
							  BFS_FALLOC_KEEP_SIZE, off, len), 0);
			if (off < size)
				memset(model + off, 0, BFS_MIN(off + len, size) - off);
		} else if (op < 12) {			/* zero range */
			bool keep = rnd() % 2;

			ck_assert_int_eq(bfs_fs_fallocate(fs, ino, BFS_FALLOC_ZERO_RANGE |
							  (keep ? BFS_FALLOC_KEEP_SIZE : 0), off, len), 0);
			if (off < size)
				memset(model + off, 0, BFS_MIN(off + len, size) - off);
			if (!keep)
				size = BFS_MAX(size, off + len);
		} else if (op < 13) {			/* fallocate */
			bool keep = rnd() % 2;

			ck_assert_int_eq(bfs_fs_fallocate(fs, ino, keep ? BFS_FALLOC_KEEP_SIZE : 0,
							  off, len), 0);
			if (!keep)
				size = BFS_MAX(size, off + len);
		} else if (op < 15) {			/* read a range */
			ssize_t n = bfs_fs_read(fs, ino, buf, len, off);
			u64 want = off >= size ? 0 : BFS_MIN(len, size - off);

			ck_assert_int_eq(n, (ssize_t)want);
			ck_assert_msg(!memcmp(buf, model + off, want), "op %u: read %llu+%llu differs",
				      i, (unsigned long long)off, (unsigned long long)len);
		} else {				/* reopen */
			ck_assert_int_eq(bfs_fs_close(fs), 0);
			fs = tu_fs_open(dev);
		}
		if (i % 64 == 0)
			check_file(fs, ino, model, size);
	}
	check_file(fs, ino, model, size);
	if (compressible) {
		unsigned nr = 0;

		ck_assert_int_eq(bfs_fs_map(fs, ino, count_compressed, &nr), 0);
		ck_assert_uint_gt(nr, 0);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	check_file(fs, ino, model, size);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_free(model);
	bfs_free(buf);
}

START_TEST(test_fsx)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 0, 0, BFS_COMPRESSION_NONE);

	fsx(dev, 600, 2 * MiB, false);
	bfs_dev_close(dev);
}
END_TEST

/* compressed chunks, and buckets smaller than the largest chunk */
START_TEST(test_fsx_zstd_small_buckets)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 32 * KiB, 4 * KiB, BFS_COMPRESSION_ZSTD);

	fsx(dev, 600, 1 * MiB, true);
	bfs_dev_close(dev);
}
END_TEST

/*
 * The same on an image file opened with BFS_DEV_DIRECT_TRY: O_DIRECT where
 * the test filesystem allows it, so unaligned caller buffers are bounced and
 * unaligned device I/O goes to the buffered twin; plain and compressed data.
 */
START_TEST(test_fsx_direct_image)
{
	char *path = bfs_unit_tmpfile("fsx-direct");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), probe;
	struct bfs_dev *dev;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 64 * MiB), 0);
	close(fd);
	probe = open(path, O_RDONLY | O_DIRECT);
	if (probe >= 0)
		close(probe);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL | BFS_DEV_DIRECT_TRY, &dev), 0);
	ck_assert(bfs_dev_is_direct(dev) == (probe >= 0));
	tu_log_reset();
	tu_log_count_warnings("data:");
	tu_format_fs(dev, 64 * MiB, 0, 0, _i ? BFS_COMPRESSION_ZSTD : BFS_COMPRESSION_NONE);
	fsx(dev, 300, 2 * MiB, _i);
	bfs_dev_close(dev);
	unlink(path);
	free(path);
}
END_TEST

/*
 * After a crash, replay may allocate btree nodes: the data layer's core
 * hooks must have taken the buckets holding file data away from the
 * metadata allocator before that.
 */
START_TEST(test_replay_space_hooks)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 256 * KiB, 64 * KiB, BFS_COMPRESSION_NONE);
	struct bfs_fs *fs = tu_fs_open(dev);
	struct bfs_core_opts co = {
		.space_init = bfs_fs_data_space_init,
		.space_replay_key = bfs_fs_data_space_replay_key,
	};
	struct bfs_core_stats with, without;
	struct bfs_dev *clone;
	struct bfs_core *c;
	struct bfs_fs fake;
	u8 *buf = bfs_malloc(8 * MiB);
	u64 ino = tu_mkfile(fs, "big");

	tu_fill_random(buf, 8 * MiB, 51);
	write_all(fs, ino, buf, 8 * MiB, 0);
	ck_assert_int_eq(bfs_fs_fsync(fs, ino, false), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &clone), 0);	/* a crash: replay needed */

	memset(&fake, 0, sizeof(fake));
	co.space_ctx = &fake;
	ck_assert_int_eq(bfs_core_open(clone, &co, &c), 0);
	ck_assert_ptr_nonnull(fake.data);
	bfs_core_get_stats(c, &with);
	bfs_fs_data_exit(&fake);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(clone);

	ck_assert_int_eq(bfs_dev_clone_mem(dev, &clone), 0);
	ck_assert_int_eq(bfs_core_open(clone, NULL, &c), 0);
	bfs_core_get_stats(c, &without);
	ck_assert_int_eq(bfs_core_close(c), 0);
	bfs_dev_close(clone);
	/* 8 MiB of data is 128 slots of 64 KiB that only the hooks know about */
	ck_assert_msg(with.meta_slots_used >= without.meta_slots_used + 128,
		      "used with hooks %llu, without %llu",
		      (unsigned long long)with.meta_slots_used,
		      (unsigned long long)without.meta_slots_used);

	/* and the filesystem itself opens after the crash with everything intact */
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &clone), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(clone);
	check_file(fs, lookup(fs, "big"), buf, 8 * MiB);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(clone);
	bfs_dev_close(dev);
	bfs_free(buf);
}
END_TEST

struct writer {
	struct bfs_fs *fs;
	u64 ino;
	u8 *model;
	u64 size, max, volume, max_len;
	bool truncates;
	u64 seed;
	int err;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	u8 *buf = bfs_malloc(64 * KiB);
	u64 written = 0;

	while (written < w->volume) {
		u64 len, off;
		ssize_t n;

		w->seed = w->seed * 6364136223846793005ULL + 1;
		len = 1 + (w->seed >> 33) % w->max_len;
		off = (w->seed >> 13) % (w->max - len);
		if (w->truncates && (w->seed >> 7) % 32 == 0) {
			/* now and then a truncate */
			struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = off };
			struct bfs_stat st;

			w->err = bfs_fs_setattr(w->fs, w->ino, &sa, &st);
			if (w->err)
				break;
			if (off < w->size)
				memset(w->model + off, 0, w->size - off);
			w->size = off;
			continue;
		}
		tu_fill_random(buf, len, w->seed);
		n = bfs_fs_write(w->fs, w->ino, buf, len, off);
		if (n != (ssize_t)len) {
			w->err = n < 0 ? (int)n : -EIO;
			break;
		}
		memcpy(w->model + off, buf, len);
		w->size = BFS_MAX(w->size, off + len);
		written += len;
	}
	bfs_free(buf);
	return NULL;
}

static void run_writers(struct bfs_dev *dev, unsigned nr, u64 max, u64 volume, u64 max_len,
			bool truncates)
{
	struct bfs_fs *fs = tu_fs_open(dev);
	struct writer w[8];
	bfs_thread th[8];
	unsigned i;

	for (i = 0; i < nr; i++) {
		char name[16];

		snprintf(name, sizeof(name), "w%u", i);
		w[i] = (struct writer){ .fs = fs, .ino = tu_mkfile(fs, name), .max = max,
					.volume = volume, .max_len = max_len,
					.truncates = truncates, .model = bfs_zalloc(max),
					.seed = i + 1 };
		ck_assert_int_eq(bfs_thread_create(&th[i], writer_fn, &w[i]), 0);
	}
	for (i = 0; i < nr; i++)
		bfs_thread_join(th[i]);
	for (i = 0; i < nr; i++) {
		ck_assert_msg(!w[i].err, "writer %u: %d (%s)", i, w[i].err, tu_last_err);
		check_file(fs, w[i].ino, w[i].model, w[i].size);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	fs = tu_fs_open(dev);
	for (i = 0; i < nr; i++) {
		check_file(fs, w[i].ino, w[i].model, w[i].size);
		bfs_free(w[i].model);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
}

START_TEST(test_threads)
{
	struct bfs_dev *dev = mkfs(128 * MiB, 0, 0, BFS_COMPRESSION_NONE);

	run_writers(dev, 4, 512 * KiB, 4 * MiB, 64 * KiB, true);
	bfs_dev_close(dev);
}
END_TEST

/* concurrent writers overwriting far more than the free space: copy-GC under contention */
START_TEST(test_threads_gc)
{
	struct bfs_dev *dev = mkfs(64 * MiB, 256 * KiB, 64 * KiB, BFS_COMPRESSION_NONE);

	run_writers(dev, 4, 7 * MiB, 16 * MiB, 8 * KiB, false);
	bfs_dev_close(dev);
}
END_TEST

/*
 * Readers racing overwriters of the same file: bfs_fs_read() reads chunks
 * and bfs_fs_write() writes whole blocks without the inode lock, while the
 * writers free chunks and the allocator hands their buckets out again.  Every 4 KiB block the writer writes says
 * where it belongs (its file offset) and is uniform otherwise, and every
 * 64 KiB write is one chunk, so a read that returned data from a reused
 * bucket, a discarded one or half of a write shows up as a wrong offset or
 * mixed contents.  (A stress test: a bucket is reused only after a journal
 * write, so a reader with a key into it in flight is rare, and a run with
 * the generation and checksum checks taken out passed too.)
 */
#define RACE_FILE	(2 * MiB)
#define RACE_WRITES	3000
#define RACE_READERS	3
#define RACE_WRITERS	2

struct race {
	struct bfs_fs *fs;
	u64 ino;
	bool done;		/* __atomic */
	unsigned writers_done;	/* __atomic */
	int err;
	unsigned reads;
};

static void race_block(u8 *b, u64 off, u8 v)
{
	memset(b, v, 4096);
	memcpy(b, &off, sizeof(off));
}

static void *race_writer(void *arg)
{
	struct race *r = arg;
	u8 *buf = bfs_malloc(64 * KiB);
	u64 seed = (u64)(uintptr_t)&seed;
	unsigned i, j;

	for (i = 0; i < RACE_WRITES && !r->err; i++) {
		u64 off;

		seed = seed * 6364136223846793005ULL + 1;
		off = ((seed >> 33) % (RACE_FILE / (64 * KiB))) * 64 * KiB;
		for (j = 0; j < 16; j++)
			race_block(buf + j * 4096, off + j * 4096, (u8)(1 + i % 250));
		if (bfs_fs_write(r->fs, r->ino, buf, 64 * KiB, off) != (ssize_t)(64 * KiB))
			r->err = -EIO;
	}
	if (__atomic_add_fetch(&r->writers_done, 1, __ATOMIC_ACQ_REL) == RACE_WRITERS)
		__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	bfs_free(buf);
	return NULL;
}

static void *race_reader(void *arg)
{
	struct race *r = arg;
	u8 *buf = bfs_aligned_alloc(4096, 64 * KiB);
	u64 seed = (u64)(uintptr_t)&seed;

	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE) && !r->err) {
		u64 off, len, j;
		ssize_t n;

		seed = seed * 6364136223846793005ULL + 1;
		off = ((seed >> 33) % (RACE_FILE / 4096)) * 4096;
		len = BFS_MIN(4096 * (1 + (seed >> 20) % 16), RACE_FILE - off);
		n = bfs_fs_read(r->fs, r->ino, buf, len, off);
		if (n != (ssize_t)len) {
			r->err = n < 0 ? (int)n : -EIO;
			break;
		}
		for (j = 0; j < len; j += 4096) {
			u8 want[4096];
			u64 at;

			memcpy(&at, buf + j, sizeof(at));
			race_block(want, off + j, buf[j + 4095]);
			if (at != off + j || !buf[j + 4095] || memcmp(want, buf + j, 4096)) {
				r->err = -EILSEQ;
				break;
			}
		}
		__atomic_fetch_add(&r->reads, 1, __ATOMIC_RELAXED);
	}
	bfs_free(buf);
	return NULL;
}

START_TEST(test_read_races_overwrite)
{
	char *path = bfs_unit_tmpfile("race");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	struct bfs_dev *dev;
	struct race r = { 0 };
	u8 *buf = bfs_malloc(64 * KiB);
	bfs_thread th[RACE_READERS + RACE_WRITERS];
	struct bfs_stat st;
	u64 off;
	unsigned i, j;

	/* an image file (real I/O, direct where possible): the reads take time */
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 16 * MiB), 0);
	close(fd);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &dev), 0);
	tu_log_reset();
	/* small buckets on a small device: freed buckets come back quickly */
	tu_format_fs(dev, 16 * MiB, 64 * KiB, 128 * KiB, BFS_COMPRESSION_NONE);
	r.fs = tu_fs_open(dev);
	r.ino = tu_mkfile(r.fs, "race");
	for (off = 0; off < RACE_FILE; off += 64 * KiB) {
		for (j = 0; j < 16; j++)
			race_block(buf + j * 4096, off + j * 4096, 255);
		ck_assert_int_eq(bfs_fs_write(r.fs, r.ino, buf, 64 * KiB, off), 64 * KiB);
	}
	tu_log_count_warnings("data:");
	for (i = 0; i < RACE_WRITERS + RACE_READERS; i++)
		ck_assert_int_eq(bfs_thread_create(&th[i], i < RACE_WRITERS ? race_writer :
						   race_reader, &r), 0);
	for (i = 0; i < RACE_WRITERS + RACE_READERS; i++)
		bfs_thread_join(th[i]);
	ck_assert_msg(!r.err, "race: %d after %u reads (%s)", r.err, r.reads, tu_last_err);
	ck_assert_uint_gt(r.reads, 0);
	ck_assert_int_eq(bfs_fs_close(r.fs), 0);
	/* after a reopen: every block one write's, the space accounted exactly */
	r.fs = tu_fs_open(dev);
	r.done = true;
	r.writers_done = 0;
	ck_assert_int_eq(bfs_fs_getattr(r.fs, r.ino, &st), 0);
	ck_assert_uint_eq(st.size, RACE_FILE);
	ck_assert_uint_eq(st.blocks, RACE_FILE / 512);
	for (off = 0; off < RACE_FILE; off += 64 * KiB) {
		ck_assert_int_eq(bfs_fs_read(r.fs, r.ino, buf, 64 * KiB, off), 64 * KiB);
		for (j = 0; j < 16; j++) {
			u8 want[4096];

			race_block(want, off + j * 4096, buf[j * 4096 + 4095]);
			ck_assert_mem_eq(buf + j * 4096, want, 4096);
		}
	}
	ck_assert_int_eq(bfs_fs_close(r.fs), 0);
	ck_assert_uint_eq(tu_nr_warns, 0);
	bfs_free(buf);
	bfs_dev_close(dev);
	unlink(path);
	free(path);
}
END_TEST

static Suite *fs_data_suite(void)
{
	Suite *s = suite_create("fs_data");
	TCase *tc = tcase_create("data");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_small_reads_kept);
	tcase_add_test(tc, test_sparse);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_fallocate);
	tcase_add_test(tc, test_fsx);
	tcase_add_test(tc, test_fsx_zstd_small_buckets);
	tcase_add_loop_test(tc, test_fsx_direct_image, 0, 2);
	tcase_add_test(tc, test_checksum);
	tcase_add_test(tc, test_stale_pointer);
	tcase_add_test(tc, test_zstd);
	tcase_add_test(tc, test_space_accounting);
	tcase_add_test(tc, test_enospc_cycles);
	tcase_add_test(tc, test_copygc);
	tcase_add_test(tc, test_fsync_durable);
	tcase_add_test(tc, test_replay_space_hooks);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_threads_gc);
	tcase_add_test(tc, test_read_races_overwrite);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(fs_data_suite)
