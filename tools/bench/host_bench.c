// SPDX-License-Identifier: BSD-2-Clause
/*
 * The host library's read hit path (seacache/host.h): sc_host_read of
 * blocks already in the host cache, which must cost no system call and at
 * most 2 µs per 4 KiB block, and the host's memory per cached block
 * (target: at most 4 KiB + 128 bytes).  The server is a stub transport
 * that only fills the cache (HELLO, then READ answered with DATA); the
 * timed reads never reach it.
 */
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

/* Random reads of blocks_per_read cached blocks for about seconds. */
static double hit_us_per_block(struct sc_host *h, uint32_t per_file,
			       uint32_t blocks_per_read, double seconds)
{
	uint8_t *buf = malloc((size_t)blocks_per_read * BS);
	struct sc_prng r;
	uint64_t blocks = 0;
	double t0 = now(), t;
	uint32_t i;

	if (!buf)
		return -1;
	sc_prng_seed(&r, 5);
	do {
		for (i = 0; i < 4096; i++) {
			uint32_t lbn = sc_prng_below(&r, per_file -
							 blocks_per_read);

			if (sc_host_read(h, sc_prng_below(&r, FILES),
					 (uint64_t)lbn * BS, buf,
					 (size_t)blocks_per_read * BS) < 0)
				return -1;
			blocks += blocks_per_read;
		}
		t = now() - t0;
	} while (t < seconds);
	free(buf);
	return t * 1e6 / (double)blocks;
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
	uint64_t map4 = (uint64_t)cache_blocks * 240;
	struct stub s = { .hs = sc_hasher_new() };
	struct sc_host *h;
	double one, sixteen;
	uint64_t calls;

	if (!s.hs) {
		fprintf(stderr, "host bench: out of memory\n");
		exit(1);
	}
	h = filled_host(&s, cache_blocks, 0, 1);
	printf("host_bytes_per_block %10.1f bytes     (beyond the 4096-byte block, default CSI-Map budget of 64 B per block; target <= 128)\n",
	       bytes_per_block(h, cache_blocks));
	sc_host_destroy(h);

	h = filled_host(&s, cache_blocks, map4, FILES);
	calls = s.calls;
	one = hit_us_per_block(h, cache_blocks, 1, seconds);
	sixteen = hit_us_per_block(h, cache_blocks, 16, seconds);
	if (s.calls != calls || one < 0 || sixteen < 0) {
		fprintf(stderr, "host bench: a cached read reached the server\n");
		exit(1);
	}
	printf("host_read_hit_4k    %12.3f us/block  (one block per read, %u clones of %u blocks; target <= 2)\n",
	       one, FILES, cache_blocks);
	printf("host_read_hit_64k   %12.3f us/block  (16 blocks per read)\n",
	       sixteen);
	printf("host_bytes_per_block %10.1f bytes     (with a CSI-Map of 4 addresses per cached block)\n",
	       bytes_per_block(h, cache_blocks));
	sc_host_destroy(h);
	sc_hasher_free(s.hs);
}
