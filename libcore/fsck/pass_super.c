// SPDX-License-Identifier: MIT
/*
 * Pass 0: the superblock copies.  The primary (or, if it is bad, the newest
 * valid backup) is the reference; every copy the layout lists must decode to
 * the same superblock.  Repairs rewrite all copies from the reference.
 *
 * A valid primary outvoted by agreeing backups (bfs_sb_read's majority
 * rule, libcore/super/vote.c) is reported here and rewritten on -y.
 *
 * A superblock update interrupted by a power cut (backups one write newer
 * than the primary, one copy torn: bfs_sb_copy_interrupted()) is the
 * designed write order, not damage: it is said, not counted, and -y / -p
 * complete it as the next read-write mount would, by rewriting every copy.
 */
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <stdio.h>
#include <string.h>

#include "fsck_passes.h"

struct copies {
	unsigned nr;
	struct bfs_sb *buf[BFS_SB_MAX_COPIES];	/* [0]: the raw primary, only if unused */
	int ret[BFS_SB_MAX_COPIES];
	char err[BFS_SB_MAX_COPIES][BFS_ERR_LEN];
	const struct bfs_sb *newer;		/* a valid backup one write newer than the primary */
	bool all_backups_ref;			/* every backup valid and equal to the reference */
};

static void copies_free(struct copies *c)
{
	for (unsigned i = 0; i < BFS_SB_MAX_COPIES; i++)
		bfs_sb_buf_free(c->buf[i]);
}

static int read_copies(struct bfs_fsck *f, struct copies *c)
{
	const struct bfs_sb *ref = f->sb.sb;
	unsigned i;

	c->nr = ref->nr_copies;
	c->all_backups_ref = true;
	for (i = f->sb.used_backup ? 0 : 1; i < c->nr; i++) {
		c->buf[i] = bfs_sb_buf_alloc();
		if (!c->buf[i])
			return -ENOMEM;
		c->ret[i] = bfs_sb_read_copy(f->dev, le64_to_cpu(ref->copy_offset[i]), c->buf[i],
					     c->err[i]);
		bfs_fsck_progress(f, i + 1, c->nr);
		if (!i)
			continue;
		if (c->ret[i] || le64_to_cpu(c->buf[i]->seq) != le64_to_cpu(ref->seq))
			c->all_backups_ref = false;
		if (!c->ret[i] && le64_to_cpu(c->buf[i]->seq) == le64_to_cpu(ref->seq) + 1 && !c->newer)
			c->newer = c->buf[i];
	}
	return 0;
}

static void interrupted(struct bfs_fsck *f, unsigned i, const char *what, bool *crash)
{
	*crash = true;
	bfs_fsck_printf(f, "superblock copy %u at offset %llu %s: an update interrupted by a power "
			"cut (the designed write order, not damage); %s", i,
			(unsigned long long)le64_to_cpu(f->sb.sb->copy_offset[i]), what,
			f->mode == BFS_FSCK_MODE_NO ? "the next read-write mount completes it"
						    : "completing it");
}

static void check_copies(struct bfs_fsck *f, const struct copies *c, bool *rewrite, bool *crash)
{
	const struct bfs_sb *ref = f->sb.sb;
	unsigned i;

	for (i = 1; i < c->nr; i++) {
		u64 off = le64_to_cpu(ref->copy_offset[i]);
		const struct bfs_sb *b = c->buf[i];

		if (!f->sb.used_backup && bfs_sb_copy_interrupted(ref, b, !c->ret[i], c->newer)) {
			interrupted(f, i, c->ret[i] ? "is torn" : "is one write newer than the primary",
				    crash);
		} else if (c->ret[i]) {
			if (bfs_fix_problem(f, PR_SB_BACKUP_INVALID, "copy %u at offset %llu: %s",
					    i, (unsigned long long)off, c->err[i]))
				*rewrite = true;
		} else if (le64_to_cpu(b->seq) != le64_to_cpu(ref->seq)) {
			if (bfs_fix_problem(f, PR_SB_BACKUP_STALE,
					    "copy %u at offset %llu has sequence %llu, primary %llu",
					    i, (unsigned long long)off,
					    (unsigned long long)le64_to_cpu(b->seq),
					    (unsigned long long)le64_to_cpu(ref->seq)))
				*rewrite = true;
		} else if (!bfs_sb_same(b, ref)) {
			char where[80];

			bfs_sb_diff_text(ref, b, where, sizeof(where));
			if (bfs_fix_problem(f, PR_SB_BACKUP_STALE,
					    "copy %u at offset %llu has the primary's sequence %llu but "
					    "differs from it %s", i, (unsigned long long)off,
					    (unsigned long long)le64_to_cpu(ref->seq), where))
				*rewrite = true;
		}
	}
}

int bfs_fsck_pass_super(struct bfs_fsck *f)
{
	struct copies c = { 0 };
	char err[BFS_ERR_LEN];
	bool rewrite = false, crash = false;
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
	ret = read_copies(f, &c);
	if (ret)
		goto out;
	if (f->sb.outvoted) {
		/* bfs_sb_read() applied the majority rule: every opener uses the backups */
		if (bfs_fix_problem(f, PR_SB_PRIMARY_INVALID, "%s: they are used", f->sb.primary_err))
			rewrite = true;
	} else if (f->sb.used_backup) {
		/* written after every backup: torn only if they all hold the new superblock */
		if (c.all_backups_ref && bfs_sb_primary_torn(f->sb.sb, c.buf[0]))
			interrupted(f, 0, "is torn", &crash);
		else if (bfs_fix_problem(f, PR_SB_PRIMARY_INVALID,
					 "%s; backup copy %u at offset %llu is valid",
					 f->sb.primary_err, f->sb.copy,
					 (unsigned long long)f->sb.offset))
			rewrite = true;
	}
	check_copies(f, &c, &rewrite, &crash);
	if (crash && f->mode != BFS_FSCK_MODE_NO)
		rewrite = true;
	if (!rewrite)
		goto out;
	ret = bfs_sb_write(f->dev, f->sb.sb);
	if (ret)
		bfs_fsck_repair_failed(f, PR_SB_BACKUP_INVALID, ret);
out:
	copies_free(&c);
	return ret;
}
