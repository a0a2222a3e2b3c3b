// SPDX-License-Identifier: MIT
/*
 * The namespace: every directory from the root down, each entry created in
 * bfs with its type, owner, mode, xattrs and data (hard links as links),
 * then, once everything exists, flags and timestamps (creating children
 * and links changes a directory's and an inode's times).
 */
#include "migrate.h"

#include <bfs/import.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

struct entry {
	ext2_ino_t ino;
	u32	len;
	char	name[EXT2_NAME_LEN + 1];
};

struct entries {
	struct entry *e;
	size_t	nr, cap;
};

static int convert(struct mig *m, ext2_ino_t ino, u64 parent, const char *name, size_t len);

static int read_inode(struct mig *m, ext2_ino_t ino, struct ext2_inode_large *inode)
{
	errcode_t err;

	memset(inode, 0, sizeof(*inode));
	err = ext2fs_read_inode_full(m->ext, ino, (struct ext2_inode *)inode, sizeof(*inode));
	if (err) {
		mig_error(m, "cannot read inode %u: %s", ino, mig_ext_strerror(err));
		return -EIO;
	}
	return 0;
}

static int list_cb(ext2_ino_t dir, int entry, struct ext2_dir_entry *d, int offset,
		   int blocksize, char *buf, void *priv)
{
	struct entries *l = priv;
	unsigned len = ext2fs_dirent_name_len(d);

	/* inline directories report their "." and ".." as ordinary entries */
	if (entry == DIRENT_DOT_FILE || entry == DIRENT_DOT_DOT_FILE ||
	    (len == 1 && d->name[0] == '.') || (len == 2 && d->name[0] == '.' && d->name[1] == '.'))
		return 0;
	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct entry *p = realloc(l->e, cap * sizeof(*p));

		if (!p)
			return DIRENT_ABORT;
		l->e = p;
		l->cap = cap;
	}
	l->e[l->nr].ino = d->inode;
	l->e[l->nr].len = len;
	memcpy(l->e[l->nr].name, d->name, len);
	l->e[l->nr].name[len] = 0;
	l->nr++;
	return 0;
}

static int convert_dir(struct mig *m, ext2_ino_t ino, u64 bino)
{
	struct entries l = { 0 };
	errcode_t err;
	size_t i;
	int ret = 0;

	err = ext2fs_dir_iterate2(m->ext, ino, 0, NULL, list_cb, &l);
	if (err) {
		free(l.e);
		mig_error(m, "cannot read directory inode %u: %s", ino, mig_ext_strerror(err));
		return -EIO;
	}
	for (i = 0; i < l.nr && !ret; i++)
		ret = convert(m, l.e[i].ino, bino, l.e[i].name, l.e[i].len);
	free(l.e);
	return ret;
}

/* ---- file data ---- */

static int data_extents(struct mig *m, ext2_ino_t ino, struct ext2_inode_large *inode, u64 bino)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent e;
	int op = EXT2_EXTENT_ROOT, ret = 0;
	errcode_t err;

	err = ext2fs_extent_open2(m->ext, ino, (struct ext2_inode *)inode, &h);
	if (err) {
		mig_error(m, "inode %u: cannot read its extents: %s", ino, mig_ext_strerror(err));
		return -EIO;
	}
	while (!ret) {
		err = ext2fs_extent_get(h, op, &e);
		if (err == EXT2_ET_EXTENT_NO_NEXT || err == EXT2_ET_NO_CURRENT_NODE)
			break;
		if (err) {
			mig_error(m, "inode %u: cannot read its extents: %s", ino,
				  mig_ext_strerror(err));
			ret = -EIO;
			break;
		}
		op = EXT2_EXTENT_NEXT_LEAF;
		if (!(e.e_flags & EXT2_EXTENT_FLAGS_LEAF) || !e.e_len)
			continue;
		if (e.e_flags & EXT2_EXTENT_FLAGS_UNINIT)
			ret = bfs_fs_import_extent(m->fs, bino, e.e_lblk * m->bs, 0,
						   (u64)e.e_len * m->bs, BFS_IMPORT_UNWRITTEN);
		else
			ret = mig_place(m, bino, e.e_lblk * m->bs, e.e_pblk * m->bs,
					(u64)e.e_len * m->bs);
		if (ret)
			mig_error(m, "inode %u: cannot map blocks %llu..%llu: %s", ino,
				  (unsigned long long)e.e_lblk,
				  (unsigned long long)(e.e_lblk + e.e_len - 1), strerror(-ret));
	}
	ext2fs_extent_free(h);
	return ret;
}

/* block-mapped files (ext2, ext3): physical runs gathered from the block map */
struct run {
	struct mig *m;
	u64	bino;
	u64	lblk, pblk, len;
	int	ret;
};

static int run_flush(struct run *r)
{
	int ret = 0;

	if (r->len)
		ret = mig_place(r->m, r->bino, r->lblk * r->m->bs, r->pblk * r->m->bs,
				r->len * r->m->bs);
	r->len = 0;
	return ret;
}

static int block_cb(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt, blk64_t ref_blk,
		    int ref_offset, void *priv)
{
	struct run *r = priv;

	if (blockcnt < 0)
		return 0;
	if (r->len && r->lblk + r->len == (u64)blockcnt && r->pblk + r->len == *blocknr) {
		r->len++;
		return 0;
	}
	r->ret = run_flush(r);
	if (r->ret)
		return BLOCK_ABORT;
	r->lblk = (u64)blockcnt;
	r->pblk = *blocknr;
	r->len = 1;
	return 0;
}

static int data_blockmap(struct mig *m, ext2_ino_t ino, u64 bino)
{
	struct run r = { .m = m, .bino = bino };
	errcode_t err;

	err = ext2fs_block_iterate3(m->ext, ino, BLOCK_FLAG_DATA_ONLY | BLOCK_FLAG_READ_ONLY, NULL,
				    block_cb, &r);
	if (!err && !r.ret)
		r.ret = run_flush(&r);
	if (err) {
		mig_error(m, "inode %u: cannot read its block map: %s", ino, mig_ext_strerror(err));
		return -EIO;
	}
	return r.ret;
}

/* inline data: the few bytes in the inode are copied */
static int read_inline(struct mig *m, ext2_ino_t ino, struct ext2_inode_large *inode,
		       char **buf, size_t *len)
{
	errcode_t err = ext2fs_inline_data_size(m->ext, ino, len);

	if (!err) {
		*buf = malloc(*len + 1);
		if (!*buf)
			return -ENOMEM;
		err = ext2fs_inline_data_get(m->ext, ino, (struct ext2_inode *)inode, *buf, len);
		if (err)
			free(*buf);
	}
	if (err) {
		mig_error(m, "inode %u: cannot read its inline data: %s", ino,
			  mig_ext_strerror(err));
		return -EIO;
	}
	return 0;
}

static int convert_data(struct mig *m, ext2_ino_t ino, struct ext2_inode_large *inode, u64 bino)
{
	u64 size = EXT2_I_SIZE(inode);
	struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = size };
	struct bfs_stat st;
	int ret;

	ret = bfs_fs_setattr(m->fs, bino, &sa, &st);
	if (ret)
		return ret;
	if (inode->i_flags & EXT4_INLINE_DATA_FL) {
		size_t len;
		char *buf;
		ssize_t w;

		ret = read_inline(m, ino, inode, &buf, &len);
		if (ret)
			return ret;
		/* the inline area is larger than the file: i_size says how much is data */
		len = (size_t)BFS_MIN((u64)len, size);
		w = len ? bfs_fs_write(m->fs, bino, buf, len, 0) : 0;
		free(buf);
		return w < 0 ? (int)w : (size_t)w == len ? 0 : -ENOSPC;
	}
	if (inode->i_flags & EXT4_EXTENTS_FL)
		ret = data_extents(m, ino, inode, bino);
	else
		ret = data_blockmap(m, ino, bino);
	/* a copied last block (mig_place() outside the buckets) extends the size */
	if (!ret)
		ret = bfs_fs_getattr(m->fs, bino, &st);
	if (!ret && st.size != size)
		ret = bfs_fs_setattr(m->fs, bino, &sa, &st);
	return ret;
}

/* ---- symlinks ---- */

static int symlink_target(struct mig *m, ext2_ino_t ino, struct ext2_inode_large *inode,
			  char **target)
{
	size_t len = EXT2_I_SIZE(inode);
	blk64_t pblk = 0;
	errcode_t err;
	char *buf;

	if (inode->i_flags & EXT4_INLINE_DATA_FL) {
		int ret = read_inline(m, ino, inode, target, &len);

		if (!ret)
			(*target)[len] = 0;
		return ret;
	}
	buf = calloc(1, BFS_MAX((size_t)m->bs, len) + 1);
	if (!buf)
		return -ENOMEM;
	if (ext2fs_is_fast_symlink((struct ext2_inode *)inode)) {
		memcpy(buf, inode->i_block, BFS_MIN(len, sizeof(inode->i_block)));
		*target = buf;
		return 0;
	}
	err = ext2fs_bmap2(m->ext, ino, (struct ext2_inode *)inode, NULL, 0, 0, NULL, &pblk);
	if (!err)
		err = pblk ? io_channel_read_blk64(m->ext->io, pblk, 1, buf) : EXT2_ET_BAD_BLOCK_NUM;
	if (err) {
		free(buf);
		mig_error(m, "inode %u: cannot read the symlink target: %s", ino,
			  mig_ext_strerror(err));
		return -EIO;
	}
	buf[len] = 0;
	*target = buf;
	return 0;
}

/* ---- xattrs ---- */

struct names {
	char	**v;
	size_t	nr, cap;
};

static int name_cb(char *name, char *value, size_t value_len, void *data)
{
	struct names *n = data;

	/* the inline-data marker is ext's layout, not an attribute */
	if (!strcmp(name, "system.data"))
		return 0;
	if (n->nr == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 8;
		char **p = realloc(n->v, cap * sizeof(*p));

		if (!p)
			return XATTR_ABORT;
		n->v = p;
		n->cap = cap;
	}
	n->v[n->nr] = strdup(name);
	if (!n->v[n->nr])
		return XATTR_ABORT;
	n->nr++;
	return 0;
}

/*
 * libext2fs leaves the id of the entries that have none (owner, owning
 * group, mask, other) at 0; the kernel writes ACL_UNDEFINED_ID there, and
 * so does this, so the value reads back as it did from ext4.
 */
static void acl_undefined_ids(const char *name, u8 *v, size_t len)
{
	size_t off;

	if (strcmp(name, "system.posix_acl_access") && strcmp(name, "system.posix_acl_default"))
		return;
	for (off = 4; off + 8 <= len; off += 8) {
		u16 tag = (u16)(v[off] | v[off + 1] << 8);

		if (tag != 0x02 && tag != 0x08)		/* ACL_USER, ACL_GROUP */
			memset(v + off + 4, 0xff, 4);
	}
}

static int convert_xattrs(struct mig *m, ext2_ino_t ino, u64 bino)
{
	struct ext2_xattr_handle *h;
	struct names n = { 0 };
	errcode_t err;
	size_t i;
	int ret = 0;

	err = ext2fs_xattrs_open(m->ext, ino, &h);
	if (err == EXT2_ET_MISSING_EA_FEATURE)
		return 0;
	if (!err)
		err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattrs_iterate(h, name_cb, &n);
	/* get converts ACLs from ext's disk form to the system.posix_acl_* one */
	for (i = 0; i < n.nr && !err && !ret; i++) {
		void *val = NULL;
		size_t len = 0;

		err = ext2fs_xattr_get(h, n.v[i], &val, &len);
		if (err)
			break;
		acl_undefined_ids(n.v[i], val, len);
		ret = bfs_fs_setxattr(m->fs, bino, n.v[i], val, len, 0);
		if (ret)
			mig_error(m, "inode %u: cannot keep the xattr '%s': %s", ino, n.v[i],
				  strerror(-ret));
		ext2fs_free_mem(&val);
	}
	for (i = 0; i < n.nr; i++)
		free(n.v[i]);
	free(n.v);
	if (h)
		ext2fs_xattrs_close(&h);
	if (err) {
		mig_error(m, "inode %u: cannot read its xattrs: %s", ino, mig_ext_strerror(err));
		return -EIO;
	}
	return ret;
}

/* ---- one inode ---- */

static u64 rdev_of(const struct ext2_inode_large *inode)
{
	u32 old = inode->i_block[0], new = inode->i_block[1];

	if (old)
		return makedev((old >> 8) & 0xff, old & 0xff);
	return makedev((new & 0xfff00) >> 8, (new & 0xff) | ((new >> 12) & 0xfff00));
}

static int owner_mode(struct mig *m, u64 bino, const struct ext2_inode_large *inode)
{
	struct bfs_setattr sa = {
		.valid = BFS_SET_MODE | BFS_SET_UID | BFS_SET_GID,
		.mode = inode->i_mode & 07777,
		.uid = inode_uid(*inode),
		.gid = inode_gid(*inode),
	};
	struct bfs_stat st;

	return bfs_fs_setattr(m->fs, bino, &sa, &st);
}

static int create(struct mig *m, ext2_ino_t ino, struct ext2_inode_large *inode, u64 parent,
		  const char *name, size_t len, u64 *bino)
{
	struct bfs_creds cr = { inode_uid(*inode), inode_gid(*inode) };
	u32 mode = inode->i_mode, perm = mode & 07777;
	struct bfs_stat st;
	char *target;
	int ret;

	if (LINUX_S_ISDIR(mode)) {
		if (parent == BFS_ROOT_INO && len == 10 && !memcmp(name, "lost+found", 10))
			ret = bfs_fs_lookup(m->fs, parent, name, len, &st);
		else
			ret = bfs_fs_mkdir(m->fs, parent, name, len, perm, &cr, &st);
	} else if (LINUX_S_ISLNK(mode)) {
		ret = symlink_target(m, ino, inode, &target);
		if (ret)
			return ret;
		ret = bfs_fs_symlink(m->fs, parent, name, len, target, &cr, &st);
		free(target);
	} else {
		u64 rdev = LINUX_S_ISCHR(mode) || LINUX_S_ISBLK(mode) ? rdev_of(inode) : 0;

		ret = bfs_fs_mknod(m->fs, parent, name, len, (mode & S_IFMT) | perm, rdev, &cr,
				   &st);
	}
	*bino = st.ino;
	return ret;
}

static int convert(struct mig *m, ext2_ino_t ino, u64 parent, const char *name, size_t len)
{
	struct ext2_inode_large inode;
	struct bfs_stat st;
	u64 bino;
	int ret;

	if (!ino || ino > m->ext->super->s_inodes_count) {
		mig_error(m, "entry '%.*s' names inode %u, out of range", (int)len, name, ino);
		return -EUCLEAN;
	}
	if (m->ino_map[ino]) {
		ret = bfs_fs_link(m->fs, m->ino_map[ino], parent, name, len, &st);
		if (ret)
			mig_error(m, "cannot link '%.*s' to inode %u: %s", (int)len, name, ino,
				  strerror(-ret));
		return ret;
	}
	ret = read_inode(m, ino, &inode);
	if (ret)
		return ret;
	ret = create(m, ino, &inode, parent, name, len, &bino);
	if (ret) {
		mig_error(m, "cannot create '%.*s' (inode %u): %s", (int)len, name, ino,
			  strerror(-ret));
		return ret;
	}
	m->ino_map[ino] = bino;
	m->done_inodes++;
	mig_progress(m, MIG_PASS_FILES, m->done_inodes, m->nr_inodes);
	ret = owner_mode(m, bino, &inode);
	if (ret)
		mig_error(m, "'%.*s' (inode %u): cannot set owner and mode: %s", (int)len, name,
			  ino, strerror(-ret));
	if (!ret)
		ret = convert_xattrs(m, ino, bino);
	if (!ret && LINUX_S_ISREG(inode.i_mode)) {
		ret = convert_data(m, ino, &inode, bino);
		if (ret)
			mig_error(m, "'%.*s' (inode %u): cannot carry its data over: %s", (int)len,
				  name, ino, strerror(-ret));
	}
	if (!ret && LINUX_S_ISDIR(inode.i_mode))
		ret = convert_dir(m, ino, bino);
	return ret;
}

/* ---- times and flags, last ---- */

/* ext's time: seconds (signed 32 bits, plus epoch bits) and nanoseconds */
static s64 xtime(const struct ext2_inode_large *inode, u32 sec, const u32 *extra)
{
	size_t end = (size_t)((const char *)(extra + 1) - (const char *)inode);
	s64 t = (s32)sec;
	u32 x;

	if (end > EXT2_GOOD_OLD_INODE_SIZE + (size_t)inode->i_extra_isize)
		return t * 1000000000LL;
	x = *extra;
	t += (s64)(x & EXT4_EPOCH_MASK) << 32;
	return t * 1000000000LL + (x >> EXT4_EPOCH_BITS);
}

static int finish_inode(struct mig *m, ext2_ino_t ino, u64 bino)
{
	struct ext2_inode_large inode;
	struct bfs_setattr sa = { 0 };
	struct bfs_stat st;
	s64 btime;
	int ret;

	ret = read_inode(m, ino, &inode);
	if (ret)
		return ret;
	if (inode.i_flags & EXT2_IMMUTABLE_FL)
		sa.flags |= BFS_INODE_IMMUTABLE;
	if (inode.i_flags & EXT2_APPEND_FL)
		sa.flags |= BFS_INODE_APPEND;
	if (inode.i_flags & EXT2_NODUMP_FL)
		sa.flags |= BFS_INODE_NODUMP;
	if (inode.i_flags & EXT2_NOATIME_FL)
		sa.flags |= BFS_INODE_NOATIME;
	sa.valid = sa.flags ? BFS_SET_FLAGS : 0;
	ret = sa.valid ? bfs_fs_setattr(m->fs, bino, &sa, &st) : bfs_fs_getattr(m->fs, bino, &st);
	if (ret)
		return ret;
	if (EXT2_INODE_SIZE(m->ext->super) > EXT2_GOOD_OLD_INODE_SIZE &&
	    offsetof(struct ext2_inode_large, i_crtime_extra) + 4 <=
	    EXT2_GOOD_OLD_INODE_SIZE + (size_t)inode.i_extra_isize)
		btime = xtime(&inode, inode.i_crtime, &inode.i_crtime_extra);
	else
		btime = st.btime.tv_sec * 1000000000LL + st.btime.tv_nsec;	/* ext has none */
	return bfs_fs_import_times(m->fs, bino, xtime(&inode, inode.i_atime, &inode.i_atime_extra),
				   xtime(&inode, inode.i_mtime, &inode.i_mtime_extra),
				   xtime(&inode, inode.i_ctime, &inode.i_ctime_extra), btime);
}

int mig_tree(struct mig *m)
{
	ext2_ino_t ino;
	int ret;

	m->ino_map = calloc((size_t)m->ext->super->s_inodes_count + 1, sizeof(u64));
	if (!m->ino_map)
		return mig_error(m, "out of memory");
	m->ino_map[EXT2_ROOT_INO] = BFS_ROOT_INO;
	m->done_inodes = 1;	/* the root; mig_ext_check() counted it too */
	{
		struct ext2_inode_large root;

		ret = read_inode(m, EXT2_ROOT_INO, &root);
		if (!ret)
			ret = owner_mode(m, BFS_ROOT_INO, &root);
		if (!ret)
			ret = convert_xattrs(m, EXT2_ROOT_INO, BFS_ROOT_INO);
		if (!ret)
			ret = convert_dir(m, EXT2_ROOT_INO, BFS_ROOT_INO);
	}
	for (ino = 1; ino <= m->ext->super->s_inodes_count && !ret; ino++) {
		if (!m->ino_map[ino])
			continue;
		ret = finish_inode(m, ino, m->ino_map[ino]);
		if (ret)
			mig_error(m, "inode %u: cannot set its flags and times: %s", ino,
				  strerror(-ret));
	}
	if (ret)
		return mig_error(m, "conversion stopped: %s; the ext filesystem is unchanged",
				 strerror(-ret));
	return 0;
}
