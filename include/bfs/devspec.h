/* SPDX-License-Identifier: MIT */
/*
 * Device specifications as fstab(5) writes them: "UUID=..." and
 * "LABEL=..." (optionally quoted), for fsck.bfs started by fsck -A.
 * libblkid does not know bfs, so fsck(8) cannot resolve them for us and
 * passes them on as they are (libcore/super/devspec.c).
 */
#ifndef BFS_DEVSPEC_H
#define BFS_DEVSPEC_H

#include <stdbool.h>
#include <stddef.h>

/* is @spec a UUID= or LABEL= tag (rather than a path)? */
bool bfs_devspec_is_tag(const char *spec);

/*
 * Find the one block device holding a bfs filesystem with that UUID or
 * label: first what libblkid resolves (its cache, udev's /dev/disk/by-*
 * links), then every block device the kernel lists.  A candidate counts only
 * if its superblock (or valid backup) says so.  0 and the device in @path;
 * -EINVAL for a malformed tag, -ENOENT if no device matches, -EEXIST if
 * several do (cloned images: give the path instead).  @err (BFS_ERR_LEN)
 * says which.
 */
int bfs_devspec_resolve(const char *spec, char *path, size_t len, char *err);

#endif /* BFS_DEVSPEC_H */
