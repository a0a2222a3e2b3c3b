// SPDX-License-Identifier: MIT
/*
 * Opening, closing and formatting the core (see core.h).
 *
 * Open: superblock -> clean section roots -> journal (replay unless clean)
 * -> allocator state rebuilt by walking the interior nodes of every btree
 * (every reachable node's slot is in use) -> replayed keys applied ->
 * checkpoint.  A read-write open clears BFS_SB_CLEAN on disk before anything
 * else is written, so a crash from then on is followed by replay.
 */
#include <stdarg.h>
#include <stdio.h>

#include "../btree/internal.h"


#define CLEAN_U64S	((sizeof(struct bfs_sb_field) + sizeof(struct bfs_sb_clean) + \
			  BFS_BTREE_NR * sizeof(struct bfs_btree_ptr)) / 8)

static void fill_clean(struct bfs_sb_clean *cl, u64 jseq, const struct bfs_btree_ptr *roots)
{
	unsigned i;

	cl->journal_seq = cpu_to_le64(jseq);
	cl->nr_roots = cpu_to_le32(BFS_BTREE_NR);
	cl->flags = cpu_to_le32(0);
	for (i = 0; i < BFS_BTREE_NR; i++)
		cl->roots[i] = roots[i];
}

static int put_clean(struct bfs_sb *sb, u64 jseq, const struct bfs_btree_ptr *roots)
{
	struct bfs_sb_field *f = bfs_sb_field_resize(sb, BFS_SB_FIELD_CLEAN, CLEAN_U64S);

	if (!f)
		return -ENOSPC;
	fill_clean((struct bfs_sb_clean *)f->data, jseq, roots);
	return 0;
}

int bfs_core_write_clean(struct bfs_core *c, bool set_clean)
{
	struct bfs_btree_ptr roots[BFS_BTREE_NR];
	struct bfs_sb *sb = c->sbh.sb;
	unsigned i;
	int ret;

	bfs_mutex_lock(&c->roots_lock);
	for (i = 0; i < BFS_BTREE_NR; i++)
		roots[i] = c->trees[i].disk;
	bfs_mutex_unlock(&c->roots_lock);
	ret = put_clean(sb, c->j ? bfs_journal_durable_seq(c->j) : c->clean_jseq, roots);
	if (ret)
		return ret;
	if (set_clean)
		sb->flags = cpu_to_le32(le32_to_cpu(sb->flags) | BFS_SB_CLEAN);
	else
		sb->flags = cpu_to_le32(le32_to_cpu(sb->flags) & ~BFS_SB_CLEAN);
	return bfs_sb_write(c->dev, sb);
}

/* ---- format ---- */

/* take every bucket of @avoid away from the node allocator */
static int avoid_buckets(struct bfs_alloc *a, const struct bfs_alloc_geom *g, const u64 *avoid)
{
	u64 b;

	for (b = g->first_bucket; avoid && b < g->nbuckets; b++) {
		if (!(avoid[b / 64] & (UINT64_C(1) << (b % 64))))
			continue;
		if (b >= g->journal_bucket && b < g->journal_bucket + g->journal_nbuckets)
			return -EINVAL;
		if (bfs_alloc_bucket_get(a, b))
			return -EBUSY;
	}
	return 0;
}

int bfs_core_format(struct bfs_dev *dev, struct bfs_sb *sb)
{
	return bfs_core_format_avoid(dev, sb, NULL);
}

int bfs_core_format_avoid(struct bfs_dev *dev, struct bfs_sb *sb, const u64 *avoid)
{
	struct bfs_btree_ptr roots[BFS_BTREE_NR];
	struct bfs_alloc_geom g = {
		.bucket_size = le32_to_cpu(sb->bucket_size),
		.first_bucket = le64_to_cpu(sb->first_bucket),
		.nbuckets = le64_to_cpu(sb->nbuckets),
		.journal_bucket = le64_to_cpu(sb->journal_bucket),
		.journal_nbuckets = le32_to_cpu(sb->journal_nbuckets),
		.node_size = le32_to_cpu(sb->btree_node_size),
	};
	struct bfs_core *c;
	unsigned id;
	int ret;

	c = bfs_zalloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dev = dev;
	c->node_size = g.node_size;
	c->block_size = le32_to_cpu(sb->block_size);
	c->csum_type = sb->csum_type;
	c->node_id = bfs_sb_node_id(sb);
	ret = bfs_random_bytes(&c->node_seq_next, sizeof(c->node_seq_next));
	if (!ret)
		ret = bfs_alloc_init(&g, &c->alloc);
	if (!ret)
		ret = avoid_buckets(c->alloc, &g, avoid);
	for (id = 0; id < BFS_BTREE_NR && !ret; id++) {
		struct btree_node *n = bfs_node_alloc(c);
		u64 buf[BFS_BTREE_PTR_KEY_U64S];

		if (!n) {
			ret = -ENOMEM;
			break;
		}
		n->btree_id = (u8)id;
		n->min = BFS_POS_MIN;
		n->max = BFS_POS_MAX;
		n->seq = bfs_new_node_seq(c);
		ret = bfs_alloc_node(c->alloc, &n->offset);
		if (!ret)
			ret = bfs_node_write(c, n);
		if (!ret) {
			bfs_node_ptr(n, (struct bfs_bkey *)buf);
			roots[id] = *bkey_ptr_val((struct bfs_bkey *)buf);
		}
		bfs_node_free(c, n);
	}
	if (!ret)
		ret = bfs_dev_flush(dev);
	if (!ret)
		ret = put_clean(sb, 0, roots);
	bfs_alloc_exit(c->alloc);
	bfs_free(c);
	return ret;
}

/* ---- open ---- */

static int mark_tree(struct bfs_core *c, u8 id, struct btree_node *n)
{
	u32 i;
	int ret = 0;

	for (i = 0; i < n->nr && !ret && n->level; i++) {
		const struct bfs_bkey *k = node_key(n, i);
		u64 off;

		if (bfs_bkey_deleted(k))
			continue;
		off = le64_to_cpu(bkey_ptr_val(k)->offset);
		ret = bfs_alloc_mark_used(c->alloc, off);
		if (ret) {
			bfs_core_note_damage(c, id, ret == -EEXIST ? PR_BTREE_PTR_SHARED :
					     PR_BTREE_PTR_OUTSIDE,
					     "btree %s level %u node at %llu: child pointer to %llu %s",
					     bfs_btree_id_name(id), n->level,
					     (unsigned long long)n->offset, (unsigned long long)off,
					     ret == -EEXIST ? "points to a node that is already in use"
							    : "is outside the metadata area");
			return -EUCLEAN;
		}
		if (n->level > 1) {
			struct btree_node *child;

			ret = bfs_cache_get(c, id, k, &child);
			if (!ret) {
				ret = mark_tree(c, id, child);
				bfs_cache_put(c, child);
			}
		}
	}
	return ret;
}

static int load_roots(struct bfs_core *c, const struct bfs_btree_ptr *jroots, const bool *have)
{
	unsigned id;
	int ret = 0;

	for (id = 0; id < BFS_BTREE_NR && !ret; id++) {
		u64 buf[BFS_BTREE_PTR_KEY_U64S];
		struct bfs_bkey *k = (struct bfs_bkey *)buf;
		struct bfs_btree_ptr *p = (struct bfs_btree_ptr *)k->v;

		if (have && have[id])
			c->trees[id].disk = jroots[id];
		bfs_bkey_init(k, BFS_KEY_BTREE_PTR, BFS_POS_MAX, BFS_BTREE_PTR_VAL_U64S);
		*p = c->trees[id].disk;
		if (p->btree_id != id || p->level >= BFS_BTREE_MAX_DEPTH ||
		    !bfs_bpos_eq(bfs_bpos_from_disk(&p->min_key), BFS_POS_MIN)) {
			bfs_core_note_damage(c, (u8)id, PR_BTREE_ROOT_BAD, "btree %s: bad root pointer",
					     bfs_btree_id_name(id));
			ret = -EUCLEAN;
		} else if (bfs_alloc_mark_used(c->alloc, le64_to_cpu(p->offset))) {
			bfs_core_note_damage(c, (u8)id, PR_BTREE_ROOT_BAD,
					     "btree %s: root node at %llu is outside the metadata "
					     "area or shared", bfs_btree_id_name(id),
					     (unsigned long long)le64_to_cpu(p->offset));
			ret = -EUCLEAN;
		} else {
			ret = bfs_cache_get(c, (u8)id, k, &c->trees[id].node);
			if (ret == -EUCLEAN || (ret && c->opts.salvage)) {
				/* name what is wrong with it, as for any other node */
				struct bfs_btree_node_info ni;

				bfs_node_explain(c, (u8)id, k, ret, &ni);
				bfs_core_note_damage(c, (u8)id, ni.code ? ni.code : PR_BTREE_ROOT_BAD,
						     "btree %s: the root node at %llu cannot be read: %s",
						     bfs_btree_id_name(id),
						     (unsigned long long)le64_to_cpu(p->offset), ni.err);
			}
			if (!ret)
				ret = mark_tree(c, (u8)id, c->trees[id].node);
		}
		/*
		 * The allocator only matters for writing: a read-only open of a
		 * damaged tree goes on so tools can look at what is readable, and
		 * a salvage open goes on so fsck can rebuild the tree.
		 */
		if (ret == -EUCLEAN && c->opts.salvage) {
			c->trees[id].damaged = true;
			ret = 0;
		}
		if (ret == -EUCLEAN && c->read_only && c->trees[id].node)
			ret = 0;
	}
	return ret;
}

static int read_clean(struct bfs_core *c, u64 *jseq)
{
	struct bfs_sb_field *f = bfs_sb_field_get(c->sbh.sb, BFS_SB_FIELD_CLEAN);
	const struct bfs_sb_clean *cl;
	unsigned i;

	if (!f || le32_to_cpu(f->u64s) < CLEAN_U64S) {
		bfs_err("superblock has no valid clean section (btree roots): not formatted by this version?");
		return -EUCLEAN;
	}
	cl = (const void *)f->data;
	if (le32_to_cpu(cl->nr_roots) < BFS_BTREE_NR) {
		bfs_err("superblock clean section has %u btree roots, need %u",
			le32_to_cpu(cl->nr_roots), BFS_BTREE_NR);
		return -EUCLEAN;
	}
	for (i = 0; i < BFS_BTREE_NR; i++)
		c->trees[i].disk = cl->roots[i];
	*jseq = le64_to_cpu(cl->journal_seq);
	return 0;
}

bool bfs_core_btree_damaged(struct bfs_core *c, unsigned id)
{
	return id < BFS_BTREE_NR && c->trees[id].damaged;
}

void bfs_core_note_damage(struct bfs_core *c, u8 id, unsigned code, const char *fmt, ...)
{
	struct btree_root *t = &c->trees[id];
	char what[sizeof(t->damage)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!t->damage_code) {
		t->damage_code = (u16)code;
		memcpy(t->damage, what, sizeof(what));
	}
	if (!c->opts.salvage)	/* fsck reports it as a finding */
		bfs_err("%s", what);
}

int bfs_core_note_rebuild(struct bfs_core *c, unsigned id, bool lost_data)
{
	struct bfs_sb_field *f = bfs_sb_field_get(c->sbh.sb, BFS_SB_FIELD_REPAIR);
	u32 u64s = (u32)((sizeof(*f) + sizeof(struct bfs_sb_repair)) / 8);
	struct bfs_sb_repair *r;

	if (id >= BFS_BTREE_NR)
		return -EINVAL;
	if (!f || le32_to_cpu(f->u64s) < u64s)
		f = bfs_sb_field_resize(c->sbh.sb, BFS_SB_FIELD_REPAIR, u64s);
	if (!f)
		return -ENOSPC;
	r = (struct bfs_sb_repair *)f->data;
	if (lost_data)
		r->btrees_lost_data = cpu_to_le32(le32_to_cpu(r->btrees_lost_data) | 1U << id);
	r->nr_rebuilds = cpu_to_le64(le64_to_cpu(r->nr_rebuilds) + 1);
	r->last_rebuild = cpu_to_le64(bfs_realtime_ns() / 1000000000u);
	return 0;
}

bool bfs_core_btree_damage(struct bfs_core *c, unsigned id, unsigned *code, const char **what)
{
	if (id >= BFS_BTREE_NR || !c->trees[id].damage_code)
		return false;
	*code = c->trees[id].damage_code;
	*what = c->trees[id].damage;
	return true;
}

bool bfs_core_any_damaged(struct bfs_core *c)
{
	unsigned id;

	for (id = 0; id < BFS_BTREE_NR; id++)
		if (c->trees[id].damaged)
			return true;
	return false;
}

static void core_free(struct bfs_core *c)
{
	unsigned id;

	bfs_readahead_stop(c);
	bfs_ckpt_thread_stop(c);
	if (c->j)
		bfs_journal_close(c->j);
	for (id = 0; id < BFS_BTREE_NR; id++) {
		if (c->trees[id].node)
			bfs_cache_put(c, c->trees[id].node);
		bfs_free(c->trees[id].stash);
		bfs_rwlock_destroy(&c->trees[id].root_lock);
	}
	bfs_cache_exit(c);
	bfs_alloc_exit(c->alloc);
	bfs_sb_handle_release(&c->sbh);
	bfs_rwlock_destroy(&c->commit_lock);
	bfs_mutex_destroy(&c->roots_lock);
	bfs_cond_destroy(&c->ck_wait);
	bfs_mutex_destroy(&c->ck_lock);
	bfs_free(c);
}

/*
 * A writer starts: a crash from here on must lead to replay (the clean flag
 * goes), what the open replayed is checkpointed, a salvaged or stale
 * journal is erased, and the journal's threads start.  @clean: the
 * superblock said so at open.
 */
static int start_writes(struct bfs_core *c, bool clean)
{
	struct bfs_sb *sb = c->sbh.sb;
	int ret = 0;

	/*
	 * From here on a crash must lead to replay.  Without the journal
	 * the clean section itself is what every checkpoint updates, so
	 * the flag stays (and old journal entries stay ignored).
	 */
	/* garbage in the journal of a clean filesystem: nothing needs it */
	if (clean && c->j && bfs_journal_needs_reset(c->j)) {
		bfs_warn("journal: erasing entries nothing needs (clean shutdown at seq %llu)",
			 (unsigned long long)c->clean_jseq);
		ret = bfs_journal_reset(c->j);
		if (ret)
			return ret;
	}
	if (clean && c->j) {
		sb->flags = cpu_to_le32(le32_to_cpu(sb->flags) & ~BFS_SB_CLEAN);
		ret = bfs_sb_write(c->dev, sb);
		if (ret)
			return ret;
	}
	if (c->j) {
		bfs_journal_set_reclaim(c->j, bfs_core_reclaim_hook, c);
		bfs_journal_set_pre_write(c->j, bfs_core_pre_write_hook, c,
					  BFS_BTREE_NR * (1 + BFS_BTREE_PTR_VAL_U64S));
	}
	/* a damaged tree is rebuilt first: the journal must keep its keys */
	if ((c->replayed || !clean) && !bfs_core_any_damaged(c))
		ret = bfs_core_checkpoint(c);
	/*
	 * A salvaged journal still holds what was discarded: once the
	 * replayed state is in the nodes and the clean section names
	 * them, nothing needs the journal, and it is erased so the next
	 * open does not meet the damage again.
	 */
	if (!ret && !clean && c->j && bfs_journal_needs_reset(c->j))
		ret = bfs_core_write_clean(c, false);
	if (!ret && !clean && c->j && bfs_journal_needs_reset(c->j))
		ret = bfs_journal_reset(c->j);
	/* full journal entries and the checkpoints commits ask for: own threads */
	if (!ret && c->j)
		ret = bfs_journal_start_flusher(c->j) ?: bfs_ckpt_thread_start(c);
	return ret;
}

static int core_open(struct bfs_dev *dev, const struct bfs_core_opts *opts, struct bfs_core **out)
{
	static const struct bfs_core_opts defaults;
	struct bfs_alloc_geom g;
	struct bfs_core *c;
	struct bfs_sb *sb;
	char err[BFS_ERR_LEN];
	u64 clean_seq = 0;
	bool clean, replayed = false;
	unsigned id;
	int ret;

	c = bfs_zalloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dev = dev;
	c->opts = opts ? *opts : defaults;
	bfs_rwlock_init_writer_first(&c->commit_lock);
	bfs_mutex_init(&c->roots_lock);
	bfs_mutex_init(&c->ck_lock);
	bfs_cond_init(&c->ck_wait);
	for (id = 0; id < BFS_BTREE_NR; id++)
		bfs_rwlock_init(&c->trees[id].root_lock);

	ret = bfs_sb_read(dev, &c->sbh, err);
	if (ret) {
		bfs_err("%s", err);
		bfs_free(c);	/* nothing else set up yet */
		return ret;
	}
	sb = c->sbh.sb;
	/* info, not a warning: fsck reports it as a problem, other tools say it once */
	if (c->sbh.used_backup)
		bfs_info("primary superblock is invalid (%s); using backup copy %u at offset %llu",
			 c->sbh.primary_err, c->sbh.copy, (unsigned long long)c->sbh.offset);
	c->read_only = c->opts.read_only || c->opts.no_replay || bfs_dev_is_readonly(dev);
	/* unknown ro_compat features: readers may go on, a writer must not start */
	if (!c->read_only) {
		ret = bfs_sb_check_writable(sb, err);
		if (ret) {
			bfs_err("%s", err);
			bfs_sb_handle_release(&c->sbh);
			bfs_free(c);
			return ret;
		}
	}
	c->block_size = le32_to_cpu(sb->block_size);
	c->node_size = le32_to_cpu(sb->btree_node_size);
	c->bucket_size = le32_to_cpu(sb->bucket_size);
	c->csum_type = sb->csum_type;
	c->node_id = bfs_sb_node_id(sb);
	memcpy(c->uuid, sb->uuid, 16);
	clean = le32_to_cpu(sb->flags) & BFS_SB_CLEAN;
	c->allow_torn = !clean || c->opts.no_journal;

	g = (struct bfs_alloc_geom){
		.bucket_size = c->bucket_size,
		.first_bucket = le64_to_cpu(sb->first_bucket),
		.nbuckets = le64_to_cpu(sb->nbuckets),
		.journal_bucket = le64_to_cpu(sb->journal_bucket),
		.journal_nbuckets = le32_to_cpu(sb->journal_nbuckets),
		.node_size = c->node_size,
	};
	ret = bfs_alloc_init(&g, &c->alloc);
	if (!ret)
		ret = avoid_buckets(c->alloc, &g, c->opts.avoid_buckets);
	if (!ret)
		ret = bfs_cache_init(c, c->opts.cache_bytes ?: BFS_CORE_DEFAULT_CACHE);
	if (!ret)
		ret = bfs_random_bytes(&c->node_seq_next, sizeof(c->node_seq_next));
	if (!ret)
		ret = read_clean(c, &clean_seq);
	if (ret)
		goto err;
	c->clean_jseq = clean_seq;

	if (!c->opts.no_journal && g.journal_nbuckets && !c->opts.no_replay) {
		struct bfs_journal_geom jg;

		bfs_journal_geom_from_sb(sb, dev, &jg);
		ret = bfs_journal_open(&jg, &c->j);
		if (ret) {
			bfs_err("cannot open the journal: error %d", ret);
			goto err;
		}
		c->journal_capacity = (u64)jg.nbuckets * jg.bucket_size;
		ret = bfs_core_journal_start(c, clean_seq, !clean, load_roots, &replayed);
	} else {
		ret = load_roots(c, NULL, NULL);
		if (!ret && c->opts.space_init)
			ret = c->opts.space_init(c->opts.space_ctx, c);
	}
	if (ret)
		goto err;

	c->replayed = replayed;
	if (!c->read_only) {
		ret = start_writes(c, clean);
		if (ret)
			goto err;
	}
	bfs_readahead_start(c);
	*out = c;
	return 0;
err:
	core_free(c);
	return ret;
}

int bfs_core_make_writable(struct bfs_core *c)
{
	char err[BFS_ERR_LEN];
	bool clean = le32_to_cpu(c->sbh.sb->flags) & BFS_SB_CLEAN;
	int ret;

	if (!c->read_only)
		return 0;
	/* what a writable open would have refused, or not done (no replay) */
	if (c->opts.no_replay || bfs_dev_is_readonly(c->dev) || core_fatal(c) ||
	    bfs_core_any_damaged(c))
		return -EROFS;
	ret = bfs_sb_check_writable(c->sbh.sb, err);
	if (ret) {
		bfs_err("%s", err);
		return ret;
	}
	/* read-ahead loads nodes: none may miss the flag below */
	bfs_readahead_stop(c);
	c->read_only = false;
	c->opts.read_only = false;
	/* nothing is damaged: from now on an ordinary writable core */
	c->opts.salvage = false;
	c->opts.space_init = NULL;
	c->opts.space_replay_key = NULL;
	c->opts.space_ctx = NULL;
	c->opts.journal_finding = NULL;	/* the open's callers' (fsck's stack) */
	c->opts.journal_finding_ctx = NULL;
	bfs_cache_seal_torn(c);
	ret = start_writes(c, clean);
	if (ret)
		bfs_core_stop_writes(c, ret, "making the filesystem writable failed");
	bfs_readahead_start(c);
	return ret;
}

int bfs_core_flush(struct bfs_core *c)
{
	int ret = bfs_core_check_writable(c);

	if (ret)
		return ret == -EROFS && c->read_only && !core_fatal(c) ? 0 : ret;
	if (!c->j)
		return bfs_core_checkpoint(c);
	/* fsync: commit_lock only when a checkpoint is due (it snapshots, the thread writes) */
	if (bfs_core_checkpoint_due(c)) {
		bfs_commit_lock(c);
		ret = bfs_core_maybe_checkpoint(c);
		bfs_commit_unlock(c);
	}
	return ret ?: bfs_journal_flush(c->j);
}

int bfs_core_flush_seq(struct bfs_core *c, u64 seq)
{
	int ret = bfs_core_check_writable(c);

	if (ret)
		return ret == -EROFS && c->read_only && !core_fatal(c) ? 0 : ret;
	if (!c->j)
		return bfs_core_checkpoint(c);
	/* entries are written in order: a seq already durable needs no I/O */
	if (seq && seq <= bfs_journal_durable_seq(c->j))
		return 0;
	return bfs_journal_flush_seq(c->j, seq);
}

/* opens of the core in this process: tests count fsck's (one for every pass) */
static u64 core_opens;

u64 bfs_core_open_count(void)
{
	return __atomic_load_n(&core_opens, __ATOMIC_RELAXED);
}

int bfs_core_open(struct bfs_dev *dev, const struct bfs_core_opts *opts, struct bfs_core **out)
{
	bool quiet = bfs_btree_quiet;
	int ret;

	__atomic_add_fetch(&core_opens, 1, __ATOMIC_RELAXED);

	/* fsck's salvage opens: what is damaged comes back as findings, not log lines */
	if (opts && opts->salvage)
		bfs_btree_quiet = true;
	ret = core_open(dev, opts, out);
	bfs_btree_quiet = quiet;
	return ret;
}

int bfs_core_close(struct bfs_core *c)
{
	int ret = 0;

	if (!c)
		return 0;
	bfs_readahead_stop(c);
	if (!c->read_only && !core_fatal(c) && bfs_core_any_damaged(c)) {
		/* a salvage open that did not rebuild: leave the device as it was */
		ret = -EUCLEAN;
	} else if (!c->read_only && !core_fatal(c)) {
		ret = bfs_core_checkpoint(c);
		if (!ret)
			ret = bfs_core_write_clean(c, true);
	} else if (core_fatal(c)) {
		ret = core_fatal(c);
	}
	core_free(c);
	return ret;
}

const struct bfs_sb *bfs_core_sb(struct bfs_core *c) { return c->sbh.sb; }
struct bfs_alloc *bfs_core_alloc(struct bfs_core *c) { return c->alloc; }
bool bfs_core_is_read_only(struct bfs_core *c) { return c->read_only; }

unsigned bfs_core_max_depth(struct bfs_core *c)
{
	unsigned id, depth = 1;

	for (id = 0; id < BFS_BTREE_NR; id++) {
		struct btree_root *r = &c->trees[id];

		bfs_read_lock(&r->root_lock);
		if (r->node)
			depth = BFS_MAX(depth, r->node->level + 1u);
		bfs_rwlock_unlock(&r->root_lock);
	}
	return depth;
}
struct bfs_dev *bfs_core_dev(struct bfs_core *c) { return c->dev; }

void bfs_core_get_stats(struct bfs_core *c, struct bfs_core_stats *s)
{
	const u64 *from = (const u64 *)&c->stats;
	u64 *to = (u64 *)s;
	size_t i;

	/* counters other threads bump (STAT_INC) as this reads them */
	for (i = 0; i < sizeof(*s) / sizeof(u64); i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
	bfs_mutex_lock(&c->cache.lock);
	s->cache_bytes = c->cache.bytes;
	s->cache_budget = c->cache.budget;
	s->cache_nodes = c->cache.nr;
	s->cache_dirty_nodes = c->cache.nr_dirty;
	bfs_mutex_unlock(&c->cache.lock);
	s->meta_slots_total = bfs_alloc_nr_total(c->alloc);
	s->meta_slots_used = s->meta_slots_total - bfs_alloc_nr_free(c->alloc);
}
