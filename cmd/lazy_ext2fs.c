// SPDX-License-Identifier: MIT
/*
 * libext2fs (and libcom_err through it), loaded by bfs migrate (lazy_lib.h):
 * every function of them cmd/ calls, and unix_io_manager, a variable, by
 * lazy_ext2fs_unix_io_manager().  A function cmd/ starts to use must be
 * added here, or the link fails (the bfs binary does not link -lext2fs).
 */
#include "migrate.h"

#include "lazy_lib.h"

static const char *const ext2fs_sonames[] = { "libext2fs.so.2", "libext2fs.so", NULL };
struct bfs_lazy_lib lazy_ext2fs = { .sonames = ext2fs_sonames,
				.package = "libext2fs (Debian: libext2fs2)" };

io_manager lazy_ext2fs_unix_io_manager(void)
{
	io_manager *m = bfs_lazy_lib_sym(&lazy_ext2fs, "unix_io_manager");

	if (!m)
		lazy_lib_missing();
	return *m;
}

LAZY_FN(lazy_ext2fs, const char *, error_message, (long code), (code))
LAZY_FN_VOID(lazy_ext2fs, initialize_ext2_error_table, (void), ())
LAZY_FN(lazy_ext2fs, blk64_t, ext2fs_blocks_count, (struct ext2_super_block *super), (super))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_bmap2, (ext2_filsys fs, ext2_ino_t ino,
	struct ext2_inode *inode, char *block_buf, int bmap_flags, blk64_t block,
	int *ret_flags, blk64_t *phys_blk),
	(fs, ino, inode, block_buf, bmap_flags, block, ret_flags, phys_blk))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_close_free, (ext2_filsys *fs), (fs))
LAZY_FN_VOID(lazy_ext2fs, ext2fs_close_inode_scan, (ext2_inode_scan scan), (scan))
LAZY_FN_VOID(lazy_ext2fs, ext2fs_extent_free, (ext2_extent_handle_t handle), (handle))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_extent_get, (ext2_extent_handle_t handle, int flags,
	struct ext2fs_extent *extent), (handle, flags, extent))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_extent_open2, (ext2_filsys fs, ext2_ino_t ino,
	struct ext2_inode *inode, ext2_extent_handle_t *ret_handle), (fs, ino, inode, ret_handle))
LAZY_FN(lazy_ext2fs, blk64_t, ext2fs_file_acl_block, (ext2_filsys fs,
	const struct ext2_inode *inode), (fs, inode))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_find_first_set_generic_bmap, (ext2fs_generic_bitmap bitmap,
	__u64 start, __u64 end, __u64 *out), (bitmap, start, end, out))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_find_first_zero_generic_bmap,
	(ext2fs_generic_bitmap bitmap, __u64 start, __u64 end, __u64 *out),
	(bitmap, start, end, out))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_get_next_inode_full, (ext2_inode_scan scan,
	ext2_ino_t *ino, struct ext2_inode *inode, int bufsize), (scan, ino, inode, bufsize))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_inline_data_get, (ext2_filsys fs, ext2_ino_t ino,
	struct ext2_inode *inode, void *buf, size_t *size), (fs, ino, inode, buf, size))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_inline_data_size, (ext2_filsys fs, ext2_ino_t ino,
	size_t *size), (fs, ino, size))
LAZY_FN(lazy_ext2fs, int, ext2fs_is_fast_symlink, (struct ext2_inode *inode), (inode))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_lookup, (ext2_filsys fs, ext2_ino_t dir, const char *name,
	int namelen, char *buf, ext2_ino_t *inode), (fs, dir, name, namelen, buf, inode))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_open2, (const char *name, const char *io_options,
	int flags, int superblock, unsigned int block_size, io_manager manager,
	ext2_filsys *ret_fs), (name, io_options, flags, superblock, block_size, manager, ret_fs))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_open_inode_scan, (ext2_filsys fs, int buffer_blocks,
	ext2_inode_scan *ret_scan), (fs, buffer_blocks, ret_scan))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_read_bitmaps, (ext2_filsys fs), (fs))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_read_inode_full, (ext2_filsys fs, ext2_ino_t ino,
	struct ext2_inode *inode, int bufsize), (fs, ino, inode, bufsize))
LAZY_FN(lazy_ext2fs, int, ext2fs_test_block_bitmap_range2, (ext2fs_block_bitmap bitmap,
	blk64_t block, unsigned int num), (bitmap, block, num))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_xattr_get, (struct ext2_xattr_handle *h, const char *key,
	void **value, size_t *value_len), (h, key, value, value_len))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_xattrs_close, (struct ext2_xattr_handle **handle),
	(handle))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_xattrs_iterate, (struct ext2_xattr_handle *h,
	int (*func)(char *name, char *value, size_t value_len, void *data), void *data),
	(h, func, data))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_xattrs_open, (ext2_filsys fs, ext2_ino_t ino,
	struct ext2_xattr_handle **handle), (fs, ino, handle))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_xattrs_read, (struct ext2_xattr_handle *handle), (handle))
LAZY_FN(lazy_ext2fs, errcode_t, io_channel_read_blk64, (io_channel channel,
	unsigned long long block, int count, void *data), (channel, block, count, data))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_block_iterate3, (ext2_filsys fs, ext2_ino_t ino,
	int flags, char *block_buf, int (*func)(ext2_filsys fs, blk64_t *blocknr,
	e2_blkcnt_t blockcnt, blk64_t ref_blk, int ref_offset, void *priv_data),
	void *priv_data), (fs, ino, flags, block_buf, func, priv_data))
LAZY_FN(lazy_ext2fs, errcode_t, ext2fs_dir_iterate2, (ext2_filsys fs, ext2_ino_t dir, int flags,
	char *block_buf, int (*func)(ext2_ino_t dir, int entry, struct ext2_dir_entry *dirent,
	int offset, int blocksize, char *buf, void *priv_data), void *priv_data),
	(fs, dir, flags, block_buf, func, priv_data))
