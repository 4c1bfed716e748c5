// SPDX-License-Identifier: BSD-2-Clause
/*
 * The host library's read hit path (seacache/host.h): sc_host_read of
 * blocks already in the host cache, which must cost no system call, and
 * the host's memory per cached block (target: at most 4 KiB + 128 bytes).
 * The hit targets, near memory speed since every VM read on a host, in the
 * kernel module too, takes this path: at most 0.4 µs per 4 KiB block with
 * one block per read, 0.25 µs in 16-block reads, and two threads reading
 * at least 1.8 times the blocks of one (no lock held across the copy); each
 * is the median of HIT_ROUNDS rounds, printed with their range, and so
 * is, beside them, what this machine asks of any hit (ref_*: a bare
 * copy of a random block, and one dependent DRAM load).  The server is a
 * stub transport that only fills the cache (HELLO, then READ answered
 * with DATA); the timed reads never reach it.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "csi_bench.h"
#include "seacache/host.h"
#include "seacache/prng.h"

#define BS 4096u
#define FILES 4u

struct stub {
	struct sc_hasher *hs;
	uint64_t calls;
};

struct stub_reply {
	struct csi_read_block b[CSI_MAX_BLOCKS];
	uint8_t data[CSI_MAX_BLOCKS][BS];
};

/* The files are clones: block lbn holds the same content in each. */
static void block_of(uint64_t lbn, uint8_t *out)
{
	struct sc_prng r;

	sc_prng_seed(&r, lbn);
	sc_prng_fill(&r, out, BS);
}

static int stub_call(void *ctx, uint32_t proc, const void *args, void *res,
		     void **reply)
{
	struct stub *s = ctx;
	const struct csi_read_args *ra = args;
	struct csi_hello_res *hr = res;
	struct csi_read_res *rr = res;
	struct stub_reply *rep;
	uint32_t i;

	s->calls++;
	*reply = NULL;
	if (proc == CSI_PROC_HELLO) {
		memset(hr, 0, sizeof(*hr));
		hr->host = 1;
		hr->epoch = 1;
		hr->block_size = BS;
		hr->max_blocks = 64;
		hr->max_push = 0;
		hr->max_evict = 1024;
		hr->features = ((const struct csi_hello_args *)args)->features;
		hr->lease_seconds = 90;
		return 0;
	}
	if (proc != CSI_PROC_READ)
		return -1;
	/* every file is 1 GiB; every block is data */
	rep = malloc(sizeof(*rep));
	if (!rep)
		return -1;
	memset(rr, 0, sizeof(*rr));
	rr->attr.file = ra->file;
	rr->attr.size = 1ull << 30;
	rr->attr.change = 7;
	for (i = 0; i < ra->count; i++) {
		rep->b[i].kind = CSI_RK_DATA;
		block_of(ra->lbn + i, rep->data[i]);
		sc_hasher_digest(s->hs, rep->data[i], BS, &rep->b[i].hash);
		rep->b[i].data.p = rep->data[i];
		rep->b[i].data.len = BS;
	}
	rr->blocks = rep->b;
	rr->nblocks = ra->count;
	*reply = rep;
	return 0;
}

static void stub_release(void *ctx, void *reply)
{
	(void)ctx;
	free(reply);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * One reader: random reads of blocks_per_read blocks, cached in the host
 * h, or (pool set) bare copies of blocks out of a pool of per_file.
 */
struct reader {
	struct sc_host *h;
	const uint8_t *pool;
	uint32_t per_file, blocks_per_read;
	double seconds;
	uint64_t seed;
	uint64_t blocks;
	double elapsed;
	int err;
	pthread_t t;
};

static void *reader_run(void *arg)
{
	struct reader *rd = arg;
	size_t len = (size_t)rd->blocks_per_read * BS;
	uint8_t *buf = malloc(len);
	struct sc_prng r;
	double t0 = now();
	uint32_t i, lbn;

	rd->blocks = 0;
	rd->err = !buf;
	sc_prng_seed(&r, rd->seed);
	while (!rd->err) {
		for (i = 0; i < 1024 && !rd->err; i++) {
			lbn = sc_prng_below(&r, rd->per_file -
					    rd->blocks_per_read + 1);
			if (rd->pool) {
				memcpy(buf, rd->pool + (size_t)lbn * BS, len);
				/* the copy is used: not optimised away */
				__asm__ volatile("" : : "r"(buf) : "memory");
			} else {
				rd->err = sc_host_read(rd->h,
						       sc_prng_below(&r, FILES),
						       (uint64_t)lbn * BS, buf,
						       len) != (ssize_t)len;
			}
			rd->blocks += rd->blocks_per_read;
		}
		rd->elapsed = now() - t0;
		if (rd->elapsed >= rd->seconds)
			break;
	}
	free(buf);
	return NULL;
}

/* Blocks per second read by threads readers like *like (-1: one failed). */
static double blocks_per_s(const struct reader *like, uint32_t threads)
{
	struct reader rd[2];
	double rate = 0;
	uint32_t i;

	for (i = 0; i < threads; i++) {
		rd[i] = *like;
		rd[i].seed = 5 + i;
		if (pthread_create(&rd[i].t, NULL, reader_run, &rd[i])) {
			fprintf(stderr, "host bench: no thread\n");
			exit(1);
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(rd[i].t, NULL);
		if (rd[i].err)
			return -1;
		rate += (double)rd[i].blocks / rd[i].elapsed;
	}
	return rate;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* One figure over the rounds: median, min-max, against its target (or none: NAN). */
static void report(const char *name, const char *unit, double *v,
		   uint32_t rounds, bool at_most, double target,
		   const char *what)
{
	char verdict[64] = "";
	double med;

	qsort(v, rounds, sizeof(*v), cmp_double);
	med = rounds % 2 ? v[rounds / 2] :
			   (v[rounds / 2 - 1] + v[rounds / 2]) / 2;
	if (!isnan(target))
		snprintf(verdict, sizeof(verdict), "; target %s %.2f: %s",
			 at_most ? "<=" : ">=", target,
			 (at_most ? med <= target : med >= target) ? "met" :
								     "MISSED");
	printf("%-19s %9.3f %-8s (%.3f-%.3f over %u rounds%s; %s)\n", name,
	       med, unit, v[0], v[rounds - 1], rounds, verdict, what);
}

#define HIT_ROUNDS 5

/*
 * What this machine asks of any hit, measured in the same rounds: a copy
 * of a random block of a pool as large as the cache (it comes from DRAM,
 * as a hit's does), by one thread and by two at once, and a load that
 * needs the one before it, random over the pool (a hit's lookups are
 * chains of such loads: the CSI-Map's bucket, entry and content, then
 * the content cache's slot and the policy's links).
 *
 * The pool's first word of each 64-byte line names the next line of one
 * cycle through all of them in random order (Sattolo's shuffle).
 */
static void ref_chain_build(uint8_t *pool, uint32_t blocks)
{
	uint32_t n = blocks * (BS / 64), i, j, t;
	uint32_t *next = (uint32_t *)pool;
	struct sc_prng r;

	for (i = 0; i < n; i++)
		next[i * 16] = i;
	sc_prng_seed(&r, 3);
	for (i = n - 1; i > 0; i--) {
		j = sc_prng_below(&r, i);
		t = next[i * 16];
		next[i * 16] = next[j * 16];
		next[j * 16] = t;
	}
}

/* Seconds per load along the pool's chain. */
static double ref_dependent_load(const uint8_t *pool, double seconds)
{
	const uint32_t *next = (const uint32_t *)pool;
	uint64_t loads = 0;
	uint32_t i, at = 0;
	double t0 = now();

	do {
		for (i = 0; i < 4096; i++)
			at = next[at * 16];
		loads += 4096;
	} while (now() - t0 < seconds);
	__asm__ volatile("" : : "r"(at));
	return (now() - t0) / (double)loads;
}


/* A host over the stub with every block of files 0..files-1 read once. */
static struct sc_host *filled_host(struct stub *s, uint32_t cache_blocks,
				   uint64_t csimap_budget, uint32_t files)
{
	struct sc_host_config c = {
		.name = "bench",
		.variant = SC_VARIANT_SEACACHE,
		.cache_blocks = cache_blocks,
		.csimap_budget = csimap_budget,
		.tr = { .call = stub_call, .release = stub_release, .ctx = s },
	};
	uint8_t *buf = malloc(64 * BS);
	struct sc_host *h;
	uint32_t f, lbn;

	memset(c.uuid, 1, sizeof(c.uuid));
	if (!buf || sc_host_create(&c, &h)) {
		fprintf(stderr, "host bench: cannot create the host\n");
		exit(1);
	}
	for (f = 0; f < files; f++)
		for (lbn = 0; lbn < cache_blocks; lbn += 64)
			if (sc_host_read(h, f, (uint64_t)lbn * BS, buf,
					 64 * BS) < 0) {
				fprintf(stderr, "host bench: fill failed\n");
				exit(1);
			}
	free(buf);
	return h;
}

static double bytes_per_block(struct sc_host *h, uint32_t cache_blocks)
{
	struct sc_host_stats st;

	sc_host_get_stats(h, &st);
	return (double)(st.mem_bytes - (uint64_t)cache_blocks * BS) /
	       cache_blocks;
}

void bench_host(double seconds, uint32_t cache_blocks)
{
	/* a CSI-Map of 4 addresses per cached content: 4 VMs' clones */
	uint64_t map4 = sc_csimap_budget(cache_blocks, 4);
	struct stub s = { .hs = sc_hasher_new() };
	double one[HIT_ROUNDS], sixteen[HIT_ROUNDS], two[HIT_ROUNDS];
	double ref1[HIT_ROUNDS], ref2[HIT_ROUNDS], load[HIT_ROUNDS];
	double round_s = seconds / 3, r1, r16, r2;
	uint8_t *pool = malloc((size_t)cache_blocks * BS);
	struct reader bare = { .pool = pool, .per_file = cache_blocks,
			       .blocks_per_read = 1, .seconds = round_s };
	struct reader one_block = { .per_file = cache_blocks,
				    .blocks_per_read = 1, .seconds = round_s };
	struct reader sixteen_blocks = { .per_file = cache_blocks,
					 .blocks_per_read = 16,
					 .seconds = round_s };
	struct sc_host *h;
	char what[96];
	uint64_t calls;
	uint32_t i;

	if (!s.hs || !pool) {
		fprintf(stderr, "host bench: out of memory\n");
		exit(1);
	}
	ref_chain_build(pool, cache_blocks);
	h = filled_host(&s, cache_blocks, 0, 1);
	printf("host_bytes_per_block %10.1f bytes     (beyond the 4096-byte block, default CSI-Map budget of 64 B per block; target <= 128)\n",
	       bytes_per_block(h, cache_blocks));
	sc_host_destroy(h);

	h = filled_host(&s, cache_blocks, map4, FILES);
	one_block.h = h;
	sixteen_blocks.h = h;
	calls = s.calls;
	for (i = 0; i < HIT_ROUNDS; i++) {
		r1 = blocks_per_s(&one_block, 1);
		r16 = blocks_per_s(&sixteen_blocks, 1);
		r2 = blocks_per_s(&one_block, 2);
		if (r1 < 0 || r16 < 0 || r2 < 0) {
			fprintf(stderr, "host bench: a cached read failed\n");
			exit(1);
		}
		one[i] = 1e6 / r1;
		sixteen[i] = 1e6 / r16;
		two[i] = r2 / r1;
		r1 = blocks_per_s(&bare, 1);
		ref1[i] = 1e6 / r1;
		ref2[i] = blocks_per_s(&bare, 2) / r1;
		load[i] = 1e6 * ref_dependent_load(pool, round_s);
	}
	if (s.calls != calls) {
		fprintf(stderr, "host bench: a cached read reached the server\n");
		exit(1);
	}
	snprintf(what, sizeof(what),
		 "one block per read, %u clones of %u blocks", FILES,
		 cache_blocks);
	report("host_read_hit_4k", "us/block", one, HIT_ROUNDS, true, 0.4,
	       what);
	report("host_read_hit_64k", "us/block", sixteen, HIT_ROUNDS, true,
	       0.25, "16 blocks per read");
	report("host_read_hit_2thr", "x", two, HIT_ROUNDS, false, 1.8,
	       "two threads' blocks/s over one thread's, one block per read");
	report("ref_copy_4k", "us/block", ref1, HIT_ROUNDS, true, NAN,
	       "a bare copy of a random block of a pool as large: the floor of a hit");
	report("ref_copy_2thr", "x", ref2, HIT_ROUNDS, false, NAN,
	       "two threads' bare copies over one thread's");
	report("ref_dram_load", "us", load, HIT_ROUNDS, true, NAN,
	       "a load that needs the one before it, random over the pool");
	printf("host_bytes_per_block %10.1f bytes     (with a CSI-Map of 4 addresses per cached block)\n",
	       bytes_per_block(h, cache_blocks));
	sc_host_destroy(h);
	sc_hasher_free(s.hs);
	free(pool);
}
