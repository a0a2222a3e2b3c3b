/* SPDX-License-Identifier: MIT */
/*
 * One output path for text and JSON (the btrfs-progs idea): a command
 * describes its data once as rows (JSON key, human label, kind, value) and
 * the same rows render either as aligned "Label: value" text or as JSON, so
 * the two can never disagree about what is shown.
 */
#ifndef BFS_CMD_OUTPUT_H
#define BFS_CMD_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include <bfs/types.h>

enum out_kind {
	OUT_STR,	/* JSON string */
	OUT_U64,	/* JSON number */
	OUT_HEX,	/* JSON string "0x..." */
	OUT_SIZE,	/* bytes: text "256 KiB (262144)", JSON number */
	OUT_TIME,	/* ns since epoch: text UTC time, JSON ISO 8601 string */
	OUT_BOOL,
	OUT_OBJECT,	/* begins a nested object, closed by out_end() */
	OUT_ARRAY,	/* begins an array of objects, closed by out_end() */
	OUT_END,
};

#define OUT_TEXT_ONLY	(1 << 0)
#define OUT_JSON_ONLY	(1 << 1)

struct out_row {
	enum out_kind kind;
	unsigned flags;
	const char *key;
	const char *label;
	u64 num;
	char *str;
	char *note;	/* text-only suffix, e.g. "[match]" */
};

struct bfs_out {
	struct out_row *rows;
	size_t nr, cap;
	unsigned flags;		/* applied to rows added from now on */
};

void out_str(struct bfs_out *o, const char *key, const char *label, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void out_u64(struct bfs_out *o, const char *key, const char *label, u64 v);
void out_hex(struct bfs_out *o, const char *key, const char *label, u64 v);
void out_size(struct bfs_out *o, const char *key, const char *label, u64 bytes);
void out_time(struct bfs_out *o, const char *key, const char *label, u64 ns);
void out_bool(struct bfs_out *o, const char *key, const char *label, bool v);
void out_object(struct bfs_out *o, const char *key, const char *label);
void out_array(struct bfs_out *o, const char *key, const char *label);
void out_end(struct bfs_out *o);
/* attach a text-only note to the last row */
void out_note(struct bfs_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void out_print(const struct bfs_out *o, FILE *f, bool json);
/* @s as a JSON string: valid UTF-8 kept, other bytes become U+FFFD */
void out_json_string(FILE *f, const char *s);
void out_free(struct bfs_out *o);

#endif
