// SPDX-License-Identifier: MIT
/*
 * XXH3, compiled in from the system's xxhash.h (its header-only build)
 * instead of linked from libxxhash: the checksum of every node and
 * superblock needs two functions, and a shared library's mapped and
 * relocated pages cost every run more than their code (issue 10,
 * doc/benchmarks.md).  The hashes are the library's: XXH3 is stable since
 * xxHash 0.8.0.
 */
#define XXH_STATIC_LINKING_ONLY
#define XXH_IMPLEMENTATION
#include <xxhash.h>
