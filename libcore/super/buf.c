// SPDX-License-Identifier: MIT
/*
 * Superblock buffers.  A buffer is BFS_SB_MAX_BYTES (64 KiB) so that a
 * superblock can grow its sections in place (field.c), but an encoded
 * superblock is a few KiB: a buffer from malloc had to be cleared whole, and
 * every page of it stayed resident, 16 pages for the one or two a read
 * fills (fsck held 2 to 4 of them, 128 to 256 KiB of its peak).  A mapping
 * of its own is zero without being touched, so only the pages a read or an
 * update writes are resident, and it goes back to the system when freed.
 */
#include <bfs/os.h>
#include <bfs/super.h>

struct bfs_sb *bfs_sb_buf_alloc(void)
{
	/* page-aligned, so also BFS_SB_IO_ALIGN-aligned for direct I/O */
	_Static_assert(BFS_SB_IO_ALIGN <= 4096, "mappings are only page-aligned");
	return bfs_map_anon(BFS_SB_MAX_BYTES);
}

void bfs_sb_buf_free(struct bfs_sb *sb)
{
	bfs_unmap(sb, BFS_SB_MAX_BYTES);
}
