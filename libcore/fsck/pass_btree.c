// SPDX-License-Identifier: MIT
/*
 * Pass 1: the btrees.  Opens the core (replaying the journal; in memory only
 * with -n), then checks every btree completely: node checksums and contents,
 * child ranges tiling their parent, levels, key order across nodes.
 * bfs_btree_verify() names each problem through the log hook; here each
 * damaged btree becomes one problem.  Rebuilding a damaged btree is not
 * implemented yet, so these problems are reported and left unfixed.
 */
#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/fsck.h>

#include <string.h>

#include "fsck_passes.h"

static int open_core(struct bfs_fsck *f, struct bfs_core **c)
{
	struct bfs_core_opts opts = { .read_only = f->mode == BFS_FSCK_MODE_NO };
	int ret = bfs_core_open(f->dev, &opts, c);

	if (ret == -EUCLEAN &&
	    bfs_fix_problem(f, PR_JOURNAL_UNREPLAYABLE,
			    "the journal cannot be replayed; its newest updates are lost")) {
		opts.no_replay = true;
		opts.read_only = true;
		ret = bfs_core_open(f->dev, &opts, c);
	}
	return ret;
}

int bfs_fsck_pass_btree(struct bfs_fsck *f)
{
	struct bfs_btree_stats st;
	struct bfs_core *c;
	unsigned id;
	int ret;

	ret = open_core(f, &c);
	if (ret) {
		bfs_fsck_printf(f, "cannot open the btrees: %s", strerror(-ret));
		return ret == -EUCLEAN ? -EUCLEAN : ret;
	}
	for (id = 0; id < BFS_BTREE_NR; id++) {
		long bad = bfs_btree_verify(c, id);

		if (bad < 0) {
			bfs_fix_problem(f, PR_BTREE_UNREADABLE, "btree %s: %s",
					bfs_btree_id_name(id), strerror((int)-bad));
			continue;
		}
		if (bad) {
			bfs_fix_problem(f, PR_BTREE_DAMAGED, "btree %s: %ld problem%s (listed above)",
					bfs_btree_id_name(id), bad, bad == 1 ? "" : "s");
			continue;
		}
		if (f->verbose && !bfs_btree_get_stats(c, id, &st))
			bfs_fsck_printf(f, "btree %s: %llu keys in %u level%s", bfs_btree_id_name(id),
					(unsigned long long)st.keys, st.depth,
					st.depth == 1 ? "" : "s");
	}
	ret = bfs_core_close(c);
	if (ret)
		bfs_fsck_printf(f, "closing the btrees failed: %s", strerror(-ret));
	return ret;
}
