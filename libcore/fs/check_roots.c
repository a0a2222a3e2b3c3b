// SPDX-License-Identifier: MIT
/*
 * What the filesystem needs before it can be opened (see bfs_fs_check_roots
 * in fs.h): the inode-number counter and the root directory.  A btree
 * rebuild that lost the inodes btree's first leaf takes both; e2fsck's
 * "root inode not allocated" is the same repair.  The new root is an empty
 * directory; pass 2 then reconnects what lost its parent to /lost+found and
 * fixes link counts.
 */
#include <stdarg.h>
#include <stdio.h>

#include "ns.h"

struct roots {
	struct bfs_core *c;
	bfs_fix_fn fix;
	void	*ctx;
	long	problems;
	u64	max_ino;		/* highest inode number any key names */
};

static bool __attribute__((format(printf, 4, 5)))
ask(struct roots *r, enum bfs_problem_code code, u64 ino, const char *fmt, ...)
{
	struct bfs_finding f = {
		.code = code,
		/* the key it is about: the root's inode, or the counter (@ino 0) */
		.loc = { .btree = BFS_BTREE_INODES, .inode = ino, .has_pos = true,
			 .pos = ino ? BFS_POS(ino, 0, 0) : BFS_INODE_COUNTER_POS },
	};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	r->problems++;
	return r->fix && r->fix(r->ctx, &f);
}

u64 bfs_fs_key_max_ino(unsigned id, const struct bfs_bkey *k)
{
	u64 ino = le64_to_cpu(k->inode), max = 0;

	if ((id != BFS_BTREE_INODES && id != BFS_BTREE_DIRENTS && id != BFS_BTREE_XATTRS &&
	     id != BFS_BTREE_EXTENTS) || !ino)
		return 0;
	/* only what the filesystem wrote: tools' test keys name no inode */
	if (k->type == BFS_KEY_INODE || k->type == BFS_KEY_SYMLINK ||
	    k->type == BFS_KEY_DIRENT || k->type == BFS_KEY_XATTR ||
	    k->type == BFS_KEY_XATTR_DATA || k->type == BFS_KEY_EXTENT)
		max = ino < BFS_INO_LIMIT ? ino : 0;
	if (k->type == BFS_KEY_DIRENT)
		max = BFS_MAX(max, le64_to_cpu(((const struct bfs_dirent_v *)k->v)->ino));
	return max;
}

/* the highest inode number btree @id names: keys are (ino, ...), and dirents' targets */
static int scan_max(struct roots *r, enum bfs_btree_id id)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, r->c, id, BFS_POS(1, 0, 0), BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret)
		r->max_ino = BFS_MAX(r->max_ino, bfs_fs_key_max_ino(id, k));
	bfs_btree_iter_exit(&it);
	return ret;
}

static int check_counter(struct roots *r, bool *fix)
{
	u64 buf[BFS_BKEY_U64S + sizeof(struct bfs_inode_counter_v) / 8];
	const struct bfs_bkey *k = (const void *)buf;
	int ret = bfs_btree_lookup(r->c, BFS_BTREE_INODES, BFS_INODE_COUNTER_POS, buf, sizeof(buf));
	u64 next;

	if (ret && ret != -ENOENT && ret != -ENOBUFS)
		return ret;
	if (ret || k->type != BFS_KEY_INODE_COUNTER) {
		*fix = ask(r, PR_FS_COUNTER_MISSING, 0, "no inode-number counter at 0:0:0; the "
			   "highest inode number in use is %llu", (unsigned long long)r->max_ino);
		return 0;
	}
	next = le64_to_cpu(((const struct bfs_inode_counter_v *)k->v)->next_ino);
	if (next <= r->max_ino)
		*fix = ask(r, PR_FS_COUNTER_BEHIND, 0, "the counter says %llu, but inode %llu is in use",
			   (unsigned long long)next, (unsigned long long)r->max_ino);
	return 0;
}

static int check_root(struct roots *r, bool *fix)
{
	u64 buf[BFS_BKEY_U64S + 4 * BFS_INODE_V_U64S];
	const struct bfs_bkey *k = (const void *)buf;
	int ret = bfs_btree_lookup(r->c, BFS_BTREE_INODES, BFS_POS(BFS_ROOT_INO, 0, 0), buf,
				   sizeof(buf));

	if (ret && ret != -ENOENT && ret != -ENOBUFS)
		return ret;
	if (ret || k->type != BFS_KEY_INODE)
		*fix = ask(r, PR_FS_ROOT_MISSING, BFS_ROOT_INO, "inode %u does not exist",
			   BFS_ROOT_INO);
	else if (!S_ISDIR(le32_to_cpu(((const struct bfs_inode_v *)k->v)->mode)))
		*fix = ask(r, PR_FS_ROOT_NOT_DIR, BFS_ROOT_INO, "inode %u has mode %o",
			   BFS_ROOT_INO, le32_to_cpu(((const struct bfs_inode_v *)k->v)->mode));
	return 0;
}

long bfs_fs_check_roots(struct bfs_core *c, bfs_fix_fn fix, void *ctx, u64 max_ino)
{
	struct roots r = { .c = c, .fix = fix, .ctx = ctx, .max_ino = BFS_FIRST_FREE_INO - 1 };
	bool fix_counter = false, fix_root = false;
	struct bfs_trans *t;
	int ret = 0;

	if (max_ino) {
		r.max_ino = BFS_MAX(r.max_ino, max_ino);
	} else {
		ret = scan_max(&r, BFS_BTREE_INODES);
		ret = ret ?: scan_max(&r, BFS_BTREE_DIRENTS);
		ret = ret ?: scan_max(&r, BFS_BTREE_XATTRS);
		ret = ret ?: scan_max(&r, BFS_BTREE_EXTENTS);
	}
	ret = ret ?: check_counter(&r, &fix_counter);
	ret = ret ?: check_root(&r, &fix_root);
	if (ret)
		return ret;
	if (!fix_counter && !fix_root)
		return r.problems;

	ret = bfs_trans_begin(c, &t);
	if (ret)
		return ret;
	if (fix_counter)
		ret = bfs_ns_counter_write(t, r.max_ino + 1);
	if (!ret && fix_root) {
		struct bfs_ns_inode root;

		bfs_ns_inode_init(&root, S_IFDIR | 0755, 0, 0, 0, bfs_fs_now());
		root.i.ino = BFS_ROOT_INO;
		root.parent = BFS_ROOT_INO;	/* the root's ".." is itself */
		root.i.nlink = 2;		/* pass 2 counts the subdirectories */
		ret = bfs_ns_inode_write(t, &root);
	}
	if (ret) {
		bfs_trans_end(t);
		return ret;
	}
	ret = bfs_ns_commit(t);
	return ret ? ret : r.problems;
}
