// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-bench: speed and memory of the shared core on this machine.
 * Run by 'make bench' (scripts/bench), which adds OpenSSL's own figure.
 * The CSI protocol's figures are in csi_bench.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "csi_bench.h"
#include "seacache/hostcache.h"
#include "seacache/prng.h"

static double seconds_per_run = 1.0;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "seacache-bench: %s\n", what);
	exit(1);
}

static void random_hash(struct sc_prng *r, struct sc_hash *h)
{
	sc_prng_fill(r, h->b, SC_HASH_LEN);
}

/*
 * Time fn over batches until seconds_per_run has passed; ops per second.
 * fn does `batch` operations per call.
 */
#define BATCH 65536u
typedef void (*bench_fn)(void *ctx);

static double measure(bench_fn fn, void *ctx)
{
	double t0 = now(), t;
	uint64_t ops = 0;

	do {
		fn(ctx);
		ops += BATCH;
		t = now() - t0;
	} while (t < seconds_per_run);
	return (double)ops / t;
}

struct hash_ctx {
	struct sc_hasher *hs;
	uint8_t *buf;		/* 16 MiB of blocks, beyond the L2 cache */
	uint32_t nblocks;
	uint32_t next;
	uint64_t sink;
};

static void run_hash(void *p)
{
	struct hash_ctx *c = p;
	struct sc_hash h;
	uint32_t i;

	for (i = 0; i < BATCH / 16; i++) {
		sc_hasher_digest(c->hs, c->buf + (size_t)c->next * 4096, 4096,
				 &h);
		c->sink += h.b[0];
		c->next = (c->next + 1) % c->nblocks;
	}
}

static void bench_hash(void)
{
	struct hash_ctx c = { .hs = sc_hasher_new(), .nblocks = 4096 };
	struct sc_prng r;
	double ops;

	c.buf = malloc((size_t)c.nblocks * 4096);
	if (!c.hs || !c.buf)
		die("out of memory");
	sc_prng_seed(&r, 1);
	sc_prng_fill(&r, c.buf, (size_t)c.nblocks * 4096);
	/* run_hash does BATCH/16 digests per call */
	ops = measure(run_hash, &c) / 16;
	printf("hash_sha256_4k      %12.0f blocks/s  %6.3f GB/s\n", ops,
	       ops * 4096 / 1e9);
	free(c.buf);
	sc_hasher_free(c.hs);
}

struct cache_ctx {
	struct sc_ccache *cc;
	struct sc_hash *cached;	/* hashes known to be cached */
	uint32_t ncached;
	struct sc_prng r;
	uint8_t block[4096];
	uint64_t sink;
};

static void run_lookup_hit(void *p)
{
	struct cache_ctx *c = p;
	const uint8_t *d;
	uint32_t i;

	for (i = 0; i < BATCH; i++) {
		d = sc_ccache_lookup(c->cc,
				     &c->cached[sc_prng_below(&c->r, c->ncached)]);
		c->sink += d != NULL;
	}
}

static void run_insert_evict(void *p)
{
	struct cache_ctx *c = p;
	struct sc_hash h;
	uint32_t i;

	for (i = 0; i < BATCH; i++) {
		random_hash(&c->r, &h);
		sc_ccache_insert(c->cc, &h, c->block,
				 1 + sc_prng_below(&c->r, 8));
	}
}

/* The block is written into the cache buffer, as a receive would. */
static void run_reserve_evict(void *p)
{
	struct cache_ctx *c = p;
	struct sc_hash h;
	uint64_t *buf;
	uint32_t i;

	for (i = 0; i < BATCH; i++) {
		random_hash(&c->r, &h);
		buf = sc_ccache_reserve(c->cc, &h, 1 + sc_prng_below(&c->r, 8));
		if (buf)
			buf[0] = h.b[0];
	}
}

static struct sc_ccache *filled_cache(struct cache_ctx *c, uint32_t blocks,
				      const char *policy)
{
	struct sc_ccache_config cfg = {
		.block_size = 4096, .capacity_blocks = blocks, .policy = policy,
	};
	uint32_t i;

	c->cc = sc_ccache_create(&cfg);
	c->cached = malloc((size_t)blocks * sizeof(*c->cached));
	if (!c->cc || !c->cached)
		die("out of memory");
	sc_prng_seed(&c->r, 2);
	for (i = 0; i < blocks; i++) {
		random_hash(&c->r, &c->cached[i]);
		if (sc_ccache_insert(c->cc, &c->cached[i], c->block,
				     1 + sc_prng_below(&c->r, 8)))
			die("insert failed");
	}
	c->ncached = blocks;
	return c->cc;
}

static void bench_cache(uint32_t blocks)
{
	static const char *const policies[] = { "lru", "elru:16" };
	struct sc_ccache_stats st;
	struct cache_ctx c;
	size_t p;

	for (p = 0; p < 2; p++) {
		memset(&c, 0, sizeof(c));
		filled_cache(&c, blocks, policies[p]);
		printf("cache_lookup_hit    %12.0f ops/s     (%s, %u blocks)\n",
		       measure(run_lookup_hit, &c), policies[p], blocks);
		printf("cache_insert_evict  %12.0f ops/s     (%s, %u blocks, 4 KiB copied in)\n",
		       measure(run_insert_evict, &c), policies[p], blocks);
		printf("cache_reserve_evict %12.0f ops/s     (%s, %u blocks, filled in place)\n",
		       measure(run_reserve_evict, &c), policies[p], blocks);
		sc_ccache_get_stats(c.cc, &st);
		printf("cache_meta_per_block %11.1f bytes     (%s)\n",
		       (double)st.meta_bytes / blocks, policies[p]);
		sc_ccache_destroy(c.cc);
		free(c.cached);
	}
}

struct map_ctx {
	struct sc_csimap *m;
	uint32_t n;
	struct sc_prng r;
	uint64_t sink;
};

/* Address i: file i/65536, lbn i%65536; contents shared 4 ways. */
static void run_map_lookup(void *p)
{
	struct map_ctx *c = p;
	struct sc_hash h;
	uint32_t i, a;

	for (i = 0; i < BATCH; i++) {
		a = sc_prng_below(&c->r, c->n);
		c->sink += sc_csimap_lookup(c->m, a >> 16, a & 0xffff, &h);
	}
}

static void bench_csimap(uint64_t budget)
{
	struct sc_csimap_config cfg = { .mem_budget = budget };
	struct sc_csimap_stats st;
	struct map_ctx c = { .m = sc_csimap_create(&cfg) };
	struct sc_prng hr;
	struct sc_hash h;
	uint32_t i;

	if (!c.m)
		die("out of memory");
	sc_csimap_get_stats(c.m, &st);
	c.n = (uint32_t)st.capacity_entries;
	for (i = 0; i < c.n; i++) {
		sc_prng_seed(&hr, i / 4);
		random_hash(&hr, &h);
		sc_csimap_insert(c.m, i >> 16, i & 0xffff, &h, SC_CSI_PUSHED);
	}
	sc_prng_seed(&c.r, 3);
	printf("csimap_lookup       %12.0f ops/s     (%u entries)\n",
	       measure(run_map_lookup, &c), c.n);
	sc_csimap_get_stats(c.m, &st);
	printf("csimap_bytes_per_entry %9.1f bytes     (expected sharing %u, %llu evictions)\n",
	       (double)st.mem_bytes / st.capacity_entries,
	       SC_CSIMAP_SHARING_DEFAULT, (unsigned long long)st.evictions);
	sc_csimap_destroy(c.m);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: seacache-bench [--seconds S] [--blocks N[,N...]] [--host]\n"
		"Measures the shared core on this machine: SHA-256 of 4 KiB blocks,\n"
		"content-cache hits and inserts with eviction (LRU, ELRU-16),\n"
		"CSI-Map lookups, metadata bytes per block and per entry, the CSI\n"
		"codec on a 64-block READ reply, READ calls over loopback, and the\n"
		"host library's cached reads and bytes per cached block.\n"
		"  --seconds S  time per measurement (default 1)\n"
		"  --blocks N,...  content cache sizes in 4 KiB blocks\n"
		"                  (default 16384,65536,262144: 64 MiB, 256 MiB, 1 GiB)\n"
		"  --host       the host library's figures only\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "blocks", required_argument, NULL, 'b' },
		{ "host", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char list[256] = "16384,65536,262144";
	bool host_only = false;
	char *tok;
	int o;

	while ((o = getopt_long(argc, argv, "s:b:Hh", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			seconds_per_run = atof(optarg);
			break;
		case 'b':
			snprintf(list, sizeof(list), "%s", optarg);
			break;
		case 'H':
			host_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (seconds_per_run <= 0) {
		usage(stderr);
		return 2;
	}
	if (host_only) {
		bench_host(seconds_per_run, 65536);
		return 0;
	}
	bench_hash();
	for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		unsigned long blocks = strtoul(tok, NULL, 10);

		if (blocks < 1024 || blocks > (1ul << 24)) {
			fprintf(stderr, "seacache-bench: cache size %s is not 1024..16777216 blocks\n",
				tok);
			return 2;
		}
		bench_cache((uint32_t)blocks);
	}
	bench_csimap((uint64_t)64 << 20);
	bench_csi_codec(seconds_per_run);
	bench_csi_rpc(seconds_per_run);
	bench_host(seconds_per_run, 65536);
	return 0;
}
