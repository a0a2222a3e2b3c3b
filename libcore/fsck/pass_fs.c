// SPDX-License-Identifier: MIT
/*
 * Pass 2: directories and inodes.  With the btrees known to be sound (pass
 * 1), the filesystem is opened as a mount would (read-only with -n) and its
 * keys are cross-checked, as e2fsck's passes 2 to 4 do:
 *   - every directory entry lives in an existing directory and names an
 *     existing inode of the type it says;
 *   - a directory's ".." names the directory that holds its entry;
 *   - link counts: a file has one link per entry, a directory 2 + one per
 *     subdirectory;
 *   - an inode with no entry is either on the orphan list (freed at the next
 *     mount) or lost, and one that still has links is reconnected to
 *     /lost+found as "#INO";
 *   - file data (extents) belongs to a regular file, and an inode's sector
 *     count is the sum of its extents.
 * Repairs are ordinary btree updates, one small transaction each.
 */
#include <bfs/btree.h>
#include <bfs/extent_format.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fsck_passes.h"
#include "../fs/ns.h"

struct ino_info {
	u64	ino;
	u32	mode, nlink;
	u64	parent;		/* directories: ".." as stored */
	u64	sectors;	/* as stored */
	u32	links;		/* directory entries naming it */
	u32	subdirs;	/* directories: entries naming a directory */
	u64	ext_sectors;	/* sum of its extents */
	u64	entry_dir;	/* a directory holding an entry for it */
	bool	orphan;
};

struct fs_check {
	struct bfs_fsck *f;
	struct bfs_fs *fs;
	struct bfs_core *c;
	struct ino_info *in;
	size_t nr, cap;
	/* progress: each key sweep counts inode numbers 0..next_ino */
	u64 next_ino, sweep, nr_sweeps, seen;
};

static struct ino_info *find_ino(struct fs_check *fc, u64 ino)
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

static int add_ino(struct fs_check *fc, const struct bfs_bkey *k)
{
	const struct bfs_inode_v *v = bfs_bkey_val(k);

	if (fc->nr == fc->cap) {
		struct ino_info *n;

		fc->cap = fc->cap ? fc->cap * 2 : 1024;
		n = bfs_realloc(fc->in, fc->cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		fc->in = n;
	}
	fc->in[fc->nr++] = (struct ino_info){
		.ino = le64_to_cpu(k->inode),
		.mode = le32_to_cpu(v->mode),
		.nlink = le32_to_cpu(v->nlink),
		.parent = le64_to_cpu(v->parent),
		.sectors = le64_to_cpu(v->sectors),
	};
	return 0;
}

/* call @fn for every key of btree @id */
static int for_each_key(struct fs_check *fc, enum bfs_btree_id id,
			int (*fn)(struct fs_check *fc, const struct bfs_bkey *k))
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fc->c, id, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		if (!(++fc->seen & 1023))
			bfs_fsck_progress(fc->f, 2, fc->sweep * fc->next_ino + le64_to_cpu(k->inode),
					  fc->nr_sweeps * fc->next_ino);
		ret = fn(fc, k);
		if (ret)
			break;
	}
	fc->sweep++;
	bfs_btree_iter_exit(&it);
	return ret == -ENOENT ? 0 : ret;
}

static int collect_inode(struct fs_check *fc, const struct bfs_bkey *k)
{
	if (k->type == BFS_KEY_INODE && !le64_to_cpu(k->offset) &&
	    bfs_bkey_val_u64s(k) >= BFS_INODE_V_U64S)
		return add_ino(fc, k);
	return 0;
}

static int collect_orphan(struct fs_check *fc, const struct bfs_bkey *k)
{
	struct ino_info *i;

	if (k->type == BFS_KEY_ORPHAN && !le64_to_cpu(k->inode)) {
		i = find_ino(fc, le64_to_cpu(k->offset));
		if (i)
			i->orphan = true;
	}
	return 0;
}

/* repairs: one-update transactions; a failure is reported and counted */
static void repair(struct fs_check *fc, enum bfs_problem_code code, int ret)
{
	if (ret)
		bfs_fsck_repair_failed(fc->f, code, ret);
}

static void replace_with_whiteout(struct fs_check *fc, enum bfs_problem_code code,
				  const struct bfs_bkey *k)
{
	struct bfs_bkey wk;

	/* a whiteout, not a delete: later entries of the hash chain stay reachable */
	bfs_bkey_init(&wk, BFS_KEY_HASH_WHITEOUT, bfs_bkey_pos(k), 0);
	repair(fc, code, bfs_btree_insert(fc->c, BFS_BTREE_DIRENTS, &wk));
}

static int check_dirent(struct fs_check *fc, const struct bfs_bkey *k)
{
	const struct bfs_dirent_v *v = bfs_bkey_val(k);
	struct ino_info *dir, *target;
	char name[BFS_NAME_MAX + 1];
	u64 ino;

	if (k->type != BFS_KEY_DIRENT || bfs_bkey_val_u64s(k) * 8 < sizeof(*v))
		return 0;
	ino = le64_to_cpu(v->ino);
	snprintf(name, sizeof(name), "%.*s", v->name_len, (const char *)v->name);
	dir = find_ino(fc, le64_to_cpu(k->inode));
	if (!dir || !S_ISDIR(dir->mode)) {
		if (bfs_fix_problem(fc->f, PR_DIRENT_DIR_MISSING, "'%s' -> %llu in inode %llu",
				    name, (unsigned long long)ino,
				    (unsigned long long)le64_to_cpu(k->inode)))
			repair(fc, PR_DIRENT_DIR_MISSING,
			       bfs_btree_delete(fc->c, BFS_BTREE_DIRENTS, bfs_bkey_pos(k)));
		return 0;
	}
	target = find_ino(fc, ino);
	if (!target) {
		if (bfs_fix_problem(fc->f, PR_DIRENT_TARGET_MISSING, "'%s' in directory %llu -> %llu",
				    name, (unsigned long long)dir->ino, (unsigned long long)ino))
			replace_with_whiteout(fc, PR_DIRENT_TARGET_MISSING, k);
		return 0;
	}
	if (v->type != (target->mode & S_IFMT) >> 12 &&
	    bfs_fix_problem(fc->f, PR_DIRENT_TYPE, "'%s' in directory %llu says type %u, inode "
			    "%llu has mode %o", name, (unsigned long long)dir->ino, v->type,
			    (unsigned long long)ino, target->mode)) {
		u64 buf[BFS_BKEY_U64S + 40];
		struct bfs_bkey *nk = (void *)buf;

		if (bfs_bkey_bytes(k) <= sizeof(buf)) {
			memcpy(nk, k, bfs_bkey_bytes(k));
			((struct bfs_dirent_v *)bfs_bkey_val(nk))->type = (u8)((target->mode & S_IFMT) >> 12);
			repair(fc, PR_DIRENT_TYPE, bfs_btree_insert(fc->c, BFS_BTREE_DIRENTS, nk));
		}
	}
	target->links++;
	target->entry_dir = dir->ino;
	if (S_ISDIR(target->mode))
		dir->subdirs++;
	return 0;
}

static int count_extent(struct fs_check *fc, const struct bfs_bkey *k)
{
	struct ino_info *i;

	if (k->type != BFS_KEY_EXTENT)
		return 0;
	i = find_ino(fc, le64_to_cpu(k->inode));
	if (!i || !S_ISREG(i->mode)) {
		bfs_fix_problem(fc->f, PR_EXTENT_NO_INODE, "extent of inode %llu, sectors %llu..%llu",
				(unsigned long long)le64_to_cpu(k->inode),
				(unsigned long long)bfs_bkey_start(k),
				(unsigned long long)le64_to_cpu(k->offset));
		return 0;
	}
	i->ext_sectors += bfs_bkey_size(k);
	return 0;
}

/* rewrite inode @i's key with @fn applied to its value */
static int inode_rewrite(struct fs_check *fc, const struct ino_info *i,
			 void (*fn)(struct bfs_inode_v *v, const struct ino_info *i))
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_bkey *k = (void *)buf;
	int ret = bfs_btree_lookup(fc->c, BFS_BTREE_INODES, BFS_POS(i->ino, 0, 0), buf, sizeof(buf));

	if (ret)
		return ret;
	fn(bfs_bkey_val(k), i);
	return bfs_btree_insert(fc->c, BFS_BTREE_INODES, k);
}

static u32 want_nlink(const struct ino_info *i)
{
	return S_ISDIR(i->mode) ? 2 + i->subdirs : i->links;
}

static void set_nlink(struct bfs_inode_v *v, const struct ino_info *i)
{
	v->nlink = cpu_to_le32(want_nlink(i));
}

static void set_parent(struct bfs_inode_v *v, const struct ino_info *i)
{
	v->parent = cpu_to_le64(i->entry_dir);
}

static void set_sectors(struct bfs_inode_v *v, const struct ino_info *i)
{
	v->sectors = cpu_to_le64(i->ext_sectors);
}

/* give unattached inode @i the entry /lost+found/#INO */
static int reconnect(struct fs_check *fc, struct ino_info *i)
{
	struct bfs_dirent_ref lf;
	struct ino_info *lfi;
	struct bfs_trans *t;
	char name[32];
	size_t len = (size_t)snprintf(name, sizeof(name), "#%llu", (unsigned long long)i->ino);
	u64 slot;
	int ret;

	ret = bfs_dir_lookup(fc->fs, BFS_ROOT_INO, "lost+found", 10, &lf);
	lfi = ret ? NULL : find_ino(fc, lf.ino);
	if (!lfi || !S_ISDIR(lfi->mode)) {
		bfs_fsck_printf(fc->f, "there is no /lost+found directory");
		return ret ? ret : -ENOTDIR;
	}
	ret = bfs_dir_free_slot(fc->fs, lf.ino, name, len, &slot);
	if (!ret)
		ret = bfs_trans_begin(fc->c, &t);
	if (ret)
		return ret;
	ret = bfs_dir_add(t, lf.ino, slot, name, len, i->ino, bfs_ns_dtype(i->mode));
	if (ret) {
		bfs_trans_end(t);
		return ret;
	}
	ret = bfs_ns_commit(t);
	if (ret)
		return ret;
	/* the counts the later checks compare with now include the new entry */
	i->links++;
	i->entry_dir = lf.ino;
	if (S_ISDIR(i->mode))
		lfi->subdirs++;
	return 0;
}

static void check_attached(struct fs_check *fc, struct ino_info *i)
{
	if (i->ino == BFS_ROOT_INO || i->links || !i->nlink)
		return;
	if (bfs_fix_problem(fc->f, PR_INODE_UNATTACHED, "inode %llu (mode %o, %u links)",
			    (unsigned long long)i->ino, i->mode, i->nlink))
		repair(fc, PR_INODE_UNATTACHED, reconnect(fc, i));
}

static void check_inode(struct fs_check *fc, struct ino_info *i)
{
	bool root = i->ino == BFS_ROOT_INO;

	if (!root && !i->links) {
		if (i->nlink) {
			/* unattached and left so (check_attached() reported it) */
		} else if (!i->orphan &&
			   bfs_fix_problem(fc->f, PR_INODE_LOST, "inode %llu (mode %o)",
					   (unsigned long long)i->ino, i->mode)) {
			struct bfs_bkey k;

			bfs_bkey_init(&k, BFS_KEY_ORPHAN, BFS_POS(0, i->ino, 0), 0);
			repair(fc, PR_INODE_LOST, bfs_btree_insert(fc->c, BFS_BTREE_INODES, &k));
		}
		return;
	}
	if (i->nlink != want_nlink(i) &&
	    bfs_fix_problem(fc->f, PR_INODE_NLINK, "inode %llu has %u, counted %u",
			    (unsigned long long)i->ino, i->nlink, want_nlink(i)))
		repair(fc, PR_INODE_NLINK, inode_rewrite(fc, i, set_nlink));
	if (S_ISDIR(i->mode) && !root && i->parent != i->entry_dir &&
	    bfs_fix_problem(fc->f, PR_DIR_PARENT, "directory %llu: \"..\" is %llu, its entry is in %llu",
			    (unsigned long long)i->ino, (unsigned long long)i->parent,
			    (unsigned long long)i->entry_dir))
		repair(fc, PR_DIR_PARENT, inode_rewrite(fc, i, set_parent));
	if (S_ISREG(i->mode) && i->sectors != i->ext_sectors &&
	    bfs_fix_problem(fc->f, PR_INODE_SECTORS, "inode %llu says %llu sectors, its extents "
			    "hold %llu", (unsigned long long)i->ino, (unsigned long long)i->sectors,
			    (unsigned long long)i->ext_sectors))
		repair(fc, PR_INODE_SECTORS, inode_rewrite(fc, i, set_sectors));
}

int bfs_fsck_pass_fs(struct bfs_fsck *f)
{
	struct bfs_fs_opts opts = { .read_only = f->mode == BFS_FSCK_MODE_NO,
				    .cache_bytes = f->cache_bytes };
	struct fs_check fc = { .f = f };
	size_t i;
	int ret;

	if (f->btrees_damaged) {
		bfs_fix_problem(f, PR_FS_SKIPPED, "the btrees are damaged (pass 1)");
		return 0;
	}
	ret = bfs_fs_open(f->dev, &opts, &fc.fs);
	if (ret) {
		bfs_fsck_printf(f, "cannot open the filesystem: %s", strerror(-ret));
		return ret;
	}
	fc.c = bfs_fs_core(fc.fs);
	fc.nr_sweeps = 4;
	if (bfs_ns_counter_read(fc.fs, &fc.next_ino))
		fc.next_ino = 0;	/* no progress then; the checks below still run */
	ret = for_each_key(&fc, BFS_BTREE_INODES, collect_inode);
	if (!ret)
		ret = for_each_key(&fc, BFS_BTREE_INODES, collect_orphan);
	if (!ret && !find_ino(&fc, BFS_ROOT_INO)) {
		bfs_fsck_printf(f, "no root directory");
		ret = -EUCLEAN;
	}
	if (!ret)
		ret = for_each_key(&fc, BFS_BTREE_DIRENTS, check_dirent);
	if (!ret)
		ret = for_each_key(&fc, BFS_BTREE_EXTENTS, count_extent);
	/* reconnect first: it changes the counts that check_inode() compares */
	for (i = 0; !ret && i < fc.nr; i++)
		check_attached(&fc, &fc.in[i]);
	for (i = 0; !ret && i < fc.nr; i++)
		check_inode(&fc, &fc.in[i]);
	bfs_fsck_progress(f, 2, fc.nr_sweeps * fc.next_ino, fc.nr_sweeps * fc.next_ino);
	if (!ret && f->verbose)
		bfs_fsck_printf(f, "%zu inodes checked", fc.nr);
	if (ret)
		bfs_fsck_printf(f, "checking the filesystem failed: %s", strerror(-ret));
	{
		int r = bfs_fs_close(fc.fs);

		ret = ret ? ret : r;
	}
	bfs_free(fc.in);
	return ret;
}
