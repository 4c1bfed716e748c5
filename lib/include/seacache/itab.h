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

/* Key will be looked up soon: bring its bucket in (a hint). */
static inline void sc_itab_prefetch(const struct sc_itab *t, uint64_t key)
{
	sc_prefetch(&t->bucket[key & t->mask]);
}

static inline void sc_itab_add(struct sc_itab *t, uint64_t key, uint32_t i)
{
	uint32_t b = (uint32_t)(key & t->mask);

	t->next[i] = t->bucket[b];
	t->bucket[b] = i;
}

/* For callers whose key of slot i is keys[i]: the slot of key, or SC_NIL. */
static inline uint32_t sc_itab_find(const struct sc_itab *t,
				    const uint64_t *keys, uint64_t key)
{
	uint32_t i;

	for (i = sc_itab_first(t, key); i != SC_NIL; i = sc_itab_next(t, i))
		if (keys[i] == key)
			return i;
	return SC_NIL;
}

/*
 * Slots not in the table may be kept on a free list through next[], its
 * head held by the caller.  sc_itab_free_all() puts every slot on it,
 * lowest first, and returns the head.
 */
static inline uint32_t sc_itab_free_all(struct sc_itab *t)
{
	uint32_t head = SC_NIL, i;

	for (i = t->capacity; i-- > 0;) {
		t->next[i] = head;
		head = i;
	}
	return head;
}

static inline void sc_itab_free_push(struct sc_itab *t, uint32_t *head,
				     uint32_t i)
{
	t->next[i] = *head;
	*head = i;
}

/* The head of a non-empty free list, taken off it. */
static inline uint32_t sc_itab_free_pop(struct sc_itab *t, uint32_t *head)
{
	uint32_t i = *head;

	*head = t->next[i];
	return i;
}

#endif /* SEACACHE_ITAB_H */
