/* SPDX-License-Identifier: MIT */
/*
 * System headers for libcore/os/.  (bfs/types.h copes with the __leNN
 * typedefs that <linux/types.h> brings along, in either include order.)
 */
#ifndef BFS_OS_SYSDEPS_H
#define BFS_OS_SYSDEPS_H

#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* <sys/mount.h> has the other block ioctls but not this one */
#ifndef BLKDISCARD
#define BLKDISCARD	_IO(0x12, 119)	/* u64 range[2] = { offset, length } in bytes */
#endif

#endif /* BFS_OS_SYSDEPS_H */
