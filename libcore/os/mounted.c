// SPDX-License-Identifier: MIT
/*
 * Is a device or image in use?  A block device is matched by device number
 * against the mount table and /proc/swaps; an image file by path against the
 * mount table (FUSE mounts name their source) and against the backing files
 * of loop devices.  bfs mount also holds an exclusive flock on the image,
 * which bfs_dev_open(BFS_DEV_EXCL) detects separately.
 */
#include <bfs/probe.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

/* mountinfo escapes blanks as octal: "\040" */
static void unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*o++ = (char)strtol((char[]){ s[1], s[2], s[3], 0 }, NULL, 8);
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

/* 1 if a mount's device number is @rdev or its source is @real */
static int scan_mountinfo(dev_t rdev, bool is_blk, const char *real,
			  char *where, size_t len)
{
	char line[8192];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		char mnt[4096], src[4096];
		char *sep;

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mnt) != 3)
			continue;
		sep = strstr(line, " - ");
		if (!sep || sscanf(sep + 3, "%*s %4095s", src) != 1)
			continue;
		unescape(mnt);
		unescape(src);
		if ((is_blk && makedev(maj, min) == rdev) || (real && !strcmp(src, real))) {
			snprintf(where, len, "mounted on %s", mnt);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

static int scan_swaps(const char *real, char *where, size_t len)
{
	char line[4096], name[4096];
	FILE *f = fopen("/proc/swaps", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%4095s", name) == 1 && !strcmp(name, real)) {
			snprintf(where, len, "in use as swap");
			found = 1;
		}
	fclose(f);
	return found;
}

static int scan_loops(const char *real, char *where, size_t len)
{
	DIR *d = opendir("/sys/block");
	struct dirent *de;
	int found = 0;

	if (!d)
		return 0;
	while (!found && (de = readdir(d))) {
		char p[PATH_MAX], backing[PATH_MAX];
		FILE *f;

		if (strncmp(de->d_name, "loop", 4))
			continue;
		snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		if (fgets(backing, sizeof(backing), f)) {
			backing[strcspn(backing, "\n")] = '\0';
			if (!strcmp(backing, real)) {
				snprintf(where, len, "attached to /dev/%s", de->d_name);
				found = 1;
			}
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

int bfs_check_mounted(const char *path, char *where, size_t len)
{
	char real[PATH_MAX];
	struct stat st;
	bool is_blk;
	int ret;

	if (stat(path, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!realpath(path, real))
		return -errno;
	is_blk = S_ISBLK(st.st_mode);
	ret = scan_mountinfo(st.st_rdev, is_blk, real, where, len);
	if (ret)
		return ret;
	ret = scan_swaps(real, where, len);
	if (ret || is_blk)
		return ret;
	return scan_loops(real, where, len);
}
