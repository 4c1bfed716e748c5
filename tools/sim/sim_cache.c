// SPDX-License-Identifier: BSD-2-Clause
/*
 * The model's cache mode (sim_model_int.h): one storage cache fed every
 * block, as in the policy papers, and its fast path for plain slot
 * policies on traces without fingerprints (struct cache_fast).
 */
#include "sim_model_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- cache mode ---- */

static uint64_t fast_key(const void *ctx, uint32_t slot)
{
	const struct cache_fast *f = ctx;

	return f->key[slot];
}

/* The fast path's cache (spec names a slot policy: a content cache). */
struct cache_fast *fast_new(const char *spec, uint32_t cap,
			    uint32_t naddr)
{
	struct cache_fast *f;
	uint32_t i;

	f = calloc(1, sizeof(*f));
	if (!f)
		oom();
	f->cap = cap;
	f->key = calloc(cap, sizeof(*f->key));
	f->owner = malloc((size_t)cap * sizeof(*f->owner));
	f->share = malloc((size_t)cap * sizeof(*f->share));
	if (!f->key || !f->owner || !f->share)
		oom();
	for (i = 0; i < cap; i++) {
		f->owner[i] = i + 1 < cap ? i + 1 : NIL;
		f->share[i] = 1;
	}
	if (sc_policy_create(&f->pol, spec, cap, f->share))
		exit(2);
	f->pol.key = fast_key;
	f->pol.key_ctx = f;
	f->slot = grow(NULL, 4, 0, naddr, 0xff);
	return f;
}

void fast_free(struct cache_fast *f)
{
	if (!f)
		return;
	sc_policy_destroy(&f->pol);
	free(f->slot);
	free(f->gen);
	free(f->key);
	free(f->owner);
	free(f->share);
	free(f);
}

/* One block of address a under the fast path: true on a hit. */
static bool fast_access(struct sim *s, uint32_t a, bool write)
{
	struct cache_fast *f = s->fast;
	uint32_t slot = f->slot[a], v;
	uint64_t key;

	if (write) {
		/* New content: the old (address, content) entry stays, orphaned. */
		if (!f->gen)
			f->gen = grow(NULL, 4, 0, s->acap, 0);
		f->gen[a]++;
		if (slot != NIL)
			f->owner[slot] = NIL;
		slot = NIL;
	} else if (slot != NIL) {
		f->pol.ops->hit(&f->pol, slot);
		return true;
	}
	key = (uint64_t)(f->gen ? f->gen[a] : 0) << 32 | a;
	sc_policy_admit(&f->pol, key);
	if (f->used == f->cap) {
		v = f->pol.ops->victim(&f->pol);
		f->pol.ops->remove(&f->pol, v);
		if (f->owner[v] != NIL)
			f->slot[f->owner[v]] = NIL;
		s->r.evictions++;
	} else {
		v = f->free_head;
		f->free_head = f->owner[v];
		f->used++;
	}
	f->key[v] = key;
	f->owner[v] = a;
	f->slot[a] = v;
	f->pol.ops->insert(&f->pol, v);
	s->r.loads++;
	return false;
}

/* Cache mode: the content key of address a holding content c. */
uint64_t cache_key(const struct sim *s, uint32_t a, uint32_t c)
{
	/*
	 * The organisations that ignore addresses (plain content caches,
	 * ACQ, LRUCA) are the papers' address caches here: one entry per
	 * (address, content), no deduplication (CDAC's LRU and ARC).
	 */
	return s->addr_cache ? pair_key(a, c) : ckey(c);
}

static void cache_block(struct sim *s, uint8_t op, uint32_t a, uint32_t c)
{
	struct sc_dc_res res = cache_access(&s->one, op, sc_mix64(a),
					    cache_key(s, a, c), s->cshare[c]);

	if (op == SC_DC_WRITE) {
		s->r.write_blocks++;
		if (res.kind != SC_DC_MISS)
			s->r.write_hits++;
		return;
	}
	s->r.read_blocks++;
	if (res.kind == SC_DC_HIT)
		s->r.host_hits++;
	else if (res.kind == SC_DC_CONTENT_HIT)
		s->r.content_hits++;
	else
		s->r.read_misses++;
}

/* Cache mode: the blocks of one request, in order. */
void cache_request(struct sim *s, const struct sim_req *r)
{
	uint32_t i, a, c, n = r->nblocks;
	bool write = r->op == 'W';

	if (s->fast) {
		for (i = 0; i < n; i++) {
			a = r->addr[i];
			addr_room(s, a + 1);
			seen(s, a);
			/* A write is new content: never a hit. */
			if (fast_access(s, a, write))
				s->r.host_hits++;
			else
				s->r.read_misses += !write;
		}
		if (write)
			s->r.write_blocks += n;
		else
			s->r.read_blocks += n;
		return;
	}
	for (i = 0; i < n; i++) {
		a = r->addr[i];
		addr_room(s, a + 1);
		seen(s, a);
		if (r->content) {
			c = r->content[i];
			content_room(s, c + 1);
		} else if (write || s->acont[a] == NIL) {
			c = own_content(s);
		} else {
			c = s->acont[a];
		}
		if (write && s->acont[a] == c)
			s->r.silent_writes++;
		if (s->acont[a] != c) {
			if (s->acont[a] != NIL)
				s->cshare[s->acont[a]]--;
			s->acont[a] = c;
			s->cshare[c]++;
		}
		cache_block(s, write ? SC_DC_WRITE : SC_DC_READ, a, c);
	}
}

uint64_t fast_bytes(const struct sim *s)
{
	const struct cache_fast *f = s->fast;

	return sizeof(*f) + f->pol.ops->bytes(&f->pol) +
	       (uint64_t)f->cap * (8 + 4 + 4) +
	       (uint64_t)s->acap * (f->gen ? 8 : 4);
}
