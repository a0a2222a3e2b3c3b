// SPDX-License-Identifier: MIT
/*
 * Changing the superblock of an open core (set-option and grow on a mounted
 * filesystem, see core.h).  The core writes its superblock itself (open,
 * checkpoints without a journal, close), always from c->sbh.sb under the
 * commit lock; an update takes the same lock, so no write of the old
 * contents can come after the new ones, and the in-memory copy changes
 * only once the new one is on disk.
 *
 * Also the public face of the fatal state: a mount with errors=remount-ro
 * stops writes itself after a metadata error.
 */
#include <string.h>

#include "../btree/internal.h"

int bfs_core_sb_update(struct bfs_core *c, bfs_core_sb_fn fn, void *ctx)
{
	struct bfs_sb *next;
	int ret;

	if (c->read_only)
		return -EROFS;
	next = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_MAX_BYTES);
	if (!next)
		return -ENOMEM;
	bfs_commit_lock(c);
	ret = core_fatal(c);
	if (!ret) {
		memcpy(next, c->sbh.sb, BFS_SB_MAX_BYTES);
		ret = fn(ctx, c->dev, c->sbh.sb, next);
	}
	if (!ret)
		memcpy(c->sbh.sb, next, BFS_SB_MAX_BYTES);
	bfs_commit_unlock(c);
	bfs_free(next);
	return ret;
}

void bfs_core_stop_writes(struct bfs_core *c, int err, const char *why)
{
	bfs_core_set_fatal(c, err, why);
}

int bfs_core_error(struct bfs_core *c)
{
	return core_fatal(c);
}
