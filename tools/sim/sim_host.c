// SPDX-License-Identifier: BSD-2-Clause
/*
 * The model's hosts (sim_model_int.h): each host's cache under the host
 * policy and its content fetches still in flight (single-flight), and
 * the VMs' private LRU caches.
 */
#include "sim_model_int.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- fetches in flight (single-flight per content on a host) ---- */

double flight_ready(const struct flight *f, uint64_t key)
{
	uint32_t i;

	if (!f->n)
		return 0;
	for (i = (uint32_t)sc_mix64(key) & (f->cap - 1); f->key[i];
	     i = (i + 1) & (f->cap - 1))
		if (f->key[i] == key + 1)
			return f->ready[i];
	return 0;
}

/* Rebuild at a size for the fetches still in flight at now. */
static void flight_rebuild(struct flight *f, double now)
{
	struct flight old = *f;
	uint32_t i, live = 0;

	for (i = 0; i < old.cap; i++)
		live += old.key[i] && old.ready[i] > now;
	f->cap = 64;
	while (f->cap < live * 4)
		f->cap *= 2;
	f->n = 0;
	f->key = calloc(f->cap, sizeof(*f->key));
	f->ready = calloc(f->cap, sizeof(*f->ready));
	if (!f->key || !f->ready)
		oom();
	for (i = 0; i < old.cap; i++)
		if (old.key[i] && old.ready[i] > now)
			flight_put(f, old.key[i] - 1, old.ready[i], now);
	free(old.key);
	free(old.ready);
}

/* key's fetch, started at now, ends at ready. */
void flight_put(struct flight *f, uint64_t key, double ready,
		double now)
{
	uint32_t i;

	if (f->n * 2 >= f->cap)
		flight_rebuild(f, now);
	for (i = (uint32_t)sc_mix64(key) & (f->cap - 1);
	     f->key[i] && f->key[i] != key + 1; i = (i + 1) & (f->cap - 1))
		;
	f->n += !f->key[i];
	f->key[i] = key + 1;
	f->ready[i] = ready;
}

/* ---- host caches ---- */

static void host_evicted(void *ctx, uint64_t key)
{
	struct host *h = ctx;
	struct sim *s = h->s;
	uint32_t c;

	if (!s->csi)
		return;
	c = ckey_content(key);
	hs_put(&s->cheld, c, hs_get(&s->cheld, c) & ~(1ull << h->idx));
	if (s->tracker) {	/* the eviction notice, piggybacked */
		s->r.csi_bytes += s->p.hash_bytes;
		s->r.server_bytes += s->p.hash_bytes;
	}
}

struct host *host_get(struct sim *s, uint32_t idx)
{
	struct host *h = &s->hosts[idx];
	struct sc_dc_config cfg = {
		.data_blocks = s->r.host_cache_blocks,
		.block_size = s->p.block_size,
		.peer_blocks = s->r.server_cache_blocks,
		.on_evict = host_evicted,
		.ctx = h,
	};

	if (h->on)
		return h;
	h->s = s;
	h->idx = idx;
	if (sc_dcache_create(&h->cache, s->p.policy, &cfg)) {
		fprintf(stderr, "seacache-sim: cannot create host cache '%s'\n",
			s->p.policy);
		exit(2);
	}
	h->on = true;
	if (idx > s->max_host)
		s->max_host = idx;
	s->host_peer = h->cache.ops->peer != NULL;
	return h;
}

struct sc_dcache *vm_cache(struct sim *s, uint32_t vm)
{
	struct sc_dc_config cfg = {
		.data_blocks = s->r.vm_cache_blocks,
		.block_size = s->p.block_size,
	};
	uint32_t n;

	if (!s->r.vm_cache_blocks)
		return NULL;
	if (vm >= s->nvmc) {
		n = vm + 16;
		s->vmc = grow(s->vmc, sizeof(*s->vmc), s->nvmc, n, 0);
		s->nvmc = n;
	}
	if (!s->vmc[vm].ops && sc_dcache_create(&s->vmc[vm], "lru", &cfg))
		exit(2);
	return &s->vmc[vm];
}

void host_load(struct sim *s, struct host *h, uint32_t a, uint32_t c,
	       uint8_t op)
{
	struct sc_dc_res res = cache_access(&h->cache, op, sc_mix64(a),
					    ckey(c), s->cshare[c]);

	if (res.admitted)
		hs_add(&s->cheld, c, 1ull << h->idx);
}

/*
 * The host holds key's block from the start of its fetch on: a reader
 * that finds it waits until the fetch is done (single-flight), at least
 * floor_ms.  Its latency.
 */
double wait_ready(struct sim *s, struct host *h, uint64_t key,
		  double now, double floor_ms)
{
	double ready = flight_ready(&h->fl, key);

	if (ready <= now + floor_ms)
		return floor_ms;
	s->r.flight_waits++;
	return ready - now;
}
