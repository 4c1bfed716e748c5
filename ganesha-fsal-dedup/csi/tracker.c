// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The cache tracker: (host, content) entries in an arena, chained by
 * content-hash bucket, forgotten by CLOCK when the arena is full.
 *
 * Entries are named by arena index + 1, so 0 ends a chain and an entry
 * whose host is 0 is free (on the free list, linked through next).
 */
#include <stdlib.h>
#include <string.h>

#include "tracker.h"

struct entry {
	struct sc_hash h;
	uint32_t next;		/* bucket chain, or the free list */
	uint16_t host;		/* 0: free */
	uint8_t ref;		/* CLOCK: used since the hand last passed */
	uint8_t pad;
};

struct sc_tracker {
	struct entry *e;
	uint32_t *bucket;
	uint32_t cap;
	uint32_t mask;		/* buckets - 1 */
	uint32_t free_head;
	uint32_t hand;		/* CLOCK position, an arena index */
	uint32_t *per_host;	/* entries of each host (index: host) */
	struct sc_tracker_stats st;
};

_Static_assert(sizeof(struct entry) == 40, "a tracker entry is 40 bytes");

static uint32_t *bucket_of(struct sc_tracker *t, const struct sc_hash *h)
{
	return &t->bucket[sc_hash_key64(h) & t->mask];
}

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
	t->bucket = calloc(nb, sizeof(*t->bucket));
	t->per_host = calloc(SC_TRACKER_MAX_HOSTS + 1, sizeof(*t->per_host));
	if (!t->e || !t->bucket || !t->per_host) {
		sc_tracker_free(t);
		return NULL;
	}
	t->cap = max_entries;
	t->mask = nb - 1;
	for (uint32_t i = 0; i < max_entries; i++)
		t->e[i].next = i + 1 < max_entries ? i + 2 : 0;
	t->free_head = 1;
	t->st.capacity = max_entries;
	t->st.bytes = sizeof(*t) + (uint64_t)max_entries * sizeof(*t->e) +
		      (uint64_t)nb * sizeof(*t->bucket);
	return t;
}

void sc_tracker_free(struct sc_tracker *t)
{
	if (!t)
		return;
	free(t->e);
	free(t->bucket);
	free(t->per_host);
	free(t);
}

/* The link that points at entry (host, h): &bucket or &prev->next. */
static uint32_t *link_of(struct sc_tracker *t, uint16_t host,
			 const struct sc_hash *h)
{
	uint32_t *link = bucket_of(t, h);

	while (*link) {
		struct entry *e = &t->e[*link - 1];

		if (e->host == host && sc_hash_eq(&e->h, h))
			return link;
		link = &e->next;
	}
	return NULL;
}

/* Unlinks the entry *link names and puts it on the free list. */
static void entry_release(struct sc_tracker *t, uint32_t *link)
{
	uint32_t id = *link;
	struct entry *e = &t->e[id - 1];

	*link = e->next;
	t->per_host[e->host]--;
	e->host = 0;
	e->next = t->free_head;
	t->free_head = id;
	t->st.entries--;
}

/* CLOCK: the first entry not used since the hand last passed it. */
static void forget_one(struct sc_tracker *t)
{
	for (;;) {
		struct entry *e = &t->e[t->hand];

		t->hand = t->hand + 1 == t->cap ? 0 : t->hand + 1;
		if (e->host == 0)
			continue;
		if (e->ref) {
			e->ref = 0;
			continue;
		}
		entry_release(t, link_of(t, e->host, &e->h));
		t->st.forgotten++;
		return;
	}
}

bool sc_tracker_note_held(struct sc_tracker *t, uint16_t host,
			  const struct sc_hash *h)
{
	uint32_t *link = link_of(t, host, h), *b;
	struct entry *e;
	uint32_t id;

	if (host == 0)
		return false;
	if (link) {
		t->e[*link - 1].ref = 1;
		return false;
	}
	if (!t->free_head)
		forget_one(t);
	id = t->free_head;
	e = &t->e[id - 1];
	t->free_head = e->next;
	b = bucket_of(t, h);
	e->h = *h;
	e->host = host;
	e->ref = 1;
	e->next = *b;
	*b = id;
	t->per_host[host]++;
	t->st.entries++;
	t->st.noted++;
	return true;
}

bool sc_tracker_note_evicted(struct sc_tracker *t, uint16_t host,
			     const struct sc_hash *h)
{
	uint32_t *link = link_of(t, host, h);

	if (!link)
		return false;
	entry_release(t, link);
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
	uint32_t *link = host ? link_of(t, host, h) : NULL;

	if (!link)
		return false;
	t->e[*link - 1].ref = 1;
	return true;
}

unsigned int sc_tracker_holders(struct sc_tracker *t, const struct sc_hash *h,
				uint16_t except, uint16_t *out,
				unsigned int max)
{
	unsigned int n = 0;

	for (uint32_t id = *bucket_of(t, h); id && n < max;
	     id = t->e[id - 1].next) {
		struct entry *e = &t->e[id - 1];

		if (e->host != except && sc_hash_eq(&e->h, h))
			out[n++] = e->host;
	}
	return n;
}

void sc_tracker_drop_host(struct sc_tracker *t, uint16_t host)
{
	if (host == 0)
		return;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->e[i].host == host)
			entry_release(t, link_of(t, host, &t->e[i].h));
}

void sc_tracker_get_stats(const struct sc_tracker *t,
			  struct sc_tracker_stats *s)
{
	*s = t->st;
}
