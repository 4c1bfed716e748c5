// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The cache tracker: (host, content) entries in an arena, indexed by the
 * core's index table (seacache/itab.h) under the content hash, forgotten
 * by CLOCK when the arena is full.
 *
 * An entry whose host is 0 is free: it is on the free list, kept through
 * the index table's links.
 */
#include <stdlib.h>
#include <string.h>

#include <seacache/itab.h>

#include "tracker.h"

struct entry {
	struct sc_hash h;
	uint16_t host;		/* 0: free */
	uint8_t ref;		/* CLOCK: used since the hand last passed */
	uint8_t pad;
};

struct sc_tracker {
	struct entry *e;
	struct sc_itab tab;	/* key: sc_hash_key64 of the content */
	uint32_t free_head;	/* SC_NIL: the arena is full */
	uint32_t hand;		/* CLOCK position, an arena index */
	uint32_t *per_host;	/* entries of each host (index: host) */
	struct sc_tracker_stats st;
};

_Static_assert(sizeof(struct entry) == 36, "a tracker entry is 36 bytes");

struct sc_tracker *sc_tracker_new(uint32_t max_entries)
{
	struct sc_tracker *t = calloc(1, sizeof(*t));
	uint32_t nb = SC_TRACKER_MIN_ENTRIES;

	if (max_entries < SC_TRACKER_MIN_ENTRIES)
		max_entries = SC_TRACKER_MIN_ENTRIES;
	while (nb < max_entries && nb < (1u << 31))
		nb <<= 1;
	if (!t)
		return NULL;
	t->e = calloc(max_entries, sizeof(*t->e));
	t->per_host = calloc(SC_TRACKER_MAX_HOSTS + 1, sizeof(*t->per_host));
	if (!t->e || !t->per_host ||
	    sc_itab_init_buckets(&t->tab, max_entries, nb)) {
		sc_tracker_free(t);
		return NULL;
	}
	t->free_head = sc_itab_free_all(&t->tab);
	t->st.capacity = max_entries;
	t->st.bytes = sizeof(*t) + (uint64_t)max_entries * sizeof(*t->e) +
		      sc_itab_bytes(&t->tab);
	return t;
}

void sc_tracker_free(struct sc_tracker *t)
{
	if (!t)
		return;
	free(t->e);
	sc_itab_destroy(&t->tab);
	free(t->per_host);
	free(t);
}

/* The entry (host, h), or SC_NIL. */
static uint32_t find(const struct sc_tracker *t, uint16_t host,
		     const struct sc_hash *h)
{
	uint32_t i;

	for (i = sc_itab_first(&t->tab, sc_hash_key64(h)); i != SC_NIL;
	     i = sc_itab_next(&t->tab, i))
		if (t->e[i].host == host && sc_hash_eq(&t->e[i].h, h))
			return i;
	return SC_NIL;
}

/* Unlinks entry i and puts it on the free list. */
static void entry_release(struct sc_tracker *t, uint32_t i)
{
	struct entry *e = &t->e[i];

	sc_itab_del(&t->tab, sc_hash_key64(&e->h), i);
	t->per_host[e->host]--;
	e->host = 0;
	sc_itab_free_push(&t->tab, &t->free_head, i);
	t->st.entries--;
}

/* CLOCK: the first entry not used since the hand last passed it. */
static void forget_one(struct sc_tracker *t)
{
	for (;;) {
		uint32_t i = t->hand;
		struct entry *e = &t->e[i];

		t->hand = i + 1 == t->tab.capacity ? 0 : i + 1;
		if (e->host == 0)
			continue;
		if (e->ref) {
			e->ref = 0;
			continue;
		}
		entry_release(t, i);
		t->st.forgotten++;
		return;
	}
}

bool sc_tracker_note_held(struct sc_tracker *t, uint16_t host,
			  const struct sc_hash *h)
{
	struct entry *e;
	uint32_t i;

	if (host == 0)
		return false;
	i = find(t, host, h);
	if (i != SC_NIL) {
		t->e[i].ref = 1;
		return false;
	}
	if (t->free_head == SC_NIL)
		forget_one(t);
	i = sc_itab_free_pop(&t->tab, &t->free_head);
	e = &t->e[i];
	e->h = *h;
	e->host = host;
	e->ref = 1;
	sc_itab_add(&t->tab, sc_hash_key64(h), i);
	t->per_host[host]++;
	t->st.entries++;
	t->st.noted++;
	return true;
}

bool sc_tracker_note_evicted(struct sc_tracker *t, uint16_t host,
			     const struct sc_hash *h)
{
	uint32_t i = find(t, host, h);

	if (i == SC_NIL)
		return false;
	entry_release(t, i);
	t->st.evicted++;
	return true;
}

uint32_t sc_tracker_host_entries(const struct sc_tracker *t, uint16_t host)
{
	return t->per_host[host];
}

bool sc_tracker_holds(struct sc_tracker *t, uint16_t host,
		      const struct sc_hash *h)
{
	uint32_t i = host ? find(t, host, h) : SC_NIL;

	if (i == SC_NIL)
		return false;
	t->e[i].ref = 1;
	return true;
}

unsigned int sc_tracker_holders(struct sc_tracker *t, const struct sc_hash *h,
				uint16_t except, uint16_t *out,
				unsigned int max)
{
	unsigned int n = 0;
	uint32_t i;

	for (i = sc_itab_first(&t->tab, sc_hash_key64(h));
	     i != SC_NIL && n < max; i = sc_itab_next(&t->tab, i)) {
		struct entry *e = &t->e[i];

		if (e->host != except && sc_hash_eq(&e->h, h))
			out[n++] = e->host;
	}
	return n;
}

void sc_tracker_drop_host(struct sc_tracker *t, uint16_t host)
{
	if (host == 0)
		return;
	for (uint32_t i = 0; i < t->tab.capacity; i++)
		if (t->e[i].host == host)
			entry_release(t, i);
}

void sc_tracker_get_stats(const struct sc_tracker *t,
			  struct sc_tracker_stats *s)
{
	*s = t->st;
}
