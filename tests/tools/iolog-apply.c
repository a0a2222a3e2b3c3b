// SPDX-License-Identifier: MIT
/*
 * bfs-iolog-apply: rebuild a device state a crash could leave, from an I/O
 * log recorded by libcore (dm-log-writes format), for integration tests of
 * commands that write outside the filesystem layer (migrate).
 *
 * usage: bfs-iolog-apply LOG                 print the number of entries, then
 *                                            one line per flush: the entry
 *                                            count up to and including it
 *        bfs-iolog-apply LOG IMAGE N [TORN]  apply entries [0, N) to IMAGE; with
 *                                            TORN, entry N too, only its first
 *                                            TORN bytes (a torn write)
 */
#include <bfs/dev.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct bfs_iolog log;
	struct bfs_dev *dev = NULL;
	size_t i, n;
	u64 torn = 0;
	int ret;

	if (argc != 2 && argc != 4 && argc != 5) {
		fprintf(stderr, "usage: bfs-iolog-apply LOG [IMAGE N [TORN]]\n");
		return 2;
	}
	ret = bfs_iolog_open(argv[1], &log);
	if (ret) {
		fprintf(stderr, "bfs-iolog-apply: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	if (argc == 2) {
		printf("%zu\n", log.nr);
		for (i = 0; i < log.nr; i++)
			if (log.entries[i].type == BFS_IOLOG_FLUSH)
				printf("%zu\n", i + 1);
		bfs_iolog_close(&log);
		return 0;
	}
	n = strtoull(argv[3], NULL, 10);
	if (argc == 5)
		torn = strtoull(argv[4], NULL, 10);
	if (n > log.nr || (torn && n >= log.nr)) {
		fprintf(stderr, "bfs-iolog-apply: the log has %zu entries\n", log.nr);
		bfs_iolog_close(&log);
		return 1;
	}
	ret = bfs_dev_open(argv[2], 0, &dev);
	for (i = 0; i < n && !ret; i++)
		ret = bfs_iolog_apply(&log, i, dev, 0);
	if (!ret && torn && (log.entries[n].type == BFS_IOLOG_WRITE ||
			     log.entries[n].type == BFS_IOLOG_FUA))
		ret = bfs_iolog_apply(&log, n, dev, BFS_MIN(torn, log.entries[n].len));
	if (!ret)
		ret = bfs_dev_flush(dev);
	if (dev)
		bfs_dev_close(dev);
	bfs_iolog_close(&log);
	if (ret) {
		fprintf(stderr, "bfs-iolog-apply: %s: %s\n", argv[2], strerror(-ret));
		return 1;
	}
	return 0;
}
