/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * SEACACHE_PEER_PROG served in user space (PROTOCOL.md §7.8): an RPC
 * server on its own thread that answers other hosts' delegated reads from
 * the caller's content cache.  Errors are negative errno values.
 */
#ifndef SEACACHE_PEER_SERVER_H
#define SEACACHE_PEER_SERVER_H

#include <stdint.h>

#include "seacache/peer_serve.h"

struct sc_peer_server;

/* Answers given, by kind; SYSTEM_ERR answers are not counted. */
struct sc_peer_server_stats {
	uint64_t served;	/* OK, with the block */
	uint64_t bad_token;
	uint64_t noent;
	uint64_t busy;
	uint64_t connections;	/* accepted since the start */
};

/*
 * Listen on bind_addr (numeric; NULL: 127.0.0.1, so a host that serves
 * other machines names its storage-network address or "0.0.0.0"/"::") and
 * port (0: any free one), and serve on a new thread.  get runs on that
 * thread, one call at a time, which bounds concurrent peer reads to one;
 * get answers -SC_EBUSY to shed load.  Every token fails until
 * sc_peer_server_set_identity.  -EINVAL for a bad block size.
 */
int sc_peer_server_start(const char *bind_addr, uint16_t port,
			 uint32_t block_size, sc_peer_get_fn get, void *ctx,
			 struct sc_peer_server **out);
/* The port it listens on, the one to give in HELLO. */
uint16_t sc_peer_server_port(const struct sc_peer_server *s);

/*
 * After every HELLO: its host id, epoch and peer_secret.  From any
 * thread; requests served after it returns use the new identity, so
 * tokens made for the previous one fail.  The secret is not kept (§9.2).
 * 0 or -ENOMEM.
 */
int sc_peer_server_set_identity(struct sc_peer_server *s, uint64_t host,
				uint64_t epoch,
				const uint8_t secret[SC_PEER_SECRET_LEN]);

/* Unix seconds for token expiry; default CLOCK_REALTIME.  For tests. */
typedef uint64_t (*sc_peer_clock_fn)(void *ctx);
void sc_peer_server_set_clock(struct sc_peer_server *s, sc_peer_clock_fn now,
			      void *ctx);

/* From any thread. */
void sc_peer_server_get_stats(struct sc_peer_server *s,
			      struct sc_peer_server_stats *st);

/*
 * Stop serving: wait for the thread and close the port and every
 * connection (a call in progress gets a reset, not a hang).  Counters stay
 * readable.  0, or the error that ended the loop early.
 */
int sc_peer_server_stop(struct sc_peer_server *s);
/* Stops if needed, then frees. */
void sc_peer_server_free(struct sc_peer_server *s);

#endif /* SEACACHE_PEER_SERVER_H */
