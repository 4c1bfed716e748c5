// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * CBBC, the content-based block cache (Morrey and Grunwald): one cache
 * indexed by address (the LUN maps: address -> block) and by content (the
 * content hash table: content -> block), one copy per content.
 *
 * Space: the cache has data_blocks * block_size bytes.  The content hash
 * table takes 1/D of them (D = 64 by default, the paper's choice; its
 * buckets are 8-byte pointers), and each LUN-map reference takes
 * CBBC_REF_BYTES; blocks and references share the rest.  Blocks are kept
 * in LRU order, and each block's references in LRU order too:
 *   - a new block that does not fit evicts the LRU block and every
 *     reference to it;
 *   - a new reference that does not fit discards the LRU block's LRU
 *     reference, freeing that block when it was its last.
 * The reference pool is bounded at CBBC_REFS_PER_BLOCK per block slot; a
 * full pool is handled like full space.
 *
 * Writes follow the paper's flowchart: the same content at the address is
 * a silent write (no disk write); a single-referenced block is rewritten
 * in place (a private write), or dropped for a copy of the new content
 * found elsewhere; a shared block loses the reference, which goes to the
 * new content, found (content hit) or loaded (content miss).  res.event
 * is the paper's event table row (cbbc_events[]).
 *
 * Argument: cbbc[:D], the hash table's share 1/D of the cache, D 8-4096,
 * or 0 for a table that costs nothing (the paper's "ideal" case).
 */
#include "seacache/dcache.h"
#include "seacache/itab.h"
#include "seacache/lru.h"
#include "seacache/policy.h"

#define CBBC_REF_BYTES 16u
#define CBBC_REFS_PER_BLOCK 16u

enum {
	CB_READ_HIT,
	CB_READ_MISS_CONTENT_HIT,
	CB_READ_MISS_CONTENT_MISS,
	CB_WRITE_HIT_MULTI_CONTENT_MISS,
	CB_WRITE_MISS_CONTENT_MISS,
	CB_WRITE_HIT_MULTI_CONTENT_HIT,
	CB_WRITE_MISS_CONTENT_HIT,
	CB_WRITE_HIT_PRIVATE,
	CB_SILENT_WRITE,
};

static const char *const cbbc_events[] = {
	"read_hit",
	"read_miss_content_hit",
	"read_miss_content_miss",
	"write_hit_multi_content_miss",
	"write_miss_content_miss",
	"write_hit_multi_content_hit",
	"write_miss_content_hit",
	"write_hit_private",
	"silent_write",
	NULL,
};

struct cbbc {
	uint64_t cap_bytes;	/* for blocks and references */
	uint64_t used;
	uint32_t bs;
	/* Blocks. */
	uint32_t nb, bfree, bused;
	uint64_t *bkey;
	struct sc_itab ctab;	/* content -> block: the content hash table */
	struct sc_lru blru;
	struct sc_lru *brefs;	/* per block: its references, LRU order */
	/* References (LUN-map entries). */
	uint32_t nr, rfree, rused;
	uint64_t *raddr;
	uint32_t *rblk;
	struct sc_itab rtab;	/* address -> reference */
	struct sc_lru_link *rlink;
};

static void cbbc_free(struct cbbc *cb)
{
	sc_itab_destroy(&cb->ctab);
	sc_itab_destroy(&cb->rtab);
	sc_lru_destroy(&cb->blru);
	sc_free(cb->bkey);
	sc_free(cb->brefs);
	sc_free(cb->raddr);
	sc_free(cb->rblk);
	sc_free(cb->rlink);
	sc_free(cb);
}

static int cbbc_init(struct sc_dcache *c, const char *arg)
{
	uint64_t total = (uint64_t)c->cfg.data_blocks * c->cfg.block_size;
	uint64_t hbytes, nr;
	uint32_t den = 64, i;
	struct cbbc *cb;

	if (arg && (sc_policy_parse_u32(arg, 0, 4096, &den) ||
		    (den && den < 8)))
		return -SC_EINVAL;
	hbytes = den ? total / den : 0;
	cb = sc_zalloc(sizeof(*cb));
	if (!cb)
		return -SC_ENOMEM;
	cb->bs = c->cfg.block_size;
	cb->cap_bytes = total - hbytes;
	cb->nb = (uint32_t)(cb->cap_bytes / (cb->bs + CBBC_REF_BYTES));
	if (!cb->nb)
		cb->nb = 1;
	nr = (cb->cap_bytes - (cb->cap_bytes >= cb->bs ? cb->bs : 0)) /
	     CBBC_REF_BYTES;
	if (nr > (uint64_t)cb->nb * CBBC_REFS_PER_BLOCK)
		nr = (uint64_t)cb->nb * CBBC_REFS_PER_BLOCK;
	cb->nr = nr ? (uint32_t)nr : 1;
	cb->bkey = sc_calloc(cb->nb, sizeof(*cb->bkey));
	cb->brefs = sc_calloc(cb->nb, sizeof(*cb->brefs));
	cb->raddr = sc_calloc(cb->nr, sizeof(*cb->raddr));
	cb->rblk = sc_calloc(cb->nr, sizeof(*cb->rblk));
	cb->rlink = sc_calloc(cb->nr, sizeof(*cb->rlink));
	if (!cb->bkey || !cb->brefs || !cb->raddr || !cb->rblk ||
	    !cb->rlink || sc_lru_init(&cb->blru, cb->nb) ||
	    sc_itab_init_buckets(&cb->ctab, cb->nb,
				 den ? (uint32_t)(hbytes / 8 ? hbytes / 8 : 1) :
				       cb->nb) ||
	    sc_itab_init(&cb->rtab, cb->nr)) {
		cbbc_free(cb);
		return -SC_ENOMEM;
	}
	for (i = 0; i < cb->nb; i++)
		sc_lru_init_shared(&cb->brefs[i], cb->rlink, cb->nr);
	cb->bfree = sc_itab_free_all(&cb->ctab);
	cb->rfree = sc_itab_free_all(&cb->rtab);
	c->priv = cb;
	return 0;
}

static void cbbc_destroy(struct sc_dcache *c)
{
	cbbc_free(c->priv);
	c->priv = NULL;
}

static uint32_t cb_rfind(const struct cbbc *cb, uint64_t addr)
{
	return sc_itab_find(&cb->rtab, cb->raddr, addr);
}

static uint32_t cb_bfind(const struct cbbc *cb, uint64_t key)
{
	return sc_itab_find(&cb->ctab, cb->bkey, key);
}

/* Take reference r off its block and the LUN map. */
static void cb_ref_unlink(struct cbbc *cb, uint32_t r)
{
	sc_lru_unlink(&cb->brefs[cb->rblk[r]], r);
	sc_itab_del(&cb->rtab, cb->raddr[r], r);
	sc_itab_free_push(&cb->rtab, &cb->rfree, r);
	cb->rused--;
	cb->used -= CBBC_REF_BYTES;
}

/* Drop block b and every reference to it. */
static void cb_block_drop(struct sc_dcache *c, uint32_t b, bool evicted,
			  struct sc_dc_res *res)
{
	struct cbbc *cb = c->priv;
	uint64_t gone = cb->bkey[b];

	while (cb->brefs[b].count)
		cb_ref_unlink(cb, sc_lru_tail(&cb->brefs[b]));
	sc_lru_unlink(&cb->blru, b);
	sc_itab_del(&cb->ctab, gone, b);
	sc_itab_free_push(&cb->ctab, &cb->bfree, b);
	cb->bused--;
	cb->used -= cb->bs;
	if (evicted)
		res->evicted++;
	if (c->cfg.on_evict)
		c->cfg.on_evict(c->cfg.ctx, gone);
}

/* Room for one more reference, keeping block keep (its target). */
static void cb_ref_room(struct sc_dcache *c, uint32_t keep,
			struct sc_dc_res *res)
{
	struct cbbc *cb = c->priv;
	uint32_t t;

	while (cb->used + CBBC_REF_BYTES > cb->cap_bytes ||
	       cb->rfree == SC_NIL) {
		t = sc_lru_tail(&cb->blru);
		/* keep may lose a reference, not its last one. */
		if (t == keep && cb->brefs[t].count <= 1)
			t = sc_lru_newer(&cb->blru, t);
		if (t == SC_NIL)
			return;
		cb_ref_unlink(cb, sc_lru_tail(&cb->brefs[t]));
		if (!cb->brefs[t].count)
			cb_block_drop(c, t, true, res);
	}
}

static void cb_ref_add(struct sc_dcache *c, uint64_t addr, uint32_t b,
		       struct sc_dc_res *res)
{
	struct cbbc *cb = c->priv;
	uint32_t r;

	cb_ref_room(c, b, res);
	if (cb->rfree == SC_NIL)
		return;		/* b's last reference fills the pool */
	r = sc_itab_free_pop(&cb->rtab, &cb->rfree);
	cb->raddr[r] = addr;
	cb->rblk[r] = b;
	sc_itab_add(&cb->rtab, addr, r);
	sc_lru_push_head(&cb->brefs[b], r);
	cb->rused++;
	cb->used += CBBC_REF_BYTES;
}

/* A new block for content key, with room for its first reference. */
static uint32_t cb_block_new(struct sc_dcache *c, uint64_t key,
			     struct sc_dc_res *res)
{
	struct cbbc *cb = c->priv;
	uint32_t b;

	while (cb->bused &&
	       (cb->used + cb->bs + CBBC_REF_BYTES > cb->cap_bytes ||
		cb->bfree == SC_NIL))
		cb_block_drop(c, sc_lru_tail(&cb->blru), true, res);
	b = sc_itab_free_pop(&cb->ctab, &cb->bfree);
	cb->bkey[b] = key;
	sc_itab_add(&cb->ctab, key, b);
	sc_lru_push_head(&cb->blru, b);
	cb->bused++;
	cb->used += cb->bs;
	res->admitted = true;
	return b;
}

static void cb_touch(struct cbbc *cb, uint32_t b, uint32_t r)
{
	sc_lru_touch(&cb->blru, b);
	if (r != SC_NIL)
		sc_lru_touch(&cb->brefs[b], r);
}

static void cbbc_do(struct sc_dcache *c, const struct sc_dc_req *r,
		    struct sc_dc_res *res)
{
	struct cbbc *cb = c->priv;
	uint32_t ref = cb_rfind(cb, r->addr), b = SC_NIL, b2;

	if (ref != SC_NIL)
		b = cb->rblk[ref];
	if (r->op == SC_DC_READ) {
		if (b != SC_NIL && cb->bkey[b] == r->content) {
			cb_touch(cb, b, ref);
			res->kind = SC_DC_HIT;
			res->event = CB_READ_HIT;
			return;
		}
		if (ref != SC_NIL) {	/* stale: the address changed below us */
			cb_ref_unlink(cb, ref);
			if (!cb->brefs[b].count)
				cb_block_drop(c, b, false, res);
		}
		b2 = cb_bfind(cb, r->content);
		if (b2 != SC_NIL) {
			sc_lru_touch(&cb->blru, b2);
			res->kind = SC_DC_CONTENT_HIT;
			res->event = CB_READ_MISS_CONTENT_HIT;
		} else {
			b2 = cb_block_new(c, r->content, res);
			res->event = CB_READ_MISS_CONTENT_MISS;
		}
		cb_ref_add(c, r->addr, b2, res);
		return;
	}
	if (b != SC_NIL && cb->bkey[b] == r->content) {
		cb_touch(cb, b, ref);
		res->kind = SC_DC_SILENT;
		res->event = CB_SILENT_WRITE;
		return;
	}
	if (b != SC_NIL && cb->brefs[b].count == 1) {
		/* Private write: the block is this address's alone. */
		res->event = CB_WRITE_HIT_PRIVATE;
		b2 = cb_bfind(cb, r->content);
		if (b2 != SC_NIL) {
			cb_block_drop(c, b, false, res);
			sc_lru_touch(&cb->blru, b2);
			res->kind = SC_DC_CONTENT_HIT;
			cb_ref_add(c, r->addr, b2, res);
			return;
		}
		sc_itab_del(&cb->ctab, cb->bkey[b], b);
		if (c->cfg.on_evict)
			c->cfg.on_evict(c->cfg.ctx, cb->bkey[b]);
		cb->bkey[b] = r->content;
		sc_itab_add(&cb->ctab, r->content, b);
		cb_touch(cb, b, ref);
		res->admitted = true;
		return;
	}
	if (ref != SC_NIL)
		cb_ref_unlink(cb, ref);
	b2 = cb_bfind(cb, r->content);
	if (b2 != SC_NIL) {
		sc_lru_touch(&cb->blru, b2);
		res->kind = SC_DC_CONTENT_HIT;
		res->event = b != SC_NIL ? CB_WRITE_HIT_MULTI_CONTENT_HIT :
					   CB_WRITE_MISS_CONTENT_HIT;
	} else {
		b2 = cb_block_new(c, r->content, res);
		res->event = b != SC_NIL ? CB_WRITE_HIT_MULTI_CONTENT_MISS :
					   CB_WRITE_MISS_CONTENT_MISS;
	}
	cb_ref_add(c, r->addr, b2, res);
}

static void cbbc_access(struct sc_dcache *c, const struct sc_dc_req *r,
			struct sc_dc_res *res)
{
	cbbc_do(c, r, res);
	c->st.events[res->event]++;
}

static bool cbbc_holds(const struct sc_dcache *c, uint64_t content)
{
	return cb_bfind(c->priv, content) != SC_NIL;
}

static size_t cbbc_bytes(const struct sc_dcache *c)
{
	const struct cbbc *cb = c->priv;

	return sizeof(*cb) + (size_t)cb->nb * (sizeof(uint64_t) +
					       sizeof(struct sc_lru)) +
	       sc_lru_bytes(&cb->blru) + sc_itab_bytes(&cb->ctab) +
	       (size_t)cb->nr * (sizeof(uint64_t) + sizeof(uint32_t) +
				 sizeof(struct sc_lru_link)) +
	       sc_itab_bytes(&cb->rtab);
}

static uint64_t cbbc_blocks(const struct sc_dcache *c)
{
	return ((const struct cbbc *)c->priv)->bused;
}

const struct sc_dcache_ops sc_dcache_cbbc = {
	.name = "cbbc",
	.help = "cbbc[:D], the content hash table takes 1/D of the cache (D 8-4096, default 64; 0: free)",
	.init = cbbc_init,
	.destroy = cbbc_destroy,
	.access = cbbc_access,
	.holds = cbbc_holds,
	.bytes = cbbc_bytes,
	.blocks = cbbc_blocks,
	.events = cbbc_events,
};
