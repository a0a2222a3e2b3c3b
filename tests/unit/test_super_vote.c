// SPDX-License-Identifier: MIT
/*
 * The superblock majority rule (libcore/super/vote.c): a valid primary gives
 * way to two or more agreeing backups only when no power cut can explain the
 * difference, and every opener (here the filesystem open) then uses them.
 */
#include "tu.h"

#include <bfs/fs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <string.h>

static struct bfs_sb *copy_at(struct bfs_dev *dev, u64 off)
{
	return (struct bfs_sb *)(bfs_dev_mem(dev) + off);
}

/* change the primary alone and give it a checksum that matches */
static void forge_primary(struct bfs_dev *dev, void (*edit)(struct bfs_sb *))
{
	struct bfs_sb *p = copy_at(dev, BFS_SB_OFFSET);

	edit(p);
	p->csum = cpu_to_le64(bfs_sb_csum(p));
}

static void wrong_seed(struct bfs_sb *sb) { sb->hash_seed = cpu_to_le64(12345); }
static void new_label(struct bfs_sb *sb) { memcpy(sb->label, "forged", 6); }
static void next_write_label(struct bfs_sb *sb)
{
	new_label(sb);
	sb->seq = cpu_to_le64(le64_to_cpu(sb->seq) + 1);
}

static void read_sb(struct bfs_dev *dev, struct bfs_sb_handle *h)
{
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_sb_read(dev, h, err), 0);
}

START_TEST(test_forged_seed_outvoted)
{
	struct bfs_dev *dev = tu_mkfs(64 * MiB, 0, 0, 0);
	struct bfs_sb_handle h;
	u64 seed;

	read_sb(dev, &h);
	seed = le64_to_cpu(h.sb->hash_seed);
	bfs_sb_handle_release(&h);
	forge_primary(dev, wrong_seed);
	read_sb(dev, &h);
	ck_assert(h.used_backup && h.outvoted);
	ck_assert_uint_eq(h.copy, 1);
	ck_assert_uint_eq(h.offset, BFS_SB_BACKUP_OFFSET);
	ck_assert_uint_eq(le64_to_cpu(h.sb->hash_seed), seed);
	ck_assert_msg(strstr(h.primary_err, "(name hash seed), and the backups agree"), "%s",
		      h.primary_err);
	bfs_sb_handle_release(&h);
	bfs_dev_close(dev);
}
END_TEST

/* copies of one write are identical: a same-seq primary that differs was changed */
START_TEST(test_same_seq_differs_outvoted)
{
	struct bfs_dev *dev = tu_mkfs(64 * MiB, 0, 0, 0);
	struct bfs_sb_handle h;

	forge_primary(dev, new_label);
	read_sb(dev, &h);
	ck_assert(h.outvoted);
	ck_assert_msg(strstr(h.primary_err, "(label)"), "%s", h.primary_err);
	bfs_sb_handle_release(&h);
	bfs_dev_close(dev);
}
END_TEST

/* the cases a crash or a normal update leave: the valid primary stays */
START_TEST(test_primary_kept)
{
	struct bfs_dev *dev = tu_mkfs(64 * MiB, 0, 0, 0);
	struct bfs_sb_handle h;
	struct bfs_sb *b1, *b2;
	u64 end;

	read_sb(dev, &h);
	end = le64_to_cpu(h.sb->copy_offset[2]);
	bfs_sb_handle_release(&h);
	b1 = copy_at(dev, BFS_SB_BACKUP_OFFSET);
	b2 = copy_at(dev, end);

	/* the primary one write newer with a mutable change: an update in progress */
	forge_primary(dev, next_write_label);
	read_sb(dev, &h);
	ck_assert(!h.used_backup && !h.outvoted);
	ck_assert_uint_eq(h.offset, BFS_SB_OFFSET);
	bfs_sb_handle_release(&h);

	/* backups one write newer than the primary (the designed write order) */
	memcpy(copy_at(dev, BFS_SB_OFFSET), b1, BFS_SB_IO_ALIGN);
	next_write_label(b1);
	b1->csum = cpu_to_le64(bfs_sb_csum(b1));
	memcpy(b2, b1, BFS_SB_IO_ALIGN);
	read_sb(dev, &h);
	ck_assert(!h.used_backup);
	bfs_sb_handle_release(&h);

	/* one valid backup is no majority, even against a forged seed */
	forge_primary(dev, wrong_seed);
	b2->magic = cpu_to_le64(0);
	read_sb(dev, &h);
	ck_assert(!h.used_backup);
	bfs_sb_handle_release(&h);

	/* two backups that disagree are no majority either */
	memcpy(b2, b1, BFS_SB_IO_ALIGN);
	memcpy(b2->label, "other", 5);
	b2->csum = cpu_to_le64(bfs_sb_csum(b2));
	read_sb(dev, &h);
	ck_assert(!h.used_backup);
	bfs_sb_handle_release(&h);
	bfs_dev_close(dev);
}
END_TEST

/* what was broken: an open through a forged primary saw every node as foreign */
START_TEST(test_fs_open_uses_backups)
{
	struct bfs_dev *dev = tu_mkfs_fs(64 * MiB, 0, 0, 0);
	struct bfs_fs_opts ro = { .read_only = true };
	struct bfs_sb_handle h;
	struct bfs_fs *fs;
	char why[512];

	tu_log_reset();
	fs = tu_fs_open(dev);
	tu_write_pattern_file(fs, "kept", 100000, 7);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	forge_primary(dev, wrong_seed);

	ck_assert_int_eq(bfs_fs_open(dev, &ro, &fs), 0);
	ck_assert_msg(tu_pattern_file_ok(fs, "kept", 100000, 7, why), "%s", why);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	read_sb(dev, &h);
	ck_assert(h.outvoted);	/* a read-only open writes nothing */
	bfs_sb_handle_release(&h);

	/* a read-write open rewrites every copy from the superblock in use */
	fs = tu_fs_open(dev);
	ck_assert_msg(tu_pattern_file_ok(fs, "kept", 100000, 7, why), "%s", why);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	read_sb(dev, &h);
	ck_assert(!h.used_backup);
	bfs_sb_handle_release(&h);
	bfs_dev_close(dev);
}
END_TEST

static Suite *super_vote_suite(void)
{
	Suite *s = suite_create("super_vote");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_forged_seed_outvoted);
	tcase_add_test(tc, test_same_seq_differs_outvoted);
	tcase_add_test(tc, test_primary_kept);
	tcase_add_test(tc, test_fs_open_uses_backups);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(super_vote_suite)
