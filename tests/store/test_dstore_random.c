// SPDX-License-Identifier: BSD-2-Clause
/*
 * The dedup store against a plain model: seeded random writes (aligned
 * and not, from a small pool of block contents so that dedup, silent
 * writes and zero blocks happen all the time), truncations, removals,
 * reads, applies of the pending deltas, reclaims and reopens; every read
 * and, at intervals, every file compared byte for byte, and fsck clean.
 *
 *   test_dstore_random [OPS [SEED]]
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <seacache/prng.h>

#include "dstore.h"

#define BS 4096u
#define FILES 6
#define MAX_SIZE (64u * BS)
#define POOL 12

static unsigned long ops = 20000;
static uint64_t seed = 1;

struct model_file {
	uint64_t ino;		/* 0: does not exist */
	uint8_t *data;
	uint64_t size;
};

static struct {
	char dir[64];
	struct dstore *ds;
	struct dstore_params p;
	struct model_file f[FILES];
	uint8_t pool[POOL][BS];
	struct sc_prng r;
} T;

static void store_open(void)
{
	char err[256];

	assert_int_equal(dstore_open(T.dir, &T.p, &T.ds, err, sizeof(err)), 0);
}

static void file_create(int i)
{
	struct dstore_new n = { .type = DSTORE_REG, .mode = 0644 };
	struct dstore_attr a;
	char name[16];

	snprintf(name, sizeof(name), "f%d", i);
	assert_int_equal(dstore_create(T.ds, DSTORE_ROOT_INO, name, &n, &a), 0);
	T.f[i].ino = a.ino;
	T.f[i].size = 0;
	memset(T.f[i].data, 0, MAX_SIZE);
}

static void file_check(int i, uint64_t off, uint64_t len)
{
	static uint8_t got[MAX_SIZE + BS];
	uint64_t want = off >= T.f[i].size ? 0 :
			(len < T.f[i].size - off ? len : T.f[i].size - off);
	bool eof;
	ssize_t n = dstore_read(T.ds, T.f[i].ino, off, got, len, &eof);

	assert_int_equal(n, (ssize_t)want);
	assert_memory_equal(got, T.f[i].data + off, want);
	assert_true(eof == (off + want >= T.f[i].size));
}

static void all_check(void)
{
	struct dstore_fsck_report rep;

	for (int i = 0; i < FILES; i++)
		if (T.f[i].ino)
			file_check(i, 0, MAX_SIZE);
	assert_int_equal(dstore_fsck(T.ds, 0, &rep), 0);
	assert_int_equal(rep.problems, 0);
}

/* Content of a write: blocks from the pool, zeros, or fresh bytes. */
static void fill(uint8_t *buf, uint64_t len)
{
	for (uint64_t o = 0; o < len; o += BS) {
		uint64_t n = len - o < BS ? len - o : BS;
		uint32_t kind = sc_prng_below(&T.r, 10);

		if (kind < 6)
			memcpy(buf + o, T.pool[sc_prng_below(&T.r, POOL)], n);
		else if (kind < 8)
			memset(buf + o, 0, n);
		else
			sc_prng_fill(&T.r, buf + o, n);
	}
}

static void op_write(int i)
{
	static uint8_t buf[16 * BS];
	bool aligned = sc_prng_below(&T.r, 2);
	uint64_t off = sc_prng_below(&T.r, MAX_SIZE / BS - 1) * BS;
	uint64_t len = (1 + sc_prng_below(&T.r, 16)) * BS;

	if (!aligned) {
		off += sc_prng_below(&T.r, BS);
		len -= sc_prng_below(&T.r, BS);
	}
	if (off + len > MAX_SIZE)
		len = MAX_SIZE - off;
	fill(buf, len);
	assert_int_equal(dstore_write(T.ds, T.f[i].ino, off, buf, len,
				      sc_prng_below(&T.r, 8) == 0, NULL),
			 (ssize_t)len);
	memcpy(T.f[i].data + off, buf, len);
	if (off + len > T.f[i].size)
		T.f[i].size = off + len;
}

static void op_truncate(int i)
{
	uint64_t size = sc_prng_below(&T.r, MAX_SIZE);
	struct dstore_attr a = { .size = size };

	assert_int_equal(dstore_setattr(T.ds, T.f[i].ino, &a, DSTORE_SET_SIZE,
					NULL), 0);
	if (size < T.f[i].size)
		memset(T.f[i].data + size, 0, T.f[i].size - size);
	T.f[i].size = size;
}

static void test_random_against_model(void **state)
{
	char name[16];

	(void)state;
	for (int i = 0; i < FILES; i++)
		file_create(i);
	for (unsigned long op = 0; op < ops; op++) {
		int i = (int)sc_prng_below(&T.r, FILES);
		uint32_t what = sc_prng_below(&T.r, 1000);

		if (what < 550) {
			op_write(i);
		} else if (what < 620) {
			op_truncate(i);
		} else if (what < 900) {
			file_check(i, sc_prng_below(&T.r, MAX_SIZE),
				   sc_prng_below(&T.r, 20 * BS));
		} else if (what < 930) {
			snprintf(name, sizeof(name), "f%d", i);
			assert_int_equal(dstore_remove(T.ds, DSTORE_ROOT_INO,
						       name), 0);
			file_create(i);
		} else if (what < 960) {
			assert_int_equal(dstore_apply_pending(T.ds), 0);
		} else if (what < 990) {
			assert_true(dstore_reclaim(T.ds) >= 0);
		} else {
			dstore_close(T.ds);
			store_open();
		}
		if (op % 2000 == 1999)
			all_check();
	}
	all_check();
}

static int setup(void **state)
{
	(void)state;
	strcpy(T.dir, "/tmp/dstore-random-XXXXXX");
	if (!mkdtemp(T.dir))
		return -1;
	dstore_params_default(&T.p);
	T.p.map_size = 256ull << 20;
	T.p.container_size = 1ull << 20;
	T.p.reclaim_interval_ms = 3;	/* the housekeeper races the ops */
	sc_prng_seed(&T.r, seed);
	for (int i = 0; i < POOL; i++)
		sc_prng_fill(&T.r, T.pool[i], BS);
	for (int i = 0; i < FILES; i++) {
		T.f[i].data = calloc(1, MAX_SIZE);
		if (!T.f[i].data)
			return -1;
	}
	store_open();
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	dstore_close(T.ds);
	for (int i = 0; i < FILES; i++)
		free(T.f[i].data);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", T.dir);
	return system(cmd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_model),
	};

	if (argc > 1)
		ops = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		seed = strtoull(argv[2], NULL, 0);
	printf("# %lu operations, seed %llu\n", ops, (unsigned long long)seed);
	return cmocka_run_group_tests(tests, setup, teardown);
}
