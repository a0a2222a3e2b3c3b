// SPDX-License-Identifier: MIT
#include <bfs/checksum.h>

#include <xxhash.h>

u64 bfs_xxh3(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

/* inputs this long take XXH3's vector loop (XXH3_MIDSIZE_MAX in xxhash.h) */
#define XXH3_LONG	240

u64 bfs_csum(unsigned type, const void *buf, size_t len)
{
	if (type != BFS_CSUM_XXH3)
		return 0;
#ifdef BFS_HAVE_XXH3_AVX2
	/* data chunks: AVX2 when the CPU has it (xxhash_avx2.c) */
	if (len > XXH3_LONG && __builtin_cpu_supports("avx2"))
		return bfs_xxh3_avx2(buf, len);
#endif
	return XXH3_64bits(buf, len);
}

const char *bfs_csum_name(unsigned type)
{
	static const char *const names[] = { "none", "xxhash" };

	return type < ARRAY_SIZE(names) ? names[type] : "unknown";
}

const char *bfs_compression_name(unsigned type)
{
	static const char *const names[] = { "none", "zstd" };

	return type < ARRAY_SIZE(names) ? names[type] : "unknown";
}
