// SPDX-License-Identifier: MIT
/*
 * The inode table of the filesystem checks, paths for messages, and the
 * small repairs several checks share.  See fs_check.h.
 */
#include <bfs/os.h>

#include <stdio.h>
#include <string.h>

#include "fs_check.h"

/* deeper than this, a path is shown from an "<inode N>" in the middle */
#define PATH_DEPTH_MAX	256

struct ino_info *find_ino(struct fs_check *fc, u64 ino)
{
	size_t lo = 0, hi = fc->nr;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (fc->in[mid].ino == ino)
			return &fc->in[mid];
		if (fc->in[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int fsck_add_ino(struct fs_check *fc, u64 ino, u32 mode, u32 nlink, u64 parent,
		 struct ino_info **out)
{
	size_t pos = fc->nr;

	if (fc->nr == fc->cap) {
		size_t cap = fc->cap ? fc->cap * 2 : 1024;
		struct ino_info *n = bfs_realloc(fc->in, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		fc->in = n;
		fc->cap = cap;
	}
	/* inodes are collected in key order: an insert in the middle is a repair's */
	while (pos && fc->in[pos - 1].ino > ino)
		pos--;
	if (pos < fc->nr && fc->in[pos].ino == ino)
		return -EEXIST;
	memmove(&fc->in[pos + 1], &fc->in[pos], (fc->nr - pos) * sizeof(*fc->in));
	fc->nr++;
	fc->in[pos] = (struct ino_info){ .ino = ino, .mode = mode, .nlink = nlink, .parent = parent };
	if (out)
		*out = &fc->in[pos];
	return 0;
}

int fsck_set_name(struct fs_check *fc, struct ino_info *i, u64 dir, const char *name,
		  size_t len)
{
	if (len > BFS_NAME_MAX)
		len = BFS_NAME_MAX;
	if (fc->names_len + len > fc->names_cap) {
		size_t cap = BFS_MAX(fc->names_cap * 2, fc->names_len + len + 4096);
		char *n = bfs_realloc(fc->names, cap);

		if (!n)
			return -ENOMEM;
		fc->names = n;
		fc->names_cap = cap;
	}
	memcpy(fc->names + fc->names_len, name, len);
	i->name_off = fc->names_len;
	i->name_len = (u8)len;
	i->entry_dir = dir;
	fc->names_len += len;
	return 0;
}

const char *fsck_path(struct fs_check *fc, u64 ino)
{
	const struct ino_info *comp[PATH_DEPTH_MAX];
	char *p = fc->path, *end = fc->path + sizeof(fc->path);
	unsigned n = 0;
	u64 cur = ino;

	if (ino == BFS_ROOT_INO)
		return "/";
	/* up the entries to the root; a broken or too long chain starts with "<inode N>" */
	while (cur != BFS_ROOT_INO && n < PATH_DEPTH_MAX) {
		const struct ino_info *i = find_ino(fc, cur);

		if (!i || !i->name_len)
			break;
		comp[n++] = i;
		cur = i->entry_dir;
	}
	*p = 0;
	if (cur != BFS_ROOT_INO)
		p += snprintf(p, (size_t)(end - p), "<inode %llu>", (unsigned long long)cur);
	while (n-- && p < end - 1)
		p += snprintf(p, (size_t)(end - p), "/%.*s", comp[n]->name_len,
			      fc->names + comp[n]->name_off);
	return fc->path;
}

struct bfs_fsck_loc fsck_file_loc(struct fs_check *fc, u64 ino, u64 offset,
				  const struct bfs_bkey *k)
{
	struct bfs_fsck_loc loc = BFS_FSCK_LOC_NONE;

	loc.inode = ino;
	loc.offset = offset;
	loc.path = fsck_path(fc, ino);
	if (k) {
		loc.btree = BFS_BTREE_EXTENTS;
		loc.has_pos = true;
		loc.pos = bfs_bkey_pos(k);
	}
	return loc;
}

int fsck_for_each_key(struct fs_check *fc, enum bfs_btree_id id,
		      int (*fn)(struct fs_check *fc, const struct bfs_bkey *k))
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fc->c, id, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		if (!(++fc->seen & 1023))
			bfs_fsck_progress(fc->f, fc->sweep * fc->next_ino + le64_to_cpu(k->inode),
					  fc->nr_sweeps * fc->next_ino);
		ret = fn(fc, k);
		if (ret)
			break;
	}
	fc->sweep++;
	bfs_btree_iter_exit(&it);
	return ret;
}

void fsck_repair(struct fs_check *fc, enum bfs_problem_code code, int ret)
{
	if (ret)
		bfs_fsck_repair_failed(fc->f, code, ret);
}

int fsck_drop_extent(struct fs_check *fc, const struct bfs_bkey *k)
{
	return fsck_drop_range(fc, k, bfs_bkey_start(k), le64_to_cpu(k->offset));
}

int fsck_drop_range(struct fs_check *fc, const struct bfs_bkey *k, u64 start, u64 end)
{
	struct bfs_trans *t;
	int ret;

	/*
	 * The inode's sector count is left alone: whether it counted this
	 * extent is not known (a damaged extent may never have been counted).
	 * The sector check at the end of pass 2 sets it from what is left.
	 */
	ret = bfs_trans_begin(fc->c, &t);
	if (ret)
		return ret;
	ret = bfs_trans_delete_range(t, BFS_BTREE_EXTENTS, le64_to_cpu(k->inode), start, end,
				     le32_to_cpu(k->snapshot));
	if (!ret)
		ret = bfs_trans_commit(t, NULL);
	bfs_trans_end(t);
	return ret;
}
