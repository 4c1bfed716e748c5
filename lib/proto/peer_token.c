// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Peer tokens: the MAC input laid out once, for the server that makes
 * tokens and the hosts (user space and kernel) that check them.
 */
#include "seacache/peer_token.h"

void sc_peer_token_msg(const struct sc_peer_token_fields *f,
		       uint8_t msg[SC_PEER_TOKEN_MSG_LEN])
{
	sc_memcpy(msg, "SCPR1", 5);
	sc_memcpy(msg + 5, f->hash.b, SC_HASH_LEN);
	sc_put_be64(msg + 37, f->requester);
	sc_put_be64(msg + 45, f->serving);
	sc_put_be64(msg + 53, f->epoch);
	sc_put_be64(msg + 61, f->expiry);
}

int sc_peer_token_mac(struct sc_mac *m, const struct sc_peer_token_fields *f,
		      uint8_t mac[SC_MAC_LEN])
{
	uint8_t msg[SC_PEER_TOKEN_MSG_LEN];

	sc_peer_token_msg(f, msg);
	return sc_mac_digest(m, msg, sizeof(msg), mac);
}

int sc_peer_token_check(struct sc_mac *m, const struct sc_peer_token_fields *f,
			uint64_t epoch, uint64_t now,
			const uint8_t mac[SC_MAC_LEN])
{
	uint8_t want[SC_MAC_LEN];
	bool ok;

	/* every check runs, so the time taken tells nothing either */
	ok = f->epoch == epoch;
	ok &= f->expiry >= now;
	ok &= f->expiry <= now + SC_PEER_TOKEN_MAX_AHEAD;
	if (sc_peer_token_mac(m, f, want))
		return -SC_EIO;
	ok &= sc_mem_equal_secret(want, mac, SC_MAC_LEN);
	return ok ? 0 : -SC_EACCES;
}
