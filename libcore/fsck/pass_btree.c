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
#include <bfs/fs.h>
#include <bfs/fsck.h>

#include <string.h>

#include "fsck_passes.h"

/*
 * Open the btrees for checking.  A failure can come from the journal or from
 * the btrees themselves; a read-only open tolerates damaged subtrees, so try
 * that next, and only blame the journal if skipping it is what helps.
 */
static int open_core(struct bfs_fsck *f, struct bfs_core **c)
{
	struct bfs_core_opts opts = { .read_only = f->mode == BFS_FSCK_MODE_NO,
				      .cache_bytes = f->cache_bytes };
	int ret = bfs_core_open(f->dev, &opts, c);

	if (ret != -EUCLEAN)
		return ret;
	if (!opts.read_only) {
		opts.read_only = true;
		ret = bfs_core_open(f->dev, &opts, c);
		if (ret != -EUCLEAN)
			return ret;
	}
	opts.no_replay = true;
	ret = bfs_core_open(f->dev, &opts, c);
	if (!ret)
		bfs_fix_problem(f, PR_JOURNAL_UNREPLAYABLE,
				"the journal cannot be replayed (see above); checking the "
				"btrees as of the last clean shutdown");
	return ret;
}

int bfs_fsck_pass_btree(struct bfs_fsck *f)
{
	struct bfs_btree_stats st;
	struct bfs_core_stats cs;
	struct bfs_core *c;
	u64 reads0;
	unsigned id;
	int ret;

	bfs_fs_register_key_types();	/* validate filesystem keys too */
	ret = open_core(f, &c);
	if (ret == -EUCLEAN) {
		f->btrees_damaged = true;
		bfs_fix_problem(f, PR_BTREE_UNREADABLE, "the btrees cannot be opened (see above)");
		return 0;
	}
	if (ret) {
		bfs_fsck_printf(f, "cannot open the btrees: %s", strerror(-ret));
		return ret;
	}
	/* progress: nodes read out of the node slots in use */
	bfs_core_get_stats(c, &cs);
	reads0 = cs.node_reads;
	for (id = 0; id < BFS_BTREE_NR; id++) {
		long bad = bfs_btree_verify(c, id);

		bfs_core_get_stats(c, &cs);
		bfs_fsck_progress(f, 1, cs.node_reads - reads0, cs.meta_slots_used);

		if (bad < 0) {
			f->btrees_damaged = true;
			bfs_fix_problem(f, PR_BTREE_UNREADABLE, "btree %s: %s",
					bfs_btree_id_name(id), strerror((int)-bad));
			continue;
		}
		if (bad) {
			f->btrees_damaged = true;
			bfs_fix_problem(f, PR_BTREE_DAMAGED, "btree %s: %ld problem%s (listed above)",
					bfs_btree_id_name(id), bad, bad == 1 ? "" : "s");
			continue;
		}
		if (f->verbose && !bfs_btree_get_stats(c, id, &st))
			bfs_fsck_printf(f, "btree %s: %llu keys in %u level%s", bfs_btree_id_name(id),
					(unsigned long long)st.keys, st.depth,
					st.depth == 1 ? "" : "s");
	}
	bfs_fsck_progress(f, 1, cs.meta_slots_used, cs.meta_slots_used);
	ret = bfs_core_close(c);
	if (ret)
		bfs_fsck_printf(f, "closing the btrees failed: %s", strerror(-ret));
	return ret;
}
