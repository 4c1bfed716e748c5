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
 * plus a fixed 256 KiB of per-host entry counts.
 *
 * Memory is fixed at creation.  When the arena is full, the tracker
 * forgets an entry chosen by CLOCK (a reference bit set by every use):
 * forgetting only costs bandwidth (the server sends data the host already
 * has), never correctness.  Hashes are compared in full, so a tracker
 * answer is exactly what the host was recorded to hold: proof of
 * possession for hash-only writes relies on that.
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
	uint64_t noted;		/* sc_tracker_note_held that added an entry */
	uint64_t evicted;	/* eviction notices that removed one */
	uint64_t forgotten;	/* entries dropped because the arena was full */
	uint64_t bytes;		/* memory of the arena and buckets */
};

/* A tracker of at most max_entries pairs; NULL when out of memory. */
struct sc_tracker *sc_tracker_new(uint32_t max_entries);
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
