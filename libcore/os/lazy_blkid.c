// SPDX-License-Identifier: MIT
/*
 * libblkid, loaded on first use (include/bfs/lazy_lib.h): every function of
 * it bfs calls (signatures and partitions in probe.c, device specs,
 * blockdevs.c).  Without the library each returns what libblkid returns on
 * an error, so the callers' error paths report it.  A function bfs starts
 * to use must be added here, or the link fails (bfs does not link -lblkid).
 */
#include <blkid.h>

#include <bfs/lazy_lib.h>

static const char *const blkid_sonames[] = { "libblkid.so.1", "libblkid.so", NULL };
static struct bfs_lazy_lib lazy_blkid = { .sonames = blkid_sonames,
					  .package = "libblkid (Debian: libblkid1)" };

BFS_LAZY_FN(lazy_blkid, int, blkid_do_probe, (blkid_probe pr), (pr), -1)
BFS_LAZY_FN(lazy_blkid, int, blkid_do_safeprobe, (blkid_probe pr), (pr), -1)
BFS_LAZY_FN(lazy_blkid, int, blkid_do_wipe, (blkid_probe pr, int dryrun), (pr, dryrun), -1)
BFS_LAZY_FN(lazy_blkid, char *, blkid_evaluate_tag, (const char *token, const char *value,
	blkid_cache *cache), (token, value, cache), NULL)
BFS_LAZY_FN_VOID(lazy_blkid, blkid_free_probe, (blkid_probe pr), (pr))
BFS_LAZY_FN(lazy_blkid, blkid_probe, blkid_new_probe, (void), (), NULL)
BFS_LAZY_FN(lazy_blkid, blkid_probe, blkid_new_probe_from_filename, (const char *filename),
	(filename), NULL)
BFS_LAZY_FN(lazy_blkid, int, blkid_probe_enable_partitions, (blkid_probe pr, int enable),
	(pr, enable), -1)
BFS_LAZY_FN(lazy_blkid, int, blkid_probe_enable_superblocks, (blkid_probe pr, int enable),
	(pr, enable), -1)
BFS_LAZY_FN(lazy_blkid, int, blkid_probe_lookup_value, (blkid_probe pr, const char *name,
	const char **data, size_t *len), (pr, name, data, len), -1)
BFS_LAZY_FN(lazy_blkid, int, blkid_probe_set_device, (blkid_probe pr, int fd, blkid_loff_t off,
	blkid_loff_t size), (pr, fd, off, size), -1)
BFS_LAZY_FN(lazy_blkid, int, blkid_probe_set_partitions_flags, (blkid_probe pr, int flags),
	(pr, flags), -1)
BFS_LAZY_FN(lazy_blkid, int, blkid_probe_set_superblocks_flags, (blkid_probe pr, int flags),
	(pr, flags), -1)
