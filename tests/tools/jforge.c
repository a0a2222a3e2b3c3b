// SPDX-License-Identifier: MIT
/*
 * Forge a journal entry, checksum recomputed, so that recovery sees it as
 * valid framing (fixtures of journal damage; see fixtures/make-fixtures.sh):
 *
 *   bfs-jforge IMAGE FROM TO SEQ LAST_SEQ [BYTE_OFF BYTE]
 *
 * copies the entry at device offset FROM to offset TO (may be the same),
 * sets its seq and last_seq ("-" keeps either), optionally sets the byte at
 * BYTE_OFF inside the entry to BYTE, and recomputes the checksum.
 */
#include <bfs/checksum.h>
#include <bfs/dev.h>
#include <bfs/journal_format.h>
#include <bfs/os.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static u64 num(const char *s)
{
	return strtoull(s, NULL, 0);
}

int main(int argc, char **argv)
{
	struct bfs_jset *js;
	struct bfs_dev *dev;
	u64 from, to;
	size_t bytes;
	int ret;

	if (argc != 6 && argc != 8) {
		fprintf(stderr, "usage: bfs-jforge IMAGE FROM TO SEQ LAST_SEQ [BYTE_OFF BYTE]\n");
		return 2;
	}
	from = num(argv[2]);
	to = num(argv[3]);
	js = bfs_aligned_alloc(4096, BFS_JSET_MAX_BYTES);
	ret = js ? bfs_dev_open(argv[1], BFS_DEV_EXCL, &dev) : -ENOMEM;
	if (ret) {
		fprintf(stderr, "bfs-jforge: cannot open %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	ret = bfs_dev_read(dev, from, js, sizeof(*js));
	if (!ret && le64_to_cpu(js->magic) != BFS_JSET_MAGIC)
		ret = -ENODATA;
	bytes = ret ? 0 : bfs_jset_bytes(js);
	if (!ret && bytes > BFS_JSET_MAX_BYTES)
		ret = -EFBIG;
	if (!ret)
		ret = bfs_dev_read(dev, from, js, BFS_ROUND_UP(bytes, 4096));
	if (ret) {
		fprintf(stderr, "bfs-jforge: no journal entry at %llu: %s\n",
			(unsigned long long)from, strerror(-ret));
		return 1;
	}
	if (strcmp(argv[4], "-"))
		js->seq = cpu_to_le64(num(argv[4]));
	if (strcmp(argv[5], "-"))
		js->last_seq = cpu_to_le64(num(argv[5]));
	if (argc == 8) {
		u64 off = num(argv[6]);

		if (off >= bytes) {
			fprintf(stderr, "bfs-jforge: byte %llu is past the entry (%zu bytes)\n",
				(unsigned long long)off, bytes);
			return 1;
		}
		((u8 *)js)[off] = (u8)num(argv[7]);
	}
	js->csum = cpu_to_le64(bfs_xxh3((const u8 *)js + BFS_JSET_CSUM_OFFSET,
					bytes - BFS_JSET_CSUM_OFFSET));
	ret = bfs_dev_write(dev, to, js, BFS_ROUND_UP(bytes, 4096));
	if (!ret)
		ret = bfs_dev_flush(dev);
	bfs_dev_close(dev);
	bfs_free(js);
	if (ret)
		fprintf(stderr, "bfs-jforge: writing %s: %s\n", argv[1], strerror(-ret));
	return ret ? 1 : 0;
}
