// SPDX-License-Identifier: BSD-2-Clause
/*
 * The host library (seacache/host.h) over the user-space transport
 * (host_transport.h) against a real CSI service (host_test.h says which).
 * Every byte a host returns is compared with what the server holds:
 *
 *   - reads and writes, byte for byte, in every variant (partial blocks,
 *     holes, a short last block, stable and unstable writes), read back
 *     by the server and by another host;
 *   - the race of §5.2: contents the server thinks the host holds are
 *     gone (notices lost), so HASH answers are re-read with FORCE_DATA;
 *   - Coop: a delegated read served by a peer, then a peer that refuses
 *     (bad token, NOENT) and one that is gone: the server is the fallback;
 *   - a server restart: BAD_EPOCH, HELLO again, unstable blocks written
 *     again before COMMIT; a registration replaced (UNKNOWN_HOST);
 *   - a file changed behind the cache: getattr drops the mappings;
 *   - map windows (GET_MAP): a scan of clones costs one clone's calls and
 *     the windows; a map entry never serves a wrong block (another host's
 *     write seen at open or through a window's change id, truncation, a
 *     new epoch);
 *   - no reply and BUSY: retried; eviction notices within max_evict;
 *   - memory given back (a shrinker's sc_host_shrink): notices sent, the
 *     blocks read again as DATA, the cache grown back;
 *   - Dedup-W NEED_DATA after a new epoch emptied the tracker;
 *   - the unstable blocks kept before a write commits by itself;
 *   - unstable writes while each allocation in turn fails: a write fails
 *     with -ENOMEM or every byte it acknowledged survives a server that
 *     lost its unstable data;
 *   - a randomized run: four hosts of random variants, each with its own
 *     peer server, on threads, random reads and writes of shared files,
 *     every byte checked against a reference copy.
 *
 * The randomized run: HOST_TEST_OPS operations per host (default 4000),
 * from HOST_TEST_SEED (default: the time; printed): the same seed gives
 * every host the same operations, whatever the machine's speed.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>

#include <seacache/host.h>
#include <seacache/host_transport.h>
#include <seacache/prng.h>

#include "host_test.h"

#define BS 4096u
#define NBLK 40u
#define FSIZE (NBLK * BS + 1000)	/* a short last block */
#define SEED 0x4057ull

static uint8_t base[FSIZE];
static uint64_t base_id, clone_id;	/* clone: base with 3 blocks new */
static uint8_t clone_bytes[FSIZE];

/* ---- a transport that fails on demand ---- */

struct ft {
	struct sc_host_transport inner;
	pthread_mutex_t lock;
	int fail;		/* next calls: no reply */
	bool silent;		/* calls: no reply by the deadline */
	uint32_t silent_calls;	/* calls that met the silence */
	int busy;		/* next calls: BUSY, not sent */
	bool strip;		/* notices never reach the server */
	bool bad_token;		/* tokens corrupted before a peer read */
	uint32_t max_notices;	/* most notices in one request */
	uint64_t id, epoch;	/* the last HELLO's */
	/*
	 * The gate (test_single_flight): READs of blocks wait until this
	 * many GET_HASHES replies came (or GATE_MS passed), so that every
	 * reader of a round asks before the first READ is answered.
	 */
	uint32_t gate, gate_hashes;
	pthread_cond_t gate_cv;
};

#define GATE_MS 300

static void gate_pass(struct ft *f)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += GATE_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&f->lock);
	while (f->gate_hashes < f->gate &&
	       pthread_cond_timedwait(&f->gate_cv, &f->lock, &until) == 0)
		;
	pthread_mutex_unlock(&f->lock);
}

static bool has_hdr(uint32_t proc)
{
	return proc != CSI_PROC_HELLO && proc != CSI_PROC_STATS &&
	       proc != CSI_PROC_NULL;
}

static int ft_call(void *ctx, uint32_t proc, const void *args, void *res,
		   void **reply)
{
	struct ft *f = ctx;
	/* every request with a header starts with it */
	struct csi_reqhdr *hdr = has_hdr(proc) ? (struct csi_reqhdr *)args :
						 NULL;
	uint32_t n = hdr ? hdr->nevicted : 0;
	bool fail, busy, strip;
	int err;

	pthread_mutex_lock(&f->lock);
	if (f->silent) {
		f->silent_calls++;
		pthread_mutex_unlock(&f->lock);
		return -ETIMEDOUT;
	}
	fail = f->fail > 0;
	f->fail -= fail;
	busy = !fail && f->busy > 0;
	f->busy -= busy;
	strip = f->strip;
	if (n > f->max_notices)
		f->max_notices = n;
	pthread_mutex_unlock(&f->lock);
	if (fail)
		return -ECONNRESET;
	if (busy) {
		*(uint32_t *)res = CSI_ERR_BUSY;
		*reply = NULL;
		return 0;
	}
	if (strip && hdr)
		hdr->nevicted = 0;
	if (proc == CSI_PROC_READ &&
	    ((const struct csi_read_args *)args)->count)
		gate_pass(f);
	err = f->inner.call(f->inner.ctx, proc, args, res, reply);
	if (strip && hdr)
		hdr->nevicted = n;
	if (proc == CSI_PROC_GET_HASHES) {
		pthread_mutex_lock(&f->lock);
		f->gate_hashes++;
		pthread_cond_broadcast(&f->gate_cv);
		pthread_mutex_unlock(&f->lock);
	}
	return err;
}

static void ft_release(void *ctx, void *reply)
{
	struct ft *f = ctx;

	f->inner.release(f->inner.ctx, reply);
}

/* The token a peer read presents: tok, or tok forged. */
static struct csi_token ft_token(struct ft *f, const struct csi_token *tok)
{
	struct csi_token t = *tok;

	pthread_mutex_lock(&f->lock);
	if (f->bad_token)
		t.mac[0] ^= 1;
	pthread_mutex_unlock(&f->lock);
	return t;
}

static int ft_peer_fetch(void *ctx, const struct csi_peer_addr *where,
			 uint64_t requester, uint64_t epoch,
			 const struct sc_hash *h, const struct csi_token *tok,
			 void *out)
{
	struct ft *f = ctx;
	struct csi_token t = ft_token(f, tok);

	return f->inner.peer_fetch(f->inner.ctx, where, requester, epoch, h,
				   &t, out);
}

static void ft_peer_fetch_many(void *ctx, uint64_t requester,
			       uint64_t epoch, struct sc_peer_fetch *pf,
			       uint32_t n)
{
	struct ft *f = ctx;
	struct sc_peer_fetch *g = calloc(n, sizeof(*g));
	struct csi_token *t = calloc(n, sizeof(*t));
	uint32_t i;

	assert_non_null(g);
	assert_non_null(t);
	for (i = 0; i < n; i++) {
		g[i] = pf[i];
		t[i] = ft_token(f, pf[i].tok);
		g[i].tok = &t[i];
	}
	f->inner.peer_fetch_many(f->inner.ctx, requester, epoch, g, n);
	for (i = 0; i < n; i++)
		pf[i].err = g[i].err;
	free(g);
	free(t);
}

static void ft_identity(void *ctx, uint64_t host, uint64_t epoch,
			const uint8_t secret[CSI_SECRET_SIZE])
{
	struct ft *f = ctx;

	pthread_mutex_lock(&f->lock);
	f->id = host;
	f->epoch = epoch;
	pthread_mutex_unlock(&f->lock);
	f->inner.identity(f->inner.ctx, host, epoch, secret);
}

/* ---- test hosts ---- */

struct th {
	struct sc_host *h;
	struct sc_host_transport_state *st;
	struct ft ft;
	enum sc_variant v;
};

/* A loopback port nothing listens on: a peer that died. */
static uint16_t dead_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	close(fd);
	return ntohs(sin.sin_port);
}

enum { PEER_NONE, PEER_SERVE, PEER_DEAD };

/*
 * th_new's hosts fetch a reply's delegated blocks together, as the
 * user-space transport does; set: one after another, as the host does
 * over a transport without peer_fetch_many (the kernel's).
 */
static bool th_one_by_one;
/* set: th_new's hosts are fail_fast, as the kernel's, with 3 tries */
static bool th_fail_fast;

static struct th *th_new(uint8_t uuid, enum sc_variant v,
			 uint32_t cache_blocks, int peer)
{
	struct sc_host_transport_opts o = { .server = hb_server(),
					    .port = hb_port(),
					    .timeout_ms = 20000,
					    .peer_bind = peer == PEER_SERVE ?
							 "127.0.0.1" : NULL,
					    .block_size = BS };
	struct sc_host_config c = { .variant = v,
				    .cache_blocks = cache_blocks,
				    .fail_fast = th_fail_fast,
				    .io_retries = th_fail_fast ? 3 : 0 };
	struct th *t = calloc(1, sizeof(*t));
	char name[32];

	assert_non_null(t);
	t->v = v;
	memset(c.uuid, uuid, sizeof(c.uuid));
	snprintf(name, sizeof(name), "test-%02x-%s", uuid,
		 sc_variants[v].name);
	c.name = name;
	assert_int_equal(sc_host_transport_open(&o, &t->ft.inner, &t->st), 0);
	sc_host_transport_peer_addr(t->st, &c.peer);
	if (peer == PEER_DEAD) {
		c.peer.family = CSI_AF_INET;
		c.peer.addr[0] = 127;
		c.peer.addr[3] = 1;
		c.peer.port = dead_port();
	}
	pthread_mutex_init(&t->ft.lock, NULL);
	pthread_cond_init(&t->ft.gate_cv, NULL);
	c.tr.call = ft_call;
	c.tr.release = ft_release;
	c.tr.peer_fetch = ft_peer_fetch;
	c.tr.peer_fetch_many = th_one_by_one ? NULL : ft_peer_fetch_many;
	c.tr.identity = ft_identity;
	c.tr.ctx = &t->ft;
	assert_int_equal(sc_host_create(&c, &t->h), 0);
	assert_int_equal(sc_host_block_size(t->h), BS);
	assert_int_equal(sc_host_features(t->h), sc_variants[v].features);
	sc_host_transport_set_host(t->st, t->h);
	return t;
}

static void th_free(struct th *t)
{
	sc_host_transport_set_host(t->st, NULL);
	sc_host_destroy(t->h);
	sc_host_transport_close(t->st);
	pthread_cond_destroy(&t->ft.gate_cv);
	pthread_mutex_destroy(&t->ft.lock);
	free(t);
}

static struct sc_host_stats th_stats(struct th *t)
{
	struct sc_host_stats s;

	sc_host_get_stats(t->h, &s);
	return s;
}

static size_t first_diff(const uint8_t *a, const uint8_t *b, size_t len)
{
	size_t i;

	for (i = 0; i < len && a[i] == b[i]; i++)
		;
	return i;
}

/*
 * A read's sink (sc_host_read_sink) into a buffer of the request's len
 * bytes, as a kernel's iov_iter: every copy must fall inside the request,
 * and the memory from fault_at on faults.
 */
struct test_sink {
	uint8_t *buf;
	size_t len, fault_at;
};

static size_t test_sink_copy(void *ctx, uint64_t off, const void *src,
			     size_t n)
{
	struct test_sink *k = ctx;
	size_t can = off >= k->fault_at ? 0 :
		     (k->fault_at - off < n ? k->fault_at - off : n);

	if (off > k->len || n > k->len - off)
		fail_msg("sink: %zu bytes at %llu, past a %zu-byte request", n,
			 (unsigned long long)off, k->len);
	memcpy(k->buf + off, src, can);
	return can;
}

static ssize_t read_to_sink(struct th *t, uint64_t file, uint64_t off,
			    uint8_t *buf, size_t len, size_t fault_at)
{
	struct test_sink k = { .buf = buf, .len = len, .fault_at = fault_at };
	struct sc_read_sink sink = { .copy = test_sink_copy, .ctx = &k };

	return sc_host_read_sink(t->h, file, off, &sink, len);
}

/*
 * Reads [off, off + len) of file and checks it against ref (size bytes):
 * every other read through a sink, which must give the same calls and
 * bytes as a flat buffer.
 */
static void check_read(struct th *t, uint64_t file, const uint8_t *ref,
		       uint64_t size, uint64_t off, size_t len)
{
	static _Atomic unsigned int reads;
	uint8_t *buf = malloc(len ? len : 1);
	size_t want = off >= size ? 0 : (size - off < len ? size - off : len);
	ssize_t got;

	assert_non_null(buf);
	memset(buf, 0xa5, len);
	if (atomic_fetch_add(&reads, 1) & 1)
		got = read_to_sink(t, file, off, buf, len, SIZE_MAX);
	else
		got = sc_host_read(t->h, file, off, buf, len);
	if (got != (ssize_t)want)
		fail_msg("%s: read %llu+%zu of a %llu-byte file: %zd",
			 sc_variants[t->v].name, (unsigned long long)off,
			 len, (unsigned long long)size, got);
	if (want && memcmp(buf, ref + off, want))
		fail_msg("%s: read %llu+%zu: byte %zu differs",
			 sc_variants[t->v].name, (unsigned long long)off,
			 len, first_diff(buf, ref + off, want));
	free(buf);
}

/* The whole file, then random ranges, then the whole file again. */
static void check_file(struct th *t, uint64_t file, const uint8_t *ref,
		       uint64_t size, uint64_t seed)
{
	struct sc_prng r;
	int i;

	sc_prng_seed(&r, seed);
	check_read(t, file, ref, size, 0, size);
	for (i = 0; i < 24; i++) {
		uint64_t off = sc_prng_below(&r, (uint32_t)size + BS);
		size_t len = 1 + sc_prng_below(&r, 6 * BS);

		check_read(t, file, ref, size, off, len);
	}
	check_read(t, file, ref, size, 0, size + 3 * BS);
}

/* The server's copy of name is ref[0..size). */
static void check_server(const char *name, const uint8_t *ref, size_t size)
{
	uint8_t *buf = malloc(size + BS);
	size_t got;

	assert_non_null(buf);
	got = hb_read_back(name, buf, size + BS);
	assert_int_equal(got, size);
	if (memcmp(buf, ref, size))
		fail_msg("%s: byte %zu differs on the server", name,
			 first_diff(buf, ref, size));
	free(buf);
}

/* ---- reads ---- */

static void test_read_variants(void **state)
{
	(void)state;
	for (int v = 0; v < SC_VARIANT_COUNT; v++) {
		struct th *t = th_new(0x10 + v, v, 256, v >= SC_VARIANT_COOP ? PEER_SERVE : PEER_NONE);
		struct sc_host_stats s0, s1;

		check_file(t, base_id, base, FSIZE, SEED + v);
		check_file(t, clone_id, clone_bytes, FSIZE, SEED + 100 + v);
		s0 = th_stats(t);
		/* all cached now: not a call more */
		check_read(t, base_id, base, FSIZE, 0, FSIZE);
		s1 = th_stats(t);
		printf("%s: data %llu, hash only %llu, content hits %llu, mapped hits %llu, calls %llu\n",
		       sc_variants[v].name,
		       (unsigned long long)s1.server_data_blocks,
		       (unsigned long long)s1.hash_only_blocks,
		       (unsigned long long)s1.content_hits,
		       (unsigned long long)s1.mapped_hits,
		       (unsigned long long)s1.server_calls);
		assert_int_equal(s1.server_calls, s0.server_calls);
		assert_true(s1.addr_hits > s0.addr_hits);
		/* the clone shares all but 3 blocks with the base */
		if (v == SC_VARIANT_BASELINE || v == SC_VARIANT_READ_HASH ||
		    v == SC_VARIANT_DEDUP_RW)
			assert_int_equal(s1.hash_only_blocks, 0);
		else if (!(sc_variants[v].features & CSI_FEAT_MAP))
			assert_true(s1.hash_only_blocks >= NBLK - 3 - 2);
		else	/* the clone's map came ahead: its blocks hit */
			assert_true(s1.hash_only_blocks + s1.mapped_hits >=
				    NBLK - 3 - 2);
		if (v != SC_VARIANT_BASELINE)
			assert_true(s1.server_data_blocks <= NBLK + 1 + 3);
		else
			assert_true(s1.server_data_blocks >= 2 * NBLK);
		/* only after a failed delegation, to a host gone before */
		assert_int_equal(s1.force_data_blocks, s1.peer_failures);
		th_free(t);
	}
}

/*
 * A sink that faults part way: the read returns the bytes before the
 * fault, right, whether the fault is in a miss or a hit, and -EFAULT
 * for a fault at its first byte.
 */
static void test_read_sink_fault(void **state)
{
	struct th *t = th_new(0x4f, SC_VARIANT_TRACKER, 256, PEER_NONE);
	size_t len = 8 * BS, at[] = { 3 * BS + 100, 5 * BS + 7, 0 };
	uint8_t *buf = malloc(len);

	(void)state;
	assert_non_null(buf);
	for (unsigned int i = 0; i < 3; i++) {
		/* the first read misses, the others hit */
		ssize_t got = read_to_sink(t, base_id, BS / 2, buf, len,
					   at[i]);

		assert_int_equal(got, at[i] ? (ssize_t)at[i] : -EFAULT);
		if (at[i] && memcmp(buf, base + BS / 2, at[i]))
			fail_msg("fault at %zu: byte %zu differs", at[i],
				 first_diff(buf, base + BS / 2, at[i]));
	}
	check_read(t, base_id, base, FSIZE, BS / 2, len);
	free(buf);
	th_free(t);
}

/*
 * A request whose two misses an address hit splits: under a tracker the
 * hit is asked again (answered by hash) and one READ covers both misses;
 * without one, each run of misses is a READ of its own.
 */
static void test_gap_one_read(void **state)
{
	static const enum sc_variant v[] = { SC_VARIANT_BASELINE,
					     SC_VARIANT_TRACKER };

	(void)state;
	for (unsigned int i = 0; i < 2; i++) {
		struct th *t = th_new(0x50 + i, v[i], 256, PEER_NONE);
		struct sc_host_stats s0, s1;

		check_read(t, base_id, base, FSIZE, 5 * BS, BS);
		s0 = th_stats(t);
		check_read(t, base_id, base, FSIZE, 4 * BS, 3 * BS);
		s1 = th_stats(t);
		assert_int_equal(s1.addr_hits - s0.addr_hits, 1);
		assert_int_equal(s1.server_calls - s0.server_calls,
				 v[i] == SC_VARIANT_TRACKER ? 1 : 2);
		th_free(t);
	}
}

/*
 * SS-Push stops asking for pushes that serve no read: the host reads
 * base through a 4-block cache and never reads the clone again, so the
 * clone's pushed addresses never hit.  After a span of RD_PUSH_SPAN (4096)
 * received, READs accept pushes only as probes, 1 in 16.
 */
static void test_push_idle(void **state)
{
	struct th *t = th_new(0x5c, SC_VARIANT_PUSH, 4, PEER_NONE);
	struct sc_host_stats s0, s1;
	uint64_t calls, pushes;
	uint32_t i;

	(void)state;
	check_read(t, clone_id, clone_bytes, FSIZE, 0, FSIZE);
	/*
	 * The server's CSI-Map gets the files' blocks when its housekeeping
	 * applies the writes' deltas (every second): until then no push.
	 */
	for (i = 0; th_stats(t).pushes_received == 0 && i < 200; i++) {
		usleep(50000);
		check_read(t, base_id, base, FSIZE, (uint64_t)(i % NBLK) * BS,
			   BS);
	}
	s0 = th_stats(t);
	for (i = 0; i < NBLK; i++)
		check_read(t, base_id, base, FSIZE, (uint64_t)i * BS, BS);
	s1 = th_stats(t);
	/* pushes flow: about one clone address per READ of base */
	assert_true(s1.pushes_received - s0.pushes_received >= NBLK / 2);
	while (th_stats(t).pushes_received < 4096 + 64)
		for (i = 0; i < NBLK; i++)
			check_read(t, base_id, base, FSIZE, (uint64_t)i * BS,
				   BS);
	s0 = th_stats(t);
	assert_int_equal(s0.cache.pushed_hits, 0);
	for (unsigned int pass = 0; pass < 8; pass++)
		for (i = 0; i < NBLK; i++)
			check_read(t, base_id, base, FSIZE, (uint64_t)i * BS,
				   BS);
	s1 = th_stats(t);
	calls = s1.server_calls - s0.server_calls;
	pushes = s1.pushes_received - s0.pushes_received;
	assert_true(calls >= 8 * NBLK / 2);
	/* probes only: at most about 1 in 16 READs brings pushes */
	assert_true(pushes > 0);
	assert_true(pushes * 6 < calls);
	th_free(t);
}

/* ---- single flight: VMs of a host missing one content fetch it once ---- */

#define SF_READERS 8

struct sf_reader {
	struct th *t;
	uint64_t file;
	pthread_barrier_t *start;
	bool ok;
	pthread_t tid;
};

static void *sf_read(void *arg)
{
	struct sf_reader *sr = arg;
	uint8_t *buf = malloc(FSIZE);

	pthread_barrier_wait(sr->start);
	sr->ok = buf && sc_host_read(sr->t->h, sr->file, 0, buf, FSIZE) ==
			FSIZE && !memcmp(buf, base, FSIZE);
	free(buf);
	return NULL;
}

/*
 * SF_READERS VMs of one host read their clones of base at once, every
 * byte checked: the blocks the host fetched (from the server or peers).
 */
static uint64_t sf_round(struct th *t, const uint64_t *files)
{
	struct sf_reader sr[SF_READERS];
	struct sc_host_stats s0 = th_stats(t), s1;
	pthread_barrier_t start;
	int i;

	pthread_mutex_lock(&t->ft.lock);
	t->ft.gate = SF_READERS;
	t->ft.gate_hashes = 0;
	pthread_mutex_unlock(&t->ft.lock);
	pthread_barrier_init(&start, NULL, SF_READERS);
	for (i = 0; i < SF_READERS; i++) {
		sr[i] = (struct sf_reader){ .t = t, .file = files[i],
					    .start = &start };
		assert_int_equal(pthread_create(&sr[i].tid, NULL, sf_read,
						&sr[i]), 0);
	}
	for (i = 0; i < SF_READERS; i++) {
		pthread_join(sr[i].tid, NULL);
		if (!sr[i].ok)
			fail_msg("%s: reader %d read wrong bytes",
				 sc_variants[t->v].name, i);
	}
	pthread_barrier_destroy(&start);
	pthread_mutex_lock(&t->ft.lock);
	t->ft.gate = 0;
	pthread_mutex_unlock(&t->ft.lock);
	s1 = th_stats(t);
	printf("%s: %llu data, %llu peer, %llu waited, %llu calls\n",
	       sc_variants[t->v].name,
	       (unsigned long long)(s1.server_data_blocks -
				    s0.server_data_blocks),
	       (unsigned long long)(s1.peer_blocks - s0.peer_blocks),
	       (unsigned long long)(s1.waited_blocks - s0.waited_blocks),
	       (unsigned long long)(s1.server_calls - s0.server_calls));
	return s1.server_data_blocks - s0.server_data_blocks +
	       s1.peer_blocks - s0.peer_blocks;
}

/*
 * Single flight: VMs of one host that read one content at once fetch it
 * once, whether they learn its hash first (Read#: GET_HASHES, then READ
 * for what the cache lacks), from their mappings (the content left the
 * cache) or from the server's answers (HASH for what it sends another).
 */
static void test_single_flight(void **state)
{
	uint64_t files[SF_READERS];
	char name[16];
	int i, v;

	(void)state;
	for (i = 0; i < SF_READERS; i++) {
		snprintf(name, sizeof(name), "sf-%d", i);
		files[i] = hb_create(name, base, FSIZE);
	}
	for (v = SC_VARIANT_READ_HASH; v < SC_VARIANT_COUNT; v++) {
		struct th *t = th_new(0x60 + v, v, 256, PEER_NONE);

		assert_int_equal(sf_round(t, files), NBLK + 1);
		/*
		 * every block given back, its notice sent (as the kernel's
		 * shrinker has the idle work do): the mappings name what to
		 * fetch
		 */
		assert_int_equal(sc_host_shrink(t->h, 4 * NBLK), NBLK + 1);
		assert_int_equal(sc_host_idle(t->h), 0);
		assert_int_equal(sf_round(t, files), NBLK + 1);
		th_free(t);
	}
}

/* ---- writes ---- */

static void test_write_variants(void **state)
{
	static uint8_t ref[FSIZE + 8 * BS];
	struct th *other;
	struct sc_prng r;
	char name[32];

	(void)state;
	other = th_new(0x20, SC_VARIANT_READ_HASH, 64, PEER_NONE);
	sc_prng_seed(&r, SEED + 7);
	for (int v = 0; v < SC_VARIANT_COUNT; v++) {
		struct th *t = th_new(0x21 + v, v, 128, PEER_NONE);
		uint64_t size = 0, id;
		struct sc_host_stats s;

		snprintf(name, sizeof(name), "w-%s", sc_variants[v].name);
		id = hb_create(name, NULL, 0);
		memset(ref, 0, sizeof(ref));
		/* whole base content first: Dedup-W may send it by hash */
		check_read(t, base_id, base, FSIZE, 0, FSIZE);
		for (int i = 0; i < 30; i++) {
			uint64_t off = sc_prng_below(&r, FSIZE);
			size_t len = 1 + sc_prng_below(&r, 5 * BS);
			bool stable = sc_prng_below(&r, 2);
			uint8_t *src = sc_prng_below(&r, 2) ? base + off % BS :
							       NULL;
			uint8_t tmp[5 * BS];

			if (!src) {
				sc_prng_fill(&r, tmp, len);
				src = tmp;
			}
			if (off + len > sizeof(ref))
				len = sizeof(ref) - off;
			/* whole blocks of base at their own offset, often */
			if (i % 3 == 0) {
				off -= off % BS;
				len = 4 * BS;
				src = base + off;
				if (off + len > FSIZE)
					continue;
			}
			assert_int_equal(sc_host_write(t->h, id, off, src, len,
						       stable), (ssize_t)len);
			memcpy(ref + off, src, len);
			if (off + len > size)
				size = off + len;
			if (i % 7 == 6)
				assert_int_equal(sc_host_commit(t->h, id), 0);
			if (i % 5 == 4)
				check_read(t, id, ref, size,
					   sc_prng_below(&r, (uint32_t)size),
					   3 * BS);
		}
		assert_int_equal(sc_host_commit(t->h, id), 0);
		s = th_stats(t);
		assert_int_equal(s.pinned_blocks, 0);
		if (v == SC_VARIANT_DEDUP_RW || v == SC_VARIANT_SEACACHE)
			assert_true(s.write_hash_blocks > 0);
		else
			assert_int_equal(s.write_hash_blocks, 0);
		check_file(t, id, ref, size, SEED + 200 + v);
		check_server(name, ref, size);
		/* another host, after an open */
		{
			struct csi_fileattr a;

			assert_int_equal(sc_host_getattr(other->h, id, &a), 0);
			assert_int_equal(a.size, size);
			check_file(other, id, ref, size, SEED + 300 + v);
		}
		th_free(t);
	}
	th_free(other);
}

/* ---- races and faults ---- */

/*
 * The server believes the host holds what it evicted (the notices never
 * arrive): HASH answers for contents not cached are read again, and only
 * they, with FORCE_DATA.
 */
static void test_force_data(void **state)
{
	struct th *t = th_new(0x30, SC_VARIANT_TRACKER, 8, PEER_NONE);
	struct sc_host_stats s;

	(void)state;
	t->ft.strip = true;
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	check_read(t, clone_id, clone_bytes, FSIZE, 0, FSIZE);
	s = th_stats(t);
	assert_true(s.force_data_blocks >= NBLK - 3 - 8);
	assert_true(s.hash_only_blocks >= s.force_data_blocks);
	t->ft.strip = false;
	th_free(t);
}

/*
 * A peer serves, then refuses (bad token, NOENT), then is gone; the hosts
 * are uuid + 0, 1, 2 and 9.
 */
static void peers_check(uint8_t uuid)
{
	struct th *a = th_new(uuid, SC_VARIANT_COOP, 256, PEER_SERVE);
	struct th *b = th_new(uuid + 1, SC_VARIANT_COOP, 256, PEER_SERVE);
	struct th *c, *d;
	struct sc_peer_server_stats ps;
	struct sc_host_stats s;

	check_read(a, base_id, base, FSIZE, 0, FSIZE);
	check_read(b, clone_id, clone_bytes, 4 * BS, 0, 4 * BS);
	s = th_stats(b);
	assert_true(s.peer_blocks >= 1);
	sc_host_transport_peer_stats(a->st, &ps);
	assert_int_equal(ps.served, s.peer_blocks);
	assert_int_equal(th_stats(a).peer_served, s.peer_blocks);

	/* forged tokens: BAD_TOKEN, then the server */
	b->ft.bad_token = true;
	check_read(b, clone_id, clone_bytes, FSIZE, 4 * BS, 8 * BS);
	s = th_stats(b);
	assert_true(s.peer_failures >= 1);
	assert_int_equal(s.force_data_blocks, s.peer_failures);
	sc_host_transport_peer_stats(a->st, &ps);
	assert_true(ps.bad_token >= 1);
	b->ft.bad_token = false;

	/* a's cache no longer answers: NOENT */
	sc_host_transport_set_host(a->st, NULL);
	check_read(b, clone_id, clone_bytes, FSIZE, 12 * BS, 8 * BS);
	sc_host_transport_peer_stats(a->st, &ps);
	assert_true(ps.noent >= 1);
	sc_host_transport_set_host(a->st, a->h);

	/*
	 * a is gone (it withdrew its address, §11.7); d's peer died (its
	 * address refuses connections): the server is the fallback
	 */
	th_free(a);
	d = th_new(uuid + 9, SC_VARIANT_COOP, 256, PEER_DEAD);
	check_read(d, base_id, base, FSIZE, 0, FSIZE);
	c = th_new(uuid + 2, SC_VARIANT_COOP, 256, PEER_NONE);
	check_read(c, base_id, base, FSIZE, 0, FSIZE);
	check_read(b, clone_id, clone_bytes, FSIZE, 0, FSIZE);
	s = th_stats(c);
	assert_int_equal(s.peer_blocks + s.peer_failures, s.delegations);
	/* blocks 20 and up of the base only d holds */
	assert_true(s.peer_failures >= 1);
	th_free(b);
	th_free(c);
	th_free(d);
}

static void test_peers(void **state)
{
	(void)state;
	peers_check(0x31);
}

/* The same over a transport that fetches one block at a time. */
static void test_peers_one_by_one(void **state)
{
	(void)state;
	th_one_by_one = true;
	peers_check(0x41);
	th_one_by_one = false;
}

/* Blocks of the file only a dead peer holds; the servers' CSI_Peer_Failures. */
#define DEAD_BLOCKS (4 * NBLK)
#define PEER_FAILURES 16u

/*
 * A peer that died with its lease running: the host reports each failed
 * delegation (§7.12), and after PEER_FAILURES of them the server stops
 * naming it.  Without reports every block would go to it first.
 */
static void test_dead_peer_dropped(void **state)
{
	static uint8_t ref[DEAD_BLOCKS * BS];
	struct th *d, *c;
	struct sc_host_stats s;
	struct sc_prng r;
	uint64_t id;
	uint32_t i;

	(void)state;
	sc_prng_seed(&r, SEED + 800);
	sc_prng_fill(&r, ref, sizeof(ref));
	id = hb_create("deadpeer", ref, sizeof(ref));
	d = th_new(0x80, SC_VARIANT_COOP, DEAD_BLOCKS, PEER_DEAD);
	check_read(d, id, ref, sizeof(ref), 0, sizeof(ref));
	c = th_new(0x81, SC_VARIANT_COOP, DEAD_BLOCKS, PEER_NONE);
	for (i = 0; i < DEAD_BLOCKS; i++)
		check_read(c, id, ref, sizeof(ref), (uint64_t)i * BS, BS);
	s = th_stats(c);
	printf("dead peer: %llu of %u blocks delegated, %llu reported\n",
	       (unsigned long long)s.delegations, DEAD_BLOCKS,
	       (unsigned long long)s.peer_reports);
	assert_true(s.delegations >= PEER_FAILURES);
	assert_int_equal(s.peer_failures, s.delegations);
	assert_int_equal(s.peer_reports, s.peer_failures);
	/* the last report may come with a READ's worth of others in flight */
	assert_true(s.delegations < PEER_FAILURES + 16);
	th_free(c);
	th_free(d);
}

/* A new epoch: HELLO again, data again, unstable blocks written again. */
static void test_restart(void **state)
{
	struct th *t = th_new(0x34, SC_VARIANT_SEACACHE, 256, PEER_SERVE);
	static uint8_t ref[FSIZE];
	struct sc_host_stats s0, s1;
	struct csi_fileattr a;
	uint64_t id, epoch;

	(void)state;
	id = hb_create("restart", NULL, 0);
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	memcpy(ref, clone_bytes, FSIZE);
	assert_int_equal(sc_host_write(t->h, id, 0, ref, FSIZE, false),
			 FSIZE);
	s0 = th_stats(t);
	assert_int_equal(s0.pinned_blocks, NBLK + 1);
	epoch = t->ft.epoch;
	hb_restart();
	/* address hits need no server: an open finds the new epoch */
	assert_int_equal(sc_host_getattr(t->h, base_id, &a), 0);
	/* every mapping went with the epoch: the server is asked again */
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	s1 = th_stats(t);
	assert_int_not_equal(t->ft.epoch, epoch);
	assert_int_equal(s1.registrations, 2);
	assert_true(s1.server_calls > s0.server_calls);
	assert_int_equal(sc_host_commit(t->h, id), 0);
	s1 = th_stats(t);
	assert_int_equal(s1.pinned_blocks, 0);
	/* written again, as data */
	assert_true(s1.write_data_bytes >= s0.write_data_bytes + NBLK * BS);
	check_server("restart", ref, FSIZE);
	check_file(t, id, ref, FSIZE, SEED + 400);
	th_free(t);
}

/*
 * After a restart that lost the unstable writes, a read (not only a
 * COMMIT) sees them: the file's stale blocks are written again first.
 */
static void test_restart_read(void **state)
{
	struct th *t = th_new(0x3b, SC_VARIANT_SEACACHE, 8, PEER_NONE);
	static uint8_t ref[FSIZE];
	uint64_t id;

	(void)state;
	id = hb_create("restartread", base, FSIZE);
	memcpy(ref, clone_bytes, FSIZE);
	assert_int_equal(sc_host_write(t->h, id, 0, ref, FSIZE, false),
			 FSIZE);
	hb_restart();
	hb_write_behind("restartread", 0, base, FSIZE);	/* lost */
	/*
	 * An 8-block cache holds few of the blocks written: the reads ask
	 * the server, and the first READ finds the new epoch itself.
	 */
	check_file(t, id, ref, FSIZE, SEED + 700);
	assert_int_equal(sc_host_commit(t->h, id), 0);
	check_server("restartread", ref, FSIZE);
	th_free(t);
}

/*
 * A WRITE that finds the restart itself lands in the new epoch before
 * the older unstable pins of its blocks are written again: those must
 * not be written over it afterwards (at the COMMIT or a read's resend).
 */
static void test_restart_write(void **state)
{
	struct th *t = th_new(0x3d, SC_VARIANT_SEACACHE, 256, PEER_NONE);
	static uint8_t ref[FSIZE];
	uint64_t id;

	(void)state;
	id = hb_create("restartwrite", base, FSIZE);
	memcpy(ref, base, FSIZE);
	memset(ref, 0xa1, 4 * BS);
	assert_int_equal(sc_host_write(t->h, id, 0, ref, 4 * BS, false),
			 4 * BS);
	hb_restart();
	hb_write_behind("restartwrite", 0, base, FSIZE);	/* lost */
	/* whole blocks, no read first: this WRITE finds the new epoch */
	memset(ref + BS, 0xb2, 2 * BS);
	assert_int_equal(sc_host_write(t->h, id, BS, ref + BS, 2 * BS, false),
			 2 * BS);
	assert_int_equal(th_stats(t).registrations, 2);
	check_file(t, id, ref, FSIZE, SEED + 800);
	assert_int_equal(sc_host_commit(t->h, id), 0);
	assert_int_equal(th_stats(t).pinned_blocks, 0);
	check_server("restartwrite", ref, FSIZE);
	/* and once more: every pin of this epoch is committed */
	hb_restart();
	check_file(t, id, ref, FSIZE, SEED + 801);
	check_server("restartwrite", ref, FSIZE);
	th_free(t);
}

struct drained {
	uint8_t bytes[FSIZE];
	unsigned int puts;
};

static int put_drained(void *ctx, uint64_t off, const void *data,
		       uint32_t len)
{
	struct drained *d = ctx;

	assert_true(off + len <= FSIZE);
	memcpy(d->bytes + off, data, len);
	d->puts++;
	return 0;
}

/*
 * The unstable blocks a host keeps before a write commits its file by
 * itself: a quarter of its cache, at least 4096.  A host of 64 Ki blocks
 * keeps 4097 (a patch storm's burst on a lab host); one of 256 commits the
 * file when the 4097th is written, that one too.
 */
static void test_pins_limit(void **state)
{
	static const uint32_t cache[] = { 65536, 256 }, kept[] = { 4097, 0 };
	uint8_t *buf = malloc(4097 * BS);
	(void)state;
	assert_non_null(buf);
	for (int k = 0; k < 2; k++) {
		struct th *t = th_new(0x70 + k, SC_VARIANT_SEACACHE, cache[k],
				      PEER_NONE);
		struct sc_prng r;
		uint64_t id;
		char name[32];

		snprintf(name, sizeof(name), "pins-limit-%d", k);
		sc_prng_seed(&r, SEED + 700 + (uint64_t)k);
		sc_prng_fill(&r, buf, 4097 * BS);
		id = hb_create(name, NULL, 0);
		assert_int_equal(sc_host_write(t->h, id, 0, buf, 4096 * BS,
					       false), 4096 * BS);
		assert_int_equal(th_stats(t).pinned_blocks, 4096);
		assert_int_equal(sc_host_write(t->h, id, 4096 * BS,
					       buf + 4096 * BS, BS, false), BS);
		assert_int_equal(th_stats(t).pinned_blocks, kept[k]);
		assert_int_equal(sc_host_commit(t->h, id), 0);
		assert_int_equal(th_stats(t).pinned_blocks, 0);
		check_server(name, buf, 4097 * BS);
		th_free(t);
	}
	free(buf);
}

/*
 * A kernel host whose service is gone hands its unstable blocks to the
 * NFS mount (sc_host_pins_drain), the newest last; then a COMMIT has
 * nothing to ask the server.
 */
static void test_pins_drain(void **state)
{
	struct th *t = th_new(0x3c, SC_VARIANT_SEACACHE, 256, PEER_NONE);
	static uint8_t ref[FSIZE];
	static struct drained d;
	struct sc_host_stats s0;
	uint64_t id;

	(void)state;
	id = hb_create("drain", base, FSIZE);
	memcpy(ref, base, FSIZE);
	memcpy(d.bytes, base, FSIZE);
	memcpy(ref + BS, clone_bytes, 3 * BS);
	assert_int_equal(sc_host_write(t->h, id, BS, clone_bytes, 3 * BS,
				       false), 3 * BS);
	/* the same block again, newer: the drain must end with this one */
	memset(ref + 2 * BS + 7, 0xa5, 100);
	assert_int_equal(sc_host_write(t->h, id, 2 * BS + 7, ref + 2 * BS + 7,
				       100, false), 100);
	assert_true(th_stats(t).pinned_blocks >= 3);
	assert_int_equal(sc_host_pins_drain(t->h, id, put_drained, &d), 0);
	assert_true(d.puts >= 3);
	assert_memory_equal(d.bytes, ref, FSIZE);
	s0 = th_stats(t);
	assert_int_equal(s0.pinned_blocks, 0);
	assert_int_equal(sc_host_commit(t->h, id), 0);
	assert_int_equal(th_stats(t).server_calls, s0.server_calls);
	th_free(t);
}

/* Another registration of the same uuid: UNKNOWN_HOST, HELLO again. */
static void test_replaced(void **state)
{
	struct th *x = th_new(0x35, SC_VARIANT_TRACKER, 64, PEER_NONE);
	struct th *y;

	(void)state;
	check_read(x, base_id, base, FSIZE, 0, 8 * BS);
	y = th_new(0x35, SC_VARIANT_TRACKER, 64, PEER_NONE);
	check_read(x, base_id, base, FSIZE, 8 * BS, 8 * BS);
	assert_int_equal(th_stats(x).registrations, 2);
	check_read(y, base_id, base, FSIZE, 0, FSIZE);
	assert_int_equal(th_stats(y).registrations, 2);
	th_free(x);
	th_free(y);
}

/* ---- map windows (GET_MAP) ---- */

#define MAP_NBLK 600u		/* a few windows: 512, 1024 */
#define MAP_CLONES 4u
#define MAP_REQ 32u		/* blocks per read, as a VM's read-ahead */

static uint8_t map_img[MAP_CLONES][MAP_NBLK * BS];

/* MAP_CLONES clones of one image, each with 2 blocks of its own. */
static void map_clones_make(uint64_t *ids)
{
	struct sc_prng r;
	char name[32];
	uint32_t c;

	sc_prng_seed(&r, SEED + 700);
	sc_prng_fill(&r, map_img[0], sizeof(map_img[0]));
	for (c = 0; c < MAP_CLONES; c++) {
		if (c)
			memcpy(map_img[c], map_img[0], sizeof(map_img[0]));
		sc_prng_fill(&r, map_img[c] + (100 + c) * BS, BS);
		sc_prng_fill(&r, map_img[c] + (450 + 7 * c) * BS, BS);
		snprintf(name, sizeof(name), "mapclone-%u", c);
		ids[c] = hb_create(name, map_img[c], sizeof(map_img[c]));
	}
}

/* A scan of clone c: every block once, in reads of MAP_REQ. */
static void map_scan(struct th *t, const uint64_t *ids, uint32_t c)
{
	uint64_t off;

	for (off = 0; off < MAP_NBLK * BS; off += MAP_REQ * BS)
		check_read(t, ids[c], map_img[c], MAP_NBLK * BS, off,
			   MAP_REQ * BS);
}

/*
 * A scan of N clones on one host costs the calls of one clone plus the
 * map windows and the blocks of their own: the first clone's reads bring
 * the contents, the others' windows name them.  Without maps (W/Tracker)
 * every read of every clone is a call.
 */
static void test_map_clones(void **state)
{
	uint64_t ids[MAP_CLONES], one, all, reads = MAP_NBLK / MAP_REQ + 1;
	struct sc_host_stats s;
	struct th *t;
	uint32_t c;

	(void)state;
	map_clones_make(ids);
	t = th_new(0x60, SC_VARIANT_SEACACHE, 4096, PEER_NONE);
	map_scan(t, ids, 0);
	one = th_stats(t).server_calls;
	for (c = 1; c < MAP_CLONES; c++)
		map_scan(t, ids, c);
	s = th_stats(t);
	all = s.server_calls;
	printf("seacache: %u clones of %u blocks: %llu calls, the first %llu; %llu GET_MAP, %llu entries, %llu mapped hits\n",
	       MAP_CLONES, MAP_NBLK, (unsigned long long)all,
	       (unsigned long long)one, (unsigned long long)s.map_calls,
	       (unsigned long long)s.map_entries,
	       (unsigned long long)s.mapped_hits);
	/* windows of 512 and 1024: at most 4 per clone, 2 own blocks */
	assert_true(s.map_calls <= 4 * MAP_CLONES);
	assert_true(all <= one + 4 * (MAP_CLONES - 1) + 2 * (MAP_CLONES - 1));
	assert_true(s.mapped_hits >= (MAP_CLONES - 1) * (MAP_NBLK - 2) / 2);
	th_free(t);

	t = th_new(0x61, SC_VARIANT_TRACKER, 4096, PEER_NONE);
	for (c = 0; c < MAP_CLONES; c++)
		map_scan(t, ids, c);
	s = th_stats(t);
	printf("tracker: %llu calls\n", (unsigned long long)s.server_calls);
	assert_true(s.server_calls >= MAP_CLONES * (reads - 1));
	assert_int_equal(s.map_calls, 0);
	th_free(t);
}

/*
 * Content read-ahead: a clone with a block of its own in every
 * RA_EVERY, read in order in reads of RA_REQ blocks after the clone it
 * came from, every byte right.  Each READ brings the own blocks its
 * window names up to max_blocks ahead, so at most one READ per two own
 * blocks (max_blocks 16: a READ from one own block reaches the next);
 * read backwards (no read begins where the last ended) nothing is read
 * ahead and each own block costs its READ.
 */
#define RA_EVERY 8u
#define RA_REQ 4u

/*
 * A new host scans the clone the others came from, then clone id (img)
 * in reads of RA_REQ: the second scan's calls, and *ahead the contents
 * it read ahead.
 */
static uint64_t ra_scan(uint8_t uuid, const uint64_t *ids, uint64_t id,
			const uint8_t *img, bool backwards, uint64_t *ahead)
{
	uint32_t i, n = MAP_NBLK / RA_REQ;
	struct th *t = th_new(uuid, SC_VARIANT_SEACACHE, 4096, PEER_NONE);
	struct sc_host_stats s;

	map_scan(t, ids, 0);
	s = th_stats(t);
	for (i = 0; i < n; i++)
		check_read(t, id, img, MAP_NBLK * BS,
			   (uint64_t)(backwards ? n - 1 - i : i) * RA_REQ * BS,
			   RA_REQ * BS);
	*ahead = th_stats(t).readahead_blocks - s.readahead_blocks;
	s.server_calls = th_stats(t).server_calls - s.server_calls;
	th_free(t);
	printf("%s: %llu calls, %llu contents read ahead\n",
	       backwards ? "backwards" : "in order",
	       (unsigned long long)s.server_calls, (unsigned long long)*ahead);
	return s.server_calls;
}

static void test_readahead(void **state)
{
	static uint8_t own[MAP_NBLK * BS];
	uint64_t ids[MAP_CLONES], id, nown = MAP_NBLK / RA_EVERY, ahead;
	struct sc_prng r;
	uint32_t i;

	(void)state;
	map_clones_make(ids);
	memcpy(own, map_img[0], sizeof(own));
	sc_prng_seed(&r, SEED + 720);
	for (i = 5; i < MAP_NBLK; i += RA_EVERY)
		sc_prng_fill(&r, own + (size_t)i * BS, BS);
	id = hb_create("readahead", own, sizeof(own));

	assert_true(ra_scan(0x64, ids, id, own, false, &ahead) <= nown / 2 + 6);
	assert_true(ahead >= nown / 2 - 2);
	assert_true(ra_scan(0x65, ids, id, own, true, &ahead) >= nown);
	assert_int_equal(ahead, 0);
}

/*
 * A map entry never serves a wrong block: another host's write inside
 * the window, seen at open or through a reply's change id the host did
 * not cause; a truncation; a server restart.
 */
static void test_map_fresh(void **state)
{
	static uint8_t ref[MAP_NBLK * BS], clone[MAP_NBLK * BS];
	struct th *a = th_new(0x62, SC_VARIANT_SEACACHE, 4096, PEER_NONE);
	struct th *b = th_new(0x63, SC_VARIANT_DEDUP_RW, 4096, PEER_NONE);
	struct csi_fileattr at;
	struct sc_prng r;
	uint64_t id, cid, maps, size = sizeof(ref);

	(void)state;
	sc_prng_seed(&r, SEED + 710);
	sc_prng_fill(&r, ref, sizeof(ref));
	id = hb_create("mapfresh", ref, size);
	/* a's first window maps blocks 0..511; it has read 0..31 */
	check_read(a, id, ref, size, 0, MAP_REQ * BS);
	assert_true(th_stats(a).map_entries >= 512);

	/* b writes block 100; a opens the file again, then reads it */
	sc_prng_fill(&r, ref + 100 * BS, BS);
	assert_int_equal(sc_host_write(b->h, id, 100 * BS, ref + 100 * BS, BS,
				       true), BS);
	assert_int_equal(sc_host_getattr(a->h, id, &at), 0);
	check_read(a, id, ref, size, 64 * BS, 64 * BS);

	/*
	 * A clone whose contents a holds: its reads are map hits.  b writes
	 * its block 200; a's read of block 500, a hit near the end of the
	 * first window (512 blocks), fetches the next window, whose change
	 * id a did not cause: the clone's entries go, and block 200 comes
	 * from the server.
	 */
	memcpy(clone, ref, sizeof(clone));
	cid = hb_create("mapfresh-clone", clone, sizeof(clone));
	check_read(a, id, ref, size, 0, size);
	check_read(a, cid, clone, sizeof(clone), 0, MAP_REQ * BS);
	sc_prng_fill(&r, clone + 200 * BS, BS);
	assert_int_equal(sc_host_write(b->h, cid, 200 * BS, clone + 200 * BS,
				       BS, true), BS);
	maps = th_stats(a).map_calls;
	check_read(a, cid, clone, sizeof(clone), 500 * BS, BS);
	assert_int_equal(th_stats(a).map_calls, maps + 1);
	check_read(a, cid, clone, sizeof(clone), 192 * BS, 16 * BS);

	/* truncated behind it to 300 blocks and a little */
	size = 300 * BS + 10;
	hb_truncate("mapfresh", size);
	assert_int_equal(sc_host_getattr(a->h, id, &at), 0);
	assert_int_equal(at.size, size);
	check_read(a, id, ref, size, 280 * BS, 64 * BS);

	/* a new epoch: every mapping goes, the reads are right */
	hb_restart();
	assert_int_equal(sc_host_getattr(a->h, id, &at), 0);
	check_file(a, id, ref, size, SEED + 711);
	th_free(a);
	th_free(b);
}

/* A file changed behind the cache: an open (getattr) drops its map. */
static void test_changed_behind(void **state)
{
	struct th *t = th_new(0x36, SC_VARIANT_SEACACHE, 256, PEER_NONE);
	static uint8_t ref[FSIZE + BS];
	struct csi_fileattr a0, a1;
	struct sc_prng r;
	uint64_t id;

	(void)state;
	memcpy(ref, base, FSIZE);
	id = hb_create("behind", ref, FSIZE);
	assert_int_equal(sc_host_getattr(t->h, id, &a0), 0);
	check_file(t, id, ref, FSIZE, SEED + 500);
	sc_prng_seed(&r, SEED + 501);
	sc_prng_fill(&r, ref + 5 * BS + 100, 3 * BS);
	hb_write_behind("behind", 5 * BS + 100, ref + 5 * BS + 100, 3 * BS);
	sc_prng_fill(&r, ref + FSIZE, BS);
	hb_write_behind("behind", FSIZE, ref + FSIZE, BS);
	assert_int_equal(sc_host_getattr(t->h, id, &a1), 0);
	assert_int_not_equal(a1.change, a0.change);
	assert_int_equal(a1.size, FSIZE + BS);
	assert_int_equal(th_stats(t).files_dropped, 1);
	check_file(t, id, ref, FSIZE + BS, SEED + 502);
	th_free(t);
}

/* No reply, BUSY: retried; BUSY for too long: -EBUSY. */
static void test_faults(void **state)
{
	struct th *t = th_new(0x37, SC_VARIANT_TRACKER, 64, PEER_NONE);
	uint8_t buf[BS];

	(void)state;
	t->ft.fail = 3;
	check_read(t, base_id, base, FSIZE, 0, 4 * BS);
	t->ft.busy = 3;
	check_read(t, base_id, base, FSIZE, 4 * BS, 4 * BS);
	t->ft.busy = 100;
	assert_int_equal(sc_host_read(t->h, base_id, 20 * BS, buf, BS),
			 -EBUSY);
	t->ft.busy = 0;
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	th_free(t);
}

static uint32_t silent_calls(struct th *t)
{
	uint32_t n;

	pthread_mutex_lock(&t->ft.lock);
	n = t->ft.silent_calls;
	pthread_mutex_unlock(&t->ft.lock);
	return n;
}

/*
 * fail_fast (a kernel host's): a call with no reply by its deadline marks
 * the service down, and is not tried again; every later call fails at
 * once without going out, until sc_host_idle's probe is answered.  A
 * service that refuses connections trips it after the tries.
 */
static void test_fail_fast(void **state)
{
	struct csi_fileattr a;
	struct sc_host_stats s;
	struct th *t;
	uint8_t buf[BS];

	(void)state;
	th_fail_fast = true;
	t = th_new(0x3a, SC_VARIANT_TRACKER, 64, PEER_NONE);
	th_fail_fast = false;
	check_read(t, base_id, base, FSIZE, 0, 4 * BS);
	t->ft.silent = true;
	/* not mapped on this host yet: a call */
	assert_int_equal(sc_host_read(t->h, clone_id, 0, buf, BS), -EIO);
	assert_int_equal(silent_calls(t), 1);
	s = th_stats(t);
	assert_int_equal(s.down_trips, 1);
	assert_int_equal(s.csi_down, 1);
	assert_int_equal(sc_host_read(t->h, clone_id, 20 * BS, buf, BS),
			 -EIO);
	assert_int_equal(sc_host_getattr(t->h, clone_id, &a), -EIO);
	assert_int_equal(silent_calls(t), 1);
	assert_true(th_stats(t).down_calls >= 2);
	/* the probe goes out, meets the silence, and the service stays down */
	assert_int_not_equal(sc_host_idle(t->h), 0);
	assert_int_equal(silent_calls(t), 2);
	assert_int_equal(th_stats(t).csi_down, 1);
	t->ft.silent = false;
	assert_int_equal(sc_host_idle(t->h), 0);
	assert_int_equal(th_stats(t).csi_down, 0);
	check_read(t, clone_id, clone_bytes, FSIZE, 0, FSIZE);
	/* refused connections: down after the 1 + 3 tries */
	t->ft.fail = 100;
	assert_int_equal(sc_host_getattr(t->h, base_id, &a), -EIO);
	assert_int_equal(sc_host_getattr(t->h, base_id, &a), -EIO);
	s = th_stats(t);
	assert_int_equal(s.down_trips, 2);
	assert_int_equal(s.csi_down, 1);
	assert_int_equal(t->ft.fail, 100 - 4);
	t->ft.fail = 0;
	assert_int_equal(sc_host_idle(t->h), 0);
	assert_int_equal(th_stats(t).csi_down, 0);
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	th_free(t);
}

/* A small cache: every eviction is told, never more than max_evict. */
static void test_notices(void **state)
{
	struct th *t = th_new(0x38, SC_VARIANT_TRACKER, 4, PEER_NONE);
	struct sc_host_stats s;

	(void)state;
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	check_read(t, clone_id, clone_bytes, FSIZE, 0, FSIZE);
	assert_int_equal(sc_host_idle(t->h), 0);
	s = th_stats(t);
	assert_true(s.cache.evictions > NBLK);
	assert_int_equal(s.notices_sent, s.cache.evictions);
	assert_int_equal(s.notices_dropped, 0);
	assert_true(t->ft.max_notices <= hb_max_evict);
	assert_true(t->ft.max_notices > 0);
	/*
	 * told: no HASH answer for what was evicted before the call; only
	 * what the reply's own blocks pushed out of 4 slots is re-read
	 */
	assert_true(s.force_data_blocks <= 4);
	th_free(t);
}

/*
 * Memory asked back (sc_host_shrink, a kernel shrinker's scan): blocks
 * leave with their memory and are told to the server, so reading them
 * again gets DATA at once, no HASH to re-read; the cache grows back.
 */
static void test_shrink(void **state)
{
	struct th *t = th_new(0x3b, SC_VARIANT_TRACKER, 256, PEER_NONE);
	struct sc_host_stats s0, s;
	uint32_t held;

	(void)state;
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	s0 = th_stats(t);
	held = sc_host_cache_blocks(t->h);
	assert_int_equal(held, s0.cache.cache.blocks);
	assert_true(held > 10);
	assert_int_equal(sc_host_shrink(t->h, 10), 10);
	assert_int_equal(sc_host_cache_blocks(t->h), held - 10);
	assert_int_equal(sc_host_idle(t->h), 0);
	s = th_stats(t);
	assert_int_equal(s.cache.cache.shrunk, 10);
	assert_int_equal(s.cache.cache.limit, held - 10);
	assert_int_equal(s0.mem_bytes - s.mem_bytes, 10ull * BS);
	assert_int_equal(s.notices_sent, 10);
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	s = th_stats(t);
	assert_int_equal(s.force_data_blocks, 0);
	assert_int_equal(s.misses - s0.misses, 10);
	assert_int_equal(sc_host_cache_blocks(t->h), held);
	assert_int_equal(s.cache.cache.limit, held);
	th_free(t);
}

/* Dedup-W: by hash while the tracker lists it, NEED_DATA once it does not. */
static void test_need_data(void **state)
{
	struct th *t = th_new(0x39, SC_VARIANT_DEDUP_RW, 256, PEER_NONE);
	struct sc_host_stats s;
	uint64_t id1, id2;

	(void)state;
	id1 = hb_create("nd1", NULL, 0);
	id2 = hb_create("nd2", NULL, 0);
	check_read(t, base_id, base, FSIZE, 0, FSIZE);
	assert_int_equal(sc_host_write(t->h, id1, 0, base, FSIZE, true),
			 FSIZE);
	s = th_stats(t);
	assert_true(s.write_hash_blocks >= NBLK - 2);
	assert_int_equal(s.write_need_data, 0);
	hb_restart();
	/* the content is cached, the new tracker lists none of it */
	assert_int_equal(sc_host_write(t->h, id2, 0, base, FSIZE, true),
			 FSIZE);
	s = th_stats(t);
	assert_true(s.write_need_data >= NBLK - 2);
	check_server("nd1", base, FSIZE);
	check_server("nd2", base, FSIZE);
	th_free(t);
}

/* Bytes [off, off + len) of src into dst, widened to whole blocks. */
static void copy_blocks(uint8_t *dst, const uint8_t *src, uint64_t off,
			size_t len, size_t size)
{
	uint64_t from = off / BS * BS, to = (off + len + BS - 1) / BS * BS;

	memcpy(dst + from, src + from, (to < size ? to : size) - from);
}

/*
 * Unstable writes, with the n-th allocation of the writing thread made to
 * fail for n = 1, 2, ... until a write needs fewer: each write fails with
 * -ENOMEM (then the same write again succeeds) or succeeds, and what it
 * acknowledged survives a server that restarts having lost every unstable
 * byte (its file put back to what was durable).  Pins that cannot be
 * allocated send a write FILE_SYNC: its whole blocks are durable.  The
 * writes overlap, so a FILE_SYNC block also has older pins, which must
 * not undo it when they are written again.
 */
static void test_alloc_failure(void **state)
{
	struct th *t = th_new(0x3a, SC_VARIANT_SEACACHE, 256, PEER_NONE);
	static uint8_t ref[FSIZE], durable[FSIZE];
	uint8_t data[3 * BS];
	struct sc_prng r;
	uint64_t id, off, fallbacks;
	unsigned int n, left = 0;
	ssize_t got;

	(void)state;
	memcpy(ref, base, FSIZE);
	memcpy(durable, base, FSIZE);
	id = hb_create("allocfail", base, FSIZE);
	sc_prng_seed(&r, SEED + 600);
	for (n = 1; !left; n++) {
		off = (2 + n % 3) * BS + 100;
		sc_prng_fill(&r, data, sizeof(data));
		fallbacks = th_stats(t).write_sync_fallbacks;
		sc_fault_inject_alloc(n);
		got = sc_host_write(t->h, id, off, data, sizeof(data), false);
		left = sc_fault_inject_alloc(0);
		if (got < 0) {
			assert_int_equal(left, 0);
			assert_int_equal(got, -ENOMEM);
			got = sc_host_write(t->h, id, off, data, sizeof(data),
					    false);
		}
		assert_int_equal(got, sizeof(data));
		memcpy(ref + off, data, sizeof(data));
		if (th_stats(t).write_sync_fallbacks != fallbacks)
			copy_blocks(durable, ref, off, sizeof(data), FSIZE);
	}
	/* the pins' allocation was among those that failed */
	assert_true(th_stats(t).write_sync_fallbacks > 0);
	hb_restart();
	hb_write_behind("allocfail", 0, durable, FSIZE);
	assert_int_equal(sc_host_commit(t->h, id), 0);
	check_server("allocfail", ref, FSIZE);
	check_file(t, id, ref, FSIZE, SEED + 601);
	th_free(t);
}

/* ---- randomized: hosts, files, reads and writes ---- */

#define RND_HOSTS 4
#define RND_FILES 6
#define RND_MAX (24 * BS)

struct rnd_file {
	pthread_mutex_t lock;		/* one operation at a time */
	uint64_t id;
	uint8_t ref[RND_MAX];		/* what the file must hold */
	uint64_t size;
	uint64_t version;		/* writes so far */
};

static struct rnd_file rf[RND_FILES];
/* set by the first host that fails: the others stop early */
static atomic_bool rnd_failed;

struct rnd_host {
	pthread_t thread;
	struct th *t;
	uint64_t seed;
	uint64_t seen[RND_FILES];	/* the version last looked at */
	uint64_t ops_wanted, ops, reads, writes;
	char err[256];
};

/* Blocks from a small pool, so that the files share content. */
static void rnd_data(struct sc_prng *r, uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += BS) {
		size_t n = len - i < BS ? len - i : BS;

		if (sc_prng_below(r, 3))
			memcpy(buf + i, base + sc_prng_below(r, 8) * BS, n);
		else
			sc_prng_fill(r, buf + i, n);
	}
}

static int rnd_op(struct rnd_host *rh, struct sc_prng *r)
{
	static __thread uint8_t buf[RND_MAX];
	uint32_t k = sc_prng_below(r, RND_FILES);
	struct rnd_file *f = &rf[k];
	struct sc_host *h = rh->t->h;
	struct csi_fileattr a;
	uint64_t off;
	size_t len, want;
	ssize_t got;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	/* close-to-open: another host wrote since: open again */
	if (rh->seen[k] != f->version || !sc_prng_below(r, 16)) {
		rc = sc_host_getattr(h, f->id, &a);
		if (rc || a.size != f->size) {
			snprintf(rh->err, sizeof(rh->err),
				 "getattr file %u: %d, size %llu, want %llu",
				 k, rc, (unsigned long long)a.size,
				 (unsigned long long)f->size);
			rc = -1;
			goto out;
		}
		rh->seen[k] = f->version;
	}
	off = sc_prng_below(r, RND_MAX);
	len = 1 + sc_prng_below(r, (uint32_t)(RND_MAX - off));
	if (sc_prng_below(r, 3)) {
		rh->reads++;
		want = off >= f->size ? 0 :
		       (f->size - off < len ? f->size - off : len);
		got = sc_host_read(h, f->id, off, buf, len);
		if (got != (ssize_t)want || memcmp(buf, f->ref + off, want)) {
			snprintf(rh->err, sizeof(rh->err),
				 "read file %u %llu+%zu: %zd of %zu bytes, first difference at %zu",
				 k, (unsigned long long)off, len, got, want,
				 got > 0 ? first_diff(buf, f->ref + off,
						      (size_t)got) : 0);
			rc = -1;
		}
		goto out;
	}
	rh->writes++;
	if (sc_prng_below(r, 2)) {
		/* whole blocks, mostly */
		off -= off % BS;
		len = len < BS ? BS : len - len % BS;
		if (off + len > RND_MAX)
			len = RND_MAX - off;
	}
	rnd_data(r, buf, len);
	got = sc_host_write(h, f->id, off, buf, len, sc_prng_below(r, 2));
	if (got != (ssize_t)len) {
		snprintf(rh->err, sizeof(rh->err), "write file %u: %zd", k,
			 got);
		rc = -1;
		goto out;
	}
	memcpy(f->ref + off, buf, len);
	if (off + len > f->size)
		f->size = off + len;
	f->version++;
	rh->seen[k] = f->version;
	/* written data leaves the host only as far as COMMIT */
	if (sc_prng_below(r, 4) == 0) {
		rc = sc_host_commit(h, f->id);
		if (rc)
			snprintf(rh->err, sizeof(rh->err), "commit: %d", rc);
	}
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static void *rnd_main(void *arg)
{
	struct rnd_host *rh = arg;
	struct sc_prng r;

	sc_prng_seed(&r, rh->seed);
	while (rh->ops < rh->ops_wanted && !atomic_load(&rnd_failed)) {
		if (rnd_op(rh, &r)) {
			atomic_store(&rnd_failed, true);
			break;
		}
		rh->ops++;
		if (rh->ops % 64 == 0)
			sc_host_idle(rh->t->h);
	}
	return NULL;
}

static void test_random(void **state)
{
	struct rnd_host rh[RND_HOSTS];
	const char *env = getenv("HOST_TEST_OPS");
	uint64_t ops = env ? strtoull(env, NULL, 0) : 4000;
	uint64_t seed = (uint64_t)time(NULL);
	struct sc_prng r;
	char name[32];
	int i, k;

	(void)state;
	env = getenv("HOST_TEST_SEED");
	if (env)
		seed = strtoull(env, NULL, 0);
	printf("randomized: seed %llu (HOST_TEST_SEED), %llu operations per host (HOST_TEST_OPS), %s server\n",
	       (unsigned long long)seed, (unsigned long long)ops, hb_name);
	sc_prng_seed(&r, seed);
	for (k = 0; k < RND_FILES; k++) {
		pthread_mutex_init(&rf[k].lock, NULL);
		rf[k].size = 8 * BS + sc_prng_below(&r, 8 * BS);
		memset(rf[k].ref, 0, sizeof(rf[k].ref));
		rnd_data(&r, rf[k].ref, rf[k].size);
		snprintf(name, sizeof(name), "rnd%d", k);
		rf[k].id = hb_create(name, rf[k].ref, rf[k].size);
		rf[k].version = 1;
	}
	memset(rh, 0, sizeof(rh));
	for (i = 0; i < RND_HOSTS; i++) {
		enum sc_variant v = sc_prng_below(&r, SC_VARIANT_COUNT);

		/* small caches: evictions, notices, FORCE_DATA races */
		rh[i].t = th_new(0x60 + i, v, 16 + sc_prng_below(&r, 64),
				 PEER_SERVE);
		rh[i].seed = seed * 131 + i;
		rh[i].ops_wanted = ops;
		printf("  host %d: %s\n", i, sc_variants[v].name);
	}
	atomic_store(&rnd_failed, false);
	for (i = 0; i < RND_HOSTS; i++)
		assert_int_equal(pthread_create(&rh[i].thread, NULL, rnd_main,
						&rh[i]), 0);
	for (i = 0; i < RND_HOSTS; i++)
		assert_int_equal(pthread_join(rh[i].thread, NULL), 0);
	for (i = 0; i < RND_HOSTS; i++) {
		struct sc_host_stats s = th_stats(rh[i].t);

		printf("  host %d: %llu ops (%llu reads, %llu writes); addr hits %llu, content hits %llu, misses %llu, force %llu, peer %llu/%llu, need data %llu\n",
		       i, (unsigned long long)rh[i].ops,
		       (unsigned long long)rh[i].reads,
		       (unsigned long long)rh[i].writes,
		       (unsigned long long)s.addr_hits,
		       (unsigned long long)s.content_hits,
		       (unsigned long long)s.misses,
		       (unsigned long long)s.force_data_blocks,
		       (unsigned long long)s.peer_blocks,
		       (unsigned long long)s.delegations,
		       (unsigned long long)s.write_need_data);
		if (rh[i].err[0])
			fail_msg("host %d (seed %llu): %s", i,
				 (unsigned long long)seed, rh[i].err);
	}
	/* no host failed (above), so none was stopped early */
	for (i = 0; i < RND_HOSTS; i++)
		assert_int_equal(rh[i].ops, ops);
	for (k = 0; k < RND_FILES; k++) {
		for (i = 0; i < RND_HOSTS; i++)
			assert_int_equal(sc_host_commit(rh[i].t->h, rf[k].id),
					 0);
		snprintf(name, sizeof(name), "rnd%d", k);
		check_server(name, rf[k].ref, rf[k].size);
	}
	for (i = 0; i < RND_HOSTS; i++)
		th_free(rh[i].t);
}

static int setup(void **state)
{
	struct sc_prng r;

	(void)state;
	sc_prng_seed(&r, SEED);
	sc_prng_fill(&r, base, sizeof(base));
	memcpy(clone_bytes, base, sizeof(base));
	sc_prng_fill(&r, clone_bytes + 2 * BS, BS);
	sc_prng_fill(&r, clone_bytes + 17 * BS, BS);
	sc_prng_fill(&r, clone_bytes + 33 * BS, BS);
	if (hb_setup())
		return -1;
	base_id = hb_create("base", base, FSIZE);
	clone_id = hb_create("clone", clone_bytes, FSIZE);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hb_teardown();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_variants),
		cmocka_unit_test(test_gap_one_read),
		cmocka_unit_test(test_read_sink_fault),
		cmocka_unit_test(test_push_idle),
		cmocka_unit_test(test_single_flight),
		cmocka_unit_test(test_write_variants),
		cmocka_unit_test(test_force_data),
		cmocka_unit_test(test_peers),
		cmocka_unit_test(test_peers_one_by_one),
		cmocka_unit_test(test_dead_peer_dropped),
		cmocka_unit_test(test_replaced),
		cmocka_unit_test(test_changed_behind),
		cmocka_unit_test(test_map_clones),
		cmocka_unit_test(test_map_fresh),
		cmocka_unit_test(test_readahead),
		cmocka_unit_test(test_fail_fast),
		cmocka_unit_test(test_faults),
		cmocka_unit_test(test_notices),
		cmocka_unit_test(test_shrink),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_restart_read),
		cmocka_unit_test(test_restart_write),
		cmocka_unit_test(test_pins_drain),
		cmocka_unit_test(test_pins_limit),
		cmocka_unit_test(test_need_data),
		cmocka_unit_test(test_alloc_failure),
		cmocka_unit_test(test_random),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("HOST_TEST_FILTER"))
		cmocka_set_test_filter(getenv("HOST_TEST_FILTER"));
	return cmocka_run_group_tests_name("host", tests, setup, teardown);
}
