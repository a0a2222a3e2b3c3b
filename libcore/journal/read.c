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

static int scan_bucket(struct bfs_journal *j, u32 bucket, u8 *buf,
		       const struct scan_ops *ops, void *ctx)
{
	u64 base = journal_bucket_offset(j, bucket);
	u32 o = 0;
	int ret;

	ret = bfs_dev_read(j->dev, base, buf, j->block_size);
	if (!ret && le64_to_cpu(((const struct bfs_jset *)buf)->magic) != BFS_JSET_MAGIC)
		return 0;
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

static int journal_scan(struct bfs_journal *j, const struct scan_ops *ops, void *ctx)
{
	u8 *buf = journal_io_alloc(j, j->bucket_size);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (u32 b = 0; b < j->nbuckets && !ret; b++)
		ret = scan_bucket(j, b, buf, ops, ctx);
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

	return journal_scan(j, &ops, &w);
}

/* ---- bfs_journal_read ---- */

struct jent {
	u64	seq;
	u64	last_seq;
	u64	offset;		/* device bytes */
	u32	bucket;		/* ring index */
	u32	disk_bytes;
};

struct jvec {
	struct jent *v;
	size_t nr, size;
};

struct read_ctx {
	struct bfs_journal *j;
	struct jvec good;	/* valid entries */
	struct jvec bad;	/* corrupt ones: only seq (as claimed) and offset */
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

static int read_valid(void *ctx, u32 bucket, u64 offset, const struct bfs_jset *jset)
{
	struct read_ctx *r = ctx;
	struct jent e = {
		.seq		= le64_to_cpu(jset->seq),
		.last_seq	= le64_to_cpu(jset->last_seq),
		.offset		= offset,
		.bucket		= bucket,
		.disk_bytes	= (u32)bfs_jset_disk_bytes(jset, r->j->block_size),
	};

	return jvec_push(&r->good, &e);
}

static int read_bad(void *ctx, u64 offset, const struct bfs_jset *jset)
{
	struct read_ctx *r = ctx;
	struct jent e = { .seq = le64_to_cpu(jset->seq), .offset = offset };

	return jvec_push(&r->bad, &e);
}

static int jent_cmp(const void *a, const void *b)
{
	const struct jent *l = a, *r = b;

	return l->seq < r->seq ? -1 : l->seq > r->seq;
}

/* re-read the corrupt entry at @offset to say what is wrong with it */
static void report_bad(struct bfs_journal *j, u64 offset, u64 seq, u64 first, u64 last)
{
	u64 bucket_end = j->start + ((offset - j->start) / j->bucket_size + 1) * j->bucket_size;
	size_t avail = bucket_end - offset;
	char err[BFS_ERR_LEN] = "unreadable";
	void *buf = journal_io_alloc(j, avail);

	if (buf && !bfs_dev_read(j->dev, offset, buf, avail))
		bfs_jset_validate(buf, avail, j->uuid, offset, err);
	bfs_free(buf);
	bfs_err("journal: entry seq %" PRIu64 " at offset %" PRIu64
		" is inside the replay range %" PRIu64 "..%" PRIu64 " but corrupt: %s",
		seq, offset, first, last, err);
}

static int report_gap(struct bfs_journal *j, const struct read_ctx *r, u64 missing,
		      const struct jent *prev, u64 first, u64 last)
{
	for (size_t i = 0; i < r->bad.nr; i++)
		if (r->bad.v[i].seq == missing) {
			report_bad(j, r->bad.v[i].offset, missing, first, last);
			return -EUCLEAN;
		}
	if (prev)
		bfs_err("journal: seq gap: seq %" PRIu64 " is missing after seq %" PRIu64
			" at offset %" PRIu64 "; replay needs every seq in %" PRIu64 "..%" PRIu64,
			missing, prev->seq, prev->offset, first, last);
	else
		bfs_err("journal: seq gap: seq %" PRIu64 " is missing; replay needs every seq in %"
			PRIu64 "..%" PRIu64, missing, first, last);
	return -EUCLEAN;
}

/*
 * Every seq in [first, last] must be present exactly once.  *start_idx is
 * set to the index of @first in the sorted array.
 */
static int check_range(struct bfs_journal *j, const struct read_ctx *r, u64 first, u64 last,
		       size_t *start_idx)
{
	const struct jent *v = r->good.v, *prev = NULL;
	size_t i = 0;
	u64 want = first;

	while (i < r->good.nr && v[i].seq < first)
		prev = &v[i++];
	*start_idx = i;
	for (; want <= last; i++) {
		if (i == r->good.nr || v[i].seq > want)
			return report_gap(j, r, want, prev, first, last);
		if (v[i].seq < want) {
			bfs_err("journal: seq %" PRIu64 " appears twice, at offsets %" PRIu64
				" and %" PRIu64, v[i].seq, prev->offset, v[i].offset);
			return -EUCLEAN;
		}
		prev = &v[i];
		want++;
	}
	if (i < r->good.nr) {
		bfs_err("journal: seq %" PRIu64 " appears twice, at offsets %" PRIu64
			" and %" PRIu64, v[i].seq, prev->offset, v[i].offset);
		return -EUCLEAN;
	}
	return 0;
}

static void report_tail(const struct read_ctx *r, u64 newest)
{
	for (size_t i = 0; i < r->bad.nr; i++)
		if (r->bad.v[i].seq > newest)
			bfs_info("journal: ignoring torn entry at offset %" PRIu64
				 " (claims seq %" PRIu64 ") after the newest entry %" PRIu64,
				 r->bad.v[i].offset, r->bad.v[i].seq, newest);
}

/* set up the append state from what the scan found */
static void journal_start(struct bfs_journal *j, const struct read_ctx *r, u64 min_seq)
{
	const struct jent *newest = r->good.nr ? &r->good.v[r->good.nr - 1] : NULL;
	u64 n = newest ? newest->seq : 0, l = newest ? newest->last_seq : 0;

	memset(j->bucket_seq, 0, j->nbuckets * sizeof(*j->bucket_seq));
	for (size_t i = 0; i < r->good.nr; i++) {
		const struct jent *e = &r->good.v[i];

		/* entries older than last_seq are dead: their buckets are reusable */
		if (e->seq >= l)
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
	j->buf[0].u64s = j->buf[1].u64s = 0;
	j->cur = 0;
}

static int replay_one(struct bfs_journal *j, const struct jent *e, void *buf,
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
		ret = fn(ctx, e->seq, i);
		if (ret)
			return ret;
	}
	return 0;
}

static int replay(struct bfs_journal *j, const struct read_ctx *r, size_t idx, u64 last,
		  int (*fn)(void *ctx, u64 seq, const struct bfs_jset_entry *e), void *ctx)
{
	void *buf = journal_io_alloc(j, j->max_bytes);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (; idx < r->good.nr && r->good.v[idx].seq <= last && !ret; idx++)
		ret = fn ? replay_one(j, &r->good.v[idx], buf, fn, ctx) : 0;
	bfs_free(buf);
	return ret;
}

int bfs_journal_read(struct bfs_journal *j, u64 min_seq,
		     int (*fn)(void *ctx, u64 seq, const struct bfs_jset_entry *e), void *ctx)
{
	struct scan_ops ops = { .valid = read_valid, .bad = read_bad };
	struct read_ctx r = { .j = j };
	u64 first = 1, last = 0;
	size_t idx = 0;
	int ret;

	bfs_mutex_lock(&j->lock);
	ret = j->read_done || j->writing ? -EINVAL : 0;
	bfs_mutex_unlock(&j->lock);
	if (ret)
		return ret;

	ret = journal_scan(j, &ops, &r);
	if (ret)
		goto out;
	if (r.good.nr)
		qsort(r.good.v, r.good.nr, sizeof(*r.good.v), jent_cmp);

	if (r.good.nr) {
		const struct jent *newest = &r.good.v[r.good.nr - 1];

		first = BFS_MAX(newest->last_seq, min_seq + 1);
		last = newest->seq;
		ret = check_range(j, &r, first, last, &idx);
		if (ret)
			goto out;
		report_tail(&r, last);
	} else if (r.bad.nr) {
		bfs_warn("journal: no valid entry, %zu corrupt ones ignored", r.bad.nr);
	}

	bfs_mutex_lock(&j->lock);
	journal_start(j, &r, min_seq);
	j->replay_first = first;
	j->replay_last = last;
	bfs_mutex_unlock(&j->lock);

	ret = replay(j, &r, idx, last, fn, ctx);
	if (!ret) {
		bfs_mutex_lock(&j->lock);
		j->read_done = true;
		bfs_mutex_unlock(&j->lock);
	}
out:
	bfs_free(r.good.v);
	bfs_free(r.bad.v);
	return ret;
}

void bfs_journal_replay_range(struct bfs_journal *j, u64 *first, u64 *last)
{
	bfs_mutex_lock(&j->lock);
	*first = j->replay_first;
	*last = j->replay_last;
	bfs_mutex_unlock(&j->lock);
}
