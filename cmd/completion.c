// SPDX-License-Identifier: MIT
/*
 * `bfs completion`: print the bash completion script, generated from the
 * command table so that it lists exactly the commands and options bfs has.
 * bash-completion/bfs is this output, checked in; a test fails if it is stale.
 *
 * Options and what completes their values come from each command's option
 * table (cmd/opts.h), the installed names from bfs_aliases; btree,
 * compression and checksum names come from libcore itself, so they follow
 * the code.
 */
#include "cmd.h"

#include <bfs/btree.h>
#include <bfs/checksum.h>

#include <string.h>

static void print_words(enum bfs_opt_values values, const char *words)
{
	unsigned i;

	switch (values) {
	case BFS_VAL_BTREES:
		for (i = 0; i < BFS_BTREE_NR; i++)
			printf("%s%s", i ? " " : "", bfs_btree_id_name(i));
		break;
	case BFS_VAL_COMPRESSION:
		printf("none zstd");
		for (i = BFS_ZSTD_LEVEL_MIN; i <= BFS_ZSTD_LEVEL_MAX; i++)
			printf(" zstd:%u", i);
		break;
	case BFS_VAL_CSUM:
		for (i = 0; i < BFS_CSUM_NR; i++)
			printf("%s%s", i ? " " : "", bfs_csum_name(i));
		break;
	default:
		printf("%s", words ? words : "");
		break;
	}
}

/* the bash that completes a value of kind @values for the word being typed */
static void print_reply(enum bfs_opt_values values, const char *words, const char *indent)
{
	if (values == BFS_VAL_FILE) {
		printf("%s_filedir\n", indent);
		return;
	}
	if (values == BFS_VAL_LIST) {
		/* complete the last item of "a,b,c" */
		printf("%slocal pre=; [[ \"$cur\" == *,* ]] && pre=${cur%%,*},\n", indent);
		printf("%sCOMPREPLY=($(compgen -P \"$pre\" -W \"", indent);
		print_words(values, words);
		printf("\" -- \"${cur##*,}\"))\n%scompopt -o nospace\n", indent);
		return;
	}
	printf("%sCOMPREPLY=($(compgen -W \"", indent);
	print_words(values, words);
	printf("\" -- \"$cur\"))\n");
	if (words && strchr(words, '='))
		printf("%s[[ \"$COMPREPLY\" == *= ]] && compopt -o nospace\n", indent);
}

static void print_options(const struct bfs_cmd *cmd)
{
	const struct bfs_opt *o;

	bfs_for_each_opt(o, cmd)
		if (o->name)
			printf(" --%s", o->name);
	bfs_for_each_opt(o, cmd)
		if (o->letter)
			printf(" -%c", o->letter);
	printf(" --help");
}

/* "--name|-n": the words that name @o */
static void print_names(const struct bfs_opt *o, bool *any)
{
	printf(*any ? "|" : "\t\t");
	if (o->name)
		printf("--%s%s", o->name, o->letter ? "|" : "");
	if (o->letter)
		printf("-%c", o->letter);
	*any = true;
}

/* a "case $prev" arm for every option that takes a value */
static void print_value_cases(const struct bfs_cmd *cmd)
{
	const struct bfs_opt *o;
	bool any = false;

	printf("\t\tcase \"$prev\" in\n");
	bfs_for_each_opt(o, cmd) {
		if (!o->arg || o->values == BFS_VAL_ANY)
			continue;
		any = false;
		print_names(o, &any);
		printf(")\n");
		print_reply(o->values, o->words, "\t\t\t");
		printf("\t\t\treturn ;;\n");
	}
	/* other options with a value (a size, a label): nothing to offer */
	any = false;
	bfs_for_each_opt(o, cmd)
		if (o->arg && o->values == BFS_VAL_ANY)
			print_names(o, &any);
	if (any)
		printf(")\n\t\t\treturn ;;\n");
	printf("\t\tesac\n");
}

/* DEVICE, then OPTION=VALUE words from the settings table (set-option) */
static void print_settings(const struct bfs_cmd *c)
{
	const struct bfs_opt *o;

	printf("\t\t\tcase \"$cur\" in\n");
	bfs_for_each_row(o, c->settings) {
		if (o->values == BFS_VAL_ANY || o->values == BFS_VAL_FILE)
			continue;
		printf("\t\t\t%s=*) COMPREPLY=($(compgen -P %s= -W \"", o->name, o->name);
		print_words(o->values, o->words);
		printf("\" -- \"${cur#*=}\")) ;;\n");
	}
	printf("\t\t\t*=*) ;;\n"
	       "\t\t\t*)\n"
	       "\t\t\t\tif [ \"$cword\" -gt \"$first\" ]; then\n"
	       "\t\t\t\t\tCOMPREPLY=($(compgen -W \"");
	bfs_for_each_row(o, c->settings)
		printf("%s%s=", o == c->settings ? "" : " ", o->name);
	printf("\" -- \"$cur\"))\n"
	       "\t\t\t\t\tcompopt -o nospace\n"
	       "\t\t\t\telse\n\t\t\t\t\t_filedir\n\t\t\t\tfi ;;\n"
	       "\t\t\tesac\n");
}

/* the positional arguments */
static void print_args(const struct bfs_cmd *c)
{
	if (c->settings) {
		print_settings(c);
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
	case BFS_ARG_WORDS:
		/* the first argument only: then options and files */
		printf("\t\t\tif [ \"$cword\" -eq \"$first\" ]; then\n");
		print_reply(BFS_VAL_WORDS, c->arg_words, "\t\t\t\t");
		printf("\t\t\telse\n\t\t\t\t_filedir\n\t\t\tfi\n");
		break;
	case BFS_ARG_NONE:
		printf("\t\t\t:\n");
		break;
	}
}

static int cmd_completion(const struct bfs_cmd *self, int argc, char **argv)
{
	const struct bfs_cmd *const *c;
	const struct bfs_alias *a;
	char names[1024] = "";

	for (c = bfs_cmds; *c; c++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 c == bfs_cmds ? "" : " ", (*c)->name);

	if (bfs_cmd_getopt(self, argc, argv, NULL) != -1)
		return bfs_cmd_usage_error(self, "bad option");
	if (optind < argc)
		return bfs_cmd_usage_error(self, "unexpected argument '%s'", argv[optind]);
	printf("# bash completion for bfs -- generated by 'bfs completion', do not edit\n"
	       "_bfs()\n{\n"
	       "\tlocal cur prev cmd words cword split first=1\n"
	       "\t_init_completion -s || return\n"
	       "\tcase \"${words[0]##*/}\" in\n");
	for (a = bfs_aliases; a->argv0; a++)
		printf("\t%s) cmd=%s ;;\n", a->argv0, a->cmd->name);
	printf("\t*)\n"
	       "\t\tif [ \"$cword\" -eq 1 ]; then\n"
	       "\t\t\tCOMPREPLY=($(compgen -W \"--help --version --aliases help");
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
	       "complete -F _bfs bfs");
	for (a = bfs_aliases; a->argv0; a++)
		printf(" %s", a->argv0);
	printf("\n");
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
