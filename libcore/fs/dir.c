// SPDX-License-Identifier: MIT
/*
 * Directory entries: name hashing, lookup by probing, slot allocation,
 * removal without breaking probe chains, emptiness, readdir
 * (doc/format/fs.md, "Directory entries").
 *
 * An entry lives at slot hash(name) or, if that slot is taken, at the first
 * free slot after it (linear probing).  A lookup walks the chain from the
 * hash slot until it finds the name or an empty slot.  Entries never move, so
 * a readdir cookie (slot + 1) stays valid however the directory changes.
 * Removing an entry in the middle of a chain leaves a whiteout key that keeps
 * the chain connected; at the end of a chain the entry and the whiteouts
 * just before it are deleted outright, so whiteouts do not pile up.
 */
#include <xxhash.h>

#include "ns.h"

unsigned bfs_ns_debug_hash_bits;

u64 bfs_dirent_slot(struct bfs_fs *fs, const char *name, size_t len)
{
	u64 h = XXH3_64bits_withSeed(name, len, fs->hash_seed);

	if (bfs_ns_debug_hash_bits && bfs_ns_debug_hash_bits < BFS_DIRENT_HASH_BITS)
		return BFS_DIRENT_SLOT_MIN + (h & ((UINT64_C(1) << bfs_ns_debug_hash_bits) - 1));
	h &= (UINT64_C(1) << BFS_DIRENT_HASH_BITS) - 1;
	return h < BFS_DIRENT_SLOT_MIN ? h + BFS_DIRENT_SLOT_MIN : h;
}

int bfs_ns_check_name(const char *name, size_t len)
{
	if (!len)
		return -EINVAL;
	if (len > BFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len) || memchr(name, 0, len))
		return -EINVAL;
	return 0;
}

#define DIRENT_BUF_U64S	(BFS_BKEY_U64S + (sizeof(struct bfs_dirent_v) + BFS_NAME_MAX + 7) / 8)

/* the key at @slot: 0 (copied into @buf), -ENOENT (empty slot) or an error */
static int slot_read(struct bfs_fs *fs, u64 dir, u64 slot, u64 *buf)
{
	const struct bfs_bkey *k = (const void *)buf;
	int ret = bfs_btree_lookup(fs->c, BFS_BTREE_DIRENTS, BFS_POS(dir, slot, 0), buf,
				   DIRENT_BUF_U64S * 8);

	if (ret == -ENOBUFS || (!ret && k->type != BFS_KEY_DIRENT &&
				k->type != BFS_KEY_HASH_WHITEOUT)) {
		bfs_err("dirents btree: bad key at %llu:%llu", (unsigned long long)dir,
			(unsigned long long)slot);
		return -EUCLEAN;
	}
	return ret;
}

static bool dirent_matches(const struct bfs_bkey *k, const char *name, size_t len)
{
	const struct bfs_dirent_v *v = bfs_bkey_val(k);

	return k->type == BFS_KEY_DIRENT && v->name_len == len && !memcmp(v->name, name, len);
}

int bfs_dir_lookup(struct bfs_fs *fs, u64 dir, const char *name, size_t len,
		   struct bfs_dirent_ref *d)
{
	u64 buf[DIRENT_BUF_U64S];
	const struct bfs_bkey *k = (const void *)buf;
	u64 slot;
	int ret;

	if (bfs_ns_check_name(name, len))
		return -ENOENT;
	for (slot = bfs_dirent_slot(fs, name, len);; slot++) {
		ret = slot_read(fs, dir, slot, buf);
		if (ret)
			return ret;
		if (dirent_matches(k, name, len)) {
			const struct bfs_dirent_v *v = bfs_bkey_val(k);

			d->slot = slot;
			d->ino = le64_to_cpu(v->ino);
			d->type = v->type;
			return 0;
		}
	}
}

int bfs_dir_free_slot(struct bfs_fs *fs, u64 dir, const char *name, size_t len, u64 *slot_out)
{
	u64 buf[DIRENT_BUF_U64S];
	const struct bfs_bkey *k = (const void *)buf;
	u64 slot;
	int ret;

	for (slot = bfs_dirent_slot(fs, name, len);; slot++) {
		ret = slot_read(fs, dir, slot, buf);
		if (ret == -ENOENT || (!ret && k->type == BFS_KEY_HASH_WHITEOUT)) {
			*slot_out = slot;
			return 0;
		}
		if (ret)
			return ret;
	}
}

int bfs_dir_add(struct bfs_trans *t, u64 dir, u64 slot, const char *name, size_t len, u64 ino,
		u8 type)
{
	u64 buf[DIRENT_BUF_U64S];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_dirent_v *v = bfs_bkey_val(k);
	u32 val_u64s = (u32)((sizeof(*v) + len + 7) / 8);

	memset(buf, 0, sizeof(buf));
	bfs_bkey_init(k, BFS_KEY_DIRENT, BFS_POS(dir, slot, 0), val_u64s);
	v->ino = cpu_to_le64(ino);
	v->type = type;
	v->name_len = (u8)len;
	memcpy(v->name, name, len);
	return bfs_trans_update(t, BFS_BTREE_DIRENTS, k);
}

int bfs_dir_remove(struct bfs_fs *fs, struct bfs_trans *t, u64 dir, u64 slot, bool whiteout)
{
	u64 buf[DIRENT_BUF_U64S];
	const struct bfs_bkey *k = (const void *)buf;
	struct bfs_bkey wk;
	int ret;

	if (!whiteout) {
		ret = slot_read(fs, dir, slot + 1, buf);
		if (ret && ret != -ENOENT)
			return ret;
		whiteout = !ret;
	}
	if (whiteout) {
		/* a chain continues after @slot: keep it connected */
		bfs_bkey_init(&wk, BFS_KEY_HASH_WHITEOUT, BFS_POS(dir, slot, 0), 0);
		return bfs_trans_update(t, BFS_BTREE_DIRENTS, &wk);
	}
	ret = bfs_trans_delete(t, BFS_BTREE_DIRENTS, BFS_POS(dir, slot, 0));
	/* the chain now ends before @slot: whiteouts just before it are useless */
	while (!ret && slot-- > BFS_DIRENT_SLOT_MIN) {
		ret = slot_read(fs, dir, slot, buf);
		if (ret || k->type != BFS_KEY_HASH_WHITEOUT)
			break;
		ret = bfs_trans_delete(t, BFS_BTREE_DIRENTS, BFS_POS(dir, slot, 0));
	}
	return ret == -ENOENT ? 0 : ret;
}

int bfs_dir_empty(struct bfs_fs *fs, u64 dir)
{
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	bfs_btree_iter_init(&it, fs->c, BFS_BTREE_DIRENTS, BFS_POS(dir, 0, 0), 0);
	for_each_btree_key(&it, k, ret) {
		if (le64_to_cpu(k->inode) != dir)
			break;
		if (k->type == BFS_KEY_DIRENT) {
			ret = -ENOTEMPTY;
			break;
		}
	}
	bfs_btree_iter_exit(&it);
	return ret;
}

int bfs_dir_delete_keys(struct bfs_fs *fs, struct bfs_trans *t, u64 dir)
{
	return bfs_ns_delete_keys(fs, t, BFS_BTREE_DIRENTS, dir, 0);
}

int bfs_fs_readdir(struct bfs_fs *fs, u64 dir, u64 cookie, bfs_filldir_fn fn, void *ctx)
{
	struct bfs_ns_inode inode;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	int ret;

	ret = bfs_ns_inode_read(fs, dir, &inode);
	if (ret)
		return ret;
	if (!S_ISDIR(inode.i.mode))
		return -ENOTDIR;
	if (cookie == 0 && fn(ctx, ".", 1, dir, bfs_ns_dtype(S_IFDIR), 1))
		return 0;
	if (cookie <= 1 && fn(ctx, "..", 2, inode.parent, bfs_ns_dtype(S_IFDIR), 2))
		return 0;

	bfs_btree_iter_init(&it, fs->c, BFS_BTREE_DIRENTS,
			    BFS_POS(dir, BFS_MAX(cookie, BFS_DIRENT_SLOT_MIN), 0), BFS_ITER_PREFETCH);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_dirent_v *v = bfs_bkey_val(k);
		u64 slot = le64_to_cpu(k->offset);

		if (le64_to_cpu(k->inode) != dir)
			break;
		if (k->type != BFS_KEY_DIRENT)
			continue;
		if (fn(ctx, (const char *)v->name, v->name_len, le64_to_cpu(v->ino), v->type,
		       slot + 1))
			break;
	}
	bfs_btree_iter_exit(&it);
	return ret;
}
