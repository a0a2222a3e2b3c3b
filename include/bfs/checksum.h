/* SPDX-License-Identifier: MIT */
/* Checksums of on-disk structures (libcore/util/checksum.c). */
#ifndef BFS_CHECKSUM_H
#define BFS_CHECKSUM_H

#include "format.h"

/* XXH3-64, seed 0: the superblock always uses it, whatever csum_type says */
u64 bfs_xxh3(const void *buf, size_t len);
/* checksum of @buf with @type (enum bfs_csum_type); 0 for BFS_CSUM_NONE */
u64 bfs_csum(unsigned type, const void *buf, size_t len);
#ifdef BFS_HAVE_XXH3_AVX2
/* bfs_xxh3() with XXH3's AVX2 kernel: only on a CPU with AVX2 */
u64 bfs_xxh3_avx2(const void *buf, size_t len);
#endif
const char *bfs_csum_name(unsigned type);
const char *bfs_compression_name(unsigned type);

#endif /* BFS_CHECKSUM_H */
