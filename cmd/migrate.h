/* SPDX-License-Identifier: MIT */
/*
 * bfs migrate: state shared by its parts, one job per file.
 *
 *   migrate.c          the command: options, order of the steps, messages
 *   migrate_ext.c      the ext source through libext2fs: open, refusals,
 *                      the map of blocks it uses
 *   migrate_e2fsck.c   running e2fsck -fn on the source
 *   migrate_plan.c     the bfs geometry around the source's blocks, the plan
 *   migrate_tree.c     files, directories, links, attributes, xattrs
 *   migrate_saved.c    the saved image of every block the source uses
 *   migrate_commit.c   the superblock writes that make the device bfs
 *   migrate_rollback.c --rollback
 *
 * The rule that orders everything: until the commit, nothing is written
 * where the source has a used block (the bfs superblock areas are held in
 * memory by the device, bfs_dev_hold()), so the device stays the same ext
 * filesystem whatever happens before it.
 */
#ifndef BFS_CMD_MIGRATE_H
#define BFS_CMD_MIGRATE_H

#include <ext2fs/ext2fs.h>

#include <bfs/dev.h>
#include <bfs/fs.h>
#include <bfs/super.h>

#include "cmd.h"
#include "progress.h"

/* where the saved image lives in the new filesystem */
#define MIG_SAVED_DIR		"ext2_saved"
#define MIG_SAVED_IMAGE		"image"
#define MIG_SAVED_XATTR		"trusted.bfs.migrate"

struct mig {
	const struct bfs_cmd *cmd;
	const char *path;
	bool	dry_run, verbose, rollback, json;
	int	progress_fd;		/* -C FD, -1 if none */

	/* the source */
	ext2_filsys ext;
	u32	bs;			/* ext block size */
	u64	ext_bytes;		/* blocks_count * bs */
	u64	used_bytes;		/* in used blocks */
	u64	nr_inodes, nr_dirs, nr_regs, nr_links, nr_others, nr_inline;
	u64	data_bytes;		/* of regular files */

	/* the bfs layout around it */
	u64	dev_size;
	struct bfs_sb *sb;
	u64	bucket, first_bucket, nbuckets;
	u64	head_end;		/* [0, head_end): below the first bucket */
	u64	tail_start;		/* [tail_start, dev_size): above the last */
	u64	*busy;			/* bitmap of buckets with used ext blocks */
	u64	nr_busy, nr_free;
	u64	sb_offs[BFS_SB_MAX_COPIES];
	unsigned nr_sb;

	/* the conversion */
	struct bfs_dev *dev;
	struct bfs_fs *fs;
	u64	*ino_map;		/* ext inode -> bfs inode, 0 = not yet */
	u64	done_inodes;
	struct bfs_progress progress;	/* -C FD lines, or a bar on a terminal */
};

/* the passes of the progress lines ("PASS DONE TOTAL DEVICE", as e2fsck -C) */
enum mig_pass {
	MIG_PASS_FILES = 1,	/* conversion: inodes copied of the ext inodes in use */
	MIG_PASS_VERIFY = 2,	/* rollback: saved-image extents checked and copied */
};

/* print "bfs migrate: ..." and return BFS_EXIT_ERROR */
int mig_error(struct mig *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* an ext2fs error code as text */
const char *mig_ext_strerror(errcode_t err);
void mig_progress(struct mig *m, enum mig_pass pass, u64 done, u64 total);

int mig_ext_open(struct mig *m);
int mig_ext_check(struct mig *m);
void mig_ext_close(struct mig *m);
/* call @fn for every run of used blocks [start, start + len) of the source */
int mig_ext_used_runs(struct mig *m, int (*fn)(struct mig *m, u64 start, u64 len, void *ctx),
		      void *ctx);

int mig_e2fsck(struct mig *m);

int mig_plan(struct mig *m);
/* the plan as text or JSON (stdout) */
void mig_plan_print(struct mig *m, bool json);
/* is device byte @off inside the bfs bucket area (else it must be copied)? */
bool mig_in_buckets(const struct mig *m, u64 off);
/* the next edge of the bucket area after @off (where in/out may change) */
u64 mig_region_end(const struct mig *m, u64 off);

int mig_tree(struct mig *m);
int mig_saved_write(struct mig *m);
int mig_commit(struct mig *m);
int mig_rollback(struct mig *m);

/*
 * Put device bytes [dev_off, dev_off + len) at [file_off, ...) of @ino: an
 * imported extent inside the bucket area, a copy outside it.
 */
int mig_place(struct mig *m, u64 ino, u64 file_off, u64 dev_off, u64 len);

#endif
