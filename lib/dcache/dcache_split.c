// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The CacheDedup metadata/data split (see dcache_split.h): the tables and
 * the steps of a request; the organisation's part through s->ops.
 */
#include "dcache_split.h"

static uint64_t dsplit_mkey(const void *ctx, uint32_t slot)
{
	const struct dsplit *s = ctx;

	return s->maddr[slot];
}

static void dsplit_free(struct dsplit *s)
{
	sc_policy_destroy(&s->mpol);
	s->ops->free(s);
	sc_itab_destroy(&s->mtab);
	sc_itab_destroy(&s->dtab);
	sc_free(s->maddr);
	sc_free(s->dkey);
	sc_free(s);
}

int dsplit_init(struct sc_dcache *c, const struct dsplit_ops *ops,
		const char *mpolicy, const char *arg)
{
	struct dsplit *s = sc_zalloc(ops->size);
	int err = -SC_ENOMEM;

	if (!s)
		return -SC_ENOMEM;
	s->c = c;
	s->ops = ops;
	s->dcap = c->cfg.data_blocks;
	s->mcap = c->cfg.meta_entries;
	if (!s->mcap)
		s->mcap = s->dcap <= SC_NIL / 4 ? 4 * s->dcap : SC_NIL - 1;
	s->maddr = sc_calloc(s->mcap, sizeof(*s->maddr));
	s->dkey = sc_calloc(s->dcap, sizeof(*s->dkey));
	if (!s->maddr || !s->dkey ||
	    sc_itab_init(&s->mtab, s->mcap) || sc_itab_init(&s->dtab, s->dcap))
		goto fail;
	err = ops->init(s, arg);
	if (err)
		goto fail;
	err = sc_policy_create(&s->mpol, mpolicy, s->mcap, NULL);
	if (err)
		goto fail;
	s->mpol.key = dsplit_mkey;
	s->mpol.key_ctx = s;
	s->mfree = sc_itab_free_all(&s->mtab);
	s->dfree = sc_itab_free_all(&s->dtab);
	c->priv = s;
	return 0;
fail:
	dsplit_free(s);
	return err;
}

void dsplit_destroy(struct sc_dcache *c)
{
	dsplit_free(c->priv);
	c->priv = NULL;
}

static uint32_t dsplit_mfind(const struct dsplit *s, uint64_t addr)
{
	return sc_itab_find(&s->mtab, s->maddr, addr);
}

static uint32_t dsplit_dfind(const struct dsplit *s, uint64_t key)
{
	return sc_itab_find(&s->dtab, s->dkey, key);
}

void dsplit_meta_delete(struct dsplit *s, uint32_t m)
{
	if (s->ops->meta_gone)
		s->ops->meta_gone(s, m);
	s->mpol.ops->remove(&s->mpol, m);
	sc_itab_del(&s->mtab, s->maddr[m], m);
	sc_itab_free_push(&s->mtab, &s->mfree, m);
	s->mused--;
}

static void dsplit_data_evict(struct dsplit *s, uint32_t d,
			      struct sc_dc_res *res)
{
	uint64_t gone = s->dkey[d];

	s->ops->data_remove(s, d);
	sc_itab_del(&s->dtab, gone, d);
	sc_itab_free_push(&s->dtab, &s->dfree, d);
	s->dused--;
	res->evicted++;
	if (s->c->cfg.on_evict)
		s->c->cfg.on_evict(s->c->cfg.ctx, gone);
}

/* A data slot for content key, evicting as the organisation says. */
static uint32_t dsplit_data_alloc(struct dsplit *s, uint64_t key,
				  struct sc_dc_res *res)
{
	uint32_t d;

	if (s->ops->data_admit)
		s->ops->data_admit(s, key);
	if (s->dfree == SC_NIL)
		dsplit_data_evict(s, s->ops->data_victim(s), res);
	d = sc_itab_free_pop(&s->dtab, &s->dfree);
	s->dkey[d] = key;
	sc_itab_add(&s->dtab, key, d);
	s->dused++;
	s->ops->data_insert(s, d);
	return d;
}

/* Make addr (in metadata entry m, or SC_NIL) name content (in data slot d). */
static void dsplit_map(struct dsplit *s, uint32_t m, uint64_t addr,
		       uint64_t content, uint32_t d, uint32_t parts)
{
	if (m != SC_NIL) {
		s->mpol.ops->hit(&s->mpol, m);
		s->ops->meta_use(s, m, content, d, parts, false);
		return;
	}
	sc_policy_admit(&s->mpol, addr);
	if (s->ops->meta_room)
		s->ops->meta_room(s, d);
	else
		while (s->mfree == SC_NIL)
			dsplit_meta_delete(s, s->mpol.ops->victim(&s->mpol));
	m = sc_itab_free_pop(&s->mtab, &s->mfree);
	s->maddr[m] = addr;
	sc_itab_add(&s->mtab, addr, m);
	s->mpol.ops->insert(&s->mpol, m);
	s->mused++;
	s->ops->meta_use(s, m, content, d, parts, true);
}

void dsplit_access(struct sc_dcache *c, const struct sc_dc_req *r,
		   struct sc_dc_res *res)
{
	struct dsplit *s = c->priv;
	uint32_t all = (1u << sc_dcache_parts(c)) - 1;
	uint32_t parts = r->parts ? r->parts & all : all;
	uint32_t m = dsplit_mfind(s, r->addr);
	uint32_t d = dsplit_dfind(s, r->content);
	uint32_t mused;

	if (d != SC_NIL && m != SC_NIL &&
	    s->ops->names(s, m, r->content, d)) {
		res->kind = r->op == SC_DC_WRITE ? SC_DC_SILENT : SC_DC_HIT;
		s->mpol.ops->hit(&s->mpol, m);
		s->ops->meta_use(s, m, r->content, d, parts, false);
		if (s->ops->data_hit)
			s->ops->data_hit(s, d);
		return;
	}
	if (d != SC_NIL) {
		res->kind = SC_DC_CONTENT_HIT;
		if (s->ops->data_hit)
			s->ops->data_hit(s, d);
	} else {
		mused = s->mused;
		d = dsplit_data_alloc(s, r->content, res);
		res->admitted = true;
		/* Making room may have deleted addresses, m among them. */
		if (s->mused != mused)
			m = dsplit_mfind(s, r->addr);
	}
	dsplit_map(s, m, r->addr, r->content, d, parts);
}

void dsplit_prefetch(const struct sc_dcache *c, const struct sc_dc_req *r,
		     bool far)
{
	const struct dsplit *s = c->priv;
	uint32_t m, d;

	if (far) {
		sc_itab_prefetch(&s->mtab, r->addr);
		sc_itab_prefetch(&s->dtab, r->content);
		return;
	}
	m = sc_itab_first(&s->mtab, r->addr);
	d = sc_itab_first(&s->dtab, r->content);
	if (m != SC_NIL)
		sc_prefetch(&s->maddr[m]);
	if (d != SC_NIL)
		sc_prefetch(&s->dkey[d]);
}

bool dsplit_holds(const struct sc_dcache *c, uint64_t content)
{
	return dsplit_dfind(c->priv, content) != SC_NIL;
}

size_t dsplit_bytes(const struct sc_dcache *c)
{
	const struct dsplit *s = c->priv;

	return s->ops->size + (size_t)s->mcap * 8 + (size_t)s->dcap * 8 +
	       sc_itab_bytes(&s->mtab) + sc_itab_bytes(&s->dtab) +
	       s->mpol.ops->bytes(&s->mpol) + s->ops->bytes(s);
}

uint64_t dsplit_blocks(const struct sc_dcache *c)
{
	return ((const struct dsplit *)c->priv)->dused;
}
