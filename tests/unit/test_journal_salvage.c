// SPDX-License-Identifier: MIT
/*
 * Journal recovery of damaged rings (bfs_journal_recover()): what is a torn
 * write and what is damage, the finding each piece of damage gives, what
 * salvage replays, and that a reset journal opens again.
 */
#include "unit.h"

#include <bfs/checksum.h>
#include <bfs/journal.h>
#include <bfs/os.h>

#include <stdio.h>

#define KB64		(64 * 1024)
#define RING_START	(1024 * 1024)
#define NBUCKETS	8

static const u8 uuid_a[16] = { 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8,
			       0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0 };

static struct bfs_journal_geom geom(struct bfs_dev *dev)
{
	struct bfs_journal_geom g = {
		.dev = dev, .start = RING_START, .nbuckets = NBUCKETS,
		.bucket_size = KB64, .block_size = 4096,
	};

	memcpy(g.uuid, uuid_a, 16);
	return g;
}

static struct bfs_dev *mkdev(void)
{
	struct bfs_dev *dev;

	ck_assert_int_eq(bfs_dev_open_mem(RING_START + NBUCKETS * KB64 + KB64, &dev), 0);
	return dev;
}

static struct bfs_journal *jopen(const struct bfs_journal_geom *g)
{
	struct bfs_journal *j;

	ck_assert_int_eq(bfs_journal_open(g, &j), 0);
	return j;
}

/* a BTREE_KEYS sub-entry: a tag and @extra words */
static void add_rec(struct bfs_journal *j, u64 tag, u32 extra)
{
	u64 buf[2 + 400];
	struct bfs_jset_entry *e = (void *)buf;

	ck_assert_uint_le(extra, 400);
	bfs_jset_entry_init(e, BFS_JSET_ENTRY_BTREE_KEYS, 0, 0, (u16)(1 + extra));
	buf[1] = tag;
	for (u32 i = 0; i < extra; i++)
		buf[2 + i] = tag ^ i;
	ck_assert_int_eq(bfs_journal_add(j, buf, 2 + extra, NULL), 0);
}

/* entries 1..n, entry i holding tag i; entries in @big are 1.6 KiB (several sectors), the rest fit in one */
static void write_entries(const struct bfs_journal_geom *g, u64 n, u64 big)
{
	struct bfs_journal *j = jopen(g);

	ck_assert_int_eq(bfs_journal_read(j, 0, NULL, NULL), 0);
	for (u64 i = 1; i <= n; i++) {
		add_rec(j, i, i == big ? 200 : 3);
		ck_assert_int_eq(bfs_journal_flush(j), 0);
	}
	bfs_journal_close(j);
}

struct found {
	u64 seq, offset, bytes;
};

static int find_fn(void *ctx, u64 offset, const struct bfs_jset *jset)
{
	struct found *f = ctx;

	if (le64_to_cpu(jset->seq) == f->seq) {
		f->offset = offset;
		f->bytes = bfs_jset_bytes(jset);
	}
	return 0;
}

static struct found find_entry(const struct bfs_journal_geom *g, u64 seq)
{
	struct bfs_journal *j = jopen(g);
	struct found f = { .seq = seq };

	ck_assert_int_eq(bfs_journal_walk(j, find_fn, &f), 0);
	bfs_journal_close(j);
	ck_assert_uint_ne(f.offset, 0);
	return f;
}

/* copy entry @f to @to with seq and last_seq changed and the checksum recomputed */
static void forge(struct bfs_dev *dev, struct found f, u64 to, u64 seq, u64 last_seq)
{
	u8 *mem = bfs_dev_mem(dev);
	struct bfs_jset *js = (void *)(mem + to);

	memmove(mem + to, mem + f.offset, 4096);
	js->seq = cpu_to_le64(seq);
	js->last_seq = cpu_to_le64(last_seq);
	js->csum = cpu_to_le64(bfs_xxh3((const u8 *)js + BFS_JSET_CSUM_OFFSET,
					f.bytes - BFS_JSET_CSUM_OFFSET));
}

static u64 bucket_off(unsigned b)
{
	return RING_START + (u64)b * KB64;
}

/* what a read delivered: tags replayed, findings */
struct result {
	u64 tags[64];
	unsigned nr;
	unsigned roots;		/* BTREE_ROOT sub-entries delivered */
	u64 root_seq;		/* the seq of the last one */
	struct bfs_finding fd[8];
	unsigned nr_fd;
};

static int collect(void *ctx, u64 seq, const struct bfs_jset_entry *e)
{
	struct result *r = ctx;

	if (e->type == BFS_JSET_ENTRY_BTREE_ROOT) {
		r->roots++;
		r->root_seq = seq;
		return 0;
	}
	if (e->type != BFS_JSET_ENTRY_BTREE_KEYS)
		return 0;
	ck_assert_uint_lt(r->nr, 64);
	ck_assert_uint_eq(((const u64 *)bfs_jset_entry_data(e))[0], seq);
	r->tags[r->nr++] = seq;
	return 0;
}

static void finding(void *ctx, const struct bfs_finding *fd)
{
	struct result *r = ctx;

	ck_assert_uint_lt(r->nr_fd, 8);
	r->fd[r->nr_fd++] = *fd;
}

static int reject_tag(void *ctx, u64 seq, const struct bfs_jset_entry *e, char *err)
{
	if (e->type == BFS_JSET_ENTRY_BTREE_KEYS &&
	    ((const u64 *)bfs_jset_entry_data(e))[0] == *(const u64 *)ctx) {
		snprintf(err, BFS_ERR_LEN, "tag %llu rejected", (unsigned long long)seq);
		return -EUCLEAN;
	}
	return 0;
}

static int recover(struct bfs_journal *j, struct bfs_journal_read_opts o, struct result *r)
{
	memset(r, 0, sizeof(*r));
	o.finding = finding;
	o.finding_ctx = r;
	return bfs_journal_recover(j, &o, collect, r);
}

/* replayed exactly seqs 1..n */
static void assert_replayed(const struct result *r, unsigned n)
{
	ck_assert_uint_eq(r->nr, n);
	for (unsigned i = 0; i < n; i++)
		ck_assert_uint_eq(r->tags[i], i + 1);
}

/* after a reset, a new entry is all a strict read finds */
static void reset_and_reopen(const struct bfs_journal_geom *g, struct bfs_journal *j)
{
	struct result r;
	u64 seq = bfs_journal_cur_seq(j);

	ck_assert_int_eq(bfs_journal_reset(j), 0);
	ck_assert(!bfs_journal_needs_reset(j));
	add_rec(j, seq, 3);
	ck_assert_int_eq(bfs_journal_flush(j), 0);
	bfs_journal_close(j);
	j = jopen(g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ 0 }, &r), 0);
	ck_assert_uint_eq(r.nr_fd, 0);
	ck_assert_uint_eq(r.nr, 1);
	ck_assert_uint_eq(r.tags[0], seq);
	bfs_journal_close(j);
}

START_TEST(test_torn_newest_is_a_crash_state)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal *j;
	struct result r;
	struct found f;

	write_entries(&g, 10, 10);
	f = find_entry(&g, 10);
	ck_assert_uint_gt(f.bytes, 1024);
	/* only the first two sectors of the last write made it */
	memset(bfs_dev_mem(dev) + f.offset + 1024, 0x5a, f.bytes - 1024);
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ 0 }, &r), 0);
	ck_assert_uint_eq(r.nr_fd, 0);
	assert_replayed(&r, 9);
	ck_assert(!bfs_journal_needs_reset(j));
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 10);
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_corrupt_newest_in_one_sector)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal *j;
	struct result r;
	struct found f;

	write_entries(&g, 10, 0);
	f = find_entry(&g, 10);
	ck_assert_uint_le(f.bytes, 512);
	bfs_dev_mem(dev)[f.offset + f.bytes - 5] ^= 0x10;
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ 0 }, &r), 0);
	assert_replayed(&r, 9);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_NEWEST_CORRUPT);
	ck_assert_uint_eq(r.fd[0].loc.jseq, 10);
	ck_assert_uint_eq(r.fd[0].loc.jentry, f.offset);
	ck_assert_uint_eq(r.fd[0].loc.jbucket, (f.offset - RING_START) / KB64);
	ck_assert(bfs_journal_needs_reset(j));
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_gap_salvaged)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal_read_opts salvage = { .salvage = true };
	struct bfs_journal *j;
	struct result r;
	struct found f;

	write_entries(&g, 10, 0);
	f = find_entry(&g, 4);
	memset(bfs_dev_mem(dev) + f.offset, 0, 4096);	/* entry 4 vanishes */
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ 0 }, &r), -EUCLEAN);
	ck_assert_uint_eq(r.nr, 0);
	bfs_journal_close(j);

	j = jopen(&g);
	ck_assert_int_eq(recover(j, salvage, &r), 0);
	assert_replayed(&r, 3);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_SEQ_GAP);
	ck_assert_uint_eq(r.fd[0].loc.jseq, 4);
	ck_assert_ptr_nonnull(strstr(r.fd[0].detail, "6 valid entries up to seq 10 discarded"));
	/* new seqs go above everything on disk */
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 11);
	reset_and_reopen(&g, j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_blank_bucket_head_hides_nothing)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal *j;
	struct result r;

	/* 4 KiB entries, 16 to a bucket: 17..20 start bucket 1 */
	write_entries(&g, 20, 0);
	ck_assert_uint_eq(find_entry(&g, 17).offset, bucket_off(1));
	memset(bfs_dev_mem(dev) + bucket_off(1), 0, 4096);
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ 0 }, &r), -EUCLEAN);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_SEQ_GAP);
	ck_assert_uint_eq(r.fd[0].loc.jseq, 17);
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

/* entries 1..n, each with a key record and a root (as the btree layer's pre-write hook adds) */
static void write_entries_with_roots(const struct bfs_journal_geom *g, u64 n)
{
	struct bfs_journal *j = jopen(g);

	ck_assert_int_eq(bfs_journal_read(j, 0, NULL, NULL), 0);
	for (u64 i = 1; i <= n; i++) {
		u64 buf[2];

		add_rec(j, i, 3);
		bfs_jset_entry_init((struct bfs_jset_entry *)buf, BFS_JSET_ENTRY_BTREE_ROOT, 0, 0, 1);
		buf[1] = 0xf00d;
		ck_assert_int_eq(bfs_journal_add(j, buf, 2, NULL), 0);
		ck_assert_int_eq(bfs_journal_flush(j), 0);
	}
	bfs_journal_close(j);
}

START_TEST(test_damaged_range_start_keeps_roots)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal *j;
	struct result r;

	write_entries_with_roots(&g, 10);
	bfs_dev_mem(dev)[find_entry(&g, 1).offset + 100] ^= 1;
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ .salvage = true }, &r), 0);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_ENTRY_CORRUPT);
	/* no keys, but the roots every entry of the range carries, from the newest */
	ck_assert_uint_eq(r.nr, 0);
	ck_assert_uint_eq(r.roots, 1);
	ck_assert_uint_eq(r.root_seq, 10);
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_corrupt_in_range_salvaged)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal *j;
	struct result r;
	struct found f;

	write_entries(&g, 10, 0);
	f = find_entry(&g, 7);
	bfs_dev_mem(dev)[f.offset + 100] ^= 1;
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ .salvage = true }, &r), 0);
	assert_replayed(&r, 6);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_ENTRY_CORRUPT);
	ck_assert_uint_eq(r.fd[0].loc.jseq, 7);
	ck_assert_ptr_nonnull(strstr(r.fd[0].detail, "bad checksum"));
	reset_and_reopen(&g, j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_invalid_entry_salvaged)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	u64 bad_tag = 5;
	struct bfs_journal_read_opts o = { .check = reject_tag, .check_ctx = &bad_tag };
	struct bfs_journal *j;
	struct result r;

	write_entries(&g, 10, 0);
	j = jopen(&g);
	ck_assert_int_eq(recover(j, o, &r), -EUCLEAN);
	ck_assert_uint_eq(r.nr, 0);		/* checked before anything is replayed */
	bfs_journal_close(j);
	o.salvage = true;
	j = jopen(&g);
	ck_assert_int_eq(recover(j, o, &r), 0);
	assert_replayed(&r, 4);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_ENTRY_INVALID);
	ck_assert_uint_eq(r.fd[0].loc.jseq, 5);
	ck_assert_ptr_nonnull(strstr(r.fd[0].detail, "tag 5 rejected"));
	reset_and_reopen(&g, j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_forged_newest)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal *j;
	struct result r;

	write_entries(&g, 10, 0);
	/* a valid-looking entry with a far higher seq, in an unused bucket */
	forge(dev, find_entry(&g, 3), bucket_off(5), 1000, 1000);
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ 0 }, &r), -EUCLEAN);
	bfs_journal_close(j);
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ .salvage = true }, &r), 0);
	assert_replayed(&r, 10);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_OUT_OF_SEQUENCE);
	ck_assert_uint_eq(r.fd[0].loc.jseq, 1000);
	ck_assert_uint_eq(r.fd[0].loc.jentry, bucket_off(5));
	ck_assert_uint_gt(bfs_journal_cur_seq(j), 1000);
	reset_and_reopen(&g, j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_second_copy_of_a_seq)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal *j;
	struct result r;
	struct found f;

	write_entries(&g, 10, 0);
	f = find_entry(&g, 7);
	forge(dev, f, bucket_off(6), 7, 1);
	j = jopen(&g);
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ .salvage = true }, &r), 0);
	assert_replayed(&r, 10);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_OUT_OF_SEQUENCE);
	ck_assert_uint_eq(r.fd[0].loc.jentry, bucket_off(6));
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_tail_garbage)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal *j;
	struct result r;

	write_entries(&g, 10, 0);
	/* corrupt entries claiming later seqs, away from the write position */
	forge(dev, find_entry(&g, 2), bucket_off(6), 13, 13);
	bfs_dev_mem(dev)[bucket_off(6) + 90] ^= 4;
	forge(dev, find_entry(&g, 2), bucket_off(7), 14, 14);
	bfs_dev_mem(dev)[bucket_off(7) + 90] ^= 4;
	j = jopen(&g);
	/* not in the replay range: a mount goes on */
	ck_assert_int_eq(recover(j, (struct bfs_journal_read_opts){ 0 }, &r), 0);
	assert_replayed(&r, 10);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_TAIL_CORRUPT);
	ck_assert_ptr_nonnull(strstr(r.fd[0].detail, "2 corrupt entries"));
	ck_assert(bfs_journal_needs_reset(j));
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_clean_with_stale_entries)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal_read_opts clean = { .min_seq = 5, .clean = true };
	struct bfs_journal *j;
	struct result r;

	write_entries(&g, 10, 0);
	j = jopen(&g);
	/*
	 * clean at seq 5, but 6..10 continue the log: the clean flag is out of
	 * date, so every opener replays them as after a crash (reported as
	 * JOURNAL_AFTER_CLEAN) and nothing is erased: they are still needed
	 */
	ck_assert_int_eq(recover(j, clean, &r), 0);
	ck_assert_uint_eq(r.nr, 5);
	for (unsigned i = 0; i < 5; i++)
		ck_assert_uint_eq(r.tags[i], 6 + i);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_AFTER_CLEAN);
	ck_assert_uint_eq(r.fd[0].loc.jseq, 6);
	ck_assert_ptr_nonnull(strstr(r.fd[0].detail, "5 valid entries (seq 6..10"));
	ck_assert(!bfs_journal_needs_reset(j));
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 11);
	bfs_journal_close(j);

	/* a second clean open replays them again: nothing was lost in between */
	j = jopen(&g);
	ck_assert_int_eq(recover(j, clean, &r), 0);
	ck_assert_uint_eq(r.nr, 5);
	ck_assert_uint_eq(bfs_journal_cur_seq(j), 11);
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

/* entries after the clean shutdown that do not continue the log: garbage */
START_TEST(test_clean_with_gap)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal_read_opts clean = { .min_seq = 10, .clean = true };
	struct bfs_journal *j;
	struct result r;

	write_entries(&g, 10, 0);
	forge(dev, find_entry(&g, 10), bucket_off(6), 12, 12);
	j = jopen(&g);
	ck_assert_int_eq(recover(j, clean, &r), 0);
	ck_assert_uint_eq(r.nr, 0);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_STALE);
	ck_assert_uint_eq(r.fd[0].loc.jseq, 12);
	ck_assert(bfs_journal_needs_reset(j));
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_clean_with_corrupt_garbage)
{
	struct bfs_dev *dev = mkdev();
	struct bfs_journal_geom g = geom(dev);
	struct bfs_journal_read_opts clean = { .min_seq = 10, .clean = true };
	struct bfs_journal *j;
	struct result r;

	write_entries(&g, 10, 0);
	/* an old corrupt entry is dead and ignored; one claiming a later seq is garbage */
	bfs_dev_mem(dev)[find_entry(&g, 4).offset + 100] ^= 1;
	forge(dev, find_entry(&g, 2), bucket_off(6), 11, 11);
	bfs_dev_mem(dev)[bucket_off(6) + 100] ^= 1;
	j = jopen(&g);
	ck_assert_int_eq(recover(j, clean, &r), 0);
	ck_assert_uint_eq(r.nr_fd, 1);
	ck_assert_int_eq(r.fd[0].code, PR_JOURNAL_STALE);
	ck_assert_uint_eq(r.fd[0].loc.jentry, bucket_off(6));
	ck_assert_ptr_nonnull(strstr(r.fd[0].detail, "0 valid entries"));
	ck_assert_ptr_nonnull(strstr(r.fd[0].detail, "1 corrupt one "));
	bfs_journal_close(j);
	bfs_dev_close(dev);
}
END_TEST

static Suite *journal_salvage_suite(void)
{
	Suite *s = suite_create("journal_salvage");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_torn_newest_is_a_crash_state);
	tcase_add_test(tc, test_corrupt_newest_in_one_sector);
	tcase_add_test(tc, test_gap_salvaged);
	tcase_add_test(tc, test_blank_bucket_head_hides_nothing);
	tcase_add_test(tc, test_corrupt_in_range_salvaged);
	tcase_add_test(tc, test_damaged_range_start_keeps_roots);
	tcase_add_test(tc, test_invalid_entry_salvaged);
	tcase_add_test(tc, test_forged_newest);
	tcase_add_test(tc, test_second_copy_of_a_seq);
	tcase_add_test(tc, test_tail_garbage);
	tcase_add_test(tc, test_clean_with_stale_entries);
	tcase_add_test(tc, test_clean_with_gap);
	tcase_add_test(tc, test_clean_with_corrupt_garbage);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(journal_salvage_suite)
