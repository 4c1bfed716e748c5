// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service: registrations (HELLO, leases), the request header of
 * §5.1, the tracker updates of §5.2, GET_HASHES and READ over the dedup
 * store, EVICT, COMMIT and STATS.  See service.h for scope and threading.
 *
 * Registrations live in a fixed table of max_hosts slots; slot i + 1 is
 * the registration's tracker host number.  A lapsed lease is noticed
 * lazily: when its host id is used, when HELLO needs a slot, or by STATS.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <seacache/csi_codec.h>

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
	X(C_EVICT_CALLS, "evict.calls")					\
	X(C_NOTICES_RECEIVED, "evict.notices")				\
	X(C_NOTICES_APPLIED, "evict.notices_applied")

#define GLOBAL_COUNTERS(X)						\
	X(G_HELLO_CALLS, "hello.calls")					\
	X(G_HOSTS_REPLACED, "hosts.replaced")				\
	X(G_HOSTS_EXPIRED, "hosts.expired")				\
	X(G_BAD_EPOCH, "errors.bad_epoch")				\
	X(G_UNKNOWN_HOST, "errors.unknown_host")			\
	X(G_TOO_BIG_NOTICES, "errors.too_many_notices")			\
	X(G_STATS_CALLS, "stats.calls")

#define COUNTER_ENUM(id, name) id,
#define COUNTER_NAME(id, name) [id] = name,

enum svc_ctr { HOST_COUNTERS(COUNTER_ENUM) C_HOST_COUNT };
enum svc_gctr { GLOBAL_COUNTERS(COUNTER_ENUM) G_COUNT };

static const char *const host_ctr_names[C_HOST_COUNT] = {
	HOST_COUNTERS(COUNTER_NAME)
};

static const char *const global_ctr_names[G_COUNT] = {
	GLOBAL_COUNTERS(COUNTER_NAME)
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
	uint64_t last_ms;		/* last counted request */
	uint64_t tracker_entries;	/* recorded held minus evicted */
	uint64_t ctr[C_HOST_COUNT];
};

struct csi_service {
	struct dstore *ds;
	struct csi_service_config cfg;
	uint32_t block_size;
	uint64_t epoch;
	struct sc_tracker *tracker;
	struct svc_host *hosts;		/* cfg.max_hosts slots */
	uint32_t nhosts;		/* registered now */
	uint64_t total[C_HOST_COUNT];
	uint64_t gctr[G_COUNT];
};

/* Retries of a READ or GET_HASHES whose file changed while it was read. */
#define SVC_STABLE_TRIES 8

static int fill_random(void *p, size_t n)
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

static uint64_t random_nonzero(void)
{
	uint64_t v = 0;

	while (!v)
		if (fill_random(&v, sizeof(v)))
			return 0;
	return v;
}

static uint64_t now_ms(const struct csi_service *svc)
{
	struct timespec ts;

	if (svc->cfg.clock_ms)
		return svc->cfg.clock_ms(svc->cfg.clock_ctx);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
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
	svc->cfg.features &= CSI_SERVICE_FEATURES;
	svc->block_size = dstore_block_size(ds);
	svc->epoch = random_nonzero();
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
	if (!svc)
		return;
	sc_tracker_free(svc->tracker);
	free(svc->hosts);
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

/* ---- registrations ---- */

static uint16_t slot_of(const struct csi_service *svc,
			const struct svc_host *h)
{
	return (uint16_t)(h - svc->hosts + 1);
}

static void count(struct csi_service *svc, struct svc_host *h,
		  enum svc_ctr c, uint64_t v)
{
	h->ctr[c] += v;
	svc->total[c] += v;
}

/* Ends a registration: its tracker state goes, its id answers UNKNOWN_HOST. */
static void host_forget(struct csi_service *svc, struct svc_host *h)
{
	sc_tracker_drop_host(svc->tracker, slot_of(svc, h));
	memset(h, 0, sizeof(*h));
	svc->nhosts--;
}

static bool lease_lapsed(const struct csi_service *svc,
			 const struct svc_host *h, uint64_t now)
{
	return now - h->last_ms >= (uint64_t)svc->cfg.lease_seconds * 1000u;
}

/* Forgets every host whose lease lapsed; how many. */
static unsigned int reap_lapsed(struct csi_service *svc, uint64_t now)
{
	unsigned int i, n = 0;

	for (i = 0; i < svc->cfg.max_hosts; i++)
		if (svc->hosts[i].id && lease_lapsed(svc, &svc->hosts[i], now)) {
			host_forget(svc, &svc->hosts[i]);
			svc->gctr[G_HOSTS_EXPIRED]++;
			n++;
		}
	return n;
}

/* The caller's IP address as 16 bytes (IPv4 mapped); false if unknown. */
static bool addr_of(const struct sockaddr *sa, uint8_t out[16])
{
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &in4->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(out, &in6->sin6_addr, 16);
		return true;
	}
	return false;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* §3.3.3 */
static bool peer_addr_valid(const struct csi_peer_addr *a)
{
	switch (a->family) {
	case CSI_AF_NONE:
		return all_zero(a->addr, CSI_ADDR_SIZE) && a->port == 0;
	case CSI_AF_INET:
		return all_zero(a->addr + 4, CSI_ADDR_SIZE - 4) &&
		       a->port >= 1 && a->port <= 65535;
	case CSI_AF_INET6:
		return a->port >= 1 && a->port <= 65535;
	default:
		return false;
	}
}

static bool id_in_use(const struct csi_service *svc, uint64_t id)
{
	unsigned int i;

	for (i = 0; i < svc->cfg.max_hosts; i++)
		if (svc->hosts[i].id == id)
			return true;
	return false;
}

static int do_hello(struct csi_service *svc, const struct csi_hello_args *a,
		    struct csi_hello_res *r, const struct sockaddr *src)
{
	struct svc_host *h = NULL, *free_slot = NULL;
	uint64_t now = now_ms(svc), id;
	unsigned int i;

	svc->gctr[G_HELLO_CALLS]++;
	if (all_zero(a->host_uuid, CSI_HOST_UUID_SIZE) ||
	    !peer_addr_valid(&a->peer)) {
		r->status = CSI_ERR_INVAL;
		return 0;
	}
	for (i = 0; i < svc->cfg.max_hosts; i++) {
		struct svc_host *c = &svc->hosts[i];

		if (c->id && !memcmp(c->uuid, a->host_uuid, CSI_HOST_UUID_SIZE))
			h = c;
		else if (!c->id && !free_slot)
			free_slot = c;
	}
	if (h) {
		/* §4 item 6: replaces the registration of this uuid. */
		host_forget(svc, h);
		svc->gctr[G_HOSTS_REPLACED]++;
	} else if (free_slot) {
		h = free_slot;
	} else if (reap_lapsed(svc, now)) {
		for (i = 0; i < svc->cfg.max_hosts && !h; i++)
			if (!svc->hosts[i].id)
				h = &svc->hosts[i];
	}
	if (!h) {
		r->status = CSI_ERR_BUSY;
		return 0;
	}
	do {
		id = random_nonzero();
		if (!id)
			return -EIO;
	} while (id_in_use(svc, id));
	if (fill_random(r->peer_secret, sizeof(r->peer_secret)))
		return -EIO;
	/* The slot is empty (host_forget or never used): fill it. */
	h->id = id;
	memcpy(h->uuid, a->host_uuid, CSI_HOST_UUID_SIZE);
	h->name_len = a->host_name.len;
	if (a->host_name.len)
		memcpy(h->name, a->host_name.p, a->host_name.len);
	h->features = a->features & svc->cfg.features;
	h->tracked = h->features & (CSI_FEAT_TRACKER | CSI_FEAT_COOP |
				    CSI_FEAT_DEDUP_WRITE);
	h->addr_known = addr_of(src, h->addr);
	h->last_ms = now;
	svc->nhosts++;

	r->status = CSI_OK;
	r->host = id;
	r->epoch = svc->epoch;
	r->block_size = svc->block_size;
	r->max_blocks = svc->cfg.max_blocks;
	r->max_push = 0;
	r->max_evict = svc->cfg.max_evict;
	r->features = h->features;
	r->lease_seconds = svc->cfg.lease_seconds;
	return 0;
}

/*
 * §5.1 steps 2-5.  CSI_OK and *out set, or the status to answer.
 */
static uint32_t check_hdr(struct csi_service *svc, const struct csi_reqhdr *hdr,
			  const struct sockaddr *src, struct svc_host **out)
{
	struct svc_host *h = NULL;
	uint64_t now = now_ms(svc);
	uint8_t addr[16];
	unsigned int i;
	uint32_t n;

	if (hdr->epoch != svc->epoch) {
		svc->gctr[G_BAD_EPOCH]++;
		return CSI_ERR_BAD_EPOCH;
	}
	if (hdr->host)
		for (i = 0; i < svc->cfg.max_hosts && !h; i++)
			if (svc->hosts[i].id == hdr->host)
				h = &svc->hosts[i];
	if (h && lease_lapsed(svc, h, now)) {
		host_forget(svc, h);	/* lazily, §5.3 */
		svc->gctr[G_HOSTS_EXPIRED]++;
		h = NULL;
	}
	if (h && h->addr_known &&
	    (!addr_of(src, addr) || memcmp(addr, h->addr, sizeof(addr))))
		h = NULL;		/* §4 item 4 */
	if (!h) {
		svc->gctr[G_UNKNOWN_HOST]++;
		return CSI_ERR_UNKNOWN_HOST;
	}
	if (hdr->nevicted > svc->cfg.max_evict) {
		svc->gctr[G_TOO_BIG_NOTICES]++;
		return CSI_ERR_TOO_BIG;
	}
	count(svc, h, C_NOTICES_RECEIVED, hdr->nevicted);
	if (h->tracked) {
		for (n = 0; n < hdr->nevicted; n++) {
			if (!sc_tracker_holds(svc->tracker, slot_of(svc, h),
					      &hdr->evicted[n]))
				continue;
			sc_tracker_note_evicted(svc->tracker, slot_of(svc, h),
						&hdr->evicted[n]);
			count(svc, h, C_NOTICES_APPLIED, 1);
			if (h->tracker_entries)
				h->tracker_entries--;
		}
	}
	h->last_ms = now;
	*out = h;
	return CSI_OK;
}

/* ---- files ---- */

/* The status for a store answer about file ino (rc) with attributes a. */
static uint32_t file_status(int rc, const struct dstore_attr *a)
{
	if (rc == -ENOENT || rc == -ESTALE)
		return CSI_ERR_STALE;
	if (rc)
		return CSI_ERR_IO;
	return a->type == DSTORE_REG ? CSI_OK : CSI_ERR_INVAL;
}

static uint32_t file_attr(struct csi_service *svc, uint64_t ino,
			  struct dstore_attr *a)
{
	return file_status(ino ? dstore_getattr(svc->ds, ino, a) : -ENOENT, a);
}

/*
 * The hashes of blocks lbn .. lbn + count - 1 and the file's attributes,
 * from one snapshot of the store.
 */
struct range_hashes {
	struct sc_hash *h;
	uint8_t *mapped;
	struct dstore_attr attr;
};

static uint32_t range_hashes(struct csi_service *svc, uint64_t ino,
			     uint64_t lbn, uint32_t count,
			     struct range_hashes *rh)
{
	int rc = ino ? dstore_block_hashes(svc->ds, ino, lbn, count, rh->h,
					   rh->mapped, &rh->attr) : -ENOENT;

	return file_status(rc, &rh->attr);
}

static int range_hashes_alloc(struct sc_rpc_request *rq, uint32_t count,
			      struct range_hashes *rh)
{
	rh->h = sc_rpc_req_alloc(rq, (count ? count : 1) * sizeof(*rh->h));
	rh->mapped = sc_rpc_req_alloc(rq, count ? count : 1);
	return rh->h && rh->mapped ? 0 : -ENOMEM;
}

static void to_fileattr(const struct dstore_attr *a, struct csi_fileattr *f)
{
	f->file = a->ino;
	f->size = a->size;
	f->change = a->change;
}

/* (lbn + count) × B must not overflow 64 bits (§3.3.9). */
static bool range_ok(const struct csi_service *svc, uint64_t lbn,
		     uint32_t count)
{
	return lbn <= UINT64_MAX - count &&
	       lbn + count <= UINT64_MAX / svc->block_size;
}

/* n = min(count, max(0, N − lbn)), N = ⌈size / B⌉ (§7.2, §7.3). */
static uint32_t blocks_in_reply(const struct csi_service *svc, uint64_t size,
				uint64_t lbn, uint32_t count)
{
	uint64_t nb = size / svc->block_size + (size % svc->block_size != 0);

	if (lbn >= nb)
		return 0;
	return nb - lbn < count ? (uint32_t)(nb - lbn) : count;
}

static bool same_state(const struct dstore_attr *a, const struct dstore_attr *b)
{
	return a->change == b->change && a->size == b->size;
}

static int do_gethashes(struct csi_service *svc, struct sc_rpc_request *rq,
			struct svc_host *h)
{
	const struct csi_gethashes_args *a = rq->args;
	struct csi_gethashes_res *r = rq->res;
	struct range_hashes rh;
	uint32_t i, n, st;

	count(svc, h, C_GH_CALLS, 1);
	if (!(h->features & CSI_FEAT_READ_HASH)) {
		r->status = CSI_ERR_NOTSUPP;
		return 0;
	}
	if (a->count > svc->cfg.max_blocks) {
		r->status = CSI_ERR_TOO_BIG;
		return 0;
	}
	if (!range_ok(svc, a->lbn, a->count)) {
		r->status = CSI_ERR_INVAL;
		return 0;
	}
	if (range_hashes_alloc(rq, a->count, &rh))
		return -ENOMEM;
	if (a->count) {
		r->blocks = sc_rpc_req_alloc(rq, a->count * sizeof(*r->blocks));
		if (!r->blocks)
			return -ENOMEM;
	}
	/* hashes and attributes from one snapshot agree by construction */
	st = range_hashes(svc, a->file, a->lbn, a->count, &rh);
	if (st != CSI_OK) {
		r->status = st;
		return 0;
	}
	n = blocks_in_reply(svc, rh.attr.size, a->lbn, a->count);
	for (i = 0; i < n; i++) {
		r->blocks[i].kind = rh.mapped[i] ? CSI_HK_HASH : CSI_HK_HOLE;
		if (rh.mapped[i])
			r->blocks[i].hash = rh.h[i];
		else
			memset(&r->blocks[i].hash, 0, sizeof(r->blocks[i].hash));
	}
	r->status = CSI_OK;
	to_fileattr(&rh.attr, &r->attr);
	r->nblocks = n;
	count(svc, h, C_GH_BLOCKS, n);
	return 0;
}

#define READ_FLAGS_KNOWN (CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA | \
			  CSI_READ_ACCEPT_DELEG | CSI_READ_ACCEPT_PUSH)

static uint32_t read_flags_check(const struct svc_host *h, uint32_t flags)
{
	if (flags & ~READ_FLAGS_KNOWN)
		return CSI_ERR_INVAL;
	if ((flags & CSI_READ_FORCE_DATA) && !(flags & CSI_READ_WANT_DATA))
		return CSI_ERR_INVAL;
	if (!(flags & CSI_READ_WANT_DATA) &&
	    !(h->features & CSI_FEAT_READ_HASH))
		return CSI_ERR_NOTSUPP;
	if ((flags & CSI_READ_ACCEPT_DELEG) && !(h->features & CSI_FEAT_COOP))
		return CSI_ERR_NOTSUPP;
	if ((flags & CSI_READ_ACCEPT_PUSH) && !(h->features & CSI_FEAT_PUSH))
		return CSI_ERR_NOTSUPP;
	return CSI_OK;
}

/*
 * One pass over the blocks of a READ: kinds, hashes and data.  0, or a
 * negative errno from the store.
 */
static int read_pass(struct csi_service *svc, const struct csi_read_args *a,
		     struct svc_host *h, const struct range_hashes *rh,
		     struct csi_read_block *b, uint32_t n, uint8_t *data)
{
	bool want = a->flags & CSI_READ_WANT_DATA;
	bool force = a->flags & CSI_READ_FORCE_DATA;
	uint32_t bs = svc->block_size, i, j;
	bool eof;
	ssize_t got;

	for (i = 0; i < n; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		if (!rh->mapped[i]) {
			b[i].kind = CSI_RK_HOLE;
			continue;
		}
		b[i].hash = rh->h[i];
		b[i].kind = !want ||
			    (!force && (h->features & CSI_FEAT_TRACKER) &&
			     sc_tracker_holds(svc->tracker, slot_of(svc, h),
					      &b[i].hash)) ?
			    CSI_RK_HASH : CSI_RK_DATA;
	}
	/* the data of each run of DATA blocks in one store read */
	for (i = 0; i < n; i = j) {
		for (j = i; j < n && b[j].kind == CSI_RK_DATA; j++)
			;
		if (j == i) {
			j++;
			continue;
		}
		got = dstore_read(svc->ds, a->file, (a->lbn + i) * bs,
				  data + (size_t)i * bs, (size_t)(j - i) * bs,
				  &eof);
		if (got < 0)
			return (int)got;
		for (uint32_t k = i; k < j; k++) {
			size_t at = (size_t)(k - i) * bs;

			b[k].data.p = data + (size_t)k * bs;
			b[k].data.len = (size_t)got <= at ? 0 :
					(uint32_t)((size_t)got - at < bs ?
						   (size_t)got - at : bs);
		}
	}
	return 0;
}

static int do_read(struct csi_service *svc, struct sc_rpc_request *rq,
		   struct svc_host *h)
{
	const struct csi_read_args *a = rq->args;
	struct csi_read_res *r = rq->res;
	bool want = a->flags & CSI_READ_WANT_DATA;
	struct range_hashes rh;
	struct dstore_attr a1;
	uint8_t *data = NULL;
	uint32_t i, n = 0, st;
	int tries, rc = 0;

	count(svc, h, C_READ_CALLS, 1);
	st = read_flags_check(h, a->flags);
	if (st == CSI_OK && a->count > svc->cfg.max_blocks)
		st = CSI_ERR_TOO_BIG;
	if (st == CSI_OK && !range_ok(svc, a->lbn, a->count))
		st = CSI_ERR_INVAL;
	if (st != CSI_OK) {
		r->status = st;
		return 0;
	}
	if (a->count) {
		r->blocks = sc_rpc_req_alloc(rq, a->count * sizeof(*r->blocks));
		if (want)
			data = sc_rpc_req_alloc(rq, (size_t)a->count *
						    svc->block_size);
		if (!r->blocks || (want && !data))
			return -ENOMEM;
	}
	if (range_hashes_alloc(rq, a->count, &rh))
		return -ENOMEM;
	/* data is read after the hashes: a write in between is retried */
	for (tries = 0; tries < SVC_STABLE_TRIES; tries++) {
		st = range_hashes(svc, a->file, a->lbn, a->count, &rh);
		if (st != CSI_OK) {
			r->status = st;
			return 0;
		}
		n = blocks_in_reply(svc, rh.attr.size, a->lbn, a->count);
		rc = read_pass(svc, a, h, &rh, r->blocks, n, data);
		st = file_attr(svc, a->file, &a1);
		if (st != CSI_OK) {
			r->status = st;
			return 0;
		}
		if (same_state(&rh.attr, &a1))
			break;
	}
	if (tries == SVC_STABLE_TRIES) {
		r->status = CSI_ERR_BUSY;	/* the file keeps changing */
		return 0;
	}
	if (rc) {
		r->status = CSI_ERR_IO;
		return 0;
	}
	r->status = CSI_OK;
	to_fileattr(&rh.attr, &r->attr);
	r->nblocks = n;
	/* §5.2: what the host now holds, and the counters. */
	for (i = 0; i < n; i++) {
		switch (r->blocks[i].kind) {
		case CSI_RK_HOLE:
			count(svc, h, C_READ_HOLES, 1);
			break;
		case CSI_RK_HASH:
			count(svc, h, want ? C_READ_HASH_ONLY :
					     C_READ_PROBE_BLOCKS, 1);
			break;
		case CSI_RK_DATA:
			count(svc, h, C_READ_DATA_BLOCKS, 1);
			count(svc, h, C_READ_DATA_BYTES,
			      r->blocks[i].data.len);
			if (!h->tracked)
				break;
			if (!sc_tracker_holds(svc->tracker, slot_of(svc, h),
					      &r->blocks[i].hash))
				h->tracker_entries++;
			sc_tracker_note_held(svc->tracker, slot_of(svc, h),
					     &r->blocks[i].hash);
			break;
		}
	}
	return 0;
}

static int do_commit(struct csi_service *svc, struct sc_rpc_request *rq)
{
	const struct csi_commit_args *a = rq->args;
	struct csi_commit_res *r = rq->res;
	struct dstore_attr at;
	uint32_t st = file_attr(svc, a->file, &at);

	if (st == CSI_OK && dstore_sync(svc->ds))
		st = CSI_ERR_IO;
	if (st == CSI_OK)
		st = file_attr(svc, a->file, &at);
	r->status = st;
	if (st == CSI_OK)
		to_fileattr(&at, &r->attr);
	return 0;
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
	uint32_t i, k, n = 0, nh = 0;

	svc->gctr[G_STATS_CALLS]++;
	reap_lapsed(svc, now_ms(svc));
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
		c[k].value = h->tracker_entries;
		hs->host = h->id;
		hs->host_name.p = (const uint8_t *)h->name;
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

int csi_service_handle(struct csi_service *svc, struct sc_rpc_request *rq)
{
	const struct sockaddr *src = rq->peer;

	const struct csi_reqhdr *hdr;
	struct svc_host *h = NULL;
	uint32_t st;

	if (!rq->proc || rq->proc->prog != CSI_PROG)
		return -EINVAL;
	switch (rq->proc->proc) {
	case CSI_PROC_NULL:
		return 0;
	case CSI_PROC_HELLO:
		return do_hello(svc, rq->args, rq->res, src);
	case CSI_PROC_STATS:
		return do_stats(svc, rq);
	default:
		break;
	}
	hdr = hdr_of(rq);
	if (!hdr)
		return -EINVAL;
	st = check_hdr(svc, hdr, src, &h);
	if (st != CSI_OK) {
		/* Every result starts with its status (a void arm otherwise). */
		*(uint32_t *)rq->res = st;
		return 0;
	}
	switch (rq->proc->proc) {
	case CSI_PROC_GET_HASHES:
		return do_gethashes(svc, rq, h);
	case CSI_PROC_READ:
		return do_read(svc, rq, h);
	case CSI_PROC_COMMIT:
		return do_commit(svc, rq);
	case CSI_PROC_EVICT:
		count(svc, h, C_EVICT_CALLS, 1);
		((struct csi_evict_res *)rq->res)->status = CSI_OK;
		return 0;
	case CSI_PROC_LOOKUP:
		/* No exports are configured in this service (service.h). */
		((struct csi_lookup_res *)rq->res)->status = CSI_ERR_NOENT;
		return 0;
	case CSI_PROC_WRITE:
		((struct csi_write_res *)rq->res)->status = CSI_ERR_NOTSUPP;
		return 0;
	default:
		return -EINVAL;
	}
}
