/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The system model of seacache-sim (sim_model.h): what its files share.
 * README.md, section "The model", says what each variant does per block,
 * what it costs and when it happens.
 *
 * The files, each calling only the ones below it:
 *   sim_model.c    the functions of sim_model.h: a simulator made, preloaded,
 *                  fed and freed, its results and memory counted
 *   sim_time.c     system mode's time: requests held per VM, issued in
 *                  time order
 *   sim_variant.c  system mode: a request's blocks read and written as
 *                  each variant does, and what that costs
 *   sim_host.c     hosts: their caches, the VMs' caches, fetches in flight
 *   sim_server.c   the storage server: its cache and disk, SS-Push's pushes
 *   sim_cache.c    cache mode (the single cache), and its fast path
 *   sim_tables.c   memory, the tables per address and per content, the
 *                  server's CSI-Map kept in them
 *
 * Identities: addresses and contents are the reader's dense ids (a trace
 * without fingerprints gets content ids here: an address's own content
 * until it is written, a new one per write).  Keys given to the lib/
 * caches: an address a as sc_mix64(a), a content c as (c + 1) times an
 * odd constant (a bijection whose low bits are a permutation, as the
 * caches' indexes want, and which eviction callbacks undo), an (address,
 * content) pair as sc_mix64(c << 32 | a) for the caches keyed by both.
 *
 * Tables per address, only in the modes that read them: content id 4
 * (both modes); owner host 2, hosts that know its content 1 to 8 (a bit
 * per host: 1 byte up to 8 hosts; system); CSI-Map reverse links 8
 * (SS-Push only).  Per content: sharing count 4 (both), hosts holding it
 * 1 to 8 (system), reverse-list head 4 (SS-Push).
 * Cache mode under a plain slot policy (lru, elru, arc) on a trace
 * without fingerprints skips the lib/ cache's own index: the slot of an
 * address is an array entry (the fast path, "cache_fast" below).
 */
#ifndef SEACACHE_SIM_MODEL_INT_H
#define SEACACHE_SIM_MODEL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "sim_model.h"

#include "seacache/policy.h"

#define SIM_MAX_HOSTS 64u
#define NIL UINT32_MAX
#define NOHOST UINT16_MAX

/* A content fetch of a host still in flight: key + 1 -> ready time. */
struct flight {
	uint64_t *key;
	double *ready;
	uint32_t cap, n;
};

/* A set of hosts per id: a bit per host, in w bytes (1, 2, 4 or 8). */
struct hset {
	uint8_t *m;
	unsigned int w;		/* 0: not sized yet */
};

struct host {
	struct sim *s;
	uint32_t idx;
	bool on;
	struct sc_dcache cache;
	struct flight fl;
};

/* A request read but not yet issued (system mode), in its VM's queue. */
struct pend {
	double ts_ms;
	uint64_t ids;		/* where its ids start in the id queue */
	uint32_t next_gap;	/* the VM's next pending request is this many
				 * requests later; 0: none yet */
	uint32_t nblocks;	/* | PEND_WRITE */
};

#define PEND_WRITE (1u << 31)
#define NOPEND UINT64_MAX

struct vmq {
	uint64_t head, tail;	/* pending requests, NOPEND: none */
	double done_ms;		/* completion of its last issued request */
	bool queued;		/* in the heap */
};

/* The cache-mode fast path: a slot policy over an array of slots. */
struct cache_fast {
	struct sc_policy pol;
	uint32_t cap, used;
	uint32_t *slot;		/* per address: its slot, or NIL */
	uint32_t *gen;		/* per address: writes so far (NULL: none yet) */
	uint64_t *key;		/* per slot: the (gen, address) key */
	uint32_t *owner;	/* per slot: the address, NIL once rewritten */
	uint32_t *share;	/* per slot: 1 (no fingerprints, no sharing) */
	uint32_t free_head;	/* free slots, chained through owner[] */
};

struct sim {
	struct sim_params p;
	/* The variant's features; csi false: Baseline, no hashes at all. */
	bool csi, tracker, push, coop, dedup_write;
	bool system;
	/* Addresses. */
	uint32_t acap;
	uint32_t *acont;
	uint16_t *ahost;	/* system: owner host, NOHOST: never seen */
	struct hset aknown;	/* system: hosts that know its content */
	uint32_t *anext, *aprev;	/* SS-Push */
	uint8_t *aseen;		/* a bit per address fed */
	uint64_t naddr;
	/* Contents. */
	uint32_t ccap;
	uint32_t *cshare;
	struct hset cheld;	/* system: hosts holding it */
	uint32_t *chead;	/* SS-Push */
	uint32_t own_contents;	/* ids given here (no fingerprints) */
	/* Caches. */
	struct host hosts[SIM_MAX_HOSTS];
	struct sc_dcache *vmc;	/* per VM, NULL: none */
	uint32_t nvmc;
	bool host_peer;		/* host policy wants the server's contents */
	struct sc_dcache server;
	struct sc_dcache one;	/* cache mode */
	bool addr_cache;	/* cache mode: key by address and content */
	struct cache_fast *fast;
	uint32_t max_vm, max_host;
	/* Time (system mode): pending requests per VM, a heap of VMs. */
	struct vmq *vq;
	uint32_t nvq;
	uint32_t *heap, nheap;
	struct pend *pq;	/* pq[seq - pbase] */
	uint64_t pbase, pend_n, pcap;
	uint32_t *iq;		/* two ids a block: address, content or NIL */
	uint64_t ibase, ids_n, icap;
	uint64_t held;		/* requests read, not yet issued */
	double horizon_ms;	/* latest ts read */
	struct sim_result r;
};

#define CKEY_MUL 0x9e3779b97f4a7c15ull
#define CKEY_INV 0xf1de83e19937733dull	/* CKEY_MUL * CKEY_INV = 1 mod 2^64 */

static inline uint64_t ckey(uint32_t c)
{
	return ((uint64_t)c + 1) * CKEY_MUL;
}

static inline uint32_t ckey_content(uint64_t key)
{
	return (uint32_t)(key * CKEY_INV - 1);
}

static inline uint64_t pair_key(uint32_t a, uint32_t c)
{
	return sc_mix64((uint64_t)c << 32 | a);
}

/* ---- tables ---- */

static inline uint64_t hs_get(const struct hset *h, uint32_t i)
{
	switch (h->w) {
	case 1:
		return h->m[i];
	case 2:
		return ((const uint16_t *)(const void *)h->m)[i];
	case 4:
		return ((const uint32_t *)(const void *)h->m)[i];
	default:
		return ((const uint64_t *)(const void *)h->m)[i];
	}
}

static inline void hs_put(struct hset *h, uint32_t i, uint64_t v)
{
	switch (h->w) {
	case 1:
		h->m[i] = (uint8_t)v;
		break;
	case 2:
		((uint16_t *)(void *)h->m)[i] = (uint16_t)v;
		break;
	case 4:
		((uint32_t *)(void *)h->m)[i] = (uint32_t)v;
		break;
	default:
		((uint64_t *)(void *)h->m)[i] = v;
	}
}

static inline void hs_add(struct hset *h, uint32_t i, uint64_t bits)
{
	hs_put(h, i, hs_get(h, i) | bits);
}

static inline void seen(struct sim *s, uint32_t a)
{
	uint8_t bit = (uint8_t)(1u << (a & 7));

	if (!(s->aseen[a >> 3] & bit)) {
		s->aseen[a >> 3] |= bit;
		s->naddr++;
	}
}

/* ---- caches ---- */

static inline struct sc_dc_res cache_access(struct sc_dcache *c, uint8_t op,
					    uint64_t addr, uint64_t content,
					    uint32_t share)
{
	struct sc_dc_req r = {
		.addr = addr, .content = content, .op = op, .share = share,
	};
	struct sc_dc_res res;

	sc_dcache_access(c, &r, &res);
	return res;
}

/* sim_tables.c */
void oom(void);
void *grow(void *arr, size_t elem, uint64_t oldn, uint64_t newn, int fill);
void hs_grow(struct hset *h, uint32_t old, uint32_t cap);
void addr_room(struct sim *s, uint32_t n);
void content_room(struct sim *s, uint32_t n);
uint32_t own_content(struct sim *s);
void map_set(struct sim *s, uint32_t a, uint32_t c);

/* sim_host.c */
double flight_ready(const struct flight *f, uint64_t key);
void flight_put(struct flight *f, uint64_t key, double ready,
		double now);
struct host *host_get(struct sim *s, uint32_t idx);
struct sc_dcache *vm_cache(struct sim *s, uint32_t vm);
void host_load(struct sim *s, struct host *h, uint32_t a, uint32_t c,
	       uint8_t op);
double wait_ready(struct sim *s, struct host *h, uint64_t key,
		  double now, double floor_ms);

/* sim_server.c */
void server_evicted(void *ctx, uint64_t key);
double server_read(struct sim *s, uint32_t c);
void push(struct sim *s, uint32_t host, uint32_t a, uint32_t c);

/* sim_variant.c */
double run_request(struct sim *s, uint32_t vm, uint8_t op,
		   const uint32_t *ids, uint32_t n, double now);

/* sim_time.c */
void issue_next(struct sim *s);
void system_feed(struct sim *s, const struct sim_req *r);

/* sim_cache.c */
struct cache_fast *fast_new(const char *spec, uint32_t cap,
			    uint32_t naddr);
void fast_free(struct cache_fast *f);
uint64_t cache_key(const struct sim *s, uint32_t a, uint32_t c);
void cache_request(struct sim *s, const struct sim_req *r);
uint64_t fast_bytes(const struct sim *s);

#endif /* SEACACHE_SIM_MODEL_INT_H */
