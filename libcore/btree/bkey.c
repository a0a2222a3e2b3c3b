// SPDX-License-Identifier: MIT
/*
 * Key validation and printing: the header checks every key gets, then its
 * type's methods from the key-type table (libcore/keys/).
 */
#include <stdio.h>
#include <string.h>

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
	/* the filesystem has no snapshots yet: its keys all live in snapshot 0 */
	if (k->type >= BFS_KEY_FS_FIRST && ops && le32_to_cpu(k->snapshot))
		FAIL("%s key in snapshot %u (filesystem keys are in snapshot 0)",
		     bfs_bkey_type_name(k->type), le32_to_cpu(k->snapshot));
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

/* a component at its maximum prints as "max": UINT64_MAX means "to the end" */
static int comp_to_text(char *buf, size_t len, u64 v, u64 max, const char *sep)
{
	return v == max ? snprintf(buf, len, "max%s", sep) :
			  snprintf(buf, len, "%llu%s", (unsigned long long)v, sep);
}

int bfs_bpos_to_text(char *buf, size_t len, struct bfs_bpos p)
{
	int n, m;

	if (bfs_bpos_eq(p, BFS_POS_MAX))
		return snprintf(buf, len, "max");
	n = comp_to_text(buf, len, p.inode, UINT64_MAX, ":");
	m = comp_to_text(buf + BFS_MIN((size_t)n, len), len - BFS_MIN((size_t)n, len), p.offset,
			 UINT64_MAX, ":");
	n += m;
	m = comp_to_text(buf + BFS_MIN((size_t)n, len), len - BFS_MIN((size_t)n, len), p.snapshot,
			 UINT32_MAX, "");
	return n + m;
}

/* one component: a decimal number up to @max, or "max" */
static int comp_parse(const char **s, u64 max, u64 *out)
{
	u64 v = 0;
	const char *q = *s;

	if (!strncmp(q, "max", 3)) {
		*out = max;
		*s = q + 3;
		return 0;
	}
	if (*q < '0' || *q > '9')
		return -EINVAL;
	for (; *q >= '0' && *q <= '9'; q++) {
		if (v > (max - (u64)(*q - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (u64)(*q - '0');
	}
	*out = v;
	*s = q;
	return 0;
}

int bfs_bpos_parse(const char *s, struct bfs_bpos *p)
{
	u64 inode, offset, snap = 0;
	int ret;

	if (!strcmp(s, "min") || !strcmp(s, "max")) {
		*p = s[1] == 'i' ? BFS_POS_MIN : BFS_POS_MAX;
		return 0;
	}
	if ((ret = comp_parse(&s, UINT64_MAX, &inode)))
		return ret;
	if (*s++ != ':')
		return -EINVAL;
	if ((ret = comp_parse(&s, UINT64_MAX, &offset)))
		return ret;
	if (*s == ':') {
		s++;
		if ((ret = comp_parse(&s, UINT32_MAX, &snap)))
			return ret;
	}
	if (*s)
		return -EINVAL;
	*p = BFS_POS(inode, offset, (u32)snap);
	return 0;
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
