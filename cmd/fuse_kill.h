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

/* what asks for the set-ID bits to go (bfs_fuse_kill_add()) */
enum {
	BFS_KILL_WRITE,		/* a write or truncation by a caller without CAP_FSETID */
	BFS_KILL_CHOWN,		/* a change of owner or group, by anyone */
	BFS_KILL_UNLESS_FSETID,	/* a truncation or fallocate by a caller whose CAP_FSETID is looked up */
};

/*
 * Add to @sa the clearing of the set-ID bits of @ino that @how takes away:
 * set-user-ID always; set-group-ID when the file is group-executable, or
 * when the caller of @req is outside the file's group (and, for chown,
 * lacks CAP_FSETID).  Directories keep theirs.  A mode already in @sa is
 * the one cleared.  1 if it added something, 0 if nothing goes, or -errno.
 */
int bfs_fuse_kill_add(fuse_req_t req, u64 ino, unsigned how, struct bfs_setattr *sa);
/*
 * setfacl of an access ACL on @ino: its mode update clears S_ISGID, the
 * caller of @req being outside the file's group and without CAP_FSETID
 * (the VFS's posix_acl_update_mode(); libfuse 3.14 drops the kernel's
 * FUSE_SETXATTR_ACL_KILL_SGID that says the same)
 */
bool bfs_fuse_acl_kills_sgid(fuse_req_t req, u64 ino);
/* before a write that asked for it, or an fallocate: clear those bits of @ino */
int bfs_fuse_kill_suidgid(fuse_req_t req, u64 ino, unsigned how);
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
