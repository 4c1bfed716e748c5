// SPDX-License-Identifier: BSD-2-Clause
/*
 * Data round trips through ganesha: files of sizes around block and RPC
 * boundaries, random, repetitive and zero content, written and read back
 * byte for byte over NFSv3 (bulk) and NFSv4 (small files, 2 KiB writes),
 * unaligned overwrites, sparse files and reads at and past the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nfs_harness.h"

#define SEED 0x5eac0de1ull
#define DIR "/io"

static struct nfs_context *v3, *v4;

enum content { RANDOM, REPEAT_4K, PERIOD_1000, ZEROS };
static const char *const content_name[] = { "random", "repeat4k", "period1000", "zeros" };

static void fill(void *buf, size_t len, enum content c, uint64_t seed)
{
	unsigned char *p = buf;
	unsigned char unit[4096];

	switch (c) {
	case RANDOM:
		nh_fill_seeded(buf, len, seed);
		break;
	case REPEAT_4K:
	case PERIOD_1000: {
		size_t period = c == REPEAT_4K ? 4096 : 1000;

		nh_fill_seeded(unit, period, seed);
		for (size_t i = 0; i < len; i += period)
			memcpy(p + i, unit, len - i < period ? len - i : period);
		break;
	}
	case ZEROS:
		memset(buf, 0, len);
		break;
	}
}

static int setup(void **state)
{
	(void)state;
	return nh_suite_setup(DIR, &v3, &v4);
}

static int teardown(void **state)
{
	(void)state;
	nh_suite_teardown(&v3, &v4);
	return 0;
}

static void roundtrip(struct nfs_context *wr, struct nfs_context *rd, size_t size,
		      enum content c, size_t piece, const char *tag)
{
	char path[256];
	unsigned char *buf = malloc(size ? size : 1);
	struct nfs_stat_64 st;

	assert_non_null(buf);
	snprintf(path, sizeof(path), DIR "/%s-%s-%zu-p%zu", tag, content_name[c], size, piece);
	fill(buf, size, c, nh_mix(SEED, size * 16 + c));
	assert_int_equal(nh_write_file(wr, path, buf, size, piece), 0);
	assert_int_equal(nfs_stat64(rd, path, &st), 0);
	assert_int_equal(st.nfs_size, size);
	if (nh_check_file(rd, path, buf, size) != 0)
		fail_msg("%s (%zu bytes, %s) does not read back", path, size, content_name[c]);
	printf("# %s: %zu bytes %s, %zu-byte writes: ok\n", path, size, content_name[c], piece);
	free(buf);
}

static const size_t sizes[] = { 0, 1, 4095, 4096, 4097, NH_MIB + 1, 64 * NH_MIB };

static void test_roundtrip_v3(void **state)
{
	size_t piece = nfs_get_writemax(v3);

	(void)state;
	printf("# server's WRITE3 maximum: %zu bytes, READ3 maximum: %zu\n", piece,
	       (size_t)nfs_get_readmax(v3));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (enum content c = RANDOM; c <= ZEROS; c++)
			roundtrip(v3, v3, sizes[i], c, piece, "v3");
}

/* Pieces that start and end inside blocks: read-modify-write in the FSAL. */
static void test_roundtrip_v3_unaligned_writes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i] > 2 * NH_MIB)
			continue;
		roundtrip(v3, v3, sizes[i], RANDOM, 12345, "v3u");
		roundtrip(v3, v3, sizes[i], PERIOD_1000, 4097, "v3u");
	}
	roundtrip(v3, v3, 8 * NH_MIB + 7, RANDOM, 1000 * 1000, "v3u");
}

static const size_t small_sizes[] = { 0, 1, 4095, 4096, 4097, 64 * 1024 + 3 };

static void test_roundtrip_v4(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(small_sizes) / sizeof(small_sizes[0]); i++) {
		for (enum content c = RANDOM; c <= PERIOD_1000; c++) {
			roundtrip(v4, v4, small_sizes[i], c, NH_V4_WRITE_MAX, "v4");
			/* the same file handle and data seen through v3 */
			roundtrip(v4, v3, small_sizes[i], c, 1000, "v4v3");
		}
	}
	/* bulk written over v3, read over v4 */
	roundtrip(v3, v4, NH_MIB + 1, RANDOM, nfs_get_writemax(v3), "v3v4");
}

/* Small writes at unaligned offsets over an existing file, against a model. */
static void test_overwrite_unaligned(void **state)
{
	const char *path = DIR "/overwrite";
	size_t size = NH_MIB + 1, cap = 2 * NH_MIB;
	unsigned char *model = calloc(1, cap), *piece = malloc(70000);
	struct nfsfh *fh;
	struct sc_prng r;

	(void)state;
	assert_non_null(model);
	assert_non_null(piece);
	nh_fill_seeded(model, size, nh_mix(SEED, 77));
	assert_int_equal(nh_write_file(v3, path, model, size, NH_MIB), 0);
	assert_int_equal(nfs_open(v3, path, O_RDWR, &fh), 0);
	sc_prng_seed(&r, nh_mix(SEED, 78));
	for (int i = 0; i < 200; i++) {
		size_t len = 1 + sc_prng_below(&r, i % 10 == 0 ? 70000 : 5000);
		size_t off = sc_prng_below(&r, (uint32_t)(size + 5000));

		if (off + len > cap)
			len = cap - off;
		sc_prng_fill(&r, piece, len);
		assert_int_equal(nh_pwrite_all(v3, fh, off, piece, len, len), 0);
		memcpy(model + off, piece, len);
		if (off + len > size)
			size = off + len;
	}
	assert_int_equal(nfs_fsync(v3, fh), 0);
	assert_int_equal(nfs_close(v3, fh), 0);
	if (nh_check_file(v3, path, model, size) != 0)
		fail_msg("%s differs from the model after 200 overwrites", path);
	if (nh_check_file(v4, path, model, size) != 0)
		fail_msg("%s differs from the model over NFSv4", path);
	free(model);
	free(piece);
}

/* A write far beyond the end: the gap reads as zeros. */
static void test_sparse(void **state)
{
	const char *path = DIR "/sparse";
	size_t off = 10 * NH_MIB + 100, tail = 4096, size = off + tail;
	unsigned char *model = calloc(1, size);
	struct nfsfh *fh;

	(void)state;
	assert_non_null(model);
	nh_fill_seeded(model + off, tail, nh_mix(SEED, 99));
	/* and one block in the middle of the gap */
	nh_fill_seeded(model + 5 * NH_MIB, 4096, nh_mix(SEED, 100));
	assert_int_equal(nfs_create(v3, path, O_CREAT | O_TRUNC | O_RDWR, 0644, &fh), 0);
	assert_int_equal(nh_pwrite_all(v3, fh, off, model + off, tail, tail), 0);
	assert_int_equal(nh_pwrite_all(v3, fh, 5 * NH_MIB, model + 5 * NH_MIB, 4096, 4096), 0);
	assert_int_equal(nfs_fsync(v3, fh), 0);
	assert_int_equal(nfs_close(v3, fh), 0);
	if (nh_check_file(v3, path, model, size) != 0)
		fail_msg("sparse file does not read back");
	free(model);
}

/* Reads at and past the end return what is there and no more. */
static void test_read_at_end(void **state)
{
	const char *path = DIR "/short";
	unsigned char data[10000], buf[20000];
	struct nfsfh *fh;
	int n;

	(void)state;
	nh_fill_seeded(data, sizeof(data), nh_mix(SEED, 5));
	assert_int_equal(nh_write_file(v3, path, data, sizeof(data), sizeof(data)), 0);
	assert_int_equal(nfs_open(v3, path, O_RDONLY, &fh), 0);
	n = nfs_pread(v3, fh, 9000, sizeof(buf), buf);
	assert_int_equal(n, 1000);
	assert_memory_equal(buf, data + 9000, 1000);
	assert_int_equal(nfs_pread(v3, fh, 10000, 100, buf), 0);
	assert_int_equal(nfs_pread(v3, fh, 1u << 30, 100, buf), 0);
	n = nfs_pread(v3, fh, 4095, 2, buf);
	assert_int_equal(n, 2);
	assert_memory_equal(buf, data + 4095, 2);
	assert_int_equal(nfs_close(v3, fh), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_v3),
		cmocka_unit_test(test_roundtrip_v3_unaligned_writes),
		cmocka_unit_test(test_roundtrip_v4),
		cmocka_unit_test(test_overwrite_unaligned),
		cmocka_unit_test(test_sparse),
		cmocka_unit_test(test_read_at_end),
	};

	return cmocka_run_group_tests_name("fsal_io", tests, setup, teardown);
}
