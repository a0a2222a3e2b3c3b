// SPDX-License-Identifier: MIT
/*
 * bfs mount: serve a bfs filesystem through FUSE (low-level API, several
 * threads), and mount.bcowfs, the same thing called the way mount(8) calls
 * its helpers.
 *
 * Order of events, chosen so that every error reaches the terminal and the
 * exit status: fork (unless -f), then in the child open the device
 * (exclusively unless ro), open the filesystem, create the FUSE session and
 * mount it; only then does the child tell the waiting parent "ready"
 * through a pipe, detach from the terminal, and serve requests.  The fork
 * comes first because the filesystem layer may run threads, which a fork
 * after bfs_fs_open() would lose.  The parent exits with the child's
 * status.
 *
 * The end: umount(8), fusermount3 -u, or SIGTERM / SIGINT / SIGHUP stop
 * the request loop; the mount is then removed and the filesystem closed
 * cleanly (bfs_fs_close), so the next mount needs no journal replay.
 */
#include "cmd.h"
#include "fuse_ops.h"
#include "fuse_uring.h"
#include "fuse_wire.h"

#include <bfs/core.h>
#include <bfs/log.h>
#include <bfs/probe.h>
#include <bfs/super.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

/* mount(8)'s exit status for "mount failure" (mount.bcowfs only) */
#define MOUNT_EX_FAIL	32

struct mount_run {
	const char	*who;		/* "bfs mount" or "mount.bcowfs": message prefix */
	int		fail;		/* exit status on failure */
	char		device[PATH_MAX];
	char		mountpoint[PATH_MAX];
	struct bfs_mount_opts opts;
	bool		foreground;
	bool		verbose;
	bool		blkdev;		/* fuseblk: the kernel holds the device (root only) */
	int		ready_fd;	/* pipe to the waiting parent, or -1 */
	struct bfs_dev	*dev;
	struct bfs_fs	*fs;
	struct fuse_session *se;
	struct bfs_fuse	fuse;
	int		close_status;	/* BFS_EXIT_ERROR if closing failed */
};

__attribute__((format(printf, 2, 3)))
static int run_error(const struct mount_run *m, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", m->who);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return m->fail;
}

/* ---- once detached, libcore's messages go to syslog ---- */

static void log_syslog(enum bfs_log_level level, const char *msg, void *ctx)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

	if (level == BFS_LOG_DEBUG && !getenv("BFS_DEBUG"))
		return;
	syslog(prio[level], "%s", msg);
}

/* ---- daemon: parent waits for the child's "ready" ---- */

/* returns in the child (or with -f); the parent exits here */
static int start_daemon(struct mount_run *m)
{
	int fds[2], status;
	unsigned char st;
	pid_t pid;
	ssize_t n;

	m->ready_fd = -1;
	if (m->foreground)
		return 0;
	if (pipe2(fds, O_CLOEXEC))
		return run_error(m, "cannot create a pipe: %s", strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return run_error(m, "cannot fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		m->ready_fd = fds[1];
		return 0;
	}
	close(fds[1]);
	do
		n = read(fds[0], &st, 1);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		exit(st);
	/* the child died before it could report */
	if (waitpid(pid, &status, 0) == pid && WIFSIGNALED(status))
		run_error(m, "mount process killed by signal %d", WTERMSIG(status));
	exit(m->fail);
}

/* tell the parent how it went; on success detach from the terminal */
static void report_ready(struct mount_run *m, int status)
{
	unsigned char st = (unsigned char)status;
	int null;

	if (m->ready_fd < 0)
		return;
	if (!status) {
		/*
		 * Only now: until the mount is ready, a Ctrl-C on the terminal
		 * stops the child as well as the waiting parent.
		 */
		setsid();
		openlog("bfs-mount", LOG_PID, LOG_DAEMON);
		bfs_log_set_hook(log_syslog, NULL);
		null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			if (null > STDERR_FILENO)
				close(null);
		}
		if (chdir("/")) {
			/* nothing depends on the working directory */
		}
	}
	if (write(m->ready_fd, &st, 1) != 1) {
		/* the parent is gone: nobody to tell */
	}
	close(m->ready_fd);
	m->ready_fd = -1;
}

/* ---- opening the filesystem ---- */

static int check_not_mounted(struct mount_run *m)
{
	char where[PATH_MAX + 64];
	int ret;

	ret = bfs_check_mounted(m->device, where, sizeof(where));
	if (ret > 0)
		return run_error(m, "'%s' is already in use: %s", m->device, where);
	return 0;
}

/*
 * umount(8) of an image file returns once the kernel has detached the
 * mount, a moment before the old mount process has written its last blocks
 * and released the image, so "umount; mount" (a script, an admin, xfstests'
 * cycle mount) found the image busy.  A locked image that no mount lists is
 * most likely such a process closing it: wait for that, a bounded time,
 * then it is "in use" as before (a bfs fsck holding it also ends that way).
 */
#define RELEASE_WAIT_NS		(20ULL * 1000 * 1000 * 1000)

/*
 * A blocking wait for the lock (bfs_dev_open_wait(): no polling), which
 * returns as the holder lets go.  Mounted meanwhile (by someone else): in
 * use, no waiting.  A mount that someone else makes during the wait holds
 * the lock, so that wait runs out and ends "in use" too.
 */
static int open_device_released(struct mount_run *m, unsigned flags)
{
	char where[PATH_MAX + 64];

	if (bfs_check_mounted(m->device, where, sizeof(where)) > 0)
		return -EBUSY;
	return bfs_dev_open_wait(m->device, flags, RELEASE_WAIT_NS, &m->dev);
}

static int open_device(struct mount_run *m)
{
	unsigned flags = m->opts.read_only ? BFS_DEV_RDONLY : BFS_DEV_EXCL;
	int ret;

	/*
	 * fuseblk: the mount claims the device exclusively in the kernel
	 * (keeping mkfs, fsck and other mounts out, as for any block device
	 * filesystem); an O_EXCL open of ours would make that claim fail.
	 */
	if (m->blkdev && !m->opts.read_only)
		flags = 0;
	ret = bfs_dev_open(m->device, flags, &m->dev);
	if (ret == -EBUSY)
		ret = open_device_released(m, flags);
	if (ret == -EBUSY)
		return run_error(m, "'%s' is in use by another bfs command or mount", m->device);
	if (ret == -EACCES || ret == -EROFS || ret == -EPERM)
		return run_error(m, "cannot open '%s' for writing: %s (mount it with -o ro?)",
				 m->device, strerror(-ret));
	if (ret)
		return run_error(m, "cannot open '%s': %s", m->device, strerror(-ret));
	return 0;
}

/* a clear "not a bfs filesystem" before the filesystem layer gets to it */
static int check_super(struct mount_run *m)
{
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];
	int ret;

	ret = bfs_sb_read(m->dev, &h, err);
	if (ret == -ENODATA)
		return run_error(m, "'%s' is not a bfs filesystem: %s", m->device, err);
	if (ret)
		return run_error(m, "'%s': %s", m->device, err);
	/* a backup in use is said by the core open (the log hook) */
	bfs_sb_handle_release(&h);
	return 0;
}

/* close the filesystem cleanly and the device (from DESTROY, or finish()) */
static void close_fs(void *ctx)
{
	struct mount_run *m = ctx;
	int ret;

	if (m->fs) {
		ret = bfs_fs_close(m->fs);
		m->fs = NULL;
		if (ret) {
			bfs_err("%s: closing the filesystem failed: %s", m->device, strerror(-ret));
			m->close_status = BFS_EXIT_ERROR;
		}
	}
	if (m->dev)
		bfs_dev_close(m->dev);
	m->dev = NULL;
}

static int open_fs(struct mount_run *m)
{
	struct bfs_fs_opts fo = {
		.read_only = m->opts.read_only,
		.no_replay = m->opts.no_replay,
		.cache_bytes = m->opts.cache_bytes,
		.commit_ms = 1000 * m->opts.commit_secs,
		.commit_default_ms = 1000 * BFS_MOUNT_COMMIT_DEFAULT,
		.discard = m->opts.discard,
	};
	int ret;

	ret = bfs_fs_open(m->dev, &fo, &m->fs);
	if (ret == -EUCLEAN && fo.read_only && !fo.no_replay) {
		/* ro: show what the last clean state holds rather than nothing */
		fprintf(stderr, "%s: warning: the journal of '%s' cannot be replayed; mounting "
			"as of the last clean unmount (norecovery): recent changes are not "
			"visible, run 'bfs fsck'\n", m->who, m->device);
		fo.no_replay = true;
		ret = bfs_fs_open(m->dev, &fo, &m->fs);
	}
	if (ret == -EUCLEAN)
		return run_error(m, "the filesystem on '%s' is damaged: run 'bfs fsck'%s",
				 m->device, fo.read_only ? "" : ", or mount it with -o ro");
	if (ret)
		return run_error(m, "cannot open the filesystem on '%s': %s", m->device,
				 strerror(-ret));
	m->fuse.fs = m->fs;
	m->fuse.close = close_fs;
	m->fuse.close_ctx = m;
	m->fuse.attr_timeout = m->opts.attr_timeout;
	m->fuse.entry_timeout = m->opts.entry_timeout;
	m->fuse.writeback = m->opts.writeback;
	m->fuse.read_only = m->opts.read_only;
	m->fuse.opened_ro = fo.read_only;
	m->fuse.want_acl = !m->opts.noacl;
	m->fuse.atime = m->opts.atime;
	m->fuse.dir_atime = m->opts.nodiratime ? BFS_ATIME_NEVER : m->opts.atime;
	m->fuse.commit_secs = m->opts.commit_secs;
	m->fuse.errors_set = m->opts.errors_set;
	m->fuse.errors = m->opts.errors_set ? m->opts.errors :
			 bfs_sb_errors(bfs_core_sb(bfs_fs_core(m->fs)));
	return 0;
}

/* ---- the FUSE session ---- */

/*
 * the -o list for libfuse: fsname and subtype make /proc/mounts say
 * "DEVICE DIR fuse.bcowfs"; the device path is escaped for libfuse's
 * comma-separated option parser
 */
static char *fuse_option_string(const struct mount_run *m)
{
	char *s = NULL, *fsname = NULL;
	int bad;

	if (asprintf(&fsname, "fsname=%s", m->device) < 0)
		return NULL;
	bad = fuse_opt_add_opt_escaped(&s, fsname) || fuse_opt_add_opt(&s, "subtype=" BFS_FUSE_SUBTYPE) ||
	      (m->blkdev && fuse_opt_add_opt(&s, "blkdev")) ||
	      fuse_opt_add_opt(&s, "default_permissions") ||
	      fuse_opt_add_opt(&s, m->opts.read_only ? "ro" : "rw") ||
	      (m->opts.allow_other && fuse_opt_add_opt(&s, "allow_other")) ||
	      (m->opts.allow_root && fuse_opt_add_opt(&s, "allow_root")) ||
	      (m->opts.atime == BFS_ATIME_NEVER && fuse_opt_add_opt(&s, "noatime")) ||
	      (m->opts.kernel_opts && fuse_opt_add_opt(&s, m->opts.kernel_opts));
	free(fsname);
	if (bad) {
		free(s);
		return NULL;
	}
	return s;
}

/*
 * Ring entries per CPU queue, one thread each (fuse_uring.c): the
 * max_threads the /dev/fuse loop would have had, in every queue, since
 * the kernel puts a request on the queue of the CPU that made it and one
 * process (fio, a database) often submits all of its I/O from one CPU.
 * An idle entry costs its thread and a page; its payload buffer is only
 * touched by the requests it serves.
 */
static unsigned uring_entries(const struct mount_run *m)
{
	return m->opts.max_threads < 2 ? 2 : m->opts.max_threads;
}

/*
 * The /dev/fuse shim (fuse_wire.h), between the mount and the first
 * request (INIT), on the descriptor fuse_session_mount() opened
 */
static int install_wire(struct mount_run *m)
{
	static const struct fuse_custom_io io = {
		.read	= bfs_fuse_wire_read,
		.writev	= bfs_fuse_wire_writev,
	};
	int ret;

	bfs_fuse_wire_reset();
	if (!bfs_fuse_wire_wanted())
		return 0;
	ret = fuse_session_custom_io(m->se, &io, fuse_session_fd(m->se));
	if (ret)
		return run_error(m, "cannot install the FUSE channel shim: %s "
				 "(BFS_FUSE_WIRE=0 mounts without it)", strerror(-ret));
	bfs_fuse_uring_setup(m->se, m->opts.uring, uring_entries(m));
	return 0;
}

static int start_session(struct mount_run *m)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char *opts;
	int ret = 0;

	opts = fuse_option_string(m);
	if (!opts || fuse_opt_add_arg(&args, m->who) || fuse_opt_add_arg(&args, "-o") ||
	    fuse_opt_add_arg(&args, opts) || (m->opts.debug && fuse_opt_add_arg(&args, "-d"))) {
		ret = run_error(m, "out of memory");
		goto out;
	}
	m->se = fuse_session_new(&args, &bfs_fuse_ops, sizeof(bfs_fuse_ops), &m->fuse);
	if (!m->se) {
		ret = run_error(m, "cannot start the FUSE session (see the message above)");
		goto out;
	}
	/*
	 * libfuse installs its handlers only where the disposition is the
	 * default, and a daemon started from a background job of a
	 * non-interactive shell inherits SIGINT ignored: bfs-mount(8) says
	 * SIGINT, SIGTERM and SIGHUP unmount, whoever started us
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (fuse_set_signal_handlers(m->se)) {
		ret = run_error(m, "cannot install signal handlers");
		goto out;
	}
	if (fuse_session_mount(m->se, m->mountpoint)) {
		fuse_remove_signal_handlers(m->se);
		fuse_session_destroy(m->se);
		m->se = NULL;
		ret = run_error(m, "cannot mount '%s' on '%s' (is /dev/fuse available and "
				"fusermount3 installed?)", m->device, m->mountpoint);
		goto out;
	}
	ret = install_wire(m);
	if (ret)
		goto out;
	m->fuse.se = m->se;
out:
	free(opts);
	fuse_opt_free_args(&args);
	return ret;
}

static int serve(struct mount_run *m)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int ret;

	if (!cfg)
		return -ENOMEM;
	fuse_loop_cfg_set_max_threads(cfg, m->opts.max_threads);
	fuse_loop_cfg_set_clone_fd(cfg, m->opts.clone_fd);
	ret = fuse_session_loop_mt(m->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	/* before the filesystem closes: the ring's threads serve no more */
	bfs_fuse_uring_stop();
	return ret;
}

/*
 * Close the filesystem cleanly (unless DESTROY did), unmount if still
 * mounted, free.  The close comes first: no request is served any more
 * once the loop has ended, and a fuseblk mount releases the device at
 * unmount, when it must already be consistent for the next user.
 */
static int finish(struct mount_run *m, int status)
{
	if (m->se) {
		fuse_remove_signal_handlers(m->se);
		bfs_fuse_close(&m->fuse);
		fuse_session_unmount(m->se);
		m->fuse.se = NULL;
		fuse_session_destroy(m->se);
		m->se = NULL;
	}
	close_fs(m);
	bfs_rwlock_destroy(&m->fuse.life);
	bfs_mount_opts_free(&m->opts);
	return status ? status : m->close_status;
}

static int resolve_paths(struct mount_run *m, const char *device, const char *dir)
{
	struct stat st;

	/* absolute: the mount table's source must match what probe.c looks for */
	if (!realpath(device, m->device))
		return run_error(m, "cannot open '%s': %s", device, strerror(errno));
	/*
	 * A block device mounted by root is a fuseblk mount, whose umount
	 * waits for DESTROY, i.e. for the filesystem to be closed (fusermount3
	 * does not mount fuseblk for other users)
	 */
	m->blkdev = !stat(m->device, &st) && S_ISBLK(st.st_mode) && geteuid() == 0;
	if (!realpath(dir, m->mountpoint) || stat(m->mountpoint, &st))
		return run_error(m, "mount point '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return run_error(m, "mount point '%s' is not a directory", dir);
	return 0;
}

static int check_opts(struct mount_run *m)
{
	const char *why = NULL;

	if (bfs_fuse_uring_check(m->opts.uring, &why))
		return run_error(m, "mount option 'uring': %s", why);
	if (m->opts.uring == BFS_URING_ON && !bfs_fuse_wire_wanted())
		return run_error(m, "mount option 'uring' needs the FUSE channel shim "
				 "(BFS_FUSE_WIRE=0 turns it off)");
	if (m->opts.no_replay)
		m->opts.read_only = true;
	if (m->opts.debug)
		m->foreground = true;	/* FUSE's -d: the trace goes to the terminal */
	return 0;
}

static int do_mount(struct mount_run *m, const char *device, const char *dir)
{
	int ret;

	ret = resolve_paths(m, device, dir);
	if (!ret)
		ret = check_opts(m);
	if (!ret)
		ret = check_not_mounted(m);
	if (ret)
		return finish(m, ret);
	ret = start_daemon(m);
	if (!ret)
		ret = open_device(m);
	if (!ret)
		ret = check_super(m);
	if (!ret)
		ret = open_fs(m);
	if (!ret)
		ret = start_session(m);
	if (!ret && m->verbose)
		fprintf(stderr, "%s: mounted '%s' on '%s'%s\n", m->who, m->device, m->mountpoint,
			m->opts.read_only ? " read-only" : "");
	report_ready(m, ret);
	if (ret)
		return finish(m, ret);
	ret = serve(m);
	if (ret < 0)
		bfs_err("%s: the FUSE request loop failed: %s", m->device, strerror(-ret));
	return finish(m, BFS_EXIT_OK);
}

/* ---- bfs mount ---- */

/* what -o takes, for completion (cmd/mount_opts.c; 00-cli checks bfs-mount(8) names each) */
#define MOUNT_WORDS "ro rw allow_other allow_root writeback nowriteback debug clone_fd " \
	"norecovery noreplay cache_size= max_threads= attr_timeout= entry_timeout= commit= " \
	"discard nodiscard acl noacl remount relatime strictatime noatime nodiratime " \
	"nosuid nodev noexec sync dirsync defaults nofail errors= uring nouring"

static const struct bfs_opt mount_opts[] = {
	BFS_OPT("options", 'o', 0, "LIST",
		"comma-separated mount options (below)",
		.values = BFS_VAL_LIST, .words = MOUNT_WORDS),
	BFS_OPT("foreground", 'f', 0, NULL,
		"stay in the foreground (default: run in the background\n"
		"once the filesystem is mounted)"),
	BFS_OPT("read-only", 'r', 0, NULL, "same as -o ro"),
	BFS_OPT("verbose", 'v', 0, NULL, "say what was mounted"),
	BFS_OPT("debug", 'd', 0, NULL, "same as -o debug"),
	{ 0 }
};

static int cmd_mount(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct mount_run m = { .who = "bfs mount", .fail = BFS_EXIT_ERROR, .ready_fd = -1 };
	int c;

	bfs_mount_opts_init(&m.opts);
	bfs_rwlock_init(&m.fuse.life);
	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (bfs_mount_opts_parse(&m.opts, optarg, m.who))
				return finish(&m, BFS_EXIT_USAGE);
			break;
		case 'f':
			m.foreground = true;
			break;
		case 'r':
			m.opts.read_only = true;
			break;
		case 'v':
			m.verbose = true;
			break;
		case 'd':
			m.opts.debug = true;
			break;
		default:
			finish(&m, 0);
			return bfs_cmd_usage_error(cmd, "bad option");
		}
	}
	if (m.opts.remount && (argc - optind == 1 || argc - optind == 2)) {
		c = bfs_mount_remount(m.who, argv[argc - 1], &m.opts) ? BFS_EXIT_ERROR : BFS_EXIT_OK;
		return finish(&m, c);
	}
	if (optind + 2 != argc) {
		finish(&m, 0);
		return bfs_cmd_usage_error(cmd, optind + 2 > argc ? "DEVICE and MOUNTPOINT needed" :
					   "too many arguments");
	}
	return do_mount(&m, argv[optind], argv[optind + 1]);
}

const struct bfs_cmd bfs_cmd_mount = {
	.name = "mount",
	.fn = cmd_mount,
	.summary = "mount a bfs filesystem through FUSE",
	.synopsis = "[-o OPTIONS] [-f] [-r] DEVICE MOUNTPOINT",
	.opts = mount_opts,
	.help =
	"Mount options:\n"
	"  ro, rw              read-only: nothing is written (the journal is replayed\n"
	"                      in memory only); rw is the default\n"
	"  norecovery          read-only without journal replay (damaged journal)\n"
	"  allow_other         let other users access the mount (permissions apply)\n"
	"  allow_root          let root access the mount too\n"
	"  cache_size=SIZE     btree node cache (e.g. 256M)\n"
	"  max_threads=N       FUSE worker threads (default 64)\n"
	"  attr_timeout=SECS   how long the kernel caches attributes (default 60)\n"
	"  entry_timeout=SECS  how long the kernel caches names (default 60)\n"
	"  commit=SECS         make everything durable this often (default 5)\n"
	"  discard             discard freed space (in batches, at each commit)\n"
	"  errors=BEHAVIOUR    on damaged metadata: continue, remount-ro (refuse\n"
	"                      writes from then on) or panic (stop); default: the\n"
	"                      filesystem's (bfs set-option errors=)\n"
	"  noacl               no POSIX ACLs (acl, the default, has them)\n"
	"  remount             change the running mount at MOUNTPOINT (ro, rw, commit=,\n"
	"                      errors=, atime options)\n"
	"  writeback           kernel write-back cache (faster small writes)\n"
	"  clone_fd            one /dev/fuse descriptor per thread\n"
	"  uring, nouring      FUSE over io_uring: requests served on the CPU that\n"
	"                      made them, without read/write; default: when the\n"
	"                      kernel allows it (fuse's enable_uring parameter)\n"
	"  debug               print every FUSE request (implies -f)\n"
	"  relatime            atime on reads after a change or a day (the default);\n"
	"                      strictatime: on every read; noatime: never\n"
	"  nodiratime          no atime updates on directory listings\n"
	"  nosuid, nodev, noexec, sync, dirsync ...  passed to the kernel\n"
	"\nPermissions are always checked by the kernel (default_permissions).\n"
	"Unmount with umount(8) or fusermount3 -u, or send SIGTERM: the filesystem is\n"
	"closed cleanly.  See bfs-mount(8).\n",
	.args = BFS_ARG_DEVICE,
};

/* ---- mount.bcowfs: mount(8)'s calling convention ---- */

static const struct bfs_opt helper_opts[] = {
	BFS_OPT(NULL, 'o', 0, "LIST",
		"mount options, as for bfs mount",
		.values = BFS_VAL_LIST, .words = MOUNT_WORDS),
	BFS_OPT(NULL, 'f', 0, NULL, "fake: check the arguments, mount nothing"),
	BFS_OPT(NULL, 'v', 0, NULL, "verbose"),
	BFS_OPT(NULL, 's', 0, NULL, "sloppy: accepted and ignored"),
	BFS_OPT(NULL, 'n', 0, NULL, "no mtab: accepted and ignored"),
	BFS_OPT(NULL, 't', 0, "TYPE", "the filesystem type mount(8) gives: ignored"),
	{ 0 }
};

static int cmd_mount_helper(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct mount_run m = { .who = "mount.bcowfs", .fail = MOUNT_EX_FAIL, .ready_fd = -1 };
	bool fake = false;
	int c;

	bfs_mount_opts_init(&m.opts);
	bfs_rwlock_init(&m.fuse.life);
	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (bfs_mount_opts_parse(&m.opts, optarg, m.who))
				return finish(&m, BFS_EXIT_ERROR);
			break;
		case 'f':
			fake = true;
			break;
		case 'v':
			m.verbose = true;
			break;
		case 's':	/* sloppy: unknown options are errors all the same */
		case 'n':	/* no mtab: there is none to write */
		case 't':	/* the type is ours */
			break;
		default:
			finish(&m, 0);
			bfs_cmd_usage_error(cmd, "bad option");
			return BFS_EXIT_ERROR;
		}
	}
	if (optind + 2 != argc) {
		finish(&m, 0);
		bfs_cmd_usage_error(cmd, optind + 2 > argc ? "DEVICE and MOUNTPOINT needed" :
				    "too many arguments");
		return BFS_EXIT_ERROR;
	}
	if (fake)
		return finish(&m, BFS_EXIT_OK);
	if (m.opts.remount)
		return finish(&m, bfs_mount_remount(m.who, argv[optind + 1], &m.opts) ?
			      MOUNT_EX_FAIL : BFS_EXIT_OK);
	return do_mount(&m, argv[optind], argv[optind + 1]);
}

const struct bfs_cmd bfs_cmd_mount_helper = {
	.name = "mount-helper",
	.fn = cmd_mount_helper,
	.summary = "mount(8) helper (installed as mount.bcowfs)",
	.synopsis = "DEVICE MOUNTPOINT [-sfnv] [-o OPTIONS]",
	.help_head =
	"Called by mount(8) as 'mount.bcowfs DEVICE MOUNTPOINT [-sfnv] [-o OPTIONS]' for\n"
	"'mount -t bcowfs' and fstab entries of type bcowfs (as mount.fuse.bcowfs for type\n"
	"fuse.bcowfs).\n",
	.opts = helper_opts,
	.help =
	"The filesystem is served in the background.  Exit status as mount(8):\n"
	"0 mounted, 1 bad usage, 32 mount failure.\n",
	.args = BFS_ARG_DEVICE,
};
