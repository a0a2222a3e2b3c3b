// SPDX-License-Identifier: MIT
/*
 * The mount process's side of the control channel (mount_control.h,
 * doc/control.md): bfs resize and bfs set-option on the mounted filesystem,
 * and the errors= behaviour when an operation meets damaged metadata.
 *
 * Requests are served one at a time (a grow and a settings change must not
 * interleave their superblock copies; the remount attribute is a separate
 * path that touches only the mount's own settings).  The answer always
 * goes back in the request structure, with the result inside it, because
 * an ioctl that fails carries no data back.
 */
#include "cmd.h"
#include "fuse_ops.h"
#include "mount_control.h"
#include "sb_options.h"

#include <bfs/log.h>
#include <bfs/online.h>
#include <bfs/super.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bfs_mutex control_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((format(printf, 2, 3)))
static void say(struct bfs_ctl_req *r, const char *fmt, ...)
{
	size_t used = strnlen(r->msg, sizeof(r->msg));
	va_list ap;

	if (used >= sizeof(r->msg) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(r->msg + used, sizeof(r->msg) - used, fmt, ap);
	va_end(ap);
}

static void control_grow(struct bfs_fuse *f, struct bfs_ctl_req *r)
{
	char err[BFS_ERR_LEN];
	u64 old;

	if (r->flags & BFS_CTL_DRY_RUN) {
		r->result = -EOPNOTSUPP;
		say(r, "a dry run of an online grow is not supported");
		return;
	}
	if (f->read_only) {
		r->result = -EROFS;
		say(r, "the filesystem is mounted read-only");
		return;
	}
	r->result = bfs_fs_grow(f->fs, r->size, &old, err);
	r->old_size = old;
	r->size = le64_to_cpu(bfs_core_sb(bfs_fs_core(f->fs))->dev_size);
	if (r->result && r->result != -EALREADY)
		say(r, "%s", err);
	else if (!r->result)
		bfs_info("online grow from %" PRIu64 " to %" PRIu64 " bytes", old, r->size);
}

/* ---- set-option ---- */

struct set_ctx {
	struct bfs_ctl_req *r;
	const char *val[BFS_SBOPT_NR];	/* NULL: not changed */
	unsigned changed;
};

/* one line per option, 'OPTION: OLD -> NEW', as set-option prints offline */
static int set_sb(void *ctx, struct bfs_dev *dev, const struct bfs_sb *cur, struct bfs_sb *next)
{
	struct set_ctx *s = ctx;
	char err[BFS_ERR_LEN], before[80], after[80];
	unsigned i;
	int ret;

	(void)cur;
	for (i = 0; i < BFS_SBOPT_NR; i++) {
		if (!s->val[i])
			continue;
		bfs_sbopt_describe(i, next, before);
		ret = bfs_sbopt_apply(next, i, s->val[i], err);
		if (ret) {
			say(s->r, "%s", err);
			return ret;
		}
		bfs_sbopt_describe(i, next, after);
		s->changed += !!strcmp(before, after);
		say(s->r, "%s: %s -> %s%s\n", bfs_sbopt_name(i), before, after,
		    strcmp(before, after) ? "" : " (unchanged)");
	}
	next->csum = cpu_to_le64(bfs_sb_csum(next));
	if (bfs_sb_validate(next, BFS_SB_MAX_BYTES, bfs_dev_size(dev), err)) {
		say(s->r, "the new superblock would be invalid (%s); nothing changed", err);
		return -EINVAL;
	}
	if ((s->r->flags & BFS_CTL_DRY_RUN) || !s->changed)
		return -ECANCELED;	/* nothing to write: keep what is in memory */
	ret = bfs_sb_write(dev, next);
	if (ret)
		say(s->r, "writing the superblock failed: %s (the filesystem has either the old "
		    "or the new settings; see 'bfs show-super')", strerror(-ret));
	return ret;
}

/* what the running mount does differently now (the superblock has the new values) */
static int apply_live(struct bfs_fuse *f, const struct set_ctx *s)
{
	const struct bfs_sb *sb = bfs_core_sb(bfs_fs_core(f->fs));

	if (s->val[BFS_SBOPT_ERRORS] && f->errors_set)
		say(s->r, "(this mount keeps errors=%s, its mount option)\n",
		    bfs_errors_name(f->errors));
	else if (s->val[BFS_SBOPT_ERRORS])
		f->errors = bfs_sb_errors(sb);
	if (s->val[BFS_SBOPT_COMMIT] && f->commit_secs)
		say(s->r, "(this mount keeps commit=%u, its mount option)\n", f->commit_secs);
	else if (s->val[BFS_SBOPT_COMMIT])
		return bfs_fs_set_commit_interval(f->fs, bfs_fs_commit_default_ms(f->fs,
						  1000 * BFS_MOUNT_COMMIT_DEFAULT));
	return 0;
}

static void control_set(struct bfs_fuse *f, struct bfs_ctl_req *r)
{
	struct set_ctx s = { .r = r };
	const char *p = r->args, *end = r->args + sizeof(r->args);
	int ret;

	while (p < end && *p) {
		const char *eq = memchr(p, '=', strnlen(p, (size_t)(end - p)));
		int o = eq ? bfs_sbopt_find(p, (size_t)(eq - p)) : -1;
		size_t len = strnlen(p, (size_t)(end - p));

		if (p + len >= end || o < 0 || s.val[o]) {
			r->result = -EINVAL;
			say(r, "bad request: '%.*s'", (int)len, p);
			return;
		}
		if (!bfs_sbopts[o].live) {
			r->result = -EBUSY;
			say(r, "%s cannot change while the filesystem is mounted; unmount it "
			    "first", bfs_sbopt_name(o));
			return;
		}
		s.val[o] = eq + 1;
		p += len + 1;
	}
	if (f->read_only) {
		r->result = -EROFS;
		say(r, "the filesystem is mounted read-only");
		return;
	}
	ret = bfs_fs_sb_update(f->fs, set_sb, &s);
	if (ret == -ECANCELED) {
		say(r, "%s\n", (r->flags & BFS_CTL_DRY_RUN) ? "dry run: nothing written" :
		    "nothing to change");
		ret = 0;
	} else if (!ret) {
		ret = apply_live(f, &s);
		if (ret)
			say(r, "the new commit interval did not take effect: %s", strerror(-ret));
	}
	r->result = ret;
}

void bfs_mount_control(fuse_req_t req, struct bfs_fuse *f, const void *in, size_t in_size,
		       size_t out_size)
{
	struct bfs_ctl_req r;

	if (fuse_req_ctx(req)->uid != 0) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (in_size != sizeof(r) || out_size != sizeof(r)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memcpy(&r, in, sizeof(r));
	if (r.magic != BFS_CTL_MAGIC) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	memset(r.msg, 0, sizeof(r.msg));
	r.result = 0;
	bfs_mutex_lock(&control_lock);
	if (!f->fs) {
		r.result = -ESHUTDOWN;
	} else if (r.version != BFS_CTL_VERSION) {
		r.result = -EPROTONOSUPPORT;
		say(&r, "this mount speaks control version %u, the tool %u", BFS_CTL_VERSION,
		    r.version);
	} else if (r.op == BFS_CTL_GROW) {
		control_grow(f, &r);
	} else if (r.op == BFS_CTL_SET) {
		control_set(f, &r);
	} else {
		r.result = -EPROTONOSUPPORT;
		say(&r, "unknown request %u", r.op);
	}
	bfs_mutex_unlock(&control_lock);
	fuse_reply_ioctl(req, 0, &r, sizeof(r));
}

/* ---- errors= ---- */

void bfs_mount_on_error(struct bfs_fuse *f, int err, const char *op)
{
	struct bfs_fs *fs = f->fs;
	int stopped;

	if (!fs || !err)
		return;
	stopped = bfs_fs_error(fs);	/* a metadata write failed, or writes were stopped */
	if (err != -EUCLEAN && !stopped)
		return;			/* an ordinary failure */
	if (f->errors == BFS_ERRORS_CONTINUE && !stopped) {
		bfs_err("%s failed: %s (errors=continue)", op, strerror(-err));
		return;
	}
	if (__atomic_exchange_n(&f->errors_seen, true, __ATOMIC_ACQ_REL))
		return;			/* acted on the first one already */
	switch (f->errors) {
	case BFS_ERRORS_CONTINUE:
		bfs_err("%s failed: %s; writes are refused since a metadata write failed: "
			"unmount and run 'bfs fsck'", op, strerror(-err));
		return;
	case BFS_ERRORS_RO:
		bfs_err("%s failed: %s; the filesystem is read-only from now on "
			"(errors=remount-ro): unmount it and run 'bfs fsck'", op, strerror(-err));
		f->read_only = true;
		bfs_fs_stop_writes(fs, err, "errors=remount-ro");
		return;
	case BFS_ERRORS_PANIC:
		bfs_err("%s failed: %s; stopping the filesystem (errors=panic): run 'bfs fsck'",
			op, strerror(-err));
		bfs_fs_stop_writes(fs, err, "errors=panic");
		/*
		 * The request loop ends as on SIGTERM: unmount, close (writing
		 * nothing), exit.  Sent to the process, not raised in this worker
		 * thread: the main thread, waiting for the loop to end, must wake.
		 */
		kill(getpid(), SIGTERM);
		return;
	}
}
