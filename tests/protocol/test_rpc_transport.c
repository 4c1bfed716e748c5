// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI transport, our client against our server over loopback:
 * pipelined calls finished out of order and from several threads, every
 * byte checked, with handlers on the loop and on a worker pool; RPC-level
 * errors; a malformed and an oversized stream do not disturb other
 * connections; call timeout; reconnection after a server restart; clean
 * stop through the wake-up fd.  The worker pool: handlers run
 * concurrently; a connection at its limit of open calls is not read, so it
 * neither occupies every worker nor makes the server buffer replies it
 * does not read; workers take calls from connections in turn; calls
 * whose connection closes, and calls in flight at stop, are freed.  A
 * record with its block data gathered sends as the record encoded flat.
 * A READ's block data buffer serves the next READ.
 * Nothing here is timed: a hang shows as the ctest timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "record.h"
#include "seacache/rpc_transport.h"
#include "test_service.h"
#include "worker_check.h"

struct running_server {
	struct sc_rpc_server *srv;
	pthread_t thread;
};

static void *server_main(void *arg)
{
	struct running_server *rs = arg;

	WCHECK_EQ(sc_rpc_server_run(rs->srv), 0);
	return NULL;
}

static void server_start_with(struct running_server *rs,
			      const struct sc_rpc_server_opts *o,
			      const struct sc_rpc_service *svc)
{
	assert_int_equal(sc_rpc_server_new(o, svc, 1, &rs->srv), 0);
	assert_int_equal(pthread_create(&rs->thread, NULL, server_main, rs), 0);
}

static void server_start(struct running_server *rs, uint16_t port,
			 size_t max_record)
{
	struct sc_rpc_server_opts o = { .port = port, .max_record = max_record };

	server_start_with(rs, &o, &test_svc);
}

/* Stop through the wake-up fd, join, and optionally read the counters. */
static void server_stop_stats(struct running_server *rs,
			      struct sc_rpc_server_stats *st)
{
	sc_rpc_server_stop(rs->srv);
	assert_int_equal(pthread_join(rs->thread, NULL), 0);
	worker_checks_passed();
	if (st)
		sc_rpc_server_get_stats(rs->srv, st);
	sc_rpc_server_free(rs->srv);
}

static void server_stop(struct running_server *rs)
{
	server_stop_stats(rs, NULL);
}

static struct sc_rpc_client *client_with(uint16_t port, int timeout_ms,
					 unsigned int max_inflight)
{
	struct sc_rpc_client_opts o = { .host = "127.0.0.1", .port = port,
					.prog = CSI_PROG,
					.timeout_ms = timeout_ms,
					.max_inflight = max_inflight };
	struct sc_rpc_client *c;

	assert_int_equal(sc_rpc_client_open(&o, &c), 0);
	return c;
}

static struct sc_rpc_client *client_for(uint16_t port, int timeout_ms)
{
	return client_with(port, timeout_ms, 8);
}

static void read_args(struct csi_read_args *a, uint64_t file, uint64_t lbn,
		      uint32_t count)
{
	memset(a, 0, sizeof(*a));
	a->file = file;
	a->lbn = lbn;
	a->count = count;
	a->flags = CSI_READ_WANT_DATA;
}

/* One READ of count blocks at lbn of file through c, its reply checked. */
static void read_checked(struct sc_rpc_client *c, uint64_t file,
			 uint64_t lbn, uint32_t count)
{
	struct csi_read_args a;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;

	read_args(&a, file, lbn, count);
	assert_int_equal(sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep), 0);
	check_read_res(&r, file, lbn, count);
	sc_rpc_reply_free(rep);
}

/* Eight calls in flight, finished in reverse order. */
static void pipelined_out_of_order(unsigned int workers)
{
	struct sc_rpc_server_opts o = { .workers = workers };
	struct running_server rs;
	struct sc_rpc_client *c;
	struct csi_read_args a;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint32_t xid[8];
	int i, round;

	server_start_with(&rs, &o, &test_svc);
	c = client_for(sc_rpc_server_port(rs.srv), 10000);
	for (round = 0; round < 20; round++) {
		for (i = 0; i < 8; i++) {
			read_args(&a, (uint64_t)round, (uint64_t)i * 64, 64);
			assert_int_equal(sc_rpc_start(c, CSI_PROC_READ, &a,
						      &xid[i]), 0);
		}
		for (i = 7; i >= 0; i--) {
			assert_int_equal(sc_rpc_finish(c, xid[i], &r, &rep), 0);
			check_read_res(&r, (uint64_t)round, (uint64_t)i * 64,
				       64);
			sc_rpc_reply_free(rep);
		}
	}
	sc_rpc_client_close(c);
	server_stop(&rs);
}

/*
 * A READ's block data (64 KiB or more of sc_rpc_req_alloc) is kept once
 * its reply is sent, and serves the next READ as large or smaller, whose
 * bytes are its own.  (The pipelined tests reuse it with calls in flight.)
 */
static void test_request_memory_reused(void **state)
{
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_client *c;
	uint32_t i;

	(void)state;
	server_start(&rs, 0, 0);
	c = client_for(sc_rpc_server_port(rs.srv), 10000);
	for (i = 0; i < 4; i++)
		read_checked(c, 9, (uint64_t)i * 64, 64 - i);
	sc_rpc_client_close(c);
	server_stop_stats(&rs, &st);
	assert_int_equal(st.req_mem_reused, 3);
}

static void test_pipelined_out_of_order(void **state)
{
	(void)state;
	pipelined_out_of_order(0);
}

static void test_pipelined_workers(void **state)
{
	(void)state;
	pipelined_out_of_order(3);
}

struct thread_arg {
	struct sc_rpc_client *c;
	uint64_t file;
};

static void *caller_main(void *p)
{
	struct thread_arg *ta = p;
	struct csi_read_args a;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint32_t i;

	for (i = 0; i < 300; i++) {
		read_args(&a, ta->file, i, 1 + i % 16);
		if (!WCHECK_EQ(sc_rpc_call(ta->c, CSI_PROC_READ, &a, &r, &rep),
			       0))
			break;
		read_res_ok(&r, ta->file, i, 1 + i % 16);
		sc_rpc_reply_free(rep);
	}
	return NULL;
}

/* Four threads share one client; replies reach the right caller. */
static void threads_share_client(unsigned int workers)
{
	struct sc_rpc_server_opts o = { .workers = workers };
	struct running_server rs;
	struct thread_arg ta[4];
	pthread_t t[4];
	int i;

	server_start_with(&rs, &o, &test_svc);
	ta[0].c = client_for(sc_rpc_server_port(rs.srv), 10000);
	for (i = 0; i < 4; i++) {
		ta[i].c = ta[0].c;
		ta[i].file = 100 + (uint64_t)i;
		assert_int_equal(pthread_create(&t[i], NULL, caller_main,
						&ta[i]), 0);
	}
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	worker_checks_passed();
	sc_rpc_client_close(ta[0].c);
	server_stop(&rs);
}

static void test_threads_share_client(void **state)
{
	(void)state;
	threads_share_client(0);
}

static void test_threads_share_client_workers(void **state)
{
	(void)state;
	threads_share_client(3);
}

/*
 * A raw TCP connection to the server from the loopback address from (host
 * order), to send what our client never does.
 */
static int raw_connect_from(uint16_t port, uint32_t from)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	struct sockaddr_in src = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	src.sin_addr.s_addr = htonl(from);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static int raw_connect(uint16_t port)
{
	return raw_connect_from(port, INADDR_LOOPBACK);
}

/* Send one call record with the given fields and body; read the reply. */
static void raw_call(int fd, uint32_t rpcvers, uint32_t prog, uint32_t vers,
		     uint32_t proc, const uint8_t *body, uint32_t body_len,
		     struct sc_rpc_reply_hdr *rh)
{
	uint32_t w[] = { 0x1234, SC_RPC_CALL, rpcvers, prog, vers, proc, 0, 0,
			 0, 0 };
	uint8_t rec[4 + sizeof(w) + 64], reply[256];
	uint32_t i, n = sizeof(w) + body_len;
	struct sc_xdr x;
	ssize_t got;

	assert_true(body_len <= 64);
	sc_put_be32(rec, n | SC_RPC_RM_LAST);
	for (i = 0; i < SC_ARRAY_SIZE(w); i++)
		sc_put_be32(rec + 4 + 4 * i, w[i]);
	if (body_len)
		memcpy(rec + 4 + sizeof(w), body, body_len);
	assert_int_equal(write(fd, rec, 4 + n), 4 + n);
	got = read(fd, reply, sizeof(reply));
	assert_true(got >= 4 + 12);
	sc_xdr_init_decode(&x, reply + 4, (size_t)got - 4, NULL, 0);
	sc_rpc_xdr_reply_hdr(&x, rh);
	assert_int_equal(x.err, 0);
	assert_int_equal(rh->xid, 0x1234);
}

static void test_rpc_errors(void **state)
{
	static const uint8_t garbage[8] = { 0xff, 0xff, 0xff, 0xff };
	struct running_server rs;
	struct sc_rpc_reply_hdr rh;
	struct sc_rpc_server_stats st;
	int fd;

	(void)state;
	server_start(&rs, 0, 0);
	fd = raw_connect(sc_rpc_server_port(rs.srv));
	raw_call(fd, 3, CSI_PROG, 1, 0, NULL, 0, &rh);
	assert_int_equal(rh.reply_stat, SC_RPC_MSG_DENIED);
	assert_int_equal(rh.reject_stat, SC_RPC_MISMATCH);
	raw_call(fd, 2, 0x20000999, 1, 0, NULL, 0, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_PROG_UNAVAIL);
	raw_call(fd, 2, CSI_PROG, 7, 0, NULL, 0, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_PROG_MISMATCH);
	assert_int_equal(rh.low, 1);
	assert_int_equal(rh.high, 1);
	raw_call(fd, 2, CSI_PROG, 1, 99, NULL, 0, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_PROC_UNAVAIL);
	raw_call(fd, 2, CSI_PROG, 1, CSI_PROC_READ, garbage, sizeof(garbage),
		 &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_GARBAGE_ARGS);
	/* The connection survives all of that: NULL still answers. */
	raw_call(fd, 2, CSI_PROG, 1, CSI_PROC_NULL, NULL, 0, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_SUCCESS);
	/* A handler failure is SYSTEM_ERR. */
	raw_call(fd, 2, CSI_PROG, 1, CSI_PROC_STATS, garbage + 4, 4, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_SYSTEM_ERR);
	close(fd);
	server_stop_stats(&rs, &st);
	assert_int_equal(st.garbage_args, 1);
	assert_int_equal(st.calls, 7);
	assert_int_equal(st.conns_dropped, 0);
}

/* An oversized record drops that stream only. */
static void test_oversize_dropped_others_served(void **state)
{
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_client *c;
	uint8_t mark[4];
	char b;
	int fd;

	(void)state;
	server_start(&rs, 0, 64 << 10);
	c = client_for(sc_rpc_server_port(rs.srv), 10000);
	fd = raw_connect(sc_rpc_server_port(rs.srv));
	sc_put_be32(mark, (1u << 20) | SC_RPC_RM_LAST);
	assert_int_equal(write(fd, mark, 4), 4);
	assert_int_equal(read(fd, &b, 1), 0);	/* server hung up */
	close(fd);
	read_checked(c, 5, 0, 4);
	sc_rpc_client_close(c);
	server_stop_stats(&rs, &st);
	assert_int_equal(st.conns_dropped, 1);
}

/* Milliseconds until fd's peer hangs up (a read of end of stream). */
static int64_t ms_until_hangup(int fd)
{
	int64_t t0 = sc_now_ms();
	char b;

	assert_int_equal(read(fd, &b, 1), 0);
	return sc_now_ms() - t0;
}

/*
 * idle_ms and record_ms: a connection that sends nothing, one that sends
 * a record's first bytes, and one that trickles a record a byte at a time
 * (each byte well inside record_ms) are closed; a client that calls now
 * and then, its gaps under idle_ms, is served throughout.
 */
static void test_idle_and_stalled_closed(void **state)
{
	struct sc_rpc_server_opts o = { .idle_ms = 600, .record_ms = 600 };
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_client *c;
	uint8_t mark[4];
	int idle, part, loris, i;
	uint16_t port;

	(void)state;
	server_start_with(&rs, &o, &test_svc);
	port = sc_rpc_server_port(rs.srv);
	c = client_for(port, 10000);
	idle = raw_connect(port);
	part = raw_connect(port);
	sc_put_be32(mark, SC_RPC_RM_LAST | 1000);
	assert_int_equal(write(part, mark, 4), 4);
	assert_int_equal(write(part, "0123456789", 10), 10);
	loris = raw_connect(port);
	assert_int_equal(write(loris, mark, 4), 4);
	for (i = 0; i < 12; i++) {
		/* under idle_ms apart: the client's connection stays */
		read_checked(c, 5, (uint64_t)i, 4);
		if (send(loris, "x", 1, MSG_NOSIGNAL) != 1)
			break;		/* closed: the record took too long */
		usleep(150 * 1000);
	}
	assert_true(i < 12);
	assert_true(ms_until_hangup(idle) < 2000);
	assert_true(ms_until_hangup(part) < 2000);
	sc_rpc_client_close(c);
	server_stop_stats(&rs, &st);
	assert_int_equal(st.conns_timed_out, 3);
	assert_int_equal(st.conns_accepted, 4);
	close(idle);
	close(part);
	close(loris);
}

/*
 * max_conns_per_addr: a third connection from one address is refused
 * while its first two are served; another address is served.
 */
static void test_conns_per_addr(void **state)
{
	struct sc_rpc_server_opts o = { .max_conns = 8,
					.max_conns_per_addr = 2 };
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_reply_hdr rh;
	int a, b, c, d;
	uint16_t port;

	(void)state;
	server_start_with(&rs, &o, &test_svc);
	port = sc_rpc_server_port(rs.srv);
	a = raw_connect(port);
	b = raw_connect(port);
	raw_call(a, 2, CSI_PROG, 1, CSI_PROC_NULL, NULL, 0, &rh);
	raw_call(b, 2, CSI_PROG, 1, CSI_PROC_NULL, NULL, 0, &rh);
	c = raw_connect(port);
	assert_true(ms_until_hangup(c) < 2000);
	d = raw_connect_from(port, INADDR_LOOPBACK + 1);
	raw_call(d, 2, CSI_PROG, 1, CSI_PROC_NULL, NULL, 0, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_SUCCESS);
	raw_call(a, 2, CSI_PROG, 1, CSI_PROC_NULL, NULL, 0, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_SUCCESS);
	server_stop_stats(&rs, &st);
	assert_int_equal(st.conns_refused, 1);
	assert_int_equal(st.conns_accepted, 3);
	close(a);
	close(b);
	close(c);
	close(d);
}

/* A server that accepts and never answers: the call times out. */
static void test_timeout(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	struct sc_rpc_client *c;
	struct csi_read_args a;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
	c = client_for(ntohs(sin.sin_port), 200);
	read_args(&a, 1, 0, 1);
	assert_int_equal(sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep),
			 -ETIMEDOUT);
	sc_rpc_client_close(c);
	close(lfd);
}

/* The server restarts on the same port: one call fails, the next works. */
static void test_reconnect(void **state)
{
	struct running_server rs;
	struct sc_rpc_client *c;
	struct csi_read_args a;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint16_t port;
	int err;

	(void)state;
	server_start(&rs, 0, 0);
	port = sc_rpc_server_port(rs.srv);
	c = client_for(port, 5000);
	read_args(&a, 9, 0, 2);
	assert_int_equal(sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep), 0);
	sc_rpc_reply_free(rep);
	server_stop(&rs);
	server_start(&rs, port, 0);
	err = sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep);
	if (!err)
		sc_rpc_reply_free(rep);	/* the kernel may report the reset late */
	else
		assert_int_equal(err, -ECONNRESET);
	assert_int_equal(sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep), 0);
	check_read_res(&r, 9, 0, 2);
	sc_rpc_reply_free(rep);
	sc_rpc_client_close(c);
	server_stop(&rs);
}

/* Eviction notices travel in the header (the handler reports them). */
static void test_evict_header(void **state)
{
	struct sc_hash ev[3] = { { { 1 } }, { { 2 } }, { { 3 } } };
	struct csi_evict_args a = { .hdr = { .evicted = ev, .nevicted = 3 } };
	struct running_server rs;
	struct sc_rpc_client *c;
	struct csi_evict_res r;
	struct sc_rpc_reply *rep;

	(void)state;
	server_start(&rs, 0, 0);
	c = client_for(sc_rpc_server_port(rs.srv), 5000);
	assert_int_equal(sc_rpc_call(c, CSI_PROC_EVICT, &a, &r, &rep), 0);
	assert_int_equal(r.status, CSI_ERR_BUSY);
	sc_rpc_reply_free(rep);
	sc_rpc_client_close(c);
	server_stop(&rs);
}

/* ---- the worker pool ---- */

/* Client timeouts only guard against a hang. */
#define GUARD_MS 60000

/*
 * READs of these files do something in the handler before answering like
 * test_handle; every READ's file is logged in the order handlers start.
 */
enum {
	FILE_BARRIER = 1000,	/* waits until two calls are in handlers */
	FILE_HOLD,		/* waits until the gate opens */
	FILE_OPEN,		/* opens the gate */
	FILE_A,			/* only logged */
	FILE_B,
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_barrier_t barrier;
	bool open;
	unsigned int held;		/* FILE_HOLD calls that came in */
	uint64_t order[32];		/* files, as handlers started */
	unsigned int norder;
} gate;

static void gate_init(void)
{
	pthread_mutex_init(&gate.lock, NULL);
	pthread_cond_init(&gate.cond, NULL);
	pthread_barrier_init(&gate.barrier, NULL, 2);
	gate.open = false;
	gate.held = 0;
	gate.norder = 0;
}

static void gate_destroy(void)
{
	pthread_barrier_destroy(&gate.barrier);
	pthread_cond_destroy(&gate.cond);
	pthread_mutex_destroy(&gate.lock);
}

static void gate_open(void)
{
	pthread_mutex_lock(&gate.lock);
	gate.open = true;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
}

/* Until n FILE_HOLD calls have come into handlers. */
static void gate_wait_held(unsigned int n)
{
	pthread_mutex_lock(&gate.lock);
	while (gate.held < n)
		pthread_cond_wait(&gate.cond, &gate.lock);
	pthread_mutex_unlock(&gate.lock);
}

static int gate_handle(void *ctx, struct sc_rpc_request *rq)
{
	const struct csi_read_args *a = rq->args;

	if (rq->proc->proc != CSI_PROC_READ)
		return test_handle(ctx, rq);
	pthread_mutex_lock(&gate.lock);
	if (gate.norder < SC_ARRAY_SIZE(gate.order))
		gate.order[gate.norder++] = a->file;
	if (a->file == FILE_HOLD) {
		gate.held++;
		pthread_cond_broadcast(&gate.cond);
		while (!gate.open)
			pthread_cond_wait(&gate.cond, &gate.lock);
	} else if (a->file == FILE_OPEN) {
		gate.open = true;
		pthread_cond_broadcast(&gate.cond);
	}
	pthread_mutex_unlock(&gate.lock);
	if (a->file == FILE_BARRIER)
		pthread_barrier_wait(&gate.barrier);
	return test_handle(ctx, rq);
}

static const struct sc_rpc_service gate_svc = { CSI_PROG, gate_handle, NULL };

static uint32_t start_read(struct sc_rpc_client *c, uint64_t file,
			   uint32_t count)
{
	struct csi_read_args a;
	uint32_t xid;

	read_args(&a, file, 0, count);
	assert_int_equal(sc_rpc_start(c, CSI_PROC_READ, &a, &xid), 0);
	return xid;
}

static void finish_read(struct sc_rpc_client *c, uint32_t xid, uint64_t file,
			uint32_t count)
{
	struct csi_read_res r;
	struct sc_rpc_reply *rep;

	assert_int_equal(sc_rpc_finish(c, xid, &r, &rep), 0);
	check_read_res(&r, file, 0, count);
	sc_rpc_reply_free(rep);
}

#define STAT(f) offsetof(struct sc_rpc_server_stats, f)

/*
 * Read the running server's counters until the one at offset field is at
 * least min; a hang shows as the ctest timeout.
 */
static void wait_stat(struct sc_rpc_server *srv, size_t field, uint64_t min,
		      struct sc_rpc_server_stats *st)
{
	const struct timespec ms = { .tv_nsec = 1000000 };
	uint64_t v;

	for (;;) {
		sc_rpc_server_get_stats(srv, st);
		memcpy(&v, (const char *)st + field, sizeof(v));
		if (v >= min)
			return;
		nanosleep(&ms, NULL);
	}
}

/*
 * Two calls on one connection, each of whose handlers returns only once
 * the other is in a handler too: done only if two workers run at once.
 */
static void test_workers_run_concurrently(void **state)
{
	struct sc_rpc_server_opts o = { .workers = 2 };
	struct running_server rs;
	struct sc_rpc_client *c;
	uint32_t x1, x2;

	(void)state;
	gate_init();
	server_start_with(&rs, &o, &gate_svc);
	c = client_for(sc_rpc_server_port(rs.srv), GUARD_MS);
	x1 = start_read(c, FILE_BARRIER, 1);
	x2 = start_read(c, FILE_BARRIER, 2);
	finish_read(c, x2, FILE_BARRIER, 2);
	finish_read(c, x1, FILE_BARRIER, 1);
	sc_rpc_client_close(c);
	server_stop(&rs);
	gate_destroy();
}

/*
 * Connection A pipelines four calls that hold their worker until B's call
 * opens the gate.  With one open call per connection A holds one of the
 * two workers and B's call gets the other; were A's second call read, it
 * would hold that one too and B's call would never run.
 */
static void test_conn_limit_leaves_workers(void **state)
{
	struct sc_rpc_server_opts o = { .workers = 2,
					.max_inflight_per_conn = 1 };
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_client *a, *b;
	uint32_t xa[4], xb;
	uint16_t port;
	unsigned int i;

	(void)state;
	gate_init();
	server_start_with(&rs, &o, &gate_svc);
	port = sc_rpc_server_port(rs.srv);
	a = client_for(port, GUARD_MS);
	b = client_for(port, GUARD_MS);
	for (i = 0; i < 4; i++)
		xa[i] = start_read(a, FILE_HOLD, i + 1);
	gate_wait_held(1);
	xb = start_read(b, FILE_OPEN, 1);
	finish_read(b, xb, FILE_OPEN, 1);
	for (i = 0; i < 4; i++)
		finish_read(a, xa[i], FILE_HOLD, i + 1);
	sc_rpc_client_close(a);
	sc_rpc_client_close(b);
	server_stop_stats(&rs, &st);
	assert_int_equal(st.calls, 5);
	/* Every call of this test reached the limit of one. */
	assert_int_equal(st.conns_throttled, 5);
	gate_destroy();
}

/*
 * The only worker is held by C's call while A queues four calls, then B
 * one.  Taken in turn, the order is A, B, A, A, A; in arrival order B's
 * call would run last.
 */
static void test_workers_take_turns(void **state)
{
	static const uint64_t order[] = { FILE_HOLD, FILE_A, FILE_B, FILE_A,
					  FILE_A, FILE_A };
	struct sc_rpc_server_opts o = { .workers = 1 };
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_client *a, *b, *c;
	uint32_t xa[4], xb, xc;
	uint16_t port;
	unsigned int i;

	(void)state;
	gate_init();
	server_start_with(&rs, &o, &gate_svc);
	port = sc_rpc_server_port(rs.srv);
	a = client_for(port, GUARD_MS);
	b = client_for(port, GUARD_MS);
	c = client_for(port, GUARD_MS);
	xc = start_read(c, FILE_HOLD, 1);
	gate_wait_held(1);
	for (i = 0; i < 4; i++)
		xa[i] = start_read(a, FILE_A, i + 1);
	wait_stat(rs.srv, STAT(calls_queued), 4, &st);
	assert_int_equal(st.calls_queued, 4);
	xb = start_read(b, FILE_B, 1);
	wait_stat(rs.srv, STAT(calls_queued), 5, &st);
	assert_int_equal(st.calls_queued, 5);
	gate_open();
	finish_read(c, xc, FILE_HOLD, 1);
	finish_read(b, xb, FILE_B, 1);
	for (i = 0; i < 4; i++)
		finish_read(a, xa[i], FILE_A, i + 1);
	sc_rpc_client_close(a);
	sc_rpc_client_close(b);
	sc_rpc_client_close(c);
	server_stop_stats(&rs, &st);
	assert_int_equal(gate.norder, SC_ARRAY_SIZE(order));
	for (i = 0; i < SC_ARRAY_SIZE(order); i++)
		assert_int_equal(gate.order[i], order[i]);
	assert_int_equal(st.calls_queued_max, 5);
	assert_int_equal(st.conns_throttled, 0);
	gate_destroy();
}

/*
 * A client hangs up while one of its calls is in the only worker and two
 * more wait for it: those two are dropped at once, the running one when
 * it comes back, and the server goes on serving.  (ASan checks memory.)
 */
static void test_disconnect_while_in_worker(void **state)
{
	struct sc_rpc_server_opts o = { .workers = 1 };
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_client *c;
	uint16_t port;
	unsigned int i;
	uint32_t x;

	(void)state;
	gate_init();
	server_start_with(&rs, &o, &gate_svc);
	port = sc_rpc_server_port(rs.srv);
	c = client_for(port, GUARD_MS);
	for (i = 0; i < 3; i++)
		start_read(c, FILE_HOLD, 1);
	gate_wait_held(1);
	wait_stat(rs.srv, STAT(calls_queued), 2, &st);
	sc_rpc_client_close(c);
	/* The hang-up noticed: the waiting calls went with the connection. */
	wait_stat(rs.srv, STAT(calls_discarded), 2, &st);
	assert_int_equal(st.calls_discarded, 2);
	assert_int_equal(st.conns_open, 0);
	assert_int_equal(st.calls_queued, 0);
	gate_open();
	wait_stat(rs.srv, STAT(calls_discarded), 3, &st);
	assert_int_equal(st.calls_discarded, 3);
	c = client_for(port, GUARD_MS);
	x = start_read(c, FILE_A, 3);
	finish_read(c, x, FILE_A, 3);
	sc_rpc_client_close(c);
	server_stop_stats(&rs, &st);
	assert_int_equal(st.calls, 2);
	assert_int_equal(st.conns_dropped, 0);
	assert_int_equal(st.replies_unsent, 0);
	gate_destroy();
}

/*
 * Stop and free while two calls are in the workers, four wait for them
 * and their client is still connected: the workers finish their call and
 * are joined, the rest is freed.  (ASan's leak check.)
 */
static void test_stop_with_calls_in_flight(void **state)
{
	struct sc_rpc_server_opts o = { .workers = 2 };
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_client *c;
	unsigned int i;

	(void)state;
	gate_init();
	server_start_with(&rs, &o, &gate_svc);
	c = client_for(sc_rpc_server_port(rs.srv), GUARD_MS);
	for (i = 0; i < 6; i++)
		start_read(c, FILE_HOLD, 1);
	gate_wait_held(2);
	wait_stat(rs.srv, STAT(calls_queued), 4, &st);
	sc_rpc_server_stop(rs.srv);
	gate_open();
	assert_int_equal(pthread_join(rs.thread, NULL), 0);
	sc_rpc_server_free(rs.srv);
	sc_rpc_client_close(c);
	gate_destroy();
}

/*
 * Client A starts 64 READs of 1 MiB replies and never reads one.  The
 * server keeps at most four of them (max_inflight_per_conn) and stops
 * reading A's requests, which the kernel's socket buffers (a few MiB)
 * cannot make up for; meanwhile B is served.
 */
static void test_unread_replies_bounded(void **state)
{
	struct sc_rpc_server_opts o = { .workers = 2,
					.max_inflight_per_conn = 4 };
	struct sc_rpc_server_stats st;
	struct running_server rs;
	struct sc_rpc_client *a, *b;
	uint16_t port;
	unsigned int i;
	uint32_t x;

	(void)state;
	server_start_with(&rs, &o, &test_svc);
	port = sc_rpc_server_port(rs.srv);
	a = client_with(port, GUARD_MS, 64);
	for (i = 0; i < 64; i++)
		start_read(a, i, CSI_MAX_BLOCKS);
	/* A's open calls are replies its socket does not take. */
	wait_stat(rs.srv, STAT(replies_unsent), 4, &st);
	b = client_for(port, GUARD_MS);
	x = start_read(b, FILE_B, 2);
	finish_read(b, x, FILE_B, 2);
	sc_rpc_client_close(b);
	server_stop_stats(&rs, &st);
	assert_true(st.replies_unsent <= 4);
	assert_true(st.conns_throttled >= 1);
	assert_true(st.calls < 64);
	sc_rpc_client_close(a);
}

/*
 * A record's buffer grows as its bytes arrive, not to what its mark
 * declares: a peer that declares 16 MiB and sends 100 bytes holds a few
 * KiB; the whole record, sent in two fragments and many pieces, arrives
 * byte for byte, in a buffer at most twice its size.
 */
static void test_record_grows_as_bytes_arrive(void **state)
{
	enum { FRAG1 = 100000, FRAG2 = 3 << 20, PIECE = 7000 };
	static uint8_t sent[FRAG1 + FRAG2];
	struct sc_rec_reader r;
	uint8_t mark[4], *got;
	size_t i, len, off;
	int fd[2];

	(void)state;
	for (i = 0; i < sizeof(sent); i++)
		sent[i] = (uint8_t)(i * 131 + (i >> 13));
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
				    fd), 0);
	sc_rec_reader_init(&r, SC_RPC_MAX_RECORD_DEFAULT);
	/* a mark that declares 16 MiB, then 100 bytes of it */
	sc_put_be32(mark, 16u << 20);
	assert_int_equal(write(fd[1], mark, 4), 4);
	assert_int_equal(write(fd[1], sent, 100), 100);
	assert_int_equal(sc_rec_read(&r, fd[0]), 0);
	assert_true(r.rec_cap <= 64u << 10);
	sc_rec_reader_free(&r);

	sc_rec_reader_init(&r, SC_RPC_MAX_RECORD_DEFAULT);
	sc_put_be32(mark, FRAG1);
	assert_int_equal(write(fd[1], mark, 4), 4);
	for (off = 0; off < sizeof(sent); off += len) {
		if (off == FRAG1) {
			sc_put_be32(mark, SC_RPC_RM_LAST | FRAG2);
			assert_int_equal(write(fd[1], mark, 4), 4);
		}
		len = sizeof(sent) - off < PIECE ? sizeof(sent) - off : PIECE;
		if (off < FRAG1 && off + len > FRAG1)
			len = FRAG1 - off;
		assert_int_equal(write(fd[1], sent + off, len), (ssize_t)len);
		assert_int_equal(sc_rec_read(&r, fd[0]),
				 off + len == sizeof(sent));
		/* never far ahead of the bytes in */
		assert_true(r.rec_cap <= 2 * (off + len) + (32u << 10));
	}
	got = sc_rec_take(&r, &len);
	assert_int_equal(len, sizeof(sent));
	assert_memory_equal(got, sent, sizeof(sent));
	free(got);
	sc_rec_reader_free(&r);
	close(fd[0]);
	close(fd[1]);
}

/*
 * A reply whose long opaques are gathered is, sent from any byte on in
 * iovecs of any number, the very record encoded flat: data blocks above
 * and below the gathering size, of lengths that need padding, between
 * hash-only blocks.
 */
static void test_gathered_record_is_flat(void **state)
{
	static const uint32_t lens[] = { 4096, 1000, 1501, 0, 4096, 1024 };
	static uint8_t data[SC_ARRAY_SIZE(lens)][4096];
	struct csi_read_block blk[2 * SC_ARRAY_SIZE(lens)] = { 0 };
	struct csi_read_res r = { .status = CSI_OK, .blocks = blk,
				  .nblocks = 2 * SC_ARRAY_SIZE(lens) };
	struct sc_rpc_reply_hdr h = { .xid = 7,
				      .reply_stat = SC_RPC_MSG_ACCEPTED,
				      .accept_stat = SC_RPC_SUCCESS };
	struct sc_xdr_seg segs[CSI_MAX_BLOCKS];
	struct sc_rec_buf flat = { 0 }, g = { .segs = segs,
					      .max_segs = CSI_MAX_BLOCKS };
	static const int maxes[] = { 1, 2, 3, 256 };
	struct iovec iov[256];
	uint8_t *out;
	size_t from, at, k;
	unsigned int i, m;
	int n;

	(void)state;
	for (i = 0; i < SC_ARRAY_SIZE(lens); i++) {
		memset(data[i], 0x40 + i, sizeof(data[i]));
		blk[2 * i].kind = CSI_RK_DATA;
		blk[2 * i].hash.b[0] = (uint8_t)i;
		blk[2 * i].data.p = data[i];
		blk[2 * i].data.len = lens[i];
		blk[2 * i + 1].kind = CSI_RK_HASH;
	}
	assert_int_equal(sc_rec_encode(false, &h, CSI_MSG_READ_RES, &r,
				       (size_t)-1, &flat), 0);
	assert_int_equal(sc_rec_encode(false, &h, CSI_MSG_READ_RES, &r,
				       (size_t)-1, &g), 0);
	assert_int_equal(g.len, flat.len);
	assert_int_equal(g.nsegs, 4);	/* 4096, 1501, 4096 and 1024 */
	out = malloc(flat.len);
	assert_non_null(out);
	for (m = 0; m < SC_ARRAY_SIZE(maxes); m++) {
		for (from = 0; from < flat.len; from += 1 + from % 997) {
			memset(out, 0, flat.len);
			for (at = from; at < flat.len;) {
				n = sc_rec_buf_iov(&g, at, iov, maxes[m]);
				assert_true(n > 0 && n <= maxes[m]);
				for (k = 0; k < (size_t)n; k++) {
					assert_true(iov[k].iov_len > 0);
					memcpy(out + at, iov[k].iov_base,
					       iov[k].iov_len);
					at += iov[k].iov_len;
				}
			}
			assert_int_equal(at, flat.len);
			assert_memory_equal(out + from, flat.p + from,
					    flat.len - from);
		}
	}
	free(out);
	sc_rec_buf_trim(&flat, 0);
	sc_rec_buf_trim(&g, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipelined_out_of_order),
		cmocka_unit_test(test_request_memory_reused),
		cmocka_unit_test(test_threads_share_client),
		cmocka_unit_test(test_rpc_errors),
		cmocka_unit_test(test_oversize_dropped_others_served),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_reconnect),
		cmocka_unit_test(test_evict_header),
		cmocka_unit_test(test_pipelined_workers),
		cmocka_unit_test(test_threads_share_client_workers),
		cmocka_unit_test(test_workers_run_concurrently),
		cmocka_unit_test(test_conn_limit_leaves_workers),
		cmocka_unit_test(test_workers_take_turns),
		cmocka_unit_test(test_disconnect_while_in_worker),
		cmocka_unit_test(test_stop_with_calls_in_flight),
		cmocka_unit_test(test_unread_replies_bounded),
		cmocka_unit_test(test_gathered_record_is_flat),
		cmocka_unit_test(test_record_grows_as_bytes_arrive),
		cmocka_unit_test(test_idle_and_stalled_closed),
		cmocka_unit_test(test_conns_per_addr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
