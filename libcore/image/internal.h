/* SPDX-License-Identifier: MIT */
/*
 * Inside libcore/image/: the record writer (stream.c), the obfuscation of
 * names in keys, nodes and journal entries (obfuscate.c), used by dump.c.
 */
#ifndef BFS_IMAGE_INTERNAL_H
#define BFS_IMAGE_INTERNAL_H

#include <bfs/image.h>
#include <bfs/log.h>
#include <bfs/os.h>

#include <stdio.h>

#define IMG_ERR(err, ...)	snprintf((err), BFS_ERR_LEN, __VA_ARGS__)

/* ---- writing records into a zstd stream ---- */

struct img_writer;

int img_writer_open(bfs_image_write_fn write, void *ctx, int level, struct img_writer **out);
/* one record; extents longer than BFS_IMAGE_REC_MAX are the caller's to split */
int img_writer_rec(struct img_writer *w, u16 type, u16 kind, u64 offset, const void *buf,
		   u32 len);
/* records written so far */
u64 img_writer_nr(const struct img_writer *w);
/* end the zstd frame and free; @ok false only frees (after an error) */
int img_writer_close(struct img_writer *w, bool ok, u64 *out_bytes);

/* ---- obfuscation ---- */

struct img_obf {
	u64	key;		/* random per dump, never stored */
	u32	block_size;	/* bset and jset alignment */
	u32	node_size;
	unsigned csum_type;	/* node checksums (jsets are always XXH3) */
	u8	uuid[16];
	u64	names;		/* strings replaced */
	u64	raw;		/* framing that could not be followed */
};

/*
 * Replace the names and values in the keys [@keys, @keys + @bytes) of btree
 * @btree_id in place.  Stops at the first key whose framing is broken and
 * returns its byte offset (== @bytes when every key was followed).
 */
size_t img_obf_keys(struct img_obf *o, unsigned btree_id, u8 *keys, size_t bytes);
/* a node slot (node_size bytes): keys obfuscated, checksums that were valid recomputed */
void img_obf_node(struct img_obf *o, u8 *node);
/* a journal bucket of @bytes: every entry obfuscated, everything else zeroed */
void img_obf_journal(struct img_obf *o, u8 *bucket, size_t bytes);
/* same-length replacement of a name (exposed for the unit tests) */
void img_obf_name(const struct img_obf *o, u8 *name, size_t len);

#endif /* BFS_IMAGE_INTERNAL_H */
