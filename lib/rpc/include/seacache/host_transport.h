/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The user-space struct sc_host_transport (host.h): CSI calls over the
 * project's RPC client (pipelined, thread-safe, reconnecting), peer reads
 * through sc_peer_fetch, and, when asked, a peer server (peer_server.h)
 * that answers other hosts' delegated reads from an sc_host's cache.
 *
 * Use:
 *   sc_host_transport_open(&o, &cfg.tr, &st);
 *   sc_host_transport_peer_addr(st, &cfg.peer);	// SC_AF_NONE if none
 *   sc_host_create(&cfg, &host);
 *   sc_host_transport_set_host(st, host);		// peer reads served
 *   ...
 *   sc_host_transport_set_host(st, NULL);		// none in progress after
 *   sc_host_destroy(host);
 *   sc_host_transport_close(st);
 * Errors are negative errno values.
 */
#ifndef SEACACHE_HOST_TRANSPORT_H
#define SEACACHE_HOST_TRANSPORT_H

#include <stdint.h>

#include "seacache/host.h"
#include "seacache/peer_server.h"

struct sc_host_transport_opts {
	const char *server;	/* the CSI service: numeric IPv4 or IPv6 */
	uint16_t port;
	int timeout_ms;		/* per call; 0: SC_CSI_CALL_TIMEOUT_MS */
	/* Peer reads served here (numeric address), or NULL: none. */
	const char *peer_bind;
	uint16_t peer_port;	/* 0: any free port */
	uint32_t block_size;	/* the server's B; 0: SC_BLOCK_SIZE_DEFAULT */
	int peer_timeout_ms;	/* a peer read; 0: SC_PEER_FETCH_TIMEOUT_MS */
};

struct sc_host_transport_state;

/*
 * Connect to the server and start the peer server, if any; fills *tr for
 * struct sc_host_config.  0, or the connect or listen error.
 */
int sc_host_transport_open(const struct sc_host_transport_opts *o,
			   struct sc_host_transport *tr,
			   struct sc_host_transport_state **st);
/* The address to give in HELLO: the peer server's, or SC_AF_NONE. */
void sc_host_transport_peer_addr(const struct sc_host_transport_state *st,
				 struct csi_peer_addr *out);
/*
 * The host whose cache answers peer reads (NULL: none, every read
 * answers NOENT).  Returns once no read of the previous host runs.
 */
void sc_host_transport_set_host(struct sc_host_transport_state *st,
				struct sc_host *h);
/* The peer server's counters (zeros without one). */
void sc_host_transport_peer_stats(struct sc_host_transport_state *st,
				  struct sc_peer_server_stats *out);
/* Stops the peer server (later peer reads are refused) and closes. */
void sc_host_transport_close(struct sc_host_transport_state *st);

#endif /* SEACACHE_HOST_TRANSPORT_H */
