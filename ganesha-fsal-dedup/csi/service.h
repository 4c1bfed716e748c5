/* SPDX-License-Identifier: LGPL-3.0-or-later */
/*
 * The CSI service (protocol/PROTOCOL.md): program CSI_PROG version
 * CSI_VERS over a dedup store, as an sc_rpc_service for the project's RPC
 * server (seacache/rpc_transport.h).  It needs no Ganesha headers: what it
 * needs of the NFS server (exports, access, attribute invalidation) comes
 * through struct csi_service_hooks.
 *
 * Every procedure is served: HELLO (§4), LOOKUP (§7.1), GET_HASHES (§7.2),
 * READ (§7.3) with hash-only answers (TRACKER), pushes (PUSH) and
 * delegation to peers with tokens (COOP), WRITE (§7.4) with hash-only
 * blocks under proof of possession (DEDUP_WRITE), COMMIT, EVICT, STATS and
 * GET_MAP (§7.11, MAP), each after the request header checks of §5.1 in
 * their order.
 *
 * A file id on the wire is the store's inode number; a change id is
 * dstore_attr.change.
 *
 * Threading: csi_service_handle may be called from several threads at
 * once (the RPC server's workers).  Registrations, the tracker and the
 * counters are under one lock; store reads and writes of data, and the
 * hooks, run outside it.  The store may be written concurrently by others
 * (NFS): READ re-reads the attributes after the data and retries when the
 * change id moved, and a WRITE is one step against other data writes of
 * its file (dstore_write_blocks), so attrs always describe the state the
 * blocks came from (§3.3.5).
 */
#ifndef CSI_SERVICE_H
#define CSI_SERVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <seacache/rpc_transport.h>

struct dstore;
struct csi_service;

/* What the service needs of the NFS server it runs in. */
struct csi_service_hooks {
	/*
	 * LOOKUP: the root directory (inode) of the export whose pseudo
	 * path is export_path (NUL-terminated), as host may see it.  0,
	 * -ENOENT (no such export of this store) or -EACCES.
	 */
	int (*export_root)(void *ctx, const char *export_path,
			   const struct sockaddr *host, uint64_t *root);
	/*
	 * May host read (write false) or write files of this store through
	 * some export?  0, -EACCES, or -EROFS (read-only for a write).
	 */
	int (*access)(void *ctx, const struct sockaddr *host, bool write);
	/* A CSI WRITE changed file ino: the NFS server's cached attributes
	 * (and data) of it must go. */
	void (*file_changed)(void *ctx, uint64_t ino);
	void *ctx;
};

struct csi_service_config {
	uint32_t max_hosts;	  /* registrations at once; 0: 64, at most 65535 */
	uint32_t tracker_entries; /* (host, content) pairs; 0: 1 Mi */
	uint32_t lease_seconds;	  /* 0: 90 */
	uint32_t features;	  /* CSI_FEAT_* offered; granted = requested
				   * ∩ offered, less MAP without READ_HASH */
	uint32_t max_blocks;	  /* per READ/GET_HASHES/WRITE; 0: 64, ≤ 256 */
	uint32_t max_evict;	  /* notices per request; 0: 1024, ≤ 4096 */
	uint32_t max_push;	  /* pushed entries per reply; 0: 256, ≤ 1024 */
	uint32_t token_seconds;	  /* peer-token lifetime; 0: 30 */
	uint32_t used_files;	  /* files remembered per host as used (for
				   * pushes); 0: 4096.  The oldest is
				   * forgotten first: that costs pushes only */
	uint32_t push_search_ms;  /* a READ's push search stops looking
				   * after this long; 0: never */
	bool delegate_cached;	  /* delegate reads of content in the
				   * server's memory too, not only what it
				   * would read from its disk */
	/*
	 * NULL: every host may read and write every file of the store, and
	 * LOOKUP knows no export (for tools and tests without exports).
	 */
	const struct csi_service_hooks *hooks;
	/* Monotonic clock in milliseconds, for leases; NULL: CLOCK_MONOTONIC. */
	uint64_t (*clock_ms)(void *ctx);
	/* Unix time in seconds, for token expiry; NULL: CLOCK_REALTIME. */
	uint64_t (*unix_s)(void *ctx);
	void *clock_ctx;
};

/* Features this implementation can grant. */
#define CSI_SERVICE_FEATURES (CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER | \
			      CSI_FEAT_PUSH | CSI_FEAT_COOP | \
			      CSI_FEAT_DEDUP_WRITE | CSI_FEAT_MAP)

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
