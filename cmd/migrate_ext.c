// SPDX-License-Identifier: MIT
/*
 * The ext source, read through libext2fs (read-only): opening it, what bfs
 * migrate refuses before the first write, and the used-block map.
 */
#include "migrate.h"

#include "lazy_lib.h"

#include <stdlib.h>
#include <string.h>

const char *mig_ext_strerror(errcode_t err)
{
	return error_message(err);
}

int mig_ext_open(struct mig *m)
{
	errcode_t err;

	if (lazy_lib_require(&lazy_ext2fs))
		return -ENOENT;
	initialize_ext2_error_table();
	err = ext2fs_open2(m->path, NULL, EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS, 0, 0,
			   lazy_ext2fs_unix_io_manager(), &m->ext);
	if (err == EXT2_ET_BAD_MAGIC || err == EXT2_ET_SB_CSUM_INVALID)
		return mig_error(m, "'%s' holds no ext2, ext3 or ext4 filesystem", m->path);
	if (err)
		return mig_error(m, "cannot open '%s' as ext2/3/4: %s", m->path,
				 mig_ext_strerror(err));
	/* checksum errors are refused below, not ignored: e2fsck -n must pass */
	m->ext->flags &= ~EXT2_FLAG_IGNORE_CSUM_ERRORS;
	m->bs = EXT2_BLOCK_SIZE(m->ext->super);
	m->ext_bytes = ext2fs_blocks_count(m->ext->super) * m->bs;
	err = ext2fs_read_bitmaps(m->ext);
	if (err)
		return mig_error(m, "cannot read the block and inode bitmaps: %s",
				 mig_ext_strerror(err));
	return 0;
}

void mig_ext_close(struct mig *m)
{
	if (m->ext)
		ext2fs_close_free(&m->ext);
}

struct feature {
	int	mask;		/* 0 compat, 1 incompat, 2 ro_compat */
	u32	bit;
	const char *name;
};

/* what bfs migrate cannot carry over, by name, for the refusal */
static const struct feature refused[] = {
	{ 1, EXT2_FEATURE_INCOMPAT_COMPRESSION, "compression" },
	{ 1, EXT3_FEATURE_INCOMPAT_JOURNAL_DEV, "journal_dev (an external journal device)" },
	{ 1, EXT4_FEATURE_INCOMPAT_MMP, "mmp" },
	{ 1, EXT4_FEATURE_INCOMPAT_DIRDATA, "dirdata" },
	{ 1, EXT4_FEATURE_INCOMPAT_ENCRYPT, "encrypt" },
	{ 1, EXT4_FEATURE_INCOMPAT_CASEFOLD, "casefold" },
	{ 2, EXT4_FEATURE_RO_COMPAT_QUOTA, "quota" },
	{ 2, EXT4_FEATURE_RO_COMPAT_BIGALLOC, "bigalloc" },
	{ 2, EXT4_FEATURE_RO_COMPAT_REPLICA, "replica" },
	{ 2, EXT4_FEATURE_RO_COMPAT_PROJECT, "project" },
	{ 2, EXT4_FEATURE_RO_COMPAT_SHARED_BLOCKS, "shared_blocks" },
	{ 2, EXT4_FEATURE_RO_COMPAT_VERITY, "verity" },
};

/* everything else bfs migrate knows and handles */
#define INCOMPAT_OK (EXT2_FEATURE_INCOMPAT_FILETYPE | EXT2_FEATURE_INCOMPAT_META_BG | \
		     EXT3_FEATURE_INCOMPAT_EXTENTS | EXT4_FEATURE_INCOMPAT_64BIT | \
		     EXT4_FEATURE_INCOMPAT_FLEX_BG | EXT4_FEATURE_INCOMPAT_EA_INODE | \
		     EXT4_FEATURE_INCOMPAT_CSUM_SEED | EXT4_FEATURE_INCOMPAT_LARGEDIR | \
		     EXT4_FEATURE_INCOMPAT_INLINE_DATA | EXT3_FEATURE_INCOMPAT_RECOVER)
#define RO_COMPAT_OK (EXT2_FEATURE_RO_COMPAT_SPARSE_SUPER | \
		      EXT2_FEATURE_RO_COMPAT_LARGE_FILE | EXT4_FEATURE_RO_COMPAT_HUGE_FILE | \
		      EXT4_FEATURE_RO_COMPAT_GDT_CSUM | EXT4_FEATURE_RO_COMPAT_DIR_NLINK | \
		      EXT4_FEATURE_RO_COMPAT_EXTRA_ISIZE | EXT4_FEATURE_RO_COMPAT_METADATA_CSUM | \
		      EXT4_FEATURE_RO_COMPAT_READONLY | EXT4_FEATURE_RO_COMPAT_ORPHAN_PRESENT)

static int check_features(struct mig *m)
{
	struct ext2_super_block *s = m->ext->super;
	u32 masks[3] = { s->s_feature_compat, s->s_feature_incompat, s->s_feature_ro_compat };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(refused); i++)
		if (masks[refused[i].mask] & refused[i].bit)
			return mig_error(m, "the filesystem uses the ext feature '%s', which bfs "
					 "migrate cannot carry over; nothing was written",
					 refused[i].name);
	if (s->s_feature_incompat & ~INCOMPAT_OK)
		return mig_error(m, "the filesystem has unknown incompat features 0x%x; "
				 "nothing was written", s->s_feature_incompat & ~INCOMPAT_OK);
	if (s->s_feature_ro_compat & ~RO_COMPAT_OK)
		return mig_error(m, "the filesystem has unknown ro_compat features 0x%x; "
				 "nothing was written", s->s_feature_ro_compat & ~RO_COMPAT_OK);
	if (s->s_feature_incompat & EXT3_FEATURE_INCOMPAT_RECOVER)
		return mig_error(m, "the journal needs recovery (the filesystem was not cleanly "
				 "unmounted): run e2fsck first");
	if (s->s_feature_ro_compat & EXT4_FEATURE_RO_COMPAT_ORPHAN_PRESENT)
		return mig_error(m, "the filesystem has orphan inodes to clean up: run e2fsck first");
	if (!(s->s_state & EXT2_VALID_FS) || (s->s_state & EXT2_ERROR_FS))
		return mig_error(m, "the filesystem %s: run e2fsck first",
				 (s->s_state & EXT2_ERROR_FS) ? "has errors recorded"
							      : "was not cleanly unmounted");
	if (s->s_last_orphan)
		return mig_error(m, "the filesystem has orphan inodes to clean up: run e2fsck first");
	return 0;
}

/* inode flags bfs keeps (as BFS_INODE_*) or that only describe ext's layout */
#define FLAGS_KEPT (EXT2_IMMUTABLE_FL | EXT2_APPEND_FL | EXT2_NODUMP_FL | EXT2_NOATIME_FL)
#define FLAGS_LAYOUT (EXT2_INDEX_FL | EXT4_HUGE_FILE_FL | EXT4_EXTENTS_FL | \
		      EXT4_INLINE_DATA_FL | EXT4_EA_INODE_FL)

/* the xattr namespaces bfs stores (and ext's inline-data marker, not an xattr) */
static bool xattr_name_ok(const char *name)
{
	static const char *const prefixes[] = { "user.", "trusted.", "security." };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true;
	return !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default") || !strcmp(name, "system.data");
}

struct xattr_check {
	char	bad[256];
};

static int xattr_check_cb(char *name, char *value, size_t value_len, void *data)
{
	struct xattr_check *x = data;

	if (xattr_name_ok(name) && value_len <= BFS_XATTR_SIZE_MAX)
		return 0;
	snprintf(x->bad, sizeof(x->bad), "%s", name);
	return XATTR_ABORT;
}

/* has the inode xattrs at all: an xattr block, or the in-inode area's magic */
static bool has_xattrs(struct mig *m, const u8 *raw, const struct ext2_inode_large *inode)
{
	size_t isize = EXT2_INODE_SIZE(m->ext->super), off;
	u32 magic;

	if (ext2fs_file_acl_block(m->ext, (const struct ext2_inode *)inode))
		return true;
	if (isize <= EXT2_GOOD_OLD_INODE_SIZE)
		return false;
	off = EXT2_GOOD_OLD_INODE_SIZE + inode->i_extra_isize;
	if (off + 4 > isize)
		return false;
	magic = (u32)raw[off] | (u32)raw[off + 1] << 8 | (u32)raw[off + 2] << 16 |
		(u32)raw[off + 3] << 24;
	return magic == EXT2_EXT_ATTR_MAGIC;
}

/* refuse before the first write what bfs could not store */
static int check_xattrs(struct mig *m, ext2_ino_t ino)
{
	struct ext2_xattr_handle *h;
	struct xattr_check x = { "" };
	errcode_t err;

	err = ext2fs_xattrs_open(m->ext, ino, &h);
	if (err == EXT2_ET_MISSING_EA_FEATURE)
		return 0;
	if (!err)
		err = ext2fs_xattrs_read(h);
	if (!err)
		err = ext2fs_xattrs_iterate(h, xattr_check_cb, &x);
	if (h)
		ext2fs_xattrs_close(&h);
	if (err)
		return mig_error(m, "inode %u: cannot read its xattrs: %s", ino,
				 mig_ext_strerror(err));
	if (x.bad[0])
		return mig_error(m, "inode %u has the xattr '%s', which bfs cannot store (its "
				 "namespace, or a value over 64 KiB); nothing was written", ino, x.bad);
	return 0;
}

/* one pass over the inode table: refusals per inode, and counts for the plan */
static int scan_inodes(struct mig *m)
{
	size_t isize = BFS_MAX((size_t)EXT2_INODE_SIZE(m->ext->super), sizeof(struct ext2_inode_large));
	struct ext2_inode_large inode;
	ext2_inode_scan scan;
	ext2_ino_t ino;
	errcode_t err;
	u8 *raw;
	int ret = 0;

	raw = calloc(1, isize);
	if (!raw)
		return mig_error(m, "out of memory");
	err = ext2fs_open_inode_scan(m->ext, 0, &scan);
	if (err) {
		free(raw);
		return mig_error(m, "cannot scan the inodes: %s", mig_ext_strerror(err));
	}
	for (;;) {
		u32 bad;

		err = ext2fs_get_next_inode_full(scan, &ino, (struct ext2_inode *)raw, (int)isize);
		memcpy(&inode, raw, sizeof(inode));
		if (err) {
			ret = mig_error(m, "cannot read inode %u: %s", ino, mig_ext_strerror(err));
			break;
		}
		if (!ino)
			break;
		if (!inode.i_links_count || (ino < EXT2_FIRST_INO(m->ext->super) &&
					     ino != EXT2_ROOT_INO))
			continue;
		if (inode.i_flags & EXT4_EA_INODE_FL)
			continue;	/* holds a large xattr value of another inode */
		bad = inode.i_flags & ~(FLAGS_KEPT | FLAGS_LAYOUT);
		if (bad) {
			ret = mig_error(m, "inode %u has inode flags 0x%x that bfs cannot keep "
					"(see chattr(1): remove them first); nothing was written",
					ino, bad);
			break;
		}
		m->nr_inodes++;
		if (LINUX_S_ISDIR(inode.i_mode)) {
			m->nr_dirs++;
		} else if (LINUX_S_ISREG(inode.i_mode)) {
			m->nr_regs++;
			m->data_bytes += EXT2_I_SIZE(&inode);
			if (inode.i_links_count > 1)
				m->nr_links += inode.i_links_count - 1u;
		} else if (LINUX_S_ISLNK(inode.i_mode) || LINUX_S_ISCHR(inode.i_mode) ||
			   LINUX_S_ISBLK(inode.i_mode) || LINUX_S_ISFIFO(inode.i_mode) ||
			   LINUX_S_ISSOCK(inode.i_mode)) {
			m->nr_others++;
			if (inode.i_links_count > 1)
				m->nr_links += inode.i_links_count - 1u;
		} else {
			ret = mig_error(m, "inode %u has an unknown file type (mode 0%o); "
					"nothing was written", ino, inode.i_mode);
			break;
		}
		if (inode.i_flags & EXT4_INLINE_DATA_FL)
			m->nr_inline++;
		if (has_xattrs(m, raw, &inode)) {
			ret = check_xattrs(m, ino);
			if (ret)
				break;
		}
		if (LINUX_S_ISLNK(inode.i_mode) && EXT2_I_SIZE(&inode) > BFS_SYMLINK_MAX) {
			ret = mig_error(m, "inode %u is a symlink of %llu bytes, longer than bfs "
					"allows (%u)", ino, (unsigned long long)EXT2_I_SIZE(&inode),
					BFS_SYMLINK_MAX);
			break;
		}
	}
	ext2fs_close_inode_scan(scan);
	free(raw);
	return ret;
}

int mig_ext_check(struct mig *m)
{
	int ret = check_features(m);

	return ret ? ret : scan_inodes(m);
}

int mig_ext_used_runs(struct mig *m, int (*fn)(struct mig *m, u64 start, u64 len, void *ctx),
		      void *ctx)
{
	ext2fs_block_bitmap map = m->ext->block_map;
	blk64_t first = m->ext->super->s_first_data_block;
	blk64_t last = ext2fs_blocks_count(m->ext->super) - 1, s, e;
	int ret;

	/* with 1 KiB blocks block 0 is the boot block, outside every group */
	for (s = first; s <= last; s = e) {
		if (ext2fs_find_first_set_block_bitmap2(map, s, last, &s))
			break;
		if (ext2fs_find_first_zero_block_bitmap2(map, s, last, &e))
			e = last + 1;
		ret = fn(m, s, e - s, ctx);
		if (ret)
			return ret;
	}
	return 0;
}
