// SPDX-License-Identifier: MIT
/*
 * bfs debug: open the image as far as it opens.  A debugger is most needed
 * on images that do not mount, so every failure falls back to something
 * smaller and says what was skipped:
 *
 *   filesystem layer (fs.h), read-write once a -w session writes
 *   -> read-write: the btree core alone, read-write
 *   -> filesystem layer without journal replay (read-only)
 *   -> btree core alone (read-only), then without replay
 *   -> superblock and raw device only (super, journal, corrupt, set-super)
 *
 * A damaged or outvoted primary superblock is replaced by a backup inside
 * libcore (bfs_sb_read); the core open says so through the log hook.
 */
#include "debug.h"

#include <bfs/core.h>
#include <bfs/super.h>

#include <stdarg.h>
#include <string.h>

static void __attribute__((format(printf, 1, 2))) warn(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "bfs debug: warning: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int try_fs(struct dbg *d, bool rw, bool no_replay)
{
	struct bfs_fs_opts o = { .read_only = !rw, .no_replay = no_replay };
	int ret = bfs_fs_open(d->dev, &o, &d->fs);

	if (ret) {
		d->fs = NULL;
		return ret;
	}
	d->core = bfs_fs_core(d->fs);
	d->own_core = false;
	d->rw = rw && !no_replay;
	return 0;
}

static int try_core(struct dbg *d, bool rw, bool no_replay)
{
	struct bfs_core_opts o = { .read_only = !rw, .no_replay = no_replay };
	int ret = bfs_core_open(d->dev, &o, &d->core);

	if (ret) {
		d->core = NULL;
		return ret;
	}
	d->own_core = true;
	d->rw = rw && !no_replay;
	return 0;
}

void dbg_open_fs(struct dbg *d, bool rw)
{
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];
	int ret;

	d->fs = NULL;
	d->core = NULL;
	d->rw = false;
	ret = bfs_sb_read(d->dev, &h, err);
	if (ret) {
		snprintf(d->why_no_core, sizeof(d->why_no_core), "no valid superblock (%s)",
			 strerror(-ret));
		snprintf(d->why_no_fs, sizeof(d->why_no_fs), "%s", d->why_no_core);
		warn("no valid superblock: %s; only raw commands work", err);
		return;
	}
	bfs_sb_handle_release(&h);

	ret = try_fs(d, rw, false);
	if (!ret)
		return;
	snprintf(d->why_no_fs, sizeof(d->why_no_fs), "the filesystem layer did not open (%s)",
		 strerror(-ret));
	/* writing keys is how a broken filesystem gets fixed by hand */
	if (rw && !try_core(d, true, false)) {
		warn("%s; btree commands only", d->why_no_fs);
		return;
	}
	if (ret == -EUCLEAN || ret == -EIO) {
		if (!try_fs(d, false, true)) {
			warn("the filesystem did not open (%s); opened read-only without journal "
			     "replay", strerror(-ret));
			return;
		}
	}
	/* the btree core alone still serves every btree command */
	warn("%s; btree commands only", d->why_no_fs);
	ret = try_core(d, false, false);
	if (!ret)
		return;
	snprintf(d->why_no_core, sizeof(d->why_no_core), "the btrees did not open (%s)",
		 strerror(-ret));
	if (!try_core(d, false, true)) {
		warn("the journal cannot be replayed (%s); showing the btrees as of the last "
		     "clean shutdown (read-only)", strerror(-ret));
		return;
	}
	warn("%s; only raw commands work", d->why_no_core);
}

int dbg_close_fs(struct dbg *d)
{
	int ret = 0;

	if (d->fs)
		ret = bfs_fs_close(d->fs);
	else if (d->core)
		ret = bfs_core_close(d->core);
	if (ret) {
		fflush(stdout);
		fprintf(stderr, "bfs debug: closing the filesystem failed: %s\n", strerror(-ret));
	}
	d->fs = NULL;
	d->core = NULL;
	d->rw = false;
	return ret;
}

/*
 * A -w session starts read-only, so that looking, and raw writes, leave
 * the rest of the image exactly as it was; the first key or file write
 * reopens it read-write (which writes the superblock, and replays the
 * journal if needed).  Returns 0, or DBG_FAIL after saying why not.
 */
int dbg_reopen_rw(struct dbg *d)
{
	if (dbg_close_fs(d))
		return DBG_FAIL;
	dbg_open_fs(d, true);
	return 0;
}

/*
 * set-super and corrupt write bytes behind the core's back.  An open core
 * would write its own superblock (and dirty nodes) over them at close, so
 * close it first, and reopen read-only afterwards so nothing this session
 * does can undo the raw change.
 */
int dbg_begin_raw_write(struct dbg *d)
{
	return dbg_close_fs(d);
}

void dbg_end_raw_write(struct dbg *d)
{
	d->raw_written = true;
	dbg_open_fs(d, false);
}
