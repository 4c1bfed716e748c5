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

struct sc_lru {
	uint32_t *prev;
	uint32_t *next;
	uint32_t head;
	uint32_t tail;
	uint32_t count;
	uint32_t capacity;
};

int sc_lru_init(struct sc_lru *l, uint32_t capacity);
void sc_lru_destroy(struct sc_lru *l);

static inline size_t sc_lru_bytes(const struct sc_lru *l)
{
	return (size_t)l->capacity * 2 * sizeof(uint32_t);
}

/* Make slot i (not on the list) the most recently used. */
static inline void sc_lru_push_head(struct sc_lru *l, uint32_t i)
{
	l->prev[i] = SC_NIL;
	l->next[i] = l->head;
	if (l->head != SC_NIL)
		l->prev[l->head] = i;
	else
		l->tail = i;
	l->head = i;
	l->count++;
}

static inline void sc_lru_unlink(struct sc_lru *l, uint32_t i)
{
	uint32_t p = l->prev[i], n = l->next[i];

	if (p != SC_NIL)
		l->next[p] = n;
	else
		l->head = n;
	if (n != SC_NIL)
		l->prev[n] = p;
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
	return l->prev[i];
}

#endif /* SEACACHE_LRU_H */
