// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service: its life (new, free, epoch), the table of procedures
 * and the dispatch of a call after the request header checks of §5.1,
 * and STATS.  LOOKUP, GET_HASHES, READ and GET_MAP are in
 * service_read.c, WRITE and COMMIT in service_write.c, registrations and
 * leases in service_reg.c, the helpers they share in service_util.c;
 * service_int.h holds what they share.  See service.h for scope and
 * threading, README.md for which file calls which.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "service_int.h"

#define COUNTER_NAME(id, name) [id] = name,

static const char *const host_ctr_names[C_HOST_COUNT] = {
	HOST_COUNTERS(COUNTER_NAME)
};

static const char *const global_ctr_names[G_COUNT] = {
	GLOBAL_COUNTERS(COUNTER_NAME)
};

struct csi_service *csi_service_new(struct dstore *ds,
				    const struct csi_service_config *cfg)
{
	struct csi_service *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return NULL;
	svc->ds = ds;
	svc->cfg = *cfg;
	if (!svc->cfg.max_hosts)
		svc->cfg.max_hosts = SC_CSI_MAX_HOSTS_DEFAULT;
	if (svc->cfg.max_hosts > SC_TRACKER_MAX_HOSTS)
		svc->cfg.max_hosts = SC_TRACKER_MAX_HOSTS;
	if (!svc->cfg.tracker_entries)
		svc->cfg.tracker_entries = SC_CSI_TRACKER_ENTRIES_DEFAULT;
	if (!svc->cfg.tracker_host_percent ||
	    svc->cfg.tracker_host_percent > SC_CSI_TRACKER_HOST_PERCENT_MAX)
		svc->cfg.tracker_host_percent =
			SC_CSI_TRACKER_HOST_PERCENT_DEFAULT;
	if (!svc->cfg.max_hosts_per_addr)
		svc->cfg.max_hosts_per_addr = SC_CSI_HOSTS_PER_ADDR_DEFAULT;
	if (!svc->cfg.lease_seconds)
		svc->cfg.lease_seconds = SC_CSI_LEASE_S_DEFAULT;
	if (!svc->cfg.max_blocks)
		svc->cfg.max_blocks = SC_CSI_MAX_BLOCKS_DEFAULT;
	if (svc->cfg.max_blocks > CSI_MAX_BLOCKS)
		svc->cfg.max_blocks = CSI_MAX_BLOCKS;
	if (!svc->cfg.max_evict)
		svc->cfg.max_evict = SC_CSI_MAX_EVICT_DEFAULT;
	if (svc->cfg.max_evict > CSI_MAX_EVICT)
		svc->cfg.max_evict = CSI_MAX_EVICT;
	if (!svc->cfg.max_push)
		svc->cfg.max_push = SC_CSI_MAX_PUSH_DEFAULT;
	if (svc->cfg.max_push > CSI_MAX_PUSH)
		svc->cfg.max_push = CSI_MAX_PUSH;
	if (!svc->cfg.token_seconds)
		svc->cfg.token_seconds = SC_CSI_TOKEN_S_DEFAULT;
	if (svc->cfg.token_seconds > SC_PEER_TOKEN_MAX_AHEAD)
		svc->cfg.token_seconds = SC_PEER_TOKEN_MAX_AHEAD;
	if (!svc->cfg.peer_failures ||
	    svc->cfg.peer_failures > SC_CSI_PEER_FAILURES_MAX)
		svc->cfg.peer_failures = SC_CSI_PEER_FAILURES_DEFAULT;
	if (!svc->cfg.peer_suspend_seconds ||
	    svc->cfg.peer_suspend_seconds > SC_CSI_PEER_SUSPEND_S_MAX)
		svc->cfg.peer_suspend_seconds = SC_CSI_PEER_SUSPEND_S_DEFAULT;
	if (!svc->cfg.used_files)
		svc->cfg.used_files = SC_CSI_USED_FILES_DEFAULT;
	if (cfg->hooks)
		svc->hooks = *cfg->hooks;
	svc->cfg.hooks = NULL;
	svc->cfg.features &= CSI_SERVICE_FEATURES;
	/* a store just opened has its index on disk: pushes probe first */
	svc->push_slow = svc->cfg.push_search_ms != 0;
	svc->block_size = dstore_block_size(ds);
	svc->epoch = svc_random_nonzero();
	sc_prng_seed(&svc->pick, svc->epoch);
	pthread_mutex_init(&svc->lock, NULL);
	svc->tracker = sc_tracker_new(svc->cfg.tracker_entries,
				       svc->cfg.tracker_host_percent);
	svc->hosts = calloc(svc->cfg.max_hosts, sizeof(*svc->hosts));
	if (!sc_block_size_valid(svc->block_size) || !svc->epoch ||
	    !svc->tracker || !svc->hosts) {
		csi_service_free(svc);
		return NULL;
	}
	return svc;
}

void csi_service_free(struct csi_service *svc)
{
	unsigned int i;

	if (!svc)
		return;
	for (i = 0; svc->hosts && i < svc->cfg.max_hosts; i++) {
		svc_used_clear(&svc->hosts[i]);
		sc_mac_free(svc->hosts[i].token_mac);
	}
	sc_tracker_free(svc->tracker);
	free(svc->hosts);
	pthread_mutex_destroy(&svc->lock);
	free(svc);
}

uint64_t csi_service_epoch(const struct csi_service *svc)
{
	return svc->epoch;
}

static int rpc_handle(void *ctx, struct sc_rpc_request *rq)
{
	return csi_service_handle(ctx, rq);
}

struct sc_rpc_service csi_service_rpc(struct csi_service *svc)
{
	struct sc_rpc_service s = { CSI_PROG, rpc_handle, svc };

	return s;
}

/* ---- STATS ---- */

static struct csi_bytes name_bytes(const char *s)
{
	struct csi_bytes b = { (const uint8_t *)s, (uint32_t)strlen(s) };

	return b;
}

static int do_stats(struct csi_service *svc, struct sc_rpc_request *rq,
		    const struct host_ref *hr)
{
	const struct csi_stats_args *a = rq->args;
	struct csi_stats_res *r = rq->res;
	struct sc_tracker_stats ts;
	struct csi_counter *c;
	uint8_t *name;
	uint32_t i, k, n = 0, nh = 0;

	(void)hr;		/* no header: no registration */
	svc->gctr[G_STATS_CALLS]++;
	svc_reap_lapsed(svc, svc_now_ms(svc));
	sc_tracker_get_stats(svc->tracker, &ts);
	c = sc_rpc_req_alloc(rq, (C_HOST_COUNT + G_COUNT + 6) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (k = 0; k < C_HOST_COUNT; k++) {
		c[n].name = name_bytes(host_ctr_names[k]);
		c[n++].value = svc->total[k];
	}
	for (k = 0; k < G_COUNT; k++) {
		c[n].name = name_bytes(global_ctr_names[k]);
		c[n++].value = svc->gctr[k];
	}
	c[n].name = name_bytes("hosts.registered");
	c[n++].value = svc->nhosts;
	c[n].name = name_bytes("tracker.entries");
	c[n++].value = ts.entries;
	c[n].name = name_bytes("tracker.capacity");
	c[n++].value = ts.capacity;
	c[n].name = name_bytes("tracker.forgotten");
	c[n++].value = ts.forgotten;
	c[n].name = name_bytes("tracker.over_quota");
	c[n++].value = ts.over_quota;
	c[n].name = name_bytes("tracker.host_quota");
	c[n++].value = ts.host_quota;
	r->status = CSI_OK;
	r->epoch = svc->epoch;
	r->counters = c;
	r->ncounters = n;
	if (!a->per_host || !svc->nhosts)
		return 0;
	nh = svc->nhosts < CSI_MAX_HOSTS ? svc->nhosts : CSI_MAX_HOSTS;
	r->hosts = sc_rpc_req_alloc(rq, nh * sizeof(*r->hosts));
	if (!r->hosts)
		return -ENOMEM;
	for (i = 0; i < svc->cfg.max_hosts && r->nhosts < nh; i++) {
		struct svc_host *h = &svc->hosts[i];
		struct csi_host_stats *hs = &r->hosts[r->nhosts];

		if (!h->id)
			continue;
		c = sc_rpc_req_alloc(rq, (C_HOST_COUNT + 1) * sizeof(*c));
		if (!c)
			return -ENOMEM;
		for (k = 0; k < C_HOST_COUNT; k++) {
			c[k].name = name_bytes(host_ctr_names[k]);
			c[k].value = h->ctr[k];
		}
		c[k].name = name_bytes("tracker.entries");
		c[k].value = sc_tracker_host_entries(svc->tracker,
						     slot_of(svc, h));
		hs->host = h->id;
		/*
		 * A copy: the reply is encoded after the lock is dropped,
		 * when a HELLO may already reuse this slot.
		 */
		name = sc_rpc_req_alloc(rq, h->name_len ? h->name_len : 1);
		if (!name)
			return -ENOMEM;
		memcpy(name, h->name, h->name_len);
		hs->host_name.p = name;
		hs->host_name.len = h->name_len;
		hs->counters = c;
		hs->ncounters = C_HOST_COUNT + 1;
		r->nhosts++;
	}
	return 0;
}

/* ---- HELLO, EVICT ---- */

static int do_hello(struct csi_service *svc, struct sc_rpc_request *rq,
		    const struct host_ref *hr)
{
	(void)hr;		/* no header: no registration */
	return svc_hello(svc, rq->args, rq->res, rq->peer);
}

/* Its header's notices, which svc_check_hdr applied, are all it carries. */
static int do_evict(struct csi_service *svc, struct sc_rpc_request *rq,
		    const struct host_ref *hr)
{
	(void)svc;
	(void)hr;
	((struct csi_evict_res *)rq->res)->status = CSI_OK;
	return 0;
}

/* ---- the procedure table and dispatch ---- */

/* How the dispatcher serves a procedure. */
enum svc_kind {
	SVC_UNKNOWN,	/* no such procedure (a hole in the table): SYSTEM_ERR */
	SVC_VOID,	/* NULL: nothing to do, not even the lock */
	SVC_LOCKED,	/* no request header: after its access check (the
			 * exports' admission only), run whole under the
			 * lock, counting itself server-wide */
	SVC_HOST,	/* a request header (§3.3.4): the checks of §5.1,
			 * counted for its host, run without the lock */
};

/*
 * One row per procedure, as Ganesha's optabv4[] has per NFSv4 operation.
 * For SVC_HOST the dispatcher runs, in this order: the header checks
 * (svc_check_hdr), the calls counter, check, the access check, run.
 */
struct svc_proc {
	enum svc_kind kind;
	size_t hdr_off;		/* SVC_HOST: the header's offset in args */
	enum svc_ctr calls;	/* SVC_HOST: the host's calls counter */
	enum svc_access access;	/* SVC_HOST: what it needs (§7 "Access") */
	/*
	 * SVC_HOST with access: the offset in args of the file whose mode
	 * decides too, as NFS READ and WRITE check it; 0: the export's
	 * admission alone (COMMIT, as NFS's).
	 */
	size_t file_off;
	svc_check_fn *check;	/* SVC_HOST: NULL when it has none */
	svc_run_fn *run;
};

#define HDR_IN(args_type) \
	.kind = SVC_HOST, .hdr_off = offsetof(struct args_type, hdr)

static const struct svc_proc svc_procs[] = {
	[CSI_PROC_NULL] = { .kind = SVC_VOID },
	/* registration and STATS: a caller some export admits */
	[CSI_PROC_HELLO] = { .kind = SVC_LOCKED, .access = SVC_ACCESS_READ,
			     .run = do_hello },
	[CSI_PROC_LOOKUP] = {
		HDR_IN(csi_lookup_args), .calls = C_LOOKUP_CALLS,
		/* access is the named export's, asked in its walk */
		.access = SVC_ACCESS_NONE,
		.run = svc_lookup,
	},
	[CSI_PROC_GET_HASHES] = {
		HDR_IN(csi_gethashes_args), .calls = C_GH_CALLS,
		.access = SVC_ACCESS_READ,
		.file_off = offsetof(struct csi_gethashes_args, file),
		.check = svc_gethashes_check, .run = svc_gethashes,
	},
	[CSI_PROC_READ] = {
		HDR_IN(csi_read_args), .calls = C_READ_CALLS,
		.access = SVC_ACCESS_READ,
		.file_off = offsetof(struct csi_read_args, file),
		.check = svc_read_check, .run = svc_read,
	},
	[CSI_PROC_WRITE] = {
		HDR_IN(csi_write_args), .calls = C_WRITE_CALLS,
		.access = SVC_ACCESS_WRITE,
		.file_off = offsetof(struct csi_write_args, file),
		.check = svc_write_check, .run = svc_write,
	},
	[CSI_PROC_COMMIT] = {
		HDR_IN(csi_commit_args), .calls = C_COMMIT_CALLS,
		.access = SVC_ACCESS_WRITE,
		.run = svc_commit,
	},
	[CSI_PROC_EVICT] = {
		HDR_IN(csi_evict_args), .calls = C_EVICT_CALLS,
		/* it keeps a lease alive: only for a caller still admitted */
		.access = SVC_ACCESS_READ,
		.run = do_evict,
	},
	[CSI_PROC_STATS] = { .kind = SVC_LOCKED, .access = SVC_ACCESS_READ,
			     .run = do_stats },
	[CSI_PROC_GET_MAP] = {
		HDR_IN(csi_getmap_args), .calls = C_GM_CALLS,
		/*
		 * read access, asked by the call itself, each file's entry
		 * answering it: the call is answered CSI_OK (§7.11)
		 */
		.access = SVC_ACCESS_NONE,
		.check = svc_getmap_check, .run = svc_getmap,
	},
	[CSI_PROC_PEER_REPORT] = {
		HDR_IN(csi_peer_report_args), .calls = C_PEER_REPORT_CALLS,
		.access = SVC_ACCESS_NONE,
		.check = svc_peer_report_check, .run = svc_peer_report,
	},
};

#define SVC_NPROCS (sizeof(svc_procs) / sizeof(svc_procs[0]))

/*
 * The access check of an SVC_HOST procedure (§7 "Access"): the exports'
 * admission into who, then the mode of its file, if it names one.  A
 * file that cannot be read is the procedure's to answer (STALE, ...).
 */
static uint32_t proc_access(struct csi_service *svc,
			    const struct svc_proc *op,
			    const struct sc_rpc_request *rq,
			    struct csi_callers *who)
{
	bool write = op->access == SVC_ACCESS_WRITE;
	struct dstore_attr a;
	uint32_t st;
	uint64_t ino;

	st = svc_access_check(svc, rq, NULL, write, who);
	if (st != CSI_OK || !op->file_off || who->unchecked)
		return st;
	ino = *(const uint64_t *)((const char *)rq->args + op->file_off);
	if (svc_file_attr(svc, ino, &a) != CSI_OK)
		return CSI_OK;
	return svc_file_open_to(who, &a, write);
}

int csi_service_handle(struct csi_service *svc, struct sc_rpc_request *rq)
{
	const struct svc_proc *op;
	const struct csi_reqhdr *hdr;
	struct svc_host *h = NULL;
	struct csi_callers who;
	struct host_ref hr;
	uint32_t st;
	int rc;

	if (!rq->proc || rq->proc->prog != CSI_PROG ||
	    rq->proc->proc >= SVC_NPROCS)
		return -EINVAL;
	op = &svc_procs[rq->proc->proc];
	switch (op->kind) {
	case SVC_UNKNOWN:
		return -EINVAL;
	case SVC_VOID:
		return 0;
	case SVC_LOCKED:
		/* the hook runs without the lock, as for the others */
		if (op->access != SVC_ACCESS_NONE &&
		    svc_access_check(svc, rq, NULL, false, &who) != CSI_OK) {
			pthread_mutex_lock(&svc->lock);
			svc->gctr[G_ADMIT_DENIED]++;
			pthread_mutex_unlock(&svc->lock);
			*(uint32_t *)rq->res = CSI_ERR_ACCESS;
			return 0;
		}
		pthread_mutex_lock(&svc->lock);
		rc = op->run(svc, rq, NULL);
		pthread_mutex_unlock(&svc->lock);
		return rc;
	case SVC_HOST:
		break;
	}
	hdr = (const struct csi_reqhdr *)((const char *)rq->args + op->hdr_off);
	pthread_mutex_lock(&svc->lock);
	st = svc_check_hdr(svc, hdr, rq->peer, &h);
	if (st == CSI_OK) {
		hr.h = h;
		hr.id = h->id;
		hr.slot = slot_of(svc, h);
		count(svc, h, op->calls, 1);
	}
	pthread_mutex_unlock(&svc->lock);
	/* Every result starts with its status (a void arm otherwise). */
	if (st != CSI_OK) {
		*(uint32_t *)rq->res = st;
		return 0;
	}
	if (op->check)
		st = op->check(svc, rq, &hr);
	if (st == CSI_OK && op->access != SVC_ACCESS_NONE)
		st = proc_access(svc, op, rq, &who);
	if (st == CSI_OK) {
		rc = op->run(svc, rq, &hr);
	} else {
		*(uint32_t *)rq->res = st;
		rc = 0;
	}
	if (!rc && *(uint32_t *)rq->res == CSI_ERR_ACCESS &&
	    svc_lock_if_host_valid(svc, &hr)) {
		count(svc, hr.h, C_ACCESS_DENIED, 1);
		pthread_mutex_unlock(&svc->lock);
	}
	return rc;
}
