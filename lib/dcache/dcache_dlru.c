// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * D-LRU and D-ARC (CacheDedup, Li et al., FAST 2016; the baselines of
 * CDAC): the metadata cache of addresses and the data cache of unique
 * contents each evict by their own policy, LRU for D-LRU, ARC for D-ARC.
 * This is our reading of the two as the CDAC paper describes them
 * ("separately managed and accessed"): CacheDedup's finer D-ARC rules are
 * not modelled.  An address whose data was evicted stays in the metadata
 * cache until its own policy drops it; reading it again misses.
 *
 * Argument: the metadata cache's size as a multiple of the data cache's
 * (default 4, used when the caller gives no meta_entries).
 */
#include "dcache_split.h"

/* The split's state, and the data cache's own slot policy. */
struct dlru {
	struct dsplit s;
	uint64_t *mcont;	/* per metadata entry: the content it names */
	struct sc_policy dpol;	/* data victims */
};

/* The base is the first member of the organisation's struct. */
static struct dlru *dlru_of(struct dsplit *s)
{
	return (struct dlru *)s;
}

static const struct dlru *dlru_of_c(const struct dsplit *s)
{
	return (const struct dlru *)s;
}

static uint64_t dlru_dkey(const void *ctx, uint32_t slot)
{
	const struct dsplit *s = ctx;

	return s->dkey[slot];
}

/* arg: the data cache's slot policy spec. */
static int dlru_org_init(struct dsplit *s, const char *arg)
{
	struct dlru *o = dlru_of(s);
	int err;

	o->mcont = sc_calloc(s->mcap, sizeof(*o->mcont));
	if (!o->mcont)
		return -SC_ENOMEM;
	err = sc_policy_create(&o->dpol, arg, s->dcap, NULL);
	if (err)
		return err;
	o->dpol.key = dlru_dkey;
	o->dpol.key_ctx = s;
	return 0;
}

static void dlru_org_free(struct dsplit *s)
{
	struct dlru *o = dlru_of(s);

	sc_policy_destroy(&o->dpol);
	sc_free(o->mcont);
}

static size_t dlru_org_bytes(const struct dsplit *s)
{
	const struct dlru *o = dlru_of_c(s);

	return (size_t)s->mcap * 8 + o->dpol.ops->bytes(&o->dpol);
}

static void dlru_data_admit(struct dsplit *s, uint64_t key)
{
	sc_policy_admit(&dlru_of(s)->dpol, key);
}

static uint32_t dlru_data_victim(struct dsplit *s)
{
	struct sc_policy *p = &dlru_of(s)->dpol;

	return p->ops->victim(p);
}

static void dlru_data_insert(struct dsplit *s, uint32_t d)
{
	struct sc_policy *p = &dlru_of(s)->dpol;

	p->ops->insert(p, d);
}

static void dlru_data_remove(struct dsplit *s, uint32_t d)
{
	struct sc_policy *p = &dlru_of(s)->dpol;

	p->ops->remove(p, d);
}

static void dlru_data_hit(struct dsplit *s, uint32_t d)
{
	struct sc_policy *p = &dlru_of(s)->dpol;

	p->ops->hit(p, d);
}

static bool dlru_names(const struct dsplit *s, uint32_t m, uint64_t content,
		       uint32_t d)
{
	(void)d;
	return dlru_of_c(s)->mcont[m] == content;
}

static void dlru_meta_use(struct dsplit *s, uint32_t m, uint64_t content,
			  uint32_t d, uint32_t parts, bool fresh)
{
	(void)d;
	(void)parts;
	(void)fresh;
	dlru_of(s)->mcont[m] = content;
}

/* Each cache by its own policy: metadata room is the base's default. */
static const struct dsplit_ops dlru_split = {
	.size = sizeof(struct dlru),
	.init = dlru_org_init,
	.free = dlru_org_free,
	.bytes = dlru_org_bytes,
	.data_admit = dlru_data_admit,
	.data_victim = dlru_data_victim,
	.data_insert = dlru_data_insert,
	.data_remove = dlru_data_remove,
	.data_hit = dlru_data_hit,
	.names = dlru_names,
	.meta_use = dlru_meta_use,
};


static int dsplit_meta_arg(struct sc_dcache *c, const char *arg)
{
	uint32_t mult;
	int err;

	if (!arg)
		return 0;
	err = sc_policy_parse_u32(arg, 1, 64, &mult);
	if (err)
		return err;
	if (c->cfg.data_blocks > (SC_NIL - 1) / mult)
		return -SC_EINVAL;
	c->cfg.meta_entries = c->cfg.data_blocks * mult;
	return 0;
}

static int dlru_init(struct sc_dcache *c, const char *arg)
{
	int err = dsplit_meta_arg(c, arg);

	return err ? err : dsplit_init(c, &dlru_split, "lru", "lru");
}

static int darc_init(struct sc_dcache *c, const char *arg)
{
	int err = dsplit_meta_arg(c, arg);

	return err ? err : dsplit_init(c, &dlru_split, "arc", "arc");
}

const struct sc_dcache_ops sc_dcache_dlru = {
	.name = "dlru",
	.help = "dlru[:M], metadata cache of M times the data blocks (1-64, default 4)",
	.init = dlru_init,
	.destroy = dsplit_destroy,
	.access = dsplit_access,
	.holds = dsplit_holds,
	.prefetch = dsplit_prefetch,
	.bytes = dsplit_bytes,
	.blocks = dsplit_blocks,
};

const struct sc_dcache_ops sc_dcache_darc = {
	.name = "darc",
	.help = "darc[:M], metadata cache of M times the data blocks (1-64, default 4)",
	.init = darc_init,
	.destroy = dsplit_destroy,
	.access = dsplit_access,
	.holds = dsplit_holds,
	.prefetch = dsplit_prefetch,
	.bytes = dsplit_bytes,
	.blocks = dsplit_blocks,
};
