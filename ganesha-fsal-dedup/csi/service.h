/* SPDX-License-Identifier: LGPL-3.0-or-later */
/*
 * The CSI service (protocol/PROTOCOL.md): program CSI_PROG version
 * CSI_VERS over a dedup store, as an sc_rpc_service for the project's RPC
 * server (seacache/rpc_transport.h).  It needs no Ganesha headers.
 *
 * What it serves:
 *   NULL, HELLO (§4), STATS (§7.9);
 *   the request header of every call that carries one, in the order of
 *   §5.1 (BAD_EPOCH, UNKNOWN_HOST, TOO_BIG, notices applied, lease renewed);
 *   EVICT (§7.6), GET_HASHES (§7.2), READ (§7.3) for the Baseline, Read#
 *   and W/Tracker variants, COMMIT (§7.5: a store sync).
 * Not yet: pushes, delegation, WRITE, LOOKUP.  Only READ_HASH and TRACKER
 * are ever granted, so ACCEPT_PUSH and ACCEPT_DELEG get SC_ERR_NOTSUPP as
 * for any feature not granted (§6); WRITE answers SC_ERR_NOTSUPP (after the
 * header checks, so its notices are applied); LOOKUP answers SC_ERR_NOENT
 * (no exports are configured here).  Exports and access (§7 "Access") are
 * not checked: every file of the store is served.
 *
 * A file id on the wire is the store's inode number; a change id is
 * dstore_attr.change.
 *
 * Threading: NOT thread-safe.  Every entry point (the handler included)
 * must be called from one thread at a time; the RPC server runs handlers
 * on its single loop thread, which satisfies that.  The store itself may
 * be written concurrently by others (NFS): READ and GET_HASHES re-read the
 * attributes after the blocks and retry when the change id moved, so the
 * attrs always describe the state the blocks came from (§3.3.5).
 */
#ifndef CSI_SERVICE_H
#define CSI_SERVICE_H

#include <stdint.h>
#include <sys/socket.h>

#include <seacache/rpc_transport.h>

struct dstore;
struct csi_service;

struct csi_service_config {
	uint32_t max_hosts;	  /* registrations at once; 0: 64, at most 65535 */
	uint32_t tracker_entries; /* (host, content) pairs; 0: 1 Mi */
	uint32_t lease_seconds;	  /* 0: 90 */
	uint32_t features;	  /* CSI_FEAT_* offered; granted = requested
				   * ∩ offered ∩ implemented (READ_HASH,
				   * TRACKER) */
	uint32_t max_blocks;	  /* per READ/GET_HASHES; 0: 64, ≤ 256 */
	uint32_t max_evict;	  /* notices per request; 0: 1024, ≤ 4096 */
	/* Monotonic clock in milliseconds, for leases; NULL: CLOCK_MONOTONIC. */
	uint64_t (*clock_ms)(void *ctx);
	void *clock_ctx;
};

/* Features this implementation can grant. */
#define CSI_SERVICE_FEATURES (CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER)

/*
 * A service over ds (not owned; must outlive the service), with a fresh
 * random non-zero epoch.  NULL on failure (memory, no randomness, bad
 * block size).
 */
struct csi_service *csi_service_new(struct dstore *ds,
				    const struct csi_service_config *cfg);
void csi_service_free(struct csi_service *svc);

/* The sc_rpc_service to give sc_rpc_server_new. */
struct sc_rpc_service csi_service_rpc(struct csi_service *svc);

uint64_t csi_service_epoch(const struct csi_service *svc);

/*
 * Serve one call from rq->peer (NULL: unknown).  HELLO binds the
 * registration to the caller's IP address and later calls carrying its
 * host id are accepted only from that address (§4 item 4); a registration
 * made from an unknown address accepts any.  Returns 0, or a negative
 * errno for SYSTEM_ERR.
 */
int csi_service_handle(struct csi_service *svc, struct sc_rpc_request *rq);

#endif /* CSI_SERVICE_H */
