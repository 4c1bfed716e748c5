// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The content cache: one buffer per content, pluggable eviction. */
#include "seacache/ccache.h"

static uint64_t ccache_slot_key(const void *ctx, uint32_t slot)
{
	const struct sc_ccache *cc = ctx;

	return sc_hash_key64(&cc->hash[slot]);
}

/*
 * A retired slot keeps its buffer tagged in block[], so that no lookup
 * (a hinted one reads block[] and hash[] only) takes it for a live one.
 */
#define CCACHE_RETIRED ((uintptr_t)1)

static void *ccache_buf(const struct sc_ccache *cc, uint32_t slot)
{
	return (void *)((uintptr_t)cc->block[slot] & ~CCACHE_RETIRED);
}

/* A block's buffer back to where it came from (NULL: nothing). */
static void ccache_block_free(struct sc_ccache *cc, void *buf)
{
	if (buf)
		sc_block_free(cc->mem, buf, cc->block_size);
}

static sc_atomic_t *ccache_stripe(const struct sc_ccache *cc, uint32_t slot)
{
	return &cc->pins[(slot * 0x9e3779b1u) >> 22];
}

struct sc_ccache *sc_ccache_create(const struct sc_ccache_config *cfg)
{
	struct sc_ccache *cc;
	uint32_t cap = cfg->capacity_blocks;

	if (!sc_block_size_valid(cfg->block_size)) {
		sc_log_err("content cache: block size %u is invalid: use a power of two from %u to %u",
			   cfg->block_size, SC_BLOCK_SIZE_MIN, SC_BLOCK_SIZE_MAX);
		return NULL;
	}
	if (cap == 0 || cap == SC_NIL) {
		sc_log_err("content cache: capacity %u blocks is invalid: use 1 to %u",
			   cap, SC_NIL - 1);
		return NULL;
	}
	cc = sc_zalloc(sizeof(*cc));
	if (!cc)
		return NULL;
	cc->block_size = cfg->block_size;
	cc->capacity = cap;
	cc->limit = cap;
	cc->on_evict = cfg->on_evict;
	cc->ctx = cfg->ctx;
	cc->mem = cfg->mem;
	cc->hash = sc_calloc(cap, sizeof(*cc->hash));
	cc->share = sc_calloc(cap, sizeof(*cc->share));
	cc->block = sc_calloc(cap, sizeof(*cc->block));
	cc->pins = sc_calloc(SC_CCACHE_PIN_STRIPES, sizeof(*cc->pins));
	cc->retired_head = SC_NIL;
	if (!cc->hash || !cc->share || !cc->block || !cc->pins ||
	    sc_itab_init(&cc->tab, cap)) {
		sc_log_err("content cache: cannot allocate the slots of %u blocks",
			   cap);
		goto fail;
	}
	if (sc_policy_create(&cc->policy, cfg->policy ? cfg->policy : "lru",
			     cap, cc->share))
		goto fail;
	cc->policy.key = ccache_slot_key;
	cc->policy.key_ctx = cc;
	cc->free_head = sc_itab_free_all(&cc->tab);
	return cc;
fail:
	sc_ccache_destroy(cc);
	return NULL;
}

void sc_ccache_destroy(struct sc_ccache *cc)
{
	uint32_t i;

	if (!cc)
		return;
	sc_policy_destroy(&cc->policy);
	sc_itab_destroy(&cc->tab);
	for (i = 0; cc->block && i < cc->capacity; i++)
		ccache_block_free(cc, ccache_buf(cc, i));
	sc_free(cc->block);
	sc_free(cc->pins);
	sc_free(cc->share);
	sc_free(cc->hash);
	sc_free(cc);
}

uint32_t sc_ccache_find(const struct sc_ccache *cc, const struct sc_hash *h)
{
	uint32_t i;

	for (i = sc_itab_first(&cc->tab, sc_hash_key64(h)); i != SC_NIL;
	     i = sc_itab_next(&cc->tab, i))
		if (sc_hash_eq(&cc->hash[i], h))
			return i;
	return SC_NIL;
}

/* The lookup of h in slot (SC_NIL: not cached): counted, told the policy. */
static const void *ccache_hit(struct sc_ccache *cc, uint32_t slot)
{
	if (slot == SC_NIL) {
		cc->st.misses++;
		return NULL;
	}
	cc->st.hits++;
	cc->policy.ops->hit(&cc->policy, slot);
	return sc_ccache_slot_data(cc, slot);
}

const void *sc_ccache_lookup(struct sc_ccache *cc, const struct sc_hash *h)
{
	return ccache_hit(cc, sc_ccache_find(cc, h));
}

/*
 * The slot of h, tried at *hint first: a slot with a block holds the one
 * content its hash names, so a hint that is stale (its block left, the
 * slot went to another content) only costs the index walk.
 */
static uint32_t ccache_find_hinted(const struct sc_ccache *cc,
				   const struct sc_hash *h, uint32_t *hint)
{
	uint32_t slot = *hint;

	if (slot < cc->capacity && cc->block[slot] &&
	    !((uintptr_t)cc->block[slot] & CCACHE_RETIRED) &&
	    sc_hash_eq(&cc->hash[slot], h))
		return slot;
	slot = sc_ccache_find(cc, h);
	*hint = slot;
	return slot;
}

const void *sc_ccache_lookup_pin(struct sc_ccache *cc, const struct sc_hash *h,
				 struct sc_ccache_pins *p, uint32_t *hint)
{
	uint32_t slot = hint ? ccache_find_hinted(cc, h, hint) :
			       sc_ccache_find(cc, h);
	const void *data = ccache_hit(cc, slot);

	if (!data)
		return NULL;
	sc_atomic_inc(ccache_stripe(cc, slot));
	p->slot[p->n] = slot;
	p->buf[p->n++] = data;
	return data;
}

/*
 * Each stripe's count drops once the reader is done with the buffer (a
 * fully ordered decrement); reading the retired count after it pairs
 * with ccache_unlink_slot, which counts the retirement before it reads
 * the stripe: one of the two sees the other, so a retired slot is never
 * left waiting after its last pin is gone.
 */
bool sc_ccache_unpin(struct sc_ccache *cc, struct sc_ccache_pins *p)
{
	uint32_t i;

	if (!p->n)
		return false;
	for (i = 0; i < p->n; i++)
		sc_atomic_dec_return(ccache_stripe(cc, p->slot[i]));
	p->n = 0;
	return sc_atomic_read_acquire(&cc->retired) != 0;
}

static void ccache_free_slot(struct sc_ccache *cc, uint32_t slot)
{
	cc->block[slot] = NULL;
	sc_itab_free_push(&cc->tab, &cc->free_head, slot);
}

void sc_ccache_reap(struct sc_ccache *cc)
{
	uint32_t *link = &cc->retired_head, slot;

	while (*link != SC_NIL) {
		slot = *link;
		if (sc_atomic_read_acquire(ccache_stripe(cc, slot))) {
			link = &cc->tab.next[slot];
			continue;
		}
		*link = cc->tab.next[slot];
		ccache_block_free(cc, ccache_buf(cc, slot));
		ccache_free_slot(cc, slot);
		sc_atomic_dec_return(&cc->retired);
	}
}

/*
 * Take the block out of slot; its buffer, detached, and the slot free, or
 * NULL if the slot's stripe counts pins: the slot is then retired until
 * sc_ccache_reap finds the stripe at zero.
 */
static void *ccache_unlink_slot(struct sc_ccache *cc, uint32_t slot)
{
	void *buf = cc->block[slot];

	sc_itab_del(&cc->tab, sc_hash_key64(&cc->hash[slot]), slot);
	cc->policy.ops->remove(&cc->policy, slot);
	cc->st.blocks--;
	/* counted before the stripe is read: see sc_ccache_unpin */
	sc_atomic_inc_return(&cc->retired);
	if (sc_atomic_read_acquire(ccache_stripe(cc, slot))) {
		cc->block[slot] = (void *)((uintptr_t)buf | CCACHE_RETIRED);
		cc->tab.next[slot] = cc->retired_head;
		cc->retired_head = slot;
		return NULL;
	}
	sc_atomic_dec_return(&cc->retired);
	ccache_free_slot(cc, slot);
	return buf;
}

/* Evict the policy's victim (the cache is not empty); its buffer. */
static void *ccache_evict_one(struct sc_ccache *cc)
{
	uint32_t slot = cc->policy.ops->victim(&cc->policy);
	struct sc_hash gone = cc->hash[slot];
	void *buf = ccache_unlink_slot(cc, slot);

	cc->st.evictions++;
	if (cc->on_evict)
		cc->on_evict(cc->ctx, &gone);
	return buf;
}

/*
 * A block allocation that may enter reclaim, marked as such: a shrinker
 * called from inside it must not wait for the lock its caller holds.
 */
static void *ccache_alloc_reclaiming(struct sc_ccache *cc)
{
	void *buf;

	cc->allocating = true;
	buf = sc_block_alloc(cc->mem, cc->block_size, true);
	cc->allocating = false;
	return buf;
}

/*
 * A buffer for a block coming in: a new one below the limit, above it one
 * from free memory only, else the victim's (ccache.h says why); NULL if
 * none can be had and nothing is cached.
 */
static void *ccache_buffer(struct sc_ccache *cc)
{
	void *buf;

	if (cc->st.blocks < cc->limit) {
		buf = ccache_alloc_reclaiming(cc);
		if (buf)
			return buf;
		cc->limit = (uint32_t)cc->st.blocks;
		cc->st.no_memory++;
	} else if (cc->limit < cc->capacity) {
		buf = sc_block_alloc(cc->mem, cc->block_size, false);
		if (buf) {
			cc->limit++;
			return buf;
		}
		cc->st.no_memory++;
	}
	if (!cc->st.blocks)
		return NULL;
	buf = ccache_evict_one(cc);
	/* the victim's buffer is still read: a new one */
	return buf ? buf : ccache_alloc_reclaiming(cc);
}

/* Take a slot for content h, known not to be cached; its buffer or NULL. */
static void *ccache_place(struct sc_ccache *cc, const struct sc_hash *h,
			 uint32_t share)
{
	void *buf;
	uint32_t slot;

	sc_policy_admit(&cc->policy, sc_hash_key64(h));
	buf = ccache_buffer(cc);
	if (!buf)
		return NULL;
	if (cc->free_head == SC_NIL)
		sc_ccache_reap(cc);
	/* the free slots are retired ones, still read: more room */
	while (cc->free_head == SC_NIL && cc->st.blocks)
		ccache_block_free(cc, ccache_evict_one(cc));
	if (cc->free_head == SC_NIL) {
		ccache_block_free(cc, buf);
		return NULL;
	}
	slot = sc_itab_free_pop(&cc->tab, &cc->free_head);
	cc->hash[slot] = *h;
	cc->share[slot] = share;
	cc->block[slot] = buf;
	sc_itab_add(&cc->tab, sc_hash_key64(h), slot);
	cc->policy.ops->insert(&cc->policy, slot);
	cc->st.inserts++;
	cc->st.bytes_in += cc->block_size;
	cc->st.blocks++;
	return buf;
}

void *sc_ccache_reserve(struct sc_ccache *cc, const struct sc_hash *h,
			uint32_t share)
{
	if (sc_ccache_find(cc, h) != SC_NIL)
		return NULL;
	return ccache_place(cc, h, share);
}

int sc_ccache_insert(struct sc_ccache *cc, const struct sc_hash *h,
		     const void *data, uint32_t share)
{
	uint32_t slot = sc_ccache_find(cc, h);
	void *buf;

	if (slot != SC_NIL) {
		if (sc_memcmp(sc_ccache_slot_data(cc, slot), data,
			      cc->block_size) != 0) {
			char hex[2 * SC_HASH_LEN + 1];

			sc_hash_to_hex(h, hex);
			sc_log_err_ratelimited("content cache: two different blocks have the hash %s; the new one is not cached",
					       hex);
			cc->st.collisions++;
			return -SC_EEXIST;
		}
		cc->share[slot] = share;
		cc->policy.ops->hit(&cc->policy, slot);
		return 0;
	}
	buf = ccache_place(cc, h, share);
	if (!buf)
		return -SC_ENOMEM;
	sc_memcpy(buf, data, cc->block_size);
	return 0;
}

void sc_ccache_set_share(struct sc_ccache *cc, const struct sc_hash *h,
			 uint32_t share)
{
	uint32_t slot = sc_ccache_find(cc, h);

	if (slot != SC_NIL)
		cc->share[slot] = share;
}

bool sc_ccache_remove(struct sc_ccache *cc, const struct sc_hash *h)
{
	uint32_t slot = sc_ccache_find(cc, h);

	if (slot == SC_NIL)
		return false;
	ccache_block_free(cc, ccache_unlink_slot(cc, slot));
	return true;
}

uint32_t sc_ccache_shrink(struct sc_ccache *cc, uint32_t n)
{
	uint32_t done;

	for (done = 0; done < n && cc->st.blocks; done++)
		ccache_block_free(cc, ccache_evict_one(cc));
	cc->st.shrunk += done;
	cc->limit = (uint32_t)cc->st.blocks;
	return done;
}

void sc_ccache_get_stats(const struct sc_ccache *cc,
			 struct sc_ccache_stats *out)
{
	*out = cc->st;
	out->limit = cc->limit;
	out->retired = sc_atomic_read_acquire(&cc->retired);
	out->meta_bytes = sizeof(*cc) +
		(uint64_t)cc->capacity * (sizeof(*cc->hash) +
					  sizeof(*cc->share) +
					  sizeof(*cc->block)) +
		SC_CCACHE_PIN_STRIPES * sizeof(*cc->pins) +
		sc_itab_bytes(&cc->tab) + cc->policy.ops->bytes(&cc->policy);
	out->mem_bytes = out->meta_bytes +
			 (out->blocks + out->retired) * cc->block_size;
}
