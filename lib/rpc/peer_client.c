// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * One delegated read: connect to the peer, one PEER_READ, verify, close.
 * Delegations spread over many peers and each is tried once (the server
 * is the fallback), so a connection per call is kept simple on purpose; a
 * host that sees many delegations to one peer can add a connection cache
 * above sc_rpc_client later.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "seacache/peer_client.h"
#include "seacache/peer_serve.h"
#include "seacache/rpc_transport.h"

/*
 * Room in a reply record beyond the block: reply header, a verifier the
 * decoder accepts (8 + 400 bytes), status and length.  A longer record
 * cannot be a valid answer and the transport fails it with -EBADMSG
 * without reading it whole.
 */
#define PEER_REPLY_SLACK 1024u

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

static int status_errno(uint32_t status)
{
	switch (status) {
	case CSI_OK:
		return 0;
	case CSI_ERR_BAD_TOKEN:
		return -EACCES;
	case CSI_ERR_NOENT:
		return -ENOENT;
	case CSI_ERR_BUSY:
		return -EBUSY;
	default:
		return -EPROTO;
	}
}

int sc_peer_fetch(const struct csi_peer_addr *where, uint64_t requester,
		  uint64_t epoch, const struct sc_hash *h,
		  const struct csi_token *tok, int timeout_ms,
		  uint32_t block_size, void *out_block)
{
	struct csi_peer_read_args a = { .requester = requester,
					.epoch = epoch, .hash = *h,
					.token = *tok };
	char host[INET6_ADDRSTRLEN];
	struct sc_rpc_client_opts o = {
		.host = host,
		.prog = CSI_PEER_PROG,
		.timeout_ms = timeout_ms > 0 ? timeout_ms :
					       SC_PEER_FETCH_TIMEOUT_MS,
		.max_inflight = 1,
		.max_record = block_size + PEER_REPLY_SLACK,
	};
	struct csi_peer_read_res res;
	struct sc_rpc_reply *rep = NULL;
	struct sc_rpc_client *c;
	struct sc_hasher *hs;
	int err;

	if (!sc_block_size_valid(block_size))
		return -EINVAL;
	err = peer_addr_str(where, host, &o.port);
	if (err)
		return err;
	err = sc_rpc_client_open(&o, &c);
	if (err)
		return err;
	err = sc_rpc_call(c, CSI_PEER_PROC_READ, &a, &res, &rep);
	sc_rpc_client_close(c);
	if (!err)
		err = status_errno(res.status);
	if (!err) {
		/* Per call, like the connection: no state shared by threads. */
		hs = sc_hasher_new();
		err = hs ? sc_peer_data_verify(hs, block_size, h, res.data.p,
					       res.data.len, out_block) :
			   -ENOMEM;
		sc_hasher_free(hs);
	}
	sc_rpc_reply_free(rep);
	return err;
}
