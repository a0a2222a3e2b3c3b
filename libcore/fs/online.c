// SPDX-License-Identifier: MIT
/*
 * Live superblock settings (see include/bfs/online.h).  The data half reads
 * its checksum type and compression without a lock on every write, and a
 * chunk's checksum and its extent key must agree on the type, so the change
 * happens with every inode lock held: no write is half done.
 */
#include <bfs/online.h>
#include <bfs/super.h>

#include "data.h"
#include "fs_internal.h"

int bfs_fs_sb_update(struct bfs_fs *fs, bfs_core_sb_fn fn, void *ctx)
{
	struct bfs_fs_data *d = fs->data;
	int ret;

	if (fs->read_only)
		return -EROFS;
	bfs_mutex_lock(&d->gc_lock);	/* copy-GC rewrites data too; its lock comes first */
	bfs_fs_quiesce(fs);
	ret = bfs_core_sb_update(fs->c, fn, ctx);
	if (!ret)
		bfs_data_options_load(d, fs->sb);
	bfs_fs_unquiesce(fs);
	bfs_mutex_unlock(&d->gc_lock);
	return ret;
}

void bfs_fs_stop_writes(struct bfs_fs *fs, int err, const char *why)
{
	/* the namespace and data entry points check this first: nothing reaches the device */
	__atomic_store_n(&fs->read_only, true, __ATOMIC_RELEASE);
	bfs_core_stop_writes(fs->c, err, why);
}

int bfs_fs_error(struct bfs_fs *fs)
{
	return bfs_core_error(fs->c);
}
