// SPDX-License-Identifier: BSD-2-Clause
/*
 * Peer reads (PROTOCOL.md §7.8, §9.2, §9.4) over loopback: a peer server
 * holding two blocks under an identity (host 9, epoch E, secret S), with
 * tokens made by sc_peer_token_mac as the server makes them.  Every way a
 * token can be wrong gets BAD_TOKEN with no bytes and without the cache
 * being asked; NOENT, BUSY and internal failures are told apart; a new
 * identity voids the old tokens.  The requester refuses what a lying peer
 * sends, zero-fills trimmed blocks, and fails fast on dead peers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "seacache/peer_client.h"
#include "seacache/peer_server.h"
#include "seacache/rpc_transport.h"
#include "worker_check.h"

#define BS 4096u
#define SERVING 9u
#define REQUESTER 7u
#define EPOCH 0x1122334455667788ull
#define NOW 1790000000ull
#define EXPIRY (NOW + 30)
#define PREFIX 100u	/* block 1 is zero past its first PREFIX bytes */
#define OVERLONG 1	/* cache answer: report more than a block */

static const uint8_t secret_s[SC_PEER_SECRET_LEN] = {
	0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
};

/* The serving host's content cache. */
struct cache {
	struct sc_hash h[2];
	uint8_t data[2][BS];
	atomic_int answer;	/* 0: serve; OVERLONG; or get's error */
	atomic_uint gets;	/* calls of get */
};

struct fixture {
	struct cache cache;
	struct sc_hash absent;	/* a hash the cache does not hold */
	struct sc_peer_server *srv;
	uint16_t port;
};

static int cache_get(void *ctx, const struct sc_hash *h, void *buf,
		     uint32_t *len)
{
	struct cache *c = ctx;
	int answer = atomic_load(&c->answer);
	int i;

	atomic_fetch_add(&c->gets, 1);
	if (answer == OVERLONG) {
		*len = BS + 1;
		return 0;
	}
	if (answer)
		return answer;
	for (i = 0; i < 2; i++) {
		if (sc_hash_eq(h, &c->h[i])) {
			memcpy(buf, c->data[i], BS);
			*len = BS;
			return 0;
		}
	}
	return -SC_ENOENT;
}

static uint64_t fixed_now(void *ctx)
{
	(void)ctx;
	return NOW;
}

static void digest(const void *p, size_t len, struct sc_hash *h)
{
	struct sc_hasher *hs = sc_hasher_new();

	assert_non_null(hs);
	assert_int_equal(sc_hasher_digest(hs, p, len, h), 0);
	sc_hasher_free(hs);
}

/* A token as the server makes it for serving host `serving`. */
static struct csi_token make_token(const uint8_t *secret,
				   const struct sc_hash *h, uint64_t requester,
				   uint64_t serving, uint64_t epoch,
				   uint64_t expiry)
{
	struct sc_peer_token_fields f = { .hash = *h, .requester = requester,
					  .serving = serving, .epoch = epoch,
					  .expiry = expiry };
	struct sc_mac *m = sc_mac_new(secret, SC_PEER_SECRET_LEN);
	struct csi_token t = { .expiry = expiry };

	assert_non_null(m);
	assert_int_equal(sc_peer_token_mac(m, &f, t.mac), 0);
	sc_mac_free(m);
	return t;
}

static struct csi_peer_addr loopback(uint16_t port)
{
	struct csi_peer_addr a = { .family = CSI_AF_INET,
				   .addr = { 127, 0, 0, 1 }, .port = port };

	return a;
}

static int fetch(uint16_t port, const struct csi_peer_read_args *a,
		 int timeout_ms, uint8_t *out)
{
	struct csi_peer_addr where = loopback(port);

	return sc_peer_fetch(&where, a->requester, a->epoch, &a->hash,
			     &a->token, timeout_ms, BS, out);
}

/* PEER_READ without the requester's checks: what went on the wire. */
static uint32_t raw_read(uint16_t port, const struct csi_peer_read_args *a,
			 uint32_t *len)
{
	struct sc_rpc_client_opts o = { .host = "127.0.0.1", .port = port,
					.prog = CSI_PEER_PROG,
					.timeout_ms = 5000 };
	struct csi_peer_read_res res;
	struct sc_rpc_reply *rep;
	struct sc_rpc_client *c;
	uint32_t status;

	assert_int_equal(sc_rpc_client_open(&o, &c), 0);
	assert_int_equal(sc_rpc_call(c, CSI_PEER_PROC_READ, a, &res, &rep), 0);
	status = res.status;
	*len = res.data.len;
	sc_rpc_reply_free(rep);
	sc_rpc_client_close(c);
	return status;
}

static struct csi_peer_read_args good_args(const struct sc_hash *h)
{
	struct csi_peer_read_args a = { .requester = REQUESTER, .epoch = EPOCH,
					.hash = *h };

	a.token = make_token(secret_s, h, REQUESTER, SERVING, EPOCH, EXPIRY);
	return a;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	unsigned int i;

	assert_non_null(fx);
	for (i = 0; i < BS; i++)
		fx->cache.data[0][i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < PREFIX; i++)
		fx->cache.data[1][i] = (uint8_t)(0xa0 + i);
	digest(fx->cache.data[0], BS, &fx->cache.h[0]);
	digest(fx->cache.data[1], BS, &fx->cache.h[1]);
	memset(fx->absent.b, 0x33, SC_HASH_LEN);
	assert_int_equal(sc_peer_server_start(NULL, 0, BS, cache_get,
					      &fx->cache, &fx->srv), 0);
	sc_peer_server_set_clock(fx->srv, fixed_now, NULL);
	fx->port = sc_peer_server_port(fx->srv);
	*state = fx;
	return 0;
}

static int setup_identity(void **state)
{
	struct fixture *fx;

	setup(state);
	fx = *state;
	assert_int_equal(sc_peer_server_set_identity(fx->srv, SERVING, EPOCH,
						     secret_s), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	sc_peer_server_free(fx->srv);
	free(fx);
	return 0;
}

static void check_stats(struct fixture *fx, uint64_t served,
			uint64_t bad_token, uint64_t noent, uint64_t busy)
{
	struct sc_peer_server_stats st;

	sc_peer_server_get_stats(fx->srv, &st);
	assert_int_equal(st.served, served);
	assert_int_equal(st.bad_token, bad_token);
	assert_int_equal(st.noent, noent);
	assert_int_equal(st.busy, busy);
}

/* A good token gets the exact bytes; trailing zeros cross trimmed. */
static void test_good_token(void **state)
{
	struct fixture *fx = *state;
	struct csi_peer_read_args a;
	uint8_t out[BS];
	uint32_t len;
	int i;

	for (i = 0; i < 2; i++) {
		a = good_args(&fx->cache.h[i]);
		memset(out, 0xaa, sizeof(out));
		assert_int_equal(fetch(fx->port, &a, 0, out), 0);
		assert_memory_equal(out, fx->cache.data[i], BS);
	}
	a = good_args(&fx->cache.h[1]);
	assert_int_equal(raw_read(fx->port, &a, &len), CSI_OK);
	assert_int_equal(len, PREFIX);
	a = good_args(&fx->cache.h[0]);
	assert_int_equal(raw_read(fx->port, &a, &len), CSI_OK);
	assert_int_equal(len, BS);

	/* Expiry exactly now, and exactly the furthest ahead allowed. */
	a.token = make_token(secret_s, &a.hash, REQUESTER, SERVING, EPOCH, NOW);
	assert_int_equal(fetch(fx->port, &a, 0, out), 0);
	a.token = make_token(secret_s, &a.hash, REQUESTER, SERVING, EPOCH,
			     NOW + SC_PEER_TOKEN_MAX_AHEAD);
	assert_int_equal(fetch(fx->port, &a, 0, out), 0);
	check_stats(fx, 6, 0, 0, 0);
}

/* BAD_TOKEN, no bytes, and the cache was not even asked. */
static void expect_refused(struct fixture *fx,
			   const struct csi_peer_read_args *a)
{
	unsigned int gets = atomic_load(&fx->cache.gets);
	uint8_t out[BS];
	uint32_t len = 1;

	assert_int_equal(raw_read(fx->port, a, &len), CSI_ERR_BAD_TOKEN);
	assert_int_equal(len, 0);
	assert_int_equal(fetch(fx->port, a, 0, out), -EACCES);
	assert_int_equal(atomic_load(&fx->cache.gets), gets);
}

static void test_bad_tokens(void **state)
{
	static const uint8_t other_secret[SC_PEER_SECRET_LEN] = { 0x5a };
	struct fixture *fx = *state;
	const struct sc_hash *h = &fx->cache.h[0];
	struct csi_peer_read_args a;

	/* a forged MAC */
	a = good_args(h);
	a.token.mac[17] ^= 0x01;
	expect_refused(fx, &a);
	/* an expiry changed after the MAC was made */
	a = good_args(h);
	a.token.expiry++;
	expect_refused(fx, &a);
	/* a token for requester 8 presented by requester 7 */
	a = good_args(h);
	a.token = make_token(secret_s, h, 8, SERVING, EPOCH, EXPIRY);
	expect_refused(fx, &a);
	/* a token for the same requester but another block */
	a = good_args(h);
	a.token = make_token(secret_s, &fx->cache.h[1], REQUESTER, SERVING,
			     EPOCH, EXPIRY);
	expect_refused(fx, &a);
	/* made for another serving host: its secret, or its id */
	a = good_args(h);
	a.token = make_token(other_secret, h, REQUESTER, SERVING, EPOCH,
			     EXPIRY);
	expect_refused(fx, &a);
	a.token = make_token(secret_s, h, REQUESTER, SERVING + 1, EPOCH,
			     EXPIRY);
	expect_refused(fx, &a);
	/* another epoch: a token consistent with it, or presented with it */
	a = good_args(h);
	a.epoch = EPOCH + 1;
	a.token = make_token(secret_s, h, REQUESTER, SERVING, EPOCH + 1,
			     EXPIRY);
	expect_refused(fx, &a);
	a = good_args(h);
	a.epoch = EPOCH + 1;
	expect_refused(fx, &a);
	/* expired, and too far ahead */
	a = good_args(h);
	a.token = make_token(secret_s, h, REQUESTER, SERVING, EPOCH, NOW - 1);
	expect_refused(fx, &a);
	a.token = make_token(secret_s, h, REQUESTER, SERVING, EPOCH,
			     NOW + SC_PEER_TOKEN_MAX_AHEAD + 1);
	expect_refused(fx, &a);
	a.token = make_token(secret_s, h, REQUESTER, SERVING, EPOCH,
			     UINT64_MAX);
	expect_refused(fx, &a);
	check_stats(fx, 0, 2 * 11, 0, 0);
}

static void test_noent_busy_failure(void **state)
{
	struct fixture *fx = *state;
	struct csi_peer_read_args a = good_args(&fx->absent);
	uint8_t out[BS];
	uint32_t len;

	assert_int_equal(fetch(fx->port, &a, 0, out), -ENOENT);
	assert_int_equal(raw_read(fx->port, &a, &len), CSI_ERR_NOENT);
	a = good_args(&fx->cache.h[0]);
	atomic_store(&fx->cache.answer, -SC_EBUSY);
	assert_int_equal(fetch(fx->port, &a, 0, out), -EBUSY);
	/* Internal failures are SYSTEM_ERR, counted as nothing. */
	atomic_store(&fx->cache.answer, -EIO);
	assert_int_equal(fetch(fx->port, &a, 0, out), -EREMOTEIO);
	atomic_store(&fx->cache.answer, OVERLONG);
	assert_int_equal(fetch(fx->port, &a, 0, out), -EREMOTEIO);
	atomic_store(&fx->cache.answer, 0);
	assert_int_equal(fetch(fx->port, &a, 0, out), 0);
	check_stats(fx, 1, 0, 2, 1);
}

/* Before the first HELLO no token is good, not even a well-made one. */
static void test_no_identity(void **state)
{
	struct fixture *fx = *state;
	struct csi_peer_read_args a = good_args(&fx->cache.h[0]);
	uint8_t out[BS];

	expect_refused(fx, &a);
	assert_int_equal(sc_peer_server_set_identity(fx->srv, SERVING, EPOCH,
						     secret_s), 0);
	assert_int_equal(fetch(fx->port, &a, 0, out), 0);
	assert_memory_equal(out, fx->cache.data[0], BS);
}

/* A new HELLO (new secret, or new id and epoch) voids earlier tokens. */
static void test_new_identity(void **state)
{
	static const uint8_t secret2[SC_PEER_SECRET_LEN] = { 0xc3, 0x3c };
	struct fixture *fx = *state;
	const struct sc_hash *h = &fx->cache.h[0];
	struct csi_peer_read_args old = good_args(h), a = old;
	uint8_t out[BS];

	assert_int_equal(fetch(fx->port, &old, 0, out), 0);
	assert_int_equal(sc_peer_server_set_identity(fx->srv, SERVING, EPOCH,
						     secret2), 0);
	expect_refused(fx, &old);
	a.token = make_token(secret2, h, REQUESTER, SERVING, EPOCH, EXPIRY);
	assert_int_equal(fetch(fx->port, &a, 0, out), 0);

	assert_int_equal(sc_peer_server_set_identity(fx->srv, 12, EPOCH + 5,
						     secret2), 0);
	expect_refused(fx, &a);
	a.epoch = EPOCH + 5;
	a.token = make_token(secret2, h, REQUESTER, 12, EPOCH + 5, EXPIRY);
	assert_int_equal(fetch(fx->port, &a, 0, out), 0);
}

struct hello_loop {
	struct sc_peer_server *srv;
	atomic_bool stop;
	int failures;		/* cmocka asserts only on the main thread */
};

static void *hello_main(void *arg)
{
	struct hello_loop *hl = arg;

	while (!atomic_load(&hl->stop))
		if (sc_peer_server_set_identity(hl->srv, SERVING, EPOCH,
						secret_s))
			hl->failures++;
	return NULL;
}

/* Identities replaced by another thread while requests are served. */
static void test_identity_races_requests(void **state)
{
	struct fixture *fx = *state;
	struct hello_loop hl = { .srv = fx->srv };
	struct csi_peer_read_args a = good_args(&fx->cache.h[0]);
	uint8_t out[BS];
	pthread_t t;
	int i;

	assert_int_equal(pthread_create(&t, NULL, hello_main, &hl), 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(fetch(fx->port, &a, 0, out), 0);
	atomic_store(&hl.stop, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(hl.failures, 0);
	check_stats(fx, 100, 0, 0, 0);
}

static void test_ipv6(void **state)
{
	struct fixture *fx = *state;
	struct csi_peer_addr where = { .family = CSI_AF_INET6 };
	struct csi_peer_read_args a = good_args(&fx->cache.h[1]);
	struct sc_peer_server *srv6;
	uint8_t out[BS];

	if (sc_peer_server_start("::1", 0, BS, cache_get, &fx->cache,
				 &srv6))
		fail_msg("cannot serve on ::1: this machine needs IPv6 loopback");
	sc_peer_server_set_clock(srv6, fixed_now, NULL);
	assert_int_equal(sc_peer_server_set_identity(srv6, SERVING, EPOCH,
						     secret_s), 0);
	where.addr[15] = 1;
	where.port = sc_peer_server_port(srv6);
	assert_int_equal(sc_peer_fetch(&where, a.requester, a.epoch, &a.hash,
				       &a.token, 0, BS, out), 0);
	assert_memory_equal(out, fx->cache.data[1], BS);
	sc_peer_server_free(srv6);
}

/* ---- the requester against peers that lie or do not answer ---- */

struct liar {
	uint32_t status;
	uint32_t len;
	uint8_t bytes[CSI_MAX_BLOCK_SIZE];
};

static int liar_handle(void *ctx, struct sc_rpc_request *rq)
{
	struct liar *l = ctx;
	struct csi_peer_read_res *r = rq->res;

	r->status = l->status;
	r->data.p = l->bytes;
	r->data.len = l->len;
	return 0;
}

static void *liar_main(void *arg)
{
	WCHECK_EQ(sc_rpc_server_run(arg), 0);
	return NULL;
}

static void test_lying_peer(void **state)
{
	struct fixture *fx = *state;
	struct liar *l = calloc(1, sizeof(*l));
	struct sc_rpc_service svc = { .prog = CSI_PEER_PROG,
				      .handle = liar_handle, .ctx = l };
	struct sc_rpc_server_opts o = { 0 };
	struct sc_rpc_server *srv;
	struct csi_peer_read_args a = good_args(&fx->cache.h[1]);
	uint8_t out[BS];
	pthread_t t;
	uint16_t port;

	assert_non_null(l);
	assert_int_equal(sc_rpc_server_new(&o, &svc, 1, &srv), 0);
	port = sc_rpc_server_port(srv);
	assert_int_equal(pthread_create(&t, NULL, liar_main, srv), 0);

	/* Honest, trimmed: the requester zero-fills over whatever was there. */
	memcpy(l->bytes, fx->cache.data[1], PREFIX);
	l->len = PREFIX;
	memset(out, 0xaa, sizeof(out));
	assert_int_equal(fetch(port, &a, 0, out), 0);
	assert_memory_equal(out, fx->cache.data[1], BS);
	/* An all-zero block in place of one that is not. */
	l->len = 0;
	assert_int_equal(fetch(port, &a, 0, out), -EBADMSG);
	/* Other bytes. */
	memcpy(l->bytes, fx->cache.data[0], BS);
	l->len = BS;
	assert_int_equal(fetch(port, &a, 0, out), -EBADMSG);
	/* The right block followed by more: longer than a block. */
	memcpy(l->bytes, fx->cache.data[1], BS);
	l->len = BS + 1;
	assert_int_equal(fetch(port, &a, 0, out), -EBADMSG);
	/* Far longer: the record itself is refused. */
	l->len = CSI_MAX_BLOCK_SIZE;
	assert_int_equal(fetch(port, &a, 0, out), -EBADMSG);
	/* A status PEER_READ never answers. */
	l->status = CSI_ERR_IO;
	l->len = 0;
	assert_int_equal(fetch(port, &a, 0, out), -EPROTO);

	sc_rpc_server_stop(srv);
	assert_int_equal(pthread_join(t, NULL), 0);
	worker_checks_passed();
	sc_rpc_server_free(srv);
	free(l);
}

static void *hang_up_main(void *arg)
{
	int fd = accept(*(int *)arg, NULL, NULL);

	if (fd >= 0)
		close(fd);
	return NULL;
}

/*
 * A port nobody listens on, one where nobody answers and one that hangs
 * up: each its own error (a hang is the test's timeout; no clock is read,
 * so a slow machine cannot fail it).
 */
static void test_dead_peers(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sin);
	struct csi_peer_read_args a = good_args(&fx->cache.h[0]);
	uint8_t out[BS];
	pthread_t t;
	int fd, err;

	/* The peer server's own port once it stopped. */
	assert_int_equal(sc_peer_server_stop(fx->srv), 0);
	assert_int_equal(fetch(fx->port, &a, 0, out), -ECONNREFUSED);

	/* Listening, never accepting: the connect succeeds, the call not. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	err = fetch(ntohs(sin.sin_port), &a, 200, out);
	assert_int_equal(err, -ETIMEDOUT);

	/* The connection that waited in the backlog goes first. */
	assert_int_equal(pthread_create(&t, NULL, hang_up_main, &fd), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(pthread_create(&t, NULL, hang_up_main, &fd), 0);
	err = fetch(ntohs(sin.sin_port), &a, 2000, out);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(err, -ECONNRESET);
	close(fd);
}

static void test_bad_arguments(void **state)
{
	struct fixture *fx = *state;
	struct csi_peer_read_args a = good_args(&fx->cache.h[0]);
	struct csi_peer_addr w = loopback(fx->port);
	struct sc_peer_server *srv;
	uint8_t out[BS];

	assert_int_equal(sc_peer_fetch(&w, a.requester, a.epoch, &a.hash,
				       &a.token, 0, 1000, out), -EINVAL);
	w.port = 0;
	assert_int_equal(sc_peer_fetch(&w, a.requester, a.epoch, &a.hash,
				       &a.token, 0, BS, out), -EINVAL);
	w.port = 65536;
	assert_int_equal(sc_peer_fetch(&w, a.requester, a.epoch, &a.hash,
				       &a.token, 0, BS, out), -EINVAL);
	w = loopback(fx->port);
	w.addr[4] = 1;
	assert_int_equal(sc_peer_fetch(&w, a.requester, a.epoch, &a.hash,
				       &a.token, 0, BS, out), -EINVAL);
	w = loopback(fx->port);
	w.family = CSI_AF_NONE;
	assert_int_equal(sc_peer_fetch(&w, a.requester, a.epoch, &a.hash,
				       &a.token, 0, BS, out), -EINVAL);
	assert_int_equal(sc_peer_server_start(NULL, 0, 3000, cache_get, NULL,
					      &srv), -EINVAL);
}

/* The core's check alone: length, in-place use, the empty field. */
static void test_data_verify(void **state)
{
	static uint8_t block[SC_BLOCK_SIZE_MAX];
	static const uint8_t zero4k[4096];
	struct sc_hasher *hs = sc_hasher_new();
	struct sc_hash zeros, h;
	uint8_t data[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	(void)state;
	assert_non_null(hs);
	/* PROTOCOL.md §2: SHA-256 of 4096 zero bytes */
	assert_int_equal(sc_hasher_digest(hs, block, 4096, &zeros), 0);
	memset(block, 0xff, sizeof(block));
	assert_int_equal(sc_block_verify(hs, 4096, &zeros, NULL, 0, block),
			 0);
	assert_memory_equal(block, zero4k, 4096);
	assert_int_equal(sc_block_verify(hs, 4096, &zeros, block, 4097,
					 block), -SC_EBADMSG);

	memset(block, 0, sizeof(block));
	memcpy(block, data, sizeof(data));
	assert_int_equal(sc_hasher_digest(hs, block, SC_BLOCK_SIZE_MAX, &h), 0);
	memset(block + sizeof(data), 0x77, 100);
	assert_int_equal(sc_block_verify(hs, SC_BLOCK_SIZE_MAX, &h, block,
					 sizeof(data), block), 0);
	assert_int_equal(sc_block_verify(hs, SC_BLOCK_SIZE_MAX, &zeros,
					 data, sizeof(data), block),
			 -SC_EBADMSG);
	sc_hasher_free(hs);
}

/*
 * The pool keeps one connection per peer across fetches, answers and
 * refusals alike, and a dead peer fails fast.
 */
static void test_pool(void **state)
{
	struct fixture *fx = *state;
	struct sc_peer_pool *p = sc_peer_pool_new(0, BS);
	struct csi_peer_read_args a = good_args(&fx->cache.h[0]);
	struct csi_peer_addr where = { .family = CSI_AF_INET,
				       .port = fx->port };
	struct sc_peer_server_stats st;
	uint8_t out[BS];
	int i;

	assert_non_null(p);
	where.addr[0] = 127;
	where.addr[3] = 1;
	for (i = 0; i < 5; i++) {
		memset(out, 0, sizeof(out));
		assert_int_equal(sc_peer_pool_fetch(p, &where, REQUESTER,
						    EPOCH, &a.hash, &a.token,
						    out), 0);
		assert_memory_equal(out, fx->cache.data[0], BS);
	}
	a.token.mac[0] ^= 1;
	assert_int_equal(sc_peer_pool_fetch(p, &where, REQUESTER, EPOCH,
					    &a.hash, &a.token, out), -EACCES);
	sc_peer_server_get_stats(fx->srv, &st);
	assert_int_equal(st.served, 5);
	assert_int_equal(st.bad_token, 1);
	assert_int_equal(st.connections, 1);
	assert_int_equal(sc_peer_server_stop(fx->srv), 0);
	assert_int_not_equal(sc_peer_pool_fetch(p, &where, REQUESTER, EPOCH,
						&a.hash, &a.token, out), 0);
	sc_peer_pool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good_token,
						setup_identity, teardown),
		cmocka_unit_test_setup_teardown(test_bad_tokens,
						setup_identity, teardown),
		cmocka_unit_test_setup_teardown(test_noent_busy_failure,
						setup_identity, teardown),
		cmocka_unit_test_setup_teardown(test_no_identity, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_new_identity,
						setup_identity, teardown),
		cmocka_unit_test_setup_teardown(test_identity_races_requests,
						setup_identity, teardown),
		cmocka_unit_test_setup_teardown(test_ipv6, setup_identity,
						teardown),
		cmocka_unit_test_setup_teardown(test_lying_peer,
						setup_identity, teardown),
		cmocka_unit_test_setup_teardown(test_dead_peers,
						setup_identity, teardown),
		cmocka_unit_test_setup_teardown(test_bad_arguments,
						setup_identity, teardown),
		cmocka_unit_test(test_data_verify),
		cmocka_unit_test_setup_teardown(test_pool, setup_identity,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
