// SPDX-License-Identifier: MIT
/*
 * bfs set-option: change superblock settings after format (tune2fs,
 * xfs_admin, bcachefs set-option).  Every OPTION=VALUE is parsed and applied
 * to an in-memory copy first; the result is validated and written with one
 * bfs_sb_write(), whose order (backups, flush, primary, flush) means a crash
 * leaves either every change or none.
 *
 * On a mounted filesystem the mount keeps the superblock in memory and
 * writes it back itself, so the change goes to the mount process through
 * its control channel (mount_control.h), which applies it in the same way
 * (the same table, cmd/sb_options.c) and uses it at once.  What cannot
 * change under a mount (the UUID) is refused there.
 */
#include "cmd.h"
#include "mount_control.h"
#include "sb_options.h"

#include <bfs/probe.h>
#include <bfs/super.h>

#include <errno.h>
#include <limits.h>
#include <string.h>

struct change {
	enum bfs_sbopt opt;
	const char *arg;
	char *value;	/* points into argv: after '=' */
};

static const struct bfs_opt set_option_opts[] = {
	BFS_OPT("dry-run", 'n', 0, NULL, "show what would change, write nothing"),
	{ 0 }
};

static int unknown_opt(const struct bfs_cmd *cmd, const char *arg)
{
	fprintf(stderr, "bfs %s: unknown option '%s'; the options are:\n", cmd->name, arg);
	bfs_cmd_print_settings(cmd, stderr);
	return BFS_EXIT_USAGE;
}

/* the number of changes, or -1 after a usage message */
static int parse_changes(const struct bfs_cmd *cmd, int argc, char **argv, struct change *ch)
{
	int i, j, nr = 0;

	for (i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		int o = eq ? bfs_sbopt_find(argv[i], (size_t)(eq - argv[i])) : -1;

		if (!eq && (o = bfs_sbopt_find(argv[i], strlen(argv[i]))) >= 0) {
			bfs_cmd_usage_error(cmd, "'%s' needs a value: %s=%s", argv[i], argv[i],
					    bfs_sbopts[o].values);
			return -1;
		}
		if (o < 0) {
			unknown_opt(cmd, argv[i]);
			return -1;
		}
		for (j = 0; j < nr; j++)
			if (ch[j].opt == (enum bfs_sbopt)o) {
				bfs_cmd_usage_error(cmd, "option '%s' given twice", bfs_sbopt_name(o));
				return -1;
			}
		ch[nr++] = (struct change){ .opt = (enum bfs_sbopt)o, .arg = argv[i],
					    .value = eq + 1 };
	}
	return nr;
}

/* apply one change to @sb; a message and BFS_EXIT_USAGE on a bad value */
static int apply(const struct bfs_cmd *cmd, struct bfs_sb *sb, const struct change *c)
{
	char err[BFS_ERR_LEN];
	int ret = bfs_sbopt_apply(sb, c->opt, c->value, err);

	if (ret == -EINVAL)
		return bfs_cmd_usage_error(cmd, "%s", err);
	if (ret)
		return bfs_cmd_error(cmd, "%s", err);
	return 0;
}

/*
 * A mounted filesystem (DEVICE, or its mount point): the mount makes the
 * change.  The exit status, or -1 if @path is not a bcowfs mount.
 */
static int set_mounted(const struct bfs_cmd *cmd, const char *path, const struct change *ch,
		       int nr, bool dry_run)
{
	struct bfs_ctl_req req = { .op = BFS_CTL_SET, .flags = dry_run ? BFS_CTL_DRY_RUN : 0 };
	char mnt[PATH_MAX], what[256];
	size_t used = 0;
	bool other;
	int i, ret = bfs_ctl_find_mount(path, mnt, sizeof(mnt), &other, what, sizeof(what));

	if (ret == -EACCES || ret == -EPERM)
		return bfs_cmd_error(cmd, "'%s': permission denied (changing a mounted filesystem "
				     "needs root)", path);
	if (ret <= 0 || other)
		return -1;	/* open_unmounted() says what is wrong */
	for (i = 0; i < nr; i++) {
		size_t len = strlen(ch[i].arg) + 1;

		if (!bfs_sbopts[ch[i].opt].live)
			return bfs_cmd_error(cmd, "'%s' is mounted on %s; %s can only change on an "
					     "unmounted filesystem: unmount it first", path, mnt,
					     bfs_sbopt_name(ch[i].opt));
		if (used + len >= sizeof(req.args))
			return bfs_cmd_usage_error(cmd, "the options are too long");
		memcpy(req.args + used, ch[i].arg, len);
		used += len;
	}
	return bfs_ctl_run(cmd, mnt, &req);
}

static int open_unmounted(const struct bfs_cmd *cmd, const char *path, bool dry_run,
			  struct bfs_dev **dev)
{
	int ret = bfs_cmd_refuse_mounted(cmd, path, dry_run, "");

	if (ret)
		return ret;
	ret = bfs_dev_open(path, dry_run ? BFS_DEV_RDONLY | BFS_DEV_NOLOCK : BFS_DEV_EXCL, dev);
	if (ret == -EBUSY)
		return bfs_cmd_error(cmd, "'%s' is in use (mounted or opened by another program); "
				     "unmount it first", path);
	if (ret == -EROFS || ret == -EACCES)
		return bfs_cmd_error(cmd, "'%s' is read-only (%s); nothing changed", path,
				     strerror(-ret));
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", path, strerror(-ret));
	if (!dry_run && bfs_dev_is_readonly(*dev)) {
		bfs_dev_close(*dev);
		return bfs_cmd_error(cmd, "'%s' is read-only; nothing changed", path);
	}
	return 0;
}

static int set_options(const struct bfs_cmd *cmd, struct bfs_dev *dev, const char *path,
		       const struct change *ch, int nr, bool dry_run)
{
	struct bfs_sb_handle h;
	struct bfs_sb *sb;
	char err[BFS_ERR_LEN], before[80], after[80];
	int i, ret, changed = 0;

	ret = bfs_sb_read(dev, &h, err);
	if (ret == -ENODATA)
		return bfs_cmd_error(cmd, "'%s' is not a bfs filesystem: %s", path, err);
	if (ret)
		return bfs_cmd_error(cmd, "'%s': %s", path, err);
	sb = h.sb;
	ret = BFS_EXIT_ERROR;
	if (h.used_backup) {
		bfs_cmd_error(cmd, "the primary superblock of '%s' is invalid (%s); run 'bfs fsck' "
			      "first", path, h.primary_err);
		goto out;
	}
	if (bfs_sb_check_writable(sb, err)) {
		bfs_cmd_error(cmd, "'%s': %s", path, err);
		goto out;
	}
	for (i = 0; i < nr; i++) {
		if (bfs_sbopts[ch[i].opt].needs_clean && !(le32_to_cpu(sb->flags) & BFS_SB_CLEAN)) {
			bfs_cmd_error(cmd, "'%s' was not closed cleanly and its journal needs replay; "
				      "%s can only change on a clean filesystem (mount and unmount it, "
				      "or run 'bfs fsck', first)", path, bfs_sbopt_name(ch[i].opt));
			goto out;
		}
		bfs_sbopt_describe(ch[i].opt, sb, before);
		ret = apply(cmd, sb, &ch[i]);
		if (ret)
			goto out;
		ret = BFS_EXIT_ERROR;
		bfs_sbopt_describe(ch[i].opt, sb, after);
		if (strcmp(before, after))
			changed++;
		printf("%s: %s -> %s%s\n", bfs_sbopt_name(ch[i].opt), before, after,
		       strcmp(before, after) ? "" : " (unchanged)");
	}
	/* validation checks the checksum too; bfs_sb_write() sets it again */
	sb->csum = cpu_to_le64(bfs_sb_csum(sb));
	if (bfs_sb_validate(sb, BFS_SB_MAX_BYTES, bfs_dev_size(dev), err)) {
		bfs_cmd_error(cmd, "the new superblock would be invalid (%s); nothing changed", err);
		goto out;
	}
	if (dry_run || !changed) {
		printf("%s\n", dry_run ? "dry run: nothing written" : "nothing to change");
		ret = BFS_EXIT_OK;
		goto out;
	}
	ret = bfs_sb_write(dev, sb);
	if (ret) {
		bfs_cmd_error(cmd, "writing the superblock of '%s' failed: %s", path, strerror(-ret));
		ret = BFS_EXIT_ERROR;
		goto out;
	}
	ret = BFS_EXIT_OK;
out:
	bfs_sb_handle_release(&h);
	return ret;
}

static int cmd_set_option(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct change ch[BFS_SBOPT_NR];
	struct bfs_dev *dev;
	bool dry_run = false;
	int c, nr, ret;

	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'n':
			dry_run = true;
			break;
		default:
			return bfs_cmd_usage_error(cmd, "bad option");
		}
	}
	if (optind >= argc)
		return bfs_cmd_usage_error(cmd, "no device given");
	if (optind + 1 >= argc)
		return bfs_cmd_usage_error(cmd, "no OPTION=VALUE given");
	if (argc - optind - 1 > BFS_SBOPT_NR)
		return bfs_cmd_usage_error(cmd, "too many options");
	nr = parse_changes(cmd, argc - optind - 1, argv + optind + 1, ch);
	if (nr < 0)
		return BFS_EXIT_USAGE;
	ret = set_mounted(cmd, argv[optind], ch, nr, dry_run);
	if (ret >= 0)
		return ret;
	ret = open_unmounted(cmd, argv[optind], dry_run, &dev);
	if (ret)
		return ret;
	ret = set_options(cmd, dev, argv[optind], ch, nr, dry_run);
	bfs_dev_close(dev);
	return ret;
}

const struct bfs_cmd bfs_cmd_set_option = {
	.name = "set-option",
	.fn = cmd_set_option,
	.summary = "change settings of a bfs filesystem, mounted or not",
	.synopsis = "[--dry-run] DEVICE|MOUNTPOINT OPTION=VALUE...",
	.settings_title = "Settings (each OPTION=VALUE; several may be given and are written at once)",
	.settings = bfs_sbopt_settings,
	.opts = set_option_opts,
	.help =
	"On a mounted filesystem (DEVICE or its mount point) every option but uuid\n"
	"changes at once, through the mount (root only).  Each line printed is\n"
	"'OPTION: OLD -> NEW'; 'bfs show-super' shows the result.  The change is\n"
	"crash-safe: the superblock copies are written in an order that leaves either\n"
	"all changes or none.\n",
	.args = BFS_ARG_DEVICE,
};
