// SPDX-License-Identifier: MIT
/*
 * bfs set-option: change superblock settings after format (tune2fs,
 * xfs_admin, bcachefs set-option).  Every OPTION=VALUE is parsed and applied
 * to an in-memory copy first; the result is validated and written with one
 * bfs_sb_write(), whose order (backups, flush, primary, flush) means a crash
 * leaves either every change or none.
 *
 * The filesystem must not be mounted: the mount keeps the superblock in
 * memory and writes it back at unmount, which would undo the change.  The
 * device is opened exclusively, so a mount (or fsck, format...) holding it
 * makes this refuse; changing options of a mounted filesystem needs the
 * mount's control channel, which does not exist yet.
 */
#include "cmd.h"

#include <bfs/checksum.h>
#include <bfs/probe.h>
#include <bfs/super.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uuid.h>

enum set_opt { OPT_LABEL, OPT_UUID, OPT_COMPRESSION, OPT_CHECKSUM, OPT_COMMIT };

/* the OPTION=VALUE settings, indexed by enum set_opt: --help, completion and messages */
static const struct bfs_opt set_opts[] = {
	[OPT_LABEL] = BFS_OPT("label", 0, OPT_LABEL, "TEXT",
		"the label, at most 64 bytes; label= clears it"),
	[OPT_UUID] = BFS_OPT("uuid", 0, OPT_UUID, "UUID",
		"a new UUID, or random, or time (needs a clean filesystem)",
		.values = BFS_VAL_WORDS, .words = "random time"),
	[OPT_COMPRESSION] = BFS_OPT("compression", 0, OPT_COMPRESSION, "TYPE",
		"none or zstd[:LEVEL] (LEVEL 1 to 19) for new data",
		.values = BFS_VAL_COMPRESSION),
	[OPT_CHECKSUM] = BFS_OPT("checksum", 0, OPT_CHECKSUM, "TYPE",
		"xxhash or none for new file data (metadata keeps its type)",
		.values = BFS_VAL_CSUM),
	[OPT_COMMIT] = BFS_OPT("commit", 0, OPT_COMMIT, "SECONDS",
		"commit what was written every SECONDS (0: only at fsync\nand unmount)"),
	{ 0 }
};

#define NR_SETTINGS	(ARRAY_SIZE(set_opts) - 1)

/* journal entries carry the UUID: replay would skip every old one */
static bool needs_clean(enum set_opt opt)
{
	return opt == OPT_UUID;
}

struct change {
	enum set_opt opt;
	const char *arg;
	char *value;	/* points into argv: after '=' */
};

static const struct bfs_opt set_option_opts[] = {
	BFS_OPT("dry-run", 'n', 0, NULL, "show what would change, write nothing"),
	{ 0 }
};

static int find_opt(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NR_SETTINGS; i++)
		if (strlen(set_opts[i].name) == len && !strncmp(set_opts[i].name, name, len))
			return (int)i;
	return -1;
}

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
		int o = eq ? find_opt(argv[i], (size_t)(eq - argv[i])) : -1;

		if (!eq && (o = find_opt(argv[i], strlen(argv[i]))) >= 0) {
			bfs_cmd_usage_error(cmd, "'%s' needs a value: %s=%s", argv[i], argv[i],
					    set_opts[o].arg);
			return -1;
		}
		if (o < 0) {
			unknown_opt(cmd, argv[i]);
			return -1;
		}
		for (j = 0; j < nr; j++)
			if (ch[j].opt == (enum set_opt)o) {
				bfs_cmd_usage_error(cmd, "option '%s' given twice", set_opts[o].name);
				return -1;
			}
		ch[nr++] = (struct change){ .opt = (enum set_opt)o, .arg = argv[i], .value = eq + 1 };
	}
	return nr;
}

static int parse_compression(const char *v, unsigned *type, unsigned *level)
{
	char *end;
	long l;

	*level = 0;
	if (!strcmp(v, "none")) {
		*type = BFS_COMPRESSION_NONE;
		return 0;
	}
	if (strncmp(v, "zstd", 4) || (v[4] && v[4] != ':'))
		return -EINVAL;
	*type = BFS_COMPRESSION_ZSTD;
	if (!v[4])
		return 0;
	errno = 0;
	l = strtol(v + 5, &end, 10);
	if (errno || end == v + 5 || *end || l < BFS_ZSTD_LEVEL_MIN || l > BFS_ZSTD_LEVEL_MAX)
		return -EINVAL;
	*level = (unsigned)l;
	return 0;
}

/* apply one change to @sb; a usage-class message and BFS_EXIT_USAGE on a bad value */
static int apply(const struct bfs_cmd *cmd, struct bfs_sb *sb, const struct change *c)
{
	char err[BFS_ERR_LEN], *end;
	unsigned type, level;
	unsigned long secs;
	u8 uuid[16];
	int ret;

	switch (c->opt) {
	case OPT_LABEL:
		if (bfs_sb_set_label(sb, c->value, err))
			return bfs_cmd_usage_error(cmd, "%s", err);
		return 0;
	case OPT_UUID:
		if (!strcmp(c->value, "random"))
			uuid_generate_random(uuid);
		else if (!strcmp(c->value, "time"))
			uuid_generate_time(uuid);
		else if (uuid_parse(c->value, uuid))
			return bfs_cmd_usage_error(cmd, "invalid uuid '%s'", c->value);
		bfs_sb_set_uuid(sb, uuid);
		return 0;
	case OPT_COMPRESSION:
		if (parse_compression(c->value, &type, &level))
			return bfs_cmd_usage_error(cmd, "invalid compression '%s' (none, zstd[:LEVEL], "
						   "LEVEL %d to %d)", c->value, BFS_ZSTD_LEVEL_MIN,
						   BFS_ZSTD_LEVEL_MAX);
		if (bfs_sb_set_compression(sb, type, level, err))
			return bfs_cmd_usage_error(cmd, "%s", err);
		return 0;
	case OPT_CHECKSUM:
		if (!strcmp(c->value, "xxhash"))
			type = BFS_CSUM_XXH3;
		else if (!strcmp(c->value, "none"))
			type = BFS_CSUM_NONE;
		else
			return bfs_cmd_usage_error(cmd, "invalid checksum '%s' (xxhash, none)", c->value);
		if (bfs_sb_set_data_csum(sb, type, err))
			return bfs_cmd_error(cmd, "%s", err);
		return 0;
	case OPT_COMMIT:
		errno = 0;
		secs = strtoul(c->value, &end, 10);
		if (errno || end == c->value || *end || *c->value == '-' || secs > UINT32_MAX)
			return bfs_cmd_usage_error(cmd, "invalid commit interval '%s' (seconds)",
						   c->value);
		ret = bfs_sb_set_commit_secs(sb, (unsigned)secs, err);
		if (ret == -EINVAL)
			return bfs_cmd_usage_error(cmd, "%s", err);
		if (ret)
			return bfs_cmd_error(cmd, "%s", err);
		return 0;
	}
	return BFS_EXIT_ERROR;
}

/* the value of @opt in @sb as show-super prints it */
static void describe(enum set_opt opt, const struct bfs_sb *sb, char out[80])
{
	char label[BFS_LABEL_SIZE + 1];

	switch (opt) {
	case OPT_LABEL:
		bfs_sb_label(sb, label);
		snprintf(out, 80, "%s", label[0] ? label : "(none)");
		break;
	case OPT_UUID:
		bfs_format_uuid(sb->uuid, out);
		break;
	case OPT_COMPRESSION:
		if (sb->compression_type)
			snprintf(out, 80, "%s:%u", bfs_compression_name(sb->compression_type),
				 sb->compression_level);
		else
			snprintf(out, 80, "none");
		break;
	case OPT_CHECKSUM:
		snprintf(out, 80, "%s", bfs_csum_name(bfs_sb_data_csum_type(sb)));
		break;
	case OPT_COMMIT:
		if (bfs_sb_commit_secs(sb))
			snprintf(out, 80, "%u s", bfs_sb_commit_secs(sb));
		else
			snprintf(out, 80, "none");
		break;
	}
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
		if (needs_clean(ch[i].opt) && !(le32_to_cpu(sb->flags) & BFS_SB_CLEAN)) {
			bfs_cmd_error(cmd, "'%s' was not closed cleanly and its journal needs replay; "
				      "%s can only change on a clean filesystem (mount and unmount it, "
				      "or run 'bfs fsck', first)", path, set_opts[ch[i].opt].name);
			goto out;
		}
		describe(ch[i].opt, sb, before);
		ret = apply(cmd, sb, &ch[i]);
		if (ret)
			goto out;
		ret = BFS_EXIT_ERROR;
		describe(ch[i].opt, sb, after);
		if (strcmp(before, after))
			changed++;
		printf("%s: %s -> %s%s\n", set_opts[ch[i].opt].name, before, after,
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
	struct change ch[NR_SETTINGS];
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
	if (argc - optind - 1 > (int)NR_SETTINGS)
		return bfs_cmd_usage_error(cmd, "too many options");
	nr = parse_changes(cmd, argc - optind - 1, argv + optind + 1, ch);
	if (nr < 0)
		return BFS_EXIT_USAGE;
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
	.summary = "change settings of an unmounted bfs filesystem",
	.synopsis = "[--dry-run] DEVICE OPTION=VALUE...",
	.settings_title = "Settings (each OPTION=VALUE; several may be given and are written at once)",
	.settings = set_opts,
	.opts = set_option_opts,
	.help =
	"The filesystem must not be mounted.  Each line printed is 'OPTION: OLD -> NEW';\n"
	"'bfs show-super' shows the result.  The change is crash-safe: the superblock\n"
	"copies are written in an order that leaves either all changes or none.\n",
	.args = BFS_ARG_DEVICE,
};
