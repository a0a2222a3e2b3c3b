// SPDX-License-Identifier: MIT
/*
 * bfs show-super: print the superblock.  The fields are described once, in
 * describe_sb(), as output rows; text and --json both render those rows.
 */
#include "cmd.h"
#include "export.h"
#include "output.h"

#include <bfs/btree.h>
#include <bfs/checksum.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdlib.h>
#include <string.h>

enum { OPT_COPY = BFS_OPT_LONG };

static const struct bfs_opt show_super_opts[] = {
	BFS_OPT("json", 'j', 0, NULL, "print JSON (keys are listed in bfs-show-super(8))"),
	BFS_OPT("all", 'a', 0, NULL, "also check and list every superblock copy"),
	BFS_OPT("export", 'e', 0, NULL, "print the identity as udev KEY=VALUE lines (ID_FS_UUID,\n"
		"ID_FS_LABEL, ...), as 'blkid -o udev' does"),
	BFS_OPT("copy", 0, OPT_COPY, "N", "print superblock copy N as stored (0: the primary),\n"
		"not the one the filesystem uses"),
	{ 0 }
};

/* names of the feature bits (include/bfs/format.h); unknown bits print as "bitN" */
static const struct {
	int set;		/* 0 compat, 1 ro_compat, 2 incompat */
	u64 bit;
	const char *name;
} feature_names[] = {
	{ 0, BFS_FEAT_COMPAT_NODE_ID, "node_id" },
	{ 0, BFS_FEAT_COMPAT_ERRORS, "errors" },
	{ 0, BFS_FEAT_COMPAT_DATA_CHUNK, "data_chunk" },
	{ 2, BFS_FEAT_INCOMPAT_ZSTD, "zstd" },
};

static void describe_mask(struct bfs_out *o, int set, const char *key, const char *names_key,
			  u64 mask)
{
	char names[256] = "";
	size_t n = 0, i;
	unsigned bit;

	for (bit = 0; bit < 64; bit++) {
		const char *name = NULL;
		char unknown[8];

		if (!(mask & (UINT64_C(1) << bit)))
			continue;
		for (i = 0; i < ARRAY_SIZE(feature_names); i++)
			if (feature_names[i].set == set && feature_names[i].bit == UINT64_C(1) << bit)
				name = feature_names[i].name;
		if (!name) {
			snprintf(unknown, sizeof(unknown), "bit%u", bit);
			name = unknown;
		}
		n += (size_t)snprintf(names + n, sizeof(names) - BFS_MIN(n, sizeof(names)), "%s%s",
				      n ? " " : "", name);
	}
	out_hex(o, key, key, mask);
	out_note(o, "(%s)", n ? names : "none");
	out_str(o, names_key, names_key, "%s", names);
	o->rows[o->nr - 1].flags |= OUT_JSON_ONLY;
}

static void describe_features(struct bfs_out *o, const struct bfs_sb *sb)
{
	out_object(o, "features", "Features");
	describe_mask(o, 0, "compat", "compat_names", le64_to_cpu(sb->compat));
	describe_mask(o, 1, "ro_compat", "ro_compat_names", le64_to_cpu(sb->ro_compat));
	describe_mask(o, 2, "incompat", "incompat_names", le64_to_cpu(sb->incompat));
	out_end(o);
}

static void describe_layout(struct bfs_out *o, const struct bfs_sb *sb)
{
	u64 bucket = le32_to_cpu(sb->bucket_size);
	u64 first = le64_to_cpu(sb->first_bucket), nb = le64_to_cpu(sb->nbuckets);
	u64 jb = le64_to_cpu(sb->journal_bucket), jn = le32_to_cpu(sb->journal_nbuckets);
	unsigned i;

	out_size(o, "device_size", "Device size", le64_to_cpu(sb->dev_size));
	out_size(o, "block_size", "Block size", le32_to_cpu(sb->block_size));
	out_size(o, "btree_node_size", "Btree node size", le32_to_cpu(sb->btree_node_size));
	out_size(o, "bucket_size", "Bucket size", bucket);
	out_u64(o, "first_bucket", "First bucket", first);
	out_u64(o, "nbuckets", "Buckets", nb);
	out_note(o, "(%llu usable)", (unsigned long long)(nb - first));
	out_object(o, "journal", "Journal");
	out_u64(o, "first_bucket", "First bucket", jb);
	out_u64(o, "nbuckets", "Buckets", jn);
	out_size(o, "offset", "Offset", jb * bucket);
	out_size(o, "size", "Size", jn * bucket);
	out_end(o);
	out_array(o, "copies", "Superblock copies");
	for (i = 0; i < sb->nr_copies; i++) {
		out_object(o, NULL, NULL);
		out_u64(o, "offset", i ? "Backup" : "Primary", le64_to_cpu(sb->copy_offset[i]));
		out_end(o);
	}
	out_end(o);
}

static const char *field_name(u32 type)
{
	switch (type & ~BFS_SB_FIELD_REQUIRED) {
	case BFS_SB_FIELD_CLEAN:
		return "clean";
	case BFS_SB_FIELD_REPAIR:
		return "repair";
	case BFS_SB_FIELD_OPTIONS:
		return "options";
	default:
		return "unknown";
	}
}

/* the clean-shutdown section: journal position and the btree roots */
static void describe_clean(struct bfs_out *o, const struct bfs_sb_field *f)
{
	const struct bfs_sb_clean *cl = (const void *)f->data;
	size_t bytes = (size_t)le32_to_cpu(f->u64s) * 8 - sizeof(*f);
	u32 nr, i;

	if (bytes < sizeof(*cl))
		return;
	nr = le32_to_cpu(cl->nr_roots);
	nr = (u32)BFS_MIN((u64)nr, (bytes - sizeof(*cl)) / sizeof(cl->roots[0]));
	out_u64(o, "journal_seq", "Journal seq", le64_to_cpu(cl->journal_seq));
	out_array(o, "roots", "Btree roots");
	for (i = 0; i < nr; i++) {
		const struct bfs_btree_ptr *p = &cl->roots[i];

		out_object(o, NULL, NULL);
		out_str(o, "btree", "Btree", "%s", bfs_btree_id_name(p->btree_id));
		out_u64(o, "offset", "Root node at", le64_to_cpu(p->offset));
		out_note(o, "(level %u)", p->level);
		out_u64(o, "level", "Level", p->level);
		o->rows[o->nr - 1].flags |= OUT_JSON_ONLY;
		out_end(o);
	}
	out_end(o);
}

/* what fsck repairs could not restore completely */
static void describe_repair(struct bfs_out *o, const struct bfs_sb_field *f)
{
	const struct bfs_sb_repair *r = (const void *)f->data;
	u32 lost;
	char names[128] = "";
	unsigned id;

	if ((size_t)le32_to_cpu(f->u64s) * 8 < sizeof(*f) + sizeof(*r))
		return;
	lost = le32_to_cpu(r->btrees_lost_data);
	for (id = 0; id < BFS_BTREE_NR; id++)
		if (lost & (1U << id))
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? " " : "", bfs_btree_id_name(id));
	out_str(o, "btrees_lost_data", "Btrees that lost data", "%s", names[0] ? names : "(none)");
	out_u64(o, "nr_rebuilds", "Btree rebuilds", le64_to_cpu(r->nr_rebuilds));
	out_u64(o, "last_rebuild", "Last rebuild (epoch s)", le64_to_cpu(r->last_rebuild));
}

static void describe_fields(struct bfs_out *o, const struct bfs_sb *sb)
{
	const struct bfs_sb_field *f;

	out_array(o, "sections", "Sections");
	bfs_sb_for_each_field(sb, f) {
		u32 type = le32_to_cpu(f->type);

		out_object(o, NULL, NULL);
		out_str(o, "name", "Section", "%s", field_name(type));
		out_u64(o, "type", "Type", type & ~BFS_SB_FIELD_REQUIRED);
		out_size(o, "bytes", "Bytes", (u64)le32_to_cpu(f->u64s) * 8);
		if ((type & ~BFS_SB_FIELD_REQUIRED) == BFS_SB_FIELD_CLEAN)
			describe_clean(o, f);
		else if ((type & ~BFS_SB_FIELD_REQUIRED) == BFS_SB_FIELD_REPAIR)
			describe_repair(o, f);
		if ((type & ~BFS_SB_FIELD_REQUIRED) == BFS_SB_FIELD_OPTIONS &&
		    le32_to_cpu(f->u64s) * 8 >= sizeof(*f) + BFS_SB_OPTIONS_V1_BYTES)
			out_bool(o, "data_checksum_set", "Data checksum set",
				 ((const struct bfs_sb_options *)f->data)->data_csum_set);
		out_end(o);
	}
	out_end(o);
}

static void describe_sb(struct bfs_out *o, const struct bfs_sb *sb)
{
	char uuid[37], label[BFS_LABEL_SIZE + 1];
	u32 flags = le32_to_cpu(sb->flags);

	bfs_format_uuid(sb->uuid, uuid);
	bfs_sb_label(sb, label);
	out_hex(o, "magic", "Magic", le64_to_cpu(sb->magic));
	out_note(o, "[ok]");
	out_hex(o, "checksum", "Superblock checksum", le64_to_cpu(sb->csum));
	out_note(o, bfs_sb_csum(sb) == le64_to_cpu(sb->csum) ? "[match]" : "[MISMATCH]");
	out_bool(o, "checksum_valid", "Checksum valid", bfs_sb_csum(sb) == le64_to_cpu(sb->csum));
	o->rows[o->nr - 1].flags |= OUT_JSON_ONLY;
	out_u64(o, "version", "Format version", le16_to_cpu(sb->version));
	out_u64(o, "version_min", "Oldest compatible", le16_to_cpu(sb->version_min));
	out_str(o, "uuid", "UUID", "%s", uuid);
	out_str(o, "label", "Label", "%s", label);
	if (!label[0])
		out_note(o, "(none)");
	out_time(o, "time_created", "Created", le64_to_cpu(sb->time_created));
	out_time(o, "time_written", "Last written", le64_to_cpu(sb->time_written));
	out_u64(o, "seq", "Write sequence", le64_to_cpu(sb->seq));
	out_str(o, "state", "State", "%s%s", flags & BFS_SB_CLEAN ? "clean" : "not clean",
		flags & BFS_SB_ERRORS ? ", errors" : "");
	if (!(flags & BFS_SB_CLEAN))
		out_note(o, "(journal replay needed)");
	out_hex(o, "flags", "Flags", flags);
	describe_features(o, sb);
	describe_layout(o, sb);
	out_str(o, "checksum_type", "Checksum type", "%s", bfs_csum_name(sb->csum_type));
	out_str(o, "data_checksum_type", "Data checksum type", "%s",
		bfs_csum_name(bfs_sb_data_csum_type(sb)));
	out_u64(o, "commit_interval", "Commit interval", bfs_sb_commit_secs(sb));
	out_note(o, bfs_sb_commit_secs(sb) ? "s" : "(only fsync and unmount)");
	out_str(o, "errors", "Error behaviour", "%s", bfs_errors_name(bfs_sb_errors(sb)));
	out_str(o, "compression", "Compression", "%s", bfs_compression_name(sb->compression_type));
	out_u64(o, "compression_level", "Compression level", sb->compression_level);
	out_size(o, "data_chunk", "Data chunk size", bfs_sb_data_chunk(sb));
	out_hex(o, "hash_seed", "Name hash seed", le64_to_cpu(sb->hash_seed));
	describe_fields(o, sb);
}

/* --all: the state of every copy the superblock lists (what fsck checks) */
static void describe_copies(struct bfs_out *o, struct bfs_dev *dev, const struct bfs_sb *sb)
{
	u64 offs[BFS_SB_MAX_COPIES];
	unsigned nr = sb->nr_copies, i;
	struct bfs_sb *buf = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN];

	if (!buf)
		return;
	for (i = 0; i < nr; i++)
		offs[i] = le64_to_cpu(sb->copy_offset[i]);
	out_array(o, "copy_status", "Copy status");
	for (i = 0; i < nr; i++) {
		int ret;

		memset(buf, 0, BFS_SB_MAX_BYTES);
		ret = bfs_sb_read_copy(dev, offs[i], buf, err);
		out_object(o, NULL, NULL);
		out_u64(o, "offset", i ? "Backup at" : "Primary at", offs[i]);
		out_bool(o, "valid", "Valid", !ret);
		if (ret)
			out_str(o, "error", "Error", "%s", err);
		else
			out_u64(o, "seq", "Write sequence", le64_to_cpu(buf->seq));
		out_end(o);
	}
	out_end(o);
	bfs_free(buf);
}

/*
 * --copy N: copy N of the list the superblock in use gives (a forged or
 * stale copy is exactly what one wants to look at), validated but not chosen.
 */
static int read_chosen_copy(struct bfs_dev *dev, struct bfs_sb_handle *h, unsigned copy,
			    char *err)
{
	struct bfs_sb *buf;
	u64 off;
	int ret;

	if (copy >= h->sb->nr_copies)
		return bfs_err_line(err, -EINVAL, "there is no copy %u: the superblock lists %u",
				    copy, h->sb->nr_copies);
	buf = bfs_sb_buf_alloc();
	if (!buf)
		return -ENOMEM;
	off = le64_to_cpu(h->sb->copy_offset[copy]);
	ret = bfs_sb_read_copy(dev, off, buf, err);
	if (ret) {
		bfs_sb_buf_free(buf);
		return ret;
	}
	bfs_sb_handle_release(h);
	h->sb = buf;
	h->copy = copy;
	h->offset = off;
	return 0;
}

/* which copy is printed and why, in words */
static const char *copy_note(const struct bfs_sb_handle *h, bool chosen, char *buf, size_t len)
{
	if (chosen)
		snprintf(buf, len, "(%s %u, as asked)", h->copy ? "backup copy" : "primary, copy",
			 h->copy);
	else if (!h->copy)
		snprintf(buf, len, "(primary)");
	else
		snprintf(buf, len, "(backup copy %u: primary %s)", h->copy,
			 h->outvoted ? "outvoted by the backups" : "invalid");
	return buf;
}

static int cmd_show_super(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct bfs_sb_handle h;
	struct bfs_out o = { 0 };
	struct bfs_dev *dev;
	char err[BFS_ERR_LEN], note[80];
	bool json = false, all = false, export = false, chosen = false;
	unsigned long copy = 0;
	char *end;
	int c, ret;

	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'a':
			all = true;
			break;
		case 'e':
			export = true;
			break;
		case OPT_COPY:
			copy = strtoul(optarg, &end, 10);
			if (!*optarg || *end || copy >= BFS_SB_MAX_COPIES)
				return bfs_cmd_usage_error(cmd, "--copy wants a copy number from 0 to %u",
							   BFS_SB_MAX_COPIES - 1);
			chosen = true;
			break;
		default:
			return bfs_cmd_usage_error(cmd, "bad option");
		}
	}
	ret = bfs_cmd_want_device(cmd, argc);
	if (ret)
		return ret;
	if (export && (json || all))
		return bfs_cmd_usage_error(cmd, "--export cannot be combined with --json or --all");

	ret = bfs_dev_open(argv[optind], BFS_DEV_RDONLY | BFS_DEV_NOLOCK, &dev);
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", argv[optind], strerror(-ret));
	ret = bfs_sb_read(dev, &h, err);
	if (!ret && chosen) {
		ret = read_chosen_copy(dev, &h, copy, err);
		if (ret) {
			bfs_sb_handle_release(&h);
			bfs_dev_close(dev);
			return bfs_cmd_error(cmd, "'%s': superblock copy %lu: %s", argv[optind],
					     copy, err);
		}
	}
	if (ret) {
		bfs_dev_close(dev);
		if (ret == -ENODATA)
			return bfs_cmd_error(cmd, "'%s' is not a bfs filesystem: %s",
					     argv[optind], err);
		return bfs_cmd_error(cmd, "'%s': %s", argv[optind], err);
	}
	if (h.used_backup && !chosen)
		fprintf(stderr, "bfs show-super: warning: primary superblock is invalid (%s); "
			"showing backup copy %u at offset %llu\n", h.primary_err, h.copy,
			(unsigned long long)h.offset);
	if (export) {
		bfs_export_print(stdout, h.sb);
		bfs_sb_handle_release(&h);
		bfs_dev_close(dev);
		return BFS_EXIT_OK;
	}

	out_str(&o, "device", "Device", "%s", argv[optind]);
	out_u64(&o, "copy_offset", "Superblock read from", h.offset);
	out_note(&o, "%s", copy_note(&h, chosen, note, sizeof(note)));
	out_u64(&o, "copy", "Copy", h.copy);
	o.rows[o.nr - 1].flags |= OUT_JSON_ONLY;
	out_bool(&o, "primary_valid", "Primary valid", !h.used_backup);
	o.rows[o.nr - 1].flags |= OUT_JSON_ONLY;
	out_bool(&o, "primary_outvoted", "Primary outvoted", h.outvoted);
	o.rows[o.nr - 1].flags |= OUT_JSON_ONLY;
	describe_sb(&o, h.sb);
	if (all)
		describe_copies(&o, dev, h.sb);
	out_print(&o, stdout, json);
	out_free(&o);
	bfs_sb_handle_release(&h);
	bfs_dev_close(dev);
	return BFS_EXIT_OK;
}

const struct bfs_cmd bfs_cmd_show_super = {
	.name = "show-super",
	.fn = cmd_show_super,
	.summary = "print the superblock of a bfs filesystem",
	.synopsis = "[--json] [--all] [--export] [--copy N] DEVICE",
	.opts = show_super_opts,
	.help =
	"If the primary superblock is damaged, or valid but outvoted by two or more\n"
	"agreeing backups, the backup every tool uses is shown and a warning names\n"
	"what is wrong with the primary.\n",
	.args = BFS_ARG_DEVICE,
};
