/* SPDX-License-Identifier: MIT */
/*
 * Btree repair (fsck): salvaging keys from damaged nodes and rebuilding a
 * damaged btree from everything that can still be read.
 *
 * A rebuild takes, in key order, every readable leaf of the tree as it is
 * (with replayed journal keys), and for each range those leaves do not
 * cover, the newest leaf of that btree found by the node scan
 * (btree_scan.h) that covers it, keys checked one by one.  What no node
 * holds any more is reported as lost.  The new tree is built in free slots
 * and becomes the root at the next checkpoint: until then the old tree is
 * what a crash leaves, so an interrupted repair is simply done again.
 */
#ifndef BFS_BTREE_REPAIR_H
#define BFS_BTREE_REPAIR_H

#include "btree_scan.h"
#include "core.h"
#include "finding.h"

/* the trusted keys of a raw leaf: sorted, newest bset wins, whiteouts kept */
struct bfs_salvaged {
	struct bfs_bkey **k;		/* point into the node buffer */
	u32	nr;
	u32	dropped;		/* keys (or bsets) thrown away */
};

/*
 * Keys of the raw leaf @buf (described by @sn) that can be trusted: every
 * bset that carries the node's seq and checks out, every key in it that is
 * valid and inside the node's range.  Each thing thrown away is reported to
 * @fn (which may be NULL).  Out-of-order keys are sorted.
 */
int bfs_node_salvage(const struct bfs_node_scan_geom *g, const void *buf,
		     const struct bfs_scanned_node *sn, bfs_finding_fn fn, void *ctx,
		     struct bfs_salvaged *out);
void bfs_salvaged_free(struct bfs_salvaged *s);

struct bfs_rebuild_stats {
	u64	good_leaves;		/* readable leaves of the tree kept as they are */
	u64	scanned_pieces;		/* ranges filled from nodes found by the scan */
	u64	lost_ranges;		/* ranges no node holds */
	u64	keys;			/* keys in the rebuilt tree (before stashed keys) */
	u64	dropped_keys;
	u64	stashed_keys;		/* journal keys applied on top */
};

/*
 * Rebuild btree @id of the salvage-opened core @c (see bfs_core_opts.salvage)
 * from its readable leaves and the scanned nodes @cands (any btree/level:
 * only leaves of @id are used).  Every finding goes to @fn.  With !@apply
 * nothing changes (fsck -n reports what a repair would do and lose).  The
 * caller checkpoints afterwards to make the new tree durable.
 */
int bfs_btree_rebuild(struct bfs_core *c, enum bfs_btree_id id,
		      const struct bfs_scanned_node *cands, size_t nr_cands, bool apply,
		      bfs_finding_fn fn, void *ctx, struct bfs_rebuild_stats *st);

/*
 * Keep the node slot at @offset, or the whole of @bucket, from being
 * allocated during this open: called from a salvage open's space_init hook
 * with every slot and data bucket that anything found on the device points
 * to, so that a repair never writes over what it may still need.
 */
void bfs_core_protect_slot(struct bfs_core *c, u64 offset);
void bfs_core_protect_bucket(struct bfs_core *c, u64 bucket);

#endif
