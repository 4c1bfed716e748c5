// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* struct sc_host_transport in user space (host_transport.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "seacache/host_transport.h"
#include "seacache/peer_client.h"
#include "seacache/peer_server.h"
#include "seacache/rpc_transport.h"

struct sc_host_transport_state {
	struct sc_rpc_client *c;
	struct sc_peer_pool *pool;	/* connections for delegated reads */
	struct sc_peer_server *peer;	/* NULL: no peer reads served */
	struct csi_peer_addr addr;
	uint32_t block_size;
	int peer_timeout_ms;
	/* Held while a peer read runs, so set_host can wait it out. */
	pthread_mutex_t host_lock;
	struct sc_host *host;
};

static int tr_call(void *ctx, uint32_t proc, const void *args, void *res,
		   void **reply)
{
	struct sc_host_transport_state *st = ctx;

	return sc_rpc_call(st->c, proc, args, res,
			   (struct sc_rpc_reply **)reply);
}

static void tr_release(void *ctx, void *reply)
{
	(void)ctx;
	sc_rpc_reply_free(reply);
}

static int tr_peer_fetch(void *ctx, const struct csi_peer_addr *where,
			 uint64_t requester, uint64_t epoch,
			 const struct sc_hash *h, const struct csi_token *tok,
			 void *out)
{
	struct sc_host_transport_state *st = ctx;

	return sc_peer_pool_fetch(st->pool, where, requester, epoch, h, tok,
				  out);
}

static void tr_peer_fetch_many(void *ctx, uint64_t requester,
			       uint64_t epoch, struct sc_peer_fetch *f,
			       uint32_t n)
{
	struct sc_host_transport_state *st = ctx;

	sc_peer_pool_fetch_many(st->pool, requester, epoch, f, n);
}

static void tr_identity(void *ctx, uint64_t host, uint64_t epoch,
			const uint8_t secret[CSI_SECRET_SIZE])
{
	struct sc_host_transport_state *st = ctx;

	if (st->peer &&
	    sc_peer_server_set_identity(st->peer, host, epoch, secret))
		sc_log_err("peer server: no memory for the new identity: tokens fail until the next HELLO");
}

/* The peer server's thread: the cache of the host set, if any. */
static int tr_peer_get(void *ctx, const struct sc_hash *h, void *buf,
		       uint32_t *len)
{
	struct sc_host_transport_state *st = ctx;
	int err = -ENOENT;

	pthread_mutex_lock(&st->host_lock);
	/* buf holds the block size the server was started with */
	if (st->host && sc_host_block_size(st->host) > st->block_size)
		err = -EIO;
	else if (st->host)
		err = sc_host_peer_get(st->host, h, buf, len);
	pthread_mutex_unlock(&st->host_lock);
	return err;
}

int sc_host_transport_open(const struct sc_host_transport_opts *o,
			   struct sc_host_transport *tr,
			   struct sc_host_transport_state **out)
{
	/*
	 * The host agent calls with its own credential; as root from a
	 * reserved port, as an NFS client does, so that a PrivilegedPort
	 * export admits it.
	 */
	struct sc_rpc_client_opts co = { .host = o->server, .port = o->port,
					 .prog = CSI_PROG,
					 .timeout_ms = o->timeout_ms,
					 .reserved_port = geteuid() == 0 };
	struct sc_host_transport_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->host_lock, NULL);
	st->block_size = o->block_size ? o->block_size : SC_BLOCK_SIZE_DEFAULT;
	st->peer_timeout_ms = o->peer_timeout_ms;
	st->pool = sc_peer_pool_new(st->peer_timeout_ms, st->block_size);
	err = st->pool ? sc_rpc_client_open(&co, &st->c) : -ENOMEM;
	if (!err && o->peer_bind) {
		err = sc_peer_server_start(o->peer_bind, o->peer_port,
					   st->block_size, tr_peer_get, st,
					   &st->peer);
		if (!err && inet_pton(AF_INET, o->peer_bind, st->addr.addr) == 1)
			st->addr.family = CSI_AF_INET;
		else if (!err &&
			 inet_pton(AF_INET6, o->peer_bind, st->addr.addr) == 1)
			st->addr.family = CSI_AF_INET6;
		else if (!err)
			err = -EINVAL;
		if (!err)
			st->addr.port = sc_peer_server_port(st->peer);
	}
	if (err) {
		sc_host_transport_close(st);
		return err;
	}
	memset(tr, 0, sizeof(*tr));
	tr->call = tr_call;
	tr->release = tr_release;
	tr->peer_fetch = tr_peer_fetch;
	tr->peer_fetch_many = tr_peer_fetch_many;
	tr->identity = tr_identity;
	tr->ctx = st;
	*out = st;
	return 0;
}

void sc_host_transport_peer_addr(const struct sc_host_transport_state *st,
				 struct csi_peer_addr *out)
{
	*out = st->addr;
}

void sc_host_transport_set_host(struct sc_host_transport_state *st,
				struct sc_host *h)
{
	pthread_mutex_lock(&st->host_lock);
	st->host = h;
	pthread_mutex_unlock(&st->host_lock);
}

void sc_host_transport_peer_stats(struct sc_host_transport_state *st,
				  struct sc_peer_server_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (st->peer)
		sc_peer_server_get_stats(st->peer, out);
}

void sc_host_transport_close(struct sc_host_transport_state *st)
{
	if (!st)
		return;
	sc_peer_server_free(st->peer);
	sc_peer_pool_free(st->pool);
	if (st->c)
		sc_rpc_client_close(st->c);
	pthread_mutex_destroy(&st->host_lock);
	free(st);
}
