// SPDX-License-Identifier: MIT
/*
 * Opening, closing and syncing the filesystem, statfs.
 *
 * Open: key types -> core (journal replay) -> inode counter and root checks
 * -> data half -> orphans left by a crash are freed and the periodic commit
 * starts (read-write only).
 * Close: the periodic commit stops -> unlinked inodes still open are freed
 * (their last release never came) -> data flushed -> data half -> core
 * (clean shutdown).
 */
#include <bfs/super.h>

#include "ns.h"
#include "range_lock.h"

static void fs_free(struct bfs_fs *fs)
{
	unsigned i;

	bfs_open_inodes_exit(fs);
	bfs_range_locks_exit(fs);
	for (i = 0; i < BFS_INODE_LOCKS; i++)
		bfs_mutex_destroy(&fs->inode_locks[i]);
	bfs_mutex_destroy(&fs->rename_lock);
	bfs_mutex_destroy(&fs->ino_alloc_lock);
	bfs_free(fs);
}

static struct bfs_fs *fs_alloc(struct bfs_dev *dev)
{
	struct bfs_fs *fs = bfs_zalloc(sizeof(*fs));
	unsigned i;

	if (!fs)
		return NULL;
	if (bfs_range_locks_init(fs)) {
		bfs_free(fs);
		return NULL;
	}
	for (i = 0; i < BFS_INODE_LOCKS; i++)
		bfs_mutex_init(&fs->inode_locks[i]);
	bfs_mutex_init(&fs->rename_lock);
	bfs_mutex_init(&fs->ino_alloc_lock);
	fs->ino_range_owner = bfs_ns_ino_owner_new();
	fs->dev = dev;
	return fs;
}

/* what follows the core's open: the roots, the data half, orphans, the periodic commit */
static int fs_start(struct bfs_fs *fs, const struct bfs_fs_opts *opts)
{
	struct bfs_ns_inode root;
	int ret = 0;

	fs->sb = bfs_core_sb(fs->c);
	fs->hash_seed = le64_to_cpu(fs->sb->hash_seed);
	fs->check_only = opts->check_only && fs->read_only;
	fs->known_live = opts->known_live;

	if (opts->check_roots) {
		long n = bfs_fs_check_roots(fs->c, opts->check_roots, opts->check_ctx,
					    opts->known_max_ino);

		ret = n < 0 ? (int)n : 0;
	}
	if (!ret)
		ret = bfs_ns_counter_read(fs, &fs->next_ino);
	fs->ino_base = fs->next_ino;
	if (!ret) {
		ret = bfs_ns_inode_read(fs, BFS_ROOT_INO, &root);
		if (ret == -ENOENT || (!ret && !S_ISDIR(root.i.mode))) {
			bfs_err("no root directory (inode %u)", BFS_ROOT_INO);
			ret = -EUCLEAN;
		}
	}
	if (!ret)
		ret = bfs_fs_data_init(fs);
	fs->known_live = NULL;
	if (!ret && !fs->read_only) {
		ret = bfs_orphans_recover(fs);
		if (!ret) {
			u32 ms = opts->commit_ms ? opts->commit_ms :
				bfs_fs_commit_default_ms(fs, opts->commit_default_ms);

			if (ms)
				ret = bfs_fs_commit_start(fs, ms);
		}
	}
	return ret;
}

/* a failed open's undo: the data half (space_init may have set it up), the core, @fs */
static void fs_undo(struct bfs_fs *fs)
{
	bfs_fs_data_exit(fs);
	bfs_core_close(fs->c);
	fs_free(fs);
}

/* replay must not put btree nodes into buckets that hold file data: the data half marks its space first */
static void fs_space_hooks(struct bfs_fs *fs, struct bfs_core_opts *co)
{
	co->space_init = bfs_fs_data_space_init;
	co->space_replay_key = bfs_fs_data_space_replay_key;
	co->space_ctx = fs;
}

int bfs_fs_open(struct bfs_dev *dev, const struct bfs_fs_opts *opts, struct bfs_fs **out)
{
	static const struct bfs_fs_opts defaults;
	struct bfs_core_opts co = { 0 };
	struct bfs_fs *fs;
	int ret;

	*out = NULL;
	if (!opts)
		opts = &defaults;
	fs = fs_alloc(dev);
	if (!fs)
		return -ENOMEM;
	fs->read_only = opts->read_only || opts->no_replay;
	fs->discard = opts->discard && !fs->read_only;
	co.read_only = fs->read_only;
	co.no_replay = opts->no_replay;
	co.cache_bytes = opts->cache_bytes;
	co.salvage_journal = opts->salvage_journal;
	co.journal_finding = opts->journal_finding;
	co.journal_finding_ctx = opts->journal_finding_ctx;
	co.avoid_buckets = opts->avoid_buckets;
	fs_space_hooks(fs, &co);

	ret = bfs_open_inodes_init(fs);
	if (!ret)
		ret = bfs_core_open(dev, &co, &fs->c);
	if (ret) {
		bfs_fs_data_exit(fs);
		fs_free(fs);
		return ret;
	}
	ret = fs_start(fs, opts);
	if (ret) {
		fs_undo(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

int bfs_fs_attach(struct bfs_core *c, const struct bfs_fs_opts *opts, struct bfs_fs **out)
{
	struct bfs_fs *fs;
	int ret;

	*out = NULL;
	/* a writable core had to know the data half before its replay */
	if (!opts || !opts->read_only || !bfs_core_is_read_only(c)) {
		bfs_core_close(c);
		return -EINVAL;
	}
	fs = fs_alloc(bfs_core_dev(c));
	if (!fs) {
		bfs_core_close(c);
		return -ENOMEM;
	}
	fs->read_only = true;
	fs->c = c;
	ret = bfs_open_inodes_init(fs);
	if (!ret)
		ret = fs_start(fs, opts);
	if (ret) {
		fs_undo(fs);
		return ret;
	}
	*out = fs;
	return 0;
}

int bfs_fs_prepare(struct bfs_dev *dev, struct bfs_core_opts *co, struct bfs_fs **out)
{
	struct bfs_fs *fs = fs_alloc(dev);

	*out = NULL;
	if (!fs)
		return -ENOMEM;
	/* as bfs_fs_open() hands its own core */
	fs_space_hooks(fs, co);
	*out = fs;
	return 0;
}

void bfs_fs_prepared_free(struct bfs_fs *fs)
{
	if (!fs)
		return;
	bfs_fs_data_exit(fs);
	fs_free(fs);
}

int bfs_fs_attach_prepared(struct bfs_fs *fs, struct bfs_core *c, const struct bfs_fs_opts *opts)
{
	int ret = 0;

	fs->read_only = opts->read_only || opts->no_replay;
	fs->discard = opts->discard && !fs->read_only;
	fs->c = c;
	if (!fs->read_only)
		ret = bfs_core_make_writable(c);
	if (!ret)
		ret = bfs_open_inodes_init(fs);
	if (!ret)
		ret = fs_start(fs, opts);
	if (ret)
		fs_undo(fs);
	return ret;
}

int bfs_fs_close(struct bfs_fs *fs)
{
	int ret = 0, r;

	if (!fs)
		return 0;
	bfs_fs_commit_stop(fs);
	if (!fs->read_only) {
		ret = bfs_open_inodes_close(fs);
		r = bfs_ns_ino_give_back(fs);
		ret = ret ? ret : r;
		r = bfs_fs_data_flush(fs, 0);
		ret = ret ? ret : r;
	}
	bfs_fs_data_exit(fs);
	r = bfs_core_close(fs->c);
	ret = ret ? ret : r;
	fs_free(fs);
	return ret;
}

int bfs_fs_sync(struct bfs_fs *fs)
{
	int ret;

	if (fs->read_only)	/* stopped writes (errors=) leave work unsynced: say so */
		return bfs_core_error(fs->c);
	ret = bfs_fs_data_flush(fs, 0);
	/* emptied buckets come back (and are discarded) once that is durable */
	if (!ret)
		ret = bfs_fs_data_release(fs);
	return ret ? ret : bfs_core_flush(fs->c);
}

int bfs_fs_statfs(struct bfs_fs *fs, struct bfs_statfs *st)
{
	u64 total = 0, free = 0, used_inos;

	bfs_fs_data_space(fs, &total, &free);
	/*
	 * Every inode in use has a number below the counter at open or below
	 * the highest one handed out since: an upper bound that, unlike the
	 * counter, does not count the unused rest of the ranges (ino_alloc.c).
	 */
	used_inos = BFS_MAX(fs->ino_base, __atomic_load_n(&fs->ino_top, __ATOMIC_RELAXED)) - 1;
	*st = (struct bfs_statfs){
		.bsize = le32_to_cpu(fs->sb->block_size),
		.blocks = total,
		.bfree = free,
		.bavail = free,
		/* an inode costs no preallocated space: one per free block is the limit */
		.ffree = free,
		.files = free + used_inos,
		.namemax = BFS_NAME_MAX,
	};
	return 0;
}

struct bfs_core *bfs_fs_core(struct bfs_fs *fs)
{
	return fs->c;
}
