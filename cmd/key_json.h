/* SPDX-License-Identifier: MIT */
/* Btree keys and positions as JSON, each field by name (cmd/key_json.c). */
#ifndef BFS_CMD_KEY_JSON_H
#define BFS_CMD_KEY_JSON_H

#include <stdio.h>

#include <bfs/bkey.h>

/* {"inode": N|"max", "offset": N|"max", "snapshot": N|"max"} */
void bfs_pos_json(FILE *f, struct bfs_bpos p);
/*
 * The key as one JSON object: "key_type" (name), "type_id", "u64s", "pos",
 * "size" and "value", an object of the value's fields by name (empty for
 * types without a value; {"u64s": N} for a type this bfs cannot decode).
 */
void bfs_key_json(FILE *f, const struct bfs_bkey *k);

#endif
