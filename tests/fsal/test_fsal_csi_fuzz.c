// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI service of a real ganesha.nfsd (FSAL_DEDUP with CSI_Port) under
 * the fuzzing client of tests/csi-server (csi_fuzz_driver.h): a known file
 * written over NFSv3 (random data, holes, a partial last block) is read
 * by the good client over CSI, block by block checked, while the fuzzing
 * connections run; fuzzing WRITEs aim at a scratch file.  Afterwards the
 * known file still reads right over NFS, and the harness fails the run if
 * ganesha.nfsd died or does not stop cleanly.
 *
 * CSI_PORT (environment) is the port the server's config gives;
 * CSI_FUZZ_SECONDS (3) and CSI_FUZZ_SEED (the clock) set the run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "csi_fuzz_driver.h"
#include "nfs_harness.h"

#define D "/csifuzz"
#define BS 4096u
#define KNOWN_SIZE (300 * BS + 1234)
#define SEED 0xf022ull
/* The CSI RPC server's connection limit: server_thread.c leaves the
 * transport's default (rpc_transport.h, max_conns 0: 256). */
#define CSI_MAX_CONNS 256u

static struct nfs_context *v3;
static uint8_t *known;

static uint64_t fileid(const char *path)
{
	struct nfs_stat_64 st;

	assert_int_equal(nfs_stat64(v3, path, &st), 0);
	return st.nfs_ino;
}

static void test_csi_fuzz(void **state)
{
	struct csi_fuzz_opts o = { .host = "127.0.0.1", .fuzzers = 4,
				   .max_conns = CSI_MAX_CONNS, .content = known,
				   .size = KNOWN_SIZE };
	struct csi_fuzz_report rep;
	char err[1024];
	int rc;

	(void)state;
	assert_int_equal(nh_write_file(v3, D "/known", known, KNOWN_SIZE,
				       1 << 20), 0);
	/* Content shared with the known file: pushes name one to the other. */
	assert_int_equal(nh_write_file(v3, D "/scratch", known, 8 * BS,
				       1 << 20), 0);
	o.file = fileid(D "/known");
	o.scratch = fileid(D "/scratch");
	o.port = (uint16_t)atoi(nh_env("CSI_PORT"));
	csi_fuzz_opts_env(&o, 3);
	rc = csi_fuzz_run(&o, &rep, err, sizeof(err));
	csi_fuzz_report_print(&rep);
	if (rc)
		fail_msg("%s", err);
	assert_int_equal(nh_check_file(v3, D "/known", known, KNOWN_SIZE), 0);
}

static int setup(void **state)
{
	(void)state;
	known = malloc(KNOWN_SIZE);
	if (!known)
		return -1;
	nh_fill_seeded(known, KNOWN_SIZE, SEED);
	/* Holes: blocks 17-19 and 200 (all-zero blocks are not stored). */
	memset(known + 17 * BS, 0, 3 * BS);
	memset(known + 200 * BS, 0, BS);
	return nh_suite_setup(D, &v3, NULL);
}

static int teardown(void **state)
{
	(void)state;
	nh_suite_teardown(&v3, NULL);
	free(known);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csi_fuzz),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
