// SPDX-License-Identifier: MIT
/*
 * XXH3 with its AVX2 kernel, for long inputs such as data chunks: the
 * baseline x86-64 build (SSE2) spends about one instruction per byte in
 * XXH3_hashLong, which made a 4 KiB read of a 16 KiB chunk spend more than
 * half of the FUSE daemon's instructions in the checksum (issue 14,
 * doc/benchmarks.md "4k random reads").  Only this file is built with
 * -mavx2 (Makefile); bfs_csum() calls it when the CPU has AVX2.  The hash
 * is the same function whatever the kernel (xxhash.h: XXH_VECTOR only picks
 * the implementation).  Everything is inlined and static here
 * (XXH_INLINE_ALL): no symbol meets xxhash.c's.
 */
#include <bfs/checksum.h>

#if defined(__x86_64__) && defined(__AVX2__)
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include <xxhash.h>

u64 bfs_xxh3_avx2(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}
#endif
