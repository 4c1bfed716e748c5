/* SPDX-License-Identifier: LGPL-3.0-or-later */
/*
 * The cache tracker (PROTOCOL.md §5.2): which host holds which content.
 *
 * One table of (host, content) entries in a fixed arena, chained in
 * buckets chosen by the content hash alone, so the entries of one content
 * share a chain: "does host X hold H" and "who else holds H" (delegation)
 * both walk one short chain.  The chains are the core's index table
 * (seacache/itab.h).  An entry is 36 bytes, its chain link 4 and a bucket
 * 4; with as many buckets as entries that is 44 bytes per (host, content),
 * plus a fixed 640 KiB of per-host state.
 *
 * Hosts choose what they write, so they choose content hashes: a bucket
 * is the SipHash-2-4 of the hash under a key drawn at creation, never
 * the hash's own bytes, so that no host can grind contents into one
 * chain.
 *
 * Memory is fixed at creation, and no host takes more than its share:
 * a host at its quota forgets one of its own entries for each new one,
 * and when the arena is full the tracker forgets an entry chosen by CLOCK
 * (a reference bit set by every use).  Forgetting only costs bandwidth
 * (the server sends data the host already has), never correctness.
 * Hashes are compared in full, so a tracker answer is exactly what the
 * host was recorded to hold: proof of possession for hash-only writes
 * relies on that.
 *
 * Dropping a host takes constant time: its entries die with its
 * generation and are reclaimed as the hands pass them.
 *
 * Hosts are small slot numbers (1..SC_TRACKER_MAX_HOSTS) that the service
 * maps its registrations to.  Not thread-safe: the service serializes
 * calls.
 */
#ifndef CSI_TRACKER_H
#define CSI_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <seacache/hash.h>

#define SC_TRACKER_MAX_HOSTS 65535u
#define SC_TRACKER_MIN_ENTRIES 64u

struct sc_tracker;

struct sc_tracker_stats {
	uint64_t entries;	/* (host, content) pairs held now */
	uint64_t capacity;
	uint64_t host_quota;	/* pairs one host may hold */
	uint64_t noted;		/* sc_tracker_note_held that added an entry */
	uint64_t evicted;	/* eviction notices that removed one */
	uint64_t forgotten;	/* entries dropped because the arena was full */
	uint64_t over_quota;	/* entries a host dropped for a new one */
	uint64_t bytes;		/* memory of the arena and buckets */
};

/*
 * A tracker of at most max_entries pairs, of which one host holds at
 * most host_percent percent (1..100; a quota of at least
 * SC_TRACKER_MIN_ENTRIES).  NULL when out of memory or when libsodium
 * cannot start.
 */
struct sc_tracker *sc_tracker_new(uint32_t max_entries,
				  unsigned int host_percent);
void sc_tracker_free(struct sc_tracker *t);

/* host now holds h (data sent, written or delegated to it); true if the
 * pair is new. */
bool sc_tracker_note_held(struct sc_tracker *t, uint16_t host,
			  const struct sc_hash *h);
/* host reported it no longer holds h; unknown pairs are ignored (false). */
bool sc_tracker_note_evicted(struct sc_tracker *t, uint16_t host,
			     const struct sc_hash *h);
/* The contents host holds now. */
uint32_t sc_tracker_host_entries(const struct sc_tracker *t, uint16_t host);
bool sc_tracker_holds(struct sc_tracker *t, uint16_t host,
		      const struct sc_hash *h);
/* Up to max hosts other than except that hold h; how many. */
unsigned int sc_tracker_holders(struct sc_tracker *t, const struct sc_hash *h,
				uint16_t except, uint16_t *out,
				unsigned int max);
/* Forgets everything host holds (lease lapsed, registration ended). */
void sc_tracker_drop_host(struct sc_tracker *t, uint16_t host);
void sc_tracker_get_stats(const struct sc_tracker *t,
			  struct sc_tracker_stats *s);

#endif /* CSI_TRACKER_H */
