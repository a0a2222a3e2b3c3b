// SPDX-License-Identifier: MIT
#include <bfs/checksum.h>

#include <xxhash.h>

u64 bfs_xxh3(const void *buf, size_t len)
{
	return XXH3_64bits(buf, len);
}

u64 bfs_csum(unsigned type, const void *buf, size_t len)
{
	return type == BFS_CSUM_XXH3 ? XXH3_64bits(buf, len) : 0;
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
