// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI service inside a real ganesha.nfsd (FSAL_DEDUP with CSI_Port
 * set), next to NFS, with hosts played by a minimal CSI client (struct
 * host below: a content cache, the reply kinds of PROTOCOL.md §7.3, peer
 * reads through the shared peer server and client).  Every byte a host
 * reads is compared with what NFS wrote, and every scenario checks the
 * server's counters exactly:
 *
 *   - each variant on a two-host scenario (Baseline, Read#, W/Tracker,
 *     SS-Push, Coop-Cache, Dedup-W), CSI writes seen over NFS (the
 *     attribute up-call) and NFS writes seen over CSI;
 *   - security: hash-only writes without proof of possession, forged,
 *     replayed and expired peer tokens, pushes only of files the host
 *     used, unregistered hosts and stale epochs;
 *   - faults: a peer that dies before a delegated read, a host that never
 *     sends eviction notices, a server restart between calls.
 *
 * CSI_PORT (environment) is the port the server's config gives.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <seacache/csi_codec.h>
#include <seacache/hash.h>
#include <seacache/peer_client.h>
#include <seacache/peer_server.h>
#include <seacache/rpc_transport.h>

#include "nfs_harness.h"

#define D "/csi"
#define EXPORT "/export"		/* ganesha-run's pseudo path */
#define BS 4096u
#define NBLK 64u
#define PER_CALL 32u
#define CACHE_MAX 512u
#define SEED 0xc5100ull

#define F_TRACKER (CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER)
#define F_PUSH (F_TRACKER | CSI_FEAT_PUSH)
#define F_COOP (F_PUSH | CSI_FEAT_COOP)

static struct nfs_context *v3;
static struct sc_rpc_client *c;
static struct sc_hasher *hasher;
static uint8_t img[NBLK * BS];		/* content of every clone */
static uint64_t c1_id, c2_id, c3_id;

/* ---- a minimal host ---- */

struct cached {
	struct sc_hash h;
	uint8_t data[BS];
};

struct pushed {
	uint64_t file, lbn;
	struct sc_hash h;
};

struct host {
	uint8_t uuid;
	uint32_t features;
	uint64_t id, epoch;
	uint8_t secret[CSI_SECRET_SIZE];
	struct sc_peer_server *peer;	/* Coop: serves its cache */
	struct cached cache[CACHE_MAX];
	uint32_t ncache;
	struct pushed push[CACHE_MAX];	/* pushed CSI-Map entries */
	uint32_t npush;
	uint32_t calls;			/* READ and GET_HASHES sent */
	uint32_t forced;		/* blocks re-read with FORCE_DATA */
	uint32_t peer_ok;		/* blocks fetched from a peer */
};

static struct sc_hash sha(const void *p)
{
	struct sc_hash h;

	assert_int_equal(sc_hasher_digest(hasher, p, BS, &h), 0);
	return h;
}

static const struct cached *cache_find(const struct host *h,
				       const struct sc_hash *k)
{
	for (uint32_t i = 0; i < h->ncache; i++)
		if (sc_hash_eq(&h->cache[i].h, k))
			return &h->cache[i];
	return NULL;
}

static void cache_put(struct host *h, const struct sc_hash *k,
		      const uint8_t *data)
{
	struct sc_hash got = sha(data);

	assert_true(sc_hash_eq(&got, k));	/* §7.3: verify before caching */
	if (cache_find(h, k))
		return;
	assert_true(h->ncache < CACHE_MAX);
	h->cache[h->ncache].h = *k;
	memcpy(h->cache[h->ncache].data, data, BS);
	h->ncache++;
}

/* Peer reads (§7.8) answered from the cache; runs on the peer thread. */
static int peer_get(void *ctx, const struct sc_hash *k, void *buf,
		    uint32_t *len)
{
	const struct cached *e = cache_find(ctx, k);

	if (!e)
		return -SC_ENOENT;
	memcpy(buf, e->data, BS);
	*len = BS;
	return 0;
}

static void host_hello(struct host *h)
{
	struct csi_hello_args a;
	struct csi_hello_res r;
	struct sc_rpc_reply *rep;

	memset(&a, 0, sizeof(a));
	memset(a.host_uuid, h->uuid, sizeof(a.host_uuid));
	a.host_name.p = (const uint8_t *)"test";
	a.host_name.len = 4;
	a.features = h->features;
	a.cache_bytes = CACHE_MAX * BS;
	if (h->peer) {
		a.peer.family = CSI_AF_INET;
		a.peer.addr[0] = 127;
		a.peer.addr[3] = 1;
		a.peer.port = sc_peer_server_port(h->peer);
	}
	assert_int_equal(sc_rpc_call(c, CSI_PROC_HELLO, &a, &r, &rep), 0);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.features, h->features);
	assert_int_equal(r.block_size, BS);
	h->id = r.host;
	h->epoch = r.epoch;
	memcpy(h->secret, r.peer_secret, sizeof(h->secret));
	sc_rpc_reply_free(rep);
	if (h->peer)
		assert_int_equal(sc_peer_server_set_identity(h->peer, h->id,
							     h->epoch,
							     h->secret), 0);
}

static struct host *host_new(uint8_t uuid, uint32_t features, bool peer)
{
	struct host *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	h->uuid = uuid;
	h->features = features;
	if (peer)
		assert_int_equal(sc_peer_server_start("127.0.0.1", 0, BS,
						      peer_get, h, &h->peer),
				 0);
	host_hello(h);
	return h;
}

static void host_free(struct host *h)
{
	sc_peer_server_free(h->peer);
	free(h);
}

static void hdr_of(const struct host *h, struct csi_reqhdr *hdr)
{
	hdr->host = h->id;
	hdr->epoch = h->epoch;
	hdr->evicted = NULL;
	hdr->nevicted = 0;
}

/*
 * Empties the content cache; with tell, reports every content evicted
 * (§5.2) in one EVICT, as a well-behaved host does.
 */
static void host_drop_cache(struct host *h, bool tell)
{
	struct sc_hash ev[CACHE_MAX];
	struct csi_evict_args a;
	struct csi_evict_res r;
	struct sc_rpc_reply *rep;

	for (uint32_t i = 0; i < h->ncache; i++)
		ev[i] = h->cache[i].h;
	if (tell) {
		hdr_of(h, &a.hdr);
		a.hdr.evicted = ev;
		a.hdr.nevicted = h->ncache;
		assert_int_equal(sc_rpc_call(c, CSI_PROC_EVICT, &a, &r, &rep),
				 0);
		assert_int_equal(r.status, CSI_OK);
		sc_rpc_reply_free(rep);
	}
	h->ncache = 0;
}

static const struct pushed *push_find(const struct host *h, uint64_t file,
				      uint64_t lbn)
{
	for (uint32_t i = 0; i < h->npush; i++)
		if (h->push[i].file == file && h->push[i].lbn == lbn)
			return &h->push[i];
	return NULL;
}

/* READ; the caller frees *rep. */
static void read_call(struct host *h, uint64_t file, uint64_t lbn,
		      uint32_t count, uint32_t flags, struct csi_read_res *r,
		      struct sc_rpc_reply **rep)
{
	struct csi_read_args a;

	memset(&a, 0, sizeof(a));
	hdr_of(h, &a.hdr);
	a.file = file;
	a.lbn = lbn;
	a.count = count;
	a.flags = flags;
	h->calls++;
	assert_int_equal(sc_rpc_call(c, CSI_PROC_READ, &a, r, rep), 0);
}

/* One block with FORCE_DATA: the fallback of §7.3. */
static void read_forced(struct host *h, uint64_t file, uint64_t lbn,
			uint8_t *out)
{
	struct csi_read_res r;
	struct sc_rpc_reply *rep;

	read_call(h, file, lbn, 1, CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA,
		  &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.nblocks, 1);
	assert_int_equal(r.blocks[0].kind, CSI_RK_DATA);
	memset(out, 0, BS);
	memcpy(out, r.blocks[0].data.p, r.blocks[0].data.len);
	cache_put(h, &r.blocks[0].hash, out);
	sc_rpc_reply_free(rep);
	h->forced++;
}

static uint32_t read_flags(const struct host *h)
{
	uint32_t f = CSI_READ_WANT_DATA;

	if (h->features & CSI_FEAT_PUSH)
		f |= CSI_READ_ACCEPT_PUSH;
	if (h->features & CSI_FEAT_COOP)
		f |= CSI_READ_ACCEPT_DELEG;
	return f;
}

/* Handles one answered block (§7.3 "What the host does"). */
static void take_block(struct host *h, uint64_t file, uint64_t lbn,
		       const struct csi_read_block *b, uint8_t *out)
{
	const struct cached *e;

	switch (b->kind) {
	case CSI_RK_HOLE:
		memset(out, 0, BS);
		return;
	case CSI_RK_DATA:
		memset(out, 0, BS);
		memcpy(out, b->data.p, b->data.len);
		cache_put(h, &b->hash, out);
		return;
	case CSI_RK_HASH:
		e = cache_find(h, &b->hash);
		if (e)
			memcpy(out, e->data, BS);
		else
			read_forced(h, file, lbn, out);
		return;
	case CSI_RK_DELEGATED:
		if (sc_peer_fetch(&b->peer, h->id, h->epoch, &b->hash,
				  &b->token, 0, BS, out) == 0) {
			cache_put(h, &b->hash, out);
			h->peer_ok++;
		} else {
			read_forced(h, file, lbn, out);
		}
		return;
	default:
		fail_msg("block kind %u", b->kind);
	}
}

/*
 * Reads all of file as the variant of h would: pushed entries and (Read#)
 * hashes first, then READ for what the cache lacks.  Returns the bytes.
 */
static void host_read_file(struct host *h, uint64_t file, uint8_t *out)
{
	for (uint32_t lbn = 0; lbn < NBLK; lbn += PER_CALL) {
		struct csi_read_res r;
		struct sc_rpc_reply *rep;
		bool all_local = true;

		/* a pushed entry whose content is cached: no call at all */
		for (uint32_t i = 0; i < PER_CALL; i++) {
			const struct pushed *p = push_find(h, file, lbn + i);
			const struct cached *e = p ? cache_find(h, &p->h) :
						     NULL;

			if (!e) {
				all_local = false;
				break;
			}
			memcpy(out + (lbn + i) * BS, e->data, BS);
		}
		if (all_local)
			continue;
		if (h->features == CSI_FEAT_READ_HASH) {
			/* Read#: the hashes, then data only for misses */
			struct csi_gethashes_args ga;
			struct csi_gethashes_res gr;
			bool miss = false;

			memset(&ga, 0, sizeof(ga));
			hdr_of(h, &ga.hdr);
			ga.file = file;
			ga.lbn = lbn;
			ga.count = PER_CALL;
			h->calls++;
			assert_int_equal(sc_rpc_call(c, CSI_PROC_GET_HASHES,
						     &ga, &gr, &rep), 0);
			assert_int_equal(gr.status, CSI_OK);
			assert_int_equal(gr.nblocks, PER_CALL);
			for (uint32_t i = 0; i < PER_CALL; i++) {
				const struct cached *e =
					cache_find(h, &gr.blocks[i].hash);

				if (e)
					memcpy(out + (lbn + i) * BS, e->data,
					       BS);
				else
					miss = true;
			}
			sc_rpc_reply_free(rep);
			if (!miss)
				continue;
		}
		read_call(h, file, lbn, PER_CALL, read_flags(h), &r, &rep);
		assert_int_equal(r.status, CSI_OK);
		assert_int_equal(r.nblocks, PER_CALL);
		assert_true(r.npushed <= 256);
		for (uint32_t i = 0; i < r.npushed; i++) {
			assert_true(h->npush < CACHE_MAX);
			h->push[h->npush].file = r.pushed[i].file;
			h->push[h->npush].lbn = r.pushed[i].lbn;
			h->push[h->npush].h = r.pushed[i].hash;
			h->npush++;
		}
		for (uint32_t i = 0; i < r.nblocks; i++)
			take_block(h, file, lbn + i, &r.blocks[i],
				   out + (lbn + i) * BS);
		sc_rpc_reply_free(rep);
	}
}

/* Reads file as h and checks it is img. */
static void host_read_check(struct host *h, uint64_t file)
{
	static uint8_t got[NBLK * BS];

	memset(got, 0xa5, sizeof(got));
	host_read_file(h, file, got);
	assert_int_equal(nh_first_diff(got, img, sizeof(img)), sizeof(img));
}

/* A counter of h (NULL: the server-wide set); fails if absent. */
static uint64_t counter(const struct host *h, const char *name)
{
	struct csi_stats_args a = { .per_host = true };
	struct csi_stats_res r;
	struct sc_rpc_reply *rep;
	const struct csi_counter *cs = NULL;
	uint32_t i, n = 0, k;
	uint64_t v;

	assert_int_equal(sc_rpc_call(c, CSI_PROC_STATS, &a, &r, &rep), 0);
	assert_int_equal(r.status, CSI_OK);
	if (!h) {
		cs = r.counters;
		n = r.ncounters;
	}
	for (i = 0; h && i < r.nhosts; i++)
		if (r.hosts[i].host == h->id) {
			cs = r.hosts[i].counters;
			n = r.hosts[i].ncounters;
		}
	for (k = 0; cs && k < n; k++)
		if (cs[k].name.len == strlen(name) &&
		    !memcmp(cs[k].name.p, name, cs[k].name.len))
			break;
	if (!cs || k == n) {
		sc_rpc_reply_free(rep);
		fail_msg("no counter %s", name);
	}
	v = cs[k].value;
	sc_rpc_reply_free(rep);
	return v;
}

static uint64_t fileid(const char *path)
{
	struct nfs_stat_64 st;

	assert_int_equal(nfs_stat64(v3, path, &st), 0);
	return st.nfs_ino;
}

static uint32_t lookup(const struct host *h, const char *exp,
		       const char *path, uint64_t *file)
{
	struct csi_lookup_args a;
	struct csi_lookup_res r;
	struct sc_rpc_reply *rep;

	memset(&a, 0, sizeof(a));
	hdr_of(h, &a.hdr);
	a.export_path.p = (const uint8_t *)exp;
	a.export_path.len = (uint32_t)strlen(exp);
	a.path.p = (const uint8_t *)path;
	a.path.len = (uint32_t)strlen(path);
	assert_int_equal(sc_rpc_call(c, CSI_PROC_LOOKUP, &a, &r, &rep), 0);
	if (r.status == CSI_OK && file)
		*file = r.attr.file;
	sc_rpc_reply_free(rep);
	return r.status;
}

/*
 * The CSI-Map's entries of newly written content are applied by the
 * store's housekeeper (every second): pushes can name them only then.
 * Waits (bounded) until a probe host is pushed c2's last block (c2 was
 * written whole before: its earlier blocks are applied with it).  Its
 * reads FORCE_DATA: pushes follow data answers, and after the first the
 * server knows the probe holds the block.
 */
static void wait_csimap(void)
{
	struct host *p = host_new(0xfe, F_PUSH, false);
	int tries;

	assert_int_equal(lookup(p, EXPORT, "csi/c2", NULL), CSI_OK);
	for (tries = 0; tries < 200; tries++) {
		struct csi_read_res r;
		struct sc_rpc_reply *rep;
		uint32_t n;

		read_call(p, c1_id, NBLK - 1, 1,
			  CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA |
			  CSI_READ_ACCEPT_PUSH, &r, &rep);
		assert_int_equal(r.status, CSI_OK);
		n = r.npushed;
		sc_rpc_reply_free(rep);
		if (n)
			break;
		usleep(50 * 1000);
	}
	assert_true(tries < 200);
	host_free(p);
}

/* ---- the variants ---- */

/* Baseline over CSI: data, every time. */
static void test_baseline(void **state)
{
	struct host *h = host_new(0x10, 0, false);

	(void)state;
	host_read_check(h, c1_id);
	host_drop_cache(h, true);
	host_read_check(h, c1_id);
	assert_int_equal(counter(h, "read.data_blocks"), 2 * NBLK);
	assert_int_equal(counter(h, "read.data_bytes"), 2ull * NBLK * BS);
	assert_int_equal(counter(h, "read.hash_only_blocks"), 0);
	host_free(h);
}

/* Read#: hashes first, data only for content the host lacks. */
static void test_readhash(void **state)
{
	struct host *h = host_new(0x11, CSI_FEAT_READ_HASH, false);

	(void)state;
	host_read_check(h, c1_id);
	host_read_check(h, c2_id);	/* every hash hits: no READ */
	assert_int_equal(counter(h, "get_hashes.blocks"), 2 * NBLK);
	assert_int_equal(counter(h, "read.calls"), NBLK / PER_CALL);
	assert_int_equal(counter(h, "read.data_blocks"), NBLK);
	host_free(h);
}

/*
 * W/Tracker: A reads clone 1, B reads clone 2; B gets data (it holds
 * nothing), A's re-reads and A's read of clone 2 are hash only.
 */
static void test_tracker(void **state)
{
	struct host *a = host_new(0x12, F_TRACKER, false);
	struct host *b = host_new(0x13, F_TRACKER, false);

	(void)state;
	host_read_check(a, c1_id);
	host_read_check(b, c2_id);
	host_read_check(a, c1_id);
	host_read_check(a, c2_id);
	assert_int_equal(counter(a, "read.data_blocks"), NBLK);
	assert_int_equal(counter(a, "read.hash_only_blocks"), 2 * NBLK);
	assert_int_equal(counter(b, "read.data_blocks"), NBLK);
	assert_int_equal(counter(b, "read.hash_only_blocks"), 0);
	assert_int_equal(counter(a, "tracker.entries"), NBLK);
	host_free(a);
	host_free(b);
}

/*
 * SS-Push: A, having looked up clone 2, reads clone 1 and is pushed
 * clone 2's map, so it reads clone 2 without a single call; pushes name
 * only the file it looked up (clone 3 holds the same content).
 */
static void test_push(void **state)
{
	struct host *a = host_new(0x14, F_PUSH, false);
	uint64_t id;

	(void)state;
	wait_csimap();
	assert_int_equal(lookup(a, EXPORT, "csi/c2", &id), CSI_OK);
	assert_int_equal(id, c2_id);
	host_read_check(a, c1_id);
	assert_int_equal(a->npush, NBLK);
	for (uint32_t i = 0; i < a->npush; i++)
		assert_int_equal(a->push[i].file, c2_id);
	a->calls = 0;
	host_read_check(a, c2_id);
	assert_int_equal(a->calls, 0);
	assert_int_equal(counter(a, "read.pushed_entries"), NBLK);
	assert_int_equal(counter(a, "read.data_blocks"), NBLK);
	assert_int_equal(counter(a, "read.calls"), NBLK / PER_CALL);
	host_free(a);
}

/*
 * Coop-Cache: B's reads of what A holds are delegated to A, whose peer
 * server answers them; the server sends B no data.
 */
static void test_coop(void **state)
{
	struct host *a = host_new(0x15, F_COOP, true);
	struct host *b = host_new(0x16, F_COOP, true);
	struct sc_peer_server_stats ps;

	(void)state;
	host_read_check(a, c1_id);
	host_read_check(b, c2_id);
	assert_int_equal(b->peer_ok, NBLK);
	assert_int_equal(b->forced, 0);
	assert_int_equal(counter(b, "read.delegated_blocks"), NBLK);
	assert_int_equal(counter(b, "read.data_blocks"), 0);
	assert_int_equal(counter(a, "peer.delegations_served"), NBLK);
	sc_peer_server_get_stats(a->peer, &ps);
	assert_int_equal(ps.served, NBLK);
	/* B holds them now: hash only, from its own cache */
	host_read_check(b, c1_id);
	assert_int_equal(counter(b, "read.hash_only_blocks"), NBLK);
	host_free(a);
	host_free(b);
}

static uint32_t write_call(const struct host *h, uint64_t file, uint64_t lbn,
			   uint64_t end, const uint8_t *bytes, uint32_t n,
			   uint32_t kind, uint32_t *st)
{
	struct csi_write_block b[PER_CALL];
	struct csi_write_args a;
	struct csi_write_res r;
	struct sc_rpc_reply *rep;
	uint32_t status;

	assert_true(n <= PER_CALL);
	memset(&a, 0, sizeof(a));
	hdr_of(h, &a.hdr);
	a.file = file;
	a.lbn = lbn;
	a.end = end;
	a.stable = CSI_FILE_SYNC;
	for (uint32_t i = 0; i < n; i++) {
		b[i].kind = kind;
		b[i].hash = sha(bytes + (size_t)i * BS);
		b[i].data.p = bytes + (size_t)i * BS;
		b[i].data.len = kind == CSI_WK_DATA ? BS : 0;
	}
	a.blocks = b;
	a.nblocks = n;
	assert_int_equal(sc_rpc_call(c, CSI_PROC_WRITE, &a, &r, &rep), 0);
	status = r.status;
	if (status == CSI_OK) {
		assert_int_equal(r.nblocks, n);
		memcpy(st, r.blocks, n * sizeof(*st));
	}
	sc_rpc_reply_free(rep);
	return status;
}

static uint32_t count_of(const uint32_t *st, uint32_t n, uint32_t v)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++)
		k += st[i] == v;
	return k;
}

/*
 * Dedup-W: a host that read clone 1 writes a new file by hashes alone;
 * NFS sees the file at once (size and bytes: Ganesha's cached attributes
 * were dropped).  A host that never received the content gets NEED_DATA
 * for every block, so it can neither write it by hash nor read it back,
 * and then writes the bytes.
 */
static void test_dedup_write(void **state)
{
	struct host *w = host_new(0x17, F_TRACKER | CSI_FEAT_DEDUP_WRITE,
				  false);
	struct host *x = host_new(0x18, F_TRACKER | CSI_FEAT_DEDUP_WRITE,
				  false);
	struct nfs_stat_64 st;
	uint32_t ws[PER_CALL];
	uint64_t w1, w2;

	(void)state;
	assert_int_equal(nh_write_file(v3, D "/w1", NULL, 0, 1), 0);
	assert_int_equal(nh_write_file(v3, D "/w2", NULL, 0, 1), 0);
	w1 = fileid(D "/w1");
	w2 = fileid(D "/w2");
	/* NFS has looked at them: Ganesha caches their attributes */
	assert_int_equal(nfs_stat64(v3, D "/w1", &st), 0);
	assert_int_equal(st.nfs_size, 0);

	host_read_check(w, c1_id);
	for (uint32_t lbn = 0; lbn < NBLK; lbn += PER_CALL) {
		assert_int_equal(write_call(w, w1, lbn, (lbn + PER_CALL) * BS,
					    img + lbn * BS, PER_CALL,
					    CSI_WK_HASH, ws), CSI_OK);
		assert_int_equal(count_of(ws, PER_CALL, CSI_W_OK), PER_CALL);
	}
	assert_int_equal(nfs_stat64(v3, D "/w1", &st), 0);
	assert_int_equal(st.nfs_size, sizeof(img));
	assert_int_equal(nh_check_file(v3, D "/w1", img, sizeof(img)), 0);
	assert_int_equal(counter(w, "write.hash_blocks"), NBLK);
	assert_int_equal(counter(w, "write.data_bytes"), 0);

	/* x never received the content */
	assert_int_equal(write_call(x, w2, 0, PER_CALL * BS, img, PER_CALL,
				    CSI_WK_HASH, ws), CSI_OK);
	assert_int_equal(count_of(ws, PER_CALL, CSI_W_NEED_DATA), PER_CALL);
	{
		struct csi_read_res r;
		struct sc_rpc_reply *rep;

		read_call(x, w2, 0, PER_CALL, CSI_READ_WANT_DATA, &r, &rep);
		assert_int_equal(r.status, CSI_OK);
		for (uint32_t i = 0; i < r.nblocks; i++)
			assert_int_equal(r.blocks[i].kind, CSI_RK_HOLE);
		sc_rpc_reply_free(rep);
	}
	assert_int_equal(write_call(x, w2, 0, PER_CALL * BS, img, PER_CALL,
				    CSI_WK_DATA, ws), CSI_OK);
	assert_int_equal(count_of(ws, PER_CALL, CSI_W_OK), PER_CALL);
	assert_int_equal(nh_check_file(v3, D "/w2", img, PER_CALL * BS), 0);
	assert_int_equal(counter(x, "write.need_data"), PER_CALL);
	assert_int_equal(counter(x, "write.data_blocks"), PER_CALL);
	host_free(w);
	host_free(x);
}

/* NFS writes are seen over CSI: a rewritten block is new data. */
static void test_nfs_write_seen(void **state)
{
	struct host *a = host_new(0x19, F_TRACKER, false);
	uint8_t newblk[BS];
	struct nfsfh *fh;

	(void)state;
	host_read_check(a, c3_id);
	nh_fill_seeded(newblk, BS, SEED + 1);
	assert_int_equal(nfs_open(v3, D "/c3", O_RDWR, &fh), 0);
	assert_int_equal(nh_pwrite_all(v3, fh, 5 * BS, newblk, BS, BS), 0);
	assert_int_equal(nfs_fsync(v3, fh), 0);
	assert_int_equal(nfs_close(v3, fh), 0);
	memcpy(img + 5 * BS, newblk, BS);
	host_read_check(a, c3_id);
	nh_fill_seeded(img, sizeof(img), SEED);	/* c1, c2 are unchanged */
	assert_int_equal(counter(a, "read.data_blocks"), NBLK + 1);
	assert_int_equal(counter(a, "read.hash_only_blocks"), NBLK - 1);
	host_free(a);
}

/* ---- security ---- */

/*
 * Peer tokens: a forged MAC, a token presented by another host than the
 * one it was made for, and an expired one are refused by the real peer
 * server; the block is then read from the server.
 */
static uint64_t skew;

static uint64_t skewed_clock(void *ctx)
{
	(void)ctx;
	return (uint64_t)time(NULL) + skew;
}

static void test_peer_tokens(void **state)
{
	/* coop's uuids: replacing them drops their delegation targets */
	struct host *a = host_new(0x15, F_COOP, true);
	struct host *b = host_new(0x16, F_COOP, false);
	struct host *m = host_new(0x1c, F_COOP, false);
	struct csi_read_res r;
	struct sc_rpc_reply *rep;
	struct csi_token forged;
	uint8_t blk[BS];

	(void)state;
	host_read_check(a, c1_id);
	read_call(b, c2_id, 0, 1, read_flags(b), &r, &rep);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.blocks[0].kind, CSI_RK_DELEGATED);
	forged = r.blocks[0].token;
	forged.mac[0] ^= 1;
	assert_int_equal(sc_peer_fetch(&r.blocks[0].peer, b->id, b->epoch,
				       &r.blocks[0].hash, &forged, 0, BS, blk),
			 -EACCES);
	/* m replays b's token */
	assert_int_equal(sc_peer_fetch(&r.blocks[0].peer, m->id, m->epoch,
				       &r.blocks[0].hash, &r.blocks[0].token,
				       0, BS, blk), -EACCES);
	/* expired: the peer's clock is past the token's lifetime */
	skew = 31;
	sc_peer_server_set_clock(a->peer, skewed_clock, NULL);
	assert_int_equal(sc_peer_fetch(&r.blocks[0].peer, b->id, b->epoch,
				       &r.blocks[0].hash, &r.blocks[0].token,
				       0, BS, blk), -EACCES);
	skew = 0;
	assert_int_equal(sc_peer_fetch(&r.blocks[0].peer, b->id, b->epoch,
				       &r.blocks[0].hash, &r.blocks[0].token,
				       0, BS, blk), 0);
	assert_memory_equal(blk, img, BS);
	sc_rpc_reply_free(rep);
	host_free(a);
	host_free(b);
	host_free(m);
}

/* Unregistered hosts, stale epochs, unknown exports. */
static void test_registration_errors(void **state)
{
	struct host *h = host_new(0x1d, F_TRACKER, false);
	struct host ghost = *h;
	struct csi_read_res r;
	struct sc_rpc_reply *rep;

	(void)state;
	ghost.id ^= 0x5a5a;
	read_call(&ghost, c1_id, 0, 1, CSI_READ_WANT_DATA, &r, &rep);
	assert_int_equal(r.status, CSI_ERR_UNKNOWN_HOST);
	sc_rpc_reply_free(rep);
	ghost.id = h->id;
	ghost.epoch ^= 1;
	read_call(&ghost, c1_id, 0, 1, CSI_READ_WANT_DATA, &r, &rep);
	assert_int_equal(r.status, CSI_ERR_BAD_EPOCH);
	sc_rpc_reply_free(rep);
	assert_int_equal(lookup(h, "/nope", "csi/c1", NULL), CSI_ERR_NOENT);
	assert_int_equal(lookup(h, EXPORT, "csi/nope", NULL), CSI_ERR_NOENT);
	assert_int_equal(lookup(h, EXPORT, "csi", NULL), CSI_ERR_INVAL);
	host_free(h);
}

/* ---- faults ---- */

/* A peer gone before the delegated read: the server is the fallback. */
static void test_dead_peer(void **state)
{
	struct host *a = host_new(0x15, F_COOP, true);
	struct host *b = host_new(0x16, F_COOP, false);

	(void)state;
	host_read_check(a, c1_id);
	assert_int_equal(sc_peer_server_stop(a->peer), 0);
	host_read_check(b, c2_id);
	assert_int_equal(b->peer_ok, 0);
	assert_int_equal(b->forced, NBLK);
	assert_int_equal(counter(b, "read.delegated_blocks"), NBLK);
	assert_int_equal(counter(b, "read.data_blocks"), NBLK);
	host_free(a);
	host_free(b);
}

/*
 * A host that drops its cache and tells nobody: every block comes back
 * hash only, costs a FORCE_DATA round trip, and is never wrong.
 */
static void test_no_eviction_notices(void **state)
{
	struct host *h = host_new(0x20, F_TRACKER, false);

	(void)state;
	host_read_check(h, c1_id);
	host_drop_cache(h, false);
	host_read_check(h, c1_id);
	assert_int_equal(h->forced, NBLK);
	assert_int_equal(counter(h, "read.hash_only_blocks"), NBLK);
	assert_int_equal(counter(h, "read.data_blocks"), 2 * NBLK);
	/* told this time: plain data, no wasted round trip */
	host_drop_cache(h, true);
	host_read_check(h, c1_id);
	assert_int_equal(h->forced, NBLK);
	assert_int_equal(counter(h, "read.data_blocks"), 3 * NBLK);
	assert_int_equal(counter(h, "evict.notices_applied"), NBLK);
	host_free(h);
}

/*
 * A server restart between calls: the old registration gets BAD_EPOCH,
 * the host registers again in the new epoch, and reads the same bytes
 * (as data: the new tracker is empty).
 */
static void test_restart(void **state)
{
	struct host *h = host_new(0x21, F_TRACKER, false);
	struct csi_read_res r;
	struct sc_rpc_reply *rep = NULL;
	uint64_t old = h->epoch;
	struct csi_read_args a;
	int rc, tries;

	(void)state;
	host_read_check(h, c1_id);
	assert_int_equal(nh_ctl("restart"), 0);
	memset(&a, 0, sizeof(a));
	hdr_of(h, &a.hdr);
	a.file = c1_id;
	a.count = 1;
	a.flags = CSI_READ_WANT_DATA;
	/* the first call after the restart may find the old connection */
	for (tries = 0; tries < 50; tries++) {
		rc = sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep);
		if (rc == 0)
			break;
		usleep(100 * 1000);
	}
	assert_int_equal(rc, 0);
	assert_int_equal(r.status, CSI_ERR_BAD_EPOCH);
	sc_rpc_reply_free(rep);
	host_hello(h);
	assert_int_not_equal(h->epoch, old);
	host_read_check(h, c1_id);
	assert_int_equal(counter(h, "read.data_blocks"), NBLK);
	host_free(h);
}

/* seacachectl stats --server: human, JSON and Prometheus text. */
static void test_stats_tool(void **state)
{
	char server[32], *out = NULL;
	char *json[] = { (char *)nh_seacachectl(), "stats", "--server", server,
			 "--json", NULL };
	char *prom[] = { (char *)nh_seacachectl(), "stats", "--server", server,
			 "--prometheus", NULL };
	uint64_t v;

	(void)state;
	snprintf(server, sizeof(server), "127.0.0.1:%s", nh_env("CSI_PORT"));
	assert_int_equal(nh_run(json, &out), 0);
	assert_int_equal(nh_json_u64(out, "read.data_blocks", &v), 0);
	assert_int_equal(v, counter(NULL, "read.data_blocks"));
	free(out);
	out = NULL;
	assert_int_equal(nh_run(prom, &out), 0);
	assert_non_null(strstr(out, "\nseacache_csi_read_data_blocks "));
	assert_non_null(strstr(out, "seacache_csi_write_hash_blocks{host="));
	free(out);
}

static int setup(void **state)
{
	struct sc_rpc_client_opts o = { .host = "127.0.0.1", .prog = CSI_PROG };

	(void)state;
	nh_fill_seeded(img, sizeof(img), SEED);
	hasher = sc_hasher_new();
	if (!hasher || nh_suite_setup(D, &v3, NULL))
		return -1;
	if (nh_write_file(v3, D "/c1", img, sizeof(img), 1 << 20) ||
	    nh_write_file(v3, D "/c2", img, sizeof(img), 1 << 20) ||
	    nh_write_file(v3, D "/c3", img, sizeof(img), 1 << 20))
		return -1;
	c1_id = fileid(D "/c1");
	c2_id = fileid(D "/c2");
	c3_id = fileid(D "/c3");
	o.port = (uint16_t)atoi(nh_env("CSI_PORT"));
	return sc_rpc_client_open(&o, &c) ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	if (c)
		sc_rpc_client_close(c);
	sc_hasher_free(hasher);
	nh_suite_teardown(&v3, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_baseline),
		cmocka_unit_test(test_readhash),
		cmocka_unit_test(test_tracker),
		cmocka_unit_test(test_push),
		cmocka_unit_test(test_coop),
		cmocka_unit_test(test_dedup_write),
		cmocka_unit_test(test_nfs_write_seen),
		cmocka_unit_test(test_peer_tokens),
		cmocka_unit_test(test_registration_errors),
		cmocka_unit_test(test_dead_peer),
		cmocka_unit_test(test_no_eviction_notices),
		cmocka_unit_test(test_stats_tool),
		/* last: it starts a new epoch */
		cmocka_unit_test(test_restart),
	};

	return cmocka_run_group_tests_name("fsal_dedup_csi", tests, setup,
					   teardown);
}
