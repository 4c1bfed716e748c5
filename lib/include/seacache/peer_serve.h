/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Cooperative reads between hosts, the part every host shares whatever its
 * transport (user-space agent or kernel module): the serving host's answer
 * to one PEER_READ (PROTOCOL.md §7.8), and the requester's check of it
 * (§9.4: the bytes checked as any block received, with sc_block_verify).
 */
#ifndef SEACACHE_PEER_SERVE_H
#define SEACACHE_PEER_SERVE_H

#include "csi_proto.h"
#include "hash.h"
#include "peer_token.h"

/* What the serving host learnt from its last HELLO. */
struct sc_peer_identity {
	uint64_t host;		/* its host id */
	uint64_t epoch;		/* that registration's epoch */
	struct sc_mac *mac;	/* keyed with that HELLO's peer_secret */
};

/*
 * The serving host's content cache: copy the block named h into buf
 * (block size bytes) and set *len (at most the block size; the bytes
 * past it count as zeros).  0, -SC_ENOENT when h is not held, -SC_EBUSY
 * when overloaded; any other negative error is an internal failure.
 */
typedef int (*sc_peer_get_fn)(void *ctx, const struct sc_hash *h, void *buf,
			      uint32_t *len);

/*
 * Answer one PEER_READ: fill res with BAD_TOKEN, NOENT, BUSY, or OK and
 * the block, trailing zeros trimmed.  id NULL (no HELLO yet) fails every
 * token.  get is called only for a valid token; buf (block_size bytes)
 * receives the block and res->data points into it.  now: Unix seconds.
 * id->mac is used, so one thread at a time per identity.  0 when res is
 * filled; a negative error when no answer can be built (the transport's
 * SYSTEM_ERR).
 */
int sc_peer_serve_read(const struct sc_peer_identity *id, uint64_t now,
		       const struct csi_peer_read_args *a, sc_peer_get_fn get,
		       void *ctx, void *buf, uint32_t block_size,
		       struct csi_peer_read_res *res);

/*
 * The requester's side: a PEER_READ answer for content h taken into out
 * (block_size bytes): 0; -SC_EACCES (token refused), -SC_ENOENT (not
 * held), -SC_EBUSY, -SC_EPROTO (another status); or sc_block_verify's
 * error when the bytes are not content h.
 */
int sc_peer_read_take(struct sc_hasher *hs, uint32_t block_size,
		      const struct sc_hash *h,
		      const struct csi_peer_read_res *res, void *out);

#endif /* SEACACHE_PEER_SERVE_H */
