// SPDX-License-Identifier: MIT
/* The key-type table: BFS_BKEY_TYPES expanded once, read-only. */
#include "keys.h"

static const struct bfs_bkey_ops *const type_ops[BFS_KEY_TYPE_NR] = {
#define x(n, nr, name) [nr] = &bfs_key_ops_##n,
	BFS_BKEY_TYPES(x)
#undef x
};

static const char *const type_names[BFS_KEY_TYPE_NR] = {
#define x(n, nr, name) [nr] = name,
	BFS_BKEY_TYPES(x)
#undef x
};

const struct bfs_bkey_ops *bfs_bkey_type_ops(unsigned type)
{
	return type < BFS_KEY_TYPE_NR ? type_ops[type] : NULL;
}

const char *bfs_bkey_type_name(unsigned type)
{
	return type < BFS_KEY_TYPE_NR && type_names[type] ? type_names[type] : "unknown";
}
