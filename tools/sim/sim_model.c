// SPDX-License-Identifier: BSD-2-Clause
/*
 * The system model of seacache-sim (sim_model.h).  README.md, section
 * "The model", says what each variant does per block and what it costs.
 *
 * Identities: an address is (file, block) of the trace, a 64-bit key
 * file << 40 | lbn; a content is the 64-bit key of its fingerprint
 * (sim_fp_key).  Both are interned into dense slots of growable tables
 * (lib's itab over slot arrays), so the per-block state is arrays indexed
 * by slot.  Tracked per address: key 8, content slot 4, CSI-Map reverse
 * links 8, hosts that know its content 8, owner host 2, index 8 (38 B);
 * per distinct content: key 8, sharing count 4, reverse-list head 4,
 * tracker bits 8, index 8 (32 B).
 */
#include "sim_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seacache/itab.h"

#define SIM_MAX_HOSTS 64u

/* A growable interning table: key -> dense slot. */
struct gtab {
	uint64_t *key;
	struct sc_itab it;
	uint32_t n, cap;
};

struct host {
	struct sim *s;
	uint32_t idx;
	bool on;
	struct sc_dcache cache;
};

struct sim {
	struct sim_params p;
	/* The variant's features; csi false: Baseline, no hashes at all. */
	bool csi, tracker, push, coop, dedup_write;
	/* Addresses. */
	struct gtab at;
	uint32_t *acont, *anext, *aprev;
	uint64_t *aknown;
	uint16_t *ahost;
	/* Contents. */
	struct gtab ct;
	uint32_t *cshare, *chead;
	uint64_t *cheld;
	/* Caches. */
	struct host hosts[SIM_MAX_HOSTS];
	struct sc_dcache *vmc;	/* per VM, NULL: none */
	uint32_t nvmc;
	bool host_peer;		/* host policy wants the server's contents */
	struct sc_dcache server;
	struct sc_dcache one;	/* cache mode */
	bool addr_cache;	/* cache mode: key by address and content */
	uint64_t wseq;
	uint32_t preload_writes;	/* blocks, not addresses */
	uint32_t max_vm, max_host;
	struct sim_result r;
};

static uint64_t mix(uint64_t k)
{
	return sc_mix64(k);
}

uint64_t sim_fp_key(const uint8_t *fp, uint32_t len)
{
	uint64_t k = 0, w;
	uint32_t i;

	for (i = 0; i < len; i += 8) {
		w = 0;
		memcpy(&w, fp + i, len - i < 8 ? len - i : 8);
		k = i ? mix(k ^ w) : w;
	}
	return k;
}

static int gtab_init(struct gtab *t, uint32_t cap)
{
	t->key = calloc(cap, sizeof(*t->key));
	t->cap = cap;
	t->n = 0;
	if (!t->key || sc_itab_init(&t->it, cap))
		return -1;
	return 0;
}

static void gtab_free(struct gtab *t)
{
	free(t->key);
	sc_itab_destroy(&t->it);
}

static uint32_t gtab_find(const struct gtab *t, uint64_t key)
{
	uint32_t i;

	for (i = sc_itab_first(&t->it, mix(key)); i != SC_NIL;
	     i = sc_itab_next(&t->it, i))
		if (t->key[i] == key)
			return i;
	return SC_NIL;
}

/* Resize arr from oldn to newn elements; new ones are zeroed. */
static bool grow(void **arr, size_t elem, uint32_t oldn, uint32_t newn)
{
	void *p = realloc(*arr, elem * (newn ? newn : 1));

	if (!p)
		return false;
	if (newn > oldn)
		memset((char *)p + elem * oldn, 0, elem * (newn - oldn));
	*arr = p;
	return true;
}

static void oom(void)
{
	fprintf(stderr, "seacache-sim: out of memory\n");
	exit(3);
}

/* Set t's capacity to ncap >= t->n; the caller resizes its payload too. */
static void gtab_resize(struct gtab *t, uint32_t ncap)
{
	uint32_t i;

	if (!grow((void **)&t->key, sizeof(*t->key), t->cap, ncap))
		oom();
	sc_itab_destroy(&t->it);
	if (sc_itab_init(&t->it, ncap))
		oom();
	for (i = 0; i < t->n; i++)
		sc_itab_add(&t->it, mix(t->key[i]), i);
	t->cap = ncap;
}

/* Twice cap, for a table that is full. */
static uint32_t doubled(uint32_t cap)
{
	if (cap * 2 <= cap || cap * 2 == SC_NIL)
		oom();
	return cap * 2;
}

/* The address table and its payload at capacity cap. */
static void addr_resize(struct sim *s, uint32_t cap)
{
	uint32_t old = s->at.cap;

	gtab_resize(&s->at, cap);
	if (!grow((void **)&s->acont, 4, old, cap) ||
	    !grow((void **)&s->anext, 4, old, cap) ||
	    !grow((void **)&s->aprev, 4, old, cap) ||
	    !grow((void **)&s->aknown, 8, old, cap) ||
	    !grow((void **)&s->ahost, 2, old, cap))
		oom();
}

/* The content table and its payload at capacity cap. */
static void content_resize(struct sim *s, uint32_t cap)
{
	uint32_t old = s->ct.cap;

	gtab_resize(&s->ct, cap);
	if (!grow((void **)&s->cshare, 4, old, cap) ||
	    !grow((void **)&s->chead, 4, old, cap) ||
	    !grow((void **)&s->cheld, 8, old, cap))
		oom();
}

static uint32_t addr_get(struct sim *s, uint64_t key, bool *isnew)
{
	uint32_t a = gtab_find(&s->at, key);

	*isnew = a == SC_NIL;
	if (a != SC_NIL)
		return a;
	if (s->at.n == s->at.cap)
		addr_resize(s, doubled(s->at.cap));
	a = s->at.n++;
	s->at.key[a] = key;
	sc_itab_add(&s->at.it, mix(key), a);
	s->acont[a] = SC_NIL;
	s->anext[a] = SC_NIL;
	s->aprev[a] = SC_NIL;
	return a;
}

static uint32_t content_get(struct sim *s, uint64_t key)
{
	uint32_t c = gtab_find(&s->ct, key);

	if (c != SC_NIL)
		return c;
	if (s->ct.n == s->ct.cap)
		content_resize(s, doubled(s->ct.cap));
	c = s->ct.n++;
	s->ct.key[c] = key;
	sc_itab_add(&s->ct.it, mix(key), c);
	s->chead[c] = SC_NIL;
	return c;
}

/* The server's CSI-Map: address a now holds content c. */
static void map_set(struct sim *s, uint32_t a, uint32_t c)
{
	uint32_t old = s->acont[a];

	if (old == c)
		return;
	if (old != SC_NIL) {
		s->cshare[old]--;
		if (s->aprev[a] != SC_NIL)
			s->anext[s->aprev[a]] = s->anext[a];
		else
			s->chead[old] = s->anext[a];
		if (s->anext[a] != SC_NIL)
			s->aprev[s->anext[a]] = s->aprev[a];
	}
	s->acont[a] = c;
	s->cshare[c]++;
	s->aprev[a] = SC_NIL;
	s->anext[a] = s->chead[c];
	if (s->chead[c] != SC_NIL)
		s->aprev[s->chead[c]] = a;
	s->chead[c] = a;
}

/* ---- caches ---- */

static void host_evicted(void *ctx, uint64_t key)
{
	struct host *h = ctx;
	struct sim *s = h->s;
	uint32_t c;

	if (!s->csi)
		return;
	c = gtab_find(&s->ct, key);
	if (c != SC_NIL)
		s->cheld[c] &= ~(1ull << h->idx);
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
		.data_blocks = s->p.host_cache_blocks,
		.block_size = s->p.block_size,
		.peer_blocks = s->p.server_cache_blocks,
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
		.data_blocks = s->p.vm_cache_blocks,
		.block_size = s->p.block_size,
	};
	uint32_t n;

	if (!s->p.vm_cache_blocks)
		return NULL;
	if (vm >= s->nvmc) {
		n = vm + 16;
		if (!grow((void **)&s->vmc, sizeof(*s->vmc), s->nvmc, n))
			oom();
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
					    s->ct.key[c], 0);
	uint32_t i;

	if (res.admitted && s->host_peer)
		for (i = 0; i <= s->max_host && i < SIM_MAX_HOSTS; i++)
			if (s->hosts[i].on)
				sc_dcache_peer(&s->hosts[i].cache,
					       s->ct.key[c], true);
	if (res.kind == SC_DC_MISS) {
		s->r.disk_reads++;
		return s->p.disk_ms;
	}
	return 0;
}

static void host_load(struct sim *s, struct host *h, uint64_t addr,
		      uint32_t c, uint8_t op)
{
	struct sc_dc_res res = cache_access(&h->cache, op, addr, s->ct.key[c],
					    s->cshare[c]);

	if (res.admitted)
		s->cheld[c] |= 1ull << h->idx;
}

static void bytes(struct sim *s, uint64_t data, uint64_t csi)
{
	s->r.data_bytes += data;
	s->r.csi_bytes += csi;
	s->r.server_bytes += data + csi + s->p.hdr_bytes;
}

/* SS-Push: the server sends the other addresses of c on this host. */
static void push(struct sim *s, uint32_t host, uint32_t a, uint32_t c)
{
	uint64_t bit = 1ull << host;
	uint32_t x, sent = 0, steps = 0;

	for (x = s->chead[c]; x != SC_NIL && sent < s->p.max_push &&
	     steps < 4 * s->p.max_push; x = s->anext[x], steps++) {
		if (x == a || s->ahost[x] != host || (s->aknown[x] & bit))
			continue;
		s->aknown[x] |= bit;
		sent++;
	}
	s->r.csi_bytes += (uint64_t)sent * s->p.hash_bytes;
	s->r.server_bytes += (uint64_t)sent * s->p.hash_bytes;
}

static double read_block(struct sim *s, uint32_t vm, uint32_t host,
			 uint32_t a, uint32_t c)
{
	struct host *h = host_get(s, host);
	uint64_t bit = 1ull << host, akey = s->at.key[a];
	uint64_t ck = s->ct.key[c], vkey = mix(akey ^ mix(ck));
	struct sc_dcache *vc = vm_cache(s, vm);
	double lat;

	s->r.read_blocks++;
	if (vc && cache_access(vc, SC_DC_READ, akey, vkey, 0).kind !=
			  SC_DC_MISS) {
		s->r.vm_hits++;
		return 0;
	}
	if (!s->csi) {
		struct sc_dc_res res = cache_access(&h->cache, SC_DC_READ,
						    akey, vkey, 0);

		if (res.kind != SC_DC_MISS) {
			s->r.host_hits++;
			return 0;
		}
		s->r.read_misses++;
		bytes(s, s->p.block_size, 0);
		return s->p.net_ms + server_read(s, c);
	}
	if ((s->aknown[a] & bit) && (s->cheld[c] & bit)) {
		host_load(s, h, akey, c, SC_DC_READ);
		s->r.host_hits++;
		return 0;
	}
	if (!s->tracker) {
		/* Read#: the hash first, the data only if not cached. */
		bytes(s, 0, s->p.hash_bytes);
		s->aknown[a] |= bit;
		lat = s->p.net_ms;
		if (s->cheld[c] & bit) {
			host_load(s, h, akey, c, SC_DC_READ);
			s->r.content_hits++;
			return lat;
		}
		s->r.read_misses++;
		bytes(s, s->p.block_size, 0);
		lat += s->p.net_ms + server_read(s, c);
		host_load(s, h, akey, c, SC_DC_READ);
		return lat;
	}
	/* The tracker knows whether the host holds c. */
	s->aknown[a] |= bit;
	if (s->cheld[c] & bit) {
		bytes(s, 0, s->p.hash_bytes);
		s->r.content_hits++;
		lat = s->p.net_ms;
		host_load(s, h, akey, c, SC_DC_READ);
	} else {
		s->r.read_misses++;
		if (s->coop && !sc_dcache_holds(&s->server, ck) &&
		    (s->cheld[c] & ~bit)) {
			/* Delegated to a peer holding c: data host to host. */
			bytes(s, 0, 2 * s->p.hash_bytes);
			s->r.peer_bytes += s->p.block_size + s->p.hdr_bytes;
			lat = 1.5 * s->p.net_ms;
		} else {
			bytes(s, s->p.block_size, s->p.hash_bytes);
			lat = s->p.net_ms + server_read(s, c);
		}
		host_load(s, h, akey, c, SC_DC_READ);
	}
	if (s->push)
		push(s, host, a, c);
	return lat;
}

static double write_block(struct sim *s, uint32_t vm, uint32_t host,
			  uint32_t a, uint32_t c, bool stored)
{
	struct host *h = host_get(s, host);
	uint64_t bit = 1ull << host, akey = s->at.key[a];
	uint64_t ck = s->ct.key[c], vkey = mix(akey ^ mix(ck));
	struct sc_dcache *vc = vm_cache(s, vm);
	double lat = s->p.net_ms;

	s->r.write_blocks++;
	if (vc)
		cache_access(vc, SC_DC_WRITE, akey, vkey, 0);
	if (!s->csi) {
		cache_access(&h->cache, SC_DC_WRITE, akey, vkey, 0);
		bytes(s, s->p.block_size, 0);
	} else {
		if (s->dedup_write && (s->cheld[c] & bit)) {
			/* The hash alone; the data only on NEED_DATA. */
			bytes(s, 0, s->p.hash_bytes);
			if (!stored) {
				bytes(s, s->p.block_size, 0);
				lat += s->p.net_ms;
			}
		} else {
			bytes(s, s->p.block_size, 0);
		}
		host_load(s, h, akey, c, SC_DC_WRITE);
	}
	s->aknown[a] = s->csi ? bit : 0;
	cache_access(&s->server, SC_DC_WRITE, 0, ck, 0);
	if (!stored) {
		s->r.disk_writes++;
		lat += s->p.disk_ms;
	}
	return lat;
}

/* ---- cache mode ---- */

static void cache_block(struct sim *s, uint8_t op, uint32_t a, uint32_t c)
{
	uint64_t ck = s->ct.key[c];
	struct sc_dc_res res;

	/*
	 * The organisations that ignore addresses (plain content caches,
	 * ACQ, LRUCA) are the papers' address caches here: one entry per
	 * (address, content), no deduplication (CDAC's LRU and ARC).
	 */
	if (s->addr_cache)
		ck = mix(s->at.key[a] ^ mix(ck));
	res = cache_access(&s->one, op, s->at.key[a], ck, s->cshare[c]);

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

/* ---- the request loop ---- */

struct sim *sim_new(const struct sim_params *p)
{
	struct sim *s = calloc(1, sizeof(*s));
	struct sc_dc_config scfg = {
		.data_blocks = p->server_cache_blocks ? p->server_cache_blocks : 1,
		.block_size = p->block_size,
	};
	uint32_t feat;

	if (!s)
		oom();
	s->p = *p;
	if (!s->p.vms_per_host)
		s->p.vms_per_host = 10;
	feat = sc_variants[p->variant].features;
	s->csi = feat & CSI_FEAT_READ_HASH;
	s->tracker = feat & CSI_FEAT_TRACKER;
	s->push = feat & CSI_FEAT_PUSH;
	s->coop = feat & CSI_FEAT_COOP;
	s->dedup_write = feat & CSI_FEAT_DEDUP_WRITE;
	if (gtab_init(&s->at, 1024) || gtab_init(&s->ct, 1024))
		oom();
	s->acont = calloc(1024, 4);
	s->anext = calloc(1024, 4);
	s->aprev = calloc(1024, 4);
	s->aknown = calloc(1024, 8);
	s->ahost = calloc(1024, 2);
	s->cshare = calloc(1024, 4);
	s->chead = calloc(1024, 4);
	s->cheld = calloc(1024, 8);
	if (!s->acont || !s->anext || !s->aprev || !s->aknown || !s->ahost ||
	    !s->cshare || !s->chead || !s->cheld)
		oom();
	if (p->mode == SIM_MODE_CACHE) {
		struct sc_dc_config cfg = {
			.data_blocks = p->host_cache_blocks,
			.block_size = p->block_size,
		};

		if (sc_dcache_create(&s->one, p->policy, &cfg)) {
			sim_free(s);
			return NULL;
		}
		s->addr_cache = s->one.ops == &sc_dcache_content ||
				s->one.ops == &sc_dcache_acq ||
				s->one.ops == &sc_dcache_lruca;
		return s;
	}
	scfg.on_evict = server_evicted;
	scfg.ctx = s;
	if (sc_dcache_create(&s->server, p->server_policy ? p->server_policy :
				 "lru", &scfg)) {
		sim_free(s);
		return NULL;
	}
	{
		/* Check the host policy now rather than at the first request. */
		struct sc_dcache probe;
		struct sc_dc_config cfg = {
			.data_blocks = p->host_cache_blocks,
			.block_size = p->block_size,
		};

		if (sc_dcache_create(&probe, p->policy, &cfg)) {
			sim_free(s);
			return NULL;
		}
		sc_dcache_destroy(&probe);
	}
	return s;
}

bool sim_feed(struct sim *s, const struct sim_req *r)
{
	uint32_t host, i, a, c;
	uint64_t akey, ck;
	double lat = 0, l;
	bool isnew, stored;
	uint8_t op = r->op == 'W' ? SC_DC_WRITE : SC_DC_READ;

	if (s->p.vms && r->vm >= s->p.vms)
		return false;
	host = r->vm / s->p.vms_per_host;
	if (s->p.mode == SIM_MODE_SYSTEM && host >= SIM_MAX_HOSTS) {
		fprintf(stderr, "seacache-sim: more than %u hosts (VM %u); use --vms or --vms-per-host\n",
			SIM_MAX_HOSTS, r->vm);
		exit(2);
	}
	if (r->vm > s->max_vm)
		s->max_vm = r->vm;
	s->r.requests++;
	if (op == SC_DC_WRITE)
		s->r.writes++;
	else
		s->r.reads++;
	for (i = 0; i < r->nblocks; i++) {
		akey = r->file << 40 | ((r->lbn + i) & ((1ull << 40) - 1));
		a = addr_get(s, akey, &isnew);
		if (isnew)
			s->ahost[a] = (uint16_t)host;
		if (r->fp_len)
			ck = sim_fp_key(r->fp + (size_t)i * r->fp_len, r->fp_len);
		else if (op == SC_DC_WRITE)
			ck = mix(akey ^ (++s->wseq << 1 | 1));
		else if (s->acont[a] != SC_NIL)
			ck = s->ct.key[s->acont[a]];
		else
			ck = mix(akey);
		c = content_get(s, ck);
		if (op == SC_DC_WRITE) {
			if (s->acont[a] == c)
				s->r.silent_writes++;
			stored = s->cshare[c] > 0;
		} else {
			stored = true;
		}
		map_set(s, a, c);
		if (s->p.mode == SIM_MODE_CACHE) {
			cache_block(s, op, a, c);
			continue;
		}
		if (op == SC_DC_WRITE)
			l = write_block(s, r->vm, host, a, c, stored);
		else
			l = read_block(s, r->vm, host, a, c);
		if (l > lat)
			lat = l;
	}
	s->r.lat_sum_ms += lat;
	if (op == SC_DC_READ)
		s->r.read_lat_sum_ms += lat;
	return true;
}

void sim_preload(struct sim *s, const struct sim_req *r)
{
	uint32_t host, i, a;
	uint64_t akey, ck;
	bool isnew;

	if (s->p.vms && r->vm >= s->p.vms)
		return;
	host = r->vm / s->p.vms_per_host;
	for (i = 0; i < r->nblocks; i++) {
		akey = r->file << 40 | ((r->lbn + i) & ((1ull << 40) - 1));
		a = addr_get(s, akey, &isnew);
		if (!isnew)
			continue;
		s->ahost[a] = (uint16_t)(host < SIM_MAX_HOSTS ? host : 0);
		if (r->op == 'W') {
			s->preload_writes++;
			continue;
		}
		ck = r->fp_len ? sim_fp_key(r->fp + (size_t)i * r->fp_len,
					    r->fp_len) : mix(akey);
		map_set(s, a, content_get(s, ck));
	}
}

void sim_preload_done(struct sim *s)
{
	/*
	 * The preload saw every address and every content read, and counted
	 * the blocks written (each may bring one new content): the tables
	 * get exactly that room, where doubling left up to half unused.
	 */
	addr_resize(s, s->at.n ? s->at.n : 1);
	content_resize(s, s->ct.n + s->preload_writes + 1);
}

static uint64_t gtab_bytes(const struct gtab *t)
{
	return (uint64_t)t->cap * 8 + sc_itab_bytes(&t->it);
}

void sim_finish(struct sim *s, struct sim_result *out)
{
	uint64_t meta = sizeof(*s) + gtab_bytes(&s->at) + gtab_bytes(&s->ct) +
			(uint64_t)s->at.cap * (4 + 4 + 4 + 8 + 2) +
			(uint64_t)s->ct.cap * (4 + 4 + 8);
	uint32_t i;

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
	if (s->one.ops) {
		meta += s->one.ops->bytes(&s->one);
		s->r.loads = s->one.st.loads;
		s->r.evictions = s->one.st.evictions;
		memcpy(s->r.events, s->one.st.events, sizeof(s->r.events));
		s->r.event_names = s->one.ops->events;
	}
	s->r.tracked_blocks = s->at.n;
	s->r.sim_meta_bytes = meta;
	s->r.vms = s->r.requests ? s->max_vm + 1 : 0;
	if (s->p.vms && s->r.vms > s->p.vms)
		s->r.vms = s->p.vms;
	s->r.hosts = s->p.mode == SIM_MODE_CACHE ? 1 :
		     (s->r.vms + s->p.vms_per_host - 1) / s->p.vms_per_host;
	*out = s->r;
}

void sim_free(struct sim *s)
{
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < SIM_MAX_HOSTS; i++)
		if (s->hosts[i].on)
			sc_dcache_destroy(&s->hosts[i].cache);
	for (i = 0; i < s->nvmc; i++)
		sc_dcache_destroy(&s->vmc[i]);
	free(s->vmc);
	sc_dcache_destroy(&s->server);
	sc_dcache_destroy(&s->one);
	gtab_free(&s->at);
	gtab_free(&s->ct);
	free(s->acont);
	free(s->anext);
	free(s->aprev);
	free(s->aknown);
	free(s->ahost);
	free(s->cshare);
	free(s->chead);
	free(s->cheld);
	free(s);
}
