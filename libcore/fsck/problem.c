// SPDX-License-Identifier: MIT
/*
 * The problem table and the one function that answers every "fix it?"
 * according to the mode: -n never, -y always, -p only for problems marked
 * safe to preen (otherwise preen stops and the exit code asks for a manual
 * run), interactive through the ask hook.
 */
#include <bfs/fsck.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PR_PREEN_OK	(1 << 0)	/* safe to fix without asking */
#define PR_NO_FIX	(1 << 1)	/* no repair exists yet: always left unfixed */

struct bfs_problem {
	const char *message;
	const char *prompt;
	unsigned flags;
};

static const struct bfs_problem problems[PR_NR] = {
	[PR_SB_PRIMARY_INVALID] = {
		"primary superblock is invalid", "Restore it from the backup", PR_PREEN_OK },
	[PR_SB_BACKUP_INVALID] = {
		"backup superblock is invalid", "Rewrite it", PR_PREEN_OK },
	[PR_SB_BACKUP_STALE] = {
		"backup superblock differs from the primary", "Update it", PR_PREEN_OK },
	[PR_JOURNAL_UNREPLAYABLE] = {
		"journal is damaged", "Discard it", PR_NO_FIX },
	[PR_BTREE_UNREADABLE] = {
		"btree cannot be walked", "Ignore", PR_NO_FIX },
	[PR_BTREE_DAMAGED] = {
		"btree is damaged", "Ignore", PR_NO_FIX },
	[PR_FS_SKIPPED] = {
		"filesystem checks skipped", "Ignore", PR_NO_FIX },
	[PR_DIRENT_DIR_MISSING] = {
		"directory entry in a directory that does not exist", "Remove it", PR_PREEN_OK },
	[PR_DIRENT_TARGET_MISSING] = {
		"directory entry points to an inode that does not exist", "Remove it",
		PR_PREEN_OK },
	[PR_DIRENT_TYPE] = {
		"directory entry has the wrong file type", "Fix it", PR_PREEN_OK },
	[PR_DIR_PARENT] = {
		"directory's \"..\" does not name the directory holding it", "Fix it",
		PR_PREEN_OK },
	[PR_INODE_NLINK] = {
		"inode has the wrong link count", "Fix it", PR_PREEN_OK },
	[PR_INODE_UNATTACHED] = {
		"inode is in no directory", "Connect it to /lost+found", 0 },
	[PR_INODE_LOST] = {
		"inode has no links and is not on the orphan list", "Free it at the next mount",
		PR_PREEN_OK },
	[PR_INODE_SECTORS] = {
		"inode's allocated sector count is wrong", "Fix it", PR_PREEN_OK },
	[PR_EXTENT_NO_INODE] = {
		"file data belongs to no regular file", "Ignore", PR_NO_FIX },
};

void bfs_fsck_printf(struct bfs_fsck *f, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (f->print)
		f->print(f->ctx, line);
}

bool bfs_fix_problem(struct bfs_fsck *f, enum bfs_problem_code code, const char *fmt, ...)
{
	const struct bfs_problem *p = &problems[code];
	char detail[768];
	bool fix;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	f->nr_problems++;
	bfs_fsck_printf(f, "%s: %s", p->message, detail);
	if (p->flags & PR_NO_FIX) {
		bfs_fsck_printf(f, "(no repair for this yet: left as it is)");
		f->nr_unfixed++;
		return false;
	}

	switch (f->mode) {
	case BFS_FSCK_MODE_NO:
		fix = false;
		bfs_fsck_printf(f, "%s? no", p->prompt);
		break;
	case BFS_FSCK_MODE_YES:
		fix = true;
		bfs_fsck_printf(f, "%s? yes", p->prompt);
		break;
	case BFS_FSCK_MODE_PREEN:
		fix = p->flags & PR_PREEN_OK;
		if (fix)
			bfs_fsck_printf(f, "%s: fixed (preen)", p->prompt);
		else
			f->preen_stopped = true;
		break;
	default:
		fix = f->ask && f->ask(f->ctx, p->prompt);
		break;
	}
	if (fix)
		f->nr_fixed++;
	else
		f->nr_unfixed++;
	return fix;
}

void bfs_fsck_repair_failed(struct bfs_fsck *f, enum bfs_problem_code code, int err)
{
	bfs_fsck_printf(f, "repair of '%s' failed: %s", problems[code].message, strerror(-err));
	f->nr_fixed--;
	f->nr_unfixed++;
}
