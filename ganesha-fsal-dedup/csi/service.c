// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service: its life (new, free, epoch), the dispatch of a call
 * after the request header checks of §5.1, STATS, and the file helpers
 * the procedures share.  Registrations and leases are in service_reg.c,
 * LOOKUP, GET_HASHES and READ in service_read.c, WRITE and COMMIT in
 * service_write.c; service_int.h holds what they share.  See service.h
 * for scope and threading.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "service_int.h"

#define COUNTER_NAME(id, name) [id] = name,

static const char *const host_ctr_names[C_HOST_COUNT] = {
	HOST_COUNTERS(COUNTER_NAME)
};

static const char *const global_ctr_names[G_COUNT] = {
	GLOBAL_COUNTERS(COUNTER_NAME)
};

int svc_fill_random(void *p, size_t n)
{
	uint8_t *b = p;
	ssize_t got;

	while (n) {
		got = getrandom(b, n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -errno;
		b += got;
		n -= (size_t)got;
	}
	return 0;
}

uint64_t svc_random_nonzero(void)
{
	uint64_t v = 0;

	while (!v)
		if (svc_fill_random(&v, sizeof(v)))
			return 0;
	return v;
}

uint64_t svc_now_ms(const struct csi_service *svc)
{
	struct timespec ts;

	if (svc->cfg.clock_ms)
		return svc->cfg.clock_ms(svc->cfg.clock_ctx);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t svc_now_unix(const struct csi_service *svc)
{
	struct timespec ts;

	if (svc->cfg.unix_s)
		return svc->cfg.unix_s(svc->cfg.clock_ctx);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

struct csi_service *csi_service_new(struct dstore *ds,
				    const struct csi_service_config *cfg)
{
	struct csi_service *svc = calloc(1, sizeof(*svc));

	if (!svc)
		return NULL;
	svc->ds = ds;
	svc->cfg = *cfg;
	if (!svc->cfg.max_hosts)
		svc->cfg.max_hosts = 64;
	if (svc->cfg.max_hosts > SC_TRACKER_MAX_HOSTS)
		svc->cfg.max_hosts = SC_TRACKER_MAX_HOSTS;
	if (!svc->cfg.tracker_entries)
		svc->cfg.tracker_entries = 1u << 20;
	if (!svc->cfg.lease_seconds)
		svc->cfg.lease_seconds = 90;
	if (!svc->cfg.max_blocks)
		svc->cfg.max_blocks = 64;
	if (svc->cfg.max_blocks > CSI_MAX_BLOCKS)
		svc->cfg.max_blocks = CSI_MAX_BLOCKS;
	if (!svc->cfg.max_evict)
		svc->cfg.max_evict = 1024;
	if (svc->cfg.max_evict > CSI_MAX_EVICT)
		svc->cfg.max_evict = CSI_MAX_EVICT;
	if (!svc->cfg.max_push)
		svc->cfg.max_push = 256;
	if (svc->cfg.max_push > CSI_MAX_PUSH)
		svc->cfg.max_push = CSI_MAX_PUSH;
	if (!svc->cfg.token_seconds)
		svc->cfg.token_seconds = 30;
	if (svc->cfg.token_seconds > SC_PEER_TOKEN_MAX_AHEAD)
		svc->cfg.token_seconds = SC_PEER_TOKEN_MAX_AHEAD;
	if (!svc->cfg.used_files)
		svc->cfg.used_files = 4096;
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
	svc->tracker = sc_tracker_new(svc->cfg.tracker_entries);
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

/* ---- files: what the procedures share ---- */

/* The status for a store answer about file ino (rc) with attributes a. */
uint32_t svc_file_status(int rc, const struct dstore_attr *a)
{
	if (rc == -ENOENT || rc == -ESTALE)
		return CSI_ERR_STALE;
	if (rc == -ENOSPC)
		return CSI_ERR_NOSPC;
	if (rc == -EISDIR || rc == -EINVAL)
		return CSI_ERR_INVAL;
	if (rc)
		return CSI_ERR_IO;
	return a->type == DSTORE_REG ? CSI_OK : CSI_ERR_INVAL;
}

uint32_t svc_file_attr(struct csi_service *svc, uint64_t ino,
		       struct dstore_attr *a)
{
	return svc_file_status(ino ? dstore_getattr(svc->ds, ino, a) : -ENOENT,
			       a);
}

void svc_to_fileattr(const struct dstore_attr *a, struct csi_fileattr *f)
{
	f->file = a->ino;
	f->size = a->size;
	f->change = a->change;
}

/* (lbn + count) × B must not overflow 64 bits (§3.3.9). */
bool svc_range_ok(const struct csi_service *svc, uint64_t lbn,
		  uint32_t count)
{
	return lbn <= UINT64_MAX - count &&
	       lbn + count <= UINT64_MAX / svc->block_size;
}

/*
 * §7 "Access", through the NFS server's exports.  Called without the
 * lock (the hook may take the server's own locks).
 */
uint32_t svc_access_check(struct csi_service *svc,
			  const struct sc_rpc_request *rq, bool write)
{
	int rc;

	if (!svc->hooks.access)
		return CSI_OK;
	rc = svc->hooks.access(svc->hooks.ctx, rq->peer, write);
	return rc ? CSI_ERR_ACCESS : CSI_OK;
}

/* ---- STATS ---- */

static struct csi_bytes name_bytes(const char *s)
{
	struct csi_bytes b = { (const uint8_t *)s, (uint32_t)strlen(s) };

	return b;
}

static int do_stats(struct csi_service *svc, struct sc_rpc_request *rq)
{
	const struct csi_stats_args *a = rq->args;
	struct csi_stats_res *r = rq->res;
	struct sc_tracker_stats ts;
	struct csi_counter *c;
	uint8_t *name;
	uint32_t i, k, n = 0, nh = 0;

	svc->gctr[G_STATS_CALLS]++;
	svc_reap_lapsed(svc, svc_now_ms(svc));
	sc_tracker_get_stats(svc->tracker, &ts);
	c = sc_rpc_req_alloc(rq, (C_HOST_COUNT + G_COUNT + 4) * sizeof(*c));
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

/* ---- dispatch ---- */

/* The header of a call that carries one (§3.3.4); NULL otherwise. */
static const struct csi_reqhdr *hdr_of(const struct sc_rpc_request *rq)
{
	switch (rq->proc->proc) {
	case CSI_PROC_LOOKUP:
		return &((const struct csi_lookup_args *)rq->args)->hdr;
	case CSI_PROC_GET_HASHES:
		return &((const struct csi_gethashes_args *)rq->args)->hdr;
	case CSI_PROC_READ:
		return &((const struct csi_read_args *)rq->args)->hdr;
	case CSI_PROC_WRITE:
		return &((const struct csi_write_args *)rq->args)->hdr;
	case CSI_PROC_COMMIT:
		return &((const struct csi_commit_args *)rq->args)->hdr;
	case CSI_PROC_EVICT:
		return &((const struct csi_evict_args *)rq->args)->hdr;
	default:
		return NULL;
	}
}

/* The counter of calls of each procedure that carries a header. */
static int calls_counter(uint32_t proc)
{
	switch (proc) {
	case CSI_PROC_LOOKUP:
		return C_LOOKUP_CALLS;
	case CSI_PROC_GET_HASHES:
		return C_GH_CALLS;
	case CSI_PROC_READ:
		return C_READ_CALLS;
	case CSI_PROC_WRITE:
		return C_WRITE_CALLS;
	case CSI_PROC_COMMIT:
		return C_COMMIT_CALLS;
	default:
		return C_EVICT_CALLS;
	}
}

static int run_op(struct csi_service *svc, struct sc_rpc_request *rq,
		  const struct host_ref *hr)
{
	switch (rq->proc->proc) {
	case CSI_PROC_LOOKUP:
		return svc_lookup(svc, rq, hr);
	case CSI_PROC_GET_HASHES:
		return svc_gethashes(svc, rq, hr);
	case CSI_PROC_READ:
		return svc_read(svc, rq, hr);
	case CSI_PROC_WRITE:
		return svc_write(svc, rq, hr);
	case CSI_PROC_COMMIT:
		return svc_commit(svc, rq, hr);
	default:
		((struct csi_evict_res *)rq->res)->status = CSI_OK;
		return 0;
	}
}

int csi_service_handle(struct csi_service *svc, struct sc_rpc_request *rq)
{
	const struct csi_reqhdr *hdr;
	struct svc_host *h = NULL;
	struct host_ref hr;
	uint32_t st;
	int rc;

	if (!rq->proc || rq->proc->prog != CSI_PROG)
		return -EINVAL;
	switch (rq->proc->proc) {
	case CSI_PROC_NULL:
		return 0;
	case CSI_PROC_HELLO:
	case CSI_PROC_STATS:
		pthread_mutex_lock(&svc->lock);
		rc = rq->proc->proc == CSI_PROC_HELLO ?
		     svc_hello(svc, rq->args, rq->res, rq->peer) :
		     do_stats(svc, rq);
		pthread_mutex_unlock(&svc->lock);
		return rc;
	default:
		break;
	}
	hdr = hdr_of(rq);
	if (!hdr)
		return -EINVAL;
	pthread_mutex_lock(&svc->lock);
	st = svc_check_hdr(svc, hdr, rq->peer, &h);
	if (st == CSI_OK) {
		hr.h = h;
		hr.id = h->id;
		hr.slot = slot_of(svc, h);
		count(svc, h, calls_counter(rq->proc->proc), 1);
	}
	pthread_mutex_unlock(&svc->lock);
	if (st != CSI_OK) {
		/* Every result starts with its status (a void arm otherwise). */
		*(uint32_t *)rq->res = st;
		return 0;
	}
	rc = run_op(svc, rq, &hr);
	if (!rc && *(uint32_t *)rq->res == CSI_ERR_ACCESS &&
	    svc_relock(svc, &hr)) {
		count(svc, hr.h, C_ACCESS_DENIED, 1);
		pthread_mutex_unlock(&svc->lock);
	}
	return rc;
}
