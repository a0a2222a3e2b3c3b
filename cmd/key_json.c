// SPDX-License-Identifier: MIT
/*
 * Btree keys as structured JSON for dump-btree --json: one field printer per
 * key type, in a table keyed by the type, so that each value's fields appear
 * by name and with their own JSON types instead of one "text" string.
 * Every printer checks that the value is long enough for what it reads (and
 * that names lie inside it): keys come from checked nodes, but a damaged
 * image must not make the dump read past a key.
 */
#include "cmd.h"
#include "key_json.h"
#include "output.h"

#include <bfs/btree_format.h>
#include <bfs/checksum.h>
#include <bfs/extent_format.h>
#include <bfs/fs_format.h>

#include <inttypes.h>
#include <string.h>

static void num_or_max(FILE *f, u64 v, u64 max)
{
	if (v == max)
		fputs("\"max\"", f);
	else
		fprintf(f, "%" PRIu64, v);
}

void bfs_pos_json(FILE *f, struct bfs_bpos p)
{
	fputs("{\"inode\": ", f);
	num_or_max(f, p.inode, UINT64_MAX);
	fputs(", \"offset\": ", f);
	num_or_max(f, p.offset, UINT64_MAX);
	fputs(", \"snapshot\": ", f);
	num_or_max(f, p.snapshot, UINT32_MAX);
	fputc('}', f);
}

/* @len bytes of @s as a JSON string */
static void bytes_json(FILE *f, const u8 *s, size_t len)
{
	char buf[256 * 4 + 1];

	len = BFS_MIN(len, sizeof(buf) - 1);
	memcpy(buf, s, len);
	buf[len] = 0;
	out_json_string(f, buf);
}

static const char *dirent_type(u8 t)
{
	static const char *const names[16] = {
		[1] = "fifo", [2] = "chr", [4] = "dir", [6] = "blk", [8] = "reg", [10] = "lnk",
		[12] = "sock",
	};

	return t < 16 && names[t] ? names[t] : "unknown";
}

static void btree_ptr_json(FILE *f, const void *val, size_t bytes)
{
	const struct bfs_btree_ptr *p = val;
	struct bfs_bpos min = {
		.inode = le64_to_cpu(p->min_key.inode),
		.offset = le64_to_cpu(p->min_key.offset),
		.snapshot = le32_to_cpu(p->min_key.snapshot),
	};

	fprintf(f, "\"offset\": %" PRIu64 ", \"seq\": %" PRIu64 ", \"level\": %u, \"btree_id\": %u, "
		"\"min_key\": ", le64_to_cpu(p->offset), le64_to_cpu(p->seq), p->level, p->btree_id);
	bfs_pos_json(f, min);
}

static void inode_json(FILE *f, const void *val, size_t bytes)
{
	const struct bfs_inode_v *v = val;

	fprintf(f, "\"mode\": %u, \"mode_octal\": \"0%o\", \"uid\": %u, \"gid\": %u, \"nlink\": %u, "
		"\"flags\": %u, \"size\": %" PRIu64 ", \"sectors\": %" PRIu64 ", \"rdev\": %" PRIu64
		", \"generation\": %" PRIu64 ", \"atime_ns\": %" PRId64 ", \"mtime_ns\": %" PRId64
		", \"ctime_ns\": %" PRId64 ", \"btime_ns\": %" PRId64 ", \"parent\": %" PRIu64,
		le32_to_cpu(v->mode), le32_to_cpu(v->mode), le32_to_cpu(v->uid), le32_to_cpu(v->gid),
		le32_to_cpu(v->nlink), le32_to_cpu(v->flags), le64_to_cpu(v->size),
		le64_to_cpu(v->sectors), le64_to_cpu(v->rdev), le64_to_cpu(v->generation),
		(s64)le64_to_cpu(v->atime), (s64)le64_to_cpu(v->mtime), (s64)le64_to_cpu(v->ctime),
		(s64)le64_to_cpu(v->btime), le64_to_cpu(v->parent));
}

static void counter_json(FILE *f, const void *val, size_t bytes)
{
	const struct bfs_inode_counter_v *v = val;

	fprintf(f, "\"next_ino\": %" PRIu64, le64_to_cpu(v->next_ino));
}

static void dirent_json(FILE *f, const void *val, size_t bytes)
{
	const struct bfs_dirent_v *v = val;
	size_t len = BFS_MIN((size_t)v->name_len, bytes - sizeof(*v));

	fprintf(f, "\"ino\": %" PRIu64 ", \"dtype\": %u, \"dtype_name\": \"%s\", \"name\": ",
		le64_to_cpu(v->ino), v->type, dirent_type(v->type));
	bytes_json(f, v->name, len);
}

static void symlink_json(FILE *f, const void *val, size_t bytes)
{
	const struct bfs_symlink_v *v = val;
	size_t len = BFS_MIN((size_t)le16_to_cpu(v->len), bytes - sizeof(*v));

	fprintf(f, "\"len\": %u, \"total\": %u, \"target\": ", le16_to_cpu(v->len),
		le16_to_cpu(v->total));
	bytes_json(f, v->data, len);
}

static void xattr_json(FILE *f, const void *val, size_t bytes)
{
	static const char *const ns[BFS_XATTR_NS_NR] = {
		[BFS_XATTR_USER] = "user", [BFS_XATTR_TRUSTED] = "trusted",
		[BFS_XATTR_SECURITY] = "security",
		[BFS_XATTR_POSIX_ACL_ACCESS] = "system.posix_acl_access",
		[BFS_XATTR_POSIX_ACL_DEFAULT] = "system.posix_acl_default",
	};
	const struct bfs_xattr_v *v = val;
	size_t len = BFS_MIN((size_t)v->name_len, bytes - sizeof(*v));

	fprintf(f, "\"ns\": %u, \"ns_name\": \"%s\", \"nr_chunks\": %u, \"value_len\": %u, "
		"\"inline_len\": %u, \"name\": ", v->ns,
		v->ns < BFS_XATTR_NS_NR && ns[v->ns] ? ns[v->ns] : "unknown",
		le16_to_cpu(v->nr_chunks), le32_to_cpu(v->value_len), le32_to_cpu(v->inline_len));
	bytes_json(f, v->data, len);
}

static void xattr_data_json(FILE *f, const void *val, size_t bytes)
{
	const struct bfs_xattr_data_v *v = val;

	fprintf(f, "\"len\": %u", le32_to_cpu(v->len));
}

static void extent_json(FILE *f, const void *val, size_t bytes)
{
	const struct bfs_extent_v *v = val;

	fprintf(f, "\"dev_offset\": %" PRIu64 ", \"csum\": \"0x%016" PRIx64 "\", \"csum_type\": \"%s\", "
		"\"stored_bytes\": %u, \"chunk_sectors\": %u, \"chunk_offset\": %u, \"gen\": %u, "
		"\"compression\": \"%s\", \"flags\": %u, \"unwritten\": %s",
		le64_to_cpu(v->offset), le64_to_cpu(v->csum), bfs_csum_name(v->csum_type),
		le32_to_cpu(v->stored_bytes), le32_to_cpu(v->chunk_sectors),
		le32_to_cpu(v->chunk_offset), le32_to_cpu(v->gen), bfs_compression_name(v->compression),
		v->flags, v->flags & BFS_EXTENT_F_UNWRITTEN ? "true" : "false");
}

static void alloc_json(FILE *f, const void *val, size_t bytes)
{
	const struct bfs_alloc_v *v = val;

	fprintf(f, "\"gen\": %u, \"data_type\": \"%s\", \"live_sectors\": %" PRIu64,
		le32_to_cpu(v->gen), v->data_type == BFS_BUCKET_FREE ? "free" :
		v->data_type == BFS_BUCKET_USER ? "user" : "unknown", le64_to_cpu(v->live_sectors));
}

static void cookie_json(FILE *f, const void *val, size_t bytes)
{
	fprintf(f, "\"bytes\": %zu", bytes);
}

static void empty_json(FILE *f, const void *val, size_t bytes)
{
}

static const struct {
	u8 type;
	size_t min_bytes;	/* the value must hold at least this much */
	void (*fn)(FILE *f, const void *val, size_t bytes);
} printers[] = {
	{ BFS_KEY_DELETED,	 0,				empty_json },
	{ BFS_KEY_BTREE_PTR,	 sizeof(struct bfs_btree_ptr),	btree_ptr_json },
	{ BFS_KEY_COOKIE,	 0,				cookie_json },
	{ BFS_KEY_INODE,	 sizeof(struct bfs_inode_v),	inode_json },
	{ BFS_KEY_DIRENT,	 sizeof(struct bfs_dirent_v),	dirent_json },
	{ BFS_KEY_EXTENT,	 sizeof(struct bfs_extent_v),	extent_json },
	{ BFS_KEY_XATTR,	 sizeof(struct bfs_xattr_v),	xattr_json },
	{ BFS_KEY_ALLOC,	 sizeof(struct bfs_alloc_v),	alloc_json },
	{ BFS_KEY_INODE_COUNTER, sizeof(struct bfs_inode_counter_v), counter_json },
	{ BFS_KEY_ORPHAN,	 0,				empty_json },
	{ BFS_KEY_SYMLINK,	 sizeof(struct bfs_symlink_v),	symlink_json },
	{ BFS_KEY_HASH_WHITEOUT, 0,				empty_json },
	{ BFS_KEY_XATTR_DATA,	 sizeof(struct bfs_xattr_data_v), xattr_data_json },
};

void bfs_key_json(FILE *f, const struct bfs_bkey *k)
{
	size_t bytes = bfs_bkey_u64s(k) >= BFS_BKEY_U64S ? (size_t)bfs_bkey_val_u64s(k) * 8 : 0;
	size_t i;

	fprintf(f, "{\"type\": \"key\", \"key_type\": \"%s\", \"type_id\": %u, \"u64s\": %u, \"pos\": ",
		bfs_bkey_type_name(k->type), k->type, bfs_bkey_u64s(k));
	bfs_pos_json(f, bfs_bkey_pos(k));
	fprintf(f, ", \"size\": %u, \"value\": {", bfs_bkey_size(k));
	for (i = 0; i < ARRAY_SIZE(printers); i++)
		if (printers[i].type == k->type)
			break;
	if (i == ARRAY_SIZE(printers) || bytes < printers[i].min_bytes)
		fprintf(f, "\"u64s\": %zu%s", bytes / 8,
			i == ARRAY_SIZE(printers) ? "" : ", \"error\": \"value too short\"");
	else
		printers[i].fn(f, bfs_bkey_val(k), bytes);
	fputs("}}", f);
}
