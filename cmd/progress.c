// SPDX-License-Identifier: MIT
/*
 * The progress bar and the -C FD progress lines (see progress.h).  Output
 * goes through write(2) on the descriptor, after flushing stdio, so the bar
 * and printf() output on the same terminal come out in order.
 */
#include "progress.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BAR_WIDTH	30
#define BAR_REDRAW_NS	100000000ull	/* ten times a second at most */

static u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (u64)ts.tv_sec * 1000000000ull + (u64)ts.tv_nsec;
}

/* a reader that went away (fsck(8) closed its pipe) just stops the progress */
static void put(struct bfs_progress *p, const char *s, size_t len)
{
	fflush(stdout);
	fflush(stderr);
	while (len) {
		ssize_t n = write(p->fd, s, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			p->kind = BFS_PROGRESS_OFF;
			return;
		}
		s += n;
		len -= (size_t)n;
	}
}

void bfs_progress_init_bar(struct bfs_progress *p, int fd, const char *label)
{
	*p = (struct bfs_progress){ .fd = fd, .label = label };
	if (fd >= 0 && isatty(fd) && !getenv("BFS_NO_PROGRESS"))
		p->kind = BFS_PROGRESS_BAR;
}

void bfs_progress_init_lines(struct bfs_progress *p, int fd, const char *label)
{
	/* a reader closing its pipe must not kill a repair half way: put() stops instead */
	signal(SIGPIPE, SIG_IGN);
	*p = (struct bfs_progress){ .fd = fd, .label = label,
				    .kind = fd >= 0 ? BFS_PROGRESS_LINES : BFS_PROGRESS_OFF };
}

void bfs_progress_init_cmd(struct bfs_progress *p, int fd, const char *label)
{
	if (fd >= 0)
		bfs_progress_init_lines(p, fd, label);
	else
		bfs_progress_init_bar(p, STDOUT_FILENO, label);
}

static void draw_bar(struct bfs_progress *p, const char *name, unsigned permille)
{
	char line[512], bar[BAR_WIDTH + 1];
	unsigned fill = permille * BAR_WIDTH / 1000;
	int len;

	memset(bar, '=', fill);
	memset(bar + fill, ' ', BAR_WIDTH - fill);
	bar[BAR_WIDTH] = '\0';
	len = snprintf(line, sizeof(line), "\r%s: %s |%s| %5.1f%%", p->label, name ? name : "",
		       bar, permille / 10.0);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(line))
		len = sizeof(line) - 1;
	/* blank out what is left of a longer previous line */
	while ((size_t)len - 1 < p->drawn_len && (size_t)len < sizeof(line) - 1)
		line[len++] = ' ';
	put(p, line, (size_t)len);
	p->drawn_len = (size_t)len - 1;
	p->drawn_ns = now_ns();
}

void bfs_progress_update(struct bfs_progress *p, unsigned stage, const char *name,
			 u64 cur, u64 max)
{
	unsigned permille;
	bool new_stage;
	char line[256];
	int len;

	if (p->kind == BFS_PROGRESS_OFF || !max)
		return;
	permille = (unsigned)((cur >= max ? 1000 : (double)cur * 1000 / (double)max));
	new_stage = !p->started || stage != p->stage;
	if (!new_stage && permille == p->permille)
		return;
	if (p->kind == BFS_PROGRESS_BAR) {
		if (new_stage || permille == 1000 || now_ns() - p->drawn_ns >= BAR_REDRAW_NS)
			draw_bar(p, name, permille);
		else
			return;	/* not drawn: the next update compares with what is shown */
	} else {
		len = snprintf(line, sizeof(line), "%u %llu %llu %s\n", stage,
			       (unsigned long long)BFS_MIN(cur, max), (unsigned long long)max,
			       p->label);
		if (len > 0)
			put(p, line, BFS_MIN((size_t)len, sizeof(line) - 1));
	}
	p->stage = stage;
	p->started = true;
	p->permille = permille;
}

void bfs_progress_clear(struct bfs_progress *p)
{
	char line[512];
	size_t n;

	if (p->kind != BFS_PROGRESS_BAR || !p->drawn_len)
		return;
	n = BFS_MIN(p->drawn_len, sizeof(line) - 2);
	line[0] = '\r';
	memset(line + 1, ' ', n);
	line[n + 1] = '\r';
	put(p, line, n + 2);
	p->drawn_len = 0;
	/* redraw at the next update, whatever its value */
	p->started = false;
}

void bfs_progress_done(struct bfs_progress *p)
{
	bfs_progress_clear(p);
	p->kind = BFS_PROGRESS_OFF;
}
