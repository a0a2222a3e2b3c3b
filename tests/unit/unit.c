// SPDX-License-Identifier: MIT
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int bfs_unit_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

char *bfs_unit_tmpfile(const char *tag)
{
	const char *dir = getenv("TMPDIR");
	static unsigned counter;
	char *path;

	if (!dir)
		dir = "/tmp";
	if (asprintf(&path, "%s/bfs-unit-%s-%d-%u", dir, tag, (int)getpid(), counter++) < 0)
		abort();
	return path;
}
