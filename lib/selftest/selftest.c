// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Self-tests of the core, for user space and the kernel alike. */
#include "seacache/csi_codec.h"
#include "seacache/hostcache.h"
#include "seacache/peer_token.h"
#include "seacache/prng.h"
#include "seacache/selftest.h"
#include "seacache/variant.h"

/*
 * A check: true if cond holds; otherwise logs where it failed, sets *err
 * and returns false, and the caller jumps to its cleanup.
 */
static bool selftest_ok(bool cond, const char *what, int line, int *err)
{
	if (cond)
		return true;
	sc_log_err("selftest: %s:%d: this does not hold: %s", __FILE__, line,
		   what);
	*err = -SC_EIO;
	return false;
}

#define OK(cond) selftest_ok((cond), #cond, __LINE__, &err)

#define BS SC_BLOCK_SIZE_MIN

/* Contents 0..n-1: blocks of seeded bytes and their hashes. */
struct corpus {
	uint32_t n;
	uint8_t *data;
	struct sc_hash *h;
};

static void corpus_free(struct corpus *c)
{
	sc_free(c->data);
	sc_free(c->h);
}

static int corpus_make(struct corpus *c, uint32_t n, uint64_t seed)
{
	struct sc_hasher *hs = sc_hasher_new();
	struct sc_prng rng;
	uint32_t i;
	int err = -SC_ENOMEM;

	c->n = n;
	c->data = sc_calloc(n, BS);
	c->h = sc_calloc(n, sizeof(*c->h));
	if (!hs || !c->data || !c->h)
		goto out;
	sc_prng_seed(&rng, seed);
	for (i = 0; i < n; i++) {
		sc_prng_fill(&rng, c->data + (size_t)i * BS, BS);
		err = sc_hasher_digest(hs, c->data + (size_t)i * BS, BS,
				       &c->h[i]);
		if (err)
			goto out;
	}
	err = 0;
out:
	sc_hasher_free(hs);
	if (err)
		corpus_free(c);
	return err;
}

static const void *corpus_block(const struct corpus *c, uint32_t i)
{
	return c->data + (size_t)i * BS;
}

static bool hex_is(const struct sc_hash *h, const char *hex)
{
	char buf[2 * SC_HASH_LEN + 1];

	sc_hash_to_hex(h, buf);
	return sc_strcmp(buf, hex) == 0;
}

static int test_hash_vectors(const struct sc_selftest_opts *o)
{
	struct sc_hasher *hs = sc_hasher_new();
	uint8_t *zero = sc_calloc(1, SC_BLOCK_SIZE_MAX);
	struct sc_hash h;
	int err = 0;

	(void)o;
	if (!OK(hs && zero))
		goto out;
	if (!OK(sc_hasher_digest(hs, "abc", 3, &h) == 0))
		goto out;
	if (!OK(hex_is(&h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")))
		goto out;
	if (!OK(sc_hasher_digest(hs, zero, 4096, &h) == 0))
		goto out;
	if (!OK(hex_is(&h, "ad7facb2586fc6e966c004d7d1d16b024f5805ff7cb47c7a85dabd8b48892ca7")))
		goto out;
	if (!OK(sc_hasher_digest(hs, zero, SC_BLOCK_SIZE_MAX, &h) == 0))
		goto out;
	if (!OK(hex_is(&h, "de2f256064a0af797747c2b97505dc0b9f3df0de4f489eac731c23ae9ca9cc31")))
		goto out;
	if (!OK(sc_block_size_valid(4096) && sc_block_size_valid(65536)))
		goto out;
	if (!OK(!sc_block_size_valid(2048) && !sc_block_size_valid(131072)))
		goto out;
	if (!OK(!sc_block_size_valid(12288)))
		goto out;
out:
	sc_free(zero);
	sc_hasher_free(hs);
	return err;
}

static struct sc_ccache *small_cache(const char *policy, uint32_t cap,
				     void (*on_evict)(void *, const struct sc_hash *),
				     void *ctx)
{
	struct sc_ccache_config cfg = {
		.block_size = BS, .capacity_blocks = cap, .policy = policy,
		.on_evict = on_evict, .ctx = ctx,
	};

	return sc_ccache_create(&cfg);
}

static int test_lru_order(const struct sc_selftest_opts *o)
{
	struct corpus c = { 0 };
	struct sc_ccache *cc = NULL;
	const uint8_t *d;
	void *buf;
	int err = corpus_make(&c, 5, o->seed);

	if (err)
		return err;
	cc = small_cache("lru", 3, NULL, NULL);
	if (!OK(cc))
		goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[0], corpus_block(&c, 0), 1) == 0))
		goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[1], corpus_block(&c, 1), 1) == 0))
		goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[2], corpus_block(&c, 2), 1) == 0))
		goto out;
	if (!OK(sc_ccache_lookup(cc, &c.h[0])))
		goto out;	/* 1 is now the oldest */
	if (!OK(sc_ccache_insert(cc, &c.h[3], corpus_block(&c, 3), 1) == 0))
		goto out;
	if (!OK(sc_ccache_find(cc, &c.h[1]) == SC_NIL))
		goto out;
	if (!OK(sc_ccache_find(cc, &c.h[0]) != SC_NIL))
		goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[4], corpus_block(&c, 4), 1) == 0))
		goto out;
	if (!OK(sc_ccache_find(cc, &c.h[2]) == SC_NIL))
		goto out;
	if (!OK(cc->st.evictions == 2 && cc->st.blocks == 3))
		goto out;
	/* Filling in place: the reserved buffer is what readers get. */
	if (!OK(!sc_ccache_reserve(cc, &c.h[4], 1)))
		goto out;
	buf = sc_ccache_reserve(cc, &c.h[1], 1);
	if (!OK(buf && sc_ccache_find(cc, &c.h[0]) == SC_NIL))
		goto out;
	sc_memcpy(buf, corpus_block(&c, 1), BS);
	d = sc_ccache_lookup(cc, &c.h[1]);
	if (!OK(d && sc_memcmp(d, corpus_block(&c, 1), BS) == 0))
		goto out;
out:
	sc_ccache_destroy(cc);
	corpus_free(&c);
	return err;
}

struct evict_log {
	struct sc_hash last;
	uint32_t count;
};

static void note_evict(void *ctx, const struct sc_hash *h)
{
	struct evict_log *l = ctx;

	l->last = *h;
	l->count++;
}

/*
 * ELRU-n picks the least-shared block among exactly the n least recently
 * used: a less-shared block just outside the window must survive.
 */
static int test_elru_window(const struct sc_selftest_opts *o)
{
	/* Oldest first: sharing 5 4 3 1 2 9; ELRU-3 sees 5 4 3. */
	static const uint32_t share[] = { 5, 4, 3, 1, 2, 9 };
	struct evict_log log = { .count = 0 };
	struct corpus c = { 0 };
	struct sc_ccache *cc = NULL;
	uint32_t i;
	int err = corpus_make(&c, 8, o->seed + 1);

	if (err)
		return err;
	cc = small_cache("elru:3", 6, note_evict, &log);
	if (!OK(cc))
		goto out;
	for (i = 0; i < 6; i++)
		if (!OK(sc_ccache_insert(cc, &c.h[i], corpus_block(&c, i),
					       share[i]) == 0))
			goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[6], corpus_block(&c, 6), 1) == 0))
		goto out;
	if (!OK(log.count == 1 && sc_hash_eq(&log.last, &c.h[2])))
		goto out;
	/* Window now 5 4 1 (contents 0 1 3): content 3 goes. */
	if (!OK(sc_ccache_insert(cc, &c.h[7], corpus_block(&c, 7), 1) == 0))
		goto out;
	if (!OK(log.count == 2 && sc_hash_eq(&log.last, &c.h[3])))
		goto out;
	/* A sharing count raised in place changes the choice. */
	sc_ccache_set_share(cc, &c.h[4], 100);
	if (!OK(cc->share[sc_ccache_find(cc, &c.h[4])] == 100))
		goto out;
	/* Ties go to the least recently used. */
	sc_ccache_destroy(cc);
	cc = small_cache("elru:4", 3, note_evict, &log);
	if (!OK(cc))
		goto out;
	for (i = 0; i < 4; i++)
		if (!OK(sc_ccache_insert(cc, &c.h[i], corpus_block(&c, i),
					       7) == 0))
			goto out;
	if (!OK(log.count == 3 && sc_hash_eq(&log.last, &c.h[0])))
		goto out;
out:
	sc_ccache_destroy(cc);
	corpus_free(&c);
	return err;
}

/* Blocks held, block data bytes held and the limit are n, n, limit. */
static bool cache_holds(const struct sc_ccache *cc, uint32_t n,
			uint32_t limit)
{
	struct sc_ccache_stats st;

	sc_ccache_get_stats(cc, &st);
	return st.blocks == n && st.limit == limit &&
	       st.mem_bytes - st.meta_bytes == (uint64_t)n * BS;
}

/*
 * Memory comes with the blocks and goes with them: shrinking evicts
 * through the policy (LRU: oldest first), tells on_evict, frees the
 * buffers and lowers the limit; inserts raise it again, one block at a
 * time, up to the capacity, and only then evict.
 */
static int test_cache_shrink(const struct sc_selftest_opts *o)
{
	struct evict_log log = { .count = 0 };
	struct corpus c = { 0 };
	struct sc_ccache *cc = NULL;
	uint32_t i;
	int err = corpus_make(&c, 10, o->seed + 9);

	if (err)
		return err;
	cc = small_cache("lru", 8, note_evict, &log);
	if (!OK(cc && cache_holds(cc, 0, 8)))
		goto out;
	for (i = 0; i < 6; i++)
		if (!OK(sc_ccache_insert(cc, &c.h[i], corpus_block(&c, i),
					       1) == 0))
			goto out;
	if (!OK(cache_holds(cc, 6, 8) && log.count == 0))
		goto out;
	if (!OK(sc_ccache_shrink(cc, 2) == 2))
		goto out;
	if (!OK(cache_holds(cc, 4, 4) && cc->st.shrunk == 2))
		goto out;
	if (!OK(log.count == 2 && sc_hash_eq(&log.last, &c.h[1])))
		goto out;
	if (!OK(!sc_ccache_lookup(cc, &c.h[0]) && !sc_ccache_lookup(cc, &c.h[1])))
		goto out;
	for (i = 2; i < 6; i++)
		if (!OK(sc_ccache_find(cc, &c.h[i]) != SC_NIL))
			goto out;
	if (!OK(sc_ccache_shrink(cc, 100) == 4 && cache_holds(cc, 0, 0)))
		goto out;
	if (!OK(log.count == 6 && sc_ccache_shrink(cc, 1) == 0))
		goto out;
	/* grows back with free memory, without evicting, to the capacity */
	for (i = 0; i < 8; i++)
		if (!OK(sc_ccache_insert(cc, &c.h[i], corpus_block(&c, i),
					       1) == 0))
			goto out;
	if (!OK(cache_holds(cc, 8, 8) && log.count == 6))
		goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[8], corpus_block(&c, 8), 1) == 0))
		goto out;
	if (!OK(cache_holds(cc, 8, 8) && log.count == 7 &&
		sc_hash_eq(&log.last, &c.h[0])))
		goto out;
	/* a block removed frees its buffer, the limit stays */
	if (!OK(sc_ccache_remove(cc, &c.h[8]) && cache_holds(cc, 7, 8)))
		goto out;
	if (!OK(sc_ccache_lookup(cc, &c.h[7]) &&
		sc_memcmp(sc_ccache_lookup(cc, &c.h[7]), corpus_block(&c, 7),
			  BS) == 0))
		goto out;
out:
	sc_ccache_destroy(cc);
	corpus_free(&c);
	return err;
}

/* An LRU cache of two slots holding the corpus's contents 0 and 1. */
static struct sc_ccache *lru_of_two(const struct corpus *c)
{
	struct sc_ccache *cc = small_cache("lru", 2, NULL, NULL);

	if (cc && (sc_ccache_insert(cc, &c->h[0], corpus_block(c, 0), 1) ||
		   sc_ccache_insert(cc, &c->h[1], corpus_block(c, 1), 1))) {
		sc_ccache_destroy(cc);
		cc = NULL;
	}
	return cc;
}

static uint64_t cache_retired(const struct sc_ccache *cc)
{
	struct sc_ccache_stats st;

	sc_ccache_get_stats(cc, &st);
	return st.retired;
}

/*
 * Pinned blocks (the host's hit path copies them and unpins them without
 * the cache's lock): evicted, shrunk or removed while pinned, a block
 * leaves the cache at once but its buffer keeps its bytes, its slot
 * retired, until the last reader has unpinned it and sc_ccache_reap
 * frees it (KASAN, ASan and kmemleak see the rest); an insert that
 * would have reused it takes a new buffer, and one that finds only
 * retired slots free evicts another block for a slot.
 */
static int test_cache_pins(const struct sc_selftest_opts *o)
{
	struct sc_ccache_pins *p = sc_calloc(3, sizeof(*p));
	struct corpus c = { 0 };
	struct sc_ccache *cc = NULL;
	const void *a, *b;
	int err = corpus_make(&c, 5, o->seed + 11);

	if (err || !OK(p))
		goto out;
	cc = lru_of_two(&c);
	if (!OK(cc))
		goto out;
	/* block 0 pinned twice by one reader and once by another */
	a = sc_ccache_lookup_pin(cc, &c.h[0], &p[0], NULL);
	b = sc_ccache_lookup_pin(cc, &c.h[0], &p[1], NULL);
	if (!OK(a && a == b && sc_ccache_lookup_pin(cc, &c.h[0], &p[0], NULL) == a))
		goto out;
	if (!OK(!sc_ccache_lookup_pin(cc, &c.h[4], &p[0], NULL) && p[0].n == 2))
		goto out;
	/* block 2 pushes out 0 (pinned: its slot retired), then 1 for a slot */
	if (!OK(sc_ccache_lookup(cc, &c.h[1]) &&
		sc_ccache_insert(cc, &c.h[2], corpus_block(&c, 2), 1) == 0))
		goto out;
	if (!OK(sc_ccache_find(cc, &c.h[0]) == SC_NIL &&
		sc_ccache_find(cc, &c.h[1]) == SC_NIL &&
		cache_retired(cc) == 1 &&
		sc_memcmp(a, corpus_block(&c, 0), BS) == 0))
		goto out;
	/* one reader done: the other still reads the bytes */
	if (!OK(sc_ccache_unpin(cc, &p[0]) && p[0].n == 0))
		goto out;
	sc_ccache_reap(cc);
	if (!OK(cache_retired(cc) == 1 &&
		sc_memcmp(b, corpus_block(&c, 0), BS) == 0))
		goto out;
	/* the last one done: freed, and the slot serves block 3 */
	if (!OK(sc_ccache_unpin(cc, &p[1])))
		goto out;
	sc_ccache_reap(cc);
	if (!OK(cache_retired(cc) == 0 && cache_holds(cc, 1, 2) &&
		sc_ccache_insert(cc, &c.h[3], corpus_block(&c, 3), 1) == 0 &&
		cache_holds(cc, 2, 2)))
		goto out;
	if (!OK(sc_memcmp(sc_ccache_lookup(cc, &c.h[2]), corpus_block(&c, 2),
			  BS) == 0 &&
		sc_memcmp(sc_ccache_lookup(cc, &c.h[3]), corpus_block(&c, 3),
			  BS) == 0))
		goto out;
	/* shrunk and removed while pinned */
	a = sc_ccache_lookup_pin(cc, &c.h[2], &p[2], NULL);
	b = sc_ccache_lookup_pin(cc, &c.h[3], &p[2], NULL);
	if (!OK(a && b && sc_ccache_shrink(cc, 1) == 1 &&
		sc_ccache_remove(cc, &c.h[3]) && cache_retired(cc) == 2))
		goto out;
	if (!OK(sc_memcmp(a, corpus_block(&c, 2), BS) == 0 &&
		sc_memcmp(b, corpus_block(&c, 3), BS) == 0))
		goto out;
	if (!OK(sc_ccache_unpin(cc, &p[2])))
		goto out;
	sc_ccache_reap(cc);
	if (!OK(cache_retired(cc) == 0 && cache_holds(cc, 0, 1)))
		goto out;
	/* nothing retired: an unpin asks for no reap */
	if (!OK(sc_ccache_insert(cc, &c.h[4], corpus_block(&c, 4), 1) == 0 &&
		sc_ccache_lookup_pin(cc, &c.h[4], &p[2], NULL) &&
		!sc_ccache_unpin(cc, &p[2])))
		goto out;
out:
	sc_ccache_destroy(cc);
	sc_free(p);
	corpus_free(&c);
	return err;
}

/*
 * A slot hint (the CSI-Map keeps one per content for the host's hit
 * path) finds its content, and one that is out of range, names a free
 * slot or a slot of another content never serves the wrong block: the
 * lookup finds the content's own slot, or none, and says so in the hint.
 */
static int test_cache_hint(const struct sc_selftest_opts *o)
{
	struct sc_ccache_pins *p = sc_zalloc(sizeof(*p));
	struct corpus c = { 0 };
	struct sc_ccache *cc = NULL;
	uint32_t hint0 = SC_NIL - 1, hint1;
	int err = corpus_make(&c, 3, o->seed + 13);

	if (err || !OK(p))
		goto out;
	cc = lru_of_two(&c);
	if (!OK(cc))
		goto out;
	/* out of range: found by the index, the hint set */
	if (!OK(sc_ccache_lookup_pin(cc, &c.h[0], p, &hint0) ==
		sc_ccache_slot_data(cc, sc_ccache_find(cc, &c.h[0])) &&
		hint0 == sc_ccache_find(cc, &c.h[0])))
		goto out;
	/* another content's slot: content 1's own found */
	hint1 = hint0;
	if (!OK(sc_memcmp(sc_ccache_lookup_pin(cc, &c.h[1], p, &hint1),
			  corpus_block(&c, 1), BS) == 0 &&
		hint1 == sc_ccache_find(cc, &c.h[1]) && hint1 != hint0))
		goto out;
	sc_ccache_unpin(cc, p);
	/* content 0 leaves: its slot free, then content 2's */
	if (!OK(sc_ccache_remove(cc, &c.h[0])))
		goto out;
	hint1 = hint0;
	if (!OK(!sc_ccache_lookup_pin(cc, &c.h[0], p, &hint1) &&
		hint1 == SC_NIL && p->n == 0))
		goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[2], corpus_block(&c, 2), 1) == 0 &&
		sc_ccache_find(cc, &c.h[2]) == hint0))
		goto out;
	hint1 = hint0;
	if (!OK(!sc_ccache_lookup_pin(cc, &c.h[0], p, &hint1) &&
		hint1 == SC_NIL))
		goto out;
	if (!OK(sc_memcmp(sc_ccache_lookup_pin(cc, &c.h[2], p, &hint0),
			  corpus_block(&c, 2), BS) == 0 && p->n == 1))
		goto out;
	sc_ccache_unpin(cc, p);
out:
	sc_ccache_destroy(cc);
	sc_free(p);
	corpus_free(&c);
	return err;
}

/* Hashes equal but for the last byte land together and stay apart. */
static int test_prefix_hashes(const struct sc_selftest_opts *o)
{
	struct corpus c = { 0 };
	struct sc_ccache *cc = NULL;
	struct sc_csimap *m = NULL;
	struct sc_csimap_config mcfg = { .mem_budget = 1 << 16 };
	struct sc_hash a, b;
	const uint8_t *d;
	int err = corpus_make(&c, 2, o->seed + 2);

	if (err)
		return err;
	a = c.h[0];
	b = a;
	b.b[SC_HASH_LEN - 1] ^= 1;
	cc = small_cache("lru", 4, NULL, NULL);
	m = sc_csimap_create(&mcfg);
	if (!OK(cc && m))
		goto out;
	if (!OK(sc_ccache_insert(cc, &a, corpus_block(&c, 0), 1) == 0))
		goto out;
	if (!OK(sc_ccache_find(cc, &b) == SC_NIL))
		goto out;
	if (!OK(sc_ccache_insert(cc, &b, corpus_block(&c, 1), 1) == 0))
		goto out;
	d = sc_ccache_lookup(cc, &a);
	if (!OK(d && sc_memcmp(d, corpus_block(&c, 0), BS) == 0))
		goto out;
	d = sc_ccache_lookup(cc, &b);
	if (!OK(d && sc_memcmp(d, corpus_block(&c, 1), BS) == 0))
		goto out;
	sc_csimap_insert(m, 1, 0, &a, SC_CSI_LEARNT);
	sc_csimap_insert(m, 1, 1, &b, SC_CSI_LEARNT);
	sc_csimap_insert(m, 2, 0, &a, SC_CSI_PUSHED);
	if (!OK(sc_csimap_sharers(m, &a) == 2 && sc_csimap_sharers(m, &b) == 1))
		goto out;
out:
	sc_csimap_destroy(m);
	sc_ccache_destroy(cc);
	corpus_free(&c);
	return err;
}

/* Same hash, other bytes: refused, counted, the cached bytes stay. */
static int test_collision_refused(const struct sc_selftest_opts *o)
{
	struct corpus c = { 0 };
	struct sc_ccache *cc = NULL;
	const uint8_t *d;
	int err = corpus_make(&c, 2, o->seed + 3);

	if (err)
		return err;
	cc = small_cache("lru", 2, NULL, NULL);
	if (!OK(cc))
		goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[0], corpus_block(&c, 0), 1) == 0))
		goto out;
	if (!OK(sc_ccache_insert(cc, &c.h[0], corpus_block(&c, 1), 1) ==
		      -SC_EEXIST))
		goto out;
	if (!OK(cc->st.collisions == 1 && cc->st.blocks == 1))
		goto out;
	d = sc_ccache_lookup(cc, &c.h[0]);
	if (!OK(d && sc_memcmp(d, corpus_block(&c, 0), BS) == 0))
		goto out;
	/* The same bytes again are no collision. */
	if (!OK(sc_ccache_insert(cc, &c.h[0], corpus_block(&c, 0), 3) == 0))
		goto out;
	if (!OK(cc->st.collisions == 1 && cc->st.inserts == 1))
		goto out;
out:
	sc_ccache_destroy(cc);
	corpus_free(&c);
	return err;
}

/* Sharing counts of cached blocks follow insert, overwrite and removal. */
static int test_sharing_counts(const struct sc_selftest_opts *o)
{
	struct sc_hostcache_config cfg = {
		.block_size = BS, .cache_blocks = 4, .policy = "elru:4",
		.csimap_budget = 1 << 16,
	};
	struct corpus c = { 0 };
	struct sc_hostcache *hc = NULL;
	uint8_t *buf = sc_zalloc(BS);
	struct sc_hash h;
	int err = corpus_make(&c, 2, o->seed + 4);

	if (err)
		goto out;
	hc = sc_hostcache_create(&cfg);
	if (!OK(hc && buf))
		goto out;
	if (!OK(sc_hostcache_read(hc, 7, 0, buf, &h) == SC_NEED_HASH))
		goto out;
	if (!OK(sc_hostcache_read_hash(hc, 7, 0, &c.h[0], buf) == SC_NEED_DATA))
		goto out;
	if (!OK(sc_hostcache_fill(hc, 7, 0, &c.h[0], corpus_block(&c, 0)) == 0))
		goto out;
	if (!OK(sc_hostcache_block_share(hc, &c.h[0]) == 1))
		goto out;
	sc_hostcache_learn(hc, 8, 0, &c.h[0]);
	sc_hostcache_learn(hc, 9, 5, &c.h[0]);
	if (!OK(sc_hostcache_block_share(hc, &c.h[0]) == 3))
		goto out;
	/* Learning the same mapping twice changes nothing. */
	sc_hostcache_learn(hc, 9, 5, &c.h[0]);
	if (!OK(sc_hostcache_block_share(hc, &c.h[0]) == 3))
		goto out;
	/* Overwrite: (9, 5) now holds content 1. */
	sc_hostcache_learn(hc, 9, 5, &c.h[1]);
	if (!OK(sc_hostcache_block_share(hc, &c.h[0]) == 2))
		goto out;
	if (!OK(sc_hostcache_forget(hc, 8, 0)))
		goto out;
	if (!OK(sc_hostcache_block_share(hc, &c.h[0]) == 1))
		goto out;
	if (!OK(sc_hostcache_read(hc, 7, 0, buf, &h) == SC_ADDR_HIT))
		goto out;
	if (!OK(sc_memcmp(buf, corpus_block(&c, 0), BS) == 0))
		goto out;
	/* A second VM's block with the same content: a content hit. */
	if (!OK(sc_hostcache_read(hc, 10, 3, buf, &h) == SC_NEED_HASH))
		goto out;
	if (!OK(sc_hostcache_read_hash(hc, 10, 3, &c.h[0], buf) ==
		      SC_CONTENT_HIT))
		goto out;
	if (!OK(sc_memcmp(buf, corpus_block(&c, 0), BS) == 0))
		goto out;
	if (!OK(sc_hostcache_block_share(hc, &c.h[0]) == 2))
		goto out;
	if (!OK(sc_hostcache_drop_file(hc, 7) == 1))
		goto out;
	if (!OK(sc_hostcache_block_share(hc, &c.h[0]) == 1))
		goto out;
	if (!OK(sc_hostcache_read(hc, 7, 0, buf, &h) == SC_NEED_HASH))
		goto out;
out:
	sc_hostcache_destroy(hc);
	sc_free(buf);
	corpus_free(&c);
	return err;
}

#define MAP_FILES 8u
#define MAP_LBNS 2048u

/*
 * Random inserts, overwrites and removals against a small budget: memory
 * stays within it, and an address maps either to nothing or to exactly
 * the content last written there, never to stale content.  The lock-free
 * walk ahead of a lookup (sc_csimap_prewalk) finds the address's own
 * hint (each address's hint is its number here) or none, and finds it
 * where the lookup does, but for the rare chain past its length.
 */
static int test_csimap_budget_and_freshness(const struct sc_selftest_opts *o)
{
	const uint64_t budget = 48 * 1024;
	struct sc_csimap_config cfg = { .mem_budget = budget };
	uint32_t *truth = sc_calloc(MAP_FILES * MAP_LBNS, sizeof(uint32_t));
	struct sc_csimap_stats st = { 0 };
	struct sc_csimap *m = NULL;
	struct sc_csi_found found;
	struct corpus c = { 0 };
	struct sc_prng rng;
	struct sc_hash h;
	uint32_t i, f, l, id, a, hint, hinted = 0, walked = 0;
	int err = corpus_make(&c, 600, o->seed + 5);

	if (err)
		goto out;
	m = sc_csimap_create(&cfg);
	if (!OK(m && truth))
		goto out;
	sc_memset(truth, 0xff, MAP_FILES * MAP_LBNS * sizeof(uint32_t));
	sc_prng_seed(&rng, o->seed);
	for (i = 0; i < o->random_ops; i++) {
		sc_cond_resched();
		f = sc_prng_below(&rng, MAP_FILES);
		l = sc_prng_below(&rng, MAP_LBNS);
		a = f * MAP_LBNS + l;
		/* Skewed content choice, so contents are shared unevenly. */
		id = sc_prng_below(&rng, 1 + sc_prng_below(&rng, c.n));
		switch (sc_prng_below(&rng, 8)) {
		case 0:
			sc_csimap_remove(m, f, l);
			truth[a] = SC_NIL;
			break;
		case 1:
		case 2:
		case 3:
			sc_csimap_insert(m, f, l, &c.h[id],
					 id & 1 ? SC_CSI_PUSHED :
						  SC_CSI_LEARNT);
			truth[a] = id;
			break;
		default:
			hint = sc_csimap_prewalk(m, f, l);
			if (!sc_csimap_lookup_src(m, f, l, &h, &found)) {
				if (!OK(hint == SC_CSI_NO_HINT))
					goto out;
				break;
			}
			if (!OK(truth[a] != SC_NIL &&
				sc_hash_eq(&h, &c.h[truth[a]]) &&
				(hint == SC_CSI_NO_HINT || hint == a)))
				goto out;
			hinted += found.hint == a;
			walked += hint == a;
			sc_csimap_set_hint(m, found.entry, a);
		}
		sc_csimap_get_stats(m, &st);
		if (!OK(st.mem_bytes <= budget))
			goto out;
		if (!OK(st.entries <= st.capacity_entries))
			goto out;
		if (!OK(st.contents <= st.capacity_contents))
			goto out;
	}
	if (!OK(st.evictions > 0 && hinted > 0 && walked >= hinted * 9 / 10))
		goto out;
out:
	sc_csimap_destroy(m);
	sc_free(truth);
	corpus_free(&c);
	return err;
}

/*
 * The content cache against a reference model kept as a recency-ordered
 * array (index 0 least recent): contents, sharing counts, evictions and
 * the bytes returned must agree after every operation.
 */
struct model {
	uint32_t *id;
	uint32_t *share;
	uint32_t n, cap, window;
};

static uint32_t model_find(const struct model *md, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < md->n; i++)
		if (md->id[i] == id)
			return i;
	return SC_NIL;
}

static void model_delete(struct model *md, uint32_t i)
{
	for (; i + 1 < md->n; i++) {
		md->id[i] = md->id[i + 1];
		md->share[i] = md->share[i + 1];
	}
	md->n--;
}

static void model_append(struct model *md, uint32_t id, uint32_t share)
{
	md->id[md->n] = id;
	md->share[md->n] = share;
	md->n++;
}

static void model_touch(struct model *md, uint32_t i)
{
	uint32_t id = md->id[i], share = md->share[i];

	model_delete(md, i);
	model_append(md, id, share);
}

static uint32_t model_victim(const struct model *md)
{
	uint32_t i, best = 0;

	for (i = 1; i < md->window && i < md->n; i++)
		if (md->share[i] < md->share[best])
			best = i;
	return best;
}

static int random_vs_model(const struct sc_selftest_opts *o,
			   const char *policy, uint32_t window)
{
	const uint32_t cap = 48;
	struct evict_log log = { .count = 0 };
	struct model md = { .cap = cap, .window = window };
	struct sc_ccache *cc = NULL;
	struct corpus c = { 0 };
	struct sc_prng rng;
	const uint8_t *d;
	uint32_t i, id, at, share, v;
	int err = corpus_make(&c, 3 * cap, o->seed + 6);

	if (err)
		return err;
	md.id = sc_calloc(cap, sizeof(uint32_t));
	md.share = sc_calloc(cap, sizeof(uint32_t));
	cc = small_cache(policy, cap, note_evict, &log);
	if (!OK(cc && md.id && md.share))
		goto out;
	sc_prng_seed(&rng, o->seed ^ window);
	for (i = 0; i < o->random_ops; i++) {
		sc_cond_resched();
		id = sc_prng_below(&rng, c.n);
		at = model_find(&md, id);
		share = 1 + sc_prng_below(&rng, 6);
		switch (sc_prng_below(&rng, 10)) {
		case 0:
			if (!OK(sc_ccache_remove(cc, &c.h[id]) == (at != SC_NIL)))
				goto out;
			if (at != SC_NIL)
				model_delete(&md, at);
			break;
		case 1:
			sc_ccache_set_share(cc, &c.h[id], share);
			if (at != SC_NIL)
				md.share[at] = share;
			break;
		case 2:
		case 3:
		case 4:
		case 5:
			d = sc_ccache_lookup(cc, &c.h[id]);
			if (!OK(!d == (at == SC_NIL)))
				goto out;
			if (d) {
				if (!OK(sc_memcmp(d, corpus_block(&c, id), BS) == 0))
					goto out;
				model_touch(&md, at);
			}
			break;
		default:
			v = log.count;
			if (!OK(sc_ccache_insert(cc, &c.h[id],
						       corpus_block(&c, id), share) == 0))
				goto out;
			if (at != SC_NIL) {
				md.share[at] = share;
				model_touch(&md, at);
				if (!OK(log.count == v))
					goto out;
				break;
			}
			if (md.n == cap) {
				at = model_victim(&md);
				if (!OK(log.count == v + 1))
					goto out;
				if (!OK(sc_hash_eq(&log.last, &c.h[md.id[at]])))
					goto out;
				model_delete(&md, at);
			}
			model_append(&md, id, share);
		}
		if (!OK(cc->st.blocks == md.n))
			goto out;
	}
	for (i = 0; i < md.n; i++)
		if (!OK(sc_ccache_find(cc, &c.h[md.id[i]]) != SC_NIL))
			goto out;
out:
	sc_ccache_destroy(cc);
	sc_free(md.id);
	sc_free(md.share);
	corpus_free(&c);
	return err;
}

static int test_random_lru(const struct sc_selftest_opts *o)
{
	return random_vs_model(o, "lru", 1);
}

static int test_random_elru(const struct sc_selftest_opts *o)
{
	static const struct {
		const char *spec;
		uint32_t n;
	} v[] = { { "elru:1", 1 }, { "elru:4", 4 }, { "elru:16", 16 },
		  { "elru:64", 64 } };
	unsigned int i;
	int err;

	for (i = 0; i < SC_ARRAY_SIZE(v); i++) {
		err = random_vs_model(o, v[i].spec, v[i].n);
		if (err)
			return err;
	}
	return 0;
}

/* Bad configurations are refused, not half-built. */
static int test_bad_config(const struct sc_selftest_opts *o)
{
	struct sc_csimap_config mcfg = { .mem_budget = 10 };
	int err = 0;

	(void)o;
	if (!OK(!small_cache("lru:3", 4, NULL, NULL)))
		goto out;
	if (!OK(!small_cache("elru:0", 4, NULL, NULL)))
		goto out;
	if (!OK(!small_cache("elru:x", 4, NULL, NULL)))
		goto out;
	if (!OK(!small_cache("nosuch", 4, NULL, NULL)))
		goto out;
	if (!OK(!small_cache("lru", 0, NULL, NULL)))
		goto out;
	if (!OK(!sc_csimap_create(&mcfg)))
		goto out;
out:
	return err;
}

/*
 * Peer tokens: the known answer of PROTOCOL.md §9.2, and every field of
 * the token binding it.
 */
static int test_peer_token(const struct sc_selftest_opts *o)
{
	static const uint8_t want[SC_MAC_LEN] = {
		0xc7, 0xfe, 0xdd, 0xce, 0x01, 0x97, 0xf9, 0x8a,
		0xb2, 0xd2, 0xc2, 0x9a, 0x6f, 0xee, 0x9c, 0x90,
		0xa6, 0x0c, 0x42, 0xe7, 0x06, 0x58, 0x00, 0x23,
		0x78, 0xad, 0xec, 0x65, 0x27, 0x29, 0x6d, 0xa9,
	};
	const uint64_t epoch = 0x1122334455667788ull, now = 1789999900;
	struct sc_peer_token_fields f = { .requester = 7, .serving = 9,
					  .epoch = epoch, .expiry = 1790000000 };
	uint8_t secret[SC_PEER_SECRET_LEN], mac[SC_MAC_LEN];
	struct sc_peer_token_fields bad;
	struct sc_mac *m;
	int i, rc = -SC_EIO;

	(void)o;
	for (i = 0; i < SC_PEER_SECRET_LEN; i++)
		secret[i] = (uint8_t)i;
	sc_memset(f.hash.b, 0x11, SC_HASH_LEN);
	m = sc_mac_new(secret, sizeof(secret));
	if (!m)
		return -SC_ENOMEM;
	if (sc_peer_token_mac(m, &f, mac) ||
	    sc_memcmp(mac, want, SC_MAC_LEN) ||
	    sc_peer_token_check(m, &f, epoch, now, mac))
		goto out;
	/* another requester, serving host, epoch, content; expired; forged */
	for (i = 0; i < 6; i++) {
		uint64_t at = now;

		bad = f;
		switch (i) {
		case 0:
			bad.requester = 8;
			break;
		case 1:
			bad.serving = 8;
			break;
		case 2:
			bad.epoch++;
			break;
		case 3:
			bad.hash.b[0] ^= 1;
			break;
		case 4:
			at = f.expiry + 1;
			break;
		default:
			mac[31] ^= 1;
			break;
		}
		if (sc_peer_token_check(m, &bad, i == 2 ? bad.epoch : epoch,
					at, mac) != -SC_EACCES)
			goto out;
	}
	/* a token good for longer than a serving host accepts */
	mac[31] ^= 1;
	bad = f;
	bad.expiry = now + SC_PEER_TOKEN_MAX_AHEAD + 1;
	if (sc_peer_token_mac(m, &bad, mac) ||
	    sc_peer_token_check(m, &bad, epoch, now, mac) != -SC_EACCES)
		goto out;
	rc = 0;
out:
	sc_mac_free(m);
	return rc;
}

struct waitq_flag {
	struct sc_mutex lock;
	bool set;
};

/* Under a mutex, as the host's conditions are. */
static bool flag_set(void *arg)
{
	struct waitq_flag *f = arg;
	bool set;

	sc_mutex_lock(&f->lock);
	set = f->set;
	sc_mutex_unlock(&f->lock);
	return set;
}

/*
 * The wait queue's answers in this environment: -ETIMEDOUT when the
 * condition never holds, 0 once it does after a wake; the condition
 * takes a mutex (a debug kernel warns if it runs in a sleeping state).
 */
static int test_waitq(const struct sc_selftest_opts *o)
{
	struct waitq_flag f = { .set = false };
	struct sc_waitq q;
	int err = 0;

	(void)o;
	sc_mutex_init(&f.lock);
	sc_waitq_init(&q);
	if (!OK(sc_waitq_wait(&q, flag_set, &f, 1) == -SC_ETIMEDOUT))
		goto out;
	sc_mutex_lock(&f.lock);
	f.set = true;
	sc_mutex_unlock(&f.lock);
	sc_wake_all(&q);
	OK(sc_waitq_wait(&q, flag_set, &f, 1000) == 0);
out:
	sc_waitq_destroy(&q);
	sc_mutex_destroy(&f.lock);
	return err;
}

/*
 * GET_MAP's reply rules (PROTOCOL.md §7.11) as csi_map_file_check holds
 * them: a file of 12 blocks and 5 bytes, B = 4096, asked from block 2.
 */
static int test_map_file_check(const struct sc_selftest_opts *o)
{
	static const struct sc_hash hashes[CSI_MAX_MAP_BLOCKS];
	static const uint8_t no_holes[CSI_MAX_MAP_HOLES];
	uint8_t holes[3] = { 0x12, 0x02, 0 };	/* blocks 3, 6 and 11 */
	struct csi_map_file f = {
		.status = CSI_OK,
		.attr = { .file = 1, .size = 12 * 4096 + 5, .change = 1 },
		.holes = holes, .nholes_bytes = 2,
		.hashes = hashes, .nhashes = 8,
	};
	uint32_t n = 99;
	int err = 0;

	(void)o;
	/* cut at end of file: 11 blocks, 3 holes, 8 hashes */
	if (!OK(csi_map_file_check(&f, 2, 16, 4096, &n) == 0 && n == 11) ||
	    !OK(csi_map_file_check(&f, 2, 11, 4096, &n) == 0 && n == 11) ||
	    !OK(csi_map_is_hole(&f, 1) && csi_map_is_hole(&f, 4) &&
		csi_map_is_hole(&f, 9) && !csi_map_is_hole(&f, 0) &&
		!csi_map_is_hole(&f, 10)))
		goto out;
	/* a block size that is not B: another window */
	if (!OK(csi_map_file_check(&f, 2, 16, 8192, &n) == -SC_EPROTO &&
		n == 0))
		goto out;
	/* count 10: the holes fit, one hash too many */
	if (!OK(csi_map_file_check(&f, 2, 10, 4096, &n) == -SC_EPROTO))
		goto out;
	/* one hash short, then a hole past the window */
	f.nhashes = 7;
	if (!OK(csi_map_file_check(&f, 2, 16, 4096, &n) == -SC_EPROTO))
		goto out;
	f.nhashes = 8;
	holes[1] |= 0x08;
	if (!OK(csi_map_file_check(&f, 2, 16, 4096, &n) == -SC_EPROTO))
		goto out;
	holes[1] = 0x02;
	/* a byte of holes too many, even a clear one */
	f.nholes_bytes = 3;
	if (!OK(csi_map_file_check(&f, 2, 16, 4096, &n) == -SC_EPROTO))
		goto out;
	/* at and past end of file: an empty window, and only that */
	if (!OK(csi_map_file_check(&f, 13, 16, 4096, &n) == -SC_EPROTO))
		goto out;
	f.nholes_bytes = 0;
	f.nhashes = 0;
	if (!OK(csi_map_file_check(&f, 13, 16, 4096, &n) == 0 && n == 0) ||
	    !OK(csi_map_file_check(&f, ~0ull, 16, 4096, &n) == 0 && n == 0))
		goto out;
	f.attr.size = 0;
	if (!OK(csi_map_file_check(&f, 0, 16, 4096, &n) == 0 && n == 0))
		goto out;
	/* the largest window, no holes: 256 clear bytes, 2048 hashes */
	f.attr.size = ~0ull;
	f.holes = no_holes;
	f.nholes_bytes = CSI_MAX_MAP_HOLES;
	f.nhashes = CSI_MAX_MAP_BLOCKS;
	if (!OK(csi_map_file_check(&f, 0, CSI_MAX_MAP_BLOCKS, 4096, &n) == 0 &&
		n == CSI_MAX_MAP_BLOCKS))
		goto out;
	/* a file's own errors carry nothing; a call's are no file's */
	f.status = CSI_ERR_STALE;
	if (!OK(csi_map_file_check(&f, 0, 1, 4096, &n) == 0 && n == 0))
		goto out;
	f.status = CSI_ERR_ACCESS;
	if (!OK(csi_map_file_check(&f, 0, 1, 4096, &n) == 0))
		goto out;
	f.status = CSI_ERR_IO;
	if (!OK(csi_map_file_check(&f, 0, 1, 4096, &n) == 0))
		goto out;
	f.status = CSI_ERR_BUSY;
	if (!OK(csi_map_file_check(&f, 0, 1, 4096, &n) == -SC_EPROTO))
		goto out;
	f.status = CSI_ERR_NOTSUPP;
	if (!OK(csi_map_file_check(&f, 0, 1, 4096, &n) == -SC_EPROTO))
		goto out;
	f.status = CSI_OK;
	OK(csi_map_file_check(&f, 0, 1, 0, &n) == -SC_EINVAL);
out:
	return err;
}

/*
 * The variants: PROTOCOL.md §8's features, each found by both its names
 * (the host's and the paper's), an unknown name refused.
 */
static int test_variants(const struct sc_selftest_opts *o)
{
	static const uint32_t want[SC_VARIANT_COUNT] = {
		0x00, 0x01, 0x03, 0x07, 0x4f, 0x11, 0x7f,
	};
	enum sc_variant v, found;
	int err = 0;

	(void)o;
	for (v = 0; v < SC_VARIANT_COUNT; v++) {
		if (!OK(sc_variants[v].features == want[v]))
			goto out;
		found = SC_VARIANT_COUNT;
		if (!OK(!sc_variant_parse(sc_variants[v].name, &found) &&
			found == v))
			goto out;
		found = SC_VARIANT_COUNT;
		if (!OK(!sc_variant_parse(sc_variants[v].paper_name, &found) &&
			found == v))
			goto out;
	}
	if (!OK(!sc_variant_parse("dedup-read", &found) &&
		found == SC_VARIANT_READ_HASH))
		goto out;
	if (!OK(sc_variant_parse("Seacache", &found) == -SC_EINVAL))
		goto out;
out:
	return err;
}

const struct sc_selftest_case sc_selftest_cases[] = {
	{ "hash_vectors", test_hash_vectors },
	{ "peer_token", test_peer_token },
	{ "lru_order", test_lru_order },
	{ "elru_window", test_elru_window },
	{ "cache_shrink", test_cache_shrink },
	{ "cache_pins", test_cache_pins },
	{ "cache_hint", test_cache_hint },
	{ "prefix_hashes", test_prefix_hashes },
	{ "collision_refused", test_collision_refused },
	{ "sharing_counts", test_sharing_counts },
	{ "csimap_budget_and_freshness", test_csimap_budget_and_freshness },
	{ "random_lru_vs_model", test_random_lru },
	{ "random_elru_vs_model", test_random_elru },
	{ "bad_config", test_bad_config },
	{ "waitq", test_waitq },
	{ "variants", test_variants },
	{ "map_file_check", test_map_file_check },
};

const unsigned int sc_selftest_ncases = SC_ARRAY_SIZE(sc_selftest_cases);

unsigned int sc_selftest_run_all(const struct sc_selftest_opts *o)
{
	unsigned int i, failed = 0;

	/*
	 * The module's init runs them on one CPU of a kernel that may not
	 * preempt: on a debug kernel under TCG a case takes a minute, which
	 * without a rescheduling point in each long loop starves RCU.
	 */
	for (i = 0; i < sc_selftest_ncases; i++) {
		sc_cond_resched();
		if (sc_selftest_cases[i].run(o)) {
			sc_log_err("selftest %s: FAILED", sc_selftest_cases[i].name);
			failed++;
		} else {
			sc_log_info("selftest %s: ok", sc_selftest_cases[i].name);
		}
	}
	return failed;
}
