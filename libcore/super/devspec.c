// SPDX-License-Identifier: MIT
/*
 * UUID= and LABEL= device specifications: every candidate device is opened
 * read-only and its superblock read and validated as any reader would, so a
 * stale libblkid cache or a device that merely looks similar never matches.
 */
#include <bfs/dev.h>
#include <bfs/devspec.h>
#include <bfs/probe.h>
#include <bfs/super.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

struct devspec {
	bool	by_uuid;
	u8	uuid[16];
	char	label[BFS_LABEL_SIZE + 1];
	char	found[4096];
	unsigned nr_found;
};

/* "6b1f6a3e-6f2a-..." (dashes anywhere, any case) into 16 bytes */
static int parse_uuid(const char *s, u8 out[16])
{
	unsigned n = 0;

	for (; *s; s++) {
		int v;

		if (*s == '-')
			continue;
		if (!isxdigit((unsigned char)*s) || n == 32)
			return -EINVAL;
		v = isdigit((unsigned char)*s) ? *s - '0' : tolower((unsigned char)*s) - 'a' + 10;
		out[n / 2] = (u8)(n % 2 ? out[n / 2] | v : v << 4);
		n++;
	}
	return n == 32 ? 0 : -EINVAL;
}

bool bfs_devspec_is_tag(const char *spec)
{
	return !strncmp(spec, "UUID=", 5) || !strncmp(spec, "LABEL=", 6);
}

/* the value of TAG=VALUE or TAG="VALUE" */
static int tag_value(const char *spec, char *out, size_t len)
{
	const char *v = strchr(spec, '=') + 1;
	size_t n = strlen(v);

	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
		v++;
		n -= 2;
	}
	if (!n || n >= len)
		return -EINVAL;
	memcpy(out, v, n);
	out[n] = '\0';
	return 0;
}

static bool matches(struct devspec *ds, const char *path)
{
	struct bfs_sb_handle h;
	struct bfs_dev *dev;
	bool match = false;

	if (bfs_dev_open(path, BFS_DEV_RDONLY | BFS_DEV_NOLOCK, &dev))
		return false;
	if (bfs_dev_size(dev) && !bfs_sb_read(dev, &h, NULL)) {
		match = ds->by_uuid ? !memcmp(h.sb->uuid, ds->uuid, 16) :
			!strncmp((const char *)h.sb->label, ds->label, BFS_LABEL_SIZE) &&
			strlen(ds->label) <= BFS_LABEL_SIZE;
		bfs_sb_handle_release(&h);
	}
	bfs_dev_close(dev);
	return match;
}

static int check_one(void *ctx, const char *path)
{
	struct devspec *ds = ctx;

	if (ds->nr_found && !strcmp(ds->found, path))
		return 0;	/* libblkid's answer, seen again in the list */
	if (!matches(ds, path))
		return 0;
	if (!ds->nr_found++)
		snprintf(ds->found, sizeof(ds->found), "%s", path);
	return 0;
}

int bfs_devspec_resolve(const char *spec, char *path, size_t len, char *err)
{
	struct devspec ds = { .by_uuid = !strncmp(spec, "UUID=", 5) };
	char value[256], blkid_dev[4096];
	int ret;

	if (!bfs_devspec_is_tag(spec) || tag_value(spec, value, sizeof(value)) ||
	    (ds.by_uuid ? parse_uuid(value, ds.uuid) :
	     (strlen(value) > BFS_LABEL_SIZE ? -EINVAL : 0))) {
		snprintf(err, BFS_ERR_LEN, "'%s' is not a valid UUID= or LABEL= specification", spec);
		return -EINVAL;
	}
	snprintf(ds.label, sizeof(ds.label), "%s", value);
	if (bfs_os_blkid_resolve(ds.by_uuid ? "UUID" : "LABEL", value, blkid_dev,
				 sizeof(blkid_dev)))
		check_one(&ds, blkid_dev);
	ret = bfs_os_for_each_blockdev(check_one, &ds);
	if (ret && !ds.nr_found) {
		snprintf(err, BFS_ERR_LEN, "cannot list the block devices: %s", strerror(-ret));
		return ret;
	}
	if (!ds.nr_found) {
		snprintf(err, BFS_ERR_LEN, "no bfs filesystem has %s", spec);
		return -ENOENT;
	}
	if (ds.nr_found > 1) {
		snprintf(err, BFS_ERR_LEN, "%u bfs filesystems have %s (one is %s): name the device",
			 ds.nr_found, spec, ds.found);
		return -EEXIST;
	}
	snprintf(path, len, "%s", ds.found);
	return 0;
}
