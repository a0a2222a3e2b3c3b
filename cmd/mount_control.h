/* SPDX-License-Identifier: MIT */
/*
 * The control channel of a running bfs mount (doc/control.md): an ioctl on
 * the mount's root directory, answered by the mount process
 * (cmd/mount_control.c).  The admin tools (bfs resize, bfs set-option) find
 * the mount of a device in /proc/self/mounts and send it a request
 * (cmd/control_client.c).
 *
 * The request is one fixed-size structure, read and written back
 * (_IOWR): FUSE passes a "restricted" ioctl to the daemon only when the
 * kernel can tell the size from the number.  Only root may send one (the
 * daemon checks the requesting uid).  @version lets a newer tool talk to an
 * older mount, which answers -EPROTONOSUPPORT to what it does not know.
 */
#ifndef BFS_CMD_MOUNT_CONTROL_H
#define BFS_CMD_MOUNT_CONTROL_H

#include <linux/ioctl.h>
#include <stdbool.h>
#include <stddef.h>

#include <bfs/types.h>

#define BFS_CTL_MAGIC	0x4c544342u	/* "BCTL" */
#define BFS_CTL_VERSION	1

enum bfs_ctl_op {
	BFS_CTL_GROW	= 1,	/* size: new size in bytes, 0 = the device's */
	BFS_CTL_SET	= 2,	/* args: OPTION=VALUE strings (set-option's), each NUL-ended */
};

#define BFS_CTL_DRY_RUN	(1U << 0)	/* check and describe, change nothing */

#define BFS_CTL_ARGS_LEN	1024
#define BFS_CTL_MSG_LEN		1024

struct bfs_ctl_req {
	u32	magic;
	u16	version;
	u16	op;			/* enum bfs_ctl_op */
	u32	flags;			/* BFS_CTL_* */
	s32	result;			/* out: 0 or a negative errno */
	u64	size;			/* GROW in: bytes; out: the size now */
	u64	old_size;		/* GROW out: the size before */
	char	args[BFS_CTL_ARGS_LEN];
	char	msg[BFS_CTL_MSG_LEN];	/* out: lines for the admin (changes, or why not) */
};

#define BFS_IOC_CTL	_IOWR(0xbc, 1, struct bfs_ctl_req)

/* ---- tools (control_client.c) ---- */

/*
 * Is @path (a device, an image file or a mount point) a mounted bcowfs
 * filesystem?  1 and its mount point in @mnt, 0 if it is not mounted as
 * one, or a negative errno.  @mounted_other: set when @path is mounted (or
 * otherwise in use) but not as a bcowfs mount, with a description in @what.
 */
int bfs_ctl_find_mount(const char *path, char *mnt, size_t len, bool *mounted_other,
		       char *what, size_t what_len);
/*
 * Send @req (magic and version are filled in) to the mount at @mnt; 0 with
 * req->result the mount's answer, or a negative errno of the ioctl itself
 * (-EPERM: not root; -ENOTTY: a mount without a control channel).
 */
int bfs_ctl_send(const char *mnt, struct bfs_ctl_req *req);
/*
 * bfs_ctl_send() for a command: the mount's lines on stdout, or its reason
 * (or why it could not be asked) on stderr; the exit status (-EALREADY,
 * nothing to do, is success; -EINVAL for a setting, a bad value, is a usage
 * error)
 */
struct bfs_cmd;
int bfs_ctl_run(const struct bfs_cmd *cmd, const char *mnt, struct bfs_ctl_req *req);

#endif /* BFS_CMD_MOUNT_CONTROL_H */
