// SPDX-License-Identifier: MIT
/*
 * Libraries loaded on first use (include/bfs/lazy_lib.h, libcore/os/lazy_lib.c):
 * a wrapper of a library that loads calls the real function; one of a
 * library that is missing logs why, once, and returns its error value; and
 * the wrappers bfs uses instead of linking libblkid and libzstd reach the
 * real libraries (their results are the libraries' own).
 */
#include "tu.h"

#include <errno.h>
#include <string.h>

#include <blkid.h>
#include <zstd.h>

#include <bfs/lazy_lib.h>

/* stand-ins for a library's functions, resolved by name from the library */
double cos(double x);
int bfs_test_no_such_fn(int x);

static const char *const m_names[] = { "libm.so.6", NULL };
static struct bfs_lazy_lib lib_m = { .sonames = m_names, .package = "libm" };

static const char *const missing_names[] = { "libbfs-test-missing.so.0", "libbfs-test-missing.so",
					     NULL };
static struct bfs_lazy_lib lib_missing = { .sonames = missing_names, .package = "nothing" };

/* cos() by way of a lazily resolved pointer, named apart from libm's own */
static double lazy_cos(double x)
{
	double (*fn)(double) = (double (*)(double))bfs_lazy_lib_sym(&lib_m, "cos");

	ck_assert_ptr_nonnull(fn);
	return fn(x);
}

BFS_LAZY_FN(lib_missing, int, bfs_test_no_such_fn, (int x), (x), -7)

START_TEST(test_loads_and_resolves)
{
	volatile double x = 0.5;

	tu_log_reset();
	ck_assert_int_eq(bfs_lazy_lib_load(&lib_m), 0);
	ck_assert_ptr_nonnull(lib_m.handle);
	/* the same function as the linked one (tests link -lm) */
	ck_assert(lazy_cos(x) == cos(x));
	ck_assert_ptr_null(bfs_lazy_lib_sym(&lib_m, "bfs_no_such_symbol"));
	ck_assert_uint_eq(tu_nr_errs, 1);
	ck_assert(strstr(tu_last_err, "bfs_no_such_symbol"));
}
END_TEST

START_TEST(test_missing_library)
{
	tu_log_reset();
	ck_assert_int_eq(bfs_lazy_lib_load(&lib_missing), -ENOENT);
	ck_assert_uint_eq(tu_nr_errs, 1);
	ck_assert(strstr(tu_last_err, "libbfs-test-missing.so.0"));
	ck_assert(strstr(tu_last_err, "install nothing"));
	/* the error value, and the message only once */
	ck_assert_int_eq(bfs_test_no_such_fn(3), -7);
	ck_assert_int_eq(bfs_test_no_such_fn(3), -7);
	ck_assert_int_eq(bfs_lazy_lib_load(&lib_missing), -ENOENT);
	ck_assert_uint_eq(tu_nr_errs, 1);
}
END_TEST

START_TEST(test_zstd_and_blkid_wrappers)
{
	static const char text[] = "lazy lazy lazy lazy lazy lazy lazy lazy lazy lazy";
	char packed[256], back[sizeof(text)];
	size_t n, m;
	blkid_probe pr;

	tu_log_reset();
	n = ZSTD_compress(packed, sizeof(packed), text, sizeof(text), 3);
	ck_assert(!ZSTD_isError(n));
	ck_assert_uint_lt(n, sizeof(text));
	m = ZSTD_decompress(back, sizeof(back), packed, n);
	ck_assert_uint_eq(m, sizeof(text));
	ck_assert_mem_eq(back, text, sizeof(text));
	ck_assert(ZSTD_isError(ZSTD_decompress(back, sizeof(back), text, sizeof(text))));
	pr = blkid_new_probe();
	ck_assert_ptr_nonnull(pr);
	blkid_free_probe(pr);
	ck_assert_uint_eq(tu_nr_errs, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lazy_lib");
	TCase *tc = tcase_create("load");

	tcase_add_test(tc, test_loads_and_resolves);
	tcase_add_test(tc, test_missing_library);
	tcase_add_test(tc, test_zstd_and_blkid_wrappers);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(suite)
