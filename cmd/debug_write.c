// SPDX-License-Identifier: MIT
/*
 * bfs debug: the write commands (only with -w).  Keys go in and out through
 * transactions, files and directories through fs.h, so every change is one
 * the rest of bfs could have made, checked the same way.  `corrupt` is the
 * exception by design: it flips bytes on the device and leaves checksums
 * wrong, to make damaged images for tests.
 */
#include "debug.h"

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/fs_format.h>
#include <bfs/os.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_TEXT	4096
#define CORRUPT_MAX	(1024 * 1024)

static const struct bfs_creds root_creds = { 0, 0 };

static int sync_fs(struct dbg *d)
{
	int ret = bfs_fs_sync(d->fs);

	return ret ? dbg_err(d, "sync failed: %s", strerror(-ret)) : 0;
}

static int flush_core(struct dbg *d)
{
	int ret = bfs_core_flush(d->core);

	return ret ? dbg_err(d, "flush failed: %s", strerror(-ret)) : 0;
}

/* ---- set-inode ---- */

/* ns since the epoch, negative before 1970 (utimensat takes those too) */
static int parse_time(const char *s, struct timespec *ts)
{
	bool neg = *s == '-';
	u64 ns;

	if (dbg_parse_u64(s + neg, &ns) || ns > (u64)INT64_MAX)
		return -EINVAL;
	ts->tv_sec = (time_t)(ns / 1000000000ULL);
	ts->tv_nsec = (long)(ns % 1000000000ULL);
	if (neg && ts->tv_nsec) {
		/* a timespec's nanoseconds are never negative */
		ts->tv_sec = -ts->tv_sec - 1;
		ts->tv_nsec = 1000000000L - ts->tv_nsec;
	} else if (neg) {
		ts->tv_sec = -ts->tv_sec;
	}
	return 0;
}

/* INUM: a number, <N>, or a path */
static int resolve_inum(struct dbg *d, const char *s, u64 *ino)
{
	if (!dbg_parse_u64(s, ino))
		return 0;
	return dbg_resolve(d, s, ino, NULL);
}

/*
 * Fields no filesystem call sets: the inode key is rewritten as it is with
 * just that field changed, and nothing else is fixed up, so that fsck test
 * images can be made with exactly one thing wrong.
 */
static int set_inode_raw(struct dbg *d, u64 ino, const char *field, u64 v)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_inode_v *iv = bfs_bkey_val(k);
	int ret;

	ret = bfs_btree_lookup(d->core, BFS_BTREE_INODES, BFS_POS(ino, 0, 0), buf, sizeof(buf));
	if (ret || k->type != BFS_KEY_INODE)
		return dbg_err(d, "inode %" PRIu64 ": %s", ino, strerror(ret ? -ret : ENOENT));
	if (!strcmp(field, "nlink")) {
		if (v > UINT32_MAX)
			return dbg_err(d, "%" PRIu64 " does not fit in 32 bits", v);
		iv->nlink = cpu_to_le32((u32)v);
	} else if (!strcmp(field, "generation")) {
		iv->generation = cpu_to_le64(v);
	} else if (!strcmp(field, "sectors")) {
		iv->sectors = cpu_to_le64(v);
	} else if (!strcmp(field, "raw_size")) {
		iv->size = cpu_to_le64(v);	/* no truncate or extension, unlike "size" */
	} else if (!strcmp(field, "raw_mode")) {
		iv->mode = cpu_to_le32((u32)v);	/* the file type too, unlike "mode" */
		if (!S_ISDIR((u32)v))
			iv->parent = cpu_to_le64(0);	/* else the key itself is invalid */
	} else {
		iv->parent = cpu_to_le64(v);
	}
	ret = bfs_btree_insert(d->core, BFS_BTREE_INODES, k);
	if (ret)
		return dbg_err(d, "inode %" PRIu64 ": %s", ino, strerror(-ret));
	printf("inode %" PRIu64 ": %s set to %" PRIu64 " (raw)\n", ino, field, v);
	return flush_core(d);
}

static bool raw_field(const char *field)
{
	return !strcmp(field, "nlink") || !strcmp(field, "generation") ||
	       !strcmp(field, "sectors") || !strcmp(field, "parent") || !strcmp(field, "raw_size") ||
	       !strcmp(field, "raw_mode");
}

int dbg_cmd_set_inode(struct dbg *d, int argc, char **argv)
{
	const char *field = argv[2], *val = argv[3];
	struct bfs_setattr sa = { 0 };
	struct bfs_stat st;
	char *end;
	u64 ino, v = 0;
	int ret;

	ret = resolve_inum(d, argv[1], &ino);
	if (ret)
		return dbg_err(d, "%s: %s", argv[1], strerror(-ret));
	if (!strcmp(field, "raw_mode")) {
		/* the whole mode in octal, file type included (0100644) */
		errno = 0;
		v = strtoull(val, &end, 8);
		if (errno || *end || !*val || v > 0177777)
			return dbg_err(d, "bad mode '%s' (octal, file type and permission bits)", val);
		return set_inode_raw(d, ino, field, v);
	}
	if (raw_field(field)) {
		if (dbg_parse_u64(val, &v))
			return dbg_err(d, "bad number '%s'", val);
		return set_inode_raw(d, ino, field, v);
	}
	if (!strcmp(field, "mode")) {
		/* permission bits, always octal as chmod(1) takes them */
		errno = 0;
		v = strtoull(val, &end, 8);
		if (errno || *end || !*val || v > 07777)
			return dbg_err(d, "bad mode '%s' (octal permission bits)", val);
		sa.valid = BFS_SET_MODE;
		sa.mode = (u32)v;
	} else if (!strcmp(field, "atime") || !strcmp(field, "mtime") || !strcmp(field, "ctime")) {
		struct timespec *ts = field[0] == 'a' ? &sa.atime : field[0] == 'm' ? &sa.mtime :
			&sa.ctime;

		if (parse_time(val, ts))
			return dbg_err(d, "bad time '%s' (ns since the epoch)", val);
		sa.valid = field[0] == 'a' ? BFS_SET_ATIME : field[0] == 'm' ? BFS_SET_MTIME :
			BFS_SET_CTIME;
	} else {
		if (dbg_parse_u64(val, &v))
			return dbg_err(d, "bad number '%s'", val);
		if (!strcmp(field, "size")) {
			sa.valid = BFS_SET_SIZE;
			sa.size = v;
		} else if (v > UINT32_MAX) {
			return dbg_err(d, "%s does not fit in 32 bits", val);
		} else if (!strcmp(field, "uid")) {
			sa.valid = BFS_SET_UID;
			sa.uid = (u32)v;
		} else if (!strcmp(field, "gid")) {
			sa.valid = BFS_SET_GID;
			sa.gid = (u32)v;
		} else if (!strcmp(field, "flags")) {
			sa.valid = BFS_SET_FLAGS;
			sa.flags = (u32)v;
		} else {
			return dbg_err(d, "unknown field '%s' (mode, uid, gid, size, flags, atime, "
				       "mtime, ctime, nlink, generation, sectors, parent, raw_size, raw_mode)",
				       field);
		}
	}
	ret = bfs_fs_setattr(d->fs, ino, &sa, &st);
	if (ret)
		return dbg_err(d, "inode %" PRIu64 ": %s", ino, strerror(-ret));
	printf("inode %" PRIu64 ": %s set to %s\n", ino, field, val);
	return sync_fs(d);
}

/* ---- del-key, put-key ---- */

static int parse_btree_pos(struct dbg *d, const char *b, const char *p, int *id,
			   struct bfs_bpos *pos)
{
	*id = dbg_parse_btree(b);
	if (*id < 0)
		return dbg_err(d, "unknown btree '%s'", b);
	if (dbg_parse_pos(p, pos))
		return dbg_err(d, "bad position '%s' (INODE:OFFSET[:SNAPSHOT])", p);
	return 0;
}

int dbg_cmd_del_key(struct dbg *d, int argc, char **argv)
{
	u64 buf[BFS_BKEY_VAL_MAX_BYTES / 8 + BFS_BKEY_U64S];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_trans *t;
	struct bfs_bpos pos;
	char text[KEY_TEXT];
	int id, ret;

	if (parse_btree_pos(d, argv[1], argv[2], &id, &pos))
		return DBG_FAIL;
	ret = bfs_btree_lookup(d->core, (enum bfs_btree_id)id, pos, buf, sizeof(buf));
	if (ret == -ENOENT)
		return dbg_err(d, "no key at %s in btree %s", argv[2], argv[1]);
	if (ret)
		return dbg_err(d, "lookup failed: %s", strerror(-ret));
	/* extents: the lookup found the extent containing pos; delete all of it */
	bfs_bkey_to_text(text, sizeof(text), k);
	ret = bfs_trans_begin(d->core, &t);
	if (!ret) {
		if (bfs_btree_is_extents((unsigned)id))
			ret = bfs_trans_delete_range(t, (enum bfs_btree_id)id, le64_to_cpu(k->inode),
						     bfs_bkey_start(k), le64_to_cpu(k->offset),
						     le32_to_cpu(k->snapshot));
		else
			ret = bfs_trans_delete(t, (enum bfs_btree_id)id, bfs_bkey_pos(k));
		if (!ret)
			ret = bfs_trans_commit(t, NULL);
		bfs_trans_end(t);
	}
	if (ret)
		return dbg_err(d, "delete failed: %s", strerror(-ret));
	printf("deleted: %s\n", text);
	return flush_core(d);
}

static int parse_hex(const char *s, u8 *out, size_t max, size_t *len)
{
	size_t n = strlen(s), i;

	if (!strncmp(s, "0x", 2)) {
		s += 2;
		n -= 2;
	}
	if (n % 2 || n / 2 > max)
		return -EINVAL;
	for (i = 0; i < n / 2; i++) {
		unsigned b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1 || !strchr("0123456789abcdefABCDEF", s[2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", s[2 * i + 1]))
			return -EINVAL;
		out[i] = (u8)b;
	}
	*len = n / 2;
	return 0;
}

int dbg_cmd_put_key(struct dbg *d, int argc, char **argv)
{
	u64 *buf = calloc(1, BFS_BKEY_VAL_MAX_BYTES + sizeof(struct bfs_bkey) + 8);
	struct bfs_bkey *k = (void *)buf;
	char text[KEY_TEXT], err[BFS_BKEY_ERR_LEN];
	u8 *val = (u8 *)(k + 1);
	size_t vlen = 0;
	struct bfs_bpos pos;
	u64 size = 0;
	int id, type, a, ret = DBG_FAIL;

	if (!buf)
		return dbg_err(d, "out of memory");
	if (parse_btree_pos(d, argv[1], argv[3], &id, &pos))
		goto out;
	type = dbg_parse_key_type(argv[2]);
	if (type < 0) {
		dbg_err(d, "unknown key type '%s'", argv[2]);
		goto out;
	}
	for (a = 4; a < argc; a++) {
		if (!strncmp(argv[a], "size=", 5)) {
			if (dbg_parse_u64(argv[a] + 5, &size) || size > UINT32_MAX) {
				dbg_err(d, "bad size '%s'", argv[a] + 5);
				goto out;
			}
		} else if (!strncmp(argv[a], "hex=", 4)) {
			if (parse_hex(argv[a] + 4, val, BFS_BKEY_VAL_MAX_BYTES, &vlen)) {
				dbg_err(d, "bad hex value (pairs of hex digits, at most %u bytes)",
					(unsigned)BFS_BKEY_VAL_MAX_BYTES);
				goto out;
			}
		} else {
			dbg_err(d, "unknown argument '%s' (size=N, hex=BYTES)", argv[a]);
			goto out;
		}
	}
	/* the value is padded with zeros to whole u64s, as keys are stored */
	bfs_bkey_init(k, (u8)type, pos, (u32)((vlen + 7) / 8));
	k->size = cpu_to_le32((u32)size);
	bfs_bkey_to_text(text, sizeof(text), k);
	if (bfs_bkey_validate(k, bfs_btree_is_extents((unsigned)id), err, sizeof(err))) {
		dbg_err(d, "invalid key: %s (key %s)", err, text);
		goto out;
	}
	ret = bfs_btree_insert(d->core, (enum bfs_btree_id)id, k);
	if (ret) {
		ret = dbg_err(d, "insert failed: %s", strerror(-ret));
		goto out;
	}
	printf("inserted: %s\n", text);
	ret = flush_core(d);
out:
	free(buf);
	return ret;
}

/* ---- corrupt ---- */

static void print_hex(const u8 *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < 32; i++)
		printf("%02x", p[i]);
	if (n > 32)
		printf("...");
}

int dbg_cmd_corrupt(struct dbg *d, int argc, char **argv)
{
	u64 addr, off, len = 1, at;
	u8 *buf;
	size_t i;
	int ret;

	if (dbg_parse_u64(argv[1], &addr) || dbg_parse_u64(argv[2], &off) ||
	    (argc > 3 && dbg_parse_u64(argv[3], &len)))
		return dbg_err(d, "bad number (ADDR OFFSET [LEN], decimal or 0x hex)");
	if (!len || len > CORRUPT_MAX)
		return dbg_err(d, "LEN must be 1 .. %d", CORRUPT_MAX);
	at = addr + off;
	if (at < addr || at + len < at || at + len > bfs_dev_size(d->dev))
		return dbg_err(d, "bytes %" PRIu64 "+%" PRIu64 " are beyond the end of the device", at,
			       len);
	buf = malloc(len);
	if (!buf)
		return dbg_err(d, "out of memory");
	ret = dbg_begin_raw_write(d);
	if (!ret)
		ret = bfs_dev_read(d->dev, at, buf, len);
	if (!ret) {
		printf("byte %" PRIu64 " (%" PRIu64 "+%" PRIu64 "), %" PRIu64 " byte%s: ", at, addr, off,
		       len, len == 1 ? "" : "s");
		print_hex(buf, len);
		for (i = 0; i < len; i++)
			buf[i] ^= 0xff;
		printf(" -> ");
		print_hex(buf, len);
		putchar('\n');
		ret = bfs_dev_write(d->dev, at, buf, len);
		if (!ret)
			ret = bfs_dev_flush(d->dev);
	}
	free(buf);
	dbg_end_raw_write(d);
	return ret ? dbg_err(d, "%s", strerror(-ret)) : 0;
}

/* ---- write, mkdir, symlink, rm ---- */

int dbg_cmd_write(struct dbg *d, int argc, char **argv)
{
	const char *name;
	struct bfs_stat st;
	struct stat hst;
	size_t len;
	char *buf;
	u64 dir, off = 0;
	int fd, ret;

	fd = open(argv[1], O_RDONLY);
	if (fd < 0)
		return dbg_err(d, "%s: %s", argv[1], strerror(errno));
	if (fstat(fd, &hst) || !S_ISREG(hst.st_mode)) {
		close(fd);
		return dbg_err(d, "%s: not a regular file", argv[1]);
	}
	ret = dbg_resolve_parent(d, argv[2], &dir, &name, &len);
	if (!ret)
		ret = bfs_fs_mknod(d->fs, dir, name, len, S_IFREG | (hst.st_mode & 0777), 0,
				   &root_creds, &st);
	if (ret) {
		close(fd);
		return dbg_err(d, "%s: %s", argv[2], strerror(-ret));
	}
	buf = malloc(256 * 1024);
	if (!buf) {
		close(fd);
		return dbg_err(d, "out of memory");
	}
	for (;;) {
		ssize_t n = read(fd, buf, 256 * 1024), w;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (!n)
			break;
		w = bfs_fs_write(d->fs, st.ino, buf, (size_t)n, off);
		if (w != n) {
			ret = w < 0 ? (int)w : -EIO;
			break;
		}
		off += (u64)n;
	}
	free(buf);
	close(fd);
	if (ret)
		return dbg_err(d, "%s: %s", argv[2], strerror(-ret));
	printf("wrote %" PRIu64 " bytes to %s (inode %" PRIu64 ")\n", off, argv[2], st.ino);
	return sync_fs(d);
}

/* make a directory at @path, or a symlink to @target (owned by root) */
static int make_entry(struct dbg *d, const char *path, const char *target)
{
	const char *name;
	struct bfs_stat st;
	size_t len;
	u64 dir;
	int ret;

	ret = dbg_resolve_parent(d, path, &dir, &name, &len);
	if (!ret)
		ret = target ? bfs_fs_symlink(d->fs, dir, name, len, target, &root_creds, &st) :
			bfs_fs_mkdir(d->fs, dir, name, len, 0755, &root_creds, &st);
	if (ret)
		return dbg_err(d, "%s: %s", path, strerror(-ret));
	return sync_fs(d);
}

int dbg_cmd_mkdir(struct dbg *d, int argc, char **argv)
{
	return make_entry(d, argv[1], NULL);
}

int dbg_cmd_symlink(struct dbg *d, int argc, char **argv)
{
	return make_entry(d, argv[2], argv[1]);
}

int dbg_cmd_rm(struct dbg *d, int argc, char **argv)
{
	const char *name;
	struct bfs_stat st;
	size_t len;
	u64 dir;
	int ret;

	ret = dbg_resolve_parent(d, argv[1], &dir, &name, &len);
	if (!ret)
		ret = bfs_fs_lookup(d->fs, dir, name, len, &st);
	if (!ret)
		ret = S_ISDIR(st.mode) ? bfs_fs_rmdir(d->fs, dir, name, len) :
			bfs_fs_unlink(d->fs, dir, name, len);
	if (ret)
		return dbg_err(d, "%s: %s", argv[1], strerror(-ret));
	return sync_fs(d);
}
