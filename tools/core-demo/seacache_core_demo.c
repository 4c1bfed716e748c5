// SPDX-License-Identifier: BSD-2-Clause
/*
 * seacache-core-demo: the shared core on a generated VDI storm.
 *
 * Many VMs read near-identical images through one host cache.  The storage
 * server is modelled in-process: it knows every block's content (its
 * CSI-Map is the core's sc_csimap) and answers like SeaCache with a cache
 * tracker and server push: an address the host does not know costs one
 * call that returns the hash, and the data only if the host lacks that
 * content; data replies push the other addresses holding the same content.
 * The host cache (sc_hostcache) is the one the host agent and the kernel
 * module use.  Compared: an address-indexed LRU cache of the same size
 * (what a VDI host does today), and the content cache under LRU and
 * ELRU-n.  Every block returned is checked against the bytes the image
 * holds.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "seacache/hostcache.h"
#include "seacache/prng.h"

#define BS 4096u
#define PUSH_MAX 64u

struct images {
	uint32_t vms, blocks;
	uint32_t *content;	/* [vm * blocks + lbn] -> content id */
	uint32_t ncontents;
	struct sc_hash *hash;	/* per content id */
	uint64_t seed;
	struct sc_csimap *server_map;
};

struct workload {
	const char *name;
	uint32_t *vm, *lbn;	/* the reads, in the order they arrive */
	uint32_t n;
	uint32_t unique;	/* distinct contents read */
};

struct result {
	uint64_t reads, local_hits, content_hits, misses, calls, bad;
};

static void die(const char *msg)
{
	fprintf(stderr, "seacache-core-demo: %s\n", msg);
	exit(1);
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		die("out of memory; try fewer --vms or --blocks");
	return p;
}

/* Content 0 is the zero block; the others are seeded random bytes. */
static void content_bytes(const struct images *im, uint32_t id, void *buf)
{
	struct sc_prng r;

	if (id == 0) {
		memset(buf, 0, BS);
		return;
	}
	sc_prng_seed(&r, im->seed * 1000003u + id);
	sc_prng_fill(&r, buf, BS);
}

/*
 * A golden image (5% zero blocks, 10% copies of earlier blocks) and one
 * clone per VM with `divergence` percent of its blocks rewritten.
 */
static void make_images(struct images *im, uint32_t divergence)
{
	struct sc_csimap_config mcfg = { 0 };
	struct sc_hasher *hs = sc_hasher_new();
	uint8_t buf[BS];
	struct sc_prng r;
	uint32_t v, l, id;
	uint32_t *golden = xcalloc(im->blocks, sizeof(uint32_t));

	if (!hs)
		die("no SHA-256 available from OpenSSL");
	sc_prng_seed(&r, im->seed);
	im->ncontents = 1;
	for (l = 0; l < im->blocks; l++) {
		uint32_t dice = sc_prng_below(&r, 100);

		if (dice < 5)
			golden[l] = 0;
		else if (dice < 15 && l > 0)
			golden[l] = golden[sc_prng_below(&r, l)];
		else
			golden[l] = im->ncontents++;
	}
	im->content = xcalloc((size_t)im->vms * im->blocks, sizeof(uint32_t));
	for (v = 0; v < im->vms; v++)
		for (l = 0; l < im->blocks; l++)
			im->content[(size_t)v * im->blocks + l] =
				sc_prng_below(&r, 100) < divergence ?
				im->ncontents++ : golden[l];
	free(golden);
	im->hash = xcalloc(im->ncontents, sizeof(*im->hash));
	for (id = 0; id < im->ncontents; id++) {
		content_bytes(im, id, buf);
		sc_hasher_digest(hs, buf, BS, &im->hash[id]);
	}
	sc_hasher_free(hs);
	/* The server's CSI-Map holds every address of every image. */
	mcfg.mem_budget = (uint64_t)im->vms * im->blocks * 128 + (1 << 20);
	mcfg.expected_sharing = im->vms;
	im->server_map = sc_csimap_create(&mcfg);
	if (!im->server_map)
		die("cannot build the server's CSI-Map");
	for (v = 0; v < im->vms; v++)
		for (l = 0; l < im->blocks; l++)
			sc_csimap_insert(im->server_map, v, l,
					 &im->hash[im->content[(size_t)v * im->blocks + l]],
					 SC_CSI_LEARNT);
}

struct timed_read {
	double t;
	uint32_t vm, lbn;
};

static int by_time(const void *a, const void *b)
{
	const struct timed_read *x = a, *y = b;

	return (x->t > y->t) - (x->t < y->t);
}

/*
 * Merge per-VM read sequences as the host sees them: VM v starts
 * v * stagger * len read-times after VM 0 (storms start over a window,
 * not in lockstep), and each read's time jitters a little.
 */
static void interleave(struct workload *w, const struct images *im,
		       const uint32_t *seq, uint32_t len, double stagger,
		       uint64_t seed)
{
	uint8_t *seen = xcalloc(im->ncontents, 1);
	struct timed_read *tr;
	struct sc_prng r;
	uint32_t i, k, v, id;

	sc_prng_seed(&r, seed);
	w->n = len * im->vms;
	tr = xcalloc(w->n, sizeof(*tr));
	for (v = 0, i = 0; v < im->vms; v++)
		for (k = 0; k < len; k++, i++) {
			tr[i].t = v * stagger * len + k +
				  sc_prng_below(&r, 1000) / 1000.0;
			tr[i].vm = v;
			tr[i].lbn = seq[k];
		}
	qsort(tr, w->n, sizeof(*tr), by_time);
	w->vm = xcalloc(w->n, sizeof(uint32_t));
	w->lbn = xcalloc(w->n, sizeof(uint32_t));
	for (i = 0; i < w->n; i++) {
		w->vm[i] = tr[i].vm;
		w->lbn[i] = tr[i].lbn;
		id = im->content[(size_t)tr[i].vm * im->blocks + tr[i].lbn];
		if (!seen[id]) {
			seen[id] = 1;
			w->unique++;
		}
	}
	free(tr);
	free(seen);
}

/* Boot storm: every VM reads the same quarter of its image, in boot order. */
static void make_boot(struct workload *w, const struct images *im,
		      double stagger)
{
	uint32_t len = im->blocks / 4, i, j, t;
	uint32_t *perm = xcalloc(im->blocks, sizeof(uint32_t));
	struct sc_prng r;

	sc_prng_seed(&r, im->seed + 11);
	for (i = 0; i < im->blocks; i++)
		perm[i] = i;
	for (i = im->blocks - 1; i > 0; i--) {
		j = sc_prng_below(&r, i + 1);
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	w->name = "boot storm";
	interleave(w, im, perm, len, stagger, im->seed + 12);
	free(perm);
}

/* Virus-scan storm: every VM reads its whole image, front to back. */
static void make_scan(struct workload *w, const struct images *im,
		      double stagger)
{
	uint32_t *seq = xcalloc(im->blocks, sizeof(uint32_t));
	uint32_t i;

	for (i = 0; i < im->blocks; i++)
		seq[i] = i;
	w->name = "virus-scan storm";
	interleave(w, im, seq, im->blocks, stagger, im->seed + 13);
	free(seq);
}

static void check_block(const struct images *im, uint32_t id, const void *got,
			struct result *res)
{
	uint8_t want[BS];

	content_bytes(im, id, want);
	if (memcmp(want, got, BS) != 0)
		res->bad++;
}

/* SeaCache: the host cache with tracker and server push. */
static void run_seacache(const struct images *im, const struct workload *w,
			 uint32_t cache_blocks, const char *policy,
			 struct result *res)
{
	struct sc_hostcache_config cfg = {
		.block_size = BS, .cache_blocks = cache_blocks, .policy = policy,
		.csimap_budget = (uint64_t)im->vms * im->blocks * 128,
		.expected_sharing = im->vms,
	};
	struct sc_hostcache *hc = sc_hostcache_create(&cfg);
	struct sc_hostcache_stats st;
	struct sc_addr push[PUSH_MAX];
	uint8_t buf[BS], data[BS];
	struct sc_hash h;
	uint32_t i, k, n, id;

	if (!hc)
		die("cannot create the host cache");
	memset(res, 0, sizeof(*res));
	for (i = 0; i < w->n; i++) {
		id = im->content[(size_t)w->vm[i] * im->blocks + w->lbn[i]];
		switch (sc_hostcache_read(hc, w->vm[i], w->lbn[i], buf, &h)) {
		case SC_ADDR_HIT:
			break;
		case SC_NEED_HASH:
			res->calls++;
			if (sc_hostcache_read_hash(hc, w->vm[i], w->lbn[i],
						   &im->hash[id], buf) ==
			    SC_CONTENT_HIT)
				break;
			goto fetch;
		case SC_NEED_DATA:
			res->calls++;
fetch:
			content_bytes(im, id, data);
			sc_hostcache_fill(hc, w->vm[i], w->lbn[i], &im->hash[id],
					  data);
			n = sc_csimap_sharers_list(im->server_map, &im->hash[id],
						   push, PUSH_MAX);
			for (k = 0; k < n; k++)
				sc_hostcache_learn(hc, push[k].file, push[k].lbn,
						   &im->hash[id]);
			memcpy(buf, data, BS);
			break;
		default:
			die("unexpected read result");
		}
		check_block(im, id, buf, res);
	}
	sc_hostcache_get_stats(hc, &st);
	res->reads = st.reads;
	res->local_hits = st.addr_hits;
	res->content_hits = st.content_hits;
	res->misses = st.misses;
	sc_hostcache_destroy(hc);
}

/* Today's host: a cache of the same size indexed by address only. */
static void run_address_lru(const struct images *im, const struct workload *w,
			    uint32_t cache_blocks, struct result *res)
{
	struct sc_ccache_config cfg = {
		.block_size = BS, .capacity_blocks = cache_blocks,
		.policy = "lru",
	};
	struct sc_ccache *cc = sc_ccache_create(&cfg);
	struct sc_hash key;
	const void *hit;
	uint8_t data[BS];
	uint32_t i, id;
	uint64_t a;

	if (!cc)
		die("cannot create the address cache");
	memset(res, 0, sizeof(*res));
	memset(&key, 0, sizeof(key));
	for (i = 0; i < w->n; i++) {
		id = im->content[(size_t)w->vm[i] * im->blocks + w->lbn[i]];
		/* The key names the address, not the content. */
		a = (uint64_t)w->vm[i] << 32 | w->lbn[i];
		memcpy(key.b, &a, sizeof(a));
		key.b[8] = 0xad;
		res->reads++;
		hit = sc_ccache_lookup(cc, &key);
		if (hit) {
			res->local_hits++;
			check_block(im, id, hit, res);
			continue;
		}
		res->misses++;
		res->calls++;
		content_bytes(im, id, data);
		sc_ccache_insert(cc, &key, data, 1);
		check_block(im, id, data, res);
	}
	sc_ccache_destroy(cc);
}

static void print_row(const char *size, const char *policy,
		      const struct result *r)
{
	printf("  %-16s %-14s %6.1f%% %7.1f%% %8.1f%% %11.1f %10llu\n", size,
	       policy, 100.0 * (r->local_hits + r->content_hits) / r->reads,
	       100.0 * r->local_hits / r->reads,
	       100.0 * r->content_hits / r->reads,
	       (double)r->misses * BS / (1 << 20),
	       (unsigned long long)r->calls);
}

static int split_list(char *s, char **out, int max)
{
	int n = 0;
	char *tok;

	for (tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
		out[n++] = tok;
	return n;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: seacache-core-demo [options]\n"
		"Replays generated VDI storms (many VMs reading near-identical images\n"
		"through one host cache) and compares an address-indexed LRU cache with\n"
		"SeaCache's content cache under LRU and ELRU-n, at several cache sizes.\n"
		"  --vms N            VMs on the host (default 16)\n"
		"  --blocks N         4 KiB blocks per image (default 16384 = 64 MiB)\n"
		"  --divergence PCT   blocks each clone rewrote (default 5)\n"
		"  --cache-pct LIST   cache sizes, %% of the distinct blocks a storm reads\n"
		"                     (default 10,25,50,100)\n"
		"  --policies LIST    content cache policies (default lru,elru:4,elru:16,elru:64)\n"
		"  --workload W       boot, scan or both (default both)\n"
		"  --stagger F        each VM starts F of a VM's storm after the previous\n"
		"                     one (default 0.1; 0: all in lockstep)\n"
		"  --seed N           generator seed (default 1)\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vms", required_argument, NULL, 'v' },
		{ "blocks", required_argument, NULL, 'b' },
		{ "divergence", required_argument, NULL, 'd' },
		{ "cache-pct", required_argument, NULL, 'c' },
		{ "policies", required_argument, NULL, 'p' },
		{ "workload", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 's' },
		{ "stagger", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char pct_buf[256] = "10,25,50,100";
	char pol_buf[256] = "lru,elru:4,elru:16,elru:64";
	const char *which = "both";
	struct images im = { .vms = 16, .blocks = 16384, .seed = 1 };
	uint32_t divergence = 5;
	double stagger = 0.1;
	char *pcts[16], *pols[16];
	int npct, npol, o, i, j, nw = 0;
	struct workload w[2];
	struct result res;
	uint64_t bad = 0;
	double t0;

	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'v':
			im.vms = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			im.blocks = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'd':
			divergence = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'c':
			snprintf(pct_buf, sizeof(pct_buf), "%s", optarg);
			break;
		case 'p':
			snprintf(pol_buf, sizeof(pol_buf), "%s", optarg);
			break;
		case 'w':
			which = optarg;
			break;
		case 's':
			im.seed = strtoull(optarg, NULL, 10);
			break;
		case 't':
			stagger = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (im.vms < 1 || im.vms > 1024 || im.blocks < 64 ||
	    im.blocks > (1u << 22) || divergence > 100 || stagger < 0 ||
	    stagger > 100) {
		fprintf(stderr, "seacache-core-demo: --vms 1..1024, --blocks 64..4194304, --divergence 0..100, --stagger 0..100\n");
		return 2;
	}
	npct = split_list(pct_buf, pcts, 16);
	npol = split_list(pol_buf, pols, 16);
	for (i = 0; i < npct; i++) {
		double p = atof(pcts[i]);

		if (p <= 0 || p > 100) {
			fprintf(stderr, "seacache-core-demo: cache size '%s' is not a percentage in (0, 100]\n",
				pcts[i]);
			return 2;
		}
	}
	if (strcmp(which, "boot") && strcmp(which, "scan") && strcmp(which, "both")) {
		fprintf(stderr, "seacache-core-demo: --workload is boot, scan or both\n");
		return 2;
	}

	t0 = (double)clock() / CLOCKS_PER_SEC;
	fprintf(stderr, "generating %u images of %u MiB (%u%% diverged)...\n",
		im.vms, im.blocks * BS >> 20, divergence);
	make_images(&im, divergence);
	memset(w, 0, sizeof(w));
	if (strcmp(which, "scan"))
		make_boot(&w[nw++], &im, stagger);
	if (strcmp(which, "boot"))
		make_scan(&w[nw++], &im, stagger);

	printf("SeaCache core demo: %u VMs on one host, %u MiB images, %u%% of each diverged, 4 KiB blocks,\n"
	       "VM starts staggered by %.2f of a storm\n",
	       im.vms, im.blocks * BS >> 20, divergence, stagger);
	printf("Server model: cache tracker + server push (%u addresses per data reply).\n",
	       PUSH_MAX);
	printf("hit = served without data transfer (local: no call at all; content: hash-only reply)\n");
	for (j = 0; j < nw; j++) {
		printf("\n%s: %u reads, %u distinct contents (%.1f MiB)\n",
		       w[j].name, w[j].n, w[j].unique,
		       (double)w[j].unique * BS / (1 << 20));
		printf("  %-16s %-14s %7s %8s %9s %11s %10s\n", "cache size",
		       "cache", "hit", "local", "content", "fetched MiB",
		       "calls");
		for (i = 0; i < npct; i++) {
			uint32_t blocks = (uint32_t)(atof(pcts[i]) / 100 *
						     w[j].unique);
			char size[32];
			int p;

			if (blocks < 1)
				blocks = 1;
			snprintf(size, sizeof(size), "%s%% %.1f MiB", pcts[i],
				 (double)blocks * BS / (1 << 20));
			run_address_lru(&im, &w[j], blocks, &res);
			bad += res.bad;
			print_row(size, "address-LRU", &res);
			for (p = 0; p < npol; p++) {
				char label[32];

				snprintf(label, sizeof(label), "%s", pols[p]);
				for (char *c = label; *c; c++)
					*c = *c == ':' ? '-' : (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
				run_seacache(&im, &w[j], blocks, pols[p], &res);
				bad += res.bad;
				print_row("", label, &res);
			}
			fflush(stdout);
		}
	}
	printf("\nEvery block returned was checked against the image: %s (%.1f s CPU).\n",
	       bad ? "MISMATCHES FOUND" : "all correct",
	       (double)clock() / CLOCKS_PER_SEC - t0);
	sc_csimap_destroy(im.server_map);
	free(im.content);
	free(im.hash);
	for (j = 0; j < nw; j++) {
		free(w[j].vm);
		free(w[j].lbn);
	}
	return bad ? 1 : 0;
}
