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
 *   - /lost+found exists and is a directory in / (lost_found.c);
 *   - extents: inside the data area, within the file's size (pass_extents.c);
 *   - buckets: generations and live sectors recomputed from the extents,
 *     stale pointers dropped (pass_alloc.c);
 *   - with --check-data, every chunk read back and verified (pass_data.c);
 *   - an inode with no entry is either on the orphan list (freed at the next
 *     mount) or lost, and one that still has links is reconnected to
 *     /lost+found as "#INO";
 *   - an inode's sector count is the sum of its extents.
 * Repairs are ordinary btree updates, one small transaction each.  Losses
 * are reported by path and byte range (fs_check.c keeps the paths).
 */
#include <bfs/btree.h>
#include <bfs/extent_format.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_check.h"
#include "fsck_passes.h"
#include "../fs/ns.h"

static int collect_inode(struct fs_check *fc, const struct bfs_bkey *k)
{
	const struct bfs_inode_v *v = bfs_bkey_val(k);
	struct ino_info *i;
	int ret;

	if (k->type != BFS_KEY_INODE || le64_to_cpu(k->offset) ||
	    bfs_bkey_val_u64s(k) < BFS_INODE_V_U64S)
		return 0;
	ret = fsck_add_ino(fc, le64_to_cpu(k->inode), le32_to_cpu(v->mode), le32_to_cpu(v->nlink),
			   le64_to_cpu(v->parent), &i);
	if (ret)
		return ret;
	i->sectors = le64_to_cpu(v->sectors);
	i->size = le64_to_cpu(v->size);
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

static void replace_with_whiteout(struct fs_check *fc, enum bfs_problem_code code,
				  const struct bfs_bkey *k)
{
	struct bfs_bkey wk;

	/* a whiteout, not a delete: later entries of the hash chain stay reachable */
	bfs_bkey_init(&wk, BFS_KEY_HASH_WHITEOUT, bfs_bkey_pos(k), 0);
	fsck_repair(fc, code, bfs_btree_insert(fc->c, BFS_BTREE_DIRENTS, &wk));
}

/*
 * Report a problem of inode @ino (@pos in @btree: its key or one of its
 * entries) with its path as far as the entries seen so far tell; the path
 * is only looked up for a problem.
 */
static bool __attribute__((format(printf, 5, 6)))
fix_at(struct fs_check *fc, enum bfs_problem_code code, enum bfs_btree_id btree,
       struct bfs_bpos pos, const char *fmt, ...)
{
	struct bfs_fsck_loc loc = fsck_file_loc(fc, pos.inode, 0, NULL);
	char detail[BFS_FINDING_DETAIL_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	loc.btree = btree;
	loc.has_pos = true;
	loc.pos = pos;
	if (!find_ino(fc, pos.inode))
		loc.path = NULL;
	return bfs_fix_problem_at(fc->f, code, &loc, "%s", detail);
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
		if (fix_at(fc, PR_DIRENT_DIR_MISSING, BFS_BTREE_DIRENTS, bfs_bkey_pos(k),
			   "'%s' -> %llu in inode %llu", name, (unsigned long long)ino,
			   (unsigned long long)le64_to_cpu(k->inode)))
			fsck_repair(fc, PR_DIRENT_DIR_MISSING,
				    bfs_btree_delete(fc->c, BFS_BTREE_DIRENTS, bfs_bkey_pos(k)));
		return 0;
	}
	target = find_ino(fc, ino);
	if (!target) {
		if (fix_at(fc, PR_DIRENT_TARGET_MISSING, BFS_BTREE_DIRENTS, bfs_bkey_pos(k),
			   "'%s' in directory %llu -> %llu", name, (unsigned long long)dir->ino,
			   (unsigned long long)ino))
			replace_with_whiteout(fc, PR_DIRENT_TARGET_MISSING, k);
		return 0;
	}
	if (v->type != (target->mode & S_IFMT) >> 12 &&
	    fix_at(fc, PR_DIRENT_TYPE, BFS_BTREE_DIRENTS, bfs_bkey_pos(k),
		   "'%s' in directory %llu says type %u, inode %llu has mode %o", name,
		   (unsigned long long)dir->ino, v->type, (unsigned long long)ino, target->mode)) {
		u64 buf[BFS_BKEY_U64S + 40];
		struct bfs_bkey *nk = (void *)buf;

		if (bfs_bkey_bytes(k) <= sizeof(buf)) {
			memcpy(nk, k, bfs_bkey_bytes(k));
			((struct bfs_dirent_v *)bfs_bkey_val(nk))->type = (u8)((target->mode & S_IFMT) >> 12);
			fsck_repair(fc, PR_DIRENT_TYPE, bfs_btree_insert(fc->c, BFS_BTREE_DIRENTS, nk));
		}
	}
	/* the first entry names it in messages (and is where ".." should point) */
	if (!target->links++ && fsck_set_name(fc, target, dir->ino, name, strlen(name)))
		return -ENOMEM;
	if (S_ISDIR(target->mode))
		dir->subdirs++;
	return 0;
}

/* extents without a regular file were dropped by fsck_check_extents() (or left with -n) */
static int count_extent(struct fs_check *fc, const struct bfs_bkey *k)
{
	struct ino_info *i;

	if (k->type != BFS_KEY_EXTENT)
		return 0;
	i = find_ino(fc, le64_to_cpu(k->inode));
	if (i && S_ISREG(i->mode))
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

	/* gone meanwhile (an earlier repair freed it): nothing left to fix */
	if (ret == -ENOENT)
		return 0;
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
	struct ino_info *lfi = fc->lf_ino ? find_ino(fc, fc->lf_ino) : NULL;
	struct bfs_trans *t;
	char name[32];
	size_t len = (size_t)snprintf(name, sizeof(name), "#%llu", (unsigned long long)i->ino);
	u64 slot;
	int ret;

	/* fsck_check_lost_found() made it, unless that was declined */
	if (!lfi) {
		bfs_fsck_printf(fc->f, "there is no /lost+found directory");
		return -ENOENT;
	}
	ret = bfs_dir_free_slot(fc->fs, lfi->ino, name, len, &slot);
	if (!ret)
		ret = bfs_trans_begin(fc->c, &t);
	if (ret)
		return ret;
	ret = bfs_dir_add(t, lfi->ino, slot, name, len, i->ino, bfs_ns_dtype(i->mode));
	if (ret) {
		bfs_trans_end(t);
		return ret;
	}
	ret = bfs_ns_commit(t);
	if (ret)
		return ret;
	/* the counts the later checks compare with now include the new entry */
	i->links++;
	if (S_ISDIR(i->mode))
		lfi->subdirs++;
	return fsck_set_name(fc, i, lfi->ino, name, len);
}

static void check_attached(struct fs_check *fc, struct ino_info *i)
{
	if (i->ino == BFS_ROOT_INO || i->links || !i->nlink)
		return;
	if (fix_at(fc, PR_INODE_UNATTACHED, BFS_BTREE_INODES, BFS_POS(i->ino, 0, 0),
		   "inode %llu (mode %o, %u links)", (unsigned long long)i->ino, i->mode, i->nlink))
		fsck_repair(fc, PR_INODE_UNATTACHED, reconnect(fc, i));
}

/* what a symlink whose target is gone points to after the repair */
#define LOST_TARGET	"(symlink target lost; see fsck)"

static void set_lost_target_size(struct bfs_inode_v *v, const struct ino_info *i)
{
	v->size = cpu_to_le64(sizeof(LOST_TARGET) - 1);
}

/* the target keys must read back: chunks present, in place, lengths adding up */
static void check_symlink(struct fs_check *fc, struct ino_info *i)
{
	char buf[BFS_SYMLINK_MAX + 1];
	ssize_t n = bfs_fs_readlink(fc->fs, i->ino, buf, sizeof(buf));
	struct bfs_trans *t;
	int ret;

	if (n >= 0 || (n != -EUCLEAN && n != -EIO && n != -ENOENT))
		return;
	if (!fix_at(fc, PR_SYMLINK_TARGET_LOST, BFS_BTREE_INODES, BFS_POS(i->ino, 1, 0),
		    "inode %llu (%s): the target cannot be read (%s)", (unsigned long long)i->ino,
		    fsck_path(fc, i->ino), strerror((int)-n)))
		return;
	ret = bfs_trans_begin(fc->c, &t);
	if (!ret)
		ret = bfs_ns_delete_keys(fc->fs, t, BFS_BTREE_INODES, i->ino, 1);
	if (!ret)
		ret = bfs_ns_symlink_write(fc->fs, t, i->ino, LOST_TARGET, sizeof(LOST_TARGET) - 1);
	if (!ret)
		ret = bfs_ns_commit(t);
	else
		bfs_trans_end(t);
	if (!ret)
		ret = inode_rewrite(fc, i, set_lost_target_size);
	fsck_repair(fc, PR_SYMLINK_TARGET_LOST, ret);
}

static void check_inode(struct fs_check *fc, struct ino_info *i)
{
	struct bfs_bpos pos = BFS_POS(i->ino, 0, 0);
	bool root = i->ino == BFS_ROOT_INO;

	if (!root && !i->links) {
		if (i->nlink) {
			/* unattached and left so (check_attached() reported it) */
		} else if (!i->orphan &&
			   fix_at(fc, PR_INODE_LOST, BFS_BTREE_INODES, pos, "inode %llu (mode %o)",
				  (unsigned long long)i->ino, i->mode)) {
			struct bfs_bkey k;

			bfs_bkey_init(&k, BFS_KEY_ORPHAN, BFS_POS(0, i->ino, 0), 0);
			fsck_repair(fc, PR_INODE_LOST, bfs_btree_insert(fc->c, BFS_BTREE_INODES, &k));
		}
		return;
	}
	if (i->nlink != want_nlink(i) &&
	    fix_at(fc, PR_INODE_NLINK, BFS_BTREE_INODES, pos, "inode %llu has %u, counted %u",
		   (unsigned long long)i->ino, i->nlink, want_nlink(i)))
		fsck_repair(fc, PR_INODE_NLINK, inode_rewrite(fc, i, set_nlink));
	if (S_ISDIR(i->mode) && !root && i->parent != i->entry_dir &&
	    fix_at(fc, PR_DIR_PARENT, BFS_BTREE_INODES, pos,
		   "directory %llu: \"..\" is %llu, its entry is in %llu",
		   (unsigned long long)i->ino, (unsigned long long)i->parent,
		   (unsigned long long)i->entry_dir))
		fsck_repair(fc, PR_DIR_PARENT, inode_rewrite(fc, i, set_parent));
	if (S_ISLNK(i->mode))
		check_symlink(fc, i);
	if (S_ISREG(i->mode) && i->sectors != i->ext_sectors &&
	    fix_at(fc, PR_INODE_SECTORS, BFS_BTREE_INODES, pos,
		   "inode %llu says %llu sectors, its extents hold %llu", (unsigned long long)i->ino,
		   (unsigned long long)i->sectors, (unsigned long long)i->ext_sectors))
		fsck_repair(fc, PR_INODE_SECTORS, inode_rewrite(fc, i, set_sectors));
}

static bool fix_root_finding(void *ctx, const struct bfs_finding *fd)
{
	return bfs_fix_finding(ctx, fd);
}

int bfs_fsck_pass_fs(struct bfs_fsck *f)
{
	struct bfs_fs_opts opts = {
		.read_only = f->mode == BFS_FSCK_MODE_NO || f->journal_salvage,
		.cache_bytes = f->cache_bytes,
		.salvage_journal = f->journal_salvage,
		.journal_finding = bfs_fsck_journal_decided,
		.check_roots = fix_root_finding, .check_ctx = f,	/* counter, root dir */
	};
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
	fc.nr_sweeps = 4;	/* the fsck_for_each_key() calls below */
	if (bfs_ns_counter_read(fc.fs, &fc.next_ino))
		fc.next_ino = 0;	/* no progress then; the checks below still run */
	ret = fsck_for_each_key(&fc, BFS_BTREE_INODES, collect_inode);
	if (!ret)
		ret = fsck_for_each_key(&fc, BFS_BTREE_INODES, collect_orphan);
	if (!ret && !find_ino(&fc, BFS_ROOT_INO)) {
		bfs_fsck_printf(f, "no root directory");
		ret = -EUCLEAN;
	}
	if (!ret)
		ret = fsck_for_each_key(&fc, BFS_BTREE_DIRENTS, check_dirent);
	/* before anything is reconnected to it */
	if (!ret)
		ret = fsck_check_lost_found(&fc);
	/* extents first: what they drop is not counted in the buckets */
	if (!ret)
		ret = fsck_check_extents(&fc);
	if (!ret)
		ret = fsck_check_alloc(&fc);
	if (!ret && f->check_data)
		ret = fsck_check_data(&fc);
	if (!ret)
		ret = fsck_for_each_key(&fc, BFS_BTREE_EXTENTS, count_extent);
	/* reconnect first: it changes the counts that check_inode() compares */
	for (i = 0; !ret && i < fc.nr; i++)
		check_attached(&fc, &fc.in[i]);
	for (i = 0; !ret && i < fc.nr; i++)
		check_inode(&fc, &fc.in[i]);
	bfs_fsck_progress(f, fc.nr_sweeps * fc.next_ino, fc.nr_sweeps * fc.next_ino);
	if (!ret && f->verbose)
		bfs_fsck_printf(f, "%zu inodes checked", fc.nr);
	if (ret)
		bfs_fsck_printf(f, "checking the filesystem failed: %s", strerror(-ret));
	{
		int r = bfs_fs_close(fc.fs);

		ret = ret ? ret : r;
	}
	bfs_free(fc.in);
	bfs_free(fc.names);
	return ret;
}
