// SPDX-License-Identifier: MIT
/*
 * mount -o remount[,ro|rw][,commit=N][,atime options]: change a running bfs
 * mount.  mount(8) calls the helper with the mount point and the option
 * list it gathered (the current flags from /proc/mounts plus the new ones).
 *
 * Two parties must agree: the kernel, which refuses writes on a read-only
 * mount (mount(2) with MS_REMOUNT changes that), and the mount process,
 * which must flush before going read-only, stop writing atimes, and apply
 * a new commit interval.  The process is told through a control attribute
 * on the mount's root (BFS_FUSE_CTL_REMOUNT, a trusted.* name, so only
 * CAP_SYS_ADMIN can send it).  Order: going read-only, the process
 * flushes before the kernel closes the door; going read-write, the kernel
 * opens it first (a setxattr on a read-only mount fails in the VFS).
 */
#include "cmd.h"
#include "fuse_ops.h"

#include <bfs/super.h>

#include <errno.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/xattr.h>

/*
 * the per-mount flags mount(2) resets on MS_REMOUNT unless given again
 * (mount(8) passes the current ones along): the kernel flags of the list
 */
static unsigned long remount_flags(const struct bfs_mount_opts *o)
{
	static const struct {
		const char *name;
		unsigned long flag;
	} flags[] = {
		{ "nosuid", MS_NOSUID }, { "nodev", MS_NODEV }, { "noexec", MS_NOEXEC },
		{ "sync", MS_SYNCHRONOUS }, { "dirsync", MS_DIRSYNC },
	};
	unsigned long f = MS_REMOUNT | (o->read_only ? MS_RDONLY : 0);
	char *copy = o->kernel_opts ? strdup(o->kernel_opts) : NULL, *save = NULL, *opt;
	size_t i;

	if (o->atime == BFS_ATIME_NEVER)
		f |= MS_NOATIME;

	for (opt = copy ? strtok_r(copy, ",", &save) : NULL; opt; opt = strtok_r(NULL, ",", &save))
		for (i = 0; i < ARRAY_SIZE(flags); i++)
			if (!strcmp(opt, flags[i].name))
				f |= flags[i].flag;
	free(copy);
	return f;
}

/* 0 if @dir is a bfs FUSE mount (*ro: mounted read-only), else an error printed */
static int find_mount(const char *who, const char *dir, bool *ro)
{
	char fuse_type[32], blk_type[32];
	struct mntent *e, ent;
	char buf[3 * PATH_MAX];
	int ret = -ENOENT;
	FILE *f;

	snprintf(fuse_type, sizeof(fuse_type), "fuse.%s", BFS_FUSE_SUBTYPE);
	snprintf(blk_type, sizeof(blk_type), "fuseblk.%s", BFS_FUSE_SUBTYPE);
	f = setmntent("/proc/self/mounts", "r");
	if (!f) {
		fprintf(stderr, "%s: cannot read /proc/self/mounts: %s\n", who, strerror(errno));
		return -errno;
	}
	/* the last one listed is the one on top */
	while ((e = getmntent_r(f, &ent, buf, sizeof(buf)))) {
		if (strcmp(e->mnt_dir, dir))
			continue;
		ret = (!strcmp(e->mnt_type, fuse_type) || !strcmp(e->mnt_type, blk_type)) ? 0 :
		      -EINVAL;
		*ro = hasmntopt(e, "ro") != NULL;
	}
	endmntent(f);
	if (ret == -ENOENT)
		fprintf(stderr, "%s: '%s' is not mounted\n", who, dir);
	else if (ret)
		fprintf(stderr, "%s: '%s' is not a bfs mount\n", who, dir);
	return ret;
}

/* tell the mount process; its answer is the setxattr's errno */
static int send_control(const char *who, const char *dir, const char *req)
{
	if (!setxattr(dir, BFS_FUSE_CTL_REMOUNT, req, strlen(req), 0))
		return 0;
	if (errno == EROFS)
		fprintf(stderr, "%s: '%s' was mounted read-only (the device is open read-only): "
			"unmount it and mount it read-write\n", who, dir);
	else if (errno == EPERM)
		fprintf(stderr, "%s: remounting '%s' needs root\n", who, dir);
	else
		fprintf(stderr, "%s: the mount process of '%s' refused the remount: %s\n", who,
			dir, strerror(errno));
	return -1;
}

static int kernel_remount(const char *who, const char *dir, unsigned long flags)
{
	if (!mount(NULL, dir, NULL, flags, NULL))
		return 0;
	fprintf(stderr, "%s: cannot remount '%s'%s: %s\n", who, dir,
		(flags & MS_RDONLY) ? " read-only" : " read-write", strerror(errno));
	return -1;
}

int bfs_mount_remount(const char *who, const char *dir, const struct bfs_mount_opts *o)
{
	char real[PATH_MAX], req[128];
	unsigned long flags;
	bool was_ro = false;

	if (!realpath(dir, real)) {
		fprintf(stderr, "%s: mount point '%s': %s\n", who, dir, strerror(errno));
		return -1;
	}
	if (find_mount(who, real, &was_ro))
		return -1;
	flags = remount_flags(o);
	snprintf(req, sizeof(req), "%s,commit=%u,%s%s%s%s", o->read_only ? "ro" : "rw",
		 o->commit_secs, o->atime == BFS_ATIME_NEVER ? "noatime" :
		 o->atime == BFS_ATIME_STRICT ? "strictatime" : "relatime",
		 o->nodiratime ? ",nodiratime" : "", o->errors_set ? ",errors=" : "",
		 o->errors_set ? bfs_errors_name(o->errors) : "");
	if (o->read_only) {
		/* already read-only: the process writes nothing any more */
		if (!was_ro && send_control(who, real, req))
			return -1;
		return kernel_remount(who, real, flags);
	}
	if (kernel_remount(who, real, flags))
		return -1;
	if (send_control(who, real, req)) {
		if (was_ro)	/* back as it was */
			mount(NULL, real, NULL, flags | MS_RDONLY, NULL);
		return -1;
	}
	return 0;
}
