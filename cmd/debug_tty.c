// SPDX-License-Identifier: MIT
/*
 * bfs debug: the interactive shell (GNU readline).  History lives in
 * ~/.bfs_debug_history (none if $HOME is unset).  Completion is driven by
 * the command table: the first word completes to command names; later
 * words complete according to the capitalised word at the same place in the
 * command's argument synopsis (PATH/DIR/INUM: names in the image, read with
 * bfs_fs_readdir from the current directory; BTREE; FIELD; TYPE; COMMAND;
 * HOSTFILE/HOSTDIR: files on the host).
 *
 * libreadline is loaded when the shell starts instead of linked: its and
 * libtinfo's relocated pages cost every other subcommand (fsck) about
 * 0.3 MB of RSS for nothing (doc/benchmarks.md).  Without it the shell
 * reads commands as -f - does.
 */
#include "debug.h"

#include <bfs/btree.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#define HISTORY_FILE	".bfs_debug_history"
#define HISTORY_MAX	1000

static struct dbg *tty_dbg;	/* readline's callbacks take no context */

/* what the shell uses of libreadline: functions, and variables by address */
static struct {
	__typeof__(readline) *readline;
	__typeof__(add_history) *add_history;
	__typeof__(using_history) *using_history;
	__typeof__(stifle_history) *stifle_history;
	__typeof__(read_history) *read_history;
	__typeof__(write_history) *write_history;
	__typeof__(append_history) *append_history;
	__typeof__(history_truncate_file) *history_truncate_file;
	__typeof__(rl_completion_matches) *completion_matches;
	__typeof__(rl_line_buffer) *line_buffer;
	__typeof__(rl_attempted_completion_over) *attempted_completion_over;
	__typeof__(rl_completion_append_character) *completion_append_character;
	__typeof__(rl_readline_name) *readline_name;
	__typeof__(rl_attempted_completion_function) *attempted_completion_function;
	__typeof__(rl_basic_word_break_characters) *basic_word_break_characters;
	__typeof__(rl_completer_word_break_characters) *completer_word_break_characters;
} rl;

#define RL_SYM(field, name)	{ #name, (void **)&rl.field }

static const struct {
	const char *name;
	void **slot;
} rl_syms[] = {
	RL_SYM(readline, readline),
	RL_SYM(add_history, add_history),
	RL_SYM(using_history, using_history),
	RL_SYM(stifle_history, stifle_history),
	RL_SYM(read_history, read_history),
	RL_SYM(write_history, write_history),
	RL_SYM(append_history, append_history),
	RL_SYM(history_truncate_file, history_truncate_file),
	RL_SYM(completion_matches, rl_completion_matches),
	RL_SYM(line_buffer, rl_line_buffer),
	RL_SYM(attempted_completion_over, rl_attempted_completion_over),
	RL_SYM(completion_append_character, rl_completion_append_character),
	RL_SYM(readline_name, rl_readline_name),
	RL_SYM(attempted_completion_function, rl_attempted_completion_function),
	RL_SYM(basic_word_break_characters, rl_basic_word_break_characters),
	RL_SYM(completer_word_break_characters, rl_completer_word_break_characters),
};

bool dbg_readline_load(void)
{
	static const char *const sonames[] = { "libreadline.so.8", "libreadline.so" };
	static int loaded;	/* 0 not tried, 1 loaded, -1 missing */
	void *h = NULL;
	size_t i;

	if (loaded)
		return loaded > 0;
	loaded = -1;
	for (i = 0; !h && i < ARRAY_SIZE(sonames); i++)
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return false;
	for (i = 0; i < ARRAY_SIZE(rl_syms); i++) {
		*rl_syms[i].slot = dlsym(h, rl_syms[i].name);
		if (!*rl_syms[i].slot) {
			dlclose(h);
			return false;
		}
	}
	loaded = 1;
	return true;
}

/* ---- candidate lists ---- */

static char **cands;		/* what the generator offers, NULL terminated */

static void cands_free(void)
{
	size_t i;

	for (i = 0; cands && cands[i]; i++)
		free(cands[i]);
	free(cands);
	cands = NULL;
}

static void cands_from_words(const char *const *words)
{
	size_t n = 0, i;

	while (words[n])
		n++;
	cands = calloc(n + 1, sizeof(*cands));
	for (i = 0; cands && i < n; i++)
		cands[i] = strdup(words[i]);
}

static char *cands_gen(const char *text, int state)
{
	static size_t i, len;

	if (!state) {
		i = 0;
		len = strlen(text);
	}
	while (cands && cands[i]) {
		const char *w = cands[i++];

		if (w && !strncmp(w, text, len))
			return strdup(w);
	}
	return NULL;
}

static void cands_commands(void)
{
	size_t n = 0, i;

	while (dbg_cmds[n].name)
		n++;
	cands = calloc(n + 1, sizeof(*cands));
	for (i = 0; cands && i < n; i++)
		cands[i] = strdup(dbg_cmds[i].name);
}

static void cands_key_types(void)
{
	size_t n = 0;
	unsigned t;

	cands = calloc(BFS_KEY_TYPE_NR + 1, sizeof(*cands));
	for (t = 0; cands && t < BFS_KEY_TYPE_NR; t++)
		if (bfs_bkey_type_ops(t))
			cands[n++] = strdup(bfs_bkey_type_name(t));
}

/* names in the image: "dir/part" + every entry of dir/ */
static void cands_paths(struct dbg *d, const char *text)
{
	const char *slash = strrchr(text, '/');
	char dir[DBG_PATH_MAX];
	struct bfs_stat st;
	size_t dlen = slash ? (size_t)(slash - text) + 1 : 0, i;
	char **names;
	u64 ino = d->cwd;

	if (!d->fs || dlen >= sizeof(dir))
		return;
	if (dlen) {
		memcpy(dir, text, dlen);
		dir[dlen] = '\0';
		if (dbg_resolve(d, dir, &ino, &st) || !S_ISDIR(st.mode))
			return;
	}
	names = dbg_list_dir(d, ino, true);
	for (i = 0; names && names[i]; i++) {
		char *full;

		if (asprintf(&full, "%.*s%s", (int)dlen, text, names[i]) >= 0) {
			free(names[i]);
			names[i] = full;
		}
	}
	cands = names;
}

/* ---- which kind of word is being completed ---- */

/* the @idx-th positional word of @c's synopsis, brackets stripped, into @out */
static bool synopsis_word(const struct dbg_cmd *c, int idx, char *out, size_t size)
{
	const char *p = c->args;
	char last[64] = "";
	int n = 0;

	while (*p) {
		char w[64];
		size_t len = 0;

		while (*p == ' ')
			p++;
		while (*p && *p != ' ') {
			if (*p != '[' && *p != ']' && len + 1 < sizeof(w))
				w[len++] = *p;
			p++;
		}
		w[len] = '\0';
		if (!len || w[0] == '-')
			continue;	/* options do not count as positions */
		snprintf(last, sizeof(last), "%s", w);
		if (n++ == idx) {
			snprintf(out, size, "%s", w);
			return true;
		}
	}
	/* "KEY..." repeats */
	if (strstr(last, "...")) {
		snprintf(out, size, "%s", last);
		return true;
	}
	return false;
}

static char **complete(const char *text, int start, int end)
{
	struct dbg *d = tty_dbg;
	const struct dbg_cmd *c;
	char first[64], kind[64];
	const char *p = (*rl.line_buffer);
	int words = 0, opts = 0;
	char **m;

	*rl.attempted_completion_over = 1;
	*rl.completion_append_character = ' ';
	cands_free();
	first[0] = '\0';
	/* count the words before the one being completed */
	while (p < (*rl.line_buffer) + start) {
		const char *w;

		while (p < (*rl.line_buffer) + start && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= (*rl.line_buffer) + start)
			break;
		w = p;
		while (p < (*rl.line_buffer) + start && *p != ' ' && *p != '\t')
			p++;
		if (!words)
			snprintf(first, sizeof(first), "%.*s", (int)(p - w), w);
		else if (*w == '-')
			opts++;
		words++;
	}
	if (!words) {
		cands_commands();
		return rl.completion_matches(text, cands_gen);
	}
	c = dbg_find_cmd(first);
	if (!c || !synopsis_word(c, words - 1 - opts, kind, sizeof(kind)))
		return NULL;
	if (strstr(kind, "HOST")) {
		*rl.attempted_completion_over = 0;	/* readline's own file names */
		return NULL;
	}
	if (strstr(kind, "PATH") || strstr(kind, "DIR") || strstr(kind, "INUM"))
		cands_paths(d, text);
	else if (strstr(kind, "BTREE"))
		cands_from_words(dbg_btree_names);
	else if (strstr(kind, "FIELD"))
		cands_from_words(!strcmp(c->name, "set-super") ? dbg_sb_field_names :
				 dbg_inode_fields);
	else if (strstr(kind, "TYPE"))
		cands_key_types();
	else if (strstr(kind, "COMMAND"))
		cands_commands();
	else
		return NULL;
	m = rl.completion_matches(text, cands_gen);
	/* a directory: go on typing inside it, no space */
	if (m && m[0] && !m[1] && *m[0] && m[0][strlen(m[0]) - 1] == '/')
		*rl.completion_append_character = '\0';
	return m;
}

/* ---- history ---- */

static char *history_path(void)
{
	const char *home = getenv("HOME");
	char *path;

	if (!home || !*home)
		return NULL;
	if (asprintf(&path, "%s/%s", home, HISTORY_FILE) < 0)
		return NULL;
	return path;
}

static void history_save(const char *path, int added)
{
	if (!path || !added)
		return;
	if (access(path, F_OK) ? rl.write_history(path) : rl.append_history(added, path))
		return;
	rl.history_truncate_file(path, HISTORY_MAX);
}

int dbg_interactive(struct dbg *d)
{
	char *path = history_path(), *line;
	int failed = 0, added = 0;

	tty_dbg = d;
	*rl.readline_name = "bfs-debug";
	*rl.attempted_completion_function = complete;
	*rl.basic_word_break_characters = " \t";
	*rl.completer_word_break_characters = " \t";
	rl.using_history();
	rl.stifle_history(HISTORY_MAX);
	if (path)
		rl.read_history(path);

	while ((line = rl.readline("bfs: "))) {
		char *s = line;
		size_t n;
		int ret;

		while (*s == ' ' || *s == '\t')
			s++;
		/* completion leaves a blank at the end: keep the history clean */
		n = strlen(s);
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			s[--n] = '\0';
		if (!*s || *s == '#') {
			free(line);
			continue;
		}
		rl.add_history(s);
		added++;
		ret = dbg_run_line(d, s);
		free(line);
		if (ret == DBG_QUIT)
			break;
		if (ret)
			failed = 1;
	}
	if (!line)
		putchar('\n');	/* end of input: leave the terminal on a fresh line */
	history_save(path, added);
	free(path);
	cands_free();
	return failed;
}
