/* SPDX-License-Identifier: MIT */
/*
 * State shared by the filesystem-level checks of fsck (pass_fs.c and the
 * passes it runs: lost_found.c, pass_extents.c, pass_alloc.c, pass_data.c):
 * the open filesystem, a table of every inode as found in the inodes btree
 * and what the other btrees say about it, and where its first directory
 * entry is, so that losses are reported by path.
 *
 * Invariants: in[] is sorted by inode number (find_ino() bisects it);
 * pointers into it stay valid until fsck_add_ino() (which may move it).
 * Counts in in[] describe the filesystem as the repairs done so far left it:
 * a repair that adds or removes an entry, an extent or an inode updates them.
 */
#ifndef BFS_FSCK_FS_CHECK_H
#define BFS_FSCK_FS_CHECK_H

#include <bfs/btree.h>
#include <bfs/extent_format.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>

#define FSCK_PATH_MAX	4096

struct ino_info {
	u64	ino;
	u32	mode, nlink;
	u64	parent;		/* directories: ".." as stored */
	u64	sectors;	/* as stored */
	u64	size;		/* as stored (regular files: may be fixed by pass_extents) */
	u32	links;		/* directory entries naming it */
	u32	subdirs;	/* directories: entries naming a directory */
	u64	ext_sectors;	/* sum of its extents */
	u64	data_end;	/* sectors: end of its last extent */
	u64	entry_dir;	/* a directory holding an entry for it */
	size_t	name_off;	/* that entry's name in fs_check.names, if name_len */
	u8	name_len;
	bool	orphan;
};

struct fs_check {
	struct bfs_fsck *f;
	struct bfs_fs *fs;
	struct bfs_core *c;
	struct ino_info *in;
	size_t nr, cap;
	char	*names;		/* entry names, not NUL-terminated */
	size_t	names_len, names_cap;
	u64	lf_ino;		/* /lost+found, once known to be a directory; 0: none */
	/* progress: each fsck_for_each_key() sweep counts inode numbers 0..next_ino */
	u64	next_ino, sweep, nr_sweeps, seen;
	char	path[FSCK_PATH_MAX];
};

struct ino_info *find_ino(struct fs_check *fc, u64 ino);
/* insert a new inode (zeroed counts) in order; *out valid until the next insert */
int fsck_add_ino(struct fs_check *fc, u64 ino, u32 mode, u32 nlink, u64 parent,
		 struct ino_info **out);
/* remember @name as the entry of @i found in directory @dir */
int fsck_set_name(struct fs_check *fc, struct ino_info *i, u64 dir, const char *name,
		  size_t len);
/*
 * The path of @ino for messages ("/a/b/file"; "<inode N>" where the chain of
 * entries breaks, e.g. "<inode 12>/x" or "<inode 9>" for an unattached
 * one).  Points into fc->path: valid until the next call.
 */
const char *fsck_path(struct fs_check *fc, u64 ino);
/* a location for findings about byte @offset of file @ino (path filled in) */
struct bfs_fsck_loc fsck_file_loc(struct fs_check *fc, u64 ino, u64 offset,
				  const struct bfs_bkey *k);

/* call @fn for every key of btree @id; a non-zero return stops and is returned */
int fsck_for_each_key(struct fs_check *fc, enum bfs_btree_id id,
		      int (*fn)(struct fs_check *fc, const struct bfs_bkey *k));
/* report a failed repair (nothing if @ret is 0) */
void fsck_repair(struct fs_check *fc, enum bfs_problem_code code, int ret);

/*
 * Drop sectors [start, end) of the extent @k: the range becomes a hole.  The
 * inode's sector count is fixed by the sector check at the end of pass 2.
 */
int fsck_drop_range(struct fs_check *fc, const struct bfs_bkey *k, u64 start, u64 end);
/* all of it */
int fsck_drop_extent(struct fs_check *fc, const struct bfs_bkey *k);

/* ---- the checks pass_fs.c runs, in this order ---- */

/* lost_found.c: /lost+found exists, is a directory and is attached to / */
int fsck_check_lost_found(struct fs_check *fc);
/* pass_extents.c: extents against their inode and the device layout; file sizes */
int fsck_check_extents(struct fs_check *fc);
/* why the chunk of written extent @v is not where data may be, in @why; false if fine */
bool fsck_extent_ptr_bad(struct fs_check *fc, const struct bfs_extent_v *v, char *why,
			 size_t why_len);
/* pass_alloc.c: bucket generations and live sectors recomputed from the extents */
int fsck_check_alloc(struct fs_check *fc);
/* pass_data.c: --check-data: every chunk read and verified */
int fsck_check_data(struct fs_check *fc);

/*
 * pass_data.c: read and verify the chunk extent @k points at.  0 if it
 * verifies; -EBADMSG checksum mismatch, -EILSEQ not a valid zstd frame of
 * the right size, -EIO read error (each with a description in @why), or
 * another negative errno (e.g. -ENOMEM).
 */
int fsck_verify_chunk(struct fs_check *fc, const struct bfs_bkey *k, char *why, size_t why_len);

#endif /* BFS_FSCK_FS_CHECK_H */
