// SPDX-License-Identifier: MIT
/* Superblock: layout choices, encode/decode, every validation failure, fallback. */
#include "tu.h"

#include <bfs/checksum.h>
#include <bfs/core.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <string.h>

static struct bfs_sb *new_sb(u64 dev_size, const struct bfs_format_opts *o)
{
	struct bfs_format_opts def = { 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";

	ck_assert_int_eq(bfs_sb_layout(o ? o : &def, dev_size, 512, sb, err), 0);
	sb->csum = cpu_to_le64(bfs_sb_csum(sb));
	return sb;
}

/* recompute the checksum after a deliberate change, so only the change is seen */
static void reseal(struct bfs_sb *sb)
{
	sb->csum = cpu_to_le64(bfs_sb_csum(sb));
}

static int validate(struct bfs_sb *sb, char *err)
{
	return bfs_sb_validate(sb, BFS_SB_MAX_BYTES, 0, err);
}

START_TEST(test_layout_defaults)
{
	static const u64 sizes[] = { 8 * MiB, 16 * MiB, 100 * MiB, 1 * GiB, 64 * GiB, 1 * TiB };
	char err[BFS_ERR_LEN];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct bfs_sb *sb = new_sb(sizes[i], NULL);
		u64 bucket = le32_to_cpu(sb->bucket_size);

		ck_assert_msg(validate(sb, err) == 0, "size %llu: %s",
			      (unsigned long long)sizes[i], err);
		ck_assert_uint_ge(bucket, le32_to_cpu(sb->btree_node_size));
		ck_assert_uint_le(le64_to_cpu(sb->nbuckets) * bucket,
				  le64_to_cpu(sb->copy_offset[sb->nr_copies - 1]));
		ck_assert_uint_eq(sb->nr_copies, 3);
		ck_assert_uint_eq(sb->csum_type, BFS_CSUM_XXH3);
		bfs_free(sb);
	}
}
END_TEST

START_TEST(test_layout_1g)
{
	struct bfs_sb *sb = new_sb(1 * GiB, NULL);

	ck_assert_uint_eq(le32_to_cpu(sb->block_size), 4096);
	ck_assert_uint_eq(le32_to_cpu(sb->bucket_size), 256 * KiB);
	ck_assert_uint_eq(le32_to_cpu(sb->btree_node_size), 256 * KiB);
	ck_assert_uint_eq(le64_to_cpu(sb->first_bucket), 4);
	ck_assert_uint_eq(le64_to_cpu(sb->copy_offset[0]), 4096);
	ck_assert_uint_eq(le64_to_cpu(sb->copy_offset[1]), 512 * KiB);
	ck_assert_uint_eq(le64_to_cpu(sb->copy_offset[2]), 1 * GiB - 64 * KiB);
	bfs_free(sb);
}
END_TEST

static void expect_layout_error(const struct bfs_format_opts *o, u64 dev_size, const char *needle)
{
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";

	ck_assert_int_eq(bfs_sb_layout(o, dev_size, 512, sb, err), -EINVAL);
	ck_assert_msg(strstr(err, needle), "expected '%s' in '%s'", needle, err);
	bfs_free(sb);
}

START_TEST(test_layout_errors)
{
	expect_layout_error(&(struct bfs_format_opts){ 0 }, 4 * MiB, "too small");
	expect_layout_error(&(struct bfs_format_opts){ .block_size = 3000 }, GiB, "power of two");
	expect_layout_error(&(struct bfs_format_opts){ .block_size = 128 * KiB }, GiB, "out of range");
	expect_layout_error(&(struct bfs_format_opts){ .bucket_size = 64 * KiB,
		.btree_node_size = 256 * KiB }, GiB, "larger than the bucket size");
	expect_layout_error(&(struct bfs_format_opts){ .bucket_size = 4096,
		.block_size = 8192 }, GiB, "smaller than the block size");
	expect_layout_error(&(struct bfs_format_opts){ .journal_nbuckets = 2 }, GiB,
			    "too small");
	expect_layout_error(&(struct bfs_format_opts){ .journal_nbuckets = 5000 }, GiB,
			    "device too small");
	expect_layout_error(&(struct bfs_format_opts){ .label =
		"0123456789012345678901234567890123456789012345678901234567890123456789" },
		GiB, "at most 64");
	expect_layout_error(&(struct bfs_format_opts){ .compression_type = BFS_COMPRESSION_ZSTD,
		.compression_level = 30 }, GiB, "out of range");
	expect_layout_error(&(struct bfs_format_opts){ .compression_level = 3 }, GiB,
			    "needs a compression type");
}
END_TEST

START_TEST(test_layout_options)
{
	struct bfs_format_opts o = {
		.block_size = 8192, .bucket_size = 1 * MiB, .btree_node_size = 512 * KiB,
		.label = "data", .have_uuid = true, .uuid = { 1, 2, 3 },
		.compression_type = BFS_COMPRESSION_ZSTD, .compression_level = 7,
		.csum_set = true, .csum_type = BFS_CSUM_NONE, .journal_nbuckets = 10,
	};
	struct bfs_sb *sb = new_sb(10 * GiB, &o);
	char label[BFS_LABEL_SIZE + 1], err[BFS_ERR_LEN];

	ck_assert_int_eq(validate(sb, err), 0);
	ck_assert_uint_eq(le32_to_cpu(sb->block_size), 8192);
	ck_assert_uint_eq(le32_to_cpu(sb->bucket_size), 1 * MiB);
	ck_assert_uint_eq(le32_to_cpu(sb->btree_node_size), 512 * KiB);
	ck_assert_uint_eq(le32_to_cpu(sb->journal_nbuckets), 10);
	ck_assert_uint_eq(sb->compression_type, BFS_COMPRESSION_ZSTD);
	ck_assert_uint_eq(sb->compression_level, 7);
	ck_assert(le64_to_cpu(sb->incompat) & BFS_FEAT_INCOMPAT_ZSTD);
	ck_assert_uint_eq(sb->csum_type, BFS_CSUM_NONE);
	ck_assert_mem_eq(sb->uuid, o.uuid, 16);
	bfs_sb_label(sb, label);
	ck_assert_str_eq(label, "data");
	bfs_free(sb);
}
END_TEST

/* one corruption, the error it must give, and a word the message must hold */
struct corruption {
	const char *name;
	void (*apply)(struct bfs_sb *sb);
	int ret;
	const char *needle;
};

#define C(fn, body) static void fn(struct bfs_sb *sb) { body; }
C(c_magic, sb->magic = cpu_to_le64(0x1234))
C(c_bytes_small, sb->bytes = cpu_to_le32(100))
C(c_bytes_odd, sb->bytes = cpu_to_le32(513))
C(c_bytes_big, sb->bytes = cpu_to_le32(BFS_SB_MAX_BYTES + 8))
C(c_version_min, sb->version_min = cpu_to_le16(BFS_VERSION_CURRENT + 1);
  sb->version = cpu_to_le16(BFS_VERSION_CURRENT + 1))
C(c_version_lt_min, sb->version = cpu_to_le16(0))
C(c_incompat, sb->incompat = cpu_to_le64(1ULL << 40))
C(c_flags, sb->flags = cpu_to_le32(1U << 20))
C(c_block, sb->block_size = cpu_to_le32(1000))
C(c_node_lt_block, sb->block_size = cpu_to_le32(64 * KiB);
  sb->btree_node_size = cpu_to_le32(16 * KiB))
C(c_bucket_lt_node, sb->bucket_size = cpu_to_le32(64 * KiB))
C(c_csum_type, sb->csum_type = 9)
C(c_compression_type, sb->compression_type = 7)
C(c_level_without, sb->compression_level = 3)
C(c_zstd_without_feature, sb->compression_type = BFS_COMPRESSION_ZSTD;
  sb->compression_level = 3)
C(c_dev_size, sb->dev_size = cpu_to_le64(1 * MiB))
C(c_first_bucket, sb->first_bucket = cpu_to_le64(1))
C(c_nbuckets, sb->nbuckets = cpu_to_le64(1ULL << 40))
C(c_journal_small, sb->journal_nbuckets = cpu_to_le32(1))
C(c_journal_outside, sb->journal_bucket = cpu_to_le64(le64_to_cpu(sb->nbuckets) - 2))
C(c_nr_copies, sb->nr_copies = 0)
C(c_copy0, sb->copy_offset[0] = cpu_to_le64(8192))
C(c_copy_misaligned, sb->copy_offset[1] = cpu_to_le64(512 * KiB + 100))
C(c_copy_overlap_buckets, sb->copy_offset[1] = cpu_to_le64(2 * MiB))
C(c_copy_extra, sb->copy_offset[3] = cpu_to_le64(4096))
C(c_reserved, sb->reserved[5] = cpu_to_le64(1))
C(c_field_len, struct bfs_sb_field *f = bfs_sb_field_resize(sb, 7, 2);
  f->u64s = cpu_to_le32(100))
C(c_field_required, bfs_sb_field_resize(sb, 9, 2)->type =
  cpu_to_le32(9 | BFS_SB_FIELD_REQUIRED))
#undef C

static const struct corruption corruptions[] = {
	{ "magic", c_magic, -ENODATA, "magic" },
	{ "bytes small", c_bytes_small, -EUCLEAN, "size" },
	{ "bytes odd", c_bytes_odd, -EUCLEAN, "size" },
	{ "bytes big", c_bytes_big, -EUCLEAN, "size" },
	{ "version_min", c_version_min, -EPROTONOSUPPORT, "version" },
	{ "version < min", c_version_lt_min, -EUCLEAN, "version" },
	{ "incompat", c_incompat, -EPROTONOSUPPORT, "incompat" },
	{ "flags", c_flags, -EUCLEAN, "flags" },
	{ "block_size", c_block, -EUCLEAN, "block_size" },
	{ "node < block", c_node_lt_block, -EUCLEAN, "btree_node_size" },
	{ "bucket < node", c_bucket_lt_node, -EUCLEAN, "bucket_size" },
	{ "csum_type", c_csum_type, -EUCLEAN, "csum_type" },
	{ "compression_type", c_compression_type, -EUCLEAN, "compression_type" },
	{ "level without type", c_level_without, -EUCLEAN, "compression_level" },
	{ "zstd without feature", c_zstd_without_feature, -EUCLEAN, "incompat" },
	{ "dev_size", c_dev_size, -EUCLEAN, "dev_size" },
	{ "first_bucket", c_first_bucket, -EUCLEAN, "first_bucket" },
	{ "nbuckets", c_nbuckets, -EUCLEAN, "nbuckets" },
	{ "journal small", c_journal_small, -EUCLEAN, "journal_nbuckets" },
	{ "journal outside", c_journal_outside, -EUCLEAN, "journal" },
	{ "nr_copies", c_nr_copies, -EUCLEAN, "nr_copies" },
	{ "copy 0", c_copy0, -EUCLEAN, "copy_offset[0]" },
	{ "copy misaligned", c_copy_misaligned, -EUCLEAN, "copy_offset[1]" },
	{ "copy over buckets", c_copy_overlap_buckets, -EUCLEAN, "overlaps" },
	{ "copy beyond nr", c_copy_extra, -EUCLEAN, "beyond nr_copies" },
	{ "reserved", c_reserved, -EUCLEAN, "reserved" },
	{ "section length", c_field_len, -EUCLEAN, "section" },
	{ "required section", c_field_required, -EPROTONOSUPPORT, "required section" },
};

START_TEST(test_validate_each_field)
{
	const struct corruption *c = &corruptions[_i];
	struct bfs_sb *sb = new_sb(1 * GiB, NULL);
	char err[BFS_ERR_LEN] = "";
	int ret;

	c->apply(sb);
	reseal(sb);
	ret = validate(sb, err);
	ck_assert_msg(ret == c->ret, "%s: got %d (%s), want %d", c->name, ret, err, c->ret);
	ck_assert_msg(strstr(err, c->needle), "%s: message '%s' lacks '%s'", c->name, err,
		      c->needle);
	bfs_free(sb);
}
END_TEST

START_TEST(test_validate_checksum_and_truncation)
{
	struct bfs_sb *sb = new_sb(1 * GiB, NULL);
	char err[BFS_ERR_LEN];

	sb->label[0] ^= 1;	/* no reseal: the checksum must catch it */
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	ck_assert(strstr(err, "checksum"));
	sb->label[0] ^= 1;
	ck_assert_int_eq(validate(sb, err), 0);
	ck_assert_int_eq(bfs_sb_validate(sb, 100, 0, err), -EUCLEAN);
	ck_assert(strstr(err, "truncated"));
	/* a device smaller than the filesystem */
	ck_assert_int_eq(bfs_sb_validate(sb, BFS_SB_MAX_BYTES, 512 * MiB, err), -EUCLEAN);
	ck_assert(strstr(err, "truncated image"));
	bfs_free(sb);
}
END_TEST

START_TEST(test_fields)
{
	struct bfs_sb *sb = new_sb(1 * GiB, NULL);
	struct bfs_sb_field *a, *b;
	char err[BFS_ERR_LEN];
	/* the head and the sections format writes (the options: data chunk size) */
	u32 base = le32_to_cpu(sb->bytes);

	a = bfs_sb_field_resize(sb, 5, 3);
	b = bfs_sb_field_resize(sb, 6, 2);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	a->data[0] = cpu_to_le64(111);
	b->data[0] = cpu_to_le64(222);
	ck_assert_uint_eq(le32_to_cpu(sb->bytes), base + 40);
	/* growing the first moves the second intact */
	a = bfs_sb_field_resize(sb, 5, 10);
	ck_assert_uint_eq(le64_to_cpu(a->data[0]), 111);
	b = bfs_sb_field_get(sb, 6);
	ck_assert_uint_eq(le64_to_cpu(b->data[0]), 222);
	reseal(sb);
	ck_assert_int_eq(validate(sb, err), 0);
	bfs_sb_field_delete(sb, 5);
	ck_assert_ptr_null(bfs_sb_field_get(sb, 5));
	ck_assert_uint_eq(le64_to_cpu(bfs_sb_field_get(sb, 6)->data[0]), 222);
	ck_assert_uint_eq(le32_to_cpu(sb->bytes), base + 16);
	ck_assert_ptr_null(bfs_sb_field_resize(sb, 8, BFS_SB_MAX_BYTES / 8));
	bfs_free(sb);
}
END_TEST

static struct bfs_dev *formatted_dev(u64 size, struct bfs_sb **sbp)
{
	struct bfs_dev *dev;
	struct bfs_sb *sb = new_sb(size, NULL);

	ck_assert_int_eq(bfs_dev_open_mem(size, &dev), 0);
	ck_assert_int_eq(bfs_mkfs_write(dev, sb), 0);
	*sbp = sb;
	return dev;
}

START_TEST(test_write_read_roundtrip)
{
	struct bfs_sb *sb;
	struct bfs_dev *dev = formatted_dev(64 * MiB, &sb);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert(!h.used_backup);
	ck_assert_uint_eq(h.offset, BFS_SB_OFFSET);
	ck_assert_uint_eq(le64_to_cpu(h.sb->seq), 1);
	ck_assert_mem_eq(h.sb, sb, le32_to_cpu(sb->bytes));
	ck_assert(le32_to_cpu(h.sb->flags) & BFS_SB_CLEAN);
	bfs_sb_handle_release(&h);
	bfs_free(sb);
	bfs_dev_close(dev);
}
END_TEST

/* unknown ro_compat bits: a read-only core opens, a read-write one is refused */
START_TEST(test_ro_compat_unknown_read_only)
{
	struct bfs_dev *dev = tu_mkfs(64 * MiB, 16 * KiB, 0, 0);
	struct bfs_core_opts ro = { .read_only = true };
	struct bfs_sb_handle h;
	struct bfs_core *c;
	char err[BFS_ERR_LEN];
	u64 seq;

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	h.sb->ro_compat = cpu_to_le64(1ULL << 40);
	ck_assert_int_eq(bfs_sb_write(dev, h.sb), 0);
	seq = le64_to_cpu(h.sb->seq);
	bfs_sb_handle_release(&h);

	tu_log_reset();
	ck_assert_int_eq(bfs_core_open(dev, NULL, &c), -EROFS);
	ck_assert_msg(strstr(tu_last_err, "unsupported ro_compat features 0x10000000000"),
		      "%s", tu_last_err);
	ck_assert_int_eq(bfs_core_open(dev, &ro, &c), 0);
	ck_assert_int_eq(bfs_core_close(c), 0);
	/* neither open wrote the superblock */
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert_uint_eq(le64_to_cpu(h.sb->seq), seq);
	bfs_sb_handle_release(&h);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_fallback_to_backup)
{
	struct bfs_sb *sb;
	struct bfs_dev *dev = formatted_dev(64 * MiB, &sb);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];
	u8 junk[512];

	/* a second write makes seq 2 everywhere; then wreck the primary */
	ck_assert_int_eq(bfs_sb_write(dev, sb), 0);
	memset(junk, 0xa5, sizeof(junk));
	ck_assert_int_eq(bfs_dev_write(dev, BFS_SB_OFFSET + 64, junk, sizeof(junk)), 0);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert(h.used_backup);
	ck_assert(strstr(h.primary_err, "checksum"));
	ck_assert_uint_eq(le64_to_cpu(h.sb->seq), 2);
	bfs_sb_handle_release(&h);

	/* the end copy newer than the middle one: the newest wins */
	{
		u8 *mem = bfs_dev_mem(dev);
		struct bfs_sb *mid = (void *)(mem + BFS_SB_BACKUP_OFFSET);

		mid->seq = cpu_to_le64(1);
		mid->csum = cpu_to_le64(bfs_sb_csum(mid));
	}
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert_uint_eq(h.copy, 2);
	ck_assert_uint_eq(h.offset, 64 * MiB - 64 * KiB);
	bfs_sb_handle_release(&h);
	bfs_free(sb);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_no_valid_copy)
{
	struct bfs_dev *dev;
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN] = "";
	struct bfs_sb *sb;

	/* empty device: not bfs at all */
	ck_assert_int_eq(bfs_dev_open_mem(64 * MiB, &dev), 0);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), -ENODATA);
	ck_assert(strstr(err, "magic"));
	bfs_dev_close(dev);

	/* every copy corrupted: corruption, not "not bfs" */
	dev = formatted_dev(64 * MiB, &sb);
	for (unsigned i = 0; i < sb->nr_copies; i++)
		bfs_dev_mem(dev)[le64_to_cpu(sb->copy_offset[i]) + 40] ^= 0xff;
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), -EUCLEAN);
	ck_assert(strstr(err, "no valid backup"));
	bfs_free(sb);
	bfs_dev_close(dev);

	/* a device too small to hold even the primary */
	ck_assert_int_eq(bfs_dev_open_mem(4096, &dev), 0);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), -ENODATA);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_unsupported_primary_is_final)
{
	struct bfs_sb *sb;
	struct bfs_dev *dev = formatted_dev(64 * MiB, &sb);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];

	sb->incompat = cpu_to_le64(1ULL << 50);
	sb->nr_copies = 1;	/* only rewrite the primary */
	ck_assert_int_eq(bfs_sb_write(dev, sb), 0);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), -EPROTONOSUPPORT);
	ck_assert(strstr(err, "incompat"));
	bfs_free(sb);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_write_survives_io_error)
{
	struct bfs_sb *sb;
	struct bfs_dev *dev = formatted_dev(64 * MiB, &sb);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];

	/* fail after the backups: the primary keeps the old, valid superblock */
	bfs_dev_fail_writes_after(dev, 2);
	ck_assert_int_eq(bfs_sb_write(dev, sb), -EIO);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert(!h.used_backup);
	ck_assert_uint_eq(le64_to_cpu(h.sb->seq), 1);
	bfs_sb_handle_release(&h);
	bfs_free(sb);
	bfs_dev_close(dev);
}
END_TEST

static Suite *super_suite(void)
{
	Suite *s = suite_create("super");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_layout_defaults);
	tcase_add_test(tc, test_layout_1g);
	tcase_add_test(tc, test_layout_errors);
	tcase_add_test(tc, test_layout_options);
	tcase_add_loop_test(tc, test_validate_each_field, 0, ARRAY_SIZE(corruptions));
	tcase_add_test(tc, test_validate_checksum_and_truncation);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_write_read_roundtrip);
	tcase_add_test(tc, test_fallback_to_backup);
	tcase_add_test(tc, test_ro_compat_unknown_read_only);
	tcase_add_test(tc, test_no_valid_copy);
	tcase_add_test(tc, test_unsupported_primary_is_final);
	tcase_add_test(tc, test_write_survives_io_error);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(super_suite)
