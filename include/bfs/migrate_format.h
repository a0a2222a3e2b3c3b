/* SPDX-License-Identifier: MIT */
/*
 * What bfs migrate records about the filesystem it converted, so that
 * --rollback can restore it: the value of the xattr "trusted.bfs.migrate" on
 * /ext2_saved/image, the file that holds every block the ext filesystem
 * used, at its own offset (see doc/bfs-migrate.8).  Little-endian.
 */
#ifndef BFS_MIGRATE_FORMAT_H
#define BFS_MIGRATE_FORMAT_H

#include "types.h"

#define BFS_MIGRATE_MAGIC	0x315247494d534642ULL	/* "BFSMIGR1" */
#define BFS_MIGRATE_VERSION	1

struct bfs_migrate_saved {
	__le64	magic;
	__le32	version;
	__le32	block_size;	/* the ext block size */
	__le64	ext_bytes;	/* the ext filesystem's size = the image's size */
	__le64	used_bytes;	/* bytes of used ext blocks = bytes of data in the image */
	__le64	dev_size;	/* the device at migration */
	/*
	 * Image bytes in [head_end, tail_start) point at the device bytes at
	 * the same offset; the rest are copies that --rollback writes back.
	 */
	__le64	head_end;
	__le64	tail_start;
	__le64	reserved[2];
};
BFS_STATIC_SIZE(struct bfs_migrate_saved, 72);

#endif
