// SPDX-License-Identifier: MIT
/*
 * bfs resize: grow or shrink an unmounted filesystem (resize2fs, xfs_growfs,
 * btrfs filesystem resize).  The library does the work and keeps it
 * crash-safe (include/bfs/resize.h); this file picks the size, refuses what
 * cannot be done and says why.  Image files are extended before a grow and
 * cut after a shrink; a block device must already have the size.
 */
#include "cmd.h"

#include <bfs/fs.h>
#include <bfs/os.h>
#include <bfs/probe.h>
#include <bfs/resize.h>
#include <bfs/super.h>

#include <errno.h>
#include <inttypes.h>
#include <string.h>

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
	return bfs_cmd_refuse_mounted(cmd, path, false,
				      " (resizing a mounted filesystem is not supported yet)");
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

/*
 * A shrink: btree nodes in the cut space block it; file data there is moved
 * below the new end (if it fits); then the alloc keys there are dropped.
 */
static int prepare_shrink(const struct bfs_cmd *cmd, const struct resize_args *a,
			  struct bfs_dev *dev, u64 new_nbuckets, u64 new_size)
{
	struct bfs_fs_opts o = { .read_only = true };
	struct bfs_resize_usage u;
	struct bfs_fs *fs;
	u64 need, avail, left;
	char h1[32], h2[32], h3[32], h4[32];
	int ret = bfs_fs_open(dev, &o, &fs);

	if (ret)
		return bfs_cmd_error(cmd, "cannot open the filesystem on '%s': %s", a->path,
				     strerror(-ret));
	ret = bfs_resize_usage(fs, new_nbuckets, &u);
	bfs_fs_close(fs);
	if (ret)
		return bfs_cmd_error(cmd, "cannot read the space in use: %s", strerror(-ret));
	if (u.nodes)
		return bfs_cmd_error(cmd, "cannot shrink '%s' to %s: %" PRIu64 " btree node%s (%s) "
				     "lie beyond the new end, and moving btree nodes is not "
				     "supported yet", a->path, bfs_human_size(new_size, h1), u.nodes,
				     u.nodes == 1 ? "" : "s", bfs_human_size(u.node_bytes, h2));
	if (u.data_buckets && a->dry_run)
		printf("Would move %s of file data (%" PRIu64 " bucket%s) from beyond the new end\n",
		       bfs_human_size(u.data_bytes, h1), u.data_buckets,
		       u.data_buckets == 1 ? "" : "s");
	if (a->dry_run || (!u.free_alloc_keys && !u.data_buckets))
		return 0;
	o.read_only = false;
	ret = bfs_fs_open(dev, &o, &fs);
	if (ret)
		return bfs_cmd_error(cmd, "cannot open the filesystem on '%s': %s", a->path,
				     strerror(-ret));
	if (u.data_buckets) {
		ret = bfs_resize_evacuate(fs, new_nbuckets, &need, &avail, &left);
		if (ret == -ENOSPC) {
			bfs_fs_close(fs);
			return bfs_cmd_error(cmd, "cannot shrink '%s' to %s: %s of file data lies "
					     "beyond the new end and does not fit in the %s free "
					     "below it; %s more is needed", a->path,
					     bfs_human_size(new_size, h1), bfs_human_size(need, h2),
					     bfs_human_size(avail, h3),
					     bfs_human_size(need > avail ? need - avail : 0, h4));
		}
		if (!ret && left) {
			bfs_fs_close(fs);
			return bfs_cmd_error(cmd, "cannot shrink '%s' to %s: %s of file data could "
					     "not be moved (unreadable?); run 'bfs fsck'", a->path,
					     bfs_human_size(new_size, h1), bfs_human_size(left, h2));
		}
		if (!ret)
			printf("Moved %s of file data (%" PRIu64 " bucket%s) from beyond the new "
			       "end\n", bfs_human_size(u.data_bytes, h1), u.data_buckets,
			       u.data_buckets == 1 ? "" : "s");
	}
	if (!ret)
		ret = bfs_resize_drop_alloc_keys(fs, new_nbuckets);
	ret = bfs_fs_close(fs) ?: ret;
	if (ret)
		return bfs_cmd_error(cmd, "preparing the shrink failed: %s", strerror(-ret));
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
	.summary = "grow or shrink an unmounted bfs filesystem",
	.synopsis = "[--dry-run] DEVICE [SIZE]",
	.help_head =
	"Without SIZE the filesystem grows to the size of DEVICE.  SIZE is in bytes or\n"
	"with a suffix (K, M, G, T: powers of 1024).  An image file is extended to SIZE\n"
	"first, and cut to SIZE after a shrink, which moves the file data and btree\n"
	"nodes beyond the new end below it; it is refused, with the amount, if they do\n"
	"not fit.\n",
	.opts = resize_opts,
	.help =
	"The filesystem must be unmounted and cleanly closed.  The resize is one\n"
	"crash-safe superblock write; the end backup superblock moves with the end.\n",
	.args = BFS_ARG_DEVICE,
};
