// SPDX-License-Identifier: MIT
/*
 * Variable-length superblock sections.  Sections are packed back to back
 * after the fixed part; resizing one moves the ones after it.  The caller
 * owns a BFS_SB_MAX_BYTES buffer, so growth is bounded by that.
 */
#include <bfs/super.h>

#include <string.h>

static u8 *sb_end(struct bfs_sb *sb)
{
	return (u8 *)sb + le32_to_cpu(sb->bytes);
}

const struct bfs_sb_field *bfs_sb_field_next(const struct bfs_sb *sb,
					     const struct bfs_sb_field *prev)
{
	const u8 *end = (const u8 *)sb + le32_to_cpu(sb->bytes);
	const struct bfs_sb_field *f = prev ?
		(const void *)((const u8 *)prev + (size_t)le32_to_cpu(prev->u64s) * 8) : sb->fields;

	if ((const u8 *)f + sizeof(*f) > end || !le32_to_cpu(f->u64s) ||
	    (const u8 *)f + (size_t)le32_to_cpu(f->u64s) * 8 > end)
		return NULL;
	return f;
}

struct bfs_sb_field *bfs_sb_field_get(struct bfs_sb *sb, u32 type)
{
	const struct bfs_sb_field *f;

	bfs_sb_for_each_field(sb, f)
		if ((le32_to_cpu(f->type) & ~BFS_SB_FIELD_REQUIRED) == type)
			return (struct bfs_sb_field *)f;
	return NULL;
}

struct bfs_sb_field *bfs_sb_field_resize(struct bfs_sb *sb, u32 type, u32 u64s)
{
	struct bfs_sb_field *f = bfs_sb_field_get(sb, type);
	size_t old_bytes = f ? (size_t)le32_to_cpu(f->u64s) * 8 : 0;
	size_t new_bytes = (size_t)u64s * 8;
	size_t total = le32_to_cpu(sb->bytes);
	u8 *tail;

	if (!u64s || total - old_bytes + new_bytes > BFS_SB_MAX_BYTES)
		return NULL;
	if (!f) {
		f = (void *)sb_end(sb);
		memset(f, 0, new_bytes);
		f->type = cpu_to_le32(type);
	} else {
		tail = (u8 *)f + old_bytes;
		memmove((u8 *)f + new_bytes, tail, (size_t)(sb_end(sb) - tail));
		if (new_bytes > old_bytes)
			memset((u8 *)f + old_bytes, 0, new_bytes - old_bytes);
	}
	f->u64s = cpu_to_le32(u64s);
	sb->bytes = cpu_to_le32((u32)(total - old_bytes + new_bytes));
	return f;
}

void bfs_sb_field_delete(struct bfs_sb *sb, u32 type)
{
	struct bfs_sb_field *f = bfs_sb_field_get(sb, type);
	size_t bytes;

	if (!f)
		return;
	bytes = (size_t)le32_to_cpu(f->u64s) * 8;
	memmove(f, (u8 *)f + bytes, (size_t)(sb_end(sb) - ((u8 *)f + bytes)));
	sb->bytes = cpu_to_le32(le32_to_cpu(sb->bytes) - (u32)bytes);
}
