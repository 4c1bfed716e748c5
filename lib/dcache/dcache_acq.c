// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ACQ, Access and Cache Queue (Xiao, Shu, Xue, Zheng: an out-of-band
 * approach to SAN-level cache management), the paper's Figure 1:
 *
 *   - the cache queue CQ holds the cached blocks with reference counts;
 *     a hit adds one to the block's count;
 *   - the access queue AQ, an LRU queue, holds recently accessed blocks
 *     that are not cached, with their counts: a miss adds one to the
 *     block's count (1 for a block new to AQ, which may push AQ's LRU
 *     block out);
 *   - after a miss the block is loaded at once while CQ has room; then
 *     only if its count is at least the smallest count in CQ, whose block
 *     it replaces (leaving it in AQ otherwise).
 *
 * So a block is loaded only when it has proven as popular as the least
 * popular cached one: the load rate (loads per access) stays low.  Among
 * equal counts, the block referenced longest ago is replaced.  Blocks are
 * identified by content (one copy per content, as in a dedup server);
 * pass content = address for an address cache.
 *
 * Argument: acq[:PCT], AQ's size in percent of CQ's (1-1000, default 100,
 * the paper's setting).
 */
#include "seacache/dcache.h"
#include "seacache/itab.h"
#include "seacache/lru.h"
#include "seacache/policy.h"

struct acq {
	/* Cache queue: a min-heap by (count, last reference). */
	uint32_t cc, cused, cfree;
	uint64_t *ckey;
	uint32_t *cref;
	uint32_t *cstamp;
	uint32_t *cpos;		/* per slot: its index in heap[] */
	uint32_t *heap;		/* slots */
	struct sc_itab ctab;
	/* Access queue. */
	uint32_t ac, aused, afree;
	uint64_t *akey;
	uint32_t *aref;
	struct sc_itab atab;
	struct sc_lru alru;
	uint32_t now;
};

static void acq_free(struct acq *q)
{
	sc_itab_destroy(&q->ctab);
	sc_itab_destroy(&q->atab);
	sc_lru_destroy(&q->alru);
	sc_free(q->ckey);
	sc_free(q->cref);
	sc_free(q->cstamp);
	sc_free(q->cpos);
	sc_free(q->heap);
	sc_free(q->akey);
	sc_free(q->aref);
	sc_free(q);
}

static int acq_init(struct sc_dcache *c, const char *arg)
{
	uint32_t pct = 100;
	uint64_t ac;
	struct acq *q;

	if (arg && sc_policy_parse_u32(arg, 1, 1000, &pct))
		return -SC_EINVAL;
	q = sc_zalloc(sizeof(*q));
	if (!q)
		return -SC_ENOMEM;
	q->cc = c->cfg.data_blocks;
	ac = (uint64_t)q->cc * pct / 100;
	q->ac = ac < 1 ? 1 : ac >= SC_NIL ? SC_NIL - 1 : (uint32_t)ac;
	q->ckey = sc_calloc(q->cc, sizeof(*q->ckey));
	q->cref = sc_calloc(q->cc, sizeof(*q->cref));
	q->cstamp = sc_calloc(q->cc, sizeof(*q->cstamp));
	q->cpos = sc_calloc(q->cc, sizeof(*q->cpos));
	q->heap = sc_calloc(q->cc, sizeof(*q->heap));
	q->akey = sc_calloc(q->ac, sizeof(*q->akey));
	q->aref = sc_calloc(q->ac, sizeof(*q->aref));
	if (!q->ckey || !q->cref || !q->cstamp || !q->cpos || !q->heap ||
	    !q->akey || !q->aref || sc_itab_init(&q->ctab, q->cc) ||
	    sc_itab_init(&q->atab, q->ac) || sc_lru_init(&q->alru, q->ac)) {
		acq_free(q);
		return -SC_ENOMEM;
	}
	q->cfree = sc_itab_free_all(&q->ctab);
	q->afree = sc_itab_free_all(&q->atab);
	c->priv = q;
	return 0;
}

static void acq_destroy(struct sc_dcache *c)
{
	acq_free(c->priv);
	c->priv = NULL;
}

/* Does slot a come before slot b in the heap (evicted first)? */
static bool acq_less(const struct acq *q, uint32_t a, uint32_t b)
{
	if (q->cref[a] != q->cref[b])
		return q->cref[a] < q->cref[b];
	return (int32_t)(q->cstamp[a] - q->cstamp[b]) < 0;
}

static void acq_heap_set(struct acq *q, uint32_t i, uint32_t slot)
{
	q->heap[i] = slot;
	q->cpos[slot] = i;
}

static void acq_sift_down(struct acq *q, uint32_t i)
{
	uint32_t slot = q->heap[i], l, m;

	for (;;) {
		l = 2 * i + 1;
		if (l >= q->cused)
			break;
		m = l + 1 < q->cused && acq_less(q, q->heap[l + 1], q->heap[l]) ?
			    l + 1 : l;
		if (!acq_less(q, q->heap[m], slot))
			break;
		acq_heap_set(q, i, q->heap[m]);
		i = m;
	}
	acq_heap_set(q, i, slot);
}

static void acq_sift_up(struct acq *q, uint32_t i)
{
	uint32_t slot = q->heap[i], p;

	while (i) {
		p = (i - 1) / 2;
		if (!acq_less(q, slot, q->heap[p]))
			break;
		acq_heap_set(q, i, q->heap[p]);
		i = p;
	}
	acq_heap_set(q, i, slot);
}

static void acq_aq_drop(struct acq *q, uint32_t a)
{
	sc_lru_unlink(&q->alru, a);
	sc_itab_del(&q->atab, q->akey[a], a);
	sc_itab_free_push(&q->atab, &q->afree, a);
	q->aused--;
}

static void acq_access(struct sc_dcache *c, const struct sc_dc_req *r,
		       struct sc_dc_res *res)
{
	struct acq *q = c->priv;
	uint32_t s = sc_itab_find(&q->ctab, q->ckey, r->content), a, ref, v;

	q->now++;
	if (s != SC_NIL) {
		q->cref[s]++;
		q->cstamp[s] = q->now;
		acq_sift_down(q, q->cpos[s]);
		res->kind = SC_DC_HIT;
		return;
	}
	a = sc_itab_find(&q->atab, q->akey, r->content);
	if (a != SC_NIL) {
		sc_lru_touch(&q->alru, a);
		q->aref[a]++;
	} else {
		if (q->afree == SC_NIL)
			acq_aq_drop(q, sc_lru_tail(&q->alru));
		a = sc_itab_free_pop(&q->atab, &q->afree);
		q->akey[a] = r->content;
		q->aref[a] = 1;
		sc_itab_add(&q->atab, r->content, a);
		sc_lru_push_head(&q->alru, a);
		q->aused++;
	}
	ref = q->aref[a];
	if (q->cfree == SC_NIL) {
		v = q->heap[0];
		if (ref < q->cref[v])
			return;		/* not admitted: stays in AQ */
		/* Replace the least referenced cached block. */
		sc_itab_del(&q->ctab, q->ckey[v], v);
		if (c->cfg.on_evict)
			c->cfg.on_evict(c->cfg.ctx, q->ckey[v]);
		res->evicted++;
		s = v;
	} else {
		s = sc_itab_free_pop(&q->ctab, &q->cfree);
		acq_heap_set(q, q->cused++, s);
	}
	acq_aq_drop(q, a);
	q->ckey[s] = r->content;
	q->cref[s] = ref;
	q->cstamp[s] = q->now;
	sc_itab_add(&q->ctab, r->content, s);
	acq_sift_down(q, q->cpos[s]);
	acq_sift_up(q, q->cpos[s]);
	res->admitted = true;
}

static bool acq_holds(const struct sc_dcache *c, uint64_t content)
{
	const struct acq *q = c->priv;

	return sc_itab_find(&q->ctab, q->ckey, content) != SC_NIL;
}

static size_t acq_bytes(const struct sc_dcache *c)
{
	const struct acq *q = c->priv;

	return sizeof(*q) + (size_t)q->cc * (8 + 4 * 4) +
	       sc_itab_bytes(&q->ctab) + (size_t)q->ac * (8 + 4) +
	       sc_itab_bytes(&q->atab) + sc_lru_bytes(&q->alru);
}

static uint64_t acq_blocks(const struct sc_dcache *c)
{
	return ((const struct acq *)c->priv)->cused;
}

const struct sc_dcache_ops sc_dcache_acq = {
	.name = "acq",
	.help = "acq[:PCT], access queue of PCT% of the cache's blocks (1-1000, default 100)",
	.init = acq_init,
	.destroy = acq_destroy,
	.access = acq_access,
	.holds = acq_holds,
	.bytes = acq_bytes,
	.blocks = acq_blocks,
};
