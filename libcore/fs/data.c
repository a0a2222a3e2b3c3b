// SPDX-License-Identifier: MIT
/*
 * The data half's life cycle and the calls the namespace half makes:
 * init/exit at open/close, flush and fsync, statfs space.
 */
#include <bfs/log.h>
#include <bfs/super.h>

#include "data.h"
#include "tail_buf.h"

void bfs_data_options_load(struct bfs_fs_data *d, const struct bfs_sb *sb)
{
	d->csum_type = bfs_sb_data_csum_type(sb);	/* bfs set-option checksum= */
	d->compression = (le64_to_cpu(sb->incompat) & BFS_FEAT_INCOMPAT_ZSTD) ?
			 sb->compression_type : BFS_COMPRESSION_NONE;
	d->level = sb->compression_level ? sb->compression_level : BFS_ZSTD_LEVEL_DEFAULT;
	/* bfs set-option data_chunk= */
	bfs_chunk_policy_init(&d->chunk, bfs_sb_data_chunk(sb), d->block_size, d->chunk_max,
			      d->bucket_size);
}

/* the data state, created by the first of the space hooks and bfs_fs_data_init() */
static struct bfs_fs_data *data_get(struct bfs_fs *fs, struct bfs_core *c, int *ret)
{
	const struct bfs_sb *sb = bfs_core_sb(c);
	struct bfs_fs_data *d = fs->data;

	*ret = 0;
	if (d)
		return d;
	d = bfs_zalloc(sizeof(*d));
	if (!d) {
		*ret = -ENOMEM;
		return NULL;
	}
	d->fs = fs;
	d->c = c;
	d->dev = bfs_core_dev(c);
	d->block_size = le32_to_cpu(sb->block_size);
	d->bucket_size = le32_to_cpu(sb->bucket_size);
	d->node_size = le32_to_cpu(sb->btree_node_size);
	d->first_bucket = le64_to_cpu(sb->first_bucket);
	d->nbuckets = le64_to_cpu(sb->nbuckets);
	d->chunk_max = (u32)BFS_MIN(BFS_EXTENT_CHUNK_MAX, (u64)d->bucket_size);
	d->chunk_max = BFS_MAX(BFS_ROUND_DOWN(d->chunk_max, d->block_size), d->block_size);
	bfs_data_options_load(d, sb);
	*ret = bfs_data_alloc_setup(d);
	if (*ret) {
		bfs_data_alloc_exit(d);
		bfs_free(d);
		return NULL;
	}
	fs->data = d;
	return d;
}

int bfs_fs_data_space_init(void *ctx, struct bfs_core *c)
{
	int ret;
	struct bfs_fs_data *d = data_get(ctx, c, &ret);

	return d ? bfs_data_premark_committed(d) : ret;
}

int bfs_fs_data_space_replay_key(void *ctx, struct bfs_core *c, unsigned btree_id,
				 const struct bfs_bkey *k)
{
	int ret;
	struct bfs_fs_data *d = data_get(ctx, c, &ret);

	if (!d)
		return ret;
	if (btree_id == BFS_BTREE_ALLOC)
		bfs_data_premark_key(d, k);
	return 0;
}

int bfs_fs_data_init(struct bfs_fs *fs)
{
	int ret;
	struct bfs_fs_data *d = data_get(fs, fs->c, &ret);

	if (!d)
		return ret;
	ret = bfs_data_alloc_init(d);
	if (!ret)
		ret = bfs_tail_init(fs);
	if (ret)
		bfs_fs_data_exit(fs);
	return ret;
}

void bfs_fs_data_exit(struct bfs_fs *fs)
{
	struct bfs_fs_data *d = fs->data;

	if (!d)
		return;
	bfs_tail_exit(fs);
	bfs_data_alloc_exit(d);
	bfs_free(d);
	fs->data = NULL;
}

int bfs_fs_data_flush(struct bfs_fs *fs, u64 ino)
{
	/*
	 * Data goes to the device before its extent is committed; only small
	 * writes at files' ends wait in memory (tail_buf.h).
	 */
	if (!ino)
		return bfs_tail_flush_all(fs);
	if (bfs_tail_any(fs)) {
		bfs_inode_lock(fs, ino);	/* writes it back */
		bfs_inode_unlock(fs, ino);
	}
	return bfs_tail_error(fs, ino);
}

int bfs_fs_data_release(struct bfs_fs *fs)
{
	return bfs_data_release_pending(fs->data, true);
}

int bfs_fs_fsync(struct bfs_fs *fs, u64 ino, bool datasync)
{
	int ret;

	if (fs->read_only)	/* stopped writes (errors=) leave work unsynced: say so */
		return bfs_core_error(fs->c);
	/*
	 * Every chunk was written before the transaction referencing it
	 * committed, and each journal entry is written after a device flush:
	 * making the journal durable makes the data durable too.
	 */
	ret = bfs_fs_data_flush(fs, ino);
	if (!ret)
		ret = bfs_data_release_pending(fs->data, true);
	if (!ret)
		ret = bfs_core_flush(fs->c);
	return ret;
}

void bfs_fs_data_space(struct bfs_fs *fs, u64 *total, u64 *free_blocks)
{
	struct bfs_fs_data *d = fs->data;
	u64 t, f;

	bfs_data_stats(d, &t, &f);
	*total = t / d->block_size;
	*free_blocks = f / d->block_size;
}
