// SPDX-License-Identifier: MIT
/*
 * Node buffers from their own mmap'd pool.  From the malloc heap, freed
 * node-size aligned blocks left holes that other aligned blocks did not
 * reuse, and RSS ran far over the cache budget; a slot of a slab can be
 * handed back to the kernel page by page (bfs_mem_release), so the memory
 * resident for node buffers tracks the budget.  See struct node_bufs.
 *
 * A node read from disk is followed by nothing but its next bsets, written
 * later: the pages past its last bset can go back at once
 * (bfs_node_buf_trim), so that a small root holds a few pages, not a node.
 *
 * What the pool keeps resident is counted in bytes: a trimmed buffer counts
 * what it kept (the cache charges the same, bfs_node_data_resident()), and
 * free slots stay warm while the buffers out and they fit the budget and
 * WARM_SLACK more.  A trimmed buffer put back goes cold, released whole: a
 * warm slot is one a leaf's read takes without faulting its pages in.
 *
 * Buffers asked for before the pool is set up (or for a core whose cache
 * never was) come from bfs_aligned_alloc(); bfs_node_buf_put() tells the
 * two apart by address.
 */
#include "internal.h"

/* under AddressSanitizer node buffers stay on the heap, where overruns are caught */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ON	0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ON	0
#endif
#endif
#ifndef POOL_ON
#define POOL_ON	1
#endif

#define FIRST_SLAB_SLOTS	16
/* free slots kept warm above the budget: a miss that evicts reuses one */
#define WARM_SLACK		1

void bfs_node_bufs_init(struct bfs_core *c, u64 budget)
{
	struct node_bufs *b = &c->cache.bufs;

	*b = (struct node_bufs){ .node_size = c->node_size, .ok = POOL_ON && c->node_size };
	b->max_resident = (size_t)budget + WARM_SLACK * (size_t)c->node_size;
	bfs_mutex_init(&b->lock);
}

static bool in_pool(const struct node_bufs *b, const u8 *buf)
{
	for (u32 i = 0; i < b->nr_slab; i++)
		if (buf >= b->slab[i].base && buf < b->slab[i].base + b->slab[i].slots * b->node_size)
			return true;
	return false;
}

/* room for every slot on the free stacks, so that a put never fails */
static int grow_free(struct node_bufs *b, size_t total)
{
	u8 **w, **k;

	if (total <= b->cap_free)
		return 0;
	w = bfs_realloc(b->warm, total * sizeof(*w));
	if (!w)
		return -ENOMEM;
	b->warm = w;
	k = bfs_realloc(b->cold, total * sizeof(*k));
	if (!k)
		return -ENOMEM;
	b->cold = k;
	b->cap_free = total;
	return 0;
}

static u8 *carve_locked(struct node_bufs *b)
{
	struct node_slab *s = b->nr_slab ? &b->slab[b->nr_slab - 1] : NULL;
	size_t total = 0;

	if (!s || b->carved == s->slots) {
		size_t slots = s ? s->slots * 2 : FIRST_SLAB_SLOTS;
		u8 *base;

		if (b->nr_slab == ARRAY_SIZE(b->slab))
			return NULL;
		for (u32 i = 0; i < b->nr_slab; i++)
			total += b->slab[i].slots;
		if (grow_free(b, total + slots))
			return NULL;
		base = bfs_map_anon(slots * b->node_size);
		if (!base)
			return NULL;
		s = &b->slab[b->nr_slab++];
		*s = (struct node_slab){ .base = base, .slots = slots };
		b->carved = 0;
	}
	return s->base + b->carved++ * b->node_size;
}

u8 *bfs_node_buf_get(struct bfs_core *c)
{
	struct node_bufs *b = &c->cache.bufs;
	u8 *buf;

	if (!b->ok || b->node_size != c->node_size)
		return bfs_aligned_alloc(4096, c->node_size);
	bfs_mutex_lock(&b->lock);
	if (b->nr_warm)
		buf = b->warm[--b->nr_warm];
	else if (b->nr_cold)
		buf = b->cold[--b->nr_cold];
	else
		buf = carve_locked(b);
	if (buf) {
		b->out++;
		b->out_bytes += b->node_size;
	}
	bfs_mutex_unlock(&b->lock);
	return buf;
}

void bfs_node_buf_put(struct bfs_core *c, u8 *buf, size_t resident)
{
	struct node_bufs *b = &c->cache.bufs;

	if (!buf)
		return;
	if (!b->ok) {
		bfs_free(buf);
		return;
	}
	bfs_mutex_lock(&b->lock);
	if (!in_pool(b, buf)) {
		bfs_mutex_unlock(&b->lock);
		bfs_free(buf);
		return;
	}
	b->out--;
	b->out_bytes -= BFS_MIN(resident, b->out_bytes);
	if (resident >= b->node_size &&
	    b->out_bytes + (b->nr_warm + 1) * b->node_size <= b->max_resident) {
		b->warm[b->nr_warm++] = buf;
	} else {
		bfs_mem_release(buf, b->node_size);
		b->cold[b->nr_cold++] = buf;
	}
	bfs_mutex_unlock(&b->lock);
}

size_t bfs_node_buf_trim(struct bfs_core *c, u8 *buf, size_t used)
{
	struct node_bufs *b = &c->cache.bufs;
	size_t keep = BFS_ROUND_UP(used, (size_t)4096);
	bool pooled;

	if (!b->ok || keep >= b->node_size)
		return 0;
	/* a buffer is trimmed once, right after its read: nothing else touches it yet */
	keep = BFS_MAX(keep, (size_t)4096);
	bfs_mutex_lock(&b->lock);
	pooled = in_pool(b, buf);
	if (pooled)
		b->out_bytes -= BFS_MIN(b->node_size - keep, b->out_bytes);
	bfs_mutex_unlock(&b->lock);
	if (!pooled)
		return 0;
	bfs_mem_release(buf + keep, b->node_size - keep);
	return keep;
}

/* the warm free slots go cold: their pages back to the kernel (bfs_core_trim_cache) */
void bfs_node_bufs_release_free(struct bfs_core *c)
{
	struct node_bufs *b = &c->cache.bufs;

	if (!b->ok)
		return;
	bfs_mutex_lock(&b->lock);
	while (b->nr_warm) {
		u8 *buf = b->warm[--b->nr_warm];

		bfs_mem_release(buf, b->node_size);
		b->cold[b->nr_cold++] = buf;
	}
	bfs_mutex_unlock(&b->lock);
}

void bfs_node_bufs_exit(struct bfs_core *c)
{
	struct node_bufs *b = &c->cache.bufs;

	if (!b->ok)
		return;
	/* a buffer still out would be used after its unmap: keep the slabs then */
	if (!b->out)
		for (u32 i = 0; i < b->nr_slab; i++)
			bfs_unmap(b->slab[i].base, b->slab[i].slots * b->node_size);
	bfs_free(b->warm);
	bfs_free(b->cold);
	bfs_mutex_destroy(&b->lock);
	b->ok = false;
}
