// SPDX-License-Identifier: MIT
/*
 * The inode table of the filesystem checks, paths for messages, and the
 * small repairs several checks share.  See fs_check.h.
 */
#include <bfs/os.h>
#include <bfs/fs_repair.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_check.h"

/* deeper than this, a path is shown from an "<inode N>" in the middle */
#define PATH_DEPTH_MAX	256
/*
 * Entries read, in all, to find the names of files for paths: where a file
 * is named is not kept (fs_check.h), so each path of a file searches the
 * entries, and many problems in a huge tree would read it once each.  Past
 * this, files are shown as "<inode N>" (a few seconds of reading).
 */
#define NAME_SCAN_MAX	(32ULL << 20)

struct fsck_dir *fsck_dir(struct fs_check *fc, size_t idx)
{
	size_t lo = 0, hi = fc->nr_dirs, h = fc->dir_hint;

	if (h < fc->nr_dirs && fc->dirs[h].idx == idx)
		return &fc->dirs[h];
	if (h + 1 < fc->nr_dirs && fc->dirs[h + 1].idx == idx)
		return &fc->dirs[++fc->dir_hint];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (fc->dirs[mid].idx == idx) {
			fc->dir_hint = mid;
			return &fc->dirs[mid];
		}
		if (fc->dirs[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct fsck_dir *fsck_find_dir(struct fs_check *fc, u64 ino)
{
	size_t idx;

	if (!fsck_find(fc, ino, &idx) || !S_ISDIR(fsck_type(fc, idx)))
		return NULL;
	return fsck_dir(fc, idx);
}

/*
 * The per-inode and per-directory arrays are mappings of their own: grown
 * by moving pages, the part not used yet costs nothing.  From malloc they
 * could land in the heap (glibc raises its mmap threshold after frees) and
 * each growth left the old copy's pages behind (10M inodes: 2 MB).
 */
static int grow(void **p, size_t size, size_t old_cap, size_t cap)
{
	void *n = *p ? bfs_remap(*p, old_cap * size, cap * size) : bfs_map_anon(cap * size);

	if (!n)
		return -ENOMEM;
	*p = n;
	return 0;
}

int fsck_add_ino(struct fs_check *fc, u64 ino, u32 mode, u64 size, size_t *out)
{
	size_t idx;
	int ret;

	if (fsck_find(fc, ino, &idx))
		return -EEXIST;
	/* directory records hold a u32 index (32 bytes a record, not 40) */
	if (S_ISDIR(mode) && fc->nr > UINT32_MAX)
		return -EOVERFLOW;
	if (fc->nr == fc->cap) {
		size_t cap = fc->cap ? fc->cap * 2 : 4096;

		if ((ret = grow((void **)&fc->flags, sizeof(*fc->flags), fc->cap, cap)))
			return ret;
		if (!fc->eof_gone &&
		    (ret = grow((void **)&fc->eof, sizeof(*fc->eof), fc->cap, cap))) {
			grow((void **)&fc->flags, sizeof(*fc->flags), cap, fc->cap);
			return ret;
		}
		fc->cap = cap;
	}
	if (S_ISDIR(mode) && fc->nr_dirs == fc->cap_dirs) {
		size_t cap = fc->cap_dirs ? fc->cap_dirs * 2 : 256;

		if ((ret = grow((void **)&fc->dirs, sizeof(*fc->dirs), fc->cap_dirs, cap)))
			return ret;
		fc->cap_dirs = cap;
	}
	ret = ino_set_add(&fc->set, ino, &idx);
	if (ret)
		return ret;
	fc->nr++;
	fc->flags[idx] = (u8)((mode & S_IFMT) >> 12);
	if (!fc->eof_gone)
		fc->eof[idx] = size <= (u64)(FSCK_EOF_BIG - 1) << BFS_SECTOR_SHIFT ?
			       (u8)BFS_DIV_ROUND_UP(size, 1U << BFS_SECTOR_SHIFT) : FSCK_EOF_BIG;
	/* indices only grow: appending keeps dirs[] sorted by index */
	if (S_ISDIR(mode))
		fc->dirs[fc->nr_dirs++] = (struct fsck_dir){ .idx = (u32)idx, .ino = ino };
	if (out)
		*out = idx;
	return 0;
}

int fsck_set_name(struct fs_check *fc, struct fsck_dir *d, u64 dir, const char *name,
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
	d->name_off = (u32)fc->names_len;
	d->name_len = (u8)len;
	d->entry_dir = dir;
	fc->names_len += len;
	return 0;
}

static u32 links_inline(const struct fs_check *fc, size_t idx)
{
	return fc->flags[idx] >> FSCK_I_LINKS_SHIFT;
}

static void set_links_inline(struct fs_check *fc, size_t idx, u32 links)
{
	fc->flags[idx] = (u8)((fc->flags[idx] & ((1U << FSCK_I_LINKS_SHIFT) - 1)) |
			      (links << FSCK_I_LINKS_SHIFT));
}

u32 fsck_links(const struct fs_check *fc, size_t idx)
{
	u32 n = links_inline(fc, idx);

	return n < FSCK_LINKS_BIG ? n : link_table_get(&fc->big, idx);
}

/* one more entry names the inode at @idx; -ENOMEM */
static int links_inc(struct fs_check *fc, size_t idx)
{
	u32 n = links_inline(fc, idx);
	int ret;

	if (n + 1 < FSCK_LINKS_BIG) {
		set_links_inline(fc, idx, n + 1);
		return 0;
	}
	n = n < FSCK_LINKS_BIG ? n : link_table_get(&fc->big, idx);
	/* from FSCK_LINKS_BIG on, and for good, the count is in the table */
	ret = link_table_set(&fc->big, idx, n < UINT32_MAX ? n + 1 : n);
	if (!ret)
		set_links_inline(fc, idx, FSCK_LINKS_BIG);
	return ret;
}

void fsck_links_dec(struct fs_check *fc, size_t idx)
{
	u32 n = links_inline(fc, idx);

	if (n == FSCK_LINKS_BIG) {
		n = link_table_get(&fc->big, idx);
		/* cannot fail: the slot exists */
		(void)link_table_set(&fc->big, idx, n ? n - 1 : 0);
	} else if (n) {
		set_links_inline(fc, idx, n - 1);
	}
}

int fsck_count_entry(struct fs_check *fc, struct fsck_dir *dir, size_t idx, u64 ino,
		     const char *name, size_t len)
{
	bool first = !fsck_links(fc, idx);
	int ret = links_inc(fc, idx);

	(void)ino;
	if (ret || !S_ISDIR(fsck_type(fc, idx)))
		return ret;
	dir->subdirs++;
	/* the first entry names it in messages (and is where ".." should point) */
	return first ? fsck_set_name(fc, fsck_dir(fc, idx), dir->ino, name, len) : 0;
}

/*
 * The first entry (in key order, the order pass 2 counted them in) of a
 * known directory naming @ino: its name into @name, its directory into
 * *dir; 0 if there is none
 */
static size_t entry_name(struct fs_check *fc, u64 ino, u64 *dir, char *name)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	size_t len = 0;
	int ret;

	bfs_btree_iter_init(&it, fc->c, BFS_BTREE_DIRENTS, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret && fc->name_scan < NAME_SCAN_MAX;
	     ret = bfs_btree_iter_next(&it, &k)) {
		const struct bfs_dirent_v *v = bfs_bkey_val(k);

		fc->name_scan++;
		if (k->type == BFS_KEY_DIRENT && bfs_bkey_val_u64s(k) * 8 >= sizeof(*v) &&
		    le64_to_cpu(v->ino) == ino &&
		    bfs_bkey_val_u64s(k) * 8 >= sizeof(*v) + v->name_len &&
		    fsck_find_dir(fc, le64_to_cpu(k->inode))) {
			len = BFS_MIN((size_t)v->name_len, (size_t)BFS_NAME_MAX);
			memcpy(name, v->name, len);
			*dir = le64_to_cpu(k->inode);
			break;
		}
	}
	bfs_btree_iter_exit(&it);
	return len;
}

const char *fsck_path(struct fs_check *fc, u64 ino)
{
	const struct fsck_dir *comp[PATH_DEPTH_MAX];
	char *p = fc->path, *end = fc->path + sizeof(fc->path);
	char name[BFS_NAME_MAX];
	size_t name_len = 0, idx;
	unsigned n = 0;
	u64 cur = ino;

	if (ino == BFS_ROOT_INO)
		return "/";
	/* a file named by some entry: the first one, and its directory */
	if (fsck_find(fc, ino, &idx) && !S_ISDIR(fsck_type(fc, idx)) && fsck_links(fc, idx))
		name_len = entry_name(fc, ino, &cur, name);
	/* up the entries to the root; a broken or too long chain starts with "<inode N>" */
	while (cur != BFS_ROOT_INO && n < PATH_DEPTH_MAX) {
		const struct fsck_dir *d = fsck_find_dir(fc, cur);

		if (!d || !d->name_len)
			break;
		comp[n++] = d;
		cur = d->entry_dir;
	}
	*p = 0;
	if (cur != BFS_ROOT_INO)
		p += snprintf(p, (size_t)(end - p), "<inode %llu>", (unsigned long long)cur);
	while (n-- && p < end - 1)
		p += snprintf(p, (size_t)(end - p), "/%.*s", comp[n]->name_len,
			      fc->names + comp[n]->name_off);
	if (name_len && p < end - 1)
		snprintf(p, (size_t)(end - p), "/%.*s", (int)name_len, name);
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

void fsck_icur_init(struct fs_check *fc, struct fsck_inode_cur *cur)
{
	bfs_btree_iter_init(&cur->it, fc->c, BFS_BTREE_INODES, BFS_POS_MIN, 0);
	cur->valid = false;
	cur->ino = 0;
	cur->at = 0;
	cur->positioned = false;
}

/* keys stepped over before a seek is cheaper: a seek searches the leaf again */
#define ICUR_STEPS	64

int fsck_icur_seek(struct fsck_inode_cur *cur, u64 ino)
{
	const struct bfs_bkey *k = NULL;
	unsigned steps = 0;
	int ret = -EAGAIN;	/* not there yet */

	if (cur->ino == ino && ino)
		return 0;
	cur->ino = ino;
	cur->valid = false;
	/* asked in inode order: the next inode is usually the next key or a few on */
	if (cur->positioned && cur->at == ino)
		ret = bfs_btree_iter_peek(&cur->it, &k);
	while (cur->positioned && cur->at < ino && steps++ < ICUR_STEPS) {
		ret = bfs_btree_iter_next(&cur->it, &k);
		if (ret)
			break;
		cur->at = le64_to_cpu(k->inode);
	}
	if (!ret && cur->at < ino)
		ret = -EAGAIN;
	if (ret == -EAGAIN) {
		bfs_btree_iter_set_pos(&cur->it, BFS_POS(ino, 0, 0));
		ret = bfs_btree_iter_peek(&cur->it, &k);
		if (!ret)
			cur->at = le64_to_cpu(k->inode);
	}
	cur->positioned = !ret;
	if (ret == -ENOENT)
		return 0;	/* no inode from @ino on */
	if (ret)
		return ret;
	if (cur->at == ino && fsck_inode_key(k)) {
		memcpy(&cur->v, bfs_bkey_val(k), sizeof(cur->v));
		cur->valid = true;
	}
	return 0;
}

void fsck_icur_exit(struct fsck_inode_cur *cur)
{
	bfs_btree_iter_exit(&cur->it);
}

int fsck_inode_read(struct fs_check *fc, u64 ino, struct bfs_inode_v *v)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_bkey *k = (void *)buf;
	int ret = bfs_btree_lookup(fc->c, BFS_BTREE_INODES, BFS_POS(ino, 0, 0), buf, sizeof(buf));

	if (ret)
		return ret;
	if (!fsck_inode_key(k))
		return -ENOENT;
	memcpy(v, bfs_bkey_val(k), sizeof(*v));
	return 0;
}

int fsck_inode_update(struct fs_check *fc, u64 ino, void (*fn)(struct bfs_ns_inode *i, u64 arg),
		      u64 arg)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_ns_inode inode;
	int ret = bfs_btree_lookup(fc->c, BFS_BTREE_INODES, BFS_POS(ino, 0, 0), buf, sizeof(buf));

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	if (!fsck_inode_key(k))
		return -EUCLEAN;
	bfs_ns_inode_decode(ino, bfs_bkey_val(k), &inode);
	fn(&inode, arg);
	bfs_ns_inode_encode(&inode, bfs_bkey_val(k));
	return bfs_btree_insert(fc->c, BFS_BTREE_INODES, k);
}

u32 fsck_stored_mode(struct fs_check *fc, u64 ino)
{
	struct bfs_inode_v v;

	return fsck_inode_read(fc, ino, &v) ? 0 : le32_to_cpu(v.mode);
}

void fsck_free_eof(struct fs_check *fc)
{
	bfs_unmap(fc->eof, fc->cap * sizeof(*fc->eof));
	fc->eof = NULL;
	fc->eof_gone = true;
}

void fsck_fs_check_free(struct fs_check *fc)
{
	ino_set_free(&fc->set);
	bfs_unmap(fc->flags, fc->cap * sizeof(*fc->flags));
	fsck_free_eof(fc);
	fc->eof_gone = false;	/* empty tables, as new */
	link_table_free(&fc->big);
	bfs_unmap(fc->dirs, fc->cap_dirs * sizeof(*fc->dirs));
	bfs_free(fc->names);
	fc->flags = NULL;
	fc->eof = NULL;
	fc->dirs = NULL;
	fc->names = NULL;
	fc->cap = fc->nr = fc->cap_dirs = fc->nr_dirs = 0;
}

void fsck_sweep_progress(struct fs_check *fc, u64 ino)
{
	/* the counter bounds every inode number, unless it is damaged */
	if (!(++fc->seen & 1023) && fc->sweep < fc->nr_sweeps)
		bfs_fsck_progress(fc->f, fc->sweep * fc->next_ino + BFS_MIN(ino, fc->next_ino),
				  fc->nr_sweeps * fc->next_ino);
}

void fsck_sweep_progress_of(struct fs_check *fc, u64 cur, u64 max)
{
	/* in inode numbers, the unit of the other sweeps */
	if (max)
		fsck_sweep_progress(fc, (u64)((double)BFS_MIN(cur, max) / (double)max *
					      (double)fc->next_ino));
}

void fsck_sweep_done(struct fs_check *fc)
{
	fc->sweep++;
	if (fc->sweep <= fc->nr_sweeps)
		bfs_fsck_progress(fc->f, fc->sweep * fc->next_ino, fc->nr_sweeps * fc->next_ino);
}

int fsck_for_each_key(struct fs_check *fc, enum bfs_btree_id id,
		      int (*fn)(struct fs_check *fc, const struct bfs_bkey *k))
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fc->c, id, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		fsck_sweep_progress(fc, le64_to_cpu(k->inode));
		ret = fn(fc, k);
		if (ret)
			break;
	}
	fsck_sweep_done(fc);
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
