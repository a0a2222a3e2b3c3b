// SPDX-License-Identifier: MIT
/*
 * Metadata dumps (libcore/image/): a dump restores to the same filesystem,
 * obfuscation leaves no name or value behind and keeps names distinct, and
 * the reader survives every truncation and random damage of a dump with a
 * clear error (the fuzzing half).
 *
 * Environment: BFS_FUZZ_ITERS (damaged dumps per target, default 300),
 * BFS_FUZZ_SEED.
 */
#include <bfs/btree_format.h>
#include <bfs/checksum.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>
#include <bfs/image.h>
#include <bfs/journal_format.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "crash_states.h"
#include "image/internal.h"
#include "unit.h"

static void quiet(enum bfs_log_level level, const char *msg, void *ctx)
{
}

static u64 env_u64(const char *name, u64 def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

static u64 rnd(u64 *s)
{
	*s += UINT64_C(0x9e3779b97f4a7c15);
	return XXH3_64bits(s, sizeof(*s));
}

/* ---- an in-memory dump file ---- */

struct membuf {
	u8	*p;
	size_t	len, cap, pos;
	size_t	chunk;		/* read at most this much per call (0: all) */
};

static int mem_write(void *ctx, const void *buf, size_t len)
{
	struct membuf *m = ctx;

	if (m->len + len > m->cap) {
		m->cap = (m->len + len) * 2;
		m->p = realloc(m->p, m->cap);
		ck_assert_ptr_nonnull(m->p);
	}
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

static long mem_read(void *ctx, void *buf, size_t len)
{
	struct membuf *m = ctx;
	size_t n = BFS_MIN(len, m->len - m->pos);

	if (m->chunk)
		n = BFS_MIN(n, m->chunk);
	if (n)
		memcpy(buf, m->p + m->pos, n);
	m->pos += n;
	return (long)n;
}

/* ---- a small populated filesystem ---- */

#define DEV_SIZE	(16 * MiB)
#define NFILES		300

static struct bfs_dev *make_fs(void)
{
	struct bfs_format_opts o = { .block_size = 4096, .btree_node_size = 16 * KiB };
	struct bfs_creds cr = { 0, 0 };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], name[64], val[200];
	struct bfs_stat st, dir;
	struct bfs_dev *d;
	struct bfs_fs *fs;
	unsigned i;

	bfs_log_set_hook(quiet, NULL);
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &d), 0);
	ck_assert_int_eq(bfs_sb_layout(&o, DEV_SIZE, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(d, sb), 0);
	bfs_free(sb);
	ck_assert_int_eq(bfs_fs_open(d, NULL, &fs), 0);
	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, "hushdir", 7, 0755, &cr, &dir), 0);
	for (i = 0; i < NFILES; i++) {
		size_t n = (size_t)snprintf(name, sizeof(name), "hush%u%.*s", i, (int)(i % 40),
					    "qwertyuiopasdfghjklzxcvbnmQWERTYUIOPASDF");

		ck_assert_int_eq(bfs_fs_mknod(fs, dir.ino, name, n, S_IFREG | 0644, 0, &cr, &st), 0);
		if (i % 4 == 0) {
			memset(val, 'z', sizeof(val));
			memcpy(val, "hushvalue", 9);
			ck_assert_int_eq(bfs_fs_setxattr(fs, st.ino, "user.hushattr", val,
							 sizeof(val), 0), 0);
		}
		if (i % 9 == 0) {
			n = (size_t)snprintf(name, sizeof(name), "hushlink%u", i);
			ck_assert_int_eq(bfs_fs_symlink(fs, dir.ino, name, n, "/hush/target/path",
							&cr, &st), 0);
		}
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	return d;
}

static void dump(struct bfs_dev *d, bool obfuscate, struct membuf *out)
{
	struct bfs_image_dump_opts o = {
		.obfuscate = obfuscate,
		.source = "mem",
		.tool = "test",
		.write = mem_write,
		.write_ctx = out,
	};
	struct bfs_image_stats st;
	char err[BFS_ERR_LEN];
	int ret;

	memset(out, 0, sizeof(*out));
	ret = bfs_image_dump(d, &o, &st, err);
	ck_assert_msg(!ret, "dump: %d %s", ret, err);
	ck_assert_uint_gt(st.nodes, 0);
	ck_assert_uint_eq(st.out_bytes, out->len);
	if (obfuscate)
		ck_assert_uint_gt(st.names, NFILES);
}

/* restore @m onto a new memory device: 0 or the reader's error */
static int restore(struct membuf *m, struct bfs_dev **out, char *err)
{
	struct bfs_image_reader *r;
	struct bfs_image_stats st;
	struct bfs_dev *d;
	int ret;

	m->pos = 0;
	ret = bfs_image_reader_open(mem_read, m, &r, err);
	if (ret)
		return ret;
	ck_assert_int_eq(bfs_dev_open_mem(le64_to_cpu(bfs_image_reader_header(r)->dev_size), &d),
			 0);
	ret = bfs_image_restore(r, d, 0, NULL, NULL, &st, err);
	bfs_image_reader_close(r);
	if (ret) {
		bfs_dev_close(d);
		return ret;
	}
	*out = d;
	return 0;
}

struct listing {
	unsigned nr;
	size_t name_bytes;
	bool seen_hush;		/* an original name (original_name()) */
	u64 dir;		/* the directory listed */
	u64 hash;		/* of the names in readdir order, with their inode numbers */
};

/*
 * One of the names make_fs() gave.  Not "contains hush": a permuted name is
 * random letters, which hold any four in a row by chance (a dump in a
 * hundred); a whole original name they do not.
 */
static bool original_name(const char *name, size_t len)
{
	char orig[64];
	unsigned i;
	int n;

	if (len == 7 && !memcmp(name, "hushdir", 7))
		return true;
	for (i = 0; i < NFILES; i++) {
		n = snprintf(orig, sizeof(orig), "hush%u%.*s", i, (int)(i % 40),
			     "qwertyuiopasdfghjklzxcvbnmQWERTYUIOPASDF");
		if ((size_t)n == len && !memcmp(name, orig, len))
			return true;
		n = snprintf(orig, sizeof(orig), "hushlink%u", i);
		if ((size_t)n == len && !memcmp(name, orig, len))
			return true;
	}
	return false;
}

static int list_fn(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct listing *l = ctx;

	l->nr++;
	l->name_bytes += len;
	if (original_name(name, len))
		l->seen_hush = true;
	l->hash = XXH3_64bits_withSeed(name, len, l->hash ^ ino);
	return 0;
}

/* the listing of directory @ino, or of @path in the root if @ino is 0 */
static struct listing list_dir(struct bfs_dev *d, const char *path, u64 ino)
{
	struct bfs_fs_opts o = { .read_only = true };
	struct listing l = { 0 };
	struct bfs_stat st;
	struct bfs_fs *fs;

	ck_assert_int_eq(bfs_fs_open(d, &o, &fs), 0);
	if (!ino) {
		ck_assert_int_eq(bfs_fs_lookup(fs, BFS_ROOT_INO, path, strlen(path), &st), 0);
		ino = st.ino;
	}
	l.dir = ino;
	ck_assert_int_eq(bfs_fs_readdir(fs, ino, 0, list_fn, &l), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	return l;
}

static void decompress(const struct membuf *m, struct membuf *raw)
{
	ZSTD_DStream *zs = ZSTD_createDStream();
	ZSTD_inBuffer in = { m->p, m->len, 0 };
	u8 buf[65536];

	memset(raw, 0, sizeof(*raw));
	while (in.pos < in.size) {
		ZSTD_outBuffer o = { buf, sizeof(buf), 0 };

		ck_assert(!ZSTD_isError(ZSTD_decompressStream(zs, &o, &in)));
		mem_write(raw, buf, o.pos);
	}
	ZSTD_freeDStream(zs);
}

static void recompress(const struct membuf *raw, struct membuf *m)
{
	size_t cap = ZSTD_compressBound(raw->len);

	memset(m, 0, sizeof(*m));
	m->p = malloc(cap);
	m->len = ZSTD_compress(m->p, cap, raw->p, raw->len, 1);
	ck_assert(!ZSTD_isError(m->len));
}

/* ---- tests ---- */

START_TEST(test_roundtrip_exact)
{
	struct bfs_dev *src = make_fs(), *dst;
	struct membuf m;
	char err[BFS_ERR_LEN];
	struct listing a, b;
	u64 off;

	dump(src, false, &m);
	m.chunk = 777;	/* the reader copes with short reads */
	ck_assert_msg(!restore(&m, &dst, err), "%s", err);
	/* every byte that can matter is back: compare the whole metadata area */
	for (off = 0; off < DEV_SIZE; off += 4096) {
		const u8 *x = bfs_dev_mem(src) + off, *y = bfs_dev_mem(dst) + off;

		if (memcmp(x, y, 4096)) {
			/* only file data may differ: the destination reads zeros there */
			static const u8 zero[4096];

			ck_assert_msg(!memcmp(y, zero, 4096), "block at %llu differs",
				      (unsigned long long)off);
		}
	}
	a = list_dir(src, "hushdir", 0);
	b = list_dir(dst, "hushdir", 0);
	ck_assert_uint_eq(a.nr, b.nr);
	ck_assert_uint_eq(a.hash, b.hash);
	bfs_dev_close(src);
	bfs_dev_close(dst);
	free(m.p);
}
END_TEST

/* what make_fs() wrote that a dump must not carry (besides the file names) */
static const char *const secrets[] = {
	"hushdir", "hushattr", "hushvalue", "hushlink", "/hush/target/path", "zzzzzzzzzzzz",
};

START_TEST(test_obfuscated)
{
	struct bfs_dev *src = make_fs(), *dst;
	struct membuf m, raw;
	char err[BFS_ERR_LEN];
	struct listing a, b, root, orig_root;
	size_t i;

	dump(src, true, &m);
	decompress(&m, &raw);
	ck_assert_uint_gt(raw.len, 0);
	/*
	 * No original string survives.  Not a bare "hush": replaced values and
	 * permuted names are random letters, in which any four occur by chance
	 * (about one dump in a hundred); eight or more letters do not.
	 */
	for (i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
		ck_assert_msg(!memmem(raw.p, raw.len, secrets[i], strlen(secrets[i])),
			      "\"%s\" in the stream", secrets[i]);
	for (i = 0; i < NFILES; i++) {
		char name[64];
		int n = snprintf(name, sizeof(name), "hush%zu%.*s", i, (int)(i % 40),
				 "qwertyuiopasdfghjklzxcvbnmQWERTYUIOPASDF");

		if (n >= 8)
			ck_assert_msg(!memmem(raw.p, raw.len, name, (size_t)n),
				      "name \"%s\" in the stream", name);
	}
	ck_assert_msg(!restore(&m, &dst, err), "%s", err);
	/*
	 * The root holds lost+found (kept) and the renamed directory, whose
	 * inode number is unchanged.  Its listing has as many entries, with
	 * names as long, none original.
	 */
	root = list_dir(dst, NULL, BFS_ROOT_INO);
	ck_assert_uint_eq(root.nr, 4);
	ck_assert(!root.seen_hush);
	a = list_dir(src, "hushdir", 0);
	orig_root = list_dir(src, NULL, BFS_ROOT_INO);
	ck_assert_uint_eq(root.name_bytes, orig_root.name_bytes);
	b = list_dir(dst, NULL, a.dir);
	ck_assert_uint_eq(a.nr, b.nr);
	ck_assert_uint_eq(a.name_bytes, b.name_bytes);
	ck_assert(!b.seen_hush);
	ck_assert_uint_ne(a.hash, b.hash);
	bfs_dev_close(src);
	bfs_dev_close(dst);
	free(m.p);
	free(raw.p);
}
END_TEST

START_TEST(test_name_permutation)
{
	struct img_obf o = { .key = 12345 };
	static u8 seen[4096][8];
	u8 name[8];
	unsigned i, j;

	/* every 3-letter name over a small alphabet maps to a distinct name */
	for (i = 0; i < 4096; i++) {
		name[0] = (u8)('a' + i % 16);
		name[1] = (u8)('A' + i / 16 % 16);
		name[2] = (u8)('0' + i / 256 % 10);
		name[3] = i / 2560 ? '.' : '#';
		img_obf_name(&o, name, 4);
		ck_assert(name[0] >= 'a' && name[0] <= 'z');
		ck_assert(name[1] >= 'A' && name[1] <= 'Z');
		ck_assert(name[2] >= '0' && name[2] <= '9');
		ck_assert(name[3] == (i / 2560 ? '.' : '#') || (i / 2560 == 0 && name[3] != '.'));
		memcpy(seen[i], name, 4);
		for (j = 0; j < i; j++)
			ck_assert_msg(memcmp(seen[j], name, 4), "names %u and %u collide", i, j);
	}
	{
		/* printable ASCII stays printable, UTF-8 sequences keep their shape */
		u8 u[] = "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac-~!", v[sizeof(u)];
		size_t k;

		memcpy(v, u, sizeof(u));
		img_obf_name(&o, v, sizeof(u) - 1);
		ck_assert(memcmp(u, v, sizeof(u)));
		for (k = 0; k + 1 < sizeof(u); k++) {
			ck_assert_uint_eq(u[k] >= 0x80, v[k] >= 0x80);
			if (u[k] < 0x80)
				ck_assert(v[k] >= 0x20 && v[k] < 0x7f);
			else if (u[k] < 0xc0)
				ck_assert(v[k] >= 0x80 && v[k] < 0xc0);
			else	/* a lead byte: of a sequence of the same length */
				ck_assert_uint_eq(u[k] < 0xe0 ? 2 : u[k] < 0xf0 ? 3 : 4,
						  v[k] < 0xe0 ? 2 : v[k] < 0xf0 ? 3 : 4);
		}
	}
	{
		u8 lf[] = "lost+found", ino[] = "#1234", dots[] = "...";

		img_obf_name(&o, lf, 10);
		img_obf_name(&o, ino, 5);
		img_obf_name(&o, dots, 3);
		ck_assert(!memcmp(lf, "lost+found", 10));
		ck_assert(!memcmp(ino, "#1234", 5));
		ck_assert(!memcmp(dots, "...", 3));
	}
}
END_TEST

/* every prefix of a dump is refused as truncated, never restored as complete */
START_TEST(test_truncated)
{
	struct bfs_dev *src = make_fs(), *dst;
	struct membuf m;
	char err[BFS_ERR_LEN];
	size_t full, cut, step;
	int ret;

	dump(src, true, &m);
	full = m.len;
	step = BFS_MAX(full / 200, (size_t)1);
	for (cut = 0; cut < full; cut += (cut < 64 ? 1 : step)) {
		m.len = cut;
		err[0] = 0;
		ret = restore(&m, &dst, err);
		ck_assert_msg(ret < 0, "a dump cut at %zu of %zu bytes was accepted", cut, full);
		ck_assert_msg(err[0], "no message for a dump cut at %zu", cut);
	}
	m.len = full;
	ck_assert_int_eq(restore(&m, &dst, err), 0);
	bfs_dev_close(dst);
	bfs_dev_close(src);
	free(m.p);
}
END_TEST

/* random damage to the compressed bytes: an error or a faithful restore */
START_TEST(test_fuzz_compressed)
{
	u64 iters = env_u64("BFS_FUZZ_ITERS", 300), s = env_u64("BFS_FUZZ_SEED", 1);
	struct bfs_dev *src = make_fs(), *dst;
	struct membuf m;
	char err[BFS_ERR_LEN];
	u8 *orig;
	u64 it;

	dump(src, false, &m);
	orig = malloc(m.len);
	memcpy(orig, m.p, m.len);
	for (it = 0; it < iters; it++) {
		unsigned flips = 1 + (unsigned)(rnd(&s) % 4), f;

		memcpy(m.p, orig, m.len);
		for (f = 0; f < flips; f++)
			m.p[rnd(&s) % m.len] ^= (u8)(1 + rnd(&s) % 255);
		err[0] = 0;
		if (!restore(&m, &dst, err)) {
			/* accepted: then it must be the same filesystem */
			ck_assert(!memcmp(bfs_dev_mem(dst) + 4096, bfs_dev_mem(src) + 4096, 4096));
			bfs_dev_close(dst);
		} else {
			ck_assert_msg(err[0], "iteration %llu: error without a message",
				      (unsigned long long)it);
		}
	}
	bfs_dev_close(src);
	free(orig);
	free(m.p);
}
END_TEST

/*
 * Structure-aware: change fields of the decompressed records (lengths,
 * numbers, offsets, types) and compress again, so the damage reaches the
 * record checks instead of stopping at zstd's own checksum.
 */
START_TEST(test_fuzz_records)
{
	u64 iters = env_u64("BFS_FUZZ_ITERS", 300), s = env_u64("BFS_FUZZ_SEED", 1);
	struct bfs_dev *src = make_fs(), *dst;
	struct membuf m, raw, z;
	char err[BFS_ERR_LEN];
	u8 *orig;
	u64 it;

	dump(src, false, &m);
	decompress(&m, &raw);
	raw.cap = raw.len;
	orig = malloc(raw.len);
	memcpy(orig, raw.p, raw.len);
	for (it = 0; it < iters; it++) {
		size_t at = rnd(&s) % raw.len;

		memcpy(raw.p, orig, raw.len);
		switch (rnd(&s) % 4) {
		case 0:		/* a random byte anywhere */
			raw.p[at] ^= (u8)(1 + rnd(&s) % 255);
			break;
		case 1:		/* a random u32 anywhere, aligned (lengths, numbers) */
			at &= ~(size_t)3;
			if (at + 4 <= raw.len) {
				u32 v = (u32)rnd(&s);

				memcpy(raw.p + at, &v, 4);
			}
			break;
		case 2:		/* cut the raw stream and compress it properly */
			raw.len = at;
			break;
		default:	/* drop 32 bytes (a record header's worth) */
			if (at + 32 <= raw.len) {
				memmove(raw.p + at, raw.p + at + 32, raw.len - at - 32);
				raw.len -= 32;
			}
			break;
		}
		recompress(&raw, &z);
		err[0] = 0;
		if (!restore(&z, &dst, err))
			bfs_dev_close(dst);
		else
			ck_assert_msg(err[0], "iteration %llu: error without a message",
				      (unsigned long long)it);
		free(z.p);
		raw.len = raw.cap;	/* undo the cuts of cases 2 and 3 */
	}
	bfs_dev_close(src);
	free(orig);
	free(raw.p);
	free(m.p);
}
END_TEST

START_TEST(test_not_a_dump)
{
	struct membuf m = { 0 };
	struct bfs_image_reader *r;
	char err[BFS_ERR_LEN];
	u8 junk[4096];

	ck_assert_int_eq(bfs_image_reader_open(mem_read, &m, &r, err), -ENODATA);
	memset(junk, 0x5a, sizeof(junk));
	m.p = junk;
	m.len = sizeof(junk);
	ck_assert_int_lt(bfs_image_reader_open(mem_read, &m, &r, err), 0);
	ck_assert(strstr(err, "not a bfs dump"));
}
END_TEST

/* a journal entry at @p holding one dirent key named @name; its length in bytes */
static size_t make_jset(u8 *p, u64 seq, const char *name)
{
	struct bfs_jset *j = (void *)p;
	struct bfs_jset_entry *e = j->start;
	struct bfs_bkey *k = (void *)e->_data;
	struct bfs_dirent_v *d = bfs_bkey_val(k);
	size_t nl = strlen(name), val_u64s = (sizeof(*d) + nl + 7) / 8;

	bfs_jset_entry_init(e, BFS_JSET_ENTRY_BTREE_KEYS, BFS_BTREE_DIRENTS, 0,
			    (u16)(BFS_BKEY_U64S + val_u64s));
	bfs_bkey_init(k, BFS_KEY_DIRENT, BFS_POS(1, 1000 + seq, 0), (u32)val_u64s);
	d->ino = cpu_to_le64(5);
	d->type = 8;
	d->name_len = (u8)nl;
	memcpy(d->name, name, nl);
	j->magic = cpu_to_le64(BFS_JSET_MAGIC);
	j->seq = cpu_to_le64(seq);
	j->last_seq = cpu_to_le64(1);
	j->flags = cpu_to_le32(BFS_JSET_FLUSH);
	j->u64s = cpu_to_le32(1 + BFS_BKEY_U64S + (u32)val_u64s);
	j->csum = cpu_to_le64(bfs_xxh3(p + BFS_JSET_CSUM_OFFSET,
				       bfs_jset_bytes(j) - BFS_JSET_CSUM_OFFSET));
	return bfs_jset_bytes(j);
}

static bool jset_csum_ok(const u8 *p)
{
	const struct bfs_jset *j = (const void *)p;

	return le64_to_cpu(j->csum) == bfs_xxh3(p + BFS_JSET_CSUM_OFFSET,
						bfs_jset_bytes(j) - BFS_JSET_CSUM_OFFSET);
}

/*
 * A bucket with a valid entry, stale bytes, a torn entry that claims four
 * blocks and, inside those, an older valid entry the reader will find by
 * resyncing: every name goes, valid checksums stay valid, the torn one
 * stays wrong, the stale bytes are zeroed.
 */
START_TEST(test_journal_obfuscation)
{
	enum { S = 4096, BYTES = 16 * S };
	struct img_obf o = { .key = 99, .block_size = S, .node_size = 16 * KiB, .csum_type = 1 };
	u8 *b = calloc(1, BYTES);
	struct bfs_jset *torn = (void *)(b + 2 * S);
	size_t i;

	make_jset(b, 10, "hushfirst");
	memcpy(b + S + 100, "hushstale", 9);			/* no entry: leftovers */
	make_jset(b + 4 * S, 7, "hushinner");			/* older, inside the torn one */
	make_jset(b + 2 * S, 11, "hushtorn");
	torn->u64s = cpu_to_le32(le32_to_cpu(torn->u64s) + 3 * S / 8);	/* claims 4 blocks */
	ck_assert(!jset_csum_ok(b + 2 * S));
	memcpy(b + 3 * S + 8, "hushtornpayload", 15);		/* what the torn write left */

	img_obf_journal(&o, b, BYTES);
	for (i = 0; i + 4 <= BYTES; i++)
		ck_assert_msg(memcmp(b + i, "hush", 4), "\"hush\" left at %zu", i);
	ck_assert(jset_csum_ok(b));
	ck_assert(jset_csum_ok(b + 4 * S));
	ck_assert(!jset_csum_ok(b + 2 * S));
	ck_assert_uint_eq(le64_to_cpu(((struct bfs_jset *)(b + 4 * S))->seq), 7);
	for (i = S; i < 2 * S; i++)
		ck_assert_msg(!b[i], "stale byte at %zu kept", i);
	free(b);
}
END_TEST

/* ---- crash states of a restore ---- */

struct restore_crash {
	struct membuf *m;
	struct bfs_dev *final;		/* the uninterrupted restore */
	struct listing want;
	unsigned no_sb, whole;
};

/* restore @m again onto @d, which holds an interrupted restore */
static void restore_onto(struct membuf *m, struct bfs_dev *d)
{
	struct bfs_image_reader *r;
	struct bfs_image_stats st;
	char err[BFS_ERR_LEN];

	m->pos = 0;
	ck_assert_int_eq(bfs_image_reader_open(mem_read, m, &r, err), 0);
	ck_assert_msg(!bfs_image_restore(r, d, 0, NULL, NULL, &st, err), "%s", err);
	bfs_image_reader_close(r);
}

static bool restore_state(void *ctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct restore_crash *rc = ctx;
	struct bfs_sb_handle h;
	char err[BFS_ERR_LEN];

	(void)mk;
	if (bfs_sb_read(img, &h, err)) {
		rc->no_sb++;
	} else {
		/* a superblock on the device: everything it points to is there */
		struct listing l;

		bfs_sb_handle_release(&h);
		l = list_dir(img, "hushdir", 0);
		if (l.nr != rc->want.nr || l.hash != rc->want.hash) {
			snprintf(why, 512, "a superblock, but hushdir lists %u names (want %u)",
				 l.nr, rc->want.nr);
			return false;
		}
		rc->whole++;
	}
	/* the rerun finishes it: byte for byte the uninterrupted restore */
	restore_onto(rc->m, img);
	if (memcmp(bfs_dev_mem(img), bfs_dev_mem(rc->final), DEV_SIZE)) {
		snprintf(why, 512, "restoring again does not give the uninterrupted result");
		return false;
	}
	return true;
}

START_TEST(test_restore_crash)
{
	char *logpath = bfs_unit_tmpfile("image-restore-log");
	struct bfs_dev *src = make_fs(), *base, *run;
	struct restore_crash rc = { 0 };
	struct crash_result res;
	struct membuf m;

	dump(src, false, &m);
	rc.m = &m;
	rc.want = list_dir(src, "hushdir", 0);
	ck_assert_int_eq(bfs_dev_open_mem(DEV_SIZE, &base), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(base, &run), 0);
	ck_assert_int_eq(bfs_dev_record_start(run, logpath), 0);
	restore_onto(&m, run);
	ck_assert_int_eq(bfs_dev_record_stop(run), 0);
	rc.final = run;
	/* two flushes only: many random states between them */
	setenv("BFS_CRASH_RANDOM_STATES", "24", 0);
	crash_build_states(logpath, base, 5, restore_state, &rc, &res);
	printf("image restore crash: %u states (%u flush points, %u random): %u without a "
	       "superblock, %u whole; %u failed\n", res.states, res.flush_states,
	       res.random_states, rc.no_sb, rc.whole, res.failures);
	ck_assert_msg(res.failures == 0, "%u of %u states failed", res.failures, res.states);
	ck_assert_uint_gt(rc.no_sb, 0);
	ck_assert_uint_gt(rc.whole, 0);
	unlink(logpath);
	free(logpath);
	free(m.p);
	bfs_dev_close(run);
	bfs_dev_close(base);
	bfs_dev_close(src);
}
END_TEST

static Suite *image_suite(void)
{
	Suite *s = suite_create("image");
	TCase *tc = tcase_create("image");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_roundtrip_exact);
	tcase_add_test(tc, test_obfuscated);
	tcase_add_test(tc, test_name_permutation);
	tcase_add_test(tc, test_journal_obfuscation);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_fuzz_compressed);
	tcase_add_test(tc, test_fuzz_records);
	tcase_add_test(tc, test_not_a_dump);
	tcase_add_test(tc, test_restore_crash);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(image_suite)
