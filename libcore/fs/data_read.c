// SPDX-License-Identifier: MIT
/*
 * Reading files and mapping their extents.  Reads take the inode lock so an
 * extent's chunk cannot be freed and reused between looking up the key and
 * reading the data (that would be caught by the checksum, but as an error).
 */
#include <sys/stat.h>

#include "data.h"

int bfs_data_lock_file(struct bfs_fs *fs, u64 ino, struct bfs_inode *inode, int not_reg)
{
	int ret;

	bfs_inode_lock(fs, ino);
	ret = bfs_inode_read(fs, ino, inode);
	if (!ret && S_ISDIR(inode->mode))
		ret = -EISDIR;
	else if (!ret && !S_ISREG(inode->mode))
		ret = not_reg;
	if (ret)
		bfs_inode_unlock(fs, ino);
	return ret;
}

ssize_t bfs_fs_read(struct bfs_fs *fs, u64 ino, void *buf, size_t len, u64 off)
{
	struct bfs_inode inode;
	int ret;

	ret = bfs_data_lock_file(fs, ino, &inode, -EINVAL);
	if (ret)
		return ret;
	if (off >= inode.size) {
		bfs_inode_unlock(fs, ino);
		return 0;
	}
	len = (size_t)BFS_MIN((u64)len, inode.size - off);
	ret = bfs_data_read_range(fs->data, ino, buf, len, off);
	bfs_inode_unlock(fs, ino);
	return ret ? ret : (ssize_t)len;
}

int bfs_fs_map(struct bfs_fs *fs, u64 ino, int (*fn)(void *ctx, const struct bfs_fs_extent *e),
	       void *ctx)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fs->c, BFS_BTREE_EXTENTS, BFS_POS(ino, 0, 0), 0);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_extent_v *v = extent_val(k);
		struct bfs_fs_extent e;

		if (le64_to_cpu(k->inode) != ino)
			break;
		if (k->type != BFS_KEY_EXTENT)
			continue;
		e = (struct bfs_fs_extent){
			.logical = bfs_bkey_start(k) << BFS_SECTOR_SHIFT,
			.len = (u64)bfs_bkey_size(k) << BFS_SECTOR_SHIFT,
		};
		if (v->flags & BFS_EXTENT_F_UNWRITTEN) {
			e.flags = BFS_EXTENT_UNWRITTEN;
		} else if (v->compression != BFS_COMPRESSION_NONE) {
			e.physical = le64_to_cpu(v->offset);	/* the whole compressed chunk */
			e.flags = BFS_EXTENT_COMPRESSED;
		} else {
			e.physical = le64_to_cpu(v->offset) +
				     ((u64)le32_to_cpu(v->chunk_offset) << BFS_SECTOR_SHIFT);
		}
		ret = fn(ctx, &e);
		if (ret)
			break;
	}
	bfs_btree_iter_exit(&it);
	return ret;
}
