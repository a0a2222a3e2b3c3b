// SPDX-License-Identifier: MIT
/*
 * The tools' side of the mount control channel (mount_control.h): which
 * bcowfs mount serves a device, and sending it a request.  A device is
 * matched by device number (a block device, mounted as fuseblk), an image
 * file by its real path (the source the mount gives FUSE); the last match
 * in /proc/self/mounts is the one on top.
 */
#include "cmd.h"
#include "mount_control.h"

#include <bfs/probe.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_bcowfs(const char *type)
{
	return !strcmp(type, "fuse." BFS_FS_TYPE) || !strcmp(type, "fuseblk." BFS_FS_TYPE);
}

/* 1 if a bcowfs mount is on directory @dir, or of source @src (@st: its stat) */
static int scan_mounts(const char *dir, const char *src, const struct stat *st, char *mnt,
		       size_t len)
{
	char buf[3 * PATH_MAX];
	struct mntent *e, ent;
	int found = 0;
	FILE *f = setmntent("/proc/self/mounts", "r");

	if (!f)
		return -errno;
	while ((e = getmntent_r(f, &ent, buf, sizeof(buf)))) {
		struct stat es;
		char real[PATH_MAX];
		bool match;

		if (!is_bcowfs(e->mnt_type))
			continue;
		if (dir)
			match = !strcmp(e->mnt_dir, dir);
		else if (S_ISBLK(st->st_mode))
			match = !stat(e->mnt_fsname, &es) && S_ISBLK(es.st_mode) &&
				es.st_rdev == st->st_rdev;
		else
			match = realpath(e->mnt_fsname, real) && !strcmp(real, src);
		if (match) {
			snprintf(mnt, len, "%s", e->mnt_dir);
			found = 1;
		}
	}
	endmntent(f);
	return found;
}

int bfs_ctl_find_mount(const char *path, char *mnt, size_t len, bool *mounted_other,
		       char *what, size_t what_len)
{
	char real[PATH_MAX];
	struct stat st;
	int ret;

	*mounted_other = false;
	if (stat(path, &st) || !realpath(path, real))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return scan_mounts(real, NULL, &st, mnt, len);
	ret = scan_mounts(NULL, real, &st, mnt, len);
	if (ret)
		return ret;
	ret = bfs_check_mounted(path, what, what_len);
	if (ret < 0)
		return ret;
	*mounted_other = ret > 0;
	return 0;
}

int bfs_ctl_send(const char *mnt, struct bfs_ctl_req *req)
{
	int fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	req->magic = BFS_CTL_MAGIC;
	req->version = BFS_CTL_VERSION;
	req->result = -EPROTO;	/* unless the mount answers */
	if (ioctl(fd, BFS_IOC_CTL, req) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int bfs_ctl_run(const struct bfs_cmd *cmd, const char *mnt, struct bfs_ctl_req *req)
{
	int ret = bfs_ctl_send(mnt, req);

	if (ret == -EPERM || ret == -EACCES)
		return bfs_cmd_error(cmd, "changing the filesystem mounted on %s needs root", mnt);
	if (ret == -ENOTTY || ret == -ENOSYS)
		return bfs_cmd_error(cmd, "the mount on %s has no control channel (a bfs mount "
				     "older than this tool?): unmount it first", mnt);
	if (ret)
		return bfs_cmd_error(cmd, "cannot reach the mount on %s: %s", mnt, strerror(-ret));
	req->msg[sizeof(req->msg) - 1] = '\0';
	if (!req->result) {
		fputs(req->msg, stdout);
		return BFS_EXIT_OK;
	}
	if (req->result == -EALREADY)
		return BFS_EXIT_OK;
	if (req->msg[0])
		bfs_cmd_error(cmd, "%s: %s", mnt, req->msg);
	else
		bfs_cmd_error(cmd, "the mount on %s refused: %s", mnt, strerror(-req->result));
	return req->result == -EINVAL && req->op == BFS_CTL_SET ? BFS_EXIT_USAGE : BFS_EXIT_ERROR;
}
