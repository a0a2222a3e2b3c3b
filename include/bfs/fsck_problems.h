/* SPDX-License-Identifier: MIT */
/*
 * Every problem bfs fsck knows, in one list.  The enum (PR_NAME), the
 * messages and prompts, the flags and the problem list in bfs-fsck(8)
 * (`bfs fsck --list-problems`, checked by tests/integration/10-manpages.sh)
 * are all generated from it, so they cannot drift.
 *
 * x(NAME, FLAGS, "message", "prompt")
 *
 * Numbers are positions in this list and are not stored on disk: append new
 * problems inside their pass's group and keep names stable (scripts match
 * the name printed by --json).
 *
 * FLAGS (or-ed, or 0):
 *   PREEN  safe to fix without asking (-p fixes it; otherwise -p stops)
 *   LOSS   the repair throws away data or metadata (reported as lost)
 *   FATAL  fsck cannot go on past it
 *   NOFIX  no repair is possible: reported and counted as left unfixed
 */
#ifndef BFS_FSCK_PROBLEMS_H
#define BFS_FSCK_PROBLEMS_H

#define BFS_PR_PREEN	(1u << 0)
#define BFS_PR_LOSS	(1u << 1)
#define BFS_PR_FATAL	(1u << 2)
#define BFS_PR_NOFIX	(1u << 3)

/*
 * The FLAGS column is written with the short names; they are defined only
 * where the list is expanded with its flags (libcore/fsck/problem.c).
 */

#define BFS_FSCK_PROBLEMS(x)							\
	/* pass 0: superblock copies */						\
	x(SB_PRIMARY_INVALID, PREEN, "primary superblock is invalid",		\
	  "Restore it from the backup")						\
	x(SB_BACKUP_INVALID, PREEN, "backup superblock is invalid", "Rewrite it")	\
	x(SB_BACKUP_STALE, PREEN, "backup superblock differs from the primary",	\
	  "Update it")								\
	x(SB_NONE_VALID, NOFIX, "cannot find a valid superblock", "Ignore")	\
	/* pass 1: journal */							\
	x(JOURNAL_UNREPLAYABLE, LOSS, "journal is damaged", "Discard it")	\
	/* pass 1: btree nodes, keys and topology */				\
	x(BTREE_UNREADABLE, NOFIX, "btree cannot be walked", "Ignore")		\
	x(BTREE_DAMAGED, NOFIX, "btree is damaged", "Ignore")			\
	/* pass 2: directories and inodes */					\
	x(FS_SKIPPED, NOFIX, "filesystem checks skipped", "Ignore")		\
	x(DIRENT_DIR_MISSING, PREEN,						\
	  "directory entry in a directory that does not exist", "Remove it")	\
	x(DIRENT_TARGET_MISSING, PREEN,						\
	  "directory entry points to an inode that does not exist", "Remove it")	\
	x(DIRENT_TYPE, PREEN, "directory entry has the wrong file type", "Fix it")	\
	x(DIR_PARENT, PREEN,							\
	  "directory's \"..\" does not name the directory holding it", "Fix it")	\
	x(INODE_NLINK, PREEN, "inode has the wrong link count", "Fix it")	\
	x(INODE_UNATTACHED, 0, "inode is in no directory",			\
	  "Connect it to /lost+found")						\
	x(INODE_LOST, PREEN, "inode has no links and is not on the orphan list",	\
	  "Free it at the next mount")						\
	x(INODE_SECTORS, PREEN, "inode's allocated sector count is wrong", "Fix it")	\
	x(EXTENT_NO_INODE, NOFIX, "file data belongs to no regular file", "Ignore")

enum bfs_problem_code {
#define x(name, flags, msg, prompt) PR_##name,
	BFS_FSCK_PROBLEMS(x)
#undef x
	PR_NR
};

#endif
