/* SPDX-License-Identifier: MIT */
/*
 * Btree node scan: read every node-sized slot of the metadata area (the
 * bucket area minus the journal) and report each one that holds a btree
 * node header.  Used when the trees cannot be walked from their roots:
 * fsck rebuilds damaged btrees from the nodes found (newest version of each
 * range wins), and `bfs image dump` copies every node, reachable or not.
 *
 * Every node carries its btree id, level, key range and seq in its header,
 * and each bset the newest journal seq of its keys: that is enough to tell
 * which btree and range a stray node belongs to and how recent it is.
 */
#ifndef BFS_BTREE_SCAN_H
#define BFS_BTREE_SCAN_H

#include "btree_format.h"
#include "dev.h"
#include "format.h"

struct bfs_scanned_node {
	u64	offset;			/* device byte offset of the slot */
	u64	seq;			/* node identity from the header */
	u8	btree_id;
	u8	level;
	struct bfs_bpos min_key, max_key;
	bool	header_ok;		/* magic, header checksum, sane id/level/range, ours */
	bool	foreign;		/* a valid node of another filesystem (node_id) */
	u32	nr_bsets;		/* bsets carrying the node's seq, checksums good */
	u32	nr_bad_bsets;		/* bsets with the node's seq but a bad checksum/size */
	u32	written;		/* bytes up to the end of the last good bset */
	u64	journal_seq;		/* newest journal seq of its good bsets (its age) */
};

struct bfs_node_scan_geom {
	u32	block_size;
	u32	node_size;
	u64	bucket_size;
	u64	first_bucket, nbuckets;
	u64	journal_bucket, journal_nbuckets;
	u8	csum_type;
	u64	node_id;		/* what this filesystem's nodes carry; 0: unknown */
};

void bfs_node_scan_geom_from_sb(const struct bfs_sb *sb, struct bfs_node_scan_geom *g);

/*
 * Call @fn for every slot whose first bytes carry the node magic (whether or
 * not the rest checks out: header_ok says), in device order.  @buf holds the
 * whole node (node_size bytes) and is valid during the call only.  A slot
 * whose read fails is skipped (counted in *read_errors if non-NULL).  Stops
 * and returns what @fn returns if non-zero.  @progress, if set, is called
 * every few hundred slots with (slots done, slots in all).
 */
int bfs_node_scan(struct bfs_dev *dev, const struct bfs_node_scan_geom *g,
		  int (*fn)(void *ctx, const struct bfs_scanned_node *n, const void *buf),
		  void (*progress)(void *ctx, u64 done, u64 total), void *ctx,
		  u64 *read_errors);

/* check a node buffer's header and bsets without a core (what the scan reports) */
void bfs_node_examine(const struct bfs_node_scan_geom *g, u64 offset, const void *buf,
		      struct bfs_scanned_node *out);

#endif
