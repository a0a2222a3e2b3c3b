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
#include <bfs/fs_repair.h>
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fs_check.h"
#include "fsck_passes.h"

/* orphan keys (0, ino) come before every inode key: kept until their inode is seen */
struct orphans {
	u64	*ino;
	size_t	nr, cap, next;
};

static int collect(struct fs_check *fc, struct orphans *o, const struct bfs_bkey *k)
{
	const struct bfs_inode_v *v = bfs_bkey_val(k);
	u64 ino = le64_to_cpu(k->inode);
	size_t idx;
	int ret;

	if (k->type == BFS_KEY_ORPHAN && !ino)
		return fsck_u64_push(&o->ino, &o->nr, &o->cap, le64_to_cpu(k->offset));
	if (!fsck_inode_key(k))
		return 0;
	ret = fsck_add_ino(fc, ino, le32_to_cpu(v->mode), le64_to_cpu(v->size), &idx);
	if (ret)
		return ret;
	while (o->next < o->nr && o->ino[o->next] < ino)
		o->next++;
	if (o->next < o->nr && o->ino[o->next] == ino)
		fc->flags[idx] |= FSCK_I_ORPHAN;
	return 0;
}

static int collect_inodes(struct fs_check *fc)
{
	struct orphans o = { 0 };
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fc->c, BFS_BTREE_INODES, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		fsck_sweep_progress(fc, le64_to_cpu(k->inode));
		ret = collect(fc, &o, k);
		if (ret)
			break;
	}
	fsck_sweep_done(fc);
	bfs_btree_iter_exit(&it);
	bfs_free(o.ino);
	return ret;
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
	size_t idx;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	loc.btree = btree;
	loc.has_pos = true;
	loc.pos = pos;
	if (!fsck_find(fc, pos.inode, &idx))
		loc.path = NULL;
	return bfs_fix_problem_at(fc->f, code, &loc, "%s", detail);
}

enum bfs_problem_code fsck_dirent_state(struct fs_check *fc, const struct bfs_bkey *k,
					struct fsck_dir **dir, size_t *target)
{
	const struct bfs_dirent_v *v = bfs_bkey_val(k);

	*dir = NULL;
	if (k->type != BFS_KEY_DIRENT || bfs_bkey_val_u64s(k) * 8 < sizeof(*v))
		return PR_NR;
	*dir = fsck_find_dir(fc, le64_to_cpu(k->inode));
	if (!*dir)
		return PR_DIRENT_DIR_MISSING;
	if (!fsck_find(fc, le64_to_cpu(v->ino), target))
		return PR_DIRENT_TARGET_MISSING;
	if (v->type != fsck_type(fc, *target) >> 12)
		return PR_DIRENT_TYPE;
	return PR_NR;
}

static int check_dirent(struct fs_check *fc, const struct bfs_bkey *k)
{
	const struct bfs_dirent_v *v = bfs_bkey_val(k);
	/* validated keys: name_len bytes, no NUL; only printed with a problem */
	const char *name = (const char *)v->name;
	int len = v->name_len;
	struct fsck_dir *dir;
	size_t target;
	u64 ino = le64_to_cpu(v->ino);
	enum bfs_problem_code code = fsck_dirent_state(fc, k, &dir, &target);
	u32 type;

	if (!dir && code == PR_NR)
		return 0;
	if (code == PR_DIRENT_DIR_MISSING) {
		if (fix_at(fc, code, BFS_BTREE_DIRENTS, bfs_bkey_pos(k),
			   "'%.*s' -> %llu in inode %llu", len, name, (unsigned long long)ino,
			   (unsigned long long)le64_to_cpu(k->inode)))
			fsck_repair(fc, code, bfs_btree_delete(fc->c, BFS_BTREE_DIRENTS, bfs_bkey_pos(k)));
		return 0;
	}
	if (code == PR_DIRENT_TARGET_MISSING) {
		if (fix_at(fc, code, BFS_BTREE_DIRENTS, bfs_bkey_pos(k),
			   "'%.*s' in directory %llu -> %llu", len, name, (unsigned long long)dir->ino,
			   (unsigned long long)ino))
			replace_with_whiteout(fc, code, k);
		return 0;
	}
	type = fsck_type(fc, target);
	if (code == PR_DIRENT_TYPE &&
	    fix_at(fc, code, BFS_BTREE_DIRENTS, bfs_bkey_pos(k),
		   "'%.*s' in directory %llu says type %u, inode %llu has mode %o", len, name,
		   (unsigned long long)dir->ino, v->type, (unsigned long long)ino,
		   fsck_stored_mode(fc, ino))) {
		u64 buf[BFS_BKEY_U64S + 40];
		struct bfs_bkey *nk = (void *)buf;

		if (bfs_bkey_bytes(k) <= sizeof(buf)) {
			memcpy(nk, k, bfs_bkey_bytes(k));
			((struct bfs_dirent_v *)bfs_bkey_val(nk))->type = (u8)(type >> 12);
			/* the insert changes the leaf under @k: the name is the copy's now */
			name = (const char *)((const struct bfs_dirent_v *)bfs_bkey_val(nk))->name;
			fsck_repair(fc, code, bfs_btree_insert(fc->c, BFS_BTREE_DIRENTS, nk));
		}
	}
	return fsck_count_entry(fc, dir, target, ino, name, (size_t)len);
}

static u32 want_nlink(struct fs_check *fc, size_t idx)
{
	return S_ISDIR(fsck_type(fc, idx)) ? 2 + fsck_dir(fc, idx)->subdirs : fsck_links(fc, idx);
}

static void set_nlink(struct bfs_ns_inode *i, u64 nlink)
{
	i->i.nlink = (u32)nlink;
}

static void set_parent(struct bfs_ns_inode *i, u64 parent)
{
	i->parent = parent;
}

static void set_sectors(struct bfs_ns_inode *i, u64 sectors)
{
	i->i.sectors = sectors;
}

/* give unattached inode @ino (at @idx) the entry /lost+found/#INO */
static int reconnect(struct fs_check *fc, size_t idx, u64 ino)
{
	struct fsck_dir *lfd = fc->lf_ino ? fsck_find_dir(fc, fc->lf_ino) : NULL;
	struct bfs_trans *t;
	char name[32];
	size_t len = (size_t)snprintf(name, sizeof(name), "#%llu", (unsigned long long)ino);
	u64 slot;
	int ret;

	/* fsck_check_lost_found() made it, unless that was declined */
	if (!lfd) {
		bfs_fsck_printf(fc->f, "there is no /lost+found directory");
		return -ENOENT;
	}
	ret = bfs_dir_free_slot(fc->fs, lfd->ino, name, len, &slot);
	if (!ret)
		ret = bfs_trans_begin(fc->c, &t);
	if (ret)
		return ret;
	ret = bfs_dir_add(t, lfd->ino, slot, name, len, ino, (u8)(fsck_type(fc, idx) >> 12));
	if (ret) {
		bfs_trans_end(t);
		return ret;
	}
	ret = bfs_ns_commit(t);
	if (ret)
		return ret;
	/* the counts the later checks compare with now include the new entry */
	return fsck_count_entry(fc, lfd, idx, ino, name, len);
}

static void check_attached(struct fs_check *fc, size_t idx, u64 ino, const struct bfs_inode_v *v)
{
	if (ino == BFS_ROOT_INO || fsck_links(fc, idx) || !le32_to_cpu(v->nlink))
		return;
	if (fix_at(fc, PR_INODE_UNATTACHED, BFS_BTREE_INODES, BFS_POS(ino, 0, 0),
		   "inode %llu (mode %o, %u links)", (unsigned long long)ino, le32_to_cpu(v->mode),
		   le32_to_cpu(v->nlink)))
		fsck_repair(fc, PR_INODE_UNATTACHED, reconnect(fc, idx, ino));
}

/* what a symlink whose target is gone points to after the repair */
#define LOST_TARGET	"(symlink target lost; see fsck)"

/* the target keys must read back: chunks present, in place, lengths adding up */
static void check_symlink(struct fs_check *fc, u64 ino)
{
	char buf[BFS_SYMLINK_MAX + 1];
	ssize_t n = bfs_fs_readlink(fc->fs, ino, buf, sizeof(buf));
	struct bfs_trans *t;
	int ret;

	if (n >= 0 || (n != -EUCLEAN && n != -EIO && n != -ENOENT))
		return;
	if (!fix_at(fc, PR_SYMLINK_TARGET_LOST, BFS_BTREE_INODES, BFS_POS(ino, 1, 0),
		    "inode %llu (%s): the target cannot be read (%s)", (unsigned long long)ino,
		    fsck_path(fc, ino), strerror((int)-n)))
		return;
	ret = bfs_trans_begin(fc->c, &t);
	if (!ret)
		ret = bfs_ns_delete_keys(fc->fs, t, BFS_BTREE_INODES, ino, 1);
	if (!ret)
		ret = bfs_ns_symlink_write(fc->fs, t, ino, LOST_TARGET, sizeof(LOST_TARGET) - 1);
	if (!ret)
		ret = bfs_ns_commit(t);
	else
		bfs_trans_end(t);
	if (!ret)
		ret = fsck_inode_update(fc, ino, fsck_set_size, sizeof(LOST_TARGET) - 1);
	fsck_repair(fc, PR_SYMLINK_TARGET_LOST, ret);
}

/* inode @ino (at @idx, value @v as stored) against what the other btrees say */
static void check_inode(struct fs_check *fc, size_t idx, u64 ino, const struct bfs_inode_v *v,
			u64 ext_sectors)
{
	struct bfs_bpos pos = BFS_POS(ino, 0, 0);
	u32 mode = le32_to_cpu(v->mode), nlink = le32_to_cpu(v->nlink);
	u64 sectors = le64_to_cpu(v->sectors);
	bool root = ino == BFS_ROOT_INO;

	check_attached(fc, idx, ino, v);
	if (!root && !fsck_links(fc, idx)) {
		if (nlink) {
			/* unattached and left so (check_attached() reported it) */
		} else if (!(fc->flags[idx] & FSCK_I_ORPHAN) &&
			   fix_at(fc, PR_INODE_LOST, BFS_BTREE_INODES, pos, "inode %llu (mode %o)",
				  (unsigned long long)ino, mode)) {
			struct bfs_bkey k;

			bfs_bkey_init(&k, BFS_KEY_ORPHAN, BFS_POS(0, ino, 0), 0);
			fsck_repair(fc, PR_INODE_LOST, bfs_btree_insert(fc->c, BFS_BTREE_INODES, &k));
		}
		return;
	}
	if (nlink != want_nlink(fc, idx) &&
	    fix_at(fc, PR_INODE_NLINK, BFS_BTREE_INODES, pos, "inode %llu has %u, counted %u",
		   (unsigned long long)ino, nlink, want_nlink(fc, idx)))
		fsck_repair(fc, PR_INODE_NLINK,
			    fsck_inode_update(fc, ino, set_nlink, want_nlink(fc, idx)));
	if (S_ISDIR(mode) && !root) {
		u64 parent = le64_to_cpu(v->parent), entry_dir = fsck_dir(fc, idx)->entry_dir;

		if (parent != entry_dir &&
		    fix_at(fc, PR_DIR_PARENT, BFS_BTREE_INODES, pos,
			   "directory %llu: \"..\" is %llu, its entry is in %llu",
			   (unsigned long long)ino, (unsigned long long)parent,
			   (unsigned long long)entry_dir))
			fsck_repair(fc, PR_DIR_PARENT, fsck_inode_update(fc, ino, set_parent, entry_dir));
	}
	if (S_ISLNK(mode))
		check_symlink(fc, ino);
	if (S_ISREG(mode) && sectors != ext_sectors &&
	    fix_at(fc, PR_INODE_SECTORS, BFS_BTREE_INODES, pos,
		   "inode %llu says %llu sectors, its extents hold %llu", (unsigned long long)ino,
		   (unsigned long long)sectors, (unsigned long long)ext_sectors))
		fsck_repair(fc, PR_INODE_SECTORS, fsck_inode_update(fc, ino, set_sectors, ext_sectors));
}

/* the extents btree, walked alongside the inodes: the sectors of each inode's extents */
struct ext_sum {
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;	/* the next extent not summed; NULL: none left */
};

static int ext_sum_next(struct ext_sum *e, int ret)
{
	if (ret == -ENOENT)
		e->k = NULL;
	return ret == -ENOENT ? 0 : ret;
}

/*
 * Sectors of the extents of @ino, and the sector where they end (inodes
 * are asked for in increasing order)
 */
static int ext_sum(struct ext_sum *e, u64 ino, u64 *sectors, u64 *end)
{
	int ret = 0;

	*sectors = *end = 0;
	while (!ret && e->k && le64_to_cpu(e->k->inode) <= ino) {
		/* extents without a regular file were dropped by fsck_check_extents() (or left with -n) */
		if (le64_to_cpu(e->k->inode) == ino && e->k->type == BFS_KEY_EXTENT) {
			*sectors += bfs_bkey_size(e->k);
			*end = BFS_MAX(*end, le64_to_cpu(e->k->offset));
		}
		ret = ext_sum_next(e, bfs_btree_iter_next(&e->it, &e->k));
	}
	return ret;
}

/*
 * Every inode against its entries and extents, in one sweep of the inodes
 * and extents btrees side by side.  Reconnecting an inode adds an entry to
 * /lost+found, so that one is checked last.
 */
static int check_inodes(struct fs_check *fc)
{
	struct ext_sum e;
	struct bfs_inode_v v;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	size_t idx;
	u64 sectors, end;
	int ret;

	bfs_btree_iter_init(&e.it, fc->c, BFS_BTREE_EXTENTS, BFS_POS_MIN, BFS_ITER_PREFETCH);
	ret = ext_sum_next(&e, bfs_btree_iter_peek(&e.it, &e.k));
	bfs_btree_iter_init(&it, fc->c, BFS_BTREE_INODES, BFS_POS(1, 0, 0), BFS_ITER_PREFETCH);
	for (ret = ret ? ret : bfs_btree_iter_peek(&it, &k); !ret;
	     ret = bfs_btree_iter_next(&it, &k)) {
		u64 ino = le64_to_cpu(k->inode);

		fsck_sweep_progress(fc, ino);
		if (!fsck_inode_key(k) || !fsck_find(fc, ino, &idx))
			continue;
		ret = ext_sum(&e, ino, &sectors, &end);
		if (ret)
			break;
		if (ino == fc->lf_ino)
			continue;
		/* @k is only valid until the next call on @it, and repairs come first */
		memcpy(&v, bfs_bkey_val(k), sizeof(v));
		fsck_check_size(fc, ino, &v, end);
		check_inode(fc, idx, ino, &v, sectors);
	}
	fsck_sweep_done(fc);
	bfs_btree_iter_exit(&it);
	bfs_btree_iter_exit(&e.it);
	if (ret != -ENOENT)
		return ret;
	if (fc->lf_ino && fsck_find(fc, fc->lf_ino, &idx) && !fsck_inode_read(fc, fc->lf_ino, &v))
		check_inode(fc, idx, fc->lf_ino, &v, 0);
	return 0;
}

struct roots_ctx {
	struct bfs_fsck *f;
	bool	fixed;		/* the counter or the root was repaired */
};

static bool fix_root_finding(void *ctx, const struct bfs_finding *fd)
{
	struct roots_ctx *r = ctx;
	bool fix = bfs_fix_finding(r->f, fd);

	r->fixed |= fix;
	return fix;
}

static int run_checks(struct fs_check *fc, bool collected)
{
	struct bfs_fsck *f = fc->f;
	int ret = 0;

	fsck_layout_init(fc);
	/*
	 * collect_inodes() and the dirents (unless pass 1's walk did them), the
	 * five of fsck_check_alloc() (the extent check's among them),
	 * fsck_check_data(), check_inodes()
	 */
	fc->nr_sweeps = (collected ? 6 : 8) + f->check_data;
	if (bfs_ns_counter_read(fc->fs, &fc->next_ino))
		fc->next_ino = 0;	/* no progress then; the checks below still run */
	if (!collected)
		ret = collect_inodes(fc);
	if (!ret && !fsck_find_dir(fc, BFS_ROOT_INO)) {
		bfs_fsck_printf(f, "no root directory");
		ret = -EUCLEAN;
	}
	if (!ret && !collected)
		ret = fsck_for_each_key(fc, BFS_BTREE_DIRENTS, check_dirent);
	/* before anything is reconnected to it */
	if (!ret)
		ret = fsck_check_lost_found(fc);
	/*
	 * the extent check, then the buckets: the peak of the pass; what the
	 * sweeps before it freed (parse buffers, key indexes of the nodes they
	 * read) goes back first, not only at the end of the pass (fsck.c)
	 */
	bfs_heap_trim();
	bfs_core_trim_cache(fc->c);
	if (!ret)
		ret = fsck_check_alloc(fc);
	if (!ret && f->check_data)
		ret = fsck_check_data(fc);
	if (!ret)
		ret = check_inodes(fc);
	bfs_fsck_progress(f, fc->nr_sweeps * fc->next_ino, fc->nr_sweeps * fc->next_ino);
	if (!ret && f->verbose)
		bfs_fsck_printf(f, "%zu inodes checked", fc->nr);
	return ret;
}

int bfs_fsck_pass_fs(struct bfs_fsck *f)
{
	struct fsck_early *e = f->early;
	struct roots_ctx roots = { .f = f };
	struct bfs_fs_opts opts = {
		.read_only = fsck_fs_read_only(f),
		/* the allocation check counts live sectors: the open need not sweep for them */
		.check_only = fsck_fs_read_only(f),
		.cache_bytes = f->cache_bytes,
		.salvage_journal = f->journal_salvage,
		.journal_finding = bfs_fsck_journal_decided,
		/* counter, root dir; pass 1's walk counted the inode numbers */
		.check_roots = fix_root_finding, .check_ctx = &roots,
		.known_max_ino = e && e->max_ok ? e->max_ino : 0,
	};
	struct fs_check own = { .f = f }, *fc = &own;
	int ret, r;

	if (f->btrees_damaged) {
		/* the pass numbers users see (-v, -C, --json): the btrees are pass 3 */
		bfs_fix_problem(f, PR_FS_SKIPPED, "the btrees are damaged (pass 3)");
		return 0;
	}
	if (e && e->core && e->fs) {
		/* pass 1's open, prepared for pass 2 (fsck_early_prepare()) */
		/* writable: the live sectors pass 1's walk counted, not a sweep of its own */
		opts.known_live = e->live_ok ? e->live : NULL;
		ret = bfs_fs_attach_prepared(e->fs, e->core, &opts);
		bfs_free(e->live);
		e->live = NULL;
		e->live_ok = false;
		own.fs = ret ? NULL : e->fs;
		e->core = NULL;
		e->fs = NULL;
	} else if (e && e->core) {
		ret = bfs_fs_attach(e->core, &opts, &own.fs);
		e->core = NULL;
	} else {
		ret = bfs_fs_open(f->dev, &opts, &own.fs);
	}
	if (ret) {
		bfs_fsck_printf(f, "cannot open the filesystem: %s", strerror(-ret));
		return ret;
	}
	/* a new root is an inode pass 1 did not see */
	if (e && e->tables_ok && !roots.fixed) {
		fc = &e->fc;
		fc->fs = own.fs;
	}
	fc->c = bfs_fs_core(fc->fs);
	ret = run_checks(fc, fc != &own);
	if (ret)
		bfs_fsck_printf(f, "checking the filesystem failed: %s", strerror(-ret));
	r = bfs_fs_close(fc->fs);
	fsck_fs_check_free(&own);
	return ret ? ret : r;
}
