// SPDX-License-Identifier: MIT
/*
 * The saved image: /ext2_saved/image is as long as the ext filesystem and
 * holds every block it uses at that block's own offset, as extents over the
 * blocks where they are (copies for the few in bfs's superblock areas).  So
 * the old metadata is kept without being copied, the buckets it occupies
 * stay taken while the file exists, and every block is checksummed for
 * --rollback.  File data is referenced twice, by its file and by the image.
 */
#include "migrate.h"

#include <bfs/migrate_format.h>

#include <string.h>
#include <sys/stat.h>

static int save_run(struct mig *m, u64 start, u64 len, void *ctx)
{
	u64 *ino = ctx;
	int ret = mig_place(m, *ino, start * m->bs, start * m->bs, len * m->bs);

	if (ret)
		return mig_error(m, "cannot save ext blocks %llu..%llu: %s",
				 (unsigned long long)start, (unsigned long long)(start + len - 1),
				 strerror(-ret));
	return 0;
}

int mig_saved_write(struct mig *m)
{
	static const char dir[] = MIG_SAVED_DIR, img[] = MIG_SAVED_IMAGE;
	struct bfs_creds root = { 0, 0 };
	struct bfs_setattr sa = { .valid = BFS_SET_SIZE, .size = m->ext_bytes };
	struct bfs_migrate_saved rec = {
		.magic = cpu_to_le64(BFS_MIGRATE_MAGIC),
		.version = cpu_to_le32(BFS_MIGRATE_VERSION),
		.block_size = cpu_to_le32(m->bs),
		.ext_bytes = cpu_to_le64(m->ext_bytes),
		.used_bytes = cpu_to_le64(m->used_bytes),
		.dev_size = cpu_to_le64(m->dev_size),
		.head_end = cpu_to_le64(m->head_end),
		.tail_start = cpu_to_le64(m->tail_start),
	};
	struct bfs_stat st;
	u64 ino;
	int ret;

	ret = bfs_fs_mkdir(m->fs, BFS_ROOT_INO, dir, sizeof(dir) - 1, 0700, &root, &st);
	if (ret == -EEXIST)
		return mig_error(m, "the ext filesystem has a /%s already; rename it first", dir);
	if (!ret)
		ret = bfs_fs_mknod(m->fs, st.ino, img, sizeof(img) - 1, S_IFREG | 0400, 0, &root,
				   &st);
	ino = st.ino;
	if (!ret)
		ret = bfs_fs_setattr(m->fs, ino, &sa, &st);
	if (ret)
		return mig_error(m, "cannot create /%s/%s: %s", dir, img, strerror(-ret));
	ret = mig_ext_used_runs(m, save_run, &ino);
	if (ret)
		return ret;
	ret = bfs_fs_setxattr(m->fs, ino, MIG_SAVED_XATTR, &rec, sizeof(rec), 0);
	if (ret)
		return mig_error(m, "cannot record the saved image: %s", strerror(-ret));
	return 0;
}
