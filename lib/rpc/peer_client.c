// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Delegated reads: one PEER_READ, verified.  sc_peer_fetch connects for
 * the call and closes; a struct sc_peer_pool keeps one connection per
 * peer open for a host's delegated reads, which mostly go to the same few
 * peers (a storm's other hosts).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "seacache/peer_client.h"
#include "seacache/peer_serve.h"
#include "seacache/rpc_transport.h"

/* The numeric address sc_rpc_client_opts wants, per PROTOCOL.md §3.3.3. */
static int peer_addr_str(const struct csi_peer_addr *a,
			 char buf[INET6_ADDRSTRLEN], uint16_t *port)
{
	static const uint8_t zero[CSI_ADDR_SIZE];
	int af;

	if (a->port < 1 || a->port > 65535)
		return -EINVAL;
	if (a->family == CSI_AF_INET &&
	    !memcmp(a->addr + 4, zero, CSI_ADDR_SIZE - 4))
		af = AF_INET;
	else if (a->family == CSI_AF_INET6)
		af = AF_INET6;
	else
		return -EINVAL;
	if (!inet_ntop(af, a->addr, buf, INET6_ADDRSTRLEN))
		return -errno;
	*port = (uint16_t)a->port;
	return 0;
}

static void peer_client_opts(struct sc_rpc_client_opts *o, char *host,
			     int timeout_ms, uint32_t block_size,
			     unsigned int inflight)
{
	memset(o, 0, sizeof(*o));
	o->host = host;
	o->prog = CSI_PEER_PROG;
	o->timeout_ms = timeout_ms > 0 ? timeout_ms : SC_PEER_FETCH_TIMEOUT_MS;
	o->max_inflight = inflight;
	o->max_record = block_size + SC_PEER_REPLY_SLACK;
}

/* Send one PEER_READ on c: its xid in *xid. */
static int peer_start(struct sc_rpc_client *c, uint64_t requester,
		      uint64_t epoch, const struct sc_hash *h,
		      const struct csi_token *tok, uint32_t *xid)
{
	struct csi_peer_read_args a = { .requester = requester,
					.epoch = epoch, .hash = *h,
					.token = *tok };

	return sc_rpc_start(c, CSI_PEER_PROC_READ, &a, xid);
}

/* The answer to PEER_READ xid of h, verified with hs into out_block. */
static int peer_finish(struct sc_rpc_client *c, uint32_t xid,
		       struct sc_hasher *hs, const struct sc_hash *h,
		       uint32_t block_size, void *out_block)
{
	struct csi_peer_read_res res;
	struct sc_rpc_reply *rep = NULL;
	int err;

	err = sc_rpc_finish(c, xid, &res, &rep);
	if (!err)
		err = sc_peer_read_take(hs, block_size, h, &res, out_block);
	sc_rpc_reply_free(rep);
	return err;
}

/* One PEER_READ on c, its answer verified with hs into out_block. */
static int peer_call(struct sc_rpc_client *c, struct sc_hasher *hs,
		     uint64_t requester, uint64_t epoch,
		     const struct sc_hash *h, const struct csi_token *tok,
		     uint32_t block_size, void *out_block)
{
	uint32_t xid;
	int err;

	err = peer_start(c, requester, epoch, h, tok, &xid);
	if (!err)
		err = peer_finish(c, xid, hs, h, block_size, out_block);
	return err;
}

int sc_peer_fetch(const struct csi_peer_addr *where, uint64_t requester,
		  uint64_t epoch, const struct sc_hash *h,
		  const struct csi_token *tok, int timeout_ms,
		  uint32_t block_size, void *out_block)
{
	char host[INET6_ADDRSTRLEN];
	struct sc_rpc_client_opts o;
	struct sc_rpc_client *c;
	struct sc_hasher *hs;
	int err;

	if (!sc_block_size_valid(block_size))
		return -EINVAL;
	peer_client_opts(&o, host, timeout_ms, block_size, 1);
	err = peer_addr_str(where, host, &o.port);
	if (err)
		return err;
	hs = sc_hasher_new();
	if (!hs)
		return -ENOMEM;
	err = sc_rpc_client_open(&o, &c);
	if (!err) {
		err = peer_call(c, hs, requester, epoch, h, tok, block_size,
				out_block);
		sc_rpc_client_close(c);
	}
	sc_hasher_free(hs);
	return err;
}

/* Calls in flight on one kept connection. */
#define PEER_POOL_INFLIGHT 8

struct peer_conn {
	struct csi_peer_addr addr;
	struct sc_rpc_client *c;	/* NULL: slot free */
	unsigned int users;
	/*
	 * Calls its users may have in flight, at most PEER_POOL_INFLIGHT:
	 * a user that holds started calls never waits in sc_rpc_start for
	 * another user's, which may be waiting the same way.
	 */
	unsigned int calls;
	bool broken;			/* close when the last user is done */
};

struct sc_peer_pool {
	pthread_mutex_t lock;
	pthread_cond_t calls_cv;	/* a connection's calls went down */
	int timeout_ms;
	uint32_t block_size;
	struct peer_conn conn[SC_PEER_POOL_SIZE];
	/* hashers of finished fetches, kept for the next ones */
	struct sc_hasher *hashers[PEER_POOL_INFLIGHT];
	unsigned int nhashers;
};

struct sc_peer_pool *sc_peer_pool_new(int timeout_ms, uint32_t block_size)
{
	struct sc_peer_pool *p;

	if (!sc_block_size_valid(block_size))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->calls_cv, NULL);
	p->timeout_ms = timeout_ms;
	p->block_size = block_size;
	return p;
}

void sc_peer_pool_free(struct sc_peer_pool *p)
{
	if (!p)
		return;
	for (unsigned int i = 0; i < SC_PEER_POOL_SIZE; i++)
		sc_rpc_client_close(p->conn[i].c);
	while (p->nhashers)
		sc_hasher_free(p->hashers[--p->nhashers]);
	pthread_cond_destroy(&p->calls_cv);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static bool same_peer(const struct csi_peer_addr *a,
		      const struct csi_peer_addr *b)
{
	return a->family == b->family && a->port == b->port &&
	       !memcmp(a->addr, b->addr, CSI_ADDR_SIZE);
}

/*
 * The kept connection to where, opened if need be, with a user counted
 * and *calls (1 to want) of its calls taken; NULL when every slot is busy
 * with other peers (the caller then uses a one-shot connection).  *err:
 * why it could not connect.
 */
static struct peer_conn *pool_get(struct sc_peer_pool *p,
				  const struct csi_peer_addr *where,
				  unsigned int want, unsigned int *calls,
				  int *err)
{
	struct peer_conn *k = NULL, *free_slot = NULL;
	char host[INET6_ADDRSTRLEN];
	struct sc_rpc_client_opts o;
	unsigned int i;

	*err = 0;
	pthread_mutex_lock(&p->lock);
	for (i = 0; i < SC_PEER_POOL_SIZE && !k; i++) {
		struct peer_conn *c = &p->conn[i];

		if (c->c && !c->broken && same_peer(&c->addr, where))
			k = c;
		else if (!c->c && !free_slot)
			free_slot = c;
	}
	for (i = 0; i < SC_PEER_POOL_SIZE && !k && !free_slot; i++) {
		struct peer_conn *c = &p->conn[i];

		if (!c->users) {	/* idle, another peer's: it may go */
			sc_rpc_client_close(c->c);
			c->c = NULL;
			free_slot = c;
		}
	}
	if (!k && free_slot) {
		peer_client_opts(&o, host, p->timeout_ms, p->block_size,
				 PEER_POOL_INFLIGHT);
		*err = peer_addr_str(where, host, &o.port);
		if (!*err)
			*err = sc_rpc_client_open(&o, &free_slot->c);
		if (!*err) {
			k = free_slot;
			k->addr = *where;
			k->broken = false;
			k->calls = 0;
		} else {
			free_slot->c = NULL;
		}
	}
	if (k) {
		k->users++;
		while (k->calls == PEER_POOL_INFLIGHT)
			pthread_cond_wait(&p->calls_cv, &p->lock);
		*calls = PEER_POOL_INFLIGHT - k->calls;
		if (*calls > want)
			*calls = want;
		k->calls += *calls;
	}
	pthread_mutex_unlock(&p->lock);
	return k;
}

/* A transport error: the next call opens a fresh connection. */
static bool conn_failed(int err)
{
	return err && err != -EACCES && err != -ENOENT && err != -EBUSY &&
	       err != -EBADMSG && err != -EPROTO;
}

/* pool_get undone; err: a call's that may have broken the connection. */
static void pool_put(struct sc_peer_pool *p, struct peer_conn *k,
		     unsigned int calls, int err)
{
	pthread_mutex_lock(&p->lock);
	if (conn_failed(err))
		k->broken = true;
	k->calls -= calls;
	pthread_cond_broadcast(&p->calls_cv);
	if (--k->users == 0 && k->broken) {
		sc_rpc_client_close(k->c);
		k->c = NULL;
	}
	pthread_mutex_unlock(&p->lock);
}

/* A hasher for a fetch: a finished fetch's if one is kept. */
static struct sc_hasher *pool_hasher_get(struct sc_peer_pool *p)
{
	struct sc_hasher *hs;

	pthread_mutex_lock(&p->lock);
	hs = p->nhashers ? p->hashers[--p->nhashers] : NULL;
	pthread_mutex_unlock(&p->lock);
	return hs ? hs : sc_hasher_new();
}

static void pool_hasher_put(struct sc_peer_pool *p, struct sc_hasher *hs)
{
	pthread_mutex_lock(&p->lock);
	if (hs && p->nhashers < PEER_POOL_INFLIGHT) {
		p->hashers[p->nhashers++] = hs;
		hs = NULL;
	}
	pthread_mutex_unlock(&p->lock);
	sc_hasher_free(hs);
}

int sc_peer_pool_fetch(struct sc_peer_pool *p,
		       const struct csi_peer_addr *where, uint64_t requester,
		       uint64_t epoch, const struct sc_hash *h,
		       const struct csi_token *tok, void *out_block)
{
	struct sc_peer_fetch f = { .where = where, .h = h, .tok = tok,
				   .out = out_block };

	sc_peer_pool_fetch_many(p, requester, epoch, &f, 1);
	return f.err;
}

/* f[i].err of a fetch not done yet. */
#define PEER_PENDING 1

/*
 * The pending fetches of f[0..n) from f[0]'s peer, up to the calls taken
 * on its connection in flight at once; each one's answer is verified.
 */
static void pool_fetch_peer(struct sc_peer_pool *p, uint64_t requester,
			    uint64_t epoch, struct sc_peer_fetch *f,
			    uint32_t n)
{
	uint32_t xid[PEER_POOL_INFLIGHT], ix[PEER_POOL_INFLIGHT];
	const struct csi_peer_addr *where = f[0].where;
	unsigned int calls = 0, started = 0, done = 0, want = 0;
	struct sc_hasher *hs = NULL;
	struct peer_conn *k;
	uint32_t i, next = 0;
	int err, broke = 0;

	for (i = 0; i < n; i++)
		want += f[i].err == PEER_PENDING && same_peer(f[i].where, where);
	k = pool_get(p, where, want, &calls, &err);
	if (k)
		hs = pool_hasher_get(p);
	for (;;) {
		while (next < n && (!k || !hs || started - done < calls)) {
			struct sc_peer_fetch *g = &f[next];

			if (g->err != PEER_PENDING ||
			    !same_peer(g->where, where)) {
				next++;
				continue;
			}
			if (err || (k && !hs)) {
				g->err = err ? err : -ENOMEM;
			} else if (!k) {
				g->err = sc_peer_fetch(where, requester, epoch,
						       g->h, g->tok,
						       p->timeout_ms,
						       p->block_size, g->out);
			} else {
				g->err = peer_start(k->c, requester, epoch,
						    g->h, g->tok,
						    &xid[started % calls]);
				if (!g->err)
					ix[started++ % calls] = next;
				else if (conn_failed(g->err))
					broke = g->err;
			}
			next++;
		}
		if (done == started)
			break;
		i = ix[done % calls];
		f[i].err = peer_finish(k->c, xid[done++ % calls], hs, f[i].h,
				       p->block_size, f[i].out);
		if (conn_failed(f[i].err))
			broke = f[i].err;
	}
	if (k) {
		pool_hasher_put(p, hs);
		pool_put(p, k, calls, broke);
	}
}

void sc_peer_pool_fetch_many(struct sc_peer_pool *p, uint64_t requester,
			     uint64_t epoch, struct sc_peer_fetch *f,
			     uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		f[i].err = PEER_PENDING;
	for (i = 0; i < n; i++)
		if (f[i].err == PEER_PENDING)
			pool_fetch_peer(p, requester, epoch, f + i, n - i);
}
