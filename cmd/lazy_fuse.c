// SPDX-License-Identifier: MIT
/*
 * libfuse3, loaded by the subcommands that mount (lazy_lib.h): every
 * function of it cmd/ calls.  A function cmd/ starts to use must be added
 * here, or the link fails (the bfs binary does not link -lfuse3).
 */
#include "fuse_ops.h"

#include "lazy_lib.h"

static const char *const fuse_sonames[] = { "libfuse3.so.3", "libfuse3.so", NULL };
struct bfs_lazy_lib lazy_fuse = { .sonames = fuse_sonames, .package = "libfuse3 (Debian: libfuse3-3)" };

LAZY_FN(lazy_fuse, size_t, fuse_add_direntry, (fuse_req_t req, char *buf, size_t bufsize,
	const char *name, const struct stat *stbuf, off_t off), (req, buf, bufsize, name, stbuf, off))
LAZY_FN(lazy_fuse, size_t, fuse_add_direntry_plus, (fuse_req_t req, char *buf, size_t bufsize,
	const char *name, const struct fuse_entry_param *e, off_t off),
	(req, buf, bufsize, name, e, off))
LAZY_FN(lazy_fuse, struct fuse_loop_config *, fuse_loop_cfg_create, (void), ())
LAZY_FN_VOID(lazy_fuse, fuse_loop_cfg_destroy, (struct fuse_loop_config *config), (config))
LAZY_FN_VOID(lazy_fuse, fuse_loop_cfg_set_clone_fd, (struct fuse_loop_config *config,
	unsigned int value), (config, value))
LAZY_FN_VOID(lazy_fuse, fuse_loop_cfg_set_max_threads, (struct fuse_loop_config *config,
	unsigned int value), (config, value))
LAZY_FN(lazy_fuse, int, fuse_lowlevel_notify_inval_inode, (struct fuse_session *se,
	fuse_ino_t ino, off_t off, off_t len), (se, ino, off, len))
LAZY_FN(lazy_fuse, int, fuse_opt_add_arg, (struct fuse_args *args, const char *arg), (args, arg))
LAZY_FN(lazy_fuse, int, fuse_opt_add_opt, (char **opts, const char *opt), (opts, opt))
LAZY_FN(lazy_fuse, int, fuse_opt_add_opt_escaped, (char **opts, const char *opt), (opts, opt))
LAZY_FN_VOID(lazy_fuse, fuse_opt_free_args, (struct fuse_args *args), (args))
LAZY_FN_VOID(lazy_fuse, fuse_remove_signal_handlers, (struct fuse_session *se), (se))
LAZY_FN(lazy_fuse, int, fuse_set_signal_handlers, (struct fuse_session *se), (se))
LAZY_FN(lazy_fuse, int, fuse_reply_attr, (fuse_req_t req, const struct stat *attr,
	double attr_timeout), (req, attr, attr_timeout))
LAZY_FN(lazy_fuse, int, fuse_reply_buf, (fuse_req_t req, const char *buf, size_t size),
	(req, buf, size))
LAZY_FN(lazy_fuse, int, fuse_reply_create, (fuse_req_t req, const struct fuse_entry_param *e,
	const struct fuse_file_info *fi), (req, e, fi))
LAZY_FN(lazy_fuse, int, fuse_reply_entry, (fuse_req_t req, const struct fuse_entry_param *e),
	(req, e))
LAZY_FN(lazy_fuse, int, fuse_reply_err, (fuse_req_t req, int err), (req, err))
LAZY_FN(lazy_fuse, int, fuse_reply_ioctl, (fuse_req_t req, int result, const void *buf,
	size_t size), (req, result, buf, size))
LAZY_FN(lazy_fuse, int, fuse_reply_lseek, (fuse_req_t req, off_t off), (req, off))
LAZY_FN_VOID(lazy_fuse, fuse_reply_none, (fuse_req_t req), (req))
LAZY_FN(lazy_fuse, int, fuse_reply_open, (fuse_req_t req, const struct fuse_file_info *fi),
	(req, fi))
LAZY_FN(lazy_fuse, int, fuse_reply_readlink, (fuse_req_t req, const char *link), (req, link))
LAZY_FN(lazy_fuse, int, fuse_reply_statfs, (fuse_req_t req, const struct statvfs *stbuf),
	(req, stbuf))
LAZY_FN(lazy_fuse, int, fuse_reply_write, (fuse_req_t req, size_t count), (req, count))
LAZY_FN(lazy_fuse, int, fuse_reply_xattr, (fuse_req_t req, size_t count), (req, count))
LAZY_FN(lazy_fuse, const struct fuse_ctx *, fuse_req_ctx, (fuse_req_t req), (req))
LAZY_FN(lazy_fuse, int, fuse_req_getgroups, (fuse_req_t req, int size, gid_t list[]),
	(req, size, list))
LAZY_FN(lazy_fuse, void *, fuse_req_userdata, (fuse_req_t req), (req))
LAZY_FN(lazy_fuse, int, fuse_session_custom_io, (struct fuse_session *se,
	const struct fuse_custom_io *io, int fd), (se, io, fd))
LAZY_FN_VOID(lazy_fuse, fuse_session_destroy, (struct fuse_session *se), (se))
LAZY_FN(lazy_fuse, int, fuse_session_fd, (struct fuse_session *se), (se))
LAZY_FN(lazy_fuse, int, fuse_session_mount, (struct fuse_session *se, const char *mountpoint),
	(se, mountpoint))
LAZY_FN(lazy_fuse, struct fuse_session *, fuse_session_new, (struct fuse_args *args,
	const struct fuse_lowlevel_ops *op, size_t op_size, void *userdata),
	(args, op, op_size, userdata))
LAZY_FN_VOID(lazy_fuse, fuse_session_process_buf, (struct fuse_session *se,
	const struct fuse_buf *buf), (se, buf))
LAZY_FN_VOID(lazy_fuse, fuse_session_unmount, (struct fuse_session *se), (se))
/*
 * The 3.12 loop: a library built with symbol versions names it
 * fuse_session_loop_mt (dlsym finds the default version, FUSE_3.12), one
 * built without defines fuse_session_loop_mt as fuse_session_loop_mt_312.
 */
#ifdef fuse_session_loop_mt
LAZY_FN(lazy_fuse, int, fuse_session_loop_mt_312, (struct fuse_session *se,
	struct fuse_loop_config *config), (se, config))
#else
LAZY_FN(lazy_fuse, int, fuse_session_loop_mt, (struct fuse_session *se,
	struct fuse_loop_config *config), (se, config))
#endif
