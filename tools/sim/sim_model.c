// SPDX-License-Identifier: BSD-2-Clause
/*
 * The system model of seacache-sim (sim_model.h).  README.md, section
 * "The model", says what each variant does per block, what it costs and
 * when it happens.
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
#include "sim_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void oom(void)
{
	fprintf(stderr, "seacache-sim: out of memory\n");
	exit(3);
}

/* Resize arr from oldn to newn elements; new ones are filled with fill. */
static void *grow(void *arr, size_t elem, uint64_t oldn, uint64_t newn, int fill)
{
	char *p = realloc(arr, elem * (newn ? newn : 1));

	if (!p)
		oom();
	if (newn > oldn)
		memset(p + elem * oldn, fill, elem * (newn - oldn));
	return p;
}

#define CKEY_MUL 0x9e3779b97f4a7c15ull
#define CKEY_INV 0xf1de83e19937733dull	/* CKEY_MUL * CKEY_INV = 1 mod 2^64 */

static uint64_t ckey(uint32_t c)
{
	return ((uint64_t)c + 1) * CKEY_MUL;
}

static uint32_t ckey_content(uint64_t key)
{
	return (uint32_t)(key * CKEY_INV - 1);
}

static uint64_t pair_key(uint32_t a, uint32_t c)
{
	return sc_mix64((uint64_t)c << 32 | a);
}

/* ---- tables ---- */

static uint64_t hs_get(const struct hset *h, uint32_t i)
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

static void hs_put(struct hset *h, uint32_t i, uint64_t v)
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

static void hs_add(struct hset *h, uint32_t i, uint64_t bits)
{
	hs_put(h, i, hs_get(h, i) | bits);
}

static void hs_grow(struct hset *h, uint32_t old, uint32_t cap)
{
	if (h->w)
		h->m = grow(h->m, h->w, old, cap, 0);
}

/* Raise *cap (doubling) to hold ids below n; false: it did already. */
static bool room(uint32_t *cap, uint32_t n)
{
	uint32_t c = *cap ? *cap : 1024;

	if (n <= *cap)
		return false;
	while (c < n)
		c = c * 2 > c ? c * 2 : n;
	*cap = c;
	return true;
}

/* Room for address ids below n, in the tables this mode uses. */
static void addr_room(struct sim *s, uint32_t n)
{
	uint32_t old = s->acap, cap;

	if (!room(&s->acap, n))
		return;
	cap = s->acap;
	s->aseen = grow(s->aseen, 1, (old + 7) / 8, (cap + 7) / 8, 0);
	if (s->fast) {
		s->fast->slot = grow(s->fast->slot, 4, old, cap, 0xff);
		if (s->fast->gen)
			s->fast->gen = grow(s->fast->gen, 4, old, cap, 0);
		return;
	}
	s->acont = grow(s->acont, 4, old, cap, 0xff);
	if (!s->system)
		return;
	s->ahost = grow(s->ahost, 2, old, cap, 0xff);
	hs_grow(&s->aknown, old, cap);
	if (!s->push)
		return;
	s->anext = grow(s->anext, 4, old, cap, 0xff);
	s->aprev = grow(s->aprev, 4, old, cap, 0xff);
}

static void content_room(struct sim *s, uint32_t n)
{
	uint32_t old = s->ccap, cap;

	if (!room(&s->ccap, n))
		return;
	cap = s->ccap;
	s->cshare = grow(s->cshare, 4, old, cap, 0);
	if (!s->system)
		return;
	hs_grow(&s->cheld, old, cap);
	if (s->push)
		s->chead = grow(s->chead, 4, old, cap, 0xff);
}

/* A new content of this simulator's own (traces without fingerprints). */
static uint32_t own_content(struct sim *s)
{
	if (s->own_contents == NIL)
		oom();
	content_room(s, s->own_contents + 1);
	return s->own_contents++;
}

/* The server's CSI-Map: address a now holds content c. */
static void map_set(struct sim *s, uint32_t a, uint32_t c)
{
	uint32_t old = s->acont[a];

	if (old == c)
		return;
	if (old != NIL) {
		s->cshare[old]--;
		if (s->push) {
			if (s->aprev[a] != NIL)
				s->anext[s->aprev[a]] = s->anext[a];
			else
				s->chead[old] = s->anext[a];
			if (s->anext[a] != NIL)
				s->aprev[s->anext[a]] = s->aprev[a];
		}
	}
	s->acont[a] = c;
	s->cshare[c]++;
	if (!s->push)
		return;
	s->aprev[a] = NIL;
	s->anext[a] = s->chead[c];
	if (s->chead[c] != NIL)
		s->aprev[s->chead[c]] = a;
	s->chead[c] = a;
}

static void seen(struct sim *s, uint32_t a)
{
	uint8_t bit = (uint8_t)(1u << (a & 7));

	if (!(s->aseen[a >> 3] & bit)) {
		s->aseen[a >> 3] |= bit;
		s->naddr++;
	}
}

/* ---- fetches in flight (single-flight per content on a host) ---- */

static double flight_ready(const struct flight *f, uint64_t key)
{
	uint32_t i;

	if (!f->n)
		return 0;
	for (i = (uint32_t)sc_mix64(key) & (f->cap - 1); f->key[i];
	     i = (i + 1) & (f->cap - 1))
		if (f->key[i] == key + 1)
			return f->ready[i];
	return 0;
}

static void flight_put(struct flight *f, uint64_t key, double ready,
		       double now);

/* Rebuild at a size for the fetches still in flight at now. */
static void flight_rebuild(struct flight *f, double now)
{
	struct flight old = *f;
	uint32_t i, live = 0;

	for (i = 0; i < old.cap; i++)
		live += old.key[i] && old.ready[i] > now;
	f->cap = 64;
	while (f->cap < live * 4)
		f->cap *= 2;
	f->n = 0;
	f->key = calloc(f->cap, sizeof(*f->key));
	f->ready = calloc(f->cap, sizeof(*f->ready));
	if (!f->key || !f->ready)
		oom();
	for (i = 0; i < old.cap; i++)
		if (old.key[i] && old.ready[i] > now)
			flight_put(f, old.key[i] - 1, old.ready[i], now);
	free(old.key);
	free(old.ready);
}

/* key's fetch, started at now, ends at ready. */
static void flight_put(struct flight *f, uint64_t key, double ready,
		       double now)
{
	uint32_t i;

	if (f->n * 2 >= f->cap)
		flight_rebuild(f, now);
	for (i = (uint32_t)sc_mix64(key) & (f->cap - 1);
	     f->key[i] && f->key[i] != key + 1; i = (i + 1) & (f->cap - 1))
		;
	f->n += !f->key[i];
	f->key[i] = key + 1;
	f->ready[i] = ready;
}

/* ---- caches ---- */

static void host_evicted(void *ctx, uint64_t key)
{
	struct host *h = ctx;
	struct sim *s = h->s;
	uint32_t c;

	if (!s->csi)
		return;
	c = ckey_content(key);
	hs_put(&s->cheld, c, hs_get(&s->cheld, c) & ~(1ull << h->idx));
	if (s->tracker) {	/* the eviction notice, piggybacked */
		s->r.csi_bytes += s->p.hash_bytes;
		s->r.server_bytes += s->p.hash_bytes;
	}
}

static void server_evicted(void *ctx, uint64_t key)
{
	struct sim *s = ctx;
	uint32_t i;

	if (!s->host_peer)
		return;
	for (i = 0; i <= s->max_host && i < SIM_MAX_HOSTS; i++)
		if (s->hosts[i].on)
			sc_dcache_peer(&s->hosts[i].cache, key, false);
}

static struct host *host_get(struct sim *s, uint32_t idx)
{
	struct host *h = &s->hosts[idx];
	struct sc_dc_config cfg = {
		.data_blocks = s->r.host_cache_blocks,
		.block_size = s->p.block_size,
		.peer_blocks = s->r.server_cache_blocks,
		.on_evict = host_evicted,
		.ctx = h,
	};

	if (h->on)
		return h;
	h->s = s;
	h->idx = idx;
	if (sc_dcache_create(&h->cache, s->p.policy, &cfg)) {
		fprintf(stderr, "seacache-sim: cannot create host cache '%s'\n",
			s->p.policy);
		exit(2);
	}
	h->on = true;
	if (idx > s->max_host)
		s->max_host = idx;
	s->host_peer = h->cache.ops->peer != NULL;
	return h;
}

static struct sc_dcache *vm_cache(struct sim *s, uint32_t vm)
{
	struct sc_dc_config cfg = {
		.data_blocks = s->r.vm_cache_blocks,
		.block_size = s->p.block_size,
	};
	uint32_t n;

	if (!s->r.vm_cache_blocks)
		return NULL;
	if (vm >= s->nvmc) {
		n = vm + 16;
		s->vmc = grow(s->vmc, sizeof(*s->vmc), s->nvmc, n, 0);
		s->nvmc = n;
	}
	if (!s->vmc[vm].ops && sc_dcache_create(&s->vmc[vm], "lru", &cfg))
		exit(2);
	return &s->vmc[vm];
}

static struct sc_dc_res cache_access(struct sc_dcache *c, uint8_t op,
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

/* The server reads content c for a host: its cache, else its disk. */
static double server_read(struct sim *s, uint32_t c)
{
	struct sc_dc_res res = cache_access(&s->server, SC_DC_READ, 0,
					    ckey(c), 0);
	uint32_t i;

	if (res.admitted && s->host_peer)
		for (i = 0; i <= s->max_host && i < SIM_MAX_HOSTS; i++)
			if (s->hosts[i].on)
				sc_dcache_peer(&s->hosts[i].cache, ckey(c), true);
	if (res.kind == SC_DC_MISS) {
		s->r.disk_reads++;
		return s->p.disk_ms;
	}
	return 0;
}

static void host_load(struct sim *s, struct host *h, uint32_t a, uint32_t c,
		      uint8_t op)
{
	struct sc_dc_res res = cache_access(&h->cache, op, sc_mix64(a),
					    ckey(c), s->cshare[c]);

	if (res.admitted)
		hs_add(&s->cheld, c, 1ull << h->idx);
}

static void bytes(struct sim *s, uint64_t data, uint64_t csi)
{
	s->r.data_bytes += data;
	s->r.csi_bytes += csi;
	s->r.server_bytes += data + csi + s->p.hdr_bytes;
}

/*
 * SS-Push: the server sends the other addresses of c on this host, with
 * c itself (not with a hash answer: the host got them with c).
 */
static void push(struct sim *s, uint32_t host, uint32_t a, uint32_t c)
{
	uint64_t bit = 1ull << host;
	uint32_t x, sent = 0, steps = 0;

	for (x = s->chead[c]; x != NIL && sent < s->p.max_push &&
	     steps < 4 * s->p.max_push; x = s->anext[x], steps++) {
		if (x == a || s->ahost[x] != host ||
		    (hs_get(&s->aknown, x) & bit))
			continue;
		hs_add(&s->aknown, x, bit);
		sent++;
	}
	s->r.csi_bytes += (uint64_t)sent * s->p.hash_bytes;
	s->r.server_bytes += (uint64_t)sent * s->p.hash_bytes;
}

/*
 * The host holds key's block from the start of its fetch on: a reader
 * that finds it waits until the fetch is done (single-flight), at least
 * floor_ms.  Its latency.
 */
static double wait_ready(struct sim *s, struct host *h, uint64_t key,
			 double now, double floor_ms)
{
	double ready = flight_ready(&h->fl, key);

	if (ready <= now + floor_ms)
		return floor_ms;
	s->r.flight_waits++;
	return ready - now;
}

/*
 * A peer holding c for a delegation (any host but host): one whose copy
 * has arrived, else the one whose fetch ends first; NIL: none.
 */
static uint32_t delegate_to(struct sim *s, uint32_t host, uint32_t c,
			    double now, double *ready)
{
	uint64_t others = hs_get(&s->cheld, c) & ~(1ull << host);
	uint32_t best = NIL, i;
	double r;

	for (i = 0; others; i++, others >>= 1) {
		if (!(others & 1))
			continue;
		r = flight_ready(&s->hosts[i].fl, c);
		if (best == NIL || r < *ready) {
			best = i;
			*ready = r;
		}
		if (r <= now)
			break;
	}
	return best;
}

static double read_block(struct sim *s, uint32_t vm, uint32_t host,
			 uint32_t a, uint32_t c, double now)
{
	struct host *h = host_get(s, host);
	uint64_t bit = 1ull << host, vkey = pair_key(a, c);
	struct sc_dcache *vc = vm_cache(s, vm);
	double lat, rtt = s->p.net_ms, ready;
	uint64_t held;
	uint32_t peer;

	s->r.read_blocks++;
	if (vc && cache_access(vc, SC_DC_READ, sc_mix64(a), vkey, 0).kind !=
			  SC_DC_MISS) {
		s->r.vm_hits++;
		return 0;
	}
	if (!s->csi) {
		struct sc_dc_res res = cache_access(&h->cache, SC_DC_READ,
						    sc_mix64(a), vkey, 0);

		if (res.kind != SC_DC_MISS) {
			s->r.host_hits++;
			return wait_ready(s, h, vkey, now, 0);
		}
		s->r.read_misses++;
		bytes(s, s->p.block_size, 0);
		lat = rtt + server_read(s, c);
		flight_put(&h->fl, vkey, now + lat, now);
		return lat;
	}
	held = hs_get(&s->cheld, c) & bit;
	if ((hs_get(&s->aknown, a) & bit) && held) {
		host_load(s, h, a, c, SC_DC_READ);
		s->r.host_hits++;
		return wait_ready(s, h, c, now, 0);
	}
	hs_add(&s->aknown, a, bit);
	if (held) {
		/* Read#'s hash, or the tracker's hash-only answer. */
		bytes(s, 0, s->p.hash_bytes);
		s->r.content_hits++;
		host_load(s, h, a, c, SC_DC_READ);
		lat = wait_ready(s, h, c, now, rtt);
	} else if (!s->tracker) {
		/* Read#: the hash first, then the data (the host lacks it). */
		s->r.read_misses++;
		bytes(s, s->p.block_size, s->p.hash_bytes);
		s->r.server_bytes += s->p.hdr_bytes;
		lat = 2 * rtt + server_read(s, c);
		host_load(s, h, a, c, SC_DC_READ);
		flight_put(&h->fl, c, now + lat, now);
	} else if (s->coop && (s->p.delegate_cached ||
				!sc_dcache_holds(&s->server, ckey(c))) &&
		   (peer = delegate_to(s, host, c, now, &ready)) != NIL) {
		/*
		 * Delegated to a peer holding c, as the live service does:
		 * only what the server would read from its disk (unless
		 * delegate_cached).  Data host to host.
		 */
		s->r.read_misses++;
		bytes(s, 0, 2 * s->p.hash_bytes);
		s->r.peer_bytes += s->p.block_size + s->p.hdr_bytes;
		lat = 1.5 * rtt;
		if (ready + 0.5 * rtt > now + lat)
			lat = ready + 0.5 * rtt - now;
		host_load(s, h, a, c, SC_DC_READ);
		flight_put(&h->fl, c, now + lat, now);
	} else {
		s->r.read_misses++;
		bytes(s, s->p.block_size, s->p.hash_bytes);
		lat = rtt + server_read(s, c);
		host_load(s, h, a, c, SC_DC_READ);
		flight_put(&h->fl, c, now + lat, now);
	}
	/* as the live service: the other holders of a content sent now */
	if (s->push && !held)
		push(s, host, a, c);
	return lat;
}

static double write_block(struct sim *s, uint32_t vm, uint32_t host,
			  uint32_t a, uint32_t c, bool stored)
{
	struct host *h = host_get(s, host);
	uint64_t bit = 1ull << host, vkey = pair_key(a, c);
	struct sc_dcache *vc = vm_cache(s, vm);
	double lat = s->p.net_ms;

	s->r.write_blocks++;
	if (vc)
		cache_access(vc, SC_DC_WRITE, sc_mix64(a), vkey, 0);
	if (!s->csi) {
		cache_access(&h->cache, SC_DC_WRITE, sc_mix64(a), vkey, 0);
		bytes(s, s->p.block_size, 0);
	} else {
		if (s->dedup_write && (hs_get(&s->cheld, c) & bit)) {
			/* The hash alone; the data only on NEED_DATA. */
			bytes(s, 0, s->p.hash_bytes);
			if (!stored) {
				bytes(s, s->p.block_size, 0);
				lat += s->p.net_ms;
			}
		} else {
			bytes(s, s->p.block_size, 0);
		}
		host_load(s, h, a, c, SC_DC_WRITE);
		hs_put(&s->aknown, a, bit);
	}
	cache_access(&s->server, SC_DC_WRITE, 0, ckey(c), 0);
	if (!stored) {
		s->r.disk_writes++;
		lat += s->p.disk_ms;
	}
	return lat;
}

/* ---- cache mode ---- */

static uint64_t fast_key(const void *ctx, uint32_t slot)
{
	const struct cache_fast *f = ctx;

	return f->key[slot];
}

/* The fast path's cache (spec names a slot policy: a content cache). */
static struct cache_fast *fast_new(const char *spec, uint32_t cap,
				   uint32_t naddr)
{
	struct cache_fast *f;
	uint32_t i;

	f = calloc(1, sizeof(*f));
	if (!f)
		oom();
	f->cap = cap;
	f->key = calloc(cap, sizeof(*f->key));
	f->owner = malloc((size_t)cap * sizeof(*f->owner));
	f->share = malloc((size_t)cap * sizeof(*f->share));
	if (!f->key || !f->owner || !f->share)
		oom();
	for (i = 0; i < cap; i++) {
		f->owner[i] = i + 1 < cap ? i + 1 : NIL;
		f->share[i] = 1;
	}
	if (sc_policy_create(&f->pol, spec, cap, f->share))
		exit(2);
	f->pol.key = fast_key;
	f->pol.key_ctx = f;
	f->slot = grow(NULL, 4, 0, naddr, 0xff);
	return f;
}

static void fast_free(struct cache_fast *f)
{
	if (!f)
		return;
	sc_policy_destroy(&f->pol);
	free(f->slot);
	free(f->gen);
	free(f->key);
	free(f->owner);
	free(f->share);
	free(f);
}

/* One block of address a under the fast path: true on a hit. */
static bool fast_access(struct sim *s, uint32_t a, bool write)
{
	struct cache_fast *f = s->fast;
	uint32_t slot = f->slot[a], v;
	uint64_t key;

	if (write) {
		/* New content: the old (address, content) entry stays, orphaned. */
		if (!f->gen)
			f->gen = grow(NULL, 4, 0, s->acap, 0);
		f->gen[a]++;
		if (slot != NIL)
			f->owner[slot] = NIL;
		slot = NIL;
	} else if (slot != NIL) {
		f->pol.ops->hit(&f->pol, slot);
		return true;
	}
	key = (uint64_t)(f->gen ? f->gen[a] : 0) << 32 | a;
	sc_policy_admit(&f->pol, key);
	if (f->used == f->cap) {
		v = f->pol.ops->victim(&f->pol);
		f->pol.ops->remove(&f->pol, v);
		if (f->owner[v] != NIL)
			f->slot[f->owner[v]] = NIL;
		s->r.evictions++;
	} else {
		v = f->free_head;
		f->free_head = f->owner[v];
		f->used++;
	}
	f->key[v] = key;
	f->owner[v] = a;
	f->slot[a] = v;
	f->pol.ops->insert(&f->pol, v);
	s->r.loads++;
	return false;
}

/* Cache mode: the content key of address a holding content c. */
static uint64_t cache_key(const struct sim *s, uint32_t a, uint32_t c)
{
	/*
	 * The organisations that ignore addresses (plain content caches,
	 * ACQ, LRUCA) are the papers' address caches here: one entry per
	 * (address, content), no deduplication (CDAC's LRU and ARC).
	 */
	return s->addr_cache ? pair_key(a, c) : ckey(c);
}

static void cache_block(struct sim *s, uint8_t op, uint32_t a, uint32_t c)
{
	struct sc_dc_res res = cache_access(&s->one, op, sc_mix64(a),
					    cache_key(s, a, c), s->cshare[c]);

	if (op == SC_DC_WRITE) {
		s->r.write_blocks++;
		if (res.kind != SC_DC_MISS)
			s->r.write_hits++;
		return;
	}
	s->r.read_blocks++;
	if (res.kind == SC_DC_HIT)
		s->r.host_hits++;
	else if (res.kind == SC_DC_CONTENT_HIT)
		s->r.content_hits++;
	else
		s->r.read_misses++;
}

/* Cache mode: the blocks of one request, in order. */
static void cache_request(struct sim *s, const struct sim_req *r)
{
	uint32_t i, a, c, n = r->nblocks;
	bool write = r->op == 'W';

	if (s->fast) {
		for (i = 0; i < n; i++) {
			a = r->addr[i];
			addr_room(s, a + 1);
			seen(s, a);
			/* A write is new content: never a hit. */
			if (fast_access(s, a, write))
				s->r.host_hits++;
			else
				s->r.read_misses += !write;
		}
		if (write)
			s->r.write_blocks += n;
		else
			s->r.read_blocks += n;
		return;
	}
	for (i = 0; i < n; i++) {
		a = r->addr[i];
		addr_room(s, a + 1);
		seen(s, a);
		if (r->content) {
			c = r->content[i];
			content_room(s, c + 1);
		} else if (write || s->acont[a] == NIL) {
			c = own_content(s);
		} else {
			c = s->acont[a];
		}
		if (write && s->acont[a] == c)
			s->r.silent_writes++;
		if (s->acont[a] != c) {
			if (s->acont[a] != NIL)
				s->cshare[s->acont[a]]--;
			s->acont[a] = c;
			s->cshare[c]++;
		}
		cache_block(s, write ? SC_DC_WRITE : SC_DC_READ, a, c);
	}
}

/* ---- system mode: one request at its issue time ---- */

static double run_request(struct sim *s, uint32_t vm, uint8_t op,
			  const uint32_t *ids, uint32_t n, double now)
{
	uint32_t host = vm / s->p.vms_per_host, i, a, c;
	double lat = 0, l;
	bool stored, write = op == 'W';

	for (i = 0; i < n; i++) {
		a = ids[2 * i];
		c = ids[2 * i + 1];
		if (c == NIL)
			c = write || s->acont[a] == NIL ? own_content(s) :
							    s->acont[a];
		if (write) {
			if (s->acont[a] == c)
				s->r.silent_writes++;
			stored = s->cshare[c] > 0;
		} else {
			stored = true;
		}
		map_set(s, a, c);
		if (write)
			l = write_block(s, vm, host, a, c, stored);
		else
			l = read_block(s, vm, host, a, c, now);
		if (l > lat)
			lat = l;
	}
	s->r.requests++;
	s->r.writes += write;
	s->r.reads += !write;
	s->r.lat_sum_ms += lat;
	if (!write)
		s->r.read_lat_sum_ms += lat;
	if (now + lat > s->r.end_ms)
		s->r.end_ms = now + lat;
	return lat;
}

/* The issue time of VM v's next request. */
static double vm_next_ms(const struct sim *s, uint32_t v)
{
	double ts = s->pq[s->vq[v].head - s->pbase].ts_ms;

	return ts > s->vq[v].done_ms ? ts : s->vq[v].done_ms;
}

/* Heap order: the earlier issue time, then the lower VM. */
static bool vm_before(const struct sim *s, uint32_t x, uint32_t y)
{
	double tx = vm_next_ms(s, x), ty = vm_next_ms(s, y);

	return tx < ty || (tx == ty && x < y);
}

static void heap_push(struct sim *s, uint32_t v)
{
	uint32_t i = s->nheap++, up;

	while (i && vm_before(s, v, s->heap[up = (i - 1) / 2])) {
		s->heap[i] = s->heap[up];
		i = up;
	}
	s->heap[i] = v;
	s->vq[v].queued = true;
}

static uint32_t heap_pop(struct sim *s)
{
	uint32_t top = s->heap[0], v = s->heap[--s->nheap], i = 0, k;

	while ((k = 2 * i + 1) < s->nheap) {
		if (k + 1 < s->nheap && vm_before(s, s->heap[k + 1], s->heap[k]))
			k++;
		if (!vm_before(s, s->heap[k], v))
			break;
		s->heap[i] = s->heap[k];
		i = k;
	}
	if (s->nheap)
		s->heap[i] = v;
	s->vq[top].queued = false;
	return top;
}

/*
 * Before the queues grow: drop what lies before the oldest request not
 * issued yet (requests are issued out of order, but a queue's storage is
 * in reading order).
 */
static void queues_compact(struct sim *s)
{
	uint64_t oldest = s->pend_n, oldest_id, d;
	uint32_t v;

	for (v = 0; v < s->nvq; v++)
		if (s->vq[v].head < oldest)
			oldest = s->vq[v].head;
	oldest_id = oldest < s->pend_n ? s->pq[oldest - s->pbase].ids : s->ids_n;
	d = oldest - s->pbase;
	if (d && d * 4 >= s->pcap) {
		memmove(s->pq, s->pq + d, (s->pend_n - oldest) * sizeof(*s->pq));
		s->pbase = oldest;
	}
	d = oldest_id - s->ibase;
	if (d && d * 4 >= s->icap) {
		memmove(s->iq, s->iq + 2 * d,
			(s->ids_n - oldest_id) * 2 * sizeof(*s->iq));
		s->ibase = oldest_id;
	}
}

/* Issue the request of the VM that comes first. */
static void issue_next(struct sim *s)
{
	uint32_t v = heap_pop(s);
	struct vmq *q = &s->vq[v];
	struct pend *p = &s->pq[q->head - s->pbase];
	double now = vm_next_ms(s, v);

	q->done_ms = now + run_request(s, v, p->nblocks & PEND_WRITE ? 'W' : 'R',
				       s->iq + 2 * (p->ids - s->ibase),
				       p->nblocks & ~PEND_WRITE, now);
	if (p->next_gap) {
		q->head += p->next_gap;
	} else {
		q->head = NOPEND;
		q->tail = NOPEND;
	}
	if (q->head != NOPEND)
		heap_push(s, v);
	s->held--;
}

/* Hold r until its issue time; issue what can no longer be preceded. */
static void system_feed(struct sim *s, const struct sim_req *r)
{
	uint32_t v = r->vm, i, n = r->nblocks;
	struct pend *p;
	uint32_t *ids;

	if (v / s->p.vms_per_host >= 8 * s->aknown.w) {
		fprintf(stderr, "seacache-sim: VM %u was not in the preload pass\n", v);
		exit(2);
	}
	if (v >= s->nvq) {
		uint32_t nv = v + 16;

		s->vq = grow(s->vq, sizeof(*s->vq), s->nvq, nv, 0xff);
		s->heap = grow(s->heap, 4, s->nvq, nv, 0);
		for (i = s->nvq; i < nv; i++) {
			s->vq[i].done_ms = 0;
			s->vq[i].queued = false;
		}
		s->nvq = nv;
	}
	if (s->pend_n - s->pbase == s->pcap ||
	    s->ids_n + n - s->ibase > s->icap)
		queues_compact(s);
	if (s->pend_n - s->pbase == s->pcap) {
		s->pq = grow(s->pq, sizeof(*s->pq), s->pcap, s->pcap * 2 + 1024, 0);
		s->pcap = s->pcap * 2 + 1024;
	}
	while (s->ids_n + n - s->ibase > s->icap) {
		s->iq = grow(s->iq, 8, s->icap, s->icap * 2 + 4096, 0);
		s->icap = s->icap * 2 + 4096;
	}
	ids = s->iq + 2 * (s->ids_n - s->ibase);
	for (i = 0; i < n; i++) {
		ids[2 * i] = r->addr[i];
		ids[2 * i + 1] = r->content ? r->content[i] : NIL;
		addr_room(s, r->addr[i] + 1);
		seen(s, r->addr[i]);
		if (s->ahost[r->addr[i]] == NOHOST)
			s->ahost[r->addr[i]] = (uint16_t)(v / s->p.vms_per_host);
		if (r->content)
			content_room(s, r->content[i] + 1);
	}
	p = &s->pq[s->pend_n - s->pbase];
	p->ts_ms = (double)r->ts_ns / 1e6;
	p->next_gap = 0;
	p->ids = s->ids_n;
	p->nblocks = n | (r->op == 'W' ? PEND_WRITE : 0);
	if (s->vq[v].tail != NOPEND)
		s->pq[s->vq[v].tail - s->pbase].next_gap =
			(uint32_t)(s->pend_n - s->vq[v].tail);
	else
		s->vq[v].head = s->pend_n;
	s->vq[v].tail = s->pend_n;
	s->pend_n++;
	s->ids_n += n;
	s->held++;
	if (!s->vq[v].queued)
		heap_push(s, v);
	if (p->ts_ms > s->horizon_ms)
		s->horizon_ms = p->ts_ms;
	/*
	 * A line not read yet issues at its ts or later, so no later than
	 * the latest ts read if the trace is in time order: what comes
	 * strictly before that can go.
	 */
	while (s->nheap && (vm_next_ms(s, s->heap[0]) < s->horizon_ms ||
			    s->held > s->p.window))
		issue_next(s);
}

/* ---- the request loop ---- */

struct sim *sim_new(const struct sim_params *p)
{
	struct sim *s = calloc(1, sizeof(*s));
	uint32_t feat;

	if (!s)
		oom();
	s->p = *p;
	if (!s->p.vms_per_host)
		s->p.vms_per_host = 10;
	if (!s->p.window)
		s->p.window = 1u << 20;
	s->system = p->mode == SIM_MODE_SYSTEM;
	feat = sc_variants[p->variant].features;
	s->csi = feat & CSI_FEAT_READ_HASH;
	s->tracker = feat & CSI_FEAT_TRACKER;
	s->push = s->system && (feat & CSI_FEAT_PUSH);
	s->coop = feat & CSI_FEAT_COOP;
	s->dedup_write = feat & CSI_FEAT_DEDUP_WRITE;
	if (!s->system) {
		struct sc_dc_config cfg = {
			.data_blocks = p->host_cache.blocks,
			.block_size = p->block_size,
		};

		s->r.host_cache_blocks = p->host_cache.blocks;
		if (sc_dcache_create(&s->one, p->policy, &cfg)) {
			sim_free(s);
			return NULL;
		}
		s->addr_cache = s->one.ops == &sc_dcache_content ||
				s->one.ops == &sc_dcache_acq ||
				s->one.ops == &sc_dcache_lruca;
	} else {
		/* Check the host policy now rather than at the first request. */
		struct sc_dcache probe;
		struct sc_dc_config cfg = { .data_blocks = 1024,
					    .block_size = p->block_size };

		if (sc_dcache_create(&probe, p->policy, &cfg)) {
			sim_free(s);
			return NULL;
		}
		sc_dcache_destroy(&probe);
	}
	addr_room(s, p->addrs_hint);
	content_room(s, p->contents_hint);
	return s;
}

void sim_preload(struct sim *s, const struct sim_req *r)
{
	uint32_t host, i, a, c;

	if (s->p.vms && r->vm >= s->p.vms)
		return;
	host = r->vm / s->p.vms_per_host;
	if (host >= SIM_MAX_HOSTS) {
		fprintf(stderr, "seacache-sim: more than %u hosts (VM %u); use --vms or --vms-per-host\n",
			SIM_MAX_HOSTS, r->vm);
		exit(2);
	}
	if (host > s->max_host)
		s->max_host = host;
	for (i = 0; i < r->nblocks; i++) {
		a = r->addr[i];
		addr_room(s, a + 1);
		if (s->ahost[a] != NOHOST)
			continue;
		s->ahost[a] = (uint16_t)host;
		seen(s, a);
		if (r->op == 'W')
			continue;
		if (r->content) {
			c = r->content[i];
			content_room(s, c + 1);
		} else {
			c = own_content(s);
		}
		map_set(s, a, c);
	}
}

static uint32_t size_of(const struct sim_size *z, uint64_t distinct)
{
	double b;

	if (z->pct < 0)
		return z->blocks;
	b = z->pct / 100 * (double)distinct;
	return b >= NIL ? NIL - 1 : (uint32_t)b;
}

void sim_preload_done(struct sim *s)
{
	struct sc_dc_config scfg = { .block_size = s->p.block_size,
				     .on_evict = server_evicted, .ctx = s };
	uint32_t hosts = s->max_host + 1;

	/* The host sets: a bit per host the preload saw, in 1 to 8 bytes. */
	s->aknown.w = hosts <= 8 ? 1 : hosts <= 16 ? 2 : hosts <= 32 ? 4 : 8;
	s->cheld.w = s->aknown.w;
	hs_grow(&s->aknown, 0, s->acap);
	hs_grow(&s->cheld, 0, s->ccap);

	s->r.vm_cache_blocks = size_of(&s->p.vm_cache, s->naddr);
	s->r.host_cache_blocks = size_of(&s->p.host_cache, s->naddr);
	s->r.server_cache_blocks = size_of(&s->p.server_cache, s->naddr);
	if (!s->r.server_cache_blocks)
		s->r.server_cache_blocks = 1;
	if (!s->r.host_cache_blocks)
		s->r.host_cache_blocks = 1;
	scfg.data_blocks = s->r.server_cache_blocks;
	if (sc_dcache_create(&s->server, s->p.server_policy ?
			     s->p.server_policy : "lru", &scfg))
		exit(2);
	/* The replay counts again: the addresses it touches. */
	memset(s->aseen, 0, (s->acap + 7) / 8);
	s->naddr = 0;
}

bool sim_feed(struct sim *s, const struct sim_req *r)
{
	if (s->p.vms && r->vm >= s->p.vms)
		return false;
	if (r->vm > s->max_vm)
		s->max_vm = r->vm;
	if (s->system) {
		system_feed(s, r);
		return true;
	}
	if (!s->r.requests && !r->content && s->one.ops == &sc_dcache_content) {
		/* A trace without fingerprints: the fast path is exact. */
		const char *spec = s->p.policy;

		if (!strncmp(spec, "content:", 8))
			spec += 8;
		sc_dcache_destroy(&s->one);
		s->fast = fast_new(spec, s->p.host_cache.blocks, s->acap);
		free(s->acont);
		s->acont = NULL;
	}
	s->r.requests++;
	if (r->op == 'W')
		s->r.writes++;
	else
		s->r.reads++;
	cache_request(s, r);
	return true;
}

void sim_prefetch(struct sim *s, const struct sim_req *r, bool far)
{
	struct sc_dc_req q = { .op = SC_DC_READ };
	uint32_t i, a, c;

	if (s->system || !s->one.ops || !s->one.ops->prefetch || !r->content ||
	    (s->p.vms && r->vm >= s->p.vms))
		return;
	for (i = 0; i < r->nblocks; i++) {
		a = r->addr[i];
		c = r->content[i];
		if (far && a < s->acap && c < s->ccap) {
			sc_prefetch(&s->acont[a]);
			sc_prefetch(&s->cshare[c]);
		}
		q.addr = sc_mix64(a);
		q.content = cache_key(s, a, c);
		s->one.ops->prefetch(&s->one, &q, far);
	}
}

static uint64_t fast_bytes(const struct sim *s)
{
	const struct cache_fast *f = s->fast;

	return sizeof(*f) + f->pol.ops->bytes(&f->pol) +
	       (uint64_t)f->cap * (8 + 4 + 4) +
	       (uint64_t)s->acap * (f->gen ? 8 : 4);
}

void sim_finish(struct sim *s, uint64_t extra_bytes, struct sim_result *out)
{
	uint64_t meta = sizeof(*s) + extra_bytes + (s->acap + 7) / 8 +
			(uint64_t)s->ccap * 4;
	uint32_t i;

	while (s->nheap)
		issue_next(s);
	if (s->acont)
		meta += (uint64_t)s->acap * 4;
	if (s->system)
		meta += (uint64_t)s->acap * (2 + s->aknown.w) +
			(uint64_t)s->ccap * s->cheld.w;
	if (s->push)
		meta += (uint64_t)s->acap * 8 + (uint64_t)s->ccap * 4;
	meta += s->pcap * sizeof(*s->pq) + s->icap * 8;
	for (i = 0; i < SIM_MAX_HOSTS; i++)
		if (s->hosts[i].on) {
			meta += s->hosts[i].cache.ops->bytes(&s->hosts[i].cache);
			s->r.loads += s->hosts[i].cache.st.loads;
			s->r.evictions += s->hosts[i].cache.st.evictions;
		}
	for (i = 0; i < s->nvmc; i++)
		if (s->vmc[i].ops)
			meta += s->vmc[i].ops->bytes(&s->vmc[i]);
	if (s->server.ops)
		meta += s->server.ops->bytes(&s->server);
	if (s->fast)
		meta += fast_bytes(s);
	if (s->one.ops) {
		meta += s->one.ops->bytes(&s->one);
		s->r.loads = s->one.st.loads;
		s->r.evictions = s->one.st.evictions;
		memcpy(s->r.events, s->one.st.events, sizeof(s->r.events));
		s->r.event_names = s->one.ops->events;
	}
	s->r.tracked_blocks = s->naddr;
	s->r.sim_meta_bytes = meta;
	s->r.vms = s->r.requests ? s->max_vm + 1 : 0;
	if (s->p.vms && s->r.vms > s->p.vms)
		s->r.vms = s->p.vms;
	s->r.hosts = !s->system ? 1 :
		     (s->r.vms + s->p.vms_per_host - 1) / s->p.vms_per_host;
	*out = s->r;
}

void sim_free(struct sim *s)
{
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < SIM_MAX_HOSTS; i++)
		if (s->hosts[i].on) {
			sc_dcache_destroy(&s->hosts[i].cache);
			free(s->hosts[i].fl.key);
			free(s->hosts[i].fl.ready);
		}
	for (i = 0; i < s->nvmc; i++)
		sc_dcache_destroy(&s->vmc[i]);
	free(s->vmc);
	sc_dcache_destroy(&s->server);
	sc_dcache_destroy(&s->one);
	fast_free(s->fast);
	free(s->acont);
	free(s->ahost);
	free(s->aknown.m);
	free(s->anext);
	free(s->aprev);
	free(s->aseen);
	free(s->cshare);
	free(s->cheld.m);
	free(s->chead);
	free(s->vq);
	free(s->heap);
	free(s->pq);
	free(s->iq);
	free(s);
}
