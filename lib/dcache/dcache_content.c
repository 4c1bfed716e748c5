// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A plain content cache at the request level: one copy per content,
 * evictions chosen by any slot-level policy (LRU, ELRU-n, ARC).  The
 * address is ignored; a request is a hit when its content is cached.  The
 * request's sharing count becomes the slot's (for ELRU-n).  Spec
 * "content:POLICY", or just the policy's own spec ("elru:16").
 *
 * Memory per block: key 8, sharing count 4, index chain 4 and buckets
 * (at most 8: twice as many buckets as blocks, so a lookup, a miss above
 * all, walks a shorter chain of cache-missing entries), plus the
 * policy's (8 for LRU and ELRU-n).
 */
#include "seacache/dcache.h"
#include "seacache/itab.h"
#include "seacache/policy.h"

struct ccont {
	uint32_t cap;
	uint32_t used;
	uint32_t free_head;	/* through tab.next */
	uint64_t *key;
	uint32_t *share;
	struct sc_itab tab;
	struct sc_policy pol;
};

static uint64_t ccont_key(const void *ctx, uint32_t slot)
{
	const struct ccont *cc = ctx;

	return cc->key[slot];
}

static void ccont_free(struct ccont *cc)
{
	sc_policy_destroy(&cc->pol);
	sc_itab_destroy(&cc->tab);
	sc_free(cc->key);
	sc_free(cc->share);
	sc_free(cc);
}

static int ccont_init(struct sc_dcache *c, const char *arg)
{
	uint32_t cap = c->cfg.data_blocks;
	struct ccont *cc;
	int err;

	if (!arg)
		return -SC_EINVAL;
	cc = sc_zalloc(sizeof(*cc));
	if (!cc)
		return -SC_ENOMEM;
	cc->cap = cap;
	cc->key = sc_calloc(cap, sizeof(*cc->key));
	cc->share = sc_calloc(cap, sizeof(*cc->share));
	if (!cc->key || !cc->share ||
	    sc_itab_init_buckets(&cc->tab, cap,
				 cap < (1u << 31) ? cap * 2 : cap)) {
		ccont_free(cc);
		return -SC_ENOMEM;
	}
	err = sc_policy_create(&cc->pol, arg, cap, cc->share);
	if (err) {
		ccont_free(cc);
		return err;
	}
	cc->pol.key = ccont_key;
	cc->pol.key_ctx = cc;
	cc->free_head = sc_itab_free_all(&cc->tab);
	c->priv = cc;
	return 0;
}

static void ccont_destroy(struct sc_dcache *c)
{
	ccont_free(c->priv);
	c->priv = NULL;
}

static uint32_t ccont_find(const struct ccont *cc, uint64_t key)
{
	return sc_itab_find(&cc->tab, cc->key, key);
}

static void ccont_access(struct sc_dcache *c, const struct sc_dc_req *r,
			 struct sc_dc_res *res)
{
	struct ccont *cc = c->priv;
	uint32_t slot = ccont_find(cc, r->content);
	uint64_t gone;

	if (slot != SC_NIL) {
		if (r->share)
			cc->share[slot] = r->share;
		cc->pol.ops->hit(&cc->pol, slot);
		res->kind = SC_DC_HIT;
		return;
	}
	sc_policy_admit(&cc->pol, r->content);
	if (cc->free_head == SC_NIL) {
		slot = cc->pol.ops->victim(&cc->pol);
		gone = cc->key[slot];
		cc->pol.ops->remove(&cc->pol, slot);
		sc_itab_del(&cc->tab, gone, slot);
		cc->used--;
		res->evicted++;
		if (c->cfg.on_evict)
			c->cfg.on_evict(c->cfg.ctx, gone);
	} else {
		slot = sc_itab_free_pop(&cc->tab, &cc->free_head);
	}
	cc->key[slot] = r->content;
	cc->share[slot] = r->share;
	sc_itab_add(&cc->tab, r->content, slot);
	cc->pol.ops->insert(&cc->pol, slot);
	cc->used++;
	res->admitted = true;
}

static void ccont_prefetch(const struct sc_dcache *c,
			   const struct sc_dc_req *r, bool far)
{
	const struct ccont *cc = c->priv;
	uint32_t i;

	if (far) {
		sc_itab_prefetch(&cc->tab, r->content);
		return;
	}
	i = sc_itab_first(&cc->tab, r->content);
	if (i != SC_NIL)
		sc_prefetch(&cc->key[i]);
}

static bool ccont_holds(const struct sc_dcache *c, uint64_t content)
{
	return ccont_find(c->priv, content) != SC_NIL;
}

static size_t ccont_bytes(const struct sc_dcache *c)
{
	const struct ccont *cc = c->priv;

	return sizeof(*cc) + (size_t)cc->cap * (sizeof(uint64_t) +
						sizeof(uint32_t)) +
	       sc_itab_bytes(&cc->tab) + cc->pol.ops->bytes(&cc->pol);
}

static uint64_t ccont_blocks(const struct sc_dcache *c)
{
	return ((const struct ccont *)c->priv)->used;
}

const struct sc_dcache_ops sc_dcache_content = {
	.name = "content",
	.help = "content:POLICY, a content cache under a slot policy (lru, elru:N, arc)",
	.init = ccont_init,
	.destroy = ccont_destroy,
	.access = ccont_access,
	.holds = ccont_holds,
	.prefetch = ccont_prefetch,
	.bytes = ccont_bytes,
	.blocks = ccont_blocks,
};
