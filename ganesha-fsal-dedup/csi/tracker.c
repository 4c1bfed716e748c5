// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The cache tracker: (host, content) entries in an arena, indexed by the
 * core's index table (seacache/itab.h) under a keyed hash of the content,
 * forgotten by CLOCK when the arena is full and by a per-host CLOCK when
 * a host is at its quota.
 *
 * An entry whose host is 0 is free: it is on the free list, kept through
 * the index table's links.  An entry whose generation is not its host's
 * is dead (the host was dropped): it is still linked, answers nothing,
 * and is released by the first hand that passes it or lookup that finds
 * it.  A host's
 * generation has 15 bits; before one wraps, the whole arena is swept of
 * that host's dead entries, so no entry of a dropped host ever comes back
 * (once in 32768 drops of one slot).
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <seacache/itab.h>

#include "tracker.h"

#define GEN_MASK 0x7fffu

struct entry {
	struct sc_hash h;
	uint16_t host;		/* 0: free */
	uint16_t gen_ref;	/* host's generation << 1 | CLOCK reference */
};

struct sc_tracker {
	struct entry *e;
	struct sc_itab tab;	/* key: key_of() the content */
	uint8_t key[crypto_shorthash_KEYBYTES];
	uint32_t free_head;	/* SC_NIL: the arena is full */
	uint32_t hand;		/* CLOCK position, an arena index */
	uint32_t quota;		/* entries one host may hold */
	/* per host (index: host) */
	uint32_t *held;		/* its live entries */
	uint32_t *host_hand;	/* where its quota's CLOCK goes on */
	uint16_t *gen;		/* its generation */
	struct sc_tracker_stats st;
};

_Static_assert(sizeof(struct entry) == 36, "a tracker entry is 36 bytes");

/*
 * SipHash-2-4 (libsodium's crypto_shorthash) of the hash under the
 * tracker's key.  libsodium rather than OpenSSL's EVP_MAC: through EVP a
 * 32-byte SipHash cost 300 ns, which took 40% off the service's
 * hash-only READs.
 */
static uint64_t key_of(const struct sc_tracker *t, const struct sc_hash *h)
{
	uint8_t out[crypto_shorthash_BYTES];
	uint64_t k;

	crypto_shorthash(out, h->b, sizeof(h->b), t->key);
	memcpy(&k, out, sizeof(k));
	return k;
}

static bool entry_live(const struct sc_tracker *t, const struct entry *e)
{
	return e->host && (e->gen_ref >> 1) == t->gen[e->host];
}

struct sc_tracker *sc_tracker_new(uint32_t max_entries,
				  unsigned int host_percent)
{
	struct sc_tracker *t = calloc(1, sizeof(*t));
	uint32_t nb = SC_TRACKER_MIN_ENTRIES;
	const size_t nhosts = SC_TRACKER_MAX_HOSTS + 1;

	if (max_entries < SC_TRACKER_MIN_ENTRIES)
		max_entries = SC_TRACKER_MIN_ENTRIES;
	if (host_percent < 1 || host_percent > 100)
		host_percent = 100;
	while (nb < max_entries && nb < (1u << 31))
		nb <<= 1;
	if (!t)
		return NULL;
	t->e = calloc(max_entries, sizeof(*t->e));
	t->held = calloc(nhosts, sizeof(*t->held));
	t->host_hand = calloc(nhosts, sizeof(*t->host_hand));
	t->gen = calloc(nhosts, sizeof(*t->gen));
	if (!t->e || !t->held || !t->host_hand || !t->gen ||
	    sodium_init() < 0 ||
	    sc_itab_init_buckets(&t->tab, max_entries, nb)) {
		sc_tracker_free(t);
		return NULL;
	}
	crypto_shorthash_keygen(t->key);
	t->free_head = sc_itab_free_all(&t->tab);
	t->quota = (uint32_t)((uint64_t)max_entries * host_percent / 100);
	if (t->quota < SC_TRACKER_MIN_ENTRIES)
		t->quota = SC_TRACKER_MIN_ENTRIES;
	t->st.capacity = max_entries;
	t->st.host_quota = t->quota;
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
	sodium_memzero(t->key, sizeof(t->key));
	free(t->held);
	free(t->host_hand);
	free(t->gen);
	free(t);
}

/* Unlinks entry i (key: its content's) and puts it on the free list. */
static void entry_release(struct sc_tracker *t, uint32_t i, uint64_t key)
{
	struct entry *e = &t->e[i];

	sc_itab_del(&t->tab, key, i);
	if (entry_live(t, e)) {
		t->held[e->host]--;
		t->st.entries--;
	}
	e->host = 0;
	sc_itab_free_push(&t->tab, &t->free_head, i);
}

/*
 * The live entry (host, h) in key's chain, or SC_NIL.  New entries go to
 * a chain's head, so a live (host, h) comes before a dead one; a dead one
 * found is released.
 */
static uint32_t find(struct sc_tracker *t, uint16_t host,
		     const struct sc_hash *h, uint64_t key)
{
	uint32_t i;

	for (i = sc_itab_first(&t->tab, key); i != SC_NIL;
	     i = sc_itab_next(&t->tab, i)) {
		struct entry *e = &t->e[i];

		if (e->host != host || !sc_hash_eq(&e->h, h))
			continue;
		if (entry_live(t, e))
			return i;
		entry_release(t, i, key);
		break;
	}
	return SC_NIL;
}

/*
 * One CLOCK step at arena index i: releases a dead entry, or a live one
 * (of host, when host is not 0) whose reference bit is clear, clearing
 * it otherwise.  True if an entry was released.
 */
static bool clock_step(struct sc_tracker *t, uint32_t i, uint16_t host,
		       uint64_t *released_of)
{
	struct entry *e = &t->e[i];

	if (e->host == 0)
		return false;
	if (entry_live(t, e)) {
		if (host && e->host != host)
			return false;
		if (e->gen_ref & 1) {
			e->gen_ref &= (uint16_t)~1u;
			return false;
		}
		(*released_of)++;
	}
	entry_release(t, i, key_of(t, &e->h));
	return true;
}

static uint32_t next_index(const struct sc_tracker *t, uint32_t i)
{
	return i + 1 == t->tab.capacity ? 0 : i + 1;
}

/* The arena is full: free one entry, dead or chosen by CLOCK. */
static void forget_one(struct sc_tracker *t)
{
	for (;;) {
		uint32_t i = t->hand;

		t->hand = next_index(t, i);
		if (clock_step(t, i, 0, &t->st.forgotten))
			return;
	}
}

/*
 * host is at its quota: free one of its entries by its own CLOCK (dead
 * entries of any host go too).  It holds quota entries, at least 1/100
 * of the arena, so its hand finds one within a few hundred steps on
 * average, and within two sweeps at worst.
 */
static void forget_own(struct sc_tracker *t, uint16_t host)
{
	uint64_t own = t->st.over_quota;

	while (t->st.over_quota == own) {
		uint32_t i = t->host_hand[host];

		t->host_hand[host] = next_index(t, i);
		clock_step(t, i, host, &t->st.over_quota);
	}
}

bool sc_tracker_note_held(struct sc_tracker *t, uint16_t host,
			  const struct sc_hash *h)
{
	uint64_t key;
	struct entry *e;
	uint32_t i;

	if (host == 0)
		return false;
	key = key_of(t, h);
	i = find(t, host, h, key);
	if (i != SC_NIL) {
		t->e[i].gen_ref |= 1;
		return false;
	}
	/* (a quota of the whole arena is the arena's own limit) */
	if (t->held[host] >= t->quota && t->quota < t->tab.capacity)
		forget_own(t, host);
	if (t->free_head == SC_NIL)
		forget_one(t);
	i = sc_itab_free_pop(&t->tab, &t->free_head);
	e = &t->e[i];
	e->h = *h;
	e->host = host;
	e->gen_ref = (uint16_t)(t->gen[host] << 1 | 1);
	sc_itab_add(&t->tab, key, i);
	t->held[host]++;
	t->st.entries++;
	t->st.noted++;
	return true;
}

bool sc_tracker_note_evicted(struct sc_tracker *t, uint16_t host,
			     const struct sc_hash *h)
{
	uint64_t key;
	uint32_t i;

	if (host == 0)
		return false;
	key = key_of(t, h);
	i = find(t, host, h, key);
	if (i == SC_NIL)
		return false;
	entry_release(t, i, key);
	t->st.evicted++;
	return true;
}

uint32_t sc_tracker_host_entries(const struct sc_tracker *t, uint16_t host)
{
	return t->held[host];
}

bool sc_tracker_holds(struct sc_tracker *t, uint16_t host,
		      const struct sc_hash *h)
{
	uint32_t i = host ? find(t, host, h, key_of(t, h)) : SC_NIL;

	if (i == SC_NIL)
		return false;
	t->e[i].gen_ref |= 1;
	return true;
}

unsigned int sc_tracker_holders(struct sc_tracker *t, const struct sc_hash *h,
				uint16_t except, uint16_t *out,
				unsigned int max)
{
	unsigned int n = 0;
	uint32_t i;

	for (i = sc_itab_first(&t->tab, key_of(t, h));
	     i != SC_NIL && n < max; i = sc_itab_next(&t->tab, i)) {
		struct entry *e = &t->e[i];

		if (entry_live(t, e) && e->host != except &&
		    sc_hash_eq(&e->h, h))
			out[n++] = e->host;
	}
	return n;
}

void sc_tracker_drop_host(struct sc_tracker *t, uint16_t host)
{
	uint16_t next_gen;

	if (host == 0)
		return;
	next_gen = (t->gen[host] + 1) & GEN_MASK;
	if (next_gen == 0) {
		/* wrap: no entry of an old generation may remain */
		for (uint32_t i = 0; i < t->tab.capacity; i++)
			if (t->e[i].host == host)
				entry_release(t, i, key_of(t, &t->e[i].h));
	}
	t->st.entries -= t->held[host];
	t->held[host] = 0;
	t->gen[host] = next_gen;
}

void sc_tracker_get_stats(const struct sc_tracker *t,
			  struct sc_tracker_stats *s)
{
	*s = t->st;
}
