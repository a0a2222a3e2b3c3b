/* SPDX-License-Identifier: MIT */
/* udev/blkid KEY=VALUE export of a filesystem's identity (cmd/export.c). */
#ifndef BFS_CMD_EXPORT_H
#define BFS_CMD_EXPORT_H

#include <stddef.h>
#include <stdio.h>

#include <bfs/format.h>

/* @out must hold 4 bytes per input byte plus one; longer input is cut */
void bfs_export_encode(const char *s, char *out, size_t size);
void bfs_export_safe(const char *s, char *out, size_t size);
/* ID_FS_UUID, _UUID_ENC, _VERSION, _TYPE, _USAGE, _LABEL, _LABEL_ENC lines */
void bfs_export_print(FILE *f, const struct bfs_sb *sb);

#endif
