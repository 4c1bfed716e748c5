// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rpcgen cross-check: protocol/seacache.x is the normative definition
 * of the CSI protocol, and the hand-written codec (lib/proto/csi_codec.c,
 * lib/proto/xdr.c) must encode exactly what rpcgen's routines from it encode.
 *
 * Every golden vector and thousands of random messages per type go through
 * both encoders (byte-identical output, and equal to the golden file for a
 * vector); each side must decode the other's bytes, using all of them, and
 * re-encode them unchanged.  The two sides must agree on every protocol
 * limit: a message at the limit passes all of the above, one past it is
 * refused by both encoders and, as bytes, by both decoders.  Other invalid
 * messages (a NUL in a string, an unknown union arm) must be refused by
 * our encoder, and truncated or overlong input by both decoders.
 *
 * usage: test_rpcgen_xcheck VECTORS_DIR [RANDOM_PER_TYPE]
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "csi_random.h"
#include "csi_to_rpcgen.h"
#include "seacache/csi_vectors.h"
#include "vector_file.h"

#define RANDOM_SEED 0x5eacac4e00000000ull
/* Room for every message of test_limits and test_encode_rejects. */
#define REJECT_SCRATCH (256 * 1024)

static const char *vectors_dir;
static unsigned long random_per_type = 3000;

/* A buffer the test owns. */
struct bytes {
	uint8_t *p;
	size_t len;
};

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "test_rpcgen_xcheck: out of memory\n");
		abort();
	}
	return p;
}

static void *xzalloc(size_t n)
{
	return memset(xmalloc(n), 0, n);
}

static void bytes_free(struct bytes *b)
{
	free(b->p);
	b->p = NULL;
	b->len = 0;
}

static struct bytes read_vector(const char *name)
{
	struct bytes b;

	b.p = csi_vector_file_read(vectors_dir, name, &b.len);
	if (!b.p)
		fail_msg("no golden vector %s", name);
	return b;
}

/* Fail with where two encodings first differ. */
static void expect_same(const char *what, const char *step,
			const struct bytes *want, const struct bytes *got)
{
	size_t i = 0;

	if (got->len == want->len && !memcmp(got->p, want->p, want->len))
		return;
	while (i < got->len && i < want->len && got->p[i] == want->p[i])
		i++;
	fail_msg("%s: %s: %zu bytes where %zu expected, first difference at byte %zu",
		 what, step, got->len, want->len, i);
}

static struct bytes csi_encode_new(enum csi_msg m, const void *msg,
				   const char *what)
{
	struct bytes b;
	size_t len;
	int err;

	err = csi_encode(m, msg, NULL, 0, &b.len);
	if (err)
		fail_msg("%s: csi_encode refused it: %d", what, err);
	b.p = xzalloc(b.len);
	err = csi_encode(m, msg, b.p, b.len, &len);
	if (err || len != b.len)
		fail_msg("%s: csi_encode measured %zu bytes, wrote %zu: %d",
			 what, b.len, len, err);
	return b;
}

/* rpcgen's encoding of sc, into out of cap bytes; false if it refuses. */
static bool rpcgen_encode(enum csi_msg m, void *sc, uint8_t *out, size_t cap,
			  size_t *len)
{
	XDR xdrs;
	bool ok;

	xdrmem_create(&xdrs, (char *)out, (u_int)cap, XDR_ENCODE);
	ok = csi_rpcgen_msgs[m].xdr(&xdrs, sc);
	*len = xdr_getpos(&xdrs);
	xdr_destroy(&xdrs);
	return ok;
}

static struct bytes rpcgen_encode_new(enum csi_msg m, void *sc,
				      const char *what)
{
	struct bytes b;
	size_t len;

	b.len = xdr_sizeof(csi_rpcgen_msgs[m].xdr, sc);
	if (!b.len)
		fail_msg("%s: rpcgen cannot size it", what);
	b.p = xzalloc(b.len);
	if (!rpcgen_encode(m, sc, b.p, b.len, &len) || len != b.len)
		fail_msg("%s: rpcgen sized %zu bytes, encoded %zu", what,
			 b.len, len);
	return b;
}

/*
 * rpcgen's decoding of in: true when it succeeds and uses every byte.  sc
 * (a zeroed rpcgen struct) holds what was decoded; xdr_free it either way.
 */
static bool rpcgen_decode(enum csi_msg m, const struct bytes *in, void *sc)
{
	XDR xdrs;
	bool ok;

	xdrmem_create(&xdrs, (char *)in->p, (u_int)in->len, XDR_DECODE);
	ok = csi_rpcgen_msgs[m].xdr(&xdrs, sc) &&
	     xdr_getpos(&xdrs) == in->len;
	xdr_destroy(&xdrs);
	return ok;
}

/* Our decoder on in: the message and the arena it points into. */
struct csi_decoded {
	void *msg;
	void *arena;
	int err;
};

static struct csi_decoded csi_decode_new(enum csi_msg m,
					 const struct bytes *in)
{
	size_t arena_len = csi_decode_arena_size(m, in->len);
	struct csi_decoded d;

	d.msg = xzalloc(csi_msgs[m].size);
	/* Not zeroed: the decoder clears what it takes from the arena. */
	d.arena = xmalloc(arena_len);
	d.err = csi_decode(m, in->p, in->len, d.msg, d.arena, arena_len);
	return d;
}

static void csi_decoded_free(struct csi_decoded *d)
{
	free(d->arena);
	free(d->msg);
}

/* rpcgen decodes in, using all of it, and re-encodes exactly in. */
static void rpcgen_roundtrip(enum csi_msg m, const struct bytes *in,
			     const char *what)
{
	void *sc = xzalloc(csi_rpcgen_msgs[m].size);
	struct bytes again;

	if (!rpcgen_decode(m, in, sc))
		fail_msg("%s: rpcgen does not decode csi_encode's bytes", what);
	again = rpcgen_encode_new(m, sc, what);
	expect_same(what, "rpcgen re-encoding what it decoded", in, &again);
	bytes_free(&again);
	xdr_free(csi_rpcgen_msgs[m].xdr, sc);
	free(sc);
}

/* csi_decode decodes in and csi_encode re-encodes exactly in. */
static void csi_roundtrip(enum csi_msg m, const struct bytes *in,
			  const char *what)
{
	struct csi_decoded d = csi_decode_new(m, in);
	struct bytes again;

	if (d.err)
		fail_msg("%s: csi_decode refuses rpcgen's bytes: %d", what,
			 d.err);
	again = csi_encode_new(m, d.msg, what);
	expect_same(what, "csi_encode re-encoding what csi_decode decoded",
		    in, &again);
	bytes_free(&again);
	csi_decoded_free(&d);
}

/* Everything one valid message must pass; golden: its bytes, or NULL. */
static void xcheck(enum csi_msg m, const void *msg,
		   const struct bytes *golden, const char *what)
{
	struct csi_rpcgen_conv conv = { 0 };
	struct bytes ours, theirs;
	void *sc = xzalloc(csi_rpcgen_msgs[m].size);
	int err;

	ours = csi_encode_new(m, msg, what);
	if (golden)
		expect_same(what, "csi_encode against the golden file",
			    golden, &ours);
	err = csi_to_rpcgen(&conv, m, msg, sc);
	if (err)
		fail_msg("%s: no rpcgen struct for it: %d", what, err);
	theirs = rpcgen_encode_new(m, sc, what);
	expect_same(what, "rpcgen against csi_encode", &ours, &theirs);
	rpcgen_roundtrip(m, &ours, what);
	csi_roundtrip(m, &theirs, what);
	bytes_free(&theirs);
	bytes_free(&ours);
	csi_rpcgen_conv_release(&conv);
	free(sc);
}

/* The vector's message, built in a struct and scratch the caller frees. */
static void *build_vector(const struct csi_vector *v, uint8_t **scratch)
{
	void *msg = xzalloc(csi_msgs[v->msg].size);

	*scratch = xzalloc(CSI_VECTOR_SCRATCH);
	v->build(msg, *scratch);
	return msg;
}

static void test_golden_vectors(void **state)
{
	bool covered[CSI_MSG_COUNT] = { false };
	const struct csi_vector *v;
	struct bytes golden;
	uint8_t *scratch;
	unsigned int i;
	void *msg;

	(void)state;
	for (i = 0; i < csi_nvectors; i++) {
		v = &csi_vectors[i];
		golden = read_vector(v->name);
		msg = build_vector(v, &scratch);
		xcheck(v->msg, msg, &golden, v->name);
		covered[v->msg] = true;
		free(scratch);
		free(msg);
		bytes_free(&golden);
	}
	for (i = CSI_MSG_VOID + 1; i < CSI_MSG_COUNT; i++)
		if (!covered[i])
			fail_msg("no golden vector of %s", csi_msgs[i].name);
}

/* state: the enum csi_msg to test. */
static void test_random_msg(void **state)
{
	enum csi_msg m = (enum csi_msg)(uintptr_t)*state;
	struct csi_random r = { .pool = xzalloc(CSI_RANDOM_POOL) };
	void *msg = xzalloc(csi_msgs[m].size);
	char what[96];
	unsigned long i;

	/* One seed per type: a failure replays without the other types. */
	sc_prng_seed(&r.prng, RANDOM_SEED + m);
	for (i = 0; i < random_per_type; i++) {
		memset(msg, 0, csi_msgs[m].size);
		csi_random_msg(&r, m, msg);
		snprintf(what, sizeof(what), "random %s #%lu", csi_msgs[m].name,
			 i);
		xcheck(m, msg, NULL, what);
	}
	free(msg);
	free(r.pool);
}

/* ---- messages an encoder must refuse ---- */

/*
 * Our encoder refuses msg with -EINVAL.  rpcgen_holds: rpcgen's structs
 * can hold it, and rpcgen's encoder must refuse it too; otherwise the
 * converter must say it cannot hold it.
 */
static void expect_refused(enum csi_msg m, const void *msg, bool rpcgen_holds,
			   const char *why)
{
	struct csi_rpcgen_conv conv = { 0 };
	void *sc = xzalloc(csi_rpcgen_msgs[m].size);
	uint8_t *out = xzalloc(REJECT_SCRATCH);
	size_t len;
	int err;

	err = csi_encode(m, msg, NULL, 0, &len);
	if (err != -SC_EINVAL)
		fail_msg("%s: csi_encode measuring gives %d, not -EINVAL",
			 why, err);
	err = csi_encode(m, msg, out, REJECT_SCRATCH, &len);
	if (err != -SC_EINVAL)
		fail_msg("%s: csi_encode gives %d, not -EINVAL", why, err);
	err = csi_to_rpcgen(&conv, m, msg, sc);
	if (!rpcgen_holds) {
		if (err != -EINVAL)
			fail_msg("%s: converted for rpcgen: %d", why, err);
	} else if (err) {
		fail_msg("%s: no rpcgen struct for it: %d", why, err);
	} else if (rpcgen_encode(m, sc, out, REJECT_SCRATCH, &len)) {
		fail_msg("%s: rpcgen encodes it", why);
	}
	csi_rpcgen_conv_release(&conv);
	free(out);
	free(sc);
}

/* Both decoders refuse in: a malformed encoding of message m. */
static void expect_undecodable(enum csi_msg m, const struct bytes *in,
			       const char *what)
{
	void *sc = xzalloc(csi_rpcgen_msgs[m].size);
	struct csi_decoded d = csi_decode_new(m, in);
	bool rpcgen_ok = rpcgen_decode(m, in, sc);

	xdr_free(csi_rpcgen_msgs[m].xdr, sc);
	free(sc);
	csi_decoded_free(&d);
	if (!d.err)
		fail_msg("%s (%zu bytes): csi_decode accepts it", what,
			 in->len);
	if (rpcgen_ok)
		fail_msg("%s (%zu bytes): rpcgen decodes all of it", what,
			 in->len);
}

/*
 * ---- protocol limits: the two sides must agree on every one: both
 * encode and decode a message at the limit, both refuse one past it ----
 */

static struct csi_bytes filled(uint8_t *scratch, uint32_t n, uint8_t c)
{
	struct csi_bytes b = { scratch, n };

	memset(scratch, c, n);
	return b;
}

/* Builders of a message whose limited field has n elements or bytes. */
static void hashes_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_gethashes_res *r = msg;

	r->status = CSI_OK;
	r->blocks = (struct csi_block_hash *)scratch;	/* zeroed: holes */
	r->nblocks = n;
}

static void pushed_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_read_res *r = msg;

	r->status = CSI_OK;
	r->pushed = (struct csi_push_entry *)scratch;
	r->npushed = n;
}

static void evicted_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_evict_args *a = msg;

	a->hdr.evicted = (const struct sc_hash *)scratch;
	a->hdr.nevicted = n;
}

static void wstatus_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_write_res *r = msg;

	r->status = CSI_OK;
	r->blocks = (uint32_t *)scratch;		/* zeroed: W_OK */
	r->nblocks = n;
}

static void hosts_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_stats_res *r = msg;

	r->status = CSI_OK;
	r->hosts = (struct csi_host_stats *)scratch;	/* zeroed: empty */
	r->nhosts = n;
}

static void data_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_peer_read_res *r = msg;

	r->status = CSI_OK;
	r->data = filled(scratch, n, 'd');
}

static void path_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_lookup_args *a = msg;

	a->path = filled(scratch, n, 'p');
}

static void host_name_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_hello_args *a = msg;

	a->host_name = filled(scratch, n, 'h');
}

static void counter_name_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_stats_res *r = msg;
	struct csi_counter *c = (struct csi_counter *)scratch;

	c->name = filled(scratch + sizeof(*c), n, 'c');
	r->status = CSI_OK;
	r->counters = c;
	r->ncounters = 1;
}

static void map_files_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_getmap_args *a = msg;

	a->files = (const uint64_t *)scratch;
	a->nfiles = n;
	a->count = 1;
}

/* n entries, zeroed: SC_OK with an empty window each. */
static void map_entries_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_getmap_res *r = msg;

	r->status = CSI_OK;
	r->files = (struct csi_map_file *)scratch;
	r->nfiles = n;
}

/* A reply of one SC_OK entry, for the builders of its holes and hashes. */
static struct csi_map_file *map_entry(void *msg, uint8_t *scratch)
{
	struct csi_getmap_res *r = msg;

	map_entries_n(msg, scratch, 1);
	return r->files;
}

static void map_holes_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_map_file *f = map_entry(msg, scratch);

	f->holes = filled(scratch + sizeof(*f), n, 0xff).p;
	f->nholes_bytes = n;
}

static void map_hashes_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_map_file *f = map_entry(msg, scratch);

	f->hashes = (const struct sc_hash *)(scratch + sizeof(*f));
	f->nhashes = n;
}

/* n zeroed failures: peer 0, an all-zero hash and token. */
static void failures_n(void *msg, uint8_t *scratch, uint32_t n)
{
	struct csi_peer_report_args *a = msg;

	a->failures = (const struct csi_peer_failure *)scratch;
	a->nfailures = n;
}

/* Encoded sizes, for where a count sits. */
#define W_U32 4			/* status, enum, count */
#define W_HYPER 8
#define W_ATTR (3 * W_HYPER)
#define W_REQHDR_EMPTY (2 * W_HYPER + W_U32)

struct limit_case {
	const char *what;
	enum csi_msg m;
	uint32_t limit;
	void (*build)(void *msg, uint8_t *scratch, uint32_t n);
	/*
	 * When the limited field ends the message, the encoding at the
	 * limit becomes one past it by raising the count at count_off and
	 * appending one_more bytes: first_byte, then zeros (a hole, an empty
	 * entry, padding).  0: the field is not last.
	 */
	uint32_t count_off;
	uint32_t one_more;
	uint8_t first_byte;
};

static const struct limit_case limit_cases[] = {
	{ "gethashes_res blocks", CSI_MSG_GETHASHES_RES, CSI_MAX_BLOCKS,
	  hashes_n, W_U32 + W_ATTR, W_U32, 0 },
	{ "read_res pushed", CSI_MSG_READ_RES, CSI_MAX_PUSH, pushed_n,
	  W_U32 + W_ATTR + W_U32, 3 * W_HYPER + SC_HASH_SIZE, 0 },
	{ "evict_args evicted", CSI_MSG_EVICT_ARGS, CSI_MAX_EVICT, evicted_n,
	  2 * W_HYPER, SC_HASH_SIZE, 0 },
	{ "write_res blocks", CSI_MSG_WRITE_RES, CSI_MAX_BLOCKS, wstatus_n,
	  W_U32 + W_HYPER + W_ATTR + W_U32, W_U32, 0 },
	{ "stats_res hosts", CSI_MSG_STATS_RES, CSI_MAX_HOSTS, hosts_n,
	  W_U32 + W_HYPER + W_U32, W_HYPER + 2 * W_U32, 0 },
	{ "peer_read_res data", CSI_MSG_PEER_READ_RES, CSI_MAX_BLOCK_SIZE,
	  data_n, W_U32, 4, 'd' },
	{ "lookup_args path", CSI_MSG_LOOKUP_ARGS, CSI_MAX_PATH, path_n,
	  W_REQHDR_EMPTY + W_U32, 4, 'p' },
	{ "hello_args host_name", CSI_MSG_HELLO_ARGS, CSI_MAX_NAME,
	  host_name_n, 0, 0, 0 },
	{ "stats_res counter name", CSI_MSG_STATS_RES, CSI_MAX_COUNTER_NAME,
	  counter_name_n, 0, 0, 0 },
	{ "getmap_args files", CSI_MSG_GETMAP_ARGS, CSI_MAX_MAP_FILES,
	  map_files_n, 0, 0, 0 },
	{ "getmap_res files", CSI_MSG_GETMAP_RES, CSI_MAX_MAP_FILES,
	  map_entries_n, W_U32, W_U32 + W_ATTR + 2 * W_U32, 0 },
	{ "getmap_res holes", CSI_MSG_GETMAP_RES, CSI_MAX_MAP_HOLES,
	  map_holes_n, 0, 0, 0 },
	{ "getmap_res hashes", CSI_MSG_GETMAP_RES, CSI_MAX_MAP_BLOCKS,
	  map_hashes_n, 3 * W_U32 + W_ATTR + W_U32, SC_HASH_SIZE, 0 },
	{ "peer_report_args failures", CSI_MSG_PEER_REPORT_ARGS,
	  CSI_MAX_PEER_REPORTS, failures_n, W_REQHDR_EMPTY,
	  2 * W_HYPER + SC_HASH_SIZE + SC_MAC_SIZE, 0 },
};

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* at_limit, the encoding at the limit, grown to one past it. */
static void expect_one_more_undecodable(const struct limit_case *t,
					const struct bytes *at_limit)
{
	struct bytes over = { xzalloc(at_limit->len + t->one_more),
			      at_limit->len + t->one_more };
	char what[96];

	if (get_be32(at_limit->p + t->count_off) != t->limit)
		fail_msg("%s: no count %u at byte %u", t->what, t->limit,
			 t->count_off);
	memcpy(over.p, at_limit->p, at_limit->len);
	put_be32(over.p + t->count_off, t->limit + 1);
	over.p[at_limit->len] = t->first_byte;
	snprintf(what, sizeof(what), "%s past its limit", t->what);
	expect_undecodable(t->m, &over, what);
	bytes_free(&over);
}

static void test_limits(void **state)
{
	uint8_t *scratch = xzalloc(REJECT_SCRATCH);
	const struct limit_case *t;
	struct bytes at_limit;
	char what[96];
	unsigned int i;
	void *msg;

	(void)state;
	for (i = 0; i < sizeof(limit_cases) / sizeof(limit_cases[0]); i++) {
		t = &limit_cases[i];
		memset(scratch, 0, REJECT_SCRATCH);
		msg = xzalloc(csi_msgs[t->m].size);
		t->build(msg, scratch, t->limit);
		snprintf(what, sizeof(what), "%s at its limit", t->what);
		xcheck(t->m, msg, NULL, what);
		if (t->one_more) {
			at_limit = csi_encode_new(t->m, msg, what);
			expect_one_more_undecodable(t, &at_limit);
			bytes_free(&at_limit);
		}
		memset(msg, 0, csi_msgs[t->m].size);
		memset(scratch, 0, REJECT_SCRATCH);
		t->build(msg, scratch, t->limit + 1);
		snprintf(what, sizeof(what), "%s past its limit", t->what);
		expect_refused(t->m, msg, true, what);
		free(msg);
	}
	free(scratch);
}

/* ---- other messages an encoder must refuse ---- */

static void name_with_nul(void *msg, uint8_t *scratch)
{
	static const char name[] = "vdi\0host";
	struct csi_hello_args *a = msg;

	(void)scratch;
	a->host_name.p = (const uint8_t *)name;
	a->host_name.len = sizeof(name) - 1;
}

static void unknown_read_kind(void *msg, uint8_t *scratch)
{
	struct csi_read_res *r = msg;

	r->status = CSI_OK;
	r->blocks = (struct csi_read_block *)scratch;
	r->blocks[0].kind = CSI_RK_DELEGATED + 1;
	r->nblocks = 1;
}

static void write_kind_zero(void *msg, uint8_t *scratch)
{
	struct csi_write_args *a = msg;

	a->blocks = (struct csi_write_block *)scratch;	/* zeroed: kind 0 */
	a->nblocks = 1;
}

struct rejected_msg {
	const char *why;
	enum csi_msg m;
	void (*build)(void *msg, uint8_t *scratch);
	bool rpcgen_holds;		/* see expect_refused */
};

static const struct rejected_msg rejected_msgs[] = {
	{ "a string with a NUL byte", CSI_MSG_HELLO_ARGS, name_with_nul,
	  false },
	{ "read block kind past DELEGATED", CSI_MSG_READ_RES,
	  unknown_read_kind, true },
	{ "write block kind 0", CSI_MSG_WRITE_ARGS, write_kind_zero, true },
};

static void test_encode_rejects(void **state)
{
	uint8_t *scratch = xzalloc(REJECT_SCRATCH);
	const struct rejected_msg *t;
	unsigned int i;
	void *msg;

	(void)state;
	for (i = 0; i < sizeof(rejected_msgs) / sizeof(rejected_msgs[0]); i++) {
		t = &rejected_msgs[i];
		memset(scratch, 0, REJECT_SCRATCH);
		msg = xzalloc(csi_msgs[t->m].size);
		t->build(msg, scratch);
		expect_refused(t->m, msg, t->rpcgen_holds, t->why);
		free(msg);
	}
	free(scratch);
}

/*
 * Every proper prefix of every vector, and every vector with four zero
 * bytes appended (a valid encoding of nothing more).
 */
static void test_truncated_and_overlong(void **state)
{
	const struct csi_vector *v;
	struct bytes golden, cut, longer;
	unsigned int i;
	char what[96];

	(void)state;
	for (i = 0; i < csi_nvectors; i++) {
		v = &csi_vectors[i];
		golden = read_vector(v->name);
		snprintf(what, sizeof(what), "%s cut short", v->name);
		for (cut.p = golden.p, cut.len = 0; cut.len < golden.len;
		     cut.len++)
			expect_undecodable(v->msg, &cut, what);
		longer.len = golden.len + 4;
		longer.p = xzalloc(longer.len);
		memcpy(longer.p, golden.p, golden.len);
		snprintf(what, sizeof(what), "%s with bytes after it",
			 v->name);
		expect_undecodable(v->msg, &longer, what);
		bytes_free(&longer);
		bytes_free(&golden);
	}
}

int main(int argc, char **argv)
{
	/* The fixed tests, then one random test per message type. */
	enum { FIXED_TESTS = 4 };
	struct CMUnitTest tests[FIXED_TESTS + CSI_MSG_COUNT - 1] = {
		cmocka_unit_test(test_golden_vectors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_encode_rejects),
		cmocka_unit_test(test_truncated_and_overlong),
	};
	static char names[CSI_MSG_COUNT][48];
	unsigned int m, n = FIXED_TESTS;
	char *end;

	if (argc < 2 || argc > 3) {
		fprintf(stderr,
			"usage: %s VECTORS_DIR [RANDOM_PER_TYPE]\n", argv[0]);
		return 2;
	}
	vectors_dir = argv[1];
	if (argc == 3) {
		random_per_type = strtoul(argv[2], &end, 10);
		if (*end || end == argv[2]) {
			fprintf(stderr, "%s: not a count: %s\n", argv[0],
				argv[2]);
			return 2;
		}
	}
	for (m = CSI_MSG_VOID + 1; m < CSI_MSG_COUNT; m++, n++) {
		snprintf(names[m], sizeof(names[m]), "test_random_%s",
			 csi_msgs[m].name);
		tests[n].name = names[m];
		tests[n].test_func = test_random_msg;
		tests[n].initial_state = (void *)(uintptr_t)m;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
