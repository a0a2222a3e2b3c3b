// SPDX-License-Identifier: MIT
/* Link counts above what the flags byte holds.  See link_table.h. */
#include <bfs/os.h>

#include <errno.h>
#include <string.h>

#include "link_table.h"

struct link_slot {
	u64	key;		/* index + 1; 0: free */
	u32	links;
};

static size_t slot_of(const struct link_table *t, u64 key)
{
	key *= UINT64_C(0x9E3779B97F4A7C15);
	return (size_t)(key ^ (key >> 29)) & t->mask;
}

static struct link_slot *lookup(const struct link_table *t, u64 key)
{
	size_t i = slot_of(t, key);

	while (t->slot[i].key && t->slot[i].key != key)
		i = (i + 1) & t->mask;
	return &t->slot[i];
}

static int grow(struct link_table *t)
{
	size_t n = t->mask ? (t->mask + 1) * 2 : 64, i;
	struct link_table nt = { .mask = n - 1, .nr = t->nr };

	nt.slot = bfs_calloc(n, sizeof(*nt.slot));
	if (!nt.slot)
		return -ENOMEM;
	for (i = 0; t->mask && i <= t->mask; i++)
		if (t->slot[i].key)
			*lookup(&nt, t->slot[i].key) = t->slot[i];
	bfs_free(t->slot);
	*t = nt;
	return 0;
}

u32 link_table_get(const struct link_table *t, size_t idx)
{
	const struct link_slot *s = t->mask ? lookup(t, (u64)idx + 1) : NULL;

	return s && s->key ? s->links : 0;
}

int link_table_set(struct link_table *t, size_t idx, u32 links)
{
	struct link_slot *s = t->mask ? lookup(t, (u64)idx + 1) : NULL;
	int ret;

	if (!s || !s->key) {
		if ((t->nr + 1) * 2 > (t->mask ? t->mask + 1 : 0)) {
			ret = grow(t);
			if (ret)
				return ret;
		}
		s = lookup(t, (u64)idx + 1);
		s->key = (u64)idx + 1;
		t->nr++;
	}
	s->links = links;
	return 0;
}

size_t link_table_bytes(const struct link_table *t)
{
	return t->mask ? (t->mask + 1) * sizeof(*t->slot) : 0;
}

void link_table_free(struct link_table *t)
{
	bfs_free(t->slot);
	memset(t, 0, sizeof(*t));
}
