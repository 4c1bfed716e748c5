/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The CacheDedup organisation (Li et al., FAST 2016), shared by D-LRU,
 * D-ARC (dcache_dlru.c) and CDAC (dcache_cdac.c): a metadata cache of
 * source addresses, each naming the content it holds, and a data cache of
 * unique contents, managed separately.  A read hits when its address is in
 * the metadata cache and that content is in the data cache.
 *
 * The two users differ in how room is made:
 *   D-LRU, D-ARC: each cache evicts by its own slot policy (LRU or ARC);
 *     an address may outlive its data (the next read of it misses) and
 *     data may outlive its addresses.
 *   CDAC: the data cache evicts only free blocks (no address refers to
 *     them); to free one, addresses are deleted from the metadata cache's
 *     LRU end as RCE and BHI decide.  Reference counts are exact.
 */
#ifndef SEACACHE_DCACHE_SPLIT_H
#define SEACACHE_DCACHE_SPLIT_H

#include "seacache/dcache.h"
#include "seacache/itab.h"
#include "seacache/lru.h"
#include "seacache/policy.h"

/*
 * CDAC: a metadata entry's block by its data slot (held there while the
 * entry refers to it: the data cache evicts only blocks of count 0) and
 * its RCE count, side by side: what judging a candidate reads, in one
 * line, with no content lookup.
 */
struct cdac_meta {
	uint32_t d;
	uint32_t ref;		/* RCE: count when given a cycle, 0: none */
};

struct dsplit {
	struct sc_dcache *c;
	/* Metadata cache: address -> content (CDAC: mcdac[].d instead). */
	uint32_t mcap, mused, mfree;
	uint64_t *maddr;
	uint64_t *mcont;
	struct sc_itab mtab;
	struct sc_policy mpol;
	/* Data cache: unique contents. */
	uint32_t dcap, dused, dfree;
	uint64_t *dkey;
	struct sc_itab dtab;
	struct sc_policy dpol;	/* D-LRU, D-ARC: data victims */
	/* CDAC only (NULL / unused otherwise). */
	bool cdac;
	uint32_t *dref;		/* addresses referring to each block */
	struct sc_lru zero;	/* blocks with dref 0, oldest first */
	struct cdac_meta *mcdac;
	uint16_t *mbits;	/* BHI: parts touched since it was cached */
	uint8_t *mflag;		/* BHI: kept for its bitmap, not used since */
	uint32_t rce_pct, bhi_pct;
};

/* mpolicy, dpolicy: slot policy specs ("lru", "arc"); dpolicy NULL: CDAC. */
int dsplit_init(struct sc_dcache *c, const char *mpolicy, const char *dpolicy);
void dsplit_destroy(struct sc_dcache *c);
void dsplit_access(struct sc_dcache *c, const struct sc_dc_req *r,
		   struct sc_dc_res *res);
bool dsplit_holds(const struct sc_dcache *c, uint64_t content);
void dsplit_prefetch(const struct sc_dcache *c, const struct sc_dc_req *r,
		     bool far);
size_t dsplit_bytes(const struct sc_dcache *c);
uint64_t dsplit_blocks(const struct sc_dcache *c);

/* CDAC's choice (dcache_cdac.c): delete one address from the metadata cache. */
void cdac_delete_one(struct dsplit *s);
/* Remove metadata entry m (its block's count drops; CDAC frees at 0). */
void dsplit_meta_delete(struct dsplit *s, uint32_t m);

#endif /* SEACACHE_DCACHE_SPLIT_H */
