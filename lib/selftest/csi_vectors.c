// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Golden vectors of the CSI protocol (see seacache/csi_vectors.h).
 * Changing a value here changes protocol/vectors/: regenerate them with
 * `csi-vectors --write protocol/vectors` only for a deliberate change of
 * the test set, never to make a codec change pass.
 */
#include "seacache/csi_vectors.h"

/* Deterministic filler: byte i of a pattern is (seed + 7 * i) mod 256. */
static void pattern(uint8_t *p, uint32_t n, uint8_t seed)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + 7 * i);
}

static struct sc_hash hash_of(uint8_t seed)
{
	struct sc_hash h;

	pattern(h.b, SC_HASH_LEN, seed);
	return h;
}

static struct csi_bytes str(const char *s)
{
	struct csi_bytes b = { (const uint8_t *)s, (uint32_t)sc_strlen(s) };

	return b;
}

static struct csi_bytes data_at(uint8_t *scratch, uint32_t off, uint32_t n,
				uint8_t seed)
{
	struct csi_bytes b = { scratch + off, n };

	pattern(scratch + off, n, seed);
	return b;
}

/* A header evicting n patterned hashes, kept in scratch. */
static struct csi_reqhdr reqhdr(uint8_t *scratch, uint32_t n)
{
	struct csi_reqhdr h = { .host = 0x0102030405060708ull,
				.epoch = 0x1122334455667788ull };
	struct sc_hash *ev = (struct sc_hash *)scratch;
	uint32_t i;

	for (i = 0; i < n; i++)
		ev[i] = hash_of((uint8_t)(0xe0 + i));
	h.evicted = n ? ev : NULL;
	h.nevicted = n;
	return h;
}

static const struct csi_fileattr attr = {
	.file = 0x00000000deadbeefull, .size = 20480 + 100,
	.change = 0x8000000000000001ull,
};

/*
 * The arrays a message points to.  They live in the last page of scratch,
 * past every block of data, and never in a static: the kernel self-test may
 * build vectors on several CPUs at once.
 */
#define ARRAYS_OFF (3 * 4096)

union vector_arrays {
	struct csi_block_hash gethashes_res[3];
	struct {
		struct csi_read_block blocks[5];
		struct csi_push_entry pushed[2];
	} read_res;
	struct csi_write_block write_args[3];
	uint32_t write_res[3];
	struct {
		struct csi_counter server[2], host[1];
		struct csi_host_stats hosts[1];
	} stats_res;
	uint64_t getmap_args[2];
	struct {
		struct csi_map_file files[2];
		uint8_t holes[2];
		struct sc_hash hashes[8];
	} getmap_res;
	struct csi_peer_failure peer_report_args[2];
};

_Static_assert(ARRAYS_OFF + sizeof(union vector_arrays) <= CSI_VECTOR_SCRATCH,
	       "a vector's arrays must fit in its scratch");

/* The arrays in scratch, zeroed. */
static union vector_arrays *arrays(uint8_t *scratch)
{
	union vector_arrays *a = (union vector_arrays *)(scratch + ARRAYS_OFF);

	sc_memset(a, 0, sizeof(*a));
	return a;
}

static void peer_inet(struct csi_peer_addr *a)
{
	static const uint8_t lo[4] = { 127, 0, 0, 1 };

	a->family = CSI_AF_INET;
	sc_memcpy(a->addr, lo, sizeof(lo));
	a->port = 20491;
}

static void v_hello_args(void *msg, uint8_t *scratch)
{
	struct csi_hello_args *a = msg;

	(void)scratch;
	pattern(a->host_uuid, CSI_HOST_UUID_SIZE, 0x40);
	a->host_name = str("vdi-host-01");	/* 11 bytes: one of padding */
	peer_inet(&a->peer);
	a->cache_bytes = 1ull << 30;
	/* written out: a new feature bit must not move the golden bytes */
	a->features = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER | CSI_FEAT_PUSH |
		      CSI_FEAT_COOP | CSI_FEAT_DEDUP_WRITE;
}

static void v_hello_res_ok(void *msg, uint8_t *scratch)
{
	struct csi_hello_res *r = msg;

	(void)scratch;
	r->status = CSI_OK;
	r->host = 7;
	r->epoch = 0x1122334455667788ull;
	r->block_size = 4096;
	r->max_blocks = 64;
	r->max_push = 256;
	r->max_evict = 1024;
	r->features = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER | CSI_FEAT_PUSH;
	r->lease_seconds = 90;
	pattern(r->peer_secret, CSI_SECRET_SIZE, 0x99);
}

static void v_hello_res_busy(void *msg, uint8_t *scratch)
{
	struct csi_hello_res *r = msg;

	(void)scratch;
	r->status = CSI_ERR_BUSY;
}

static void v_lookup_args(void *msg, uint8_t *scratch)
{
	struct csi_lookup_args *a = msg;

	a->hdr = reqhdr(scratch, 2);
	a->export_path = str("/vdi");
	a->path = str("images/clone-0001.img");
}

static void v_lookup_res_ok(void *msg, uint8_t *scratch)
{
	struct csi_lookup_res *r = msg;

	(void)scratch;
	r->status = CSI_OK;
	r->attr = attr;
}

static void v_lookup_res_noent(void *msg, uint8_t *scratch)
{
	struct csi_lookup_res *r = msg;

	(void)scratch;
	r->status = CSI_ERR_NOENT;
}

static void v_gethashes_args(void *msg, uint8_t *scratch)
{
	struct csi_gethashes_args *a = msg;

	a->hdr = reqhdr(scratch, 0);
	a->file = attr.file;
	a->lbn = 2;
	a->count = 3;
}

static void v_gethashes_res(void *msg, uint8_t *scratch)
{
	union vector_arrays *a = arrays(scratch);
	struct csi_block_hash *blocks = a->gethashes_res;
	struct csi_gethashes_res *r = msg;

	blocks[0].kind = CSI_HK_HASH;
	blocks[0].hash = hash_of(0x10);
	blocks[1].kind = CSI_HK_HOLE;
	blocks[2].kind = CSI_HK_HASH;
	blocks[2].hash = hash_of(0x30);
	r->status = CSI_OK;
	r->attr = attr;
	r->blocks = blocks;
	r->nblocks = SC_ARRAY_SIZE(a->gethashes_res);
}

static void v_read_args(void *msg, uint8_t *scratch)
{
	struct csi_read_args *a = msg;

	a->hdr = reqhdr(scratch, 1);
	a->file = attr.file;
	a->lbn = 0;
	a->count = 5;
	a->flags = CSI_READ_WANT_DATA | CSI_READ_ACCEPT_DELEG |
		   CSI_READ_ACCEPT_PUSH;
}

/* Every arm: a full block, a short tail block (padded), hash, hole, peer. */
static void v_read_res(void *msg, uint8_t *scratch)
{
	union vector_arrays *a = arrays(scratch);
	struct csi_read_block *blocks = a->read_res.blocks;
	struct csi_push_entry *pushed = a->read_res.pushed;
	struct csi_read_res *r = msg;

	blocks[0].kind = CSI_RK_DATA;
	blocks[0].hash = hash_of(0x01);
	blocks[0].data = data_at(scratch, 0, 4096, 0x51);
	blocks[1].kind = CSI_RK_HASH;
	blocks[1].hash = hash_of(0x02);
	blocks[2].kind = CSI_RK_HOLE;
	blocks[3].kind = CSI_RK_DELEGATED;
	blocks[3].hash = hash_of(0x03);
	blocks[3].peer_host = 9;
	peer_inet(&blocks[3].peer);
	blocks[3].token.expiry = 1795000000;
	pattern(blocks[3].token.mac, CSI_MAC_SIZE, 0x77);
	blocks[4].kind = CSI_RK_DATA;
	blocks[4].hash = hash_of(0x04);
	blocks[4].data = data_at(scratch, 4096, 101, 0x52);
	pushed[0].file = attr.file + 1;
	pushed[0].lbn = 0;
	pushed[0].change = 0x8000000000000011ull;
	pushed[0].hash = hash_of(0x01);
	pushed[1].file = attr.file + 2;
	pushed[1].lbn = 17;
	pushed[1].change = 3;
	pushed[1].hash = hash_of(0x02);
	r->status = CSI_OK;
	r->attr = attr;
	r->blocks = blocks;
	r->nblocks = SC_ARRAY_SIZE(a->read_res.blocks);
	r->pushed = pushed;
	r->npushed = SC_ARRAY_SIZE(a->read_res.pushed);
}

static void v_read_res_bad_epoch(void *msg, uint8_t *scratch)
{
	struct csi_read_res *r = msg;

	(void)scratch;
	r->status = CSI_ERR_BAD_EPOCH;
}

static void v_write_args(void *msg, uint8_t *scratch)
{
	union vector_arrays *arr = arrays(scratch);
	struct csi_write_block *blocks = arr->write_args;
	struct csi_write_args *a = msg;

	a->hdr = reqhdr(scratch, 1);
	blocks[0].kind = CSI_WK_HASH;
	blocks[0].hash = hash_of(0x05);
	blocks[1].kind = CSI_WK_DATA;
	blocks[1].hash = hash_of(0x06);
	blocks[1].data = data_at(scratch, 4096, 4096, 0x53);
	blocks[2].kind = CSI_WK_DATA;
	blocks[2].hash = hash_of(0x07);
	blocks[2].data = data_at(scratch, 8192, 2, 0x54);
	a->file = attr.file;
	a->lbn = 4;
	a->end = 6 * 4096 + 2;
	a->stable = CSI_FILE_SYNC;
	a->blocks = blocks;
	a->nblocks = SC_ARRAY_SIZE(arr->write_args);
}

static void v_write_res(void *msg, uint8_t *scratch)
{
	union vector_arrays *a = arrays(scratch);
	uint32_t *st = a->write_res;
	struct csi_write_res *r = msg;

	st[0] = CSI_W_NEED_DATA;
	st[1] = CSI_W_OK;
	st[2] = CSI_W_OK;
	r->status = CSI_OK;
	r->pre_change = attr.change - 1;
	r->attr = attr;
	r->committed = CSI_FILE_SYNC;
	r->blocks = st;
	r->nblocks = SC_ARRAY_SIZE(a->write_res);
}

static void v_commit_args(void *msg, uint8_t *scratch)
{
	struct csi_commit_args *a = msg;

	a->hdr = reqhdr(scratch, 0);
	a->file = attr.file;
}

static void v_commit_res(void *msg, uint8_t *scratch)
{
	struct csi_commit_res *r = msg;

	(void)scratch;
	r->status = CSI_OK;
	r->attr = attr;
}

static void v_evict_args(void *msg, uint8_t *scratch)
{
	struct csi_evict_args *a = msg;

	a->hdr = reqhdr(scratch, 3);
}

static void v_evict_res(void *msg, uint8_t *scratch)
{
	struct csi_evict_res *r = msg;

	(void)scratch;
	r->status = CSI_ERR_UNKNOWN_HOST;
}

static void v_stats_args(void *msg, uint8_t *scratch)
{
	struct csi_stats_args *a = msg;

	(void)scratch;
	a->per_host = true;
}

static void v_stats_res(void *msg, uint8_t *scratch)
{
	union vector_arrays *a = arrays(scratch);
	struct csi_counter *server = a->stats_res.server;
	struct csi_counter *host = a->stats_res.host;
	struct csi_host_stats *hosts = a->stats_res.hosts;
	struct csi_stats_res *r = msg;

	server[0].name = str("read.calls");
	server[0].value = 123456;
	server[1].name = str("tracker.entries");
	server[1].value = 1ull << 40;
	host[0].name = str("read.hash_only_blocks");
	host[0].value = 42;
	hosts[0].host = 7;
	hosts[0].host_name = str("vdi-host-01");
	hosts[0].counters = host;
	hosts[0].ncounters = SC_ARRAY_SIZE(a->stats_res.host);
	r->status = CSI_OK;
	r->epoch = 0x1122334455667788ull;
	r->counters = server;
	r->ncounters = SC_ARRAY_SIZE(a->stats_res.server);
	r->hosts = hosts;
	r->nhosts = SC_ARRAY_SIZE(a->stats_res.hosts);
}

/*
 * GET_MAP of blocks 2..17 of a file of 12 blocks and 5 bytes (13 blocks):
 * a window of 11, cut at end of file, with holes at 3, 6 and 11.  Two
 * bytes of hole map (padded), the bits past the window clear.
 */
#define MAP_LBN 2
#define MAP_COUNT 16

static const struct csi_fileattr map_attr = {
	.file = 0x00000000deadbeefull, .size = 12 * 4096 + 5,
	.change = 0x8000000000000002ull,
};

static void v_getmap_args(void *msg, uint8_t *scratch)
{
	union vector_arrays *arr = arrays(scratch);
	uint64_t *files = arr->getmap_args;
	struct csi_getmap_args *a = msg;

	a->hdr = reqhdr(scratch, 1);
	files[0] = map_attr.file;
	files[1] = map_attr.file + 1;
	a->files = files;
	a->nfiles = SC_ARRAY_SIZE(arr->getmap_args);
	a->lbn = MAP_LBN;
	a->count = MAP_COUNT;
}

/* The first file's window as above, the second file gone. */
static void v_getmap_res(void *msg, uint8_t *scratch)
{
	union vector_arrays *a = arrays(scratch);
	struct csi_map_file *f = a->getmap_res.files;
	uint8_t *holes = a->getmap_res.holes;
	struct sc_hash *hashes = a->getmap_res.hashes;
	struct csi_getmap_res *r = msg;
	uint32_t i;

	holes[0] = 1u << (3 - MAP_LBN) | 1u << (6 - MAP_LBN);
	holes[1] = 1u << (11 - MAP_LBN - 8);
	for (i = 0; i < SC_ARRAY_SIZE(a->getmap_res.hashes); i++)
		hashes[i] = hash_of((uint8_t)(0x60 + 0x10 * i));
	f[0].status = CSI_OK;
	f[0].attr = map_attr;
	f[0].holes = holes;
	f[0].nholes_bytes = SC_ARRAY_SIZE(a->getmap_res.holes);
	f[0].hashes = hashes;
	f[0].nhashes = SC_ARRAY_SIZE(a->getmap_res.hashes);
	f[1].status = CSI_ERR_STALE;
	r->status = CSI_OK;
	r->files = f;
	r->nfiles = SC_ARRAY_SIZE(a->getmap_res.files);
}

/* Host 7 reports two delegations to host 9 that did not deliver. */
static void v_peer_report_args(void *msg, uint8_t *scratch)
{
	struct csi_peer_failure *f = arrays(scratch)->peer_report_args;
	struct csi_peer_report_args *a = msg;
	unsigned int i;

	a->hdr = reqhdr(scratch, 1);
	for (i = 0; i < 2; i++) {
		f[i].peer_host = 9;
		f[i].hash = hash_of((uint8_t)(0x21 + i));
		f[i].token.expiry = 1795000000 + i;
		pattern(f[i].token.mac, CSI_MAC_SIZE, (uint8_t)(0x91 + i));
	}
	a->failures = f;
	a->nfailures = 2;
}

static void v_peer_read_args(void *msg, uint8_t *scratch)
{
	struct csi_peer_read_args *a = msg;

	(void)scratch;
	a->requester = 7;
	a->epoch = 0x1122334455667788ull;
	a->hash = hash_of(0x03);
	a->token.expiry = 1795000000;
	pattern(a->token.mac, CSI_MAC_SIZE, 0x77);
}

static void v_peer_read_res_ok(void *msg, uint8_t *scratch)
{
	struct csi_peer_read_res *r = msg;

	r->status = CSI_OK;
	r->data = data_at(scratch, 0, 4096, 0x55);
}

static void v_peer_read_res_bad_token(void *msg, uint8_t *scratch)
{
	struct csi_peer_read_res *r = msg;

	(void)scratch;
	r->status = CSI_ERR_BAD_TOKEN;
}

#define VEC(name, msg) { #name, CSI_MSG_##msg, v_##name }

const struct csi_vector csi_vectors[] = {
	VEC(hello_args, HELLO_ARGS),
	VEC(hello_res_ok, HELLO_RES),
	VEC(hello_res_busy, HELLO_RES),
	VEC(lookup_args, LOOKUP_ARGS),
	VEC(lookup_res_ok, LOOKUP_RES),
	VEC(lookup_res_noent, LOOKUP_RES),
	VEC(gethashes_args, GETHASHES_ARGS),
	VEC(gethashes_res, GETHASHES_RES),
	VEC(read_args, READ_ARGS),
	VEC(read_res, READ_RES),
	VEC(read_res_bad_epoch, READ_RES),
	VEC(write_args, WRITE_ARGS),
	VEC(write_res, WRITE_RES),
	VEC(commit_args, COMMIT_ARGS),
	VEC(commit_res, COMMIT_RES),
	VEC(evict_args, EVICT_ARGS),
	VEC(evict_res, EVICT_RES),
	VEC(stats_args, STATS_ARGS),
	VEC(stats_res, STATS_RES),
	VEC(getmap_args, GETMAP_ARGS),
	VEC(getmap_res, GETMAP_RES),
	VEC(peer_report_args, PEER_REPORT_ARGS),
	VEC(peer_read_args, PEER_READ_ARGS),
	VEC(peer_read_res_ok, PEER_READ_RES),
	VEC(peer_read_res_bad_token, PEER_READ_RES),
};

const unsigned int csi_nvectors = SC_ARRAY_SIZE(csi_vectors);

/* Room for any vector's message struct. */
union csi_vector_msg {
	struct csi_hello_args hello_args;
	struct csi_hello_res hello_res;
	struct csi_read_res read_res;
	struct csi_write_args write_args;
	struct csi_stats_res stats_res;
	struct csi_peer_read_args peer_read_args;
	uint64_t align;
	uint8_t any[256];
};

/* A vector's message and the scratch it points into. */
struct vector_enc {
	union csi_vector_msg msg;
	uint8_t scratch[CSI_VECTOR_SCRATCH];
};

uint8_t *csi_vector_encode(const struct csi_vector *v, size_t *len)
{
	struct vector_enc *ve = sc_zalloc(sizeof(*ve));
	uint8_t *out = NULL;
	size_t n;

	if (!ve || csi_msgs[v->msg].size > sizeof(ve->msg))
		goto done;
	v->build(&ve->msg, ve->scratch);
	if (csi_encode(v->msg, &ve->msg, NULL, 0, &n))
		goto done;
	out = sc_zalloc(n ? n : 1);
	if (out && csi_encode(v->msg, &ve->msg, out, n, len)) {
		sc_free(out);
		out = NULL;
	}
done:
	sc_free(ve);
	return out;
}

int csi_vector_check(const struct csi_vector *v, const void *bytes,
		     size_t len)
{
	size_t elen, alen = csi_decode_arena_size(v->msg, len), rlen;
	union csi_vector_msg *dec = sc_zalloc(sizeof(*dec));
	uint8_t *arena = sc_zalloc(alen ? alen : 1);
	uint8_t *exp = csi_vector_encode(v, &elen);
	uint8_t *re = sc_zalloc(len ? len : 1);
	int err = -SC_ENOMEM;

	if (!dec || !arena || !exp || !re)
		goto out;
	err = -SC_EINVAL;
	if (elen != len || sc_memcmp(exp, bytes, len)) {
		sc_log_err("vector %s: encoding differs from the golden bytes (%zu vs %zu bytes)",
			   v->name, elen, len);
		goto out;
	}
	err = csi_decode(v->msg, bytes, len, dec, arena, alen);
	if (err) {
		sc_log_err("vector %s: decode failed: %d", v->name, err);
		goto out;
	}
	err = csi_encode(v->msg, dec, re, len, &rlen);
	if (!err && (rlen != len || sc_memcmp(re, bytes, len)))
		err = -SC_EINVAL;
	if (err)
		sc_log_err("vector %s: decoded message does not re-encode to its bytes",
			   v->name);
out:
	sc_free(re);
	sc_free(exp);
	sc_free(arena);
	sc_free(dec);
	return err;
}
