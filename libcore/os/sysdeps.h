/* SPDX-License-Identifier: MIT */
/*
 * System headers for libcore/os/, included before any bfs header.
 *
 * With _GNU_SOURCE, <sys/stat.h> (statx) and <linux/fs.h> pull in
 * <linux/types.h>, whose __le16/__le32/__le64 typedefs clash with the
 * struct-wrapped ones of bfs/types.h.  Rename the kernel's while they are
 * declared; its include guard keeps them from coming back later.
 */
#ifndef BFS_OS_SYSDEPS_H
#define BFS_OS_SYSDEPS_H

#define __le16 bfs_linux_le16
#define __le32 bfs_linux_le32
#define __le64 bfs_linux_le64
#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#undef __le16
#undef __le32
#undef __le64

/* <sys/mount.h> has the other block ioctls but not this one */
#ifndef BLKDISCARD
#define BLKDISCARD	_IO(0x12, 119)	/* u64 range[2] = { offset, length } in bytes */
#endif

#endif /* BFS_OS_SYSDEPS_H */
