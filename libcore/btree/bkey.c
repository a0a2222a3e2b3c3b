// SPDX-License-Identifier: MIT
/*
 * Key validation and printing: the header checks every key gets, then its
 * type's methods from the key-type table (libcore/keys/).
 */
#include <stdio.h>

#include <bfs/bkey.h>
#include <bfs/btree_format.h>
#include <bfs/os.h>

int bfs_bkey_validate(const struct bfs_bkey *k, bool is_extents, char *err, size_t err_len)
{
	const struct bfs_bkey_ops *ops = bfs_bkey_type_ops(k->type);
	u32 val = bfs_bkey_u64s(k) < BFS_BKEY_U64S ? 0 : bfs_bkey_val_u64s(k);

#define FAIL(...) do { if (err) snprintf(err, err_len, __VA_ARGS__); return -EUCLEAN; } while (0)
	if (bfs_bkey_u64s(k) < BFS_BKEY_U64S)
		FAIL("key u64s %u smaller than the header", bfs_bkey_u64s(k));
	if (k->flags || le32_to_cpu(k->pad))
		FAIL("key has non-zero reserved fields");
	if (ops) {
		if (val < ops->min_val_u64s || (ops->max_val_u64s && val > ops->max_val_u64s) ||
		    (k->type == BFS_KEY_DELETED && val))
			FAIL("%s key value of %u u64s out of bounds", bfs_bkey_type_name(k->type), val);
	}
	if (is_extents) {
		if (k->type != BFS_KEY_DELETED && k->type != BFS_KEY_BTREE_PTR && !bfs_bkey_size(k))
			FAIL("extent key with size 0");
		if (bfs_bkey_size(k) > le64_to_cpu(k->offset))
			FAIL("extent key size %u larger than its end offset", bfs_bkey_size(k));
	} else if (bfs_bkey_size(k)) {
		FAIL("non-extent key with size %u", bfs_bkey_size(k));
	}
	if (ops && ops->validate)
		return ops->validate(k, err, err_len);
	return 0;
#undef FAIL
}

int bfs_bpos_to_text(char *buf, size_t len, struct bfs_bpos p)
{
	return snprintf(buf, len, "%llu:%llu:%u", (unsigned long long)p.inode,
			(unsigned long long)p.offset, p.snapshot);
}

int bfs_bkey_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_bkey_ops *ops = bfs_bkey_type_ops(k->type);
	char pos[64];
	int n;

	bfs_bpos_to_text(pos, sizeof(pos), bfs_bkey_pos(k));
	n = snprintf(buf, len, "u64s %u type %s pos %s", bfs_bkey_u64s(k),
		     bfs_bkey_type_name(k->type), pos);
	if (bfs_bkey_size(k) && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " size %u", bfs_bkey_size(k));
	if (ops && ops->val_to_text && n >= 0 && (size_t)n + 2 < len &&
	    bfs_bkey_u64s(k) >= BFS_BKEY_U64S) {
		n += snprintf(buf + n, len - (size_t)n, ": ");
		ops->val_to_text(buf + n, len - (size_t)n, k);
		n = (int)strlen(buf);
	}
	return n;
}
