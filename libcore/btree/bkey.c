// SPDX-License-Identifier: MIT
/*
 * Key type registry, key validation and printing.  The btree core knows only
 * deleted keys and child pointers; upper layers register their value types
 * here so that validation and dumps cover them too.
 */
#include <stdio.h>

#include <bfs/bkey.h>
#include <bfs/btree_format.h>
#include <bfs/os.h>

static void ptr_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_btree_ptr *p = (const void *)k->v;
	struct bfs_bpos min = bfs_bpos_from_disk(&p->min_key);

	snprintf(buf, len, "node %llu seq %016llx level %u btree %u min %llu:%llu:%u",
		 (unsigned long long)le64_to_cpu(p->offset), (unsigned long long)le64_to_cpu(p->seq),
		 p->level, p->btree_id, (unsigned long long)min.inode,
		 (unsigned long long)min.offset, min.snapshot);
}

static void hex_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const u8 *v = bfs_bkey_val(k);
	size_t n = bfs_bkey_val_u64s(k) * 8, i, o = 0;

	if (len)
		buf[0] = 0;
	for (i = 0; i < n && i < 16 && o + 3 < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%02x", v[i]);
	if (i < n && o + 4 < len)
		snprintf(buf + o, len - o, "...");
}

static const struct bfs_bkey_ops ops_deleted = { .name = "deleted", .max_val_u64s = 0 };
static const struct bfs_bkey_ops ops_ptr = {
	.name = "btree_ptr",
	.min_val_u64s = BFS_BTREE_PTR_VAL_U64S,
	.max_val_u64s = BFS_BTREE_PTR_VAL_U64S,
	.val_to_text = ptr_to_text,
};
static const struct bfs_bkey_ops ops_cookie = { .name = "cookie", .val_to_text = hex_to_text };

static const struct bfs_bkey_ops *type_ops[BFS_KEY_TYPE_NR] = {
	[BFS_KEY_DELETED] = &ops_deleted,
	[BFS_KEY_BTREE_PTR] = &ops_ptr,
	[BFS_KEY_COOKIE] = &ops_cookie,
};

int bfs_bkey_register_type(unsigned type, const struct bfs_bkey_ops *ops)
{
	if (type >= BFS_KEY_TYPE_NR || type == BFS_KEY_DELETED || type == BFS_KEY_BTREE_PTR)
		return -EINVAL;
	type_ops[type] = ops;
	return 0;
}

const struct bfs_bkey_ops *bfs_bkey_type_ops(unsigned type)
{
	return type < BFS_KEY_TYPE_NR ? type_ops[type] : NULL;
}

const char *bfs_bkey_type_name(unsigned type)
{
	const struct bfs_bkey_ops *ops = bfs_bkey_type_ops(type);

	return ops && ops->name ? ops->name : "unknown";
}

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
		    (ops == &ops_deleted && val))
			FAIL("%s key value of %u u64s out of bounds", ops->name, val);
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
