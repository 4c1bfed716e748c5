/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The host cache: a CSI-Map cache and a content cache under one lock, with
 * the read-path accounting of the SeaCache paper.
 *
 * A read of (file, lbn) ends in exactly one of:
 *   address hit  the CSI-Map knows the address and its content is cached:
 *                served locally, no network;
 *   content hit  the address was not known here, the server named its hash,
 *                and that content was cached: a round trip, no data;
 *   miss         the content had to be fetched.
 * The sharing count of every cached block follows the CSI-Map: the number
 * of known addresses that hold it (learnt and pushed alike).
 */
#ifndef SEACACHE_HOSTCACHE_H
#define SEACACHE_HOSTCACHE_H

#include "ccache.h"
#include "csimap.h"

struct sc_hostcache_config {
	uint32_t block_size;
	uint32_t cache_blocks;		/* content cache capacity */
	const char *policy;		/* content cache eviction policy */
	uint64_t csimap_budget;		/* bytes for the CSI-Map cache */
	uint32_t expected_sharing;	/* 0: default */
};

enum sc_read_result {
	SC_ADDR_HIT,		/* data copied out */
	SC_CONTENT_HIT,		/* data copied out */
	SC_NEED_HASH,		/* address unknown: ask the server */
	SC_NEED_DATA,		/* content named by *h is not cached: fetch it */
};

struct sc_hostcache_stats {
	uint64_t reads;
	uint64_t addr_hits;
	uint64_t content_hits;
	uint64_t misses;
	uint64_t evictions;
	uint64_t bytes_in;	/* block bytes placed into the cache */
	uint64_t mem_bytes;	/* everything held, block data included */
	struct sc_ccache_stats cache;
	struct sc_csimap_stats map;
};

struct sc_hostcache;

struct sc_hostcache *sc_hostcache_create(const struct sc_hostcache_config *c);
void sc_hostcache_destroy(struct sc_hostcache *hc);

/*
 * Start a read of (file, lbn).  SC_ADDR_HIT: buf holds the block.
 * SC_NEED_DATA: *h names the content to fetch.  SC_NEED_HASH: ask the
 * server, then call sc_hostcache_read_hash.
 */
enum sc_read_result sc_hostcache_read(struct sc_hostcache *hc, uint64_t file,
				      uint64_t lbn, void *buf,
				      struct sc_hash *h);
/* The server says (file, lbn) holds h: SC_CONTENT_HIT or SC_NEED_DATA. */
enum sc_read_result sc_hostcache_read_hash(struct sc_hostcache *hc,
					   uint64_t file, uint64_t lbn,
					   const struct sc_hash *h, void *buf);
/* The data of (file, lbn), content h, arrived: cache it and the mapping. */
int sc_hostcache_fill(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
		      const struct sc_hash *h, const void *data);
/* A mapping the server pushed ahead of any read. */
void sc_hostcache_learn(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
			const struct sc_hash *h);

/* Forget what (file, lbn) holds, e.g. after a write elsewhere. */
bool sc_hostcache_forget(struct sc_hostcache *hc, uint64_t file, uint64_t lbn);
/* Forget every mapping of file (its change id moved); cached data stays. */
uint32_t sc_hostcache_drop_file(struct sc_hostcache *hc, uint64_t file);
/* Sharing count of cached content h, or SC_NIL if it is not cached. */
uint32_t sc_hostcache_block_share(struct sc_hostcache *hc,
				  const struct sc_hash *h);

void sc_hostcache_get_stats(struct sc_hostcache *hc,
			    struct sc_hostcache_stats *out);

#endif /* SEACACHE_HOSTCACHE_H */
