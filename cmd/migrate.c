// SPDX-License-Identifier: MIT
/*
 * bfs migrate: convert an unmounted ext2/3/4 filesystem to bfs in place, and
 * --rollback.  This file holds the order of the steps; each step is in its
 * own migrate_*.c (see migrate.h).
 *
 *   refusals (mounted, ext state and features, e2fsck -fn, inode flags)
 *   plan (geometry around the used blocks; --dry-run stops here)
 *   mkfs with the superblock areas held in memory, open, hold ext's buckets
 *   the tree, then the saved image, then a clean close
 *   commit: the superblock copies, end copy first
 */
#include "migrate.h"

#include <bfs/import.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/probe.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct bfs_opt migrate_opts[] = {
	BFS_OPT("dry-run", 'n', 0, NULL, "check and print the plan, write nothing"),
	BFS_OPT("json", 0, 'j', NULL, "the plan as JSON (with --dry-run)"),
	BFS_OPT("verbose", 'v', 0, NULL, "print the plan and e2fsck's report too"),
	BFS_OPT("progress-fd", 'C', 0, "FD", "write progress lines (\"PASS DONE TOTAL DEVICE\") to FD"),
	BFS_OPT("rollback", 0, 'R', NULL, "restore the ext filesystem from /" MIG_SAVED_DIR "/"
		MIG_SAVED_IMAGE),
	{ 0 }
};

int mig_error(struct mig *m, const char *fmt, ...)
{
	va_list ap;

	bfs_progress_clear(&m->progress);
	fprintf(stderr, "bfs %s: ", m->cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return BFS_EXIT_ERROR;
}

void mig_progress(struct mig *m, enum mig_pass pass, u64 done, u64 total)
{
	bfs_progress_update(&m->progress, pass,
			    pass == MIG_PASS_FILES ? "copying inodes" : "checking the saved image",
			    done, total);
}

static int check_device(struct mig *m)
{
	char where[256];
	int ret = bfs_check_mounted(m->path, where, sizeof(where));

	if (ret == -ENOENT)
		return mig_error(m, "'%s' does not exist", m->path);
	if (ret < 0)
		return mig_error(m, "cannot check whether '%s' is mounted: %s", m->path,
				 strerror(-ret));
	if (ret)
		return mig_error(m, "'%s' is %s; unmount it first", m->path, where);
	return 0;
}

static int open_device(struct mig *m, bool write)
{
	int ret = bfs_dev_open(m->path, write ? BFS_DEV_EXCL : BFS_DEV_RDONLY | BFS_DEV_NOLOCK,
			       &m->dev);

	if (ret == -EBUSY)
		return mig_error(m, "'%s' is in use (mounted or opened by another program)",
				 m->path);
	if (ret)
		return mig_error(m, "cannot open '%s': %s", m->path, strerror(-ret));
	return 0;
}

/* tests: fail the Nth write, record every write (see tests/integration/80-migrate.sh) */
static int test_hooks(struct mig *m)
{
	const char *fail = getenv("BFS_MIGRATE_FAIL_WRITES");
	const char *log = getenv("BFS_MIGRATE_IOLOG");
	int ret;

	if (fail && *fail)
		bfs_dev_fail_writes_after(m->dev, strtoull(fail, NULL, 10));
	if (log && *log) {
		ret = bfs_dev_record_start(m->dev, log);
		if (ret)
			return mig_error(m, "cannot record to '%s': %s", log, strerror(-ret));
	}
	return 0;
}

static int refusals(struct mig *m)
{
	ext2_ino_t ino;
	int ret;

	ret = check_device(m);
	if (!ret)
		ret = mig_ext_open(m);
	if (!ret)
		ret = mig_ext_check(m);
	if (!ret && !ext2fs_lookup(m->ext, EXT2_ROOT_INO, MIG_SAVED_DIR, sizeof(MIG_SAVED_DIR) - 1,
				   NULL, &ino))
		ret = mig_error(m, "the filesystem has a /%s already (from an earlier conversion?); "
				"rename or remove it first", MIG_SAVED_DIR);
	if (!ret)
		ret = mig_e2fsck(m);
	return ret;
}

/* mkfs and open around ext's buckets, superblock areas held in memory */
static int build(struct mig *m)
{
	struct bfs_fs_opts o = { .avoid_buckets = m->busy };
	unsigned i;
	int ret = 0;

	for (i = 0; i < m->nr_sb && !ret; i++)
		ret = bfs_dev_hold(m->dev, m->sb_offs[i], BFS_SB_REGION);
	if (ret)
		return mig_error(m, "cannot hold the superblock areas: %s", strerror(-ret));
	/*
	 * Nothing built before the commit needs to be durable piece by piece:
	 * a crash before it leaves ext as it was anyway, and the commit's
	 * first flush makes all of bfs durable before its first superblock.
	 */
	bfs_dev_set_barriers(m->dev, false);
	ret = bfs_mkfs_avoid(m->dev, m->sb, m->busy);
	if (ret)
		return mig_error(m, "making the bfs filesystem failed: %s; the ext filesystem "
				 "is unchanged", strerror(-ret));
	ret = bfs_fs_open(m->dev, &o, &m->fs);
	if (!ret)
		ret = bfs_fs_import_begin(m->fs, m->busy);
	if (ret)
		return mig_error(m, "opening the new filesystem failed: %s; the ext filesystem "
				 "is unchanged", strerror(-ret));
	return 0;
}

static int convert(struct mig *m)
{
	int ret;

	ret = build(m);
	if (!ret)
		ret = mig_tree(m);
	if (!ret)
		ret = mig_saved_write(m);
	if (!ret)
		bfs_fs_import_end(m->fs);
	if (m->fs) {
		int r = bfs_fs_close(m->fs);

		m->fs = NULL;
		if (r && !ret)
			ret = mig_error(m, "closing the new filesystem failed: %s; the ext "
					"filesystem is unchanged", strerror(-r));
	}
	if (ret)
		return mig_error(m, "conversion abandoned: the ext filesystem is unchanged");
	mig_ext_close(m);	/* nothing more is read from ext: its handle goes first */
	return mig_commit(m);
}

static void log_hook(enum bfs_log_level level, const char *msg, void *ctx)
{
	struct mig *m = ctx;

	if (m)
		bfs_progress_clear(&m->progress);
	if (level == BFS_LOG_ERR || level == BFS_LOG_WARN || (m && m->verbose))
		fprintf(stderr, "bfs %s: %s%s\n", m ? m->cmd->name : "migrate",
			level == BFS_LOG_WARN ? "warning: " : "", msg);
}

static int cmd_migrate(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct mig m = { .cmd = cmd, .progress_fd = -1 };
	char *end;
	int c, ret;

	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'n':
			m.dry_run = true;
			break;
		case 'v':
			m.verbose = true;
			break;
		case 'j':
			m.json = true;
			break;
		case 'C':
			errno = 0;
			m.progress_fd = (int)strtol(optarg, &end, 10);
			if (errno || *end || m.progress_fd < 0 || fcntl(m.progress_fd, F_GETFD) < 0)
				return bfs_cmd_usage_error(cmd, "-C needs an open file descriptor, "
							   "not '%s'", optarg);
			break;
		case 'R':
			m.rollback = true;
			break;
		default:
			return bfs_cmd_usage_error(cmd, "unknown option");
		}
	}
	ret = bfs_cmd_want_device(cmd, argc);
	if (ret)
		return ret;
	if (m.json && !m.dry_run)
		return bfs_cmd_usage_error(cmd, "--json prints the plan: it goes with --dry-run");
	m.path = argv[optind];
	bfs_progress_init_cmd(&m.progress, m.progress_fd, m.path);
	bfs_log_set_hook(log_hook, &m);

	if (m.rollback) {
		ret = check_device(&m);
		if (!ret)
			ret = m.dry_run ? mig_error(&m, "--dry-run is for the conversion only")
					: open_device(&m, true);
		if (!ret)
			ret = mig_rollback(&m);
		bfs_progress_done(&m.progress);
		if (!ret)
			printf("restored the ext filesystem on '%s'; everything written to bfs since "
			       "the conversion is gone\n", m.path);
	} else {
		ret = refusals(&m);
		if (!ret)
			ret = open_device(&m, !m.dry_run);
		if (!ret)
			ret = mig_plan(&m);
		if (!ret && (m.dry_run || m.verbose))
			mig_plan_print(&m, m.json);
		if (!ret && !m.dry_run) {
			ret = test_hooks(&m);
			if (!ret)
				ret = convert(&m);
			bfs_progress_done(&m.progress);
			if (!ret)
				printf("converted '%s' to bfs; the ext filesystem is saved in /%s/%s "
				       "(bfs migrate --rollback restores it)\n", m.path,
				       MIG_SAVED_DIR, MIG_SAVED_IMAGE);
		}
	}
	mig_ext_close(&m);
	if (m.dev)
		bfs_dev_close(m.dev);
	free(m.sb);
	free(m.busy);
	free(m.ino_map);
	return ret;
}

const struct bfs_cmd bfs_cmd_migrate = {
	.name = "migrate",
	.fn = cmd_migrate,
	.summary = "convert an ext2/3/4 filesystem to bfs in place, or roll it back",
	.synopsis = "[--dry-run [--json]] [-v] [-C FD] [--rollback] DEVICE",
	.opts = migrate_opts,
	.help =
	"The ext filesystem must be unmounted, clean (e2fsck -fn passes) and use only\n"
	"features bfs can carry over.  File data is not copied.  Until the last step\n"
	"the device stays the same ext filesystem, whatever happens.\n",
	.args = BFS_ARG_DEVICE,
};
