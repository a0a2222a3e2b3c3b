// SPDX-License-Identifier: MIT
/* Keys: position order, successor/predecessor, on-disk layout, validation, printing. */
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bfs/bkey.h>
#include <bfs/btree_format.h>

START_TEST(test_pos_order)
{
	struct bfs_bpos a = BFS_POS(1, 2, 3);

	ck_assert_int_eq(bfs_bpos_cmp(a, a), 0);
	ck_assert_int_lt(bfs_bpos_cmp(a, BFS_POS(1, 2, 4)), 0);
	ck_assert_int_lt(bfs_bpos_cmp(a, BFS_POS(1, 3, 0)), 0);
	ck_assert_int_lt(bfs_bpos_cmp(a, BFS_POS(2, 0, 0)), 0);
	ck_assert_int_gt(bfs_bpos_cmp(a, BFS_POS(1, 1, UINT32_MAX)), 0);
	ck_assert_int_gt(bfs_bpos_cmp(a, BFS_POS(0, UINT64_MAX, UINT32_MAX)), 0);
	ck_assert_int_lt(bfs_bpos_cmp(BFS_POS_MIN, a), 0);
	ck_assert_int_gt(bfs_bpos_cmp(BFS_POS_MAX, a), 0);
}
END_TEST

START_TEST(test_successor)
{
	ck_assert(bfs_bpos_eq(bfs_bpos_successor(BFS_POS(1, 2, 3)), BFS_POS(1, 2, 4)));
	ck_assert(bfs_bpos_eq(bfs_bpos_successor(BFS_POS(1, 2, UINT32_MAX)), BFS_POS(1, 3, 0)));
	ck_assert(bfs_bpos_eq(bfs_bpos_successor(BFS_POS(1, UINT64_MAX, UINT32_MAX)), BFS_POS(2, 0, 0)));
	ck_assert(bfs_bpos_eq(bfs_bpos_successor(BFS_POS_MAX), BFS_POS_MAX));
	ck_assert(bfs_bpos_eq(bfs_bpos_predecessor(BFS_POS(1, 2, 0)), BFS_POS(1, 1, UINT32_MAX)));
	ck_assert(bfs_bpos_eq(bfs_bpos_predecessor(BFS_POS(1, 0, 0)), BFS_POS(0, UINT64_MAX, UINT32_MAX)));
	ck_assert(bfs_bpos_eq(bfs_bpos_predecessor(BFS_POS_MIN), BFS_POS_MIN));
	ck_assert(bfs_bpos_eq(bfs_bpos_predecessor(bfs_bpos_successor(BFS_POS(7, 8, 9))), BFS_POS(7, 8, 9)));
}
END_TEST

START_TEST(test_layout)
{
	u64 buf[8];
	struct bfs_bkey *k = (struct bfs_bkey *)buf;
	const u8 *b = (const u8 *)buf;
	struct bfs_bpos_disk d = bfs_bpos_to_disk(BFS_POS(5, 6, 7));

	memset(buf, 0xff, sizeof(buf));
	bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(0x0102030405060708ULL, 0x1112131415161718ULL, 0x21222324), 2);
	/* little-endian, fixed offsets: header is 32 bytes, u64s counts it */
	ck_assert_int_eq(b[0], 6);
	ck_assert_int_eq(b[1], 0);
	ck_assert_int_eq(b[2], BFS_KEY_COOKIE);
	ck_assert_int_eq(b[8], 0x08);
	ck_assert_int_eq(b[15], 0x01);
	ck_assert_int_eq(b[16], 0x18);
	ck_assert_int_eq(b[24], 0x24);
	ck_assert_int_eq(b[28], 0);
	ck_assert_int_eq(bfs_bkey_u64s(k), 6);
	ck_assert_int_eq(bfs_bkey_val_u64s(k), 2);
	ck_assert_int_eq(bfs_bkey_bytes(k), 48);
	ck_assert(bfs_bpos_eq(bfs_bkey_pos(k), BFS_POS(0x0102030405060708ULL, 0x1112131415161718ULL, 0x21222324)));
	ck_assert(bfs_bpos_eq(bfs_bpos_from_disk(&d), BFS_POS(5, 6, 7)));
	ck_assert_int_eq(sizeof(struct bfs_btree_node), 96);
	ck_assert_int_eq(sizeof(struct bfs_bset), 32);
	ck_assert_int_eq(sizeof(struct bfs_btree_ptr), 48);
}
END_TEST

START_TEST(test_extent_start)
{
	u64 buf[8];
	struct bfs_bkey *k = (struct bfs_bkey *)buf;

	bfs_bkey_init(k, BFS_KEY_TEST_EXTENT, BFS_POS(1, 100, 0), 1);
	k->size = cpu_to_le32(30);
	ck_assert_int_eq(bfs_bkey_start(k), 70);
	ck_assert_int_eq(bfs_bkey_validate(k, true, NULL, 0), 0);
	k->size = cpu_to_le32(101);
	ck_assert_int_eq(bfs_bkey_validate(k, true, NULL, 0), -EUCLEAN);
	k->size = cpu_to_le32(0);
	ck_assert_int_eq(bfs_bkey_validate(k, true, NULL, 0), -EUCLEAN);
	k->size = cpu_to_le32(5);
	ck_assert_int_eq(bfs_bkey_validate(k, false, NULL, 0), -EUCLEAN);
}
END_TEST

/* positions print with "max" for a component at its maximum and parse back */
START_TEST(test_pos_text_parse)
{
	static const struct {
		struct bfs_bpos pos;
		const char *text;
	} cases[] = {
		{ BFS_POS(0, 0, 0), "0:0:0" },
		{ BFS_POS(5, 4096, 1), "5:4096:1" },
		{ BFS_POS(1000000, UINT64_MAX, UINT32_MAX), "1000000:max:max" },
		{ BFS_POS(UINT64_MAX, 7, 0), "max:7:0" },
		{ BFS_POS(UINT64_MAX - 1, UINT64_MAX - 1, UINT32_MAX - 1),
		  "18446744073709551614:18446744073709551614:4294967294" },
	};
	struct bfs_bpos p;
	char buf[80];
	unsigned i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bfs_bpos_to_text(buf, sizeof(buf), cases[i].pos);
		ck_assert_str_eq(buf, cases[i].text);
		ck_assert_int_eq(bfs_bpos_parse(buf, &p), 0);
		ck_assert(bfs_bpos_eq(p, cases[i].pos));
	}
	bfs_bpos_to_text(buf, sizeof(buf), BFS_POS_MAX);
	ck_assert_str_eq(buf, "max");
	ck_assert_int_eq(bfs_bpos_parse("max", &p), 0);
	ck_assert(bfs_bpos_eq(p, BFS_POS_MAX));
	ck_assert_int_eq(bfs_bpos_parse("min", &p), 0);
	ck_assert(bfs_bpos_eq(p, BFS_POS_MIN));
	ck_assert_int_eq(bfs_bpos_parse("3:4", &p), 0);
	ck_assert(bfs_bpos_eq(p, BFS_POS(3, 4, 0)));
	/* a truncated buffer still ends in a NUL and the count is what was needed */
	ck_assert_int_eq(bfs_bpos_to_text(buf, 4, BFS_POS(12345, 6, 7)), 9);
	ck_assert_str_eq(buf, "123");
	ck_assert_int_eq(bfs_bpos_parse("", &p), -EINVAL);
	ck_assert_int_eq(bfs_bpos_parse("1", &p), -EINVAL);
	ck_assert_int_eq(bfs_bpos_parse("1:2:3:4", &p), -EINVAL);
	ck_assert_int_eq(bfs_bpos_parse("1:-2", &p), -EINVAL);
	ck_assert_int_eq(bfs_bpos_parse("1:2:4294967296", &p), -ERANGE);
	ck_assert_int_eq(bfs_bpos_parse("18446744073709551616:0", &p), -ERANGE);
	ck_assert_int_eq(bfs_bpos_parse("maxi:0", &p), -EINVAL);
}
END_TEST

START_TEST(test_validate_and_text)
{
	u64 buf[8];
	struct bfs_bkey *k = (struct bfs_bkey *)buf;
	char err[BFS_BKEY_ERR_LEN], txt[256];

	bfs_bkey_init(k, BFS_KEY_DELETED, BFS_POS(1, 2, 0), 0);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), 0);
	k->u64s = cpu_to_le16(3);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "smaller than the header"));
	bfs_bkey_init(k, BFS_KEY_DELETED, BFS_POS(1, 2, 0), 1);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), -EUCLEAN);
	bfs_bkey_init(k, BFS_KEY_BTREE_PTR, BFS_POS(1, 2, 0), 2);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), -EUCLEAN);

	/* every type of the table has its name and methods; others are unknown */
	ck_assert_str_eq(bfs_bkey_type_name(BFS_KEY_INODE), "inode");
	ck_assert_str_eq(bfs_bkey_type_name(BFS_KEY_XATTR_DATA), "xattr_data");
	ck_assert_str_eq(bfs_bkey_type_name(201), "unknown");
	ck_assert_ptr_nonnull(bfs_bkey_type_ops(BFS_KEY_EXTENT));
	ck_assert_ptr_null(bfs_bkey_type_ops(201));
	/* a type's own validation: an alloc key with an unknown data type */
	bfs_bkey_init(k, BFS_KEY_ALLOC, BFS_POS(3, 0, 0), 2);
	k->v[0] = cpu_to_le64(0xff00000000ULL);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "unknown data type"));
	k->v[0] = cpu_to_le64(7);
	k->v[1] = cpu_to_le64(0);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), 0);
	bfs_bkey_to_text(txt, sizeof(txt), k);
	ck_assert_str_eq(txt, "u64s 6 type alloc pos 3:0:0: gen 7 free live 0");
	/* filesystem keys live in snapshot 0 */
	k->snapshot = cpu_to_le32(1);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), -EUCLEAN);
	ck_assert_ptr_nonnull(strstr(err, "snapshot"));
	/* value size bounds come from the table too */
	bfs_bkey_init(k, BFS_KEY_ALLOC, BFS_POS(3, 0, 0), 1);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), -EUCLEAN);
	/* unknown types are opaque values, still checked for sanity */
	bfs_bkey_init(k, 201, BFS_POS(3, 4, 5), 3);
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), 0);
	k->flags = 1;
	ck_assert_int_eq(bfs_bkey_validate(k, false, err, sizeof(err)), -EUCLEAN);
}
END_TEST

static Suite *bkey_suite(void)
{
	Suite *s = suite_create("bkey");
	TCase *tc = tcase_create("bkey");

	tcase_add_test(tc, test_pos_order);
	tcase_add_test(tc, test_successor);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_extent_start);
	tcase_add_test(tc, test_validate_and_text);
	tcase_add_test(tc, test_pos_text_parse);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(bkey_suite)
