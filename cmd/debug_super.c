// SPDX-License-Identifier: MIT
/*
 * bfs debug: the superblock by field name.  One table names every field
 * (with the keys bfs show-super --json uses) and says where it lives in
 * struct bfs_sb and how it reads and parses; `super` prints it, `set-super`
 * edits it, completion offers its names.
 */
#include "cmd.h"
#include "debug.h"

#include <bfs/checksum.h>
#include <bfs/super.h>

#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include <uuid.h>

enum sbf_kind { SBF_UINT, SBF_HEX, SBF_TIME, SBF_UUID, SBF_LABEL, SBF_CSUM, SBF_COMPRESSION };

struct sb_field {
	const char	*name;
	size_t		off;
	size_t		width;		/* bytes: 1, 2, 4, 8 little-endian, or the array size */
	enum sbf_kind	kind;
	bool		no_set;		/* recomputed by every superblock write */
};

#define F(_name, _member, _kind) \
	{ _name, offsetof(struct bfs_sb, _member), sizeof(((struct bfs_sb *)0)->_member), _kind, false }
#define F_RO(_name, _member, _kind) \
	{ _name, offsetof(struct bfs_sb, _member), sizeof(((struct bfs_sb *)0)->_member), _kind, true }

static const struct sb_field sb_fields[] = {
	F("magic",		magic,			SBF_HEX),
	F_RO("checksum",	csum,			SBF_HEX),
	F_RO("bytes",		bytes,			SBF_UINT),
	F("version",		version,		SBF_UINT),
	F("version_min",	version_min,		SBF_UINT),
	F("uuid",		uuid,			SBF_UUID),
	F("label",		label,			SBF_LABEL),
	F("time_created",	time_created,		SBF_TIME),
	F_RO("time_written",	time_written,		SBF_TIME),
	F_RO("seq",		seq,			SBF_UINT),
	F("flags",		flags,			SBF_HEX),
	F("compat",		compat,			SBF_HEX),
	F("ro_compat",		ro_compat,		SBF_HEX),
	F("incompat",		incompat,		SBF_HEX),
	F("device_size",	dev_size,		SBF_UINT),
	F("block_size",		block_size,		SBF_UINT),
	F("btree_node_size",	btree_node_size,	SBF_UINT),
	F("bucket_size",	bucket_size,		SBF_UINT),
	F("first_bucket",	first_bucket,		SBF_UINT),
	F("nbuckets",		nbuckets,		SBF_UINT),
	F("journal.first_bucket", journal_bucket,	SBF_UINT),
	F("journal.nbuckets",	journal_nbuckets,	SBF_UINT),
	F("checksum_type",	csum_type,		SBF_CSUM),
	F("compression",	compression_type,	SBF_COMPRESSION),
	F("compression_level",	compression_level,	SBF_UINT),
	F("nr_copies",		nr_copies,		SBF_UINT),
	F("copies.0.offset",	copy_offset[0],		SBF_UINT),
	F("copies.1.offset",	copy_offset[1],		SBF_UINT),
	F("copies.2.offset",	copy_offset[2],		SBF_UINT),
	F("copies.3.offset",	copy_offset[3],		SBF_UINT),
	F("hash_seed",		hash_seed,		SBF_HEX),
};

const char *const dbg_sb_field_names[] = {
	"magic", "checksum", "bytes", "version", "version_min", "uuid", "label",
	"time_created", "time_written", "seq", "flags", "compat", "ro_compat", "incompat",
	"device_size", "block_size", "btree_node_size", "bucket_size", "first_bucket",
	"nbuckets", "journal.first_bucket", "journal.nbuckets", "checksum_type", "compression",
	"compression_level", "nr_copies", "copies.0.offset", "copies.1.offset",
	"copies.2.offset", "copies.3.offset", "hash_seed", NULL
};

_Static_assert(ARRAY_SIZE(dbg_sb_field_names) == ARRAY_SIZE(sb_fields) + 1,
	       "dbg_sb_field_names must list sb_fields");

static u64 get_uint(const struct bfs_sb *sb, const struct sb_field *f)
{
	const u8 *p = (const u8 *)sb + f->off;
	u64 v = 0;
	size_t i;

	for (i = 0; i < f->width && i < 8; i++)
		v |= (u64)p[i] << (8 * i);	/* little-endian on disk */
	return v;
}

static void set_uint(struct bfs_sb *sb, const struct sb_field *f, u64 v)
{
	u8 *p = (u8 *)sb + f->off;
	size_t i;

	for (i = 0; i < f->width && i < 8; i++)
		p[i] = (u8)(v >> (8 * i));
}

static void field_to_text(const struct bfs_sb *sb, const struct sb_field *f, char *buf,
			  size_t len)
{
	u64 v = get_uint(sb, f);
	char tmp[64];

	switch (f->kind) {
	case SBF_UINT:
		snprintf(buf, len, "%" PRIu64, v);
		break;
	case SBF_HEX:
		snprintf(buf, len, "0x%" PRIx64, v);
		break;
	case SBF_TIME:
		snprintf(buf, len, "%" PRIu64 " (%s)", v, bfs_format_time(v, tmp));
		break;
	case SBF_UUID:
		bfs_format_uuid(sb->uuid, tmp);
		snprintf(buf, len, "%s", tmp);
		break;
	case SBF_LABEL: {
		char label[BFS_LABEL_SIZE + 1];

		bfs_sb_label(sb, label);
		snprintf(buf, len, "\"%s\"", label);
		break;
	}
	case SBF_CSUM:
		snprintf(buf, len, "%s (%" PRIu64 ")", bfs_csum_name((unsigned)v), v);
		break;
	case SBF_COMPRESSION:
		snprintf(buf, len, "%s (%" PRIu64 ")", bfs_compression_name((unsigned)v), v);
		break;
	}
}

static const struct sb_field *find_field(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(sb_fields); i++)
		if (!strcmp(sb_fields[i].name, name))
			return &sb_fields[i];
	return NULL;
}

static void print_sections(const struct bfs_sb *sb)
{
	const struct bfs_sb_field *f;

	bfs_sb_for_each_field(sb, f) {
		u32 type = le32_to_cpu(f->type) & ~BFS_SB_FIELD_REQUIRED;

		printf("%-22s type %u%s, %u bytes\n", "section:", type,
		       type == BFS_SB_FIELD_CLEAN ? " (clean)" : "", le32_to_cpu(f->u64s) * 8);
	}
}

int dbg_cmd_super(struct dbg *d, int argc, char **argv)
{
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN], buf[256];
	size_t i;
	int ret;

	ret = bfs_sb_read(d->dev, &h, err);
	if (ret)
		return dbg_err(d, "no valid superblock: %s", err);
	printf("%-22s %s copy %u at offset %" PRIu64 "\n", "read from:",
	       h.used_backup ? "backup" : "primary", h.copy, h.offset);
	if (h.used_backup)
		printf("%-22s %s\n", "primary invalid:", h.primary_err);
	for (i = 0; i < ARRAY_SIZE(sb_fields); i++) {
		const struct sb_field *f = &sb_fields[i];
		char label[64];

		field_to_text(h.sb, f, buf, sizeof(buf));
		snprintf(label, sizeof(label), "%s:", f->name);
		printf("%-22s %s", label, buf);
		if (!strcmp(f->name, "checksum"))
			printf(" %s", bfs_sb_csum(h.sb) == le64_to_cpu(h.sb->csum) ? "[match]" :
			       "[MISMATCH]");
		if (!strcmp(f->name, "flags"))
			printf(" (%s%s)", le32_to_cpu(h.sb->flags) & BFS_SB_CLEAN ? "clean" : "not clean",
			       le32_to_cpu(h.sb->flags) & BFS_SB_ERRORS ? ", errors" : "");
		putchar('\n');
	}
	print_sections(h.sb);
	bfs_sb_handle_release(&h);
	return 0;
}

static int lookup_name(const char *s, const char *(*name)(unsigned), unsigned nr, u64 *v)
{
	unsigned i;

	for (i = 0; i < nr; i++)
		if (!strcmp(s, name(i))) {
			*v = i;
			return 0;
		}
	return dbg_parse_u64(s, v);
}

static int parse_value(struct dbg *d, struct bfs_sb *sb, const struct sb_field *f, const char *s)
{
	u64 v;

	switch (f->kind) {
	case SBF_UUID:
		if (uuid_parse(s, sb->uuid))
			return dbg_err(d, "bad UUID '%s'", s);
		return 0;
	case SBF_LABEL:
		if (strlen(s) > BFS_LABEL_SIZE)
			return dbg_err(d, "label longer than %d bytes", BFS_LABEL_SIZE);
		memset(sb->label, 0, sizeof(sb->label));
		memcpy(sb->label, s, strlen(s));
		return 0;
	case SBF_CSUM:
		if (lookup_name(s, bfs_csum_name, BFS_CSUM_NR, &v))
			return dbg_err(d, "bad checksum type '%s' (none, xxh3 or a number)", s);
		break;
	case SBF_COMPRESSION:
		if (lookup_name(s, bfs_compression_name, BFS_COMPRESSION_NR, &v))
			return dbg_err(d, "bad compression '%s' (none, zstd or a number)", s);
		break;
	default:
		if (dbg_parse_u64(s, &v))
			return dbg_err(d, "bad number '%s'", s);
		break;
	}
	if (f->width < 8 && v >> (8 * f->width))
		return dbg_err(d, "%s is %zu bytes wide: %s does not fit", f->name, f->width, s);
	set_uint(sb, f, v);
	return 0;
}

int dbg_cmd_set_super(struct dbg *d, int argc, char **argv)
{
	const struct sb_field *f = find_field(argv[1]);
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN], before[256], after[256];
	int ret;

	if (!f)
		return dbg_err(d, "unknown field '%s' (see 'super' for the names)", argv[1]);
	if (f->no_set)
		return dbg_err(d, "%s is recomputed by every superblock write; use corrupt to "
			       "damage it", f->name);
	ret = dbg_begin_raw_write(d);
	if (!ret)
		ret = bfs_sb_read(d->dev, &h, err);
	if (ret) {
		dbg_end_raw_write(d);
		return dbg_err(d, "cannot read the superblock: %s", strerror(-ret));
	}
	field_to_text(h.sb, f, before, sizeof(before));
	ret = parse_value(d, h.sb, f, argv[2]);
	if (!ret) {
		field_to_text(h.sb, f, after, sizeof(after));
		ret = bfs_sb_write(d->dev, h.sb);
		if (ret)
			ret = dbg_err(d, "writing the superblock failed: %s", strerror(-ret));
		else
			printf("%s: %s -> %s\n", f->name, before, after);
	}
	bfs_sb_handle_release(&h);
	dbg_end_raw_write(d);
	return ret ? DBG_FAIL : 0;
}
