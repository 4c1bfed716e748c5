// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The CacheDedup metadata/data split (see dcache_split.h). */
#include "dcache_split.h"

static uint64_t dsplit_mkey(const void *ctx, uint32_t slot)
{
	const struct dsplit *s = ctx;

	return s->maddr[slot];
}

static uint64_t dsplit_dkey(const void *ctx, uint32_t slot)
{
	const struct dsplit *s = ctx;

	return s->dkey[slot];
}

static void dsplit_free(struct dsplit *s)
{
	sc_policy_destroy(&s->mpol);
	sc_policy_destroy(&s->dpol);
	sc_itab_destroy(&s->mtab);
	sc_itab_destroy(&s->dtab);
	sc_free(s->zero.link);
	sc_free(s->maddr);
	sc_free(s->mcont);
	sc_free(s->dkey);
	sc_free(s->dref);
	sc_free(s->mcdac);
	sc_free(s->mbits);
	sc_free(s->mflag);
	sc_free(s);
}

int dsplit_init(struct sc_dcache *c, const char *mpolicy, const char *dpolicy)
{
	struct dsplit *s = sc_zalloc(sizeof(*s));
	int err = -SC_ENOMEM;

	if (!s)
		return -SC_ENOMEM;
	s->c = c;
	s->dcap = c->cfg.data_blocks;
	s->mcap = c->cfg.meta_entries;
	if (!s->mcap)
		s->mcap = s->dcap <= SC_NIL / 4 ? 4 * s->dcap : SC_NIL - 1;
	s->cdac = !dpolicy;
	s->maddr = sc_calloc(s->mcap, sizeof(*s->maddr));
	s->dkey = sc_calloc(s->dcap, sizeof(*s->dkey));
	if (!s->maddr || !s->dkey ||
	    sc_itab_init(&s->mtab, s->mcap) || sc_itab_init(&s->dtab, s->dcap))
		goto fail;
	if (s->cdac) {
		s->dref = sc_calloc(s->dcap, sizeof(*s->dref));
		s->mcdac = sc_calloc(s->mcap, sizeof(*s->mcdac));
		s->mbits = sc_calloc(s->mcap, sizeof(*s->mbits));
		s->mflag = sc_calloc(s->mcap, 1);
		if (!s->dref || !s->mcdac || !s->mbits || !s->mflag ||
		    sc_lru_init(&s->zero, s->dcap))
			goto fail;
	} else {
		s->mcont = sc_calloc(s->mcap, sizeof(*s->mcont));
		if (!s->mcont)
			goto fail;
		err = sc_policy_create(&s->dpol, dpolicy, s->dcap, NULL);
		if (err)
			goto fail;
		s->dpol.key = dsplit_dkey;
		s->dpol.key_ctx = s;
	}
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

static void dref_inc(struct dsplit *s, uint32_t d)
{
	if (!s->cdac)
		return;
	if (s->dref[d]++ == 0)
		sc_lru_unlink(&s->zero, d);
}

static void dref_dec(struct dsplit *s, uint32_t d)
{
	if (!s->cdac)
		return;
	if (--s->dref[d] == 0)
		sc_lru_push_head(&s->zero, d);
}

void dsplit_meta_delete(struct dsplit *s, uint32_t m)
{
	if (s->cdac)
		dref_dec(s, s->mcdac[m].d);
	s->mpol.ops->remove(&s->mpol, m);
	sc_itab_del(&s->mtab, s->maddr[m], m);
	sc_itab_free_push(&s->mtab, &s->mfree, m);
	s->mused--;
}

static void dsplit_data_evict(struct dsplit *s, uint32_t d,
			      struct sc_dc_res *res)
{
	uint64_t gone = s->dkey[d];

	if (s->cdac)
		sc_lru_unlink(&s->zero, d);
	else
		s->dpol.ops->remove(&s->dpol, d);
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

	if (!s->cdac)
		sc_policy_admit(&s->dpol, key);
	if (s->dfree == SC_NIL) {
		if (s->cdac) {
			while (!s->zero.count)
				cdac_delete_one(s);
			d = sc_lru_tail(&s->zero);
		} else {
			d = s->dpol.ops->victim(&s->dpol);
		}
		dsplit_data_evict(s, d, res);
	}
	d = sc_itab_free_pop(&s->dtab, &s->dfree);
	s->dkey[d] = key;
	sc_itab_add(&s->dtab, key, d);
	s->dused++;
	if (s->cdac) {
		s->dref[d] = 0;
		sc_lru_push_head(&s->zero, d);
	} else {
		s->dpol.ops->insert(&s->dpol, d);
	}
	return d;
}

static void dsplit_meta_touch(struct dsplit *s, uint32_t m, uint32_t parts)
{
	s->mpol.ops->hit(&s->mpol, m);
	if (s->cdac) {
		s->mbits[m] |= (uint16_t)parts;
		s->mflag[m] = 0;
		s->mcdac[m].ref = 0;
	}
}

/* Does metadata entry m name the content of data slot d (key content)? */
static bool dsplit_names(const struct dsplit *s, uint32_t m, uint64_t content,
			 uint32_t d)
{
	return s->cdac ? s->mcdac[m].d == d : s->mcont[m] == content;
}

/* Make addr (in metadata entry m, or SC_NIL) name content (in data slot d). */
static void dsplit_map(struct dsplit *s, uint32_t m, uint64_t addr,
		       uint64_t content, uint32_t d, uint32_t parts)
{
	uint32_t old;

	if (m != SC_NIL) {
		if (!s->cdac) {
			s->mcont[m] = content;
		} else if (s->mcdac[m].d != d) {
			old = s->mcdac[m].d;
			/* Before the decrement: d must not become free. */
			dref_inc(s, d);
			dref_dec(s, old);
			s->mcdac[m].d = d;
		}
		dsplit_meta_touch(s, m, parts);
		return;
	}
	/* Held while addresses are deleted: d must not be freed meanwhile. */
	dref_inc(s, d);
	sc_policy_admit(&s->mpol, addr);
	while (s->mfree == SC_NIL) {
		if (s->cdac)
			cdac_delete_one(s);
		else
			dsplit_meta_delete(s, s->mpol.ops->victim(&s->mpol));
	}
	m = sc_itab_free_pop(&s->mtab, &s->mfree);
	s->maddr[m] = addr;
	sc_itab_add(&s->mtab, addr, m);
	s->mpol.ops->insert(&s->mpol, m);
	s->mused++;
	if (s->cdac) {
		s->mcdac[m].d = d;
		s->mcdac[m].ref = 0;
		s->mbits[m] = (uint16_t)parts;
		s->mflag[m] = 0;
	} else {
		s->mcont[m] = content;
	}
}

void dsplit_access(struct sc_dcache *c, const struct sc_dc_req *r,
		   struct sc_dc_res *res)
{
	struct dsplit *s = c->priv;
	uint32_t all = (1u << sc_dcache_parts(c)) - 1;
	uint32_t parts = r->parts ? r->parts & all : all;
	uint32_t m = dsplit_mfind(s, r->addr);
	uint32_t d = dsplit_dfind(s, r->content);

	if (d != SC_NIL && m != SC_NIL && dsplit_names(s, m, r->content, d)) {
		res->kind = r->op == SC_DC_WRITE ? SC_DC_SILENT : SC_DC_HIT;
		dsplit_meta_touch(s, m, parts);
		if (!s->cdac)
			s->dpol.ops->hit(&s->dpol, d);
		return;
	}
	if (d != SC_NIL) {
		res->kind = SC_DC_CONTENT_HIT;
		if (!s->cdac)
			s->dpol.ops->hit(&s->dpol, d);
	} else {
		d = dsplit_data_alloc(s, r->content, res);
		res->admitted = true;
		/* CDAC may have deleted addresses, m among them, to free d. */
		if (s->cdac)
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
	size_t b = sizeof(*s) + (size_t)s->mcap * 8 + (size_t)s->dcap * 8 +
		   sc_itab_bytes(&s->mtab) + sc_itab_bytes(&s->dtab) +
		   s->mpol.ops->bytes(&s->mpol);

	if (s->cdac)
		b += (size_t)s->dcap * (4 + sizeof(struct sc_lru_link)) +
		     (size_t)s->mcap * (sizeof(struct cdac_meta) + 3);
	else
		b += (size_t)s->mcap * 8 + s->dpol.ops->bytes(&s->dpol);
	return b;
}

uint64_t dsplit_blocks(const struct sc_dcache *c)
{
	return ((const struct dsplit *)c->priv)->dused;
}
