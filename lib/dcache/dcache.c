// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The registry of request-level cache organisations (dcache.h). */
#include "seacache/dcache.h"
#include "seacache/policy.h"

/*
 * Add an organisation: one file lib/dcache/dcache_NAME.c, listed in
 * lib/sources.mk, and one line here.
 */
static const struct sc_dcache_ops *const sc_dcaches[] = {
	&sc_dcache_content,
	&sc_dcache_dlru,
	&sc_dcache_darc,
	&sc_dcache_cdac_lru,
	&sc_dcache_cdac_arc,
	&sc_dcache_cbbc,
	&sc_dcache_acq,
	&sc_dcache_lruca,
};

const struct sc_dcache_ops *sc_dcache_at(unsigned int i)
{
	return i < SC_ARRAY_SIZE(sc_dcaches) ? sc_dcaches[i] : NULL;
}

static int dcache_init(struct sc_dcache *c, const struct sc_dcache_ops *ops,
		       const char *spec, const char *arg,
		       const struct sc_dc_config *cfg)
{
	int err;

	sc_memset(c, 0, sizeof(*c));
	c->ops = ops;
	c->cfg = *cfg;
	if (!c->cfg.block_size)
		c->cfg.block_size = SC_BLOCK_SIZE_DEFAULT;
	if (!c->cfg.peer_blocks)
		c->cfg.peer_blocks = cfg->data_blocks;
	err = ops->init(c, arg);
	if (err) {
		c->ops = NULL;
		if (err == -SC_EINVAL)
			sc_log_err("bad cache organisation '%s': %s", spec,
				   ops->help);
	}
	return err;
}

int sc_dcache_create(struct sc_dcache *c, const char *spec,
		     const struct sc_dc_config *cfg)
{
	const char *colon = spec;
	size_t namelen;
	unsigned int i;

	c->ops = NULL;
	if (!cfg->data_blocks || cfg->data_blocks == SC_NIL ||
	    (cfg->block_size && (cfg->block_size % SC_BLOCK_SIZE_MIN ||
				 cfg->block_size > SC_BLOCK_SIZE_MAX))) {
		sc_log_err("cache '%s': %u blocks of %u bytes is invalid",
			   spec, cfg->data_blocks, cfg->block_size);
		return -SC_EINVAL;
	}
	while (*colon && *colon != ':')
		colon++;
	namelen = (size_t)(colon - spec);
	for (i = 0; i < SC_ARRAY_SIZE(sc_dcaches); i++) {
		const struct sc_dcache_ops *ops = sc_dcaches[i];

		if (sc_strlen(ops->name) == namelen &&
		    sc_strncmp(ops->name, spec, namelen) == 0)
			return dcache_init(c, ops, spec,
					   *colon ? colon + 1 : NULL, cfg);
	}
	/* A slot-level policy: a plain content cache under it. */
	for (i = 0; sc_policy_at(i); i++) {
		const struct sc_policy_ops *po = sc_policy_at(i);

		if (sc_strlen(po->name) == namelen &&
		    sc_strncmp(po->name, spec, namelen) == 0)
			return dcache_init(c, &sc_dcache_content, spec, spec,
					   cfg);
	}
	sc_log_err("unknown cache organisation '%s'; the known ones are:",
		   spec);
	for (i = 0; sc_policy_at(i); i++)
		sc_log_err("  %s (a content cache; %s)", sc_policy_at(i)->name,
			   sc_policy_at(i)->help);
	for (i = 0; i < SC_ARRAY_SIZE(sc_dcaches); i++)
		sc_log_err("  %s (%s)", sc_dcaches[i]->name,
			   sc_dcaches[i]->help);
	return -SC_EINVAL;
}

void sc_dcache_destroy(struct sc_dcache *c)
{
	if (c->ops)
		c->ops->destroy(c);
	c->ops = NULL;
}
