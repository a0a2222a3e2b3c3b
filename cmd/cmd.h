/* SPDX-License-Identifier: MIT */
/*
 * The command table entry every subcommand provides, and helpers shared by
 * the subcommands.  cmd/bfs.c is the only place that lists the commands; the
 * usage text, --help output, man-page synopsis check and bash completion all
 * come from these entries so they cannot drift apart.
 */
#ifndef BFS_CMD_H
#define BFS_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include <bfs/types.h>

#include "opts.h"

/*
 * The filesystem type, for mkfs.TYPE, fsck.TYPE, mount.TYPE, fstab, udev and
 * /proc/mounts ("fuse.TYPE").  Not "bfs": util-linux, libblkid and the kernel
 * use that for the SCO boot filesystem.  The program stays "bfs".
 */
#define BFS_FS_TYPE	"bcowfs"

/* exit codes of every command but fsck (which uses fsck(8)'s) */
#define BFS_EXIT_OK	0
#define BFS_EXIT_ERROR	1
#define BFS_EXIT_USAGE	2

/* what completes a positional argument */
enum bfs_arg_kind { BFS_ARG_NONE, BFS_ARG_DEVICE, BFS_ARG_DIR, BFS_ARG_COMMAND, BFS_ARG_WORDS };

/* the most rows an option table may have (cmd/opts.c) */
#define BFS_CMD_MAX_OPTS	40

struct bfs_cmd {
	const char *name;
	int (*fn)(const struct bfs_cmd *cmd, int argc, char **argv);
	const char *summary;		/* one line, lowercase, no full stop */
	const char *synopsis;		/* after "bfs NAME ": "[options] DEVICE" */
	const char *help_head;		/* --help text before the options, or NULL */
	const char *opts_title;		/* heading of the option lines; NULL: "Options" */
	const struct bfs_opt *opts;	/* the option table, {0} terminated (cmd/opts.h) */
	const char *help;		/* --help text after the options, or NULL */
	/* OPTION=VALUE words after the device (set-option), {0} terminated, or NULL */
	const struct bfs_opt *settings;
	const char *settings_title;
	enum bfs_arg_kind args;
	const char *arg_words;		/* BFS_ARG_WORDS: what the first argument may be */
};

/* a name the program is installed under, which runs one command */
struct bfs_alias {
	const char *argv0;
	const struct bfs_cmd *cmd;
};

/* the installed names, NULL terminated (cmd/bfs.c); `bfs --aliases` lists them */
extern const struct bfs_alias bfs_aliases[];

extern const struct bfs_cmd bfs_cmd_format;
extern const struct bfs_cmd bfs_cmd_show_super;
extern const struct bfs_cmd bfs_cmd_fsck;
extern const struct bfs_cmd bfs_cmd_dump_btree;
extern const struct bfs_cmd bfs_cmd_debug;
extern const struct bfs_cmd bfs_cmd_mount;
extern const struct bfs_cmd bfs_cmd_mount_helper;
extern const struct bfs_cmd bfs_cmd_bench;
extern const struct bfs_cmd bfs_cmd_completion;
extern const struct bfs_cmd bfs_cmd_set_option;
extern const struct bfs_cmd bfs_cmd_resize;
extern const struct bfs_cmd bfs_cmd_migrate;
extern const struct bfs_cmd bfs_cmd_image;

/* the table, NULL terminated (cmd/bfs.c) */
extern const struct bfs_cmd *const bfs_cmds[];

void bfs_cmd_usage(const struct bfs_cmd *cmd, FILE *f);
/* print "bfs NAME: <msg>" and the usage line to stderr; returns BFS_EXIT_USAGE */
int bfs_cmd_usage_error(const struct bfs_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* print "bfs NAME: <msg>" to stderr; returns BFS_EXIT_ERROR */
/*
 * 0 if @path exists and is not mounted or in use (or @allow_mounted), else
 * an error said with the reason; @hint ends the "unmount it first" line.
 */
int bfs_cmd_refuse_mounted(const struct bfs_cmd *cmd, const char *path, bool allow_mounted,
			   const char *hint);
int bfs_cmd_error(const struct bfs_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * After getopt: exactly one DEVICE argument must remain.  0, or the usage
 * error (printed) as BFS_EXIT_USAGE.
 */
int bfs_cmd_want_device(const struct bfs_cmd *cmd, int argc);

/* "64K", "1.5G", "4096", "2MiB" -> bytes; -EINVAL on junk or overflow */
int bfs_parse_size(const char *s, u64 *out);
/* "1.0 GiB", "512 B" */
const char *bfs_human_size(u64 bytes, char buf[32]);
/* "2026-11-30 05:12:03 UTC" from ns since the epoch */
const char *bfs_format_time(u64 ns, char buf[64]);
/* the same from seconds, which may be negative (inode times before 1970) */
const char *bfs_format_time_sec(s64 sec, char buf[64]);
void bfs_format_uuid(const u8 uuid[16], char out[37]);
/* route libcore messages to stderr as "bfs: ..." */
void bfs_cmd_log_to_stderr(void);
/* is stdout/stderr a terminal and progress not disabled ($BFS_NO_PROGRESS)? */
bool bfs_progress_enabled(void);

#endif /* BFS_CMD_H */
