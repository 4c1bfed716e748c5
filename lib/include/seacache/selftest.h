/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The core's self-tests.  The same cases run as cmocka unit tests in user
 * space (tests/unit) and at load time of a test module in a real kernel
 * (tests/kernel), so both environments are held to one specification.
 */
#ifndef SEACACHE_SELFTEST_H
#define SEACACHE_SELFTEST_H

#include "compat.h"

struct sc_selftest_opts {
	uint32_t random_ops;	/* operations per randomized case */
	uint64_t seed;
};

struct sc_selftest_case {
	const char *name;
	/* 0 on success; on failure the failed check has been logged. */
	int (*run)(const struct sc_selftest_opts *o);
};

extern const struct sc_selftest_case sc_selftest_cases[];
extern const unsigned int sc_selftest_ncases;

/* Run every case, logging each result; returns the number that failed. */
unsigned int sc_selftest_run_all(const struct sc_selftest_opts *o);

#endif /* SEACACHE_SELFTEST_H */
