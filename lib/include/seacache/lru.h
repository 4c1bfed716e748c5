/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A recency list over slot indices 0..capacity-1.
 *
 * The one LRU list of the core: the LRU and ELRU policies and the CSI-Map's
 * own entry LRU all use it.  Links are 32-bit indices kept in two arrays
 * (8 bytes per slot) instead of pointers in each object, which keeps the
 * per-block metadata small.  "next" runs from the most recently used (head)
 * towards the least recently used (tail).
 */
#ifndef SEACACHE_LRU_H
#define SEACACHE_LRU_H

#include "compat.h"

struct sc_lru_link {
	uint32_t prev;
	uint32_t next;
};

struct sc_lru {
	struct sc_lru_link *link;	/* per slot: both links in one line */
	uint32_t head;
	uint32_t tail;
	uint32_t count;
	uint32_t capacity;
};

int sc_lru_init(struct sc_lru *l, uint32_t capacity);
void sc_lru_destroy(struct sc_lru *l);

/*
 * A list over a link array owned by the caller, for slots that are on at
 * most one of several lists at a time (ARC's T1 and T2, one list of
 * references per cached block): the lists share the array, 8 bytes per
 * slot in all.  Never sc_lru_destroy() such a list; free the array.
 */
static inline void sc_lru_init_shared(struct sc_lru *l,
				      struct sc_lru_link *link,
				      uint32_t capacity)
{
	l->link = link;
	l->head = SC_NIL;
	l->tail = SC_NIL;
	l->count = 0;
	l->capacity = capacity;
}

static inline size_t sc_lru_bytes(const struct sc_lru *l)
{
	return (size_t)l->capacity * sizeof(struct sc_lru_link);
}

/* Make slot i (not on the list) the most recently used. */
static inline void sc_lru_push_head(struct sc_lru *l, uint32_t i)
{
	l->link[i].prev = SC_NIL;
	l->link[i].next = l->head;
	if (l->head != SC_NIL)
		l->link[l->head].prev = i;
	else
		l->tail = i;
	l->head = i;
	l->count++;
}

static inline void sc_lru_unlink(struct sc_lru *l, uint32_t i)
{
	uint32_t p = l->link[i].prev, n = l->link[i].next;

	if (p != SC_NIL)
		l->link[p].next = n;
	else
		l->head = n;
	if (n != SC_NIL)
		l->link[n].prev = p;
	else
		l->tail = p;
	l->count--;
}

/* Slot i (on the list) was used now. */
static inline void sc_lru_touch(struct sc_lru *l, uint32_t i)
{
	if (l->head == i)
		return;
	sc_lru_unlink(l, i);
	sc_lru_push_head(l, i);
}

static inline uint32_t sc_lru_tail(const struct sc_lru *l)
{
	return l->tail;
}

/* The slot used just after i (one step towards the head), or SC_NIL. */
static inline uint32_t sc_lru_newer(const struct sc_lru *l, uint32_t i)
{
	return l->link[i].prev;
}

/* The slot used just before i (one step towards the tail), or SC_NIL. */
static inline uint32_t sc_lru_older(const struct sc_lru *l, uint32_t i)
{
	return l->link[i].next;
}

#endif /* SEACACHE_LRU_H */
