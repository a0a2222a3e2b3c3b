/* SPDX-License-Identifier: MIT */
/*
 * Link counts too big for the 3 bits pass 2 keeps an inode (fs_check.h):
 * a hash table from the inode's dense index to its count, as e2fsck's
 * icount keeps counts above 1 in a side list.  An index once in the table
 * stays there (its count may drop to anything): no deletion, so no
 * tombstones.  Hard links are few in most trees; a tree of many (a
 * snapshot farm) costs 16 bytes a table slot, the table at most half full.
 */
#ifndef BFS_FSCK_LINK_TABLE_H
#define BFS_FSCK_LINK_TABLE_H

#include <bfs/types.h>

#include <stddef.h>

struct link_slot;

struct link_table {
	struct link_slot *slot;
	size_t	nr, mask;	/* entries; slots - 1 (0 with no table yet) */
};

/* the count of @idx; must have been set */
u32 link_table_get(const struct link_table *t, size_t idx);
/* set the count of @idx (added if new); -ENOMEM */
int link_table_set(struct link_table *t, size_t idx, u32 links);
size_t link_table_bytes(const struct link_table *t);
void link_table_free(struct link_table *t);

#endif
