/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The requester's side of a delegated read (PROTOCOL.md §7.3, §7.8) in
 * user space: one PEER_READ to the peer the server named, its bytes
 * verified against the hash before the caller sees them.
 */
#ifndef SEACACHE_PEER_CLIENT_H
#define SEACACHE_PEER_CLIENT_H

#include <stdint.h>

#include "seacache/csi_proto.h"
#include "seacache/defaults.h"
#include "seacache/host.h"

/*
 * Fetch block h from the peer at where, presenting tok as requester in
 * epoch.  Opens a connection for this one call and closes it: the
 * connect and the call may each take up to timeout_ms (<= 0:
 * SC_PEER_FETCH_TIMEOUT_MS).  0: out_block holds the block_size bytes
 * whose SHA-256 is h, zero-filled.  Otherwise a negative errno, after
 * which out_block must not be used and the caller reads the block from
 * the server with FORCE_DATA:
 *   -EINVAL	  bad block size, or where is not an INET/INET6 address
 *		  with a port;
 *   the transport's errors (-ECONNREFUSED, -ETIMEDOUT, -ECONNRESET, ...);
 *   -EACCES	  BAD_TOKEN;
 *   -ENOENT, -EBUSY  the peer no longer holds h, or is overloaded;
 *   -EBADMSG	  more than a block, bytes that do not hash to h, or a
 *		  reply that does not decode;
 *   -EPROTO	  a status PEER_READ never answers.
 */
int sc_peer_fetch(const struct csi_peer_addr *where, uint64_t requester,
		  uint64_t epoch, const struct sc_hash *h,
		  const struct csi_token *tok, int timeout_ms,
		  uint32_t block_size, void *out_block);

/*
 * Kept connections for a host's delegated reads: one per peer (up to 16
 * peers; an idle one is closed to make room, and past that a fetch uses a
 * one-shot connection), shared by the host's threads, reopened after a
 * transport error.  NULL: bad block size or no memory.
 */
struct sc_peer_pool;

struct sc_peer_pool *sc_peer_pool_new(int timeout_ms, uint32_t block_size);
void sc_peer_pool_free(struct sc_peer_pool *p);
/* sc_peer_fetch over the pool's connection to where. */
int sc_peer_pool_fetch(struct sc_peer_pool *p,
		       const struct csi_peer_addr *where, uint64_t requester,
		       uint64_t epoch, const struct sc_hash *h,
		       const struct csi_token *tok, void *out_block);
/*
 * sc_peer_pool_fetch of each f[0..n), each one's result in f[i].err: the
 * calls to one peer are in flight together on its connection (up to the
 * connection's share), so their answers overlap.
 */
void sc_peer_pool_fetch_many(struct sc_peer_pool *p, uint64_t requester,
			     uint64_t epoch, struct sc_peer_fetch *f,
			     uint32_t n);

#endif /* SEACACHE_PEER_CLIENT_H */
