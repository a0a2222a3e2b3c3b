// SPDX-License-Identifier: MIT
/*
 * The sorted view of a node (libcore/btree/node_keys.c) against a plain
 * sorted array: every search, through the Eytzinger chunk index and the group
 * fences, must give the index a binary search over all positions gives,
 * after inserts (chunk splits), removals (chunks emptied), a rebuild and a
 * compaction; positions that tie in inode and offset and differ only in
 * snapshot exercise the fallback that compares the keys themselves.  The
 * layout the branch-free searches rely on (padding, fences, the chunk of
 * each Eytzinger entry) is checked directly as well.
 */
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#include "btree/internal.h"

#define MAX_KEYS	6000

struct model {
	struct btree_node *n;
	struct bfs_bkey *keys[MAX_KEYS];	/* sorted, as the view should be */
	u32	nr;
	u64	rng;
};

static u64 rnd(struct model *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

static struct bfs_bkey *key_new(struct bfs_bpos pos)
{
	struct bfs_bkey *k = calloc(1, 64);

	ck_assert_ptr_nonnull(k);
	bfs_bkey_init(k, BFS_KEY_COOKIE, pos, 0);
	return k;
}

static u32 model_lower(struct model *m, struct bfs_bpos pos)
{
	u32 lo = 0, hi = m->nr;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (bfs_bkey_cmp_pos(m->keys[mid], pos) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void check_search(struct model *m, struct bfs_bpos pos)
{
	struct node_slot s;
	u32 want = model_lower(m, pos);
	u32 got = bfs_node_search(m->n, pos, &s);

	ck_assert_uint_eq(got, want);
	ck_assert_uint_eq(bfs_node_lower_bound(m->n, pos), want);
	if (got < m->nr) {
		ck_assert_ptr_eq(node_slot_key(m->n, s), m->keys[want]);
		ck_assert_ptr_eq(node_key(m->n, got), m->keys[want]);
	}
}

/*
 * What the searches take for granted without checking: each chunk's search
 * keys match its keys and are all ones past its entries, each fence is the
 * last slot of its group, and each Eytzinger entry names its chunk.
 */
static void check_layout(struct btree_node *n)
{
	u32 c, j;

	for (c = 0; c < n->nch; c++) {
		const struct key_chunk *ch = n->ch[c];
		const struct node_eyt *e = &n->eyt[n->eyt_of[c]];

		ck_assert_uint_gt(ch->nr, 0);
		for (j = 0; j < NODE_CHUNK; j++) {
			u64 ino = j < ch->nr ? le64_to_cpu(ch->k[j]->inode) : UINT64_MAX;
			u64 off = j < ch->nr ? le64_to_cpu(ch->k[j]->offset) : UINT64_MAX;

			ck_assert_uint_eq(ch->sk[j].inode, ino);
			ck_assert_uint_eq(ch->sk[j].offset, off);
		}
		for (j = 0; j < NODE_GROUPS; j++)
			ck_assert(!memcmp(&ch->gl[j], &ch->sk[j * NODE_GROUP + NODE_GROUP - 1],
					  sizeof(ch->gl[j])));
		ck_assert_ptr_eq(e->ch, ch);
		ck_assert_uint_eq(e->c, c);
		ck_assert(!memcmp(&e->sk, &ch->sk[ch->nr - 1], sizeof(e->sk)));
	}
}

static void check_all(struct model *m)
{
	struct node_slot s = { 0, 0 };
	u32 i;

	ck_assert_uint_eq(m->n->nr, m->nr);
	check_layout(m->n);
	for (i = 0; i < m->nr; i++, node_slot_next(m->n, &s)) {
		ck_assert_ptr_eq(node_slot_key(m->n, s), m->keys[i]);
		/* each key is found exactly, and so is the position just before it */
		check_search(m, bfs_bkey_pos(m->keys[i]));
		check_search(m, bfs_bpos_predecessor(bfs_bkey_pos(m->keys[i])));
		check_search(m, bfs_bpos_successor(bfs_bkey_pos(m->keys[i])));
	}
	ck_assert_uint_eq(s.c, m->n->nch);
	check_search(m, BFS_POS_MIN);
	check_search(m, BFS_POS_MAX);
}

/* positions from a small space: many tie in inode and offset */
static struct bfs_bpos rnd_pos(struct model *m, u64 offsets, u32 snaps)
{
	return BFS_POS(rnd(m) % 3, rnd(m) % offsets, (u32)(rnd(m) % snaps));
}

static void model_insert(struct model *m, struct bfs_bpos pos)
{
	struct node_slot s;
	u32 i = bfs_node_search(m->n, pos, &s);

	if (i < m->nr && !bfs_bkey_cmp_pos(m->keys[i], pos))
		return;
	ck_assert_int_eq(bfs_node_reserve(m->n, 1), 0);
	memmove(&m->keys[i + 1], &m->keys[i], (m->nr - i) * sizeof(m->keys[0]));
	m->keys[i] = key_new(pos);
	m->nr++;
	bfs_node_key_insert_at(m->n, s, m->keys[i]);
}

static void model_remove(struct model *m, u32 i)
{
	bfs_node_key_remove(m->n, i);
	free(m->keys[i]);
	memmove(&m->keys[i], &m->keys[i + 1], (m->nr - i - 1) * sizeof(m->keys[0]));
	m->nr--;
}

static void model_init(struct model *m, u64 seed)
{
	memset(m, 0, sizeof(*m));
	m->n = bfs_zalloc(sizeof(*m->n));
	ck_assert_ptr_nonnull(m->n);
	m->rng = seed;
}

static void model_exit(struct model *m)
{
	u32 i;

	bfs_node_keys_free(m->n);
	bfs_free(m->n);
	for (i = 0; i < m->nr; i++)
		free(m->keys[i]);
}

START_TEST(test_random_inserts_removes)
{
	static struct model m;
	u32 round;

	model_init(&m, 0x9e3779b97f4a7c15ull + (u64)_i);
	for (round = 0; round < 40; round++) {
		u32 op, ops = 150 + (u32)(rnd(&m) % 150);

		for (op = 0; op < ops; op++) {
			/* grow to a few thousand keys, with phases that shrink */
			bool grow = (round % 8) < 6 ? rnd(&m) % 4 : rnd(&m) % 4 == 0;

			if (grow && m.nr < MAX_KEYS - 2)
				model_insert(&m, rnd_pos(&m, 2000, 3));
			else if (m.nr)
				model_remove(&m, (u32)(rnd(&m) % m.nr));
			if (op % 16 == 0)
				check_search(&m, rnd_pos(&m, 2000, 4));
		}
		check_all(&m);
	}
	model_exit(&m);
}
END_TEST

/* appends at the end start new full chunks: the shape sequential inserts make */
START_TEST(test_appends)
{
	static struct model m;
	u32 i;

	model_init(&m, 7);
	for (i = 0; i < 3000; i++)
		model_insert(&m, BFS_POS(5, (u64)i * 3, 0));
	check_all(&m);
	/* then fill the gaps: every chunk splits in the middle */
	for (i = 0; i < 3000; i += 2)
		model_insert(&m, BFS_POS(5, (u64)i * 3 + 1, 0));
	check_all(&m);
	model_exit(&m);
}
END_TEST

/* one inode:offset with hundreds of snapshots spans groups and chunks */
START_TEST(test_snapshot_ties)
{
	static struct model m;
	struct bfs_bkey **view;
	u32 i;

	model_init(&m, 11);
	for (i = 0; i < 700; i++)
		model_insert(&m, BFS_POS(1, 50, i * 2));
	for (i = 0; i < 100; i++) {
		model_insert(&m, BFS_POS(1, 49, i));
		model_insert(&m, BFS_POS(1, 51, i));
	}
	check_all(&m);
	for (i = 0; i < 1500; i++)
		check_search(&m, BFS_POS(1, 50, i));

	/* the view rebuilt from the sorted keys (a node read) searches the same */
	view = malloc(m.nr * sizeof(*view));
	ck_assert_ptr_nonnull(view);
	memcpy(view, m.keys, m.nr * sizeof(*view));
	ck_assert_int_eq(bfs_node_keys_set(m.n, view, m.nr), 0);
	free(view);
	check_all(&m);
	for (i = 0; i < 1500; i++)
		check_search(&m, BFS_POS(1, 50, i));
	model_exit(&m);
}
END_TEST

/*
 * Keys whose inode and offset are all ones tie the padding past a chunk's
 * entries: the snapshot walk must stop at the chunk's last entry (the search
 * reads the entry count only then), in a short chunk and in full ones.
 */
START_TEST(test_padding_ties)
{
	static struct model m;
	u32 i, nr = _i ? 300 : 40;

	model_init(&m, 13);
	for (i = 0; i < 20; i++)
		model_insert(&m, BFS_POS(7, i, 0));
	for (i = 0; i < nr; i++)
		model_insert(&m, BFS_POS(UINT64_MAX, UINT64_MAX, i * 3));
	check_all(&m);
	for (i = 0; i < nr * 3 + 10; i++)
		check_search(&m, BFS_POS(UINT64_MAX, UINT64_MAX, i));
	/* the last entries gone: the walk must stop at the new end, not at the old */
	for (i = 0; i < nr / 2; i++)
		model_remove(&m, m.nr - 1);
	check_all(&m);
	for (i = 0; i < nr * 3 + 10; i++)
		check_search(&m, BFS_POS(UINT64_MAX, UINT64_MAX, i));
	model_exit(&m);
}
END_TEST

static bool drop_odd_snap(struct bfs_bkey *k, void *ctx)
{
	(void)ctx;
	return le32_to_cpu(k->snapshot) & 1;
}

/* compaction drops entries in place, some chunks entirely */
START_TEST(test_compact)
{
	static struct model m;
	u32 i, o;

	model_init(&m, 13);
	for (i = 0; i < 2000; i++)
		model_insert(&m, BFS_POS(2, i / 300, i < 1000 ? i : 1)); /* ties and a long odd run */
	for (i = 0; i < 2500; i++)
		model_insert(&m, BFS_POS(2, 10 + i, i % 2 ? 1 : 2));
	bfs_node_keys_compact(m.n, drop_odd_snap, NULL, NULL);
	for (i = 0, o = 0; i < m.nr; i++) {
		if (drop_odd_snap(m.keys[i], NULL))
			free(m.keys[i]);
		else
			m.keys[o++] = m.keys[i];
	}
	m.nr = o;
	check_all(&m);
	/* the view still takes inserts and removals after it */
	for (i = 0; i < 500; i++)
		model_insert(&m, rnd_pos(&m, 3000, 5));
	for (i = 0; i < 300 && m.nr; i++)
		model_remove(&m, (u32)(rnd(&m) % m.nr));
	check_all(&m);
	model_exit(&m);
}
END_TEST

static Suite *node_keys_suite(void)
{
	Suite *s = suite_create("node_keys");
	TCase *tc = tcase_create("node_keys");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_random_inserts_removes, 0, 3);
	tcase_add_test(tc, test_appends);
	tcase_add_test(tc, test_snapshot_ties);
	tcase_add_loop_test(tc, test_padding_ties, 0, 2);
	tcase_add_test(tc, test_compact);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(node_keys_suite)
