/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers for the check-based unit tests.  Each tests/unit/test_*.c is
 * its own program: it builds a Suite and ends with BFS_UNIT_MAIN(suite_fn).
 */
#ifndef BFS_TESTS_UNIT_H
#define BFS_TESTS_UNIT_H

#include <check.h>

/* run @s, print check's summary, return the process exit status */
int bfs_unit_run(Suite *s);

#define BFS_UNIT_MAIN(suite_fn) \
	int main(void) { return bfs_unit_run(suite_fn()); }

/* a unique temporary path under $TMPDIR for this test (malloc'd) */
char *bfs_unit_tmpfile(const char *tag);

#endif
