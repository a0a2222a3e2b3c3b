/* SPDX-License-Identifier: MIT */
/*
 * On-disk layout of an I/O log: the dm-log-writes format of Linux
 * (drivers/md/dm-log-writes.c), so that the kernel's userspace replay tool
 * (xfstests src/log-writes/replay-log) can read logs written by bfs and bfs
 * can read logs written by the kernel.  doc/format/iolog.md describes it byte
 * by byte.
 *
 * Layout, in units of the log's sector size S (super.sectorsize):
 *
 *   block 0          super (struct bfs_iolog_super, zero padded to S)
 *   then per entry   one block: struct bfs_iolog_entry_hdr, zero padded to S
 *                    (a mark's text follows the header inside that block)
 *                    then, for a write, its payload: nr_sectors * S bytes
 *
 * `sector` and `nr_sectors` count units of S, not of 512 bytes.  The kernel
 * uses the logical block size of the logged device as S; so does bfs.
 */
#ifndef BFS_IOLOG_FORMAT_H
#define BFS_IOLOG_FORMAT_H

#include "types.h"

#define BFS_IOLOG_MAGIC		UINT64_C(0x6a736677736872)
#define BFS_IOLOG_VERSION	UINT64_C(1)

/* entry flags (dm-log-writes LOG_*_FLAG) */
#define BFS_IOLOG_F_FLUSH	(UINT64_C(1) << 0)	/* preflush: all earlier entries durable */
#define BFS_IOLOG_F_FUA		(UINT64_C(1) << 1)	/* this write is durable by itself */
#define BFS_IOLOG_F_DISCARD	(UINT64_C(1) << 2)	/* range discarded, no payload */
#define BFS_IOLOG_F_MARK	(UINT64_C(1) << 3)	/* named mark, text in the entry block */
#define BFS_IOLOG_F_METADATA	(UINT64_C(1) << 4)	/* REQ_META hint, ignored on replay */
/*
 * bfs extension: the write or discard is not aligned to the log sector size.
 * `sector` holds the byte offset and `data_len` the byte length; for a write
 * `nr_sectors` is the payload size rounded up to whole log sectors, so that a
 * tool walking the log still finds the next entry.
 */
#define BFS_IOLOG_F_BFS_BYTES	(UINT64_C(1) << 16)

#define BFS_IOLOG_F_KNOWN	(BFS_IOLOG_F_FLUSH | BFS_IOLOG_F_FUA | BFS_IOLOG_F_DISCARD | \
				 BFS_IOLOG_F_MARK | BFS_IOLOG_F_METADATA | BFS_IOLOG_F_BFS_BYTES)

/* the log sector size bfs accepts when reading (the kernel uses 512..4096) */
#define BFS_IOLOG_MIN_SECTOR_SIZE	512U
#define BFS_IOLOG_MAX_SECTOR_SIZE	65536U
/* sector units of the Linux block layer, for sizes in the kernel's terms */
#define BFS_IOLOG_BIO_SECTOR		512U

/* log block 0 */
struct bfs_iolog_super {
	__le64	magic;		/*  0: BFS_IOLOG_MAGIC */
	__le64	version;	/*  8: BFS_IOLOG_VERSION */
	__le64	nr_entries;	/* 16: number of entries that follow */
	__le32	sectorsize;	/* 24: S, power of two */
	__le32	pad;		/* 28: implicit padding in the kernel's struct; ignored */
};
BFS_STATIC_SIZE(struct bfs_iolog_super, 32);

/* first bytes of each entry block */
struct bfs_iolog_entry_hdr {
	__le64	sector;		/*  0: first sector written (units of S) */
	__le64	nr_sectors;	/*  8: sectors written / discarded (units of S) */
	__le64	flags;		/* 16: BFS_IOLOG_F_* */
	__le64	data_len;	/* 24: mark: text length; else 0 (or see F_BFS_BYTES) */
};
BFS_STATIC_SIZE(struct bfs_iolog_entry_hdr, 32);

#endif /* BFS_IOLOG_FORMAT_H */
