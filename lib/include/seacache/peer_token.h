/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Peer tokens (PROTOCOL.md §9.2): the capability a delegated READ carries
 * to the serving host.  The server makes it with the serving host's
 * peer_secret; the serving host checks it with the same secret.
 *
 *   mac = HMAC-SHA-256(peer_secret, "SCPR1" || hash || requester ||
 *                      serving || epoch || expiry)      (ids big-endian)
 */
#ifndef SEACACHE_PEER_TOKEN_H
#define SEACACHE_PEER_TOKEN_H

#include "hash.h"

#define SC_PEER_SECRET_LEN 32
#define SC_PEER_TOKEN_MSG_LEN 69
/* A serving host refuses tokens expiring further ahead than this. */
#define SC_PEER_TOKEN_MAX_AHEAD 300

struct sc_peer_token_fields {
	struct sc_hash hash;
	uint64_t requester;	/* the host that will present it */
	uint64_t serving;	/* the host that serves the block */
	uint64_t epoch;
	uint64_t expiry;	/* Unix seconds */
};

void sc_peer_token_msg(const struct sc_peer_token_fields *f,
		       uint8_t msg[SC_PEER_TOKEN_MSG_LEN]);
/* m: an sc_mac keyed with the serving host's peer_secret. */
int sc_peer_token_mac(struct sc_mac *m, const struct sc_peer_token_fields *f,
		      uint8_t mac[SC_MAC_LEN]);
/*
 * The serving host's check, PROTOCOL.md §7.8 step 1: f as presented (with
 * f->serving its own id), epoch its registration's, now in Unix seconds.
 * 0, or -SC_EACCES whatever failed (the reply must not say which).
 */
int sc_peer_token_check(struct sc_mac *m, const struct sc_peer_token_fields *f,
			uint64_t epoch, uint64_t now,
			const uint8_t mac[SC_MAC_LEN]);

#endif /* SEACACHE_PEER_TOKEN_H */
