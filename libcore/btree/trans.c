// SPDX-License-Identifier: MIT
/*
 * Transactions: a queue of updates to any btrees, applied atomically and
 * recorded in one journal entry.
 *
 * A commit first tries the parallel way (commit_lock shared, its leaves
 * write-locked until its journal append: update_par.c, doc/commit.md).  If
 * it needs more, the exclusive way: make room (checkpoint if the journal or
 * dirty cache is filling, reserve node slots so a split cannot hit -ENOSPC
 * half-way), apply the updates to the in-memory btrees while building the
 * journal payload out of the blind writes actually applied, then append
 * that payload to the journal.  Either way, commits that write one position
 * append in the order they applied, so replay reproduces the same state.  A failure after the
 * first update was applied cannot be undone in memory: the core then goes
 * read-only (fatal) instead of diverging from the journal.
 */
#include <stdio.h>

#include "internal.h"

__thread struct bfs_core *bfs_committing;

struct trans_update {
	u8	btree_id;
	u8	pad[7];
	/* struct bfs_bkey follows */
};

struct bfs_trans {
	struct bfs_core *c;
	u64	*buf;			/* trans_update records, 8-aligned */
	size_t	used, cap;		/* u64s */
	u32	nr;
	bool	only_deletes;
	bfs_trans_fixup_fn fixup;	/* bfs_trans_set_fixup(), for the next commit */
	void	*fixup_ctx;
};

const char *bfs_btree_id_name(unsigned id)
{
	static const char *const names[] = {
#define x(n, nr, name) [nr] = name,
		BFS_BTREE_IDS(x)
#undef x
	};

	return id < ARRAY_SIZE(names) ? names[id] : "unknown";
}

u32 bfs_btree_max_key_u64s(struct bfs_core *c)
{
	u32 usable = c->node_size - (u32)sizeof(struct bfs_btree_node) - (u32)sizeof(struct bfs_bset);

	/* a third of a node: a 64 KiB xattr fits in 256 KiB nodes, and a split always makes room */
	return BFS_MIN(usable / 3 / 8, BFS_BKEY_MAX_U64S);
}

int bfs_trans_begin(struct bfs_core *c, struct bfs_trans **out)
{
	struct bfs_trans *t = bfs_zalloc(sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->c = c;
	*out = t;
	return 0;
}

void bfs_trans_end(struct bfs_trans *t)
{
	if (!t)
		return;
	bfs_free(t->buf);
	bfs_free(t);
}

void bfs_trans_set_fixup(struct bfs_trans *t, bfs_trans_fixup_fn fn, void *ctx)
{
	t->fixup = fn;
	t->fixup_ctx = ctx;
}

int bfs_trans_update(struct bfs_trans *t, enum bfs_btree_id id, const struct bfs_bkey *k)
{
	size_t u;
	char err[BFS_BKEY_ERR_LEN];

	if ((unsigned)id >= BFS_BTREE_NR || bfs_bkey_u64s(k) < BFS_BKEY_U64S)
		return -EINVAL;
	if (bfs_bkey_u64s(k) > bfs_btree_max_key_u64s(t->c))
		return -E2BIG;
	if (k->type == BFS_KEY_BTREE_PTR ||
	    bfs_bkey_validate(k, bfs_btree_is_extents(id), err, sizeof(err)))
		return -EINVAL;
	if (bfs_btree_is_extents(id) && !bfs_bkey_size(k))
		return -EINVAL;
	u = 1 + bfs_bkey_u64s(k);
	if (t->used + u > t->cap) {
		size_t cap = BFS_MAX(t->cap * 2, t->used + u + 64);
		u64 *b = bfs_realloc(t->buf, cap * 8);

		if (!b)
			return -ENOMEM;
		t->buf = b;
		t->cap = cap;
	}
	t->buf[t->used] = 0;
	((struct trans_update *)&t->buf[t->used])->btree_id = (u8)id;
	memcpy(&t->buf[t->used + 1], k, bfs_bkey_bytes(k));
	if (!t->nr)
		t->only_deletes = true;
	t->only_deletes &= bfs_bkey_deleted(k);
	t->used += u;
	t->nr++;
	return 0;
}

int bfs_trans_delete(struct bfs_trans *t, enum bfs_btree_id id, struct bfs_bpos pos)
{
	struct bfs_bkey k;

	if (bfs_btree_is_extents(id))
		return -EINVAL;
	bfs_bkey_init(&k, BFS_KEY_DELETED, pos, 0);
	return bfs_trans_update(t, id, &k);
}

int bfs_trans_delete_range(struct bfs_trans *t, enum bfs_btree_id id, u64 inode,
			   u64 start, u64 end, u32 snapshot)
{
	struct bfs_bkey k;

	if (!bfs_btree_is_extents(id) || end <= start || end - start > UINT32_MAX)
		return -EINVAL;
	bfs_bkey_init(&k, BFS_KEY_DELETED, BFS_POS(inode, end, snapshot), 0);
	k.size = cpu_to_le32((u32)(end - start));
	return bfs_trans_update(t, id, &k);
}

/* ---- the journal payload of one commit ---- */

struct jbuf {
	u64	*buf;
	size_t	used, cap;		/* u64s */
	size_t	cur;			/* index of the open sub-entry header, or SIZE_MAX */
	u8	cur_id;
	struct { u8 id; struct bfs_bpos pos; } merge[8];	/* leaves that lost keys */
	u32	nr_merge;
};

static int jbuf_emit(void *ctx, u8 id, const struct bfs_bkey *k)
{
	struct jbuf *jb = ctx;
	size_t u = bfs_bkey_u64s(k);

	if (jb->used + u + 1 > jb->cap) {
		size_t cap = BFS_MAX(jb->cap * 2, jb->used + u + 65);
		u64 *b = bfs_realloc(jb->buf, cap * 8);

		if (!b)
			return -ENOMEM;
		jb->buf = b;
		jb->cap = cap;
	}
	if (jb->cur == SIZE_MAX || jb->cur_id != id ||
	    jb->used - jb->cur - 1 + u > BFS_JSET_ENTRY_MAX_U64S) {
		jb->cur = jb->used++;
		jb->cur_id = id;
		bfs_jset_entry_init((struct bfs_jset_entry *)&jb->buf[jb->cur],
				    BFS_JSET_ENTRY_BTREE_KEYS, id, 0, 0);
	}
	memcpy(&jb->buf[jb->used], k, u * 8);
	jb->used += u;
	((struct bfs_jset_entry *)&jb->buf[jb->cur])->u64s = cpu_to_le16((u16)(jb->used - jb->cur - 1));
	if (bfs_bkey_deleted(k) && jb->nr_merge < ARRAY_SIZE(jb->merge)) {
		jb->merge[jb->nr_merge].id = id;
		jb->merge[jb->nr_merge].pos = bfs_bkey_pos(k);
		jb->nr_merge++;
	}
	return 0;
}

/* append the payload: in one add if it fits, else split at sub-entry boundaries */
static int journal_payload(struct bfs_core *c, struct jbuf *jb, u64 *seq)
{
	u32 max = bfs_journal_max_add_u64s(c->j);
	size_t off = 0;
	int ret = 0;

	if (jb->used <= max)
		return bfs_journal_add(c->j, jb->buf, (u32)jb->used, seq);
	bfs_warn("commit of %zu u64s is larger than one journal entry: not atomic across a crash",
		 jb->used);
	while (off < jb->used && !ret) {
		size_t end = off;

		while (end < jb->used &&
		       end - off + bfs_jset_entry_total_u64s((void *)&jb->buf[end]) <= max)
			end += bfs_jset_entry_total_u64s((void *)&jb->buf[end]);
		if (end == off)
			return -E2BIG;
		ret = bfs_journal_add(c->j, &jb->buf[off], (u32)(end - off), seq);
		off = end;
	}
	return ret;
}

/* the open entry's seq: a lower bound of this commit's (see below) */
static u64 open_seq(struct bfs_core *c)
{
	return c->j ? bfs_journal_cur_seq(c->j) : __atomic_load_n(&c->nojournal_seq, __ATOMIC_RELAXED) + 1;
}

static int journal_commit(struct bfs_core *c, struct jbuf *jb, u64 *seq)
{
	int ret = 0;

	if (!jb->used)
		return 0;
	if (c->j)
		ret = journal_payload(c, jb, seq);
	else
		*seq = __atomic_add_fetch(&c->nojournal_seq, 1, __ATOMIC_RELAXED);
	/* the checkpoint thread takes its share off when it is done */
	__atomic_fetch_add(&c->journal_bytes, jb->used * 8, __ATOMIC_RELAXED);
	return ret;
}

/* merging is an optimisation: its errors don't fail the commit (commit_lock exclusive) */
static void merge_sparse(struct bfs_core *c, const struct jbuf *jb)
{
	u32 i;

	for (i = 0; i < jb->nr_merge; i++)
		(void)bfs_btree_maybe_merge(c, jb->merge[i].id, jb->merge[i].pos);
}

static int par_each_update(struct bfs_trans *t, u32 nr, struct par_commit *pc,
			   int (*fn)(struct bfs_core *c, struct par_commit *pc, u8 id,
				     const struct bfs_bkey *k))
{
	size_t off = 0;
	u32 i;
	int ret = 0;

	for (i = 0; i < nr && !ret; i++) {
		const struct trans_update *u = (const void *)&t->buf[off];
		const struct bfs_bkey *k = (const void *)&t->buf[off + 1];

		ret = fn(t->c, pc, u->btree_id, k);
		off += 1 + bfs_bkey_u64s(k);
	}
	return ret;
}

/*
 * With commit_lock shared, next to other commits to other leaves
 * (doc/commit.md); -EAGAIN, before anything was applied, when this one
 * needs the exclusive way (a split, a checkpoint due, node slots short,
 * leaves out of lock order).
 */
static int commit_parallel(struct bfs_trans *t, u32 nr, struct jbuf *jb, u64 *seq,
			   bool *applied, bool *sparse)
{
	struct bfs_core *c = t->c;
	struct par_commit pc = { 0 };
	int ret = 0;

	bfs_commit_lock_shared(c);
	if (bfs_core_checkpoint_due(c) || bfs_core_nodes_short(c, nr, t->only_deletes))
		ret = -EAGAIN;
	ret = ret ?: par_each_update(t, nr, &pc, bfs_par_collect);
	if (!ret)
		bfs_par_lock_all(&pc);
	ret = ret ?: par_each_update(t, nr, &pc, bfs_par_plan);
	if (!ret)
		ret = bfs_par_check_room(c, &pc);
	if (!ret) {
		bfs_committing = c;
		/* every leaf locked and nothing can send us the exclusive way any more */
		if (t->fixup)
			bfs_par_fixup(&pc, t->fixup, t->fixup_ctx);
		/* appended with the leaves still locked: journal order is apply order per leaf */
		ret = bfs_par_apply(c, &pc, open_seq(c), jbuf_emit, jb, applied) ?:
			journal_commit(c, jb, seq);
		bfs_committing = NULL;
		if (ret && *applied)
			bfs_core_set_fatal(c, ret, "commit failed after updating the in-memory btrees");
		if (!ret) {
			STAT_INC(c, commits);
			STAT_INC(c, commits_parallel);
		}
	}
	*sparse = pc.sparse;
	bfs_par_end(c, &pc);
	bfs_commit_unlock(c);
	return ret;
}

int bfs_trans_commit(struct bfs_trans *t, u64 *seq_out)
{
	struct bfs_core *c = t->c;
	struct jbuf jb = { .cur = SIZE_MAX };
	bool applied = false, sparse = false;
	u64 seq = 0, jseq;
	size_t off;
	u32 i, nr = t->nr;
	int ret;

	t->nr = 0;
	if (!nr) {
		t->used = 0;
		return 0;
	}
	ret = bfs_core_check_writable(c);
	if (ret)
		goto out_nolock;

	/*
	 * One commit, one journal entry: refuse what cannot fit before
	 * changing anything (a record here is the key plus one u64, at least
	 * what its share of the payload needs).  Only extent trimming can still
	 * grow a commit past this; such a commit is split with a warning.
	 */
	if (c->j && t->used > bfs_journal_max_add_u64s(c->j)) {
		ret = -E2BIG;
		goto out_nolock;
	}
	ret = commit_parallel(t, nr, &jb, &seq, &applied, &sparse);
	if (ret != -EAGAIN) {
		if (!ret && sparse) {
			bfs_commit_lock(c);
			merge_sparse(c, &jb);
			bfs_commit_unlock(c);
		}
		goto out_nolock;
	}
	jb.used = 0;
	jb.cur = SIZE_MAX;
	jb.nr_merge = 0;

	bfs_commit_lock(c);
	ret = bfs_core_maybe_checkpoint(c);
	if (!ret)
		ret = bfs_core_reserve_nodes(c, nr, t->only_deletes);
	if (ret)
		goto out;
	bfs_committing = c;
	/*
	 * For bset headers: the open entry, a lower bound of the seq this
	 * commit gets and above every key a checkpoint snapshot sealed (the
	 * snapshot closes the entry), so a node that replaced a sealed one
	 * looks newer to a rebuild from a scan.
	 */
	jseq = open_seq(c);

	for (off = 0, i = 0; t->fixup && i < nr; i++) {
		struct trans_update *u = (void *)&t->buf[off];
		struct bfs_bkey *k = (void *)&t->buf[off + 1];

		if (!bfs_btree_is_extents(u->btree_id))
			t->fixup(t->fixup_ctx, (enum bfs_btree_id)u->btree_id, k);
		off += 1 + bfs_bkey_u64s(k);
	}
	for (off = 0, i = 0; i < nr && !ret; i++) {
		const struct trans_update *u = (const void *)&t->buf[off];
		const struct bfs_bkey *k = (const void *)&t->buf[off + 1];

		ret = bfs_btree_apply_update(c, u->btree_id, k, jseq, jbuf_emit, &jb, &applied);
		off += 1 + bfs_bkey_u64s(k);
	}
	if (!ret)
		ret = journal_commit(c, &jb, &seq);
	bfs_committing = NULL;
	if (ret && applied)
		bfs_core_set_fatal(c, ret, "commit failed after updating the in-memory btrees");
	if (!ret) {
		STAT_INC(c, commits);
		merge_sparse(c, &jb);
	}
out:
	bfs_commit_unlock(c);
out_nolock:
	bfs_free(jb.buf);
	t->used = 0;
	t->fixup = NULL;
	t->fixup_ctx = NULL;
	if (!ret && seq_out)
		*seq_out = seq;
	return ret;
}

int bfs_btree_insert(struct bfs_core *c, enum bfs_btree_id id, const struct bfs_bkey *k)
{
	struct bfs_trans t = { .c = c };
	int ret = bfs_trans_update(&t, id, k) ?: bfs_trans_commit(&t, NULL);

	bfs_free(t.buf);
	return ret;
}

int bfs_btree_delete(struct bfs_core *c, enum bfs_btree_id id, struct bfs_bpos pos)
{
	struct bfs_trans t = { .c = c };
	int ret = bfs_trans_delete(&t, id, pos) ?: bfs_trans_commit(&t, NULL);

	bfs_free(t.buf);
	return ret;
}
