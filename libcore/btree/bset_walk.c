// SPDX-License-Identifier: MIT
/*
 * Walking the bsets of a raw node buffer: the bset framing decoded once for
 * every tool that looks at nodes without parsing them (debug shell, node
 * scan, image dump).  bfs_node_parse() follows the same rules and also
 * validates every key.
 */
#include <bfs/btree.h>
#include <bfs/btree_format.h>
#include <bfs/checksum.h>
#include <bfs/os.h>

int bfs_node_bsets_raw(const void *buf, u32 node_size, u32 block_size, unsigned csum_type,
		       int (*fn)(void *ctx, const struct bfs_bset_info *b), void *ctx)
{
	const struct bfs_btree_node *h = buf;
	u64 seq = le64_to_cpu(h->seq);
	u32 off = sizeof(*h), index = 0;
	int ret;

	if (!block_size)
		return -EINVAL;
	while (off + sizeof(struct bfs_bset) <= node_size) {
		const struct bfs_bset *b = (const void *)((const u8 *)buf + off);
		u64 end = off + sizeof(*b) + (u64)le32_to_cpu(b->u64s) * 8;
		struct bfs_bset_info bi = {
			.index = index++,
			.offset = off,
			.journal_seq = le64_to_cpu(b->journal_seq),
		};
		u32 koff;

		/* a block without this node's seq was never written for it: the end */
		if (le64_to_cpu(b->node_seq) != seq || le32_to_cpu(b->offset) != off ||
		    end > node_size)
			break;
		bi.bytes = (u32)(end - off);
		bi.csum_checked = csum_type != BFS_CSUM_NONE;
		bi.csum_ok = !csum_type ||
			le64_to_cpu(b->csum) == bfs_csum(csum_type, (const u8 *)b + 8,
							 (size_t)(end - off - 8));
		for (koff = off + sizeof(*b); koff < end; bi.nr_keys++) {
			const struct bfs_bkey *k = (const void *)((const u8 *)buf + koff);

			if (bfs_bkey_u64s(k) < BFS_BKEY_U64S)
				break;
			koff += bfs_bkey_u64s(k) * 8;
		}
		ret = fn(ctx, &bi);
		if (ret)
			return ret;
		off = (u32)BFS_ROUND_UP(end, (u64)block_size);
	}
	return 0;
}
