// SPDX-License-Identifier: MIT
/*
 * `bfs completion`: print the bash completion script, generated from the
 * command table so that it lists exactly the commands and options bfs has.
 * bash-completion/bfs is this output, checked in; a test fails if it is stale.
 *
 * Option values come from the table below; btree, compression and checksum
 * names come from libcore itself, so they follow the code.  An option that
 * takes a value not listed here completes nothing (a size, a label), except
 * the ones marked as files.
 */
#include "cmd.h"

#include <bfs/btree.h>
#include <bfs/checksum.h>

#include <string.h>

#define WORDS_FILES	((const char *)1)	/* complete file names */
#define WORDS_BTREES	((const char *)2)	/* bfs_btree_id_name() */
#define WORDS_COMPRESSION ((const char *)3)	/* none, zstd, zstd:LEVEL */
#define WORDS_CSUM	((const char *)4)	/* bfs_csum_name() */

/* mount -o: what cmd/mount_opts.c takes (tests/integration/00-cli.sh checks bfs-mount(8) names each) */
#define MOUNT_WORDS "ro rw allow_other allow_root writeback nowriteback debug clone_fd " \
	"norecovery noreplay cache_size= max_threads= attr_timeout= entry_timeout= " \
	"noatime nodiratime nosuid nodev noexec sync dirsync defaults nofail"

static const struct {
	const char *cmd;
	const char *opt;	/* "--name" or "-c"; NULL: the positional arguments */
	const char *words;
	bool list;		/* a comma-separated list (mount -o) */
} values[] = {
	{ "format",	  "--compression", WORDS_COMPRESSION, false },
	{ "format",	  "--checksum",	   WORDS_CSUM, false },
	{ "dump-btree",	  "--btree",	   WORDS_BTREES, false },
	{ "dump-btree",	  "-b",		   WORDS_BTREES, false },
	{ "dump-btree",	  "--start",	   "min max", false },
	{ "dump-btree",	  "--end",	   "min max", false },
	{ "debug",	  "--file",	   WORDS_FILES, false },
	{ "debug",	  "-f",		   WORDS_FILES, false },
	{ "mount",	  "--options",	   MOUNT_WORDS, true },
	{ "mount",	  "-o",		   MOUNT_WORDS, true },
	{ "mount-helper", "-o",		   MOUNT_WORDS, true },
	{ "bench",	  NULL,		   "btree fs", false },
	{ "bench",	  "--image",	   WORDS_FILES, false },
	{ "bench",	  "--workload",	   "append randwrite randread smallfiles objects createsync creates", true },
};

static void print_words(const char *words)
{
	unsigned i;

	if (words == WORDS_BTREES) {
		for (i = 0; i < BFS_BTREE_NR; i++)
			printf("%s%s", i ? " " : "", bfs_btree_id_name(i));
	} else if (words == WORDS_COMPRESSION) {
		printf("none zstd");
		for (i = BFS_ZSTD_LEVEL_MIN; i <= BFS_ZSTD_LEVEL_MAX; i++)
			printf(" zstd:%u", i);
	} else if (words == WORDS_CSUM) {
		for (i = 0; i < BFS_CSUM_NR; i++)
			printf("%s%s", i ? " " : "", bfs_csum_name(i));
	} else {
		printf("%s", words);
	}
}

/* the bash that completes @words for the word being typed */
static void print_reply(const char *words, bool list, const char *indent)
{
	if (words == WORDS_FILES) {
		printf("%s_filedir\n", indent);
		return;
	}
	if (list) {
		/* complete the last item of "a,b,c" */
		printf("%slocal pre=; [[ \"$cur\" == *,* ]] && pre=${cur%%,*},\n", indent);
		printf("%sCOMPREPLY=($(compgen -P \"$pre\" -W \"", indent);
		print_words(words);
		printf("\" -- \"${cur##*,}\"))\n%scompopt -o nospace\n", indent);
		return;
	}
	printf("%sCOMPREPLY=($(compgen -W \"", indent);
	print_words(words);
	printf("\" -- \"$cur\"))\n");
	if (strchr(words > WORDS_CSUM ? words : "", '='))
		printf("%s[[ \"$COMPREPLY\" == *= ]] && compopt -o nospace\n", indent);
}

static void print_options(const struct bfs_cmd *cmd)
{
	const struct option *o;
	const char *s;

	for (o = cmd->longopts; o && o->name; o++)
		printf(" --%s", o->name);
	for (s = cmd->shortopts; s && *s; s++)
		if (*s != ':' && *s != '+')
			printf(" -%c", *s);
	printf(" --help");
}

/* a "case $prev" arm for every option that takes a value */
static void print_value_cases(const struct bfs_cmd *cmd)
{
	const struct option *o;
	const char *s;
	size_t i;
	bool any = false, sep;

	printf("\t\tcase \"$prev\" in\n");
	for (i = 0; i < ARRAY_SIZE(values); i++) {
		if (strcmp(values[i].cmd, cmd->name) || !values[i].opt)
			continue;
		printf("\t\t%s)\n", values[i].opt);
		print_reply(values[i].words, values[i].list, "\t\t\t");
		printf("\t\t\treturn ;;\n");
	}
	/* other options with a value (a size, a label): nothing to offer */
	for (o = cmd->longopts; o && o->name; o++) {
		if (o->has_arg != required_argument)
			continue;
		sep = false;
		for (i = 0; i < ARRAY_SIZE(values); i++)
			sep |= !strcmp(values[i].cmd, cmd->name) && values[i].opt &&
			       values[i].opt[1] == '-' && !strcmp(values[i].opt + 2, o->name);
		if (sep)
			continue;
		printf(any ? "|--%s" : "\t\t--%s", o->name);
		any = true;
	}
	for (s = cmd->shortopts; s && *s; s++) {
		if (s[1] != ':' || *s == ':')
			continue;
		sep = false;
		for (i = 0; i < ARRAY_SIZE(values); i++)
			sep |= !strcmp(values[i].cmd, cmd->name) && values[i].opt &&
			       values[i].opt[1] == *s && !values[i].opt[2];
		if (!sep) {
			printf(any ? "|-%c" : "\t\t-%c", *s);
			any = true;
		}
	}
	if (any)
		printf(")\n\t\t\treturn ;;\n");
	printf("\t\tesac\n");
}

/* the positional arguments */
static void print_args(const struct bfs_cmd *c)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(values); i++) {
		if (strcmp(values[i].cmd, c->name) || values[i].opt)
			continue;
		/* the first argument only: then options and files */
		printf("\t\t\tif [ \"$cword\" -eq \"$first\" ]; then\n");
		print_reply(values[i].words, values[i].list, "\t\t\t\t");
		printf("\t\t\telse\n\t\t\t\t_filedir\n\t\t\tfi\n");
		return;
	}
	if (!strcmp(c->name, "set-option")) {
		/* DEVICE, then OPTION=VALUE... */
		printf("\t\t\tcase \"$cur\" in\n"
		       "\t\t\tcompression=*) COMPREPLY=($(compgen -P compression= -W \"");
		print_words(WORDS_COMPRESSION);
		printf("\" -- \"${cur#*=}\")) ;;\n"
		       "\t\t\tchecksum=*) COMPREPLY=($(compgen -P checksum= -W \"");
		print_words(WORDS_CSUM);
		printf("\" -- \"${cur#*=}\")) ;;\n"
		       "\t\t\tuuid=*) COMPREPLY=($(compgen -P uuid= -W \"random time\" -- \"${cur#*=}\")) ;;\n"
		       "\t\t\t*=*) ;;\n"
		       "\t\t\t*)\n"
		       "\t\t\t\tif [ \"$cword\" -gt \"$first\" ]; then\n"
		       "\t\t\t\t\tCOMPREPLY=($(compgen -W \"label= uuid= compression= checksum= commit=\" -- \"$cur\"))\n"
		       "\t\t\t\t\tcompopt -o nospace\n"
		       "\t\t\t\telse\n\t\t\t\t\t_filedir\n\t\t\t\tfi ;;\n"
		       "\t\t\tesac\n");
		return;
	}
	switch (c->args) {
	case BFS_ARG_DEVICE:
		printf("\t\t\t_filedir\n");
		break;
	case BFS_ARG_DIR:
		printf("\t\t\t_filedir -d\n");
		break;
	case BFS_ARG_COMMAND:
		printf("\t\t\tCOMPREPLY=($(compgen -W \"");
		for (const struct bfs_cmd *const *d = bfs_cmds; *d; d++)
			printf(" %s", (*d)->name);
		printf("\" -- \"$cur\"))\n");
		break;
	case BFS_ARG_NONE:
		printf("\t\t\t:\n");
		break;
	}
}

static int cmd_completion(const struct bfs_cmd *self, int argc, char **argv)
{
	const struct bfs_cmd *const *c;
	char names[1024] = "";

	for (c = bfs_cmds; *c; c++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 c == bfs_cmds ? "" : " ", (*c)->name);

	if (argc > 1)
		return bfs_cmd_usage_error(self, "unexpected argument '%s'", argv[1]);
	printf("# bash completion for bfs -- generated by 'bfs completion', do not edit\n"
	       "_bfs()\n{\n"
	       "\tlocal cur prev cmd words cword split first=1\n"
	       "\t_init_completion -s || return\n"
	       "\tcase \"${words[0]##*/}\" in\n"
	       "\tmkfs.%s) cmd=format ;;\n"
	       "\tfsck.%s) cmd=fsck ;;\n"
	       "\tmount.%s|mount.fuse.%s) cmd=mount-helper ;;\n"
	       "\t*)\n"
	       "\t\tif [ \"$cword\" -eq 1 ]; then\n"
	       "\t\t\tCOMPREPLY=($(compgen -W \"--help --version help", BFS_FS_TYPE,
	       BFS_FS_TYPE, BFS_FS_TYPE, BFS_FS_TYPE);
	for (c = bfs_cmds; *c; c++)
		printf(" %s", (*c)->name);
	printf("\" -- \"$cur\"))\n"
	       "\t\t\treturn\n"
	       "\t\tfi\n"
	       "\t\tcmd=${words[1]}\n"
	       "\t\t# a unique prefix names a command, as in bfs itself\n"
	       "\t\tlocal c match=\n"
	       "\t\tfor c in %s; do\n"
	       "\t\t\t[ \"$c\" = \"$cmd\" ] && { match=$c; break; }\n"
	       "\t\t\tcase $c in \"$cmd\"*) [ -z \"$match\" ] && match=$c || match=\"$match \" ;; esac\n"
	       "\t\tdone\n"
	       "\t\tcase $match in *\" \"*|\"\") ;; *) cmd=$match ;; esac\n"
	       "\t\tfirst=2 ;;\n"
	       "\tesac\n"
	       "\t# the first word after the command that is not an option\n"
	       "\tlocal i\n"
	       "\tfor ((i = first; i < cword; i++)); do\n"
	       "\t\t[[ \"${words[i]}\" == -* ]] || break\n"
	       "\tdone\n"
	       "\tfirst=$i\n"
	       "\tcase \"$cmd\" in\n", names);
	for (c = bfs_cmds; *c; c++) {
		printf("\t%s)\n", (*c)->name);
		print_value_cases(*c);
		printf("\t\tif [[ \"$cur\" == -* ]]; then\n"
		       "\t\t\tCOMPREPLY=($(compgen -W \"");
		print_options(*c);
		printf("\" -- \"$cur\"))\n\t\telse\n");
		print_args(*c);
		printf("\t\tfi\n\t\t;;\n");
	}
	printf("\thelp)\n\t\tCOMPREPLY=($(compgen -W \"");
	for (c = bfs_cmds; *c; c++)
		printf(" %s", (*c)->name);
	printf("\" -- \"$cur\"))\n\t\t;;\n"
	       "\tesac\n}\n"
	       "complete -F _bfs bfs mkfs.%s fsck.%s mount.%s mount.fuse.%s\n", BFS_FS_TYPE,
	       BFS_FS_TYPE, BFS_FS_TYPE, BFS_FS_TYPE);
	return BFS_EXIT_OK;
}

const struct bfs_cmd bfs_cmd_completion = {
	.name = "completion",
	.fn = cmd_completion,
	.summary = "print the bash completion script for bfs",
	.synopsis = "",
	.help = "Prints a bash completion script generated from the command table.\n",
	.args = BFS_ARG_NONE,
};
