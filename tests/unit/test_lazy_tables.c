// SPDX-License-Identifier: MIT
/*
 * Buffers and tables that are mappings of their own so that only what is
 * written is resident (doc/fsck.md, *Memory, sweeps and progress*): the
 * superblock buffers (libcore/super/buf.c), 64 KiB for a superblock of a
 * few KiB, and the data allocator's bucket table (libcore/fs/alloc_data.c),
 * 24 bytes a bucket of which open writes only the buckets with data.  Each
 * must read as zero, and mincore() must count only the pages written: a
 * heap block cleared whole (what they were) has every page resident.
 */
#include "tu.h"

#include <sys/mman.h>
#include <unistd.h>

#include <bfs/dev.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include "fs/data.h"

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* pages of [p, p + len) resident now */
static size_t resident_pages(const void *p, size_t len)
{
	size_t page = page_size(), pages = (len + page - 1) / page, n = 0;
	unsigned char *vec = bfs_malloc(pages);

	ck_assert_ptr_nonnull(vec);
	ck_assert_int_eq(mincore((void *)p, len, vec), 0);
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	bfs_free(vec);
	return n;
}

static bool all_zero(const void *p, size_t len)
{
	const u8 *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

START_TEST(test_sb_buf_lazy)
{
	struct bfs_sb *sb = bfs_sb_buf_alloc();

	ck_assert_ptr_nonnull(sb);
	ck_assert_uint_eq((uintptr_t)sb % BFS_SB_IO_ALIGN, 0);
	ck_assert_uint_eq(resident_pages(sb, BFS_SB_MAX_BYTES), 0);
	memset(sb, 0xa5, 100);
	ck_assert_uint_eq(resident_pages(sb, BFS_SB_MAX_BYTES), 1);
	/* the rest reads as zero, up to the last byte a section may grow into */
	ck_assert(all_zero((u8 *)sb + 100, BFS_SB_MAX_BYTES - 100));
	bfs_sb_buf_free(sb);
	bfs_sb_buf_free(NULL);
}
END_TEST

/* what bfs_sb_read() hands out holds the superblock's pages, not 64 KiB */
START_TEST(test_sb_read_resident)
{
	struct bfs_dev *dev = tu_mkfs(64 * MiB, 64 * KiB, 0, 0);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];
	size_t used;

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	used = BFS_ROUND_UP((size_t)le32_to_cpu(h.sb->bytes), page_size()) / page_size();
	ck_assert_uint_lt(used, BFS_SB_MAX_BYTES / page_size());
	ck_assert_uint_le(resident_pages(h.sb, BFS_SB_MAX_BYTES), used);
	/* what a section grows into past the superblock is zero */
	ck_assert(all_zero((u8 *)h.sb + le32_to_cpu(h.sb->bytes),
			   BFS_SB_MAX_BYTES - le32_to_cpu(h.sb->bytes)));
	bfs_sb_handle_release(&h);
	ck_assert_ptr_null(h.sb);
	bfs_dev_close(dev);
}
END_TEST

START_TEST(test_data_table_lazy)
{
	const u64 nbuckets = 100000;
	size_t bytes = nbuckets * sizeof(struct bfs_bucket);
	struct bfs_bucket *b = bfs_data_table_alloc(nbuckets);

	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(resident_pages(b, bytes), 0);
	b[nbuckets / 2].live = 7;
	b[nbuckets / 2].data = true;
	ck_assert_uint_le(resident_pages(b, bytes), 2);	/* an entry may straddle two pages */
	ck_assert(!b[0].live && !b[0].data && !b[nbuckets - 1].gen);
	bfs_data_table_free(b, nbuckets);
	/* an empty table is a valid one */
	b = bfs_data_table_alloc(0);
	ck_assert_ptr_nonnull(b);
	bfs_data_table_free(b, 0);
	ck_assert_ptr_null(bfs_data_table_alloc(UINT64_MAX));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lazy_tables");
	TCase *tc = tcase_create("resident");

	tcase_add_test(tc, test_sb_buf_lazy);
	tcase_add_test(tc, test_sb_read_resident);
	tcase_add_test(tc, test_data_table_lazy);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(suite)
