// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI transport, our client against our server over loopback:
 * pipelined calls finished out of order and from several threads, every
 * byte checked; RPC-level errors; a malformed and an oversized stream do
 * not disturb other connections; call timeout; reconnection after a
 * server restart; clean stop through the wake-up fd.
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
#include <unistd.h>

#include <cmocka.h>

#include "seacache/rpc_transport.h"
#include "test_service.h"

struct running_server {
	struct sc_rpc_server *srv;
	pthread_t thread;
};

static void *server_main(void *arg)
{
	struct running_server *rs = arg;

	assert_int_equal(sc_rpc_server_run(rs->srv), 0);
	return NULL;
}

static void server_start(struct running_server *rs, uint16_t port,
			 size_t max_record)
{
	struct sc_rpc_server_opts o = { .port = port, .max_record = max_record };

	assert_int_equal(sc_rpc_server_new(&o, &test_svc, 1, &rs->srv), 0);
	assert_int_equal(pthread_create(&rs->thread, NULL, server_main, rs), 0);
}

/* Stop through the wake-up fd, join, and optionally read the counters. */
static void server_stop_stats(struct running_server *rs,
			      struct sc_rpc_server_stats *st)
{
	sc_rpc_server_stop(rs->srv);
	assert_int_equal(pthread_join(rs->thread, NULL), 0);
	if (st)
		sc_rpc_server_get_stats(rs->srv, st);
	sc_rpc_server_free(rs->srv);
}

static void server_stop(struct running_server *rs)
{
	server_stop_stats(rs, NULL);
}

static struct sc_rpc_client *client_for(uint16_t port, int timeout_ms)
{
	struct sc_rpc_client_opts o = { .host = "127.0.0.1", .port = port,
					.prog = CSI_PROG,
					.timeout_ms = timeout_ms,
					.max_inflight = 8 };
	struct sc_rpc_client *c;

	assert_int_equal(sc_rpc_client_open(&o, &c), 0);
	return c;
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

/* Eight calls in flight, finished in reverse order. */
static void test_pipelined_out_of_order(void **state)
{
	struct running_server rs;
	struct sc_rpc_client *c;
	struct csi_read_args a;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint32_t xid[8];
	int i, round;

	(void)state;
	server_start(&rs, 0, 0);
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
		assert_int_equal(sc_rpc_call(ta->c, CSI_PROC_READ, &a, &r,
					     &rep), 0);
		check_read_res(&r, ta->file, i, 1 + i % 16);
		sc_rpc_reply_free(rep);
	}
	return NULL;
}

/* Four threads share one client; replies reach the right caller. */
static void test_threads_share_client(void **state)
{
	struct running_server rs;
	struct thread_arg ta[4];
	pthread_t t[4];
	int i;

	(void)state;
	server_start(&rs, 0, 0);
	ta[0].c = client_for(sc_rpc_server_port(rs.srv), 10000);
	for (i = 0; i < 4; i++) {
		ta[i].c = ta[0].c;
		ta[i].file = 100 + (uint64_t)i;
		assert_int_equal(pthread_create(&t[i], NULL, caller_main,
						&ta[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	sc_rpc_client_close(ta[0].c);
	server_stop(&rs);
}

/* A raw TCP connection to the server, to send what our client never does. */
static int raw_connect(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
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
	struct csi_read_args a;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
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
	read_args(&a, 5, 0, 4);
	assert_int_equal(sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep), 0);
	check_read_res(&r, 5, 0, 4);
	sc_rpc_reply_free(rep);
	sc_rpc_client_close(c);
	server_stop_stats(&rs, &st);
	assert_int_equal(st.conns_dropped, 1);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipelined_out_of_order),
		cmocka_unit_test(test_threads_share_client),
		cmocka_unit_test(test_rpc_errors),
		cmocka_unit_test(test_oversize_dropped_others_served),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_reconnect),
		cmocka_unit_test(test_evict_header),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
