// SPDX-License-Identifier: MIT
/*
 * bfs-mkkeys: fill the btrees of a formatted image with test keys, for the
 * integration tests of tools that read btrees (dump-btree, fsck) before the
 * filesystem layer can make real content.
 *
 * usage: bfs-mkkeys IMAGE NKEYS [--unclean]
 *        bfs-mkkeys IMAGE --journal     (list journal entries: offset seq last_seq,
 *                                        in seq order, for fixture scripts)
 * Inserts NKEYS cookie keys at (1000000, 7*i+3) in the inodes btree and
 * NKEYS/10 extents of inode 1000100 in the extents btree, in transactions of
 * 16 keys: inode numbers far above what the filesystem itself uses.
 * --unclean flushes the journal but skips the clean close, leaving an image
 * that needs journal replay.
 */
#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/journal.h>
#include <bfs/journal_format.h>
#include <bfs/log.h>
#include <bfs/super.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MKKEYS_INODE 1000000

static void log_stderr(enum bfs_log_level level, const char *msg, void *ctx)
{
	fprintf(stderr, "bfs-mkkeys: %s\n", msg);
}

static int insert_all(struct bfs_core *c, u64 n)
{
	u64 buf[BFS_BKEY_U64S + 2];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_trans *t = NULL;
	u64 i;
	int ret = 0;

	for (i = 0; i < n && !ret; i++) {
		if (!t && (ret = bfs_trans_begin(c, &t)))
			break;
		bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(MKKEYS_INODE, 7 * i + 3, 0), 2);
		((__le64 *)bfs_bkey_val(k))[0] = cpu_to_le64(i);
		((__le64 *)bfs_bkey_val(k))[1] = cpu_to_le64(~i);
		ret = bfs_trans_update(t, BFS_BTREE_INODES, k);
		if (!ret && i % 10 == 0) {
			bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(MKKEYS_INODE + 100, i + 8, 0), 1);
			k->size = cpu_to_le32(8);
			((__le64 *)bfs_bkey_val(k))[0] = cpu_to_le64(i);
			ret = bfs_trans_update(t, BFS_BTREE_EXTENTS, k);
		}
		if (!ret && (i % 16 == 15 || i + 1 == n)) {
			ret = bfs_trans_commit(t, NULL);
			bfs_trans_end(t);
			t = NULL;
		}
	}
	if (t)
		bfs_trans_end(t);
	return ret;
}

struct jent {
	u64 offset, seq, last_seq;
};

struct jlist {
	struct jent *e;
	size_t nr;
};

static int jlist_add(void *ctx, u64 offset, const struct bfs_jset *jset)
{
	struct jlist *l = ctx;

	l->e = realloc(l->e, (l->nr + 1) * sizeof(*l->e));
	if (!l->e)
		return -ENOMEM;
	l->e[l->nr++] = (struct jent){ offset, le64_to_cpu(jset->seq), le64_to_cpu(jset->last_seq) };
	return 0;
}

static int jent_cmp(const void *a, const void *b)
{
	const struct jent *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int list_journal(const char *path)
{
	struct bfs_journal_geom g;
	struct bfs_sb_handle h;
	struct bfs_journal *j;
	struct bfs_dev *dev;
	struct jlist l = { 0 };
	char err[BFS_ERR_LEN];
	size_t i;
	int ret;

	ret = bfs_dev_open(path, BFS_DEV_RDONLY, &dev);
	if (ret)
		return ret;
	ret = bfs_sb_read(dev, &h, err);
	if (!ret) {
		bfs_journal_geom_from_sb(h.sb, dev, &g);
		ret = bfs_journal_open(&g, &j);
		if (!ret) {
			ret = bfs_journal_walk(j, jlist_add, &l);
			bfs_journal_close(j);
		}
		bfs_sb_handle_release(&h);
	}
	qsort(l.e, l.nr, sizeof(*l.e), jent_cmp);
	for (i = 0; !ret && i < l.nr; i++)
		printf("%llu %llu %llu\n", (unsigned long long)l.e[i].offset,
		       (unsigned long long)l.e[i].seq, (unsigned long long)l.e[i].last_seq);
	free(l.e);
	bfs_dev_close(dev);
	return ret;
}

int main(int argc, char **argv)
{
	bool unclean = argc > 3 && !strcmp(argv[3], "--unclean");
	struct bfs_core *c;
	struct bfs_dev *dev;
	int ret;

	if (argc < 3) {
		fprintf(stderr, "usage: bfs-mkkeys IMAGE NKEYS [--unclean]\n");
		return 2;
	}
	bfs_log_set_hook(log_stderr, NULL);
	if (!strcmp(argv[2], "--journal")) {
		ret = list_journal(argv[1]);
		if (ret)
			fprintf(stderr, "bfs-mkkeys: cannot list the journal: %s\n", strerror(-ret));
		return ret ? 1 : 0;
	}
	ret = bfs_dev_open(argv[1], BFS_DEV_EXCL, &dev);
	if (!ret)
		ret = bfs_core_open(dev, &(struct bfs_core_opts){ 0 }, &c);
	if (ret) {
		fprintf(stderr, "bfs-mkkeys: cannot open %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	ret = insert_all(c, strtoull(argv[2], NULL, 0));
	if (!ret && unclean) {
		/* durable in the journal only: exit without closing, as a crash would */
		ret = bfs_core_flush(c);
		return ret ? 1 : 0;
	}
	if (ret)
		fprintf(stderr, "bfs-mkkeys: insert failed: %s\n", strerror(-ret));
	if (bfs_core_close(c) && !ret)
		ret = -EIO;
	bfs_dev_close(dev);
	return ret ? 1 : 0;
}
