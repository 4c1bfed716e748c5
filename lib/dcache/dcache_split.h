/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The CacheDedup organisation (Li et al., FAST 2016): a metadata cache of
 * source addresses, each naming the content it holds, and a data cache of
 * unique contents, managed separately.  A read hits when its address is in
 * the metadata cache and that content is in the data cache.
 *
 * This base (dcache_split.c) keeps the two caches' tables, the metadata
 * cache's slot policy and the order of every step of a request.  An
 * organisation on it, one file each, fills in struct dsplit_ops: what a
 * metadata entry names and how the data cache makes room.  The base knows
 * none of them; they are:
 *   D-LRU, D-ARC (dcache_dlru.c): each cache evicts by its own slot
 *     policy (LRU or ARC); an address may outlive its data (the next read
 *     of it misses) and data may outlive its addresses.
 *   CDAC (dcache_cdac.c): the data cache evicts only free blocks (no
 *     address refers to them); to free one, addresses are deleted from the
 *     metadata cache's LRU end as RCE and BHI decide.  Reference counts
 *     are exact.
 */
#ifndef SEACACHE_DCACHE_SPLIT_H
#define SEACACHE_DCACHE_SPLIT_H

#include "seacache/dcache.h"
#include "seacache/itab.h"
#include "seacache/lru.h"
#include "seacache/policy.h"

struct dsplit_ops;

/* The base; an organisation's struct begins with it (ops->size). */
struct dsplit {
	struct sc_dcache *c;
	const struct dsplit_ops *ops;
	/* Metadata cache: addresses, each naming a content (ops->names). */
	uint32_t mcap, mused, mfree;
	uint64_t *maddr;
	struct sc_itab mtab;
	struct sc_policy mpol;
	/* Data cache: unique contents. */
	uint32_t dcap, dused, dfree;
	uint64_t *dkey;
	struct sc_itab dtab;
};

/*
 * An organisation's part, called by the base at fixed points of a
 * request; m is a metadata entry, d a data slot.  Optional: data_admit,
 * data_hit, meta_room (default: delete the metadata policy's victim),
 * meta_gone.
 */
struct dsplit_ops {
	size_t size;		/* of its struct, which begins with dsplit */
	/*
	 * Its own state, once the base's arrays and tables are there and
	 * before the metadata policy is made; 0, -SC_EINVAL or -SC_ENOMEM
	 * (free then undoes what it did).  arg: dsplit_init's.
	 */
	int (*init)(struct dsplit *s, const char *arg);
	void (*free)(struct dsplit *s);
	size_t (*bytes)(const struct dsplit *s);	/* its own arrays */

	/* The data cache.  Content key is about to get a slot. */
	void (*data_admit)(struct dsplit *s, uint64_t key);
	/* The data cache is full: the slot to evict (may delete entries). */
	uint32_t (*data_victim)(struct dsplit *s);
	void (*data_insert)(struct dsplit *s, uint32_t d);	/* new in d */
	void (*data_remove)(struct dsplit *s, uint32_t d);	/* d goes */
	void (*data_hit)(struct dsplit *s, uint32_t d);

	/* The metadata cache.  Does m name content, held in slot d? */
	bool (*names)(const struct dsplit *s, uint32_t m, uint64_t content,
		      uint32_t d);
	/*
	 * m is used by a request for content, now in d, touching parts:
	 * m names it from now on.  fresh: m was just made for the request
	 * (its old state is another address's).
	 */
	void (*meta_use)(struct dsplit *s, uint32_t m, uint64_t content,
			 uint32_t d, uint32_t parts, bool fresh);
	/*
	 * The metadata cache is full: delete entries until one is free.  The
	 * new entry will name d, which must not be freed meanwhile.
	 */
	void (*meta_room)(struct dsplit *s, uint32_t d);
	void (*meta_gone)(struct dsplit *s, uint32_t m);	/* m goes */
};

/*
 * mpolicy: the metadata cache's slot policy spec ("lru", "arc"); arg
 * goes to ops->init.  c->priv is the organisation's struct.
 */
int dsplit_init(struct sc_dcache *c, const struct dsplit_ops *ops,
		const char *mpolicy, const char *arg);
void dsplit_destroy(struct sc_dcache *c);
void dsplit_access(struct sc_dcache *c, const struct sc_dc_req *r,
		   struct sc_dc_res *res);
bool dsplit_holds(const struct sc_dcache *c, uint64_t content);
void dsplit_prefetch(const struct sc_dcache *c, const struct sc_dc_req *r,
		     bool far);
size_t dsplit_bytes(const struct sc_dcache *c);
uint64_t dsplit_blocks(const struct sc_dcache *c);

/* Remove metadata entry m (ops->meta_gone first). */
void dsplit_meta_delete(struct dsplit *s, uint32_t m);

#endif /* SEACACHE_DCACHE_SPLIT_H */
