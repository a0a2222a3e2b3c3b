// SPDX-License-Identifier: MIT
/*
 * Obfuscation of a dump: names, symlink targets, user xattr names and xattr
 * values are replaced by strings of the same length, in btree nodes and in
 * journal entries alike, and every checksum that was valid is recomputed, so
 * that the restored image checks exactly as the original did.  A checksum
 * that was wrong stays wrong (the bytes changed, the stored value did not).
 *
 * Names go through a keyed permutation of the strings of each length
 * (random key per dump, never stored) that keeps each byte in its class:
 * letters of either case, digits, ASCII punctuation, UTF-8 lead and
 * continuation bytes; '.', '/' and NUL stay where they are.  Being a permutation, it keeps the
 * entries of a directory distinct, maps a name to the same replacement
 * wherever it appears (node, journal, stale copy), and cannot produce "."
 * or "..".  Names fsck relies on stay: lost+found and "#INO".
 *
 * Entries keep their slots: the slot was chosen from the hash of the real
 * name, which the replacement does not share (a 62-bit hash cannot be
 * matched by a chosen same-length name).  Lookups by the new name therefore
 * miss, readdir and every check that walks the keys see the same tree.
 *
 * What cannot be followed (a key or sub-entry overrunning its set) is zeroed
 * after the point where the framing breaks, keeping the broken header when
 * the set's checksum is good (the reader then reports the same problem at
 * the same place; behind a bad checksum it never looks at the keys).
 */
#include "internal.h"

#include <bfs/btree_format.h>
#include <bfs/checksum.h>
#include <bfs/fs_format.h>
#include <bfs/journal_format.h>

#include <xxhash.h>

/* ---- the permutation ---- */

/*
 * Byte classes: each byte is replaced by one of its own class, so ASCII
 * letters stay letters of the same case, digits digits, printable ASCII
 * printable, and UTF-8 stays UTF-8 (lead bytes of each length among
 * themselves, continuation bytes among themselves; the lead bytes whose
 * continuation range is restricted stay as they are).  NUL, '/' and '.'
 * are never changed, so no name can become "." or "..", or invalid.
 */
enum { CL_KEEP, CL_LOWER, CL_UPPER, CL_DIGIT, CL_PUNCT, CL_CTRL, CL_CONT, CL_LEAD2, CL_LEAD3,
       CL_LEAD4, CL_NR };

static u8 cls[256], idx[256], members[CL_NR][128], nr_members[CL_NR];

static int classify(unsigned b)
{
	if (b >= 'a' && b <= 'z')
		return CL_LOWER;
	if (b >= 'A' && b <= 'Z')
		return CL_UPPER;
	if (b >= '0' && b <= '9')
		return CL_DIGIT;
	if (!b || b == '/' || b == '.')
		return CL_KEEP;
	if (b < 0x20 || b == 0x7f)
		return CL_CTRL;
	if (b < 0x80)
		return CL_PUNCT;
	if (b < 0xc0)
		return CL_CONT;
	if (b >= 0xc2 && b <= 0xdf)
		return CL_LEAD2;
	if ((b >= 0xe1 && b <= 0xec) || b == 0xee || b == 0xef)
		return CL_LEAD3;
	if (b >= 0xf1 && b <= 0xf3)
		return CL_LEAD4;
	return CL_KEEP;		/* c0 c1 e0 ed f0 f4..ff */
}

static void init_classes(void)
{
	static bool done;
	unsigned b;

	if (done)
		return;
	for (b = 0; b < 256; b++) {
		int c = classify(b);

		cls[b] = (u8)c;
		idx[b] = nr_members[c];
		members[c][nr_members[c]++] = (u8)b;
	}
	done = true;
}

static u64 mix(u64 x)
{
	/* splitmix64's finaliser: every input bit reaches every output bit */
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

/* shift @b by @k inside its class: a bijection of each class */
static u8 shift(u8 b, u64 k)
{
	unsigned c = cls[b], n = nr_members[c];

	if (c == CL_KEEP)
		return b;
	return members[c][(idx[b] + k % n) % n];
}

/*
 * Two passes, forwards then backwards; each byte is shifted by a key that
 * depends on the bytes before it (in the pass's direction), which can be
 * undone byte by byte, so each pass and therefore the whole is a
 * permutation.  Two directions make every output byte depend on every input
 * byte, so names sharing a prefix do not share the replacement's prefix.
 */
static void permute(u64 key, u8 *s, size_t len)
{
	u64 h;
	size_t i;

	init_classes();
	h = mix(key ^ len);
	for (i = 0; i < len; i++) {
		u8 in = s[i];

		s[i] = shift(in, h);
		h = mix(h ^ in ^ ((u64)i << 8));
	}
	h = mix(~key ^ len);
	for (i = len; i--; ) {
		u8 in = s[i];

		s[i] = shift(in, h);
		h = mix(h ^ in ^ ((u64)i << 8));
	}
}

static bool name_kept(const u8 *name, size_t len)
{
	size_t i;

	if (len == 10 && !memcmp(name, "lost+found", 10))
		return true;
	/* "#INO": the names fsck gives to files it reconnects */
	if (len < 2 || name[0] != '#')
		return false;
	for (i = 1; i < len; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}

void img_obf_name(const struct img_obf *o, u8 *name, size_t len)
{
	if (!name_kept(name, len))
		permute(o->key, name, len);
}

/* a value: letters derived from the key and the whole value */
static void replace_value(struct img_obf *o, u8 *v, size_t len)
{
	u64 h = XXH3_64bits_withSeed(v, len, o->key);
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i % 8))
			h = mix(h + i);
		v[i] = (u8)('a' + (h >> (i % 8 * 8)) % 26);
	}
	if (len)
		o->names++;
}

/* ---- keys ---- */

static void obf_key(struct img_obf *o, unsigned btree_id, struct bfs_bkey *k, size_t val)
{
	u8 *v = (u8 *)bfs_bkey_val(k);

	switch (btree_id) {
	case BFS_BTREE_DIRENTS:
		if (k->type == BFS_KEY_DIRENT && val >= sizeof(struct bfs_dirent_v)) {
			struct bfs_dirent_v *d = (void *)v;
			size_t n = BFS_MIN((size_t)d->name_len, val - sizeof(*d));

			img_obf_name(o, d->name, n);
			o->names++;
		}
		break;
	case BFS_BTREE_INODES:
		if (k->type == BFS_KEY_SYMLINK && val >= sizeof(struct bfs_symlink_v)) {
			struct bfs_symlink_v *s = (void *)v;
			size_t n = BFS_MIN((size_t)le16_to_cpu(s->len), val - sizeof(*s));

			/* '/' and '.' stay: the target keeps its shape, not its names */
			permute(o->key, s->data, n);
			o->names++;
		}
		break;
	case BFS_BTREE_XATTRS:
		if (k->type == BFS_KEY_XATTR && val >= sizeof(struct bfs_xattr_v)) {
			struct bfs_xattr_v *x = (void *)v;
			size_t room = val - sizeof(*x);
			size_t n = BFS_MIN((size_t)x->name_len, room);
			size_t in = BFS_MIN((size_t)le32_to_cpu(x->inline_len), room - n);

			if (x->ns == BFS_XATTR_USER) {
				permute(o->key, x->data, n);
				o->names++;
			}
			replace_value(o, x->data + n, in);
		} else if (k->type == BFS_KEY_XATTR_DATA && val >= sizeof(struct bfs_xattr_data_v)) {
			struct bfs_xattr_data_v *x = (void *)v;

			replace_value(o, x->data, BFS_MIN((size_t)le32_to_cpu(x->len), val - sizeof(*x)));
		}
		break;
	}
}

static bool has_names(unsigned btree_id)
{
	return btree_id == BFS_BTREE_DIRENTS || btree_id == BFS_BTREE_INODES ||
	       btree_id == BFS_BTREE_XATTRS;
}

size_t img_obf_keys(struct img_obf *o, unsigned btree_id, u8 *keys, size_t bytes)
{
	size_t off = 0;

	if (!has_names(btree_id))
		return bytes;
	while (off < bytes) {
		struct bfs_bkey *k = (void *)(keys + off);
		size_t ku;

		if (bytes - off < sizeof(*k))
			return off;
		ku = (size_t)le16_to_cpu(k->u64s) * 8;
		if (ku < sizeof(*k) || ku > bytes - off)
			return off;
		obf_key(o, btree_id, k, ku - sizeof(*k));
		off += ku;
	}
	return off;
}

/*
 * Obfuscate a run of keys; what cannot be followed is zeroed.  @keep_broken:
 * the set's checksum was good, so the reader gets as far as the broken key
 * and reports it: keep its header.  (Behind a bad checksum it reads no key.)
 */
static void obf_key_run(struct img_obf *o, unsigned btree_id, u8 *keys, size_t bytes,
			bool keep_broken)
{
	size_t done = img_obf_keys(o, btree_id, keys, bytes);

	if (done < bytes) {
		if (keep_broken)
			done = BFS_MIN(done + sizeof(struct bfs_bkey), bytes);
		memset(keys + done, 0, bytes - done);
		o->raw++;
	}
}

/* ---- nodes ---- */

void img_obf_node(struct img_obf *o, u8 *node)
{
	const struct bfs_btree_node *h = (const void *)node;
	u64 seq = le64_to_cpu(h->seq);
	bool leaf = !h->level;
	u32 off = sizeof(*h), ns = o->node_size;

	while (off + sizeof(struct bfs_bset) <= ns) {
		struct bfs_bset *b = (void *)(node + off);
		u64 end = off + sizeof(*b) + (u64)le32_to_cpu(b->u64s) * 8;
		bool csum_ok;

		if (le64_to_cpu(b->node_seq) != seq)
			break;	/* left over from an older node: the node ends here */
		if (le32_to_cpu(b->offset) != off || end > ns) {
			/* the reader stops here: so do we, keeping the bset header */
			off += sizeof(*b);
			o->raw++;
			break;
		}
		csum_ok = o->csum_type &&
			  le64_to_cpu(b->csum) == bfs_csum(o->csum_type, (u8 *)b + 8, end - off - 8);
		if (leaf)
			obf_key_run(o, h->btree_id, (u8 *)b->keys, end - off - sizeof(*b),
				    csum_ok || !o->csum_type);
		if (csum_ok)
			b->csum = cpu_to_le64(bfs_csum(o->csum_type, (u8 *)b + 8, end - off - 8));
		off = (u32)BFS_MIN(BFS_ROUND_UP(end, (u64)o->block_size), (u64)ns);
		memset(node + end, 0, off - end);
	}
	/* never read as part of this node: an older node's leftovers, zeroed */
	memset(node + off, 0, ns - off);
}

/* ---- journal ---- */

static bool jset_magic(const u8 *p)
{
	return le64_to_cpu(((const struct bfs_jset *)p)->magic) == BFS_JSET_MAGIC;
}

/* sub-entries of the jset at @j, followed up to @limit bytes of it */
static void obf_jset(struct img_obf *o, struct bfs_jset *j, size_t limit, bool csum_ok)
{
	u8 *p = (u8 *)j->start, *end = (u8 *)j + limit;

	while (p < end) {
		struct bfs_jset_entry *e = (void *)p;
		size_t tot;

		if ((size_t)(end - p) < sizeof(*e))
			break;
		tot = (size_t)bfs_jset_entry_total_u64s(e) * 8;
		if (tot > (size_t)(end - p))
			break;
		if (e->type == BFS_JSET_ENTRY_BTREE_KEYS && !e->level)
			obf_key_run(o, e->btree_id, (u8 *)e->_data, tot - sizeof(*e), csum_ok);
		p += tot;
	}
	if (p < end) {
		/* a sub-entry overruns: the reader reports it only behind a good checksum */
		if (csum_ok)
			p = BFS_MIN(p + sizeof(struct bfs_jset_entry), end);
		memset(p, 0, (size_t)(end - p));
		o->raw++;
	}
}

void img_obf_journal(struct img_obf *o, u8 *bucket, size_t bytes)
{
	size_t S = o->block_size, off = 0, covered = 0;

	while (off + sizeof(struct bfs_jset) <= bytes) {
		struct bfs_jset *j = (void *)(bucket + off);
		size_t jb = sizeof(*j) + (size_t)le32_to_cpu(j->u64s) * 8, next = off + S;

		if (!jset_magic(bucket + off)) {
			if (next > covered)
				memset(bucket + BFS_MAX(off, covered), 0, next - BFS_MAX(off, covered));
			off = next;
			continue;
		}
		if (jb > bytes - off || jb > BFS_JSET_MAX_BYTES) {
			/* length out of bounds: the header is the whole story */
			size_t from = BFS_MAX(off + sizeof(*j), covered);

			if (next > from)
				memset(bucket + from, 0, next - from);
			o->raw++;
			off = next;
			continue;
		}
		if (le64_to_cpu(j->csum) == bfs_xxh3((u8 *)j + BFS_JSET_CSUM_OFFSET,
						     jb - BFS_JSET_CSUM_OFFSET)) {
			size_t pend = BFS_MIN(BFS_ROUND_UP(off + jb, S), bytes);

			obf_jset(o, j, jb, true);
			j->csum = cpu_to_le64(bfs_xxh3((u8 *)j + BFS_JSET_CSUM_OFFSET,
						       jb - BFS_JSET_CSUM_OFFSET));
			memset(bucket + off + jb, 0, pend - off - jb);
			covered = pend;
			off = pend;
			continue;
		}
		/*
		 * Damaged (torn): the reader moves on by one block, and may find
		 * older entries inside; follow this one only up to the first of them.
		 */
		{
			size_t limit = jb, b;

			for (b = S; b < jb; b += S)
				if (off + b + sizeof(*j) <= bytes && jset_magic(bucket + off + b)) {
					limit = b;
					break;
				}
			if (off + limit > covered) {
				obf_jset(o, j, limit, false);
				covered = off + limit;
			}
		}
		off = next;
	}
	if (off < bytes && off >= covered)
		memset(bucket + off, 0, bytes - off);
}
