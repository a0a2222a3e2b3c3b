// SPDX-License-Identifier: MIT
/*
 * Crash tests of `fsck -y` itself (issue 9 item 10): a repair interrupted by
 * a power cut at any point must leave an image that the next `fsck -y`
 * repairs fully, to exactly what the uninterrupted repair produced.
 *
 * A small filesystem (directories, files with data, an unclean tail of
 * updates only in the journal) is damaged in ways fsck repairs with writes
 * of every kind it has: a corrupt journal entry inside the replay range
 * (salvage: checkpoint, clean section, journal erase), a zeroed backup
 * superblock (rewrite of every copy), and inode damage that pass 2 repairs
 * in transactions (a wrong link count, a wrong sector count, a file whose
 * directory entry is gone and which is reconnected to /lost+found).  The
 * uninterrupted `fsck -y` of that image gives the reference tree.  Then the
 * I/O of a recorded `fsck -y` is replayed into every crash state
 * (crash_states.h: each flush point, random subsets of the writes since,
 * torn writes), and every multi-sector write is also torn on its own at
 * three places (torn_sweep()); on each, `fsck -y` must succeed (exit 0 or 1), a following
 * `fsck -n` must be clean, and the tree (names, types, link counts, sizes,
 * contents) must equal the reference.  For a few states, that second
 * `fsck -y` is itself recorded and interrupted everywhere, with the same
 * checks.  Both with checksums on and with --checksum=none.
 *
 * Environment: BFS_CRASH_FSCK_NESTED (states whose second run is
 * interrupted too, default 3), BFS_CRASH_FSCK_VERBOSE (print what every
 * fsck says), BFS_CRASH_FSCK_DAMAGE=range-start (corrupt the first entry of
 * the replay range, so salvage replays no keys, only the range's roots),
 * BFS_CRASH_SEED, and the crash_states.h variables.
 */
#include "crash_states.h"
#include "unit.h"

#include <bfs/btree.h>
#include <bfs/checksum.h>
#include <bfs/fs.h>
#include <bfs/fs_format.h>
#include <bfs/fsck.h>
#include <bfs/journal.h>
#include <bfs/log.h>
#include <bfs/mkfs.h>
#include <bfs/os.h>
#include <bfs/super.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEV_BYTES	(32 * MiB)
#define NR_FILES	6
#define NR_LATE		300

static const struct bfs_creds creds = { 0, 0 };

/* ---- the tree, hashed ---- */

struct names {
	char (*v)[64];
	int nr;
};

static int add_name(void *ctx, const char *name, size_t len, u64 ino, u32 type, u64 next)
{
	struct names *n = ctx;

	(void)ino, (void)type, (void)next;
	if ((len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)))
		return 0;
	ck_assert_uint_lt(len, 64);
	n->v = bfs_realloc(n->v, (size_t)(n->nr + 1) * sizeof(*n->v));
	ck_assert_ptr_nonnull(n->v);
	memcpy(n->v[n->nr], name, len);
	n->v[n->nr++][len] = '\0';
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* fold directory @dir (recursively, names sorted) into @h */
static int hash_dir(struct bfs_fs *fs, u64 dir, u64 *h)
{
	static u8 data[256 * 1024];
	struct names n = { 0 };
	int ret, i;

	ret = bfs_fs_readdir(fs, dir, 0, add_name, &n);
	if (n.nr)
		qsort(n.v, (size_t)n.nr, sizeof(*n.v), cmp_name);
	for (i = 0; !ret && i < n.nr; i++) {
		struct bfs_stat st;
		char line[160];
		ssize_t got;

		ret = bfs_fs_lookup(fs, dir, n.v[i], strlen(n.v[i]), &st);
		if (ret)
			break;
		snprintf(line, sizeof(line), "%llu/%s %o %u %llu", (unsigned long long)dir, n.v[i],
			 st.mode & S_IFMT, st.nlink, (unsigned long long)(S_ISDIR(st.mode) ? 0 : st.size));
		*h = bfs_xxh3(line, strlen(line)) ^ (*h * 31);
		if (S_ISDIR(st.mode)) {
			ret = hash_dir(fs, st.ino, h);
		} else if (S_ISREG(st.mode)) {
			ck_assert_uint_le(st.size, sizeof(data));
			got = bfs_fs_read(fs, st.ino, data, (size_t)st.size, 0);
			if (got < 0)
				ret = (int)got;
			else
				*h = bfs_xxh3(data, (size_t)got) ^ (*h * 31);
		}
	}
	bfs_free(n.v);
	return ret;
}

static int tree_hash(struct bfs_dev *dev, u64 *h)
{
	struct bfs_fs *fs;
	int ret = bfs_fs_open(dev, &(struct bfs_fs_opts){ .read_only = true }, &fs);

	if (ret)
		return ret;
	*h = 0;
	ret = hash_dir(fs, BFS_ROOT_INO, h);
	bfs_fs_close(fs);
	return ret;
}

static void print_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "fsck: %s\n", line);
}

static void log_hook(enum bfs_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (getenv("BFS_CRASH_FSCK_VERBOSE"))
		fprintf(stderr, "log %d: %s\n", (int)level, msg);
}

static int run_fsck(struct bfs_dev *dev, enum bfs_fsck_mode mode)
{
	struct bfs_fsck f = { .dev = dev, .mode = mode };

	if (getenv("BFS_CRASH_FSCK_VERBOSE"))
		f.print = print_line;
	int rc = bfs_fsck_run(&f);

	bfs_fsck_release(&f);
	return rc;
}

/* ---- the damaged image ---- */

static u64 make_file(struct bfs_fs *fs, u64 dir, const char *name, size_t bytes, u64 tag)
{
	static u8 buf[64 * 1024];
	struct bfs_stat st;

	ck_assert_int_eq(bfs_fs_mknod(fs, dir, name, strlen(name), S_IFREG | 0644, 0, &creds, &st), 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (u8)(tag * 131 + i * 7);
	ck_assert_uint_le(bytes, sizeof(buf));
	ck_assert_int_eq(bfs_fs_write(fs, st.ino, buf, bytes, 0), (ssize_t)bytes);
	return st.ino;
}

/* rewrite a field of inode @ino's key, as damage would */
static void poke_inode(struct bfs_fs *fs, u64 ino, u32 nlink, u64 sectors)
{
	u64 buf[BFS_BKEY_U64S + BFS_INODE_V_U64S + 8];
	struct bfs_bkey *k = (void *)buf;
	struct bfs_inode_v *v = bfs_bkey_val(k);
	struct bfs_core *c = bfs_fs_core(fs);

	ck_assert_int_eq(bfs_btree_lookup(c, BFS_BTREE_INODES, BFS_POS(ino, 0, 0), buf, sizeof(buf)), 0);
	if (nlink)
		v->nlink = cpu_to_le32(nlink);
	if (sectors)
		v->sectors = cpu_to_le64(sectors);
	ck_assert_int_eq(bfs_btree_insert(c, BFS_BTREE_INODES, k), 0);
}

/* delete the directory entry called @name, leaving its inode unattached */
static void drop_dirent(struct bfs_fs *fs, const char *name)
{
	struct bfs_core *c = bfs_fs_core(fs);
	struct bfs_btree_iter it;
	const struct bfs_bkey *k;
	struct bfs_bpos pos = BFS_POS_MIN;
	bool found = false;
	int ret;

	bfs_btree_iter_init(&it, c, BFS_BTREE_DIRENTS, BFS_POS_MIN, 0);
	for (ret = bfs_btree_iter_peek(&it, &k); !ret; ret = bfs_btree_iter_next(&it, &k)) {
		const struct bfs_dirent_v *d = bfs_bkey_val(k);

		if (k->type == BFS_KEY_DIRENT && d->name_len == strlen(name) &&
		    !memcmp(d->name, name, d->name_len)) {
			pos = bfs_bkey_pos(k);
			found = true;
			break;
		}
	}
	bfs_btree_iter_exit(&it);
	ck_assert(found);
	ck_assert_int_eq(bfs_btree_delete(c, BFS_BTREE_DIRENTS, pos), 0);
}

struct jpick {
	u64 newest, newest_last, off_second;
	u64 second;
};

static int pick_entries(void *ctx, u64 offset, const struct bfs_jset *jset)
{
	struct jpick *p = ctx;
	u64 seq = le64_to_cpu(jset->seq);

	if (seq > p->newest) {
		p->newest = seq;
		p->newest_last = le64_to_cpu(jset->last_seq);
	}
	(void)offset;
	return 0;
}

static int find_second(void *ctx, u64 offset, const struct bfs_jset *jset)
{
	struct jpick *p = ctx;

	if (le64_to_cpu(jset->seq) == p->second)
		p->off_second = offset;
	return 0;
}

/* flip a byte in the second newest journal entry, which must be inside the replay range */
static void corrupt_journal(struct bfs_dev *dev)
{
	struct bfs_sb_handle h;
	struct bfs_journal_geom g;
	struct bfs_journal *j;
	struct jpick p = { 0 };
	char err[BFS_ERR_LEN];

	ck_assert_int_eq(bfs_sb_read(dev, &h, err), 0);
	bfs_journal_geom_from_sb(h.sb, dev, &g);
	ck_assert_int_eq(bfs_journal_open(&g, &j), 0);
	ck_assert_int_eq(bfs_journal_walk(j, pick_entries, &p), 0);
	/* BFS_CRASH_FSCK_DAMAGE=range-start: the first entry of the range instead */
	p.second = getenv("BFS_CRASH_FSCK_DAMAGE") &&
		!strcmp(getenv("BFS_CRASH_FSCK_DAMAGE"), "range-start") ? p.newest_last : p.newest - 1;
	ck_assert_uint_le(p.newest_last, p.second);
	ck_assert_int_eq(bfs_journal_walk(j, find_second, &p), 0);
	ck_assert_uint_ne(p.off_second, 0);
	bfs_dev_mem(dev)[p.off_second + 100] ^= 0x20;
	bfs_journal_close(j);
	bfs_sb_handle_release(&h);
}

static struct bfs_dev *make_damaged(u8 csum_type)
{
	struct bfs_format_opts fo = { .csum_type = csum_type, .csum_set = true };
	struct bfs_sb *sb = bfs_zalloc(BFS_SB_MAX_BYTES);
	char err[BFS_ERR_LEN], name[16];
	struct bfs_dev *dev, *crashed;
	u64 ino[NR_FILES], dir;
	struct bfs_stat st;
	struct bfs_fs *fs;
	int i;

	ck_assert_int_eq(bfs_dev_open_mem(DEV_BYTES, &dev), 0);
	ck_assert_int_eq(bfs_sb_layout(&fo, DEV_BYTES, 512, sb, err), 0);
	ck_assert_int_eq(bfs_mkfs(dev, sb), 0);

	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	ck_assert_int_eq(bfs_fs_mkdir(fs, BFS_ROOT_INO, "a", 1, 0755, &creds, &st), 0);
	dir = st.ino;
	ck_assert_int_eq(bfs_fs_mkdir(fs, dir, "b", 1, 0755, &creds, &st), 0);
	for (i = 0; i < NR_FILES; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = make_file(fs, i % 2 ? st.ino : dir, name, 3000 * (size_t)(i + 1), (u64)i);
	}
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	/* damage that pass 2 repairs, committed and cleanly closed */
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	poke_inode(fs, ino[1], 3, 0);
	poke_inode(fs, ino[2], 0, 1);
	drop_dirent(fs, "f3");
	ck_assert_int_eq(bfs_fs_close(fs), 0);

	/* more updates, durable only in the journal: the image is taken before the close */
	ck_assert_int_eq(bfs_fs_open(dev, &(struct bfs_fs_opts){ 0 }, &fs), 0);
	for (i = 0; i < NR_LATE; i++) {
		snprintf(name, sizeof(name), "late%d", i);
		make_file(fs, dir, name, 1000 + 70 * (size_t)(i % 50), 100 + (u64)i);
		if (i % 50 == 49)
			ck_assert_int_eq(bfs_fs_sync(fs), 0);
	}
	ck_assert_int_eq(bfs_dev_clone_mem(dev, &crashed), 0);
	ck_assert_int_eq(bfs_fs_close(fs), 0);
	bfs_dev_close(dev);

	corrupt_journal(crashed);
	/* and the backup superblock at the end of the device */
	memset(bfs_dev_mem(crashed) + le64_to_cpu(sb->copy_offset[sb->nr_copies - 1]), 0, 4096);
	bfs_free(sb);
	return crashed;
}

/* ---- checking a crash state ---- */

struct ctx {
	u64 want;		/* tree after the uninterrupted repair */
	char *logpath2;
	u64 nested_left, nested_every, seen;
	unsigned nested_states, nested_failures;
	bool nested;		/* inside a second interrupted run */
	bool csum;		/* checksums on */
};

static bool check_cb(void *vctx, struct bfs_dev *img, struct crash_marks mk, char *why);

/* record fsck -y on @img and interrupt it everywhere */
static bool second_run_interrupted(struct ctx *c, struct bfs_dev *img, char *why)
{
	const char *old = getenv("BFS_CRASH_MAX_FLUSH_STATES");
	char *saved = old ? strdup(old) : NULL;
	struct crash_result res;
	struct bfs_dev *base;
	int rc;

	ck_assert_int_eq(bfs_dev_clone_mem(img, &base), 0);
	ck_assert_int_eq(bfs_dev_record_start(img, c->logpath2), 0);
	rc = run_fsck(img, BFS_FSCK_MODE_YES);
	ck_assert_int_eq(bfs_dev_record_stop(img), 0);
	if (rc & ~BFS_FSCK_CORRECTED) {
		snprintf(why, 512, "second fsck -y exited %d", rc);
		bfs_dev_close(base);
		free(saved);
		return false;
	}
	/* fewer states for each nested run: it multiplies */
	setenv("BFS_CRASH_MAX_FLUSH_STATES", "10", 1);
	c->nested = true;
	crash_build_states(c->logpath2, base, c->seen, check_cb, c, &res);
	c->nested = false;
	if (saved)
		setenv("BFS_CRASH_MAX_FLUSH_STATES", saved, 1);
	else
		unsetenv("BFS_CRASH_MAX_FLUSH_STATES");
	free(saved);
	bfs_dev_close(base);
	c->nested_states += res.states;
	c->nested_failures += res.failures;
	if (res.failures) {
		snprintf(why, 512, "%u of %u states of the interrupted second run failed",
			 res.failures, res.states);
		return false;
	}
	return true;
}

static bool check_state(struct ctx *c, struct bfs_dev *img, char *why);

static bool check_cb(void *vctx, struct bfs_dev *img, struct crash_marks mk, char *why)
{
	struct ctx *c = vctx;

	(void)mk;
	return check_state(c, img, why);
}

static bool check_state(struct ctx *c, struct bfs_dev *img, char *why)
{
	u64 h;
	int rc, ret;

	if (!c->nested && c->nested_left && ++c->seen % c->nested_every == 0) {
		c->nested_left--;
		if (!second_run_interrupted(c, img, why))
			return false;
	} else {
		rc = run_fsck(img, BFS_FSCK_MODE_YES);
		if (rc & ~BFS_FSCK_CORRECTED) {
			snprintf(why, 512, "fsck -y exited %d", rc);
			return false;
		}
	}
	rc = run_fsck(img, BFS_FSCK_MODE_NO);
	if (rc) {
		snprintf(why, 512, "fsck -n after the repair exited %d", rc);
		return false;
	}
	ret = tree_hash(img, &h);
	if (ret) {
		snprintf(why, 512, "reading the repaired tree failed: %s", strerror(-ret));
		return false;
	}
	if (h != c->want) {
		snprintf(why, 512, "the repaired tree differs from the uninterrupted repair's");
		return false;
	}
	return true;
}

/*
 * Every multi-sector write of the log torn, with everything before it
 * applied and nothing after: after the first sector, in the middle, and
 * before the last sector.  The random states tear some writes; this tears
 * each one (node writes and bset appends in particular).
 */
static void torn_sweep(const char *logpath, struct bfs_dev *base, struct ctx *c,
		       unsigned *states, unsigned *failures)
{
	struct bfs_iolog log;
	struct bfs_dev *run;

	ck_assert_int_eq(bfs_iolog_open(logpath, &log), 0);
	ck_assert_int_eq(bfs_dev_clone_mem(base, &run), 0);
	for (size_t i = 0; i < log.nr; i++) {
		const struct bfs_iolog_entry *e = &log.entries[i];
		u64 sectors = e->len / 512, cut[3] = { 1, sectors / 2, sectors - 1 };

		if (e->type != BFS_IOLOG_WRITE && e->type != BFS_IOLOG_FUA &&
		    e->type != BFS_IOLOG_DISCARD)
			continue;
		for (unsigned k = 0; e->type != BFS_IOLOG_DISCARD && sectors > 1 && k < 3; k++) {
			struct bfs_dev *img;
			char why[512] = "";

			if (k && cut[k] == cut[k - 1])
				continue;
			ck_assert_int_eq(bfs_dev_clone_mem(run, &img), 0);
			ck_assert_int_eq(bfs_iolog_apply(&log, i, img, cut[k] * 512), 0);
			(*states)++;
			if (!check_cb(c, img, (struct crash_marks){ 0 }, why)) {
				if (++*failures <= 5)
					fprintf(stderr, "write %zu (offset %llu, %llu bytes) torn after %llu "
						"sectors: %s\n", i, (unsigned long long)e->off,
						(unsigned long long)e->len,
						(unsigned long long)cut[k], why);
			}
			bfs_dev_close(img);
		}
		ck_assert_int_eq(bfs_iolog_apply(&log, i, run, 0), 0);
	}
	bfs_dev_close(run);
	bfs_iolog_close(&log);
}

static void crash_fsck(u8 csum_type, const char *mode)
{
	struct ctx c = { .nested_left = crash_env_u64("BFS_CRASH_FSCK_NESTED", 3),
			 .csum = csum_type != BFS_CSUM_NONE };
	char *logpath = bfs_unit_tmpfile("crash-fsck-log");
	struct bfs_dev *damaged = make_damaged(csum_type), *ref, *rec;
	struct crash_result res;
	unsigned torn = 0, torn_failures = 0;
	u64 h;

	bfs_log_set_hook(log_hook, NULL);
	c.logpath2 = bfs_unit_tmpfile("crash-fsck-log2");
	/* the uninterrupted repair: repairs, then is clean */
	ck_assert_int_eq(bfs_dev_clone_mem(damaged, &ref), 0);
	ck_assert_int_eq(run_fsck(ref, BFS_FSCK_MODE_NO), BFS_FSCK_UNCORRECTED);
	ck_assert_int_eq(run_fsck(ref, BFS_FSCK_MODE_YES), BFS_FSCK_CORRECTED);
	ck_assert_int_eq(run_fsck(ref, BFS_FSCK_MODE_NO), BFS_FSCK_OK);
	ck_assert_int_eq(tree_hash(ref, &c.want), 0);
	bfs_dev_close(ref);

	/* the same repair, recorded */
	ck_assert_int_eq(bfs_dev_clone_mem(damaged, &rec), 0);
	ck_assert_int_eq(bfs_dev_record_start(rec, logpath), 0);
	ck_assert_int_eq(run_fsck(rec, BFS_FSCK_MODE_YES), BFS_FSCK_CORRECTED);
	ck_assert_int_eq(bfs_dev_record_stop(rec), 0);
	ck_assert_int_eq(tree_hash(rec, &h), 0);
	ck_assert_uint_eq(h, c.want);
	bfs_dev_close(rec);

	c.nested_every = BFS_MAX(crash_env_u64("BFS_CRASH_MAX_FLUSH_STATES", 80) / 3, 1);
	crash_build_states(logpath, damaged, crash_env_u64("BFS_CRASH_SEED", 1) ^ csum_type,
			   check_cb, &c, &res);
	c.nested_left = 0;
	torn_sweep(logpath, damaged, &c, &torn, &torn_failures);
	printf("crash-fsck (%s): %zu log entries; %u crash states of fsck -y checked (%u flush "
	       "points, %u random), %u failed; %u states of interrupted second runs, %u failed; "
	       "%u torn writes, %u failed\n",
	       mode, res.log_entries, res.states, res.flush_states, res.random_states,
	       res.failures, c.nested_states, c.nested_failures, torn, torn_failures);
	ck_assert_msg(res.failures == 0, "%u of %u crash states failed", res.failures, res.states);
	ck_assert_msg(torn_failures == 0, "%u of %u torn writes failed", torn_failures, torn);
	unlink(logpath);
	unlink(c.logpath2);
	free(logpath);
	free(c.logpath2);
	bfs_dev_close(damaged);
	bfs_log_set_hook(NULL, NULL);
}

START_TEST(test_crash_fsck_csum)
{
	crash_fsck(BFS_CSUM_XXH3, "checksums on");
}
END_TEST

START_TEST(test_crash_fsck_no_csum)
{
	crash_fsck(BFS_CSUM_NONE, "--checksum=none");
}
END_TEST

static Suite *crash_fsck_suite(void)
{
	Suite *s = suite_create("crash_fsck");
	TCase *tc = tcase_create("fsck");

	tcase_set_timeout(tc, 1800);
	tcase_add_test(tc, test_crash_fsck_csum);
	tcase_add_test(tc, test_crash_fsck_no_csum);
	suite_add_tcase(s, tc);
	return s;
}

BFS_UNIT_MAIN(crash_fsck_suite)
