// SPDX-License-Identifier: MIT
/* What cmd/ does when a library a wrapper needs is missing (lazy_lib.h). */
#include "lazy_lib.h"

#include <stdlib.h>

#include "cmd.h"

void lazy_lib_missing(void)
{
	exit(BFS_EXIT_ERROR);
}
