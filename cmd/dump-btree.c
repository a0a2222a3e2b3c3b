// SPDX-License-Identifier: MIT
/*
 * bfs dump-btree: print btree keys in order, decoded per type, and with
 * --nodes the node structure.  Read-only; on a damaged image it walks
 * whatever can be reached, reports each damaged node with its location and
 * the reason, and exits 1.
 */
#include "cmd.h"
#include "key_json.h"
#include "output.h"

#include <bfs/btree.h>
#include <bfs/core.h>
#include <bfs/fs.h>
#include <bfs/super.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const struct bfs_opt dump_opts[] = {
	BFS_OPT("btree", 'b', 0, "NAME",
		"only this btree: extents, inodes, dirents, xattrs, alloc",
		.values = BFS_VAL_BTREES),
	BFS_OPT("start", 's', 0, "POS",
		"first key position to print: INODE:OFFSET[:SNAPSHOT], each\n"
		"a number or max; or min, max", .values = BFS_VAL_WORDS, .words = "min max"),
	BFS_OPT("end", 'e', 0, "POS",
		"last key position to print (inclusive; max)",
		.values = BFS_VAL_WORDS, .words = "min max"),
	BFS_OPT("nodes", 'n', 0, NULL, "print the node tree instead of the keys"),
	BFS_OPT("json", 'j', 0, NULL, "print JSON"),
	BFS_OPT("no-replay", 'R', 0, NULL, "do not replay the journal (damaged journal)"),
	{ 0 }
};

struct dump {
	struct bfs_bpos start, end;
	bool nodes, json, first_item;
	int root_level;
	u64 keys, nodes_seen, damaged;
};

static void json_str(const char *s)
{
	out_json_string(stdout, s);
}

static void json_sep(struct dump *d)
{
	printf("%s\n      ", d->first_item ? "" : ",");
	d->first_item = false;
}

static int node_cb(void *ctx, const struct bfs_btree_node_info *ni)
{
	struct dump *d = ctx;
	char a[64], b[64];

	if (d->root_level < 0)
		d->root_level = ni->level;
	d->nodes_seen++;
	if (ni->status)
		d->damaged++;
	if (!d->nodes) {
		if (ni->status && !d->json)
			printf("DAMAGED node %s level %u at offset %" PRIu64 ": %s\n",
			       bfs_btree_id_name(ni->btree_id), ni->level, ni->offset, ni->err);
		return 0;
	}
	bfs_bpos_to_text(a, sizeof(a), ni->min_key);
	bfs_bpos_to_text(b, sizeof(b), ni->max_key);
	if (d->json) {
		json_sep(d);
		printf("{\"type\": \"node\", \"level\": %u, \"offset\": %" PRIu64 ", \"seq\": %" PRIu64
		       ", \"min_key\": \"%s\", \"max_key\": \"%s\", \"min_pos\": ", ni->level,
		       ni->offset, ni->seq, a, b);
		bfs_pos_json(stdout, ni->min_key);
		printf(", \"max_pos\": ");
		bfs_pos_json(stdout, ni->max_key);
		printf(", \"bsets\": %u, \"written\": %u, \"node_size\": %u, \"keys\": %u, "
		       "\"live_bytes\": %" PRIu64 ", \"status\": ", ni->nr_bsets, ni->written,
		       ni->node_size, ni->nr_keys, ni->live_bytes);
		json_str(ni->status ? ni->err : "ok");
		putchar('}');
		return 0;
	}
	printf("%*snode level %u  %s .. %s  offset %" PRIu64 "  seq %" PRIu64
	       "  bsets %u  written %u/%u  keys %u  live %" PRIu64 " bytes  %s%s\n",
	       2 * (d->root_level - ni->level), "", ni->level, a, b, ni->offset, ni->seq,
	       ni->nr_bsets, ni->written, ni->node_size, ni->nr_keys, ni->live_bytes,
	       ni->status ? "DAMAGED: " : "[csum ok]", ni->status ? ni->err : "");
	return 0;
}

static int key_cb(void *ctx, const struct bfs_btree_node_info *ni, const struct bfs_bkey *k)
{
	struct dump *d = ctx;
	char buf[4096];

	if (ni->level || bfs_bkey_cmp_pos(k, d->start) < 0 || bfs_bkey_cmp_pos(k, d->end) > 0)
		return 0;
	d->keys++;
	if (d->nodes)
		return 0;	/* the node view lists nodes only, in text and JSON */
	if (d->json) {
		json_sep(d);
		bfs_key_json(stdout, k);
	} else {
		bfs_bkey_to_text(buf, sizeof(buf), k);
		printf("%s\n", buf);
	}
	return 0;
}

static int dump_one(struct bfs_core *c, unsigned id, struct dump *d, bool *first_tree)
{
	int ret;

	d->root_level = -1;
	d->first_item = true;
	if (d->json) {
		printf("%s\n    {\"btree\": \"%s\", \"id\": %u, \"items\": [", *first_tree ? "" : ",",
		       bfs_btree_id_name(id), id);
	} else {
		printf("%sbtree %s:\n", *first_tree ? "" : "\n", bfs_btree_id_name(id));
	}
	*first_tree = false;
	ret = bfs_btree_walk(c, id, node_cb, key_cb, d);
	if (d->json)
		printf("\n    ]}");
	return ret;
}

static int open_core(const struct bfs_cmd *cmd, struct bfs_dev *dev, bool no_replay,
		     struct bfs_core **c)
{
	struct bfs_core_opts opts = { .read_only = true, .no_replay = no_replay };
	int ret = bfs_core_open(dev, &opts, c);

	if (ret == -EUCLEAN && !no_replay) {
		fprintf(stderr, "bfs %s: warning: the journal cannot be replayed; showing the "
			"btrees as of the last clean shutdown\n", cmd->name);
		opts.no_replay = true;
		ret = bfs_core_open(dev, &opts, c);
	}
	return ret;
}

static int cmd_dump_btree(const struct bfs_cmd *cmd, int argc, char **argv)
{
	struct dump d = { .start = BFS_POS_MIN, .end = BFS_POS_MAX };
	int only = -1, c, ret = 0, walk_ret = 0;
	bool no_replay = false, first_tree = true;
	struct bfs_core *core;
	struct bfs_dev *dev;
	unsigned id;

	while ((c = bfs_cmd_getopt(cmd, argc, argv, NULL)) != -1) {
		switch (c) {
		case 'b':
			for (id = 0; id < BFS_BTREE_NR; id++)
				if (!strcmp(optarg, bfs_btree_id_name(id)))
					only = (int)id;
			if (only < 0)
				return bfs_cmd_usage_error(cmd, "unknown btree '%s' (extents, inodes, "
							   "dirents, xattrs, alloc)", optarg);
			break;
		case 's':
			if (bfs_bpos_parse(optarg, &d.start))
				return bfs_cmd_usage_error(cmd, "bad position '%s' (INODE:OFFSET[:SNAPSHOT])",
							   optarg);
			break;
		case 'e':
			if (bfs_bpos_parse(optarg, &d.end))
				return bfs_cmd_usage_error(cmd, "bad position '%s' (INODE:OFFSET[:SNAPSHOT])",
							   optarg);
			break;
		case 'n':
			d.nodes = true;
			break;
		case 'j':
			d.json = true;
			break;
		case 'R':
			no_replay = true;
			break;
		default:
			return bfs_cmd_usage_error(cmd, "bad option");
		}
	}
	ret = bfs_cmd_want_device(cmd, argc);
	if (ret)
		return ret;
	ret = bfs_dev_open(argv[optind], BFS_DEV_RDONLY, &dev);
	if (ret)
		return bfs_cmd_error(cmd, "cannot open '%s': %s", argv[optind], strerror(-ret));
	ret = open_core(cmd, dev, no_replay, &core);
	if (ret) {
		bfs_dev_close(dev);
		return bfs_cmd_error(cmd, "cannot open the filesystem on '%s': %s", argv[optind],
				     strerror(-ret));
	}
	if (d.json)
		printf("{\n  \"device\": \"%s\",\n  \"btrees\": [", argv[optind]);
	for (id = 0; id < BFS_BTREE_NR; id++) {
		if (only >= 0 && (int)id != only)
			continue;
		ret = dump_one(core, id, &d, &first_tree);
		if (ret && !walk_ret)
			walk_ret = ret;
	}
	if (d.json)
		printf("\n  ],\n  \"keys\": %" PRIu64 ",\n  \"nodes\": %" PRIu64
		       ",\n  \"damaged_nodes\": %" PRIu64 "\n}\n", d.keys, d.nodes_seen, d.damaged);
	bfs_core_close(core);
	bfs_dev_close(dev);
	if (walk_ret)
		return bfs_cmd_error(cmd, "walking the btrees failed: %s", strerror(-walk_ret));
	if (d.damaged)
		return bfs_cmd_error(cmd, "%" PRIu64 " damaged node%s (see above); run bfs fsck",
				     d.damaged, d.damaged == 1 ? "" : "s");
	return BFS_EXIT_OK;
}

const struct bfs_cmd bfs_cmd_dump_btree = {
	.name = "dump-btree",
	.fn = cmd_dump_btree,
	.summary = "print btree keys and node structure for debugging",
	.synopsis = "[--btree NAME] [--start POS] [--end POS] [--nodes] [--json] DEVICE",
	.opts = dump_opts,
	.help =
	"The device is opened read-only and nothing is written.  Damaged nodes\n"
	"are reported with their location and skipped; the exit status is then 1.\n",
	.args = BFS_ARG_DEVICE,
};
