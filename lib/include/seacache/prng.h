/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A small seeded pseudo-random generator (SplitMix64) for self-tests,
 * benchmarks and generated workloads: the same seed gives the same run in
 * user space and in the kernel.  Not for anything secret.
 */
#ifndef SEACACHE_PRNG_H
#define SEACACHE_PRNG_H

#include "compat.h"

struct sc_prng {
	uint64_t s;
};

static inline void sc_prng_seed(struct sc_prng *p, uint64_t seed)
{
	p->s = seed;
}

static inline uint64_t sc_prng_next(struct sc_prng *p)
{
	p->s += 0x9e3779b97f4a7c15ull;
	return sc_mix64(p->s);
}

/* Uniform in [0, n), n >= 1, without a division. */
static inline uint32_t sc_prng_below(struct sc_prng *p, uint32_t n)
{
	return (uint32_t)(((sc_prng_next(p) >> 32) * n) >> 32);
}

static inline void sc_prng_fill(struct sc_prng *p, void *buf, size_t len)
{
	uint8_t *b = buf;
	uint64_t v;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		v = sc_prng_next(p);
		sc_memcpy(b + i, &v, 8);
	}
	if (i < len) {
		v = sc_prng_next(p);
		sc_memcpy(b + i, &v, len - i);
	}
}

#endif /* SEACACHE_PRNG_H */
