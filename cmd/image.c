// SPDX-License-Identifier: MIT
/*
 * bfs image: metadata dumps for bug reports (like e2image -Q, xfs_metadump).
 *
 *   dump DEVICE           superblocks, journal and every btree node to a
 *                         zstd-compressed file, names obfuscated by default
 *   restore FILE TARGET   a sparse image (or a device) that checks as the
 *                         original did
 *   info FILE             the header, and a check of every record
 *
 * The dump file is read and written here; the device only through libcore.
 */
#include "cmd.h"
#include "output.h"
#include "progress.h"

#include <bfs/image.h>
#include <bfs/os.h>
#include <bfs/probe.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct bfs_opt image_opts[] = {
	BFS_OPT("output", 'o', 0, "FILE",
		"dump: write to FILE instead of standard output",
		.values = BFS_VAL_FILE),
	BFS_OPT("no-obfuscate", 0, 'N', NULL, "dump: keep names and values as they are"),
	BFS_OPT("data", 0, 'D', NULL, "dump: include file data (every other non-zero block)"),
	BFS_OPT(NULL, 'C', 0, "FD", "write progress lines \"PASS DONE TOTAL DEVICE\" to FD"),
	BFS_OPT("force", 'f', 0, NULL, "dump: overwrite FILE, or dump a device in use read-write;\n"
		"restore: overwrite a non-empty TARGET"),
	BFS_OPT("json", 'j', 0, NULL, "info: print JSON"),
	{ 0 }
};

struct image_args {
	const char *output;
	bool obfuscate, data, force, json;
	int progress_fd;		/* -C FD, or -1 */
};

/*
 * progress (cmd/progress.c): e2fsck-style "PASS DONE TOTAL DEVICE" lines on
 * -C FD, else a bar on a terminal; pass 1 is a dump, pass 2 a restore
 */
struct progress {
	struct bfs_progress bar;
	unsigned pass;
	const char *name;
};

static void progress_start(struct progress *p, const struct image_args *a, unsigned pass,
			   const char *name, const char *device)
{
	p->pass = pass;
	p->name = name;
	bfs_progress_init_cmd(&p->bar, a->progress_fd, device);
}

static void progress_fn(void *ctx, u64 done, u64 total)
{
	struct progress *p = ctx;

	bfs_progress_update(&p->bar, p->pass, p->name, done, total);
}

static int parse_args(const struct bfs_cmd *cmd, int argc, char **argv, struct image_args *a)
{
	char *end;
	int c;

	*a = (struct image_args){ .obfuscate = true, .progress_fd = -1 };
	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'o':
			a->output = optarg;
			break;
		case 'N':
			a->obfuscate = false;
			break;
		case 'D':
			a->data = true;
			break;
		case 'f':
			a->force = true;
			break;
		case 'j':
			a->json = true;
			break;
		case 'C':
			a->progress_fd = (int)strtol(optarg, &end, 10);
			if (*end || end == optarg || a->progress_fd < 0)
				return bfs_cmd_usage_error(cmd, "-C needs a file descriptor, not '%s'",
							   optarg);
			break;
		default:
			return BFS_EXIT_USAGE;
		}
	}
	return 0;
}

/* ---- dump ---- */

static int write_file(void *ctx, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -EIO;
}

static int do_dump(const struct bfs_cmd *cmd, const struct image_args *a, const char *path)
{
	struct bfs_image_stats st;
	struct progress p = { 0 };
	struct bfs_image_dump_opts o = {
		.obfuscate = a->obfuscate,
		.data = a->data,
		.source = path,
		.tool = "bfs " BFS_VERSION,
		.write = write_file,
		.progress = progress_fn,
		.progress_ctx = &p,
	};
	struct bfs_dev *dev;
	char err[BFS_ERR_LEN], s1[32], s2[32];
	bool to_file = a->output && strcmp(a->output, "-");
	FILE *out = stdout;
	int ret;

	if (!to_file && isatty(STDOUT_FILENO))
		return bfs_cmd_error(cmd, "not writing a compressed dump to a terminal; "
				     "use -o FILE or a redirection");
	if (to_file && !a->force && !access(a->output, F_OK))
		return bfs_cmd_error(cmd, "'%s' exists; use --force to overwrite it", a->output);

	ret = bfs_dev_open(path, BFS_DEV_RDONLY, &dev);
	if (ret == -EBUSY) {
		if (!a->force)
			return bfs_cmd_error(cmd, "'%s' is in use read-write (mounted?) and a dump "
					     "of it would be inconsistent; use --force to dump it anyway",
					     path);
		fprintf(stderr, "bfs image: warning: '%s' is in use read-write: the dump may be "
			"inconsistent\n", path);
		ret = bfs_dev_open(path, BFS_DEV_RDONLY | BFS_DEV_NOLOCK, &dev);
	}
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", path, strerror(-ret));

	if (to_file) {
		out = fopen(a->output, "wb");
		if (!out) {
			bfs_dev_close(dev);
			return bfs_cmd_error(cmd, "cannot create '%s': %s", a->output, strerror(errno));
		}
	}
	/* a dump written to standard output is never a terminal (refused above): no bar there */
	progress_start(&p, a, 1, "dumping", path);
	o.write_ctx = out;
	ret = bfs_image_dump(dev, &o, &st, err);
	bfs_dev_close(dev);
	if (!ret && fflush(out)) {
		ret = -EIO;
		snprintf(err, sizeof(err), "cannot write the dump: %s", strerror(errno));
	}
	if (to_file && fclose(out) && !ret) {
		ret = -EIO;
		snprintf(err, sizeof(err), "cannot write '%s': %s", a->output, strerror(errno));
	}
	bfs_progress_done(&p.bar);
	if (ret) {
		if (to_file)
			remove(a->output);
		return bfs_cmd_error(cmd, "%s", err);
	}
	fprintf(stderr, "bfs image: %s of metadata%s in %llu records (%llu btree nodes, %llu "
		"names and values replaced), %s compressed\n", bfs_human_size(st.extent_bytes, s1),
		a->data ? " and data" : "", (unsigned long long)st.records,
		(unsigned long long)st.nodes, (unsigned long long)st.names,
		bfs_human_size(st.out_bytes, s2));
	if (st.raw)
		fprintf(stderr, "bfs image: %llu damaged key sets or journal entries could not be "
			"followed to their end: the bytes past the damage are zeroed\n",
			(unsigned long long)st.raw);
	return BFS_EXIT_OK;
}

/* ---- reading a dump file ---- */

static long read_file(void *ctx, void *buf, size_t len)
{
	size_t n = fread(buf, 1, len, ctx);

	return n || !ferror(ctx) ? (long)n : -EIO;
}

static int open_dump(const struct bfs_cmd *cmd, const char *path, FILE **f,
		     struct bfs_image_reader **r)
{
	char err[BFS_ERR_LEN];
	int ret;

	*f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!*f)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", path, strerror(errno));
	ret = bfs_image_reader_open(read_file, *f, r, err);
	if (ret) {
		if (*f != stdin)
			fclose(*f);
		return bfs_cmd_error(cmd, "'%s': %s", path, err);
	}
	return 0;
}

static void close_dump(FILE *f, struct bfs_image_reader *r)
{
	bfs_image_reader_close(r);
	if (f != stdin)
		fclose(f);
}

static u64 file_size(FILE *f)
{
	long pos = ftell(f), end;

	if (pos < 0 || fseek(f, 0, SEEK_END))
		return 0;
	end = ftell(f);
	fseek(f, pos, SEEK_SET);
	return end > 0 ? (u64)end : 0;
}

/* ---- restore ---- */

/* a block device must read as zeros where the dump has nothing */
static int clear_device(struct bfs_dev *dev)
{
	size_t chunk = (size_t)MiB;
	u64 off, size = bfs_dev_size(dev);
	u8 *zero = bfs_aligned_alloc(4096, chunk);
	int ret = 0;

	if (!zero)
		return -ENOMEM;
	memset(zero, 0, chunk);
	for (off = 0; !ret && off < size; off += chunk)
		ret = bfs_dev_write(dev, off, zero, (size_t)BFS_MIN((u64)chunk, size - off));
	bfs_free(zero);
	return ret;
}

/* libblkid does not know bfs: look for a superblock (valid or not) ourselves */
static bool has_bfs(struct bfs_dev *dev)
{
	struct bfs_sb_handle h;
	int ret = bfs_sb_read(dev, &h, NULL);

	if (!ret)
		bfs_sb_handle_release(&h);
	return ret != -ENODATA;
}

static int open_target(const struct bfs_cmd *cmd, const struct image_args *a, const char *path,
		       u64 dev_size, struct bfs_dev **dev, bool *created)
{
	char what[256];
	u64 size;
	int ret;

	ret = bfs_check_mounted(path, what, sizeof(what));
	if (ret == -ENOENT) {
		ret = bfs_image_create(path, dev_size);
		if (ret)
			return bfs_cmd_error(cmd, "cannot create '%s': %s", path, strerror(-ret));
		*created = true;
		goto open;
	}
	if (ret < 0)
		return bfs_cmd_error(cmd, "cannot check whether '%s' is mounted: %s", path,
				     strerror(-ret));
	if (ret)
		return bfs_cmd_error(cmd, "'%s' is %s; refusing to restore onto it", path, what);
	ret = bfs_dev_open(path, BFS_DEV_EXCL, dev);
	if (ret == -EBUSY)
		return bfs_cmd_error(cmd, "'%s' is in use (mounted or opened by another program)",
				     path);
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", path, strerror(-ret));
	size = bfs_dev_size(*dev);
	if (bfs_dev_is_blockdev(*dev)) {
		if (size < dev_size)
			ret = bfs_cmd_error(cmd, "'%s' holds %llu bytes, the dump needs %llu", path,
					    (unsigned long long)size, (unsigned long long)dev_size);
		else if (!a->force && bfs_probe_signature(path, what, sizeof(what)) > 0)
			ret = bfs_cmd_error(cmd, "'%s' contains %s; use --force to overwrite it", path,
					    what);
		else if (!a->force && has_bfs(*dev))
			ret = bfs_cmd_error(cmd, "'%s' contains a bfs filesystem; use --force to "
					    "overwrite it", path);
		else if ((ret = clear_device(*dev)))
			ret = bfs_cmd_error(cmd, "cannot clear '%s': %s", path, strerror(-ret));
		if (ret)
			bfs_dev_close(*dev);
		return ret;
	}
	if (size && !a->force)
		ret = bfs_cmd_error(cmd, "'%s' exists and is not empty; use --force to overwrite it",
				    path);
	else if (size > dev_size)
		ret = bfs_cmd_error(cmd, "'%s' is larger than the dumped device (%llu bytes); "
				    "remove it first", path, (unsigned long long)dev_size);
	else if (size && (ret = bfs_dev_discard(*dev, 0, size)))
		ret = bfs_cmd_error(cmd, "cannot clear '%s': %s", path, strerror(-ret));
	bfs_dev_close(*dev);
	if (ret)
		return ret;
	ret = bfs_image_create(path, dev_size);
	if (ret)
		return bfs_cmd_error(cmd, "cannot grow '%s': %s", path, strerror(-ret));
open:
	ret = bfs_dev_open(path, BFS_DEV_EXCL, dev);
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", path, strerror(-ret));
	return 0;
}

static int do_restore(const struct bfs_cmd *cmd, const struct image_args *a, const char *file,
		      const char *target)
{
	struct progress p = { 0 };
	struct bfs_image_reader *r;
	struct bfs_image_stats st;
	struct bfs_dev *dev;
	char err[BFS_ERR_LEN], s1[32];
	bool created = false;
	FILE *f;
	int ret;

	ret = open_dump(cmd, file, &f, &r);
	if (ret)
		return ret;
	ret = open_target(cmd, a, target, le64_to_cpu(bfs_image_reader_header(r)->dev_size), &dev,
			  &created);
	if (ret) {
		close_dump(f, r);
		return ret;
	}
	progress_start(&p, a, 2, "restoring", target);
	ret = bfs_image_restore(r, dev, f == stdin ? 0 : file_size(f), progress_fn, &p, &st, err);
	bfs_dev_close(dev);
	close_dump(f, r);
	bfs_progress_done(&p.bar);
	if (ret && created) {
		/* a half-restored image is worse than none: it was ours, remove it */
		remove(target);
		return bfs_cmd_error(cmd, "'%s': %s; nothing restored", file, err);
	}
	if (ret)
		return bfs_cmd_error(cmd, "'%s': %s; '%s' is incomplete", file, err, target);
	if (!a->json)
		printf("%s: restored %s in %llu records from '%s'\n", target,
		       bfs_human_size(st.extent_bytes, s1), (unsigned long long)st.records, file);
	return BFS_EXIT_OK;
}

/* ---- info ---- */

static const char *const kind_names[BFS_IMAGE_KIND_NR] = {
	[BFS_IMAGE_KIND_SUPER] = "super",
	[BFS_IMAGE_KIND_JOURNAL] = "journal",
	[BFS_IMAGE_KIND_NODE] = "nodes",
	[BFS_IMAGE_KIND_DATA] = "data",
};

static void describe_header(struct bfs_out *o, const struct bfs_image_header *h)
{
	u32 flags = le32_to_cpu(h->flags);
	char uuid[37], label[sizeof(h->label) + 1];

	bfs_format_uuid(h->uuid, uuid);
	memcpy(label, h->label, sizeof(h->label));
	label[sizeof(h->label)] = 0;
	out_str(o, "source", "Source device", "%s", h->source);
	out_size(o, "device_size", "Device size", le64_to_cpu(h->dev_size));
	out_time(o, "time", "Dumped", le64_to_cpu(h->time));
	out_str(o, "tool", "Written by", "%s", h->tool);
	out_u64(o, "version", "Dump format version", le32_to_cpu(h->version));
	out_bool(o, "obfuscated", "Obfuscated", flags & BFS_IMAGE_OBFUSCATED);
	out_bool(o, "data", "File data", flags & BFS_IMAGE_DATA);
	out_bool(o, "superblock", "Valid superblock", !(flags & BFS_IMAGE_NO_SUPER));
	out_str(o, "uuid", "UUID", "%s", uuid);
	out_str(o, "label", "Label", "%s", label);
	out_size(o, "block_size", "Block size", le32_to_cpu(h->block_size));
	out_size(o, "btree_node_size", "Btree node size", le32_to_cpu(h->node_size));
}

static int do_info(const struct bfs_cmd *cmd, const struct image_args *a, const char *file)
{
	u64 bytes[BFS_IMAGE_KIND_NR] = { 0 }, records = 2, total = 0;
	struct bfs_image_reader *r;
	struct bfs_image_extent e;
	struct bfs_out o = { 0 };
	char err[BFS_ERR_LEN];
	unsigned k;
	FILE *f;
	int ret;

	ret = open_dump(cmd, file, &f, &r);
	if (ret)
		return ret;
	while ((ret = bfs_image_reader_next(r, &e, err)) == 1) {
		bytes[e.kind] += e.len;
		total += e.len;
		records++;
	}
	describe_header(&o, bfs_image_reader_header(r));
	close_dump(f, r);
	out_bool(&o, "valid", "Records valid", !ret);
	if (ret) {
		out_str(&o, "error", "Error", "%s", err);
	} else {
		out_u64(&o, "records", "Records", records);
		out_size(&o, "bytes", "Bytes to restore", total);
		out_object(&o, "contents", "Contents");
		for (k = 1; k < BFS_IMAGE_KIND_NR; k++)
			out_size(&o, kind_names[k], kind_names[k], bytes[k]);
		out_end(&o);
	}
	out_print(&o, stdout, a->json);
	out_free(&o);
	if (ret)
		fprintf(stderr, "bfs image: '%s': %s\n", file, err);
	return ret ? BFS_EXIT_ERROR : BFS_EXIT_OK;
}

/* ---- dispatch ---- */

static int cmd_image(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct image_args a;
	const char *verb;
	int ret, n;

	if (argc < 2)
		return bfs_cmd_usage_error(cmd, "missing dump, restore or info");
	verb = argv[1];
	ret = parse_args(cmd, argc - 1, argv + 1, &a);
	if (ret)
		return ret;
	n = argc - 1 - optind;
	argv += 1 + optind;
	if (!strcmp(verb, "dump")) {
		if (n != 1)
			return bfs_cmd_usage_error(cmd, "dump needs one DEVICE");
		return do_dump(cmd, &a, argv[0]);
	}
	if (a.output || !a.obfuscate || a.data)
		return bfs_cmd_usage_error(cmd, "-o, --no-obfuscate and --data are options of dump");
	if (!strcmp(verb, "restore")) {
		if (n != 2)
			return bfs_cmd_usage_error(cmd, "restore needs FILE and TARGET");
		return do_restore(cmd, &a, argv[0], argv[1]);
	}
	if (!strcmp(verb, "info")) {
		if (n != 1)
			return bfs_cmd_usage_error(cmd, "info needs one FILE");
		return do_info(cmd, &a, argv[0]);
	}
	return bfs_cmd_usage_error(cmd, "unknown action '%s' (dump, restore or info)", verb);
}

const struct bfs_cmd bfs_cmd_image = {
	.name = "image",
	.fn = cmd_image,
	.summary = "dump, restore and inspect metadata images for bug reports",
	.synopsis = "dump [-o FILE] [--no-obfuscate] [--data] [-C FD] [-f] DEVICE",
	.help_head =
	"The other actions:\n"
	"  bfs image restore [-f] [-C FD] FILE TARGET\n"
	"  bfs image info [--json] FILE\n"
	"\nActions:\n"
	"  dump DEVICE       write the metadata (every superblock copy, the journal, every\n"
	"                    btree node found on the device, reachable or not) as a\n"
	"                    zstd-compressed dump, to standard output or -o FILE.  File\n"
	"                    and directory names, symlink targets, user xattr names and\n"
	"                    all xattr values are replaced by strings of the same length\n"
	"  restore FILE TARGET\n"
	"                    write the dump back: a new sparse image file, or a device\n"
	"                    (FILE - reads standard input)\n"
	"  info FILE         print the dump's header and check every record\n",
	.opts = image_opts,
	.args = BFS_ARG_DEVICE,
};
