// SPDX-License-Identifier: MIT
/* Running the passes and turning their results into an fsck(8) exit code. */
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <errno.h>

#include "fs_check.h"
#include "fsck_passes.h"

static const struct {
	const char *name;
	int (*fn)(struct bfs_fsck *f);
} passes[] = {
	{ "superblock", bfs_fsck_pass_super },
	{ "journal", bfs_fsck_pass_journal },
	{ "btrees", bfs_fsck_pass_btree },
	{ "directories and inodes", bfs_fsck_pass_fs },
};

int fsck_u64_push(u64 **a, size_t *nr, size_t *cap, u64 v)
{
	if (*nr == *cap) {
		size_t n = *cap * 2 + 256;
		u64 *p = bfs_realloc(*a, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		*a = p;
		*cap = n;
	}
	(*a)[(*nr)++] = v;
	return 0;
}

const char *bfs_fsck_pass_name(unsigned pass)
{
	return pass >= 1 && pass <= ARRAY_SIZE(passes) ? passes[pass - 1].name : NULL;
}

static int run_passes(struct bfs_fsck *f)
{
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(passes); i++) {
		if (bfs_fsck_cancelled(f))
			return BFS_FSCK_CANCELED;
		/* from 1, as e2fsck: systemd-fsck's percentage assumes so */
		f->pass = (unsigned)i + 1;
		if (f->verbose)
			bfs_fsck_printf(f, "pass %u: checking %s", f->pass, passes[i].name);
		ret = passes[i].fn(f);
		/* the next pass's peak need not sit on this one's freed heap */
		bfs_heap_trim();
		if (ret == -EUCLEAN)
			return BFS_FSCK_UNCORRECTED;
		if (ret)
			return BFS_FSCK_ERROR;
		if (f->preen_stopped)
			break;
	}
	if (bfs_fsck_cancelled(f))
		return BFS_FSCK_CANCELED;
	if (f->preen_stopped) {
		/* e2fsck's words, which boot scripts and admins look for */
		bfs_fsck_printf(f, "UNEXPECTED INCONSISTENCY; RUN fsck MANUALLY (without -a or -p)");
		return BFS_FSCK_UNCORRECTED;
	}
	if (f->nr_unfixed)
		return BFS_FSCK_UNCORRECTED;
	return f->nr_fixed ? BFS_FSCK_CORRECTED : BFS_FSCK_OK;
}

int bfs_fsck_run(struct bfs_fsck *f)
{
	int ret = run_passes(f);

	/* pass 2 took it, unless it did not run */
	fsck_early_free(f->early);
	f->early = NULL;
	return ret;
}

void bfs_fsck_release(struct bfs_fsck *f)
{
	fsck_early_free(f->early);
	f->early = NULL;
	bfs_sb_handle_release(&f->sb);
}
