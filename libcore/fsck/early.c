// SPDX-License-Identifier: MIT
/*
 * What pass 1's walk of the btrees collects for pass 2 (fs_check.h, struct
 * fsck_early): each node is read once for both, where pass 2 would sweep
 * the inodes and dirents btrees again, the filesystem's open four btrees
 * for the highest inode number and, writable, the extents btree for each
 * bucket's live sectors.
 */
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/format.h>
#include <bfs/fs.h>
#include <bfs/os.h>

#include <string.h>

#include "fs_check.h"

/* pass 1 walks in id order: every inode is known before the first entry */
_Static_assert(BFS_BTREE_INODES < BFS_BTREE_DIRENTS, "inodes are walked before dirents");

struct fsck_early *fsck_early_new(struct bfs_fsck *f)
{
	struct fsck_early *e = bfs_zalloc(sizeof(*e));

	if (!e)
		return NULL;
	e->fc.f = f;
	e->max_ino = 0;
	e->max_ok = e->tables_ok = true;
	/* a read-only open takes the alloc keys' counts (bfs_fs_opts.check_only) */
	if (!fsck_fs_read_only(f))
		e->live = bfs_calloc(le64_to_cpu(f->sb.sb->nbuckets), sizeof(*e->live));
	e->live_ok = e->live;
	return e;
}

/* pass 2 sweeps for itself: the tables are of no use (and their memory neither) */
static void drop_tables(struct fsck_early *e)
{
	struct bfs_fsck *f = e->fc.f;

	fsck_fs_check_free(&e->fc);
	memset(&e->fc, 0, sizeof(e->fc));
	e->fc.f = f;
	e->tables_ok = false;
}

static void collect_inode(struct fsck_early *e, const struct bfs_bkey *k)
{
	const struct bfs_inode_v *v = bfs_bkey_val(k);

	/* orphans: a writable open frees them, pass 2 sees the inodes as they are then */
	if (k->type == BFS_KEY_ORPHAN && !le64_to_cpu(k->inode)) {
		drop_tables(e);
		return;
	}
	if (fsck_inode_key(k) &&
	    fsck_add_ino(&e->fc, le64_to_cpu(k->inode), le32_to_cpu(v->mode),
			 le64_to_cpu(v->size), NULL))
		drop_tables(e);
}

static void count_entry(struct fsck_early *e, const struct bfs_bkey *k)
{
	const struct bfs_dirent_v *v = bfs_bkey_val(k);
	struct fsck_dir *dir;
	size_t target;

	/* a problem: pass 2 reports it, in its own sweep */
	if (fsck_dirent_state(&e->fc, k, &dir, &target) != PR_NR ||
	    (dir && fsck_count_entry(&e->fc, dir, target, le64_to_cpu(v->ino),
				     (const char *)v->name, v->name_len)))
		drop_tables(e);
}

/*
 * The live sectors the data half's open would count (alloc_data.c,
 * count_extents()), from the same keys; anything it would warn about (a
 * pointer outside the data buckets, two generations in one bucket) leaves
 * the counting to it.
 */
static void count_live(struct fsck_early *e, const struct bfs_bkey *k)
{
	const struct bfs_sb *sb = e->fc.f->sb.sb;
	const struct bfs_extent_v *v = bfs_bkey_val(k);
	struct bfs_bucket_live *bl;
	u64 b;

	if (k->type != BFS_KEY_EXTENT)
		return;
	if (bfs_bkey_val_u64s(k) < BFS_EXTENT_VAL_U64S) {
		e->live_ok = false;
		return;
	}
	if (v->flags & BFS_EXTENT_F_UNWRITTEN)
		return;
	b = le64_to_cpu(v->offset) / le32_to_cpu(sb->bucket_size);
	if (b < le64_to_cpu(sb->first_bucket) || b >= le64_to_cpu(sb->nbuckets)) {
		e->live_ok = false;
		return;
	}
	bl = &e->live[b];
	if ((bl->sectors && bl->gen != le32_to_cpu(v->gen)) ||
	    bl->sectors + (u64)bfs_bkey_size(k) > UINT32_MAX) {
		e->live_ok = false;
		return;
	}
	bl->gen = le32_to_cpu(v->gen);
	bl->sectors += bfs_bkey_size(k);
}

void fsck_early_key(struct fsck_early *e, unsigned id, const struct bfs_bkey *k)
{
	e->max_ino = BFS_MAX(e->max_ino, bfs_fs_key_max_ino(id, k));
	if (id == BFS_BTREE_EXTENTS && e->live_ok)
		count_live(e, k);
	if (!e->tables_ok)
		return;
	if (id == BFS_BTREE_INODES)
		collect_inode(e, k);
	else if (id == BFS_BTREE_DIRENTS)
		count_entry(e, k);
}

/*
 * The prepared layer's hooks, run by pass 1's salvage open: a failure there
 * (the alloc btree unreadable, no memory) must not fail pass 1, which
 * reports what is damaged itself; pass 2 then opens for itself.
 */
static int prep_space_init(void *ctx, struct bfs_core *c)
{
	struct fsck_early *e = ctx;
	struct bfs_core_stats cs;
	unsigned id;

	/* the btrees' nodes, before data buckets count as used too: pass 1's progress */
	bfs_core_get_stats(c, &cs);
	e->node_slots = cs.meta_slots_used;
	/* a damaged tree (maybe without a root) is pass 1's to report: no handover then */
	for (id = 0; id < BFS_BTREE_NR; id++)
		if (bfs_core_btree_damaged(c, id))
			e->prep_failed = true;
	if (e->fs && !e->prep_failed && e->hooks.space_init(e->hooks.space_ctx, c))
		e->prep_failed = true;
	return 0;
}

static int prep_space_key(void *ctx, struct bfs_core *c, unsigned id, const struct bfs_bkey *k)
{
	struct fsck_early *e = ctx;

	if (e->fs && !e->prep_failed && e->hooks.space_replay_key(e->hooks.space_ctx, c, id, k))
		e->prep_failed = true;
	return 0;
}

void fsck_early_prepare(struct fsck_early *e, struct bfs_core_opts *co)
{
	fsck_early_unprepare(e);
	memset(&e->hooks, 0, sizeof(e->hooks));
	if (bfs_fs_prepare(e->fc.f->dev, &e->hooks, &e->fs))
		return;
	co->space_init = prep_space_init;
	co->space_replay_key = prep_space_key;
	co->space_ctx = e;
}

void fsck_early_unprepare(struct fsck_early *e)
{
	bfs_fs_prepared_free(e->fs);
	e->fs = NULL;
	e->prep_failed = false;
}

void fsck_early_free(struct fsck_early *e)
{
	if (!e)
		return;
	if (e->opened)
		bfs_core_close(e->opened);
	if (e->core)
		bfs_core_close(e->core);
	fsck_early_unprepare(e);
	fsck_fs_check_free(&e->fc);
	bfs_free(e->held);
	bfs_free(e->live);
	bfs_free(e);
}
