/* SPDX-License-Identifier: MIT */
/*
 * bfs mount: the privileges a write, a truncation or a chown takes away
 * (cmd/fuse_kill.c), when the kernel leaves that to the filesystem
 * (FUSE_HANDLE_KILLPRIV_V2, see fuse_wire.h).  The rules are the VFS's
 * (setattr_should_drop_suidgid(), chown_common()), so that a file ends as
 * it would on ext4.
 */
#ifndef BFS_FUSE_KILL_H
#define BFS_FUSE_KILL_H

#include "fuse_ops.h"

/*
 * The set-ID bits of @st to clear when the caller of @req writes to or
 * truncates it (the kernel asks only for callers without CAP_FSETID) or,
 * @chown, changes its owner: set-user-ID always; set-group-ID when the
 * file is group-executable, or when the caller is outside the file's
 * group (and, for chown, lacks CAP_FSETID).  Directories keep theirs.
 */
u32 bfs_fuse_kill_bits(fuse_req_t req, const struct bfs_stat *st, bool chown);
/* the caller's effective capabilities (/proc/PID/status CapEff) hold CAP_FSETID */
bool bfs_fuse_caller_has_fsetid(fuse_req_t req);
/* before a write that asked for it: clear those bits of @ino */
int bfs_fuse_kill_suidgid(fuse_req_t req, u64 ino);
/*
 * After clearing bits in a request whose reply carries no attributes
 * (WRITE, OPEN): the kernel's cached mode is stale, drop it (stat(2) asking
 * only for the mode would believe the cache until attr_timeout)
 */
void bfs_fuse_kill_notify(fuse_req_t req, u64 ino);
/*
 * Writes through a direct_io open skip the kernel's file_remove_privs():
 * remove security.capability as it would have (for every caller, as on ext4)
 */
int bfs_fuse_kill_caps(fuse_req_t req, u64 ino);

#endif /* BFS_FUSE_KILL_H */
