// SPDX-License-Identifier: MIT
/*
 * libzstd, loaded on first use (include/bfs/lazy_lib.h): every function of
 * it bfs calls (compressed data, image streams, the superblock's level
 * checks).  Without the library each returns what libzstd returns on an
 * error: NULL, or an error code, which the ZSTD_isError() here (1) and
 * ZSTD_getErrorName() take for one.  A function bfs starts to use must be
 * added here, or the link fails (bfs does not link -lzstd).
 */
#include <zstd.h>

#include <bfs/lazy_lib.h>

#define ZSTD_FAIL	((size_t)-1)

static const char *const zstd_sonames[] = { "libzstd.so.1", "libzstd.so", NULL };
static struct bfs_lazy_lib lazy_zstd = { .sonames = zstd_sonames,
					 .package = "libzstd (Debian: libzstd1)" };

BFS_LAZY_FN(lazy_zstd, unsigned, ZSTD_isError, (size_t code), (code), 1)
BFS_LAZY_FN(lazy_zstd, const char *, ZSTD_getErrorName, (size_t code), (code),
	"libzstd is not installed")
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_CCtx_setParameter, (ZSTD_CCtx *cctx, ZSTD_cParameter param,
	int value), (cctx, param, value), ZSTD_FAIL)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_CStreamOutSize, (void), (), 0)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_DStreamInSize, (void), (), 0)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_compress, (void *dst, size_t dstCapacity, const void *src,
	size_t srcSize, int compressionLevel), (dst, dstCapacity, src, srcSize, compressionLevel),
	ZSTD_FAIL)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_compressBound, (size_t srcSize), (srcSize), 0)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_compressStream2, (ZSTD_CCtx *cctx, ZSTD_outBuffer *output,
	ZSTD_inBuffer *input, ZSTD_EndDirective endOp), (cctx, output, input, endOp), ZSTD_FAIL)
BFS_LAZY_FN(lazy_zstd, ZSTD_CStream *, ZSTD_createCStream, (void), (), NULL)
BFS_LAZY_FN(lazy_zstd, ZSTD_DStream *, ZSTD_createDStream, (void), (), NULL)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_decompress, (void *dst, size_t dstCapacity, const void *src,
	size_t compressedSize), (dst, dstCapacity, src, compressedSize), ZSTD_FAIL)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_decompressStream, (ZSTD_DStream *zds, ZSTD_outBuffer *output,
	ZSTD_inBuffer *input), (zds, output, input), ZSTD_FAIL)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_freeCStream, (ZSTD_CStream *zcs), (zcs), 0)
BFS_LAZY_FN(lazy_zstd, size_t, ZSTD_freeDStream, (ZSTD_DStream *zds), (zds), 0)
