// SPDX-License-Identifier: MIT
/*
 * bfs-mkkeys: fill the btrees of a formatted image with test keys, for the
 * integration tests of tools that read btrees (dump-btree, fsck) before the
 * filesystem layer can make real content.
 *
 * usage: bfs-mkkeys IMAGE NKEYS [--unclean]
 * Inserts NKEYS cookie keys at (1, 7*i+3) in the inodes btree and NKEYS/10
 * extents of inode 100 in the extents btree, in transactions of 16 keys.
 * --unclean flushes the journal but skips the clean close, leaving an image
 * that needs journal replay.
 */
#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/log.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(1, 7 * i + 3, 0), 2);
		((__le64 *)bfs_bkey_val(k))[0] = cpu_to_le64(i);
		((__le64 *)bfs_bkey_val(k))[1] = cpu_to_le64(~i);
		ret = bfs_trans_update(t, BFS_BTREE_INODES, k);
		if (!ret && i % 10 == 0) {
			bfs_bkey_init(k, BFS_KEY_COOKIE, BFS_POS(100, i + 8, 0), 1);
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
