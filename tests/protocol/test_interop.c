// SPDX-License-Identifier: BSD-2-Clause
/*
 * Interoperability over real TCP on loopback with ONC RPC as libtirpc
 * speaks it: rpcgen's client stubs call our server, and our client calls
 * a server made of rpcgen's dispatch stubs under libtirpc's svc_run (in a
 * child process, stopped by the test).  READ replies carry 64 blocks of
 * data, so multi-fragment records (libtirpc fragments large messages)
 * are reassembled on both sides.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <rpc/rpc.h>

#include "csi_to_rpcgen.h"
#include "test_service.h"

void seacache_prog_1(struct svc_req *rqstp, SVCXPRT *transp);
void seacache_peer_prog_1(struct svc_req *rqstp, SVCXPRT *transp);

/* ---- rpcgen's client against our server ---- */

static void *server_main(void *srv)
{
	sc_rpc_server_run(srv);
	return NULL;
}

static CLIENT *tirpc_client(uint16_t port, uint32_t prog)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	int sock = RPC_ANYSOCK;
	CLIENT *cl;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cl = clnttcp_create(&sin, prog, CSI_VERS, &sock, 0, 0);
	assert_non_null(cl);
	return cl;
}

static void test_rpcgen_client_our_server(void **state)
{
	struct sc_rpc_server_opts so = { 0 };
	struct sc_rpc_server *srv;
	struct csi_rpcgen_conv conv = { 0 };
	struct csi_read_args a = { .file = 77, .lbn = 10, .count = 64,
				   .flags = CSI_READ_WANT_DATA };
	struct sc_hash ev = { { 9 } };
	sc_evict_args ea = { 0 };
	sc_read_args ra;
	sc_read_res *rr;
	sc_evict_res *er;
	pthread_t th;
	CLIENT *cl;
	uint32_t i, j;

	(void)state;
	assert_int_equal(sc_rpc_server_new(&so, &test_svc, 1, &srv), 0);
	assert_int_equal(pthread_create(&th, NULL, server_main, srv), 0);
	cl = tirpc_client(sc_rpc_server_port(srv), CSI_PROG);

	assert_non_null(sc_null_1(NULL, cl));
	assert_int_equal(csi_to_rpcgen(&conv, CSI_MSG_READ_ARGS, &a, &ra), 0);
	rr = sc_read_1(&ra, cl);
	assert_non_null(rr);
	assert_int_equal(rr->status, SC_OK);
	assert_int_equal(rr->sc_read_res_u.ok.blocks.blocks_len, 64);
	for (i = 0; i < 64; i++) {
		sc_read_block *b = &rr->sc_read_res_u.ok.blocks.blocks_val[i];

		assert_int_equal(b->kind, SC_RK_DATA);
		assert_int_equal(b->sc_read_block_u.data.data.data_len, BS);
		for (j = 0; j < BS; j++)
			if ((uint8_t)b->sc_read_block_u.data.data.data_val[j] !=
			    pattern_byte(77, 10 + i, j))
				fail_msg("block %u byte %u wrong", i, j);
	}
	clnt_freeres(cl, (xdrproc_t)xdr_sc_read_res, (char *)rr);
	/* Eviction notices from rpcgen's encoder reach our handler. */
	ea.hdr.evicted.evicted_len = 1;
	ea.hdr.evicted.evicted_val = (sc_hash *)ev.b;
	er = sc_evict_1(&ea, cl);
	assert_non_null(er);
	assert_int_equal(er->status, SC_ERR_BUSY);
	/* A procedure our service fails is SYSTEM_ERR to libtirpc. */
	assert_null(sc_commit_1(&(sc_commit_args){ 0 }, cl));
	csi_rpcgen_conv_release(&conv);
	clnt_destroy(cl);
	sc_rpc_server_stop(srv);
	pthread_join(th, NULL);
	sc_rpc_server_free(srv);
}

/* ---- our client against rpcgen's server ---- */

/*
 * rpcgen's server procedures (its dispatch stubs call these): READ
 * answers pattern blocks, PEER_READ one block of pattern bytes; the rest
 * answer with a status only, which the test checks where it matters.
 */
static sc_read_block srv_blocks[CSI_MAX_BLOCKS];
static char srv_data[CSI_MAX_BLOCKS][BS];

sc_read_res *sc_read_1_svc(sc_read_args *a, struct svc_req *rq)
{
	static sc_read_res r;
	uint32_t i, j, n = a->count < CSI_MAX_BLOCKS ? a->count : 0;

	(void)rq;
	memset(&r, 0, sizeof(r));
	r.sc_read_res_u.ok.attr.file = a->file;
	for (i = 0; i < n; i++) {
		for (j = 0; j < BS; j++)
			srv_data[i][j] = (char)pattern_byte(a->file, a->lbn + i,
							    j);
		srv_blocks[i].kind = SC_RK_DATA;
		srv_blocks[i].sc_read_block_u.data.data.data_len = BS;
		srv_blocks[i].sc_read_block_u.data.data.data_val = srv_data[i];
	}
	r.status = n ? SC_OK : SC_ERR_TOO_BIG;
	r.sc_read_res_u.ok.blocks.blocks_len = n;
	r.sc_read_res_u.ok.blocks.blocks_val = srv_blocks;
	return &r;
}

sc_peer_read_res *sc_peer_read_1_svc(sc_peer_read_args *a, struct svc_req *rq)
{
	static sc_peer_read_res r;

	(void)rq;
	r.status = a->hash[0] == 1 ? SC_OK : SC_ERR_NOENT;
	r.sc_peer_read_res_u.data.data_len = BS;
	r.sc_peer_read_res_u.data.data_val = srv_data[0];
	return &r;
}

/*
 * GET_MAP: every even file is gone; an odd file ends where the window
 * does, with holes where map_hole says and hashes naming their block.
 * At the limits (16 files of 2048 blocks) this is a reply of about 1 MiB,
 * which libtirpc sends in fragments.
 */
static sc_map_file srv_map[CSI_MAX_MAP_FILES];
static sc_hash srv_map_hashes[CSI_MAX_MAP_FILES][CSI_MAX_MAP_BLOCKS];
static char srv_map_holes[CSI_MAX_MAP_FILES][CSI_MAX_MAP_HOLES];

static bool map_hole(uint64_t file, uint64_t lbn)
{
	return (file + lbn) % 7 == 0;
}

static void map_hash(void *h, uint64_t file, uint64_t lbn)
{
	uint32_t i;

	for (i = 0; i < SC_HASH_SIZE; i++)
		((uint8_t *)h)[i] = pattern_byte(file, lbn, i);
}

sc_getmap_res *sc_get_map_1_svc(sc_getmap_args *a, struct svc_req *rq)
{
	static sc_getmap_res r;
	uint32_t i, j, k, n = a->files.files_len;

	(void)rq;
	memset(&r, 0, sizeof(r));
	memset(srv_map, 0, sizeof(srv_map));
	memset(srv_map_holes, 0, sizeof(srv_map_holes));
	if (a->count > CSI_MAX_MAP_BLOCKS || n > CSI_MAX_MAP_FILES) {
		r.status = SC_ERR_TOO_BIG;
		return &r;
	}
	for (i = 0; i < n; i++) {
		sc_map_ok *ok = &srv_map[i].sc_map_file_u.ok;
		uint64_t f = a->files.files_val[i];

		if (f % 2 == 0) {
			srv_map[i].status = SC_ERR_STALE;
			continue;
		}
		ok->attr.file = f;
		ok->attr.size = (a->lbn + a->count) * BS;
		for (j = k = 0; j < a->count; j++) {
			if (map_hole(f, a->lbn + j))
				srv_map_holes[i][j / 8] |= (char)(1u << (j % 8));
			else
				map_hash(srv_map_hashes[i][k++], f, a->lbn + j);
		}
		ok->holes.holes_len = (a->count + 7) / 8;
		ok->holes.holes_val = srv_map_holes[i];
		ok->hashes.hashes_len = k;
		ok->hashes.hashes_val = srv_map_hashes[i];
	}
	r.sc_getmap_res_u.files.files_len = n;
	r.sc_getmap_res_u.files.files_val = srv_map;
	return &r;
}

/* PEER_REPORT: OK for the two failures check_peer_report sends. */
sc_evict_res *sc_peer_report_1_svc(sc_peer_report_args *a, struct svc_req *rq)
{
	static sc_evict_res r;
	sc_peer_failure *f = a->failures.failures_val;

	(void)rq;
	r.status = a->failures.failures_len == 2 && f[0].peer_host == 7 &&
		   f[1].token.expiry == 1790000000 && f[1].hash[31] == 0x5a ?
		   SC_OK : SC_ERR_INVAL;
	return &r;
}

#define STATUS_ONLY_SVC(name, res_t, args_t, st)			\
	res_t *name(args_t *a, struct svc_req *rq)			\
	{								\
		static res_t r;						\
		(void)a;						\
		(void)rq;						\
		r.status = st;						\
		return &r;						\
	}
STATUS_ONLY_SVC(sc_hello_1_svc, sc_hello_res, sc_hello_args, SC_ERR_BUSY)
STATUS_ONLY_SVC(sc_lookup_1_svc, sc_lookup_res, sc_lookup_args, SC_ERR_NOENT)
STATUS_ONLY_SVC(sc_get_hashes_1_svc, sc_gethashes_res, sc_gethashes_args,
		SC_ERR_STALE)
STATUS_ONLY_SVC(sc_write_1_svc, sc_write_res, sc_write_args, SC_ERR_NOSPC)
STATUS_ONLY_SVC(sc_commit_1_svc, sc_commit_res, sc_commit_args, SC_ERR_IO)
STATUS_ONLY_SVC(sc_evict_1_svc, sc_evict_res, sc_evict_args,
		SC_ERR_UNKNOWN_HOST)
STATUS_ONLY_SVC(sc_stats_1_svc, sc_stats_res, sc_stats_args, SC_ERR_ACCESS)

void *sc_null_1_svc(void *a, struct svc_req *rq)
{
	static char r;

	(void)a;
	(void)rq;
	return &r;
}

void *sc_peer_null_1_svc(void *a, struct svc_req *rq)
{
	return sc_null_1_svc(a, rq);
}

int seacache_prog_1_freeresult(SVCXPRT *t, xdrproc_t x, caddr_t r)
{
	(void)t;
	(void)x;
	(void)r;
	return 1;	/* results are static */
}

int seacache_peer_prog_1_freeresult(SVCXPRT *t, xdrproc_t x, caddr_t r)
{
	return seacache_prog_1_freeresult(t, x, r);
}

/* A child serving both programs with libtirpc; returns its port. */
static pid_t tirpc_server(uint16_t *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	SVCXPRT *xprt;
	int p[2];
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int sock = socket(AF_INET, SOCK_STREAM, 0);

		/* Never outlive a test that failed before stopping us. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);

		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		/* libtirpc does not listen on a socket it is given bound. */
		if (sock < 0 || bind(sock, (struct sockaddr *)&sin, len) ||
		    listen(sock, 16) ||
		    getsockname(sock, (struct sockaddr *)&sin, &len))
			_exit(1);
		xprt = svctcp_create(sock, 0, 0);
		/* Protocol 0: registered with the dispatcher only, not rpcbind. */
		if (!xprt ||
		    !svc_register(xprt, CSI_PROG, CSI_VERS, seacache_prog_1, 0) ||
		    !svc_register(xprt, CSI_PEER_PROG, CSI_VERS,
				  seacache_peer_prog_1, 0))
			_exit(1);
		if (write(p[1], &sin.sin_port, sizeof(sin.sin_port)) < 0)
			_exit(1);
		svc_run();
		_exit(1);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &sin.sin_port, sizeof(sin.sin_port)),
			 sizeof(sin.sin_port));
	close(p[0]);
	*port = ntohs(sin.sin_port);
	return pid;
}

static struct sc_rpc_client *our_client(uint16_t port, uint32_t prog)
{
	struct sc_rpc_client_opts o = { .host = "127.0.0.1", .port = port,
					.prog = prog, .timeout_ms = 10000 };
	struct sc_rpc_client *c;

	assert_int_equal(sc_rpc_client_open(&o, &c), 0);
	return c;
}

/* A PEER_REPORT's array of structs, through our encoder to rpcgen's. */
static void check_peer_report(struct sc_rpc_client *c)
{
	struct csi_peer_failure f[2] = { { .peer_host = 7 },
					 { .token.expiry = 1790000000 } };
	struct csi_peer_report_args a = { .failures = f, .nfailures = 2 };
	struct csi_evict_res r;
	struct sc_rpc_reply *rep;

	f[1].hash.b[31] = 0x5a;
	assert_int_equal(sc_rpc_call(c, CSI_PROC_PEER_REPORT, &a, &r, &rep),
			 0);
	assert_int_equal(r.status, CSI_OK);
	sc_rpc_reply_free(rep);
}

/* The largest GET_MAP reply, through our client and the reply checks. */
static void check_getmap(struct sc_rpc_client *c)
{
	uint64_t files[CSI_MAX_MAP_FILES];
	struct csi_getmap_args a = { .files = files,
				     .nfiles = CSI_MAX_MAP_FILES,
				     .lbn = 3000, .count = CSI_MAX_MAP_BLOCKS };
	const struct csi_map_file *f;
	struct sc_rpc_reply *rep;
	struct csi_getmap_res r;
	uint32_t i, j, k, n;
	uint8_t h[SC_HASH_SIZE];

	for (i = 0; i < CSI_MAX_MAP_FILES; i++)
		files[i] = 40 + i;
	assert_int_equal(sc_rpc_call(c, CSI_PROC_GET_MAP, &a, &r, &rep), 0);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nfiles, CSI_MAX_MAP_FILES);
	for (i = 0; i < r.nfiles; i++) {
		f = &r.files[i];
		assert_int_equal(csi_map_file_check(f, a.lbn, a.count, BS, &n),
				 0);
		if (files[i] % 2 == 0) {
			assert_int_equal(f->status, CSI_ERR_STALE);
			continue;
		}
		assert_int_equal(f->status, CSI_OK);
		assert_int_equal(f->attr.file, files[i]);
		assert_int_equal(n, a.count);
		for (j = k = 0; j < n; j++) {
			if (csi_map_is_hole(f, j) != map_hole(files[i],
							      a.lbn + j))
				fail_msg("file %u block %u: hole bit wrong", i,
					 j);
			if (csi_map_is_hole(f, j))
				continue;
			map_hash(h, files[i], a.lbn + j);
			if (memcmp(f->hashes[k++].b, h, SC_HASH_SIZE))
				fail_msg("file %u block %u: hash wrong", i, j);
		}
	}
	sc_rpc_reply_free(rep);
}

static void test_our_client_rpcgen_server(void **state)
{
	struct csi_read_args a = { .file = 5, .lbn = 1000, .count = 64 };
	struct csi_peer_read_args pa = { .hash = { { 1 } } };
	struct csi_peer_read_res pr;
	struct csi_hello_args ha = { .host_name = { (const uint8_t *)"h", 1 } };
	struct csi_hello_res hr;
	struct sc_rpc_client *c, *pc;
	struct sc_rpc_reply *rep;
	struct csi_read_res r;
	uint32_t xid[8];
	uint16_t port;
	int i, status;
	pid_t pid;

	(void)state;
	pid = tirpc_server(&port);
	c = our_client(port, CSI_PROG);
	/* Pipelined: libtirpc's server answers in order, we finish in any. */
	for (i = 0; i < 8; i++) {
		a.lbn = 1000 + 64 * (uint64_t)i;
		assert_int_equal(sc_rpc_start(c, CSI_PROC_READ, &a, &xid[i]), 0);
	}
	for (i = 7; i >= 0; i--) {
		assert_int_equal(sc_rpc_finish(c, xid[i], &r, &rep), 0);
		check_read_res(&r, 5, 1000 + 64 * (uint64_t)i, 64);
		sc_rpc_reply_free(rep);
	}
	assert_int_equal(sc_rpc_call(c, CSI_PROC_HELLO, &ha, &hr, &rep), 0);
	assert_int_equal(hr.status, CSI_ERR_BUSY);
	sc_rpc_reply_free(rep);

	check_getmap(c);
	check_peer_report(c);
	sc_rpc_client_close(c);

	pc = our_client(port, CSI_PEER_PROG);
	assert_int_equal(sc_rpc_call(pc, CSI_PEER_PROC_READ, &pa, &pr, &rep), 0);
	assert_int_equal(pr.status, CSI_OK);
	assert_int_equal(pr.data.len, BS);
	sc_rpc_reply_free(rep);
	sc_rpc_client_close(pc);

	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rpcgen_client_our_server),
		cmocka_unit_test(test_our_client_rpcgen_server),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
