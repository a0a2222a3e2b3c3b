// SPDX-License-Identifier: MIT
/*
 * bfs resize: grow or shrink an unmounted filesystem, grow a mounted one
 * (resize2fs, xfs_growfs, btrfs filesystem resize).  The library does the
 * work and keeps it crash-safe (include/bfs/resize.h, online.h); this file
 * picks the size, refuses what cannot be done and says why.  Image files
 * are extended before a grow and cut after an offline shrink; a block
 * device must already have the size.  A mounted filesystem is grown by its
 * mount process, asked through the control channel (mount_control.h).
 */
#include "cmd.h"
#include "mount_control.h"
#include "progress.h"

#include <bfs/fs.h>
#include <bfs/os.h>
#include <bfs/probe.h>
#include <bfs/resize.h>
#include <bfs/super.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static const struct bfs_opt resize_opts[] = {
	BFS_OPT("dry-run", 'n', 0, NULL, "check and print what would change, write nothing"),
	{ 0 }
};

struct resize_args {
	const char *path;
	u64 size;		/* 0: the device's size */
	bool dry_run;
};

static int check_unmounted(const struct bfs_cmd *cmd, const char *path)
{
	return bfs_cmd_refuse_mounted(cmd, path, false, "");
}

/*
 * A mounted filesystem (DEVICE, or its mount point) grows online: the
 * mount does it (mount_control.h).  The exit status, or -1 if @a->path is
 * not a bcowfs mount.
 */
static int resize_mounted(const struct bfs_cmd *cmd, const struct resize_args *a)
{
	struct bfs_ctl_req req = { .op = BFS_CTL_GROW, .size = a->size };
	char mnt[PATH_MAX], what[256], h1[32], h2[32];
	bool other;
	int ret = bfs_ctl_find_mount(a->path, mnt, sizeof(mnt), &other, what, sizeof(what));

	if (ret == -EACCES || ret == -EPERM)
		return bfs_cmd_error(cmd, "'%s': permission denied (changing a mounted filesystem "
				     "needs root)", a->path);
	if (ret <= 0 || other)
		return -1;	/* the offline path says what is wrong */
	if (a->dry_run)
		return bfs_cmd_error(cmd, "'%s' is mounted on %s: --dry-run works on an "
				     "unmounted filesystem only", a->path, mnt);
	ret = bfs_ctl_run(cmd, mnt, &req);
	if (ret)
		return ret;
	if (req.result == -EALREADY)
		printf("'%s' is already %s; nothing to do\n", a->path,
		       bfs_human_size(req.size, h1));
	else
		printf("Resized '%s' (mounted on %s) from %s to %s\n", a->path, mnt,
		       bfs_human_size(req.old_size, h1), bfs_human_size(req.size, h2));
	return BFS_EXIT_OK;
}

static int open_dev(const struct bfs_cmd *cmd, const struct resize_args *a, struct bfs_dev **dev)
{
	int ret = bfs_dev_open(a->path, a->dry_run ? BFS_DEV_RDONLY : BFS_DEV_EXCL, dev);

	if (ret == -EBUSY)
		return bfs_cmd_error(cmd, "'%s' is in use (mounted or opened by another program)",
				     a->path);
	if (ret == -EROFS || ret == -EACCES)
		return bfs_cmd_error(cmd, "'%s' is read-only (%s); nothing changed", a->path,
				     strerror(-ret));
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", a->path, strerror(-ret));
	if (!a->dry_run && bfs_dev_is_readonly(*dev)) {
		bfs_dev_close(*dev);
		return bfs_cmd_error(cmd, "'%s' is read-only; nothing changed", a->path);
	}
	return 0;
}

static int read_sb(const struct bfs_cmd *cmd, struct bfs_dev *dev, const char *path,
		   struct bfs_sb_handle *h)
{
	char err[BFS_ERR_LEN];
	int ret = bfs_sb_read(dev, h, err);

	if (ret == -ENODATA)
		return bfs_cmd_error(cmd, "'%s' is not a bfs filesystem: %s", path, err);
	if (ret)
		return bfs_cmd_error(cmd, "'%s': %s", path, err);
	if (h->used_backup || bfs_sb_check_writable(h->sb, err) ||
	    !(le32_to_cpu(h->sb->flags) & BFS_SB_CLEAN)) {
		bfs_cmd_error(cmd, "'%s' %s; run 'bfs fsck' first", path,
			      h->used_backup ? "has a damaged primary superblock" :
			      !(le32_to_cpu(h->sb->flags) & BFS_SB_CLEAN) ?
			      "was not closed cleanly (its journal needs replay)" : err);
		bfs_sb_handle_release(h);
		return BFS_EXIT_ERROR;
	}
	return 0;
}

static void move_progress(void *ctx, unsigned stage, u64 done, u64 total)
{
	bfs_progress_update(ctx, stage, stage ? "moving btree nodes" : "moving file data", done,
			    total);
}

static void say_moved(const char *verb, const struct bfs_resize_usage *u)
{
	char h1[32], h2[32];

	if (u->data_buckets)
		printf("%s %s of file data (%" PRIu64 " bucket%s) from beyond the new end\n", verb,
		       bfs_human_size(u->data_bytes, h1), u->data_buckets,
		       u->data_buckets == 1 ? "" : "s");
	if (u->nodes)
		printf("%s %" PRIu64 " btree node%s (%s) from beyond the new end\n", verb, u->nodes,
		       u->nodes == 1 ? "" : "s", bfs_human_size(u->node_bytes, h2));
}

/* after the moves: nothing of the filesystem may be left beyond the new end */
static int check_emptied(const struct bfs_cmd *cmd, const struct resize_args *a,
			 struct bfs_fs *fs, u64 new_nbuckets)
{
	struct bfs_resize_usage u;
	char h1[32], h2[32];
	int ret = bfs_resize_usage(fs, new_nbuckets, &u);

	if (ret)
		return bfs_cmd_error(cmd, "cannot read the space in use: %s", strerror(-ret));
	if (u.nodes || u.data_buckets)
		return bfs_cmd_error(cmd, "cannot shrink '%s': %s of file data and %" PRIu64
				     " btree node%s (%s) are still beyond the new end; run "
				     "'bfs fsck'", a->path, bfs_human_size(u.data_bytes, h1),
				     u.nodes, u.nodes == 1 ? "" : "s",
				     bfs_human_size(u.node_bytes, h2));
	return 0;
}

static int no_room(const struct bfs_cmd *cmd, const struct resize_args *a, u64 new_size,
		   const struct bfs_resize_move *m)
{
	char h1[32], h2[32], h3[32], h4[32];

	return bfs_cmd_error(cmd, "cannot shrink '%s' to %s: %s of file data and btree nodes "
			     "lies beyond the new end and does not fit in the %s free below it; "
			     "%s more is needed", a->path, bfs_human_size(new_size, h1),
			     bfs_human_size(m->need, h2), bfs_human_size(m->avail, h3),
			     bfs_human_size(m->need > m->avail ? m->need - m->avail : 0, h4));
}

/* what lies beyond the new end, and whether it fits below (read-only: --dry-run too) */
static int check_shrink(const struct bfs_cmd *cmd, const struct resize_args *a,
			struct bfs_dev *dev, u64 new_nbuckets, u64 new_size,
			struct bfs_resize_usage *u)
{
	struct bfs_resize_move m = { 0 };
	struct bfs_fs *fs;
	int ret = bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &fs);

	if (ret)
		return bfs_cmd_error(cmd, "cannot open the filesystem on '%s': %s", a->path,
				     strerror(-ret));
	ret = bfs_resize_usage(fs, new_nbuckets, u);
	if (!ret && (u->data_buckets || u->nodes))
		ret = bfs_resize_plan(fs, new_nbuckets, &m);
	bfs_fs_close(fs);
	if (ret == -ENOSPC)
		return no_room(cmd, a, new_size, &m);
	if (ret)
		return bfs_cmd_error(cmd, "cannot read the space in use on '%s': %s%s", a->path,
				     strerror(-ret), ret == -EUCLEAN ? "; run 'bfs fsck'" : "");
	return 0;
}

/*
 * A shrink: the file data and btree nodes in the cut space are moved below
 * the new end (if they fit), then the alloc keys there are dropped.
 */
static int prepare_shrink(const struct bfs_cmd *cmd, const struct resize_args *a,
			  struct bfs_dev *dev, u64 new_nbuckets, u64 new_size)
{
	struct bfs_progress p = { 0 };
	struct bfs_resize_move m = { .progress = move_progress, .ctx = &p };
	struct bfs_resize_usage u;
	struct bfs_fs *fs;
	char h1[32], h2[32];
	int ret = check_shrink(cmd, a, dev, new_nbuckets, new_size, &u);

	if (ret)
		return ret;
	if (a->dry_run)
		say_moved("Would move", &u);
	if (a->dry_run || (!u.free_alloc_keys && !u.data_buckets && !u.nodes))
		return 0;
	ret = bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs);
	if (ret)
		return bfs_cmd_error(cmd, "cannot open the filesystem on '%s': %s", a->path,
				     strerror(-ret));
	if (u.data_buckets || u.nodes) {
		bfs_progress_init_bar(&p, STDOUT_FILENO, a->path);
		ret = bfs_resize_evacuate(fs, new_nbuckets, &m);
		bfs_progress_done(&p);
		if (ret == -ENOSPC && m.need > m.avail) {
			bfs_fs_close(fs);
			return no_room(cmd, a, new_size, &m);
		}
		if (ret == -ENOSPC) {
			/* the estimate was short (fragmented space): what moved stays moved */
			ret = bfs_fs_close(fs);
			return bfs_cmd_error(cmd, "cannot shrink '%s' to %s: the space below the new "
					     "end ran out while moving (%" PRIu64 " btree nodes moved); "
					     "the filesystem keeps its size%s", a->path,
					     bfs_human_size(new_size, h1), m.nodes,
					     ret ? ", but closing it failed" : "");
		}
		if (!ret && m.left) {
			bfs_fs_close(fs);
			return bfs_cmd_error(cmd, "cannot shrink '%s' to %s: %s could not be moved "
					     "from beyond the new end (unreadable?); run 'bfs fsck'",
					     a->path, bfs_human_size(new_size, h1),
					     bfs_human_size(m.left, h2));
		}
		if (!ret) {
			/* what really moved: a node the data moves rewrote was already below */
			u64 node_size = u.nodes ? u.node_bytes / u.nodes : 0;

			u.nodes = m.nodes;
			u.node_bytes = m.nodes * node_size;
			say_moved("Moved", &u);
		}
	}
	if (!ret)
		ret = bfs_resize_drop_alloc_keys(fs, new_nbuckets);
	if (!ret && check_emptied(cmd, a, fs, new_nbuckets)) {
		bfs_fs_close(fs);
		return BFS_EXIT_ERROR;
	}
	ret = bfs_fs_close(fs) ?: ret;
	if (ret)
		return bfs_cmd_error(cmd, "preparing the shrink failed: %s; the filesystem keeps "
				     "its size%s", strerror(-ret),
				     ret == -EUCLEAN ? " (run 'bfs fsck')" : "");
	return 0;
}

static int do_resize(const struct bfs_cmd *cmd, const struct resize_args *a, struct bfs_dev *dev)
{
	struct bfs_sb_handle h;
	struct bfs_sb *new_sb = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_MAX_BYTES);
	u64 old_size, new_size = a->size ? a->size : bfs_dev_size(dev), old_nb;
	char err[BFS_ERR_LEN], h1[32], h2[32];
	int ret;

	if (!new_sb)
		return bfs_cmd_error(cmd, "out of memory");
	ret = read_sb(cmd, dev, a->path, &h);
	if (ret)
		goto out_free;
	ret = BFS_EXIT_ERROR;
	old_size = le64_to_cpu(h.sb->dev_size);
	old_nb = le64_to_cpu(h.sb->nbuckets);
	if (new_size > bfs_dev_size(dev)) {
		bfs_cmd_error(cmd, "'%s' holds only %s; cannot grow to %s (grow the partition or "
			      "volume first)", a->path, bfs_human_size(bfs_dev_size(dev), h1),
			      bfs_human_size(new_size, h2));
		goto out;
	}
	if (bfs_resize_layout(h.sb, new_size, new_sb, err)) {
		bfs_cmd_error(cmd, "cannot resize '%s' to %s: %s", a->path,
			      bfs_human_size(new_size, h1), err);
		goto out;
	}
	if (new_size == old_size) {
		printf("'%s' is already %s; nothing to do\n", a->path, bfs_human_size(old_size, h1));
		ret = BFS_EXIT_OK;
		goto out;
	}
	if (le64_to_cpu(new_sb->nbuckets) < old_nb) {
		ret = prepare_shrink(cmd, a, dev, le64_to_cpu(new_sb->nbuckets), new_size);
		if (ret)
			goto out;
		ret = BFS_EXIT_ERROR;
		/* the close rewrote the superblock (clean section): start from that */
		bfs_sb_handle_release(&h);
		if (read_sb(cmd, dev, a->path, &h))
			goto out_free;
		if (bfs_resize_layout(h.sb, new_size, new_sb, err)) {
			bfs_cmd_error(cmd, "cannot resize '%s': %s", a->path, err);
			goto out;
		}
	}
	printf("%s '%s' from %s (%" PRIu64 " buckets) to %s (%" PRIu64 " buckets)\n",
	       a->dry_run ? "Would resize" : "Resizing", a->path, bfs_human_size(old_size, h1),
	       old_nb - le64_to_cpu(h.sb->first_bucket), bfs_human_size(new_size, h2),
	       le64_to_cpu(new_sb->nbuckets) - le64_to_cpu(h.sb->first_bucket));
	if (a->dry_run) {
		printf("dry run: nothing written\n");
		ret = BFS_EXIT_OK;
		goto out;
	}
	ret = bfs_resize_commit(dev, h.sb, new_sb);
	if (ret) {
		bfs_cmd_error(cmd, "writing the new superblock failed: %s (the filesystem is either "
			      "the old or the new size; run 'bfs show-super')", strerror(-ret));
		ret = BFS_EXIT_ERROR;
		goto out;
	}
	ret = BFS_EXIT_OK;
out:
	bfs_sb_handle_release(&h);
out_free:
	bfs_free(new_sb);
	return ret;
}

static int cmd_resize(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct resize_args a = { 0 };
	struct bfs_dev *dev;
	int c, ret;

	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'n':
			a.dry_run = true;
			break;
		default:
			return bfs_cmd_usage_error(cmd, "bad option");
		}
	}
	if (optind >= argc)
		return bfs_cmd_usage_error(cmd, "no device given");
	if (argc - optind > 2)
		return bfs_cmd_usage_error(cmd, "too many arguments");
	a.path = argv[optind];
	if (argc - optind == 2 && (bfs_parse_size(argv[optind + 1], &a.size) || !a.size))
		return bfs_cmd_usage_error(cmd, "invalid size '%s'", argv[optind + 1]);
	ret = resize_mounted(cmd, &a);
	if (ret >= 0)
		return ret;
	ret = check_unmounted(cmd, a.path);
	if (ret)
		return ret;
	ret = open_dev(cmd, &a, &dev);
	if (ret)
		return ret;
	/*
	 * An image file grows with the filesystem, but only for a filesystem we
	 * can resize, and while we hold it; the device is opened again to see
	 * the new size.
	 */
	if (a.size > bfs_dev_size(dev) && !a.dry_run && !bfs_dev_is_blockdev(dev)) {
		struct bfs_sb_handle h;

		ret = read_sb(cmd, dev, a.path, &h);
		if (ret) {
			bfs_dev_close(dev);
			return ret;
		}
		bfs_sb_handle_release(&h);
		ret = bfs_image_create(a.path, a.size);
		bfs_dev_close(dev);
		if (ret)
			return bfs_cmd_error(cmd, "cannot extend '%s': %s", a.path, strerror(-ret));
		ret = open_dev(cmd, &a, &dev);
		if (ret)
			return ret;
	}
	ret = do_resize(cmd, &a, dev);
	bfs_dev_close(dev);
	if (!ret && a.size && !a.dry_run) {
		int r = bfs_image_shrink(a.path, a.size);

		if (r && r != -ENOTSUP)
			return bfs_cmd_error(cmd, "the filesystem was resized, but cutting the image "
					     "file failed: %s", strerror(-r));
	}
	return ret;
}

const struct bfs_cmd bfs_cmd_resize = {
	.name = "resize",
	.fn = cmd_resize,
	.summary = "grow or shrink a bfs filesystem (grow only while mounted)",
	.synopsis = "[--dry-run] DEVICE|MOUNTPOINT [SIZE]",
	.help_head =
	"Without SIZE the filesystem grows to the size of DEVICE.  SIZE is in bytes or\n"
	"with a suffix (K, M, G, T: powers of 1024).  An image file is extended to SIZE\n"
	"first, and cut to SIZE after a shrink, which moves the file data and btree\n"
	"nodes beyond the new end below it; it is refused, with the amount, if they do\n"
	"not fit.\n",
	.opts = resize_opts,
	.help =
	"A mounted filesystem (DEVICE or its mount point) grows online, through its\n"
	"mount (root only); it cannot shrink.  Offline, the filesystem must be cleanly\n"
	"closed.  The resize is one crash-safe superblock write; the end backup\n"
	"superblock moves with the end.\n",
	.args = BFS_ARG_DEVICE,
};
