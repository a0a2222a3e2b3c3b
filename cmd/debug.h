/* SPDX-License-Identifier: MIT */
/*
 * bfs debug: the interactive shell over an image (cmd/debug*.c).
 *
 *   debug.c          the bfs command: options, modes (-R, -f, interactive),
 *                    the shell's command table and the dispatch
 *   debug_open.c     opening the image as far as it can be opened
 *   debug_tty.c      readline: prompt, history, completion
 *   debug_util.c     argument parsing (positions, btrees, numbers, paths)
 *   debug_super.c    superblock field table: super, set-super
 *   debug_look.c     filesystem reading: ls, cd, stat, cat, dump, ...
 *   debug_btree.c    btrees, keys, node, find, bucket, stats
 *   debug_journal.c  journal
 *   debug_write.c    key and filesystem writes, corrupt
 *
 * The command table (dbg_cmds[] in debug.c) is the single source of the
 * names, argument synopses and help lines; argument counts, `help`, the man
 * page's command list and tab completion all come from it.  Every command
 * decodes on-disk data through libcore: the shell has no parser of its own.
 *
 * A command returns 0 or DBG_FAIL; it reports its own errors with dbg_err()
 * (stderr, after flushing stdout so that a transcript stays in order).
 */
#ifndef BFS_CMD_DEBUG_H
#define BFS_CMD_DEBUG_H

#include <bfs/bkey.h>
#include <bfs/btree_format.h>
#include <bfs/dev.h>
#include <bfs/format.h>
#include <bfs/fs.h>

#include <stdbool.h>
#include <stdio.h>

#define DBG_FAIL	1
#define DBG_QUIT	(-1)	/* returned by quit: stop reading commands */
#define DBG_PATH_MAX	4096

struct bfs_core;

struct dbg {
	const char	*devpath;
	bool		writable;	/* -w: the user allows writes */
	bool		raw_written;	/* set-super/corrupt ran: reopened read-only */
	struct bfs_dev	*dev;
	struct bfs_fs	*fs;		/* NULL if the filesystem layer did not open */
	struct bfs_core	*core;		/* fs's core, or opened directly, or NULL */
	bool		own_core;	/* core opened without the fs layer */
	bool		rw;		/* fs/core open read-write */
	char		why_no_fs[160];	/* what went wrong, for "no filesystem" errors */
	char		why_no_core[160];
	u64		cwd;		/* inode of the current directory */
	char		cwd_path[DBG_PATH_MAX];
	const char	*cmd;		/* name of the running command, for messages */
};

enum dbg_flags {
	DBG_NEED_CORE	= 1 << 0,	/* btree commands */
	DBG_NEED_FS	= 1 << 1,	/* filesystem commands */
	DBG_WRITE	= 1 << 2,	/* only with -w */
};

struct dbg_cmd {
	const char	*name;
	int		(*fn)(struct dbg *d, int argc, char **argv);
	/*
	 * Argument synopsis: words in capitals name what completes there
	 * (PATH/DIR: a path in the image, BTREE, FIELD, TYPE, COMMAND,
	 * HOSTFILE/HOSTDIR: a host path); [..] optional, ... repeats.
	 */
	const char	*args;
	const char	*help;		/* one line, lowercase, no full stop */
	unsigned	flags;
	int		min_args, max_args;	/* after the name; -1: no limit */
};

extern const struct dbg_cmd dbg_cmds[];
const struct dbg_cmd *dbg_find_cmd(const char *name);
/* run one command line: 0, DBG_FAIL or DBG_QUIT */
int dbg_run_line(struct dbg *d, const char *line);

/* ---- debug_open.c ---- */
/* open the filesystem (or as much as opens) on d->dev; read-write if @rw */
void dbg_open_fs(struct dbg *d, bool rw);
/* -w: the first write reopens read-write; 0 or DBG_FAIL */
int dbg_reopen_rw(struct dbg *d);
/* close fs/core (the device stays open); 0 or the close error */
int dbg_close_fs(struct dbg *d);
/* raw writes: close everything, and afterwards reopen read-only */
int dbg_begin_raw_write(struct dbg *d);
void dbg_end_raw_write(struct dbg *d);

/* ---- debug_tty.c ---- */
/* libreadline loaded (once); false if it is missing */
bool dbg_readline_load(void);
int dbg_interactive(struct dbg *d);

/* ---- debug_util.c ---- */
int dbg_err(struct dbg *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "INODE:OFFSET[:SNAPSHOT]", "min", "max" */
int dbg_parse_pos(const char *s, struct bfs_bpos *p);
/* a position as dbg_parse_pos() reads it ("min", "max", "1:2:0") */
const char *dbg_pos_text(struct bfs_bpos p, char buf[64]);
/* btree by name or number; -1 if unknown */
int dbg_parse_btree(const char *s);
/* key type by name or number; -1 if unknown */
int dbg_parse_key_type(const char *s);
/* decimal, 0x hex or 0 octal, with size suffixes (K, M, G...) if @sizes */
int dbg_parse_u64(const char *s, u64 *v);
/* path inside the image (absolute, relative to cwd, or <INUM>): no symlinks followed */
int dbg_resolve(struct dbg *d, const char *path, u64 *ino, struct bfs_stat *st);
/* the directory inode and last name of @path (for create/remove) */
int dbg_resolve_parent(struct dbg *d, const char *path, u64 *dir, const char **name,
		       size_t *len);
/* word lists for completion: NULL terminated */
extern const char *const dbg_btree_names[];
extern const char *const dbg_inode_fields[];

/* ---- debug_super.c ---- */
extern const char *const dbg_sb_field_names[];
int dbg_cmd_super(struct dbg *d, int argc, char **argv);
int dbg_cmd_set_super(struct dbg *d, int argc, char **argv);

/* ---- debug_look.c ---- */
int dbg_cmd_ls(struct dbg *d, int argc, char **argv);
int dbg_cmd_cd(struct dbg *d, int argc, char **argv);
int dbg_cmd_pwd(struct dbg *d, int argc, char **argv);
int dbg_cmd_stat(struct dbg *d, int argc, char **argv);
int dbg_cmd_cat(struct dbg *d, int argc, char **argv);
int dbg_cmd_dump(struct dbg *d, int argc, char **argv);
int dbg_cmd_rdump(struct dbg *d, int argc, char **argv);
int dbg_cmd_xattrs(struct dbg *d, int argc, char **argv);
int dbg_cmd_extents(struct dbg *d, int argc, char **argv);
/* names in directory @dir (for completion): malloc'd array, NULL terminated */
char **dbg_list_dir(struct dbg *d, u64 dir, bool mark_dirs);

/* ---- debug_btree.c ---- */
int dbg_cmd_stats(struct dbg *d, int argc, char **argv);
int dbg_cmd_btrees(struct dbg *d, int argc, char **argv);
int dbg_cmd_keys(struct dbg *d, int argc, char **argv);
int dbg_cmd_node(struct dbg *d, int argc, char **argv);
int dbg_cmd_find(struct dbg *d, int argc, char **argv);
int dbg_cmd_bucket(struct dbg *d, int argc, char **argv);

/* ---- debug_journal.c ---- */
int dbg_cmd_journal(struct dbg *d, int argc, char **argv);

/* ---- debug_write.c ---- */
int dbg_cmd_set_inode(struct dbg *d, int argc, char **argv);
int dbg_cmd_del_key(struct dbg *d, int argc, char **argv);
int dbg_cmd_put_key(struct dbg *d, int argc, char **argv);
int dbg_cmd_corrupt(struct dbg *d, int argc, char **argv);
int dbg_cmd_write(struct dbg *d, int argc, char **argv);
int dbg_cmd_mkdir(struct dbg *d, int argc, char **argv);
int dbg_cmd_symlink(struct dbg *d, int argc, char **argv);
int dbg_cmd_rm(struct dbg *d, int argc, char **argv);

#endif /* BFS_CMD_DEBUG_H */
