/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Request-level caches: the dedup-aware cache organisations of the papers,
 * one small interface, one file per organisation (lib/dcache/dcache_*.c),
 * registered in lib/dcache/dcache.c.
 *
 * The slot-level policies (policy.h) decide which content slot to evict;
 * the organisations here decide more: which addresses a cache keeps apart
 * from its data (D-LRU, D-ARC, CDAC), how references and data share space
 * (CBBC), whether a block is admitted at all (ACQ), what another cache
 * level holds (LRUCA).  They see whole requests and answer what happened:
 *
 *   access(req)  one block request: address, content, read or write;
 *                the answer says what kind of hit it was, whether the
 *                content was loaded, how many blocks were evicted.
 *
 * Addresses and contents are 64-bit keys chosen by the caller: equal keys
 * mean the same logical block, resp. the same content (a caller holding
 * SHA-256 hashes interns them, or accepts the collision odds of a 64-bit
 * digest; the simulator documents its choice).
 *
 * A spec that names no organisation here but a slot-level policy ("lru",
 * "elru:16", "arc") gives a plain content cache under that policy: one
 * copy per content, the address ignored.
 *
 * Not thread-safe: the caller serializes.
 */
#ifndef SEACACHE_DCACHE_H
#define SEACACHE_DCACHE_H

#include "compat.h"
#include "defaults.h"

enum sc_dc_op { SC_DC_READ = 0, SC_DC_WRITE = 1 };

enum sc_dc_kind {
	SC_DC_MISS = 0,		/* the data had to come from below */
	SC_DC_HIT,		/* the address maps to cached data */
	SC_DC_CONTENT_HIT,	/* the address did not; its content is cached */
	SC_DC_SILENT,		/* a write of the content already at the address */
};

struct sc_dc_req {
	uint64_t addr;
	uint64_t content;
	uint32_t share;		/* sharing count known to the caller, 0: none */
	uint32_t parts;		/* 4 KiB parts touched, bit i = part i; 0: all */
	uint8_t op;		/* enum sc_dc_op */
};

struct sc_dc_res {
	uint8_t kind;		/* enum sc_dc_kind */
	bool admitted;		/* the content was loaded into the cache */
	uint32_t evicted;	/* data blocks evicted to make room */
	uint32_t event;		/* the request's event, see ops->events */
};

struct sc_dc_config {
	uint32_t data_blocks;	/* data capacity in blocks, >= 1 */
	uint32_t meta_entries;	/* address entries (split caches); 0: default */
	uint32_t block_size;	/* bytes, 4 KiB .. 64 KiB; 0: SC_BLOCK_SIZE_DEFAULT */
	uint32_t peer_blocks;	/* LRUCA: the other level's capacity; 0: same */
	/* A content left the cache (evicted or dropped), or NULL. */
	void (*on_evict)(void *ctx, uint64_t content);
	void *ctx;
};

#define SC_DC_EVENTS_MAX 12

struct sc_dc_stats {
	uint64_t reads, writes;
	uint64_t hits, content_hits, misses, silent;	/* by kind */
	uint64_t read_hits;	/* reads answered SC_DC_HIT */
	uint64_t loads;		/* contents loaded (admitted) */
	uint64_t evictions;
	/* The organisation's own counters, named by ops->events. */
	uint64_t events[SC_DC_EVENTS_MAX];
};

struct sc_dcache;

struct sc_dcache_ops {
	const char *name;
	const char *help;	/* one line: the arguments */
	int (*init)(struct sc_dcache *c, const char *arg);
	void (*destroy)(struct sc_dcache *c);
	void (*access)(struct sc_dcache *c, const struct sc_dc_req *r,
		       struct sc_dc_res *res);
	/* Is content cached (data present)?  No recency change. */
	bool (*holds)(const struct sc_dcache *c, uint64_t content);
	/* Optional: the other level now holds (or no longer holds) content. */
	void (*peer)(struct sc_dcache *c, uint64_t content, bool held);
	/*
	 * Optional, a hint: r will come soon.  Asked twice, far ahead
	 * (far true) and again nearer: bring in the index lines its lookups
	 * start with, then the first entries they name.
	 */
	void (*prefetch)(const struct sc_dcache *c, const struct sc_dc_req *r,
			 bool far);
	size_t (*bytes)(const struct sc_dcache *c);	/* metadata held */
	uint64_t (*blocks)(const struct sc_dcache *c);	/* data blocks held */
	/* Names of st.events[] (and res.event values), NULL-terminated. */
	const char *const *events;
};

struct sc_dcache {
	const struct sc_dcache_ops *ops;
	void *priv;
	struct sc_dc_config cfg;
	struct sc_dc_stats st;
};

/*
 * Build an organisation from a spec "name" or "name:arg"; a slot-level
 * policy spec gives a content cache under that policy.  0 or -SC_EINVAL
 * (logged, with the choices) or -SC_ENOMEM.
 */
int sc_dcache_create(struct sc_dcache *c, const char *spec,
		     const struct sc_dc_config *cfg);
void sc_dcache_destroy(struct sc_dcache *c);

/* The registered organisations, for --help texts; NULL past the last. */
const struct sc_dcache_ops *sc_dcache_at(unsigned int i);

static inline void sc_dcache_access(struct sc_dcache *c,
				    const struct sc_dc_req *r,
				    struct sc_dc_res *res)
{
	res->kind = SC_DC_MISS;
	res->admitted = false;
	res->evicted = 0;
	res->event = 0;
	c->ops->access(c, r, res);
	if (r->op == SC_DC_WRITE)
		c->st.writes++;
	else
		c->st.reads++;
	switch (res->kind) {
	case SC_DC_HIT:
		c->st.hits++;
		if (r->op == SC_DC_READ)
			c->st.read_hits++;
		break;
	case SC_DC_CONTENT_HIT:
		c->st.content_hits++;
		break;
	case SC_DC_SILENT:
		c->st.silent++;
		break;
	default:
		c->st.misses++;
	}
	c->st.loads += res->admitted;
	c->st.evictions += res->evicted;
}

static inline bool sc_dcache_holds(const struct sc_dcache *c, uint64_t content)
{
	return c->ops->holds(c, content);
}

static inline void sc_dcache_peer(struct sc_dcache *c, uint64_t content,
				  bool held)
{
	if (c->ops->peer)
		c->ops->peer(c, content, held);
}

/* Number of 4 KiB parts in a block of the cache (1..16). */
static inline uint32_t sc_dcache_parts(const struct sc_dcache *c)
{
	return c->cfg.block_size / 4096u;
}

extern const struct sc_dcache_ops sc_dcache_content;
extern const struct sc_dcache_ops sc_dcache_dlru, sc_dcache_darc;
extern const struct sc_dcache_ops sc_dcache_cdac_lru, sc_dcache_cdac_arc;
extern const struct sc_dcache_ops sc_dcache_cbbc;
extern const struct sc_dcache_ops sc_dcache_acq;
extern const struct sc_dcache_ops sc_dcache_lruca;

#endif /* SEACACHE_DCACHE_H */
