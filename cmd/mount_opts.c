// SPDX-License-Identifier: MIT
/*
 * bfs mount options: the -o list of `bfs mount` and of mount.bcowfs (what
 * mount(8) passes from fstab).  Every option is either ours, a mount flag
 * handed on to the kernel through FUSE, or a generic mount(8) option that
 * means nothing here and is ignored; anything else is an error, so that a
 * typo never silently mounts with the wrong settings.
 */
#include "cmd.h"
#include "fuse_ops.h"
#include "fuse_uring.h"

#include <bfs/super.h>

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* mount flags the kernel applies to the FUSE mount itself */
static const char *const kernel_flags[] = {
	"suid", "nosuid", "dev", "nodev", "exec", "noexec", "sync", "async", "dirsync", NULL,
};

/*
 * mount(8) and fstab options without a meaning here: they are for mount(8)
 * itself, or (lazytime) describe what the periodic commit does anyway
 */
static const char *const ignored[] = {
	"defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "nofail",
	"_netdev", "loop", "lazytime", "nolazytime", "default_permissions", NULL,
};

/*
 * The atime policy is the daemon's: FUSE marks every inode S_NOATIME, so
 * the kernel never updates atime itself.  noatime also goes to the kernel,
 * for /proc/mounts to say it.
 */
static int atime_opt(struct bfs_mount_opts *o, const char *opt)
{
	static const struct {
		const char *name;
		unsigned policy;
	} policies[] = {
		{ "relatime",	   BFS_ATIME_RELATIME },
		{ "nostrictatime", BFS_ATIME_RELATIME },
		{ "atime",	   BFS_ATIME_RELATIME },	/* "not noatime": the default */
		{ "strictatime",   BFS_ATIME_STRICT },
		{ "norelatime",	   BFS_ATIME_STRICT },
		{ "noatime",	   BFS_ATIME_NEVER },
	};
	size_t i;

	if (!strcmp(opt, "diratime") || !strcmp(opt, "nodiratime")) {
		o->nodiratime = opt[0] == 'n';
		return 1;
	}
	for (i = 0; i < ARRAY_SIZE(policies); i++) {
		if (!strcmp(opt, policies[i].name)) {
			o->atime = policies[i].policy;
			return 1;
		}
	}
	return 0;
}

static bool in_list(const char *const *list, const char *s)
{
	for (; *list; list++)
		if (!strcmp(*list, s))
			return true;
	return false;
}

static int add_kernel_opt(struct bfs_mount_opts *o, const char *opt)
{
	size_t old = o->kernel_opts ? strlen(o->kernel_opts) : 0;
	char *s = realloc(o->kernel_opts, old + strlen(opt) + 2);

	if (!s)
		return -ENOMEM;
	if (old)
		s[old++] = ',';
	strcpy(s + old, opt);
	o->kernel_opts = s;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e9)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_threads(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > 1024)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

/* commit=N: whole seconds as ext4 takes them, 0 for the default */
static int parse_commit(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v > 86400)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

void bfs_mount_opts_init(struct bfs_mount_opts *o)
{
	memset(o, 0, sizeof(*o));
	/*
	 * Each thread serves one request at a time and waits for its device
	 * I/O, so threads bound the I/O in flight: libfuse's default of 10
	 * holds fio's QD64 random reads to half their rate.  Threads start
	 * only when every running one is busy.
	 */
	o->max_threads = 64;
	/*
	 * Long: the caches are exact (only this mount changes the filesystem,
	 * tests/integration/59-mount-attr-cache.sh), so the time only bounds
	 * memory, and a second look at a tree costs no requests.
	 */
	o->attr_timeout = 60.0;
	o->entry_timeout = 60.0;
}

void bfs_mount_opts_free(struct bfs_mount_opts *o)
{
	free(o->kernel_opts);
	o->kernel_opts = NULL;
}

static bool flag_opt(struct bfs_mount_opts *o, const char *opt)
{
	static const struct {
		const char *name;
		size_t off;
		bool val;
	} flags[] = {
		{ "remount",	offsetof(struct bfs_mount_opts, remount),	true },
		{ "ro",		offsetof(struct bfs_mount_opts, read_only),	true },
		{ "rw",		offsetof(struct bfs_mount_opts, read_only),	false },
		{ "allow_other", offsetof(struct bfs_mount_opts, allow_other),	true },
		{ "allow_root",	offsetof(struct bfs_mount_opts, allow_root),	true },
		{ "writeback",	offsetof(struct bfs_mount_opts, writeback),	true },
		{ "writeback_cache", offsetof(struct bfs_mount_opts, writeback), true },
		{ "nowriteback", offsetof(struct bfs_mount_opts, writeback),	false },
		{ "debug",	offsetof(struct bfs_mount_opts, debug),		true },
		{ "clone_fd",	offsetof(struct bfs_mount_opts, clone_fd),	true },
		{ "discard",	offsetof(struct bfs_mount_opts, discard),	true },
		{ "acl",	offsetof(struct bfs_mount_opts, noacl),		false },
		{ "noacl",	offsetof(struct bfs_mount_opts, noacl),		true },
		{ "nodiscard",	offsetof(struct bfs_mount_opts, discard),	false },
		{ "norecovery",	offsetof(struct bfs_mount_opts, no_replay),	true },
		{ "noreplay",	offsetof(struct bfs_mount_opts, no_replay),	true },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(flags); i++) {
		if (!strcmp(opt, flags[i].name)) {
			*(bool *)((char *)o + flags[i].off) = flags[i].val;
			return true;
		}
	}
	return false;
}

/* NAME=VALUE options; -EINVAL: bad value, -ENOENT: no such option */
static int value_opt(struct bfs_mount_opts *o, const char *name, const char *val)
{
	if (!strcmp(name, "cache_size"))
		return bfs_parse_size(val, &o->cache_bytes);
	if (!strcmp(name, "max_threads"))
		return parse_threads(val, &o->max_threads);
	if (!strcmp(name, "attr_timeout"))
		return parse_seconds(val, &o->attr_timeout);
	if (!strcmp(name, "entry_timeout"))
		return parse_seconds(val, &o->entry_timeout);
	if (!strcmp(name, "commit"))
		return parse_commit(val, &o->commit_secs);
	if (!strcmp(name, "errors")) {
		o->errors_set = true;
		return bfs_errors_parse(val, &o->errors);
	}
	return -ENOENT;
}

static int parse_one(struct bfs_mount_opts *o, char *opt, const char *who)
{
	char *eq = strchr(opt, '=');
	int ret;

	/* FUSE over io_uring (cmd/fuse_uring.h): on, off, or auto (neither) */
	if (!strcmp(opt, "uring") || !strcmp(opt, "nouring")) {
		o->uring = opt[0] == 'u' ? BFS_URING_ON : BFS_URING_OFF;
		return 0;
	}
	if (!*opt || flag_opt(o, opt) || in_list(ignored, opt) || !strncmp(opt, "x-", 2) ||
	    !strncmp(opt, "X-", 2) || !strncmp(opt, "comment=", 8) || !strncmp(opt, "user=", 5))
		return 0;
	/* set by FUSE itself: mount(8) passes them back from /proc/mounts on remount */
	if (!strncmp(opt, "user_id=", 8) || !strncmp(opt, "group_id=", 9) ||
	    !strncmp(opt, "rootmode=", 9) || !strncmp(opt, "blksize=", 8) ||
	    !strncmp(opt, "max_read=", 9))
		return 0;
	if (in_list(kernel_flags, opt))
		return add_kernel_opt(o, opt) ? -1 : 0;
	if (atime_opt(o, opt))
		return 0;
	if (!strncmp(opt, "fsname=", 7) || !strncmp(opt, "subtype=", 8)) {
		fprintf(stderr, "%s: mount option '%s' cannot be set: the source is always the "
			"device and the type fuse.bcowfs\n", who, opt);
		return -1;
	}
	if (eq) {
		*eq = '\0';
		ret = value_opt(o, opt, eq + 1);
		*eq = '=';
		if (ret == -EINVAL) {
			fprintf(stderr, "%s: invalid value in mount option '%s'\n", who, opt);
			return -1;
		}
		if (!ret)
			return 0;
	}
	fprintf(stderr, "%s: unknown mount option '%s' (see bfs-mount(8))\n", who, opt);
	return -1;
}

int bfs_mount_opts_parse(struct bfs_mount_opts *o, const char *list, const char *who)
{
	char *copy = strdup(list), *save = NULL, *opt;
	int ret = 0;

	if (!copy) {
		fprintf(stderr, "%s: out of memory\n", who);
		return -1;
	}
	for (opt = strtok_r(copy, ",", &save); opt && !ret; opt = strtok_r(NULL, ",", &save))
		ret = parse_one(o, opt, who);
	free(copy);
	return ret;
}
