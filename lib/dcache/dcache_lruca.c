// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * LRUCA, content-aware LRU across two cache levels (Chen and Zhou,
 * collaborative buffer caches in data centers): each level knows what the
 * other holds and, when it must evict, prefers a block the other level
 * also holds: evicting it costs no disk access, the other level still
 * serves it.  Here: among the W least recently used blocks, the least
 * recently used one that the other level holds is evicted; if none is,
 * the LRU block.  LRUCA with W = 1 is LRU.
 *
 * What the other level holds arrives as deltas (peer(content, held),
 * piggybacked on replies in the paper) and is kept either exactly (a set
 * of the other level's contents, at most peer_blocks of them) or in a
 * counting Bloom filter (8 one-byte counters per entry of the other
 * level, 4 hashes: about 2.4% false positives when it is full; a counter
 * that reaches 255 stays there).  A false positive evicts a block the
 * other level does not hold: that costs hit ratio, never correctness.
 *
 * Blocks are contents (one copy per content).  res.event: 1 when the
 * victim was held by the other level, 0 otherwise.
 *
 * Argument: lruca:exact[:W] or lruca:bloom[:W], W 1-4096, default 64.
 */
#include "seacache/dcache.h"
#include "seacache/itab.h"
#include "seacache/lru.h"
#include "seacache/policy.h"

#define LRUCA_BLOOM_COUNTERS 8u
#define LRUCA_BLOOM_HASHES 4u

static const char *const lruca_events[] = {
	"evict_exclusive", "evict_duplicate", NULL,
};

struct lruca {
	uint32_t cap, used, free_head, window;
	uint64_t *key;
	struct sc_itab tab;
	struct sc_lru lru;
	bool bloom;
	/* Exact knowledge of the other level. */
	uint32_t pcap, pused, pfree;
	uint64_t *pkey;
	struct sc_itab ptab;
	/* Or a counting Bloom filter. */
	uint8_t *cnt;
	uint32_t nbits;		/* counters, a power of two */
};

static void lruca_free(struct lruca *l)
{
	sc_itab_destroy(&l->tab);
	sc_itab_destroy(&l->ptab);
	sc_lru_destroy(&l->lru);
	sc_free(l->key);
	sc_free(l->pkey);
	sc_free(l->cnt);
	sc_free(l);
}

static int lruca_parse(const char *arg, bool *bloom, uint32_t *w)
{
	const char *rest;

	if (!arg)
		return -SC_EINVAL;
	if (!sc_strncmp(arg, "exact", 5)) {
		*bloom = false;
		rest = arg + 5;
	} else if (!sc_strncmp(arg, "bloom", 5)) {
		*bloom = true;
		rest = arg + 5;
	} else {
		return -SC_EINVAL;
	}
	if (!*rest)
		return 0;
	if (*rest != ':')
		return -SC_EINVAL;
	return sc_policy_parse_u32(rest + 1, 1, 4096, w);
}

static int lruca_init(struct sc_dcache *c, const char *arg)
{
	struct lruca *l;
	uint32_t w = 64;
	bool bloom;
	uint64_t nb;

	if (lruca_parse(arg, &bloom, &w))
		return -SC_EINVAL;
	l = sc_zalloc(sizeof(*l));
	if (!l)
		return -SC_ENOMEM;
	l->cap = c->cfg.data_blocks;
	l->window = w;
	l->bloom = bloom;
	l->pcap = c->cfg.peer_blocks;
	l->key = sc_calloc(l->cap, sizeof(*l->key));
	if (!l->key || sc_itab_init(&l->tab, l->cap) ||
	    sc_lru_init(&l->lru, l->cap))
		goto nomem;
	if (bloom) {
		nb = (uint64_t)l->pcap * LRUCA_BLOOM_COUNTERS;
		l->nbits = sc_roundup_pow2(nb > (1u << 31) ? 1u << 31 :
					   (uint32_t)nb);
		l->cnt = sc_calloc(l->nbits, 1);
		if (!l->cnt)
			goto nomem;
	} else {
		l->pkey = sc_calloc(l->pcap, sizeof(*l->pkey));
		if (!l->pkey || sc_itab_init(&l->ptab, l->pcap))
			goto nomem;
		l->pfree = sc_itab_free_all(&l->ptab);
	}
	l->free_head = sc_itab_free_all(&l->tab);
	c->priv = l;
	return 0;
nomem:
	lruca_free(l);
	return -SC_ENOMEM;
}

static void lruca_destroy(struct sc_dcache *c)
{
	lruca_free(c->priv);
	c->priv = NULL;
}

static uint32_t bloom_at(const struct lruca *l, uint64_t key, uint32_t k)
{
	return (uint32_t)sc_mix64(key + 0x9e3779b97f4a7c15ull * (k + 1)) &
	       (l->nbits - 1);
}

static bool lruca_peer_has(const struct lruca *l, uint64_t key)
{
	uint32_t k;

	if (!l->bloom)
		return sc_itab_find(&l->ptab, l->pkey, key) != SC_NIL;
	for (k = 0; k < LRUCA_BLOOM_HASHES; k++)
		if (!l->cnt[bloom_at(l, key, k)])
			return false;
	return true;
}

static void lruca_peer(struct sc_dcache *c, uint64_t key, bool held)
{
	struct lruca *l = c->priv;
	uint32_t k, i;
	uint8_t *n;

	if (l->bloom) {
		for (k = 0; k < LRUCA_BLOOM_HASHES; k++) {
			n = &l->cnt[bloom_at(l, key, k)];
			if (*n == 255)
				continue;
			if (held)
				(*n)++;
			else if (*n)
				(*n)--;
		}
		return;
	}
	i = sc_itab_find(&l->ptab, l->pkey, key);
	if (held && i == SC_NIL && l->pfree != SC_NIL) {
		i = sc_itab_free_pop(&l->ptab, &l->pfree);
		l->pkey[i] = key;
		sc_itab_add(&l->ptab, key, i);
		l->pused++;
	} else if (!held && i != SC_NIL) {
		sc_itab_del(&l->ptab, key, i);
		sc_itab_free_push(&l->ptab, &l->pfree, i);
		l->pused--;
	}
}

static uint32_t lruca_victim(struct lruca *l, struct sc_dc_res *res)
{
	uint32_t s = sc_lru_tail(&l->lru), k;

	for (k = 0; k < l->window && s != SC_NIL; k++) {
		if (lruca_peer_has(l, l->key[s])) {
			res->event = 1;
			return s;
		}
		s = sc_lru_newer(&l->lru, s);
	}
	return sc_lru_tail(&l->lru);
}

static void lruca_access(struct sc_dcache *c, const struct sc_dc_req *r,
			 struct sc_dc_res *res)
{
	struct lruca *l = c->priv;
	uint32_t s = sc_itab_find(&l->tab, l->key, r->content);

	if (s != SC_NIL) {
		sc_lru_touch(&l->lru, s);
		res->kind = SC_DC_HIT;
		return;
	}
	if (l->free_head == SC_NIL) {
		s = lruca_victim(l, res);
		c->st.events[res->event]++;
		sc_lru_unlink(&l->lru, s);
		sc_itab_del(&l->tab, l->key[s], s);
		l->used--;
		res->evicted++;
		if (c->cfg.on_evict)
			c->cfg.on_evict(c->cfg.ctx, l->key[s]);
	} else {
		s = sc_itab_free_pop(&l->tab, &l->free_head);
	}
	l->key[s] = r->content;
	sc_itab_add(&l->tab, r->content, s);
	sc_lru_push_head(&l->lru, s);
	l->used++;
	res->admitted = true;
}

static bool lruca_holds(const struct sc_dcache *c, uint64_t content)
{
	const struct lruca *l = c->priv;

	return sc_itab_find(&l->tab, l->key, content) != SC_NIL;
}

static size_t lruca_bytes(const struct sc_dcache *c)
{
	const struct lruca *l = c->priv;
	size_t b = sizeof(*l) + (size_t)l->cap * 8 + sc_itab_bytes(&l->tab) +
		   sc_lru_bytes(&l->lru);

	if (l->bloom)
		return b + l->nbits;
	return b + (size_t)l->pcap * 8 + sc_itab_bytes(&l->ptab);
}

static uint64_t lruca_blocks(const struct sc_dcache *c)
{
	return ((const struct lruca *)c->priv)->used;
}

const struct sc_dcache_ops sc_dcache_lruca = {
	.name = "lruca",
	.help = "lruca:exact[:W] or lruca:bloom[:W], W the LRU blocks searched (1-4096, default 64)",
	.init = lruca_init,
	.destroy = lruca_destroy,
	.access = lruca_access,
	.holds = lruca_holds,
	.peer = lruca_peer,
	.bytes = lruca_bytes,
	.blocks = lruca_blocks,
	.events = lruca_events,
};
