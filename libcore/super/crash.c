// SPDX-License-Identifier: MIT
/*
 * Telling the crash states of bfs_sb_write() from damage.
 *
 * bfs_sb_write() writes every backup, flushes, then writes the primary, all
 * from one buffer, with seq one higher than before.  A power cut can leave:
 *   - before the flush: any backups one write newer than the primary (the
 *     primary still names the old superblock, which is in force), and one of
 *     them torn: some 512-byte sectors new, the rest old;
 *   - after it: every backup new and the primary old, new or torn.
 * Sectors are written whole, so a torn copy is, sector by sector, the old
 * superblock or the new one.  Old and new images are known when a valid copy
 * of each was found; the header sector holds seq, so a copy that claims the
 * new seq has its first sector new.  Anything else is damage.
 */
#include <bfs/super.h>

#include <string.h>

#define SECTOR 512U

static bool sector_eq(const void *a, const void *b, unsigned s)
{
	return !memcmp((const u8 *)a + s * SECTOR, (const u8 *)b + s * SECTOR, SECTOR);
}

/* is every sector of @raw one of @old's or @new's (either may be NULL: unknown, anything goes)? */
static bool sectors_old_or_new(const struct bfs_sb *raw, const struct bfs_sb *old,
			       const struct bfs_sb *new)
{
	unsigned s;

	if (!old || !new)
		return true;
	for (s = 0; s < BFS_SB_IO_ALIGN / SECTOR; s++)
		if (!sector_eq(raw, old, s) && !sector_eq(raw, new, s))
			return false;
	return true;
}

bool bfs_sb_copy_interrupted(const struct bfs_sb *ref, const struct bfs_sb *raw, bool valid,
			     const struct bfs_sb *newer)
{
	u64 seq = le64_to_cpu(ref->seq), claimed = le64_to_cpu(raw->seq);

	if (valid)
		return claimed == seq + 1;
	if (le64_to_cpu(raw->magic) != BFS_SB_MAGIC)
		return false;
	/* torn: the new header, or the old one while another copy proves an update */
	if (claimed == seq + 1)
		return sectors_old_or_new(raw, ref, newer);
	return claimed == seq && newer && sectors_old_or_new(raw, ref, newer);
}

bool bfs_sb_primary_torn(const struct bfs_sb *ref, const struct bfs_sb *raw)
{
	u64 seq = le64_to_cpu(ref->seq), claimed = le64_to_cpu(raw->seq);

	if (le64_to_cpu(raw->magic) != BFS_SB_MAGIC)
		return false;
	/* the new header sector must be exactly the backups' */
	if (claimed == seq)
		return sector_eq(raw, ref, 0);
	/* the old header: the rest must be old (unknown) or new */
	return claimed + 1 == seq;
}
