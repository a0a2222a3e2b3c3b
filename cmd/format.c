// SPDX-License-Identifier: MIT
/*
 * bfs format: make a new filesystem.
 *
 * Safety first, as mkfs.xfs does it: an existing filesystem or partition
 * table is refused unless --force, whether or not stdin is a terminal, and a
 * mounted or in-use device is refused even with --force.
 */
#include "cmd.h"
#include "sb_options.h"

#include <bfs/checksum.h>
#include <bfs/mkfs.h>
#include <bfs/probe.h>
#include <bfs/super.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid.h>

#include "progress.h"

enum {
	OPT_BLOCK_SIZE = BFS_OPT_LONG, OPT_BUCKET_SIZE, OPT_NODE_SIZE, OPT_COMPRESSION,
	OPT_CHECKSUM, OPT_DISCARD, OPT_JOURNAL_BUCKETS, OPT_SIZE, OPT_ERRORS, OPT_DATA_CHUNK,
};

static const struct bfs_opt format_opts[] = {
	BFS_OPT("block-size", 0, OPT_BLOCK_SIZE, "SIZE", "filesystem block size (default 4K)"),
	BFS_OPT("bucket-size", 0, OPT_BUCKET_SIZE, "SIZE",
		"allocation bucket size (default scales with device)"),
	BFS_OPT("btree-node-size", 0, OPT_NODE_SIZE, "SIZE",
		"btree node size (default 256K, at most the bucket size)"),
	BFS_OPT("journal-buckets", 0, OPT_JOURNAL_BUCKETS, "N",
		"journal length in buckets (default scales with device)"),
	BFS_OPT("label", 'L', 0, "LABEL", "filesystem label (at most 64 bytes)"),
	BFS_OPT("uuid", 'U', 0, "UUID", "filesystem UUID (default: random)"),
	BFS_OPT("compression", 0, OPT_COMPRESSION, "TYPE",
		"none (default) or zstd[:LEVEL], LEVEL 1 to 19",
		.values = BFS_VAL_COMPRESSION),
	BFS_OPT("checksum", 0, OPT_CHECKSUM, "TYPE",
		"xxhash (default) or none",
		.values = BFS_VAL_CSUM),
	BFS_OPT("errors", 0, OPT_ERRORS, "BEHAVIOUR",
		"on damaged metadata a mount goes on\n(continue, the default), refuses writes from then\n"
		"on (remount-ro) or stops (panic)",
		.values = BFS_VAL_WORDS, .words = BFS_WORDS_ERRORS),
	BFS_OPT("data-chunk", 0, OPT_DATA_CHUNK, "SIZE",
		"file data is checksummed (and compressed) in chunks\n"
		"of SIZE, 4K to 64K (default 16K, 64K compressed):\n"
		"what a small random read reads and verifies",
		.values = BFS_VAL_WORDS, .words = BFS_WORDS_DATA_CHUNK),
	BFS_OPT("discard", 0, OPT_DISCARD, NULL, "discard the whole device first"),
	BFS_OPT("size", 0, OPT_SIZE, "SIZE", "create (or grow) DEVICE as a sparse image file"),
	BFS_OPT("force", 'f', 0, NULL, "overwrite an existing filesystem or partition table"),
	BFS_OPT("dry-run", 'N', 0, NULL, "print what would be made, write nothing"),
	BFS_OPT("quiet", 'q', 0, NULL, "print nothing but errors"),
	{ 0 }
};

struct format_args {
	struct bfs_format_opts opts;
	const char *path;
	u64 size;
	bool force, dry_run, quiet, discard;
};

static int parse_size_opt(const struct bfs_cmd *cmd, const char *name, const char *arg,
			  u64 max, u64 *out)
{
	if (bfs_parse_size(arg, out) || !*out || *out > max)
		return bfs_cmd_usage_error(cmd, "invalid %s '%s'", name, arg);
	return 0;
}

static int parse_count(const struct bfs_cmd *cmd, const char *name, const char *arg, u32 *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || !v || v > UINT32_MAX || *arg == '-')
		return bfs_cmd_usage_error(cmd, "invalid %s '%s'", name, arg);
	*out = (u32)v;
	return 0;
}

static int parse_compression(const struct bfs_cmd *cmd, const char *arg,
			     struct bfs_format_opts *o)
{
	const char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
	char *end;
	long level;

	if (len == 4 && !strncmp(arg, "none", 4) && !colon) {
		o->compression_type = BFS_COMPRESSION_NONE;
		return 0;
	}
	if (len != 4 || strncmp(arg, "zstd", 4))
		return bfs_cmd_usage_error(cmd, "unknown compression '%s' (none, zstd[:LEVEL])", arg);
	o->compression_type = BFS_COMPRESSION_ZSTD;
	if (!colon)
		return 0;
	errno = 0;
	level = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || level < BFS_ZSTD_LEVEL_MIN ||
	    level > BFS_ZSTD_LEVEL_MAX)
		return bfs_cmd_usage_error(cmd, "invalid zstd level '%s' (%d to %d)", colon + 1,
					   BFS_ZSTD_LEVEL_MIN, BFS_ZSTD_LEVEL_MAX);
	o->compression_level = (u8)level;
	return 0;
}

static int parse_args(const struct bfs_cmd *cmd, int argc, char **argv, struct format_args *a)
{
	unsigned v32;
	u64 v;
	int c, ret;

	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		ret = 0;
		switch (c) {
		case OPT_BLOCK_SIZE:
			ret = parse_size_opt(cmd, "block size", optarg, UINT32_MAX, &v);
			a->opts.block_size = (u32)v;
			break;
		case OPT_BUCKET_SIZE:
			ret = parse_size_opt(cmd, "bucket size", optarg, UINT32_MAX, &v);
			a->opts.bucket_size = (u32)v;
			break;
		case OPT_NODE_SIZE:
			ret = parse_size_opt(cmd, "btree node size", optarg, UINT32_MAX, &v);
			a->opts.btree_node_size = (u32)v;
			break;
		case OPT_JOURNAL_BUCKETS:
			ret = parse_count(cmd, "journal bucket count", optarg, &a->opts.journal_nbuckets);
			break;
		case OPT_SIZE:
			ret = parse_size_opt(cmd, "size", optarg, UINT64_MAX, &a->size);
			break;
		case 'L':
			if (strlen(optarg) > BFS_LABEL_SIZE)
				return bfs_cmd_usage_error(cmd, "label '%s' is longer than %u bytes",
							   optarg, BFS_LABEL_SIZE);
			a->opts.label = optarg;
			break;
		case 'U':
			if (uuid_parse(optarg, a->opts.uuid))
				return bfs_cmd_usage_error(cmd, "invalid uuid '%s'", optarg);
			a->opts.have_uuid = true;
			break;
		case OPT_COMPRESSION:
			ret = parse_compression(cmd, optarg, &a->opts);
			break;
		case OPT_CHECKSUM:
			if (!strcmp(optarg, "none"))
				a->opts.csum_type = BFS_CSUM_NONE;
			else if (!strcmp(optarg, "xxhash") || !strcmp(optarg, "xxh3"))
				a->opts.csum_type = BFS_CSUM_XXH3;
			else
				return bfs_cmd_usage_error(cmd, "unknown checksum '%s' (none, xxhash)",
							   optarg);
			a->opts.csum_set = true;
			break;
		case OPT_ERRORS:
			if (bfs_errors_parse(optarg, &v32))
				return bfs_cmd_usage_error(cmd, "unknown error behaviour '%s' "
							   "(continue, remount-ro, panic)", optarg);
			a->opts.errors = (u8)v32;
			a->opts.errors_set = true;
			break;
		case OPT_DATA_CHUNK:
			ret = parse_size_opt(cmd, "data chunk size", optarg, UINT32_MAX, &v);
			a->opts.data_chunk = (u32)v;
			break;
		case OPT_DISCARD:
			a->discard = true;
			break;
		case 'f':
			a->force = true;
			break;
		case 'N':
			a->dry_run = true;
			break;
		case 'q':
			a->quiet = true;
			break;
		default:
			return bfs_cmd_usage_error(cmd, "bad option");
		}
		if (ret)
			return ret;
	}
	ret = bfs_cmd_want_device(cmd, argc);
	if (ret)
		return ret;
	a->path = argv[optind];
	return 0;
}

static void print_summary(const struct bfs_sb *sb, const char *path, bool dry_run)
{
	char uuid[37], label[BFS_LABEL_SIZE + 1], h[32];
	u64 bucket = le32_to_cpu(sb->bucket_size);
	u64 nb = le64_to_cpu(sb->nbuckets), first = le64_to_cpu(sb->first_bucket);
	u64 jnr = le32_to_cpu(sb->journal_nbuckets);

	bfs_format_uuid(sb->uuid, uuid);
	bfs_sb_label(sb, label);
	printf("%s bfs filesystem on %s (%s)\n", dry_run ? "Would create" : "Creating", path,
	       bfs_human_size(le64_to_cpu(sb->dev_size), h));
	printf("  uuid:            %s\n", uuid);
	printf("  label:           %s\n", *label ? label : "(none)");
	printf("  block size:      %s\n", bfs_human_size(le32_to_cpu(sb->block_size), h));
	printf("  btree node size: %s\n", bfs_human_size(le32_to_cpu(sb->btree_node_size), h));
	printf("  bucket size:     %s\n", bfs_human_size(bucket, h));
	printf("  buckets:         %llu (%llu to %llu)\n", (unsigned long long)(nb - first),
	       (unsigned long long)first, (unsigned long long)(nb - 1));
	printf("  journal:         %llu buckets, %s\n", (unsigned long long)jnr,
	       bfs_human_size(jnr * bucket, h));
	printf("  checksum:        %s\n", bfs_csum_name(sb->csum_type));
	if (sb->compression_type)
		printf("  compression:     %s:%u\n", bfs_compression_name(sb->compression_type),
		       sb->compression_level);
	else
		printf("  compression:     none\n");
	printf("  errors:          %s\n", bfs_errors_name(bfs_sb_errors(sb)));
	printf("  data chunk:      %s\n", bfs_human_size(bfs_sb_data_chunk(sb), h));
}

static int check_size(const struct bfs_cmd *cmd, const char *path, u64 size);

/*
 * A refusal; a dry run writes nothing, so it only notes what a real run
 * would refuse and goes on to print the layout.
 */
__attribute__((format(printf, 3, 4)))
static int refuse(const struct bfs_cmd *cmd, const struct format_args *a, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "bfs %s: %s", cmd->name, a->dry_run ? "note: a real run would refuse: " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return a->dry_run ? 0 : BFS_EXIT_ERROR;
}

/* refuse what must never be overwritten, and what needs --force */
static int check_target(const struct bfs_cmd *cmd, const struct format_args *a)
{
	char what[256];
	struct bfs_dev *dev;
	struct bfs_sb_handle h;
	int ret;

	ret = bfs_check_mounted(a->path, what, sizeof(what));
	if (ret == -ENOENT && a->size)
		return 0;	/* --size will create it */
	if (ret == -ENOENT)
		return bfs_cmd_error(cmd, "'%s' does not exist (use --size to create an image file)",
				     a->path);
	if (ret == -EISDIR)
		return bfs_cmd_error(cmd, "'%s' is a directory", a->path);
	if (ret < 0)
		return bfs_cmd_error(cmd, "cannot check whether '%s' is mounted: %s", a->path,
				     strerror(-ret));
	if (ret)
		return refuse(cmd, a, "'%s' is %s; refusing to format it", a->path, what);
	if (a->force)
		return 0;

	ret = bfs_probe_signature(a->path, what, sizeof(what));
	if (ret < 0)
		return bfs_cmd_error(cmd, "cannot probe '%s': %s", a->path, strerror(-ret));
	if (ret)
		return refuse(cmd, a, "'%s' contains %s; use --force to overwrite it",
			      a->path, what);

	if (bfs_dev_open(a->path, BFS_DEV_RDONLY | BFS_DEV_NOLOCK, &dev))
		return 0;
	/* too small to hold a bfs: say that, not "damaged" */
	if (bfs_dev_size(dev) < BFS_MIN_DEV_SIZE && (!a->size || bfs_dev_is_blockdev(dev))) {
		ret = check_size(cmd, a->path, bfs_dev_size(dev));
		bfs_dev_close(dev);
		return ret;
	}
	ret = bfs_sb_read(dev, &h, NULL);
	bfs_dev_close(dev);
	if (ret == -ENODATA)
		return 0;
	if (!ret) {
		char uuid[37];

		bfs_format_uuid(h.sb->uuid, uuid);
		bfs_sb_handle_release(&h);
		return refuse(cmd, a, "'%s' contains a bfs filesystem (uuid %s); "
			      "use --force to overwrite it", a->path, uuid);
	}
	return refuse(cmd, a, "'%s' contains a damaged bfs filesystem; "
		      "use --force to overwrite it", a->path);
}

static int check_size(const struct bfs_cmd *cmd, const char *path, u64 size)
{
	char h1[32], h2[32];

	if (size >= BFS_MIN_DEV_SIZE)
		return 0;
	return bfs_cmd_error(cmd, "'%s' is too small: %s, bfs needs at least %s", path,
			     bfs_human_size(size, h1), bfs_human_size(BFS_MIN_DEV_SIZE, h2));
}

static int prepare_image(const struct bfs_cmd *cmd, const struct format_args *a)
{
	int ret;

	if (!a->size)
		return 0;
	ret = bfs_image_create(a->path, a->size);
	if (ret == -EEXIST)
		return bfs_cmd_error(cmd, "'%s' is larger than --size; not shrinking it", a->path);
	if (ret == -ENOTSUP)
		return bfs_cmd_error(cmd, "--size only applies to image files, and '%s' is not one",
				     a->path);
	if (ret)
		return bfs_cmd_error(cmd, "cannot create '%s': %s", a->path, strerror(-ret));
	return 0;
}

static int open_target(const struct bfs_cmd *cmd, const struct format_args *a,
		       struct bfs_dev **dev)
{
	int ret = bfs_dev_open(a->path, BFS_DEV_EXCL, dev);

	if (ret == -EROFS || ret == -EACCES)
		return bfs_cmd_error(cmd, "'%s' is read-only (%s); nothing written", a->path,
				     strerror(-ret));
	if (!ret && bfs_dev_is_readonly(*dev)) {
		bfs_dev_close(*dev);
		*dev = NULL;
		return bfs_cmd_error(cmd, "'%s' is a read-only device; nothing written", a->path);
	}
	if (ret == -EBUSY)
		return bfs_cmd_error(cmd, "'%s' is in use (mounted or opened by another program)",
				     a->path);
	if (ret == -ENOENT)
		return bfs_cmd_error(cmd, "'%s' does not exist (use --size to create an image file)",
				     a->path);
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", a->path, strerror(-ret));
	return 0;
}

/* in pieces, so a large device shows progress (a terminal's discard can take minutes) */
static int discard_all(const struct format_args *a, struct bfs_dev *dev)
{
	const u64 step = 1ull << 30, size = bfs_dev_size(dev);
	struct bfs_progress p = { 0 };
	u64 off;
	int ret = 0;

	if (!a->quiet)
		bfs_progress_init_bar(&p, STDOUT_FILENO, a->path);
	for (off = 0; off < size && !ret; off += step) {
		bfs_progress_update(&p, 0, "discarding", off, size);
		ret = bfs_dev_discard(dev, off, BFS_MIN(step, size - off));
	}
	if (!ret)
		bfs_progress_update(&p, 0, "discarding", size, size);
	bfs_progress_done(&p);
	return ret;
}

static int write_fs(const struct bfs_cmd *cmd, const struct format_args *a,
		    struct bfs_dev *dev, struct bfs_sb *sb)
{
	int ret;

	if (a->discard) {
		ret = discard_all(a, dev);
		if (ret && ret != -EOPNOTSUPP)
			return bfs_cmd_error(cmd, "discard failed: %s", strerror(-ret));
	}
	if (a->force) {
		ret = bfs_wipe_signatures(a->path);
		if (ret)
			return bfs_cmd_error(cmd, "cannot wipe old signatures: %s", strerror(-ret));
	}
	ret = bfs_mkfs(dev, sb);
	if (ret)
		return bfs_cmd_error(cmd, "writing the filesystem failed: %s", strerror(-ret));
	return 0;
}

/* the device size and sector size a dry run would format */
static int dry_run_geometry(const struct bfs_cmd *cmd, const struct format_args *a,
			    u64 *size, unsigned *sector)
{
	struct bfs_dev *dev;
	int ret;

	*size = a->size;
	*sector = 512;
	ret = bfs_dev_open(a->path, BFS_DEV_RDONLY | BFS_DEV_NOLOCK, &dev);
	if (ret == -ENOENT && a->size)
		return 0;
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", a->path, strerror(-ret));
	*sector = bfs_dev_sector_size(dev);
	if (!a->size || bfs_dev_is_blockdev(dev))
		*size = bfs_dev_size(dev);
	bfs_dev_close(dev);
	return 0;
}

static int cmd_format(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct format_args a = { 0 };
	struct bfs_dev *dev = NULL;
	struct bfs_sb *sb = NULL;
	char err[BFS_ERR_LEN];
	unsigned sector;
	u64 size;
	int ret;

	ret = parse_args(cmd, argc, argv, &a);
	/* a dry run reports what a real run would refuse, too */
	if (!ret)
		ret = check_target(cmd, &a);
	if (ret)
		return ret;
	if (a.dry_run) {
		ret = dry_run_geometry(cmd, &a, &size, &sector);
	} else {
		/* every layout error before --size creates a file that would stay behind */
		ret = a.size ? check_size(cmd, a.path, a.size) : 0;
		if (ret)
			return ret;
		sb = calloc(1, BFS_SB_MAX_BYTES);
		if (a.size && sb && bfs_sb_layout(&a.opts, a.size, 512, sb, err)) {
			free(sb);
			return bfs_cmd_error(cmd, "%s", err);
		}
		free(sb);
		sb = NULL;
		ret = prepare_image(cmd, &a);
		if (!ret)
			ret = open_target(cmd, &a, &dev);
		if (!ret) {
			size = bfs_dev_size(dev);
			sector = bfs_dev_sector_size(dev);
		}
	}
	if (ret)
		return ret;

	sb = calloc(1, BFS_SB_MAX_BYTES);
	if (!sb) {
		ret = bfs_cmd_error(cmd, "out of memory");
		goto out;
	}
	ret = check_size(cmd, a.path, size);
	if (ret)
		goto out;
	if (bfs_sb_layout(&a.opts, size, sector, sb, err)) {
		ret = bfs_cmd_error(cmd, "%s", err);
		goto out;
	}
	if (!a.quiet)
		print_summary(sb, a.path, a.dry_run);
	if (a.dry_run) {
		if (!a.quiet)
			printf("Dry run: nothing was written.\n");
		goto out;
	}
	ret = write_fs(cmd, &a, dev, sb);
	if (!ret && !a.quiet)
		printf("Done.\n");
out:
	free(sb);
	if (dev)
		bfs_dev_close(dev);
	return ret;
}

const struct bfs_cmd bfs_cmd_format = {
	.name = "format",
	.fn = cmd_format,
	.summary = "make a bfs filesystem on a device or image file",
	.synopsis = "[options] DEVICE",
	.opts = format_opts,
	.help =
	"SIZE is in bytes, or with a suffix K, M, G, T, P, E (powers of 1024; KiB\n"
	"and KB mean the same).  A mounted or in-use\n"
	"device is refused even with --force.\n",
	.args = BFS_ARG_DEVICE,
};
