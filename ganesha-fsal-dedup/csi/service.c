// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service: registrations (HELLO, leases), the request header of
 * §5.1, the tracker updates of §5.2, and every procedure over the dedup
 * store.  See service.h for scope and threading.
 *
 * Registrations live in a fixed table of max_hosts slots; slot i + 1 is
 * the registration's tracker host number.  A lapsed lease is noticed
 * lazily: when its host id is used, when HELLO needs a slot, or by STATS.
 * A call keeps its host's slot and id (struct host_ref) across the parts
 * it runs without the lock, and checks the id is still the slot's before
 * it touches the registration again: a HELLO may have replaced it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

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
	X(C_ACCESS_DENIED, "errors.access")

#define GLOBAL_COUNTERS(X)						\
	X(G_HELLO_CALLS, "hello.calls")					\
	X(G_HOSTS_REPLACED, "hosts.replaced")				\
	X(G_HOSTS_EXPIRED, "hosts.expired")				\
	X(G_BAD_EPOCH, "errors.bad_epoch")				\
	X(G_UNKNOWN_HOST, "errors.unknown_host")			\
	X(G_TOO_BIG_NOTICES, "errors.too_many_notices")			\
	X(G_HASH_MISMATCH, "errors.write_hash_mismatch")		\
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

static uint64_t now_unix(const struct csi_service *svc)
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
	svc->block_size = dstore_block_size(ds);
	svc->epoch = random_nonzero();
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

static void used_clear(struct svc_host *h);

void csi_service_free(struct csi_service *svc)
{
	unsigned int i;

	if (!svc)
		return;
	for (i = 0; svc->hosts && i < svc->cfg.max_hosts; i++) {
		used_clear(&svc->hosts[i]);
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

static bool host_valid(const struct host_ref *r)
{
	return r->h->id == r->id;
}

/* ---- used files (§7), bounded per host ---- */

static void used_clear(struct svc_host *h)
{
	struct used_file *u, *tmp;

	HASH_ITER(hh, h->used, u, tmp) {
		HASH_DEL(h->used, u);
		free(u);
	}
	h->nused = 0;
}

static bool used_has(const struct svc_host *h, uint64_t ino)
{
	struct used_file *u;

	HASH_FIND(hh, h->used, &ino, sizeof(ino), u);
	return u != NULL;
}

static void used_mark(struct csi_service *svc, struct svc_host *h,
		      uint64_t ino)
{
	struct used_file *u;

	if (used_has(h, ino))
		return;
	if (h->nused >= svc->cfg.used_files) {
		u = h->used;		/* the oldest */
		HASH_DEL(h->used, u);
		h->nused--;
	} else {
		u = malloc(sizeof(*u));
		if (!u)
			return;		/* only pushes are lost */
	}
	u->ino = ino;
	HASH_ADD(hh, h->used, ino, sizeof(u->ino), u);
	h->nused++;
}

/* Ends a registration: its tracker state goes, its id answers UNKNOWN_HOST. */
static void host_forget(struct csi_service *svc, struct svc_host *h)
{
	sc_tracker_drop_host(svc->tracker, slot_of(svc, h));
	used_clear(h);
	sc_mac_free(h->token_mac);
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

/* An IPv4 address as the 16 bytes of ::ffff:a.b.c.d. */
static void v4_mapped(const void *v4, uint8_t out[16])
{
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, v4, 4);
}

/* The caller's IP address as 16 bytes (IPv4 mapped); false if unknown. */
static bool addr_of(const struct sockaddr *sa, uint8_t out[16])
{
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

		v4_mapped(&in4->sin_addr, out);
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

/* Is a the IP address the registration h was made from? */
static bool peer_addr_is(const struct csi_peer_addr *a,
			 const struct svc_host *h)
{
	uint8_t want[16];

	if (!h->addr_known)
		return false;
	if (a->family == CSI_AF_INET) {
		v4_mapped(a->addr, want);
	} else {
		memcpy(want, a->addr, 16);
	}
	return !memcmp(want, h->addr, sizeof(want));
}

static struct svc_host *host_by_id(struct csi_service *svc, uint64_t id)
{
	unsigned int i;

	for (i = 0; id && i < svc->cfg.max_hosts; i++)
		if (svc->hosts[i].id == id)
			return &svc->hosts[i];
	return NULL;
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
	} while (host_by_id(svc, id));
	if (fill_random(r->peer_secret, sizeof(r->peer_secret)))
		return -EIO;
	h->token_mac = sc_mac_new(r->peer_secret, sizeof(r->peer_secret));
	if (!h->token_mac)
		return -ENOMEM;
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
	/*
	 * §4 item 7: a peer address other than the caller's own is ignored,
	 * so a host cannot point other hosts' peer reads at a third machine.
	 */
	if (a->peer.family != CSI_AF_NONE && peer_addr_is(&a->peer, h))
		h->peer = a->peer;
	h->last_ms = now;
	svc->nhosts++;

	r->status = CSI_OK;
	r->host = id;
	r->epoch = svc->epoch;
	r->block_size = svc->block_size;
	r->max_blocks = svc->cfg.max_blocks;
	r->max_push = svc->cfg.max_push;
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
	uint32_t n;

	if (hdr->epoch != svc->epoch) {
		svc->gctr[G_BAD_EPOCH]++;
		return CSI_ERR_BAD_EPOCH;
	}
	h = host_by_id(svc, hdr->host);
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
		for (n = 0; n < hdr->nevicted; n++)
			if (sc_tracker_note_evicted(svc->tracker,
						    slot_of(svc, h),
						    &hdr->evicted[n]))
				count(svc, h, C_NOTICES_APPLIED, 1);
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
	if (rc == -ENOSPC)
		return CSI_ERR_NOSPC;
	if (rc == -EISDIR || rc == -EINVAL)
		return CSI_ERR_INVAL;
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

/*
 * §7 "Access", through the NFS server's exports.  Called without the
 * lock (the hook may take the server's own locks).
 */
static uint32_t access_check(struct csi_service *svc,
			     const struct sc_rpc_request *rq, bool write)
{
	int rc;

	if (!svc->hooks.access)
		return CSI_OK;
	rc = svc->hooks.access(svc->hooks.ctx, rq->peer, write);
	return rc ? CSI_ERR_ACCESS : CSI_OK;
}

/*
 * Takes the lock back after a part run without it; false (lock not held)
 * when the registration was replaced or ended meanwhile.
 */
static bool relock(struct csi_service *svc, const struct host_ref *hr)
{
	pthread_mutex_lock(&svc->lock);
	if (host_valid(hr))
		return true;
	pthread_mutex_unlock(&svc->lock);
	return false;
}

/* Records that hr's host now holds h (§5.2); lock held. */
static void note_held(struct csi_service *svc, const struct host_ref *hr,
		      const struct sc_hash *h)
{
	if (hr->h->tracked)
		sc_tracker_note_held(svc->tracker, hr->slot, h);
}

/* ---- LOOKUP ---- */

/*
 * §3.3.8 path rules: not empty, relative, no empty, "." or ".."
 * component.  The components are split in place (buf is a copy).
 */
static bool path_valid(const char *p)
{
	const char *c = p;

	if (!*p || *p == '/')
		return false;
	for (;;) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);

		if (n == 0 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (!e)
			return true;
		c = e + 1;
	}
}

static char *bytes_dup(const struct csi_bytes *b)
{
	char *s = malloc(b->len + 1);

	if (!s)
		return NULL;
	if (b->len)
		memcpy(s, b->p, b->len);
	s[b->len] = '\0';
	return s;
}

static uint32_t lookup_walk(struct csi_service *svc, uint64_t dir, char *path,
			    struct dstore_attr *at)
{
	char *c = path, *e;
	int rc;

	for (;;) {
		e = strchr(c, '/');
		if (e)
			*e = '\0';
		rc = dstore_lookup(svc->ds, dir, c, at);
		if (rc == -ENOENT || rc == -ENOTDIR)
			return CSI_ERR_NOENT;
		if (rc)
			return CSI_ERR_IO;
		if (!e)
			return at->type == DSTORE_REG ? CSI_OK : CSI_ERR_INVAL;
		/* symbolic links are not followed (§7.1) */
		if (at->type != DSTORE_DIR)
			return at->type == DSTORE_SYMLINK ? CSI_ERR_INVAL :
							     CSI_ERR_NOENT;
		dir = at->ino;
		c = e + 1;
	}
}

static int do_lookup(struct csi_service *svc, struct sc_rpc_request *rq,
		     const struct host_ref *hr)
{
	const struct csi_lookup_args *a = rq->args;
	struct csi_lookup_res *r = rq->res;
	char *exp = bytes_dup(&a->export_path), *path = bytes_dup(&a->path);
	struct dstore_attr at;
	uint64_t root = 0;
	int rc;

	if (!exp || !path) {
		free(exp);
		free(path);
		return -ENOMEM;
	}
	if (!*exp || strlen(exp) != a->export_path.len ||
	    strlen(path) != a->path.len || !path_valid(path)) {
		r->status = CSI_ERR_INVAL;
		goto out;
	}
	rc = svc->hooks.export_root ?
	     svc->hooks.export_root(svc->hooks.ctx, exp, rq->peer, &root) :
	     -ENOENT;
	r->status = rc == -EACCES ? CSI_ERR_ACCESS :
		    rc ? CSI_ERR_NOENT : lookup_walk(svc, root, path, &at);
	if (r->status == CSI_OK)
		to_fileattr(&at, &r->attr);
out:
	free(exp);
	free(path);
	if (r->status == CSI_OK && relock(svc, hr)) {
		used_mark(svc, hr->h, at.ino);
		pthread_mutex_unlock(&svc->lock);
	}
	return 0;
}

/* ---- GET_HASHES ---- */

static int do_gethashes(struct csi_service *svc, struct sc_rpc_request *rq,
			const struct host_ref *hr)
{
	const struct csi_gethashes_args *a = rq->args;
	struct csi_gethashes_res *r = rq->res;
	struct range_hashes rh;
	uint32_t i, n, st;

	if (!(hr->h->features & CSI_FEAT_READ_HASH))
		st = CSI_ERR_NOTSUPP;
	else if (a->count > svc->cfg.max_blocks)
		st = CSI_ERR_TOO_BIG;
	else if (!range_ok(svc, a->lbn, a->count))
		st = CSI_ERR_INVAL;
	else
		st = access_check(svc, rq, false);
	if (st != CSI_OK) {
		r->status = st;
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
	if (relock(svc, hr)) {
		count(svc, hr->h, C_GH_BLOCKS, n);
		used_mark(svc, hr->h, a->file);
		pthread_mutex_unlock(&svc->lock);
	}
	return 0;
}

/* ---- READ ---- */

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

/* Most holders of one content considered for a delegation. */
#define DELEG_CANDIDATES 8

/*
 * §7.3 rule 4: a live peer that holds h and serves peer reads, with a
 * fresh token for the requester; false if there is none.  Lock held.
 */
static bool delegate(struct csi_service *svc, const struct host_ref *hr,
		     const struct sc_hash *h, uint64_t now,
		     struct csi_read_block *b)
{
	uint16_t cand[DELEG_CANDIDATES];
	struct sc_peer_token_fields f;
	unsigned int k, i, first;
	struct svc_host *p;

	k = sc_tracker_holders(svc->tracker, h, hr->slot, cand,
			       DELEG_CANDIDATES);
	first = k ? sc_prng_below(&svc->pick, k) : 0;
	for (i = 0; i < k; i++) {
		p = &svc->hosts[cand[(first + i) % k] - 1];
		if (!p->id || !(p->features & CSI_FEAT_COOP) ||
		    p->peer.family == CSI_AF_NONE || lease_lapsed(svc, p, now))
			continue;
		f.hash = *h;
		f.requester = hr->id;
		f.serving = p->id;
		f.epoch = svc->epoch;
		f.expiry = now_unix(svc) + svc->cfg.token_seconds;
		if (sc_peer_token_mac(p->token_mac, &f, b->token.mac))
			return false;
		b->kind = CSI_RK_DELEGATED;
		b->peer_host = p->id;
		b->peer = p->peer;
		b->token.expiry = f.expiry;
		return true;
	}
	return false;
}

/*
 * The kind of every block of a READ (§7.3's rules, in order), from the
 * hashes and the tracker; delegations get their peer and token.  Lock
 * held.
 */
static void read_kinds(struct csi_service *svc, const struct csi_read_args *a,
		       const struct host_ref *hr, const struct range_hashes *rh,
		       struct csi_read_block *b, uint32_t n)
{
	bool want = a->flags & CSI_READ_WANT_DATA;
	bool force = a->flags & CSI_READ_FORCE_DATA;
	bool deleg = a->flags & CSI_READ_ACCEPT_DELEG;
	bool tracker = hr->h->features & CSI_FEAT_TRACKER;
	uint64_t now = now_ms(svc);
	uint32_t i;

	for (i = 0; i < n; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		if (!rh->mapped[i]) {
			b[i].kind = CSI_RK_HOLE;
			continue;
		}
		b[i].hash = rh->h[i];
		if (!want || (!force && tracker &&
			      sc_tracker_holds(svc->tracker, hr->slot,
					       &b[i].hash))) {
			b[i].kind = CSI_RK_HASH;
			continue;
		}
		if (force || !deleg ||
		    !delegate(svc, hr, &b[i].hash, now, &b[i]))
			b[i].kind = CSI_RK_DATA;
		/*
		 * Held from now on (§5.2), not from when the reply is out:
		 * a block of the same content later in this reply, or in a
		 * call of another VM of the host racing this one, is then
		 * answered by hash, and the host waits for this copy instead
		 * of fetching a second.  Should this reply fail, the host
		 * only pays a FORCE_DATA round trip.
		 */
		note_held(svc, hr, &b[i].hash);
	}
}

/* The data of each run of DATA blocks, in one store read per run. */
static int read_data(struct csi_service *svc, const struct csi_read_args *a,
		     struct csi_read_block *b, uint32_t n, uint8_t *data)
{
	uint32_t bs = svc->block_size, i, j, k;
	bool eof;
	ssize_t got;

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
		for (k = i; k < j; k++) {
			size_t at = (size_t)(k - i) * bs;

			b[k].data.p = data + (size_t)k * bs;
			b[k].data.len = (size_t)got <= at ? 0 :
					(uint32_t)((size_t)got - at < bs ?
						   (size_t)got - at : bs);
		}
	}
	return 0;
}

/* A candidate push: (ino, lbn) holds the content of reply block blk. */
struct push_cand {
	uint64_t ino;
	uint64_t lbn;
	uint32_t blk;
	uint32_t shared;	/* holders of that content found */
};

struct push_collect {
	struct csi_service *svc;
	const struct svc_host *h;
	uint64_t self;		/* the call's own file: its attrs are in it */
	struct push_cand *c;
	uint32_t n, cap, blk, found;
};

static int push_collect_one(void *ctx, uint64_t ino, uint64_t lbn)
{
	struct push_collect *pc = ctx;

	pc->found++;
	if (ino == pc->self || !used_has(pc->h, ino) || pc->n == pc->cap)
		return 0;
	pc->c[pc->n].ino = ino;
	pc->c[pc->n].lbn = lbn;
	pc->c[pc->n].blk = pc->blk;
	pc->n++;
	return 0;
}

/* Widely shared content first, then by file and block (runs). */
static int push_cand_cmp(const void *x, const void *y)
{
	const struct push_cand *a = x, *b = y;

	if (a->shared != b->shared)
		return a->shared > b->shared ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return a->lbn < b->lbn ? -1 : a->lbn > b->lbn;
}

static int push_file_cmp(const void *x, const void *y)
{
	const struct push_cand *a = x, *b = y;

	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return a->lbn < b->lbn ? -1 : a->lbn > b->lbn;
}

/* Holders looked up per content of the reply. */
#define PUSH_HOLDERS_PER_CONTENT 64

/*
 * SS-Push (§7.3 "Pushed entries"): other blocks of files this host uses
 * that hold the contents of this reply, widely shared content first, each
 * confirmed with its file's change id from one store snapshot.  Lock
 * held (the used set); store reads only.
 */
static int read_pushes(struct csi_service *svc, struct sc_rpc_request *rq,
		       const struct host_ref *hr)
{
	const struct csi_read_args *a = rq->args;
	struct csi_read_res *r = rq->res;
	uint32_t max = svc->cfg.max_push, i, j, k, run, from;
	struct push_collect pc = { svc, hr->h, a->file, NULL, 0, 0, 0, 0 };
	struct sc_hash *h;
	uint8_t *mapped;
	struct dstore_attr at;

	if (!max || !r->nblocks)
		return 0;
	pc.cap = 4 * max;
	pc.c = malloc(pc.cap * sizeof(*pc.c));
	r->pushed = sc_rpc_req_alloc(rq, max * sizeof(*r->pushed));
	h = sc_rpc_req_alloc(rq, CSI_MAX_BLOCKS * sizeof(*h));
	mapped = sc_rpc_req_alloc(rq, CSI_MAX_BLOCKS);
	if (!pc.c || !r->pushed || !h || !mapped) {
		free(pc.c);
		return -ENOMEM;
	}
	for (i = 0; i < r->nblocks && pc.n < pc.cap; i++) {
		if (r->blocks[i].kind == CSI_RK_HOLE)
			continue;
		from = pc.n;
		pc.blk = i;
		pc.found = 0;
		dstore_csimap_lookup(svc->ds, &r->blocks[i].hash,
				     PUSH_HOLDERS_PER_CONTENT, push_collect_one,
				     &pc);
		for (k = from; k < pc.n; k++)
			pc.c[k].shared = pc.found;
	}
	qsort(pc.c, pc.n, sizeof(*pc.c), push_cand_cmp);
	if (pc.n > max)
		pc.n = max;
	qsort(pc.c, pc.n, sizeof(*pc.c), push_file_cmp);
	/* confirm each run of blocks of one file from one snapshot */
	for (i = 0; i < pc.n; i = j) {
		for (j = i + 1; j < pc.n && pc.c[j].ino == pc.c[i].ino &&
		     pc.c[j].lbn - pc.c[i].lbn < CSI_MAX_BLOCKS; j++)
			;
		run = (uint32_t)(pc.c[j - 1].lbn - pc.c[i].lbn + 1);
		if (dstore_block_hashes(svc->ds, pc.c[i].ino, pc.c[i].lbn, run,
					h, mapped, &at))
			continue;
		for (k = i; k < j; k++) {
			uint32_t o = (uint32_t)(pc.c[k].lbn - pc.c[i].lbn);
			const struct sc_hash *want =
				&r->blocks[pc.c[k].blk].hash;
			struct csi_push_entry *e = &r->pushed[r->npushed];

			if (!mapped[o] || !sc_hash_eq(&h[o], want))
				continue;	/* changed since the lookup */
			e->file = pc.c[k].ino;
			e->lbn = pc.c[k].lbn;
			e->change = at.change;
			e->hash = h[o];
			r->npushed++;
		}
	}
	free(pc.c);
	count(svc, hr->h, C_PUSH_ENTRIES, r->npushed);
	return 0;
}

/* The counters of a READ's answers.  Lock held. */
static void read_account(struct csi_service *svc, const struct host_ref *hr,
			 bool want, const struct csi_read_res *r)
{
	struct svc_host *peer;
	uint32_t i;

	for (i = 0; i < r->nblocks; i++) {
		const struct csi_read_block *b = &r->blocks[i];

		switch (b->kind) {
		case CSI_RK_HOLE:
			count(svc, hr->h, C_READ_HOLES, 1);
			break;
		case CSI_RK_HASH:
			count(svc, hr->h, want ? C_READ_HASH_ONLY :
						 C_READ_PROBE_BLOCKS, 1);
			break;
		case CSI_RK_DELEGATED:
			count(svc, hr->h, C_READ_DELEGATED, 1);
			peer = host_by_id(svc, b->peer_host);
			if (peer)
				count(svc, peer, C_DELEG_TARGETED, 1);
			break;
		case CSI_RK_DATA:
			count(svc, hr->h, C_READ_DATA_BLOCKS, 1);
			count(svc, hr->h, C_READ_DATA_BYTES, b->data.len);
			break;
		}
	}
}

static int do_read(struct csi_service *svc, struct sc_rpc_request *rq,
		   const struct host_ref *hr)
{
	const struct csi_read_args *a = rq->args;
	struct csi_read_res *r = rq->res;
	bool want = a->flags & CSI_READ_WANT_DATA;
	struct range_hashes rh;
	struct dstore_attr a1;
	uint8_t *data = NULL;
	uint32_t n = 0, st;
	int tries, rc = 0;

	st = read_flags_check(hr->h, a->flags);
	if (st == CSI_OK && a->count > svc->cfg.max_blocks)
		st = CSI_ERR_TOO_BIG;
	if (st == CSI_OK && !range_ok(svc, a->lbn, a->count))
		st = CSI_ERR_INVAL;
	if (st == CSI_OK)
		st = access_check(svc, rq, false);
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
		if (!relock(svc, hr)) {
			r->status = CSI_ERR_UNKNOWN_HOST;
			return 0;
		}
		read_kinds(svc, a, hr, &rh, r->blocks, n);
		pthread_mutex_unlock(&svc->lock);
		rc = read_data(svc, a, r->blocks, n, data);
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
	if (!relock(svc, hr)) {
		/* its tracker state is gone: nothing to record */
		return 0;
	}
	read_account(svc, hr, want, r);
	used_mark(svc, hr->h, a->file);
	if (a->flags & CSI_READ_ACCEPT_PUSH)
		rc = read_pushes(svc, rq, hr);
	pthread_mutex_unlock(&svc->lock);
	return rc;
}

/* ---- WRITE ---- */

/*
 * §7.4 step 1 beyond the header: block count, end bounds, data lengths,
 * the grant for hash-only blocks.
 */
static uint32_t write_args_check(const struct csi_service *svc,
				 const struct host_ref *hr,
				 const struct csi_write_args *a)
{
	uint64_t bs = svc->block_size;
	uint32_t i;

	if (a->nblocks == 0)
		return CSI_ERR_INVAL;
	if (a->nblocks > svc->cfg.max_blocks)
		return CSI_ERR_TOO_BIG;
	if (!range_ok(svc, a->lbn, a->nblocks) || a->stable > CSI_FILE_SYNC ||
	    a->end <= (a->lbn + a->nblocks - 1) * bs ||
	    a->end > (a->lbn + a->nblocks) * bs)
		return CSI_ERR_INVAL;
	for (i = 0; i < a->nblocks; i++) {
		if (a->blocks[i].kind == CSI_WK_HASH &&
		    !(hr->h->features & CSI_FEAT_DEDUP_WRITE))
			return CSI_ERR_NOTSUPP;
		if (a->blocks[i].kind == CSI_WK_DATA &&
		    a->blocks[i].data.len > bs)
			return CSI_ERR_INVAL;
	}
	return CSI_OK;
}

/*
 * The bytes of block i of the write, and its hash in hv[i]: DATA blocks
 * verified against their hash (§7.4 step 2); HASH blocks with proof of
 * possession (step 3) read from the store, the others marked need[i].
 * held[i] says the tracker shows this host holds block i's content.
 */
static uint32_t write_gather(struct csi_service *svc,
			     const struct csi_write_args *a,
			     const uint8_t *held, uint8_t *buf,
			     struct sc_hash *hv, uint8_t *need)
{
	struct sc_hasher *hs = sc_hasher_new();
	uint32_t bs = svc->block_size, i, st = CSI_OK;
	int rc;

	if (!hs)
		return CSI_ERR_IO;
	for (i = 0; i < a->nblocks && st == CSI_OK; i++) {
		const struct csi_write_block *b = &a->blocks[i];
		uint8_t *blk = buf + (size_t)i * bs;

		hv[i] = b->hash;
		if (b->kind == CSI_WK_DATA) {
			rc = sc_block_verify(hs, bs, &b->hash, b->data.p,
					     b->data.len, blk);
			if (rc)
				st = rc == -SC_EBADMSG ? CSI_ERR_HASH_MISMATCH :
							 CSI_ERR_IO;
			continue;
		}
		if (!held[i]) {
			need[i] = 1;
			continue;
		}
		rc = dstore_read_content(svc->ds, &b->hash, blk);
		if (rc == -ENOENT)
			need[i] = 1;	/* the store no longer has it */
		else if (rc)
			st = CSI_ERR_IO;
	}
	sc_hasher_free(hs);
	return st;
}

/* §7.4: bytes of a block past the file's new EOF must be zeros. */
static bool tail_is_zero(const struct csi_service *svc,
			 const struct csi_write_args *a, const uint8_t *buf,
			 const uint8_t *need, uint64_t new_eof)
{
	uint32_t bs = svc->block_size, i;

	for (i = 0; i < a->nblocks; i++) {
		uint64_t start = (a->lbn + i) * bs;
		uint64_t from = new_eof > start ? new_eof - start : 0;

		if (need[i] || from >= bs)
			continue;
		if (!all_zero(buf + (size_t)i * bs + from, bs - from))
			return false;
	}
	return true;
}

static int do_write(struct csi_service *svc, struct sc_rpc_request *rq,
		    const struct host_ref *hr)
{
	const struct csi_write_args *a = rq->args;
	struct csi_write_res *r = rq->res;
	uint32_t bs = svc->block_size, n = a->nblocks, i, st;
	uint8_t *buf = NULL, *need = NULL, *held = NULL;
	struct dstore_wblocks w = { .lbn = a->lbn, .n = n, .end = a->end,
				    .stable = a->stable != CSI_UNSTABLE };
	struct sc_hash *hv = NULL;
	struct dstore_attr pre, post;
	int rc = 0;

	st = write_args_check(svc, hr, a);
	if (st == CSI_OK)
		st = access_check(svc, rq, true);
	if (st == CSI_OK)
		st = file_attr(svc, a->file, &pre);
	if (st != CSI_OK) {
		r->status = st;
		return 0;
	}
	buf = malloc((size_t)n * bs);
	hv = malloc(n * sizeof(*hv));
	need = calloc(n, 1);
	held = calloc(n, 1);
	r->blocks = sc_rpc_req_alloc(rq, n * sizeof(*r->blocks));
	if (!buf || !hv || !need || !held || !r->blocks) {
		rc = -ENOMEM;
		goto out;
	}
	if (!relock(svc, hr)) {
		r->status = CSI_ERR_UNKNOWN_HOST;
		goto out;
	}
	for (i = 0; i < n; i++)
		held[i] = a->blocks[i].kind == CSI_WK_HASH &&
			  hr->h->tracked &&
			  sc_tracker_holds(svc->tracker, hr->slot,
					   &a->blocks[i].hash);
	pthread_mutex_unlock(&svc->lock);
	st = write_gather(svc, a, held, buf, hv, need);
	/* a concurrent extension only makes fewer bytes "past EOF" */
	if (st == CSI_OK &&
	    !tail_is_zero(svc, a, buf, need,
			  pre.size > a->end ? pre.size : a->end))
		st = CSI_ERR_INVAL;
	/* the hashes are verified or the store's own: not computed again */
	w.buf = buf;
	w.skip = need;
	w.hash = hv;
	if (st == CSI_OK)
		st = file_status(dstore_write_blocks(svc->ds, a->file, &w,
						     &pre, &post), &post);
	r->status = st;
	if (st == CSI_OK) {
		r->pre_change = pre.change;
		to_fileattr(&post, &r->attr);
		r->committed = a->stable == CSI_UNSTABLE ? CSI_UNSTABLE :
							   CSI_FILE_SYNC;
		r->nblocks = n;
		for (i = 0; i < n; i++)
			r->blocks[i] = need[i] ? CSI_W_NEED_DATA : CSI_W_OK;
		if (post.change != pre.change && svc->hooks.file_changed)
			svc->hooks.file_changed(svc->hooks.ctx, a->file);
	}
	if (!relock(svc, hr))
		goto out;
	if (st == CSI_ERR_HASH_MISMATCH)
		svc->gctr[G_HASH_MISMATCH]++;
	if (st == CSI_OK) {
		used_mark(svc, hr->h, a->file);
		for (i = 0; i < n; i++) {
			const struct csi_write_block *b = &a->blocks[i];

			if (need[i]) {
				count(svc, hr->h, C_WRITE_NEED_DATA, 1);
			} else if (b->kind == CSI_WK_HASH) {
				count(svc, hr->h, C_WRITE_HASH_BLOCKS, 1);
			} else {
				count(svc, hr->h, C_WRITE_DATA_BLOCKS, 1);
				count(svc, hr->h, C_WRITE_DATA_BYTES,
				      b->data.len);
				note_held(svc, hr, &b->hash);
			}
		}
	}
	pthread_mutex_unlock(&svc->lock);
out:
	free(buf);
	free(hv);
	free(need);
	free(held);
	return rc;
}

/* ---- COMMIT ---- */

static int do_commit(struct csi_service *svc, struct sc_rpc_request *rq,
		     const struct host_ref *hr)
{
	const struct csi_commit_args *a = rq->args;
	struct csi_commit_res *r = rq->res;
	struct dstore_attr at;
	uint32_t st = access_check(svc, rq, true);

	if (st == CSI_OK)
		st = file_attr(svc, a->file, &at);
	if (st == CSI_OK && dstore_sync(svc->ds))
		st = CSI_ERR_IO;
	if (st == CSI_OK)
		st = file_attr(svc, a->file, &at);
	r->status = st;
	if (st == CSI_OK)
		to_fileattr(&at, &r->attr);
	if (st == CSI_OK && relock(svc, hr)) {
		used_mark(svc, hr->h, a->file);
		pthread_mutex_unlock(&svc->lock);
	}
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
	uint8_t *name;
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
		return do_lookup(svc, rq, hr);
	case CSI_PROC_GET_HASHES:
		return do_gethashes(svc, rq, hr);
	case CSI_PROC_READ:
		return do_read(svc, rq, hr);
	case CSI_PROC_WRITE:
		return do_write(svc, rq, hr);
	case CSI_PROC_COMMIT:
		return do_commit(svc, rq, hr);
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
		     do_hello(svc, rq->args, rq->res, rq->peer) :
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
	st = check_hdr(svc, hdr, rq->peer, &h);
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
	if (!rc && *(uint32_t *)rq->res == CSI_ERR_ACCESS && relock(svc, &hr)) {
		count(svc, hr.h, C_ACCESS_DENIED, 1);
		pthread_mutex_unlock(&svc->lock);
	}
	return rc;
}
