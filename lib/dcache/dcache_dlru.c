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

	return err ? err : dsplit_init(c, "lru", "lru");
}

static int darc_init(struct sc_dcache *c, const char *arg)
{
	int err = dsplit_meta_arg(c, arg);

	return err ? err : dsplit_init(c, "arc", "arc");
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
