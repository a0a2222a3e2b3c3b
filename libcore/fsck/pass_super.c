// SPDX-License-Identifier: MIT
/*
 * Pass 0: the superblock copies.  The primary (or, if it is bad, the newest
 * valid backup) is the reference; every copy the layout lists must decode to
 * the same superblock.  Repairs rewrite all copies from the reference.
 */
#include <bfs/fsck.h>
#include <bfs/os.h>

#include "fsck_passes.h"

static int check_copies(struct bfs_fsck *f, bool *rewrite)
{
	const struct bfs_sb *ref = f->sb.sb;
	struct bfs_sb *buf;
	char err[BFS_ERR_LEN];
	unsigned i;

	buf = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_MAX_BYTES);
	if (!buf)
		return -ENOMEM;
	for (i = 1; i < ref->nr_copies; i++) {
		u64 off = le64_to_cpu(ref->copy_offset[i]);
		int ret;

		bfs_fsck_progress(f, 0, i, ref->nr_copies);
		memset(buf, 0, BFS_SB_MAX_BYTES);
		ret = bfs_sb_read_copy(f->dev, off, buf, err);
		if (ret) {
			if (bfs_fix_problem(f, PR_SB_BACKUP_INVALID, "copy %u at offset %llu: %s",
					    i, (unsigned long long)off, err))
				*rewrite = true;
		} else if (le64_to_cpu(buf->seq) != le64_to_cpu(ref->seq)) {
			if (bfs_fix_problem(f, PR_SB_BACKUP_STALE,
					    "copy %u at offset %llu has sequence %llu, primary %llu",
					    i, (unsigned long long)off,
					    (unsigned long long)le64_to_cpu(buf->seq),
					    (unsigned long long)le64_to_cpu(ref->seq)))
				*rewrite = true;
		}
	}
	bfs_fsck_progress(f, 0, ref->nr_copies, ref->nr_copies);
	bfs_free(buf);
	return 0;
}

int bfs_fsck_pass_super(struct bfs_fsck *f)
{
	char err[BFS_ERR_LEN];
	bool rewrite = false;
	int ret;

	ret = bfs_sb_read(f->dev, &f->sb, err);
	if (ret == -EUCLEAN) {
		/* bfs magic, but no copy is valid (or the device is too small): damage */
		bfs_fix_problem(f, PR_SB_NONE_VALID, "%s", err);
		return -EUCLEAN;
	}
	if (ret) {
		/* no bfs magic anywhere, or I/O: an operational error, as e2fsck has it */
		bfs_fsck_printf(f, "cannot find a valid superblock: %s", err);
		return ret;
	}
	if (f->mode != BFS_FSCK_MODE_NO && bfs_sb_check_writable(f->sb.sb, err)) {
		bfs_fsck_printf(f, "%s; check with -n", err);
		return -EROFS;
	}
	if (f->sb.used_backup &&
	    bfs_fix_problem(f, PR_SB_PRIMARY_INVALID, "%s; backup copy %u at offset %llu is valid",
			    f->sb.primary_err, f->sb.copy, (unsigned long long)f->sb.offset))
		rewrite = true;
	ret = check_copies(f, &rewrite);
	if (ret || !rewrite)
		return ret;
	ret = bfs_sb_write(f->dev, f->sb.sb);
	if (ret)
		bfs_fsck_repair_failed(f, PR_SB_BACKUP_INVALID, ret);
	return ret;
}
