/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The content cache: the host page cache of SeaCache.
 *
 * Blocks are kept by content: one buffer per content hash, however many
 * logical blocks (file, lbn) hold that content.  Each block carries a
 * sharing count set by its owner (how many logical blocks are known to map
 * to it), which dedup-aware eviction policies weigh.
 *
 * Memory.  Capacity is a whole number of blocks, fixed at creation, and
 * so is the metadata; a block's buffer is allocated (sc_block_alloc: in
 * the kernel, pages charged to the mount's memory cgroup) when the block
 * comes in and freed when it leaves (a block evicted for room hands its buffer
 * to the one coming in), so an idle or shrunk cache gives memory back.
 * The limit is how many blocks the cache may hold now, at most the
 * capacity: below it an insert allocates (reclaiming memory if it must),
 * at it an insert evicts.  sc_ccache_shrink gives blocks back and lowers
 * the limit; an insert at the limit raises it again by one when a buffer
 * can be had from memory that is free, without reclaim.  When even the
 * reclaiming allocation fails the limit comes down to the blocks held
 * (the insert recycles the victim's buffer), or the block is not cached
 * if there is none.
 *
 * Metadata per block of capacity: the slot (hash, index chain link,
 * sharing count, buffer pointer: 48 bytes), the index bucket (at most
 * 8 bytes) and the policy's own state (8 bytes for LRU and ELRU-n).
 *
 * Not thread-safe but for sc_ccache_unpin: the caller serializes (see
 * hostcache.h).
 */
#ifndef SEACACHE_CCACHE_H
#define SEACACHE_CCACHE_H

#include "hash.h"
#include "itab.h"
#include "policy.h"

struct sc_ccache_config {
	uint32_t block_size;		/* power of two, 4..64 KiB */
	uint32_t capacity_blocks;	/* >= 1 */
	const char *policy;		/* "lru", "elru:16", ... */
	/* Told about every block that leaves the cache, or NULL. */
	void (*on_evict)(void *ctx, const struct sc_hash *h);
	void *ctx;
	/* Where the blocks' buffers come from (compat.h); NULL: plain. */
	struct sc_block_mem *mem;
};

struct sc_ccache_stats {
	uint64_t hits;		/* lookups that found the content */
	uint64_t misses;	/* lookups that did not */
	uint64_t inserts;	/* blocks placed in the cache */
	uint64_t evictions;	/* blocks the policy chose to drop */
	uint64_t shrunk;	/* ... of them given back by sc_ccache_shrink */
	uint64_t no_memory;	/* inserts that found no buffer to allocate */
	uint64_t collisions;	/* same hash, other bytes: refused */
	uint64_t bytes_in;	/* bytes copied in by inserts */
	uint64_t blocks;	/* blocks cached now */
	uint64_t limit;		/* blocks it may hold now, <= capacity */
	uint64_t retired;	/* blocks gone whose buffers are still read */
	uint64_t mem_bytes;	/* all memory held, data included */
	uint64_t meta_bytes;	/* memory held beyond block data */
};

/* Blocks one reader pins at once. */
#define SC_CCACHE_PINS 32

/* Pin counters: a slot's pins count in the one its number hashes to. */
#define SC_CCACHE_PIN_STRIPES 1024

/*
 * A reader's pinned blocks.  A pinned block's buffer stays allocated and
 * unchanged, so the reader copies it out without holding the caller's
 * lock (two readers copy at once), and unpins it without the lock too: a
 * pin is a count in its slot's stripe, so the hit path takes the lock
 * once.  A block that leaves the cache while its stripe counts pins (its
 * own or, rarely, another slot's) leaves its slot retired, out of the
 * index and the policy, until the stripe is back to zero: then the
 * buffer is freed and the slot is free again.  An insert that would have
 * reused the buffer takes a new one.
 */
struct sc_ccache_pins {
	uint32_t n;
	uint32_t slot[SC_CCACHE_PINS];
	const void *buf[SC_CCACHE_PINS];
};

struct sc_ccache {
	uint32_t block_size;
	uint32_t capacity;
	uint32_t limit;		/* blocks held before an insert evicts */
	struct sc_hash *hash;	/* per slot */
	uint32_t *share;	/* per slot */
	void **block;		/* per slot: the block's buffer, NULL if free */
	struct sc_itab tab;	/* content hash -> slot */
	uint32_t free_head;	/* free slots, linked through tab.next */
	struct sc_policy policy;
	struct sc_ccache_stats st;
	sc_atomic_t *pins;		/* SC_CCACHE_PIN_STRIPES counters */
	uint32_t retired_head;		/* retired slots, linked by tab.next */
	sc_atomic_t retired;		/* how many */
	void (*on_evict)(void *ctx, const struct sc_hash *h);
	void *ctx;
	struct sc_block_mem *mem;
	/*
	 * An allocation that may wait for memory reclaim is under way, by
	 * the caller holding the cache's lock: a shrink that finds that
	 * lock held must not wait for it (sc_hostcache_shrink).
	 */
	bool allocating;
};

struct sc_ccache *sc_ccache_create(const struct sc_ccache_config *cfg);
void sc_ccache_destroy(struct sc_ccache *cc);

/* The slot holding content h, or SC_NIL; no recency change, no stats. */
uint32_t sc_ccache_find(const struct sc_ccache *cc, const struct sc_hash *h);

/*
 * Read access to content h: its block, or NULL.  Counts a hit or a miss
 * and tells the policy.  The pointer is valid until the next insert,
 * remove or shrink.
 */
const void *sc_ccache_lookup(struct sc_ccache *cc, const struct sc_hash *h);

/*
 * sc_ccache_lookup, and the block found is pinned in p (which has room)
 * until sc_ccache_unpin: the pointer stays valid until then.  hint, if
 * not NULL, is a slot to try first (any value), set to where h was
 * found (SC_NIL: nowhere).
 */
const void *sc_ccache_lookup_pin(struct sc_ccache *cc, const struct sc_hash *h,
				 struct sc_ccache_pins *p, uint32_t *hint);
/*
 * Unpin every block of p.  Needs no lock; true if blocks retired while
 * pinned wait for sc_ccache_reap (under the caller's lock) to free them.
 */
bool sc_ccache_unpin(struct sc_ccache *cc, struct sc_ccache_pins *p);
/* Free the retired slots whose pins are gone (the caller serializes). */
void sc_ccache_reap(struct sc_ccache *cc);

/*
 * Place content h (block_size bytes at data) with sharing count share,
 * evicting a block if the cache is at its limit.  If h is cached already
 * the bytes are compared: equal is a hit (share updated), different is a
 * hash collision: logged, counted, refused with -SC_EEXIST.  -SC_ENOMEM
 * if the cache is empty and no buffer can be allocated.
 */
int sc_ccache_insert(struct sc_ccache *cc, const struct sc_hash *h,
		     const void *data, uint32_t share);

/*
 * Make room for content h, not cached yet, and return its buffer for the
 * caller to fill with the block before anyone reads it (e.g. straight from
 * the network, saving a copy).  The caller must have checked that the
 * bytes it will write hash to h.  NULL if h is cached already, or if the
 * cache is empty and no buffer can be allocated.
 */
void *sc_ccache_reserve(struct sc_ccache *cc, const struct sc_hash *h,
			uint32_t share);

/* Set the sharing count of h if cached; no recency change. */
void sc_ccache_set_share(struct sc_ccache *cc, const struct sc_hash *h,
			 uint32_t share);

/* Drop h; false if it was not cached.  on_evict is not called. */
bool sc_ccache_remove(struct sc_ccache *cc, const struct sc_hash *h);

/*
 * Memory is short: evict up to n blocks through the policy (each told to
 * on_evict), free their buffers and lower the limit to the blocks left.
 * Returns the blocks given back.
 */
uint32_t sc_ccache_shrink(struct sc_ccache *cc, uint32_t n);

/*
 * Bring in what a hinted lookup reads of slot (any value: out of range is
 * nothing); no lock needed, nothing read.
 */
static inline void sc_ccache_prefetch_slot(const struct sc_ccache *cc,
					   uint32_t slot)
{
	if (slot < cc->capacity) {
		sc_prefetch(&cc->hash[slot]);
		sc_prefetch(&cc->block[slot]);
	}
}

static inline const void *sc_ccache_slot_data(const struct sc_ccache *cc,
					      uint32_t slot)
{
	return cc->block[slot];
}

void sc_ccache_get_stats(const struct sc_ccache *cc,
			 struct sc_ccache_stats *out);

#endif /* SEACACHE_CCACHE_H */
