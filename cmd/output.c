// SPDX-License-Identifier: MIT
#include "output.h"
#include "cmd.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LABEL_WIDTH 26

static struct out_row *add(struct bfs_out *o, enum out_kind kind, const char *key,
			   const char *label)
{
	struct out_row *r;

	if (o->nr == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 32;
		o->rows = realloc(o->rows, o->cap * sizeof(*o->rows));
		if (!o->rows) {
			perror("bfs");
			exit(BFS_EXIT_ERROR);
		}
	}
	r = &o->rows[o->nr++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->key = key;
	r->label = label;
	r->flags = o->flags;
	return r;
}

void out_str(struct bfs_out *o, const char *key, const char *label, const char *fmt, ...)
{
	struct out_row *r = add(o, OUT_STR, key, label);
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&r->str, fmt, ap) < 0)
		r->str = NULL;
	va_end(ap);
}

#define OUT_NUM(name, KIND) \
void name(struct bfs_out *o, const char *key, const char *label, u64 v) \
{ \
	add(o, KIND, key, label)->num = v; \
}
OUT_NUM(out_u64, OUT_U64)
OUT_NUM(out_hex, OUT_HEX)
OUT_NUM(out_size, OUT_SIZE)
OUT_NUM(out_time, OUT_TIME)

void out_bool(struct bfs_out *o, const char *key, const char *label, bool v)
{
	add(o, OUT_BOOL, key, label)->num = v;
}

void out_object(struct bfs_out *o, const char *key, const char *label)
{
	add(o, OUT_OBJECT, key, label);
}

void out_array(struct bfs_out *o, const char *key, const char *label)
{
	add(o, OUT_ARRAY, key, label);
}

void out_end(struct bfs_out *o)
{
	add(o, OUT_END, NULL, NULL);
}

void out_note(struct bfs_out *o, const char *fmt, ...)
{
	struct out_row *r = &o->rows[o->nr - 1];
	va_list ap;

	va_start(ap, fmt);
	free(r->note);
	if (vasprintf(&r->note, fmt, ap) < 0)
		r->note = NULL;
	va_end(ap);
}

void out_free(struct bfs_out *o)
{
	size_t i;

	for (i = 0; i < o->nr; i++) {
		free(o->rows[i].str);
		free(o->rows[i].note);
	}
	free(o->rows);
	memset(o, 0, sizeof(*o));
}

/* ---- text ---- */

static void text_value(const struct out_row *r, FILE *f)
{
	char buf[64];

	switch (r->kind) {
	case OUT_STR:
		fputs(r->str ? r->str : "", f);
		break;
	case OUT_U64:
		fprintf(f, "%" PRIu64, r->num);
		break;
	case OUT_HEX:
		fprintf(f, "0x%016" PRIx64, r->num);
		break;
	case OUT_SIZE:
		fprintf(f, "%s", bfs_human_size(r->num, buf));
		if (r->num >= 1024)
			fprintf(f, " (%" PRIu64 ")", r->num);
		break;
	case OUT_TIME:
		fputs(bfs_format_time(r->num, buf), f);
		break;
	case OUT_BOOL:
		fputs(r->num ? "yes" : "no", f);
		break;
	default:
		break;
	}
}

static void print_text(const struct bfs_out *o, FILE *f)
{
	bool unlabelled[32] = { false };
	int depth = 0;
	size_t i;

	for (i = 0; i < o->nr; i++) {
		const struct out_row *r = &o->rows[i];
		int pad;

		if (r->kind == OUT_END) {
			if (unlabelled[depth < 32 ? depth : 31])
				unlabelled[depth < 32 ? depth : 31] = false;
			else
				depth--;
			continue;
		}
		if (r->flags & OUT_JSON_ONLY) {
			/* skip a hidden container with everything in it */
			if (r->kind == OUT_OBJECT || r->kind == OUT_ARRAY) {
				int level = 0;

				for (; i < o->nr; i++) {
					level += o->rows[i].kind == OUT_OBJECT ||
						 o->rows[i].kind == OUT_ARRAY;
					level -= o->rows[i].kind == OUT_END;
					if (!level)
						break;
				}
			}
			continue;
		}
		if (r->kind == OUT_OBJECT || r->kind == OUT_ARRAY) {
			/* array elements are unlabelled objects: no header, no indent */
			if (r->label) {
				fprintf(f, "%*s%s:%s%s\n", depth * 2, "", r->label,
					r->note ? " " : "", r->note ? r->note : "");
				depth++;
			} else {
				unlabelled[depth < 32 ? depth : 31] = true;
			}
			continue;
		}
		pad = LABEL_WIDTH - depth * 2 - (int)strlen(r->label) - 1;
		fprintf(f, "%*s%s:%*s ", depth * 2, "", r->label, pad > 0 ? pad : 0, "");
		text_value(r, f);
		/* an empty string shows only its note: "Label:   (none)" */
		if (r->note)
			fprintf(f, "%s%s", r->kind == OUT_STR && r->str && !*r->str ? "" : " ", r->note);
		fputc('\n', f);
	}
}

/* ---- JSON ---- */

/* length of the valid UTF-8 sequence at @p, or 0 */
static size_t utf8_len(const unsigned char *p)
{
	size_t n, i;
	u32 cp;

	if (*p < 0x80)
		return 1;
	if ((*p & 0xe0) == 0xc0)
		n = 2, cp = *p & 0x1f;
	else if ((*p & 0xf0) == 0xe0)
		n = 3, cp = *p & 0x0f;
	else if ((*p & 0xf8) == 0xf0)
		n = 4, cp = *p & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* no overlong forms, surrogates or values past U+10FFFF */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void out_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	fputc('"', f);
	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else if (n)
			fwrite(p, 1, n, f);
		else
			fputs("\\ufffd", f);	/* not UTF-8: JSON must stay valid */
		p += n ? n : 1;
	}
	fputc('"', f);
}

static void json_value(const struct out_row *r, FILE *f)
{
	char buf[64];
	time_t t;
	struct tm tm;

	switch (r->kind) {
	case OUT_STR:
		out_json_string(f, r->str);
		break;
	case OUT_U64:
	case OUT_SIZE:
		fprintf(f, "%" PRIu64, r->num);
		break;
	case OUT_HEX:
		fprintf(f, "\"0x%016" PRIx64 "\"", r->num);
		break;
	case OUT_TIME:
		t = (time_t)(r->num / 1000000000ULL);
		if (gmtime_r(&t, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm))
			out_json_string(f, buf);
		else
			fputs("null", f);
		break;
	case OUT_BOOL:
		fputs(r->num ? "true" : "false", f);
		break;
	default:
		break;
	}
}

static void print_json(const struct bfs_out *o, FILE *f)
{
	bool in_array[32] = { false }, first = true;
	int depth = 0;
	size_t i;

	fputc('{', f);
	for (i = 0; i < o->nr; i++) {
		const struct out_row *r = &o->rows[i];

		if (r->kind == OUT_END) {
			fprintf(f, "\n%*s%c", depth * 2, "", in_array[depth] ? ']' : '}');
			depth--;
			first = false;
			continue;
		}
		if ((r->flags & OUT_TEXT_ONLY) && r->kind != OUT_OBJECT && r->kind != OUT_ARRAY)
			continue;
		fprintf(f, "%s\n%*s", first ? "" : ",", (depth + 1) * 2, "");
		first = false;
		if (!in_array[depth]) {
			out_json_string(f, r->key);
			fputs(": ", f);
		}
		if (r->kind == OUT_OBJECT || r->kind == OUT_ARRAY) {
			fputc(r->kind == OUT_ARRAY ? '[' : '{', f);
			if (depth + 1 < (int)ARRAY_SIZE(in_array))
				depth++;
			in_array[depth] = r->kind == OUT_ARRAY;
			first = true;
			continue;
		}
		json_value(r, f);
	}
	fputs("\n}\n", f);
}

void out_print(const struct bfs_out *o, FILE *f, bool json)
{
	if (json)
		print_json(o, f);
	else
		print_text(o, f);
}
