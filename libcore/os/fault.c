// SPDX-License-Identifier: MIT
/*
 * Read-error injection: byte ranges of a device whose reads fail with -EIO,
 * as a disk's bad sectors do, so that fsck's and the mount's handling of an
 * I/O error can be tested (device-mapper's error target does the same on a
 * real block device, where the kernel has it).
 *
 * Compiled in always, inert unless asked for: BFS_FAULT_READ in the
 * environment of a program, parsed when it opens a device (bfs_dev_open),
 * or bfs_dev_set_read_faults() in a unit test.  The syntax, in doc/testing.md:
 * OFFSET[+LEN][,OFFSET[+LEN]...], numbers in decimal or 0x hex, LEN 1 by
 * default.  Any read that touches a range fails whole, like a request that
 * covers a bad sector; writes are not affected (a disk remaps on write).
 */
#include <bfs/log.h>

#include <stdlib.h>
#include <string.h>

#include "dev_internal.h"

#define FAULT_MAX_RANGES	64

struct bfs_dev_faults {
	unsigned nr;
	struct { u64 off, len; } r[FAULT_MAX_RANGES];
};

static int parse_u64(const char **p, u64 *out)
{
	char *end;
	unsigned long long v;

	if (**p < '0' || **p > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(*p, &end, 0);
	if (errno || end == *p)
		return -EINVAL;
	*p = end;
	*out = v;
	return 0;
}

static int parse_faults(const char *spec, struct bfs_dev_faults *f, char *err)
{
	const char *p = spec;

	f->nr = 0;
	while (*p) {
		u64 off, len = 1;

		if (f->nr == FAULT_MAX_RANGES)
			return bfs_err_line(err, -EINVAL, "more than %u ranges", FAULT_MAX_RANGES);
		if (parse_u64(&p, &off))
			return bfs_err_line(err, -EINVAL, "'%s': an offset expected at '%s'", spec, p);
		if (*p == '+' && (p++, parse_u64(&p, &len) || !len))
			return bfs_err_line(err, -EINVAL, "'%s': a length above 0 expected", spec);
		if (off + len < off)
			return bfs_err_line(err, -EINVAL, "'%s': range past the end of 64 bits", spec);
		if (*p && *p != ',')
			return bfs_err_line(err, -EINVAL, "'%s': ',' or the end expected at '%s'",
					    spec, p);
		if (*p)
			p++;
		f->r[f->nr].off = off;
		f->r[f->nr++].len = len;
	}
	return 0;
}

int bfs_dev_set_read_faults(struct bfs_dev *dev, const char *spec, char *err)
{
	struct bfs_dev_faults *f;
	int ret;

	if (!spec || !*spec) {
		bfs_free(dev->faults);
		dev->faults = NULL;
		return 0;
	}
	f = bfs_zalloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	ret = parse_faults(spec, f, err);
	if (ret) {
		bfs_free(f);
		return ret;
	}
	bfs_free(dev->faults);
	dev->faults = f;
	return 0;
}

int bfs_dev_faults_from_env(struct bfs_dev *dev)
{
	const char *spec = getenv("BFS_FAULT_READ");
	char err[BFS_ERR_LINE_LEN] = "";
	int ret;

	if (!spec || !*spec)
		return 0;
	ret = bfs_dev_set_read_faults(dev, spec, err);
	if (ret)
		bfs_err("BFS_FAULT_READ: %s", err);
	else
		bfs_log(BFS_LOG_DEBUG, "BFS_FAULT_READ: reads of %s fail with EIO", spec);
	return ret;
}

int bfs_dev_fault_read(const struct bfs_dev *dev, u64 off, size_t len)
{
	const struct bfs_dev_faults *f = dev->faults;

	if (!f || !len)
		return 0;
	for (unsigned i = 0; i < f->nr; i++)
		if (off < f->r[i].off + f->r[i].len && f->r[i].off < off + len)
			return -EIO;
	return 0;
}

void bfs_dev_faults_release(struct bfs_dev *dev)
{
	bfs_free(dev->faults);
	dev->faults = NULL;
}
