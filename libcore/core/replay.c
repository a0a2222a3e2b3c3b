// SPDX-License-Identifier: MIT
/*
 * Journal replay at open.  The journal hands us its sub-entries in seq
 * order; we keep the keys and the newest roots, then (once the roots are
 * loaded and the allocator knows which slots are used) re-apply every key in
 * order.  Keys are blind writes (extent trimming was resolved at commit), so
 * applying them again over a tree that already has some of them gives the
 * same result.
 */
#include <stdio.h>

#include "../btree/internal.h"

struct replay_state {
	u64	*buf;			/* records: seq, then the sub-entry */
	size_t	used, cap;
	struct bfs_btree_ptr roots[BFS_BTREE_NR];
	bool	have_root[BFS_BTREE_NR];
	u64	entries;
};

static int replay_collect(void *ctx, u64 seq, const struct bfs_jset_entry *e)
{
	struct replay_state *r = ctx;
	size_t u = bfs_jset_entry_total_u64s(e);

	if (e->type == BFS_JSET_ENTRY_BTREE_ROOT) {
		if (e->btree_id >= BFS_BTREE_NR || le16_to_cpu(e->u64s) != BFS_BTREE_PTR_VAL_U64S) {
			bfs_err("journal seq %llu: bad btree root entry (btree %u, %u u64s)",
				(unsigned long long)seq, e->btree_id, le16_to_cpu(e->u64s));
			return -EUCLEAN;
		}
		memcpy(&r->roots[e->btree_id], bfs_jset_entry_data(e), sizeof(r->roots[0]));
		r->have_root[e->btree_id] = true;
		return 0;
	}
	if (e->type != BFS_JSET_ENTRY_BTREE_KEYS)
		return 0;
	if (e->btree_id >= BFS_BTREE_NR || e->level) {
		bfs_err("journal seq %llu: keys for btree %u level %u cannot be replayed",
			(unsigned long long)seq, e->btree_id, e->level);
		return -EUCLEAN;
	}
	if (r->used + u + 1 > r->cap) {
		size_t cap = BFS_MAX(r->cap * 2, r->used + u + 1024);
		u64 *b = bfs_realloc(r->buf, cap * 8);

		if (!b)
			return -ENOMEM;
		r->buf = b;
		r->cap = cap;
	}
	r->buf[r->used++] = seq;
	memcpy(&r->buf[r->used], e, u * 8);
	r->used += u;
	r->entries++;
	return 0;
}

/*
 * Every sub-entry is checked while the journal is scanned, before anything
 * is replayed, so a damaged entry ends the replayable prefix instead of
 * failing the replay half way (replay_collect() and replay_apply() check
 * again: the device may change under us).
 */
static int replay_check(void *ctx, u64 seq, const struct bfs_jset_entry *e, char *err)
{
	const struct bfs_bkey *k;
	char kerr[BFS_BKEY_ERR_LEN];

	(void)ctx;
	(void)seq;
	if (e->type == BFS_JSET_ENTRY_BTREE_ROOT) {
		if (e->btree_id >= BFS_BTREE_NR || le16_to_cpu(e->u64s) != BFS_BTREE_PTR_VAL_U64S) {
			snprintf(err, BFS_ERR_LEN, "bad btree root entry (btree %u, %u u64s)",
				 e->btree_id, le16_to_cpu(e->u64s));
			return -EUCLEAN;
		}
		return 0;
	}
	if (e->type != BFS_JSET_ENTRY_BTREE_KEYS)
		return 0;
	if (e->btree_id >= BFS_BTREE_NR || e->level) {
		snprintf(err, BFS_ERR_LEN, "keys for btree %u level %u", e->btree_id, e->level);
		return -EUCLEAN;
	}
	for_each_jset_key(e, k) {
		if (bfs_bkey_validate(k, bfs_btree_is_extents(e->btree_id), kerr, sizeof(kerr))) {
			snprintf(err, BFS_ERR_LEN, "invalid key for btree %s: %s",
				 bfs_btree_id_name(e->btree_id), kerr);
			return -EUCLEAN;
		}
		if (k->type == BFS_KEY_BTREE_PTR) {
			snprintf(err, BFS_ERR_LEN, "btree pointer among the keys of btree %s",
				 bfs_btree_id_name(e->btree_id));
			return -EUCLEAN;
		}
	}
	if (!bfs_jset_keys_done(e, k)) {
		snprintf(err, BFS_ERR_LEN, "key for btree %s overruns its sub-entry",
			 bfs_btree_id_name(e->btree_id));
		return -EUCLEAN;
	}
	return 0;
}

static int replay_apply(struct bfs_core *c, struct replay_state *r)
{
	size_t off = 0;
	int ret = 0;

	while (off < r->used && !ret) {
		u64 seq = r->buf[off++];
		const struct bfs_jset_entry *e = (const void *)&r->buf[off];
		const struct bfs_bkey *k;
		char kbuf[200];

		for_each_jset_key(e, k) {
			char err[BFS_BKEY_ERR_LEN];

			if (bfs_bkey_validate(k, bfs_btree_is_extents(e->btree_id), err, sizeof(err)) ||
			    k->type == BFS_KEY_BTREE_PTR) {
				bfs_bkey_to_text(kbuf, sizeof(kbuf), k);
				bfs_err("journal seq %llu: invalid key for btree %s: %s",
					(unsigned long long)seq, bfs_btree_id_name(e->btree_id), kbuf);
				return -EUCLEAN;
			}
			/*
			 * salvage (fsck): a key for a damaged tree waits for its
			 * rebuild, which applies it on top of what was salvaged
			 */
			if (c->opts.salvage && c->trees[e->btree_id].damaged)
				ret = bfs_core_stash_key(c, e->btree_id, k, seq);
			else
				ret = bfs_btree_insert_key(c, e->btree_id, k, seq);
			if (ret == -EUCLEAN && c->opts.salvage) {
				bfs_core_note_damage(c, e->btree_id, PR_BTREE_REPLAY_BLOCKED,
						     "btree %s: journal seq %llu cannot be replayed into "
						     "it (a damaged node)", bfs_btree_id_name(e->btree_id),
						     (unsigned long long)seq);
				c->trees[e->btree_id].damaged = true;
				ret = bfs_core_stash_key(c, e->btree_id, k, seq);
			}
			STAT_INC(c, replayed_keys);
			if (ret) {
				/* the open fails: say where (ENOSPC: no node slot for a split) */
				bfs_err("journal seq %llu: cannot replay a key into btree %s: %s",
					(unsigned long long)seq, bfs_btree_id_name(e->btree_id),
					strerror(-ret));
				break;
			}
		}
		if (!ret && !bfs_jset_keys_done(e, k)) {
			bfs_err("journal seq %llu: invalid key for btree %s: (overruns the entry)",
				(unsigned long long)seq, bfs_btree_id_name(e->btree_id));
			return -EUCLEAN;
		}
		off += bfs_jset_entry_total_u64s(e);
	}
	return ret;
}

/* let the upper layers see every key before replay may allocate */
static int replay_space(struct bfs_core *c, struct replay_state *r)
{
	size_t off = 0;
	int ret = 0;

	while (off < r->used && !ret) {
		const struct bfs_jset_entry *e = (const void *)&r->buf[++off];
		const struct bfs_bkey *k;

		/* a malformed key ends the walk: replay_apply() reports it */
		for_each_jset_key(e, k) {
			ret = c->opts.space_replay_key(c->opts.space_ctx, c, e->btree_id, k);
			if (ret)
				break;
		}
		off += bfs_jset_entry_total_u64s(e);
	}
	return ret;
}

int bfs_core_stash_key(struct bfs_core *c, u8 id, const struct bfs_bkey *k, u64 seq)
{
	struct btree_root *t = &c->trees[id];
	size_t need = t->stash_u64s + 1 + bfs_bkey_u64s(k);

	if (need > t->stash_cap) {
		size_t cap = BFS_MAX(need, t->stash_cap * 2 + 64);
		u64 *n = bfs_realloc(t->stash, cap * 8);

		if (!n)
			return -ENOMEM;
		t->stash = n;
		t->stash_cap = cap;
	}
	t->stash[t->stash_u64s++] = seq;
	memcpy(&t->stash[t->stash_u64s], k, bfs_bkey_bytes(k));
	t->stash_u64s += bfs_bkey_u64s(k);
	return 0;
}

static int replay_ignore(void *ctx, u64 seq, const struct bfs_jset_entry *e)
{
	return 0;
}

int bfs_core_check_journal(struct bfs_dev *dev, const struct bfs_sb *sb, bfs_finding_fn fn,
			   void *ctx)
{
	struct bfs_sb_field *f = bfs_sb_field_get((struct bfs_sb *)sb, BFS_SB_FIELD_CLEAN);
	bool clean = le32_to_cpu(sb->flags) & BFS_SB_CLEAN;
	struct bfs_journal_read_opts o = {
		.clean = clean,
		.salvage = true,
		.check = replay_check,
		.finding = fn,
		.finding_ctx = ctx,
	};
	struct bfs_journal_geom jg;
	struct bfs_journal *j;
	int ret;

	if (!le32_to_cpu(sb->journal_nbuckets))
		return 0;
	if (!f || le32_to_cpu(f->u64s) * 8 < sizeof(*f) + sizeof(struct bfs_sb_clean))
		return -EUCLEAN;
	o.min_seq = le64_to_cpu(((const struct bfs_sb_clean *)f->data)->journal_seq);
	bfs_journal_geom_from_sb(sb, dev, &jg);
	ret = bfs_journal_open(&jg, &j);
	if (ret)
		return ret;
	ret = bfs_journal_recover(j, &o, replay_ignore, NULL);
	bfs_journal_close(j);
	return ret;
}

int bfs_core_journal_start(struct bfs_core *c, u64 clean_seq, bool replay,
			   int (*load_roots)(struct bfs_core *c, const struct bfs_btree_ptr *roots,
					     const bool *have),
			   bool *replayed)
{
	/* clean too: a log that continues after the clean shutdown is replayed (read.c) */
	struct bfs_journal_read_opts o = {
		.min_seq = clean_seq,
		.clean = !replay,
		.salvage = c->opts.salvage_journal,
		.check = replay_check,
		.check_ctx = c,
		.finding = c->opts.journal_finding,
		.finding_ctx = c->opts.journal_finding_ctx,
	};
	struct replay_state r = { 0 };
	int ret;

	*replayed = false;
	ret = bfs_journal_recover(c->j, &o, replay_collect, &r);
	if (!ret && !replay) {
		u64 first, last;

		/* the clean flag was out of date: nodes may hold torn bsets as after a crash */
		bfs_journal_replay_range(c->j, &first, &last);
		if (first <= last)
			c->allow_torn = true;
	}
	if (!ret)
		ret = load_roots(c, r.roots, r.have_root);
	/* the replayed keys first: space_init may then mark what holds data once replay ends */
	if (!ret && c->opts.space_replay_key)
		ret = replay_space(c, &r);
	if (!ret && c->opts.space_init)
		ret = c->opts.space_init(c->opts.space_ctx, c);
	if (!ret && r.entries) {
		bfs_info("replaying %llu journal entries", (unsigned long long)r.entries);
		bfs_commit_lock(c);
		ret = replay_apply(c, &r);
		bfs_commit_unlock(c);
		*replayed = true;
	}
	bfs_free(r.buf);
	return ret;
}
