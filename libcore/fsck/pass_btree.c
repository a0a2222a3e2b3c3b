// SPDX-License-Identifier: MIT
/*
 * Pass 1: the btrees.
 *
 * Check: the core is opened read-only in salvage mode (replaying the
 * journal in memory; a damaged btree does not stop the open; pass 1a may
 * have opened it already, fsck_btree_open_first(); the filesystem layer's
 * space hooks run too, so that pass 2 goes on with this same core, made
 * writable for -y: fs_check.h, struct fsck_early) and every
 * btree is checked completely (bfs_btree_check: node checksums and
 * contents, child pointers, ranges tiling their parent, key order).  Each
 * problem is one finding with its location.
 *
 * Repair of a damaged btree (bcachefs' btree node scan + topology repair,
 * done as one rebuild): the device is scanned for btree nodes, the core is
 * reopened writable in salvage mode with every slot and data bucket that
 * anything on the device points to protected from allocation, and each
 * damaged btree is rebuilt from its readable leaves plus the newest scanned
 * leaves for the ranges they do not cover (bfs_btree_rebuild).  What no node
 * holds is reported as lost; later passes report it as files.  The new trees
 * become durable at one checkpoint: a crash before it leaves the old tree
 * and the journal as they were, and the next fsck does the same repair.
 * With -n the same plan is made and reported without writing anything.
 */
#include <bfs/btree.h>
#include <bfs/btree_repair.h>
#include <bfs/btree_scan.h>
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/log.h>
#include <bfs/os.h>

#include <string.h>

#include "fs_check.h"
#include "fsck_passes.h"

struct btree_check {
	struct bfs_fsck *f;
	bool	damaged[BFS_BTREE_NR];
	bool	fix[BFS_BTREE_NR];	/* a repair of this btree was agreed to */
	unsigned cur;			/* btree whose findings are coming in */
	u64	nodes, nr_nodes;	/* progress: nodes checked of the node slots in use */
	struct bfs_scanned_node *cands;
	size_t	nr_cands, cap_cands;
	struct bfs_node_scan_geom geom;
	u64	*buckets;		/* data buckets found in scanned extents/alloc keys */
	size_t	nr_buckets, cap_buckets;
};

static void take_finding(void *ctx, const struct bfs_finding *fd)
{
	struct btree_check *bc = ctx;
	unsigned id = fd->loc.btree >= 0 && fd->loc.btree < BFS_BTREE_NR ? (unsigned)fd->loc.btree :
		bc->cur;

	bc->damaged[id] = true;
	if (bfs_fix_finding(bc->f, fd))
		bc->fix[id] = true;
}

static int open_core(struct bfs_fsck *f, bool writable, struct bfs_core_opts *opts,
		     struct bfs_core **c)
{
	int ret;

	/* a damaged journal whose repair was declined: nothing may be written */
	opts->read_only = !writable || f->journal_salvage;
	opts->salvage_journal = f->journal_salvage;
	opts->journal_finding = bfs_fsck_journal_decided;
	opts->salvage = true;
	opts->cache_bytes = f->cache_bytes ?: 256 * MiB;
	ret = bfs_core_open(f->dev, opts, c);
	if (ret != -EUCLEAN || writable)
		return ret;
	/* without replay pass 2 opens for itself: no layer to prepare */
	opts->space_init = NULL;
	opts->space_replay_key = NULL;
	opts->space_ctx = NULL;
	opts->no_replay = true;
	ret = bfs_core_open(f->dev, opts, c);
	if (!ret)
		bfs_fix_problem(f, PR_JOURNAL_UNREPLAYABLE,
				"the journal cannot be replayed (see above); checking the "
				"btrees as of the last clean shutdown");
	return ret;
}

/* ---- pass 1a's read of the journal, by this pass's open ---- */

/* libcore's messages during an open that may be thrown away: level byte, text, NUL */
struct held_log {
	char	*buf;
	size_t	len, cap;
	bool	lost;		/* no memory for one: the open is not kept */
};

static void hold(enum bfs_log_level level, const char *msg, void *ctx)
{
	struct held_log *h = ctx;
	size_t n = strlen(msg) + 2;

	if (h->len + n > h->cap) {
		size_t cap = BFS_MAX(h->cap * 2, h->len + n + 1024);
		char *b = bfs_realloc(h->buf, cap);

		if (!b) {
			h->lost = true;
			return;
		}
		h->buf = b;
		h->cap = cap;
	}
	h->buf[h->len] = (char)level;
	memcpy(h->buf + h->len + 1, msg, n - 1);
	h->len += n;
}

/* what the open said, said now, as pass 1's own open would have */
static void say_held(char *buf, size_t len)
{
	bfs_log_fn hook;
	void *hook_ctx;
	size_t i;

	bfs_log_get_hook(&hook, &hook_ctx);
	for (i = 0; hook && i < len; i += strlen(buf + i + 1) + 2)
		hook((enum bfs_log_level)buf[i], buf + i + 1, hook_ctx);
	bfs_free(buf);
}

struct first_findings {
	bfs_finding_fn fn;
	void	*ctx;
	unsigned nr;
};

static void first_finding(void *ctx, const struct bfs_finding *fd)
{
	struct first_findings *ff = ctx;

	ff->nr++;
	ff->fn(ff->ctx, fd);
}

int fsck_btree_open_first(struct bfs_fsck *f, bfs_finding_fn fn, void *ctx)
{
	struct bfs_core_opts opts = { 0 };
	struct held_log held = { 0 };
	struct first_findings ff = { .fn = fn, .ctx = ctx };
	struct bfs_core *c;
	bfs_log_fn hook;
	void *hook_ctx;
	int ret;

	fsck_early_free(f->early);
	f->early = fsck_early_new(f);
	if (!f->early)
		return 0;
	/* pass 2 goes on with this core, with -n too: it replays as a mount does */
	fsck_early_prepare(f->early, &opts);
	/*
	 * As pass 1 opens (open_core()), with a sound journal or with one
	 * whose damage is left as it is (salvage: the consistent prefix
	 * replayed, which is all a sound journal is); the findings go to @fn,
	 * as bfs_core_check_journal() would give them.
	 */
	opts.read_only = true;
	opts.salvage = true;
	opts.salvage_journal = true;
	opts.cache_bytes = f->cache_bytes ?: 256 * MiB;
	opts.journal_finding = first_finding;
	opts.journal_finding_ctx = &ff;
	bfs_log_get_hook(&hook, &hook_ctx);
	bfs_log_set_hook(hold, &held);
	ret = bfs_core_open(f->dev, &opts, &c);
	bfs_log_set_hook(hook, hook_ctx);
	if (ret || held.lost) {
		/* pass 1a and 1 go their own ways, and say everything as they go */
		if (!ret)
			bfs_core_close(c);
		fsck_early_free(f->early);
		f->early = NULL;
		bfs_free(held.buf);
		return 0;
	}
	f->early->opened = c;
	if (!ff.nr) {
		say_held(held.buf, held.len);
		return 1;
	}
	/* pass 1a decides first, then this open speaks (fsck_btree_open_keep()) */
	f->early->held = held.buf;
	f->early->held_len = held.len;
	return 1;
}

void fsck_btree_open_keep(struct bfs_fsck *f)
{
	if (!f->early || !f->early->opened)
		return;
	say_held(f->early->held, f->early->held_len);
	f->early->held = NULL;
	f->early->held_len = 0;
}

void fsck_btree_open_drop(struct bfs_fsck *f)
{
	fsck_early_free(f->early);
	f->early = NULL;
}

/* ---- the node scan and what it protects ---- */

static int add_bucket(struct btree_check *bc, u64 bucket)
{
	return fsck_u64_push(&bc->buckets, &bc->nr_buckets, &bc->cap_buckets, bucket);
}

/* data buckets that an extent or alloc key points at: never a place for new nodes */
static int note_data(struct btree_check *bc, unsigned id, const struct bfs_bkey *k)
{
	if (id == BFS_BTREE_EXTENTS && k->type == BFS_KEY_EXTENT &&
	    bfs_bkey_val_u64s(k) >= BFS_EXTENT_VAL_U64S) {
		const struct bfs_extent_v *v = bfs_bkey_val(k);
		u64 off = le64_to_cpu(v->offset);

		if (off && bc->geom.bucket_size)
			return add_bucket(bc, off / bc->geom.bucket_size);
	} else if (id == BFS_BTREE_ALLOC && k->type == BFS_KEY_ALLOC &&
		   bfs_bkey_val_u64s(k) >= BFS_ALLOC_VAL_U64S) {
		const struct bfs_alloc_v *v = bfs_bkey_val(k);

		if (v->data_type != BFS_BUCKET_FREE || le64_to_cpu(v->live_sectors))
			return add_bucket(bc, le64_to_cpu(k->inode));
	}
	return 0;
}

static int scanned(void *ctx, const struct bfs_scanned_node *n, const void *buf)
{
	struct btree_check *bc = ctx;

	if (bc->nr_cands == bc->cap_cands) {
		size_t cap = bc->cap_cands * 2 + 256;
		struct bfs_scanned_node *a = bfs_realloc(bc->cands, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		bc->cands = a;
		bc->cap_cands = cap;
	}
	bc->cands[bc->nr_cands++] = *n;
	if (n->header_ok && !n->level &&
	    (n->btree_id == BFS_BTREE_EXTENTS || n->btree_id == BFS_BTREE_ALLOC)) {
		struct bfs_salvaged sv;
		u32 i;
		int ret = bfs_node_salvage(&bc->geom, buf, n, NULL, NULL, &sv);

		for (i = 0; !ret && i < sv.nr; i++)
			ret = note_data(bc, n->btree_id, sv.k[i]);
		bfs_salvaged_free(&sv);
		return ret;
	}
	return 0;
}

static int scan(struct bfs_fsck *f, struct btree_check *bc)
{
	u64 read_errors = 0;
	int ret;

	bfs_node_scan_geom_from_sb(f->sb.sb, &bc->geom);
	ret = bfs_node_scan(f->dev, &bc->geom, scanned, NULL, bc, &read_errors);
	if (ret)
		return ret;
	if (f->verbose)
		bfs_fsck_printf(f, "node scan: %zu btree nodes found on the device%s", bc->nr_cands,
				read_errors ? " (some slots could not be read)" : "");
	return 0;
}

static int protect(void *ctx, struct bfs_core *c)
{
	struct btree_check *bc = ctx;
	size_t i;

	for (i = 0; i < bc->nr_cands; i++)
		bfs_core_protect_slot(c, bc->cands[i].offset);
	for (i = 0; i < bc->nr_buckets; i++)
		bfs_core_protect_bucket(c, bc->buckets[i]);
	return 0;
}

/* replayed extents point at data too, before any of them is applied */
static int protect_replayed(void *ctx, struct bfs_core *c, unsigned id, const struct bfs_bkey *k)
{
	struct btree_check *bc = ctx;
	size_t from = bc->nr_buckets;
	int ret = note_data(bc, id, k);

	for (; !ret && from < bc->nr_buckets; from++)
		bfs_core_protect_bucket(c, bc->buckets[from]);
	return ret;
}

/* ---- check, plan, repair ---- */

static void node_seen(void *ctx)
{
	struct btree_check *bc = ctx;

	/* the slots in use bound the reachable nodes, unless the tree is damaged */
	if (bc->nodes < bc->nr_nodes)
		bfs_fsck_progress(bc->f, ++bc->nodes, bc->nr_nodes);
}

/* pass 2 collects what it needs from the same walk (early.c) */
static void key_seen(void *ctx, const struct bfs_bkey *k)
{
	struct btree_check *bc = ctx;

	fsck_early_key(bc->f->early, bc->cur, k);
}

static void check_all(struct btree_check *bc, struct bfs_core *c)
{
	struct bfs_core_stats cs;
	unsigned id;

	bfs_core_get_stats(c, &cs);
	bc->nr_nodes = cs.meta_slots_used;
	/* a prepared open's data buckets are not nodes to be walked */
	if (bc->f->early && bc->f->early->node_slots)
		bc->nr_nodes = bc->f->early->node_slots;
	for (id = 0; id < BFS_BTREE_NR; id++) {
		long bad;

		bc->cur = id;
		bad = bfs_btree_check_nodes(c, id, take_finding, node_seen,
					    bc->f->early ? key_seen : NULL, bc);
		if (bad < 0) {
			struct bfs_fsck_loc loc = { .btree = (int)id };

			bc->damaged[id] = true;
			if (bfs_fix_problem_at(bc->f, PR_BTREE_UNREADABLE, &loc, "btree %s: %s",
					       bfs_btree_id_name(id), strerror((int)-bad)))
				bc->fix[id] = true;
		}
		if (bfs_core_btree_damaged(c, id) && !bc->damaged[id]) {
			/* the open met damage the walk does not see (a shared slot, replay) */
			struct bfs_fsck_loc loc = { .btree = (int)id };
			const char *what = "damage found when opening";
			unsigned code = PR_BTREE_REPLAY_BLOCKED;

			bfs_core_btree_damage(c, id, &code, &what);
			bc->damaged[id] = true;
			if (bfs_fix_problem_at(bc->f, (enum bfs_problem_code)code, &loc, "%s", what))
				bc->fix[id] = true;
		}
	}
	bfs_fsck_progress(bc->f, bc->nr_nodes, bc->nr_nodes);
}

static void rebuild_stats(struct bfs_fsck *f, unsigned id, const struct bfs_rebuild_stats *st,
			  bool applied)
{
	bfs_fsck_printf(f, "btree %s %s: %llu readable leaves kept, %llu ranges from scanned "
			"nodes, %llu ranges lost, %llu keys, %llu dropped, %llu journal keys",
			bfs_btree_id_name(id), applied ? "rebuilt" : "would be rebuilt",
			(unsigned long long)st->good_leaves, (unsigned long long)st->scanned_pieces,
			(unsigned long long)st->lost_ranges, (unsigned long long)st->keys,
			(unsigned long long)st->dropped_keys, (unsigned long long)st->stashed_keys);
}

/* with -n (or every repair declined): say what a repair would keep and lose */
static int plan_only(struct btree_check *bc, struct bfs_core *c)
{
	unsigned id;
	int ret = 0;

	for (id = 0; id < BFS_BTREE_NR && !ret; id++) {
		struct bfs_rebuild_stats st;

		if (!bc->damaged[id])
			continue;
		bc->cur = id;
		ret = bfs_btree_rebuild(c, id, bc->cands, bc->nr_cands, false, take_finding, bc, &st);
		if (!ret && bc->f->verbose)
			rebuild_stats(bc->f, id, &st, false);
	}
	return ret;
}

static int repair(struct btree_check *bc)
{
	struct bfs_fsck *f = bc->f;
	struct bfs_core_opts opts = {
		.space_init = protect, .space_replay_key = protect_replayed, .space_ctx = bc,
	};
	struct bfs_core *c;
	unsigned id;
	int ret, r;

	ret = open_core(f, true, &opts, &c);
	if (ret) {
		bfs_fsck_printf(f, "cannot open the btrees for repair: %s", strerror(-ret));
		return ret;
	}
	for (id = 0; id < BFS_BTREE_NR && !ret; id++) {
		struct bfs_rebuild_stats st;

		if (!bc->fix[id] && !bfs_core_btree_damaged(c, id))
			continue;
		bc->cur = id;
		ret = bfs_btree_rebuild(c, id, bc->cands, bc->nr_cands, true, take_finding, bc, &st);
		if (ret)
			bfs_fsck_printf(f, "rebuilding btree %s failed: %s", bfs_btree_id_name(id),
					strerror(-ret));
		else if (f->verbose)
			rebuild_stats(f, id, &st, true);
		/* ranges from scanned nodes may be older versions: that counts as loss */
		if (!ret)
			ret = bfs_core_note_rebuild(c, id, st.lost_ranges || st.scanned_pieces ||
						    st.dropped_keys);
	}
	if (!ret)
		ret = bfs_core_checkpoint(c);
	/* the rebuilt trees must now check out completely */
	for (id = 0; id < BFS_BTREE_NR && !ret; id++) {
		struct bfs_fsck_loc loc = { .btree = (int)id };
		long bad = bfs_btree_check(c, id, NULL, NULL);

		if (bad) {
			bfs_fix_problem_at(f, PR_BTREE_DAMAGED, &loc,
					   "btree %s still has %ld problem%s after the rebuild",
					   bfs_btree_id_name(id), bad, bad == 1 ? "" : "s");
			ret = -EUCLEAN;
		}
	}
	r = bfs_core_close(c);
	return ret ? ret : r;
}

/* keys the open's journal replay applied */
static u64 replayed_keys(struct bfs_core *c)
{
	struct bfs_core_stats cs;

	bfs_core_get_stats(c, &cs);
	return cs.replayed_keys;
}

int bfs_fsck_pass_btree(struct bfs_fsck *f)
{
	struct bfs_core_opts opts = { 0 };
	struct btree_check bc = { .f = f };
	struct bfs_core *c;
	bool any = false, fix = false;
	unsigned id;
	int ret;

	if (f->early && f->early->opened) {
		/* pass 1a's open, which read the journal: sound, or its damage left as it is */
		c = f->early->opened;
		f->early->opened = NULL;
		ret = 0;
	} else {
		fsck_early_free(f->early);
		f->early = fsck_early_new(f);
		/* this open is to become pass 2's, writable or not (one open) */
		if (f->early)
			fsck_early_prepare(f->early, &opts);
		ret = open_core(f, false, &opts, &c);
	}
	if (ret) {
		fsck_early_free(f->early);
		f->early = NULL;
		bfs_fsck_printf(f, "cannot open the btrees: %s", strerror(-ret));
		f->btrees_damaged = true;
		return ret == -EUCLEAN ? 0 : ret;
	}
	/* without the journal pass 2 sees other keys than this walk */
	if (opts.no_replay) {
		fsck_early_free(f->early);
		f->early = NULL;
	}
	check_all(&bc, c);
	for (id = 0; id < BFS_BTREE_NR; id++) {
		any |= bc.damaged[id];
		fix |= bc.fix[id];
	}
	if (!any) {
		if (f->verbose)
			for (id = 0; id < BFS_BTREE_NR; id++) {
				struct bfs_btree_stats st;

				if (!bfs_btree_get_stats(c, id, &st))
					bfs_fsck_printf(f, "btree %s: %llu keys in %u level%s",
							bfs_btree_id_name(id),
							(unsigned long long)st.keys, st.depth,
							st.depth == 1 ? "" : "s");
			}
		/*
		 * Pass 2 goes on with this open (one replay, one cache), made
		 * writable for -y.  The open ran the filesystem layer's space
		 * hooks (fsck_early_prepare()), so its replay placed split nodes
		 * as a mount's does, never in a bucket of file data (which pass
		 * 2 would report as shared with btree nodes).  If a hook failed,
		 * a read-only pass 2 may still take the core as long as the
		 * replay applied no key (no node was placed); else it opens for
		 * itself.
		 */
		if (f->early && fsck_early_prepared(f->early)) {
			f->early->core = c;
			return 0;
		}
		if (f->early && fsck_fs_read_only(f) && !replayed_keys(c)) {
			fsck_early_unprepare(f->early);
			f->early->core = c;
			return 0;
		}
		ret = bfs_core_close(c);
		if (f->early)
			fsck_early_unprepare(f->early);
		return ret;
	}
	/* a rebuild (or its plan with -n) is what pass 2 sees, if it runs */
	fsck_early_free(f->early);
	f->early = NULL;
	ret = scan(f, &bc);
	if (!ret && (!fix || f->mode == BFS_FSCK_MODE_NO || f->journal_salvage))
		ret = plan_only(&bc, c);
	{
		int r = bfs_core_close(c);

		ret = ret ? ret : r;
	}
	if (!ret && fix && f->mode != BFS_FSCK_MODE_NO && !f->journal_salvage)
		ret = repair(&bc);
	else
		f->btrees_damaged = true;
	if (ret == -EUCLEAN) {
		f->btrees_damaged = true;
		ret = 0;
	}
	bfs_free(bc.cands);
	bfs_free(bc.buckets);
	return ret;
}
