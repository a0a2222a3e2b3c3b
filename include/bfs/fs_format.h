/* SPDX-License-Identifier: MIT */
/*
 * On-disk values of the namespace keys: inodes, directory entries, xattrs,
 * symlink targets, orphans and the inode-number counter.  doc/format/fs.md
 * describes the same layouts in prose and says why they are so.
 *
 * Where the keys live (all with snapshot 0):
 *
 *   inodes btree   (0, 0)              inode_counter  next inode number
 *                  (0, ino)            orphan         ino is unlinked but open
 *                  (ino, 0)            inode          struct bfs_inode_v
 *                  (ino, 1 + i)        symlink        chunk i of the target
 *   dirents btree  (dir, slot)         dirent         struct bfs_dirent_v
 *                  (dir, slot)         hash_whiteout  deleted slot of a probe chain
 *   xattrs btree   (ino, slot << 8)    xattr          struct bfs_xattr_v
 *                  (ino, slot << 8 | i) xattr_data    chunk i of a large value
 *                  (ino, slot << 8)    hash_whiteout
 *
 * Values are multiples of 8 bytes, padded with zeroes; every integer is
 * little-endian.
 */
#ifndef BFS_FS_FORMAT_H
#define BFS_FS_FORMAT_H

#include "bkey.h"

/* the key types (BFS_KEY_INODE ...) are listed in bkey.h */

/* limits of the format, checked when keys are validated */
#define BFS_NAME_MAX		255
#define BFS_LINK_MAX		65000
#define BFS_XATTR_NAME_MAX	255
#define BFS_XATTR_SIZE_MAX	(64 * 1024)
#define BFS_SYMLINK_MAX		4095
/* inode numbers are below this: the counter can always move past them */
#define BFS_INO_LIMIT		(UINT64_C(1) << 62)

/* ---- inodes ---- */

#define BFS_INODE_COUNTER_POS	BFS_POS(0, 0, 0)
#define BFS_FIRST_FREE_INO	3	/* 1 = root, 2 = lost+found */

struct bfs_inode_counter_v {
	__le64	next_ino;		/*  0: never handed out yet */
	__le64	reserved;		/*  8: zero */
};
BFS_STATIC_SIZE(struct bfs_inode_counter_v, 16);

struct bfs_inode_v {
	__le32	mode;			/*   0: S_IFMT | permission bits */
	__le32	uid;			/*   4 */
	__le32	gid;			/*   8 */
	__le32	nlink;			/*  12 */
	__le32	flags;			/*  16: BFS_INODE_* of fs.h */
	__le32	pad;			/*  20: zero */
	__le64	size;			/*  24: bytes */
	__le64	sectors;		/*  32: 512-byte sectors of data */
	__le64	rdev;			/*  40: devices only */
	__le64	generation;		/*  48 */
	__le64	atime;			/*  56: ns since the epoch (signed) */
	__le64	mtime;			/*  64 */
	__le64	ctime;			/*  72 */
	__le64	btime;			/*  80: creation */
	__le64	parent;			/*  88: directories: the parent's ino (".."), else 0 */
	__le64	reserved[4];		/*  96: zero */
};
BFS_STATIC_SIZE(struct bfs_inode_v, 128);

#define BFS_INODE_V_U64S	(sizeof(struct bfs_inode_v) / 8)
#define BFS_INODE_FLAGS_KNOWN	0xfU	/* BFS_INODE_IMMUTABLE .. NOATIME */

/* symlink target chunk: key (ino, 1 + i) */
struct bfs_symlink_v {
	__le16	len;			/*  0: bytes of target in this chunk */
	__le16	total;			/*  2: length of the whole target */
	__le32	pad;			/*  4: zero */
	u8	data[];			/*  8 */
};
BFS_STATIC_SIZE(struct bfs_symlink_v, 8);

/* ---- directory entries ---- */

/*
 * Dirent slots: offset = hash(name) masked to 62 bits, linear probing
 * upwards.  0..2 are never used: readdir cookie 0 is the start, 1 and 2
 * follow "." and "..".  A cookie is the slot + 1.
 */
#define BFS_DIRENT_SLOT_MIN	3
#define BFS_DIRENT_HASH_BITS	62

struct bfs_dirent_v {
	__le64	ino;			/*  0: target inode */
	u8	type;			/*  8: DT_* (mode >> 12) */
	u8	name_len;		/*  9: 1..255 */
	u8	pad[6];			/* 10: zero */
	u8	name[];			/* 16: name_len bytes, then zero padding */
};
BFS_STATIC_SIZE(struct bfs_dirent_v, 16);

/* ---- xattrs ---- */

/*
 * The xattr namespaces: x(NAME, number, prefix, whole) where whole means the
 * prefix is the entire attribute name (the ACLs).  Numbers are on disk.
 */
#define BFS_XATTR_NAMESPACES(x)						\
	x(USER,			1, "user.",			false)	\
	x(TRUSTED,		2, "trusted.",			false)	\
	x(SECURITY,		3, "security.",			false)	\
	x(POSIX_ACL_ACCESS,	4, "system.posix_acl_access",	true)	\
	x(POSIX_ACL_DEFAULT,	5, "system.posix_acl_default",	true)

enum bfs_xattr_ns {
#define x(n, nr, prefix, whole) BFS_XATTR_##n = nr,
	BFS_XATTR_NAMESPACES(x)
#undef x
	BFS_XATTR_NS_NR
};

/* the name prefix of namespace @ns, NULL if unknown */
static inline const char *bfs_xattr_ns_prefix(unsigned ns)
{
	switch (ns) {
#define x(n, nr, prefix, whole) case nr: return prefix;
	BFS_XATTR_NAMESPACES(x)
#undef x
	default:
		return NULL;
	}
}

/* xattr slots: hash(ns, name) masked to 54 bits; key offset = slot << 8 | chunk */
#define BFS_XATTR_HASH_BITS	54
#define BFS_XATTR_CHUNK_SHIFT	8
#define BFS_XATTR_MAX_CHUNKS	255

struct bfs_xattr_v {
	u8	ns;			/*  0: enum bfs_xattr_ns */
	u8	name_len;		/*  1: 0..255 (0 only for the posix_acl names) */
	__le16	nr_chunks;		/*  2: xattr_data keys that follow */
	__le32	value_len;		/*  4: whole value, 0..65536 */
	__le32	inline_len;		/*  8: bytes of the value stored here */
	__le32	pad;			/* 12: zero */
	u8	data[];			/* 16: name, then inline_len bytes of value */
};
BFS_STATIC_SIZE(struct bfs_xattr_v, 16);

/* continuation of a value: key (ino, slot << 8 | i), i = 1..nr_chunks */
struct bfs_xattr_data_v {
	__le32	len;			/*  0: bytes in this chunk */
	__le32	pad;			/*  4: zero */
	u8	data[];			/*  8 */
};
BFS_STATIC_SIZE(struct bfs_xattr_data_v, 8);

/*
 * POSIX ACLs: the value of the posix_acl_access and posix_acl_default
 * xattrs is Linux's xattr form of an ACL (what getfacl reads): a header,
 * then entries sorted by tag, and by id within BFS_ACL_USER and
 * BFS_ACL_GROUP.  An access ACL equivalent to the mode bits is not stored.
 */
#define BFS_ACL_VERSION		2
#define BFS_ACL_USER_OBJ	0x01
#define BFS_ACL_USER		0x02
#define BFS_ACL_GROUP_OBJ	0x04
#define BFS_ACL_GROUP		0x08
#define BFS_ACL_MASK		0x10
#define BFS_ACL_OTHER		0x20
#define BFS_ACL_MAX_ENTRIES	1024

struct bfs_acl_header {
	__le32	version;		/*  0: BFS_ACL_VERSION */
};
BFS_STATIC_SIZE(struct bfs_acl_header, 4);

struct bfs_acl_entry {
	__le16	tag;			/*  0: BFS_ACL_* */
	__le16	perm;			/*  2: rwx bits, 0..7 */
	__le32	id;			/*  4: uid or gid (USER, GROUP), else ignored */
};
BFS_STATIC_SIZE(struct bfs_acl_entry, 8);

#endif /* BFS_FS_FORMAT_H */
