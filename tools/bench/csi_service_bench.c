// SPDX-License-Identifier: BSD-2-Clause
/*
 * csi-service-bench: the CSI service's targets, measured and printed,
 * never asserted:
 *
 *   hash-only READs  READ count=64 WANT_DATA by a W/Tracker host that
 *                    holds the whole file, so every block is SC_RK_HASH;
 *                    target >= 20 k calls/s on one core over loopback
 *   data READs       READ count=64 WANT_DATA|FORCE_DATA, every block DATA;
 *                    target >= 1 GB/s of block payload
 *   re-read          a fresh W/Tracker host reads the file, then reads it
 *                    again; target: the re-read moves <= 2 % of the file's
 *                    bytes over the wire
 *   tracker          its bytes per (host, content) pair
 *
 * By default the service runs in this process: a dedup store in a
 * temporary directory with one file of seeded random data, the service
 * on a one-thread RPC server on 127.0.0.1 whose loop thread's CPU time is
 * measured ("on one core").  With --server HOST:PORT --file INO it
 * measures a running service (a ganesha.nfsd with CSI_Port) instead.
 *
 * Bytes on the wire are counted by the client: record mark, RPC header
 * and body of each call and reply, the body's size by re-encoding the
 * decoded message (the codec is strict, so that is the size received).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <seacache/csi_codec.h>
#include <seacache/hash.h>
#include <seacache/prng.h>
#include <seacache/rpc_msg.h>
#include <seacache/rpc_transport.h>

#include "dstore.h"
#include "service.h"
#include "tracker.h"

#define ME "csi-service-bench"
#define WANT_BLOCKS 64u		/* blocks per READ, the targets' unit */
#define WRITE_PIECE (1u << 20)

struct opts {
	double seconds;			/* per round */
	unsigned int rounds;
	unsigned int file_mib;
	unsigned int depth;		/* calls in flight per connection */
	unsigned int conns;
	uint64_t seed;
	const char *store;		/* NULL: a temporary directory */
	const char *server;		/* HOST:PORT; NULL: in process */
	uint64_t file;			/* with server */
	bool json;
};

struct bench {
	char host[64];
	uint16_t port;
	unsigned int depth, conns, rounds;
	double seconds;
	uint64_t file, size, nblk;
	uint32_t bs, count;		/* block size, blocks per READ */
	const uint8_t *img;		/* in process: the file's bytes */
	bool have_cpu;
	clockid_t srv_cpu;		/* the server loop thread's CPU clock */
	size_t call_hdr, reply_hdr;	/* encoded RPC header sizes */
	struct sc_prng uuid_rng;
};

struct host {
	uint64_t id, epoch;
};

/* What a run of READs did. */
struct pass {
	uint64_t calls, blocks, payload, wire, other_kind;
	double secs, cpu;
};

/* Timed runs one after another: their sums and the range of their rates. */
struct rounds {
	struct pass sum;
	double min, max;	/* calls/s (hash-only) or payload bytes/s */
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, ME ": ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double server_cpu(const struct bench *b)
{
	struct timespec ts;

	if (!b->have_cpu || clock_gettime(b->srv_cpu, &ts))
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress(const char *what)
{
	fprintf(stderr, ME ": %s\n", what);
}

static struct sc_rpc_client *connect_to(const struct bench *b)
{
	struct sc_rpc_client_opts o = { .host = b->host, .port = b->port,
					.prog = CSI_PROG,
					.max_inflight = b->depth };
	struct sc_rpc_client *c;
	int rc = sc_rpc_client_open(&o, &c);

	if (rc)
		die("cannot connect to %s port %u: %s", b->host, b->port,
		    strerror(-rc));
	return c;
}

/* The sizes of the RPC headers our client sends and our server answers. */
static void header_sizes(struct bench *b)
{
	struct sc_rpc_call_hdr ch = { .rpcvers = SC_RPC_VERSION,
				      .prog = CSI_PROG, .vers = CSI_VERS,
				      .proc = CSI_PROC_READ };
	struct sc_rpc_reply_hdr rh = { .reply_stat = SC_RPC_MSG_ACCEPTED,
				       .accept_stat = SC_RPC_SUCCESS };
	struct sc_xdr x;

	sc_xdr_init_encode(&x, NULL, 0);
	sc_rpc_xdr_call_hdr(&x, &ch);
	b->call_hdr = x.pos;
	sc_xdr_init_encode(&x, NULL, 0);
	sc_rpc_xdr_reply_hdr(&x, &rh);
	b->reply_hdr = x.pos;
}

/* Encoded size of message m, record mark and RPC header included. */
static uint64_t wire_size(size_t hdr, enum csi_msg m, const void *msg)
{
	size_t len;

	if (csi_encode(m, msg, NULL, 0, &len))
		die("cannot re-encode a %s", csi_msgs[m].name);
	return 4 + hdr + len;
}

static struct host hello(struct bench *b, struct sc_rpc_client *c,
			 const char *name)
{
	struct csi_hello_args a = { 0 };
	struct csi_hello_res r;
	struct sc_rpc_reply *rep;
	struct host h;
	int rc;

	/* A new uuid per run: a service that outlives us must not take us
	 * for an earlier run's host (and replace it). */
	sc_prng_fill(&b->uuid_rng, a.host_uuid, sizeof(a.host_uuid));
	a.host_name.p = (const uint8_t *)name;
	a.host_name.len = (uint32_t)strlen(name);
	a.features = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER;
	rc = sc_rpc_call(c, CSI_PROC_HELLO, &a, &r, &rep);
	if (rc)
		die("HELLO: %s", strerror(-rc));
	if (r.status != CSI_OK)
		die("HELLO: status %u", r.status);
	if (!(r.features & CSI_FEAT_TRACKER))
		fprintf(stderr, ME ": warning: TRACKER not granted (features 0x%x): no hash-only answers\n",
			r.features);
	if (!b->bs) {
		b->bs = r.block_size;
		b->count = r.max_blocks < WANT_BLOCKS ? r.max_blocks :
							WANT_BLOCKS;
	}
	h.id = r.host;
	h.epoch = r.epoch;
	sc_rpc_reply_free(rep);
	return h;
}

/* The file's size, from a READ of no block (§7.3: attr only). */
static uint64_t file_size(struct sc_rpc_client *c, struct host h,
			  uint64_t file)
{
	struct csi_read_args a = { .hdr = { .host = h.id, .epoch = h.epoch },
				   .file = file };
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint64_t size;
	int rc = sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep);

	if (rc)
		die("READ of file %llu: %s", (unsigned long long)file,
		    strerror(-rc));
	if (r.status != CSI_OK)
		die("READ of file %llu: status %u", (unsigned long long)file,
		    r.status);
	size = r.attr.size;
	sc_rpc_reply_free(rep);
	return size;
}

/* Checks a DATA block against the file (in process) or its own hash. */
static void check_data(const struct bench *b, struct sc_hasher *hs,
		       uint64_t lbn, const struct csi_read_block *blk)
{
	uint8_t buf[CSI_MAX_BLOCK_SIZE] = { 0 };
	struct sc_hash h;

	if (blk->data.len > b->bs)
		die("block %llu: %u bytes of data", (unsigned long long)lbn,
		    blk->data.len);
	memcpy(buf, blk->data.p, blk->data.len);
	if (b->img) {
		uint64_t off = lbn * b->bs;
		size_t n = b->size - off < b->bs ? b->size - off : b->bs;

		if (memcmp(buf, b->img + off, n))
			die("block %llu: data differs from the file",
			    (unsigned long long)lbn);
	}
	if (sc_hasher_digest(hs, buf, b->bs, &h) || !sc_hash_eq(&h, &blk->hash))
		die("block %llu: data does not hash to its hash",
		    (unsigned long long)lbn);
}

struct loop {
	struct bench *b;
	struct host h;
	uint32_t flags;
	uint32_t kind;			/* the answer expected of every block */
	uint64_t first;			/* lbn of the first call */
	bool one_pass;			/* else: until b->seconds are up */
	bool check;			/* check every DATA block's bytes */
	bool wire;			/* count the bytes on the wire */
	struct sc_hasher *hs;
	struct pass p;
};

/* Finish the READ of lbn started as xid and account for its reply. */
static void finish_read(struct loop *l, struct sc_rpc_client *c,
			uint32_t xid, uint64_t lbn)
{
	const struct bench *b = l->b;
	uint32_t k, want = b->nblk - lbn < b->count ?
			   (uint32_t)(b->nblk - lbn) : b->count;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	int rc = sc_rpc_finish(c, xid, &r, &rep);

	if (rc)
		die("READ: %s", strerror(-rc));
	if (r.status != CSI_OK || r.nblocks != want)
		die("READ at block %llu: status %u, %u blocks (expected %u)",
		    (unsigned long long)lbn, r.status, r.nblocks, want);
	for (k = 0; k < r.nblocks; k++) {
		const struct csi_read_block *blk = &r.blocks[k];

		if (blk->kind != l->kind)
			l->p.other_kind++;
		if (blk->kind != CSI_RK_DATA)
			continue;
		l->p.payload += blk->data.len;
		if (l->check)
			check_data(b, l->hs, lbn + k, blk);
	}
	l->p.blocks += r.nblocks;
	if (l->wire)
		l->p.wire += wire_size(b->reply_hdr, CSI_MSG_READ_RES, &r);
	sc_rpc_reply_free(rep);
	l->p.calls++;
}

/*
 * READs of b->count blocks, b->depth in flight on one connection, from
 * lbn `first` on: over the file once, or round and round until the time
 * is up.  Calls finish in the order they started.
 */
static void *read_loop(void *arg)
{
	struct loop *l = arg;
	struct bench *b = l->b;
	struct sc_rpc_client *c = connect_to(b);
	uint32_t *xid = calloc(b->depth, sizeof(*xid));
	uint64_t *lbn_of = calloc(b->depth, sizeof(*lbn_of));
	struct csi_read_args a = { .hdr = { .host = l->h.id,
					    .epoch = l->h.epoch },
				   .file = b->file, .count = b->count,
				   .flags = l->flags };
	uint64_t started = 0, total = l->one_pass ?
		(b->nblk + b->count - 1) / b->count : UINT64_MAX;
	double t0 = now();
	bool stop = false;
	unsigned int i;
	int rc;

	l->hs = l->check ? sc_hasher_new() : NULL;
	if (!xid || !lbn_of || (l->check && !l->hs))
		die("out of memory");
	a.lbn = l->first;
	while (l->p.calls < started || !stop) {
		if (stop || started - l->p.calls == b->depth) {
			i = (unsigned int)(l->p.calls % b->depth);
			finish_read(l, c, xid[i], lbn_of[i]);
			continue;
		}
		i = (unsigned int)(started % b->depth);
		rc = sc_rpc_start(c, CSI_PROC_READ, &a, &xid[i]);
		if (rc)
			die("READ: %s", strerror(-rc));
		if (l->wire)
			l->p.wire += wire_size(b->call_hdr, CSI_MSG_READ_ARGS,
					       &a);
		lbn_of[i] = a.lbn;
		a.lbn += b->count;
		if (a.lbn >= b->nblk)
			a.lbn = 0;
		started++;
		stop = started == total ||
		       (!l->one_pass && now() - t0 >= b->seconds);
	}
	l->p.secs = now() - t0;
	free(lbn_of);
	free(xid);
	sc_hasher_free(l->hs);
	sc_rpc_client_close(c);
	return NULL;
}

/* One read loop per connection at once; their sums, the server's CPU. */
static struct pass run(struct bench *b, struct host h, uint32_t flags,
		       uint32_t kind, bool one_pass, bool check, bool wire)
{
	struct loop *l = calloc(b->conns, sizeof(*l));
	pthread_t *t = calloc(b->conns, sizeof(*t));
	struct pass p = { 0 };
	double cpu0 = server_cpu(b), t0 = now();
	unsigned int i, n = one_pass ? 1 : b->conns;

	if (!l || !t)
		die("out of memory");
	for (i = 0; i < n; i++) {
		l[i] = (struct loop){ .b = b, .h = h, .flags = flags,
				      .kind = kind, .one_pass = one_pass,
				      .check = check, .wire = wire };
		/* Connections start spread over the file. */
		l[i].first = b->nblk * i / n / b->count * b->count;
		if (pthread_create(&t[i], NULL, read_loop, &l[i]))
			die("cannot start a client thread");
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		p.calls += l[i].p.calls;
		p.blocks += l[i].p.blocks;
		p.payload += l[i].p.payload;
		p.wire += l[i].p.wire;
		p.other_kind += l[i].p.other_kind;
	}
	p.secs = now() - t0;
	p.cpu = server_cpu(b) - cpu0;
	free(t);
	free(l);
	return p;
}

/*
 * b->rounds timed runs: a single one on a loaded machine tells little,
 * the range of several shows how far one can be trusted.
 */
static struct rounds run_rounds(struct bench *b, struct host h,
				uint32_t flags, uint32_t kind)
{
	struct rounds r = { .min = -1 };
	struct pass p;
	unsigned int i;
	double v;

	for (i = 0; i < b->rounds; i++) {
		p = run(b, h, flags, kind, false, false, false);
		v = (double)(kind == CSI_RK_DATA ? p.payload : p.calls) /
		    p.secs;
		r.min = r.min < 0 || v < r.min ? v : r.min;
		r.max = v > r.max ? v : r.max;
		r.sum.calls += p.calls;
		r.sum.blocks += p.blocks;
		r.sum.payload += p.payload;
		r.sum.wire += p.wire;
		r.sum.other_kind += p.other_kind;
		r.sum.secs += p.secs;
		r.sum.cpu += p.cpu;
	}
	return r;
}

static uint64_t counter(struct sc_rpc_client *c, const char *name)
{
	struct csi_stats_args a = { .per_host = false };
	struct csi_stats_res r;
	struct sc_rpc_reply *rep;
	uint64_t v = 0;
	uint32_t i;
	int rc = sc_rpc_call(c, CSI_PROC_STATS, &a, &r, &rep);

	if (rc || r.status != CSI_OK)
		die("STATS: %s", rc ? strerror(-rc) : "not OK");
	for (i = 0; i < r.ncounters; i++)
		if (r.counters[i].name.len == strlen(name) &&
		    !memcmp(r.counters[i].name.p, name, r.counters[i].name.len))
			v = r.counters[i].value;
	sc_rpc_reply_free(rep);
	return v;
}

/* ---- the service in this process ---- */

struct local {
	char dir[256];
	bool remove_dir;
	struct dstore *ds;
	struct csi_service *svc;
	struct sc_rpc_service rpc;
	struct sc_rpc_server *srv;
	pthread_t thread;
	uint8_t *img;
};

static void *server_main(void *srv)
{
	int rc = sc_rpc_server_run(srv);

	if (rc)
		die("server loop: %s", strerror(-rc));
	return NULL;
}

static void local_start(struct local *L, const struct opts *o,
			struct bench *b)
{
	struct dstore_new n = { .type = DSTORE_REG, .mode = 0644 };
	struct csi_service_config cfg;
	struct sc_rpc_server_opts so = { 0 };
	struct dstore_params p;
	struct dstore_attr at;
	struct sc_prng r;
	uint64_t size = (uint64_t)o->file_mib << 20, off;
	char err[512], cmd[300];
	ssize_t w;
	int rc;

	if (o->store) {
		snprintf(L->dir, sizeof(L->dir), "%s", o->store);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", L->dir);
		if (system(cmd))
			die("cannot empty %s", L->dir);
	} else {
		snprintf(L->dir, sizeof(L->dir), "/var/tmp/" ME "-XXXXXX");
		if (!mkdtemp(L->dir))
			die("mkdtemp: %s", strerror(errno));
		L->remove_dir = true;
	}
	dstore_params_default(&p);
	p.reclaim_interval_ms = 0;
	rc = dstore_open(L->dir, &p, &L->ds, err, sizeof(err));
	if (rc)
		die("%s", err);
	progress("writing the file");
	L->img = malloc(size);
	if (!L->img)
		die("out of memory");
	sc_prng_seed(&r, o->seed);
	sc_prng_fill(&r, L->img, size);
	rc = dstore_create(L->ds, DSTORE_ROOT_INO, "bench", &n, &at);
	if (rc)
		die("create: %s", strerror(-rc));
	for (off = 0; off < size; off += WRITE_PIECE) {
		w = dstore_write(L->ds, at.ino, off, L->img + off,
				 WRITE_PIECE, false, NULL);
		if (w != WRITE_PIECE)
			die("write: %s", strerror(w < 0 ? (int)-w : EIO));
	}
	rc = dstore_sync(L->ds);
	if (rc)
		die("sync: %s", strerror(-rc));
	/*
	 * With no housekeeper (reclaim_interval_ms 0) the writes' deltas
	 * would stay pending and every block read would search the store's
	 * table of fresh chunks: apply them, as a server's housekeeper does
	 * within its interval.
	 */
	rc = dstore_apply_pending(L->ds);
	if (rc)
		die("apply pending: %s", strerror(-rc));

	/* Only what this bench needs; every other field at its default. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.features = CSI_SERVICE_FEATURES;
	L->svc = csi_service_new(L->ds, &cfg);
	if (!L->svc)
		die("cannot create the CSI service");
	L->rpc = csi_service_rpc(L->svc);
	rc = sc_rpc_server_new(&so, &L->rpc, 1, &L->srv);
	if (rc)
		die("cannot listen on 127.0.0.1: %s", strerror(-rc));
	if (pthread_create(&L->thread, NULL, server_main, L->srv))
		die("cannot start the server thread");
	b->have_cpu = !pthread_getcpuclockid(L->thread, &b->srv_cpu);
	snprintf(b->host, sizeof(b->host), "127.0.0.1");
	b->port = sc_rpc_server_port(L->srv);
	b->file = at.ino;
	b->img = L->img;
}

static void local_stop(struct local *L)
{
	char cmd[300];

	sc_rpc_server_stop(L->srv);
	pthread_join(L->thread, NULL);
	sc_rpc_server_free(L->srv);
	csi_service_free(L->svc);
	dstore_close(L->ds);
	free(L->img);
	if (L->remove_dir) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", L->dir);
		if (system(cmd))
			fprintf(stderr, ME ": cannot remove %s\n", L->dir);
	}
}

/* ---- main ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " ME " [--seconds S (2)] [--rounds R (5)] [--file-mib M (64)] [--depth D (8)]\n"
		"       [--conns C (2)] [--seed N (42)] [--store DIR (emptied; default: a\n"
		"       temporary directory)] [--json]\n"
		"   or: " ME " --server HOST:PORT --file INO [--seconds S] [--depth D]\n"
		"       [--rounds R] [--conns C] [--json]     (a running CSI service, e.g. ganesha's)\n"
		"Measures the CSI service's READ targets: hash-only calls/s (>= 20 k on one\n"
		"core), data GB/s (>= 1), wire bytes of a W/Tracker re-read (<= 2%%), and\n"
		"the tracker's bytes per (host, content) pair.  D calls in flight on each\n"
		"of C connections; the timed tests run R rounds of S seconds each, their\n"
		"mean and min-max printed.\n");
}

static void parse(int argc, char **argv, struct opts *o, struct bench *b)
{
	static const struct option lo[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "file-mib", required_argument, NULL, 'm' },
		{ "depth", required_argument, NULL, 'd' },
		{ "conns", required_argument, NULL, 'c' },
		{ "seed", required_argument, NULL, 'S' },
		{ "store", required_argument, NULL, 'D' },
		{ "server", required_argument, NULL, 'a' },
		{ "file", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *colon;
	int ch;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o->seconds = atof(optarg); break;
		case 'r': o->rounds = (unsigned int)atoi(optarg); break;
		case 'm': o->file_mib = (unsigned int)atoi(optarg); break;
		case 'd': o->depth = (unsigned int)atoi(optarg); break;
		case 'c': o->conns = (unsigned int)atoi(optarg); break;
		case 'S': o->seed = strtoull(optarg, NULL, 0); break;
		case 'D': o->store = optarg; break;
		case 'a': o->server = optarg; break;
		case 'f': o->file = strtoull(optarg, NULL, 0); break;
		case 'j': o->json = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind < argc || o->seconds <= 0 || !o->rounds ||
	    o->rounds > 100 || !o->file_mib ||
	    o->file_mib > 4096 || !o->depth || o->depth > 256 || !o->conns ||
	    o->conns > 64 || !o->server != !o->file ||
	    (o->server && o->store)) {
		usage(stderr);
		exit(2);
	}
	b->seconds = o->seconds;
	b->rounds = o->rounds;
	b->depth = o->depth;
	b->conns = o->conns;
	if (!o->server)
		return;
	colon = strrchr(o->server, ':');
	if (!colon || colon == o->server ||
	    (size_t)(colon - o->server) >= sizeof(b->host))
		die("--server HOST:PORT, HOST numeric");
	memcpy(b->host, o->server, (size_t)(colon - o->server));
	b->port = (uint16_t)atoi(colon + 1);
	b->file = o->file;
}

/* What the tests measured. */
struct results {
	struct pass first, reread;
	struct rounds hashes, data;
	uint64_t cap, held;		/* the service's tracker */
	struct sc_tracker_stats ts;	/* of a tracker like it */
};

/* A server CPU figure for JSON (decimals), null when not measured. */
static const char *cpu_json(const struct bench *b, char *buf, size_t n,
			    int decimals, double v)
{
	if (!b->have_cpu)
		return "null";
	snprintf(buf, n, "%.*f", decimals, v);
	return buf;
}

static void print_json(const struct bench *b, const struct opts *o,
		       const struct results *r)
{
	const struct pass *h = &r->hashes.sum, *d = &r->data.sum;
	char c1[32], c2[32], c3[32], c4[32];

	printf("{\"file_bytes\": %llu, \"block_size\": %u, \"blocks_per_read\": %u, "
	       "\"depth\": %u, \"conns\": %u, \"in_process\": %s, \"seconds\": %.3f, "
	       "\"rounds\": %u, \"hash_calls_per_s\": %.0f, \"hash_calls_per_s_min\": %.0f, "
	       "\"hash_calls_per_s_max\": %.0f, \"hash_not_hash_blocks\": %llu, "
	       "\"hash_server_cpu_s\": %s, \"hash_calls_per_server_cpu_s\": %s, "
	       "\"data_bytes_per_s\": %.0f, \"data_bytes_per_s_min\": %.0f, "
	       "\"data_bytes_per_s_max\": %.0f, \"data_calls_per_s\": %.0f, "
	       "\"data_server_cpu_s\": %s, \"data_bytes_per_server_cpu_s\": %s, "
	       "\"first_read_wire_bytes\": %llu, \"reread_wire_bytes\": %llu, "
	       "\"reread_wire_pct\": %.3f, \"reread_hash_blocks\": %llu, "
	       "\"tracker_bytes_per_pair\": %.1f, \"tracker_capacity\": %llu, "
	       "\"tracker_entries\": %llu}\n",
	       (unsigned long long)b->size, b->bs, b->count, b->depth, b->conns,
	       o->server ? "false" : "true", o->seconds, b->rounds,
	       (double)h->calls / h->secs, r->hashes.min, r->hashes.max,
	       (unsigned long long)h->other_kind,
	       cpu_json(b, c1, sizeof(c1), 3, h->cpu),
	       cpu_json(b, c2, sizeof(c2), 0, (double)h->calls / h->cpu),
	       (double)d->payload / d->secs, r->data.min, r->data.max,
	       (double)d->calls / d->secs,
	       cpu_json(b, c3, sizeof(c3), 3, d->cpu),
	       cpu_json(b, c4, sizeof(c4), 0, (double)d->payload / d->cpu),
	       (unsigned long long)r->first.wire,
	       (unsigned long long)r->reread.wire,
	       100.0 * (double)r->reread.wire / (double)b->size,
	       (unsigned long long)(r->reread.blocks - r->reread.other_kind),
	       (double)r->ts.bytes / (double)r->ts.capacity,
	       (unsigned long long)r->cap, (unsigned long long)r->held);
}

static void print_text(const struct bench *b, const struct opts *o,
		       const struct results *r)
{
	const struct pass *h = &r->hashes.sum, *d = &r->data.sum;

	printf("== " ME ": file %llu (%.1f MiB, %llu blocks of %u B) %s, READ of %u blocks, %u connection(s) x %u in flight, %.1f s per round\n",
	       (unsigned long long)b->file, (double)b->size / (1 << 20),
	       (unsigned long long)b->nblk, b->bs,
	       o->server ? o->server : "in process on 127.0.0.1", b->count,
	       b->conns, b->depth, o->seconds);
	printf("timed tests: %u rounds each, mean and (min-max of the rounds)\n",
	       b->rounds);
	printf("hash-only READ  %9.0f calls/s  (%.0f-%.0f; %.2f M blocks/s)   target >= 20 k calls/s on one core\n",
	       (double)h->calls / h->secs, r->hashes.min, r->hashes.max,
	       (double)h->blocks / h->secs / 1e6);
	if (b->have_cpu)
		printf("                server thread CPU: %.0f%% of one core = %.0f calls per CPU-second\n",
		       100.0 * h->cpu / h->secs, (double)h->calls / h->cpu);
	printf("data READ       %9.3f GB/s payload  (%.3f-%.3f; %.0f calls/s)   target >= 1 GB/s\n",
	       (double)d->payload / d->secs / 1e9, r->data.min / 1e9,
	       r->data.max / 1e9, (double)d->calls / d->secs);
	if (b->have_cpu)
		printf("                server thread CPU: %.0f%% of one core = %.2f GB per CPU-second\n",
		       100.0 * d->cpu / d->secs,
		       (double)d->payload / d->cpu / 1e9);
	printf("re-read         %9.2f%% of the file on the wire (%llu bytes; %llu of %llu blocks HASH)   target <= 2%%\n",
	       100.0 * (double)r->reread.wire / (double)b->size,
	       (unsigned long long)r->reread.wire,
	       (unsigned long long)(r->reread.blocks - r->reread.other_kind),
	       (unsigned long long)r->reread.blocks);
	printf("first read      %9.2f%% of the file on the wire (%llu bytes, all DATA)\n",
	       100.0 * (double)r->first.wire / (double)b->size,
	       (unsigned long long)r->first.wire);
	printf("tracker         %9.1f bytes per (host, content) pair (capacity %llu pairs: %.1f MiB; %llu held now)\n",
	       (double)r->ts.bytes / (double)r->ts.capacity,
	       (unsigned long long)r->cap, (double)r->ts.bytes / (1 << 20),
	       (unsigned long long)r->held);
}

int main(int argc, char **argv)
{
	/*
	 * Two connections of 8 calls each: on two cores one client thread
	 * cannot keep the server thread busy with hash-only READs.
	 */
	struct opts o = { .seconds = 2, .rounds = 5, .file_mib = 64, .depth = 8,
			  .conns = 2, .seed = 42 };
	struct bench b = { 0 };
	struct local L = { 0 };
	struct results r;
	struct sc_rpc_client *c;
	struct sc_tracker *tr;
	struct host warm, fresh;

	parse(argc, argv, &o, &b);
	sc_prng_seed(&b.uuid_rng, (uint64_t)time(NULL) ^
				  ((uint64_t)getpid() << 32));
	header_sizes(&b);
	if (!o.server)
		local_start(&L, &o, &b);
	c = connect_to(&b);
	warm = hello(&b, c, ME);
	fresh = hello(&b, c, ME "-fresh");
	b.size = file_size(c, warm, b.file);
	b.nblk = (b.size + b.bs - 1) / b.bs;
	if (!b.nblk)
		die("file %llu is empty", (unsigned long long)b.file);

	progress("re-read: a fresh host reads the file twice");
	r.first = run(&b, fresh, CSI_READ_WANT_DATA, CSI_RK_DATA, true, true,
		      true);
	r.reread = run(&b, fresh, CSI_READ_WANT_DATA, CSI_RK_HASH, true,
		       false, true);
	progress("hash-only READs");
	run(&b, warm, CSI_READ_WANT_DATA, CSI_RK_DATA, true, false, false);
	r.hashes = run_rounds(&b, warm, CSI_READ_WANT_DATA, CSI_RK_HASH);
	progress("data READs (FORCE_DATA)");
	r.data = run_rounds(&b, warm, CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA,
			    CSI_RK_DATA);

	/*
	 * A tracker's memory is fixed by its capacity: one like the
	 * service's tells its bytes per pair.
	 */
	r.cap = counter(c, "tracker.capacity");
	r.held = counter(c, "tracker.entries");
	tr = sc_tracker_new((uint32_t)r.cap, 100);
	if (!tr)
		die("out of memory for a tracker of %llu pairs",
		    (unsigned long long)r.cap);
	sc_tracker_get_stats(tr, &r.ts);
	sc_tracker_free(tr);
	sc_rpc_client_close(c);
	if (!o.server)
		local_stop(&L);

	if (r.hashes.sum.other_kind || r.data.sum.other_kind ||
	    r.first.other_kind)
		fprintf(stderr, ME ": warning: unexpected answers: %llu blocks not HASH in the hash-only test, %llu not DATA in the data tests\n",
			(unsigned long long)r.hashes.sum.other_kind,
			(unsigned long long)(r.data.sum.other_kind +
					     r.first.other_kind));
	if (o.json)
		print_json(&b, &o, &r);
	else
		print_text(&b, &o, &r);
	return 0;
}
