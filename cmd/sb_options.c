// SPDX-License-Identifier: MIT
/* The settings of bfs set-option: see sb_options.h. */
#include "sb_options.h"
#include "cmd.h"
#include "opts.h"

#include <bfs/checksum.h>
#include <bfs/log.h>
#include <bfs/probe.h>
#include <bfs/super.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uuid.h>

/* what the rows of bfs_sbopt_settings[] do not say (names: bfs_sbopt_name()) */
const struct bfs_sbopt_info bfs_sbopts[BFS_SBOPT_NR] = {
	[BFS_SBOPT_LABEL]	= { "TEXT (at most 64 bytes, empty to clear)", false, true },
	/* journal entries carry the UUID: replay would skip every old one */
	[BFS_SBOPT_UUID]	= { "UUID, random or time", true, false },
	[BFS_SBOPT_COMPRESSION]	= { "none or zstd[:LEVEL] (new data)", false, true },
	[BFS_SBOPT_CHECKSUM]	= { "xxhash or none (new file data)", false, true },
	[BFS_SBOPT_COMMIT]	= { "SECONDS between periodic commits, 0 for none", false, true },
	[BFS_SBOPT_ERRORS]	= { "continue, remount-ro or panic (on a metadata error)",
				    false, true },
	[BFS_SBOPT_DATA_CHUNK]	= { "SIZE, 4K to 64K (chunks of new file data)", false, true },
};

const struct bfs_opt bfs_sbopt_settings[BFS_SBOPT_NR + 1] = {
	[BFS_SBOPT_LABEL] = BFS_OPT("label", 0, BFS_SBOPT_LABEL, "TEXT",
		"the label, at most 64 bytes; label= clears it"),
	[BFS_SBOPT_UUID] = BFS_OPT("uuid", 0, BFS_SBOPT_UUID, "UUID",
		"a new UUID, or random, or time (needs a clean filesystem)",
		.values = BFS_VAL_WORDS, .words = "random time"),
	[BFS_SBOPT_COMPRESSION] = BFS_OPT("compression", 0, BFS_SBOPT_COMPRESSION, "TYPE",
		"none or zstd[:LEVEL] (LEVEL 1 to 19) for new data",
		.values = BFS_VAL_COMPRESSION),
	[BFS_SBOPT_CHECKSUM] = BFS_OPT("checksum", 0, BFS_SBOPT_CHECKSUM, "TYPE",
		"xxhash or none for new file data (metadata keeps its type)",
		.values = BFS_VAL_CSUM),
	[BFS_SBOPT_COMMIT] = BFS_OPT("commit", 0, BFS_SBOPT_COMMIT, "SECONDS",
		"commit what was written every SECONDS (0: only at fsync\nand unmount)"),
	[BFS_SBOPT_ERRORS] = BFS_OPT("errors", 0, BFS_SBOPT_ERRORS, "BEHAVIOUR",
		"on a metadata error a mount goes on (continue), refuses\n"
		"writes from then on (remount-ro) or stops (panic)",
		.values = BFS_VAL_WORDS, .words = BFS_WORDS_ERRORS),
	[BFS_SBOPT_DATA_CHUNK] = BFS_OPT("data_chunk", 0, BFS_SBOPT_DATA_CHUNK, "SIZE",
		"new file data is checksummed (and compressed) in chunks of\n"
		"SIZE, 4K to 64K; data already written keeps its chunks",
		.values = BFS_VAL_WORDS, .words = BFS_WORDS_DATA_CHUNK),
	{ 0 }
};

#define usage_err(err, ...) bfs_err_line((err), -EINVAL, __VA_ARGS__)

int bfs_sbopt_find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bfs_sbopts); i++)
		if (strlen(bfs_sbopt_name(i)) == len && !strncmp(bfs_sbopt_name(i), name, len))
			return (int)i;
	return -1;
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

int bfs_sbopt_apply(struct bfs_sb *sb, enum bfs_sbopt opt, const char *value, char *err)
{
	unsigned type, level;
	unsigned long secs;
	u64 bytes;
	char *end;
	u8 uuid[16];

	switch (opt) {
	case BFS_SBOPT_LABEL:
		return bfs_sb_set_label(sb, value, err);
	case BFS_SBOPT_UUID:
		if (!strcmp(value, "random"))
			uuid_generate_random(uuid);
		else if (!strcmp(value, "time"))
			uuid_generate_time(uuid);
		else if (uuid_parse(value, uuid))
			return usage_err(err, "invalid uuid '%s'", value);
		bfs_sb_set_uuid(sb, uuid);
		return 0;
	case BFS_SBOPT_COMPRESSION:
		if (parse_compression(value, &type, &level))
			return usage_err(err, "invalid compression '%s' (none, zstd[:LEVEL], LEVEL %d "
					 "to %d)", value, BFS_ZSTD_LEVEL_MIN, BFS_ZSTD_LEVEL_MAX);
		return bfs_sb_set_compression(sb, type, level, err);
	case BFS_SBOPT_CHECKSUM:
		if (!strcmp(value, "xxhash"))
			type = BFS_CSUM_XXH3;
		else if (!strcmp(value, "none"))
			type = BFS_CSUM_NONE;
		else
			return usage_err(err, "invalid checksum '%s' (xxhash, none)", value);
		return bfs_sb_set_data_csum(sb, type, err);
	case BFS_SBOPT_COMMIT:
		errno = 0;
		secs = strtoul(value, &end, 10);
		if (errno || end == value || *end || *value == '-' || secs > UINT32_MAX)
			return usage_err(err, "invalid commit interval '%s' (seconds)", value);
		return bfs_sb_set_commit_secs(sb, (unsigned)secs, err);
	case BFS_SBOPT_ERRORS:
		if (bfs_errors_parse(value, &type))
			return usage_err(err, "invalid error behaviour '%s' (continue, remount-ro, "
					 "panic)", value);
		return bfs_sb_set_errors(sb, type, err);
	case BFS_SBOPT_DATA_CHUNK:
		if (bfs_parse_size(value, &bytes) || bytes > UINT32_MAX)
			return usage_err(err, "invalid data chunk size '%s'", value);
		return bfs_sb_set_data_chunk(sb, (u32)bytes, err);
	case BFS_SBOPT_NR:
		break;
	}
	return usage_err(err, "unknown option");
}

void bfs_sbopt_describe(enum bfs_sbopt opt, const struct bfs_sb *sb, char out[80])
{
	char label[BFS_LABEL_SIZE + 1];

	switch (opt) {
	case BFS_SBOPT_LABEL:
		bfs_sb_label(sb, label);
		snprintf(out, 80, "%s", label[0] ? label : "(none)");
		break;
	case BFS_SBOPT_UUID:
		bfs_format_uuid(sb->uuid, out);
		break;
	case BFS_SBOPT_COMPRESSION:
		if (sb->compression_type)
			snprintf(out, 80, "%s:%u", bfs_compression_name(sb->compression_type),
				 sb->compression_level);
		else
			snprintf(out, 80, "none");
		break;
	case BFS_SBOPT_CHECKSUM:
		snprintf(out, 80, "%s", bfs_csum_name(bfs_sb_data_csum_type(sb)));
		break;
	case BFS_SBOPT_COMMIT:
		if (bfs_sb_commit_secs(sb))
			snprintf(out, 80, "%u s", bfs_sb_commit_secs(sb));
		else
			snprintf(out, 80, "none");
		break;
	case BFS_SBOPT_ERRORS:
		snprintf(out, 80, "%s", bfs_errors_name(bfs_sb_errors(sb)));
		break;
	case BFS_SBOPT_DATA_CHUNK:
		bfs_human_size(bfs_sb_data_chunk(sb), out);
		break;
	case BFS_SBOPT_NR:
		snprintf(out, 80, "?");
		break;
	}
}
