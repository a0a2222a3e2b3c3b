// SPDX-License-Identifier: MIT
/*
 * Validation and printing of the namespace key types.  Every key read from
 * disk or replayed from the journal goes through these checks, so the rest
 * of the namespace code may trust sizes and lengths: a bad key is -EUCLEAN
 * with a reason, never an out-of-bounds read.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <bfs/fs_format.h>
#include <bfs/os.h>

#include "keys.h"

#define FAIL(...) do { snprintf(err, err_len, __VA_ARGS__); return -EUCLEAN; } while (0)

static bool is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

static size_t val_bytes(const struct bfs_bkey *k)
{
	return (size_t)bfs_bkey_val_u64s(k) * 8;
}

static bool mode_valid(u32 mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return !(mode & ~(u32)(S_IFMT | 07777));
	default:
		return false;
	}
}

/* printable form of a name: other bytes as \xNN */
static void name_to_text(char *buf, size_t len, const u8 *name, size_t n)
{
	size_t o = 0, i;

	for (i = 0; i < n && o + 5 < len; i++) {
		if (name[i] >= 0x20 && name[i] < 0x7f && name[i] != '\\' && name[i] != '\'')
			buf[o++] = (char)name[i];
		else
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", name[i]);
	}
	if (len)
		buf[BFS_MIN(o, len - 1)] = 0;
}

/* ---- inode ---- */

static int inode_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	const struct bfs_inode_v *v = bfs_bkey_val(k);
	u32 mode = le32_to_cpu(v->mode);

	if (!le64_to_cpu(k->inode) || le64_to_cpu(k->offset))
		FAIL("inode key at offset %llu or inode 0", (unsigned long long)le64_to_cpu(k->offset));
	if (le64_to_cpu(k->inode) >= BFS_INO_LIMIT)
		FAIL("inode number %llu beyond the limit", (unsigned long long)le64_to_cpu(k->inode));
	if (!mode_valid(mode))
		FAIL("inode mode 0%o invalid", mode);
	if (le32_to_cpu(v->flags) & ~BFS_INODE_FLAGS_KNOWN)
		FAIL("inode flags 0x%x unknown", le32_to_cpu(v->flags));
	if (le32_to_cpu(v->nlink) > BFS_LINK_MAX)
		FAIL("inode nlink %u over the maximum", le32_to_cpu(v->nlink));
	if (S_ISDIR(mode) && !le64_to_cpu(v->parent))
		FAIL("directory without a parent");
	if (!S_ISDIR(mode) && le64_to_cpu(v->parent))
		FAIL("non-directory with a parent");
	if (S_ISLNK(mode) && (!le64_to_cpu(v->size) || le64_to_cpu(v->size) > BFS_SYMLINK_MAX))
		FAIL("symlink of size %llu", (unsigned long long)le64_to_cpu(v->size));
	return 0;
}

static void inode_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_inode_v *v = bfs_bkey_val(k);
	s64 mt = (s64)le64_to_cpu(v->mtime);
	/* sign and magnitude: -1.5 s is "-1.500000000", not "-1.-500000000" or "-2.5..." */
	u64 amt = mt < 0 ? -(u64)mt : (u64)mt;

	snprintf(buf, len, "ino %llu mode 0%o nlink %u uid %u gid %u size %llu sectors %llu "
		 "flags 0x%x rdev %llu gen %llu parent %llu mtime %s%llu.%09llu",
		 (unsigned long long)le64_to_cpu(k->inode), le32_to_cpu(v->mode),
		 le32_to_cpu(v->nlink), le32_to_cpu(v->uid), le32_to_cpu(v->gid),
		 (unsigned long long)le64_to_cpu(v->size), (unsigned long long)le64_to_cpu(v->sectors),
		 le32_to_cpu(v->flags), (unsigned long long)le64_to_cpu(v->rdev),
		 (unsigned long long)le64_to_cpu(v->generation),
		 (unsigned long long)le64_to_cpu(v->parent), mt < 0 ? "-" : "",
		 (unsigned long long)(amt / 1000000000), (unsigned long long)(amt % 1000000000));
}

/* ---- counter, orphan, whiteout ---- */

static int counter_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	const struct bfs_inode_counter_v *v = bfs_bkey_val(k);

	if (!bfs_bpos_eq(bfs_bkey_pos(k), BFS_INODE_COUNTER_POS))
		FAIL("inode counter not at 0:0:0");
	if (le64_to_cpu(v->next_ino) < BFS_FIRST_FREE_INO)
		FAIL("inode counter %llu below %u", (unsigned long long)le64_to_cpu(v->next_ino),
		     BFS_FIRST_FREE_INO);
	return 0;
}

static void counter_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_inode_counter_v *v = bfs_bkey_val(k);

	snprintf(buf, len, "next_ino %llu", (unsigned long long)le64_to_cpu(v->next_ino));
}

static int orphan_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	if (bfs_bkey_val_u64s(k))
		FAIL("orphan key with a value");
	if (le64_to_cpu(k->inode) || !le64_to_cpu(k->offset))
		FAIL("orphan key not at 0:ino");
	return 0;
}

static void orphan_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	snprintf(buf, len, "orphan ino %llu", (unsigned long long)le64_to_cpu(k->offset));
}

static int whiteout_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	if (bfs_bkey_val_u64s(k))
		FAIL("hash whiteout with a value");
	return 0;
}

/* ---- symlink ---- */

static int symlink_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	const struct bfs_symlink_v *v = bfs_bkey_val(k);
	size_t n = le16_to_cpu(v->len);

	if (!le64_to_cpu(k->inode) || !le64_to_cpu(k->offset))
		FAIL("symlink chunk at offset 0");
	if (!n || n > le16_to_cpu(v->total) || le16_to_cpu(v->total) > BFS_SYMLINK_MAX ||
	    sizeof(*v) + n > val_bytes(k))
		FAIL("symlink chunk of %zu bytes (target %u) in a %zu-byte value", n,
		     le16_to_cpu(v->total), val_bytes(k));
	return 0;
}

static void symlink_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_symlink_v *v = bfs_bkey_val(k);
	char name[160];

	name_to_text(name, sizeof(name), v->data, BFS_MIN(le16_to_cpu(v->len), 40u));
	snprintf(buf, len, "symlink %u of %u bytes '%s%s'", le16_to_cpu(v->len),
		 le16_to_cpu(v->total), name, le16_to_cpu(v->len) > 40 ? "..." : "");
}

/* ---- dirent ---- */

static int dirent_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	const struct bfs_dirent_v *v = bfs_bkey_val(k);
	size_t n = v->name_len;

	if (le64_to_cpu(k->offset) < BFS_DIRENT_SLOT_MIN)
		FAIL("dirent at reserved slot %llu", (unsigned long long)le64_to_cpu(k->offset));
	if (!n || sizeof(*v) + n > val_bytes(k) || val_bytes(k) - sizeof(*v) - n >= 8)
		FAIL("dirent name length %zu does not match a %zu-byte value", n, val_bytes(k));
	if (memchr(v->name, '/', n) || memchr(v->name, 0, n) ||
	    is_dot((const char *)v->name, n))
		FAIL("dirent name invalid ('/', NUL, \".\" or \"..\")");
	if (!le64_to_cpu(v->ino) || le64_to_cpu(v->ino) >= BFS_INO_LIMIT)
		FAIL("dirent points to inode %llu", (unsigned long long)le64_to_cpu(v->ino));
	if (!mode_valid((u32)v->type << 12))
		FAIL("dirent type %u invalid", v->type);
	return 0;
}

static const char *dtype_name(unsigned t)
{
	switch ((u32)t << 12) {
	case S_IFREG: return "reg";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "lnk";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "sock";
	default: return "?";
	}
}

static void dirent_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_dirent_v *v = bfs_bkey_val(k);
	char name[BFS_NAME_MAX * 4 + 1];

	name_to_text(name, sizeof(name), v->name, v->name_len);
	snprintf(buf, len, "dirent '%s' -> %llu (%s)", name,
		 (unsigned long long)le64_to_cpu(v->ino), dtype_name(v->type));
}

/* ---- xattr ---- */

static int xattr_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	const struct bfs_xattr_v *v = bfs_bkey_val(k);
	u32 vl = le32_to_cpu(v->value_len), il = le32_to_cpu(v->inline_len);

	if (le64_to_cpu(k->offset) & ((1U << BFS_XATTR_CHUNK_SHIFT) - 1))
		FAIL("xattr head at a chunk offset");
	if (!bfs_xattr_ns_prefix(v->ns))
		FAIL("xattr namespace %u unknown", v->ns);
	if (!v->name_len != (v->ns == BFS_XATTR_POSIX_ACL_ACCESS ||
			     v->ns == BFS_XATTR_POSIX_ACL_DEFAULT))
		FAIL("xattr name length %u wrong for namespace %u", v->name_len, v->ns);
	if (vl > BFS_XATTR_SIZE_MAX || il > vl ||
	    sizeof(*v) + v->name_len + il > val_bytes(k) ||
	    le16_to_cpu(v->nr_chunks) > BFS_XATTR_MAX_CHUNKS || (il < vl && !le16_to_cpu(v->nr_chunks)))
		FAIL("xattr sizes inconsistent: value %u inline %u chunks %u in %zu bytes", vl, il,
		     le16_to_cpu(v->nr_chunks), val_bytes(k));
	return 0;
}

static void xattr_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_xattr_v *v = bfs_bkey_val(k);
	char name[BFS_XATTR_NAME_MAX * 4 + 1];

	name_to_text(name, sizeof(name), v->data, v->name_len);
	snprintf(buf, len, "xattr %s%s value %u bytes (%u inline, %u chunks)",
		 bfs_xattr_ns_prefix(v->ns), name, le32_to_cpu(v->value_len),
		 le32_to_cpu(v->inline_len), le16_to_cpu(v->nr_chunks));
}

static int xattr_data_validate(const struct bfs_bkey *k, char *err, size_t err_len)
{
	const struct bfs_xattr_data_v *v = bfs_bkey_val(k);

	if (!(le64_to_cpu(k->offset) & ((1U << BFS_XATTR_CHUNK_SHIFT) - 1)))
		FAIL("xattr data chunk at a head offset");
	if (!le32_to_cpu(v->len) || sizeof(*v) + le32_to_cpu(v->len) > val_bytes(k))
		FAIL("xattr data chunk of %u bytes in a %zu-byte value", le32_to_cpu(v->len),
		     val_bytes(k));
	return 0;
}

static void xattr_data_to_text(char *buf, size_t len, const struct bfs_bkey *k)
{
	const struct bfs_xattr_data_v *v = bfs_bkey_val(k);

	snprintf(buf, len, "xattr data chunk %u: %u bytes",
		 (unsigned)(le64_to_cpu(k->offset) & ((1U << BFS_XATTR_CHUNK_SHIFT) - 1)),
		 le32_to_cpu(v->len));
}

const struct bfs_bkey_ops bfs_key_ops_INODE = {
	.min_val_u64s = BFS_INODE_V_U64S,
	.max_val_u64s = 4 * BFS_INODE_V_U64S,	/* room to grow */
	.validate = inode_validate,
	.val_to_text = inode_to_text,
};
const struct bfs_bkey_ops bfs_key_ops_INODE_COUNTER = {
	.min_val_u64s = sizeof(struct bfs_inode_counter_v) / 8,
	.max_val_u64s = sizeof(struct bfs_inode_counter_v) / 8,
	.validate = counter_validate,
	.val_to_text = counter_to_text,
};
const struct bfs_bkey_ops bfs_key_ops_ORPHAN = {
	.validate = orphan_validate,
	.val_to_text = orphan_to_text,
};
const struct bfs_bkey_ops bfs_key_ops_SYMLINK = {
	.min_val_u64s = 2,
	.validate = symlink_validate,
	.val_to_text = symlink_to_text,
};
const struct bfs_bkey_ops bfs_key_ops_HASH_WHITEOUT = {
	.validate = whiteout_validate,
};
const struct bfs_bkey_ops bfs_key_ops_DIRENT = {
	.min_val_u64s = (sizeof(struct bfs_dirent_v) + 1 + 7) / 8,
	.max_val_u64s = (sizeof(struct bfs_dirent_v) + BFS_NAME_MAX + 7) / 8,
	.validate = dirent_validate,
	.val_to_text = dirent_to_text,
};
const struct bfs_bkey_ops bfs_key_ops_XATTR = {
	.min_val_u64s = sizeof(struct bfs_xattr_v) / 8,
	.validate = xattr_validate,
	.val_to_text = xattr_to_text,
};
const struct bfs_bkey_ops bfs_key_ops_XATTR_DATA = {
	.min_val_u64s = 2,
	.validate = xattr_data_validate,
	.val_to_text = xattr_data_to_text,
};
