// SPDX-License-Identifier: MIT
/*
 * Settings changed after format (libcore/super/options.c, bfs set-option):
 * each setter's checks, the options section's validation, that new file
 * data follows the data checksum type, and that a set-option write is
 * all-or-nothing in every state a power failure can leave.
 */
#include "unit.h"
#include "crash_states.h"

#include <bfs/checksum.h>
#include <bfs/fs.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct bfs_sb *new_sb(u64 dev_size)
{
	struct bfs_format_opts o = { 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN] = "";

	ck_assert_int_eq(bfs_sb_layout(&o, dev_size, 512, sb, err), 0);
	/*
	 * Without the options section format writes for its data chunk size
	 * (test_chunk_policy checks that): these tests watch settings create
	 * and reuse it, as on a filesystem made before that default.
	 */
	bfs_sb_field_delete(sb, BFS_SB_FIELD_OPTIONS);
	sb->compat = cpu_to_le64(le64_to_cpu(sb->compat) & ~BFS_FEAT_COMPAT_DATA_CHUNK);
	return sb;
}

static int validate(struct bfs_sb *sb, char *err)
{
	sb->csum = cpu_to_le64(bfs_sb_csum(sb));
	return bfs_sb_validate(sb, BFS_SB_MAX_BYTES, 0, err);
}

START_TEST(test_label)
{
	struct bfs_sb *sb = new_sb(64 * MiB);
	char err[BFS_ERR_LEN], label[BFS_LABEL_SIZE + 1], big[BFS_LABEL_SIZE + 2];

	ck_assert_int_eq(bfs_sb_set_label(sb, "data", err), 0);
	bfs_sb_label(sb, label);
	ck_assert_str_eq(label, "data");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	ck_assert_int_eq(bfs_sb_set_label(sb, big, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "longer than 64"));
	bfs_sb_label(sb, label);
	ck_assert_str_eq(label, "data");	/* unchanged on error */
	big[BFS_LABEL_SIZE] = 0;		/* exactly 64 bytes: no terminator on disk */
	ck_assert_int_eq(bfs_sb_set_label(sb, big, err), 0);
	bfs_sb_label(sb, label);
	ck_assert_str_eq(label, big);
	ck_assert_int_eq(bfs_sb_set_label(sb, "", err), 0);
	bfs_sb_label(sb, label);
	ck_assert_str_eq(label, "");
	ck_assert_int_eq(validate(sb, err), 0);
	bfs_free(sb);
}
END_TEST

START_TEST(test_compression)
{
	struct bfs_sb *sb = new_sb(64 * MiB);
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_sb_set_compression(sb, BFS_COMPRESSION_ZSTD, 0, err), 0);
	ck_assert_uint_eq(sb->compression_level, BFS_ZSTD_LEVEL_DEFAULT);
	ck_assert(le64_to_cpu(sb->incompat) & BFS_FEAT_INCOMPAT_ZSTD);
	ck_assert_int_eq(validate(sb, err), 0);
	ck_assert_int_eq(bfs_sb_set_compression(sb, BFS_COMPRESSION_ZSTD, 20, err), -EINVAL);
	ck_assert_int_eq(bfs_sb_set_compression(sb, BFS_COMPRESSION_NONE, 3, err), -EINVAL);
	ck_assert_int_eq(bfs_sb_set_compression(sb, BFS_COMPRESSION_NR, 0, err), -EINVAL);
	ck_assert_uint_eq(sb->compression_type, BFS_COMPRESSION_ZSTD);
	/* off again: old extents may still be compressed, so the bit stays */
	ck_assert_int_eq(bfs_sb_set_compression(sb, BFS_COMPRESSION_NONE, 0, err), 0);
	ck_assert_uint_eq(sb->compression_type, BFS_COMPRESSION_NONE);
	ck_assert_uint_eq(sb->compression_level, 0);
	ck_assert(le64_to_cpu(sb->incompat) & BFS_FEAT_INCOMPAT_ZSTD);
	ck_assert_int_eq(validate(sb, err), 0);
	bfs_free(sb);
}
END_TEST

START_TEST(test_data_csum_section)
{
	struct bfs_sb *sb = new_sb(64 * MiB);
	struct bfs_sb_options *o;
	char err[BFS_ERR_LEN];
	u32 bytes;

	ck_assert_ptr_null(bfs_sb_options_get(sb));
	ck_assert_uint_eq(bfs_sb_data_csum_type(sb), BFS_CSUM_XXH3);
	ck_assert_int_eq(bfs_sb_set_data_csum(sb, BFS_CSUM_NR, err), -EINVAL);
	ck_assert_ptr_null(bfs_sb_options_get(sb));
	ck_assert_int_eq(bfs_sb_set_data_csum(sb, BFS_CSUM_NONE, err), 0);
	ck_assert_uint_eq(bfs_sb_data_csum_type(sb), BFS_CSUM_NONE);
	ck_assert_uint_eq(sb->csum_type, BFS_CSUM_XXH3);	/* metadata keeps its type */
	bytes = le32_to_cpu(sb->bytes);
	ck_assert_int_eq(bfs_sb_set_data_csum(sb, BFS_CSUM_XXH3, err), 0);
	ck_assert_uint_eq(le32_to_cpu(sb->bytes), bytes);	/* reused, not appended */
	ck_assert_uint_eq(bfs_sb_data_csum_type(sb), BFS_CSUM_XXH3);
	ck_assert_int_eq(validate(sb, err), 0);

	/* what validation refuses in the section */
	o = (struct bfs_sb_options *)bfs_sb_options_get(sb);
	o->data_csum_type = BFS_CSUM_NR;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "data_csum_type"));
	o->data_csum_type = BFS_CSUM_XXH3;
	o->data_csum_set = 2;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	o->data_csum_set = 1;
	o->reserved[1] = cpu_to_le64(1);
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "reserved word 1"));
	o->reserved[1] = cpu_to_le64(0);
	o->pad[0] = 1;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	o->pad[0] = 0;
	ck_assert_int_eq(validate(sb, err), 0);
	/* a section too short to hold the options */
	ck_assert_ptr_nonnull(bfs_sb_field_resize(sb, BFS_SB_FIELD_OPTIONS, 2));
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "too short"));
	bfs_free(sb);
}
END_TEST

START_TEST(test_commit_secs)
{
	struct bfs_sb *sb = new_sb(64 * MiB);
	struct bfs_sb_options *o;
	char err[BFS_ERR_LEN];

	ck_assert_uint_eq(bfs_sb_commit_secs(sb), 0);
	ck_assert_int_eq(bfs_sb_set_commit_secs(sb, BFS_COMMIT_SECS_MAX + 1, err), -EINVAL);
	ck_assert_ptr_null(bfs_sb_options_get(sb));
	ck_assert_int_eq(bfs_sb_set_commit_secs(sb, 5, err), 0);
	ck_assert_uint_eq(bfs_sb_commit_secs(sb), 5);
	ck_assert_uint_eq(bfs_sb_data_csum_type(sb), BFS_CSUM_XXH3);	/* untouched */
	ck_assert_int_eq(validate(sb, err), 0);
	o = (struct bfs_sb_options *)bfs_sb_options_get(sb);
	o->commit_secs = cpu_to_le32(BFS_COMMIT_SECS_MAX + 1);
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "commit interval"));
	o->commit_secs = cpu_to_le32(5);
	o->pad2 = cpu_to_le32(1);
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	bfs_free(sb);
}
END_TEST

START_TEST(test_errors)
{
	struct bfs_sb *sb = new_sb(64 * MiB);
	struct bfs_sb_field *f;
	struct bfs_sb_options *o;
	char err[BFS_ERR_LEN];
	unsigned e;

	ck_assert_uint_eq(bfs_sb_errors(sb), BFS_ERRORS_CONTINUE);
	ck_assert_int_eq(bfs_errors_parse("remount-ro", &e), 0);
	ck_assert_uint_eq(e, BFS_ERRORS_RO);
	ck_assert_int_eq(bfs_errors_parse("remount", &e), -EINVAL);
	ck_assert_str_eq(bfs_errors_name(BFS_ERRORS_PANIC), "panic");
	ck_assert_int_eq(bfs_sb_set_errors(sb, BFS_ERRORS_NR, err), -EINVAL);
	ck_assert_int_eq(bfs_sb_set_errors(sb, BFS_ERRORS_PANIC, err), 0);
	ck_assert_uint_eq(bfs_sb_errors(sb), BFS_ERRORS_PANIC);
	ck_assert(le64_to_cpu(sb->compat) & BFS_FEAT_COMPAT_ERRORS);
	ck_assert_uint_eq(bfs_sb_commit_secs(sb), 0);	/* untouched */
	ck_assert_int_eq(validate(sb, err), 0);
	o = (struct bfs_sb_options *)bfs_sb_options_get(sb);
	o->errors = BFS_ERRORS_NR;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "error behaviour"));
	o->errors = BFS_ERRORS_RO;
	o->pad3[5] = 1;
	ck_assert_int_eq(validate(sb, err), -EUCLEAN);
	o->pad3[5] = 0;
	ck_assert_int_eq(validate(sb, err), 0);

	/* a section as the first version wrote it (32 bytes): valid, continue; a setter extends it */
	f = bfs_sb_field_resize(sb, BFS_SB_FIELD_OPTIONS,
				(sizeof(*f) + BFS_SB_OPTIONS_V1_BYTES) / 8);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(validate(sb, err), 0);
	ck_assert_uint_eq(bfs_sb_errors(sb), BFS_ERRORS_CONTINUE);
	ck_assert_int_eq(bfs_sb_set_commit_secs(sb, 9, err), 0);
	ck_assert_uint_eq(bfs_sb_errors(sb), BFS_ERRORS_CONTINUE);
	ck_assert_int_eq(bfs_sb_set_errors(sb, BFS_ERRORS_RO, err), 0);
	ck_assert_uint_eq(bfs_sb_errors(sb), BFS_ERRORS_RO);
	ck_assert_uint_eq(bfs_sb_commit_secs(sb), 9);
	ck_assert_int_eq(validate(sb, err), 0);
	bfs_free(sb);
}
END_TEST

/*
 * What a crash would find 2.5 s after an un-fsync'd write: the file with a
 * 1 s commit interval, nothing without one.
 */
static bool survives_crash(unsigned secs)
{
	const u64 size = 32 * MiB;
	struct bfs_format_opts fo = { 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], buf[16] = "";
	struct bfs_dev *dev, *crashed;
	struct bfs_fs *fs, *fs2;
	struct bfs_stat st;
	bool found;

	ck_assert_int_eq(bfs_dev_open_mem(size, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, size, 512, sb, err), 0);
	ck_assert_int_eq(bfs_sb_set_commit_secs(sb, secs, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	ck_assert_int_eq(bfs_fs_open(dev, NULL, &fs), 0);
	ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, "f", 1, S_IFREG | 0644, 0,
				      &(struct bfs_creds){ 0, 0 }, &st), 0);
	ck_assert_int_eq(bfs_fs_write(fs, st.ino, "committed", 9, 0), 9);
	usleep(2500 * 1000);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &crashed), 0);	/* the power fails here */
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_fs_open(crashed, NULL, &fs2), 0);
	found = !bfs_fs_lookup(fs2, BFS_ROOT_INO, "f", 1, &st) &&
		bfs_fs_read(fs2, st.ino, buf, sizeof(buf), 0) == 9 && !memcmp(buf, "committed", 9);
	ck_assert_int_eq(bfs_fs_close(fs2), 0);
	bfs_dev_close(crashed);
	bfs_dev_close(dev);
	bfs_free(sb);
	return found;
}

START_TEST(test_periodic_commit)
{
	ck_assert_msg(survives_crash(1), "a 1 s commit interval did not make the write durable");
	ck_assert_msg(!survives_crash(0), "without a commit interval the write was durable anyway: "
		      "the test proves nothing");
}
END_TEST

/* ---- crash safety: every state holds all the changes or none ---- */

#define NEW_LABEL "after set-option"
static const u8 new_uuid[16] = { 0xb0, 0x0c, 0x0f, 0x5e, 1, 2, 0x43, 4, 0x85, 6, 7, 8, 9, 10, 11, 12 };

struct sb_state {
	u8 uuid[16];
	u8 label[BFS_LABEL_SIZE];
	u8 compression_type, compression_level;
	unsigned data_csum;
};

static void capture(const struct bfs_sb *sb, struct sb_state *s)
{
	memset(s, 0, sizeof(*s));	/* padding too: states are compared with memcmp */
	memcpy(s->uuid, sb->uuid, 16);
	memcpy(s->label, sb->label, BFS_LABEL_SIZE);
	s->compression_type = sb->compression_type;
	s->compression_level = sb->compression_level;
	s->data_csum = bfs_sb_data_csum_type(sb);
}

struct crash_ctx {
	struct sb_state before, after;
};

static bool check_state(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct crash_ctx *c = ctx;
	struct bfs_sb_handle h;
	struct sb_state s;
	char err[BFS_ERR_LEN];
	bool is_old, is_new;

	if (bfs_sb_read(img, &h, err)) {
		snprintf(why, 512, "no readable superblock: %s", err);
		return false;
	}
	capture(h.sb, &s);
	bfs_sb_handle_release(&h);
	is_old = !memcmp(&s, &c->before, sizeof(s));
	is_new = !memcmp(&s, &c->after, sizeof(s));
	if (!is_old && !is_new) {
		snprintf(why, 512, "the superblock holds part of the change (label '%.20s', "
			 "compression %u:%u, data checksum %u)", (const char *)s.label,
			 s.compression_type, s.compression_level, s.data_csum);
		return false;
	}
	if (mk.f >= 1 && !is_new) {
		snprintf(why, 512, "the change was durable but the old superblock is read");
		return false;
	}
	if (mk.c < 1 && !is_old) {
		snprintf(why, 512, "the change shows before it began");
		return false;
	}
	return true;
}

START_TEST(test_set_option_crash)
{
	const u64 size = 32 * MiB;
	struct bfs_format_opts fo = { 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], *logpath = bfs_unit_tmpfile("sb-options-log");
	struct bfs_dev *dev, *base;
	struct bfs_sb_handle h;
	struct crash_ctx c;

	ck_assert_int_eq(bfs_dev_open_mem(size, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, size, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	capture(h.sb, &c.before);

	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	crash_mark(dev, 'c', 1);
	ck_assert_int_eq(bfs_sb_set_label(h.sb, NEW_LABEL, err), 0);
	bfs_sb_set_uuid(h.sb, new_uuid);
	ck_assert_int_eq(bfs_sb_set_compression(h.sb, BFS_COMPRESSION_ZSTD, 7, err), 0);
	ck_assert_int_eq(bfs_sb_set_data_csum(h.sb, BFS_CSUM_NONE, err), 0);
	capture(h.sb, &c.after);
	ck_assert_int_eq(bfs_sb_write(dev, h.sb), 0);
	crash_mark(dev, 'f', 1);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	bfs_sb_handle_release(&h);

	crash_states_check("sb-options crash", logpath, base, 42, check_state, &c, 2);
	bfs_free(sb);
	bfs_dev_close(base);
	bfs_dev_close(dev);
}
END_TEST

static Suite *sb_options_suite(void)
{
	Suite *s = suite_create("sb_options");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_label);
	tcase_add_test(tc, test_compression);
	tcase_add_test(tc, test_data_csum_section);
	tcase_add_test(tc, test_commit_secs);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_periodic_commit);
	tcase_add_test(tc, test_set_option_crash);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(sb_options_suite)
