// SPDX-License-Identifier: MIT
/* Journal: append, flush, replay, ring wrap and reclaim, corruption handling. */
#include "tu.h"

#include <bfs/btree_format.h>
#include <bfs/checksum.h>
#include <bfs/journal.h>
#include <bfs/log.h>
#include <bfs/os.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define KB64		(64 * 1024)
#define RING_START	(1024 * 1024)

static const u8 uuid_a[16] = { 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8,
			       0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0 };
static const u8 uuid_b[16] = { 0xb1, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8,
			       0xb9, 0xba, 0xbb, 0xbc, 0xbd, 0xbe, 0xbf, 0xc0 };

/* ---- fixtures ---- */

static struct bfs_dev *mkdev(u64 ring_bytes)
{
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(RING_START + ring_bytes + KB64, &dev), 0);
	return dev;
}

static struct bfs_journal_geom geom(struct bfs_dev *dev, u32 nbuckets, u32 bucket_size,
				    u32 block_size, const u8 *uuid)
{
	struct bfs_journal_geom g = {
		.dev = dev, .start = RING_START, .nbuckets = nbuckets,
		.bucket_size = bucket_size, .block_size = block_size,
	};

	memcpy(g.uuid, uuid, 16);
	return g;
}

/*
 * A record: one BTREE_KEYS sub-entry with (1 + extra) u64s of data: a tag and
 * @extra words derived from it, so replay can check every byte.
 */
#define REC_MAX_U64S	(1 + 1 + 300)

static u32 rec_build(u64 *buf, u64 tag, u32 extra)
{
	struct bfs_jset_entry *e = (void *)buf;

	bfs_jset_entry_init(e, BFS_JSET_ENTRY_BTREE_KEYS, (u8)(tag % 5), (u8)(tag % 3),
			    (u16)(1 + extra));
	buf[1] = tag;
	for (u32 i = 0; i < extra; i++)
		buf[2 + i] = tag * 1000003 + i;
	return 2 + extra;
}

static u64 rec_check(const struct bfs_jset_entry *e)
{
	const u64 *d = bfs_jset_entry_data(e);
	u32 n = le16_to_cpu(e->u64s);
	u64 tag;

	ck_assert_int_eq(e->type, BFS_JSET_ENTRY_BTREE_KEYS);
	ck_assert_uint_ge(n, 1);
	tag = d[0];
	ck_assert_int_eq(e->btree_id, tag % 5);
	ck_assert_int_eq(e->level, tag % 3);
	for (u32 i = 1; i < n; i++)
		ck_assert_uint_eq(d[i], tag * 1000003 + (i - 1));
	return tag;
}

static u64 add_rec(struct bfs_journal *j, u64 tag, u32 extra)
{
	u64 buf[REC_MAX_U64S], seq = 0;
	u32 n = rec_build(buf, tag, extra);

	ck_assert_int_eq(bfs_journal_add(j, buf, n, &seq), 0);
	return seq;
}

/* what replay delivered */
struct replayed {
	size_t nr, size;
	u64 *tag;
	u64 *seq;
	unsigned roots;
	u64 last_root_seq;
};

static int collect(void *ctx, u64 seq, const struct bfs_jset_entry *e)
{
	struct replayed *r = ctx;

	if (e->type == BFS_JSET_ENTRY_PAD)
		return 0;
	if (e->type == BFS_JSET_ENTRY_BTREE_ROOT) {
		ck_assert_uint_eq(((const u64 *)bfs_jset_entry_data(e))[0], 0xf00d);
		r->roots++;
		r->last_root_seq = seq;
		return 0;
	}
	if (r->nr == r->size) {
		r->size = r->size ? r->size * 2 : 256;
		r->tag = realloc(r->tag, r->size * sizeof(u64));
		r->seq = realloc(r->seq, r->size * sizeof(u64));
		ck_assert_ptr_nonnull(r->tag);
		ck_assert_ptr_nonnull(r->seq);
	}
	if (r->nr)
		ck_assert_uint_ge(seq, r->seq[r->nr - 1]);
	r->tag[r->nr] = rec_check(e);
	r->seq[r->nr++] = seq;
	return 0;
}

static void replayed_free(struct replayed *r)
{
	free(r->tag);
	free(r->seq);
	memset(r, 0, sizeof(*r));
}

static struct bfs_journal *jopen(const struct bfs_journal_geom *g)
{
	struct bfs_journal *j;

	ck_assert_int_eq(bfs_journal_open(g, &j), 0);
	return j;
}

/* open and replay, expecting success */
static struct bfs_journal *jopen_read(const struct bfs_journal_geom *g, u64 min_seq,
				      struct replayed *r)
{
	struct bfs_journal *j = jopen(g);

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(bfs_journal_read(j, min_seq, collect, r), 0);
	return j;
}

/* offset of the entry with @seq, found with bfs_journal_walk() */
struct find_ctx {
	u64 seq, offset, bytes, nr;
};

static int find_fn(void *ctx, u64 offset, const struct bfs_jset *jset)
{
	struct find_ctx *f = ctx;

	f->nr++;
	if (le64_to_cpu(jset->seq) == f->seq) {
		f->offset = offset;
		f->bytes = bfs_jset_bytes(jset);
	}
	return 0;
}

static struct find_ctx find_entry(const struct bfs_journal_geom *g, u64 seq)
{
	struct bfs_journal *j = jopen(g);
	struct find_ctx f = { .seq = seq };

	ck_assert_int_eq(bfs_journal_walk(j, find_fn, &f), 0);
	bfs_journal_close(j);
	ck_assert_uint_ne(f.offset, 0);
	return f;
}

/* write entries 1..n, entry i holding records tag 100*i .. 100*i+2 */
static void write_n_entries(const struct bfs_journal_geom *g, u64 n)
{
	struct bfs_journal *j = jopen(g);

	ck_assert_int_eq(bfs_journal_read(j, 0, NULL, NULL), 0);
	for (u64 i = 1; i <= n; i++) {
		for (u64 k = 0; k < 3; k++)
			ck_assert_uint_eq(add_rec(j, 100 * i + k, (u32)(i + k) % 7), i);
		ck_assert_int_eq(bfs_journal_flush(j), 0);
	}
	bfs_journal_close(j);
}

/* ---- tests ---- */

START_TEST(test_roundtrip)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal *j = jopen(&g);
	struct replayed r = { 0 };
	u64 seqs[200], flushed = 0;

	ck_assert_int_eq(bfs_journal_add(j, seqs, 0, NULL), -EINVAL);	/* before read */
	ck_assert_int_eq(bfs_journal_read(j, 0, collect, &r), 0);
	ck_assert_uint_eq(r.nr, 0);
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 1);
	ck_assert_int_eq(bfs_journal_read(j, 0, collect, &r), -EINVAL);	/* only once */

	for (u64 i = 0; i < 200; i++) {
		seqs[i] = add_rec(j, i, (u32)(i * 7) % 20);
		if (i % 7 == 6 && i < 190) {
			ck_assert_int_eq(bfs_journal_flush(j), 0);
			flushed = i + 1;
			ck_assert_uint_eq(bfs_journal_durable_seq(j), seqs[i]);
			ck_assert_uint_eq(bfs_journal_cur_seq(j), seqs[i] + 1);
		}
	}
	/* the last few were never flushed: they must not come back */
	bfs_journal_close(j);

	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, flushed);
	for (u64 i = 0; i < flushed; i++) {
		ck_assert_uint_eq(r.tag[i], i);
		ck_assert_uint_eq(r.seq[i], seqs[i]);
	}
	ck_assert_uint_eq(bfs_journal_cur_seq(j), seqs[flushed - 1] + 1);
	ck_assert_uint_eq(bfs_journal_durable_seq(j), seqs[flushed - 1]);

	/* appending continues after the newest entry */
	ck_assert_uint_eq(add_rec(j, 5000, 3), seqs[flushed - 1] + 1);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	bfs_journal_close(j);
	replayed_free(&r);

	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, flushed + 1);
	ck_assert_uint_eq(r.tag[flushed], 5000);
	bfs_journal_close(j);
	replayed_free(&r);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_last_seq_and_min_seq)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct replayed r;
	u64 first, last;

	write_n_entries(&g, 10);
	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, 30);
	ck_assert_uint_eq(bfs_journal_last_seq(j), 1);
	bfs_journal_set_last_seq(j, 6);
	bfs_journal_set_last_seq(j, 3);		/* never moves back */
	ck_assert_uint_eq(bfs_journal_last_seq(j), 6);
	ck_assert_uint_eq(add_rec(j, 1111, 0), 11);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	bfs_journal_close(j);
	replayed_free(&r);

	/* replay starts at the newest entry's last_seq */
	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, 5 * 3 + 1);
	ck_assert_uint_eq(r.seq[0], 6);
	ck_assert_uint_eq(r.tag[0], 600);
	ck_assert_uint_eq(r.tag[r.nr - 1], 1111);
	bfs_journal_replay_range(j, &first, &last);
	ck_assert_uint_eq(first, 6);
	ck_assert_uint_eq(last, 11);
	bfs_journal_close(j);
	replayed_free(&r);

	/* and at min_seq + 1 if that is later */
	j = jopen_read(&g, 8, &r);
	ck_assert_uint_eq(r.nr, 2 * 3 + 1);
	ck_assert_uint_eq(r.seq[0], 9);
	ck_assert_uint_eq(bfs_journal_last_seq(j), 9);
	bfs_journal_close(j);
	replayed_free(&r);

	/* min_seq beyond the newest entry: nothing to replay, seqs continue after it */
	j = jopen_read(&g, 40, &r);
	ck_assert_uint_eq(r.nr, 0);
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 41);
	ck_assert_uint_eq(add_rec(j, 4100, 0), 41);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_fresh_min_seq)
{
	struct bfs_dev *dev = mkdev(4 * KB64);
	struct bfs_journal_geom g = geom(dev, 4, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct replayed r;

	j = jopen_read(&g, 100, &r);
	ck_assert_uint_eq(r.nr, 0);
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 101);
	ck_assert_uint_eq(bfs_journal_last_seq(j), 101);
	ck_assert_uint_eq(add_rec(j, 7, 0), 101);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	bfs_journal_close(j);

	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, 1);
	ck_assert_uint_eq(r.seq[0], 101);
	bfs_journal_close(j);
	replayed_free(&r);
	bfs_dev_close(dev);
}
END_TEST

/* reclaim that behaves like a btree flushing everything older than want_seq */
struct reclaim_ctx {
	struct bfs_journal *j;
	unsigned calls;
	int mode;		/* 0: advance to want_seq, 1: do nothing, 2: fail */
};

static int reclaim_fn(void *ctx, u64 want_seq)
{
	struct reclaim_ctx *rc = ctx;

	rc->calls++;
	ck_assert_uint_le(want_seq, bfs_journal_cur_seq(rc->j));
	/* seqs below want_seq are durable already: flushing them must not block */
	ck_assert_int_eq(bfs_journal_flush_seq(rc->j, want_seq - 1), 0);
	if (rc->mode == 3)	/* waiting for the entry being written would deadlock */
		ck_assert_int_eq(bfs_journal_flush_seq(rc->j, bfs_journal_cur_seq(rc->j)), -EDEADLK);
	if (rc->mode == 1)
		return 0;
	if (rc->mode == 2)
		return -EIO;
	bfs_journal_set_last_seq(rc->j, want_seq);
	return 0;
}

START_TEST(test_wraparound)
{
	const u32 nbuckets = 4;
	struct bfs_dev *dev = mkdev(nbuckets * KB64);
	struct bfs_journal_geom g = geom(dev, nbuckets, KB64, 4096, uuid_a);
	struct reclaim_ctx rc = { 0 };
	struct bfs_journal *j;
	struct replayed r;
	u64 *tag_seq = calloc(4000, sizeof(u64));	/* tag -> seq it was added in */
	u64 bytes = 0, durable_tag = 0, reopens = 0;

	ck_assert_ptr_nonnull(tag_seq);
	j = jopen_read(&g, 0, &r);
	for (u64 t = 0; t < 4000; t++) {
		u32 extra = (u32)((t * 37) % 300);

		if (t % 97 == 0) {
			/* crash-free remount: replay must be exactly [last_seq, newest] */
			u64 first, last, i = 0;

			bfs_journal_close(j);
			/* what was added since the last flush is gone */
			for (u64 k = durable_tag; k < t; k++)
				tag_seq[k] = 0;
			j = jopen_read(&g, 0, &r);
			reopens++;
			bfs_journal_replay_range(j, &first, &last);
			if (t) {
				ck_assert_uint_eq(last, tag_seq[durable_tag - 1]);
				ck_assert_uint_gt(r.nr, 0);
			}
			/* the records replayed are every record whose seq is in range */
			for (u64 k = 0; k < durable_tag; k++)
				if (tag_seq[k] >= first) {
					ck_assert_uint_lt(i, r.nr);
					ck_assert_uint_eq(r.tag[i], k);
					ck_assert_uint_eq(r.seq[i], tag_seq[k]);
					i++;
				}
			ck_assert_uint_eq(i, r.nr);
			replayed_free(&r);
		}
		rc.j = j;
		bfs_journal_set_reclaim(j, reclaim_fn, &rc);

		tag_seq[t] = add_rec(j, t, extra);
		bytes += (2 + extra) * 8;
		if (t % 3 == 2) {
			ck_assert_int_eq(bfs_journal_flush(j), 0);
			durable_tag = t + 1;
		}
	}
	bfs_journal_close(j);
	/* the ring went round many times and reclaim was what made room */
	ck_assert_uint_gt(bytes, 10 * nbuckets * KB64);
	ck_assert_uint_gt(rc.calls, 20);
	ck_assert_uint_gt(reopens, 40);
	free(tag_seq);
	bfs_dev_close(dev);
}
END_TEST

/* fill until the journal needs reclaim; returns the error add/flush gave */
static int fill_until_error(struct bfs_journal *j, u64 limit)
{
	u64 buf[REC_MAX_U64S];

	for (u64 t = 0; t < limit; t++) {
		u32 n = rec_build(buf, t, 200);
		int ret = bfs_journal_add(j, buf, n, NULL);

		if (!ret)
			ret = bfs_journal_flush(j);
		if (ret)
			return ret;
	}
	return 0;
}

START_TEST(test_reclaim_enospc)
{
	struct bfs_dev *dev = mkdev(4 * KB64);
	struct bfs_journal_geom g = geom(dev, 4, KB64, 4096, uuid_a);
	struct reclaim_ctx rc = { .mode = 1 };
	struct bfs_journal *j;
	struct replayed r;
	u64 durable;

	/* no hook at all */
	j = jopen_read(&g, 0, &r);
	ck_assert_int_eq(fill_until_error(j, 1000), -ENOSPC);
	bfs_journal_close(j);

	/* a hook that cannot advance last_seq: -ENOSPC, not a hang */
	j = jopen_read(&g, 0, &r);
	replayed_free(&r);
	durable = bfs_journal_durable_seq(j);
	ck_assert_uint_gt(durable, 0);
	rc.j = j;
	bfs_journal_set_reclaim(j, reclaim_fn, &rc);
	ck_assert_int_eq(fill_until_error(j, 1000), -ENOSPC);
	ck_assert_uint_gt(rc.calls, 0);
	ck_assert_uint_eq(bfs_journal_durable_seq(j), durable);	/* nothing was written */

	/* a failing hook: its error comes back */
	rc.mode = 2;
	ck_assert_int_eq(bfs_journal_flush(j), -EIO);

	/* -ENOSPC is not fatal: once reclaim works, the pending entry goes out */
	rc.mode = 3;
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	ck_assert_uint_eq(bfs_journal_durable_seq(j), durable + 1);
	rc.mode = 0;
	ck_assert_int_eq(fill_until_error(j, 200), 0);
	bfs_journal_close(j);

	/* and the ring is still consistent */
	j = jopen_read(&g, 0, &r);
	ck_assert_uint_gt(r.nr, 0);
	bfs_journal_close(j);
	replayed_free(&r);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_bad_csum_in_range)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct find_ctx f;
	char want[64];

	write_n_entries(&g, 10);
	f = find_entry(&g, 5);
	bfs_dev_mem(dev)[f.offset + f.bytes - 3] ^= 0x40;

	tu_log_reset();
	j = jopen(&g);
	ck_assert_int_eq(bfs_journal_read(j, 0, collect, &(struct replayed){ 0 }), -EUCLEAN);
	ck_assert_int_eq(bfs_journal_add(j, &f, 0, NULL), -EINVAL);
	ck_assert_ptr_nonnull(strstr(tu_last_err, "bad checksum"));
	ck_assert_ptr_nonnull(strstr(tu_last_err, "seq 5 "));
	snprintf(want, sizeof(want), "offset %llu", (unsigned long long)f.offset);
	ck_assert_ptr_nonnull(strstr(tu_last_err, want));
	bfs_journal_close(j);

	/* outside the replay range (min_seq past it) it does not matter */
	{
		struct replayed r;

		j = jopen_read(&g, 5, &r);
		ck_assert_uint_eq(r.nr, 15);
		bfs_journal_close(j);
		replayed_free(&r);
	}
	bfs_log_set_hook(NULL, NULL);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_seq_gap)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct find_ctx f;

	write_n_entries(&g, 10);
	f = find_entry(&g, 4);
	memset(bfs_dev_mem(dev) + f.offset, 0, 4096);	/* entry 4 vanishes */

	tu_log_reset();
	j = jopen(&g);
	ck_assert_int_eq(bfs_journal_read(j, 0, NULL, NULL), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(tu_last_err, "seq gap"));
	ck_assert_ptr_nonnull(strstr(tu_last_err, "seq 4 is missing after seq 3"));
	bfs_journal_close(j);
	bfs_log_set_hook(NULL, NULL);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_sub_entry_overrun)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct bfs_jset *jset;
	struct bfs_jset_entry *e;
	struct find_ctx f;

	write_n_entries(&g, 6);
	f = find_entry(&g, 3);
	/* make the first sub-entry claim more than the entry holds, with a good checksum */
	jset = (void *)(bfs_dev_mem(dev) + f.offset);
	e = jset->start;
	e->u64s = cpu_to_le16((u16)(le32_to_cpu(jset->u64s) + 5));
	jset->csum = cpu_to_le64(bfs_xxh3((u8 *)jset + BFS_JSET_CSUM_OFFSET,
					  bfs_jset_bytes(jset) - BFS_JSET_CSUM_OFFSET));

	tu_log_reset();
	j = jopen(&g);
	ck_assert_int_eq(bfs_journal_read(j, 0, NULL, NULL), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(tu_last_err, "overruns the entry"));
	ck_assert_ptr_nonnull(strstr(tu_last_err, "seq 3:"));
	bfs_journal_close(j);
	bfs_log_set_hook(NULL, NULL);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_torn_tail)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct replayed r;
	struct find_ctx f;

	write_n_entries(&g, 10);
	f = find_entry(&g, 10);
	/* a torn write: the second half of the last entry never made it */
	memset(bfs_dev_mem(dev) + f.offset + f.bytes / 2, 0, f.bytes - f.bytes / 2);

	tu_log_reset();
	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(tu_nr_errs, 0);
	ck_assert_uint_eq(r.nr, 27);
	ck_assert_uint_eq(r.seq[r.nr - 1], 9);
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 10);
	/* the new seq 10 replaces the torn one */
	ck_assert_uint_eq(add_rec(j, 777, 1), 10);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	bfs_journal_close(j);
	replayed_free(&r);

	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, 28);
	ck_assert_uint_eq(r.tag[27], 777);
	ck_assert_uint_eq(r.seq[27], 10);
	bfs_journal_close(j);
	replayed_free(&r);
	bfs_log_set_hook(NULL, NULL);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_other_uuid)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom ga = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal_geom gb = geom(dev, 8, KB64, 4096, uuid_b);
	struct bfs_journal *j;
	struct replayed r;

	/* an earlier filesystem on the same device left 40 entries */
	write_n_entries(&ga, 40);

	j = jopen_read(&gb, 0, &r);
	ck_assert_uint_eq(r.nr, 0);
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 1);
	for (u64 i = 0; i < 3; i++) {
		add_rec(j, 9000 + i, 2);
		ck_assert_int_eq(bfs_journal_flush(j), 0);
	}
	bfs_journal_close(j);

	j = jopen_read(&gb, 0, &r);
	ck_assert_uint_eq(r.nr, 3);
	for (u64 i = 0; i < 3; i++) {
		ck_assert_uint_eq(r.tag[i], 9000 + i);
		ck_assert_uint_eq(r.seq[i], i + 1);
	}
	bfs_journal_close(j);
	replayed_free(&r);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_e2big)
{
	struct bfs_dev *dev = mkdev(4 * KB64);
	struct bfs_journal_geom g = geom(dev, 4, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct replayed r;
	u32 max;
	u64 *buf, seq;

	j = jopen_read(&g, 0, &r);
	max = bfs_journal_max_add_u64s(j);
	ck_assert_uint_eq(max, (KB64 - sizeof(struct bfs_jset)) / 8);
	buf = calloc(max + 2, 8);
	ck_assert_ptr_nonnull(buf);

	/* max + 1 u64s as two sub-entries: too big for any entry */
	bfs_jset_entry_init((void *)buf, BFS_JSET_ENTRY_BTREE_KEYS, 0, 0, 0);
	bfs_jset_entry_init((void *)(buf + 1), BFS_JSET_ENTRY_BTREE_KEYS, 0, 0, (u16)(max - 1));
	ck_assert_int_eq(bfs_journal_add(j, buf, max + 1, &seq), -E2BIG);

	/* exactly a bucket: fits, in an entry of its own */
	add_rec(j, 1, 0);
	ck_assert_uint_eq(rec_build(buf, 0, max - 2), max);
	ck_assert_int_eq(bfs_journal_add(j, buf, max, &seq), 0);
	ck_assert_uint_eq(seq, 2);
	ck_assert_int_eq(bfs_journal_flush(j), 0);

	/* malformed sub-entry chains are refused before they reach the disk */
	bfs_jset_entry_init((void *)buf, BFS_JSET_ENTRY_BTREE_KEYS, 0, 0, 10);
	ck_assert_int_eq(bfs_journal_add(j, buf, 5, &seq), -EINVAL);

	bfs_journal_close(j);

	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, 2);	/* the 1-u64 record and the bucket-sized one */
	bfs_journal_close(j);
	replayed_free(&r);
	free(buf);
	bfs_dev_close(dev);
}
END_TEST

/* pre-write hook: a fake root in every entry */
static u32 pre_write_fn(void *ctx, void *buf, u32 max_u64s)
{
	struct bfs_jset_entry *e = buf;
	unsigned *calls = ctx;

	ck_assert_uint_ge(max_u64s, 2);
	bfs_jset_entry_init(e, BFS_JSET_ENTRY_BTREE_ROOT, 1, 0, 1);
	((u64 *)bfs_jset_entry_data(e))[0] = 0xf00d;
	__atomic_fetch_add(calls, 1, __ATOMIC_RELAXED);
	return 2;
}

START_TEST(test_pre_write)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct replayed r;
	unsigned calls = 0;
	u32 max;

	j = jopen_read(&g, 0, &r);
	max = bfs_journal_max_add_u64s(j);
	bfs_journal_set_pre_write(j, pre_write_fn, &calls, 2);
	ck_assert_uint_eq(bfs_journal_max_add_u64s(j), max - 2);
	for (u64 i = 0; i < 5; i++) {
		add_rec(j, i, 1);
		ck_assert_int_eq(bfs_journal_flush(j), 0);
	}
	/* an explicit flush of the open entry writes it even when empty (roots only) */
	ck_assert_int_eq(bfs_journal_flush_seq(j, bfs_journal_cur_seq(j)), 0);
	ck_assert_uint_eq(calls, 6);
	bfs_journal_close(j);

	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, 5);
	ck_assert_uint_eq(r.roots, 6);
	ck_assert_uint_eq(r.last_root_seq, 6);
	bfs_journal_close(j);
	replayed_free(&r);
	bfs_dev_close(dev);
}
END_TEST

/* ---- concurrency ---- */

#define NR_THREADS	8
#define PER_THREAD	1500

struct thread_arg {
	struct bfs_journal *j;
	unsigned id;
	u64 seq[PER_THREAD];
};

static void *add_thread(void *p)
{
	struct thread_arg *a = p;

	for (u64 i = 0; i < PER_THREAD; i++) {
		u64 buf[REC_MAX_U64S];
		u32 n = rec_build(buf, (u64)a->id << 32 | i, (u32)(i % 13));

		if (bfs_journal_add(a->j, buf, n, &a->seq[i]))
			abort();
		if (i % 16 == 15 && bfs_journal_flush_seq(a->j, a->seq[i]))
			abort();
		if (i % 16 == 15 && bfs_journal_durable_seq(a->j) < a->seq[i])
			abort();
	}
	return NULL;
}

static int reclaim_mt(void *ctx, u64 want_seq);

static void concurrent_adds(bool flusher)
{
	struct bfs_dev *dev = mkdev(64 * 256 * 1024);
	struct bfs_journal_geom g = geom(dev, 64, 256 * 1024, 512, uuid_a);
	struct thread_arg *args = calloc(NR_THREADS, sizeof(*args));
	bfs_thread threads[NR_THREADS];
	struct bfs_journal *j;
	struct replayed r;
	unsigned calls = 0;
	u64 *next = calloc(NR_THREADS, sizeof(u64));

	ck_assert_ptr_nonnull(args);
	ck_assert_ptr_nonnull(next);
	j = jopen_read(&g, 0, &r);
	bfs_journal_set_pre_write(j, pre_write_fn, &calls, 2);
	if (flusher)
		ck_assert_int_eq(bfs_journal_start_flusher(j), 0);
	for (unsigned t = 0; t < NR_THREADS; t++) {
		args[t].j = j;
		args[t].id = t;
		ck_assert_int_eq(bfs_thread_create(&threads[t], add_thread, &args[t]), 0);
	}
	for (unsigned t = 0; t < NR_THREADS; t++)
		bfs_thread_join(threads[t]);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	ck_assert_uint_eq(bfs_journal_durable_seq(j), bfs_journal_cur_seq(j) - 1);
	bfs_journal_close(j);

	j = jopen_read(&g, 0, &r);
	/* every record exactly once, each thread's in order, in the seq it was promised */
	ck_assert_uint_eq(r.nr, NR_THREADS * PER_THREAD);
	for (size_t i = 0; i < r.nr; i++) {
		unsigned t = (unsigned)(r.tag[i] >> 32);
		u64 k = r.tag[i] & 0xffffffff;

		ck_assert_uint_lt(t, NR_THREADS);
		ck_assert_uint_eq(k, next[t]);
		ck_assert_uint_eq(r.seq[i], args[t].seq[k]);
		next[t]++;
	}
	/* group commit: fewer entries than flush requests */
	ck_assert_uint_eq(r.roots, calls);
	ck_assert_uint_le(calls, NR_THREADS * PER_THREAD / 16);
	bfs_journal_close(j);
	replayed_free(&r);
	free(args);
	free(next);
	bfs_dev_close(dev);
}

START_TEST(test_concurrent_adds)
{
	concurrent_adds(false);
}
END_TEST

/* full entries written by the flusher while the adders go on */
START_TEST(test_concurrent_adds_flusher)
{
	concurrent_adds(true);
}
END_TEST

/* the flusher meets a full ring: the append that waited for it gets -ENOSPC, no hang */
START_TEST(test_flusher_enospc)
{
	struct bfs_dev *dev = mkdev(4 * KB64);
	struct bfs_journal_geom g = geom(dev, 4, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct replayed r;
	u64 buf[REC_MAX_U64S], t;
	int ret = 0;

	j = jopen_read(&g, 0, &r);
	replayed_free(&r);
	ck_assert_int_eq(bfs_journal_start_flusher(j), 0);
	for (t = 0; t < 100000 && !ret; t++)
		ret = bfs_journal_add(j, buf, rec_build(buf, t, 200), NULL);
	ck_assert_int_eq(ret, -ENOSPC);
	/* the room comes back with reclaim, and the ring is still consistent */
	bfs_journal_set_reclaim(j, reclaim_mt, j);
	ck_assert_int_eq(bfs_journal_add(j, buf, rec_build(buf, t, 200), NULL), 0);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	bfs_journal_close(j);
	j = jopen_read(&g, 0, &r);
	ck_assert_uint_gt(r.nr, 0);
	ck_assert_uint_eq(r.tag[r.nr - 1], t);
	bfs_journal_close(j);
	replayed_free(&r);
	bfs_dev_close(dev);
}
END_TEST

/* concurrent adds in a small ring that needs reclaim all the time */
static int reclaim_mt(void *ctx, u64 want_seq)
{
	bfs_journal_set_last_seq(ctx, want_seq);
	return 0;
}

START_TEST(test_concurrent_wrap)
{
	struct bfs_dev *dev = mkdev(4 * KB64);
	struct bfs_journal_geom g = geom(dev, 4, KB64, 512, uuid_a);
	struct thread_arg *args = calloc(NR_THREADS, sizeof(*args));
	bfs_thread threads[NR_THREADS];
	struct bfs_journal *j;
	struct replayed r;
	u64 first, last;

	ck_assert_ptr_nonnull(args);
	j = jopen_read(&g, 0, &r);
	bfs_journal_set_reclaim(j, reclaim_mt, j);
	for (unsigned t = 0; t < NR_THREADS; t++) {
		args[t].j = j;
		args[t].id = t;
		ck_assert_int_eq(bfs_thread_create(&threads[t], add_thread, &args[t]), 0);
	}
	for (unsigned t = 0; t < NR_THREADS; t++)
		bfs_thread_join(threads[t]);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	last = bfs_journal_durable_seq(j);
	bfs_journal_close(j);

	j = jopen_read(&g, 0, &r);
	bfs_journal_replay_range(j, &first, &last);
	ck_assert_uint_eq(last, bfs_journal_durable_seq(j));
	ck_assert_uint_gt(r.nr, 0);
	ck_assert_uint_eq(r.seq[r.nr - 1], last);
	bfs_journal_close(j);
	replayed_free(&r);
	free(args);
	bfs_dev_close(dev);
}
END_TEST

/* ---- crash states from an I/O log ---- */

static unsigned nr_reclaims;

static int reclaim_to_want(void *ctx, u64 want_seq)
{
	__atomic_fetch_add(&nr_reclaims, 1, __ATOMIC_RELAXED);
	bfs_journal_set_last_seq(ctx, want_seq);
	return 0;
}

/* run a workload with the device recording; returns the log path */
static char *crash_workload(struct bfs_dev *dev, const struct bfs_journal_geom *g)
{
	char *path = bfs_unit_tmpfile("jcrash");
	struct bfs_journal *j;
	struct replayed r;
	char mark[64];

	ck_assert_int_eq(bfs_dev_record_start(dev, path), 0);
	nr_reclaims = 0;
	j = jopen_read(g, 0, &r);
	bfs_journal_set_reclaim(j, reclaim_to_want, j);
	for (u64 t = 0; t < 250; t++) {
		add_rec(j, t, (u32)((t * 53) % 250));
		if (t % 4 == 3 || t % 11 == 0) {
			ck_assert_int_eq(bfs_journal_flush(j), 0);
			snprintf(mark, sizeof(mark), "%llu", (unsigned long long)t + 1);
			ck_assert_int_eq(bfs_dev_record_mark(dev, mark), 0);
		}
	}
	bfs_journal_close(j);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	/* the ring wrapped: crash states include overwriting old buckets */
	ck_assert_uint_ge(nr_reclaims, 4);
	return path;
}

/* the journal of a crashed image must replay a consecutive run of records ending at >= durable */
static void check_crash_image(const struct bfs_journal_geom *g0, struct bfs_dev *img, u64 durable)
{
	struct bfs_journal_geom g = *g0;
	struct bfs_journal *j;
	struct replayed r;

	g.dev = img;
	j = jopen_read(&g, 0, &r);
	if (durable) {
		ck_assert_uint_gt(r.nr, 0);
		ck_assert_uint_ge(r.tag[r.nr - 1] + 1, durable);
	}
	for (size_t i = 1; i < r.nr; i++)
		ck_assert_uint_eq(r.tag[i], r.tag[i - 1] + 1);
	/* and the journal goes on from there */
	bfs_journal_set_reclaim(j, reclaim_to_want, j);
	ck_assert_uint_eq(add_rec(j, 100000, 0), bfs_journal_durable_seq(j) + 1);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	bfs_journal_close(j);
	replayed_free(&r);
}

START_TEST(test_crash_states)
{
	struct bfs_dev *dev, *img, *test;
	struct bfs_journal_geom g;
	struct bfs_iolog log;
	u64 durable = 0, states = 0;
	char *path;

	/* a device holding just the ring: every crash state is a copy of it */
	ck_assert_int_eq(bfs_dev_open_mem(4 * KB64 + 4096, &dev), 0);
	g = geom(dev, 4, KB64, 4096, uuid_a);
	g.start = 4096;
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &img), 0);	/* the image before the workload */
	path = crash_workload(dev, &g);
	ck_assert_int_eq(bfs_iolog_open(path, &log), 0);
	ck_assert_uint_gt(log.nr, 100);

	for (size_t i = 0; i < log.nr; i++) {
		const struct bfs_iolog_entry *e = &log.entries[i];

		if (e->type == BFS_IOLOG_MARK) {
			char buf[64] = { 0 };

			ck_assert_uint_lt(e->len, sizeof(buf));
			ck_assert_int_eq(bfs_iolog_read_data(&log, i, buf), 0);
			durable = strtoull(buf, NULL, 10);
			continue;
		}
		if (e->type == BFS_IOLOG_WRITE || e->type == BFS_IOLOG_FUA) {
			/* crash before this write landed, and with only part of it landed */
			ck_assert_int_eq(bfs_dev_clone_mem(img, &test), 0);
			check_crash_image(&g, test, durable);
			bfs_dev_close(test);
			states++;
			for (u64 torn = 512; torn < e->len; torn += 11 * 512) {
				ck_assert_int_eq(bfs_dev_clone_mem(img, &test), 0);
				ck_assert_int_eq(bfs_iolog_apply(&log, i, test, torn), 0);
				check_crash_image(&g, test, durable);
				bfs_dev_close(test);
				states++;
			}
		}
		ck_assert_int_eq(bfs_iolog_apply(&log, i, img, 0), 0);
	}
	check_crash_image(&g, img, durable);
	ck_assert_uint_gt(states, 150);
	bfs_iolog_close(&log);
	unlink(path);
	free(path);
	bfs_dev_close(img);
	bfs_dev_close(dev);
}
END_TEST

/* fill @n u64s with PAD sub-entries that tile them exactly */
static void fill_pads(u64 *buf, u32 n)
{
	for (u32 k = 0; k < n; ) {
		u32 sub = BFS_MIN(n - k - 1, BFS_JSET_ENTRY_MAX_U64S);

		bfs_jset_entry_init((void *)(buf + k), BFS_JSET_ENTRY_PAD, 0, 0, (u16)sub);
		k += 1 + sub;
	}
}

/* bucket and block sizes at both ends of the allowed range */
START_TEST(test_geometries)
{
	static const u32 geoms[][3] = {	/* nbuckets, bucket_size, block_size */
		{ 2, 64 * 1024, 512 },
		{ 3, 1024 * 1024, 4096 },
		{ 2, 2 * 1024 * 1024, 4096 },
		{ 2, 8 * 1024 * 1024, 65536 },
	};

	for (unsigned gi = 0; gi < ARRAY_SIZE(geoms); gi++) {
		u32 nb = geoms[gi][0], bs = geoms[gi][1], blk = geoms[gi][2];
		struct bfs_dev *dev = mkdev((u64)nb * bs);
		struct bfs_journal_geom g = geom(dev, nb, bs, blk, uuid_a);
		struct bfs_journal *j;
		struct replayed r;
		u32 max, n;
		u64 *buf, t = 0, seq;

		j = jopen_read(&g, 0, &r);
		bfs_journal_set_reclaim(j, reclaim_to_want, j);
		max = bfs_journal_max_add_u64s(j);
		ck_assert_uint_eq(max, (BFS_MIN(bs, BFS_JSET_MAX_BYTES) - sizeof(struct bfs_jset)) / 8);
		buf = calloc(max + 1, 8);
		ck_assert_ptr_nonnull(buf);
		fill_pads(buf, max + 1);
		ck_assert_int_eq(bfs_journal_add(j, buf, max + 1, &seq), -E2BIG);

		/* small and large records, wrapping the ring a few times */
		for (u64 bytes = 0; bytes < 5ULL * nb * bs; t++) {
			u32 extra = (u32)((t * 7919) % 300);

			add_rec(j, t, extra);
			bytes += 16 + extra * 8;
			if (t % 50 == 49) {
				/* now and then a big record (up to a whole entry) */
				n = BFS_MIN(max, 20000);
				fill_pads(buf, n);
				ck_assert_int_eq(bfs_journal_add(j, buf, n, NULL), 0);
				bytes += n * 8;
			}
			if (t % 5 == 4)
				ck_assert_int_eq(bfs_journal_flush(j), 0);
		}
		ck_assert_int_eq(bfs_journal_flush(j), 0);
		seq = bfs_journal_durable_seq(j);
		bfs_journal_close(j);

		j = jopen_read(&g, 0, &r);
		ck_assert_uint_gt(r.nr, 0);
		ck_assert_uint_eq(r.tag[r.nr - 1], t - 1);
		ck_assert_uint_eq(r.seq[r.nr - 1], seq);
		for (size_t i = 1; i < r.nr; i++)
			ck_assert_uint_eq(r.tag[i], r.tag[i - 1] + 1);
		bfs_journal_close(j);
		replayed_free(&r);
		free(buf);
		bfs_dev_close(dev);
	}
}
END_TEST

/* free_bytes is exact when entries tile the buckets */
static int reclaim_forbidden(void *ctx, u64 want_seq)
{
	unsigned *calls = ctx;

	(*calls)++;
	return -ENOSPC;
}

START_TEST(test_free_bytes)
{
	struct bfs_dev *dev = mkdev(4 * KB64);
	struct bfs_journal_geom g = geom(dev, 4, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct replayed r;
	unsigned calls = 0, written = 0;
	/* one 4 KiB entry: header + one sub-entry of 4024 bytes */
	u32 n = (4096 - sizeof(struct bfs_jset)) / 8;
	u64 *buf = calloc(n, 8), last;

	ck_assert_ptr_nonnull(buf);
	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(bfs_journal_free_bytes(j), 3 * KB64);
	bfs_journal_set_reclaim(j, reclaim_forbidden, &calls);
	fill_pads(buf, n);
	while (bfs_journal_free_bytes(j) >= 4096) {
		ck_assert_int_eq(bfs_journal_add(j, buf, n, NULL), 0);
		ck_assert_int_eq(bfs_journal_flush(j), 0);
		written++;
	}
	ck_assert_uint_eq(calls, 0);
	ck_assert_uint_eq(written, 3 * 16);
	/* the next one needs reclaim */
	ck_assert_int_eq(bfs_journal_add(j, buf, n, NULL), 0);
	ck_assert_int_eq(bfs_journal_flush(j), -ENOSPC);
	ck_assert_uint_eq(calls, 1);

	/* a checkpoint outside the hook (set_last_seq) makes room again */
	last = bfs_journal_durable_seq(j);
	bfs_journal_set_last_seq(j, last + 1);
	/* a lower bound: the full current bucket is not counted as a spare */
	ck_assert_uint_eq(bfs_journal_free_bytes(j), 2 * KB64);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	ck_assert_uint_eq(calls, 1);
	ck_assert_uint_eq(bfs_journal_free_bytes(j), 3 * KB64 - 4096);
	for (written = 0; bfs_journal_free_bytes(j) >= 4096; written++) {
		ck_assert_int_eq(bfs_journal_add(j, buf, n, NULL), 0);
		ck_assert_int_eq(bfs_journal_flush(j), 0);
	}
	ck_assert_uint_eq(written, 3 * 16 - 1);
	ck_assert_uint_eq(calls, 1);
	bfs_journal_close(j);
	free(buf);
	bfs_dev_close(dev);
}
END_TEST

/* ---- walk, validation, errors ---- */

START_TEST(test_walk)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct find_ctx f;

	write_n_entries(&g, 12);
	f = find_entry(&g, 12);
	ck_assert_uint_eq(f.nr, 12);
	ck_assert_uint_eq(f.offset, RING_START + 11 * 4096);
	bfs_dev_close(dev);
}
END_TEST

static struct bfs_jset *make_jset(u64 *buf, u64 seq, u64 last_seq)
{
	struct bfs_jset *jset = (void *)buf;
	u32 n = rec_build(buf + 8, 42, 3);

	memset(jset, 0, sizeof(*jset));
	jset->magic = cpu_to_le64(BFS_JSET_MAGIC);
	memcpy(jset->uuid, uuid_a, 16);
	jset->seq = cpu_to_le64(seq);
	jset->last_seq = cpu_to_le64(last_seq);
	jset->flags = cpu_to_le32(BFS_JSET_FLUSH);
	jset->u64s = cpu_to_le32(n);
	jset->csum = cpu_to_le64(bfs_xxh3((u8 *)jset + BFS_JSET_CSUM_OFFSET,
					  bfs_jset_bytes(jset) - BFS_JSET_CSUM_OFFSET));
	return jset;
}

START_TEST(test_validate)
{
	u64 buf[512];
	struct bfs_jset *jset;
	struct bfs_jset_entry *e;
	char err[BFS_ERR_LEN];
	unsigned nr = 0;

	jset = make_jset(buf, 7, 3);
	ck_assert_int_eq(bfs_jset_validate(jset, sizeof(buf), uuid_a, 4096, err), 0);
	for_each_jset_entry(jset, e) {
		ck_assert_uint_eq(rec_check(e), 42);
		ck_assert_str_eq(bfs_jset_entry_type_name(e->type), "btree_keys");
		nr++;
	}
	ck_assert_uint_eq(nr, 1);

	ck_assert_int_eq(bfs_jset_validate(jset, sizeof(buf), uuid_b, 4096, err), -ESTALE);
	ck_assert_ptr_nonnull(strstr(err, "UUID"));

	ck_assert_int_eq(bfs_jset_validate(jset, 64, uuid_a, 4096, err), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "out of bounds"));

	buf[9] ^= 1;
	ck_assert_int_eq(bfs_jset_validate(jset, sizeof(buf), uuid_a, 4096, err), -EUCLEAN);
	ck_assert_str_eq(strstr(err, "journal entry at offset 4096 seq 7: bad checksum") ? "y" : err, "y");

	jset = make_jset(buf, 7, 8);
	ck_assert_int_eq(bfs_jset_validate(jset, sizeof(buf), uuid_a, 4096, err), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "last_seq 8 out of range"));

	jset = make_jset(buf, 7, 7);
	jset->magic = cpu_to_le64(1);
	ck_assert_int_eq(bfs_jset_validate(jset, sizeof(buf), uuid_a, 8192, err), -ENODATA);
	ck_assert_ptr_nonnull(strstr(err, "offset 8192: bad magic"));
}
END_TEST

START_TEST(test_write_error)
{
	struct bfs_dev *dev = mkdev(8 * KB64);
	struct bfs_journal_geom g = geom(dev, 8, KB64, 4096, uuid_a);
	struct bfs_journal *j;
	struct replayed r;

	u64 t, ok = 0;
	char want[32];
	int ret = 0;

	j = jopen_read(&g, 0, &r);
	add_rec(j, 0, 1);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	tu_log_reset();
	bfs_dev_fail_writes_after(dev, 1);
	for (t = 1; t < 5 && !ret; t++) {
		add_rec(j, t, 1);
		ret = bfs_journal_flush(j);
		ok += !ret;
	}
	ck_assert_int_eq(ret, -EIO);
	snprintf(want, sizeof(want), "seq %llu", (unsigned long long)t);
	ck_assert_ptr_nonnull(strstr(tu_last_err, want));
	/* sticky: the journal is dead */
	ck_assert_int_eq(bfs_journal_flush(j), -EIO);
	ck_assert_int_eq(bfs_journal_add(j, &r, 0, NULL), -EIO);
	bfs_journal_close(j);
	bfs_dev_fail_writes_after(dev, 0);
	bfs_log_set_hook(NULL, NULL);

	j = jopen_read(&g, 0, &r);
	ck_assert_uint_eq(r.nr, 1 + ok);
	bfs_journal_close(j);
	replayed_free(&r);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_bad_geometry)
{
	struct bfs_dev *dev = mkdev(4 * KB64);
	struct bfs_journal_geom g = geom(dev, 4, KB64, 4096, uuid_a);
	struct bfs_journal *j;

	g.nbuckets = 1;
	ck_assert_int_eq(bfs_journal_open(&g, &j), -EINVAL);
	g = geom(dev, 400, KB64, 4096, uuid_a);		/* past the end of the device */
	ck_assert_int_eq(bfs_journal_open(&g, &j), -EINVAL);
	g = geom(dev, 4, KB64, 3000, uuid_a);
	ck_assert_int_eq(bfs_journal_open(&g, &j), -EINVAL);
	bfs_dev_close(dev);
}
END_TEST

/* a sub-entry holding @n keys of @val u64s each, then @tail u64s of junk */
static struct bfs_jset_entry *keys_entry(u64 *buf, unsigned n, unsigned val, unsigned tail)
{
	struct bfs_jset_entry *e = (void *)buf;
	__le64 *p = e->_data;
	unsigned i;

	for (i = 0; i < n; i++) {
		bfs_bkey_init((struct bfs_bkey *)p, BFS_KEY_INODE, BFS_POS(i + 1, 0, 0), val);
		p += BFS_BKEY_U64S + val;
	}
	memset(p, 0, tail * 8);
	bfs_jset_entry_init(e, BFS_JSET_ENTRY_BTREE_KEYS, BFS_BTREE_INODES, 0,
			    (u16)(p + tail - e->_data));
	return e;
}

static unsigned walk_keys(const struct bfs_jset_entry *e, bool *done)
{
	const struct bfs_bkey *k;
	unsigned n = 0;

	for_each_jset_key(e, k) {
		ck_assert_uint_eq(le64_to_cpu(k->inode), n + 1);
		n++;
	}
	*done = bfs_jset_keys_done(e, k);
	return n;
}

/* for_each_jset_key visits whole keys only and says where it stopped */
START_TEST(test_jset_key_walk)
{
	u64 buf[256];
	struct bfs_jset_entry *e;
	bool done;

	e = keys_entry(buf, 3, 2, 0);
	ck_assert_uint_eq(walk_keys(e, &done), 3);
	ck_assert(done);
	e = keys_entry(buf, 0, 0, 0);
	ck_assert_uint_eq(walk_keys(e, &done), 0);
	ck_assert(done);

	/* a zero-length key (u64s 0) would loop for ever if trusted */
	e = keys_entry(buf, 2, 1, 1);
	ck_assert_uint_eq(walk_keys(e, &done), 2);
	ck_assert(!done);

	/* the last key's length runs past the sub-entry */
	e = keys_entry(buf, 2, 3, 0);
	e->u64s = cpu_to_le16(le16_to_cpu(e->u64s) - 1);
	ck_assert_uint_eq(walk_keys(e, &done), 1);
	ck_assert(!done);

	/* a header shorter than a key header */
	e = keys_entry(buf, 1, 0, 2);
	((struct bfs_bkey *)(e->_data + BFS_BKEY_U64S))->u64s = cpu_to_le16(BFS_BKEY_U64S - 1);
	ck_assert_uint_eq(walk_keys(e, &done), 1);
	ck_assert(!done);
}
END_TEST

static Suite *journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("core");
	TCase *ring = tcase_create("ring");
	TCase *mt = tcase_create("threads");

	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_last_seq_and_min_seq);
	tcase_add_test(tc, test_fresh_min_seq);
	tcase_add_test(tc, test_bad_csum_in_range);
	tcase_add_test(tc, test_seq_gap);
	tcase_add_test(tc, test_sub_entry_overrun);
	tcase_add_test(tc, test_jset_key_walk);
	tcase_add_test(tc, test_torn_tail);
	tcase_add_test(tc, test_other_uuid);
	tcase_add_test(tc, test_e2big);
	tcase_add_test(tc, test_pre_write);
	tcase_add_test(tc, test_walk);
	tcase_add_test(tc, test_validate);
	tcase_add_test(tc, test_write_error);
	tcase_add_test(tc, test_bad_geometry);
	suite_add_tcase(s, tc);

	/* slow under sanitizers: generous timeouts */
	tcase_set_timeout(ring, 300);
	tcase_add_test(ring, test_wraparound);
	tcase_add_test(ring, test_reclaim_enospc);
	tcase_add_test(ring, test_crash_states);
	tcase_add_test(ring, test_geometries);
	tcase_add_test(ring, test_free_bytes);
	suite_add_tcase(s, ring);

	tcase_set_timeout(mt, 300);
	tcase_add_test(mt, test_concurrent_adds);
	tcase_add_test(mt, test_concurrent_adds_flusher);
	tcase_add_test(mt, test_flusher_enospc);
	tcase_add_test(mt, test_concurrent_wrap);
	suite_add_tcase(s, mt);
	return s;
}

BFS_UNIT_MAIN(journal_suite)
