// SPDX-License-Identifier: MIT
/*
 * Pass 0: the superblock copies.  The primary (or, if it is bad, the newest
 * valid backup) is the reference; every copy the layout lists must decode to
 * the same superblock.  Repairs rewrite all copies from the reference.
 *
 * A superblock update interrupted by a power cut (backups one write newer
 * than the primary, one copy torn: bfs_sb_copy_interrupted()) is the
 * designed write order, not damage: it is said, not counted, and -y / -p
 * complete it as the next read-write mount would, by rewriting every copy.
 */
#include <bfs/fsck.h>
#include <bfs/os.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fsck_passes.h"

struct copies {
	unsigned nr;
	struct bfs_sb *buf[BFS_SB_MAX_COPIES];	/* [0]: the raw primary, only if unused */
	int ret[BFS_SB_MAX_COPIES];
	char err[BFS_SB_MAX_COPIES][BFS_ERR_LEN];
	const struct bfs_sb *newer;		/* a valid backup one write newer than the primary */
	bool all_backups_ref;			/* every backup valid and equal to the reference */
};

static void copies_free(struct copies *c)
{
	for (unsigned i = 0; i < BFS_SB_MAX_COPIES; i++)
		bfs_free(c->buf[i]);
}

static int read_copies(struct bfs_fsck *f, struct copies *c)
{
	const struct bfs_sb *ref = f->sb.sb;
	unsigned i;

	c->nr = ref->nr_copies;
	c->all_backups_ref = true;
	for (i = f->sb.used_backup ? 0 : 1; i < c->nr; i++) {
		c->buf[i] = bfs_aligned_alloc(BFS_SB_IO_ALIGN, BFS_SB_MAX_BYTES);
		if (!c->buf[i])
			return -ENOMEM;
		memset(c->buf[i], 0, BFS_SB_MAX_BYTES);
		c->ret[i] = bfs_sb_read_copy(f->dev, le64_to_cpu(ref->copy_offset[i]), c->buf[i],
					     c->err[i]);
		bfs_fsck_progress(f, i + 1, c->nr);
		if (!i)
			continue;
		if (c->ret[i] || le64_to_cpu(c->buf[i]->seq) != le64_to_cpu(ref->seq))
			c->all_backups_ref = false;
		if (!c->ret[i] && le64_to_cpu(c->buf[i]->seq) == le64_to_cpu(ref->seq) + 1 && !c->newer)
			c->newer = c->buf[i];
	}
	return 0;
}

static void interrupted(struct bfs_fsck *f, unsigned i, const char *what, bool *crash)
{
	*crash = true;
	bfs_fsck_printf(f, "superblock copy %u at offset %llu %s: an update interrupted by a power "
			"cut (the designed write order, not damage); %s", i,
			(unsigned long long)le64_to_cpu(f->sb.sb->copy_offset[i]), what,
			f->mode == BFS_FSCK_MODE_NO ? "the next read-write mount completes it"
						    : "completing it");
}

/* copies of one write are byte for byte the same */
static bool same_sb(const struct bfs_sb *a, const struct bfs_sb *b)
{
	return a->bytes.v == b->bytes.v && !memcmp(a, b, le32_to_cpu(a->bytes));
}

/* where two copies first differ, named for the report */
static void diff_text(const struct bfs_sb *a, const struct bfs_sb *b, char *buf, size_t len)
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
 * The backups, if the primary must give way to them: at least two, all the
 * same and valid, none equal to the primary, and either of the primary's
 * own write (copies of one write are identical) or differing from it in a
 * field that never changes after format (the name hash seed, which is also
 * the node id: a wrong one hides every node and every name).  The primary
 * was changed after it was written in a way its checksum does not catch (a
 * rewritten checksum, a raw tool): a power cut cannot do it, since the
 * primary is written last.
 */
static const struct bfs_sb *outvoting_backup(struct bfs_fsck *f, const struct copies *c)
{
	const struct bfs_sb *ref = f->sb.sb, *first = NULL;
	unsigned i, agree = 0;

	if (f->sb.used_backup)
		return NULL;
	for (i = 1; i < c->nr; i++) {
		const struct bfs_sb *b = c->buf[i];

		if (c->ret[i])
			continue;
		if (same_sb(ref, b) || (first && !same_sb(first, b)))
			return NULL;
		first = first ? first : b;
		agree++;
	}
	if (agree < 2)
		return NULL;
	return first->seq.v == ref->seq.v || immutable_differs(ref, first) ? first : NULL;
}

static void check_copies(struct bfs_fsck *f, const struct copies *c, bool *rewrite, bool *crash)
{
	const struct bfs_sb *ref = f->sb.sb;
	unsigned i;

	for (i = 1; i < c->nr; i++) {
		u64 off = le64_to_cpu(ref->copy_offset[i]);
		const struct bfs_sb *b = c->buf[i];

		if (!f->sb.used_backup && bfs_sb_copy_interrupted(ref, b, !c->ret[i], c->newer)) {
			interrupted(f, i, c->ret[i] ? "is torn" : "is one write newer than the primary",
				    crash);
		} else if (c->ret[i]) {
			if (bfs_fix_problem(f, PR_SB_BACKUP_INVALID, "copy %u at offset %llu: %s",
					    i, (unsigned long long)off, c->err[i]))
				*rewrite = true;
		} else if (le64_to_cpu(b->seq) != le64_to_cpu(ref->seq)) {
			if (bfs_fix_problem(f, PR_SB_BACKUP_STALE,
					    "copy %u at offset %llu has sequence %llu, primary %llu",
					    i, (unsigned long long)off,
					    (unsigned long long)le64_to_cpu(b->seq),
					    (unsigned long long)le64_to_cpu(ref->seq)))
				*rewrite = true;
		} else if (!same_sb(b, ref)) {
			char where[80];

			diff_text(ref, b, where, sizeof(where));
			if (bfs_fix_problem(f, PR_SB_BACKUP_STALE,
					    "copy %u at offset %llu has the primary's sequence %llu but "
					    "differs from it %s", i, (unsigned long long)off,
					    (unsigned long long)le64_to_cpu(ref->seq), where))
				*rewrite = true;
		}
	}
}

int bfs_fsck_pass_super(struct bfs_fsck *f)
{
	struct copies c = { 0 };
	const struct bfs_sb *outvoted;
	char err[BFS_ERR_LEN];
	bool rewrite = false, crash = false;
	int ret;

	ret = bfs_sb_read(f->dev, &f->sb, err);
	if (ret == -EUCLEAN) {
		/* bfs magic, but no copy is valid (or the device is too small): damage */
		bfs_fix_problem(f, PR_SB_NONE_VALID, "%s", err);
		return -EUCLEAN;
	}
	if (ret) {
		/* no bfs magic anywhere, or I/O: an operational error, as e2fsck has it */
		bfs_fsck_printf(f, "cannot find a valid superblock: %s", err);
		return ret;
	}
	if (f->mode != BFS_FSCK_MODE_NO && bfs_sb_check_writable(f->sb.sb, err)) {
		bfs_fsck_printf(f, "%s; check with -n", err);
		return -EROFS;
	}
	ret = read_copies(f, &c);
	if (ret)
		goto out;
	if (f->sb.used_backup) {
		/* written after every backup: torn only if they all hold the new superblock */
		if (c.all_backups_ref && bfs_sb_primary_torn(f->sb.sb, c.buf[0]))
			interrupted(f, 0, "is torn", &crash);
		else if (bfs_fix_problem(f, PR_SB_PRIMARY_INVALID,
					 "%s; backup copy %u at offset %llu is valid",
					 f->sb.primary_err, f->sb.copy,
					 (unsigned long long)f->sb.offset))
			rewrite = true;
	}
	outvoted = outvoting_backup(f, &c);
	if (outvoted) {
		char where[80];

		diff_text(f->sb.sb, outvoted, where, sizeof(where));
		if (bfs_fix_problem(f, PR_SB_PRIMARY_INVALID,
				    "the primary (sequence %llu) differs from every backup copy "
				    "(sequence %llu) %s, and the backups agree: they are used",
				    (unsigned long long)le64_to_cpu(f->sb.sb->seq),
				    (unsigned long long)le64_to_cpu(outvoted->seq), where)) {
			memcpy(f->sb.sb, outvoted, le32_to_cpu(outvoted->bytes));
			rewrite = true;
		}
	}
	check_copies(f, &c, &rewrite, &crash);
	if (crash && f->mode != BFS_FSCK_MODE_NO)
		rewrite = true;
	if (!rewrite)
		goto out;
	ret = bfs_sb_write(f->dev, f->sb.sb);
	if (ret)
		bfs_fsck_repair_failed(f, PR_SB_BACKUP_INVALID, ret);
out:
	copies_free(&c);
	return ret;
}
