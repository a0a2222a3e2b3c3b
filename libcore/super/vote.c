// SPDX-License-Identifier: MIT
/*
 * The majority rule: when a valid primary superblock gives way to its backups.
 *
 * A valid primary is normally final (e2fsprogs' rule: it is written last, so
 * a power cut never leaves it newer than the truth).  But a primary changed
 * after it was written in a way its checksum does not catch (a raw tool that
 * rewrote the checksum, a stray write of a whole copy) is trusted by that
 * rule, and a wrong name hash seed, which is also the node id, makes every
 * node foreign and every name unfindable.  So the backups outvote it when at
 * least two of them are valid and identical, none equals the primary, and
 * either they carry the primary's own sequence (copies of one write are
 * byte for byte the same) or they differ from it in a field no tool changes
 * after format.  No crash state of bfs_sb_write() looks like that: backups
 * one write newer than the primary differ only in what an update changes.
 *
 * Every opener reads through bfs_sb_read(), so a mount, fsck -n, show-super,
 * dump-btree and the debug shell all make the same choice.
 */
#include <bfs/os.h>
#include <bfs/super.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

bool bfs_sb_same(const struct bfs_sb *a, const struct bfs_sb *b)
{
	return a->bytes.v == b->bytes.v && !memcmp(a, b, le32_to_cpu(a->bytes));
}

void bfs_sb_diff_text(const struct bfs_sb *a, const struct bfs_sb *b, char *buf, size_t len)
{
	static const struct { size_t off; const char *name; } fields[] = {
		{ offsetof(struct bfs_sb, bytes), "size and version" },
		{ offsetof(struct bfs_sb, seq), "sequence" },
		{ offsetof(struct bfs_sb, uuid), "uuid" },
		{ offsetof(struct bfs_sb, label), "label" },
		{ offsetof(struct bfs_sb, compat), "features" },
		{ offsetof(struct bfs_sb, time_created), "times" },
		{ offsetof(struct bfs_sb, dev_size), "geometry" },
		{ offsetof(struct bfs_sb, flags), "flags" },
		{ offsetof(struct bfs_sb, nbuckets), "geometry" },
		{ offsetof(struct bfs_sb, csum_type), "checksum and compression types" },
		{ offsetof(struct bfs_sb, nr_copies), "copy list" },
		{ offsetof(struct bfs_sb, hash_seed), "name hash seed" },
		{ offsetof(struct bfs_sb, reserved), "reserved words" },
		{ offsetof(struct bfs_sb, fields), "sections" },
	};
	size_t n = BFS_MIN(le32_to_cpu(a->bytes), le32_to_cpu(b->bytes)), i, k;
	const char *name = "?";

	/* the checksum, seq and write time differ between any two writes: look past them */
	for (i = offsetof(struct bfs_sb, bytes); i < n; i++) {
		if ((i >= offsetof(struct bfs_sb, seq) && i < offsetof(struct bfs_sb, uuid)) ||
		    (i >= offsetof(struct bfs_sb, time_written) && i < offsetof(struct bfs_sb, dev_size)))
			continue;
		if (((const u8 *)a)[i] != ((const u8 *)b)[i])
			break;
	}
	for (k = 0; i < n && k < ARRAY_SIZE(fields) && fields[k].off <= i; k++)
		name = fields[k].name;
	snprintf(buf, len, "at byte %zu (%s)", i, name);
}

/* fields no tool changes after format (resize moves the end, set-option the uuid) */
static bool immutable_differs(const struct bfs_sb *a, const struct bfs_sb *b)
{
	return a->hash_seed.v != b->hash_seed.v || a->time_created.v != b->time_created.v ||
	       a->block_size.v != b->block_size.v || a->btree_node_size.v != b->btree_node_size.v ||
	       a->bucket_size.v != b->bucket_size.v || a->first_bucket.v != b->first_bucket.v ||
	       a->journal_bucket.v != b->journal_bucket.v ||
	       a->journal_nbuckets.v != b->journal_nbuckets.v || a->csum_type != b->csum_type;
}

/*
 * The index of the first agreeing backup in @bufs (valid where !ret[i]) if
 * they outvote @primary, else 0.
 */
static unsigned outvoting_copy(const struct bfs_sb *primary, struct bfs_sb *const *bufs,
			       const int *ret, unsigned nr)
{
	const struct bfs_sb *first = NULL;
	unsigned i, first_i = 0, agree = 0;

	for (i = 1; i < nr; i++) {
		if (ret[i])
			continue;
		if (bfs_sb_same(primary, bufs[i]) || (first && !bfs_sb_same(first, bufs[i])))
			return 0;
		if (!first) {
			first = bufs[i];
			first_i = i;
		}
		agree++;
	}
	if (agree < 2)
		return 0;
	return first->seq.v == primary->seq.v || immutable_differs(primary, first) ? first_i : 0;
}

int bfs_sb_outvote(struct bfs_dev *dev, struct bfs_sb_handle *h)
{
	struct bfs_sb *bufs[BFS_SB_MAX_COPIES] = { 0 };
	int ret[BFS_SB_MAX_COPIES] = { 0 };
	const struct bfs_sb *p = h->sb;
	unsigned nr = p->nr_copies, i, win;
	int err = 0;

	for (i = 1; i < nr; i++) {
		bufs[i] = bfs_sb_buf_alloc();
		if (!bufs[i]) {
			err = -ENOMEM;
			goto out;
		}
		ret[i] = bfs_sb_read_copy(dev, le64_to_cpu(p->copy_offset[i]), bufs[i], NULL);
	}
	win = outvoting_copy(p, bufs, ret, nr);
	if (!win)
		goto out;
	{
		char where[80];

		bfs_sb_diff_text(p, bufs[win], where, sizeof(where));
		snprintf(h->primary_err, sizeof(h->primary_err),
			 "the primary (sequence %llu) differs from every backup copy (sequence %llu) "
			 "%s, and the backups agree", (unsigned long long)le64_to_cpu(p->seq),
			 (unsigned long long)le64_to_cpu(bufs[win]->seq), where);
	}
	h->offset = le64_to_cpu(p->copy_offset[win]);
	h->copy = win;
	bfs_sb_buf_free(h->sb);
	h->sb = bufs[win];
	bufs[win] = NULL;
	h->used_backup = true;
	h->outvoted = true;
	h->primary_ret = -EUCLEAN;
out:
	for (i = 0; i < BFS_SB_MAX_COPIES; i++)
		bfs_sb_buf_free(bufs[i]);
	return err;
}
