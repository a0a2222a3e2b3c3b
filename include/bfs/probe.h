/* SPDX-License-Identifier: MIT */
/*
 * What is already on a device, before bfs format overwrites it
 * (libcore/os/probe.c with libblkid, libcore/os/mounted.c).
 */
#ifndef BFS_PROBE_H
#define BFS_PROBE_H

#include <stddef.h>

/*
 * Look for a filesystem, RAID member or partition table on @path.  Returns 1
 * and a description ("an ext4 filesystem labelled 'root'") when one is found,
 * 0 when the device looks empty, or a negative errno.
 */
int bfs_probe_signature(const char *path, char *desc, size_t len);
/* erase every signature libblkid finds (superblocks, partition tables) */
int bfs_wipe_signatures(const char *path);
/*
 * Is @path in use: a mounted block device, active swap, or an image file
 * attached to a loop device or mounted through FUSE?  Returns 1 and where it
 * is used in @where, 0 if not, or a negative errno (-EISDIR for a directory).
 */
int bfs_check_mounted(const char *path, char *where, size_t len);

/*
 * Create the image file @path of @size bytes (sparse), or grow an existing
 * regular file to @size.  Refuses to shrink a file or touch a block device.
 */
int bfs_image_create(const char *path, unsigned long long size);
/* cut the image file @path to @size bytes (never grows it); -ENOTSUP if not a regular file */
int bfs_image_shrink(const char *path, unsigned long long size);

/* ---- finding block devices (libcore/os/blockdevs.c), for <bfs/devspec.h> ---- */

/* libblkid's answer for TOKEN=VALUE: 1 and the device in @path, or 0 */
int bfs_os_blkid_resolve(const char *token, const char *value, char *path, size_t len);
/*
 * @fn for every block device the kernel lists (/proc/partitions, as
 * /dev/NAME); a non-zero return from @fn stops the walk and is returned
 */
int bfs_os_for_each_blockdev(int (*fn)(void *ctx, const char *path), void *ctx);

#endif /* BFS_PROBE_H */
