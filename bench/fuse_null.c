// SPDX-License-Identifier: MIT
/*
 * bench/fuse_null: the FUSE baseline of bench/fs-vs-peers.  A low-level FUSE
 * filesystem that keeps names, sizes and modes in memory and throws data
 * away (reads return zeros), mounted with the same settings as `bfs mount`
 * (multi-threaded, 10 threads, 1 MiB writes, default_permissions, O_DIRECT
 * honoured with direct_io).  Whatever it cannot beat, no FUSE filesystem on
 * this kernel can: its numbers are the ceiling FUSE itself puts on bfs and
 * fuse2fs.
 *
 * usage: fuse_null MOUNTPOINT [TIMEOUT [writeback]]
 *        (stays in the foreground; umount to stop).  TIMEOUT: seconds the
 *        kernel caches names and attributes (default 60, as bfs mount);
 *        writeback: the kernel's write-back cache (bfs mount -o writeback)
 * build: cc -O2 -o fuse_null fuse_null.c $(pkg-config --cflags --libs fuse3)
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_WRITE	(1024 * 1024)
#define HASH_BITS	20

struct dirent_;

struct node {
	struct dirent_ *children;	/* newest first: readdir order */
	mode_t	mode;
	off_t	size;
	nlink_t	nlink;
	struct timespec mtime;
};

struct dirent_ {
	struct dirent_ *next;		/* in the hash chain */
	struct dirent_ *sib;		/* in the parent's children */
	fuse_ino_t parent, ino;
	char	name[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct node *nodes;
static size_t nr_nodes, cap_nodes;
static struct dirent_ *hash[1 << HASH_BITS];
/* how long the kernel may cache names and attributes (argv[2]; bfs mount's default) */
static double timeout = 60.0;
/* argv[3] "writeback": the kernel's write-back cache, as bfs mount -o writeback */
static bool writeback;

static unsigned hash_of(fuse_ino_t parent, const char *name)
{
	uint64_t h = parent * 0x9e3779b97f4a7c15ULL;

	while (*name)
		h = (h ^ (unsigned char)*name++) * 0x100000001b3ULL;
	return (unsigned)(h >> (64 - HASH_BITS));
}

/* callers hold the lock */
static struct dirent_ *find(fuse_ino_t parent, const char *name)
{
	struct dirent_ *d;

	for (d = hash[hash_of(parent, name)]; d; d = d->next)
		if (d->parent == parent && !strcmp(d->name, name))
			return d;
	return NULL;
}

static fuse_ino_t new_node(mode_t mode)
{
	if (nr_nodes == cap_nodes) {
		size_t cap = cap_nodes ? cap_nodes * 2 : 1024;
		struct node *n = realloc(nodes, cap * sizeof(*n));

		if (!n)
			return 0;
		nodes = n;
		cap_nodes = cap;
	}
	nodes[nr_nodes] = (struct node){ .mode = mode, .nlink = S_ISDIR(mode) ? 2 : 1 };
	clock_gettime(CLOCK_REALTIME, &nodes[nr_nodes].mtime);
	return nr_nodes++;
}

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	const struct node *n = &nodes[ino];

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = n->mode;
	st->st_nlink = n->nlink;
	st->st_size = n->size;
	st->st_blocks = (n->size + 511) / 512;
	st->st_blksize = 4096;
	st->st_mtim = st->st_ctim = st->st_atim = n->mtime;
}

static void reply_entry(fuse_req_t req, fuse_ino_t ino)
{
	struct fuse_entry_param e = { .ino = ino, .attr_timeout = timeout,
				       .entry_timeout = timeout };

	fill_stat(ino, &e.attr);
	pthread_mutex_unlock(&lock);
	fuse_reply_entry(req, &e);
}

static void reply_negative(fuse_req_t req)
{
	struct fuse_entry_param e = { .ino = 0, .entry_timeout = timeout };

	fuse_reply_entry(req, &e);
}

static void op_init(void *data, struct fuse_conn_info *conn)
{
	conn->max_write = MAX_WRITE;
	/* as bfs: the kernel clears set-user-ID bits itself */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	if (writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dirent_ *d;

	pthread_mutex_lock(&lock);
	d = find(parent, name);
	if (d)
		return reply_entry(req, d->ino);
	pthread_mutex_unlock(&lock);
	/* as bfs: a negative entry, so the kernel caches the absence too */
	reply_negative(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	pthread_mutex_lock(&lock);
	fill_stat(ino, &st);
	pthread_mutex_unlock(&lock);
	fuse_reply_attr(req, &st, timeout);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct stat st;

	pthread_mutex_lock(&lock);
	if (to_set & FUSE_SET_ATTR_SIZE)
		nodes[ino].size = attr->st_size;
	if (to_set & FUSE_SET_ATTR_MODE)
		nodes[ino].mode = (nodes[ino].mode & S_IFMT) | (attr->st_mode & 07777);
	fill_stat(ino, &st);
	pthread_mutex_unlock(&lock);
	fuse_reply_attr(req, &st, timeout);
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct dirent_ *d;
	struct fuse_entry_param e = { .attr_timeout = timeout, .entry_timeout = timeout };
	unsigned h = hash_of(parent, name);

	pthread_mutex_lock(&lock);
	if (find(parent, name)) {
		pthread_mutex_unlock(&lock);
		fuse_reply_err(req, EEXIST);
		return;
	}
	d = malloc(sizeof(*d) + strlen(name) + 1);
	e.ino = d ? new_node(mode) : 0;
	if (!e.ino) {
		free(d);
		pthread_mutex_unlock(&lock);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	d->parent = parent;
	d->ino = e.ino;
	strcpy(d->name, name);
	d->next = hash[h];
	hash[h] = d;
	d->sib = nodes[parent].children;
	nodes[parent].children = d;
	fill_stat(e.ino, &e.attr);
	pthread_mutex_unlock(&lock);
	if (fi) {
		fi->keep_cache = 1;
		fi->direct_io = !!(fi->flags & O_DIRECT);
		fi->noflush = 1;
		fuse_reply_create(req, &e, fi);
	} else {
		fuse_reply_entry(req, &e);
	}
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		     dev_t rdev)
{
	make_node(req, parent, name, mode, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | (mode & 07777), NULL);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	make_node(req, parent, name, S_IFREG | (mode & 07777), fi);
}

static void unlink_sib(fuse_ino_t parent, struct dirent_ *d)
{
	struct dirent_ **p;

	for (p = &nodes[parent].children; *p; p = &(*p)->sib) {
		if (*p == d) {
			*p = d->sib;
			return;
		}
	}
}

/* unlink and rmdir (a directory's children are not checked: nothing is kept) */
static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct dirent_ **p;

	pthread_mutex_lock(&lock);
	for (p = &hash[hash_of(parent, name)]; *p; p = &(*p)->next) {
		if ((*p)->parent == parent && !strcmp((*p)->name, name)) {
			struct dirent_ *d = *p;

			*p = d->next;
			unlink_sib(parent, d);
			free(d);
			pthread_mutex_unlock(&lock);
			fuse_reply_err(req, 0);
			return;
		}
	}
	pthread_mutex_unlock(&lock);
	fuse_reply_err(req, ENOENT);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	/* as bfs: the kernel keeps cached pages, O_DIRECT bypasses them */
	fi->keep_cache = 1;
	fi->direct_io = !!(fi->flags & O_DIRECT);
	fi->noflush = 1;
	if (fi->flags & O_TRUNC) {
		pthread_mutex_lock(&lock);
		nodes[ino].size = 0;
		pthread_mutex_unlock(&lock);
	}
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	static const char zeros[MAX_WRITE];
	off_t fsize;

	pthread_mutex_lock(&lock);
	fsize = nodes[ino].size;
	pthread_mutex_unlock(&lock);
	if (off >= fsize)
		size = 0;
	else if ((off_t)size > fsize - off)
		size = fsize - off;
	fuse_reply_buf(req, zeros, size > MAX_WRITE ? MAX_WRITE : size);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	pthread_mutex_lock(&lock);
	if (off + (off_t)size > nodes[ino].size)
		nodes[ino].size = off + size;
	pthread_mutex_unlock(&lock);
	fuse_reply_write(req, size);
}

static void op_ok(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

/*
 * Listings: ".", ".." and the children, the offset of an entry being its
 * position plus one.  readdirplus hands out attributes as a lookup would
 * (nothing is ever forgotten here, so lookup counts need no bookkeeping).
 */
static void list_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	char *buf = malloc(size ? size : 1);
	struct dirent_ *d;
	size_t used = 0;
	off_t pos;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	pthread_mutex_lock(&lock);
	d = nodes[ino].children;
	for (pos = 0; ; pos++) {
		struct fuse_entry_param e = { .attr_timeout = timeout, .entry_timeout = timeout };
		const char *name;
		size_t n;

		if (pos >= 2 && !d)
			break;
		if (pos < 2) {
			name = pos ? ".." : ".";
			e.attr.st_ino = ino;
			e.attr.st_mode = S_IFDIR;
		} else {
			name = d->name;
			if (plus)
				e.ino = d->ino;
			fill_stat(d->ino, &e.attr);
		}
		if (pos >= off) {
			n = plus ? fuse_add_direntry_plus(req, buf + used, size - used, name, &e, pos + 1)
				 : fuse_add_direntry(req, buf + used, size - used, name, &e.attr, pos + 1);
			if (n > size - used)
				break;
			used += n;
		}
		if (pos >= 2)
			d = d->sib;
	}
	pthread_mutex_unlock(&lock);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	list_dir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	list_dir(req, ino, size, off, true);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st = {
		.f_bsize = 4096, .f_frsize = 4096, .f_blocks = 1ULL << 30,
		.f_bfree = 1ULL << 30, .f_bavail = 1ULL << 30, .f_files = 1ULL << 30,
		.f_ffree = 1ULL << 30, .f_namemax = 255,
	};

	fuse_reply_statfs(req, &st);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	fuse_reply_err(req, 0);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	fuse_reply_err(req, ENODATA);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_xattr(req, 0);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.create = op_create,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_ok,
	.opendir = op_open,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_release,
	.fsyncdir = op_ok,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
};

int main(int argc, char **argv)
{
	char *args[] = { argv[0], "-o", "fsname=null,subtype=null,default_permissions", NULL };
	struct fuse_args fa = FUSE_ARGS_INIT(3, args);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	int ret = 1;

	if (argc < 2 || argc > 4 || (argc > 2 && (timeout = atof(argv[2])) < 0) ||
	    (argc > 3 && strcmp(argv[3], "writeback"))) {
		fprintf(stderr, "usage: %s MOUNTPOINT [TIMEOUT [writeback]]\n", argv[0]);
		return 2;
	}
	writeback = argc > 3;
	new_node(0);				/* inode 0 is never used */
	new_node(S_IFDIR | 0755);		/* FUSE_ROOT_ID */
	se = fuse_session_new(&fa, &ops, sizeof(ops), NULL);
	if (!se || fuse_set_signal_handlers(se))
		return 1;
	if (!fuse_session_mount(se, argv[1])) {
		cfg = fuse_loop_cfg_create();
		fuse_loop_cfg_set_max_threads(cfg, 10);
		ret = fuse_session_loop_mt(se, cfg) ? 1 : 0;
		fuse_loop_cfg_destroy(cfg);
		fuse_session_unmount(se);
	}
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return ret;
}
