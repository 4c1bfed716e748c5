// SPDX-License-Identifier: BSD-2-Clause
/*
 * The synthetic VDI workload generator: the same seed gives the same
 * bytes and another seed other bytes; the sharing fraction asked for is
 * the one measured; the boot storm is the same blocks in the same order in
 * every VM; writes give new content that later reads see.  Its output is
 * read back through the workload reader, with no malformed line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"
#include "tracegen.h"

static char *gen(const struct sim_gen_params *p, size_t *len,
		 struct sim_gen_stats *st)
{
	char err[256] = "", *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	assert_non_null(f);
	if (sim_gen_write(p, f, st, err, sizeof(err)))
		fail_msg("generate: %s", err);
	fclose(f);
	return buf;
}

static void small(struct sim_gen_params *p, uint64_t seed)
{
	sim_gen_defaults(p);
	p->seed = seed;
	p->vms = 4;
	p->blocks = 2048;
	p->boot_blocks = 300;
	p->writes = 0.05;
}

static void same_seed_same_bytes(void **state)
{
	struct sim_gen_params p;
	size_t la, lb, lc;
	char *a, *b, *c;

	(void)state;
	small(&p, 7);
	a = gen(&p, &la, NULL);
	b = gen(&p, &lb, NULL);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	p.seed = 8;
	c = gen(&p, &lc, NULL);
	/* The requests differ, not only the header's seed=. */
	assert_string_not_equal(strchr(strchr(a, '\n') + 1, '\n'),
				strchr(strchr(c, '\n') + 1, '\n'));
	free(a);
	free(b);
	free(c);
}

static const char *to_file(const char *text, size_t len)
{
	static char path[] = "/tmp/sim-tracegen-test-XXXXXX";
	int fd;

	strcpy(path, "/tmp/sim-tracegen-test-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

/*
 * Scan only, no writes: per block, do all VMs read the same content?  The
 * measured fraction must be the one asked for, within 4 standard
 * deviations of the binomial draw (N = 4096 blocks: about 0.03).
 */
static void sharing_fraction_measured(void **state)
{
	static const double fractions[] = { 0.0, 0.3, 0.75, 1.0 };

	(void)state;
	for (size_t k = 0; k < sizeof(fractions) / sizeof(fractions[0]); k++) {
		const uint32_t vms = 5, blocks = 4096;
		struct sim_gen_params p;
		struct sim_gen_stats st;
		uint8_t *fps = calloc((size_t)vms * blocks, 16);
		uint32_t same = 0;
		struct sim_trace *t;
		struct sim_req r;
		char err[256], *text;
		const char *path;
		size_t len;
		double got;

		assert_non_null(fps);
		sim_gen_defaults(&p);
		p.seed = 100 + k;
		p.vms = vms;
		p.blocks = blocks;
		p.boot_blocks = 0;
		p.writes = 0;
		p.shared = fractions[k];
		text = gen(&p, &len, &st);
		path = to_file(text, len);
		free(text);
		t = sim_trace_open(path, NULL, 0, err, sizeof(err));
		assert_non_null(t);
		while (sim_trace_next(t, &r) == 1) {
			assert_int_equal(r.op, 'R');
			assert_int_equal(r.file, r.vm);
			assert_int_equal(r.fp_len, 16);
			memcpy(fps + ((size_t)r.vm * blocks + r.lbn) * 16, r.fp,
			       (size_t)r.nblocks * 16);
		}
		assert_int_equal(sim_trace_stats(t)->malformed, 0);
		assert_int_equal(sim_trace_stats(t)->requests, st.requests);
		assert_int_equal(st.blocks, (uint64_t)vms * blocks);
		sim_trace_close(t);
		unlink(path);
		for (uint32_t b = 0; b < blocks; b++) {
			uint32_t v = 1;

			while (v < vms && !memcmp(fps + b * 16,
						   fps + ((size_t)v * blocks + b) * 16, 16))
				v++;
			same += v == vms;
		}
		got = (double)same / blocks;
		if (got < fractions[k] - 0.03 || got > fractions[k] + 0.03)
			fail_msg("shared %.2f: measured %.4f", fractions[k], got);
		/* A private block is private to every VM: all contents differ. */
		if (fractions[k] == 0.0) {
			for (uint32_t v = 1; v < vms; v++)
				assert_memory_not_equal(fps, fps + (size_t)v * blocks * 16, 16);
		}
		free(fps);
	}
}

/*
 * Boot storm: every VM reads the same boot_blocks distinct blocks in the
 * same order; writes: about the asked share, and a read after a write of
 * the same block sees the written content.
 */
static void boot_storm_and_writes(void **state)
{
	struct sim_gen_params p;
	struct sim_gen_stats st;
	struct sim_trace *t;
	struct sim_req r;
	const uint32_t vms = 4;
	uint32_t *order[4], n[4] = { 0 };
	uint8_t *last; /* last written content per (vm, block), 0: none */
	char err[256], *text;
	const char *path;
	uint64_t seen_after_write = 0;
	size_t len;
	bool scan = false;

	(void)state;
	small(&p, 9);
	p.writes = 0.1;
	text = gen(&p, &len, &st);
	path = to_file(text, len);
	free(text);
	last = calloc((size_t)vms * p.blocks, 17);
	assert_non_null(last);
	for (uint32_t v = 0; v < vms; v++) {
		order[v] = calloc(p.boot_blocks, sizeof(uint32_t));
		assert_non_null(order[v]);
	}
	t = sim_trace_open(path, "seacache", 0, err, sizeof(err));
	assert_non_null(t);
	while (sim_trace_next(t, &r) == 1) {
		for (uint32_t i = 0; i < r.nblocks; i++) {
			uint8_t *slot = last + ((size_t)r.vm * p.blocks + r.lbn + i) * 17;

			if (r.op == 'W') {
				slot[0] = 1;
				memcpy(slot + 1, r.fp + i * 16, 16);
				continue;
			}
			if (slot[0]) {
				assert_memory_equal(slot + 1, r.fp + i * 16, 16);
				seen_after_write++;
			}
			/* A VM's first boot_blocks block reads are its boot. */
			if (n[r.vm] < p.boot_blocks)
				order[r.vm][n[r.vm]++] = (uint32_t)(r.lbn + i);
			else
				scan = true;
		}
	}
	assert_int_equal(sim_trace_stats(t)->malformed, 0);
	sim_trace_close(t);
	unlink(path);
	assert_true(scan);
	for (uint32_t v = 0; v < vms; v++) {
		assert_int_equal(n[v], p.boot_blocks);
		assert_memory_equal(order[v], order[0],
				    p.boot_blocks * sizeof(uint32_t));
	}
	/* Distinct blocks in the boot set. */
	for (uint32_t i = 0; i < p.boot_blocks; i++)
		for (uint32_t j = i + 1; j < p.boot_blocks; j++)
			assert_int_not_equal(order[0][i], order[0][j]);
	/* writes: 0.1 per read, so 1/11 of the requests give or take */
	assert_true(st.writes * 11 > st.requests * 7 / 10);
	assert_true(st.writes * 11 < st.requests * 13 / 10);
	assert_true(seen_after_write > 0);
	for (uint32_t v = 0; v < vms; v++)
		free(order[v]);
	free(last);
}

static void bad_parameters(void **state)
{
	struct sim_gen_params p;
	char err[256] = "";
	FILE *f = fopen("/dev/null", "w");

	(void)state;
	assert_non_null(f);
	sim_gen_defaults(&p);
	p.boot_blocks = p.blocks + 1;
	assert_int_equal(sim_gen_write(&p, f, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad parameters"));
	sim_gen_defaults(&p);
	p.shared = 1.5;
	assert_int_equal(sim_gen_write(&p, f, NULL, err, sizeof(err)), -1);
	sim_gen_defaults(&p);
	p.block_size = 1000;
	assert_int_equal(sim_gen_write(&p, f, NULL, err, sizeof(err)), -1);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(same_seed_same_bytes),
		cmocka_unit_test(sharing_fraction_measured),
		cmocka_unit_test(boot_storm_and_writes),
		cmocka_unit_test(bad_parameters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
