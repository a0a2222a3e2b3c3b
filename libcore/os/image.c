// SPDX-License-Identifier: MIT
/* Creating sparse image files for bfs format --size. */
#include <bfs/probe.h>

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int bfs_image_create(const char *path, unsigned long long size)
{
	struct stat st;
	int fd, ret = 0;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		ret = -ENOTSUP;
	} else if ((unsigned long long)st.st_size > size) {
		ret = -EEXIST;
	} else if ((unsigned long long)st.st_size < size && ftruncate(fd, (off_t)size)) {
		ret = -errno;
	}
	close(fd);
	return ret;
}

int bfs_image_shrink(const char *path, unsigned long long size)
{
	struct stat st;
	int fd, ret = 0;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		ret = -errno;
	else if (!S_ISREG(st.st_mode))
		ret = -ENOTSUP;
	else if ((unsigned long long)st.st_size > size && (ftruncate(fd, (off_t)size) || fsync(fd)))
		ret = -errno;
	close(fd);
	return ret;
}
