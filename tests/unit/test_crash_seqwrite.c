// SPDX-License-Identifier: MIT
/*
 * Large sequential writes on an image file opened as a mount opens it
 * (O_DIRECT where the test filesystem takes it, io_uring batches): the
 * path where the chunks' checksums are taken while their device write is
 * in flight (bfs_dev_submit_during(), data_write.c's plan_csum()).  Two
 * threads append to a file each, in writes of 4 KiB to 1 MiB + 4 KiB
 * (whole chunks, a partial last block, runs that cross buckets), and fsync
 * now and then.  Every crash state the log allows must pass fsck, open
 * without warnings and hold in each file at least what its last returned
 * fsync covered, with every byte below the file's size the one appended
 * there and readable (a chunk whose checksum was not its data's would fail
 * the read).
 */
#include "crash_states.h"
#include "tu.h"
#include "unit.h"

#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS		2
#define FSYNC_EVERY	3
#define MAX_ACKS	1024

struct sworker {
	struct seqw *p;
	unsigned idx;
	int	err;
};

struct seqw {
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	u64	ino[THREADS];
	u32	writes;			/* per thread */
	struct crash_acks acks;		/* (thread, size): file durable up to size */
	struct sworker w[THREADS];
};

/* the byte appended at offset @o of file @t */
static u8 byte_at(unsigned t, u64 o)
{
	return (u8)((o * 2654435761ULL >> 7) ^ (o >> 12) ^ (t * 77 + 1));
}

static void fill(u8 *buf, unsigned t, u64 off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = byte_at(t, off + i);
}

/* the length of write @i of thread @t: whole MiB, odd sizes, small ones */
static size_t write_len(unsigned t, u32 i)
{
	static const size_t lens[] = {
		MiB, MiB + 4096, 256 * KiB, 64 * KiB + 512, 4096, 3 * 16 * KiB, 700 * KiB + 100,
	};

	return lens[(i + t * 3) % (sizeof(lens) / sizeof(lens[0]))];
}

static void *writer(void *arg)
{
	struct sworker *w = arg;
	struct seqw *p = w->p;
	u8 *buf = bfs_aligned_alloc(4096, 2 * MiB);
	u64 size = 0;
	u32 i;

	if (!buf) {
		w->err = -ENOMEM;
		return NULL;
	}
	for (i = 1; i <= p->writes && !w->err; i++) {
		size_t len = write_len(w->idx, i);
		ssize_t n;

		fill(buf, w->idx, size, len);
		n = bfs_fs_write_flags(p->fs, p->ino[w->idx], buf, len, size, BFS_WRITE_THROUGH);
		if (n != (ssize_t)len) {
			w->err = n < 0 ? (int)n : -EIO;
			break;
		}
		size += len;
		if (i % FSYNC_EVERY)
			continue;
		w->err = bfs_fs_fsync(p->fs, p->ino[w->idx], false);
		if (w->err)
			break;
		crash_ack(&p->acks, w->idx, size);
	}
	bfs_free(buf);
	return NULL;
}

static bool check_file(unsigned t, struct bfs_fs *fs, u64 ino, u64 acked, u8 *buf, char *why)
{
	struct bfs_stat st;
	u64 off;
	int rc = bfs_fs_getattr(fs, ino, &st);

	if (rc) {
		snprintf(why, 512, "file %u: getattr: %s", t, strerror(-rc));
		return false;
	}
	if (st.size < acked) {
		snprintf(why, 512, "file %u: size %llu below the %llu an fsync returned for", t,
			 (unsigned long long)st.size, (unsigned long long)acked);
		return false;
	}
	for (off = 0; off < st.size; off += MiB) {
		size_t len = (size_t)BFS_MIN((u64)MiB, st.size - off), j;
		ssize_t n = bfs_fs_read(fs, ino, buf, len, off);

		if (n != (ssize_t)len) {
			snprintf(why, 512, "file %u: read of %zu at %llu: %zd", t, len,
				 (unsigned long long)off, n);
			return false;
		}
		for (j = 0; j < len; j++)
			if (buf[j] != byte_at(t, off + j)) {
				snprintf(why, 512, "file %u (size %llu): byte %llu is %u, not %u", t,
					 (unsigned long long)st.size, (unsigned long long)(off + j),
					 buf[j], byte_at(t, off + j));
				return false;
			}
	}
	return true;
}

static bool check_cb(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct seqw *p = ctx;
	u64 acked[THREADS];
	struct bfs_fs *fs;
	unsigned t;
	bool ok = true;
	u8 *buf;

	crash_acks_upto(&p->acks, mk.f, acked, THREADS);
	if (!crash_fsck_then_open(img, &fs, why))
		return false;
	buf = bfs_malloc(MiB);
	for (t = 0; t < THREADS && ok; t++)
		ok = check_file(t, fs, p->ino[t], acked[t], buf, why);
	bfs_free(buf);
	return crash_close_recovered(fs, ok, why);
}

START_TEST(test_crash_seqwrite)
{
	u64 dev_bytes = 96 * MiB;
	/* small buckets: a 1 MiB write spans several, so a batch has several writes */
	struct bfs_format_opts fo = { .data_chunk = 16 * KiB, .bucket_size = 256 * KiB };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct seqw *p = bfs_zalloc(sizeof(*p));
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("crash-seqwrite-log");
	char *path = bfs_unit_tmpfile("crash-seqwrite-img");
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	struct bfs_dev *base;
	unsigned t;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)dev_bytes), 0);
	close(fd);
	tu_log_reset();
	tu_log_count_warnings("data: ");
	p->writes = (u32)crash_env_u64("BFS_CRASH_SEQWRITE_WRITES", 24);
	ck_assert_int_eq(bfs_dev_open(path, BFS_DEV_EXCL, &p->dev), 0);
	crash_acks_init(&p->acks, p->dev, MAX_ACKS);
	printf("crash-seqwrite: %s\n", bfs_dev_is_direct(p->dev) ? "image file, direct" :
	       "image file, buffered");
	ck_assert_int_eq(bfs_sb_layout(&fo, dev_bytes, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(p->dev, sb), 0);
	ck_assert_int_eq(bfs_fs_open(p->dev, &(struct bfs_fs_opts){ 0 }, &p->fs), 0);
	for (t = 0; t < THREADS; t++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", t);
		p->ino[t] = tu_mkfile(p->fs, name);
	}
	ck_assert_int_eq(bfs_fs_close(p->fs), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(p->dev, &base), 0);

	ck_assert_int_eq(bfs_dev_record_start(p->dev, logpath), 0);
	ck_assert_int_eq(bfs_fs_open(p->dev, &(struct bfs_fs_opts){ 0 }, &p->fs), 0);
	crash_mark(p->dev, 'f', 0);
	for (t = 0; t < THREADS; t++)
		p->w[t] = (struct sworker){ .p = p, .idx = t };
	crash_run_threads(THREADS, writer, p->w, sizeof(p->w[0]));
	for (t = 0; t < THREADS; t++)
		ck_assert_msg(!p->w[t].err, "thread %u: %d", t, p->w[t].err);
	ck_assert_int_eq(bfs_fs_close(p->fs), 0);
	ck_assert_int_eq(bfs_dev_record_stop(p->dev), 0);
	ck_assert_uint_eq(tu_nr_warns, 0);

	crash_states_check("crash-seqwrite", logpath, base, 0x5e9, check_cb, p, 5);
	crash_acks_destroy(&p->acks);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(p->dev);
	bfs_free(p);
	unlink(path);
	free(path);
}
END_TEST

static Suite *crash_seqwrite_suite(void)
{
	Suite *s = suite_create("crash_seqwrite");
	TCase *tc = tcase_create("crash");

	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, test_crash_seqwrite);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_seqwrite_suite)
