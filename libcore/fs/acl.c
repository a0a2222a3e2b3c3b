// SPDX-License-Identifier: MIT
/*
 * POSIX ACLs (acl(5)): stored as the posix_acl_access and posix_acl_default
 * xattrs in Linux's xattr form (include/bfs/fs_format.h), which is what the
 * kernel hands a FUSE filesystem and reads back to check permissions.
 * What the filesystem itself must do, and does here:
 *  - an access ACL sets the permission bits (owner from USER_OBJ, group
 *    from MASK if there is one, else GROUP_OBJ, other from OTHER), and one
 *    that says no more than the bits is not stored at all;
 *  - chmod(2) changes those same entries of a stored access ACL;
 *  - a new inode in a directory with a default ACL gets that ACL, masked
 *    by the mode it was created with, instead of the umask, and a new
 *    directory also inherits the default ACL itself.
 * Every value read back is validated before it is used.  setfacl and chmod
 * write the mode and the access ACL in one transaction, so that no crash
 * leaves them disagreeing.  A create stores the inherited ACLs in a second
 * transaction after the inode: a crash between them leaves the stricter
 * of the two in force (the mode masked by the ACL's mask, no named entries).
 */
#include "ns.h"

#define ACL_ACCESS	"system.posix_acl_access"
#define ACL_DEFAULT	"system.posix_acl_default"

struct acl_ent {
	u16	tag, perm;
	u32	id;
};

struct acl {
	struct acl_ent	*e;
	size_t		n;
};

/* decode and check an ACL as posix_acl_valid() does; -EINVAL if malformed */
static int acl_decode(const void *value, size_t size, struct acl *a)
{
	const u8 *p = value;
	struct bfs_acl_header h;
	unsigned seen = 0;
	u16 prev_tag = 0;
	u32 prev_id = 0;
	size_t i;

	a->e = NULL;
	a->n = 0;
	if (size < sizeof(h) || (size - sizeof(h)) % sizeof(struct bfs_acl_entry))
		return -EINVAL;
	memcpy(&h, p, sizeof(h));
	if (le32_to_cpu(h.version) != BFS_ACL_VERSION)
		return -EINVAL;
	a->n = (size - sizeof(h)) / sizeof(struct bfs_acl_entry);
	if (a->n > BFS_ACL_MAX_ENTRIES)
		return -EINVAL;
	if (!a->n)
		return 0;
	a->e = bfs_calloc(a->n, sizeof(*a->e));
	if (!a->e)
		return -ENOMEM;
	for (i = 0; i < a->n; i++) {
		struct bfs_acl_entry d;
		struct acl_ent *e = &a->e[i];

		memcpy(&d, p + sizeof(h) + i * sizeof(d), sizeof(d));
		e->tag = le16_to_cpu(d.tag);
		e->perm = le16_to_cpu(d.perm);
		e->id = le32_to_cpu(d.id);
		if (e->perm & ~7U)
			goto bad;
		switch (e->tag) {
		case BFS_ACL_USER_OBJ:
		case BFS_ACL_GROUP_OBJ:
		case BFS_ACL_MASK:
		case BFS_ACL_OTHER:
			if (seen & e->tag)
				goto bad;	/* one of each */
			e->id = 0;
			break;
		case BFS_ACL_USER:
		case BFS_ACL_GROUP:
			if (e->tag == prev_tag && e->id <= prev_id)
				goto bad;	/* sorted by id, no repeats */
			break;
		default:
			goto bad;
		}
		if (e->tag < prev_tag)
			goto bad;		/* sorted by tag */
		seen |= e->tag;
		prev_tag = e->tag;
		prev_id = e->id;
	}
	if ((seen & (BFS_ACL_USER_OBJ | BFS_ACL_GROUP_OBJ | BFS_ACL_OTHER)) !=
	    (BFS_ACL_USER_OBJ | BFS_ACL_GROUP_OBJ | BFS_ACL_OTHER))
		goto bad;
	if ((seen & (BFS_ACL_USER | BFS_ACL_GROUP)) && !(seen & BFS_ACL_MASK))
		goto bad;
	return 0;
bad:
	bfs_free(a->e);
	a->e = NULL;
	return -EINVAL;
}

/* into @buf (4 + 8 * n bytes); returns the size */
static size_t acl_encode(const struct acl *a, u8 *buf)
{
	struct bfs_acl_header h = { .version = cpu_to_le32(BFS_ACL_VERSION) };
	size_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = 0; i < a->n; i++) {
		struct bfs_acl_entry d = {
			.tag = cpu_to_le16(a->e[i].tag),
			.perm = cpu_to_le16(a->e[i].perm),
			.id = cpu_to_le32(a->e[i].id),
		};

		memcpy(buf + sizeof(h) + i * sizeof(d), &d, sizeof(d));
	}
	return sizeof(h) + a->n * sizeof(struct bfs_acl_entry);
}

static size_t acl_size(const struct acl *a)
{
	return sizeof(struct bfs_acl_header) + a->n * sizeof(struct bfs_acl_entry);
}

static struct acl_ent *acl_find(struct acl *a, u16 tag)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->e[i].tag == tag)
			return &a->e[i];
	return NULL;
}

/* the permission bits an access ACL stands for; *equiv: the bits say it all */
static u32 acl_mode(struct acl *a, bool *equiv)
{
	struct acl_ent *mask = acl_find(a, BFS_ACL_MASK);
	u32 mode = (u32)acl_find(a, BFS_ACL_USER_OBJ)->perm << 6 |
		   (u32)(mask ? mask : acl_find(a, BFS_ACL_GROUP_OBJ))->perm << 3 |
		   acl_find(a, BFS_ACL_OTHER)->perm;

	*equiv = a->n == 3;
	return mode;
}

/* the ACL stored as @name, validated: 0, -ENODATA (none), -EUCLEAN (corrupt) */
static int acl_read(struct bfs_fs *fs, u64 ino, const char *name, struct acl *a)
{
	ssize_t n;
	u8 *buf;
	int ret;

	a->e = NULL;
	a->n = 0;
	n = bfs_fs_getxattr(fs, ino, name, NULL, 0);
	if (n < 0)
		return (int)n;
	buf = bfs_malloc(n ? (size_t)n : 1);
	if (!buf)
		return -ENOMEM;
	n = bfs_fs_getxattr(fs, ino, name, buf, (size_t)n);
	ret = n < 0 ? (int)n : acl_decode(buf, (size_t)n, a);
	bfs_free(buf);
	if (ret == -EINVAL) {
		bfs_err("inode %llu: %s is not a valid ACL", (unsigned long long)ino, name);
		ret = -EUCLEAN;
	}
	return ret;
}

/* queue @a as @name within @t */
static int acl_update(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, const char *name,
		      const struct acl *a)
{
	u8 *buf = bfs_malloc(acl_size(a));
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = bfs_xattr_update(fs, t, ino, name, buf, acl_encode(a, buf), 0);
	bfs_free(buf);
	return ret;
}

/*
 * One transaction: the ACL @name set to @a, or removed (@a NULL or empty),
 * with the inode's ctime and, with @mode, the permission bits an access
 * ACL stands for.  Removing an ACL that is not there is no error.
 */
static int acl_store(struct bfs_fs *fs, u64 ino, const char *name, const struct acl *a,
		     const u32 *mode)
{
	u8 *buf = NULL;
	size_t len = 0;
	int ret;

	if (a && a->n) {
		buf = bfs_malloc(acl_size(a));
		if (!buf)
			return -ENOMEM;
		len = acl_encode(a, buf);
	}
	ret = bfs_xattr_set_mode(fs, ino, name, buf, len, 0, mode);
	bfs_free(buf);
	return ret == -ENODATA ? 0 : ret;
}

int bfs_fs_set_acl_kill_sgid(struct bfs_fs *fs, u64 ino, bool dflt, const void *value,
			     size_t size, bool kill_sgid)
{
	struct bfs_stat st;
	struct acl a;
	bool equiv;
	u32 mode;
	int ret;

	if (fs->read_only)
		return -EROFS;
	ret = bfs_fs_getattr(fs, ino, &st);
	if (ret)
		return ret;
	if (dflt && !S_ISDIR(st.mode))
		return value ? -EACCES : 0;
	if (!value)
		return acl_store(fs, ino, dflt ? ACL_DEFAULT : ACL_ACCESS, NULL, NULL);
	ret = acl_decode(value, size, &a);
	if (ret)
		return ret;
	if (dflt) {
		/* an empty default ACL removes it, as setfacl -k does */
		ret = acl_store(fs, ino, ACL_DEFAULT, &a, NULL);
	} else if (!a.n) {
		ret = -EINVAL;
	} else {
		/* one that says no more than the permission bits is not stored */
		mode = acl_mode(&a, &equiv) | (kill_sgid ? S_ISUID | S_ISVTX : 07000);
		ret = acl_store(fs, ino, ACL_ACCESS, equiv ? NULL : &a, &mode);
	}
	bfs_free(a.e);
	return ret;
}

int bfs_fs_set_acl(struct bfs_fs *fs, u64 ino, bool dflt, const void *value, size_t size)
{
	return bfs_fs_set_acl_kill_sgid(fs, ino, dflt, value, size, false);
}

int bfs_acl_chmod_trans(struct bfs_fs *fs, struct bfs_trans *t, u64 ino, u32 mode)
{
	struct acl_ent *g;
	struct acl a;
	int ret;

	ret = acl_read(fs, ino, ACL_ACCESS, &a);
	if (ret)
		return ret == -ENODATA ? 0 : ret;
	acl_find(&a, BFS_ACL_USER_OBJ)->perm = (mode >> 6) & 7;
	g = acl_find(&a, BFS_ACL_MASK);
	(g ? g : acl_find(&a, BFS_ACL_GROUP_OBJ))->perm = (mode >> 3) & 7;
	acl_find(&a, BFS_ACL_OTHER)->perm = mode & 7;
	ret = acl_update(fs, t, ino, ACL_ACCESS, &a);
	bfs_free(a.e);
	return ret;
}

void bfs_fs_acl_new_free(struct bfs_acl_new *n)
{
	bfs_free(n->access);
	bfs_free(n->dflt);
	memset(n, 0, sizeof(*n));
}

int bfs_fs_acl_new(struct bfs_fs *fs, u64 dir, u32 *mode, u32 umask, struct bfs_acl_new *n)
{
	struct acl a;
	bool equiv;
	size_t i;
	u32 bits;
	int ret;

	memset(n, 0, sizeof(*n));
	ret = acl_read(fs, dir, ACL_DEFAULT, &a);
	if (ret == -ENODATA || (!ret && !a.n)) {
		*mode &= ~(umask & 0777);
		return 0;
	}
	if (ret)
		return ret;
	if (S_ISDIR(*mode)) {
		n->dflt_len = acl_size(&a);
		n->dflt = bfs_malloc(n->dflt_len);
		if (!n->dflt) {
			bfs_free(a.e);
			return -ENOMEM;
		}
		acl_encode(&a, n->dflt);
	}
	/* posix_acl_create_masq(): the create mode limits the inherited entries */
	bits = *mode;
	for (i = 0; i < a.n; i++) {
		struct acl_ent *e = &a.e[i];

		if (e->tag == BFS_ACL_USER_OBJ)
			e->perm &= (bits >> 6) & 7;
		else if (e->tag == BFS_ACL_OTHER)
			e->perm &= bits & 7;
		else if (e->tag == BFS_ACL_MASK ||
			 (e->tag == BFS_ACL_GROUP_OBJ && !acl_find(&a, BFS_ACL_MASK)))
			e->perm &= (bits >> 3) & 7;
	}
	*mode = (*mode & ~0777U) | acl_mode(&a, &equiv);
	if (!equiv) {
		n->access_len = acl_size(&a);
		n->access = bfs_malloc(n->access_len);
		if (!n->access) {
			bfs_free(a.e);
			bfs_fs_acl_new_free(n);
			return -ENOMEM;
		}
		acl_encode(&a, n->access);
	}
	bfs_free(a.e);
	return 0;
}

int bfs_fs_acl_new_apply(struct bfs_fs *fs, u64 ino, const struct bfs_acl_new *n)
{
	int ret = 0;

	if (n->access)
		ret = bfs_fs_setxattr(fs, ino, ACL_ACCESS, n->access, n->access_len, 0);
	if (!ret && n->dflt)
		ret = bfs_fs_setxattr(fs, ino, ACL_DEFAULT, n->dflt, n->dflt_len, 0);
	return ret;
}
