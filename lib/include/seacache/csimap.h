/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The CSI-Map cache: content-sharing information known to a host (or kept
 * by the lab's model of a server).
 *
 * Two directions: (file, lbn) -> content hash, and content hash -> every
 * (file, lbn) known to hold it (the sharers; their count is the block's
 * sharing count).  Entries come from reads (learnt) and from the server
 * (pushed).  Overwriting an address moves it to its new content, so an
 * address never maps to stale content.
 *
 * Memory is fixed at creation from a budget: entry slots (one per address,
 * 48 bytes with index and LRU links) and content slots (one per distinct
 * hash, 48 bytes), in the ratio of the expected sharing.  When either kind
 * runs out, the least recently used addresses are forgotten; a content slot
 * is freed with its last address.  Forgetting costs only a round trip
 * later, never correctness.
 *
 * Not thread-safe: the caller serializes (see hostcache.h).
 */
#ifndef SEACACHE_CSIMAP_H
#define SEACACHE_CSIMAP_H

#include "hash.h"
#include "itab.h"
#include "lru.h"

#define SC_CSIMAP_SHARING_DEFAULT 4u

struct sc_addr {
	uint64_t file;
	uint64_t lbn;
};

enum sc_csi_source {
	SC_CSI_LEARNT,	/* from a read or write reply for this address */
	SC_CSI_PUSHED,	/* sent ahead by the server */
	SC_CSI_MAPPED,	/* a map window fetched ahead of the readers */
};

struct sc_csimap_config {
	uint64_t mem_budget;		/* bytes for all of the map */
	uint32_t expected_sharing;	/* addresses per content; 0: default */
	/* Told when the number of sharers of h changes (0: none left). */
	void (*on_share)(void *ctx, const struct sc_hash *h, uint32_t sharers);
	void *ctx;
};

struct sc_csimap_stats {
	uint64_t lookups;
	uint64_t hits;
	uint64_t learnt;	/* inserts of learnt entries */
	uint64_t pushed;	/* inserts of pushed entries */
	uint64_t mapped;	/* inserts of map windows' entries */
	uint64_t overwrites;	/* an address moved to other content */
	uint64_t evictions;	/* addresses forgotten for space */
	uint64_t entries;	/* addresses mapped now */
	uint64_t contents;	/* distinct hashes now */
	uint64_t capacity_entries;
	uint64_t capacity_contents;
	uint64_t mem_bytes;	/* all memory held */
};

struct sc_csimap;

/* The mem_budget that holds that many contents, of sharing addresses each. */
uint64_t sc_csimap_budget(uint32_t contents, uint32_t sharing);
struct sc_csimap *sc_csimap_create(const struct sc_csimap_config *cfg);
void sc_csimap_destroy(struct sc_csimap *m);

/*
 * Map (file, lbn) to h; replaces an older mapping of that address.
 * Returns how many known addresses hold h now (what sc_csimap_sharers
 * would say), so a caller that caches h needs no second lookup.
 */
uint32_t sc_csimap_insert(struct sc_csimap *m, uint64_t file, uint64_t lbn,
		      const struct sc_hash *h, enum sc_csi_source src);
/* A hint no cache slot has (sc_csimap_set_hint keeps 30 bits). */
#define SC_CSI_NO_HINT 0x3fffffffu

/* What sc_csimap_lookup_src found besides the hash. */
struct sc_csi_found {
	uint32_t entry;			/* the address's, for set_hint */
	uint32_t hint;			/* SC_CSI_NO_HINT until set */
	enum sc_csi_source src;		/* where it came from: its last insert */
};

/*
 * The content of (file, lbn) into *h and, if f is not NULL, f; false if
 * unknown.  Marks it used.
 */
bool sc_csimap_lookup_src(struct sc_csimap *m, uint64_t file, uint64_t lbn,
			  struct sc_hash *h, struct sc_csi_found *f);
/*
 * Keep hint with the address of entry (a lookup's, the map unchanged
 * since): a content cache keeps where it last found the address's
 * content, so that the next hit goes there without the cache's own index
 * (the cache checks it; the map never reads it).  Kept with the address,
 * not the content, it is read as soon as the address is found.
 */
void sc_csimap_set_hint(struct sc_csimap *m, uint32_t entry, uint32_t hint);
/*
 * Ahead of lookups, with no lock held, so that the lookups under the
 * caller's lock find their memory in the CPU cache rather than wait for
 * it there (a second reader waits for the lock meanwhile):
 * sc_csimap_prefetch brings in the index bucket of (file, lbn), for
 * several addresses at once; sc_csimap_prewalk then follows it to the
 * address's entry, brings in its content and LRU links, and returns the
 * entry's hint for the caller to prefetch its own slot (SC_CSI_NO_HINT
 * if none was found).  Both read the map while others may change it:
 * what they find is a guess, nothing is changed and nothing decided.
 */
void sc_csimap_prefetch(const struct sc_csimap *m, uint64_t file,
			uint64_t lbn);
uint32_t sc_csimap_prewalk(const struct sc_csimap *m, uint64_t file,
			   uint64_t lbn);
static inline bool sc_csimap_lookup(struct sc_csimap *m, uint64_t file,
				    uint64_t lbn, struct sc_hash *h)
{
	return sc_csimap_lookup_src(m, file, lbn, h, NULL);
}
bool sc_csimap_remove(struct sc_csimap *m, uint64_t file, uint64_t lbn);
/*
 * Forget every address of file (it changed behind the cache); O(entries).
 * This and drop_all may reschedule: only under sleeping locks.
 */
uint32_t sc_csimap_drop_file(struct sc_csimap *m, uint64_t file);
/* Forget every address (a new server epoch, PROTOCOL.md §6.2). */
uint32_t sc_csimap_drop_all(struct sc_csimap *m);

/* How many known addresses hold h. */
uint32_t sc_csimap_sharers(const struct sc_csimap *m, const struct sc_hash *h);
/* Up to max of them into out; returns how many were written. */
uint32_t sc_csimap_sharers_list(const struct sc_csimap *m,
				const struct sc_hash *h, struct sc_addr *out,
				uint32_t max);

void sc_csimap_get_stats(const struct sc_csimap *m,
			 struct sc_csimap_stats *out);

#endif /* SEACACHE_CSIMAP_H */
