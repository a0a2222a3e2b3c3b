/* SPDX-License-Identifier: MIT */
/*
 * The set of inode numbers pass 2 found, each with a dense index (0, 1, ...
 * in the order added) into the per-inode arrays of fs_check.h: what lets
 * those arrays hold a few bytes an inode instead of the inode number too.
 *
 * Numbers added in increasing order (the inodes btree's) go into chunks of
 * 2^16 numbers: a sorted list of their low 16 bits (2 bytes a number) while
 * the chunk is sparse, a bitmap with a rank table (about 1.3 bits a number
 * when full) once it holds more than INO_SET_DENSE.  A number added out of
 * order (an inode a repair made), and every one after it, goes into a small
 * sorted side table.
 */
#ifndef BFS_FSCK_INO_SET_H
#define BFS_FSCK_INO_SET_H

#include <bfs/types.h>

#include <stdbool.h>
#include <stddef.h>

struct ino_chunk;

struct ino_set {
	struct ino_chunk *ch;	/* sorted by number, the last one still growing */
	size_t	nr_ch, cap_ch;
	size_t	nr;		/* numbers in the set: the next index */
	u64	last;		/* the largest number in the chunks */
	struct ino_late	*late;	/* numbers added out of order, sorted */
	size_t	nr_late, cap_late;
};

/* add @ino (not in the set yet) with the next index, stored in *idx; -ENOMEM */
int ino_set_add(struct ino_set *s, u64 ino, size_t *idx);
/* the index of @ino, or false if it is not in the set */
bool ino_set_find(const struct ino_set *s, u64 ino, size_t *idx);
/* bytes allocated (for the verbose summary) */
size_t ino_set_bytes(const struct ino_set *s);
void ino_set_free(struct ino_set *s);

#endif
