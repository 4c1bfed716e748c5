// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The user-space peer server: an sc_rpc_server for CSI_PEER_PROG on its
 * own thread, answering through the core's sc_peer_serve_read.
 *
 * The identity changes with every HELLO, from another thread, while the
 * loop may be checking a token with the old MAC context.  So
 * set_identity only leaves the new identity for the loop, which swaps it
 * in before its next request: the loop owns the context it uses and never
 * holds the lock across a token check or the cache lookup.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "seacache/peer_server.h"
#include "seacache/rpc_transport.h"

struct sc_peer_server {
	struct sc_rpc_server *rpc;	/* NULL once stopped */
	struct sc_rpc_service svc;
	pthread_t thread;
	int loop_err;			/* the loop's result, after the join */
	uint16_t port;
	uint32_t block_size;
	sc_peer_get_fn get;
	void *get_ctx;
	struct sc_peer_identity id;	/* the loop's own; mac NULL: none yet */

	pthread_mutex_t lock;		/* everything below */
	struct sc_peer_identity next;	/* mac NULL: nothing new */
	sc_peer_clock_fn now;
	void *now_ctx;
	struct sc_peer_server_stats st;
};

static uint64_t realtime_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

static int peer_handle(void *ctx, struct sc_rpc_request *rq)
{
	struct sc_peer_server *s = ctx;
	struct csi_peer_read_res *res = rq->res;
	struct sc_mac *old = NULL;
	sc_peer_clock_fn now;
	void *now_ctx, *buf;
	int err;

	pthread_mutex_lock(&s->lock);
	if (s->next.mac) {
		old = s->id.mac;
		s->id = s->next;
		s->next.mac = NULL;
	}
	now = s->now;
	now_ctx = s->now_ctx;
	pthread_mutex_unlock(&s->lock);
	sc_mac_free(old);

	/* Lives until the reply is encoded: res->data points into it. */
	buf = sc_rpc_req_alloc(rq, s->block_size);
	if (!buf)
		return -ENOMEM;
	err = sc_peer_serve_read(s->id.mac ? &s->id : NULL, now(now_ctx),
				 rq->args, s->get, s->get_ctx, buf,
				 s->block_size, res);
	if (err)
		return err;

	pthread_mutex_lock(&s->lock);
	switch (res->status) {
	case CSI_OK:
		s->st.served++;
		break;
	case CSI_ERR_BAD_TOKEN:
		s->st.bad_token++;
		break;
	case CSI_ERR_NOENT:
		s->st.noent++;
		break;
	case CSI_ERR_BUSY:
		s->st.busy++;
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static void *loop_main(void *arg)
{
	struct sc_peer_server *s = arg;

	s->loop_err = sc_rpc_server_run(s->rpc);
	return NULL;
}

int sc_peer_server_start(const char *bind_addr, uint16_t port,
			 uint32_t block_size, sc_peer_get_fn get, void *ctx,
			 struct sc_peer_server **out)
{
	/*
	 * No worker pool: the handler runs on the loop thread, one call at
	 * a time, which bounds the peer reads served at once (§9.6) and
	 * lets the loop own its identity.
	 */
	struct sc_rpc_server_opts o = { .bind_addr = bind_addr, .port = port,
					.max_conns = SC_PEER_MAX_CONNS,
					.max_conns_per_addr =
						SC_PEER_MAX_CONNS_PER_ADDR,
					.idle_ms = SC_PEER_IDLE_TIMEOUT_MS,
					.record_ms = SC_PEER_RECORD_TIMEOUT_MS,
					.keepalive_s = SC_PEER_KEEPALIVE_S,
					.max_record = SC_PEER_MAX_REQUEST };
	struct sc_peer_server *s;
	int err;

	if (!sc_block_size_valid(block_size) || !get)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->block_size = block_size;
	s->get = get;
	s->get_ctx = ctx;
	s->now = realtime_now;
	s->svc = (struct sc_rpc_service){ .prog = CSI_PEER_PROG,
					  .handle = peer_handle, .ctx = s };
	pthread_mutex_init(&s->lock, NULL);
	err = sc_rpc_server_new(&o, &s->svc, 1, &s->rpc);
	if (err)
		goto fail;
	s->port = sc_rpc_server_port(s->rpc);
	err = -pthread_create(&s->thread, NULL, loop_main, s);
	if (err) {
		sc_rpc_server_free(s->rpc);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	pthread_mutex_destroy(&s->lock);
	free(s);
	return err;
}

uint16_t sc_peer_server_port(const struct sc_peer_server *s)
{
	return s->port;
}

int sc_peer_server_set_identity(struct sc_peer_server *s, uint64_t host,
				uint64_t epoch,
				const uint8_t secret[SC_PEER_SECRET_LEN])
{
	struct sc_mac *m = sc_mac_new(secret, SC_PEER_SECRET_LEN);
	struct sc_mac *unused;

	if (!m)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	/* One the loop never took: it has not served a request since. */
	unused = s->next.mac;
	s->next = (struct sc_peer_identity){ .host = host, .epoch = epoch,
					     .mac = m };
	pthread_mutex_unlock(&s->lock);
	sc_mac_free(unused);
	return 0;
}

void sc_peer_server_set_clock(struct sc_peer_server *s, sc_peer_clock_fn now,
			      void *ctx)
{
	pthread_mutex_lock(&s->lock);
	s->now = now;
	s->now_ctx = ctx;
	pthread_mutex_unlock(&s->lock);
}

void sc_peer_server_get_stats(struct sc_peer_server *s,
			      struct sc_peer_server_stats *st)
{
	struct sc_rpc_server_stats rs = { 0 };

	pthread_mutex_lock(&s->lock);
	*st = s->st;
	pthread_mutex_unlock(&s->lock);
	if (s->rpc)
		sc_rpc_server_get_stats(s->rpc, &rs);
	st->connections = rs.conns_accepted;
}

int sc_peer_server_stop(struct sc_peer_server *s)
{
	if (s->rpc) {
		sc_rpc_server_stop(s->rpc);
		pthread_join(s->thread, NULL);
		sc_rpc_server_free(s->rpc);
		s->rpc = NULL;
	}
	return s->loop_err;
}

void sc_peer_server_free(struct sc_peer_server *s)
{
	if (!s)
		return;
	sc_peer_server_stop(s);
	sc_mac_free(s->id.mac);
	sc_mac_free(s->next.mac);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
