/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Eviction policies of the content cache: one small interface, one file per
 * policy (lib/cache/policy_*.c), registered in lib/cache/policy.c.
 *
 * A policy sees slots, not blocks: slot indices 0..capacity-1 and, for
 * dedup-aware policies, each slot's sharing count (how many logical blocks
 * are known to hold that content).  The cache calls:
 *   admit(key)    optional: a block with this key is coming in (called
 *                 before the victim() calls that make room for it, and
 *                 insert() follows unless the block could not be placed);
 *   insert(slot)  a block was placed in a free slot;
 *   hit(slot)     the block in slot was read;
 *   victim()      which slot to evict now (the cache is at its limit, or
 *                 gives memory back; at least one slot is occupied); the
 *                 policy does not forget it yet;
 *   remove(slot)  the block left the cache (evicted or dropped).
 *
 * Policies that remember blocks after they left (ARC's ghost lists) learn
 * a slot's identity through key(): a 64-bit key of the block held in the
 * slot, valid from insert() until remove() returns.  A key is only a hint
 * (two contents may share one); policies never serve data by it.
 */
#ifndef SEACACHE_POLICY_H
#define SEACACHE_POLICY_H

#include "compat.h"

struct sc_policy;

struct sc_policy_ops {
	const char *name;
	const char *help;	/* one line: what the argument means */
	/* arg: the text after "name:" in a policy spec, or NULL. */
	int (*init)(struct sc_policy *p, uint32_t capacity, const char *arg);
	void (*destroy)(struct sc_policy *p);
	void (*admit)(struct sc_policy *p, uint64_t key);
	void (*insert)(struct sc_policy *p, uint32_t slot);
	void (*hit)(struct sc_policy *p, uint32_t slot);
	uint32_t (*victim)(struct sc_policy *p);
	void (*remove)(struct sc_policy *p, uint32_t slot);
	size_t (*bytes)(const struct sc_policy *p);	/* metadata held */
};

struct sc_policy {
	const struct sc_policy_ops *ops;
	void *priv;
	/* Sharing count per slot, owned by the cache, read by the policy. */
	const uint32_t *share;
	/* The key of the block in a slot, or NULL (set by the cache). */
	uint64_t (*key)(const void *ctx, uint32_t slot);
	const void *key_ctx;
};

/*
 * Build a policy from a spec "name" or "name:arg" (e.g. "lru", "elru:16").
 * Unknown names and bad arguments are logged with the valid choices.
 */
int sc_policy_create(struct sc_policy *p, const char *spec, uint32_t capacity,
		     const uint32_t *share);
void sc_policy_destroy(struct sc_policy *p);

/* Tell the policy, if it wants to know, the key of the block coming in. */
static inline void sc_policy_admit(struct sc_policy *p, uint64_t key)
{
	if (p->ops->admit)
		p->ops->admit(p, key);
}

/* The registered policies, for --help texts; NULL past the last one. */
const struct sc_policy_ops *sc_policy_at(unsigned int i);

/* Parse a decimal argument in [min, max]; 0 or -SC_EINVAL. */
int sc_policy_parse_u32(const char *arg, uint32_t min, uint32_t max,
			uint32_t *out);

extern const struct sc_policy_ops sc_policy_lru;
extern const struct sc_policy_ops sc_policy_elru;
extern const struct sc_policy_ops sc_policy_arc;

/* ARC's target size of T1 (its adaptation) in whole blocks, for tests. */
uint32_t sc_policy_arc_target(const struct sc_policy *p);

#endif /* SEACACHE_POLICY_H */
