/* SPDX-License-Identifier: MIT */
/*
 * Fixed-width little-endian types for on-disk structures.
 *
 * Every on-disk integer is declared with one of the __leNN types and is only
 * ever read or written through le*_to_cpu() / cpu_to_le*().  The types are
 * wrapped in single-member structs so that forgetting a conversion is a
 * compile error rather than a silent byte-order bug on big-endian hosts.
 */
#ifndef BFS_TYPES_H
#define BFS_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

/*
 * <linux/types.h> (which <sys/stat.h> pulls in under _GNU_SOURCE) has plain
 * integer __leNN typedefs of its own.  Declare those under other names now
 * (its include guard keeps it from coming back), and make our __leNN names
 * macros for bfs_leNN, so either include order compiles.
 */
#ifdef __linux__
#define __le16 bfs_linux_le16
#define __le32 bfs_linux_le32
#define __le64 bfs_linux_le64
#include <linux/types.h>
#undef __le16
#undef __le32
#undef __le64
#endif
#define __le16 bfs_le16
#define __le32 bfs_le32
#define __le64 bfs_le64

typedef struct { u16 v; } __attribute__((packed, aligned(2))) bfs_le16;
typedef struct { u32 v; } __attribute__((packed, aligned(4))) bfs_le32;
typedef struct { u64 v; } __attribute__((packed, aligned(8))) bfs_le64;

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define BFS_LE_SWAP16(x) (x)
#define BFS_LE_SWAP32(x) (x)
#define BFS_LE_SWAP64(x) (x)
#else
#define BFS_LE_SWAP16(x) __builtin_bswap16(x)
#define BFS_LE_SWAP32(x) __builtin_bswap32(x)
#define BFS_LE_SWAP64(x) __builtin_bswap64(x)
#endif

static inline u16 le16_to_cpu(__le16 x) { return BFS_LE_SWAP16(x.v); }
static inline u32 le32_to_cpu(__le32 x) { return BFS_LE_SWAP32(x.v); }
static inline u64 le64_to_cpu(__le64 x) { return BFS_LE_SWAP64(x.v); }
static inline __le16 cpu_to_le16(u16 x) { return (__le16){ BFS_LE_SWAP16(x) }; }
static inline __le32 cpu_to_le32(u32 x) { return (__le32){ BFS_LE_SWAP32(x) }; }
static inline __le64 cpu_to_le64(u64 x) { return (__le64){ BFS_LE_SWAP64(x) }; }

#define BFS_STATIC_SIZE(type, size) \
	_Static_assert(sizeof(type) == (size), #type " must be " #size " bytes")

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define BFS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define BFS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define BFS_DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define BFS_ROUND_DOWN(n, a) ((n) / (a) * (a))
#define BFS_ROUND_UP(n, a) BFS_DIV_ROUND_UP(n, a) * (a)

static inline bool bfs_is_pow2(u64 x) { return x && !(x & (x - 1)); }

static inline u64 bfs_rounddown_pow2(u64 x)
{
	return x ? (u64)1 << (63 - __builtin_clzll(x)) : 0;
}

static inline unsigned bfs_ilog2(u64 x) { return 63 - __builtin_clzll(x); }

#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

#endif /* BFS_TYPES_H */
