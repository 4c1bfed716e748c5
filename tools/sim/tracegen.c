/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The synthetic VDI workload generator (tracegen.h).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seacache/hash.h"
#include "seacache/prng.h"
#include "trace_int.h"
#include "tracegen.h"

#define GEN_MAX_REQ 1024u

/* Content ids: a golden block, a clone's private block, a written block. */
#define CID_PRIVATE (1ull << 62)
#define CID_WRITTEN (2ull << 62)

void sim_gen_defaults(struct sim_gen_params *p)
{
	*p = (struct sim_gen_params){
		.seed = 1,
		.vms = 8,
		.blocks = 16384,
		.block_size = 4096,
		.shared = 0.9,
		.boot_blocks = 4096,
		.scan = true,
		.writes = 0.02,
		.max_req = 8,
		.fp_bytes = 16,
		.gap_us = 100,
	};
}

/* (vm, block) -> content id of blocks written so far. */
struct overlay {
	uint64_t *keys, *vals; /* key 0 is free: keys are stored + 1 */
	size_t cap, n;
};

static bool overlay_put(struct overlay *o, uint64_t key, uint64_t val)
{
	size_t i;

	if (o->n * 2 >= o->cap) {
		size_t ncap = o->cap ? o->cap * 2 : 1024;
		uint64_t *k = calloc(ncap, sizeof(*k)), *v = calloc(ncap, sizeof(*v));

		if (!k || !v) {
			free(k);
			free(v);
			return false;
		}
		for (size_t j = 0; j < o->cap; j++) {
			if (!o->keys[j])
				continue;
			i = sim_slot(k, ncap, o->keys[j]);
			k[i] = o->keys[j];
			v[i] = o->vals[j];
		}
		free(o->keys);
		free(o->vals);
		o->keys = k;
		o->vals = v;
		o->cap = ncap;
	}
	key++;
	i = sim_slot(o->keys, o->cap, key);
	o->n += !o->keys[i];
	o->keys[i] = key;
	o->vals[i] = val;
	return true;
}

static bool overlay_get(const struct overlay *o, uint64_t key, uint64_t *val)
{
	size_t i;

	if (!o->n)
		return false;
	i = sim_slot(o->keys, o->cap, key + 1);
	if (!o->keys[i])
		return false;
	*val = o->vals[i];
	return true;
}

struct gen {
	const struct sim_gen_params *p;
	FILE *out;
	struct sc_prng rng;
	uint64_t seedkey;
	uint64_t shared_cut; /* a block is shared when its draw is below */
	uint64_t next_write; /* counter for written contents */
	struct overlay ov;
	bool oom;
	struct sim_gen_stats st;
	char line[64 + GEN_MAX_REQ * 65];
};

static bool block_shared(const struct gen *g, uint32_t b)
{
	return sc_mix64(g->seedkey ^ (0x51a4edull << 32) ^ b) < g->shared_cut;
}

static uint64_t content_of(const struct gen *g, uint32_t vm, uint32_t b)
{
	uint64_t c;

	if (overlay_get(&g->ov, (uint64_t)vm << 32 | b, &c))
		return c;
	if (block_shared(g, b))
		return b;
	return CID_PRIVATE | (uint64_t)vm << 32 | b;
}

static char *put_u64(char *s, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*s++ = tmp[--n];
	return s;
}

static char *put_fp(const struct gen *g, char *s, uint64_t cid)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t fp[32];
	uint64_t k = cid ^ g->seedkey;

	/* mix64 is a bijection: the first 8 bytes already tell contents apart */
	for (uint32_t i = 0; i < g->p->fp_bytes; i += 8) {
		uint64_t v = sc_mix64(k);

		memcpy(fp + i, &v, 8);
		k ^= 0xa5a5a5a5a5a5a5a5ull + i;
	}
	*s++ = ' ';
	for (uint32_t i = 0; i < g->p->fp_bytes; i++) {
		*s++ = hex[fp[i] >> 4];
		*s++ = hex[fp[i] & 15];
	}
	return s;
}

static bool emit(struct gen *g, uint64_t ts, uint32_t vm, char op,
		 uint32_t lbn, uint32_t n, const uint64_t *cids)
{
	char *s = g->line;

	s = put_u64(s, ts);
	*s++ = ' ';
	s = put_u64(s, vm);
	*s++ = ' ';
	*s++ = op;
	*s++ = ' ';
	s = put_u64(s, vm); /* image: each VM's own clone */
	*s++ = ' ';
	s = put_u64(s, lbn);
	*s++ = ' ';
	s = put_u64(s, n);
	for (uint32_t i = 0; i < n; i++)
		s = put_fp(g, s, cids[i]);
	*s++ = '\n';
	g->st.requests++;
	g->st.blocks += n;
	if (op == 'R')
		g->st.reads++;
	else
		g->st.writes++;
	return fwrite(g->line, 1, (size_t)(s - g->line), g->out) ==
	       (size_t)(s - g->line);
}

static uint32_t req_len(struct gen *g)
{
	return 1 + sc_prng_below(&g->rng, g->p->max_req);
}

/* One VM's read of [lbn, lbn + n), maybe followed by a write. */
static bool vm_step(struct gen *g, uint64_t ts, uint32_t vm, uint32_t lbn,
		    uint32_t n)
{
	uint64_t cids[GEN_MAX_REQ];
	uint32_t wl, wn;

	for (uint32_t i = 0; i < n; i++)
		cids[i] = content_of(g, vm, lbn + i);
	if (!emit(g, ts, vm, 'R', lbn, n, cids))
		return false;
	/* 53 random bits against the probability, as a double would */
	if ((double)(sc_prng_next(&g->rng) >> 11) * 0x1p-53 >= g->p->writes)
		return true;
	wn = req_len(g);
	if (wn > g->p->blocks)
		wn = g->p->blocks;
	wl = sc_prng_below(&g->rng, g->p->blocks - wn + 1);
	for (uint32_t i = 0; i < wn; i++) {
		cids[i] = CID_WRITTEN | g->next_write++;
		if (!overlay_put(&g->ov, (uint64_t)vm << 32 | (wl + i), cids[i])) {
			g->oom = true;
			return false;
		}
	}
	return emit(g, ts, vm, 'W', wl, wn, cids);
}

/* The boot set: boot_blocks distinct blocks as runs, in one fixed order. */
static uint32_t *boot_runs(struct gen *g, uint32_t *nruns)
{
	const struct sim_gen_params *p = g->p;
	uint8_t *taken = calloc(p->blocks, 1);
	uint32_t *runs = malloc(sizeof(*runs) * 2 * (size_t)(p->boot_blocks + 1));
	uint32_t left = p->boot_blocks, n = 0;

	if (!taken || !runs) {
		free(taken);
		free(runs);
		return NULL;
	}
	while (left) {
		uint32_t b = sc_prng_below(&g->rng, p->blocks);
		uint32_t want = req_len(g), len = 0;

		while (taken[b]) /* the next free block, wrapping */
			b = b + 1 == p->blocks ? 0 : b + 1;
		while (len < want && len < left && b + len < p->blocks &&
		       !taken[b + len])
			taken[b + len++] = 1;
		runs[2 * n] = b;
		runs[2 * n + 1] = len;
		n++;
		left -= len;
	}
	free(taken);
	*nruns = n;
	return runs;
}

int sim_gen_write(const struct sim_gen_params *p, FILE *out,
		  struct sim_gen_stats *st, char *err, size_t errlen)
{
	struct gen *g;
	uint32_t *runs = NULL, nruns = 0;
	uint64_t t0 = 0;
	int rc = -1;

	if (!p->vms || !p->blocks || p->boot_blocks > p->blocks ||
	    !sc_block_size_valid(p->block_size) || !p->max_req ||
	    p->max_req > GEN_MAX_REQ || p->fp_bytes < 8 || p->fp_bytes > 32 ||
	    !(p->shared >= 0 && p->shared <= 1) ||
	    !(p->writes >= 0 && p->writes <= 1)) {
		snprintf(err, errlen,
			 "bad parameters: want vms >= 1, blocks >= 1, boot blocks <= blocks, block size 4096..65536 (power of two), 1..%u blocks a request, fingerprints of 8..32 bytes, shared and writes in [0, 1]",
			 GEN_MAX_REQ);
		return -1;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	g->p = p;
	g->out = out;
	sc_prng_seed(&g->rng, p->seed);
	g->seedkey = sc_mix64(p->seed ^ 0x7ace9e4ull);
	/* shared = 1 must mean every block: saturate instead of overflowing */
	g->shared_cut = p->shared >= 1 ? UINT64_MAX :
			(uint64_t)(p->shared * 0x1p64);
	fprintf(out,
		"# seacache-workload v1 block_size=%u\n"
		"# seacache-tracegen seed=%llu vms=%u blocks=%u shared=%g boot=%u scan=%d writes=%g max_req=%u fp_bytes=%u gap_us=%u\n",
		p->block_size, (unsigned long long)p->seed, p->vms, p->blocks,
		p->shared, p->boot_blocks, p->scan, p->writes, p->max_req,
		p->fp_bytes, p->gap_us);

	if (p->boot_blocks) {
		runs = boot_runs(g, &nruns);
		if (!runs)
			goto oom;
	}
	/* Slot i of every VM, VMs spread evenly within the gap. */
	for (uint32_t i = 0; i < nruns; i++)
		for (uint32_t v = 0; v < p->vms; v++)
			if (!vm_step(g, t0 + (uint64_t)i * p->gap_us +
					       (uint64_t)v * p->gap_us / p->vms,
				     v, runs[2 * i], runs[2 * i + 1]))
				goto io;
	t0 += (uint64_t)(nruns + 1) * p->gap_us;
	if (p->scan) {
		uint32_t slots = (p->blocks + p->max_req - 1) / p->max_req;

		for (uint32_t i = 0; i < slots; i++) {
			uint32_t lbn = i * p->max_req;
			uint32_t n = p->blocks - lbn < p->max_req ?
					     p->blocks - lbn : p->max_req;

			for (uint32_t v = 0; v < p->vms; v++)
				if (!vm_step(g, t0 + (uint64_t)i * p->gap_us +
						       (uint64_t)v * p->gap_us / p->vms,
					     v, lbn, n))
					goto io;
		}
	}
	if (fflush(out))
		goto io;
	if (st)
		*st = g->st;
	rc = 0;
	goto done;
io:
	if (!g->oom) {
		snprintf(err, errlen, "write error");
		goto done;
	}
oom:
	snprintf(err, errlen, "out of memory");
done:
	free(runs);
	free(g->ov.keys);
	free(g->ov.vals);
	free(g);
	return rc;
}

int sim_gen_zipf(const struct sim_zipf_params *p, FILE *out,
		 struct sim_gen_stats *st, char *err, size_t errlen)
{
	double *cdf = malloc((size_t)p->objects * sizeof(*cdf)), sum = 0, u;
	uint64_t i, rank;
	struct sc_prng rng;
	uint32_t lo, hi, mid;
	char line[96], *s;
	int rc = 0;

	*st = (struct sim_gen_stats){ 0 };
	if (!cdf || !p->objects) {
		snprintf(err, errlen, "zipf: %s", cdf ? "no objects" : "out of memory");
		free(cdf);
		return -1;
	}
	for (i = 0; i < p->objects; i++)
		cdf[i] = sum += pow((double)(i + 1), -p->alpha);
	sc_prng_seed(&rng, p->seed);
	for (i = 0; i < p->requests && !rc; i++) {
		u = (double)(sc_prng_next(&rng) >> 11) * 0x1p-53 * sum;
		for (lo = 0, hi = p->objects - 1; lo < hi;) {
			mid = lo + (hi - lo) / 2;
			if (cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		rank = (lo * 0x9e3779b97f4a7c15ull) & ((1ull << 40) - 1);
		/* Windows filetime: 100 ns units, from 2007 as MSR's are */
		s = put_u64(line, 128166372000000000ull + i * 10);
		memcpy(s, ",zipf,0,Read,", 13);
		s = put_u64(s + 13, rank * 4096);
		memcpy(s, ",4096,0\n", 8);
		s += 8;
		if (fwrite(line, 1, (size_t)(s - line), out) != (size_t)(s - line)) {
			snprintf(err, errlen, "write: %s", strerror(errno));
			rc = -1;
		}
	}
	st->requests = st->reads = st->blocks = i;
	free(cdf);
	return rc;
}
