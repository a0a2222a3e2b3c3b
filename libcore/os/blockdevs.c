// SPDX-License-Identifier: MIT
/*
 * Finding block devices: what libblkid resolves a UUID= or LABEL= tag to, and
 * the list of every block device the kernel knows, for the callers that have
 * to read each superblock themselves (libblkid has no bfs prober).
 */
#include <bfs/probe.h>

#include <blkid.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bfs_os_blkid_resolve(const char *token, const char *value, char *path, size_t len)
{
	char *dev = blkid_evaluate_tag(token, value, NULL);
	char *real = dev ? realpath(dev, NULL) : NULL;

	/* canonical, so the caller can tell it apart from the listed devices */
	if (real)
		snprintf(path, len, "%s", real);
	free(real);
	free(dev);
	return real != NULL;
}

int bfs_os_for_each_blockdev(int (*fn)(void *ctx, const char *path), void *ctx)
{
	FILE *f = fopen("/proc/partitions", "re");
	char line[512], name[256], path[300];
	int ret = 0;

	if (!f)
		return -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long blocks;

		/* "major minor  #blocks  name"; the header and blank line do not parse */
		if (sscanf(line, "%u %u %llu %255s", &maj, &min, &blocks, name) != 4)
			continue;
		snprintf(path, sizeof(path), "/dev/%s", name);
		ret = fn(ctx, path);
	}
	fclose(f);
	return ret;
}
