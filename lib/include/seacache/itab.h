/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A chained hash table over slot indices: the index of the core's caches.
 *
 * It stores no keys: callers walk a bucket's chain and compare their own
 * keys.  Bucket heads and chain links are 32-bit indices, 4 bytes per
 * bucket and per slot.  (uthash was considered: its handle is 56 bytes per
 * item, which alone would break the 64-byte per-block metadata budget.)
 */
#ifndef SEACACHE_ITAB_H
#define SEACACHE_ITAB_H

#include "compat.h"

struct sc_itab {
	uint32_t *bucket;
	uint32_t *next;
	uint32_t mask;
	uint32_t capacity;
};

/*
 * Table for slots 0..capacity-1; the bucket count is the largest power of
 * two not above capacity, so chains average between one and two.
 */
int sc_itab_init(struct sc_itab *t, uint32_t capacity);
/* The same with the bucket count given (rounded down to a power of two). */
int sc_itab_init_buckets(struct sc_itab *t, uint32_t capacity,
			 uint32_t buckets);
void sc_itab_destroy(struct sc_itab *t);
/* Unlink slot i, which is in the chain of key; false if it is not. */
bool sc_itab_del(struct sc_itab *t, uint64_t key, uint32_t i);

static inline size_t sc_itab_bytes(const struct sc_itab *t)
{
	return ((size_t)t->mask + 1 + t->capacity) * sizeof(uint32_t);
}

static inline uint32_t sc_itab_first(const struct sc_itab *t, uint64_t key)
{
	return t->bucket[key & t->mask];
}

static inline uint32_t sc_itab_next(const struct sc_itab *t, uint32_t i)
{
	return t->next[i];
}

static inline void sc_itab_add(struct sc_itab *t, uint64_t key, uint32_t i)
{
	uint32_t b = (uint32_t)(key & t->mask);

	t->next[i] = t->bucket[b];
	t->bucket[b] = i;
}

#endif /* SEACACHE_ITAB_H */
