// SPDX-License-Identifier: MIT
/*
 * bfs: one binary, many commands.  This file holds the command table and the
 * dispatch: `bfs CMD ...`, unique prefixes of CMD, `bfs help CMD`,
 * `bfs CMD --help`, `bfs --version`, and the installed aliases mkfs.bcowfs,
 * fsck.bcowfs, mount.bcowfs and mount.fuse.bcowfs, which pick the command from
 * argv[0] as mkfs(8), fsck(8) and mount(8) expect.
 */
#include "cmd.h"

#include <errno.h>
#include <stdio.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

const struct bfs_cmd *const bfs_cmds[] = {
	&bfs_cmd_format,
	&bfs_cmd_show_super,
	&bfs_cmd_fsck,
	&bfs_cmd_dump_btree,
	&bfs_cmd_debug,
	&bfs_cmd_mount,
	&bfs_cmd_mount_helper,
	&bfs_cmd_migrate,
	&bfs_cmd_image,
	&bfs_cmd_bench,
	&bfs_cmd_completion,
	&bfs_cmd_set_option,
	&bfs_cmd_resize,
	NULL,
};

/* make install, completion and the man page check take these from `bfs --aliases` */
const struct bfs_alias bfs_aliases[] = {
	{ "mkfs." BFS_FS_TYPE, &bfs_cmd_format },
	{ "fsck." BFS_FS_TYPE, &bfs_cmd_fsck },
	/* mount(8) runs mount.TYPE; "-t fuse.bcowfs" runs mount.fuse.bcowfs */
	{ "mount." BFS_FS_TYPE, &bfs_cmd_mount_helper },
	{ "mount.fuse." BFS_FS_TYPE, &bfs_cmd_mount_helper },
	{ NULL, NULL },
};

static void main_usage(FILE *f)
{
	const struct bfs_cmd *const *c;

	fprintf(f, "usage: bfs [--version] [--help] [--aliases] COMMAND [ARGS]\n\n"
		"bfs is a copy-on-write btree filesystem; its commands are:\n\n");
	for (c = bfs_cmds; *c; c++)
		fprintf(f, "  %-12s %s\n", (*c)->name, (*c)->summary);
	fprintf(f, "\nSee 'bfs help COMMAND' or 'bfs COMMAND --help' for one command.\n");
}

static const struct bfs_cmd *find_cmd(const char *name)
{
	const struct bfs_cmd *const *c, *match = NULL;
	size_t len = strlen(name);

	for (c = bfs_cmds; *c; c++) {
		if (!strcmp((*c)->name, name))
			return *c;
		if (len && !strncmp((*c)->name, name, len)) {
			if (match)
				return NULL;	/* ambiguous prefix */
			match = *c;
		}
	}
	return match;
}

/* "bfs: 'f' is ambiguous: format fsck" */
static void report_unknown(const char *name)
{
	const struct bfs_cmd *const *c;
	size_t len = strlen(name);
	int n = 0;

	if (name[0] == '-') {
		fprintf(stderr, "bfs: unknown option '%s'\n", name);
		return;
	}
	for (c = bfs_cmds; *c; c++) {
		if (!len || strncmp((*c)->name, name, len))
			continue;
		if (n++)
			fprintf(stderr, " %s", (*c)->name);
		else
			fprintf(stderr, "bfs: '%s' is ambiguous: %s", name, (*c)->name);
	}
	if (n)
		fputc('\n', stderr);
	else
		fprintf(stderr, "bfs: unknown command '%s'\n", name);
}

/* like git: a command whose output could not be written has failed */
static int finish_stdout(int ret)
{
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "bfs: write error on standard output: %s\n", strerror(errno));
		return ret ? ret : BFS_EXIT_ERROR;
	}
	return ret;
}

static int run_cmd(const struct bfs_cmd *cmd, int argc, char **argv)
{
	static char name[64];

	/* getopt's own messages then say "bfs format: ..." */
	snprintf(name, sizeof(name), "bfs %s", cmd->name);
	argv[0] = name;
	if (bfs_cmd_wants_help(cmd, argc, argv)) {
		bfs_cmd_print_help(cmd, stdout);
		return finish_stdout(BFS_EXIT_OK);
	}
	return finish_stdout(cmd->fn(cmd, argc, argv));
}

int main(int argc, char **argv)
{
	const char *base = basename(argv[0]);
	const struct bfs_alias *a;
	const struct bfs_cmd *cmd;

	bfs_cmd_log_to_stderr();
	for (a = bfs_aliases; a->argv0; a++) {
		if (strcmp(base, a->argv0))
			continue;
		/* mkfs.ext4 -V and friends: -V alone is the version */
		if (argc == 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
			printf("%s (bfs %s)\n", base, BFS_VERSION);
			return finish_stdout(BFS_EXIT_OK);
		}
		return run_cmd(a->cmd, argc, argv);
	}

	if (argc < 2) {
		main_usage(stderr);
		return BFS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		main_usage(stdout);
		return finish_stdout(BFS_EXIT_OK);
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("bfs %s\n", BFS_VERSION);
		return finish_stdout(BFS_EXIT_OK);
	}
	if (!strcmp(argv[1], "--aliases")) {
		/* "NAME COMMAND" lines, for make install and the man page check */
		for (a = bfs_aliases; a->argv0; a++)
			printf("%s %s\n", a->argv0, a->cmd->name);
		return finish_stdout(BFS_EXIT_OK);
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3) {
			main_usage(stdout);
			return finish_stdout(BFS_EXIT_OK);
		}
		cmd = find_cmd(argv[2]);
		if (!cmd) {
			report_unknown(argv[2]);
			main_usage(stderr);
			return BFS_EXIT_USAGE;
		}
		bfs_cmd_print_help(cmd, stdout);
		return finish_stdout(BFS_EXIT_OK);
	}
	cmd = find_cmd(argv[1]);
	if (!cmd) {
		report_unknown(argv[1]);
		main_usage(stderr);
		return BFS_EXIT_USAGE;
	}
	return run_cmd(cmd, argc - 1, argv + 1);
}
