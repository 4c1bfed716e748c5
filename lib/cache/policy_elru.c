// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ELRU-n (SeaCache paper, section III-E): among the n least recently used
 * blocks, evict the one with the smallest sharing count; among equally
 * shared ones, the least recently used.  Widely shared blocks (read by many
 * VMs) get to stay longer than private ones of the same age.  ELRU-1 is LRU.
 */
#include "policy_lru.h"

#define ELRU_N_MAX 4096u

struct elru {
	struct sc_lru lru;	/* first: shared with the LRU bookkeeping */
	uint32_t n;
};

static int elru_init(struct sc_policy *p, uint32_t capacity, const char *arg)
{
	struct elru *e;
	uint32_t n;
	int err;

	err = sc_policy_parse_u32(arg, 1, ELRU_N_MAX, &n);
	if (err)
		return err;
	e = sc_zalloc(sizeof(*e));
	if (!e)
		return -SC_ENOMEM;
	err = sc_lru_init(&e->lru, capacity);
	if (err) {
		sc_free(e);
		return err;
	}
	e->n = n;
	p->priv = e;
	return 0;
}

static uint32_t elru_victim(struct sc_policy *p)
{
	struct elru *e = p->priv;
	uint32_t slot = sc_lru_tail(&e->lru);
	uint32_t best = slot;
	uint32_t k;

	for (k = 0; k < e->n && slot != SC_NIL; k++) {
		if (p->share[slot] < p->share[best])
			best = slot;
		slot = sc_lru_newer(&e->lru, slot);
	}
	return best;
}

static size_t elru_bytes(const struct sc_policy *p)
{
	return sc_policy_lru_bytes(p) + sizeof(uint32_t);
}

const struct sc_policy_ops sc_policy_elru = {
	.name = "elru",
	.help = "elru:N evicts the least-shared of the N least recently used blocks, N from 1 to 4096",
	.init = elru_init,
	.destroy = sc_policy_lru_destroy,
	.insert = sc_policy_lru_insert,
	.hit = sc_policy_lru_hit,
	.victim = elru_victim,
	.remove = sc_policy_lru_remove,
	.bytes = elru_bytes,
};
