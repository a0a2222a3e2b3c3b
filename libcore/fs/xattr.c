// SPDX-License-Identifier: MIT
/*
 * Extended attributes (doc/format/fs.md, "Xattrs").
 *
 * An xattr lives at slot hash(namespace, name) of its inode in the xattrs
 * btree, with linear probing and whiteouts as for directory entries.  Slots
 * are spaced 256 offsets apart (key offset = slot << 8): a value too large
 * for one key continues in xattr_data keys at offsets slot << 8 | 1, 2, ...,
 * right after its head key.  The largest key depends on the node size (a
 * 64 KiB value does not fit in one key of a 64 KiB node), so the split is
 * computed from bfs_btree_max_key_u64s() when the value is written.
 */
#include <stdio.h>
#include <xxhash.h>

#include "ns.h"

static const struct {
	const char	*prefix;
	u8		ns;
	bool		whole;		/* the prefix is the whole name */
} ns_names[] = {
#define x(n, nr, prefix, whole) { prefix, nr, whole },
	BFS_XATTR_NAMESPACES(x)
#undef x
};

const char *bfs_xattr_prefix(unsigned ns)
{
	return bfs_xattr_ns_prefix(ns);
}

struct xname {
	u8		ns;
	const char	*name;		/* without the prefix */
	size_t		len;
};

static int parse_name(const char *full, struct xname *x)
{
	size_t len = strnlen(full, BFS_XATTR_NAME_MAX + 1), i;

	if (len > BFS_XATTR_NAME_MAX)
		return -ERANGE;
	for (i = 0; i < ARRAY_SIZE(ns_names); i++) {
		size_t pl = strlen(ns_names[i].prefix);

		if (ns_names[i].whole ? strcmp(full, ns_names[i].prefix) :
					strncmp(full, ns_names[i].prefix, pl))
			continue;
		x->ns = ns_names[i].ns;
		x->name = full + pl;
		x->len = len - pl;
		return ns_names[i].whole || x->len ? 0 : -EINVAL;
	}
	return -EOPNOTSUPP;
}

static u64 xattr_slot(struct bfs_fs *fs, const struct xname *x)
{
	u64 h = XXH3_64bits_withSeed(x->name, x->len, fs->hash_seed + x->ns);

	if (bfs_ns_debug_hash_bits && bfs_ns_debug_hash_bits < BFS_XATTR_HASH_BITS)
		return h & ((UINT64_C(1) << bfs_ns_debug_hash_bits) - 1);
	return h & ((UINT64_C(1) << BFS_XATTR_HASH_BITS) - 1);
}

static struct bfs_bpos xpos(u64 ino, u64 slot, unsigned chunk)
{
	return BFS_POS(ino, slot << BFS_XATTR_CHUNK_SHIFT | chunk, 0);
}

struct xref {
	bool	found;
	u64	slot;		/* found: its slot; else the slot a new one goes to */
	u16	nr_chunks;
	u32	value_len;
	u32	inline_len;
};

/* a buffer for the largest key of this filesystem */
static u64 *key_buf(struct bfs_fs *fs, size_t *len)
{
	*len = (size_t)bfs_btree_max_key_u64s(fs->c) * 8;
	return bfs_malloc(*len);
}

/* look @x up; the head key (if found) is left in @buf */
static int xattr_find(struct bfs_fs *fs, u64 ino, const struct xname *x, u64 *buf, size_t len,
		      struct xref *r)
{
	const struct bfs_bkey *k = (const void *)buf;
	bool have_free = false;
	u64 slot;
	int ret;

	*r = (struct xref){ 0 };
	for (slot = xattr_slot(fs, x);; slot++) {
		const struct bfs_xattr_v *v = bfs_bkey_val(k);

		ret = bfs_btree_lookup(fs->c, BFS_BTREE_XATTRS, xpos(ino, slot, 0), buf, len);
		if (ret == -ENOENT) {
			if (!have_free)
				r->slot = slot;
			return 0;
		}
		if (ret)
			return ret == -ENOBUFS ? -EUCLEAN : ret;
		if (k->type == BFS_KEY_HASH_WHITEOUT) {
			if (!have_free)
				r->slot = slot;
			have_free = true;
			continue;
		}
		if (k->type != BFS_KEY_XATTR) {
			bfs_err("xattrs btree: %s key at the head of slot %llu of inode %llu",
				bfs_bkey_type_name(k->type), (unsigned long long)slot,
				(unsigned long long)ino);
			return -EUCLEAN;
		}
		if (v->ns == x->ns && v->name_len == x->len && !memcmp(v->data, x->name, x->len)) {
			r->found = true;
			r->slot = slot;
			r->nr_chunks = le16_to_cpu(v->nr_chunks);
			r->value_len = le32_to_cpu(v->value_len);
			r->inline_len = le32_to_cpu(v->inline_len);
			return 0;
		}
	}
}

ssize_t bfs_fs_getxattr(struct bfs_fs *fs, u64 ino, const char *name, void *value, size_t size)
{
	struct bfs_ns_inode inode;
	struct xname x;
	struct xref r;
	size_t len, got;
	u64 *buf;
	unsigned i;
	int ret;

	ret = parse_name(name, &x);
	if (!ret)
		ret = bfs_ns_inode_read(fs, ino, &inode);
	if (ret)
		return ret;
	buf = key_buf(fs, &len);
	if (!buf)
		return -ENOMEM;
	ret = xattr_find(fs, ino, &x, buf, len, &r);
	if (!ret && !r.found)
		ret = -ENODATA;
	if (ret || !size)
		goto out;
	if (size < r.value_len) {
		ret = -ERANGE;
		goto out;
	}
	memcpy(value, ((const struct bfs_xattr_v *)bfs_bkey_val((void *)buf))->data + x.len,
	       r.inline_len);
	got = r.inline_len;
	for (i = 1; i <= r.nr_chunks && !ret; i++) {
		const struct bfs_bkey *k = (const void *)buf;
		const struct bfs_xattr_data_v *v = bfs_bkey_val(k);

		ret = bfs_btree_lookup(fs->c, BFS_BTREE_XATTRS, xpos(ino, r.slot, i), buf, len);
		if (ret || k->type != BFS_KEY_XATTR_DATA ||
		    le32_to_cpu(v->len) > r.value_len - got) {
			bfs_err("xattr '%s' of inode %llu: chunk %u missing or bad (%d)", name,
				(unsigned long long)ino, i, ret);
			ret = ret && ret != -ENOENT ? ret : -EUCLEAN;
			break;
		}
		memcpy((u8 *)value + got, v->data, le32_to_cpu(v->len));
		got += le32_to_cpu(v->len);
	}
	if (!ret && got != r.value_len) {
		bfs_err("xattr '%s' of inode %llu: %zu of %u bytes", name, (unsigned long long)ino,
			got, r.value_len);
		ret = -EUCLEAN;
	}
out:
	bfs_free(buf);
	return ret ? ret : (ssize_t)r.value_len;
}

/* how many u64s the journal needs for setting a value (an upper bound) */
static size_t xattr_trans_u64s(struct bfs_fs *fs, const struct xname *x, size_t size,
			       unsigned old_chunks)
{
	size_t chunk = bfs_ns_max_val_bytes(fs) - sizeof(struct bfs_xattr_data_v);
	size_t nr = BFS_DIV_ROUND_UP(size, chunk) + 1;

	return (sizeof(struct bfs_xattr_v) + x->len + size) / 8 +
	       nr * (BFS_BKEY_U64S + 2) + old_chunks * BFS_BKEY_U64S +
	       BFS_BKEY_U64S + BFS_INODE_V_U64S + 8;
}

/* queue the head key and chunks of a new value at @slot */
static int xattr_put(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, u64 slot,
		     const struct xname *x, const u8 *value, size_t size, u64 *buf, u16 *nr_out)
{
	size_t maxval = bfs_ns_max_val_bytes(fs);
	size_t head = maxval - sizeof(struct bfs_xattr_v) - x->len;
	size_t chunk = maxval - sizeof(struct bfs_xattr_data_v);
	size_t inl = BFS_MIN(size, head), off, nr;
	struct bfs_bkey *k = (void *)buf;
	struct bfs_xattr_v *v = bfs_bkey_val(k);
	u32 val_u64s;
	unsigned i;
	int ret;

	nr = BFS_DIV_ROUND_UP(size - inl, chunk);
	if (nr > BFS_XATTR_MAX_CHUNKS)
		return -E2BIG;
	val_u64s = (u32)((sizeof(*v) + x->len + inl + 7) / 8);
	memset(buf, 0, (BFS_BKEY_U64S + val_u64s) * 8);
	bfs_bkey_init(k, BFS_KEY_XATTR, xpos(ino, slot, 0), val_u64s);
	v->ns = x->ns;
	v->name_len = (u8)x->len;
	v->nr_chunks = cpu_to_le16((u16)nr);
	v->value_len = cpu_to_le32((u32)size);
	v->inline_len = cpu_to_le32((u32)inl);
	memcpy(v->data, x->name, x->len);
	if (inl)
		memcpy(v->data + x->len, value, inl);
	ret = bfs_trans_update(t, BFS_BTREE_XATTRS, k);
	for (i = 1, off = inl; i <= nr && !ret; i++) {
		struct bfs_xattr_data_v *d = bfs_bkey_val(k);
		size_t n = BFS_MIN(chunk, size - off);

		val_u64s = (u32)((sizeof(*d) + n + 7) / 8);
		memset(buf, 0, (BFS_BKEY_U64S + val_u64s) * 8);
		bfs_bkey_init(k, BFS_KEY_XATTR_DATA, xpos(ino, slot, i), val_u64s);
		d->len = cpu_to_le32((u32)n);
		memcpy(d->data, value + off, n);
		ret = bfs_trans_update(t, BFS_BTREE_XATTRS, k);
		off += n;
	}
	*nr_out = (u16)nr;
	return ret;
}

/* queue the removal of the xattr at @r->slot without breaking probe chains */
static int xattr_del(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, const struct xref *r,
		     u64 *buf, size_t len)
{
	const struct bfs_bkey *k = (const void *)buf;
	struct bfs_bkey wk;
	u64 slot = r->slot;
	unsigned i;
	int ret = 0;

	for (i = 1; i <= r->nr_chunks && !ret; i++)
		ret = bfs_trans_delete(t, BFS_BTREE_XATTRS, xpos(ino, slot, i));
	if (ret)
		return ret;
	ret = bfs_btree_lookup(fs->c, BFS_BTREE_XATTRS, xpos(ino, slot + 1, 0), buf, len);
	if (ret != -ENOENT) {
		if (ret && ret != -ENOBUFS)
			return ret;
		bfs_bkey_init(&wk, BFS_KEY_HASH_WHITEOUT, xpos(ino, slot, 0), 0);
		return bfs_trans_update(t, BFS_BTREE_XATTRS, &wk);
	}
	ret = bfs_trans_delete(t, BFS_BTREE_XATTRS, xpos(ino, slot, 0));
	while (!ret && slot-- > 0) {
		ret = bfs_btree_lookup(fs->c, BFS_BTREE_XATTRS, xpos(ino, slot, 0), buf, len);
		if (ret || k->type != BFS_KEY_HASH_WHITEOUT)
			break;
		ret = bfs_trans_delete(t, BFS_BTREE_XATTRS, xpos(ino, slot, 0));
	}
	return ret == -ENOENT || ret == -ENOBUFS ? 0 : ret;
}

/*
 * Set (@value non-NULL) or remove an xattr of @ino within @t; the caller
 * holds the inode's lock and writes the inode (its ctime) in @t.
 */
int bfs_xattr_update(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, const char *name,
		     const void *value, size_t size, unsigned flags)
{
	struct xname x;
	struct xref r;
	size_t len;
	u64 *buf;
	u16 nr = 0;
	unsigned i;
	int ret;

	if (flags & ~(BFS_XATTR_CREATE | BFS_XATTR_REPLACE))
		return -EINVAL;
	ret = parse_name(name, &x);
	if (ret)
		return ret;
	/* any change, even one that fails later: the next lookup is only slower */
	bfs_open_caps_forget(fs, ino);
	if (value && size > BFS_XATTR_SIZE_MAX)
		return -E2BIG;
	buf = key_buf(fs, &len);
	if (!buf)
		return -ENOMEM;
	ret = xattr_find(fs, ino, &x, buf, len, &r);
	if (ret)
		goto out;
	if (r.found && (flags & BFS_XATTR_CREATE)) {
		ret = -EEXIST;
		goto out;
	}
	if (!r.found && (!value || (flags & BFS_XATTR_REPLACE))) {
		ret = -ENODATA;
		goto out;
	}
	if (value && xattr_trans_u64s(fs, &x, size, r.found ? r.nr_chunks : 0) >
		     bfs_ns_trans_max_u64s(fs)) {
		/* more than one journal entry holds: refuse before changing anything */
		ret = -E2BIG;
		goto out;
	}
	if (!value) {
		ret = xattr_del(fs, t, ino, &r, buf, len);
	} else {
		ret = xattr_put(fs, t, ino, r.slot, &x, value, size, buf, &nr);
		/* the old value's chunks beyond the new one's */
		for (i = nr + 1u; r.found && i <= r.nr_chunks && !ret; i++)
			ret = bfs_trans_delete(t, BFS_BTREE_XATTRS, xpos(ino, r.slot, i));
	}
out:
	bfs_free(buf);
	return ret;
}

int bfs_xattr_set_mode(struct bfs_fs *fs, u64 ino, const char *name, const void *value,
		       size_t size, unsigned flags, const u32 *mode)
{
	struct bfs_ns_change c;
	int ret = bfs_ns_change_begin(fs, ino, &c);

	if (!ret)
		ret = bfs_iflags_may_change(c.inode.i.flags);
	if (!ret)
		ret = bfs_xattr_update(fs, c.t, ino, name, value, size, flags);
	if (ret == -ENODATA && !value && mode)
		ret = 0;	/* nothing to remove: the mode still changes */
	if (mode)	/* the type, and the set-ID bits @mode keeps, stay */
		c.inode.i.mode = (c.inode.i.mode & ~0777U & (*mode | ~07000U)) | (*mode & 0777);
	c.inode.i.ctime = bfs_fs_now();
	return bfs_ns_change_end(&c, ret);
}

static int xattr_change(struct bfs_fs *fs, u64 ino, const char *name, const void *value,
			size_t size, unsigned flags)
{
	return bfs_xattr_set_mode(fs, ino, name, value, size, flags, NULL);
}

int bfs_fs_setxattr(struct bfs_fs *fs, u64 ino, const char *name, const void *value,
		    size_t size, unsigned flags)
{
	static const u8 empty;

	return xattr_change(fs, ino, name, value ? value : &empty, size, flags);
}

int bfs_fs_removexattr(struct bfs_fs *fs, u64 ino, const char *name)
{
	return xattr_change(fs, ino, name, NULL, 0, 0);
}

ssize_t bfs_fs_listxattr(struct bfs_fs *fs, u64 ino, char *list, size_t size)
{
	struct bfs_ns_inode inode;
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	size_t used = 0;
	int ret;

	ret = bfs_ns_inode_read(fs, ino, &inode);
	if (ret)
		return ret;
	bfs_btree_iter_init(&it, fs->c, BFS_BTREE_XATTRS, BFS_POS(ino, 0, 0), 0);
	for_each_btree_key(&it, k, ret) {
		const struct bfs_xattr_v *v = bfs_bkey_val(k);
		const char *prefix;
		size_t pl, n;

		if (le64_to_cpu(k->inode) != ino)
			break;
		if (k->type != BFS_KEY_XATTR)
			continue;
		prefix = bfs_xattr_prefix(v->ns);
		if (!prefix)
			continue;
		pl = strlen(prefix);
		n = pl + v->name_len + 1;
		if (size) {
			if (used + n > size) {
				ret = -ERANGE;
				break;
			}
			memcpy(list + used, prefix, pl);
			memcpy(list + used + pl, v->data, v->name_len);
			list[used + n - 1] = 0;
		}
		used += n;
	}
	bfs_btree_iter_exit(&it);
	if (ret)
		return ret;
	return (ssize_t)used;
}

int bfs_xattr_delete_all(struct bfs_fs *fs, struct bfs_trans *t, u64 ino)
{
	return bfs_ns_delete_keys(fs, t, BFS_BTREE_XATTRS, ino, 0);
}
