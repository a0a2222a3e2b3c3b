// SPDX-License-Identifier: MIT
/*
 * Pass 1a: the journal.  It is read as an open would (bfs_core_check_journal(),
 * nothing replayed or written): the journal layer decides what is a torn
 * write (a crash state, replayed around silently) and what is damage, and
 * hands each piece of damage back as a finding with the entry's offset,
 * ring bucket and seq.  Each is decided here.  If every one may be fixed,
 * the repair is the same open done read-write: the consistent prefix is
 * replayed and checkpointed, the clean section records the result, and the
 * journal is erased, so every later pass (and the next mount) opens a sound
 * journal.  Each step of it is crash-safe: until the superblock names the
 * new roots, the damaged journal is left as it was and the next fsck
 * salvages it again.
 *
 * If a fix is declined (-n, or "no"), the later passes open with salvage,
 * read-only, so they check what the repair would keep.
 *
 * The journal is read once: pass 1's open reads it
 * (fsck_btree_open_first()), salvaging read-only, and hands its findings
 * here to be decided; if the damage is left as it is, pass 1 goes on with
 * that open; a repair writes, and pass 1 opens again.  Only if that open
 * fails is the journal read here (bfs_core_check_journal()).
 */
#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/fsck.h>
#include <bfs/os.h>
#include <bfs/super.h>
#include <string.h>

#include "fsck_passes.h"

struct jfindings {
	struct bfs_finding *v;
	size_t nr, cap;
	int err;
};

static void collect(void *ctx, const struct bfs_finding *fd)
{
	struct jfindings *jf = ctx;

	if (jf->nr == jf->cap) {
		size_t cap = jf->cap ? jf->cap * 2 : 8;
		struct bfs_finding *v = bfs_realloc(jf->v, cap * sizeof(*v));

		if (!v) {
			jf->err = -ENOMEM;
			return;
		}
		jf->v = v;
		jf->cap = cap;
	}
	jf->v[jf->nr++] = *fd;
}

/* later opens meet the same damage again: already decided */
void bfs_fsck_journal_decided(void *ctx, const struct bfs_finding *fd)
{
	(void)ctx;
	(void)fd;
}

static int open_close(struct bfs_fsck *f, const struct bfs_fs_opts *o)
{
	struct bfs_fs *fs;
	int ret = bfs_fs_open(f->dev, o, &fs);

	return ret ? ret : bfs_fs_close(fs);
}

/*
 * The journal goes on after the clean shutdown the superblock records:
 * every open replays such a log as after a crash (libcore/journal/read.c),
 * so the repair is a read-write open, which replays, checkpoints and
 * clears the stale clean flag (the superblock write order keeps that
 * crash-safe).  Declined (-n), later passes open read-only and see the
 * replayed state in memory, as a mount would.
 */
static int replay_after_clean(struct bfs_fsck *f, const struct bfs_finding *fd)
{
	struct bfs_fs_opts o = {
		.cache_bytes = 64 << 20,
		.journal_finding = bfs_fsck_journal_decided,
	};
	int ret;

	if (!bfs_fix_finding(f, fd) || f->mode == BFS_FSCK_MODE_NO)
		return 0;
	/* pass 1's open saw the device before the repair: pass 1 opens again */
	fsck_btree_open_drop(f);
	ret = open_close(f, &o);
	if (ret)
		bfs_fsck_repair_failed(f, PR_JOURNAL_AFTER_CLEAN, ret);
	return 0;
}

int bfs_fsck_pass_journal(struct bfs_fsck *f)
{
	struct jfindings jf = { 0 };
	struct bfs_fs_opts o = {
		.salvage_journal = true,
		.journal_finding = bfs_fsck_journal_decided,
		.cache_bytes = 64 << 20,
	};
	bool fix = true;
	size_t i;
	int ret;

	if (!le32_to_cpu(f->sb.sb->journal_nbuckets))
		return 0;
	/* the journal is read by pass 1's open, once (pass_btree.c) */
	if (fsck_btree_open_first(f, collect, &jf)) {
		if (!jf.nr && !jf.err)
			return 0;
		ret = 0;
		if (jf.err) {
			fsck_btree_open_drop(f);
			jf.nr = 0;
			jf.err = 0;
			ret = bfs_core_check_journal(f->dev, f->sb.sb, collect, &jf);
		}
	} else {
		ret = bfs_core_check_journal(f->dev, f->sb.sb, collect, &jf);
	}
	if (!ret)
		ret = jf.err;
	if (ret) {
		bfs_fsck_printf(f, "cannot read the journal: %s", strerror(-ret));
		/* corrupt metadata around it (no clean section): the next pass says what */
		if (ret == -EUCLEAN)
			ret = 0;
		goto out;
	}
	if (!jf.nr)
		goto out;
	if (jf.nr == 1 && jf.v[0].code == PR_JOURNAL_AFTER_CLEAN) {
		ret = replay_after_clean(f, &jf.v[0]);
		goto out;
	}
	for (i = 0; i < jf.nr; i++)
		fix &= bfs_fix_finding(f, &jf.v[i]);
	if (!fix || f->mode == BFS_FSCK_MODE_NO) {
		f->journal_salvage = true;
		goto out;
	}
	fsck_btree_open_drop(f);
	ret = open_close(f, &o);
	if (ret) {
		bfs_fsck_repair_failed(f, jf.v[jf.nr - 1].code, ret);
		f->journal_salvage = true;
		ret = 0;
	}
out:
	/* pass 1's open salvaged what a declined repair leaves: pass 1 checks that */
	if (f->journal_salvage)
		fsck_btree_open_keep(f);
	else
		fsck_btree_open_drop(f);
	bfs_free(jf.v);
	return ret;
}
