// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI service in process: a dedup store in a temporary directory, the
 * service on the project's RPC server (127.0.0.1, port 0) in a thread, and
 * the project's RPC client.  HELLO grants, the W/Tracker two-host scenario
 * with exact counters, Read# probes and GET_HASHES that leave the tracker
 * alone, FORCE_DATA, holes and end of file, the header checks of §5.1 in
 * their order, leases, source address binding, and malformed arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <seacache/csi_codec.h>
#include <seacache/peer_token.h>
#include <seacache/prng.h>
#include <seacache/rpc_msg.h>
#include <seacache/rpc_transport.h>

#include "csi_test_store.h"
#include "service.h"
#include "worker_check.h"

#define BS 4096u
#define CLONE_BLOCKS 256u		/* 1 MiB */
#define MAX_BLOCKS 64u
#define MAX_EVICT 16u
#define MAX_PUSH 128u
#define LEASE 30u
#define HOLES_SIZE (5 * BS + 100)

static char store_dir[] = "/tmp/csi-service-XXXXXX";
static struct dstore *ds;
static uint8_t *clone_bytes;		/* content of c1 and c2 */
static uint8_t holes_bytes[6 * BS];	/* content of "holes", zero-filled */
static uint64_t ino_c1, ino_c2, ino_holes;
static struct sc_hasher *hasher;
static _Atomic uint64_t fake_ms = 1000000;
static _Atomic uint64_t fake_tick_ms;	/* added at every reading */

static uint64_t fake_clock(void *ctx)
{
	(void)ctx;
	return atomic_fetch_add(&fake_ms, atomic_load(&fake_tick_ms));
}

static void advance(uint32_t seconds)
{
	atomic_fetch_add(&fake_ms, (uint64_t)seconds * 1000u);
}

static uint64_t make_file(const char *name, const void *buf, size_t len,
			  uint64_t off)
{
	return csi_test_make_file(ds, name, buf, len, off);
}

static int group_setup(void **state)
{
	struct sc_prng r;

	(void)state;
	ds = csi_test_store_open(store_dir, BS, 0);
	if (!ds)
		return -1;
	clone_bytes = malloc(CLONE_BLOCKS * BS);
	hasher = sc_hasher_new();
	if (!clone_bytes || !hasher)
		return -1;
	sc_prng_seed(&r, 42);
	sc_prng_fill(&r, clone_bytes, CLONE_BLOCKS * BS);
	ino_c1 = make_file("c1", clone_bytes, CLONE_BLOCKS * BS, 0);
	ino_c2 = make_file("c2", clone_bytes, CLONE_BLOCKS * BS, 0);
	/* Blocks 0 and 3 and 100 bytes of block 5; 1, 2 and 4 are holes. */
	memset(holes_bytes, 0, sizeof(holes_bytes));
	sc_prng_fill(&r, holes_bytes, BS);
	sc_prng_fill(&r, holes_bytes + 3 * BS, BS);
	sc_prng_fill(&r, holes_bytes + 5 * BS, 100);
	ino_holes = make_file("holes", holes_bytes, BS, 0);
	assert_int_equal(dstore_write(ds, ino_holes, 3 * BS,
				      holes_bytes + 3 * BS, BS, true, NULL),
			 BS);
	assert_int_equal(dstore_write(ds, ino_holes, 5 * BS,
				      holes_bytes + 5 * BS, 100, true, NULL),
			 100);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	sc_hasher_free(hasher);
	free(clone_bytes);
	return csi_test_store_remove(ds, store_dir);
}

static struct sc_hash sha(const void *p)
{
	struct sc_hash h;

	assert_int_equal(sc_hasher_digest(hasher, p, BS, &h), 0);
	return h;
}

/* ---- a running service ---- */

struct env {
	struct csi_service *svc;
	struct sc_rpc_service rpc;
	struct sc_rpc_server *srv;
	pthread_t thread;
	struct sc_rpc_client *c;
};

static void *server_main(void *arg)
{
	struct env *e = arg;

	sc_rpc_server_run(e->srv);
	return NULL;
}

static void default_cfg(struct csi_service_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->max_hosts = 8;
	cfg->tracker_entries = 4096;
	cfg->lease_seconds = LEASE;
	cfg->features = CSI_FEAT_ALL;
	cfg->max_blocks = MAX_BLOCKS;
	cfg->max_evict = MAX_EVICT;
	cfg->max_push = MAX_PUSH;
	cfg->clock_ms = fake_clock;
	/* the tests' store is in the page cache: delegate all the same */
	cfg->delegate_cached = true;
}

static void env_start_workers(struct env *e,
			      const struct csi_service_config *cfg,
			      unsigned int workers)
{
	struct sc_rpc_server_opts so = { .workers = workers };
	struct sc_rpc_client_opts co = { .host = "127.0.0.1", .prog = CSI_PROG,
					 .timeout_ms = 20000 };

	memset(e, 0, sizeof(*e));
	e->svc = csi_service_new(ds, cfg);
	assert_non_null(e->svc);
	e->rpc = csi_service_rpc(e->svc);
	assert_int_equal(sc_rpc_server_new(&so, &e->rpc, 1, &e->srv), 0);
	assert_int_equal(pthread_create(&e->thread, NULL, server_main, e), 0);
	co.port = sc_rpc_server_port(e->srv);
	assert_int_equal(sc_rpc_client_open(&co, &e->c), 0);
}

static void env_start_cfg(struct env *e, const struct csi_service_config *cfg)
{
	env_start_workers(e, cfg, 0);
}

static void env_start(struct env *e)
{
	struct csi_service_config cfg;

	default_cfg(&cfg);
	env_start_cfg(e, &cfg);
}

static void env_stop(struct env *e)
{
	sc_rpc_client_close(e->c);
	sc_rpc_server_stop(e->srv);
	assert_int_equal(pthread_join(e->thread, NULL), 0);
	sc_rpc_server_free(e->srv);
	csi_service_free(e->svc);
}

struct reg {
	uint64_t host, epoch;
};

static struct csi_hello_res hello_full(struct env *e, uint8_t uuid_byte,
				       uint32_t features)
{
	struct csi_hello_args a;
	struct csi_hello_res r;
	struct sc_rpc_reply *rep;

	memset(&a, 0, sizeof(a));
	memset(a.host_uuid, uuid_byte, sizeof(a.host_uuid));
	a.host_name.p = (const uint8_t *)"host";
	a.host_name.len = 4;
	a.features = features;
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_HELLO, &a, &r, &rep), 0);
	sc_rpc_reply_free(rep);
	return r;
}

static struct reg hello(struct env *e, uint8_t uuid_byte, uint32_t features)
{
	struct csi_hello_res r = hello_full(e, uuid_byte, features);
	struct reg g = { r.host, r.epoch };

	assert_int_equal(r.status, CSI_OK);
	return g;
}

static void hdr_set(struct csi_reqhdr *h, struct reg g,
		    const struct sc_hash *ev, uint32_t nev)
{
	h->host = g.host;
	h->epoch = g.epoch;
	h->evicted = ev;
	h->nevicted = nev;
}

/* READ; the caller frees *rep. */
static void do_read(struct env *e, struct reg g, const struct sc_hash *ev,
		    uint32_t nev, uint64_t file, uint64_t lbn, uint32_t count,
		    uint32_t flags, struct csi_read_res *r,
		    struct sc_rpc_reply **rep)
{
	struct csi_read_args a;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr, g, ev, nev);
	a.file = file;
	a.lbn = lbn;
	a.count = count;
	a.flags = flags;
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_READ, &a, r, rep), 0);
}

static uint32_t read_status(struct env *e, struct reg g, uint64_t file,
			    uint64_t lbn, uint32_t count, uint32_t flags)
{
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint32_t st;

	do_read(e, g, NULL, 0, file, lbn, count, flags, &r, &rep);
	st = r.status;
	sc_rpc_reply_free(rep);
	return st;
}

static uint32_t evict(struct env *e, struct reg g, const struct sc_hash *ev,
		      uint32_t nev)
{
	struct csi_evict_args a;
	struct csi_evict_res r;
	struct sc_rpc_reply *rep;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr, g, ev, nev);
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_EVICT, &a, &r, &rep), 0);
	sc_rpc_reply_free(rep);
	return r.status;
}

static void check_attr(const struct csi_fileattr *fa, uint64_t ino)
{
	struct dstore_attr a;

	assert_int_equal(dstore_getattr(ds, ino, &a), 0);
	assert_int_equal(fa->file, ino);
	assert_int_equal(fa->size, a.size);
	assert_int_equal(fa->change, a.change);
}

/*
 * Reads count blocks of a clone from lbn and checks that each is kind
 * (DATA or HASH) with the right hash and bytes, except block odd (if
 * < count) which must be odd_kind.
 */
static void read_clone_expect(struct env *e, struct reg g,
			      const struct sc_hash *ev, uint32_t nev,
			      uint64_t file, uint32_t lbn, uint32_t count,
			      uint32_t flags, uint32_t kind, uint32_t odd,
			      uint32_t odd_kind)
{
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	struct sc_hash want;
	uint32_t i, k;

	do_read(e, g, ev, nev, file, lbn, count, flags, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, count);
	assert_int_equal(r.npushed, 0);
	check_attr(&r.attr, file);
	for (i = 0; i < count; i++) {
		const uint8_t *bytes = clone_bytes + (size_t)(lbn + i) * BS;

		k = i == odd ? odd_kind : kind;
		if (r.blocks[i].kind != k)
			fail_msg("block %u: kind %u, expected %u", lbn + i,
				 r.blocks[i].kind, k);
		want = sha(bytes);
		assert_true(sc_hash_eq(&r.blocks[i].hash, &want));
		if (k == CSI_RK_DATA) {
			assert_int_equal(r.blocks[i].data.len, BS);
			assert_memory_equal(r.blocks[i].data.p, bytes, BS);
		}
	}
	sc_rpc_reply_free(rep);
}

static void read_clone_all(struct env *e, struct reg g, uint64_t file,
			   uint32_t kind)
{
	uint32_t lbn;

	for (lbn = 0; lbn < CLONE_BLOCKS; lbn += MAX_BLOCKS)
		read_clone_expect(e, g, NULL, 0, file, lbn, MAX_BLOCKS,
				  CSI_READ_WANT_DATA, kind, UINT32_MAX, 0);
}

/* A counter of host (0: the server-wide set); fails if absent. */
static uint64_t counter(struct env *e, uint64_t host, const char *name)
{
	struct csi_stats_args a = { .per_host = true };
	struct csi_stats_res r;
	struct sc_rpc_reply *rep;
	const struct csi_counter *c = NULL;
	uint32_t i, n = 0, k;
	uint64_t v;

	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_STATS, &a, &r, &rep), 0);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.epoch, csi_service_epoch(e->svc));
	if (!host) {
		c = r.counters;
		n = r.ncounters;
	}
	for (i = 0; host && i < r.nhosts; i++)
		if (r.hosts[i].host == host) {
			c = r.hosts[i].counters;
			n = r.hosts[i].ncounters;
		}
	if (!c) {
		sc_rpc_reply_free(rep);
		fail_msg("host %llx not in STATS", (unsigned long long)host);
	}
	for (k = 0; k < n; k++)
		if (c[k].name.len == strlen(name) &&
		    !memcmp(c[k].name.p, name, c[k].name.len))
			break;
	if (k == n) {
		sc_rpc_reply_free(rep);
		fail_msg("no counter %s", name);
	}
	v = c[k].value;
	sc_rpc_reply_free(rep);
	return v;
}

static uint32_t stats_nhosts(struct env *e)
{
	struct csi_stats_args a = { .per_host = true };
	struct csi_stats_res r;
	struct sc_rpc_reply *rep;
	uint32_t n;

	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_STATS, &a, &r, &rep), 0);
	n = r.nhosts;
	sc_rpc_reply_free(rep);
	return n;
}

/* ---- tests ---- */

static void test_hello_grants(void **state)
{
	struct env e;
	struct csi_hello_res a, b, c, a2;
	struct csi_hello_args ha;
	struct sc_rpc_reply *rep;
	struct reg old;

	(void)state;
	env_start(&e);
	a = hello_full(&e, 1, CSI_FEAT_ALL);
	assert_int_equal(a.status, CSI_OK);
	/* requested ∩ offered */
	assert_int_equal(a.features, CSI_FEAT_ALL);
	assert_int_equal(a.block_size, BS);
	assert_int_equal(a.max_blocks, MAX_BLOCKS);
	assert_int_equal(a.max_evict, MAX_EVICT);
	assert_int_equal(a.max_push, MAX_PUSH);
	assert_int_equal(a.lease_seconds, LEASE);
	assert_int_not_equal(a.epoch, 0);
	assert_int_equal(a.epoch, csi_service_epoch(e.svc));
	assert_int_not_equal(a.host, 0);
	b = hello_full(&e, 2, CSI_FEAT_READ_HASH);
	assert_int_equal(b.status, CSI_OK);
	assert_int_equal(b.features, CSI_FEAT_READ_HASH);
	assert_int_equal(b.epoch, a.epoch);
	assert_int_not_equal(b.host, a.host);
	assert_memory_not_equal(a.peer_secret, b.peer_secret, CSI_SECRET_SIZE);
	c = hello_full(&e, 3, ~CSI_FEAT_ALL);	/* only unknown bits */
	assert_int_equal(c.status, CSI_OK);
	assert_int_equal(c.features, 0);
	assert_int_equal(stats_nhosts(&e), 3);

	/* Replacement (§4 item 6): a new id, the old one is unknown. */
	old.host = a.host;
	old.epoch = a.epoch;
	read_clone_expect(&e, old, NULL, 0, ino_c1, 0, 4, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	a2 = hello_full(&e, 1, CSI_FEAT_ALL);
	assert_int_equal(a2.status, CSI_OK);
	assert_int_not_equal(a2.host, a.host);
	assert_memory_not_equal(a.peer_secret, a2.peer_secret, CSI_SECRET_SIZE);
	assert_int_equal(evict(&e, old, NULL, 0), CSI_ERR_UNKNOWN_HOST);
	old.host = a2.host;
	assert_int_equal(evict(&e, old, NULL, 0), CSI_OK);
	/* ... with an empty tracker: the same blocks come as DATA again. */
	read_clone_expect(&e, old, NULL, 0, ino_c1, 0, 4, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(counter(&e, 0, "tracker.entries"), 4);
	assert_int_equal(counter(&e, 0, "tracker.host_quota"), 4096 / 4);
	assert_int_equal(counter(&e, 0, "tracker.over_quota"), 0);
	assert_int_equal(counter(&e, 0, "errors.hello_addr_full"), 0);
	assert_int_equal(counter(&e, 0, "hosts.replaced"), 1);
	assert_int_equal(stats_nhosts(&e), 3);

	/* Bad arguments: a zero uuid, peer addresses breaking §3.3.3. */
	memset(&ha, 0, sizeof(ha));
	assert_int_equal(sc_rpc_call(e.c, CSI_PROC_HELLO, &ha, &a, &rep), 0);
	sc_rpc_reply_free(rep);
	assert_int_equal(a.status, CSI_ERR_INVAL);
	memset(ha.host_uuid, 9, sizeof(ha.host_uuid));
	ha.peer.family = CSI_AF_INET;
	ha.peer.addr[0] = 10;
	ha.peer.port = 0;
	assert_int_equal(sc_rpc_call(e.c, CSI_PROC_HELLO, &ha, &a, &rep), 0);
	sc_rpc_reply_free(rep);
	assert_int_equal(a.status, CSI_ERR_INVAL);
	ha.peer.port = 20491;
	ha.peer.addr[5] = 1;		/* INET: bytes 4-15 must be zero */
	assert_int_equal(sc_rpc_call(e.c, CSI_PROC_HELLO, &ha, &a, &rep), 0);
	sc_rpc_reply_free(rep);
	assert_int_equal(a.status, CSI_ERR_INVAL);
	ha.peer.addr[5] = 0;
	assert_int_equal(sc_rpc_call(e.c, CSI_PROC_HELLO, &ha, &a, &rep), 0);
	sc_rpc_reply_free(rep);
	assert_int_equal(a.status, CSI_OK);
	assert_int_equal(stats_nhosts(&e), 4);
	env_stop(&e);
}

/* Calls the handler directly, with callers from addresses loopback lacks. */
static uint32_t direct(struct csi_service *svc, uint32_t proc,
		       const void *args, void *res, const struct sockaddr *src)
{
	struct sc_rpc_request rq = { .peer = src };

	rq.proc = csi_proc_find(CSI_PROG, proc);
	rq.args = args;
	rq.res = res;
	assert_int_equal(csi_service_handle(svc, &rq), 0);
	assert_null(rq.mem);	/* HELLO and EVICT allocate nothing */
	return *(uint32_t *)res;
}

static struct sockaddr_in sin_of(const char *ip, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET,
				 .sin_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET, ip, &s.sin_addr), 1);
	return s;
}

/* Offered features, the host limit, source binding (§4 items 4 and 6). */
static void test_hello_config_and_binding(void **state)
{
	struct csi_service_config cfg;
	struct csi_service *svc;
	struct csi_hello_args ha;
	struct csi_hello_res hr, hr2;
	struct csi_evict_args ea;
	struct csi_evict_res er;
	struct sockaddr_in s1 = sin_of("10.0.0.1", 1234),
			   s1b = sin_of("10.0.0.1", 999),
			   s2 = sin_of("10.0.0.2", 1234);

	(void)state;
	default_cfg(&cfg);
	cfg.features = CSI_FEAT_READ_HASH;
	cfg.max_hosts = 2;
	svc = csi_service_new(ds, &cfg);
	assert_non_null(svc);
	memset(&ha, 0, sizeof(ha));
	memset(ha.host_uuid, 1, sizeof(ha.host_uuid));
	ha.features = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER;
	memset(&hr, 0, sizeof(hr));
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s1), CSI_OK);
	assert_int_equal(hr.features, CSI_FEAT_READ_HASH);

	memset(&ea, 0, sizeof(ea));
	ea.hdr.host = hr.host;
	ea.hdr.epoch = hr.epoch;
	assert_int_equal(direct(svc, CSI_PROC_EVICT, &ea, &er,
				(struct sockaddr *)&s1b), CSI_OK);
	assert_int_equal(direct(svc, CSI_PROC_EVICT, &ea, &er,
				(struct sockaddr *)&s2),
			 CSI_ERR_UNKNOWN_HOST);
	assert_int_equal(direct(svc, CSI_PROC_EVICT, &ea, &er, NULL),
			 CSI_ERR_UNKNOWN_HOST);
	/* The registration survives a call from the wrong address. */
	assert_int_equal(direct(svc, CSI_PROC_EVICT, &ea, &er,
				(struct sockaddr *)&s1), CSI_OK);
	/* ... and a HELLO of its uuid from another one (§4 item 6) */
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr2,
				(struct sockaddr *)&s2), CSI_ERR_ACCESS);
	assert_int_equal(direct(svc, CSI_PROC_EVICT, &ea, &er,
				(struct sockaddr *)&s1), CSI_OK);

	/* Two slots: the third uuid is BUSY until a lease lapses. */
	memset(ha.host_uuid, 2, sizeof(ha.host_uuid));
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s2), CSI_OK);
	memset(ha.host_uuid, 3, sizeof(ha.host_uuid));
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s2), CSI_ERR_BUSY);
	advance(LEASE - 1);
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s2), CSI_ERR_BUSY);
	advance(1);
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s2), CSI_OK);
	assert_int_equal(direct(svc, CSI_PROC_EVICT, &ea, &er,
				(struct sockaddr *)&s1),
			 CSI_ERR_UNKNOWN_HOST);
	csi_service_free(svc);
}

/*
 * Registrations per address (§4 item 2): a new uuid from an address at
 * its limit is BUSY, other addresses and a host's own re-registration
 * are not, and a lapsed lease frees its place.
 */
static void test_hello_per_address(void **state)
{
	struct csi_service_config cfg;
	struct csi_service *svc;
	struct csi_hello_args ha;
	struct csi_hello_res hr;
	struct sockaddr_in s1 = sin_of("10.0.0.1", 1234),
			   s1b = sin_of("10.0.0.1", 777),
			   s2 = sin_of("10.0.0.2", 1234);

	(void)state;
	default_cfg(&cfg);
	cfg.max_hosts_per_addr = 2;
	svc = csi_service_new(ds, &cfg);
	assert_non_null(svc);
	memset(&ha, 0, sizeof(ha));
	ha.features = CSI_FEAT_READ_HASH;
	for (uint8_t u = 1; u <= 2; u++) {
		memset(ha.host_uuid, u, sizeof(ha.host_uuid));
		assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
					(struct sockaddr *)&s1), CSI_OK);
	}
	memset(ha.host_uuid, 3, sizeof(ha.host_uuid));
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s1b), CSI_ERR_BUSY);
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s2), CSI_OK);
	/* a host at the limit re-registers its own uuid */
	memset(ha.host_uuid, 2, sizeof(ha.host_uuid));
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s1), CSI_OK);
	advance(LEASE);
	memset(ha.host_uuid, 4, sizeof(ha.host_uuid));
	assert_int_equal(direct(svc, CSI_PROC_HELLO, &ha, &hr,
				(struct sockaddr *)&s1), CSI_OK);
	csi_service_free(svc);
}

/* W/Tracker (grant 0x03), two hosts, exact counters. */
static void test_tracker_two_hosts(void **state)
{
	struct env e;
	struct reg A, B;
	struct sc_hash h7 = sha(clone_bytes + 7 * BS);

	(void)state;
	env_start(&e);
	A = hello(&e, 0xa, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	B = hello(&e, 0xb, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	read_clone_all(&e, A, ino_c1, CSI_RK_DATA);	/* A: clone 1 */
	read_clone_all(&e, A, ino_c2, CSI_RK_HASH);	/* A: clone 2 */
	read_clone_all(&e, B, ino_c2, CSI_RK_DATA);	/* B: clone 2 */
	/* A evicts block 7's content; the notice rides on the READ. */
	read_clone_expect(&e, A, &h7, 1, ino_c2, 0, MAX_BLOCKS,
			  CSI_READ_WANT_DATA, CSI_RK_HASH, 7, CSI_RK_DATA);
	/* ... and now holds it again. */
	read_clone_expect(&e, A, NULL, 0, ino_c2, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_HASH, UINT32_MAX, 0);

	assert_int_equal(counter(&e, A.host, "read.calls"), 4 + 4 + 1 + 1);
	assert_int_equal(counter(&e, A.host, "read.data_blocks"), 257);
	assert_int_equal(counter(&e, A.host, "read.data_bytes"), 257 * BS);
	assert_int_equal(counter(&e, A.host, "read.hash_only_blocks"),
			 256 + 63 + 8);
	assert_int_equal(counter(&e, A.host, "evict.notices"), 1);
	assert_int_equal(counter(&e, A.host, "evict.notices_applied"), 1);
	assert_int_equal(counter(&e, A.host, "tracker.entries"), 256);
	assert_int_equal(counter(&e, B.host, "read.data_blocks"), 256);
	assert_int_equal(counter(&e, B.host, "read.data_bytes"), 256 * BS);
	assert_int_equal(counter(&e, B.host, "read.hash_only_blocks"), 0);
	assert_int_equal(counter(&e, B.host, "tracker.entries"), 256);
	assert_int_equal(counter(&e, 0, "read.data_blocks"), 513);
	assert_int_equal(counter(&e, 0, "read.data_bytes"), 513 * BS);
	assert_int_equal(counter(&e, 0, "read.hash_only_blocks"), 327);
	assert_int_equal(counter(&e, 0, "evict.notices_applied"), 1);
	assert_int_equal(counter(&e, 0, "tracker.entries"), 512);
	assert_int_equal(counter(&e, 0, "hosts.registered"), 2);
	env_stop(&e);
}

static void gethashes_expect(struct env *e, struct reg g, uint64_t file,
			     uint64_t lbn, uint32_t count, uint32_t status,
			     const uint8_t *content, uint32_t nexpect)
{
	struct csi_gethashes_args a;
	struct csi_gethashes_res r;
	struct sc_rpc_reply *rep;
	struct sc_hash want;
	const uint8_t *blk;
	uint32_t i;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr, g, NULL, 0);
	a.file = file;
	a.lbn = lbn;
	a.count = count;
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_GET_HASHES, &a, &r, &rep),
			 0);
	assert_int_equal(r.status, status);
	if (status == CSI_OK) {
		check_attr(&r.attr, file);
		assert_int_equal(r.nblocks, nexpect);
		for (i = 0; i < nexpect; i++) {
			blk = content + (size_t)(lbn + i) * BS;
			want = sha(blk);
			if (file == ino_holes && (lbn + i == 1 || lbn + i == 2 ||
						  lbn + i == 4)) {
				assert_int_equal(r.blocks[i].kind, CSI_HK_HOLE);
				continue;
			}
			assert_int_equal(r.blocks[i].kind, CSI_HK_HASH);
			assert_true(sc_hash_eq(&r.blocks[i].hash, &want));
		}
	}
	sc_rpc_reply_free(rep);
}

/* Read# (0x01) and probes: hashes, and the tracker untouched. */
static void test_readhash_probe(void **state)
{
	struct env e;
	struct reg C, D, E;

	(void)state;
	env_start(&e);
	C = hello(&e, 0xc, CSI_FEAT_READ_HASH);
	gethashes_expect(&e, C, ino_c1, 0, MAX_BLOCKS, CSI_OK, clone_bytes,
			 MAX_BLOCKS);
	gethashes_expect(&e, C, ino_c2, 192, MAX_BLOCKS, CSI_OK, clone_bytes,
			 MAX_BLOCKS);
	read_clone_expect(&e, C, NULL, 0, ino_c1, 0, MAX_BLOCKS, 0,
			  CSI_RK_HASH, UINT32_MAX, 0);
	/* Without TRACKER, WANT_DATA is always DATA. */
	read_clone_expect(&e, C, NULL, 0, ino_c1, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	read_clone_expect(&e, C, NULL, 0, ino_c1, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(counter(&e, 0, "tracker.entries"), 0);
	assert_int_equal(counter(&e, C.host, "read.probe_blocks"), MAX_BLOCKS);
	assert_int_equal(counter(&e, C.host, "get_hashes.blocks"),
			 2 * MAX_BLOCKS);

	/* A tracked host's probes and GET_HASHES record nothing. */
	D = hello(&e, 0xd, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	read_clone_expect(&e, D, NULL, 0, ino_c1, 0, MAX_BLOCKS, 0,
			  CSI_RK_HASH, UINT32_MAX, 0);
	gethashes_expect(&e, D, ino_c1, 0, MAX_BLOCKS, CSI_OK, clone_bytes,
			 MAX_BLOCKS);
	assert_int_equal(counter(&e, 0, "tracker.entries"), 0);
	read_clone_expect(&e, D, NULL, 0, ino_c1, 0, MAX_BLOCKS,
			  CSI_READ_WANT_DATA, CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(counter(&e, D.host, "tracker.entries"), MAX_BLOCKS);

	/* Features not granted: NOTSUPP; unknown flags: INVAL. */
	E = hello(&e, 0xe, 0);
	gethashes_expect(&e, E, ino_c1, 0, 1, CSI_ERR_NOTSUPP, NULL, 0);
	assert_int_equal(read_status(&e, E, ino_c1, 0, 1, 0), CSI_ERR_NOTSUPP);
	assert_int_equal(read_status(&e, D, ino_c1, 0, 1, CSI_READ_WANT_DATA |
				     CSI_READ_ACCEPT_PUSH), CSI_ERR_NOTSUPP);
	assert_int_equal(read_status(&e, D, ino_c1, 0, 1, CSI_READ_WANT_DATA |
				     CSI_READ_ACCEPT_DELEG), CSI_ERR_NOTSUPP);
	assert_int_equal(read_status(&e, D, ino_c1, 0, 1, CSI_READ_WANT_DATA |
				     0x10), CSI_ERR_INVAL);
	read_clone_expect(&e, E, NULL, 0, ino_c1, 0, 4, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	/* Baseline (0) with notices: not tracked, notices ignored. */
	assert_int_equal(counter(&e, E.host, "tracker.entries"), 0);
	env_stop(&e);
}

static void test_force_data(void **state)
{
	struct env e;
	struct reg A;

	(void)state;
	env_start(&e);
	A = hello(&e, 0xa, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_HASH, UINT32_MAX, 0);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 8,
			  CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(read_status(&e, A, ino_c1, 0, 8, CSI_READ_FORCE_DATA),
			 CSI_ERR_INVAL);
	assert_int_equal(counter(&e, A.host, "read.data_blocks"), 16);
	assert_int_equal(counter(&e, A.host, "read.hash_only_blocks"), 8);
	assert_int_equal(counter(&e, A.host, "tracker.entries"), 8);
	env_stop(&e);
}

static void test_holes_and_eof(void **state)
{
	static const uint32_t kinds[6] = { CSI_RK_DATA, CSI_RK_HOLE,
					   CSI_RK_HOLE, CSI_RK_DATA,
					   CSI_RK_HOLE, CSI_RK_DATA };
	struct env e;
	struct reg A;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	struct sc_hash want;
	uint8_t blk[BS];
	uint32_t i;

	(void)state;
	env_start(&e);
	A = hello(&e, 0xa, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	gethashes_expect(&e, A, ino_holes, 0, MAX_BLOCKS, CSI_OK, holes_bytes,
			 6);
	do_read(&e, A, NULL, 0, ino_holes, 0, MAX_BLOCKS, CSI_READ_WANT_DATA,
		&r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.attr.size, HOLES_SIZE);
	check_attr(&r.attr, ino_holes);
	assert_int_equal(r.nblocks, 6);
	for (i = 0; i < 6; i++) {
		assert_int_equal(r.blocks[i].kind, kinds[i]);
		if (kinds[i] != CSI_RK_DATA)
			continue;
		assert_true(r.blocks[i].data.len <= BS);
		memset(blk, 0, BS);
		memcpy(blk, r.blocks[i].data.p, r.blocks[i].data.len);
		assert_memory_equal(blk, holes_bytes + i * BS, BS);
		want = sha(blk);	/* the hash of the zero-filled block */
		assert_true(sc_hash_eq(&r.blocks[i].hash, &want));
	}
	sc_rpc_reply_free(rep);
	assert_int_equal(counter(&e, A.host, "read.hole_blocks"), 3);
	assert_int_equal(counter(&e, A.host, "tracker.entries"), 3);

	/* Cut at end of file; count 0 gives the attrs only. */
	do_read(&e, A, NULL, 0, ino_holes, 4, 10, CSI_READ_WANT_DATA, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, 2);
	assert_int_equal(r.blocks[0].kind, CSI_RK_HOLE);
	assert_int_equal(r.blocks[1].kind, CSI_RK_HASH);	/* held now */
	sc_rpc_reply_free(rep);
	do_read(&e, A, NULL, 0, ino_holes, 6, 10, CSI_READ_WANT_DATA, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, 0);
	sc_rpc_reply_free(rep);
	do_read(&e, A, NULL, 0, ino_c1, 0, 0, CSI_READ_WANT_DATA, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, 0);
	check_attr(&r.attr, ino_c1);
	sc_rpc_reply_free(rep);
	gethashes_expect(&e, A, ino_c1, 0, 0, CSI_OK, clone_bytes, 0);

	/* lbn overflow, a missing file, a directory. */
	assert_int_equal(read_status(&e, A, ino_c1, UINT64_MAX / BS, 1,
				     CSI_READ_WANT_DATA), CSI_ERR_INVAL);
	gethashes_expect(&e, A, ino_c1, UINT64_MAX - 1, 4, CSI_ERR_INVAL,
			 NULL, 0);
	assert_int_equal(read_status(&e, A, 999999, 0, 1, CSI_READ_WANT_DATA),
			 CSI_ERR_STALE);
	gethashes_expect(&e, A, 0, 0, 1, CSI_ERR_STALE, NULL, 0);
	assert_int_equal(read_status(&e, A, DSTORE_ROOT_INO, 0, 1,
				     CSI_READ_WANT_DATA), CSI_ERR_INVAL);
	env_stop(&e);
}

/* §5.1: the header checks, in order; TOO_BIG applies no notice. */
static void test_header_checks(void **state)
{
	struct env e;
	struct reg A, bad;
	struct sc_hash ev[MAX_EVICT + 1], h0 = sha(clone_bytes);
	struct csi_write_args wa;
	struct csi_write_block wb;
	struct csi_write_res wr;
	struct csi_lookup_args la;
	struct csi_lookup_res lr;
	struct csi_commit_args ca;
	struct csi_commit_res cr;
	struct csi_read_res rr;
	struct sc_rpc_reply *rep;
	uint32_t i;

	(void)state;
	env_start(&e);
	A = hello(&e, 0xa, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	for (i = 0; i <= MAX_EVICT; i++) {
		memset(&ev[i], (int)i + 1, sizeof(ev[i]));
	}
	ev[MAX_EVICT] = h0;

	bad = A;
	bad.epoch++;
	assert_int_equal(read_status(&e, bad, ino_c1, 0, 1,
				     CSI_READ_WANT_DATA), CSI_ERR_BAD_EPOCH);
	assert_int_equal(evict(&e, bad, NULL, 0), CSI_ERR_BAD_EPOCH);
	bad.host ^= 1;			/* bad epoch before unknown host */
	assert_int_equal(evict(&e, bad, ev, MAX_EVICT + 1), CSI_ERR_BAD_EPOCH);
	bad.epoch = A.epoch;
	assert_int_equal(read_status(&e, bad, ino_c1, 0, 1,
				     CSI_READ_WANT_DATA), CSI_ERR_UNKNOWN_HOST);
	/* unknown host before too many notices */
	assert_int_equal(evict(&e, bad, ev, MAX_EVICT + 1),
			 CSI_ERR_UNKNOWN_HOST);
	bad.host = 0;
	assert_int_equal(evict(&e, bad, NULL, 0), CSI_ERR_UNKNOWN_HOST);

	/* A holds h0; 17 notices (h0 among them) are refused, none applied. */
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 1, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(evict(&e, A, ev, MAX_EVICT + 1), CSI_ERR_TOO_BIG);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 1, CSI_READ_WANT_DATA,
			  CSI_RK_HASH, UINT32_MAX, 0);
	assert_int_equal(evict(&e, A, ev + 1, MAX_EVICT), CSI_OK);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 1, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(counter(&e, A.host, "evict.notices"), MAX_EVICT);
	assert_int_equal(counter(&e, A.host, "evict.notices_applied"), 1);
	assert_int_equal(counter(&e, 0, "errors.too_many_notices"), 1);

	/* The operation's own TOO_BIG, after the notices were applied. */
	do_read(&e, A, &h0, 1, ino_c1, 0, MAX_BLOCKS + 1, CSI_READ_WANT_DATA,
		&rr, &rep);
	sc_rpc_reply_free(rep);
	assert_int_equal(rr.status, CSI_ERR_TOO_BIG);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 1, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	gethashes_expect(&e, A, ino_c1, 0, MAX_BLOCKS + 1, CSI_ERR_TOO_BIG,
			 NULL, 0);

	/*
	 * Operations after the header: a WRITE (of the content block 0
	 * already has), LOOKUP (no exports in this service: NOENT), COMMIT.
	 */
	memset(&wa, 0, sizeof(wa));
	memset(&wb, 0, sizeof(wb));
	hdr_set(&wa.hdr, A, NULL, 0);
	wa.file = ino_c1;
	wa.end = BS;
	wb.kind = CSI_WK_DATA;
	wb.hash = h0;
	wb.data.p = clone_bytes;
	wb.data.len = BS;
	wa.blocks = &wb;
	wa.nblocks = 1;
	assert_int_equal(sc_rpc_call(e.c, CSI_PROC_WRITE, &wa, &wr, &rep), 0);
	assert_int_equal(wr.status, CSI_OK);
	assert_int_equal(wr.nblocks, 1);
	assert_int_equal(wr.blocks[0], CSI_W_OK);
	sc_rpc_reply_free(rep);
	memset(&la, 0, sizeof(la));
	hdr_set(&la.hdr, A, NULL, 0);
	la.export_path.p = (const uint8_t *)"/vdi";
	la.export_path.len = 4;
	la.path.p = (const uint8_t *)"c1";
	la.path.len = 2;
	assert_int_equal(sc_rpc_call(e.c, CSI_PROC_LOOKUP, &la, &lr, &rep), 0);
	sc_rpc_reply_free(rep);
	assert_int_equal(lr.status, CSI_ERR_NOENT);
	memset(&ca, 0, sizeof(ca));
	hdr_set(&ca.hdr, A, NULL, 0);
	ca.file = ino_c2;
	assert_int_equal(sc_rpc_call(e.c, CSI_PROC_COMMIT, &ca, &cr, &rep), 0);
	sc_rpc_reply_free(rep);
	assert_int_equal(cr.status, CSI_OK);
	check_attr(&cr.attr, ino_c2);
	env_stop(&e);
}

/* §5.3: renewed by every counted request, forgotten lazily after. */
static void test_lease(void **state)
{
	struct env e;
	struct reg A;

	(void)state;
	env_start(&e);
	A = hello(&e, 0xa, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	advance(LEASE - 1);
	assert_int_equal(evict(&e, A, NULL, 0), CSI_OK);
	advance(LEASE - 1);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_HASH, UINT32_MAX, 0);
	assert_int_equal(counter(&e, 0, "tracker.entries"), 8);
	advance(LEASE);
	assert_int_equal(evict(&e, A, NULL, 0), CSI_ERR_UNKNOWN_HOST);
	assert_int_equal(counter(&e, 0, "tracker.entries"), 0);
	assert_int_equal(counter(&e, 0, "hosts.expired"), 1);
	assert_int_equal(counter(&e, 0, "hosts.registered"), 0);
	A = hello(&e, 0xa, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	env_stop(&e);
}

/* ---- malformed arguments ---- */

static int raw_connect(uint16_t port)
{
	struct sockaddr_in sin = sin_of("127.0.0.1", port);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void read_full(int fd, uint8_t *p, size_t n)
{
	ssize_t got;

	while (n) {
		got = read(fd, p, n);
		assert_true(got > 0);
		p += got;
		n -= (size_t)got;
	}
}

/* One call record with this body; the reply's header (whole record read). */
static void raw_call(int fd, uint32_t proc, const uint8_t *body,
		     uint32_t body_len, struct sc_rpc_reply_hdr *rh)
{
	uint32_t w[] = { 0x77, SC_RPC_CALL, 2, CSI_PROG, CSI_VERS, proc,
			 0, 0, 0, 0 };
	uint8_t rec[4 + sizeof(w) + 256], mark[4], *reply;
	uint32_t i, n = sizeof(w) + body_len, rlen;
	struct sc_xdr x;

	assert_true(body_len <= 256);
	sc_put_be32(rec, n | SC_RPC_RM_LAST);
	for (i = 0; i < SC_ARRAY_SIZE(w); i++)
		sc_put_be32(rec + 4 + 4 * i, w[i]);
	if (body_len)
		memcpy(rec + 4 + sizeof(w), body, body_len);
	assert_int_equal(write(fd, rec, 4 + n), 4 + n);
	read_full(fd, mark, 4);
	rlen = sc_get_be32(mark);
	assert_true(rlen & SC_RPC_RM_LAST);
	rlen &= SC_RPC_RM_LEN_MASK;
	assert_true(rlen >= 12 && rlen <= (1u << 20));
	reply = malloc(rlen);
	assert_non_null(reply);
	read_full(fd, reply, rlen);
	sc_xdr_init_decode(&x, reply, rlen, NULL, 0);
	sc_rpc_xdr_reply_hdr(&x, rh);
	free(reply);
	assert_int_equal(x.err, 0);
	assert_int_equal(rh->xid, 0x77);
}

static void test_garbage_args(void **state)
{
	struct env e;
	struct reg A;
	struct csi_read_args a;
	struct sc_rpc_reply_hdr rh;
	uint8_t body[256];
	size_t len;
	int fd;

	(void)state;
	env_start(&e);
	A = hello(&e, 0xa, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr, A, NULL, 0);
	a.file = ino_c1;
	a.count = 1;
	a.flags = CSI_READ_WANT_DATA;
	assert_int_equal(csi_encode(CSI_MSG_READ_ARGS, &a, body, sizeof(body),
				    &len), 0);
	fd = raw_connect(sc_rpc_server_port(e.srv));
	/* The well-formed body works on this connection ... */
	raw_call(fd, CSI_PROC_READ, body, (uint32_t)len, &rh);
	assert_int_equal(rh.reply_stat, SC_RPC_MSG_ACCEPTED);
	assert_int_equal(rh.accept_stat, SC_RPC_SUCCESS);
	/* ... truncated, with a byte left over, or a count over the limit: */
	raw_call(fd, CSI_PROC_READ, body, (uint32_t)len - 4, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_GARBAGE_ARGS);
	body[len] = 0;
	body[len + 1] = body[len + 2] = body[len + 3] = 0;
	raw_call(fd, CSI_PROC_READ, body, (uint32_t)len + 4, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_GARBAGE_ARGS);
	sc_put_be32(body + 16, CSI_MAX_EVICT + 1);	/* hdr.evicted's count */
	raw_call(fd, CSI_PROC_READ, body, (uint32_t)len, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_GARBAGE_ARGS);
	/* a HELLO with a bad peer family (an enum the .x does not define) */
	memset(body, 0, sizeof(body));
	body[0] = 1;
	sc_put_be32(body + 20, 7);
	raw_call(fd, CSI_PROC_HELLO, body, 56, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_GARBAGE_ARGS);
	/* The server keeps serving, this connection and the others. */
	raw_call(fd, CSI_PROC_NULL, NULL, 0, &rh);
	assert_int_equal(rh.accept_stat, SC_RPC_SUCCESS);
	close(fd);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 1, CSI_READ_WANT_DATA,
			  CSI_RK_HASH, UINT32_MAX, 0);
	assert_int_equal(counter(&e, A.host, "read.calls"), 2);
	env_stop(&e);
}

/* ---- SS-Push, Coop-Cache, Dedup-W, LOOKUP and access ---- */

static _Atomic uint64_t fake_unix = 1790000000;

static uint64_t fake_unix_clock(void *ctx)
{
	(void)ctx;
	return atomic_load(&fake_unix);
}

/*
 * The NFS server's side, as the hooks see it: one export, "/vdi", that
 * admits every call but as access_rc and write_access_rc say, and gives
 * the caller as its credential names it, root squashed to 65534 when
 * squash_root is set.
 */
static _Atomic int access_rc;		/* what admit() answers reads */
static _Atomic int write_access_rc;	/* ... and writes */
static _Atomic bool squash_root;
static _Atomic uint64_t changed_ino;
static _Atomic unsigned int changed_calls;

#define ANON_ID 65534u

static int test_admit(void *ctx, const char *export_path,
		      const struct sockaddr *host,
		      const struct sc_rpc_auth_sys *cred, bool write,
		      struct csi_callers *out)
{
	struct csi_caller *c = &out->c[0];
	uint32_t i;

	(void)ctx;
	assert_non_null(host);
	if (export_path && strcmp(export_path, "/vdi"))
		return -ENOENT;
	if (atomic_load(&access_rc))
		return atomic_load(&access_rc);
	if (write && atomic_load(&write_access_rc))
		return atomic_load(&write_access_rc);
	memset(c, 0, sizeof(*c));
	c->uid = c->gid = ANON_ID;
	if (cred && !(cred->uid == 0 && atomic_load(&squash_root))) {
		c->uid = cred->uid;
		c->gid = cred->gid;
		c->ngids = cred->ngids;
		for (i = 0; i < cred->ngids; i++)
			c->gids[i] = cred->gids[i];
	}
	out->n = 1;
	return 0;
}

static void test_file_changed(void *ctx, uint64_t ino)
{
	(void)ctx;
	atomic_store(&changed_ino, ino);
	atomic_fetch_add(&changed_calls, 1);
}

static const struct csi_service_hooks test_hooks = {
	.admit = test_admit,
	.file_changed = test_file_changed,
};

static void hooks_cfg(struct csi_service_config *cfg)
{
	default_cfg(cfg);
	cfg->hooks = &test_hooks;
	cfg->unix_s = fake_unix_clock;
	atomic_store(&access_rc, 0);
	atomic_store(&write_access_rc, 0);
	atomic_store(&squash_root, false);
}

static void env_start_hooks(struct env *e)
{
	struct csi_service_config cfg;

	hooks_cfg(&cfg);
	env_start_cfg(e, &cfg);
}

/* HELLO with a peer address on 127.0.0.1 (port 0: none). */
static struct csi_hello_res hello_peer(struct env *e, uint8_t uuid_byte,
				       uint32_t features, const char *ip,
				       uint16_t port)
{
	struct csi_hello_args a;
	struct csi_hello_res r;
	struct sc_rpc_reply *rep;

	memset(&a, 0, sizeof(a));
	memset(a.host_uuid, uuid_byte, sizeof(a.host_uuid));
	a.features = features;
	if (port) {
		a.peer.family = CSI_AF_INET;
		assert_int_equal(inet_pton(AF_INET, ip, a.peer.addr), 1);
		a.peer.port = port;
	}
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_HELLO, &a, &r, &rep), 0);
	sc_rpc_reply_free(rep);
	assert_int_equal(r.status, CSI_OK);
	return r;
}

/* GET_HASHES with count 0: marks file used (§7), as an open does. */
static void touch_file(struct env *e, struct reg g, uint64_t file)
{
	gethashes_expect(e, g, file, 0, 0, CSI_OK, NULL, 0);
}

/*
 * SS-Push: entries name blocks of other files the host uses that hold the
 * contents the reply sends, each true of its file's state; never the
 * call's own file, never a file the host has not used, at most max_push,
 * none for hash answers.
 */
static void test_push(void **state)
{
	struct env e;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	struct dstore_attr c2;
	struct reg A, B;
	uint32_t i;

	(void)state;
	assert_int_equal(dstore_apply_pending(ds), 0);
	env_start_hooks(&e);
	A = hello(&e, 1, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER | CSI_FEAT_PUSH);
	B = hello(&e, 2, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER | CSI_FEAT_PUSH);
	assert_int_equal(dstore_getattr(ds, ino_c2, &c2), 0);

	/* A has not used c2 yet: nothing to push */
	do_read(&e, A, NULL, 0, ino_c1, 0, MAX_BLOCKS,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.npushed, 0);
	sc_rpc_reply_free(rep);

	/* after an "open" of c2, reading c1 pushes c2's blocks */
	touch_file(&e, A, ino_c2);
	do_read(&e, A, NULL, 0, ino_c1, MAX_BLOCKS, MAX_BLOCKS,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.npushed, MAX_BLOCKS);
	for (i = 0; i < r.npushed; i++) {
		const struct csi_push_entry *p = &r.pushed[i];
		struct sc_hash want = sha(clone_bytes + p->lbn * BS);

		assert_int_equal(p->file, ino_c2);
		assert_int_equal(p->lbn, MAX_BLOCKS + i);
		assert_int_equal(p->change, c2.change);
		assert_true(sc_hash_eq(&p->hash, &want));
	}
	sc_rpc_reply_free(rep);
	assert_int_equal(counter(&e, A.host, "read.pushed_entries"),
			 MAX_BLOCKS);

	/* ... which A then reads as hash only: no further data */
	read_clone_expect(&e, A, NULL, 0, ino_c2, MAX_BLOCKS, MAX_BLOCKS,
			  CSI_READ_WANT_DATA, CSI_RK_HASH, UINT32_MAX, 0);
	/* a reply of hash answers pushes nothing: A got them with the data */
	do_read(&e, A, NULL, 0, ino_c1, MAX_BLOCKS, MAX_BLOCKS,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	for (i = 0; i < r.nblocks; i++)
		assert_int_equal(r.blocks[i].kind, CSI_RK_HASH);
	assert_int_equal(r.npushed, 0);
	sc_rpc_reply_free(rep);

	/* without ACCEPT_PUSH, or for B that never used c2: none */
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, 8, CSI_READ_WANT_DATA,
			  CSI_RK_HASH, UINT32_MAX, 0);
	do_read(&e, B, NULL, 0, ino_c1, 0, MAX_BLOCKS,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH, &r, &rep);
	assert_int_equal(r.npushed, 0);
	sc_rpc_reply_free(rep);
	/* a host without PUSH granted cannot ask */
	B = hello(&e, 2, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	assert_int_equal(read_status(&e, B, ino_c1, 0, 1,
				     CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH),
			 CSI_ERR_NOTSUPP);
	env_stop(&e);
}

/*
 * A READ of c1's second MAX_BLOCKS blocks with ACCEPT_PUSH: its pushes.
 * FORCE_DATA: pushes follow data answers, and the host holds the blocks.
 */
static uint32_t read_pushed(struct env *e, struct reg g)
{
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint32_t n;

	do_read(e, g, NULL, 0, ino_c1, MAX_BLOCKS, MAX_BLOCKS,
		CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA | CSI_READ_ACCEPT_PUSH,
		&r, &rep);
	assert_int_equal(r.status, CSI_OK);
	n = r.npushed;
	sc_rpc_reply_free(rep);
	return n;
}

/*
 * A push search past its time (push_search_ms) looks up no further
 * content, though always the first, and counts the cut.  On a service
 * just started, and after a search that ran out of time, one READ at a
 * time searches (a probe), and the probes take at most a twentieth of
 * the time: after a probe of d ms, none for 20 d.  With the clock moving
 * 1 ms at each reading, the probe READ of MAX_BLOCKS blocks pushes the
 * first block's other holder alone.
 */
static void test_push_search_cut(void **state)
{
	struct csi_service_config cfg;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint64_t t0, took;
	struct env e;
	struct reg A;
	uint32_t i;

	(void)state;
	assert_int_equal(dstore_apply_pending(ds), 0);
	hooks_cfg(&cfg);
	cfg.push_search_ms = 1;
	env_start_cfg(&e, &cfg);
	A = hello(&e, 1, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER | CSI_FEAT_PUSH);
	touch_file(&e, A, ino_c2);
	/* the service's first READ probes, and runs out of time */
	atomic_store(&fake_tick_ms, 1);
	t0 = atomic_load(&fake_ms);
	do_read(&e, A, NULL, 0, ino_c1, MAX_BLOCKS, MAX_BLOCKS,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH, &r, &rep);
	took = atomic_load(&fake_ms) - t0;
	atomic_store(&fake_tick_ms, 0);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.npushed, 1);
	assert_int_equal(r.pushed[0].file, ino_c2);
	assert_int_equal(r.pushed[0].lbn, MAX_BLOCKS);
	sc_rpc_reply_free(rep);
	assert_int_equal(counter(&e, 0, "push.searches_cut"), 1);
	assert_int_equal(counter(&e, 0, "push.searches_skipped"), 0);
	/* no probe before 20 times its time has passed */
	for (i = 0; i < 15; i++)
		assert_int_equal(read_pushed(&e, A), 0);
	atomic_fetch_add(&fake_ms, 19);
	assert_int_equal(read_pushed(&e, A), 0);
	assert_int_equal(counter(&e, 0, "push.searches_skipped"), 16);
	/* then the probe, in time now: every READ searches again */
	atomic_fetch_add(&fake_ms, 20 * took);
	assert_int_equal(read_pushed(&e, A), MAX_BLOCKS);
	assert_int_equal(read_pushed(&e, A), MAX_BLOCKS);
	assert_int_equal(counter(&e, 0, "push.searches_skipped"), 16);
	assert_int_equal(counter(&e, 0, "push.searches_cut"), 1);
	env_stop(&e);
}

static void token_verify(const uint8_t secret[CSI_SECRET_SIZE],
			 const struct csi_read_block *b, uint64_t requester,
			 uint64_t serving, uint64_t epoch)
{
	struct sc_mac *m = sc_mac_new(secret, CSI_SECRET_SIZE);
	struct sc_peer_token_fields f = { b->hash, requester, serving, epoch,
					  b->token.expiry };

	assert_non_null(m);
	assert_int_equal(b->token.expiry, atomic_load(&fake_unix) + 30);
	assert_int_equal(sc_peer_token_check(m, &f, epoch,
					     atomic_load(&fake_unix),
					     b->token.mac), 0);
	/* shown by another requester, it fails */
	f.requester++;
	assert_int_not_equal(sc_peer_token_check(m, &f, epoch,
						 atomic_load(&fake_unix),
						 b->token.mac), 0);
	sc_mac_free(m);
}

/*
 * Coop-Cache: B's reads of content A holds are delegated to A with a
 * token A's secret verifies; then B holds them (hash only).  FORCE_DATA
 * is never delegated; hosts that serve no peer reads, or gave an address
 * that is not their own, are never targets.
 */
static void test_coop(void **state)
{
	const uint32_t coop = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER |
			      CSI_FEAT_COOP;
	const uint32_t deleg = CSI_READ_WANT_DATA | CSI_READ_ACCEPT_DELEG;
	struct csi_hello_res ha, hb;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	struct env e;
	struct reg A, B, C;
	uint32_t i;

	(void)state;
	env_start_hooks(&e);
	ha = hello_peer(&e, 1, coop, "127.0.0.1", 7001);
	A.host = ha.host;
	A.epoch = ha.epoch;
	hb = hello_peer(&e, 2, coop, "127.0.0.1", 7002);
	B.host = hb.host;
	B.epoch = hb.epoch;
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, MAX_BLOCKS,
			  CSI_READ_WANT_DATA, CSI_RK_DATA, UINT32_MAX, 0);

	do_read(&e, B, NULL, 0, ino_c2, 0, MAX_BLOCKS, deleg, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, MAX_BLOCKS);
	for (i = 0; i < r.nblocks; i++) {
		const struct csi_read_block *b = &r.blocks[i];
		struct sc_hash want = sha(clone_bytes + (size_t)i * BS);

		assert_int_equal(b->kind, CSI_RK_DELEGATED);
		assert_true(sc_hash_eq(&b->hash, &want));
		assert_int_equal(b->peer_host, A.host);
		assert_int_equal(b->peer.family, CSI_AF_INET);
		assert_int_equal(b->peer.port, 7001);
		token_verify(ha.peer_secret, b, B.host, A.host, A.epoch);
	}
	sc_rpc_reply_free(rep);
	assert_int_equal(counter(&e, B.host, "read.delegated_blocks"),
			 MAX_BLOCKS);
	assert_int_equal(counter(&e, A.host, "peer.delegations_served"),
			 MAX_BLOCKS);
	assert_int_equal(counter(&e, B.host, "read.data_blocks"), 0);
	/* B is now tracked as holding them */
	read_clone_expect(&e, B, NULL, 0, ino_c2, 0, MAX_BLOCKS, deleg,
			  CSI_RK_HASH, UINT32_MAX, 0);
	/* the delegation failed: B asks for the data itself */
	read_clone_expect(&e, B, NULL, 0, ino_c2, 0, 2,
			  deleg | CSI_READ_FORCE_DATA, CSI_RK_DATA,
			  UINT32_MAX, 0);

	/* a host that serves no peer reads is never a target */
	C = hello(&e, 3, coop);
	A = hello(&e, 1, coop);		/* A re-registers without an address */
	read_clone_expect(&e, C, NULL, 0, ino_c1, MAX_BLOCKS, 4,
			  CSI_READ_WANT_DATA, CSI_RK_DATA, UINT32_MAX, 0);
	read_clone_expect(&e, A, NULL, 0, ino_c2, MAX_BLOCKS, 4, deleg,
			  CSI_RK_DATA, UINT32_MAX, 0);
	/* nor one whose address is not its own (§4 item 7) */
	hb = hello_peer(&e, 3, coop, "192.0.2.1", 7003);
	C.host = hb.host;
	read_clone_expect(&e, C, NULL, 0, ino_c1, 2 * MAX_BLOCKS, 4,
			  CSI_READ_WANT_DATA, CSI_RK_DATA, UINT32_MAX, 0);
	read_clone_expect(&e, B, NULL, 0, ino_c2, 2 * MAX_BLOCKS, 4, deleg,
			  CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(counter(&e, C.host, "peer.delegations_served"), 0);
	env_stop(&e);
}

static uint32_t peer_report(struct env *e, struct reg g,
			    const struct csi_peer_failure *f, uint32_t n)
{
	struct csi_peer_report_args a;
	struct csi_evict_res r;
	struct sc_rpc_reply *rep;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr, g, NULL, 0);
	a.failures = f;
	a.nfailures = n;
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_PEER_REPORT, &a, &r,
				     &rep), 0);
	sc_rpc_reply_free(rep);
	return r.status;
}

#define REPORT_BLOCKS 8u

/*
 * B's READ of blocks lbn.. of c2 with delegation: each block's kind is
 * want; delegated ones go to the failures f[] as B would report them.
 * Then B evicts them, so that A stays their one holder.
 */
static void read_deleg(struct env *e, struct reg B, uint64_t lbn,
		       uint32_t want, struct csi_peer_failure *f)
{
	struct sc_hash ev[REPORT_BLOCKS];
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint32_t i;

	do_read(e, B, NULL, 0, ino_c2, lbn, REPORT_BLOCKS,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_DELEG, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, REPORT_BLOCKS);
	for (i = 0; i < REPORT_BLOCKS; i++) {
		assert_int_equal(r.blocks[i].kind, want);
		ev[i] = r.blocks[i].hash;
		if (!f)
			continue;
		f[i].peer_host = r.blocks[i].peer_host;
		f[i].hash = r.blocks[i].hash;
		f[i].token = r.blocks[i].token;
	}
	sc_rpc_reply_free(rep);
	assert_int_equal(evict(e, B, ev, REPORT_BLOCKS), CSI_OK);
}

/*
 * §7.12: failed delegations that B reports with the tokens it was given
 * count against A, each once; forged, replayed or foreign reports do
 * not.  CSI_Peer_Failures of them stop delegations to A for
 * CSI_Peer_Suspend seconds, then A is chosen again.
 */
static void test_peer_report(void **state)
{
	const uint32_t coop = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER |
			      CSI_FEAT_COOP | CSI_FEAT_PEER_REPORT;
	struct csi_peer_failure f[REPORT_BLOCKS], bad;
	struct csi_service_config cfg;
	struct csi_hello_res ha, hb;
	struct reg A, B, C;
	struct env e;

	(void)state;
	hooks_cfg(&cfg);
	cfg.peer_failures = 3;
	cfg.peer_suspend_seconds = LEASE / 2;
	env_start_cfg(&e, &cfg);
	ha = hello_peer(&e, 1, coop, "127.0.0.1", 7001);
	A = (struct reg){ ha.host, ha.epoch };
	hb = hello_peer(&e, 2, coop, "127.0.0.1", 7002);
	B = (struct reg){ hb.host, hb.epoch };
	assert_int_equal(hb.features, coop);
	read_clone_expect(&e, A, NULL, 0, ino_c1, 0, MAX_BLOCKS,
			  CSI_READ_WANT_DATA, CSI_RK_DATA, UINT32_MAX, 0);
	read_deleg(&e, B, 0, CSI_RK_DELEGATED, f);
	assert_int_equal(f[0].peer_host, A.host);

	/* a forged token, a peer B was not sent to, B itself: ignored */
	bad = f[0];
	bad.token.mac[5] ^= 1;
	assert_int_equal(peer_report(&e, B, &bad, 1), CSI_OK);
	bad = f[0];
	bad.token.expiry++;
	assert_int_equal(peer_report(&e, B, &bad, 1), CSI_OK);
	bad = f[0];
	bad.peer_host = B.host;
	assert_int_equal(peer_report(&e, B, &bad, 1), CSI_OK);
	/* A's token for B, shown by another requester */
	C = hello(&e, 3, coop);
	assert_int_equal(peer_report(&e, C, &f[0], 1), CSI_OK);
	assert_int_equal(counter(&e, A.host, "peer.failed_delegations"), 0);
	assert_int_equal(counter(&e, B.host, "peer_report.ignored"), 3);
	assert_int_equal(counter(&e, C.host, "peer_report.ignored"), 1);

	/* two count; a replay of one does not; A is still chosen */
	assert_int_equal(peer_report(&e, B, f, 2), CSI_OK);
	assert_int_equal(peer_report(&e, B, f, 1), CSI_OK);
	assert_int_equal(counter(&e, A.host, "peer.failed_delegations"), 2);
	assert_int_equal(counter(&e, B.host, "peer_report.ignored"), 4);
	/* a reported content is no longer counted on A: data */
	read_clone_expect(&e, C, NULL, 0, ino_c2, 0, 3,
			  CSI_READ_WANT_DATA | CSI_READ_ACCEPT_DELEG,
			  CSI_RK_DATA, 2, CSI_RK_DELEGATED);
	read_deleg(&e, B, REPORT_BLOCKS, CSI_RK_DELEGATED, NULL);

	/* the third: no more delegations to A, until the time is out */
	assert_int_equal(peer_report(&e, B, &f[2], 1), CSI_OK);
	assert_int_equal(counter(&e, A.host, "peer.suspensions"), 1);
	read_deleg(&e, B, 2 * REPORT_BLOCKS, CSI_RK_DATA, NULL);
	advance(cfg.peer_suspend_seconds - 1);
	read_deleg(&e, B, 3 * REPORT_BLOCKS, CSI_RK_DATA, NULL);
	advance(1);
	read_deleg(&e, B, 4 * REPORT_BLOCKS, CSI_RK_DELEGATED, NULL);

	/* not granted without COOP, refused when not granted */
	hb = hello_full(&e, 4, CSI_FEAT_READ_HASH | CSI_FEAT_PEER_REPORT);
	assert_int_equal(hb.features, CSI_FEAT_READ_HASH);
	assert_int_equal(peer_report(&e, (struct reg){ hb.host, hb.epoch },
				     f, 1), CSI_ERR_NOTSUPP);
	env_stop(&e);
}

/* The store's data leaves the page cache: synced, then dropped. */
/* Whether any page of the file at path is in the page cache. */
static bool file_resident(const char *path)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec[256];
	bool resident = false;
	struct stat st;
	size_t len, off;
	void *map;
	int fd = open(path, O_RDONLY);

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	len = (size_t)st.st_size;
	if (len == 0) {
		close(fd);
		return false;
	}
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(map != MAP_FAILED);
	for (off = 0; off < len && !resident; off += sizeof(vec) * page) {
		size_t n = len - off < sizeof(vec) * page ? len - off :
							   sizeof(vec) * page;
		size_t pages = (n + page - 1) / page;

		assert_int_equal(mincore((char *)map + off, n, vec), 0);
		for (size_t i = 0; i < pages; i++)
			resident |= vec[i] & 1;
	}
	munmap(map, len);
	close(fd);
	return resident;
}

/* Whether any page of the store's containers is in the page cache. */
static bool store_resident(void)
{
	char path[sizeof(store_dir) + 32];
	bool resident = false;
	size_t i;

	for (i = 0;; i++) {
		snprintf(path, sizeof(path), "%s/containers/%08zu.dat",
			 store_dir, i);
		if (access(path, F_OK))
			break;
		resident |= file_resident(path);
	}
	assert_true(i > 0);
	return resident;
}

/*
 * Drops the store's containers from the page cache and waits until
 * mincore shows none of their pages: DONTNEED skips pages still under
 * read-ahead I/O, which the kernel adds after it.
 */
static void store_drop_cached(void)
{
	char path[sizeof(store_dir) + 32];
	int tries;

	assert_int_equal(dstore_sync(ds), 0);
	for (tries = 0; tries < 100; tries++) {
		int fd;

		if (tries)
			usleep(10000);
		for (size_t i = 0;; i++) {
			snprintf(path, sizeof(path), "%s/containers/%08zu.dat",
				 store_dir, i);
			fd = open(path, O_RDONLY);
			if (fd < 0)
				break;
			assert_int_equal(posix_fadvise(fd, 0, 0,
						       POSIX_FADV_DONTNEED), 0);
			close(fd);
		}
		if (!store_resident())
			return;
	}
	fail_msg("the containers stay in the page cache after 100 POSIX_FADV_DONTNEED");
}

/*
 * The server's own memory first (CSI_Delegate_Cached off, the default):
 * a content a peer holds is delegated only when the server would read
 * it from its disk.
 */
static void test_coop_disk_first(void **state)
{
	const uint32_t coop = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER |
			      CSI_FEAT_COOP;
	const uint32_t deleg = CSI_READ_WANT_DATA | CSI_READ_ACCEPT_DELEG;
	const uint32_t from = 3 * MAX_BLOCKS, half = MAX_BLOCKS / 2;
	struct csi_service_config cfg;
	struct csi_hello_res ha;
	struct env e;
	struct reg A, B;

	(void)state;
	hooks_cfg(&cfg);
	cfg.delegate_cached = false;
	env_start_cfg(&e, &cfg);
	ha = hello_peer(&e, 1, coop, "127.0.0.1", 7001);
	A.host = ha.host;
	A.epoch = ha.epoch;
	B = hello(&e, 2, coop);
	read_clone_expect(&e, A, NULL, 0, ino_c1, from, MAX_BLOCKS,
			  CSI_READ_WANT_DATA, CSI_RK_DATA, UINT32_MAX, 0);
	/* A holds them and the server has them in memory: data */
	read_clone_expect(&e, B, NULL, 0, ino_c2, from, half, deleg,
			  CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(counter(&e, B.host, "read.delegated_blocks"), 0);
	/* off its disk they would come: A serves them */
	store_drop_cached();
	read_clone_expect(&e, B, NULL, 0, ino_c2, from + half, half, deleg,
			  CSI_RK_DELEGATED, UINT32_MAX, 0);
	/* and the server did not read them to find that out */
	assert_false(store_resident());
	assert_int_equal(counter(&e, B.host, "read.delegated_blocks"), half);
	assert_int_equal(counter(&e, A.host, "peer.delegations_served"),
			 half);
	env_stop(&e);
}

/* WRITE; the caller frees *rep. */
static void write_call(struct env *e, struct reg g, uint64_t file,
		       uint64_t lbn, uint64_t end, uint32_t stable,
		       struct csi_write_block *b, uint32_t n,
		       struct csi_write_res *r, struct sc_rpc_reply **rep)
{
	struct csi_write_args a;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr, g, NULL, 0);
	a.file = file;
	a.lbn = lbn;
	a.end = end;
	a.stable = stable;
	a.blocks = b;
	a.nblocks = n;
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_WRITE, &a, r, rep), 0);
}

static uint32_t write_status(struct env *e, struct reg g, uint64_t file,
			     uint64_t lbn, uint64_t end,
			     struct csi_write_block *b, uint32_t n)
{
	struct csi_write_res r;
	struct sc_rpc_reply *rep;
	uint32_t st;

	write_call(e, g, file, lbn, end, CSI_UNSTABLE, b, n, &r, &rep);
	st = r.status;
	sc_rpc_reply_free(rep);
	return st;
}

/* The kind of one block read with WANT_DATA. */
static uint32_t read_kind(struct env *e, struct reg g, uint64_t file,
			  uint64_t lbn)
{
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	uint32_t kind;

	do_read(e, g, NULL, 0, file, lbn, 1, CSI_READ_WANT_DATA, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, 1);
	kind = r.blocks[0].kind;
	sc_rpc_reply_free(rep);
	return kind;
}

static struct csi_write_block wblock_data(const uint8_t *p, uint32_t len)
{
	struct csi_write_block b = { .kind = CSI_WK_DATA };
	uint8_t blk[BS] = { 0 };

	memcpy(blk, p, len);
	b.hash = sha(blk);
	b.data.p = p;
	b.data.len = len;
	return b;
}

static struct csi_write_block wblock_hash(const uint8_t *p)
{
	struct csi_write_block b = { .kind = CSI_WK_HASH };

	b.hash = sha(p);
	return b;
}

static void file_expect(uint64_t ino, uint64_t off, const void *want,
			size_t len)
{
	uint8_t *got = malloc(len);
	bool eof;

	assert_non_null(got);
	assert_int_equal(dstore_read(ds, ino, off, got, len, &eof),
			 (ssize_t)len);
	assert_memory_equal(got, want, len);
	free(got);
}

/*
 * Dedup-W (§7.4): a hash-only block is written only with proof of
 * possession, so a host that never received a content can neither write
 * it by hash nor read it back; DATA blocks are verified and make the
 * content held; the size moves to end even past NEED_DATA blocks.
 */
static void test_dedup_write(void **state)
{
	const uint32_t dw = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER |
			    CSI_FEAT_DEDUP_WRITE;
	const uint8_t *X = clone_bytes + 200 * BS;
	static const uint8_t zero[BS];
	struct csi_write_block b[3];
	struct csi_write_res r;
	struct sc_rpc_reply *rep;
	struct dstore_attr at;
	uint8_t Y[BS], Z[100], bad[BS];
	struct sc_prng rng;
	struct sc_hash hx = sha(X);
	uint64_t w1 = make_file("w1", NULL, 0, 0);
	uint64_t w2 = make_file("w2", NULL, 0, 0);
	struct env e;
	struct reg A, B;

	(void)state;
	sc_prng_seed(&rng, 7);
	sc_prng_fill(&rng, Y, sizeof(Y));
	sc_prng_fill(&rng, Z, sizeof(Z));
	env_start_hooks(&e);
	A = hello(&e, 1, dw);
	B = hello(&e, 2, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);

	/* A never received X: NEED_DATA, nothing written, size moved */
	b[0] = wblock_hash(X);
	write_call(&e, A, w1, 0, BS, CSI_UNSTABLE, b, 1, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, 1);
	assert_int_equal(r.blocks[0], CSI_W_NEED_DATA);
	assert_int_equal(r.attr.size, BS);
	sc_rpc_reply_free(rep);
	file_expect(w1, 0, zero, BS);
	/* ... and reading it back gives the hole, not X */
	assert_int_equal(read_kind(&e, A, w1, 0), CSI_RK_HOLE);
	assert_int_equal(counter(&e, A.host, "write.need_data"), 1);

	/* after receiving X, the hash alone writes it */
	read_clone_expect(&e, A, NULL, 0, ino_c1, 200, 1, CSI_READ_WANT_DATA,
			  CSI_RK_DATA, UINT32_MAX, 0);
	assert_int_equal(dstore_getattr(ds, w1, &at), 0);
	atomic_store(&changed_calls, 0);
	write_call(&e, A, w1, 0, BS, CSI_FILE_SYNC, b, 1, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.blocks[0], CSI_W_OK);
	assert_int_equal(r.pre_change, at.change);
	assert_true(r.attr.change > at.change);
	assert_int_equal(r.committed, CSI_FILE_SYNC);
	check_attr(&r.attr, w1);
	sc_rpc_reply_free(rep);
	file_expect(w1, 0, X, BS);
	assert_int_equal(atomic_load(&changed_calls), 1);
	assert_int_equal(atomic_load(&changed_ino), w1);
	assert_int_equal(counter(&e, A.host, "write.hash_blocks"), 1);

	/* once A reports X evicted, its hash is no proof any more */
	assert_int_equal(evict(&e, A, &hx, 1), CSI_OK);
	write_call(&e, A, w1, 1, 2 * BS, CSI_UNSTABLE, b, 1, &r, &rep);
	assert_int_equal(r.blocks[0], CSI_W_NEED_DATA);
	sc_rpc_reply_free(rep);

	/* data, hash without proof, and a short last block in one call */
	b[0] = wblock_data(Y, BS);
	b[1] = wblock_hash(X);
	b[2] = wblock_data(Z, sizeof(Z));
	write_call(&e, A, w1, 2, 4 * BS + sizeof(Z), CSI_UNSTABLE, b, 3, &r,
		   &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, 3);
	assert_int_equal(r.blocks[0], CSI_W_OK);
	assert_int_equal(r.blocks[1], CSI_W_NEED_DATA);
	assert_int_equal(r.blocks[2], CSI_W_OK);
	assert_int_equal(r.attr.size, 4 * BS + sizeof(Z));
	assert_int_equal(r.committed, CSI_UNSTABLE);
	sc_rpc_reply_free(rep);
	file_expect(w1, 2 * BS, Y, BS);
	file_expect(w1, 3 * BS, zero, BS);
	file_expect(w1, 4 * BS, Z, sizeof(Z));
	/* what A sent with data it holds: read back as hash only */
	assert_int_equal(read_kind(&e, A, w1, 2), CSI_RK_HASH);
	assert_int_equal(read_kind(&e, A, w1, 4), CSI_RK_HASH);

	/* a DATA block whose bytes do not match its hash: nothing written */
	assert_int_equal(dstore_getattr(ds, w1, &at), 0);
	memcpy(bad, Y, BS);
	b[0] = wblock_data(bad, BS);
	b[1] = wblock_data(Y, BS);
	bad[17] ^= 1;
	assert_int_equal(write_status(&e, A, w1, 5, 7 * BS, b, 2),
			 CSI_ERR_HASH_MISMATCH);
	check_attr(&(struct csi_fileattr){ w1, at.size, at.change }, w1);
	assert_int_equal(counter(&e, 0, "errors.write_hash_mismatch"), 1);

	/* bytes past the new end of file must be zeros */
	b[0] = wblock_data(Y, BS);
	assert_int_equal(write_status(&e, A, w2, 0, 100, b, 1), CSI_ERR_INVAL);
	/* arguments: no block, end outside the blocks, no grant for hashes */
	assert_int_equal(write_status(&e, A, w2, 0, BS, b, 0), CSI_ERR_INVAL);
	assert_int_equal(write_status(&e, A, w2, 0, BS + 1, b, 1),
			 CSI_ERR_INVAL);
	assert_int_equal(write_status(&e, A, w2, 1, BS, b, 1), CSI_ERR_INVAL);
	b[0] = wblock_hash(Y);
	assert_int_equal(write_status(&e, B, w2, 0, BS, b, 1), CSI_ERR_NOTSUPP);
	/* a read-only export */
	atomic_store(&write_access_rc, -EROFS);
	b[0] = wblock_data(Y, BS);
	assert_int_equal(write_status(&e, A, w2, 0, BS, b, 1), CSI_ERR_ACCESS);
	assert_int_equal(read_status(&e, A, w1, 0, 1, CSI_READ_WANT_DATA),
			 CSI_OK);
	assert_int_equal(counter(&e, A.host, "errors.access"), 1);
	env_stop(&e);
}

static uint32_t lookup(struct env *e, struct reg g, const char *exp,
		       const char *path, struct csi_fileattr *attr)
{
	struct csi_lookup_args a;
	struct csi_lookup_res r;
	struct sc_rpc_reply *rep;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr, g, NULL, 0);
	a.export_path.p = (const uint8_t *)exp;
	a.export_path.len = (uint32_t)strlen(exp);
	a.path.p = (const uint8_t *)path;
	a.path.len = (uint32_t)strlen(path);
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_LOOKUP, &a, &r, &rep), 0);
	if (r.status == CSI_OK && attr)
		*attr = r.attr;
	sc_rpc_reply_free(rep);
	return r.status;
}

/*
 * LOOKUP (§7.1) through the exports the hooks give, the path rules, and
 * access (§7): an export the host may not use answers ACCESS everywhere.
 * A looked-up file is used: pushes may name it.
 */
static void test_lookup_access(void **state)
{
	struct dstore_new dir = { .type = DSTORE_DIR, .mode = 0755 };
	struct dstore_new sym = { .type = DSTORE_SYMLINK, .mode = 0777,
				  .symlink = "c1" };
	struct dstore_new reg = { .type = DSTORE_REG, .mode = 0644 };
	struct csi_stats_args sa = { .per_host = false };
	struct csi_stats_res sr;
	struct csi_fileattr fa;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	struct dstore_attr d, x;
	struct env e;
	struct reg A;

	(void)state;
	assert_int_equal(dstore_create(ds, DSTORE_ROOT_INO, "dir", &dir, &d), 0);
	assert_int_equal(dstore_create(ds, d.ino, "f", &reg, &x), 0);
	env_start_hooks(&e);
	A = hello(&e, 1, CSI_FEAT_ALL);
	assert_int_equal(lookup(&e, A, "/vdi", "c2", &fa), CSI_OK);
	check_attr(&fa, ino_c2);
	assert_int_equal(lookup(&e, A, "/nope", "c2", NULL), CSI_ERR_NOENT);
	assert_int_equal(lookup(&e, A, "/vdi", "nope", NULL), CSI_ERR_NOENT);
	assert_int_equal(lookup(&e, A, "/vdi", "c1/x", NULL), CSI_ERR_NOENT);
	assert_int_equal(lookup(&e, A, "", "c1", NULL), CSI_ERR_INVAL);
	assert_int_equal(lookup(&e, A, "/vdi", "", NULL), CSI_ERR_INVAL);
	assert_int_equal(lookup(&e, A, "/vdi", "/c1", NULL), CSI_ERR_INVAL);
	assert_int_equal(lookup(&e, A, "/vdi", "dir/../c1", NULL),
			 CSI_ERR_INVAL);
	assert_int_equal(lookup(&e, A, "/vdi", "dir//f", NULL), CSI_ERR_INVAL);
	assert_int_equal(lookup(&e, A, "/vdi", "./c1", NULL), CSI_ERR_INVAL);
	assert_int_equal(lookup(&e, A, "/vdi", "dir", NULL), CSI_ERR_INVAL);
	assert_int_equal(lookup(&e, A, "/vdi", "dir/f", &fa), CSI_OK);
	assert_int_equal(fa.file, x.ino);
	assert_int_equal(dstore_create(ds, DSTORE_ROOT_INO, "ln", &sym, &x), 0);
	assert_int_equal(lookup(&e, A, "/vdi", "ln", NULL), CSI_ERR_INVAL);
	assert_int_equal(dstore_create(ds, d.ino, "ln", &sym, &x), 0);
	assert_int_equal(lookup(&e, A, "/vdi", "dir/ln", NULL), CSI_ERR_INVAL);

	/* c2 looked up: reading c1 pushes it */
	do_read(&e, A, NULL, 0, ino_c1, 0, 4,
		CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH, &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.npushed, 4);
	assert_int_equal(r.pushed[0].file, ino_c2);
	sc_rpc_reply_free(rep);

	/* a host the exports do not admit */
	atomic_store(&access_rc, -EACCES);
	assert_int_equal(lookup(&e, A, "/vdi", "c2", NULL), CSI_ERR_ACCESS);
	assert_int_equal(read_status(&e, A, ino_c1, 0, 1, CSI_READ_WANT_DATA),
			 CSI_ERR_ACCESS);
	gethashes_expect(&e, A, ino_c1, 0, 1, CSI_ERR_ACCESS, NULL, 0);
	/* nor is it let register, keep its lease or read STATS */
	assert_int_equal(evict(&e, A, NULL, 0), CSI_ERR_ACCESS);
	assert_int_equal(hello_full(&e, 1, CSI_FEAT_ALL).status,
			 CSI_ERR_ACCESS);
	assert_int_equal(sc_rpc_call(e.c, CSI_PROC_STATS, &sa, &sr, &rep), 0);
	assert_int_equal(sr.status, CSI_ERR_ACCESS);
	sc_rpc_reply_free(rep);
	atomic_store(&access_rc, 0);
	assert_int_equal(counter(&e, A.host, "errors.access"), 4);
	assert_int_equal(counter(&e, 0, "errors.not_admitted"), 2);
	env_stop(&e);
}

/* ---- GET_MAP ---- */

static uint32_t getmap_call(struct env *e, struct reg g, const uint64_t *files,
			    uint32_t nfiles, uint64_t lbn, uint32_t count,
			    struct csi_getmap_res *r, struct sc_rpc_reply **rep)
{
	struct csi_getmap_args a;

	memset(&a, 0, sizeof(a));
	hdr_set(&a.hdr, g, NULL, 0);
	a.files = files;
	a.nfiles = nfiles;
	a.lbn = lbn;
	a.count = count;
	assert_int_equal(sc_rpc_call(e->c, CSI_PROC_GET_MAP, &a, r, rep), 0);
	return r->status;
}

static uint32_t getmap_status(struct env *e, struct reg g,
			      const uint64_t *files, uint32_t nfiles,
			      uint64_t lbn, uint32_t count)
{
	struct csi_getmap_res r;
	struct sc_rpc_reply *rep;
	uint32_t st = getmap_call(e, g, files, nfiles, lbn, count, &r, &rep);

	if (st == CSI_OK)
		assert_int_equal(r.nfiles, nfiles);
	sc_rpc_reply_free(rep);
	return st;
}

static bool map_hole(const struct csi_map_file *m, uint32_t i)
{
	return m->holes[i / 8] & (1u << (i % 8));
}

/* A client of e's service whose calls carry credential uid, gid, groups. */
static struct sc_rpc_client *client_as(struct env *e, uint32_t uid,
				       uint32_t gid, uint32_t group)
{
	struct sc_rpc_auth_sys cred = { .uid = uid, .gid = gid };
	struct sc_rpc_client_opts co = { .host = "127.0.0.1", .prog = CSI_PROG,
					 .port = sc_rpc_server_port(e->srv),
					 .timeout_ms = 20000, .cred = &cred };
	struct sc_rpc_client *c;

	if (group) {
		cred.gids[0] = group;
		cred.ngids = 1;
	}
	assert_int_equal(sc_rpc_client_open(&co, &c), 0);
	return c;
}

/*
 * Each call's credential against the file's owner, group and mode (§7
 * "Access"), as NFS READ, WRITE and LOOKUP decide: the owner reads and
 * writes whatever the bits say; group bits for the file's group, also a
 * supplementary one; others' bits for the rest; execute lets a READ
 * through; root passes unless the export squashes it; a directory is
 * searched only with its execute bit.  GET_MAP answers per file.
 */
static void test_file_modes(void **state)
{
	struct dstore_new priv = { .type = DSTORE_DIR, .mode = 0700,
				   .uid = 1000, .gid = 1000 };
	struct dstore_new f640 = { .type = DSTORE_REG, .mode = 0640,
				   .uid = 1000, .gid = 1000 };
	struct dstore_new f000 = { .type = DSTORE_REG, .mode = 0000,
				   .uid = 1000, .gid = 1000 };
	struct dstore_new f711 = { .type = DSTORE_REG, .mode = 0711,
				   .uid = 1000, .gid = 1000 };
	struct sc_rpc_client *root, *owner, *member, *other, *c;
	struct csi_write_block b[1];
	struct csi_getmap_res mr;
	struct sc_rpc_reply *rep;
	struct dstore_attr d, a640, a000, a711, x;
	uint64_t files[2];
	struct env e;
	struct reg A;

	(void)state;
	assert_int_equal(dstore_create(ds, DSTORE_ROOT_INO, "priv", &priv, &d),
			 0);
	assert_int_equal(dstore_create(ds, d.ino, "in", &f640, &x), 0);
	assert_int_equal(dstore_create(ds, DSTORE_ROOT_INO, "m640", &f640,
				       &a640), 0);
	assert_int_equal(dstore_create(ds, DSTORE_ROOT_INO, "m000", &f000,
				       &a000), 0);
	assert_int_equal(dstore_create(ds, DSTORE_ROOT_INO, "m711", &f711,
				       &a711), 0);
	assert_int_equal(dstore_write(ds, a640.ino, 0, clone_bytes, BS, true,
				      NULL), BS);
	env_start_hooks(&e);
	A = hello(&e, 1, CSI_FEAT_ALL);
	root = e.c;
	owner = client_as(&e, 1000, 1000, 0);
	member = client_as(&e, 2000, 2000, 1000);
	other = client_as(&e, 3000, 3000, 0);

	/* reads: owner, a supplementary member, not others; root */
	e.c = owner;
	assert_int_equal(read_status(&e, A, a640.ino, 0, 1, CSI_READ_WANT_DATA),
			 CSI_OK);
	assert_int_equal(read_status(&e, A, a000.ino, 0, 1, CSI_READ_WANT_DATA),
			 CSI_OK);
	e.c = member;
	assert_int_equal(read_status(&e, A, a640.ino, 0, 1, CSI_READ_WANT_DATA),
			 CSI_OK);
	gethashes_expect(&e, A, a000.ino, 0, 1, CSI_ERR_ACCESS, NULL, 0);
	e.c = other;
	assert_int_equal(read_status(&e, A, a640.ino, 0, 1, CSI_READ_WANT_DATA),
			 CSI_ERR_ACCESS);
	gethashes_expect(&e, A, a640.ino, 0, 1, CSI_ERR_ACCESS, NULL, 0);
	/* execute only: read as a program is */
	assert_int_equal(read_status(&e, A, a711.ino, 0, 1, CSI_READ_WANT_DATA),
			 CSI_OK);
	e.c = root;
	assert_int_equal(read_status(&e, A, a000.ino, 0, 1, CSI_READ_WANT_DATA),
			 CSI_OK);

	/* writes: the owner, whatever the bits; nobody else here */
	b[0] = wblock_data(clone_bytes + BS, BS);
	e.c = owner;
	assert_int_equal(write_status(&e, A, a000.ino, 0, BS, b, 1), CSI_OK);
	e.c = member;
	assert_int_equal(write_status(&e, A, a640.ino, 0, BS, b, 1),
			 CSI_ERR_ACCESS);
	e.c = other;
	assert_int_equal(write_status(&e, A, a640.ino, 0, BS, b, 1),
			 CSI_ERR_ACCESS);

	/* GET_MAP: each file its own answer */
	files[0] = a640.ino;
	files[1] = a711.ino;
	assert_int_equal(getmap_call(&e, A, files, 2, 0, 1, &mr, &rep), CSI_OK);
	assert_int_equal(mr.nfiles, 2);
	assert_int_equal(mr.files[0].status, CSI_ERR_ACCESS);
	assert_int_equal(mr.files[1].status, CSI_OK);
	sc_rpc_reply_free(rep);

	/* LOOKUP searches a directory only with its execute bit */
	assert_int_equal(lookup(&e, A, "/vdi", "priv/in", NULL),
			 CSI_ERR_ACCESS);
	assert_int_equal(lookup(&e, A, "/vdi", "m640", NULL), CSI_OK);
	e.c = owner;
	assert_int_equal(lookup(&e, A, "/vdi", "priv/in", NULL), CSI_OK);

	/* root squashed is nobody: others' bits */
	atomic_store(&squash_root, true);
	e.c = root;
	assert_int_equal(read_status(&e, A, a640.ino, 0, 1, CSI_READ_WANT_DATA),
			 CSI_ERR_ACCESS);
	assert_int_equal(write_status(&e, A, a640.ino, 0, BS, b, 1),
			 CSI_ERR_ACCESS);
	assert_int_equal(lookup(&e, A, "/vdi", "priv/in", NULL),
			 CSI_ERR_ACCESS);
	assert_int_equal(read_status(&e, A, ino_c1, 0, 1, CSI_READ_WANT_DATA),
			 CSI_OK);
	atomic_store(&squash_root, false);
	assert_int_equal(counter(&e, A.host, "errors.access"), 10);
	for (c = owner; c; c = c == owner ? member : c == member ? other : NULL)
		sc_rpc_client_close(c);
	env_stop(&e);
}

/*
 * m, file's window of count blocks from lbn, is what GET_HASHES of the
 * file gives for them (MAX_BLOCKS at a time), block by block, hashes and
 * holes; it has nexpect blocks (the cut at end of file), a bitmap of
 * exactly ⌈nexpect / 8⌉ bytes with no bit past them, and a hash for each
 * block that is not a hole.
 */
static void getmap_matches(struct env *e, struct reg g,
			   const struct csi_map_file *m, uint64_t file,
			   uint64_t lbn, uint32_t count, uint32_t nexpect)
{
	struct csi_gethashes_args a;
	struct csi_gethashes_res r;
	struct sc_rpc_reply *rep;
	uint32_t i = 0, k = 0, j, chunk, holes = 0;
	bool cut = false;

	assert_int_equal(m->status, CSI_OK);
	check_attr(&m->attr, file);
	assert_int_equal(m->nholes_bytes, (nexpect + 7) / 8);
	for (j = 0; j < nexpect; j++)
		holes += map_hole(m, j);
	if (nexpect % 8)
		assert_int_equal(m->holes[nexpect / 8] >> (nexpect % 8), 0);
	assert_int_equal(m->nhashes, nexpect - holes);
	while (!cut && i < count) {
		chunk = count - i < MAX_BLOCKS ? count - i : MAX_BLOCKS;
		memset(&a, 0, sizeof(a));
		hdr_set(&a.hdr, g, NULL, 0);
		a.file = file;
		a.lbn = lbn + i;
		a.count = chunk;
		assert_int_equal(sc_rpc_call(e->c, CSI_PROC_GET_HASHES, &a, &r,
					     &rep), 0);
		assert_int_equal(r.status, CSI_OK);
		assert_int_equal(r.attr.size, m->attr.size);
		assert_int_equal(r.attr.change, m->attr.change);
		for (j = 0; j < r.nblocks; j++, i++) {
			assert_true(i < nexpect);
			if (r.blocks[j].kind == CSI_HK_HOLE) {
				assert_true(map_hole(m, i));
				continue;
			}
			assert_false(map_hole(m, i));
			assert_true(k < m->nhashes);
			assert_true(sc_hash_eq(&r.blocks[j].hash,
					       &m->hashes[k++]));
		}
		cut = r.nblocks < chunk;
		sc_rpc_reply_free(rep);
	}
	assert_int_equal(i, nexpect);
	assert_int_equal(k, m->nhashes);
}

/*
 * GET_MAP (§7.11): each file's window is GET_HASHES' answer for it, cut at
 * its end, holes as bits; the tracker untouched; calls and blocks counted.
 */
static void test_getmap(void **state)
{
	const uint64_t three[] = { ino_c1, ino_holes, ino_c2 };
	const uint64_t two[] = { ino_holes, ino_c1 };
	struct csi_getmap_res r;
	struct sc_rpc_reply *rep;
	struct env e;
	struct reg A;

	(void)state;
	env_start(&e);
	A = hello(&e, 1, CSI_FEAT_ALL);
	/* c1 and c2 cut at 256 blocks, "holes" at 6 (1, 2 and 4 holes) */
	assert_int_equal(getmap_call(&e, A, three, 3, 0, 300, &r, &rep),
			 CSI_OK);
	assert_int_equal(r.nfiles, 3);
	getmap_matches(&e, A, &r.files[0], ino_c1, 0, 300, CLONE_BLOCKS);
	getmap_matches(&e, A, &r.files[1], ino_holes, 0, 300, 6);
	assert_int_equal(r.files[1].holes[0], 0x16);
	assert_int_equal(r.files[1].nhashes, 3);
	getmap_matches(&e, A, &r.files[2], ino_c2, 0, 300, CLONE_BLOCKS);
	sc_rpc_reply_free(rep);

	/* blocks 3-5 of "holes": data, a hole, 100 bytes of data */
	assert_int_equal(getmap_call(&e, A, two, 2, 3, 3, &r, &rep), CSI_OK);
	assert_int_equal(r.nfiles, 2);
	getmap_matches(&e, A, &r.files[0], ino_holes, 3, 3, 3);
	assert_int_equal(r.files[0].holes[0], 0x02);
	getmap_matches(&e, A, &r.files[1], ino_c1, 3, 3, 3);
	sc_rpc_reply_free(rep);

	/* the largest window: "holes" is past its end (n = 0), c1 cut */
	assert_int_equal(getmap_call(&e, A, two, 2, 200, CSI_MAX_MAP_BLOCKS,
				     &r, &rep), CSI_OK);
	assert_int_equal(r.nfiles, 2);
	getmap_matches(&e, A, &r.files[0], ino_holes, 200, 1, 0);
	assert_int_equal(r.files[0].nholes_bytes, 0);
	assert_int_equal(r.files[0].nhashes, 0);
	getmap_matches(&e, A, &r.files[1], ino_c1, 200, CSI_MAX_MAP_BLOCKS,
		       CLONE_BLOCKS - 200);
	sc_rpc_reply_free(rep);

	assert_int_equal(counter(&e, A.host, "get_map.calls"), 3);
	assert_int_equal(counter(&e, A.host, "get_map.blocks"),
			 2 * CLONE_BLOCKS + 6 + 3 + 3 + CLONE_BLOCKS - 200);
	assert_int_equal(counter(&e, 0, "get_map.blocks"),
			 2 * CLONE_BLOCKS + 6 + 3 + 3 + CLONE_BLOCKS - 200);
	assert_int_equal(counter(&e, A.host, "tracker.entries"), 0);
	env_stop(&e);
}

/*
 * GET_MAP's statuses: each file its own (STALE, ACCESS: what GET_HASHES
 * gives it), the call's only for the call (INVAL, TOO_BIG, NOTSUPP), and
 * MAP granted only with READ_HASH.
 */
static void test_getmap_statuses(void **state)
{
	uint64_t many[CSI_MAX_MAP_FILES + 1];
	const uint64_t dup[] = { ino_c1, ino_c2, ino_c1 };
	const uint64_t three[] = { ino_c1, 0, ino_c2 };
	struct sockaddr_in lo = sin_of("127.0.0.1", 1);
	struct csi_getmap_args ga;
	struct csi_getmap_res r;
	struct sc_rpc_reply *rep;
	struct csi_hello_res h;
	struct env e;
	struct reg A, B;
	uint32_t i;

	(void)state;
	env_start_hooks(&e);
	A = hello(&e, 1, CSI_FEAT_ALL);
	/* 16 files: good ones, a stale id, a directory, ids of no file */
	for (i = 0; i < SC_ARRAY_SIZE(many); i++)
		many[i] = (1ull << 40) + i;
	many[0] = ino_c1;
	many[1] = 0;
	many[2] = ino_holes;
	many[3] = DSTORE_ROOT_INO;
	many[4] = ino_c2;
	assert_int_equal(getmap_call(&e, A, many, CSI_MAX_MAP_FILES, 0, 8, &r,
				     &rep), CSI_OK);
	assert_int_equal(r.nfiles, CSI_MAX_MAP_FILES);
	getmap_matches(&e, A, &r.files[0], ino_c1, 0, 8, 8);
	assert_int_equal(r.files[1].status, CSI_ERR_STALE);
	getmap_matches(&e, A, &r.files[2], ino_holes, 0, 8, 6);
	/* a directory: INVAL alone, STALE here (§7.11 has no INVAL entry) */
	gethashes_expect(&e, A, DSTORE_ROOT_INO, 0, 8, CSI_ERR_INVAL, NULL, 0);
	assert_int_equal(r.files[3].status, CSI_ERR_STALE);
	getmap_matches(&e, A, &r.files[4], ino_c2, 0, 8, 8);
	for (i = 5; i < CSI_MAX_MAP_FILES; i++)
		assert_int_equal(r.files[i].status, CSI_ERR_STALE);
	sc_rpc_reply_free(rep);
	assert_int_equal(counter(&e, A.host, "get_map.blocks"), 8 + 6 + 8);

	/* malformed calls */
	assert_int_equal(getmap_status(&e, A, three, 3, 0, 0), CSI_ERR_INVAL);
	assert_int_equal(getmap_status(&e, A, three, 0, 0, 1), CSI_ERR_INVAL);
	assert_int_equal(getmap_status(&e, A, dup, 3, 0, 1), CSI_ERR_INVAL);
	assert_int_equal(getmap_status(&e, A, three, 3, UINT64_MAX / BS - 1,
				       2), CSI_ERR_INVAL);
	assert_int_equal(getmap_status(&e, A, three, 3, UINT64_MAX - 1, 4),
			 CSI_ERR_INVAL);
	assert_int_equal(getmap_status(&e, A, three, 3, 0,
				       CSI_MAX_MAP_BLOCKS + 1), CSI_ERR_TOO_BIG);
	/* over the size first, as GET_HASHES */
	assert_int_equal(getmap_status(&e, A, dup, 3, UINT64_MAX,
				       CSI_MAX_MAP_BLOCKS + 1), CSI_ERR_TOO_BIG);
	/* more files than the protocol allows: no codec sends them */
	memset(&ga, 0, sizeof(ga));
	ga.hdr.host = A.host;
	ga.hdr.epoch = A.epoch;
	ga.files = many;
	ga.nfiles = CSI_MAX_MAP_FILES + 1;
	ga.count = 1;
	assert_int_equal(direct(e.svc, CSI_PROC_GET_MAP, &ga, &r,
				(struct sockaddr *)&lo), CSI_ERR_TOO_BIG);

	/* the export denies reads: every file ACCESS, each counted */
	atomic_store(&access_rc, -EACCES);
	assert_int_equal(getmap_call(&e, A, three, 3, 0, 4, &r, &rep), CSI_OK);
	assert_int_equal(r.nfiles, 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(r.files[i].status, CSI_ERR_ACCESS);
	sc_rpc_reply_free(rep);
	/* ... after the call's own checks */
	assert_int_equal(getmap_status(&e, A, three, 3, 0, 0), CSI_ERR_INVAL);
	atomic_store(&access_rc, 0);
	assert_int_equal(counter(&e, A.host, "errors.access"), 3);
	assert_int_equal(counter(&e, A.host, "get_map.calls"), 11);

	/* MAP only with READ_HASH, and NOTSUPP without it */
	h = hello_full(&e, 2, CSI_FEAT_MAP | CSI_FEAT_TRACKER);
	assert_int_equal(h.status, CSI_OK);
	assert_int_equal(h.features, CSI_FEAT_TRACKER);
	B.host = h.host;
	B.epoch = h.epoch;
	assert_int_equal(getmap_status(&e, B, three, 3, 0, 1),
			 CSI_ERR_NOTSUPP);
	/* ... before the other checks */
	assert_int_equal(getmap_status(&e, B, three, 3, 0, 0),
			 CSI_ERR_NOTSUPP);
	B = hello(&e, 3, CSI_FEAT_READ_HASH);
	assert_int_equal(getmap_status(&e, B, three, 3, 0, 1),
			 CSI_ERR_NOTSUPP);
	h = hello_full(&e, 4, CSI_FEAT_READ_HASH | CSI_FEAT_MAP);
	assert_int_equal(h.features, CSI_FEAT_READ_HASH | CSI_FEAT_MAP);
	env_stop(&e);
}

/* A service offering MAP but not READ_HASH grants neither. */
static void test_getmap_grant(void **state)
{
	struct csi_service_config cfg;
	struct csi_hello_res h;
	struct env e;

	(void)state;
	default_cfg(&cfg);
	cfg.features = CSI_FEAT_ALL & ~CSI_FEAT_READ_HASH;
	env_start_cfg(&e, &cfg);
	h = hello_full(&e, 1, CSI_FEAT_ALL);
	assert_int_equal(h.status, CSI_OK);
	assert_int_equal(h.features,
			 CSI_FEAT_ALL & ~(CSI_FEAT_READ_HASH | CSI_FEAT_MAP));
	env_stop(&e);
	assert_int_equal(CSI_SERVICE_FEATURES, CSI_FEAT_ALL);
}

/*
 * A file GET_MAP answered is used (§7): pushes may name it; one refused
 * access is not.
 */
static void test_getmap_marks_used(void **state)
{
	const uint64_t c2[] = { ino_c2 };
	struct env e;
	struct reg A;

	(void)state;
	assert_int_equal(dstore_apply_pending(ds), 0);
	env_start_hooks(&e);
	A = hello(&e, 1, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER |
		  CSI_FEAT_PUSH | CSI_FEAT_MAP);
	assert_int_equal(read_pushed(&e, A), 0);
	atomic_store(&access_rc, -EACCES);
	assert_int_equal(getmap_status(&e, A, c2, 1, 0, 1), CSI_OK);
	atomic_store(&access_rc, 0);
	assert_int_equal(read_pushed(&e, A), 0);
	assert_int_equal(getmap_status(&e, A, c2, 1, 0, 1), CSI_OK);
	assert_int_equal(read_pushed(&e, A), MAX_BLOCKS);
	env_stop(&e);
}

/* ---- the service under a worker pool ---- */

#define RACE_HOSTS 4
#define RACE_ROUNDS 300
#define RACE_FILE_BLOCKS 16u

struct racer {
	struct env *e;
	unsigned int id;
	uint64_t file;			/* its own file */
	uint8_t model[RACE_FILE_BLOCKS * BS];	/* what it must hold */
};

/* A racer's check, recorded for the test's thread (worker_check.h). */
#define RACE_CHECK(r, cond, fmt, ...)					\
	worker_check((cond), __FILE__, __LINE__, "racer %u: " fmt, (r)->id, \
		     __VA_ARGS__)

static struct reg racer_hello(struct racer *r, struct sc_rpc_client *c)
{
	struct csi_hello_args a;
	struct csi_hello_res res;
	struct sc_rpc_reply *rep;
	struct reg g = { 0, 0 };

	memset(&a, 0, sizeof(a));
	memset(a.host_uuid, 0x40 + (int)r->id, sizeof(a.host_uuid));
	a.host_name.p = (const uint8_t *)"racer";
	a.host_name.len = 5;
	a.features = CSI_FEAT_ALL;
	if (sc_rpc_call(c, CSI_PROC_HELLO, &a, &res, &rep) == 0) {
		RACE_CHECK(r, res.status == CSI_OK, "hello %u", res.status);
		g.host = res.host;
		g.epoch = res.epoch;
		sc_rpc_reply_free(rep);
	}
	return g;
}

/*
 * One host's random mix of reads of the shared clones (every flag), data
 * and hash-only writes of its own file, evictions and re-registrations;
 * every byte read is checked.
 */
static void *racer_main(void *arg)
{
	struct racer *r = arg;
	struct sc_rpc_client_opts co = { .host = "127.0.0.1", .prog = CSI_PROG,
					 .timeout_ms = 60000 };
	struct sc_rpc_client *c;
	struct sc_hasher *hs = sc_hasher_new();
	struct sc_prng rng;
	struct reg g;

	co.port = sc_rpc_server_port(r->e->srv);
	if (!WCHECK_EQ(sc_rpc_client_open(&co, &c), 0) || !WCHECK(hs))
		return NULL;
	sc_prng_seed(&rng, 77 + r->id);
	g = racer_hello(r, c);
	for (int round = 0; round < RACE_ROUNDS; round++) {
		uint32_t op = sc_prng_below(&rng, 10);
		uint32_t lbn = sc_prng_below(&rng, RACE_FILE_BLOCKS);
		struct sc_rpc_reply *rep = NULL;
		struct sc_hash h;

		if (op < 5) {		/* read a clone */
			struct csi_read_args a;
			struct csi_read_res res;
			uint64_t at = sc_prng_below(&rng, CLONE_BLOCKS - 8);

			memset(&a, 0, sizeof(a));
			hdr_set(&a.hdr, g, NULL, 0);
			a.file = op & 1 ? ino_c1 : ino_c2;
			a.lbn = at;
			a.count = 8;
			a.flags = CSI_READ_WANT_DATA | CSI_READ_ACCEPT_PUSH |
				  (op == 4 ? CSI_READ_FORCE_DATA :
					     CSI_READ_ACCEPT_DELEG);
			if (sc_rpc_call(c, CSI_PROC_READ, &a, &res, &rep))
				continue;
			if (res.status == CSI_ERR_UNKNOWN_HOST) {
				g = racer_hello(r, c);
			} else if (res.status == CSI_OK) {
				for (uint32_t i = 0; i < res.nblocks; i++) {
					const struct csi_read_block *b =
						&res.blocks[i];
					const uint8_t *want = clone_bytes +
						(at + i) * BS;

					sc_hasher_digest(hs, want, BS, &h);
					RACE_CHECK(r, sc_hash_eq(&h, &b->hash),
						   "clone hash %u", i);
					if (b->kind == CSI_RK_DATA)
						RACE_CHECK(r, b->data.len == BS &&
							   !memcmp(b->data.p,
								   want, BS),
							   "clone data %u", i);
				}
			} else {
				RACE_CHECK(r, 0, "read %u", res.status);
			}
		} else if (op < 8) {	/* write a block of its own file */
			struct csi_write_block wb = { 0 };
			struct csi_write_args a;
			struct csi_write_res res;
			const uint8_t *src = clone_bytes +
				(size_t)sc_prng_below(&rng, CLONE_BLOCKS) * BS;

			memset(&a, 0, sizeof(a));
			hdr_set(&a.hdr, g, NULL, 0);
			sc_hasher_digest(hs, src, BS, &wb.hash);
			wb.kind = op == 7 ? CSI_WK_HASH : CSI_WK_DATA;
			wb.data.p = src;
			wb.data.len = wb.kind == CSI_WK_DATA ? BS : 0;
			a.file = r->file;
			a.lbn = lbn;
			a.end = (lbn + 1) * BS;
			a.blocks = &wb;
			a.nblocks = 1;
			if (sc_rpc_call(c, CSI_PROC_WRITE, &a, &res, &rep))
				continue;
			if (res.status == CSI_ERR_UNKNOWN_HOST)
				g = racer_hello(r, c);
			else if (res.status != CSI_OK)
				RACE_CHECK(r, 0, "write %u", res.status);
			else if (res.blocks[0] == CSI_W_OK)
				memcpy(r->model + lbn * BS, src, BS);
		} else if (op == 8) {	/* forget a content, tell the server */
			struct csi_evict_args a;
			struct csi_evict_res res;

			sc_hasher_digest(hs, clone_bytes + (size_t)lbn * BS,
					 BS, &h);
			hdr_set(&a.hdr, g, &h, 1);
			if (sc_rpc_call(c, CSI_PROC_EVICT, &a, &res, &rep))
				continue;
			if (res.status == CSI_ERR_UNKNOWN_HOST)
				g = racer_hello(r, c);
		} else if (round & 1) {	/* register again */
			g = racer_hello(r, c);
		} else {		/* STATS, while others register */
			struct csi_stats_args a = { .per_host = true };
			struct csi_stats_res res;

			if (sc_rpc_call(c, CSI_PROC_STATS, &a, &res, &rep))
				RACE_CHECK(r, 0, "STATS: %s", "no reply");
			else
				RACE_CHECK(r, res.status == CSI_OK, "STATS %u",
					   res.status);
		}
		sc_rpc_reply_free(rep);
	}
	sc_hasher_free(hs);
	sc_rpc_client_close(c);
	return NULL;
}

/*
 * Four hosts at once against a service on four workers: every byte read
 * is right, and each host's file holds exactly what its acknowledged
 * writes wrote (run under ASan/UBSan too).
 */
static void test_workers_race(void **state)
{
	struct csi_service_config cfg;
	struct racer *r = calloc(RACE_HOSTS, sizeof(*r));
	pthread_t t[RACE_HOSTS];
	struct env e;
	char name[16];

	(void)state;
	assert_non_null(r);
	default_cfg(&cfg);
	env_start_workers(&e, &cfg, 4);
	for (unsigned int i = 0; i < RACE_HOSTS; i++) {
		snprintf(name, sizeof(name), "race%u", i);
		r[i].e = &e;
		r[i].id = i;
		r[i].file = make_file(name, NULL, 0, 0);
		assert_int_equal(pthread_create(&t[i], NULL, racer_main, &r[i]),
				 0);
	}
	for (unsigned int i = 0; i < RACE_HOSTS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	worker_checks_passed();
	for (unsigned int i = 0; i < RACE_HOSTS; i++) {
		uint8_t got[RACE_FILE_BLOCKS * BS];
		bool eof;

		memset(got, 0, sizeof(got));
		assert_true(dstore_read(ds, r[i].file, 0, got, sizeof(got),
					&eof) >= 0);
		assert_memory_equal(got, r[i].model, sizeof(got));
	}
	env_stop(&e);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_grants),
		cmocka_unit_test(test_hello_config_and_binding),
		cmocka_unit_test(test_hello_per_address),
		cmocka_unit_test(test_tracker_two_hosts),
		cmocka_unit_test(test_readhash_probe),
		cmocka_unit_test(test_force_data),
		cmocka_unit_test(test_holes_and_eof),
		cmocka_unit_test(test_header_checks),
		cmocka_unit_test(test_lease),
		cmocka_unit_test(test_garbage_args),
		cmocka_unit_test(test_push),
		cmocka_unit_test(test_push_search_cut),
		cmocka_unit_test(test_coop),
		cmocka_unit_test(test_peer_report),
		cmocka_unit_test(test_coop_disk_first),
		cmocka_unit_test(test_dedup_write),
		cmocka_unit_test(test_lookup_access),
		cmocka_unit_test(test_file_modes),
		cmocka_unit_test(test_getmap),
		cmocka_unit_test(test_getmap_statuses),
		cmocka_unit_test(test_getmap_grant),
		cmocka_unit_test(test_getmap_marks_used),
		cmocka_unit_test(test_workers_race),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
