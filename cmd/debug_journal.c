// SPDX-License-Identifier: MIT
/*
 * bfs debug: the journal.  bfs_journal_walk() finds and validates every
 * entry of the ring; sub-entries are iterated with the jset helpers and the
 * keys in them printed with bfs_bkey_to_text().  Works without the btrees
 * (only the superblock is needed), so it also serves images whose journal
 * or btrees do not open.
 */
#include "debug.h"

#include <bfs/btree.h>
#include <bfs/journal.h>
#include <bfs/super.h>

#include <inttypes.h>
#include <string.h>

struct jctx {
	u64	newest, newest_last;	/* pass 1: newest entry and its last_seq */
	u64	entries;
	bool	want_one;
	u64	seq;			/* with want_one: the entry to show in full */
	bool	found;
};

static int scan_newest(void *ctx, u64 offset, const struct bfs_jset *j)
{
	struct jctx *c = ctx;

	if (le64_to_cpu(j->seq) >= c->newest) {
		c->newest = le64_to_cpu(j->seq);
		c->newest_last = le64_to_cpu(j->last_seq);
	}
	return 0;
}

static void print_keys(const struct bfs_jset_entry *e)
{
	const struct bfs_bkey *k;
	char buf[4096];

	for_each_jset_key(e, k) {
		bfs_bkey_to_text(buf, sizeof(buf), k);
		printf("      %s\n", buf);
	}
	if (!bfs_jset_keys_done(e, k))
		printf("      (malformed key: u64s %u)\n", bfs_bkey_u64s(k));
}

static u64 count_keys(const struct bfs_jset_entry *e)
{
	const struct bfs_bkey *k;
	u64 n = 0;

	for_each_jset_key(e, k)
		n++;
	return n;
}

static void print_entry(const struct bfs_jset_entry *e)
{
	const char *btree = e->btree_id < BFS_BTREE_NR ? bfs_btree_id_name(e->btree_id) : "?";

	switch (e->type) {
	case BFS_JSET_ENTRY_BTREE_KEYS:
		printf("    btree_keys %s level %u: %" PRIu64 " keys\n", btree, e->level, count_keys(e));
		print_keys(e);
		break;
	case BFS_JSET_ENTRY_BTREE_ROOT:
		if (le16_to_cpu(e->u64s) * 8 >= sizeof(struct bfs_btree_ptr)) {
			const struct bfs_btree_ptr *p = bfs_jset_entry_data(e);

			printf("    btree_root %s: node at %" PRIu64 " level %u\n", btree,
			       le64_to_cpu(p->offset), p->level);
			break;
		}
		/* fall through */
	default:
		printf("    %s (type %u) btree %s level %u: %u u64s\n",
		       bfs_jset_entry_type_name(e->type), e->type, btree, e->level,
		       le16_to_cpu(e->u64s));
		break;
	}
}

/* one line per kind of sub-entry: keys per btree, then the roots */
static void summarize(const struct bfs_jset *j)
{
	const struct bfs_jset_entry *e;
	u64 keys[BFS_BTREE_NR] = { 0 }, other = 0;
	bool any = false, roots = false;
	unsigned id;

	for_each_jset_entry(j, e) {
		if (e->type == BFS_JSET_ENTRY_BTREE_KEYS && e->btree_id < BFS_BTREE_NR)
			keys[e->btree_id] += count_keys(e);
		else if (e->type == BFS_JSET_ENTRY_BTREE_ROOT)
			roots = true;
		else if (e->type != BFS_JSET_ENTRY_PAD)
			other++;
	}
	for (id = 0; id < BFS_BTREE_NR; id++) {
		if (!keys[id])
			continue;
		printf("%s %s %" PRIu64, any ? "," : "    keys:", bfs_btree_id_name(id), keys[id]);
		any = true;
	}
	if (any)
		putchar('\n');
	if (roots) {
		printf("    roots:");
		for_each_jset_entry(j, e)
			if (e->type == BFS_JSET_ENTRY_BTREE_ROOT &&
			    le16_to_cpu(e->u64s) * 8 >= sizeof(struct bfs_btree_ptr))
				printf(" %s@%" PRIu64, e->btree_id < BFS_BTREE_NR ?
				       bfs_btree_id_name(e->btree_id) : "?",
				       le64_to_cpu(((const struct bfs_btree_ptr *)bfs_jset_entry_data(e))->offset));
		putchar('\n');
	}
	if (other)
		printf("    other sub-entries: %" PRIu64 "\n", other);
}

static int show_entry(void *ctx, u64 offset, const struct bfs_jset *j)
{
	struct jctx *c = ctx;
	const struct bfs_jset_entry *e;
	u64 seq = le64_to_cpu(j->seq);

	if (c->want_one && seq != c->seq)
		return 0;
	c->found = true;
	c->entries++;
	printf("entry seq %" PRIu64 " last_seq %" PRIu64 " at %" PRIu64 ": %u u64s%s%s\n", seq,
	       le64_to_cpu(j->last_seq), offset, le32_to_cpu(j->u64s),
	       le32_to_cpu(j->flags) & BFS_JSET_FLUSH ? ", flush" : "",
	       seq < c->newest_last ? ", stale (older than the newest entry's last_seq)" : "");
	if (!c->want_one) {
		summarize(j);
		return 0;
	}
	for_each_jset_entry(j, e)
		print_entry(e);
	return 0;
}

int dbg_cmd_journal(struct dbg *d, int argc, char **argv)
{
	struct bfs_journal_geom g;
	struct bfs_journal *j;
	struct bfs_sb_handle h;
	struct jctx c = { 0 };
	char err[BFS_ERR_LEN];
	int ret;

	if (argc > 1) {
		if (dbg_parse_u64(argv[1], &c.seq))
			return dbg_err(d, "bad sequence number '%s'", argv[1]);
		c.want_one = true;
	}
	ret = bfs_sb_read(d->dev, &h, err);
	if (ret)
		return dbg_err(d, "no valid superblock: %s", err);
	bfs_journal_geom_from_sb(h.sb, d->dev, &g);
	bfs_sb_handle_release(&h);
	if (!g.nbuckets) {
		printf("no journal\n");
		return 0;
	}
	ret = bfs_journal_open(&g, &j);
	if (ret)
		return dbg_err(d, "cannot open the journal: %s", strerror(-ret));
	ret = bfs_journal_walk(j, scan_newest, &c);
	if (!ret && !c.want_one)
		printf("journal: %u buckets at byte %" PRIu64 "; newest seq %" PRIu64
		       ", needed from seq %" PRIu64 "\n", g.nbuckets, g.start, c.newest,
		       c.newest_last);
	if (!ret)
		ret = bfs_journal_walk(j, show_entry, &c);
	bfs_journal_close(j);
	if (ret)
		return dbg_err(d, "reading the journal failed: %s", strerror(-ret));
	if (c.want_one && !c.found)
		return dbg_err(d, "no valid entry with seq %" PRIu64, c.seq);
	if (!c.want_one)
		printf("%" PRIu64 " valid entr%s (ring order)\n", c.entries, c.entries == 1 ? "y" : "ies");
	return 0;
}
