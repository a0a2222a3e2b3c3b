// SPDX-License-Identifier: MIT
/*
 * Allocation, recomputed and never trusted (bcachefs' check_allocations):
 * what every bucket should say is derived from what points into it, and
 * compared with its alloc key.
 *
 *  1. Owners that are not file data: the journal's buckets (superblock) and
 *     every btree node reachable from a root (the slots every pointer names:
 *     only interior nodes are read).
 *  2. The alloc keys: generation, data type, live sectors; a key for a
 *     bucket outside the data area is removed.
 *  3. A first look at the extents, in the sweep of the extent check
 *     (pass_extents.c; what it drops is not seen here): per bucket, how many pointers carry the
 *     key's generation and the newest generation above it among pointers
 *     whose data verifies (or that have no checksum).  A bucket whose key is
 *     older than every pointer (or missing) gets the newest such generation:
 *     the key is what was damaged or lost, since a bucket's new generation
 *     is committed with the first extent pointing into it.
 *  4. The extents again: a pointer into a bucket that metadata uses is
 *     dropped (the bucket is owned twice; the node or the journal wins, its
 *     data may have been overwritten), one older than its bucket is stale
 *     and dropped (the bucket was reused: the data is someone else's now),
 *     one newer than its bucket while other pointers confirm the bucket's
 *     generation is damaged: kept with the bucket's generation if its data
 *     still verifies, else dropped.  Every drop makes a hole, reported by
 *     inode, path and byte range.  The rest count as live sectors.
 *  5. Every bucket's alloc key is compared with the counts and rewritten:
 *     missing, leaked (marked used, nothing points in), wrong count, wrong
 *     generation.  The data layer's in-memory table is told too, so nodes
 *     written later in this session stay out of buckets found to hold data.
 */
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/format.h>
#include <bfs/fs_repair.h>
#include <bfs/os.h>

#include <stdio.h>
#include <string.h>

#include "fs_check.h"

#define OWNER_JOURNAL	(1u << 0)
#define OWNER_NODE	(1u << 1)

struct bucket_info {
	u64	key_live;	/* the alloc key's */
	u64	live;		/* counted */
	u32	key_gen;
	u32	gen;		/* what it should be */
	u32	max_gen;	/* newest pointer generation above key_gen */
	u32	nr_match;	/* pointers with key_gen */
	u8	key_type;
	bool	has_key;
	bool	has_newer;
	bool	fix_gen;	/* the key's generation is to be replaced by gen */
	u8	owner;		/* OWNER_* */
};

struct alloc_check {
	struct fs_check *fc;
	u64	nodes, nr_nodes;	/* progress of the walk */
	struct bucket_info *b;
	u64	first, nbuckets, bucket_size;
};

static struct bfs_fsck_loc bucket_loc(u64 b)
{
	struct bfs_fsck_loc loc = BFS_FSCK_LOC_NONE;

	loc.btree = BFS_BTREE_ALLOC;
	loc.has_pos = true;
	loc.pos = BFS_POS(b, 0, 0);
	return loc;
}

/* the bucket extent @k points into, or NULL if none (pass_extents.c said why) */
static struct bucket_info *ptr_bucket(struct alloc_check *ac, const struct bfs_bkey *k, u64 *nr)
{
	const struct bfs_extent_v *v = bfs_bkey_val(k);
	char why[160];
	u64 b;

	if (k->type != BFS_KEY_EXTENT || (v->flags & BFS_EXTENT_F_UNWRITTEN) ||
	    fsck_extent_ptr_bad(ac->fc, v, why, sizeof(why)))
		return NULL;
	b = le64_to_cpu(v->offset) / ac->bucket_size;
	if (b < ac->first || b >= ac->nbuckets)
		return NULL;
	*nr = b;
	return &ac->b[b];
}

static int mark_node(void *ctx, u64 offset, unsigned level)
{
	struct alloc_check *ac = ctx;
	u64 b = offset / ac->bucket_size;

	(void)level;

	if (b < ac->nbuckets)
		ac->b[b].owner |= OWNER_NODE;
	fsck_sweep_progress_of(ac->fc, ++ac->nodes, ac->nr_nodes);
	return 0;
}

static int mark_metadata(struct alloc_check *ac)
{
	const struct bfs_sb *sb = bfs_core_sb(ac->fc->c);
	u64 b = le64_to_cpu(sb->journal_bucket), end = b + le32_to_cpu(sb->journal_nbuckets);
	struct bfs_core_stats cs;
	unsigned id;
	int ret;

	for (; b < end && b < ac->nbuckets; b++)
		ac->b[b].owner |= OWNER_JOURNAL;
	bfs_core_get_stats(ac->fc->c, &cs);
	ac->nr_nodes = cs.meta_slots_used;
	for (id = 0; id < BFS_BTREE_NR; id++) {
		ret = bfs_btree_walk_slots(ac->fc->c, id, mark_node, ac);
		if (ret)
			return ret;
	}
	fsck_sweep_done(ac->fc);
	return 0;
}

static int load_keys(struct alloc_check *ac)
{
	struct fs_check *fc = ac->fc;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fc->c, BFS_BTREE_ALLOC, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_alloc_v *v = bfs_bkey_val(k);
		u64 b = le64_to_cpu(k->inode);
		struct bucket_info *bi;

		fsck_sweep_progress_of(fc, b, ac->nbuckets);
		if (k->type != BFS_KEY_ALLOC)
			continue;
		if (b < ac->first || b >= ac->nbuckets || le64_to_cpu(k->offset)) {
			struct bfs_fsck_loc loc = BFS_FSCK_LOC_NONE;

			loc.btree = BFS_BTREE_ALLOC;
			loc.has_pos = true;
			loc.pos = bfs_bkey_pos(k);
			if (bfs_fix_problem_at(fc->f, PR_ALLOC_KEY_BAD, &loc,
					       "bucket %llu (offset %llu), the data area is buckets %llu..%llu",
					       (unsigned long long)b,
					       (unsigned long long)le64_to_cpu(k->offset),
					       (unsigned long long)ac->first,
					       (unsigned long long)ac->nbuckets - 1))
				fsck_repair(fc, PR_ALLOC_KEY_BAD,
					    bfs_btree_delete(fc->c, BFS_BTREE_ALLOC, bfs_bkey_pos(k)));
			continue;
		}
		bi = &ac->b[b];
		bi->has_key = true;
		bi->key_gen = bi->gen = le32_to_cpu(v->gen);
		bi->key_live = le64_to_cpu(v->live_sectors);
		bi->key_type = v->data_type;
	}
	bfs_btree_iter_exit(&it);
	fsck_sweep_done(fc);
	return ret;
}

/* called by fsck_check_extents() for every extent it leaves in place */
static void survey_extent(void *ctx, const struct bfs_bkey *k)
{
	struct alloc_check *ac = ctx;
	const struct bfs_extent_v *v = bfs_bkey_val(k);
	struct bucket_info *bi;
	u32 gen = le32_to_cpu(v->gen);
	char why[200];
	u64 b;

	bi = ptr_bucket(ac, k, &b);
	if (!bi || bi->owner)
		return;
	if (bi->has_key && gen == bi->key_gen) {
		bi->nr_match++;
		return;
	}
	if (bi->has_key && gen < bi->key_gen)
		return;		/* stale */
	/*
	 * It would move the bucket's generation up, or give a bucket without a
	 * key one: only if its data vouches for it (a pointer whose offset was
	 * damaged points at someone else's data, or at none).  Without a
	 * checksum the pointer is trusted, as the extents are the truth.
	 */
	if (v->csum_type != BFS_CSUM_NONE && fsck_verify_chunk(ac->fc, k, why, sizeof(why)))
		return;
	bi->max_gen = bi->has_newer ? BFS_MAX(bi->max_gen, gen) : gen;
	bi->has_newer = true;
}

/* the generation each bucket should have, from its key and the pointers into it */
static void choose_gens(struct alloc_check *ac)
{
	struct fs_check *fc = ac->fc;
	u64 b;

	for (b = ac->first; b < ac->nbuckets; b++) {
		struct bucket_info *bi = &ac->b[b];

		if (!bi->has_newer || bi->nr_match)
			continue;	/* the key's generation stands (pointers above it are damaged) */
		bi->gen = bi->max_gen;
		if (bi->has_key) {
			struct bfs_fsck_loc loc = bucket_loc(b);

			bi->fix_gen = bfs_fix_problem_at(fc->f, PR_ALLOC_GEN_WRONG, &loc,
							 "bucket %llu has generation %u, pointers "
							 "into it %u", (unsigned long long)b,
							 bi->key_gen, bi->gen);
		}
		/* declined: the pointers are judged against the key (-n shows what -y does) */
		if (bi->has_key && !bi->fix_gen && fc->f->mode != BFS_FSCK_MODE_NO)
			bi->gen = bi->key_gen;
	}
}

/* rewrite extent @k with generation @gen (its data verified) */
static int set_ptr_gen(struct fs_check *fc, const struct bfs_bkey *k, u32 gen)
{
	u64 buf[BFS_BKEY_U64S + BFS_EXTENT_VAL_U64S];
	struct bfs_bkey *nk = (void *)buf;

	if (bfs_bkey_bytes(k) != sizeof(buf))
		return -EUCLEAN;
	memcpy(nk, k, sizeof(buf));
	((struct bfs_extent_v *)bfs_bkey_val(nk))->gen = cpu_to_le32(gen);
	return bfs_btree_insert(fc->c, BFS_BTREE_EXTENTS, nk);
}

static void drop(struct alloc_check *ac, enum bfs_problem_code code, const struct bfs_bkey *k,
		 u64 b, const char *why)
{
	struct fs_check *fc = ac->fc;
	u64 ino = le64_to_cpu(k->inode), start = bfs_bkey_start(k) << BFS_SECTOR_SHIFT;
	struct bfs_fsck_loc loc = fsck_file_loc(fc, ino, start, k);

	if (bfs_fix_problem_at(fc->f, code, &loc, "inode %llu (%s) bytes %llu..%llu in bucket %llu: %s",
			       (unsigned long long)ino, loc.path, (unsigned long long)start,
			       (unsigned long long)le64_to_cpu(k->offset) << BFS_SECTOR_SHIFT,
			       (unsigned long long)b, why))
		fsck_repair(fc, code, fsck_drop_extent(fc, k));
}

static void count_extent(struct alloc_check *ac, const struct bfs_bkey *k)
{
	const struct bfs_extent_v *v = bfs_bkey_val(k);
	struct fs_check *fc = ac->fc;
	u32 gen = le32_to_cpu(v->gen);
	struct bucket_info *bi;
	char why[160], data_why[200];
	u64 b;

	bi = ptr_bucket(ac, k, &b);
	if (!bi)
		return;
	if (bi->owner) {
		drop(ac, PR_EXTENT_BUCKET_SHARED, k, b,
		     bi->owner & OWNER_JOURNAL ? "the bucket is the journal's" :
						 "btree nodes are in the bucket");
		return;
	}
	if (gen == bi->gen) {
		bi->live += bfs_bkey_size(k);
		return;
	}
	if (gen < bi->gen) {
		snprintf(why, sizeof(why), "pointer generation %u, bucket generation %u", gen, bi->gen);
		drop(ac, PR_EXTENT_STALE, k, b, why);
		return;
	}
	/* newer than a generation other pointers confirm: only its data can vouch for it */
	data_why[0] = 0;
	if (v->csum_type != BFS_CSUM_NONE && !fsck_verify_chunk(fc, k, data_why, sizeof(data_why))) {
		u64 ino = le64_to_cpu(k->inode), start = bfs_bkey_start(k) << BFS_SECTOR_SHIFT;
		struct bfs_fsck_loc loc = fsck_file_loc(fc, ino, start, k);

		if (bfs_fix_problem_at(fc->f, PR_EXTENT_GEN_WRONG, &loc,
				       "inode %llu (%s) bytes %llu..%llu: pointer generation %u, "
				       "bucket %llu generation %u", (unsigned long long)ino, loc.path,
				       (unsigned long long)start,
				       (unsigned long long)le64_to_cpu(k->offset) << BFS_SECTOR_SHIFT,
				       gen, (unsigned long long)b, bi->gen)) {
			int ret = set_ptr_gen(fc, k, bi->gen);

			fsck_repair(fc, PR_EXTENT_GEN_WRONG, ret);
			if (!ret)
				bi->live += bfs_bkey_size(k);
		}
		return;
	}
	snprintf(why, sizeof(why), "pointer generation %u, bucket generation %u, and %s", gen,
		 bi->gen, data_why[0] ? data_why : "it has no checksum to verify its data");
	drop(ac, PR_EXTENT_STALE, k, b, why);
}

static int count_extents(struct alloc_check *ac)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, ac->fc->c, BFS_BTREE_EXTENTS, BFS_POS_MIN, BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		fsck_sweep_progress(ac->fc, le64_to_cpu(k->inode));
		count_extent(ac, k);
	}
	bfs_btree_iter_exit(&it);
	fsck_sweep_done(ac->fc);
	return ret;
}

static int write_key(struct fs_check *fc, u64 b, u32 gen, u64 live)
{
	u64 buf[BFS_BKEY_U64S + BFS_ALLOC_VAL_U64S];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_alloc_v *v = bfs_bkey_val(k);

	bfs_bkey_init(k, BFS_KEY_ALLOC, BFS_POS(b, 0, 0), BFS_ALLOC_VAL_U64S);
	memset(v, 0, sizeof(*v));
	v->gen = cpu_to_le32(gen);
	v->data_type = live ? BFS_BUCKET_USER : BFS_BUCKET_FREE;
	v->live_sectors = cpu_to_le64(live);
	return bfs_btree_insert(fc->c, BFS_BTREE_ALLOC, k);
}

static void check_bucket(struct alloc_check *ac, u64 b)
{
	struct bucket_info *bi = &ac->b[b];
	struct bfs_fsck_loc loc = bucket_loc(b);
	struct fs_check *fc = ac->fc;
	enum bfs_problem_code code;
	bool fix = false;
	u32 gen = bi->key_gen;
	int ret;

	if (!bi->has_key) {
		if (!bi->live)
			return;
		code = PR_ALLOC_MISSING;
		fix = bfs_fix_problem_at(fc->f, code, &loc, "bucket %llu: %llu live sectors of generation %u",
				      (unsigned long long)b, (unsigned long long)bi->live, bi->gen);
		gen = bi->gen;
	} else {
		bool type_ok = bi->key_type == (bi->live ? BFS_BUCKET_USER : BFS_BUCKET_FREE);

		/* reported by choose_gens(); fixed with the rest of the key */
		code = PR_ALLOC_GEN_WRONG;
		if (bi->fix_gen) {
			fix = true;
			gen = bi->gen;
		}
		if (!bi->live && (bi->key_live || !type_ok)) {
			code = PR_ALLOC_LEAKED;
			fix |= bfs_fix_problem_at(fc->f, code, &loc, "bucket %llu: alloc key says %llu live sectors",
					       (unsigned long long)b,
					       (unsigned long long)bi->key_live);
		} else if (bi->live && (bi->live != bi->key_live || !type_ok)) {
			code = PR_ALLOC_COUNT_WRONG;
			fix |= bfs_fix_problem_at(fc->f, code, &loc,
					       "bucket %llu: alloc key says %llu live sectors (%s), "
					       "pointers into it hold %llu", (unsigned long long)b,
					       (unsigned long long)bi->key_live,
					       bi->key_type == BFS_BUCKET_USER ? "user data" : "free",
					       (unsigned long long)bi->live);
		}
	}
	if (!fix)
		return;
	ret = write_key(fc, b, gen, bi->live);
	if (!ret)
		ret = bfs_fs_bucket_adopt(fc->fs, b, gen, bi->live);
	fsck_repair(fc, code, ret);
}

/* a mapping cannot be empty; the superblock's checks bound nbuckets */
static size_t table_bytes(const struct alloc_check *ac)
{
	return (size_t)BFS_MAX(ac->nbuckets, (u64)1) * sizeof(*ac->b);
}

int fsck_check_alloc(struct fs_check *fc)
{
	const struct bfs_sb *sb = bfs_core_sb(fc->c);
	struct alloc_check ac = {
		.fc = fc,
		.first = le64_to_cpu(sb->first_bucket),
		.nbuckets = le64_to_cpu(sb->nbuckets),
		.bucket_size = le32_to_cpu(sb->bucket_size),
	};
	u64 b;
	int ret;

	/*
	 * A mapping of its own (40 bytes a bucket, 0.3 MB at 200k files): only
	 * the buckets with a key or a pointer into them are written, the sweeps
	 * over the rest read zero pages, so only their share is resident;
	 * calloc() may hand back heap pages it must clear, every one of them.
	 */
	ac.b = bfs_map_anon(table_bytes(&ac));
	if (!ac.b)
		return -ENOMEM;
	ret = mark_metadata(&ac);
	if (!ret)
		ret = load_keys(&ac);
	/* the extent check drops first: what it drops is not counted in the buckets */
	if (!ret)
		ret = fsck_check_extents(fc, survey_extent, &ac);
	if (!ret) {
		choose_gens(&ac);
		ret = count_extents(&ac);
	}
	for (b = ac.first; !ret && b < ac.nbuckets; b++) {
		fsck_sweep_progress_of(fc, b, ac.nbuckets);
		check_bucket(&ac, b);
	}
	if (!ret)
		fsck_sweep_done(fc);
	bfs_unmap(ac.b, table_bytes(&ac));
	return ret;
}
