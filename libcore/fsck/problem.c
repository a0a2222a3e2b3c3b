// SPDX-License-Identifier: MIT
/*
 * The problem table and the one function that answers every "fix it?"
 * according to the mode: -n never, -y always, -p only for problems marked
 * safe to preen (otherwise preen stops and the exit code asks for a manual
 * run), interactive through the ask hook.
 */
#include <bfs/fsck.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct bfs_problem {
	const char *name;
	const char *message;
	const char *prompt;
	unsigned flags;
};

#define PREEN	BFS_PR_PREEN
#define LOSS	BFS_PR_LOSS
#define FATAL	BFS_PR_FATAL
#define NOFIX	BFS_PR_NOFIX
static const struct bfs_problem problems[PR_NR] = {
#define x(n, fl, msg, pr) [PR_##n] = { #n, msg, pr, fl },
	BFS_FSCK_PROBLEMS(x)
#undef x
};
#undef PREEN
#undef LOSS
#undef FATAL
#undef NOFIX

static const struct bfs_problem *problem(enum bfs_problem_code code)
{
	static const struct bfs_problem unknown = { "UNKNOWN", "unknown problem", "Ignore",
						    BFS_PR_NOFIX };

	return (unsigned)code < PR_NR ? &problems[code] : &unknown;
}

const char *bfs_problem_name(enum bfs_problem_code code) { return problem(code)->name; }
const char *bfs_problem_message(enum bfs_problem_code code) { return problem(code)->message; }
const char *bfs_problem_prompt(enum bfs_problem_code code) { return problem(code)->prompt; }
unsigned bfs_problem_flags(enum bfs_problem_code code) { return problem(code)->flags; }

void bfs_fsck_printf(struct bfs_fsck *f, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (f->print)
		f->print(f->ctx, line);
}

bool bfs_fsck_cancelled(struct bfs_fsck *f)
{
	if (f->cancel && *f->cancel)
		f->cancelled = true;
	return f->cancelled;
}

void bfs_fsck_progress(struct bfs_fsck *f, u64 cur, u64 max)
{
	if (f->progress)
		f->progress(f->ctx, f->pass, BFS_MIN(cur, max), max);
}

static void report(struct bfs_fsck *f, enum bfs_problem_code code, const struct bfs_fsck_loc *loc,
		   const char *detail, bool fixed, bool failed)
{
	const struct bfs_problem *p = problem(code);
	struct bfs_fsck_report r = {
		.code = code, .pass = f->pass, .name = p->name, .message = p->message, .detail = detail,
		.flags = p->flags, .loc = loc ? *loc : BFS_FSCK_LOC_NONE,
		.fixed = fixed, .repair_failed = failed,
	};

	if (f->report)
		f->report(f->ctx, &r);
}

static bool decide(struct bfs_fsck *f, enum bfs_problem_code code, const struct bfs_fsck_loc *loc,
		   const char *detail)
{
	const struct bfs_problem *p = problem(code);
	bool fix;

	f->nr_problems++;
	f->last_code = code;
	f->last_loc = loc ? *loc : BFS_FSCK_LOC_NONE;
	bfs_fsck_printf(f, "%s: %s", p->message, detail);
	if (p->flags & BFS_PR_NOFIX) {
		bfs_fsck_printf(f, "(no repair is possible: left as it is)");
		f->nr_unfixed++;
		report(f, code, loc, detail, false, false);
		return false;
	}

	if (bfs_fsck_cancelled(f)) {
		/* a repair is never started once the user asked to stop */
		bfs_fsck_printf(f, "%s? no (cancelled)", p->prompt);
		f->nr_unfixed++;
		report(f, code, loc, detail, false, false);
		return false;
	}
	switch (f->mode) {
	case BFS_FSCK_MODE_NO:
		fix = false;
		bfs_fsck_printf(f, "%s? no", p->prompt);
		break;
	case BFS_FSCK_MODE_YES:
		fix = true;
		bfs_fsck_printf(f, "%s? yes", p->prompt);
		break;
	case BFS_FSCK_MODE_PREEN:
		/* once preen has stopped, nothing more is changed (e2fsck exits there) */
		fix = (p->flags & BFS_PR_PREEN) && !f->preen_stopped;
		if (fix)
			bfs_fsck_printf(f, "%s: fixed (preen)", p->prompt);
		else
			f->preen_stopped = true;
		break;
	default:
		fix = f->ask && f->ask(f->ctx, p->prompt);
		break;
	}
	if (fix)
		f->nr_fixed++;
	else
		f->nr_unfixed++;
	report(f, code, loc, detail, fix, false);
	return fix;
}

bool bfs_fix_problem_at(struct bfs_fsck *f, enum bfs_problem_code code,
			const struct bfs_fsck_loc *loc, const char *fmt, ...)
{
	char detail[BFS_FINDING_DETAIL_LEN + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return decide(f, code, loc, detail);
}

bool bfs_fix_problem(struct bfs_fsck *f, enum bfs_problem_code code, const char *fmt, ...)
{
	char detail[BFS_FINDING_DETAIL_LEN + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return decide(f, code, NULL, detail);
}

bool bfs_fix_finding(struct bfs_fsck *f, const struct bfs_finding *fd)
{
	return decide(f, fd->code, &fd->loc, fd->detail);
}

void bfs_fsck_repair_failed(struct bfs_fsck *f, enum bfs_problem_code code, int err)
{
	char detail[256];

	snprintf(detail, sizeof(detail), "repair of '%s' failed: %s", problem(code)->message,
		 strerror(-err));
	bfs_fsck_printf(f, "%s", detail);
	f->nr_fixed--;
	f->nr_unfixed++;
	report(f, code, f->last_code == code ? &f->last_loc : NULL, detail, false, true);
}

void bfs_fsck_list_problems(void (*fn)(void *ctx, enum bfs_problem_code code), void *ctx)
{
	unsigned i;

	for (i = 0; i < PR_NR; i++)
		fn(ctx, (enum bfs_problem_code)i);
}
