// SPDX-License-Identifier: MIT
/*
 * Checksums (libcore/util/checksum.c): bfs_csum() is XXH3-64 whatever
 * kernel computes it, so a chunk written by one build or CPU verifies on
 * another.  The AVX2 kernel (xxhash_avx2.c) must give the baseline's hash
 * at every length and alignment, around the lengths where XXH3 changes
 * path (16, 128, 240 bytes, a stripe of 64, a block of 1024).
 */
#include "tu.h"

#include <stdlib.h>
#include <string.h>

#include <bfs/checksum.h>

#define BUF_MAX		(64 * 1024 + 128)

static u8 *pattern(void)
{
	u8 *b = malloc(BUF_MAX);
	u64 x = 0x9e3779b97f4a7c15ULL;
	size_t i;

	ck_assert_ptr_nonnull(b);
	for (i = 0; i < BUF_MAX; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (u8)x;
	}
	return b;
}

START_TEST(test_xxh3_known)
{
	/* the XXH3-64 of nothing, seed 0 (xxHash's own test vector) */
	ck_assert_uint_eq(bfs_xxh3("", 0), 0x2D06800538D394C2ULL);
	ck_assert_uint_eq(bfs_csum(BFS_CSUM_XXH3, "", 0), 0x2D06800538D394C2ULL);
	ck_assert_uint_eq(bfs_csum(BFS_CSUM_NONE, "abc", 3), 0);
}
END_TEST

START_TEST(test_csum_is_xxh3)
{
	u8 *b = pattern();
	size_t len;

	for (len = 0; len <= 20000; len += len < 2100 ? 1 : 509)
		ck_assert_uint_eq(bfs_csum(BFS_CSUM_XXH3, b + 3, len), bfs_xxh3(b + 3, len));
	ck_assert_uint_eq(bfs_csum(BFS_CSUM_XXH3, b, 64 * 1024), bfs_xxh3(b, 64 * 1024));
	free(b);
}
END_TEST

START_TEST(test_avx2_same_hash)
{
#ifdef BFS_HAVE_XXH3_AVX2
	static const size_t lens[] = { 0, 1, 16, 17, 128, 129, 240, 241, 255, 256, 1023, 1024,
				       1025, 4096, 16384, 16385, 65536 };
	u8 *b;
	size_t i, a;

	if (!__builtin_cpu_supports("avx2"))
		return;		/* nothing to compare on this CPU */
	b = pattern();
	for (i = 0; i < ARRAY_SIZE(lens); i++)
		for (a = 0; a < 64; a += 7)
			ck_assert_uint_eq(bfs_xxh3_avx2(b + a, lens[i]), bfs_xxh3(b + a, lens[i]));
	for (i = 241; i < 3000; i++)
		ck_assert_uint_eq(bfs_xxh3_avx2(b + 1, i), bfs_xxh3(b + 1, i));
	/* one flipped bit changes it */
	a = bfs_xxh3_avx2(b, 16384);
	b[9999] ^= 4;
	ck_assert_uint_ne(bfs_xxh3_avx2(b, 16384), a);
	ck_assert_uint_eq(bfs_xxh3_avx2(b, 16384), bfs_xxh3(b, 16384));
	free(b);
#endif
}
END_TEST

static Suite *checksum_suite(void)
{
	Suite *s = suite_create("checksum");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_xxh3_known);
	tcase_add_test(tc, test_csum_is_xxh3);
	tcase_add_test(tc, test_avx2_same_hash);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(checksum_suite)
