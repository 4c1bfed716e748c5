// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The host cache: CSI-Map + content cache, one lock, read accounting. */
#include "seacache/hostcache.h"

struct sc_hostcache {
	struct sc_mutex lock;
	struct sc_csimap *map;
	struct sc_ccache *cache;
	uint64_t reads, addr_hits, content_hits, misses;
};

/* The CSI-Map's sharer counts are the cached blocks' sharing counts. */
static void hostcache_on_share(void *ctx, const struct sc_hash *h,
			       uint32_t sharers)
{
	struct sc_hostcache *hc = ctx;

	if (hc->cache)
		sc_ccache_set_share(hc->cache, h, sharers);
}

struct sc_hostcache *sc_hostcache_create(const struct sc_hostcache_config *c)
{
	struct sc_ccache_config ccfg = {
		.block_size = c->block_size,
		.capacity_blocks = c->cache_blocks,
		.policy = c->policy,
	};
	struct sc_csimap_config mcfg = {
		.mem_budget = c->csimap_budget,
		.expected_sharing = c->expected_sharing,
		.on_share = hostcache_on_share,
	};
	struct sc_hostcache *hc = sc_zalloc(sizeof(*hc));

	if (!hc)
		return NULL;
	mcfg.ctx = hc;
	hc->map = sc_csimap_create(&mcfg);
	hc->cache = hc->map ? sc_ccache_create(&ccfg) : NULL;
	if (!hc->cache) {
		sc_csimap_destroy(hc->map);
		sc_free(hc);
		return NULL;
	}
	sc_mutex_init(&hc->lock);
	return hc;
}

void sc_hostcache_destroy(struct sc_hostcache *hc)
{
	if (!hc)
		return;
	sc_ccache_destroy(hc->cache);
	sc_csimap_destroy(hc->map);
	sc_mutex_destroy(&hc->lock);
	sc_free(hc);
}

/* Copy out content h if cached (lock held). */
static bool hostcache_copy_out(struct sc_hostcache *hc,
			       const struct sc_hash *h, void *buf)
{
	const void *data = sc_ccache_lookup(hc->cache, h);

	if (!data)
		return false;
	sc_memcpy(buf, data, hc->cache->block_size);
	return true;
}

enum sc_read_result sc_hostcache_read(struct sc_hostcache *hc, uint64_t file,
				      uint64_t lbn, void *buf,
				      struct sc_hash *h)
{
	enum sc_read_result r = SC_NEED_HASH;

	sc_mutex_lock(&hc->lock);
	hc->reads++;
	if (sc_csimap_lookup(hc->map, file, lbn, h)) {
		if (hostcache_copy_out(hc, h, buf)) {
			hc->addr_hits++;
			r = SC_ADDR_HIT;
		} else {
			hc->misses++;
			r = SC_NEED_DATA;
		}
	}
	sc_mutex_unlock(&hc->lock);
	return r;
}

enum sc_read_result sc_hostcache_read_hash(struct sc_hostcache *hc,
					   uint64_t file, uint64_t lbn,
					   const struct sc_hash *h, void *buf)
{
	enum sc_read_result r;

	sc_mutex_lock(&hc->lock);
	sc_csimap_insert(hc->map, file, lbn, h, SC_CSI_LEARNT);
	if (hostcache_copy_out(hc, h, buf)) {
		hc->content_hits++;
		r = SC_CONTENT_HIT;
	} else {
		hc->misses++;
		r = SC_NEED_DATA;
	}
	sc_mutex_unlock(&hc->lock);
	return r;
}

int sc_hostcache_fill(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
		      const struct sc_hash *h, const void *data)
{
	uint32_t sharers;
	int err;

	sc_mutex_lock(&hc->lock);
	sharers = sc_csimap_insert(hc->map, file, lbn, h, SC_CSI_LEARNT);
	err = sc_ccache_insert(hc->cache, h, data, sharers);
	sc_mutex_unlock(&hc->lock);
	return err;
}

void sc_hostcache_learn(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
			const struct sc_hash *h)
{
	sc_mutex_lock(&hc->lock);
	sc_csimap_insert(hc->map, file, lbn, h, SC_CSI_PUSHED);
	sc_mutex_unlock(&hc->lock);
}

bool sc_hostcache_forget(struct sc_hostcache *hc, uint64_t file, uint64_t lbn)
{
	bool found;

	sc_mutex_lock(&hc->lock);
	found = sc_csimap_remove(hc->map, file, lbn);
	sc_mutex_unlock(&hc->lock);
	return found;
}

uint32_t sc_hostcache_drop_file(struct sc_hostcache *hc, uint64_t file)
{
	uint32_t n;

	sc_mutex_lock(&hc->lock);
	n = sc_csimap_drop_file(hc->map, file);
	sc_mutex_unlock(&hc->lock);
	return n;
}

uint32_t sc_hostcache_block_share(struct sc_hostcache *hc,
				  const struct sc_hash *h)
{
	uint32_t slot, share = SC_NIL;

	sc_mutex_lock(&hc->lock);
	slot = sc_ccache_find(hc->cache, h);
	if (slot != SC_NIL)
		share = hc->cache->share[slot];
	sc_mutex_unlock(&hc->lock);
	return share;
}

void sc_hostcache_get_stats(struct sc_hostcache *hc,
			    struct sc_hostcache_stats *out)
{
	sc_mutex_lock(&hc->lock);
	sc_ccache_get_stats(hc->cache, &out->cache);
	sc_csimap_get_stats(hc->map, &out->map);
	out->reads = hc->reads;
	out->addr_hits = hc->addr_hits;
	out->content_hits = hc->content_hits;
	out->misses = hc->misses;
	out->evictions = out->cache.evictions;
	out->bytes_in = out->cache.bytes_in;
	out->mem_bytes = out->cache.mem_bytes + out->map.mem_bytes +
			 sizeof(*hc);
	sc_mutex_unlock(&hc->lock);
}
