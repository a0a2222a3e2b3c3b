// SPDX-License-Identifier: MIT
/*
 * Symlink targets: keys (ino, 1), (ino, 2), ... in the inodes btree, each as
 * large as a key of this filesystem may be, so a 4095-byte target also fits
 * on 4 KiB nodes (doc/format/fs.md, "Symlink targets").
 */
#include "ns.h"

int bfs_ns_symlink_write(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, const char *target,
			 size_t len)
{
	size_t chunk = bfs_ns_max_val_bytes(fs) - sizeof(struct bfs_symlink_v);
	size_t off = 0, val_u64s;
	u64 buf[BFS_BKEY_U64S + (sizeof(struct bfs_symlink_v) + BFS_SYMLINK_MAX + 7) / 8];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_symlink_v *v = bfs_bkey_val(k);
	u64 i;
	int ret = 0;

	for (i = 1; off < len && !ret; i++) {
		size_t n = BFS_MIN(chunk, len - off);

		val_u64s = (sizeof(*v) + n + 7) / 8;
		memset(buf, 0, (BFS_BKEY_U64S + val_u64s) * 8);
		bfs_bkey_init(k, BFS_KEY_SYMLINK, BFS_POS(ino, i, 0), (u32)val_u64s);
		v->len = cpu_to_le16((u16)n);
		v->total = cpu_to_le16((u16)len);
		memcpy(v->data, target + off, n);
		ret = bfs_trans_update(t, BFS_BTREE_INODES, k);
		off += n;
	}
	return ret;
}

ssize_t bfs_fs_readlink(struct bfs_fs *fs, u64 ino, char *buf, size_t size)
{
	struct bfs_ns_inode inode;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	char *target;
	size_t got = 0, total = 0;
	u64 idx = 0;
	int ret;

	ret = bfs_ns_inode_read(fs, ino, &inode);
	if (ret)
		return ret;
	if (!S_ISLNK(inode.i.mode))
		return -EINVAL;
	target = bfs_malloc(BFS_SYMLINK_MAX);
	if (!target)
		return -ENOMEM;
	bfs_btree_iter_init(&it, fs->c, BFS_BTREE_INODES, BFS_POS(ino, 1, 0), 0);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_symlink_v *v = bfs_bkey_val(k);
		size_t n;

		if (le64_to_cpu(k->inode) != ino || k->type != BFS_KEY_SYMLINK)
			break;
		n = le16_to_cpu(v->len);
		total = le16_to_cpu(v->total);
		/* chunks are consecutive keys (ino, 1), (ino, 2) ... */
		if (le64_to_cpu(k->offset) != ++idx || got + n > total || total > BFS_SYMLINK_MAX)
			break;
		memcpy(target + got, v->data, n);
		got += n;
		if (got == total)
			break;
	}
	bfs_btree_iter_exit(&it);
	if (ret) {
		bfs_free(target);
		return ret;
	}
	if (!total || got != total) {
		bfs_err("symlink %llu: target missing or incomplete (%zu of %zu bytes)",
			(unsigned long long)ino, got, total);
		bfs_free(target);
		return -EUCLEAN;
	}
	memcpy(buf, target, BFS_MIN(size, total));
	bfs_free(target);
	return (ssize_t)BFS_MIN(size, total);
}
