// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI fuzzing client (see csi_fuzz_driver.h).
 *
 * Threads: the good client (the project's RPC client), one per fuzzing
 * connection (raw TCP sockets, blocking with timeouts: a server that
 * neither answers nor closes within REPLY_TIMEOUT_MS is a finding), and
 * the caller's, which runs the probes first and the final checks last.
 *
 * A fuzzing connection sends a NULL call first and uses the connection
 * only once it is answered: the server may refuse a connection while a
 * burst holds every slot, and a refused connection must not pass for a
 * dropped one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <seacache/csi_codec.h>
#include <seacache/hash.h>
#include <seacache/prng.h>
#include <seacache/rpc_msg.h>
#include <seacache/rpc_transport.h>

#include "csi_fuzz_driver.h"

#define REPLY_TIMEOUT_MS 20000
#define MAX_REPLY (SC_RPC_MAX_RECORD_DEFAULT + 4096u)
#define BODY_CAP (256u << 10)		/* a call body: 4096 notices fit */
#define WIRE_CAP (BODY_CAP + 64)	/* framed, at most 8 fragments */
#define POOL 64				/* host ids remembered */
#define UUIDS 4				/* per fuzzing connection */
#define BURST_EXTRA 8u			/* connections over max_conns */
#define WRITE_BLOCKS 4u
/*
 * Reads and WRITE contents favour the known file's first blocks, so that
 * a hash-only WRITE finds its content held by its host (proof of
 * possession, §7.4).
 */
#define HOT_BLOCKS 16u

enum ctr {
	CT_RECORDS, CT_ANSWERED, CT_GARBAGE, CT_RPC_ERRORS, CT_DROPPED,
	CT_REFUSED, CT_CUT, CT_WITHHELD, CT_BADCRED, CT_GOOD_CALLS,
	CT_GOOD_BLOCKS, CT_COUNT
};

struct run {
	const struct csi_fuzz_opts *o;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint32_t bs, max_blocks, max_evict, max_push;	/* the good HELLO's */
	bool good_map;			/* ... and whether MAP was granted */
	uint64_t epoch, good_host, nblk;
	struct sc_hash *hash;		/* of each block of the known file */
	uint8_t *hole;			/* each block all zero */
	size_t msg_size;		/* of the largest message struct */
	atomic_bool stop;
	_Atomic uint64_t ct[CT_COUNT];
	pthread_mutex_t lock;		/* the pool, the failure, bursts */
	uint64_t pool[POOL];
	unsigned int npool;
	bool failed;
	char *err;
	size_t errlen;
	pthread_mutex_t burst_lock;	/* one burst at a time */
	double last_burst;
};

/* The first procedure number CSI_PROG does not have. */
#define PROC_NONE (CSI_PROC_PEER_REPORT + 1)

/* The arguments a fuzzing connection builds, with what they point to. */
struct callbuf {
	union {
		struct csi_hello_args hello;
		struct csi_lookup_args lookup;
		struct csi_gethashes_args gh;
		struct csi_read_args read;
		struct csi_write_args write;
		struct csi_commit_args commit;
		struct csi_evict_args evict;
		struct csi_stats_args stats;
		struct csi_getmap_args map;
		struct csi_peer_report_args report;
	} a;
	struct csi_peer_failure failures[CSI_MAX_PEER_REPORTS];
	uint64_t files[CSI_MAX_MAP_FILES];
	uint8_t str1[CSI_MAX_PATH];
	uint8_t str2[CSI_MAX_PATH];
	struct sc_hash ev[CSI_MAX_EVICT];
	struct csi_write_block wb[WRITE_BLOCKS];
	uint8_t wdata[WRITE_BLOCKS][CSI_MAX_BLOCK_SIZE];
	uint8_t cred[64];
};

/* One fuzzing connection (or the probes' and final checks' client). */
struct fz {
	struct run *R;
	unsigned int id;
	pthread_t thread;
	struct sc_prng r;
	int fd;				/* -1: none */
	struct sc_hasher *hs;
	struct callbuf *cb;
	uint8_t *body;			/* the call record being sent */
	size_t blen;
	uint8_t *wire;			/* ... framed */
	size_t wlen;
	uint8_t *rx;			/* the reply received */
	size_t rx_cap;
	uint64_t host;			/* its own latest registration */
	void *args;			/* decoded call arguments */
	uint64_t map_files[CSI_MAX_MAP_FILES];	/* a GET_MAP's, off the arena */
	void *res;			/* decoded result */
	uint8_t *arena;
	size_t arena_cap;
	uint8_t uuids[UUIDS][CSI_HOST_UUID_SIZE];
};

static void count(struct run *R, enum ctr c)
{
	atomic_fetch_add(&R->ct[c], 1);
}

static bool stopping(struct run *R)
{
	return atomic_load(&R->stop);
}

/* Record the first failure and stop everybody; -1. */
static int fail(struct run *R, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct run *R, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&R->lock);
	if (!R->failed) {
		R->failed = true;
		va_start(ap, fmt);
		vsnprintf(R->err, R->errlen, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&R->lock);
	atomic_store(&R->stop, true);
	return -1;
}

/* The bytes sent before a failure, to replay against the service. */
static void dump(const struct fz *f, const char *what, const uint8_t *p,
		 size_t n)
{
	size_t i, show = n < 4096 ? n : 4096;

	flockfile(stderr);
	fprintf(stderr, "csi-fuzz: reproducer (seed 0x%llx, connection %u): %s: %zu bytes on a fresh connection%s:\n",
		(unsigned long long)f->R->o->seed, f->id, what, n,
		show < n ? " (first 4096 shown)" : "");
	for (i = 0; i < show; i++)
		fprintf(stderr, "%02x%s", p[i], i % 32 == 31 ? "\n" : "");
	fputc('\n', stderr);
	funlockfile(stderr);
}

static uint64_t rnd(struct fz *f)
{
	return sc_prng_next(&f->r);
}

static uint32_t below(struct fz *f, uint32_t n)
{
	return sc_prng_below(&f->r, n);
}

static bool all_zero(const uint8_t *p, size_t n)
{
	while (n && !*p) {
		p++;
		n--;
	}
	return !n;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- sockets ---- */

static int tcp_connect(struct run *R)
{
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_MS / 1000 };
	int fd = socket(R->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1, err;

	if (fd < 0)
		return -errno;
	/* Blocking I/O that gives up: a hang is a finding, not a stuck test. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&R->addr, R->addrlen)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void drop_conn(struct fz *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* 0, -EPIPE when the server is gone, -ETIMEDOUT, or another error. */
static int send_all(int fd, const uint8_t *p, size_t n)
{
	ssize_t k;

	while (n) {
		k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return errno == EAGAIN ? -ETIMEDOUT :
			       errno == ECONNRESET ? -EPIPE : -errno;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* n bytes; 1, 0 at end of stream (or reset), -ETIMEDOUT, -errno. */
static int recv_all(int fd, uint8_t *p, size_t n)
{
	ssize_t k;

	while (n) {
		k = recv(fd, p, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return 0;
		if (k < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		p += k;
		n -= (size_t)k;
	}
	return 1;
}

/* A whole reply record into f->rx; 1, 0 (closed), or a negative errno. */
static int recv_record(struct fz *f, int fd, size_t *len)
{
	uint8_t mark[4];
	uint32_t v, n;
	size_t have = 0;
	uint8_t *p;
	int rc;

	do {
		rc = recv_all(fd, mark, 4);
		if (rc <= 0)
			return rc;
		v = sc_get_be32(mark);
		n = v & SC_RPC_RM_LEN_MASK;
		if (have + n > MAX_REPLY)
			return -EMSGSIZE;
		if (have + n > f->rx_cap) {
			p = realloc(f->rx, have + n);
			if (!p)
				return -ENOMEM;
			f->rx = p;
			f->rx_cap = have + n;
		}
		rc = recv_all(fd, f->rx + have, n);
		if (rc <= 0)
			return rc;
		have += n;
	} while (!(v & SC_RPC_RM_LAST));
	*len = have;
	return 1;
}

/* Whether fd has something to read within ms. */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) > 0;
}

/* ---- building calls ---- */

static void rnd_bytes(struct fz *f, void *p, size_t n)
{
	sc_prng_fill(&f->r, p, n);
}

/* n bytes of a string: no NUL. */
static void rnd_string(struct fz *f, uint8_t *p, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(below(f, 2) ? 'a' + below(f, 26) :
				 1 + below(f, 255));
}

static void pool_add(struct run *R, uint64_t host)
{
	pthread_mutex_lock(&R->lock);
	R->pool[R->npool++ % POOL] = host;
	pthread_mutex_unlock(&R->lock);
}

static uint64_t pool_pick(struct fz *f)
{
	struct run *R = f->R;
	uint64_t h;

	pthread_mutex_lock(&R->lock);
	h = R->npool ? R->pool[below(f, R->npool < POOL ? R->npool : POOL)] :
		       R->good_host;
	pthread_mutex_unlock(&R->lock);
	return h;
}

static void pick_hdr(struct fz *f, struct csi_reqhdr *h)
{
	struct run *R = f->R;
	struct callbuf *cb = f->cb;
	uint32_t d = below(f, 20), i, n;

	h->host = d < 7 && f->host ? f->host : d < 13 ? pool_pick(f) :
		  d < 16 ? R->good_host : d < 17 ? 0 : rnd(f);
	d = below(f, 20);
	h->epoch = d < 17 ? R->epoch : d < 19 ? rnd(f) : R->epoch ^ 1;
	d = below(f, 100);
	n = d < 70 ? 0 : d < 90 ? 1 + below(f, 8) :
	    d < 97 ? R->max_evict + below(f, 3) - 1 : CSI_MAX_EVICT;
	if (n > CSI_MAX_EVICT)
		n = CSI_MAX_EVICT;
	for (i = 0; i < n; i++) {
		if (below(f, 2))
			cb->ev[i] = R->hash[below(f, (uint32_t)R->nblk)];
		else
			rnd_bytes(f, &cb->ev[i], sizeof(cb->ev[i]));
	}
	h->evicted = cb->ev;
	h->nevicted = n;
}

static uint64_t pick_file(struct fz *f, bool write)
{
	const struct csi_fuzz_opts *o = f->R->o;

	switch (below(f, 12)) {
	case 0: return 0;
	case 1: return 1;			/* the root directory */
	case 2: return rnd(f);
	case 3: return o->file + 1 + below(f, 4);	/* neighbours */
	case 4: case 5: case 6: return o->scratch;
	default: return write ? o->scratch : o->file;
	}
}

static uint64_t pick_lbn(struct fz *f)
{
	uint64_t n = f->R->nblk;

	switch (below(f, 12)) {
	case 0: return 0;
	case 1: return n - below(f, 4);
	case 2: return UINT64_MAX - below(f, 8);
	case 3: return UINT64_MAX / f->R->bs - below(f, 4);
	case 4: return rnd(f);
	case 5: case 6: return below(f, HOT_BLOCKS);
	default: return below(f, (uint32_t)n + 8);
	}
}

static uint32_t pick_count(struct fz *f)
{
	uint32_t m = f->R->max_blocks;

	switch (below(f, 10)) {
	case 0: return 0;
	case 1: return m + 1;
	case 2: return CSI_MAX_BLOCKS + below(f, 2);
	case 3: return (uint32_t)rnd(f);
	default: return 1 + below(f, m);
	}
}

static uint32_t pick_flags(struct fz *f)
{
	static const uint32_t common[] = {
		CSI_READ_WANT_DATA,
		CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA,
		0,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_DELEG,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_DELEG |
			CSI_READ_ACCEPT_PUSH,
		CSI_READ_FORCE_DATA,
	};

	if (below(f, 5))
		return common[below(f, SC_ARRAY_SIZE(common))];
	return below(f, 2) ? below(f, 256) : (uint32_t)rnd(f);
}

static void build_hello(struct fz *f, struct csi_hello_args *a)
{
	struct callbuf *cb = f->cb;
	uint32_t d = below(f, 20);

	if (d < 17)
		memcpy(a->host_uuid, f->uuids[below(f, UUIDS)],
		       sizeof(a->host_uuid));
	else if (d < 19)
		rnd_bytes(f, a->host_uuid, sizeof(a->host_uuid));
	a->host_name.len = below(f, 10) ? below(f, 33) : CSI_MAX_NAME;
	rnd_string(f, cb->str1, a->host_name.len);
	a->host_name.p = cb->str1;
	/* Mostly hosts that may serve peers: delegations need them. */
	switch (below(f, 10)) {
	case 0: case 1: case 2: case 5: case 6:
		a->peer.family = CSI_AF_INET;
		a->peer.addr[0] = 127;
		a->peer.addr[3] = 1;
		a->peer.port = 1 + below(f, 65535);
		break;
	case 3:
		a->peer.family = CSI_AF_INET6;
		a->peer.addr[15] = 1;
		a->peer.port = 1 + below(f, 65535);
		break;
	case 4:				/* breaks §3.3.3 */
		a->peer.family = below(f, 3);
		rnd_bytes(f, a->peer.addr, sizeof(a->peer.addr));
		a->peer.port = below(f, 2) ? 0 : (uint32_t)rnd(f);
		break;
	default:
		break;
	}
	a->cache_bytes = rnd(f);
	d = below(f, 10);
	a->features = d < 5 ? CSI_FEAT_ALL : d < 8 ? below(f, CSI_FEAT_ALL + 1) :
						    (uint32_t)rnd(f);
}

/*
 * Mostly WRITEs the server takes (§7.4: end within the last block, zeros
 * past it, the hash of the zero-filled block), of new content, of content
 * the store has (hash-only blocks need it) and of zeros.
 */
static void build_write(struct fz *f, struct csi_write_args *a)
{
	struct run *R = f->R;
	struct callbuf *cb = f->cb;
	uint32_t i, d, tail;

	pick_hdr(f, &a->hdr);
	a->file = pick_file(f, true);
	a->lbn = below(f, 4) ? below(f, 64) : pick_lbn(f);
	a->nblocks = below(f, 8) ? 1 + below(f, 2) : below(f, WRITE_BLOCKS + 1);
	tail = below(f, 2) ? R->bs : 1 + below(f, R->bs);
	a->end = below(f, 8) ? (a->lbn + a->nblocks - 1) * R->bs + tail :
			       rnd(f);
	a->stable = below(f, 3);
	for (i = 0; i < a->nblocks; i++) {
		struct csi_write_block *b = &cb->wb[i];
		uint8_t *data = cb->wdata[i];

		memset(b, 0, sizeof(*b));
		d = below(f, 10);
		if (d < 4)
			rnd_bytes(f, data, R->bs);
		else if (d < 8)		/* as read: hash-only writes pass */
			memcpy(data, R->o->content +
			       (size_t)below(f, HOT_BLOCKS) * R->bs, R->bs);
		else
			memset(data, 0, R->bs);
		b->data.len = below(f, 8) ? R->bs : below(f, R->bs + 1);
		memset(data + b->data.len, 0, R->bs - b->data.len);
		if (i + 1 == a->nblocks && below(f, 8))
			memset(data + tail, 0, R->bs - tail);
		b->kind = below(f, 3) ? CSI_WK_DATA : CSI_WK_HASH;
		b->data.p = data;
		if (below(f, 8))
			sc_hasher_digest(f->hs, data, R->bs, &b->hash);
		else
			rnd_bytes(f, &b->hash, sizeof(b->hash));
	}
	a->blocks = cb->wb;
}

/*
 * Mostly GET_MAPs the server takes (1 to 16 files, none twice, 1 to 2048
 * blocks), and the calls it answers INVAL or TOO_BIG: no file, a file
 * twice, a count of 0 or over the limit.
 */
static void build_map(struct fz *f, struct csi_getmap_args *a)
{
	struct callbuf *cb = f->cb;
	uint32_t i, d = below(f, 10);

	pick_hdr(f, &a->hdr);
	a->nfiles = d < 4 ? 1 + below(f, 4) : d < 8 ?
		    1 + below(f, CSI_MAX_MAP_FILES) :
		    d < 9 ? CSI_MAX_MAP_FILES : 0;
	for (i = 0; i < a->nfiles; i++)
		cb->files[i] = i && !below(f, 16) ? cb->files[below(f, i)] :
			       pick_file(f, false);
	a->files = cb->files;
	a->lbn = pick_lbn(f);
	switch (below(f, 10)) {
	case 0: a->count = 0; break;
	case 1: a->count = CSI_MAX_MAP_BLOCKS + below(f, 2); break;
	case 2: a->count = (uint32_t)rnd(f); break;
	case 3: a->count = CSI_MAX_MAP_BLOCKS; break;
	default:
		a->count = 1 + below(f, below(f, 2) ? f->R->max_blocks :
						      CSI_MAX_MAP_BLOCKS);
		break;
	}
}

/* Arguments of a valid call of proc into f->cb; a pointer to them. */
/*
 * Failed delegations of known hosts and contents, their tokens forged:
 * the server must ignore every one (§7.12).
 */
static void build_report(struct fz *f, struct csi_peer_report_args *a)
{
	struct csi_peer_failure *pf = f->cb->failures;
	uint32_t i;

	pick_hdr(f, &a->hdr);
	a->nfailures = below(f, 4) ? below(f, 4) :
				     below(f, CSI_MAX_PEER_REPORTS + 1);
	for (i = 0; i < a->nfailures; i++) {
		pf[i].peer_host = below(f, 2) ? pool_pick(f) : rnd(f);
		pf[i].hash = f->R->hash[below(f, (uint32_t)f->R->nblk)];
		pf[i].token.expiry = below(f, 2) ? (uint64_t)time(NULL) + 10 :
						   rnd(f);
		rnd_bytes(f, pf[i].token.mac, CSI_MAC_SIZE);
	}
	a->failures = pf;
}

static const void *build_args(struct fz *f, uint32_t proc)
{
	struct callbuf *cb = f->cb;

	memset(&cb->a, 0, sizeof(cb->a));
	switch (proc) {
	case CSI_PROC_HELLO:
		build_hello(f, &cb->a.hello);
		break;
	case CSI_PROC_LOOKUP:
		pick_hdr(f, &cb->a.lookup.hdr);
		cb->a.lookup.export_path.len = below(f, 4) ? 1 + below(f, 16) :
					       below(f, CSI_MAX_PATH + 1);
		rnd_string(f, cb->str1, cb->a.lookup.export_path.len);
		cb->str1[0] = '/';
		cb->a.lookup.export_path.p = cb->str1;
		cb->a.lookup.path.len = below(f, 4) ? below(f, 16) :
					below(f, CSI_MAX_PATH + 1);
		rnd_string(f, cb->str2, cb->a.lookup.path.len);
		cb->a.lookup.path.p = cb->str2;
		break;
	case CSI_PROC_GET_HASHES:
		pick_hdr(f, &cb->a.gh.hdr);
		cb->a.gh.file = pick_file(f, false);
		cb->a.gh.lbn = pick_lbn(f);
		cb->a.gh.count = pick_count(f);
		break;
	case CSI_PROC_READ:
		pick_hdr(f, &cb->a.read.hdr);
		cb->a.read.file = pick_file(f, false);
		cb->a.read.lbn = pick_lbn(f);
		cb->a.read.count = pick_count(f);
		cb->a.read.flags = pick_flags(f);
		break;
	case CSI_PROC_WRITE:
		build_write(f, &cb->a.write);
		break;
	case CSI_PROC_COMMIT:
		pick_hdr(f, &cb->a.commit.hdr);
		cb->a.commit.file = pick_file(f, false);
		break;
	case CSI_PROC_EVICT:
		pick_hdr(f, &cb->a.evict.hdr);
		break;
	case CSI_PROC_STATS:
		cb->a.stats.per_host = below(f, 2);
		break;
	case CSI_PROC_GET_MAP:
		build_map(f, &cb->a.map);
		break;
	case CSI_PROC_PEER_REPORT:
		build_report(f, &cb->a.report);
		break;
	default:
		break;
	}
	return &cb->a;
}

/* A valid AUTH_SYS credential body (RFC 5531 appendix A). */
static uint32_t authsys_body(struct fz *f, uint8_t *out, size_t cap)
{
	static const uint8_t name[] = "fuzz";
	const uint8_t *np = name;
	uint32_t v, n = below(f, 4), len = 4, i;
	struct sc_xdr x;

	sc_xdr_init_encode(&x, out, cap);
	v = (uint32_t)rnd(f);
	sc_xdr_u32(&x, &v);
	sc_xdr_string(&x, &np, &len, 255);
	v = below(f, 2000);
	sc_xdr_u32(&x, &v);
	sc_xdr_u32(&x, &v);
	sc_xdr_u32(&x, &n);
	for (i = 0; i < n; i++)
		sc_xdr_u32(&x, &v);
	return (uint32_t)x.pos;
}

/* A valid call of proc into f->body; its xid.  0, or a failure. */
static int encode_call(struct fz *f, uint32_t proc, uint32_t *xid)
{
	const struct csi_proc_info *pi = csi_proc_find(CSI_PROG, proc);
	struct sc_rpc_call_hdr h = { .xid = (uint32_t)rnd(f),
				     .rpcvers = SC_RPC_VERSION,
				     .prog = CSI_PROG, .vers = CSI_VERS,
				     .proc = proc };
	const void *args = build_args(f, proc);
	struct sc_xdr x;
	size_t alen;

	if (!below(f, 4)) {
		h.cred.flavor = SC_RPC_AUTH_SYS;
		h.cred.body = f->cb->cred;
		h.cred.len = authsys_body(f, f->cb->cred, sizeof(f->cb->cred));
	}
	sc_xdr_init_encode(&x, f->body, BODY_CAP);
	sc_rpc_xdr_call_hdr(&x, &h);
	if (x.err || csi_encode(pi->args, args, f->body + x.pos,
				BODY_CAP - x.pos, &alen))
		return fail(f->R, "cannot encode a %s call", pi->name);
	f->blen = x.pos + alen;
	*xid = h.xid;
	return 0;
}

/* A valid call of a random procedure, weighted towards READ. */
static int encode_any(struct fz *f, uint32_t *xid)
{
	static const uint8_t weights[] = { 4, 3, 5, 16, 27, 14, 2, 12, 8, 5,
					   4 };
	uint32_t d = below(f, 100), proc = 0;

	while (d >= weights[proc]) {
		d -= weights[proc];
		proc++;
	}
	return encode_call(f, proc, xid);
}

/* ---- mutations ---- */

static uint32_t interesting(struct fz *f)
{
	static const uint32_t v[] = { 0, 1, 2, 3, 4, 0x7f, 0x80, 0xff, 0x100,
				      0x1000, 0xffff, 0x10000, 0x7fffffff,
				      0x80000000, 0xfffffffe, 0xffffffff,
				      CSI_MAX_BLOCKS + 1, CSI_MAX_EVICT + 1,
				      CSI_MAX_PATH + 1, CSI_MAX_NAME + 1 };

	return below(f, 4) ? v[below(f, SC_ARRAY_SIZE(v))] : (uint32_t)rnd(f);
}

/* Header words: type, rpcvers, prog, vers, proc, cred flavor, cred len. */
static uint32_t header_value(struct fz *f, unsigned int word)
{
	static const uint32_t progs[] = { CSI_PEER_PROG, 100003, 0 };

	switch (word) {
	case 1: return below(f, 2) ? SC_RPC_REPLY : 2;
	case 2: return below(f, 2) ? 1 + 2 * below(f, 2) : interesting(f);
	case 3: return below(f, 2) ? progs[below(f, 3)] : interesting(f);
	case 4: return below(f, 2) ? 2 * below(f, 2) : interesting(f);
	case 5: return below(f, 2) ? PROC_NONE + below(f, 8) :
				     interesting(f);
	case 6: return below(f, 2) ? 1 + below(f, 6) : interesting(f);
	default: return below(f, 2) ? 401 + below(f, 4) : interesting(f);
	}
}

static void mutate(struct fz *f)
{
	unsigned int n = 1 + below(f, 3), k;
	size_t off;

	while (n--) {
		switch (below(f, 8)) {
		case 0:			/* bit flips */
			for (k = 1 + below(f, 8); k && f->blen; k--)
				f->body[below(f, (uint32_t)f->blen)] ^=
					(uint8_t)(1u << below(f, 8));
			break;
		case 1:			/* random bytes */
			for (k = 1 + below(f, 4); k && f->blen; k--)
				f->body[below(f, (uint32_t)f->blen)] =
					(uint8_t)rnd(f);
			break;
		case 2:			/* a word set to a telling value */
			if (f->blen < 4)
				break;
			off = 4 * (size_t)below(f, (uint32_t)(f->blen / 4));
			sc_put_be32(f->body + off, interesting(f));
			break;
		case 3:			/* truncated */
			f->blen = below(f, (uint32_t)f->blen + 1);
			break;
		case 4:			/* bytes left over */
			k = 1 + below(f, 64);
			if (f->blen + k <= BODY_CAP) {
				rnd_bytes(f, f->body + f->blen, k);
				f->blen += k;
			}
			break;
		case 5:			/* a word inserted or removed */
			off = 4 * (size_t)below(f, (uint32_t)(f->blen / 4 + 1));
			if (below(f, 2) && f->blen + 4 <= BODY_CAP) {
				memmove(f->body + off + 4, f->body + off,
					f->blen - off);
				sc_put_be32(f->body + off, interesting(f));
				f->blen += 4;
			} else if (off + 4 <= f->blen) {
				memmove(f->body + off, f->body + off + 4,
					f->blen - off - 4);
				f->blen -= 4;
			}
			break;
		case 6:			/* a header field */
			k = 1 + below(f, 7);
			if (f->blen >= 4 * (k + 1))
				sc_put_be32(f->body + 4 * k,
					    header_value(f, k));
			break;
		default:		/* a count (or length) inflated */
			if (f->blen < 44)
				break;
			off = 40 + 4 * (size_t)below(f,
					(uint32_t)((f->blen - 40) / 4));
			k = sc_get_be32(f->body + off);
			sc_put_be32(f->body + off,
				    below(f, 2) ? k + 1 + below(f, 4096) :
						  0x40000000u + below(f, 16));
			break;
		}
	}
}

/* ---- judging answers ---- */

enum answer {
	A_DROP = 1u << 0,		/* the connection closed */
	A_ANY = 1u << 1,		/* any well-formed reply */
	A_RPC_MISMATCH = 1u << 2,
	A_TOOWEAK = 1u << 3,
	A_BADCRED = 1u << 4,
	A_AUTH_ANY = 1u << 5,
	A_PROG_UNAVAIL = 1u << 6,
	A_PROG_MISMATCH = 1u << 7,
	A_PROC_UNAVAIL = 1u << 8,
	A_GARBAGE = 1u << 9,
	A_SUCCESS = 1u << 10,
};

/* Room for decoding n bytes of message m into f->args. */
static int decode_msg(struct fz *f, enum csi_msg m, const uint8_t *in,
		      size_t n, void *out)
{
	size_t alen = csi_decode_arena_size(m, n);
	uint8_t *p;

	if (alen > f->arena_cap) {
		p = realloc(f->arena, alen);
		if (!p)
			return -ENOMEM;
		f->arena = p;
		f->arena_cap = alen;
	}
	return csi_decode(m, in, n, out, f->arena, alen);
}

/*
 * The decoded GET_MAP arguments' files out of the arena, which decoding
 * the result reuses: check_map needs them.
 */
static void keep_map_files(struct fz *f)
{
	struct csi_getmap_args *a = f->args;

	if (a->nfiles)
		memcpy(f->map_files, a->files, a->nfiles * sizeof(*a->files));
	a->files = f->map_files;
}

/*
 * The answers PROTOCOL.md §1.2 allows for call record b (a set: each
 * fault of the call allows its own answer, whichever the server checks
 * first).  The header into *ch, the procedure into *pi, and, for
 * A_SUCCESS, the decoded arguments into f->args.
 */
static unsigned int allowed(struct fz *f, const uint8_t *b, size_t n,
			    struct sc_rpc_call_hdr *ch,
			    const struct csi_proc_info **pi)
{
	struct sc_rpc_auth_sys sys;
	unsigned int m = 0;
	struct sc_xdr x;

	*pi = NULL;
	sc_xdr_init_decode(&x, b, n, NULL, 0);
	sc_rpc_xdr_call_hdr(&x, ch);
	if (x.err)
		return A_DROP | A_ANY;
	if (ch->rpcvers != SC_RPC_VERSION)
		m |= A_RPC_MISMATCH;
	if (ch->cred.flavor > SC_RPC_AUTH_SYS)
		m |= A_TOOWEAK;
	if (ch->cred.flavor == SC_RPC_AUTH_SYS &&
	    sc_rpc_auth_sys_decode(&ch->cred, &sys))
		m |= A_BADCRED;
	if (ch->verf.flavor != SC_RPC_AUTH_NONE)
		m |= A_AUTH_ANY;	/* "a receiver MAY ignore it" */
	if (ch->prog != CSI_PROG)
		m |= A_PROG_UNAVAIL;
	else if (ch->vers != CSI_VERS)
		m |= A_PROG_MISMATCH;
	else if (!(*pi = csi_proc_find(CSI_PROG, ch->proc)))
		m |= A_PROC_UNAVAIL;
	else if (decode_msg(f, (*pi)->args, b + x.pos, n - x.pos, f->args))
		m |= A_GARBAGE;
	else if (ch->proc == CSI_PROC_GET_MAP)
		keep_map_files(f);
	/* a verifier may be ignored */
	if (!(m & ~A_AUTH_ANY))
		m |= A_SUCCESS;
	return m;
}

static uint32_t blocks_within(const struct run *R, uint64_t size,
			      uint64_t lbn, uint32_t count)
{
	uint64_t n = size / R->bs + (size % R->bs != 0);

	if (lbn >= n)
		return 0;
	return n - lbn < count ? (uint32_t)(n - lbn) : count;
}

/* Block lbn of the known file answered as kind, hash, data. */
static int check_known(struct run *R, uint64_t lbn, uint32_t kind,
		       const struct sc_hash *h, const struct csi_bytes *data,
		       char *why, size_t wl)
{
	const uint8_t *c = R->o->content + lbn * R->bs;
	uint64_t in_file;
	uint32_t n;

	if (lbn >= R->nblk) {
		snprintf(why, wl, "block %llu is past the end of the file",
			 (unsigned long long)lbn);
		return -1;
	}
	if (R->hole[lbn] != (kind == CSI_RK_HOLE)) {
		snprintf(why, wl, "block %llu (%s) answered as kind %u",
			 (unsigned long long)lbn,
			 R->hole[lbn] ? "a hole" : "data", kind);
		return -1;
	}
	if (kind == CSI_RK_HOLE)
		return 0;
	if (!sc_hash_eq(h, &R->hash[lbn])) {
		snprintf(why, wl, "block %llu: wrong hash",
			 (unsigned long long)lbn);
		return -1;
	}
	if (kind != CSI_RK_DATA)
		return 0;
	/* The bytes, zero-filled to the block size (§7.3), are the file's. */
	in_file = R->o->size - lbn * R->bs;
	if (in_file > R->bs)
		in_file = R->bs;
	n = data->len < in_file ? data->len : (uint32_t)in_file;
	if (data->len > R->bs || memcmp(data->p, c, n)) {
		snprintf(why, wl, "block %llu: %u bytes of data that are not the file's",
			 (unsigned long long)lbn, data->len);
		return -1;
	}
	if (!all_zero(data->p + n, data->len - n) ||
	    !all_zero(c + n, in_file - n)) {
		snprintf(why, wl, "block %llu: data differs after byte %u",
			 (unsigned long long)lbn, n);
		return -1;
	}
	return 0;
}

static int check_read(struct run *R, const struct csi_read_args *a,
		      const struct csi_read_res *r, char *why, size_t wl)
{
	bool known = a->file == R->o->file;
	uint32_t i, want;

	if (r->status != CSI_OK)
		return 0;
	want = blocks_within(R, r->attr.size, a->lbn, a->count);
	if (r->attr.file != a->file || r->nblocks != want ||
	    (known && r->attr.size != R->o->size)) {
		snprintf(why, wl, "READ of file %llu at %llu count %u: attr file %llu size %llu, %u blocks",
			 (unsigned long long)a->file,
			 (unsigned long long)a->lbn, a->count,
			 (unsigned long long)r->attr.file,
			 (unsigned long long)r->attr.size, r->nblocks);
		return -1;
	}
	if (r->npushed > R->max_push ||
	    (r->npushed && !(a->flags & CSI_READ_ACCEPT_PUSH))) {
		snprintf(why, wl, "READ with flags 0x%x: %u pushed entries",
			 a->flags, r->npushed);
		return -1;
	}
	for (i = 0; i < r->nblocks; i++) {
		const struct csi_read_block *b = &r->blocks[i];
		bool bad;

		switch (b->kind) {
		case CSI_RK_DATA:
			bad = !(a->flags & CSI_READ_WANT_DATA) ||
			      b->data.len > R->bs;
			break;
		case CSI_RK_HASH:
			bad = a->flags & CSI_READ_FORCE_DATA;
			break;
		case CSI_RK_DELEGATED:
			bad = !(a->flags & CSI_READ_WANT_DATA) ||
			      !(a->flags & CSI_READ_ACCEPT_DELEG) ||
			      (a->flags & CSI_READ_FORCE_DATA) ||
			      b->peer.family == CSI_AF_NONE;
			break;
		default:
			bad = false;
			break;
		}
		if (bad) {
			snprintf(why, wl, "READ with flags 0x%x: block %u answered as kind %u",
				 a->flags, i, b->kind);
			return -1;
		}
		if (known && check_known(R, a->lbn + i, b->kind, &b->hash,
					 &b->data, why, wl))
			return -1;
	}
	/* Every push naming the known file tells its (unchanging) state. */
	for (i = 0; i < r->npushed; i++) {
		const struct csi_push_entry *p = &r->pushed[i];

		if (p->file == R->o->file &&
		    (p->lbn >= R->nblk || R->hole[p->lbn] ||
		     !sc_hash_eq(&p->hash, &R->hash[p->lbn]))) {
			snprintf(why, wl, "pushed entry for block %llu of the file is false",
				 (unsigned long long)p->lbn);
			return -1;
		}
	}
	return 0;
}

static int check_hashes(struct run *R, const struct csi_gethashes_args *a,
			const struct csi_gethashes_res *r, char *why,
			size_t wl)
{
	bool known = a->file == R->o->file;
	uint32_t i;

	if (r->status != CSI_OK)
		return 0;
	if (r->attr.file != a->file ||
	    r->nblocks != blocks_within(R, r->attr.size, a->lbn, a->count) ||
	    (known && r->attr.size != R->o->size)) {
		snprintf(why, wl, "GET_HASHES of file %llu at %llu count %u: attr file %llu size %llu, %u blocks",
			 (unsigned long long)a->file,
			 (unsigned long long)a->lbn, a->count,
			 (unsigned long long)r->attr.file,
			 (unsigned long long)r->attr.size, r->nblocks);
		return -1;
	}
	for (i = 0; known && i < r->nblocks; i++)
		if (check_known(R, a->lbn + i,
				r->blocks[i].kind == CSI_HK_HOLE ?
					CSI_RK_HOLE : CSI_RK_HASH,
				&r->blocks[i].hash, NULL, why, wl))
			return -1;
	return 0;
}

static bool map_hole(const struct csi_map_file *m, uint32_t i)
{
	return m->holes[i / 8] & (1u << (i % 8));
}

static bool map_args_ok(const struct csi_getmap_args *a)
{
	uint32_t i, j;

	if (!a->nfiles || a->nfiles > CSI_MAX_MAP_FILES || !a->count ||
	    a->count > CSI_MAX_MAP_BLOCKS)
		return false;
	for (i = 1; i < a->nfiles; i++)
		for (j = 0; j < i; j++)
			if (a->files[i] == a->files[j])
				return false;
	return true;
}

/*
 * §7.11: an OK call was well formed and has an entry per file; an OK
 * entry has ⌈n / 8⌉ bytes of holes, no bit past n, a hash per other
 * block, and for the known file its true map.
 */
static int check_map(struct run *R, const struct csi_getmap_args *a,
		     const struct csi_getmap_res *r, char *why, size_t wl)
{
	uint32_t i, j, k, n, holes;

	if (r->status != CSI_OK)
		return 0;
	if (!map_args_ok(a) || r->nfiles != a->nfiles) {
		snprintf(why, wl, "GET_MAP of %u files at %llu count %u: answered OK with %u files",
			 a->nfiles, (unsigned long long)a->lbn, a->count,
			 r->nfiles);
		return -1;
	}
	for (i = 0; i < r->nfiles; i++) {
		const struct csi_map_file *m = &r->files[i];
		bool known = a->files[i] == R->o->file;

		if (m->status != CSI_OK)
			continue;
		n = blocks_within(R, m->attr.size, a->lbn, a->count);
		for (j = holes = 0; j < n && m->nholes_bytes == (n + 7) / 8; j++)
			holes += map_hole(m, j);
		if (m->attr.file != a->files[i] ||
		    (known && m->attr.size != R->o->size) ||
		    m->nholes_bytes != (n + 7) / 8 ||
		    (n % 8 && m->holes[n / 8] >> (n % 8)) ||
		    m->nhashes != n - holes) {
			snprintf(why, wl, "GET_MAP at %llu count %u, file %u (%llu): attr file %llu size %llu, %u bytes of holes, %u hashes",
				 (unsigned long long)a->lbn, a->count, i,
				 (unsigned long long)a->files[i],
				 (unsigned long long)m->attr.file,
				 (unsigned long long)m->attr.size,
				 m->nholes_bytes, m->nhashes);
			return -1;
		}
		for (j = k = 0; known && j < n; j++)
			if (check_known(R, a->lbn + j,
					map_hole(m, j) ? CSI_RK_HOLE :
							 CSI_RK_HASH,
					map_hole(m, j) ? NULL : &m->hashes[k++],
					NULL, why, wl))
				return -1;
	}
	return 0;
}

static int check_write(const struct csi_write_args *a,
		       const struct csi_write_res *r, char *why, size_t wl)
{
	if (r->status != CSI_OK)
		return 0;
	if (r->attr.file != a->file || r->nblocks != a->nblocks ||
	    r->committed < a->stable) {
		snprintf(why, wl, "WRITE of %u blocks to file %llu, stable %u: answer for file %llu, %u blocks, committed %u",
			 a->nblocks, (unsigned long long)a->file, a->stable,
			 (unsigned long long)r->attr.file, r->nblocks,
			 r->committed);
		return -1;
	}
	return 0;
}

/* What is certain of a decoded result, given its arguments. */
static int check_result(struct run *R, uint32_t proc, const void *args,
			const void *res, char *why, size_t wl)
{
	const struct csi_hello_res *h = res;
	const struct csi_stats_res *s = res;

	switch (proc) {
	case CSI_PROC_HELLO:
		if (h->status != CSI_OK)
			return 0;
		if (h->epoch != R->epoch || !h->host || h->block_size != R->bs) {
			snprintf(why, wl, "HELLO answered epoch %llx host %llx block size %u",
				 (unsigned long long)h->epoch,
				 (unsigned long long)h->host, h->block_size);
			return -1;
		}
		pool_add(R, h->host);
		return 0;
	case CSI_PROC_READ:
		return check_read(R, args, res, why, wl);
	case CSI_PROC_GET_HASHES:
		return check_hashes(R, args, res, why, wl);
	case CSI_PROC_WRITE:
		return check_write(args, res, why, wl);
	case CSI_PROC_GET_MAP:
		return check_map(R, args, res, why, wl);
	case CSI_PROC_STATS:
		if (s->status == CSI_OK && s->epoch != R->epoch) {
			snprintf(why, wl, "STATS answered epoch %llx",
				 (unsigned long long)s->epoch);
			return -1;
		}
		return 0;
	default:
		return 0;
	}
}

/*
 * Judge what came back for call record f->body: a reply record
 * (rx, rlen) or, rx NULL, a closed connection.  0 or a failure.
 */
static int judge(struct fz *f, const uint8_t *rx, size_t rlen)
{
	struct run *R = f->R;
	struct sc_rpc_call_hdr ch = { 0 };
	struct sc_rpc_reply_hdr rh = { 0 };
	const struct csi_proc_info *pi;
	unsigned int m = allowed(f, f->body, f->blen, &ch, &pi), got;
	char why[256] = "";
	struct sc_xdr x;

	if (!rx) {
		count(R, CT_DROPPED);
		if (m & A_DROP)
			return 0;
		snprintf(why, sizeof(why), "the server closed the connection instead of answering (allowed: 0x%x)",
			 m);
		goto bad;
	}
	count(R, CT_ANSWERED);
	sc_xdr_init_decode(&x, rx, rlen, NULL, 0);
	sc_rpc_xdr_reply_hdr(&x, &rh);
	if (x.err) {
		snprintf(why, sizeof(why), "malformed reply header");
		goto bad;
	}
	if (!(m & A_DROP) && rh.xid != ch.xid) {
		snprintf(why, sizeof(why), "reply xid %08x for call xid %08x",
			 rh.xid, ch.xid);
		goto bad;
	}
	if (rh.reply_stat == SC_RPC_MSG_DENIED) {
		count(R, CT_RPC_ERRORS);
		if (rh.reject_stat == SC_RPC_MISMATCH)
			got = rh.low == SC_RPC_VERSION &&
			      rh.high == SC_RPC_VERSION ? A_RPC_MISMATCH : 0;
		else if (rh.auth_stat == SC_RPC_AUTH_TOOWEAK)
			got = A_TOOWEAK | A_AUTH_ANY;
		else if (rh.auth_stat == SC_RPC_AUTH_BADCRED) {
			got = A_BADCRED | A_AUTH_ANY;
			count(R, CT_BADCRED);
		}
		else
			got = A_AUTH_ANY;
	} else if (rh.verf.flavor != SC_RPC_AUTH_NONE || rh.verf.len) {
		got = 0;		/* §1.2: always AUTH_NONE, empty */
	} else {
		switch (rh.accept_stat) {
		case SC_RPC_SUCCESS:
			got = A_SUCCESS;
			break;
		case SC_RPC_PROG_UNAVAIL:
			got = A_PROG_UNAVAIL;
			break;
		case SC_RPC_PROG_MISMATCH:
			got = rh.low == CSI_VERS && rh.high == CSI_VERS ?
			      A_PROG_MISMATCH : 0;
			break;
		case SC_RPC_PROC_UNAVAIL:
			got = A_PROC_UNAVAIL;
			break;
		case SC_RPC_GARBAGE_ARGS:
			count(R, CT_GARBAGE);
			got = A_GARBAGE;
			break;
		default:		/* SYSTEM_ERR: the server failed */
			got = 0;
			break;
		}
		if (rh.accept_stat != SC_RPC_SUCCESS &&
		    rh.accept_stat != SC_RPC_GARBAGE_ARGS)
			count(R, CT_RPC_ERRORS);
	}
	if (!(m & (got | A_ANY))) {
		snprintf(why, sizeof(why), "answer: reply_stat %u accept_stat %u reject_stat %u auth_stat %u low %u high %u (allowed: 0x%x)",
			 rh.reply_stat, rh.accept_stat, rh.reject_stat,
			 rh.auth_stat, rh.low, rh.high, m);
		goto bad;
	}
	if (got != A_SUCCESS || !pi)
		return 0;
	if (decode_msg(f, pi->res, rx + x.pos, rlen - x.pos, f->res)) {
		snprintf(why, sizeof(why), "the %s result does not decode",
			 pi->name);
		goto bad;
	}
	if (!check_result(R, pi->proc, f->args, f->res, why, sizeof(why))) {
		if (pi->proc == CSI_PROC_HELLO &&
		    ((struct csi_hello_res *)f->res)->status == CSI_OK)
			f->host = ((struct csi_hello_res *)f->res)->host;
		return 0;
	}
bad:
	dump(f, "a call record's body (send it behind the mark: its length | 0x80000000)",
	     f->body, f->blen);
	return fail(R, "connection %u, call xid %08x proc %u: %s", f->id,
		    ch.xid, ch.proc, why);
}

/* ---- framing and sending ---- */

/* f->body as one record into f->wire: one fragment, or several. */
static void frame(struct fz *f, bool fragments)
{
	uint32_t nfrag = fragments ? 2 + below(f, 6) : 1, i, len;
	size_t at = 0;

	f->wlen = 0;
	for (i = 0; i < nfrag; i++) {
		len = i + 1 == nfrag ? (uint32_t)(f->blen - at) :
		      below(f, 3) ? below(f, (uint32_t)(f->blen - at) + 1) : 0;
		sc_put_be32(f->wire + f->wlen,
			    len | (i + 1 == nfrag ? SC_RPC_RM_LAST : 0));
		memcpy(f->wire + f->wlen + 4, f->body + at, len);
		f->wlen += 4 + len;
		at += len;
	}
}

/*
 * Whether f->body, as the server decodes it, would write the known file:
 * such a call is never sent, so the good client's reference holds.
 */
static bool writes_known(struct fz *f)
{
	struct sc_rpc_call_hdr ch;
	const struct csi_write_args *a = f->args;
	struct sc_xdr x;

	sc_xdr_init_decode(&x, f->body, f->blen, NULL, 0);
	sc_rpc_xdr_call_hdr(&x, &ch);
	if (x.err || ch.proc != CSI_PROC_WRITE)
		return false;
	if (decode_msg(f, CSI_MSG_WRITE_ARGS, f->body + x.pos, f->blen - x.pos,
		       f->args))
		return false;
	return a->file == f->R->o->file;
}

/* Send f->wire in `pieces` writes, pausing up to pause_us between. */
static int send_pieces(struct fz *f, unsigned int pieces, uint32_t pause_us)
{
	size_t at = 0, n;
	int rc;

	count(f->R, CT_RECORDS);
	while (at < f->wlen) {
		n = --pieces ? below(f, (uint32_t)(f->wlen - at) + 1) :
			       f->wlen - at;
		rc = send_all(f->fd, f->wire + at, n);
		if (rc)
			return rc;
		at += n;
		if (pause_us && at < f->wlen)
			usleep(below(f, pause_us));
	}
	return 0;
}

/*
 * Send f->body (framed) and judge what comes back.  The connection is
 * gone afterwards if the server closed it.
 */
static int exchange(struct fz *f, bool fragments, unsigned int pieces,
		    uint32_t pause_us)
{
	size_t len;
	int rc;

	if (writes_known(f)) {
		count(f->R, CT_WITHHELD);
		return 0;
	}
	frame(f, fragments);
	rc = send_pieces(f, pieces, pause_us);
	if (rc == 0 || rc == -EPIPE)
		rc = recv_record(f, f->fd, &len);
	if (rc == 1)
		return judge(f, f->rx, len);
	if (rc == 0 || rc == -EPIPE) {
		drop_conn(f);
		return judge(f, NULL, 0);
	}
	dump(f, "record (mark included)", f->wire, f->wlen);
	return fail(f->R, "connection %u: %s waiting for the answer to that record",
		    f->id, strerror(-rc));
}

/* A connection the server has accepted (answered a NULL call); 0 or -1. */
static int ensure_conn(struct fz *f)
{
	uint32_t xid;
	size_t len;
	int rc;

	while (f->fd < 0 && !stopping(f->R)) {
		rc = tcp_connect(f->R);
		if (rc < 0)
			return fail(f->R, "connection %u: connect: %s", f->id,
				    strerror(-rc));
		f->fd = rc;
		if (encode_call(f, CSI_PROC_NULL, &xid))
			return -1;
		frame(f, false);
		rc = send_pieces(f, 1, 0);
		if (!rc || rc == -EPIPE)
			rc = recv_record(f, f->fd, &len);
		if (rc == 1)
			return judge(f, f->rx, len);
		drop_conn(f);
		if (rc < 0 && rc != -EPIPE)
			return fail(f->R, "connection %u: %s waiting for a NULL answer",
				    f->id, strerror(-rc));
		count(f->R, CT_REFUSED);	/* a burst holds every slot */
		usleep(1000);
	}
	return 0;
}

/* ---- actions of a fuzzing connection ---- */

static int act_valid(struct fz *f)
{
	uint32_t xid;

	if (encode_any(f, &xid))
		return -1;
	return exchange(f, below(f, 4) == 0, below(f, 4) ? 1 : 1 + below(f, 4),
			below(f, 8) ? 0 : 500);
}

static int act_mutated(struct fz *f)
{
	uint32_t xid;

	if (encode_any(f, &xid))
		return -1;
	mutate(f);
	return exchange(f, below(f, 8) == 0, 1, 0);
}

/* Several calls at once; answers matched by xid (§1.1: any order). */
static int act_pipeline(struct fz *f)
{
	/* Small enough for the socket buffers: we read only after sending. */
	enum { MAXP = 8, MAX_BYTES = 32 << 10 };
	uint8_t *bodies[MAXP] = { 0 };
	size_t blens[MAXP], len, at = 0;
	uint32_t xids[MAXP], n = 2 + below(f, MAXP - 1), i, k, xid;
	bool seen[MAXP] = { 0 };
	uint8_t *wire = malloc(n * (WIRE_CAP + 4));
	int rc = 0;

	if (!wire)
		return fail(f->R, "out of memory");
	for (i = 0; i < n && !rc; i++) {
		do {
			rc = encode_call(f, below(f, 2) ? CSI_PROC_READ :
					 below(f, 9), &xids[i]);
		} while (!rc && writes_known(f));
		bodies[i] = malloc(f->blen);
		if (!rc && !bodies[i])
			rc = fail(f->R, "out of memory");
		if (rc)
			break;
		memcpy(bodies[i], f->body, f->blen);
		blens[i] = f->blen;
		frame(f, false);
		if (i && at + f->wlen > MAX_BYTES) {
			free(bodies[i]);
			bodies[i] = NULL;
			n = i;
			break;
		}
		memcpy(wire + at, f->wire, f->wlen);
		at += f->wlen;
		count(f->R, CT_RECORDS);
	}
	if (!rc)
		rc = send_all(f->fd, wire, at);
	for (k = 0; k < n && !rc; k++) {
		rc = recv_record(f, f->fd, &len);
		if (rc != 1) {
			dump(f, "pipeline (records with marks)", wire, at);
			rc = fail(f->R, "connection %u: pipeline of %u calls: answer %u of them: %s",
				  f->id, n, k, rc ? strerror(-rc) : "closed");
			break;
		}
		xid = len >= 4 ? sc_get_be32(f->rx) : 0;
		for (i = 0; i < n && (seen[i] || xids[i] != xid); i++)
			;
		if (i == n) {
			dump(f, "pipeline (records with marks)", wire, at);
			rc = fail(f->R, "connection %u: pipeline answer for xid %08x: no such call",
				  f->id, xid);
			break;
		}
		seen[i] = true;
		memcpy(f->body, bodies[i], blens[i]);
		f->blen = blens[i];
		rc = judge(f, f->rx, len);
	}
	for (i = 0; i < n; i++)
		free(bodies[i]);
	free(wire);
	return rc;
}

/* A record mark over the limit: the server drops the connection. */
static int act_oversize(struct fz *f)
{
	uint8_t rec[64];
	uint32_t len = below(f, 2) ? SC_RPC_MAX_RECORD_DEFAULT + 1 +
				     below(f, 1u << 20) :
				     SC_RPC_RM_LEN_MASK - below(f, 1024);
	size_t n = 4 + below(f, 60), got;
	int rc;

	sc_put_be32(rec, len | (below(f, 2) ? SC_RPC_RM_LAST : 0));
	rnd_bytes(f, rec + 4, n - 4);
	count(f->R, CT_RECORDS);
	rc = send_all(f->fd, rec, n);
	if (!rc || rc == -EPIPE)
		rc = recv_record(f, f->fd, &got);
	drop_conn(f);
	if (rc == 0 || rc == -EPIPE) {
		count(f->R, CT_DROPPED);
		return 0;
	}
	dump(f, "record mark over the limit", rec, n);
	return fail(f->R, "connection %u: oversize record mark %08x: %s",
		    f->id, len, rc == 1 ? "answered" : strerror(-rc));
}

/*
 * Our close in the middle: of a record (the mark promised more), or
 * before reading the answer (a big one: the server writes to a peer
 * that has gone).
 */
static int act_cut(struct fz *f)
{
	uint32_t xid;
	int rc;

	if (below(f, 2)) {
		if (encode_call(f, CSI_PROC_READ, &xid))
			return -1;
		/* Every block as data, as much as there is. */
		sc_put_be32(f->body + f->blen - 8, f->R->max_blocks);
		sc_put_be32(f->body + f->blen - 4,
			    CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA);
		frame(f, false);
	} else {
		if (encode_any(f, &xid))
			return -1;
		if (writes_known(f))
			return 0;
		frame(f, below(f, 2));
		f->wlen = below(f, (uint32_t)f->wlen);
	}
	rc = send_pieces(f, 1 + below(f, 3), 0);
	if (rc && rc != -EPIPE)
		return fail(f->R, "connection %u: %s sending", f->id,
			    strerror(-rc));
	count(f->R, CT_CUT);
	drop_conn(f);
	return 0;
}

/* Bytes at random, some behind a plausible mark; answers well-formed. */
static int act_garbage(struct fz *f)
{
	size_t n = 1 + below(f, 2048), len;
	struct sc_rpc_reply_hdr rh;
	struct sc_xdr x;
	int rc;

	rnd_bytes(f, f->wire, n);
	if (below(f, 2) && n > 4)
		sc_put_be32(f->wire, (uint32_t)(n - 4) | SC_RPC_RM_LAST);
	count(f->R, CT_RECORDS);
	rc = send_all(f->fd, f->wire, n);
	while (!rc && readable(f->fd, 20)) {
		rc = recv_record(f, f->fd, &len);
		if (rc != 1)
			break;
		sc_xdr_init_decode(&x, f->rx, len, NULL, 0);
		sc_rpc_xdr_reply_hdr(&x, &rh);
		if (x.err) {
			dump(f, "random bytes", f->wire, n);
			return fail(f->R, "connection %u: malformed reply to random bytes",
				    f->id);
		}
		rc = 0;
	}
	count(f->R, CT_CUT);
	drop_conn(f);
	return 0;
}

/*
 * n connections at once, each sending the same NULL call (or, if
 * partial, every third only part of it): *answered and *refused count
 * the whole calls.
 */
static int burst(struct fz *f, unsigned int n, bool partial,
		 unsigned int *answered, unsigned int *refused)
{
	int *fds = malloc(n * sizeof(*fds));
	unsigned int i;
	uint32_t xid;
	size_t len;
	int rc = 0;

	*answered = *refused = 0;
	if (!fds)
		return fail(f->R, "out of memory");
	if (encode_call(f, CSI_PROC_NULL, &xid)) {
		free(fds);
		return -1;
	}
	frame(f, false);
	for (i = 0; i < n; i++) {
		fds[i] = tcp_connect(f->R);
		if (fds[i] < 0) {
			rc = fail(f->R, "burst: connect %u of %u: %s", i, n,
				  strerror(-fds[i]));
			n = i;
			break;
		}
	}
	for (i = 0; i < n && !rc; i++) {
		count(f->R, CT_RECORDS);
		rc = send_all(fds[i], f->wire, partial && i % 3 == 2 ?
				      4 + below(f, (uint32_t)f->wlen - 4) :
				      f->wlen);
		if (rc == -EPIPE)
			rc = 0;
		if (rc)
			rc = fail(f->R, "burst: send: %s", strerror(-rc));
	}
	for (i = 0; i < n && !rc; i++) {
		if (partial && i % 3 == 2)
			continue;
		rc = recv_record(f, fds[i], &len);
		if (rc == 1) {
			(*answered)++;
			rc = judge(f, f->rx, len);
		} else if (rc == 0 || rc == -EPIPE) {
			(*refused)++;
			count(f->R, CT_REFUSED);
			rc = 0;
		} else {
			rc = fail(f->R, "burst: connection %u of %u: %s", i, n,
				  strerror(-rc));
		}
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return rc;
}

/* A burst over the server's limit, now and then (one at a time). */
static int act_burst(struct fz *f)
{
	struct run *R = f->R;
	unsigned int answered, refused;
	int rc;

	if (pthread_mutex_trylock(&R->burst_lock))
		return 0;
	rc = 0;
	if (now() - R->last_burst >= 0.5) {
		rc = burst(f, R->o->max_conns + BURST_EXTRA, true, &answered,
			   &refused);
		R->last_burst = now();
	}
	pthread_mutex_unlock(&R->burst_lock);
	return rc;
}

static void *fuzz_main(void *arg)
{
	struct fz *f = arg;
	uint32_t d;
	int rc = 0;

	while (!rc && !stopping(f->R)) {
		rc = ensure_conn(f);
		if (rc || f->fd < 0)
			break;
		d = below(f, 100);
		if (d < 30)
			rc = act_valid(f);
		else if (d < 70)
			rc = act_mutated(f);
		else if (d < 78)
			rc = act_pipeline(f);
		else if (d < 84)
			rc = act_oversize(f);
		else if (d < 91)
			rc = act_cut(f);
		else if (d < 97)
			rc = act_garbage(f);
		else
			rc = act_burst(f);
	}
	drop_conn(f);
	return NULL;
}

/* ---- probes: exact outcomes ---- */

/* A call of proc with header words changed (index, value); its answer. */
static int probe_call(struct fz *f, uint32_t proc, unsigned int word,
		      uint32_t value, size_t cut, unsigned int want)
{
	struct sc_rpc_call_hdr ch;
	const struct csi_proc_info *pi;
	uint32_t xid;

	if (encode_call(f, proc, &xid))
		return -1;
	if (word)
		sc_put_be32(f->body + 4 * word, value);
	f->blen -= cut;
	if (allowed(f, f->body, f->blen, &ch, &pi) != want)
		return fail(f->R, "probe %u/%u: not the call intended", proc,
			    word);
	return exchange(f, false, 1, 0);
}

/* f's connection must be closed by the server after wire[0..n). */
static int probe_drop(struct fz *f, const uint8_t *wire, size_t n,
		      const char *what)
{
	size_t len;
	int rc;

	count(f->R, CT_RECORDS);
	rc = send_all(f->fd, wire, n);
	if (!rc || rc == -EPIPE)
		rc = recv_record(f, f->fd, &len);
	drop_conn(f);
	if (rc == 0 || rc == -EPIPE) {
		count(f->R, CT_DROPPED);
		return 0;
	}
	dump(f, what, wire, n < 256 ? n : 256);
	return fail(f->R, "probe: %s: the server did not close the connection (%s)",
		    what, rc == 1 ? "it answered" : strerror(-rc));
}

static int probes(struct fz *f)
{
	struct run *R = f->R;
	unsigned int answered, refused;
	uint32_t half = SC_RPC_MAX_RECORD_DEFAULT / 2 + 4, xid;
	uint8_t *big;
	int rc;

	/* §1.2 row by row on one connection, which then still works. */
	rc = ensure_conn(f);
	if (!rc)
		rc = probe_call(f, CSI_PROC_READ, 0, 0, 4, A_GARBAGE);
	if (!rc)
		rc = probe_call(f, CSI_PROC_READ, 3, CSI_PEER_PROG, 0,
				A_PROG_UNAVAIL);
	if (!rc)
		rc = probe_call(f, CSI_PROC_READ, 4, 2, 0, A_PROG_MISMATCH);
	if (!rc)
		rc = probe_call(f, CSI_PROC_NULL, 5, PROC_NONE, 0,
				A_PROC_UNAVAIL);
	if (!rc)
		rc = probe_call(f, CSI_PROC_STATS, 2, 3, 0, A_RPC_MISMATCH);
	if (!rc)
		rc = probe_call(f, CSI_PROC_NULL, 6, 6, 0, A_TOOWEAK);
	if (!rc)
		rc = probe_call(f, CSI_PROC_STATS, 0, 0, 0, A_SUCCESS);
	if (!rc && f->fd < 0)
		rc = fail(R, "probe: the connection did not survive RPC errors");
	if (rc)
		return rc;

	/* Not a call: the stream is dropped. */
	if (encode_call(f, CSI_PROC_NULL, &xid))
		return -1;
	sc_put_be32(f->body + 4, SC_RPC_REPLY);
	frame(f, false);
	rc = probe_drop(f, f->wire, f->wlen, "a REPLY sent as a call");
	/* A mark over the limit, and fragments adding up over it. */
	if (!rc)
		rc = ensure_conn(f);
	if (!rc) {
		sc_put_be32(f->wire, SC_RPC_RM_LAST | SC_RPC_RM_LEN_MASK);
		rc = probe_drop(f, f->wire, 4, "a record mark of 2 GiB");
	}
	if (!rc)
		rc = ensure_conn(f);
	big = rc ? NULL : calloc(1, 2 * (size_t)half + 8);
	if (!rc && !big)
		rc = fail(R, "out of memory");
	if (!rc) {
		sc_put_be32(big, half);
		sc_put_be32(big + 4 + half, half | SC_RPC_RM_LAST);
		rc = probe_drop(f, big, 2 * (size_t)half + 8,
				"two fragments over the record limit");
	}
	free(big);
	if (rc)
		return rc;

	/* A record in four fragments, two of them empty. */
	rc = ensure_conn(f);
	if (!rc)
		rc = encode_call(f, CSI_PROC_READ, &xid);
	if (!rc) {
		size_t a = f->blen / 3;

		memcpy(f->wire + 12, f->body, a);
		memcpy(f->wire + 16 + a, f->body + a, f->blen - a);
		sc_put_be32(f->wire, 0);
		sc_put_be32(f->wire + 4, 0);
		sc_put_be32(f->wire + 8, (uint32_t)a);
		sc_put_be32(f->wire + 12 + a,
			    (uint32_t)(f->blen - a) | SC_RPC_RM_LAST);
		f->wlen = 16 + f->blen;
		count(R, CT_RECORDS);
		rc = send_all(f->fd, f->wire, f->wlen);
		if (!rc) {
			size_t len;

			rc = recv_record(f, f->fd, &len);
			rc = rc == 1 ? judge(f, f->rx, len) :
			     fail(R, "probe: a record in fragments: %s",
				  rc ? strerror(-rc) : "closed");
		}
	}
	if (rc)
		return rc;

	/* More connections than the server takes. */
	rc = burst(f, R->o->max_conns + BURST_EXTRA, false, &answered,
		   &refused);
	if (!rc && refused < BURST_EXTRA)
		rc = fail(R, "probe: a burst of %u connections over a limit of %u: %u refused, %u answered",
			  R->o->max_conns + BURST_EXTRA, R->o->max_conns,
			  refused, answered);
	return rc;
}

/* ---- the good client ---- */

struct good {
	struct run *R;
	struct sc_rpc_client *c;
	struct sc_prng r;
	pthread_t thread;
};

static int good_call(struct good *g, uint32_t proc, const void *args,
		     void *res, struct sc_rpc_reply **rep)
{
	struct run *R = g->R;
	char why[256];
	int rc;

	for (;;) {
		rc = sc_rpc_call(g->c, proc, args, res, rep);
		if (rc)
			return fail(R, "good client: call %u: %s", proc,
				    strerror(-rc));
		count(R, CT_GOOD_CALLS);
		if (*(const uint32_t *)res != CSI_ERR_BUSY)
			break;
		sc_rpc_reply_free(*rep);
		usleep(1000);
	}
	if (*(const uint32_t *)res != CSI_OK) {
		sc_rpc_reply_free(*rep);
		return fail(R, "good client: call %u: status %u", proc,
			    *(const uint32_t *)res);
	}
	if (check_result(R, proc, args, res, why, sizeof(why))) {
		sc_rpc_reply_free(*rep);
		return fail(R, "good client: %s", why);
	}
	return 0;
}

static void good_hdr(struct good *g, struct csi_reqhdr *h)
{
	h->host = g->R->good_host;
	h->epoch = g->R->epoch;
}

/* One READ (data, forced data or a probe) or GET_HASHES of the file. */
static int good_read(struct good *g, uint64_t lbn, uint32_t count_,
		     uint32_t flags, bool hashes)
{
	struct run *R = g->R;
	struct csi_read_args ra = { .file = R->o->file, .lbn = lbn,
				    .count = count_, .flags = flags };
	struct csi_gethashes_args ga = { .file = R->o->file, .lbn = lbn,
					 .count = count_ };
	struct csi_read_res rr;
	struct csi_gethashes_res gr;
	struct sc_rpc_reply *rep;
	int rc;

	good_hdr(g, &ra.hdr);
	good_hdr(g, &ga.hdr);
	rc = hashes ? good_call(g, CSI_PROC_GET_HASHES, &ga, &gr, &rep) :
		      good_call(g, CSI_PROC_READ, &ra, &rr, &rep);
	if (rc)
		return rc;
	atomic_fetch_add(&R->ct[CT_GOOD_BLOCKS],
			 hashes ? gr.nblocks : rr.nblocks);
	sc_rpc_reply_free(rep);
	return 0;
}

/* One GET_MAP of the file (and the scratch file): the file's entry OK. */
static int good_map(struct good *g, uint64_t lbn, uint32_t count_)
{
	struct run *R = g->R;
	const uint64_t files[] = { R->o->file, R->o->scratch };
	struct csi_getmap_args a = { .files = files, .nfiles = 1, .lbn = lbn,
				     .count = count_ };
	struct csi_getmap_res r;
	struct sc_rpc_reply *rep;
	uint64_t n;
	int rc;

	if (R->o->scratch && R->o->scratch != R->o->file &&
	    sc_prng_below(&g->r, 2))
		a.nfiles = 2;
	good_hdr(g, &a.hdr);
	rc = good_call(g, CSI_PROC_GET_MAP, &a, &r, &rep);
	if (rc)
		return rc;
	if (r.files[0].status != CSI_OK) {
		sc_rpc_reply_free(rep);
		return fail(R, "good client: GET_MAP: the file's status %u",
			    r.files[0].status);
	}
	n = blocks_within(R, r.files[0].attr.size, lbn, count_);
	atomic_fetch_add(&R->ct[CT_GOOD_BLOCKS], n);
	sc_rpc_reply_free(rep);
	return 0;
}

static int good_evict(struct good *g)
{
	struct run *R = g->R;
	struct sc_hash ev[8];
	struct csi_evict_args a = { 0 };
	struct csi_evict_res r;
	struct sc_rpc_reply *rep;
	uint32_t i, n = 1 + sc_prng_below(&g->r, 8);
	int rc;

	if (n > R->max_evict)
		n = R->max_evict;
	for (i = 0; i < n; i++)
		ev[i] = R->hash[sc_prng_below(&g->r, (uint32_t)R->nblk)];
	good_hdr(g, &a.hdr);
	a.hdr.evicted = ev;
	a.hdr.nevicted = n;
	rc = good_call(g, CSI_PROC_EVICT, &a, &r, &rep);
	if (!rc)
		sc_rpc_reply_free(rep);
	return rc;
}

static void *good_main(void *arg)
{
	static const uint32_t flags[] = {
		CSI_READ_WANT_DATA, CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA, 0
	};
	struct good *g = arg;
	struct run *R = g->R;
	uint32_t d;
	int rc = 0;

	while (!rc && !stopping(R)) {
		d = sc_prng_below(&g->r, 20);
		if (d < 2)
			rc = good_evict(g);
		else if (d == 19 && R->good_map)
			rc = good_map(g, sc_prng_below(&g->r, (uint32_t)R->nblk),
				      1 + sc_prng_below(&g->r,
							CSI_MAX_MAP_BLOCKS));
		else
			rc = good_read(g, sc_prng_below(&g->r, (uint32_t)R->nblk),
				       1 + sc_prng_below(&g->r, R->max_blocks),
				       flags[sc_prng_below(&g->r, 3)], d < 5);
	}
	return NULL;
}

static int good_start(struct run *R, struct good *g)
{
	struct sc_rpc_client_opts co = { .host = R->o->host,
					 .port = R->o->port,
					 .prog = CSI_PROG,
					 .timeout_ms = REPLY_TIMEOUT_MS };
	struct csi_hello_args a = { 0 };
	struct csi_hello_res r;
	struct sc_rpc_reply *rep;
	int rc = sc_rpc_client_open(&co, &g->c);

	if (rc)
		return fail(R, "good client: connect to %s port %u: %s",
			    R->o->host, R->o->port, strerror(-rc));
	/* No fuzzing uuid is this one (theirs come from the generator). */
	memset(a.host_uuid, 0xa5, sizeof(a.host_uuid));
	a.host_name.p = (const uint8_t *)"good";
	a.host_name.len = 4;
	a.features = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER | CSI_FEAT_MAP;
	rc = sc_rpc_call(g->c, CSI_PROC_HELLO, &a, &r, &rep);
	if (rc)
		return fail(R, "good client: HELLO: %s", strerror(-rc));
	if (r.status != CSI_OK || !sc_block_size_valid(r.block_size) ||
	    !r.max_blocks || !r.max_evict) {
		sc_rpc_reply_free(rep);
		return fail(R, "good client: HELLO: status %u", r.status);
	}
	R->good_host = r.host;
	R->epoch = r.epoch;
	R->bs = r.block_size;
	R->max_blocks = r.max_blocks;
	R->max_evict = r.max_evict;
	R->max_push = r.max_push;
	R->good_map = r.features & CSI_FEAT_MAP;
	sc_rpc_reply_free(rep);
	return 0;
}

/*
 * The whole file read once more, every block as data, and STATS, whose
 * non-zero server-wide counters show which paths the fuzzing reached.
 */
static int good_final(struct good *g)
{
	struct run *R = g->R;
	struct csi_stats_args sa = { .per_host = true };
	struct csi_stats_res sr;
	struct sc_rpc_reply *rep;
	uint64_t lbn;
	uint32_t i;
	int rc = 0;

	for (lbn = 0; lbn < R->nblk && !rc; lbn += R->max_blocks)
		rc = good_read(g, lbn, R->max_blocks,
			       CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA, false);
	if (!rc)
		rc = good_call(g, CSI_PROC_STATS, &sa, &sr, &rep);
	if (rc)
		return rc;
	flockfile(stderr);
	fprintf(stderr, "csi-fuzz: service counters:");
	for (i = 0; i < sr.ncounters; i++)
		if (sr.counters[i].value)
			fprintf(stderr, " %.*s=%llu", (int)sr.counters[i].name.len,
				(const char *)sr.counters[i].name.p,
				(unsigned long long)sr.counters[i].value);
	fprintf(stderr, "; %u hosts registered\n", sr.nhosts);
	funlockfile(stderr);
	sc_rpc_reply_free(rep);
	return 0;
}

/* ---- setup ---- */

static int fz_init(struct run *R, struct fz *f, unsigned int id)
{
	memset(f, 0, sizeof(*f));
	f->R = R;
	f->id = id;
	f->fd = -1;
	sc_prng_seed(&f->r, R->o->seed + 0x9e3779b97f4a7c15ull * (id + 1));
	for (unsigned int i = 0; i < UUIDS; i++)
		rnd_bytes(f, f->uuids[i], CSI_HOST_UUID_SIZE);
	f->hs = sc_hasher_new();
	f->cb = malloc(sizeof(*f->cb));
	f->body = malloc(BODY_CAP);
	f->wire = malloc(WIRE_CAP);
	f->args = malloc(R->msg_size);
	f->res = malloc(R->msg_size);
	if (!f->hs || !f->cb || !f->body || !f->wire || !f->args || !f->res)
		return fail(R, "out of memory");
	return 0;
}

static void fz_free(struct fz *f)
{
	drop_conn(f);
	sc_hasher_free(f->hs);
	free(f->cb);
	free(f->body);
	free(f->wire);
	free(f->rx);
	free(f->args);
	free(f->res);
	free(f->arena);
}

/* The known file's block hashes and holes, for the block size granted. */
static int known_blocks(struct run *R)
{
	const struct csi_fuzz_opts *o = R->o;
	struct sc_hasher *hs = sc_hasher_new();
	uint8_t *blk = malloc(R->bs);
	uint64_t i, n;
	int rc = 0;

	R->nblk = o->size / R->bs + (o->size % R->bs != 0);
	R->hash = calloc(R->nblk, sizeof(*R->hash));
	R->hole = calloc(R->nblk, 1);
	if (!hs || !blk || !R->hash || !R->hole) {
		rc = fail(R, "out of memory");
		goto out;
	}
	if (o->size < HOT_BLOCKS * R->bs) {
		rc = fail(R, "the known file has less than %u blocks", HOT_BLOCKS);
		goto out;
	}
	for (i = 0; i < R->nblk; i++) {
		n = o->size - i * R->bs < R->bs ? o->size - i * R->bs : R->bs;
		memset(blk, 0, R->bs);
		memcpy(blk, o->content + i * R->bs, n);
		R->hole[i] = all_zero(blk, R->bs);
		sc_hasher_digest(hs, blk, R->bs, &R->hash[i]);
	}
out:
	free(blk);
	sc_hasher_free(hs);
	return rc;
}

void csi_fuzz_opts_env(struct csi_fuzz_opts *o, double default_seconds)
{
	const char *s = getenv("CSI_FUZZ_SEED"), *t = getenv("CSI_FUZZ_SECONDS");
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	o->seed = s && *s ? strtoull(s, NULL, 0) :
			    (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec;
	o->seconds = t && *t ? atof(t) : default_seconds;
}

int csi_fuzz_run(const struct csi_fuzz_opts *o, struct csi_fuzz_report *rep,
		 char *err, size_t errlen)
{
	struct sockaddr_in *in4;
	struct sockaddr_in6 *in6;
	struct run R = { .o = o, .err = err, .errlen = errlen };
	struct good g = { .R = &R };
	struct fz probe, *fz = calloc(o->fuzzers, sizeof(*fz));
	unsigned int i, started = 0;
	bool good_started = false;
	double end;

	err[0] = '\0';
	memset(rep, 0, sizeof(*rep));
	signal(SIGPIPE, SIG_IGN);
	pthread_mutex_init(&R.lock, NULL);
	pthread_mutex_init(&R.burst_lock, NULL);
	for (i = 0; i < CSI_MSG_COUNT; i++)
		if (csi_msgs[i].size > R.msg_size)
			R.msg_size = csi_msgs[i].size;
	in4 = (struct sockaddr_in *)&R.addr;
	in6 = (struct sockaddr_in6 *)&R.addr;
	if (inet_pton(AF_INET, o->host, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(o->port);
		R.addrlen = sizeof(*in4);
	} else if (inet_pton(AF_INET6, o->host, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(o->port);
		R.addrlen = sizeof(*in6);
	} else {
		fail(&R, "%s is not a numeric address", o->host);
	}
	fprintf(stderr, "csi-fuzz: seed 0x%llx (CSI_FUZZ_SEED), %.1f s (CSI_FUZZ_SECONDS), %u fuzzing connections, %s port %u\n",
		(unsigned long long)o->seed, o->seconds, o->fuzzers, o->host,
		o->port);
	memset(&probe, 0, sizeof(probe));
	probe.fd = -1;
	sc_prng_seed(&g.r, o->seed);
	if (!fz)
		fail(&R, "out of memory");
	if (!R.failed && !good_start(&R, &g) && !known_blocks(&R) &&
	    !fz_init(&R, &probe, o->fuzzers))
		probes(&probe);
	for (i = 0; i < o->fuzzers && !R.failed; i++, started++)
		if (fz_init(&R, &fz[i], i) ||
		    pthread_create(&fz[i].thread, NULL, fuzz_main, &fz[i])) {
			fail(&R, "cannot start fuzzing connection %u", i);
			fz_free(&fz[i]);
			break;
		}
	if (!R.failed)
		good_started = !pthread_create(&g.thread, NULL, good_main, &g);
	end = now() + o->seconds;
	while (!stopping(&R) && now() < end)
		usleep(10000);
	atomic_store(&R.stop, true);
	if (good_started)
		pthread_join(g.thread, NULL);
	for (i = 0; i < started; i++) {
		pthread_join(fz[i].thread, NULL);
		fz_free(&fz[i]);
	}
	/* Whatever was sent, the good client still gets the file right. */
	if (!R.failed && g.c)
		good_final(&g);
	fz_free(&probe);
	sc_rpc_client_close(g.c);
	free(fz);
	free(R.hash);
	free(R.hole);
	pthread_mutex_destroy(&R.burst_lock);
	pthread_mutex_destroy(&R.lock);
	rep->records = R.ct[CT_RECORDS];
	rep->answered = R.ct[CT_ANSWERED];
	rep->garbage_args = R.ct[CT_GARBAGE];
	rep->rpc_errors = R.ct[CT_RPC_ERRORS];
	rep->dropped = R.ct[CT_DROPPED];
	rep->refused = R.ct[CT_REFUSED];
	rep->cut = R.ct[CT_CUT];
	rep->withheld = R.ct[CT_WITHHELD];
	rep->bad_credentials = R.ct[CT_BADCRED];
	rep->good_calls = R.ct[CT_GOOD_CALLS];
	rep->good_blocks = R.ct[CT_GOOD_BLOCKS];
	return R.failed ? -1 : 0;
}

void csi_fuzz_report_print(const struct csi_fuzz_report *rep)
{
	printf("csi-fuzz: %llu records, %llu answers (%llu GARBAGE_ARGS, %llu AUTH_BADCRED, %llu other RPC errors), %llu dropped, %llu refused, %llu cut, %llu withheld; good client: %llu calls, %llu blocks checked\n",
	       (unsigned long long)rep->records,
	       (unsigned long long)rep->answered,
	       (unsigned long long)rep->garbage_args,
	       (unsigned long long)rep->bad_credentials,
	       (unsigned long long)rep->rpc_errors,
	       (unsigned long long)rep->dropped,
	       (unsigned long long)rep->refused, (unsigned long long)rep->cut,
	       (unsigned long long)rep->withheld,
	       (unsigned long long)rep->good_calls,
	       (unsigned long long)rep->good_blocks);
}
