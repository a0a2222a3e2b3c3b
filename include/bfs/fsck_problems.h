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
	/* pass 1: journal entries (libcore/journal/read.c decides, doc/format/journal.md) */ \
	x(JOURNAL_ENTRY_CORRUPT, LOSS, "journal entry needed for replay is corrupt",	\
	  "Replay the entries before it and discard the rest")		\
	x(JOURNAL_ENTRY_INVALID, LOSS,						\
	  "journal entry holds updates that cannot be replayed",		\
	  "Replay the entries before it and discard the rest")		\
	x(JOURNAL_SEQ_GAP, LOSS, "journal entry needed for replay is missing",	\
	  "Replay the entries before it and discard the rest")		\
	x(JOURNAL_OUT_OF_SEQUENCE, LOSS,					\
	  "journal entry is out of sequence (misplaced or forged)", "Discard it")	\
	x(JOURNAL_NEWEST_CORRUPT, LOSS,						\
	  "newest journal entry is corrupt, and not by a torn write", "Discard it")	\
	x(JOURNAL_TAIL_CORRUPT, LOSS,						\
	  "corrupt journal entries after the newest valid one", "Erase them")	\
	x(JOURNAL_STALE, PREEN,							\
	  "journal holds entries written after the clean shutdown", "Erase them")	\
	x(JOURNAL_AFTER_CLEAN, PREEN,						\
	  "superblock says clean, but the journal continues after it", "Replay it")	\
	/* pass 1: btree nodes, keys and topology */				\
	x(BTREE_UNREADABLE, NOFIX, "btree cannot be walked", "Ignore")		\
	x(BTREE_DAMAGED, NOFIX, "btree is still damaged after its rebuild", "Ignore")	\
	x(BTREE_REPLAY_BLOCKED, LOSS,						\
	  "journal keys cannot be replayed into a damaged btree node",		\
	  "Rebuild the btree and replay them on top")				\
	x(BTREE_ROOT_BAD, LOSS, "btree root pointer is invalid", "Rebuild the btree")	\
	x(BTREE_NODE_READ_ERROR, LOSS, "btree node cannot be read (I/O error)",	\
	  "Rebuild the btree")							\
	x(BTREE_NODE_NOT_A_NODE, LOSS,						\
	  "child pointer leads to something that is not a btree node",		\
	  "Rebuild the btree")							\
	x(BTREE_NODE_HEADER_CSUM, LOSS, "btree node header has a bad checksum",	\
	  "Rebuild the btree")							\
	x(BTREE_NODE_NO_BSET, LOSS, "btree node holds no key set",		\
	  "Rebuild the btree")							\
	x(BTREE_NODE_FOREIGN, LOSS,						\
	  "child pointer leads to a node of another filesystem",		\
	  "Rebuild the btree")							\
	x(BTREE_PTR_STALE, LOSS,							\
	  "child pointer leads to another node (stale or misdirected)",		\
	  "Rebuild the btree")							\
	x(BTREE_PTR_MISDIRECTED, LOSS,						\
	  "child pointer and node disagree on the btree or level", "Rebuild the btree")	\
	x(BTREE_PTR_RANGE, LOSS, "child pointer and node disagree on the key range",	\
	  "Rebuild the btree")							\
	x(BTREE_PTR_OUTSIDE, LOSS, "child pointer lies outside the metadata area",	\
	  "Rebuild the btree")							\
	x(BTREE_PTR_SHARED, LOSS, "two child pointers lead to the same node",	\
	  "Rebuild the btree")							\
	x(BTREE_PTR_INVALID, LOSS, "interior node holds a bad child pointer",	\
	  "Rebuild the btree")							\
	x(BTREE_TOPOLOGY, 0, "child nodes leave a gap or overlap in the key range",	\
	  "Rebuild the btree")							\
	x(BTREE_BSET_BAD_SIZE, LOSS, "key set in a btree node has a bad size or offset",	\
	  "Drop it and the key sets after it")					\
	x(BTREE_BSET_CSUM, LOSS, "key set in a btree node has a bad checksum",	\
	  "Drop it")								\
	x(BTREE_KEY_OVERRUN, LOSS, "btree key runs past the end of its key set",	\
	  "Drop the rest of the key set")					\
	x(BTREE_KEY_INVALID, LOSS, "btree key is invalid", "Drop it")		\
	x(BTREE_KEY_ORDER, 0, "btree keys are out of order", "Sort them")	\
	x(BTREE_KEY_OUTSIDE_NODE, LOSS, "btree key lies outside its node's range",	\
	  "Drop it")								\
	x(BTREE_EXTENT_OVERLAP, LOSS, "extent overlaps the one before it", "Drop it")	\
	x(BTREE_RANGE_FROM_SCAN, LOSS,						\
	  "btree key range is held only by a node found by scanning the device",	\
	  "Restore it from the newest version found")			\
	x(BTREE_RANGE_LOST, LOSS, "btree key range is held by no node any more",	\
	  "Rebuild the btree without it")					\
	/* pass 1c: what the filesystem needs to be opened at all */		\
	x(FS_COUNTER_MISSING, PREEN, "inode-number counter is missing",		\
	  "Recreate it past every inode number in use")				\
	x(FS_COUNTER_BEHIND, PREEN,							\
	  "inode-number counter is not past every inode number in use",		\
	  "Move it past them")							\
	x(FS_ROOT_MISSING, 0, "root directory is missing", "Recreate it")	\
	x(FS_ROOT_NOT_DIR, LOSS, "root inode is not a directory",		\
	  "Replace it with an empty directory")					\
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
	x(SYMLINK_TARGET_LOST, LOSS, "symlink's target cannot be read",		\
	  "Point it at a placeholder saying so")				\
	x(INODE_SECTORS, PREEN, "inode's allocated sector count is wrong", "Fix it")	\
	x(EXTENT_NO_INODE, LOSS, "file data belongs to no regular file", "Remove it")	\
	/* pass 2: /lost+found */						\
	x(LOST_FOUND_MISSING, PREEN, "/lost+found is missing", "Create it")	\
	x(LOST_FOUND_NOT_DIR, 0, "/lost+found is not a directory",		\
	  "Move it into a new /lost+found")					\
	x(LOST_FOUND_UNATTACHED, PREEN, "/lost+found is in no directory",	\
	  "Reconnect it to /")							\
	/* pass 2: extents and file sizes */					\
	x(EXTENT_PTR_BAD, LOSS,							\
	  "file data pointer is outside the data area of the device",		\
	  "Drop the extent (the range becomes a hole)")				\
	x(EXTENT_PAST_EOF, PREEN, "file data lies beyond the end of the file",	\
	  "Drop it")								\
	x(INODE_SIZE_BAD, 0, "file size is beyond the largest file size",	\
	  "Set it from the file's data")					\
	/* pass 2: allocation (buckets recomputed from what points into them) */	\
	x(ALLOC_KEY_BAD, PREEN, "alloc key for a bucket outside the data area",	\
	  "Remove it")								\
	x(EXTENT_BUCKET_SHARED, LOSS,						\
	  "file data is in a bucket that btree nodes or the journal use",	\
	  "Drop the extent (the range becomes a hole)")				\
	x(ALLOC_GEN_WRONG, PREEN,						\
	  "bucket generation is older than every pointer into it", "Fix it")	\
	x(EXTENT_GEN_WRONG, PREEN,						\
	  "file data pointer has a newer generation than its bucket, its data verifies",	\
	  "Fix the pointer")							\
	x(EXTENT_STALE, LOSS,							\
	  "file data pointer is stale (its bucket was reused or its generation is wrong)",	\
	  "Drop the extent (the range becomes a hole)")				\
	x(ALLOC_MISSING, PREEN, "bucket holds file data but has no alloc key",	\
	  "Add it")								\
	x(ALLOC_LEAKED, PREEN,							\
	  "bucket is marked as holding file data, nothing points into it",	\
	  "Free it")								\
	x(ALLOC_COUNT_WRONG, PREEN, "bucket's live sector count is wrong", "Fix it")	\
	/* pass 2: file data read back (--check-data) */			\
	x(DATA_CSUM, NOFIX, "file data checksum mismatch (the range reads as EIO)",	\
	  "Ignore")								\
	x(DATA_DECOMPRESS, NOFIX,						\
	  "compressed file data cannot be decompressed (the range reads as EIO)",	\
	  "Ignore")								\
	x(DATA_READ_ERROR, NOFIX, "file data cannot be read (the range reads as EIO)",	\
	  "Ignore")

enum bfs_problem_code {
#define x(name, flags, msg, prompt) PR_##name,
	BFS_FSCK_PROBLEMS(x)
#undef x
	PR_NR
};

#endif
