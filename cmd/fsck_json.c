// SPDX-License-Identifier: MIT
/* The --json summary of bfs fsck (see fsck_json.h), through cmd/output.c. */
#include "fsck_json.h"

#include <bfs/btree.h>

#include <stdlib.h>
#include <string.h>

#include "output.h"

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void fsck_json_add(struct fsck_json *j, const struct bfs_fsck_report *r)
{
	struct fsck_json_problem *p;

	if (r->repair_failed) {
		/* bfs_fsck_repair_failed(): the problem decided last, with this code */
		for (p = j->v + j->nr; p-- > j->v;) {
			if (p->r.code == r->code && p->r.fixed) {
				p->r.fixed = false;
				p->r.repair_failed = true;
				free(p->repair_error);
				p->repair_error = dup_or_null(r->detail);
				return;
			}
		}
	}
	if (j->nr == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 64;
		struct fsck_json_problem *n = realloc(j->v, cap * sizeof(*n));

		if (!n) {
			j->lost++;
			return;
		}
		j->v = n;
		j->cap = cap;
	}
	p = &j->v[j->nr++];
	*p = (struct fsck_json_problem){ .r = *r };
	p->detail = dup_or_null(r->detail);
	p->path = dup_or_null(r->loc.path);
	p->r.detail = p->detail;
	p->r.loc.path = p->path;
}

static void flags_text(unsigned fl, char *buf, size_t len)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{ BFS_PR_PREEN, "preen" }, { BFS_PR_LOSS, "loss" },
		{ BFS_PR_FATAL, "fatal" }, { BFS_PR_NOFIX, "nofix" },
	};
	size_t i;

	buf[0] = '\0';
	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (fl & names[i].bit)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "",
				 names[i].name);
}

static void location(struct bfs_out *o, const struct bfs_fsck_loc *l)
{
	out_object(o, "location", "Location");
	if (l->btree >= 0)
		out_str(o, "btree", "Btree", "%s", bfs_btree_id_name((unsigned)l->btree));
	if (l->node)
		out_u64(o, "node", "Node", l->node);
	if (l->has_pos) {
		out_object(o, "pos", "Position");
		out_u64(o, "inode", "Inode", l->pos.inode);
		out_u64(o, "offset", "Offset", l->pos.offset);
		out_u64(o, "snapshot", "Snapshot", l->pos.snapshot);
		out_end(o);
	}
	if (l->inode)
		out_u64(o, "inode", "Inode", l->inode);
	if (l->inode && l->offset)
		out_u64(o, "offset", "Offset", l->offset);
	if (l->path)
		out_str(o, "path", "Path", "%s", l->path);
	out_end(o);
}

static void problem(struct bfs_out *o, const struct fsck_json_problem *p)
{
	char fl[64];

	flags_text(p->r.flags, fl, sizeof(fl));
	out_object(o, NULL, NULL);
	out_str(o, "code", "Code", "%s", p->r.name);
	out_u64(o, "pass", "Pass", p->r.pass);
	out_str(o, "message", "Message", "%s", p->r.message);
	out_str(o, "detail", "Detail", "%s", p->detail ? p->detail : "");
	out_str(o, "flags", "Flags", "%s", fl);
	location(o, &p->r.loc);
	out_bool(o, "fixed", "Fixed", p->r.fixed);
	out_bool(o, "repair_failed", "Repair failed", p->r.repair_failed);
	if (p->repair_error)
		out_str(o, "repair_error", "Repair error", "%s", p->repair_error);
	out_end(o);
}

static const char *result_name(int code)
{
	switch (code) {
	case BFS_FSCK_OK:		return "clean";
	case BFS_FSCK_CORRECTED:	return "corrected";
	case BFS_FSCK_UNCORRECTED:	return "uncorrected";
	case BFS_FSCK_USAGE:		return "usage";
	case BFS_FSCK_CANCELED:		return "canceled";
	default:			return "error";
	}
}

/* passes: the ones that ran, with how many problems each found and fixed */
static void passes(struct bfs_out *o, const struct fsck_json *j, const struct fsck_json_run *run)
{
	const char *name;
	unsigned pass;
	size_t i;

	out_array(o, "passes", "Passes");
	for (pass = 1; run->f && (name = bfs_fsck_pass_name(pass)); pass++) {
		unsigned found = 0, fixed = 0;

		for (i = 0; i < j->nr; i++) {
			if (j->v[i].r.pass != pass)
				continue;
			found++;
			fixed += j->v[i].r.fixed;
		}
		out_object(o, NULL, NULL);
		out_u64(o, "pass", "Pass", pass);
		out_str(o, "name", "Name", "%s", name);
		out_bool(o, "ran", "Ran", run->ran && pass <= run->f->pass);
		out_u64(o, "problems", "Problems", found);
		out_u64(o, "fixed", "Fixed", fixed);
		out_end(o);
	}
	out_end(o);
}

void fsck_json_print(FILE *out, const struct fsck_json *j, const struct fsck_json_run *run)
{
	const struct bfs_fsck *f = run->ran ? run->f : NULL;
	struct bfs_out o = { 0 };
	size_t i;

	out_str(&o, "device", "Device", "%s", run->device);
	out_str(&o, "version", "Version", "%s", BFS_VERSION);
	out_str(&o, "mode", "Mode", "%s", run->mode);
	passes(&o, j, run);
	out_object(&o, "counts", "Counts");
	out_u64(&o, "problems", "Problems", f ? f->nr_problems : 0);
	out_u64(&o, "fixed", "Fixed", f ? f->nr_fixed : 0);
	out_u64(&o, "unfixed", "Unfixed", f ? f->nr_unfixed : 0);
	out_u64(&o, "not_recorded", "Not recorded", j->lost);
	out_end(&o);
	out_bool(&o, "preen_stopped", "Preen stopped", f && f->preen_stopped);
	out_array(&o, "problems", "Problems");
	for (i = 0; i < j->nr; i++)
		problem(&o, &j->v[i]);
	out_end(&o);
	if (run->error)
		out_str(&o, "error", "Error", "%s", run->error);
	out_u64(&o, "exit_code", "Exit code", (u64)run->exit_code);
	out_str(&o, "result", "Result", "%s", result_name(run->exit_code));
	out_print(&o, out, true);
	out_free(&o);
}

void fsck_json_free(struct fsck_json *j)
{
	size_t i;

	for (i = 0; i < j->nr; i++) {
		free(j->v[i].detail);
		free(j->v[i].path);
		free(j->v[i].repair_error);
	}
	free(j->v);
	*j = (struct fsck_json){ 0 };
}
