// SPDX-License-Identifier: BSD-2-Clause
#include "traffic.h"

#include <stdlib.h>
#include <string.h>

#include <seacache/prng.h>

#define POOL 48
#define BLK 4096

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Payload of n bytes: pool blocks one after another, from a random one. */
static void payload(struct sc_prng *g, const uint8_t *pool, uint8_t *p, uint32_t n)
{
	uint32_t b = sc_prng_below(g, POOL);

	for (uint32_t off = 0; off < n; off += BLK, b = (b + 1) % POOL)
		memcpy(p + off, pool + (size_t)b * BLK, n - off < BLK ? n - off : BLK);
}

/*
 * One record at p (room for 4 + 512 + 70000 + 4 bytes); its length.
 * Kinds: a READ-like reply (header, opaque to the end), the same with
 * bytes after the opaque (an NFSv4 COMPOUND whose last op is not READ),
 * a small call, a record in two fragments.
 */
static size_t record(struct sc_prng *g, const uint8_t *pool, uint8_t *p)
{
	static const uint32_t sizes[] = { 4096, 8192, 65536, 32768, 1024, 5000, 70000 };
	uint32_t kind = sc_prng_below(g, 8), head = 4 * (3 + sc_prng_below(g, 60));
	uint32_t n = sc_prng_below(g, 3) ? sizes[sc_prng_below(g, 7)] :
					   1 + sc_prng_below(g, 70000);
	uint32_t tail = kind == 5 ? 4 * (1 + sc_prng_below(g, 30)) : 0;
	uint32_t pad = (4 - n % 4) % 4, body;

	if (kind >= 6) {	/* a small call or reply: all header */
		body = 8 + sc_prng_below(g, 300);
		put32(p, 0x80000000u | body);
		sc_prng_fill(g, p + 4, body);
		return 4 + body;
	}
	body = head + 4 + n + pad + tail;
	sc_prng_fill(g, p + 4, head);
	put32(p + 4 + head, n);
	payload(g, pool, p + 8 + head, n);
	memset(p + 8 + head + n, 0, pad);
	sc_prng_fill(g, p + 8 + head + n + pad, tail);
	if (kind == 4 && body > 100) {	/* two fragments: a mark in the middle */
		uint32_t first = 40 + sc_prng_below(g, body - 80);

		put32(p, first);
		memmove(p + 8 + first, p + 4 + first, body - first);
		put32(p + 4 + first, 0x80000000u | (body - first));
		return 8 + body;
	}
	put32(p, 0x80000000u | body);
	return 4 + body;
}

uint8_t *traffic_make(enum traffic_kind kind, uint64_t seed, size_t len,
		      size_t *out_len)
{
	size_t cap = len + 4 + 512 + 70000 + 8, n = 0;
	uint8_t *buf = malloc(cap), pool[POOL * BLK];
	struct sc_prng g;

	if (!buf)
		return NULL;
	sc_prng_seed(&g, seed);
	switch (kind) {
	case TRAFFIC_RANDOM:
		sc_prng_fill(&g, buf, len);
		n = len;
		break;
	case TRAFFIC_REPEAT:
		sc_prng_fill(&g, pool, 10000);
		for (n = 0; n < len; n += 10000)
			memcpy(buf + n, pool, len - n < 10000 ? len - n : 10000);
		n = len;
		break;
	case TRAFFIC_NFS:
		sc_prng_fill(&g, pool, sizeof(pool));
		while (n < len)
			n += record(&g, pool, buf + n);
		break;
	}
	*out_len = n;
	return buf;
}
