// SPDX-License-Identifier: MIT
/*
 * Journal read side: validating entries, scanning the ring, replay and the
 * debugging walk.
 *
 * The scan reads every bucket of the ring and looks for entries at block
 * boundaries.  After a valid entry it skips the entry; after anything else it
 * moves on by one block, so a corrupt entry in the middle of a bucket does not
 * hide the valid entries behind it (hiding them would make the newest entry
 * look older than it is, and silently drop fsync'd updates).
 *
 * A bucket is always written from its start, so a bucket whose first block
 * holds no journal magic was never written by any bfs: it is skipped after
 * reading that one block.  This keeps opening a fresh or lightly used large
 * filesystem (a 1 GiB journal on 1 TiB) from reading the whole ring.
 */
#include "journal_types.h"

#include <bfs/checksum.h>
#include <bfs/log.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#define jerr(err, ...)							\
	do {								\
		if (err)						\
			snprintf(err, BFS_ERR_LEN, __VA_ARGS__);	\
	} while (0)

const char *bfs_jset_entry_type_name(unsigned type)
{
	static const char *const names[] = {
		[BFS_JSET_ENTRY_PAD]		= "pad",
		[BFS_JSET_ENTRY_BTREE_KEYS]	= "btree_keys",
		[BFS_JSET_ENTRY_BTREE_ROOT]	= "btree_root",
	};

	return type < ARRAY_SIZE(names) && names[type] ? names[type] : "unknown";
}

/* the sub-entries must tile the payload exactly */
static int jset_validate_entries(const struct bfs_jset *jset, u64 offset, u64 seq, char *err)
{
	const __le64 *p = (const __le64 *)jset->start;
	u32 u64s = le32_to_cpu(jset->u64s), pos = 0, nr = 0;

	while (pos < u64s) {
		const struct bfs_jset_entry *e = (const void *)(p + pos);
		u32 total = bfs_jset_entry_total_u64s(e);

		if (total > u64s - pos) {
			jerr(err, "journal entry at offset %" PRIu64 " seq %" PRIu64
			     ": sub-entry %u at payload byte %u (type %u, %u u64s) overruns the entry (payload %u u64s)",
			     offset, seq, nr, pos * 8, e->type, total - 1, u64s);
			return -EUCLEAN;
		}
		pos += total;
		nr++;
	}
	return 0;
}

static int jset_validate_fields(const struct bfs_jset *jset, u64 offset, char *err)
{
	u64 seq = le64_to_cpu(jset->seq), last_seq = le64_to_cpu(jset->last_seq);
	u32 flags = le32_to_cpu(jset->flags);

	if (flags & ~BFS_JSET_FLAGS_KNOWN) {
		jerr(err, "journal entry at offset %" PRIu64 " seq %" PRIu64 ": unknown flags 0x%x",
		     offset, seq, flags & ~BFS_JSET_FLAGS_KNOWN);
		return -EUCLEAN;
	}
	if (!seq || !last_seq || last_seq > seq) {
		jerr(err, "journal entry at offset %" PRIu64 " seq %" PRIu64
		     ": last_seq %" PRIu64 " out of range (must be 1..seq)", offset, seq, last_seq);
		return -EUCLEAN;
	}
	return jset_validate_entries(jset, offset, seq, err);
}

int bfs_jset_validate(const struct bfs_jset *jset, size_t avail, const u8 uuid[16],
		      u64 offset, char *err)
{
	u64 seq, stored, computed;
	size_t bytes;

	if (avail < sizeof(*jset) || le64_to_cpu(jset->magic) != BFS_JSET_MAGIC) {
		jerr(err, "journal entry at offset %" PRIu64 ": bad magic", offset);
		return -ENODATA;
	}
	seq = le64_to_cpu(jset->seq);
	if (memcmp(jset->uuid, uuid, sizeof(jset->uuid))) {
		jerr(err, "journal entry at offset %" PRIu64 " seq %" PRIu64
		     ": belongs to another filesystem (UUID differs)", offset, seq);
		return -ESTALE;
	}
	bytes = bfs_jset_bytes(jset);
	if (bytes > avail || bytes > BFS_JSET_MAX_BYTES) {
		jerr(err, "journal entry at offset %" PRIu64 " seq %" PRIu64
		     ": length %u u64s out of bounds (%zu bytes left in its bucket)",
		     offset, seq, le32_to_cpu(jset->u64s), avail);
		return -EUCLEAN;
	}
	stored = le64_to_cpu(jset->csum);
	computed = bfs_xxh3((const u8 *)jset + BFS_JSET_CSUM_OFFSET, bytes - BFS_JSET_CSUM_OFFSET);
	if (stored != computed) {
		jerr(err, "journal entry at offset %" PRIu64 " seq %" PRIu64
		     ": bad checksum (stored %016" PRIx64 ", computed %016" PRIx64 ")",
		     offset, seq, stored, computed);
		return -EUCLEAN;
	}
	return jset_validate_fields(jset, offset, err);
}

/* ---- scanning the ring ---- */

struct scan_ops {
	/* a valid entry of ours */
	int (*valid)(void *ctx, u32 bucket, u64 offset, const struct bfs_jset *jset);
	/* ours (magic and UUID match) but corrupt; header fields untrusted */
	int (*bad)(void *ctx, u64 offset, const struct bfs_jset *jset);
};

static void *journal_io_alloc(const struct bfs_journal *j, size_t bytes)
{
	return bfs_aligned_alloc(BFS_MAX(j->block_size, 4096U), bytes);
}

/* returns 1 if the bucket was skipped (no magic in its first block, and not @force) */
static int scan_bucket(struct bfs_journal *j, u32 bucket, u8 *buf, bool force,
		       const struct scan_ops *ops, void *ctx)
{
	u64 base = journal_bucket_offset(j, bucket);
	u32 o = 0;
	int ret;

	ret = bfs_dev_read(j->dev, base, buf, j->block_size);
	if (!ret && !force && le64_to_cpu(((const struct bfs_jset *)buf)->magic) != BFS_JSET_MAGIC)
		return 1;
	if (!ret && j->bucket_size > j->block_size)
		ret = bfs_dev_read(j->dev, base + j->block_size, buf + j->block_size,
				   j->bucket_size - j->block_size);
	if (ret) {
		bfs_err("journal: reading bucket %u at offset %" PRIu64 " failed: %s",
			bucket, base, strerror(-ret));
		return ret;
	}
	while (o + sizeof(struct bfs_jset) <= j->bucket_size) {
		const struct bfs_jset *jset = (const void *)(buf + o);

		ret = bfs_jset_validate(jset, j->bucket_size - o, j->uuid, base + o, NULL);
		if (!ret) {
			ret = ops->valid ? ops->valid(ctx, bucket, base + o, jset) : 0;
			if (ret)
				return ret;
			o += bfs_jset_disk_bytes(jset, j->block_size);
			continue;
		}
		if (ret == -EUCLEAN && ops->bad) {
			ret = ops->bad(ctx, base + o, jset);
			if (ret)
				return ret;
		}
		o += j->block_size;
	}
	return 0;
}

/* @skipped (nbuckets, may be NULL) says which buckets were skipped unread */
static int journal_scan(struct bfs_journal *j, const struct scan_ops *ops, void *ctx,
			bool *skipped)
{
	u8 *buf = journal_io_alloc(j, j->bucket_size);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (u32 b = 0; b < j->nbuckets && ret >= 0; b++) {
		ret = scan_bucket(j, b, buf, false, ops, ctx);
		if (skipped)
			skipped[b] = ret == 1;
	}
	bfs_free(buf);
	return ret < 0 ? ret : 0;
}

/* read bucket @b whole, blank first block or not */
static int journal_scan_one(struct bfs_journal *j, u32 b, const struct scan_ops *ops, void *ctx)
{
	u8 *buf = journal_io_alloc(j, j->bucket_size);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = scan_bucket(j, b, buf, true, ops, ctx);
	bfs_free(buf);
	return ret;
}

/* ---- bfs_journal_walk ---- */

struct walk_ctx {
	int (*fn)(void *ctx, u64 offset, const struct bfs_jset *jset);
	void *ctx;
};

static int walk_valid(void *ctx, u32 bucket, u64 offset, const struct bfs_jset *jset)
{
	struct walk_ctx *w = ctx;

	return w->fn(w->ctx, offset, jset);
}

int bfs_journal_walk(struct bfs_journal *j,
		     int (*fn)(void *ctx, u64 offset, const struct bfs_jset *jset), void *ctx)
{
	struct walk_ctx w = { .fn = fn, .ctx = ctx };
	struct scan_ops ops = { .valid = walk_valid };

	return journal_scan(j, &ops, &w, NULL);
}

/* ---- bfs_journal_read ---- */

/* no real journal gets here (2^62 entries); a seq above it is forged */
#define JSEQ_MAX	(1ULL << 62)
/* the smallest atomic write unit: an entry inside one sector cannot tear */
#define SECTOR_BYTES	512U

struct jent {
	u64	seq;		/* bad entries: as claimed */
	u64	last_seq;
	u64	offset;		/* device bytes */
	u64	bytes;		/* header + payload (bad entries: as claimed) */
	u32	bucket;		/* ring index */
	u32	disk_bytes;	/* valid entries: bytes on disk */
	char	*why;		/* valid entries: what opts->check rejected, or NULL */
	bool	excluded;	/* out of sequence: not part of the log */
};

struct jvec {
	struct jent *v;
	size_t nr, size;
};

struct read_ctx {
	struct bfs_journal *j;
	const struct bfs_journal_read_opts *o;
	bool	clean;		/* o->clean, unless the log continues right after it */
	struct jvec good;	/* valid entries */
	struct jvec bad;	/* corrupt ones: seq and length as claimed */
};

/* what recovery found: the log, and what of it is replayed */
struct plan {
	const struct jent *end;		/* newest entry of the log, NULL: none */
	u64	first, last;		/* replay range of @end */
	u64	stop;			/* first seq not replayed (last + 1 unless damaged) */
	const struct jent **chain;	/* chain[s - first]: the entry replayed for seq s */
	u64	max_seq;		/* highest seq of any valid entry kept in mind */
	bool	damaged;		/* something in [first, last] is missing or bad */
	bool	suspect;		/* entries were set aside as out of sequence */
};

static int jvec_push(struct jvec *vec, const struct jent *e)
{
	if (vec->nr == vec->size) {
		size_t size = vec->size ? vec->size * 2 : 64;
		struct jent *v = bfs_realloc(vec->v, size * sizeof(*v));

		if (!v)
			return -ENOMEM;
		vec->v = v;
		vec->size = size;
	}
	vec->v[vec->nr++] = *e;
	return 0;
}

static u32 offset_bucket(const struct bfs_journal *j, u64 offset)
{
	return (u32)((offset - j->start) / j->bucket_size);
}

/* run the caller's check over every sub-entry; a message if one fails */
static char *check_entries_of(struct read_ctx *r, const struct bfs_jset *jset)
{
	const struct bfs_jset_entry *i;
	char err[BFS_ERR_LEN] = "";
	char *why;

	/* at or below min_seq nothing is ever replayed */
	if (!r->o->check || le64_to_cpu(jset->seq) <= r->o->min_seq)
		return NULL;
	for_each_jset_entry(jset, i)
		if (r->o->check(r->o->check_ctx, le64_to_cpu(jset->seq), i, err))
			goto bad;
	return NULL;
bad:
	why = bfs_malloc(strlen(err) + 1);
	if (why)
		memcpy(why, err, strlen(err) + 1);
	return why;
}

static int read_valid(void *ctx, u32 bucket, u64 offset, const struct bfs_jset *jset)
{
	struct read_ctx *r = ctx;
	struct jent e = {
		.seq		= le64_to_cpu(jset->seq),
		.last_seq	= le64_to_cpu(jset->last_seq),
		.offset		= offset,
		.bytes		= bfs_jset_bytes(jset),
		.bucket		= bucket,
		.disk_bytes	= (u32)bfs_jset_disk_bytes(jset, r->j->block_size),
	};
	int ret;

	e.why = check_entries_of(r, jset);
	ret = jvec_push(&r->good, &e);
	if (ret)
		bfs_free(e.why);
	return ret;
}

static int read_bad(void *ctx, u64 offset, const struct bfs_jset *jset)
{
	struct read_ctx *r = ctx;
	struct jent e = {
		.seq = le64_to_cpu(jset->seq),
		.offset = offset,
		.bytes = sizeof(*jset) + (u64)le32_to_cpu(jset->u64s) * 8,
		.bucket = offset_bucket(r->j, offset),
	};

	return jvec_push(&r->bad, &e);
}

static int jent_cmp(const void *a, const void *b)
{
	const struct jent *l = a, *r = b;

	if (l->seq != r->seq)
		return l->seq < r->seq ? -1 : 1;
	return l->offset < r->offset ? -1 : l->offset > r->offset;
}

/* re-read the corrupt entry @e to say what is wrong with it */
static void bad_reason(struct bfs_journal *j, const struct jent *e, char err[BFS_ERR_LEN])
{
	u64 bucket_end = journal_bucket_offset(j, e->bucket) + j->bucket_size;
	size_t avail = bucket_end - e->offset;
	void *buf = journal_io_alloc(j, avail);

	snprintf(err, BFS_ERR_LEN, "unreadable");
	if (buf && !bfs_dev_read(j->dev, e->offset, buf, avail))
		bfs_jset_validate(buf, avail, j->uuid, e->offset, err);
	bfs_free(buf);
}

/* one piece of damage: a finding for the caller, or a log line */
static void __attribute__((format(printf, 5, 6)))
jfind(struct read_ctx *r, enum bfs_problem_code code, enum bfs_log_level level,
      const struct jent *e, const char *fmt, ...)
{
	struct bfs_finding f = { .code = code, .loc = BFS_FSCK_LOC_NONE };
	va_list ap;

	if (e) {
		f.loc.jentry = e->offset;
		f.loc.jbucket = e->bucket;
		f.loc.jseq = e->seq;
	}
	va_start(ap, fmt);
	vsnprintf(f.detail, sizeof(f.detail), fmt, ap);
	va_end(ap);
	r->j->needs_reset = true;
	if (r->o->finding)
		r->o->finding(r->o->finding_ctx, &f);
	else
		bfs_log(level, "journal: %s", f.detail);
}

/* could @next be the entry written right after @prev?  Right behind it, or at the start of the next bucket */
static bool follows(const struct bfs_journal *j, const struct jent *prev, const struct jent *next)
{
	if (next->bucket == prev->bucket && next->offset == prev->offset + prev->disk_bytes)
		return true;
	return next->bucket == (prev->bucket + 1) % j->nbuckets &&
		next->offset == journal_bucket_offset(j, next->bucket);
}

/* index range [*lo, *hi) of the kept valid entries with @seq */
static void seq_range(const struct read_ctx *r, u64 seq, size_t *lo, size_t *hi)
{
	size_t a = 0, b = r->good.nr;

	while (a < b) {
		size_t m = (a + b) / 2;

		if (r->good.v[m].seq < seq)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	for (b = a; b < r->good.nr && r->good.v[b].seq == seq; b++)
		;
	*hi = b;
}

static const struct jent *bad_claiming(const struct read_ctx *r, u64 seq)
{
	for (size_t i = 0; i < r->bad.nr; i++)
		if (r->bad.v[i].seq == seq)
			return &r->bad.v[i];
	return NULL;
}

static u64 count_valid(const struct read_ctx *r, u64 from, u64 to)
{
	u64 n = 0;

	for (size_t i = 0; i < r->good.nr; i++)
		n += !r->good.v[i].excluded && r->good.v[i].seq >= from && r->good.v[i].seq <= to;
	return n;
}

/*
 * The newest entry must be the one written after its predecessor: an entry
 * seq S > min_seq + 1 always has seq S - 1 right before it in the ring (only
 * a newer entry could have overwritten it).  One that has not is forged or
 * misplaced (a copy, a seq changed with the checksum recomputed), unless the
 * one before it is corrupt, which the range check reports, or it is the first
 * entry of a journal started empty (it needs nothing older, and nothing older
 * is there).
 */
static bool newest_in_place(struct read_ctx *r, const struct jent *n, char *why, size_t len)
{
	size_t lo, hi, i;

	if (n->seq > JSEQ_MAX) {
		snprintf(why, len, "seq beyond any real journal");
		return false;
	}
	if (n->seq <= r->o->min_seq + 1)
		return true;
	/* the first entry of a journal started empty (at some min_seq) needs nothing older */
	if (n->last_seq == n->seq && n == &r->good.v[0])
		return true;
	seq_range(r, n->seq - 1, &lo, &hi);
	for (i = lo; i < hi; i++)
		if (!r->good.v[i].excluded && follows(r->j, &r->good.v[i], n))
			return true;
	if (lo < hi) {
		snprintf(why, len, "seq %" PRIu64 " is at offset %" PRIu64 ", not right before it",
			 n->seq - 1, r->good.v[lo].offset);
		return false;
	}
	if (bad_claiming(r, n->seq - 1))
		return true;
	snprintf(why, len, "no entry seq %" PRIu64 " precedes it", n->seq - 1);
	return false;
}

static const struct jent *find_end(struct read_ctx *r, struct plan *p)
{
	char why[BFS_ERR_LEN];

	for (size_t i = r->good.nr; i-- > 0;) {
		struct jent *n = &r->good.v[i];

		if (n->excluded)
			continue;
		if (newest_in_place(r, n, why, sizeof(why)))
			return n;
		n->excluded = true;
		p->suspect = true;
		jfind(r, PR_JOURNAL_OUT_OF_SEQUENCE, BFS_LOG_WARN, n,
		      "entry seq %" PRIu64 " at offset %" PRIu64 " (bucket %u) is out of sequence: %s; "
		      "not part of the log", n->seq, n->offset, n->bucket, why);
	}
	return NULL;
}

/* damage at seq @s of the replay range: what the caller is told */
static void report_damage(struct read_ctx *r, struct plan *p, u64 s, size_t lo, size_t hi,
			  const struct jent *prev)
{
	u64 lost = count_valid(r, s, p->last);
	char tail[200], err[BFS_ERR_LEN];
	const struct jent *b;

	if (r->o->salvage && s == p->first)
		snprintf(tail, sizeof(tail), "nothing of the range is replayed (the tree of its "
			 "checkpoint is kept); %" PRIu64 " valid entr%s up to seq %" PRIu64
			 " discarded", lost, lost == 1 ? "y" : "ies", p->last);
	else if (r->o->salvage)
		snprintf(tail, sizeof(tail), "replay stops after seq %" PRIu64 "; %" PRIu64
			 " valid entr%s up to seq %" PRIu64 " discarded", s - 1, lost,
			 lost == 1 ? "y" : "ies", p->last);
	else
		snprintf(tail, sizeof(tail), "nothing replayed (fsck can replay up to seq %"
			 PRIu64 ", discarding %" PRIu64 " valid entr%s up to seq %" PRIu64 ")",
			 s - 1, lost, lost == 1 ? "y" : "ies", p->last);
	if (lo < hi && r->good.v[lo].why) {
		const struct jent *e = &r->good.v[lo];

		jfind(r, PR_JOURNAL_ENTRY_INVALID, BFS_LOG_ERR, e,
		      "entry seq %" PRIu64 " at offset %" PRIu64 " (bucket %u) is inside the replay "
		      "range %" PRIu64 "..%" PRIu64 " but cannot be replayed: %s; %s",
		      s, e->offset, e->bucket, p->first, p->last, e->why, tail);
	} else if (lo < hi) {
		const struct jent *e = &r->good.v[lo];

		jfind(r, PR_JOURNAL_OUT_OF_SEQUENCE, BFS_LOG_ERR, e,
		      "entry seq %" PRIu64 " at offset %" PRIu64 " (bucket %u) does not follow seq %"
		      PRIu64 " at offset %" PRIu64 " in the ring%s; %s", s, e->offset, e->bucket,
		      s - 1, prev ? prev->offset : 0,
		      hi - lo > 1 ? " (the seq is used more than once)" : "", tail);
	} else if ((b = bad_claiming(r, s))) {
		bad_reason(r->j, b, err);
		jfind(r, PR_JOURNAL_ENTRY_CORRUPT, BFS_LOG_ERR, b,
		      "entry seq %" PRIu64 " at offset %" PRIu64 " is inside the replay range %" PRIu64
		      "..%" PRIu64 " but corrupt: %s; %s", s, b->offset, p->first, p->last, err, tail);
	} else {
		struct jent where = { .seq = s, .offset = prev ? prev->offset : 0,
				      .bucket = prev ? prev->bucket : 0 };

		jfind(r, PR_JOURNAL_SEQ_GAP, BFS_LOG_ERR, prev ? &where : NULL,
		      "seq gap: seq %" PRIu64 " is missing after seq %" PRIu64 " at offset %" PRIu64
		      "; replay needs every seq in %" PRIu64 "..%" PRIu64 "; %s",
		      s, s - 1, prev ? prev->offset : 0, p->first, p->last, tail);
	}
}

/*
 * Walk the replay range in seq order: each entry must be valid, pass the
 * check, and sit right after the one before it.  Stops at the first that
 * does not; copies of a seq elsewhere in the ring are out of sequence.
 */
static int walk_range(struct read_ctx *r, struct plan *p)
{
	const struct jent *prev = NULL;
	u64 s;

	/* each seq needs its own entry: a range longer than that has a gap in it */
	p->chain = bfs_calloc((size_t)BFS_MIN(p->last - p->first + 1, (u64)r->good.nr + 1),
			      sizeof(*p->chain));
	if (!p->chain)
		return -ENOMEM;
	for (s = p->first; s <= p->last; s++) {
		const struct jent *pick = NULL;
		size_t lo, hi, i;

		seq_range(r, s, &lo, &hi);
		for (i = lo; i < hi && !pick; i++) {
			const struct jent *e = &r->good.v[i];

			if (e->excluded)
				continue;
			if (prev ? follows(r->j, prev, e) : true)
				pick = e;
		}
		if (!pick || pick->why) {
			p->damaged = true;
			report_damage(r, p, s, pick ? (size_t)(pick - r->good.v) : lo,
				      pick ? (size_t)(pick - r->good.v) + 1 : hi, prev);
			break;
		}
		for (i = lo; i < hi; i++)
			if (&r->good.v[i] != pick && !r->good.v[i].excluded) {
				r->good.v[i].excluded = true;
				p->suspect = true;
				jfind(r, PR_JOURNAL_OUT_OF_SEQUENCE, BFS_LOG_WARN, &r->good.v[i],
				      "entry seq %" PRIu64 " at offset %" PRIu64 " (bucket %u) is a "
				      "second copy of seq %" PRIu64 " (the one in sequence is at offset %"
				      PRIu64 "); ignored", s, r->good.v[i].offset,
				      r->good.v[i].bucket, s, pick->offset);
			}
		p->chain[s - p->first] = pick;
		prev = pick;
	}
	p->stop = s;
	return 0;
}

/*
 * Corrupt entries claiming a seq after the end of the log.  A power cut can
 * leave exactly one: the entry being written (entries are written one at a
 * time), torn, so its header claims end + 1 and it sits where that entry
 * goes (right after the end, or at the start of the next bucket), and it
 * spans more than one sector (a sector is written whole or not at all).
 * That is a crash state and ignored; anything else is damage.
 */
static void check_tail(struct read_ctx *r, const struct plan *p)
{
	const struct jent *e = p->end, *t = NULL;
	u64 base = e ? e->seq : r->o->min_seq, nr = 0;
	char err[BFS_ERR_LEN];
	bool at_wr;

	for (size_t i = 0; i < r->bad.nr; i++)
		if (r->bad.v[i].seq > base && nr++ == 0)
			t = &r->bad.v[i];
	if (!nr)
		return;
	at_wr = e ? (t->bucket == e->bucket && t->offset == e->offset + e->disk_bytes) ||
		    (t->bucket == (e->bucket + 1) % r->j->nbuckets &&
		     t->offset == journal_bucket_offset(r->j, t->bucket))
		  : t->offset == r->j->start;
	if (nr == 1 && t->seq == base + 1 && at_wr) {
		if (t->bytes > SECTOR_BYTES) {
			bfs_info("journal: ignoring torn entry at offset %" PRIu64
				 " (claims seq %" PRIu64 ") after the newest entry %" PRIu64,
				 t->offset, t->seq, base);
			return;
		}
		bad_reason(r->j, t, err);
		jfind(r, PR_JOURNAL_NEWEST_CORRUPT, BFS_LOG_WARN, t,
		      "entry seq %" PRIu64 " at offset %" PRIu64 " (bucket %u): %s; it is %" PRIu64
		      " bytes, inside one sector, so a power cut cannot have torn it: what it "
		      "committed is lost", t->seq, t->offset, t->bucket, err, t->bytes);
		return;
	}
	bad_reason(r->j, t, err);
	jfind(r, PR_JOURNAL_TAIL_CORRUPT, BFS_LOG_WARN, t,
	      "%" PRIu64 " corrupt entr%s claim%s a seq after the newest valid one (%" PRIu64
	      ") and %s not one torn write; the first, at offset %" PRIu64 " (bucket %u): %s",
	      nr, nr == 1 ? "y" : "ies", nr == 1 ? "s" : "", base, nr == 1 ? "is" : "are",
	      t->offset, t->bucket, err);
}

/*
 * A clean filesystem needs nothing from the journal.  Entries after min_seq
 * are garbage, unless they are valid and continue the log from min_seq
 * without a gap: then the superblock's clean flag is what is out of date (a
 * backup superblock, a lost update), and they hold acknowledged updates.
 * e2fsck replays a journal with data under a clear needs_recovery flag for
 * the same reason.  True in that case: every opener then replays them as
 * after a crash (make_plan), and the journal is not erased (they are
 * needed until a checkpoint holds them).
 */
static bool check_clean(struct read_ctx *r, struct plan *p)
{
	const struct jent *first = NULL, *prev = NULL;
	u64 nr = 0, nr_bad = 0, hi = 0;
	bool chain = true;

	for (size_t i = 0; i < r->good.nr; i++) {
		const struct jent *e = &r->good.v[i];

		if (e->seq <= r->o->min_seq) {
			p->end = e;
			continue;
		}
		if (!nr++)
			first = e;
		if (prev ? e->seq != prev->seq + 1 || !follows(r->j, prev, e) :
			   e->seq != r->o->min_seq + 1)
			chain = false;
		prev = e;
		hi = e->seq;
	}
	for (size_t i = 0; i < r->bad.nr; i++)
		if (r->bad.v[i].seq > r->o->min_seq && !nr_bad++ && !first)
			first = &r->bad.v[i];
	if (!nr && !nr_bad)
		return false;
	if (nr && !nr_bad && chain) {
		jfind(r, PR_JOURNAL_AFTER_CLEAN, BFS_LOG_WARN, first,
		      "the superblock says the filesystem was shut down cleanly at seq %" PRIu64
		      ", but %" PRIu64 " valid entr%s (seq %" PRIu64 "..%" PRIu64 ", from offset %"
		      PRIu64 ") continue%s the log after it: the clean flag is out of date, and "
		      "erasing %s would lose %s updates",
		      r->o->min_seq, nr, nr == 1 ? "y" : "ies", first->seq, hi, first->offset,
		      nr == 1 ? "s" : "", nr == 1 ? "it" : "them", nr == 1 ? "its" : "their");
		r->j->needs_reset = false;
		return true;
	}
	jfind(r, PR_JOURNAL_STALE, BFS_LOG_WARN, first,
	      "the filesystem was shut down cleanly at seq %" PRIu64 ", but %" PRIu64
	      " valid entr%s (seq up to %" PRIu64 ") and %" PRIu64 " corrupt one%s claim later "
	      "seqs; the first at offset %" PRIu64, r->o->min_seq, nr, nr == 1 ? "y" : "ies",
	      hi, nr_bad, nr_bad == 1 ? "" : "s", first->offset);
	return false;
}

static int make_plan(struct read_ctx *r, struct plan *p)
{
	int ret;

	for (size_t i = 0; i < r->good.nr; i++)
		if (r->good.v[i].seq < JSEQ_MAX)
			p->max_seq = BFS_MAX(p->max_seq, r->good.v[i].seq);
	p->first = 1;
	p->last = 0;
	p->stop = 1;
	if (r->clean) {
		if (!check_clean(r, p))
			return 0;
		/* the clean flag is out of date: the log is replayed as after a crash */
		r->clean = false;
	}
	p->end = find_end(r, p);
	if (p->end) {
		p->first = BFS_MAX(p->end->last_seq, r->o->min_seq + 1);
		p->last = p->end->seq;
		p->stop = p->first;
		if (p->first <= p->last) {
			ret = walk_range(r, p);
			if (ret)
				return ret;
		}
	} else if (r->bad.nr && !r->good.nr) {
		bfs_warn("journal: no valid entry, %zu corrupt ones", r->bad.nr);
	}
	check_tail(r, p);
	return 0;
}

/* the replayed entry appends would follow, NULL: none */
static const struct jent *plan_tail_entry(const struct plan *p)
{
	if (!p->damaged)
		return p->end;
	return p->stop > p->first ? p->chain[p->stop - 1 - p->first] : NULL;
}

static const struct jent *roots_entry(const struct read_ctx *r, const struct plan *p);

/* set up the append state from what the scan found */
static void journal_start(struct bfs_journal *j, const struct read_ctx *r, const struct plan *p)
{
	const struct jent *newest = plan_tail_entry(p);
	u64 min_seq = r->o->min_seq;
	u64 n = newest ? newest->seq : 0, l = newest ? newest->last_seq : 0;

	memset(j->bucket_seq, 0, j->nbuckets * sizeof(*j->bucket_seq));
	if (p->damaged || p->suspect || (r->clean && j->needs_reset)) {
		u32 b = newest ? (newest->bucket + 1) % j->nbuckets : 0;

		/*
		 * Only the replayed entries are needed (and only until the caller
		 * has made them durable elsewhere); new seqs go above everything
		 * on disk, the first entry written needs nothing older, and it
		 * goes to a bucket no replayed entry uses, so even a torn write of
		 * it leaves the replayed prefix as it was.
		 */
		for (u64 s = p->first; p->chain && s < p->stop; s++)
			j->bucket_seq[p->chain[s - p->first]->bucket] = s;
		/* nothing of the range replayed: the entry its roots come from is needed */
		if (p->damaged && p->stop == p->first && roots_entry(r, p))
			j->bucket_seq[roots_entry(r, p)->bucket] = roots_entry(r, p)->seq;
		j->cur_seq = r->clean ? min_seq + 1 : BFS_MAX(p->max_seq, min_seq) + 1;
		j->written_seq = j->cur_seq - 1;
		j->last_seq = j->durable_last_seq = j->cur_seq;
		for (u32 k = 0; k < j->nbuckets && j->bucket_seq[b]; k++)
			b = (b + 1) % j->nbuckets;
		j->wr_bucket = b;
		j->wr_offset = 0;
		if (j->bucket_seq[b] && newest) {
			j->wr_bucket = newest->bucket;
			j->wr_offset = newest->offset - journal_bucket_offset(j, newest->bucket) +
				newest->disk_bytes;
		}
		goto out;
	}
	for (size_t i = 0; i < r->good.nr; i++) {
		const struct jent *e = &r->good.v[i];

		/* entries older than last_seq are dead: their buckets are reusable */
		if (!e->excluded && e->seq >= l && e->seq <= n)
			j->bucket_seq[e->bucket] = BFS_MAX(j->bucket_seq[e->bucket], e->seq);
	}
	j->cur_seq = BFS_MAX(n, min_seq) + 1;
	j->written_seq = j->cur_seq - 1;
	j->durable_last_seq = l;
	j->last_seq = BFS_MIN(BFS_MAX(l, min_seq + 1), j->cur_seq);
	if (newest) {
		j->wr_bucket = newest->bucket;
		j->wr_offset = newest->offset - journal_bucket_offset(j, newest->bucket) +
			newest->disk_bytes;
	} else {
		j->wr_bucket = 0;
		j->wr_offset = 0;
	}
out:
	j->buf[0].u64s = j->buf[1].u64s = 0;
	j->cur = 0;
}

static int replay_one(struct bfs_journal *j, const struct jent *e, void *buf, bool roots_only,
		      int (*fn)(void *ctx, u64 seq, const struct bfs_jset_entry *e), void *ctx)
{
	size_t avail = j->bucket_size - (e->offset - journal_bucket_offset(j, e->bucket));
	const struct bfs_jset *jset = buf;
	const struct bfs_jset_entry *i;
	char err[BFS_ERR_LEN];
	int ret;

	ret = bfs_dev_read(j->dev, e->offset, buf, e->disk_bytes);
	if (ret)
		return ret;
	/* the device may have changed under us since the scan */
	ret = bfs_jset_validate(jset, BFS_MIN(avail, (size_t)e->disk_bytes), j->uuid, e->offset, err);
	if (!ret && le64_to_cpu(jset->seq) != e->seq)
		ret = -EUCLEAN;
	if (ret) {
		bfs_err("journal: entry seq %" PRIu64 " changed while replaying: %s", e->seq, err);
		return -EUCLEAN;
	}
	for_each_jset_entry(jset, i) {
		if (roots_only && i->type != BFS_JSET_ENTRY_BTREE_ROOT)
			continue;
		ret = fn(ctx, e->seq, i);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Every entry of a replay range carries the same roots: they change only at
 * a checkpoint, whose entry starts the range of every later one.  So when
 * the range is damaged right at its start, the roots of any sound entry of
 * it are still the tree on disk (the clean section's may be much older, and
 * their nodes reused since): the newest sound one is used, with no keys.
 */
static const struct jent *roots_entry(const struct read_ctx *r, const struct plan *p)
{
	for (size_t i = r->good.nr; i-- > 0;) {
		const struct jent *e = &r->good.v[i];

		if (e->seq < p->first)
			break;
		if (e->seq <= p->last && !e->excluded && !e->why)
			return e;
	}
	return NULL;
}

static int replay(struct bfs_journal *j, const struct read_ctx *r, const struct plan *p,
		  int (*fn)(void *ctx, u64 seq, const struct bfs_jset_entry *e), void *ctx)
{
	const struct jent *roots = NULL;
	void *buf;
	int ret = 0;

	if (p->damaged && p->stop == p->first)
		roots = roots_entry(r, p);
	if (!fn || (p->stop <= p->first && !roots))
		return 0;
	buf = journal_io_alloc(j, j->max_bytes);
	if (!buf)
		return -ENOMEM;
	if (roots)
		ret = replay_one(j, roots, buf, true, fn, ctx);
	for (u64 s = p->first; s < p->stop && !ret; s++)
		ret = replay_one(j, p->chain[s - p->first], buf, false, fn, ctx);
	bfs_free(buf);
	return ret;
}

static void read_ctx_free(struct read_ctx *r)
{
	for (size_t i = 0; i < r->good.nr; i++)
		bfs_free(r->good.v[i].why);
	bfs_free(r->good.v);
	bfs_free(r->bad.v);
}

int bfs_journal_recover(struct bfs_journal *j, const struct bfs_journal_read_opts *o,
			int (*fn)(void *ctx, u64 seq, const struct bfs_jset_entry *e), void *ctx)
{
	struct scan_ops ops = { .valid = read_valid, .bad = read_bad };
	struct read_ctx r = { .j = j, .o = o, .clean = o->clean };
	struct plan p = { 0 };
	bool *skipped = NULL;
	int ret;

	bfs_mutex_lock(&j->lock);
	ret = j->read_done || j->writing ? -EINVAL : 0;
	j->needs_reset = false;
	bfs_mutex_unlock(&j->lock);
	if (ret)
		return ret;

	skipped = bfs_calloc(j->nbuckets, sizeof(*skipped));
	ret = skipped ? journal_scan(j, &ops, &r, skipped) : -ENOMEM;
	if (ret)
		goto out;
	/*
	 * A bucket with a blank first block is skipped unread (it was never
	 * written) - unless it is the one appends would have moved on to: a
	 * damaged first entry there must not hide the newer entries behind it.
	 */
	for (;;) {
		u32 b;

		if (r.good.nr)
			qsort(r.good.v, r.good.nr, sizeof(*r.good.v), jent_cmp);
		b = r.good.nr ? (r.good.v[r.good.nr - 1].bucket + 1) % j->nbuckets : 0;
		if (!skipped[b])
			break;
		skipped[b] = false;
		ret = journal_scan_one(j, b, &ops, &r);
		if (ret)
			goto out;
	}
	ret = make_plan(&r, &p);
	if (ret)
		goto out;
	/* a mount does not guess: damage or entries set aside make it refuse */
	if ((p.damaged || p.suspect) && !o->salvage && !r.clean) {
		ret = -EUCLEAN;
		goto out;
	}

	bfs_mutex_lock(&j->lock);
	journal_start(j, &r, &p);
	j->replay_first = p.first;
	j->replay_last = p.stop - 1;
	bfs_mutex_unlock(&j->lock);

	ret = replay(j, &r, &p, fn, ctx);
	if (!ret) {
		bfs_mutex_lock(&j->lock);
		j->read_done = true;
		bfs_mutex_unlock(&j->lock);
	}
out:
	bfs_free(skipped);
	bfs_free(p.chain);
	read_ctx_free(&r);
	return ret;
}

int bfs_journal_read(struct bfs_journal *j, u64 min_seq,
		     int (*fn)(void *ctx, u64 seq, const struct bfs_jset_entry *e), void *ctx)
{
	struct bfs_journal_read_opts o = { .min_seq = min_seq };

	return bfs_journal_recover(j, &o, fn, ctx);
}

bool bfs_journal_needs_reset(struct bfs_journal *j)
{
	bool ret;

	bfs_mutex_lock(&j->lock);
	ret = j->needs_reset;
	bfs_mutex_unlock(&j->lock);
	return ret;
}

/*
 * Zero every block of bucket @b that starts with our magic: the later ones
 * first and, after a flush, the first block, so an interrupted erase never
 * leaves a bucket whose first block is blank (the scan would skip it) over
 * entries that a later pass over the ring would bring back.
 */
static int erase_bucket(struct bfs_journal *j, u32 b, u8 *buf, const u8 *zero)
{
	u64 base = journal_bucket_offset(j, b);
	bool head = false, rest = false;
	int ret;

	ret = bfs_dev_read(j->dev, base, buf, j->bucket_size);
	if (ret)
		return ret;
	for (u32 o = 0; o + sizeof(struct bfs_jset) <= j->bucket_size; o += j->block_size) {
		const struct bfs_jset *jset = (const void *)(buf + o);

		if (le64_to_cpu(jset->magic) != BFS_JSET_MAGIC ||
		    memcmp(jset->uuid, j->uuid, sizeof(jset->uuid)))
			continue;
		if (!o) {
			head = true;
			continue;
		}
		rest = true;
		ret = bfs_dev_write(j->dev, base + o, zero, j->block_size);
		if (ret)
			return ret;
	}
	if (rest)
		ret = bfs_dev_flush(j->dev);
	if (!ret && head)
		ret = bfs_dev_write(j->dev, base, zero, j->block_size);
	return ret;
}

int bfs_journal_reset(struct bfs_journal *j)
{
	u8 *buf, *zero;
	int ret = 0;

	bfs_mutex_lock(&j->lock);
	if (!j->read_done || j->writing || j->buf[j->cur].u64s || j->written_seq + 1 != j->cur_seq)
		ret = -EINVAL;
	bfs_mutex_unlock(&j->lock);
	if (ret)
		return ret;
	buf = journal_io_alloc(j, j->bucket_size);
	zero = journal_io_alloc(j, j->block_size);
	if (!buf || !zero) {
		ret = -ENOMEM;
		goto out;
	}
	memset(zero, 0, j->block_size);
	for (u32 b = 0; b < j->nbuckets && !ret; b++)
		ret = erase_bucket(j, b, buf, zero);
	if (!ret)
		ret = bfs_dev_flush(j->dev);
	if (ret) {
		bfs_err("journal: erasing the ring failed: %s", strerror(-ret));
		goto out;
	}
	bfs_mutex_lock(&j->lock);
	memset(j->bucket_seq, 0, j->nbuckets * sizeof(*j->bucket_seq));
	j->wr_bucket = 0;
	j->wr_offset = 0;
	j->last_seq = j->durable_last_seq = j->cur_seq;
	j->needs_reset = false;
	bfs_mutex_unlock(&j->lock);
out:
	bfs_free(buf);
	bfs_free(zero);
	return ret;
}

void bfs_journal_replay_range(struct bfs_journal *j, u64 *first, u64 *last)
{
	bfs_mutex_lock(&j->lock);
	*first = j->replay_first;
	*last = j->replay_last;
	bfs_mutex_unlock(&j->lock);
}
