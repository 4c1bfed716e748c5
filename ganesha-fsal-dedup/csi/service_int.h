/* SPDX-License-Identifier: LGPL-3.0-or-later */
/*
 * The CSI service's parts shared by service.c (life, the procedure table
 * and dispatch, STATS), service_read.c (LOOKUP, GET_HASHES, READ,
 * GET_MAP), service_write.c (WRITE, COMMIT), service_reg.c
 * (registrations, leases) and service_util.c (randomness, clocks, file
 * and access helpers), in the order they call each other: each calls
 * only those after it (see README.md).  Not a public interface.
 */
#ifndef CSI_SERVICE_INT_H
#define CSI_SERVICE_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uthash.h>

#include <seacache/csi_codec.h>
#include <seacache/peer_token.h>
#include <seacache/prng.h>

#include "dstore.h"
#include "service.h"
#include "tracker.h"

/*
 * Counters kept per host and in total (counts since the epoch began), and
 * server-wide only: each listed once, with its STATS name.
 */
#define HOST_COUNTERS(X)						\
	X(C_READ_CALLS, "read.calls")					\
	X(C_READ_DATA_BLOCKS, "read.data_blocks")			\
	X(C_READ_DATA_BYTES, "read.data_bytes")				\
	X(C_READ_HASH_ONLY, "read.hash_only_blocks")			\
	X(C_READ_HOLES, "read.hole_blocks")				\
	X(C_READ_PROBE_BLOCKS, "read.probe_blocks")			\
	X(C_GH_CALLS, "get_hashes.calls")				\
	X(C_GH_BLOCKS, "get_hashes.blocks")				\
	X(C_GM_CALLS, "get_map.calls")					\
	X(C_GM_BLOCKS, "get_map.blocks")				\
	X(C_READ_DELEGATED, "read.delegated_blocks")			\
	X(C_PUSH_ENTRIES, "read.pushed_entries")			\
	X(C_DELEG_TARGETED, "peer.delegations_served")			\
	X(C_WRITE_CALLS, "write.calls")					\
	X(C_WRITE_DATA_BLOCKS, "write.data_blocks")			\
	X(C_WRITE_DATA_BYTES, "write.data_bytes")			\
	X(C_WRITE_HASH_BLOCKS, "write.hash_blocks")			\
	X(C_WRITE_NEED_DATA, "write.need_data")				\
	X(C_LOOKUP_CALLS, "lookup.calls")				\
	X(C_COMMIT_CALLS, "commit.calls")				\
	X(C_EVICT_CALLS, "evict.calls")					\
	X(C_NOTICES_RECEIVED, "evict.notices")				\
	X(C_NOTICES_APPLIED, "evict.notices_applied")			\
	X(C_PEER_REPORT_CALLS, "peer_report.calls")			\
	X(C_PEER_REPORTS_IGNORED, "peer_report.ignored")		\
	X(C_PEER_FAILED, "peer.failed_delegations")			\
	X(C_PEER_SUSPENDED, "peer.suspensions")				\
	X(C_ACCESS_DENIED, "errors.access")

#define GLOBAL_COUNTERS(X)						\
	X(G_HELLO_CALLS, "hello.calls")					\
	X(G_HOSTS_REPLACED, "hosts.replaced")				\
	X(G_HELLO_TAKEOVER, "errors.hello_takeover")			\
	X(G_HELLO_ADDR_FULL, "errors.hello_addr_full")			\
	X(G_ADMIT_DENIED, "errors.not_admitted")			\
	X(G_HOSTS_EXPIRED, "hosts.expired")				\
	X(G_BAD_EPOCH, "errors.bad_epoch")				\
	X(G_UNKNOWN_HOST, "errors.unknown_host")			\
	X(G_TOO_BIG_NOTICES, "errors.too_many_notices")			\
	X(G_HASH_MISMATCH, "errors.write_hash_mismatch")		\
	X(G_PUSH_SEARCHES_CUT, "push.searches_cut")			\
	X(G_PUSH_SEARCHES_SKIPPED, "push.searches_skipped")		\
	X(G_STATS_CALLS, "stats.calls")

#define COUNTER_ENUM(id, name) id,

enum svc_ctr { HOST_COUNTERS(COUNTER_ENUM) C_HOST_COUNT };
enum svc_gctr { GLOBAL_COUNTERS(COUNTER_ENUM) G_COUNT };

/* A file a registration used (§7 "Used files"): pushes may name it. */
struct used_file {
	uint64_t ino;
	UT_hash_handle hh;
};

struct svc_host {
	uint64_t id;			/* 0: free slot */
	uint8_t uuid[CSI_HOST_UUID_SIZE];
	char name[CSI_MAX_NAME];
	uint32_t name_len;
	uint32_t features;		/* granted */
	bool tracked;
	bool addr_known;
	uint8_t addr[16];		/* IPv4 as ::ffff:a.b.c.d */
	struct csi_peer_addr peer;	/* where it serves peer reads */
	struct sc_mac *token_mac;	/* keyed with its peer_secret */
	struct used_file *used;		/* insertion order: oldest first */
	uint32_t nused;
	uint64_t last_ms;		/* last counted request */
	/* delegations to it reported failed (§7.12), since fail_ms */
	uint32_t peer_failures;
	uint64_t peer_fail_ms;		/* the first of them */
	uint64_t peer_off_until_ms;	/* no delegation to it before */
	/* the counted reports' tokens (a MAC's first bytes), against replays */
	uint64_t peer_fail_seen[SC_CSI_PEER_FAILURES_MAX];
	uint32_t peer_fail_next;
	uint64_t ctr[C_HOST_COUNT];
};

/* A call's registration: valid while hosts[slot - 1].id == id. */
struct host_ref {
	struct svc_host *h;
	uint64_t id;
	uint16_t slot;
};

struct csi_service {
	struct dstore *ds;
	struct csi_service_config cfg;
	struct csi_service_hooks hooks;
	uint32_t block_size;
	uint64_t epoch;
	pthread_mutex_t lock;		/* everything below */
	struct sc_tracker *tracker;
	struct svc_host *hosts;		/* cfg.max_hosts slots */
	uint32_t nhosts;		/* registered now */
	struct sc_prng pick;		/* which holder a delegation names */
	uint64_t total[C_HOST_COUNT];
	uint64_t gctr[G_COUNT];
	/* the last push search ran out of time: probe, see push_search_due */
	bool push_slow;
	uint64_t push_probe_at;		/* ms: no probe before */
};

/* ---- registrations: what every part uses ---- */

static inline uint16_t slot_of(const struct csi_service *svc,
			       const struct svc_host *h)
{
	return (uint16_t)(h - svc->hosts + 1);
}

static inline void count(struct csi_service *svc, struct svc_host *h,
			 enum svc_ctr c, uint64_t v)
{
	h->ctr[c] += v;
	svc->total[c] += v;
}

static inline bool host_valid(const struct host_ref *r)
{
	return r->h->id == r->id;
}

/*
 * What a procedure needs of §7 "Access" (svc_access_check) before it
 * touches a file: the dispatcher asks after the procedure's own argument
 * checks (svc_check_fn), so the status of a call that fails several
 * checks stays the one §5.1 and §7 order first.
 */
enum svc_access { SVC_ACCESS_NONE, SVC_ACCESS_READ, SVC_ACCESS_WRITE };

/* What a caller asks of a file's mode, as POSIX's R_OK, W_OK and X_OK. */
enum svc_may { SVC_MAY_EXEC = 1, SVC_MAY_WRITE = 2, SVC_MAY_READ = 4 };

/*
 * A procedure's checks of its arguments that come before its access
 * check: CSI_OK or the status to answer.  Without the lock.
 */
typedef uint32_t svc_check_fn(struct csi_service *svc,
			      const struct sc_rpc_request *rq,
			      const struct host_ref *hr);
/*
 * A procedure's work: fills rq->res; 0 or a negative errno (SYSTEM_ERR).
 * A procedure with a request header runs without the lock, with its
 * caller's registration in hr; one without runs under it (hr NULL).
 */
typedef int svc_run_fn(struct csi_service *svc, struct sc_rpc_request *rq,
		       const struct host_ref *hr);

/* service_read.c */
svc_run_fn svc_lookup;
svc_check_fn svc_gethashes_check;
svc_run_fn svc_gethashes;
svc_check_fn svc_read_check;
svc_run_fn svc_read;
svc_check_fn svc_getmap_check;
svc_run_fn svc_getmap;
svc_check_fn svc_peer_report_check;
svc_run_fn svc_peer_report;

/* service_write.c */
svc_check_fn svc_write_check;
svc_run_fn svc_write;
svc_run_fn svc_commit;

/* service_reg.c */
void svc_used_clear(struct svc_host *h);
bool svc_used_has(const struct svc_host *h, uint64_t ino);
void svc_used_mark(struct csi_service *svc, struct svc_host *h,
		   uint64_t ino);
bool svc_lease_lapsed(const struct csi_service *svc,
		      const struct svc_host *h, uint64_t now);
unsigned int svc_reap_lapsed(struct csi_service *svc, uint64_t now);
struct svc_host *svc_host_by_id(struct csi_service *svc, uint64_t id);
int svc_hello(struct csi_service *svc, const struct csi_hello_args *a,
	      struct csi_hello_res *r, const struct sockaddr *src);
uint32_t svc_check_hdr(struct csi_service *svc, const struct csi_reqhdr *hdr,
		       const struct sockaddr *src, struct svc_host **out);
void svc_note_held(struct csi_service *svc, const struct host_ref *hr,
		   const struct sc_hash *h);

/* service_util.c */
int svc_fill_random(void *p, size_t n);
uint64_t svc_random_nonzero(void);
uint64_t svc_now_ms(const struct csi_service *svc);
uint64_t svc_now_unix(const struct csi_service *svc);
bool svc_all_zero(const uint8_t *p, size_t n);
uint32_t svc_file_status(int rc, const struct dstore_attr *a);
uint32_t svc_file_attr(struct csi_service *svc, uint64_t ino,
		       struct dstore_attr *a);
void svc_to_fileattr(const struct dstore_attr *a, struct csi_fileattr *f);
bool svc_range_ok(const struct csi_service *svc, uint64_t lbn,
		  uint32_t count);
uint32_t svc_access_check(struct csi_service *svc,
			  const struct sc_rpc_request *rq,
			  const char *export_path, bool write,
			  struct csi_callers *out);
bool svc_may(const struct csi_callers *who, const struct dstore_attr *a,
	     unsigned int want, bool owner_skip);
uint32_t svc_file_open_to(const struct csi_callers *who,
			  const struct dstore_attr *a, bool write);
/*
 * Takes the lock back after a part run without it, if hr's host still
 * has that registration: true with the lock held, false without it when
 * a HELLO replaced the registration or its lease ended meanwhile.
 */
bool svc_lock_if_host_valid(struct csi_service *svc,
			    const struct host_ref *hr);

#endif /* CSI_SERVICE_INT_H */
