// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI service in process under the fuzzing client (csi_fuzz_driver.h):
 * a dedup store in a temporary directory holding a known file (random
 * data, holes, a partial last block) and a scratch file for the fuzzing
 * WRITEs that starts as a copy of the known file's first blocks, the service on the project's RPC server (127.0.0.1, port 0, a
 * small connection limit so that bursts go over it) in a thread.
 *
 * Passing means: every answer the driver judged was one the protocol
 * allows, the good client read the file right all along and at the end,
 * STATS answered; the server thread still runs; and the server's own
 * counters saw what the driver's probes make certain: arguments that do
 * not decode, streams dropped (a non-call, an oversize mark, fragments
 * over the limit) and connections refused (a burst of max_conns + 8).
 *
 * CSI_FUZZ_SECONDS (3) and CSI_FUZZ_SEED (the clock) set the run.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <seacache/prng.h>
#include <seacache/rpc_transport.h>

#include "csi_fuzz_driver.h"
#include "csi_test_store.h"
#include "service.h"

#define BS 4096u
#define KNOWN_SIZE (300 * BS + 1234)
#define MAX_CONNS 16u

static char store_dir[] = "/tmp/csi-fuzz-XXXXXX";
static struct dstore *ds;
static uint8_t *known;
static uint64_t ino_known, ino_scratch;

static uint64_t make_file(const char *name, const void *buf, size_t len)
{
	return csi_test_make_file(ds, name, buf, len, 0);
}

static int group_setup(void **state)
{
	struct sc_prng r;

	(void)state;
	/* Housekeeping on: the CSI-Map follows the fuzzing WRITEs (pushes). */
	ds = csi_test_store_open(store_dir, BS, 100);
	if (!ds)
		return -1;
	known = malloc(KNOWN_SIZE);
	if (!known)
		return -1;
	sc_prng_seed(&r, 0xf022);
	sc_prng_fill(&r, known, KNOWN_SIZE);
	/* Holes: blocks 17-19 and 200 (all-zero blocks are not stored). */
	memset(known + 17 * BS, 0, 3 * BS);
	memset(known + 200 * BS, 0, BS);
	ino_known = make_file("known", known, KNOWN_SIZE);
	/* Content shared with the known file: pushes name one to the other. */
	ino_scratch = make_file("scratch", known, 8 * BS);
	return dstore_apply_pending(ds) ? -1 : 0;
}

static int group_teardown(void **state)
{
	(void)state;
	free(known);
	return csi_test_store_remove(ds, store_dir);
}

struct server {
	struct sc_rpc_server *srv;
	atomic_bool returned;
};

static void *server_main(void *arg)
{
	struct server *s = arg;

	sc_rpc_server_run(s->srv);
	atomic_store(&s->returned, true);
	return NULL;
}

static void test_fuzz_live(void **state)
{
	struct csi_service_config cfg;
	struct csi_service *svc;
	struct sc_rpc_service rpc;
	struct sc_rpc_server_opts so = { .max_conns = MAX_CONNS };
	struct sc_rpc_server_stats st;
	struct server s = { 0 };
	struct csi_fuzz_opts o = { .host = "127.0.0.1", .fuzzers = 4,
				   .max_conns = MAX_CONNS, .content = known,
				   .size = KNOWN_SIZE };
	struct csi_fuzz_report rep;
	pthread_t th;
	char err[1024];
	int rc;

	(void)state;
	/* Small limits, so that fuzzing reaches BUSY and TOO_BIG. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.features = CSI_FEAT_ALL;
	cfg.max_hosts = 16;
	cfg.tracker_entries = 4096;
	cfg.max_evict = 64;
	svc = csi_service_new(ds, &cfg);
	assert_non_null(svc);
	rpc = csi_service_rpc(svc);
	assert_int_equal(sc_rpc_server_new(&so, &rpc, 1, &s.srv), 0);
	assert_int_equal(pthread_create(&th, NULL, server_main, &s), 0);

	o.port = sc_rpc_server_port(s.srv);
	o.file = ino_known;
	o.scratch = ino_scratch;
	csi_fuzz_opts_env(&o, 3);
	rc = csi_fuzz_run(&o, &rep, err, sizeof(err));
	csi_fuzz_report_print(&rep);
	if (rc)
		fail_msg("%s", err);
	assert_false(atomic_load(&s.returned));

	sc_rpc_server_stop(s.srv);
	assert_int_equal(pthread_join(th, NULL), 0);
	sc_rpc_server_get_stats(s.srv, &st);
	printf("server: %llu calls, %llu GARBAGE_ARGS, %llu connections accepted, %llu refused, %llu dropped\n",
	       (unsigned long long)st.calls,
	       (unsigned long long)st.garbage_args,
	       (unsigned long long)st.conns_accepted,
	       (unsigned long long)st.conns_refused,
	       (unsigned long long)st.conns_dropped);
	assert_true(st.garbage_args >= 1);
	assert_true(st.conns_dropped >= 3);
	assert_true(st.conns_refused >= 8);
	assert_true(st.calls >= rep.answered);
	sc_rpc_server_free(s.srv);
	csi_service_free(svc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fuzz_live),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
