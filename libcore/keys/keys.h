/* SPDX-License-Identifier: MIT */
/*
 * The methods of every key type (libcore/keys/): validation, printing and
 * extent trimming of values, written against the on-disk structures in
 * include/bfs/ alone.  This layer sits below the btree, which looks every
 * key up in the one const table built from BFS_BKEY_TYPES (table.c).
 */
#ifndef BFS_KEYS_H
#define BFS_KEYS_H

#include <bfs/bkey.h>

#define x(n, nr, name) extern const struct bfs_bkey_ops bfs_key_ops_##n;
BFS_BKEY_TYPES(x)
#undef x

#endif
