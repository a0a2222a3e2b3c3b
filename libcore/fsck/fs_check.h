/* SPDX-License-Identifier: MIT */
/*
 * State shared by the filesystem-level checks of fsck (pass_fs.c and the
 * passes it runs: lost_found.c, pass_extents.c, pass_alloc.c, pass_data.c):
 * the open filesystem and what the dirents say about every inode, kept in a
 * about a byte an inode as e2fsck keeps bitmaps and counts:
 *   - ino_set.h maps each inode number to a dense index;
 *   - per index one byte: the file type, the orphan flag and the entries
 *     naming it, 0 to 6 (counts from 7 on in a hash table, link_table.h);
 *   - per index one more byte: its size in sectors, rounded up, as the
 *     inodes sweep saw it, if under FSCK_EOF_BIG (the extent check's
 *     past-the-end test needs no inode read then: a second cursor over
 *     the inodes btree, its leaf at the peak of the run, beside the
 *     extents sweep's);
 *   - per directory (a few percent of inodes), sorted by index: its first
 *     entry's directory and name (for paths) and the subdirectories
 *     counted in it.
 * What the inode itself says (nlink, sizes, sector counts, "..") is not
 * kept, but for small sizes: the last check reads the inodes btree again,
 * side by side with the extents btree, both in key order; the extent check
 * looks up the inode of each file with data too big for its eof byte.
 * Where a file is named is not kept either: when a problem is reported
 * with its path, the entries are searched for one naming it (fsck_path()).
 *
 * Counts describe the filesystem as the repairs done so far left it: a
 * repair that adds or removes an entry or an inode updates them.
 */
#ifndef BFS_FSCK_FS_CHECK_H
#define BFS_FSCK_FS_CHECK_H

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/extent_format.h>
#include <bfs/format.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>
#include <bfs/fsck.h>

#include "ino_set.h"
#include "link_table.h"

#define FSCK_PATH_MAX	4096

/* fs_check.flags[]: the type bits of the mode (S_IFMT >> 12), flags, links */
#define FSCK_I_TYPE	0x0fU
#define FSCK_I_ORPHAN	0x10U	/* on the orphan list */
#define FSCK_I_LINKS_SHIFT 5	/* entries naming it; FSCK_LINKS_BIG: in big */
#define FSCK_LINKS_BIG	7U

/* fs_check.eof[]: sectors of the size, rounded up, or this: the inode has it */
#define FSCK_EOF_BIG	255U

struct fsck_dir {
	u64	ino;
	u64	entry_dir;	/* the directory holding its first entry; 0: none */
	u32	idx;		/* its index: dirs[] is sorted by it */
	u32	subdirs;	/* entries in it naming a directory */
	u32	name_off;	/* that first entry's name in fs_check.names */
	u8	name_len;
};

/* where data may be (from the superblock, decoded once for the per-extent checks) */
struct fsck_layout {
	u64	block, bucket;		/* bytes */
	u64	first, nbuckets;	/* the data area's buckets */
	u64	journal, journal_end;	/* the journal's buckets */
	u64	dev_size;
	u64	copy[BFS_SB_MAX_COPIES];	/* superblock copies' offsets */
	unsigned nr_copies;
};

struct fs_check {
	struct bfs_fsck *f;
	struct bfs_fs *fs;
	struct bfs_core *c;
	struct fsck_layout lay;
	struct ino_set set;
	u8	*flags;		/* per index: FSCK_I_* */
	u8	*eof;		/* per index: size in sectors or FSCK_EOF_BIG */
	bool	eof_gone;	/* the extent check is done with eof[]: freed */
	struct link_table big;	/* link counts of FSCK_LINKS_BIG and more */
	size_t	nr, cap;	/* indices in use, allocated */
	struct fsck_dir *dirs;
	size_t	nr_dirs, cap_dirs;
	size_t	dir_hint;	/* the record found last: sweeps ask for it again, or the next */
	char	*names;		/* directories' entry names, not NUL-terminated */
	size_t	names_len, names_cap;
	u64	lf_ino;		/* /lost+found, once known to be a directory; 0: none */
	u64	name_scan;	/* entries read to find files' names for paths */
	/* progress: each fsck_for_each_key() sweep counts inode numbers 0..next_ino */
	u64	next_ino, sweep, nr_sweeps, seen;
	char	path[FSCK_PATH_MAX];
};

/* the index of inode @ino in the per-inode arrays; false if pass 2 did not find it */
static inline bool fsck_find(const struct fs_check *fc, u64 ino, size_t *idx)
{
	return ino_set_find(&fc->set, ino, idx);
}

/* S_IFMT bits of the inode at @idx */
static inline u32 fsck_type(const struct fs_check *fc, size_t idx)
{
	return (u32)(fc->flags[idx] & FSCK_I_TYPE) << 12;
}

/* the directory record of the directory at @idx (one must exist) */
struct fsck_dir *fsck_dir(struct fs_check *fc, size_t idx);

/* the directory record of directory @ino, NULL if @ino is not a known directory */
struct fsck_dir *fsck_find_dir(struct fs_check *fc, u64 ino);

/* add inode @ino of @mode and @size (no entries yet) at the next index, stored in *idx */
int fsck_add_ino(struct fs_check *fc, u64 ino, u32 mode, u64 size, size_t *idx);

/* the entries naming the inode at @idx */
u32 fsck_links(const struct fs_check *fc, size_t idx);
/* one entry fewer names the inode at @idx */
void fsck_links_dec(struct fs_check *fc, size_t idx);

/* count an entry in directory @dir naming the inode at @idx (its first: remembered) */
int fsck_count_entry(struct fs_check *fc, struct fsck_dir *dir, size_t idx, u64 ino,
		     const char *name, size_t len);
/* the entry @name in @dir naming directory @d is its first (and only) one */
int fsck_set_name(struct fs_check *fc, struct fsck_dir *d, u64 dir, const char *name,
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

/* an inode key pass 2 works with (others are the key checks' business) */
static inline bool fsck_inode_key(const struct bfs_bkey *k)
{
	return k->type == BFS_KEY_INODE && !le64_to_cpu(k->offset) &&
	       bfs_bkey_val_u64s(k) >= BFS_INODE_V_U64S;
}

/*
 * A cursor over the inodes btree for a sweep in inode order of another
 * btree (the extents', for files too big for fs_check.eof[]): holds a copy
 * of the inode last asked for, so that the many keys of one inode cost one
 * lookup.
 */
struct fsck_inode_cur {
	struct bfs_btree_iter it;
	bool	valid;		/* ino and v hold that inode; false: there is none */
	u64	ino;
	struct bfs_inode_v v;
	bool	positioned;	/* the iterator is at a key, of inode @at */
	u64	at;
};

void fsck_icur_init(struct fs_check *fc, struct fsck_inode_cur *cur);
/* inode @ino into the cursor (cur->valid false if there is none); 0 or a negative errno */
int fsck_icur_seek(struct fsck_inode_cur *cur, u64 ino);
void fsck_icur_exit(struct fsck_inode_cur *cur);

struct bfs_ns_inode;
/*
 * Rewrite inode @ino with @fn applied to it (@arg its new value), through
 * the fs layer's decoding and encoding of inodes; 0 if the inode is gone
 * (an earlier repair freed it: nothing left to fix)
 */
int fsck_inode_update(struct fs_check *fc, u64 ino, void (*fn)(struct bfs_ns_inode *i, u64 arg),
		      u64 arg);
/* for fsck_inode_update(): the new size (pass_extents.c) */
void fsck_set_size(struct bfs_ns_inode *i, u64 size);
/* the mode of @ino as stored, for messages (0 if it cannot be read) */
u32 fsck_stored_mode(struct fs_check *fc, u64 ino);
/* free fs_check.eof[] (the extent check's alone: the check of counts does not pay for it) */
void fsck_free_eof(struct fs_check *fc);
/* free what the per-inode tables hold */
void fsck_fs_check_free(struct fs_check *fc);

/* the inode value of @ino as stored now, in *v; -ENOENT if it is gone */
int fsck_inode_read(struct fs_check *fc, u64 ino, struct bfs_inode_v *v);

/*
 * Progress of pass 2: fc->nr_sweeps sweeps, each an equal share, of which
 * fc->sweep are done.  A sweep in inode order reports the inode it is at;
 * one in another order (buckets, nodes) @cur of its @max.  Each ends with
 * fsck_sweep_done().
 */
void fsck_sweep_progress(struct fs_check *fc, u64 ino);
void fsck_sweep_progress_of(struct fs_check *fc, u64 cur, u64 max);
void fsck_sweep_done(struct fs_check *fc);
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

/*
 * Directory entry @k against the inodes collected: PR_NR if it is fine
 * (*dir, *target set) or not an entry pass 2 checks (*dir NULL), else the
 * problem (pass_fs.c reports and repairs it)
 */
enum bfs_problem_code fsck_dirent_state(struct fs_check *fc, const struct bfs_bkey *k,
					struct fsck_dir **dir, size_t *target);

/*
 * What pass 1's walk of the btrees collects for pass 2 (early.c), so that
 * pass 2 sweeps neither the inodes nor the dirents btree to build its
 * tables, and the filesystem's open does not sweep four btrees for the
 * highest inode number in use (bfs_fs_check_roots()).  Pass 1 walks the
 * btrees in id order: the inodes are all collected before the first entry
 * is counted.  Pass 2 takes what was collected only if nothing between
 * the walk and its own open can have changed it: pass 1 found no damage
 * (nothing was rebuilt), its open replayed the journal as pass 2's does,
 * no orphan keys (a writable open frees orphans), every entry was fine
 * (problems are pass 2's to report and repair, in its order), and the open
 * repaired neither the counter nor the root.  Otherwise pass 2 sweeps.
 * Pass 2 takes pass 1's core as it is (its journal replay, its node
 * cache): read-only, or made writable in place when pass 1's open was
 * prepared for it (fsck_early_prepare()); the filesystem is opened once.
 */
struct fsck_early {
	struct bfs_core *opened;	/* pass 1a's open of pass 1's core, not checked yet */
	char	*held;			/* its messages, held while pass 1a decides */
	size_t	held_len;
	struct bfs_core *core;	/* pass 1's read-only open, for pass 2's */
	/*
	 * the filesystem layer whose space hooks pass 1's open ran
	 * (bfs_fs_prepare()), so that pass 2 goes on with the same core
	 * (made writable for -y, -p, asking) instead of opening again; NULL:
	 * not prepared, or a hook failed (pass 2 opens for itself)
	 */
	struct bfs_fs *fs;
	struct bfs_core_opts hooks;	/* the prepared layer's own space hooks */
	bool	prep_failed;	/* one of them failed: fs is of no use */
	u64	node_slots;	/* slots in use before the data half took its buckets */
	struct fs_check fc;	/* the inodes collected, the entries counted */
	u64	max_ino;	/* bfs_fs_key_max_ino() of every key */
	bool	max_ok;		/* max_ino covers every key pass 2 will see */
	bool	tables_ok;	/* fc holds what pass 2's two sweeps would */
	/* pass 2 writable: each data bucket's live sectors (bfs_fs_opts.known_live) */
	struct bfs_bucket_live *live;
	bool	live_ok;	/* live holds what the open's sweep would count */
};

/* pass 2 opens the filesystem read-only (-n, or a damaged journal left as it is) */
static inline bool fsck_fs_read_only(const struct bfs_fsck *f)
{
	return f->mode == BFS_FSCK_MODE_NO || f->journal_salvage;
}

/* an empty one for pass 1's walk; NULL without memory (pass 2 then sweeps) */
struct fsck_early *fsck_early_new(struct bfs_fsck *f);
/*
 * pass 1's open (pass 2 goes on with it, writable or not): @co gets hooks that prepare the
 * filesystem layer for pass 2 (struct fsck_early.fs); nothing if that
 * cannot be had (pass 2 then opens for itself)
 */
void fsck_early_prepare(struct fsck_early *e, struct bfs_core_opts *co);
/* pass 1's core may become pass 2's, writable or not (the hooks ran, and did not fail) */
static inline bool fsck_early_prepared(const struct fsck_early *e)
{
	return e->fs && !e->prep_failed;
}
/* the prepared layer is of no use (pass 1 found damage, or closed its core) */
void fsck_early_unprepare(struct fsck_early *e);
/* key @k of btree @id, as pass 1's check reads it */
void fsck_early_key(struct fsck_early *e, unsigned id, const struct bfs_bkey *k);
/* free what was collected (and close the core, if pass 2 did not take it) */
void fsck_early_free(struct fsck_early *e);

/* ---- the checks pass_fs.c runs, in this order ---- */

/* lost_found.c: /lost+found exists, is a directory and is attached to / */
int fsck_check_lost_found(struct fs_check *fc);
/* pass_extents.c: fc->lay from the superblock, once the filesystem is open */
void fsck_layout_init(struct fs_check *fc);
/*
 * pass_extents.c: every extent against its inode and the device layout;
 * @each (if set) gets every extent key the checks left in place (-n: all
 * of them), in the same sweep (the allocation check's survey)
 */
int fsck_check_extents(struct fs_check *fc, void (*each)(void *ctx, const struct bfs_bkey *k),
		       void *ctx);
/* pass_extents.c: the size of inode @ino (value @v), whose data ends at sector @data_end */
void fsck_check_size(struct fs_check *fc, u64 ino, const struct bfs_inode_v *v, u64 data_end);
/* why the chunk of written extent @v is not where data may be, in @why; false if fine */
bool fsck_extent_ptr_bad(struct fs_check *fc, const struct bfs_extent_v *v, char *why,
			 size_t why_len);
/*
 * pass_alloc.c: bucket generations and live sectors recomputed from the
 * extents; runs fsck_check_extents() as its first look at them
 */
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
