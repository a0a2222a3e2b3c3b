/* SPDX-License-Identifier: MIT */
/*
 * The settings bfs set-option changes (cmd/sb_options.c): one table of
 * names, values and rules, used by set-option on an unmounted device and by
 * the mount's control channel (cmd/mount_control.c) on a mounted one, so
 * both parse, apply and print a change the same way.
 */
#ifndef BFS_CMD_SB_OPTIONS_H
#define BFS_CMD_SB_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include <bfs/format.h>

#include "opts.h"

enum bfs_sbopt {
	BFS_SBOPT_LABEL, BFS_SBOPT_UUID, BFS_SBOPT_COMPRESSION, BFS_SBOPT_CHECKSUM,
	BFS_SBOPT_COMMIT, BFS_SBOPT_ERRORS, BFS_SBOPT_DATA_CHUNK, BFS_SBOPT_NR
};

struct bfs_sbopt_info {
	const char *values;	/* for messages */
	bool	needs_clean;	/* the journal must hold nothing to replay */
	bool	live;		/* may change on a mounted filesystem */
};
extern const struct bfs_sbopt_info bfs_sbopts[BFS_SBOPT_NR];
/* the settings as option-table rows: names, set-option's --help and completion */
extern const struct bfs_opt bfs_sbopt_settings[BFS_SBOPT_NR + 1];

static inline const char *bfs_sbopt_name(enum bfs_sbopt opt)
{
	return bfs_sbopt_settings[opt].name;
}

/* the values completion offers, shared with format's and bench's options of the same name */
#define BFS_WORDS_ERRORS	"continue remount-ro panic"	/* bfs_errors_name() */
#define BFS_WORDS_DATA_CHUNK	"4K 8K 16K 32K 64K"

/* the option called @name (@len bytes), or -1 */
int bfs_sbopt_find(const char *name, size_t len);
/*
 * Apply VALUE to @sb in memory.  -EINVAL and @err (BFS_ERR_LEN) for a bad
 * value (a usage error), another negative errno and @err if it cannot be
 * stored (no room in the superblock).
 */
int bfs_sbopt_apply(struct bfs_sb *sb, enum bfs_sbopt opt, const char *value, char *err);
/* the value of @opt in @sb as show-super prints it */
void bfs_sbopt_describe(enum bfs_sbopt opt, const struct bfs_sb *sb, char out[80]);

#endif /* BFS_CMD_SB_OPTIONS_H */
