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

/*
 * The groups a caller brings to the access checks: AUTH_SYS's 16, or the
 * server's own list of them (Manage_Gids) up to this many; the rest are
 * left out, which can only narrow what a caller may do.
 */
#define CSI_CALLER_MAX_GIDS 64u
/* The exports of one store that admit one call, at most (others: ignored). */
#define CSI_MAX_CALLERS 8u

/* A caller as one export sees it: after its squash (NFS's op_ctx->creds). */
struct csi_caller {
	uint32_t uid;
	uint32_t gid;
	uint32_t ngids;
	uint32_t gids[CSI_CALLER_MAX_GIDS];
};

/*
 * Whom a call is, to the exports that admit it: n callers, one per export;
 * a file is open to the call when one of them may (§7 "Access").  With
 * no hooks every call is `unchecked`: no file is closed to it.
 */
struct csi_callers {
	bool unchecked;
	uint32_t n;
	struct csi_caller c[CSI_MAX_CALLERS];
};

/* What the service needs of the NFS server it runs in. */
struct csi_service_hooks {
	/*
	 * The exports of this store that admit the call from host (address
	 * and port) with credential cred (NULL: AUTH_NONE) for reading, or
	 * for writing when write is set, exactly as the NFS server admits
	 * the same call: its client list and access type, PrivilegedPort,
	 * SecType, and the caller as its Squash makes it, one per export in
	 * out.  With export_path (NUL-terminated; LOOKUP) only the export
	 * of that pseudo path.  0 (out->n > 0); -ENOENT (no export of this
	 * store has export_path), -EACCES (none admits the call), -EROFS
	 * (only read-only ones admit a write).  Every export of a store
	 * shows its whole tree, from DSTORE_ROOT_INO.
	 */
	int (*admit)(void *ctx, const char *export_path,
		     const struct sockaddr *host,
		     const struct sc_rpc_auth_sys *cred, bool write,
		     struct csi_callers *out);
	/* A CSI WRITE changed file ino: the NFS server's cached attributes
	 * (and data) of it must go. */
	void (*file_changed)(void *ctx, uint64_t ino);
	void *ctx;
};

struct csi_service_config {
	uint32_t max_hosts;	  /* registrations at once; 0: 64, at most 65535 */
	uint32_t tracker_entries; /* (host, content) pairs; 0: 1 Mi */
	uint32_t tracker_host_percent; /* one host's share of them; 0: 25 */
	uint32_t max_hosts_per_addr; /* registrations from one address at
				      * once; 0: 16 */
	uint32_t lease_seconds;	  /* 0: 90 */
	uint32_t features;	  /* CSI_FEAT_* offered; granted = requested
				   * ∩ offered, less MAP without READ_HASH
				   * and PEER_REPORT without COOP */
	uint32_t max_blocks;	  /* per READ/GET_HASHES/WRITE; 0: 64, ≤ 256 */
	uint32_t max_evict;	  /* notices per request; 0: 1024, ≤ 4096 */
	uint32_t max_push;	  /* pushed entries per reply; 0: 256, ≤ 1024 */
	uint32_t token_seconds;	  /* peer-token lifetime; 0: 30 */
	uint32_t peer_failures;	  /* reported failures that suspend a peer
				   * (§7.12); 0: 8, at most 32 */
	uint32_t peer_suspend_seconds; /* how long; 0: 60 */
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
			      CSI_FEAT_DEDUP_WRITE | CSI_FEAT_MAP | \
			      CSI_FEAT_PEER_REPORT)

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
