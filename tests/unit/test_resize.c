// SPDX-License-Identifier: MIT
/*
 * Offline resize (libcore/fs/resize.c): the layout of a grown and a shrunk
 * superblock, what lies in the space a shrink cuts, moving file data out of
 * it, and crash safety: every state a power failure can leave during a
 * resize (moves included) opens as the old or the new filesystem, with its
 * btrees intact and the file data readable.
 */
#include "unit.h"
#include "crash_states.h"
#include "resize_states.h"
#include "tu.h"

#include <bfs/alloc.h>
#include <bfs/btree.h>
#include <bfs/btree_repair.h>
#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/resize.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_BYTES	(512 * 1024)

static const struct bfs_creds root_cr = { 0, 0 };

static void write_file(struct bfs_dev *dev, const char *name)
{
	struct bfs_fs *fs;

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	tu_write_pattern_file(fs, name, FILE_BYTES, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
}

static bool file_ok(struct bfs_fs *fs, const char *name, char *why)
{
	return tu_pattern_file_ok(fs, name, FILE_BYTES, 0, why);
}

static u64 sb_dev_size(struct bfs_dev *dev)
{
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];
	u64 size;

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	size = le64_to_cpu(h.sb->dev_size);
	bfs_sb_handle_release(&h);
	return size;
}

START_TEST(test_layout)
{
	struct bfs_dev *dev = resize_make_fs(64 * MiB, 32 * MiB);
	struct bfs_sb *out = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert_int_eq(bfs_resize_layout(h.sb, 64 * MiB, out, err), 0);
	ck_assert_uint_eq(le64_to_cpu(out->dev_size), 64 * MiB);
	ck_assert_uint_eq(out->nr_copies, 3);
	ck_assert_uint_eq(le64_to_cpu(out->copy_offset[2]), 64 * MiB - 64 * KiB);
	ck_assert_uint_eq(le64_to_cpu(out->nbuckets) * le32_to_cpu(out->bucket_size),
			  64 * MiB - 64 * KiB);
	ck_assert_mem_eq(out->uuid, h.sb->uuid, 16);
	ck_assert_uint_eq(le64_to_cpu(out->journal_bucket), le64_to_cpu(h.sb->journal_bucket));
	/* what cannot be */
	ck_assert_int_eq(bfs_resize_layout(h.sb, 4 * MiB, out, err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "minimum size"));
	bfs_sb_handle_release(&h);
	bfs_free(out);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_usage)
{
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 32 * MiB);
	const struct bfs_sb *sb;
	struct bfs_resize_usage u;
	struct bfs_fs *fs;

	write_file(dev, "data");
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &fs), 0);
	/* data fills from the top: a cut of the upper half hits it */
	ck_assert_int_eq(bfs_resize_usage(fs, 200, &u), 0);
	ck_assert_uint_ge(u.data_buckets, 1);
	ck_assert_uint_eq(u.data_bytes, FILE_BYTES);
	/* the btree nodes are at the bottom: a cut just above the journal hits them */
	sb = bfs_core_sb(bfs_fs_core(fs));
	ck_assert_int_eq(bfs_resize_usage(fs, le64_to_cpu(sb->journal_bucket) +
					  le32_to_cpu(sb->journal_nbuckets), &u), 0);
	ck_assert_uint_ge(u.nodes, 1);
	ck_assert_uint_eq(u.node_bytes, u.nodes * 64 * KiB);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/* ---- crash safety ---- */

struct resize_ctx {
	u64 old_size, new_size;
	const char *file;
	unsigned nr_small;	/* small files f00000... whose names and contents must stay */
};

static void small_name(unsigned i, char name[16])
{
	snprintf(name, 16, "f%05u", i);
}

/* a few hundred bytes, tagged with @i, so each small file is told apart */
static void small_content(unsigned i, u8 *buf, size_t len)
{
	size_t j;

	for (j = 0; j < len; j++)
		buf[j] = (u8)(i * 7 + j * 13);
}

#define SMALL_BYTES	300
/* the first ones hold SMALL_BYTES each, the others are empty (metadata only) */
#define SMALL_WITH_DATA	400

static bool small_ok(struct bfs_fs *fs, unsigned nr, char *why)
{
	u8 want[SMALL_BYTES], got[SMALL_BYTES];
	struct bfs_stat st;
	char name[16];
	unsigned i;

	for (i = 0; i < nr; i++) {
		small_name(i, name);
		small_content(i, want, sizeof(want));
		if (bfs_fs_lookup(fs, BFS_ROOT_INO, name, strlen(name), &st) ||
		    st.size != (i < SMALL_WITH_DATA ? SMALL_BYTES : 0) ||
		    (i < SMALL_WITH_DATA &&
		     (bfs_fs_read(fs, st.ino, got, sizeof(got), 0) != SMALL_BYTES ||
		      memcmp(want, got, sizeof(want))))) {
			snprintf(why, 512, "small file '%s' lost or changed", name);
			return false;
		}
	}
	return true;
}

/* fsck -n of a crashed state: clean, and nothing written */
static bool fsck_clean(struct bfs_dev *img, char *why)
{
	struct bfs_fsck f = { .dev = img, .mode = BFS_FSCK_MODE_NO };
	int rc = bfs_fsck_run(&f);

	bfs_fsck_release(&f);
	if (rc)
		snprintf(why, 512, "fsck -n exited %d", rc);
	return !rc;
}

static bool files_ok(void *ctx, struct bfs_fs *fs, char *why)
{
	struct resize_ctx *c = ctx;

	return (!c->file || file_ok(fs, c->file, why)) && small_ok(fs, c->nr_small, why);
}

static bool check_state(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct resize_ctx *c = ctx;

	return fsck_clean(img, why) &&
	       resize_state_ok(img, c->old_size, c->new_size, mk.f >= 1, files_ok, c, why);
}

static void resize_recorded(struct bfs_dev *dev, u64 new_size, const char *logpath)
{
	struct bfs_sb *out = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct bfs_resize_usage u;
	struct bfs_sb_handle h;
	struct bfs_fs *fs;
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_dev_record_start(dev, logpath), 0);
	crash_mark(dev, 'f', 0);
	crash_mark(dev, 'c', 1);
	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert_int_eq(bfs_resize_layout(h.sb, new_size, out, err), 0);
	if (le64_to_cpu(out->nbuckets) < le64_to_cpu(h.sb->nbuckets)) {
		bfs_sb_handle_release(&h);
		ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
		ck_assert_int_eq(bfs_resize_usage(fs, le64_to_cpu(out->nbuckets), &u), 0);
		if (u.data_buckets || u.nodes) {
			struct bfs_resize_move m = { 0 };

			ck_assert_int_eq(bfs_resize_evacuate(fs, le64_to_cpu(out->nbuckets), &m), 0);
			ck_assert_uint_eq(m.need, u.data_bytes + u.node_bytes);
			ck_assert_uint_eq(m.data_bytes, u.data_bytes);
			/* fewer if the data moves rewrote some nodes (below the fence) */
			ck_assert_uint_le(m.nodes, u.nodes);
			ck_assert(!u.nodes || m.nodes);
			ck_assert_uint_eq(m.left, 0);
		}
		ck_assert_int_eq(bfs_resize_usage(fs, le64_to_cpu(out->nbuckets), &u), 0);
		ck_assert_uint_eq(u.data_buckets, 0);
		ck_assert_uint_eq(u.nodes, 0);
		ck_assert_uint_ge(u.free_alloc_keys, 1);	/* the test means to drop some */
		ck_assert_int_eq(bfs_resize_drop_alloc_keys(fs, le64_to_cpu(out->nbuckets)), 0);
		ck_assert_int_eq(bfs_fs_close(fs), 0);
		ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
		ck_assert_int_eq(bfs_resize_layout(h.sb, new_size, out, err), 0);
	}
	ck_assert_int_eq(bfs_resize_commit(dev, h.sb, out), 0);
	crash_mark(dev, 'f', 1);
	ck_assert_int_eq(bfs_dev_record_stop(dev), 0);
	bfs_sb_handle_release(&h);
	bfs_free(out);
}

static void run_crash(struct bfs_dev *dev, struct resize_ctx *c, const char *tag)
{
	char *logpath = bfs_unit_tmpfile(tag);
	struct crash_result res;
	struct bfs_dev *base;

	ck_assert_int_eq(bfs_dev_clone_mem(dev, &base), 0);
	resize_recorded(dev, c->new_size, logpath);
	ck_assert_uint_eq(sb_dev_size(dev), c->new_size);
	crash_build_states(logpath, base, 7, check_state, c, &res);
	printf("%s: %u crash states (%u flush points, %u random), %u failed\n", tag, res.states,
	       res.flush_states, res.random_states, res.failures);
	ck_assert_uint_ge(res.flush_states, 2);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);
	unlink(logpath);
	free(logpath);
	bfs_dev_close(base);
}

START_TEST(test_grow_crash)
{
	struct resize_ctx c = { .old_size = 16 * MiB, .new_size = 32 * MiB, .file = "kept" };
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 16 * MiB);
	u8 probe[8];

	write_file(dev, "kept");
	run_crash(dev, &c, "resize-grow");
	/* the old end copy, now in bucket space, is cleared */
	ck_assert_int_eq(bfs_dev_read(dev, 16 * MiB - 64 * KiB, probe, sizeof(probe)), 0);
	ck_assert_mem_eq(probe, "\0\0\0\0\0\0\0\0", 8);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_shrink_crash)
{
	struct resize_ctx c = { .old_size = 32 * MiB, .new_size = 16 * MiB };
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 32 * MiB);
	struct bfs_fs *fs;

	/* data written at the top and deleted: free buckets whose alloc keys remain */
	write_file(dev, "gone");
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	ck_assert_int_eq(bfs_fs_unlink(fs, BFS_ROOT_INO, "gone", 4), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	run_crash(dev, &c, "resize-shrink");
	bfs_dev_close(dev);
}
END_TEST

/* live data beyond the new end is moved below it first, crash-safely */
START_TEST(test_shrink_moving_data_crash)
{
	struct resize_ctx c = { .old_size = 32 * MiB, .new_size = 16 * MiB, .file = "moved" };
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 32 * MiB);

	write_file(dev, "moved");	/* data fills from the top: beyond 16 MiB */
	run_crash(dev, &c, "resize-shrink-move");
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_evacuate_no_room)
{
	struct bfs_dev *dev = resize_make_fs(16 * MiB, 16 * MiB);
	struct bfs_resize_usage u, u2;
	struct bfs_resize_move m;
	struct bfs_fs *fs;
	const struct bfs_sb *sb;
	char why[512];
	u64 cut;

	write_file(dev, "a");
	write_file(dev, "b");
	/* the plan says so on a read-only open already */
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &fs), 0);
	sb = bfs_core_sb(bfs_fs_core(fs));
	/* keep just the journal and a few buckets: the data cannot fit */
	cut = le64_to_cpu(sb->journal_bucket) + le32_to_cpu(sb->journal_nbuckets) + 20;
	ck_assert_int_eq(bfs_resize_plan(fs, cut, &m), -ENOSPC);
	ck_assert_uint_eq(m.data_need, 2 * FILE_BYTES);
	ck_assert_uint_lt(m.avail, m.need);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	ck_assert_int_eq(bfs_resize_usage(fs, cut, &u), 0);
	ck_assert_uint_eq(u.data_bytes, 2 * FILE_BYTES);
	ck_assert_int_eq(bfs_resize_evacuate(fs, cut, &m), -ENOSPC);
	ck_assert_uint_eq(m.need, 2 * FILE_BYTES + u.node_bytes);
	ck_assert_uint_lt(m.avail, m.need);
	ck_assert_uint_eq(m.data_bytes, 0);
	ck_assert_uint_eq(m.nodes, 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	/* nothing moved, nothing lost */
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	ck_assert_msg(file_ok(fs, "a", why) && file_ok(fs, "b", why), "%s", why);
	ck_assert_int_eq(bfs_resize_usage(fs, cut, &u2), 0);
	ck_assert_uint_eq(u2.nodes, u.nodes);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);
}
END_TEST

/*
 * Btree nodes (and small files' data) in the upper half: while they are
 * made, every bucket below the cut is kept from the allocators, as a
 * filesystem that was full there would.
 */
struct high_ctx {
	u64 start;
	u64 nodes, interior;
};

static int count_beyond(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct high_ctx *h = ctx;

	h->nodes += ni->offset >= h->start;
	h->interior += ni->level && ni->offset >= h->start;
	return 0;
}

/* by a walk that reads every node: the count without reading leaves must agree */
static u64 interior_beyond(struct bfs_core *c, u64 bucket, u64 nodes)
{
	struct high_ctx h = { bucket * le32_to_cpu(bfs_core_sb(c)->bucket_size), 0, 0 };
	int id;

	for (id = 0; id < BFS_BTREE_NR; id++)
		ck_assert_int_eq(bfs_btree_walk(c, id, count_beyond, NULL, &h), 0);
	ck_assert_uint_eq(h.nodes, nodes);
	return h.interior;
}

static unsigned make_high_nodes(struct bfs_dev *dev, u64 cut_bucket)
{
	u8 small[SMALL_BYTES];
	struct bfs_resize_usage u;
	struct bfs_core *core;
	struct bfs_stat st;
	struct bfs_fs *fs;
	char name[16];
	unsigned i, nr = 0;
	u64 b;

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	core = bfs_fs_core(fs);
	for (b = le64_to_cpu(bfs_core_sb(core)->first_bucket); b < cut_bucket; b++)
		bfs_core_protect_bucket(core, b);
	for (i = 0; i < 3000; i++, nr++) {
		small_name(i, name);
		small_content(i, small, sizeof(small));
		ck_assert_int_eq(bfs_fs_mknod(fs, BFS_ROOT_INO, name, strlen(name),
					      S_IFREG | 0644, 0, &root_cr, &st), 0);
		if (i < SMALL_WITH_DATA)
			ck_assert_int_eq(bfs_fs_write(fs, st.ino, small, sizeof(small), 0),
					 SMALL_BYTES);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &fs), 0);
	ck_assert_int_eq(bfs_resize_usage(fs, cut_bucket, &u), 0);
	printf("nodes beyond the cut: %llu, data buckets %llu\n", (unsigned long long)u.nodes,
	       (unsigned long long)u.data_buckets);
	ck_assert_uint_ge(u.nodes, 8);	/* the test means to move some, interior ones too */
	ck_assert_uint_ge(interior_beyond(bfs_fs_core(fs), cut_bucket, u.nodes), 1);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	return nr;
}

static u64 half_nbuckets(struct bfs_dev *dev, u64 new_size)
{
	struct bfs_sb *out = bfs_zalloc(BFS_SB_MAX_BYTES);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];
	u64 nb;

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	ck_assert_int_eq(bfs_resize_layout(h.sb, new_size, out, err), 0);
	nb = le64_to_cpu(out->nbuckets);
	bfs_sb_handle_release(&h);
	bfs_free(out);
	return nb;
}

/* btree nodes beyond the new end are moved below it, crash-safely, no file lost */
START_TEST(test_shrink_moving_nodes_crash)
{
	struct resize_ctx c = { .old_size = 32 * MiB, .new_size = 16 * MiB };
	struct bfs_dev *dev = resize_make_fs(32 * MiB, 32 * MiB);

	c.nr_small = make_high_nodes(dev, half_nbuckets(dev, c.new_size));
	run_crash(dev, &c, "resize-shrink-nodes");
	ck_assert(fsck_clean(dev, (char[512]){ 0 }));
	bfs_dev_close(dev);
}
END_TEST

/* the metadata allocator fenced for a shrink: nothing beyond the fence, ever */
START_TEST(test_alloc_fence)
{
	const struct bfs_alloc_geom g = {
		.bucket_size = 64 * KiB, .first_bucket = 1, .nbuckets = 33,
		.journal_bucket = 1, .journal_nbuckets = 2, .node_size = 16 * KiB,
	};
	const u64 fence = 17 * 64 * KiB;
	u64 high[8], off, total, got = 0;
	struct bfs_alloc *a;
	unsigned i;

	ck_assert_int_eq(bfs_alloc_init(&g, &a), 0);
	total = bfs_alloc_nr_free(a);
	ck_assert_uint_eq(total, (33 - 3) * 4);
	/* take every slot, keep some beyond the fence-to-be */
	for (i = 0; bfs_alloc_node(a, &off) == 0; i++)
		if (off >= fence && got < 8)
			high[got++] = off;
	ck_assert_uint_eq(i, total);
	ck_assert_uint_eq(got, 8);
	/* half of those come back before the fence, half after: none may be handed out again */
	for (i = 0; i < 4; i++)
		bfs_alloc_free_now(a, high[i]);
	bfs_alloc_fence(a, fence);
	ck_assert_uint_eq(bfs_alloc_nr_free(a), 0);
	for (i = 4; i < 8; i++)
		bfs_alloc_free_later(a, high[i]);
	bfs_alloc_release_pending(a);
	bfs_alloc_bucket_put(a, 32);
	ck_assert_uint_eq(bfs_alloc_nr_free(a), 0);
	ck_assert_int_eq(bfs_alloc_node(a, &off), -ENOSPC);
	/* below it, slots come and go as before */
	bfs_alloc_free_now(a, 3 * 64 * KiB);
	ck_assert_uint_eq(bfs_alloc_nr_free(a), 1);
	ck_assert_int_eq(bfs_alloc_node(a, &off), 0);
	ck_assert_uint_eq(off, 3 * 64 * KiB);
	bfs_alloc_bucket_put(a, 4);
	ck_assert_uint_eq(bfs_alloc_nr_free(a), 4);
	ck_assert_int_eq(bfs_alloc_bucket_get(a, 4), 0);
	bfs_alloc_exit(a);
}
END_TEST

static Suite *resize_suite(void)
{
	Suite *s = suite_create("resize");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_alloc_fence);
	tcase_add_test(tc, test_usage);
	tcase_add_test(tc, test_grow_crash);
	tcase_add_test(tc, test_shrink_crash);
	tcase_add_test(tc, test_shrink_moving_data_crash);
	tcase_add_test(tc, test_shrink_moving_nodes_crash);
	tcase_add_test(tc, test_evacuate_no_room);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(resize_suite)
