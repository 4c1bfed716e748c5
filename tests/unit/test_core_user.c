// SPDX-License-Identifier: BSD-2-Clause
/*
 * Core tests that need user space: hashing against OpenSSL's one-shot
 * digest as an independent oracle, the per-block and per-entry metadata
 * budgets, the content cache when memory cannot be had (allocation
 * failure injection), and the host cache under concurrent readers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <pthread.h>

#include "seacache/hostcache.h"
#include "seacache/prng.h"

static void hash_matches_openssl_oneshot(void **state)
{
	struct sc_hasher *hs = sc_hasher_new();
	uint8_t *buf = malloc(SC_BLOCK_SIZE_MAX);
	unsigned char ref[EVP_MAX_MD_SIZE];
	unsigned int reflen;
	struct sc_prng rng;
	struct sc_hash h;
	uint32_t bs;
	int i;

	(void)state;
	assert_non_null(hs);
	assert_non_null(buf);
	sc_prng_seed(&rng, 42);
	for (bs = SC_BLOCK_SIZE_MIN; bs <= SC_BLOCK_SIZE_MAX; bs <<= 1) {
		for (i = 0; i < 16; i++) {
			sc_prng_fill(&rng, buf, bs);
			assert_int_equal(sc_hasher_digest(hs, buf, bs, &h), 0);
			assert_int_equal(EVP_Digest(buf, bs, ref, &reflen,
						    EVP_sha256(), NULL), 1);
			assert_int_equal(reflen, SC_HASH_LEN);
			assert_memory_equal(h.b, ref, SC_HASH_LEN);
		}
	}
	free(buf);
	sc_hasher_free(hs);
}

/* Content i: its hash is i, its 4 KiB of bytes all i. */
static struct sc_hash content_hash(uint32_t i)
{
	struct sc_hash h = { .b = { 0 } };

	memcpy(h.b, &i, sizeof(i));
	return h;
}

/* Insert contents from..to-1, each with sharing count 1. */
static void fill_blocks(struct sc_ccache *cc, uint32_t from, uint32_t to)
{
	uint8_t block[4096];
	struct sc_hash h;

	for (; from < to; from++) {
		h = content_hash(from);
		memset(block, (int)from, sizeof(block));
		assert_int_equal(sc_ccache_insert(cc, &h, block, 1), 0);
	}
}

static void cache_metadata_within_64_bytes_per_block(void **state)
{
	static const char *const policies[] = { "lru", "elru:16" };
	static const uint32_t caps[] = { 1000, 65536, 100000 };
	struct sc_ccache_stats st;
	size_t p, c;

	(void)state;
	for (p = 0; p < 2; p++) {
		for (c = 0; c < 3; c++) {
			struct sc_ccache_config cfg = {
				.block_size = 4096, .capacity_blocks = caps[c],
				.policy = policies[p],
			};
			struct sc_ccache *cc = sc_ccache_create(&cfg);

			assert_non_null(cc);
			sc_ccache_get_stats(cc, &st);
			assert_true(st.meta_bytes <= 64ull * caps[c]);
			/* block memory comes with the blocks */
			assert_int_equal(st.mem_bytes, st.meta_bytes);
			fill_blocks(cc, 0, 3);
			sc_ccache_get_stats(cc, &st);
			assert_int_equal(st.mem_bytes - st.meta_bytes,
					 3 * 4096ull);
			sc_ccache_destroy(cc);
		}
	}
}

static void count_evict(void *ctx, const struct sc_hash *h)
{
	(void)h;
	++*(unsigned int *)ctx;
}

/*
 * A block buffer that cannot be allocated: the insert takes the
 * victim's buffer and the limit comes down to the blocks held, then grows
 * again while memory is free; an empty cache does not cache the block.
 */
static void cache_without_memory(void **state)
{
	struct sc_ccache_config cfg = {
		.block_size = 4096, .capacity_blocks = 4, .policy = "lru",
		.on_evict = count_evict,
	};
	unsigned int evicted = 0;
	struct sc_ccache_stats st;
	struct sc_ccache *cc;
	uint8_t block[4096] = { 0 };
	struct sc_hash h = content_hash(9);

	(void)state;
	cfg.ctx = &evicted;
	cc = sc_ccache_create(&cfg);
	assert_non_null(cc);
	fill_blocks(cc, 0, 2);
	sc_fault_inject_alloc(1);
	fill_blocks(cc, 2, 3);
	assert_int_equal(sc_fault_inject_alloc(0), 0);
	sc_ccache_get_stats(cc, &st);
	assert_int_equal(st.blocks, 2);
	assert_int_equal(st.limit, 2);
	assert_int_equal(st.no_memory, 1);
	assert_int_equal(evicted, 1);
	h = content_hash(0);
	assert_null(sc_ccache_lookup(cc, &h));
	h = content_hash(2);
	memset(block, 2, sizeof(block));
	assert_memory_equal(sc_ccache_lookup(cc, &h), block, sizeof(block));
	fill_blocks(cc, 3, 5);
	sc_ccache_get_stats(cc, &st);
	assert_int_equal(st.blocks, 4);
	assert_int_equal(st.limit, 4);
	assert_int_equal(evicted, 1);
	/* empty, and no memory: not cached */
	assert_int_equal(sc_ccache_shrink(cc, 4), 4);
	h = content_hash(9);
	sc_fault_inject_alloc(1);
	assert_int_equal(sc_ccache_insert(cc, &h, block, 1), -ENOMEM);
	sc_fault_inject_alloc(1);
	assert_null(sc_ccache_reserve(cc, &h, 1));
	assert_null(sc_ccache_lookup(cc, &h));
	sc_ccache_get_stats(cc, &st);
	assert_int_equal(st.blocks, 0);
	assert_int_equal(st.no_memory, 3);
	sc_ccache_destroy(cc);
}

static void csimap_within_64_bytes_per_entry(void **state)
{
	static const uint64_t budgets[] = { 1 << 20, 10 << 20, 100 << 20 };
	struct sc_csimap_stats st;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		struct sc_csimap_config cfg = { .mem_budget = budgets[i] };
		struct sc_csimap *m = sc_csimap_create(&cfg);

		assert_non_null(m);
		sc_csimap_get_stats(m, &st);
		assert_true(st.mem_bytes <= budgets[i]);
		assert_true(st.mem_bytes <= 64 * st.capacity_entries);
		/* The budget is used, not wasted: within a bucket rounding. */
		assert_true(st.mem_bytes * 10 >= budgets[i] * 8);
		sc_csimap_destroy(m);
	}
}

/* Threads read one shared image set through one host cache. */
#define T_FILES 4
#define T_BLOCKS 512
#define T_CONTENTS 300
#define T_THREADS 4

struct shared_set {
	struct sc_hostcache *hc;
	uint8_t *data;			/* T_CONTENTS blocks */
	struct sc_hash h[T_CONTENTS];
	uint32_t map[T_FILES][T_BLOCKS];	/* address -> content */
	int bad;
};

static void *reader(void *arg)
{
	struct shared_set *s = arg;
	uint8_t buf[4096];
	struct sc_prng rng;
	struct sc_hash h;
	uint32_t f, l, id;
	int i;

	sc_prng_seed(&rng, (uint64_t)(uintptr_t)pthread_self());
	for (i = 0; i < 100000; i++) {
		f = sc_prng_below(&rng, T_FILES);
		l = sc_prng_below(&rng, T_BLOCKS);
		id = s->map[f][l];
		switch (sc_hostcache_read(s->hc, f, l, buf, &h)) {
		case SC_NEED_HASH:
			if (sc_hostcache_read_hash(s->hc, f, l, &s->h[id], buf) ==
			    SC_CONTENT_HIT)
				break;
			/* fall through */
		case SC_NEED_DATA:
			sc_hostcache_fill(s->hc, f, l, &s->h[id],
					  s->data + (size_t)id * 4096);
			memcpy(buf, s->data + (size_t)id * 4096, 4096);
			break;
		default:
			break;
		}
		if (memcmp(buf, s->data + (size_t)id * 4096, 4096) != 0)
			__atomic_store_n(&s->bad, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void hostcache_concurrent_readers_get_right_bytes(void **state)
{
	struct sc_hostcache_config cfg = {
		.block_size = 4096, .cache_blocks = 64, .policy = "elru:8",
		.csimap_budget = 64 * 1024,
	};
	struct sc_hostcache_stats st;
	struct sc_hasher *hs = sc_hasher_new();
	struct shared_set *s = calloc(1, sizeof(*s));
	pthread_t t[T_THREADS];
	struct sc_prng rng;
	uint32_t f, l;
	int i;

	(void)state;
	assert_non_null(s);
	s->data = malloc((size_t)T_CONTENTS * 4096);
	assert_non_null(s->data);
	sc_prng_seed(&rng, 7);
	sc_prng_fill(&rng, s->data, (size_t)T_CONTENTS * 4096);
	for (i = 0; i < T_CONTENTS; i++)
		assert_int_equal(sc_hasher_digest(hs, s->data + (size_t)i * 4096,
						  4096, &s->h[i]), 0);
	for (f = 0; f < T_FILES; f++)
		for (l = 0; l < T_BLOCKS; l++)
			s->map[f][l] = sc_prng_below(&rng, T_CONTENTS);
	s->hc = sc_hostcache_create(&cfg);
	assert_non_null(s->hc);
	for (i = 0; i < T_THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, s), 0);
	for (i = 0; i < T_THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(s->bad, 0);
	sc_hostcache_get_stats(s->hc, &st);
	assert_int_equal(st.reads, (uint64_t)T_THREADS * 100000);
	assert_int_equal(st.addr_hits + st.content_hits + st.misses, st.reads);
	assert_true(st.addr_hits > 0 && st.content_hits > 0 &&
		    st.evictions > 0);
	sc_hostcache_destroy(s->hc);
	sc_hasher_free(hs);
	free(s->data);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hash_matches_openssl_oneshot),
		cmocka_unit_test(cache_metadata_within_64_bytes_per_block),
		cmocka_unit_test(cache_without_memory),
		cmocka_unit_test(csimap_within_64_bytes_per_entry),
		cmocka_unit_test(hostcache_concurrent_readers_get_right_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
