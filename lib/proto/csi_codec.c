// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The CSI protocol codec: one function per XDR type of
 * protocol/seacache.x, in the type's order, serving both directions.
 * The rpcgen cross-check (tests/protocol) holds it to the .x file.
 */
#include "seacache/csi_codec.h"

/* Fewest wire bytes of one array element, for the count check. */
#define HASH_WIRE SC_HASH_LEN
#define BLOCK_HASH_MIN_WIRE 4			/* a hole */
#define READ_BLOCK_MIN_WIRE 4			/* a hole */
#define PUSH_WIRE (8 + 8 + 8 + SC_HASH_LEN)
#define WRITE_BLOCK_MIN_WIRE (4 + SC_HASH_LEN)	/* hash only */
#define COUNTER_MIN_WIRE (4 + 8)		/* empty name */
#define HOST_STATS_MIN_WIRE (8 + 4 + 4)
#define FILEID_WIRE 8
#define MAP_FILE_MIN_WIRE 4			/* an error status */
#define PEER_FAILURE_WIRE (8 + SC_HASH_LEN + 8 + CSI_MAC_SIZE)

static void x_hash(struct sc_xdr *x, struct sc_hash *h)
{
	sc_xdr_fixed(x, h->b, SC_HASH_LEN);
}

static void x_bytes(struct sc_xdr *x, struct csi_bytes *b, uint32_t max)
{
	sc_xdr_var(x, &b->p, &b->len, max);
}

static void x_string(struct sc_xdr *x, struct csi_bytes *b, uint32_t max)
{
	sc_xdr_string(x, &b->p, &b->len, max);
}

static void x_status(struct sc_xdr *x, uint32_t *status)
{
	sc_xdr_enum(x, status, CSI_STATUS_MAX);
}

/* A result's status; true when the CSI_OK arm follows. */
static bool x_res_ok(struct sc_xdr *x, uint32_t *status)
{
	x_status(x, status);
	return !x->err && *status == CSI_OK;
}

static void x_peer_addr(struct sc_xdr *x, struct csi_peer_addr *a)
{
	sc_xdr_enum(x, &a->family, CSI_AF_INET6);
	sc_xdr_fixed(x, a->addr, CSI_ADDR_SIZE);
	sc_xdr_u32(x, &a->port);
}

static void x_token(struct sc_xdr *x, struct csi_token *t)
{
	sc_xdr_u64(x, &t->expiry);
	sc_xdr_fixed(x, t->mac, CSI_MAC_SIZE);
}

static void x_reqhdr(struct sc_xdr *x, struct csi_reqhdr *h)
{
	sc_xdr_u64(x, &h->host);
	sc_xdr_u64(x, &h->epoch);
	sc_xdr_fixed_array(x, (const void **)&h->evicted, &h->nevicted,
			   CSI_MAX_EVICT, HASH_WIRE);
}

static void x_fileattr(struct sc_xdr *x, struct csi_fileattr *a)
{
	sc_xdr_u64(x, &a->file);
	sc_xdr_u64(x, &a->size);
	sc_xdr_u64(x, &a->change);
}

static void x_data_block(struct sc_xdr *x, struct sc_hash *hash,
			 struct csi_bytes *data)
{
	x_hash(x, hash);
	x_bytes(x, data, CSI_MAX_BLOCK_SIZE);
}

static void x_hello_args(struct sc_xdr *x, void *msg)
{
	struct csi_hello_args *a = msg;

	sc_xdr_fixed(x, a->host_uuid, CSI_HOST_UUID_SIZE);
	x_string(x, &a->host_name, CSI_MAX_NAME);
	x_peer_addr(x, &a->peer);
	sc_xdr_u64(x, &a->cache_bytes);
	sc_xdr_u32(x, &a->features);
}

static void x_hello_res(struct sc_xdr *x, void *msg)
{
	struct csi_hello_res *r = msg;

	if (!x_res_ok(x, &r->status))
		return;
	sc_xdr_u64(x, &r->host);
	sc_xdr_u64(x, &r->epoch);
	sc_xdr_u32(x, &r->block_size);
	sc_xdr_u32(x, &r->max_blocks);
	sc_xdr_u32(x, &r->max_push);
	sc_xdr_u32(x, &r->max_evict);
	sc_xdr_u32(x, &r->features);
	sc_xdr_u32(x, &r->lease_seconds);
	sc_xdr_fixed(x, r->peer_secret, CSI_SECRET_SIZE);
}

static void x_lookup_args(struct sc_xdr *x, void *msg)
{
	struct csi_lookup_args *a = msg;

	x_reqhdr(x, &a->hdr);
	x_string(x, &a->export_path, CSI_MAX_PATH);
	x_string(x, &a->path, CSI_MAX_PATH);
}

static void x_lookup_res(struct sc_xdr *x, void *msg)
{
	struct csi_lookup_res *r = msg;

	if (x_res_ok(x, &r->status))
		x_fileattr(x, &r->attr);
}

static void x_gethashes_args(struct sc_xdr *x, void *msg)
{
	struct csi_gethashes_args *a = msg;

	x_reqhdr(x, &a->hdr);
	sc_xdr_u64(x, &a->file);
	sc_xdr_u64(x, &a->lbn);
	sc_xdr_u32(x, &a->count);
}

static void x_block_hash(struct sc_xdr *x, void *elem)
{
	struct csi_block_hash *b = elem;

	sc_xdr_enum(x, &b->kind, CSI_HK_HASH);
	if (!x->err && b->kind == CSI_HK_HASH)
		x_hash(x, &b->hash);
}

static void x_gethashes_res(struct sc_xdr *x, void *msg)
{
	struct csi_gethashes_res *r = msg;

	if (!x_res_ok(x, &r->status))
		return;
	x_fileattr(x, &r->attr);
	sc_xdr_array(x, (void **)&r->blocks, &r->nblocks, CSI_MAX_BLOCKS,
		     BLOCK_HASH_MIN_WIRE, sizeof(*r->blocks), x_block_hash);
}

static void x_read_args(struct sc_xdr *x, void *msg)
{
	struct csi_read_args *a = msg;

	x_reqhdr(x, &a->hdr);
	sc_xdr_u64(x, &a->file);
	sc_xdr_u64(x, &a->lbn);
	sc_xdr_u32(x, &a->count);
	sc_xdr_u32(x, &a->flags);
}

static void x_read_block(struct sc_xdr *x, void *elem)
{
	struct csi_read_block *b = elem;

	sc_xdr_enum(x, &b->kind, CSI_RK_DELEGATED);
	if (x->err)
		return;
	switch (b->kind) {
	case CSI_RK_DATA:
		x_data_block(x, &b->hash, &b->data);
		break;
	case CSI_RK_HASH:
		x_hash(x, &b->hash);
		break;
	case CSI_RK_DELEGATED:
		x_hash(x, &b->hash);
		sc_xdr_u64(x, &b->peer_host);
		x_peer_addr(x, &b->peer);
		x_token(x, &b->token);
		break;
	default: /* CSI_RK_HOLE */
		break;
	}
}

static void x_push_entry(struct sc_xdr *x, void *elem)
{
	struct csi_push_entry *p = elem;

	sc_xdr_u64(x, &p->file);
	sc_xdr_u64(x, &p->lbn);
	sc_xdr_u64(x, &p->change);
	x_hash(x, &p->hash);
}

static void x_read_res(struct sc_xdr *x, void *msg)
{
	struct csi_read_res *r = msg;

	if (!x_res_ok(x, &r->status))
		return;
	x_fileattr(x, &r->attr);
	sc_xdr_array(x, (void **)&r->blocks, &r->nblocks, CSI_MAX_BLOCKS,
		     READ_BLOCK_MIN_WIRE, sizeof(*r->blocks), x_read_block);
	sc_xdr_array(x, (void **)&r->pushed, &r->npushed, CSI_MAX_PUSH,
		     PUSH_WIRE, sizeof(*r->pushed), x_push_entry);
}

static void x_write_block(struct sc_xdr *x, void *elem)
{
	struct csi_write_block *b = elem;

	sc_xdr_enum_range(x, &b->kind, CSI_WK_DATA, CSI_WK_HASH);
	if (x->err)
		return;
	if (b->kind == CSI_WK_DATA)
		x_data_block(x, &b->hash, &b->data);
	else
		x_hash(x, &b->hash);
}

static void x_write_args(struct sc_xdr *x, void *msg)
{
	struct csi_write_args *a = msg;

	x_reqhdr(x, &a->hdr);
	sc_xdr_u64(x, &a->file);
	sc_xdr_u64(x, &a->lbn);
	sc_xdr_u64(x, &a->end);
	sc_xdr_enum(x, &a->stable, CSI_FILE_SYNC);
	sc_xdr_array(x, (void **)&a->blocks, &a->nblocks, CSI_MAX_BLOCKS,
		     WRITE_BLOCK_MIN_WIRE, sizeof(*a->blocks), x_write_block);
}

static void x_wstatus(struct sc_xdr *x, void *elem)
{
	sc_xdr_enum(x, elem, CSI_W_NEED_DATA);
}

static void x_write_res(struct sc_xdr *x, void *msg)
{
	struct csi_write_res *r = msg;

	if (!x_res_ok(x, &r->status))
		return;
	sc_xdr_u64(x, &r->pre_change);
	x_fileattr(x, &r->attr);
	sc_xdr_enum(x, &r->committed, CSI_FILE_SYNC);
	sc_xdr_array(x, (void **)&r->blocks, &r->nblocks, CSI_MAX_BLOCKS, 4,
		     sizeof(*r->blocks), x_wstatus);
}

static void x_commit_args(struct sc_xdr *x, void *msg)
{
	struct csi_commit_args *a = msg;

	x_reqhdr(x, &a->hdr);
	sc_xdr_u64(x, &a->file);
}

static void x_commit_res(struct sc_xdr *x, void *msg)
{
	struct csi_commit_res *r = msg;

	if (x_res_ok(x, &r->status))
		x_fileattr(x, &r->attr);
}

static void x_evict_args(struct sc_xdr *x, void *msg)
{
	struct csi_evict_args *a = msg;

	x_reqhdr(x, &a->hdr);
}

static void x_evict_res(struct sc_xdr *x, void *msg)
{
	struct csi_evict_res *r = msg;

	x_status(x, &r->status);
}

static void x_stats_args(struct sc_xdr *x, void *msg)
{
	struct csi_stats_args *a = msg;

	sc_xdr_bool(x, &a->per_host);
}

static void x_counter(struct sc_xdr *x, void *elem)
{
	struct csi_counter *c = elem;

	x_string(x, &c->name, CSI_MAX_COUNTER_NAME);
	sc_xdr_u64(x, &c->value);
}

static void x_counters(struct sc_xdr *x, struct csi_counter **c, uint32_t *n)
{
	sc_xdr_array(x, (void **)c, n, CSI_MAX_COUNTERS, COUNTER_MIN_WIRE,
		     sizeof(**c), x_counter);
}

static void x_host_stats(struct sc_xdr *x, void *elem)
{
	struct csi_host_stats *h = elem;

	sc_xdr_u64(x, &h->host);
	x_string(x, &h->host_name, CSI_MAX_NAME);
	x_counters(x, &h->counters, &h->ncounters);
}

static void x_stats_res(struct sc_xdr *x, void *msg)
{
	struct csi_stats_res *r = msg;

	if (!x_res_ok(x, &r->status))
		return;
	sc_xdr_u64(x, &r->epoch);
	x_counters(x, &r->counters, &r->ncounters);
	sc_xdr_array(x, (void **)&r->hosts, &r->nhosts, CSI_MAX_HOSTS,
		     HOST_STATS_MIN_WIRE, sizeof(*r->hosts), x_host_stats);
}

static void x_fileid(struct sc_xdr *x, void *elem)
{
	sc_xdr_u64(x, elem);
}

static void x_getmap_args(struct sc_xdr *x, void *msg)
{
	struct csi_getmap_args *a = msg;

	x_reqhdr(x, &a->hdr);
	sc_xdr_array(x, (void **)&a->files, &a->nfiles, CSI_MAX_MAP_FILES,
		     FILEID_WIRE, sizeof(*a->files), x_fileid);
	sc_xdr_u64(x, &a->lbn);
	sc_xdr_u32(x, &a->count);
}

/* sc_map_file: the union, with sc_map_ok's fields as its SC_OK arm. */
static void x_map_file(struct sc_xdr *x, void *elem)
{
	struct csi_map_file *f = elem;

	if (!x_res_ok(x, &f->status))
		return;
	x_fileattr(x, &f->attr);
	sc_xdr_var(x, &f->holes, &f->nholes_bytes, CSI_MAX_MAP_HOLES);
	sc_xdr_fixed_array(x, (const void **)&f->hashes, &f->nhashes,
			   CSI_MAX_MAP_BLOCKS, HASH_WIRE);
}

static void x_getmap_res(struct sc_xdr *x, void *msg)
{
	struct csi_getmap_res *r = msg;

	if (!x_res_ok(x, &r->status))
		return;
	sc_xdr_array(x, (void **)&r->files, &r->nfiles, CSI_MAX_MAP_FILES,
		     MAP_FILE_MIN_WIRE, sizeof(*r->files), x_map_file);
}

static void x_peer_failure(struct sc_xdr *x, void *elem)
{
	struct csi_peer_failure *f = elem;

	sc_xdr_u64(x, &f->peer_host);
	x_hash(x, &f->hash);
	x_token(x, &f->token);
}

static void x_peer_report_args(struct sc_xdr *x, void *msg)
{
	struct csi_peer_report_args *a = msg;

	x_reqhdr(x, &a->hdr);
	sc_xdr_array(x, (void **)&a->failures, &a->nfailures,
		     CSI_MAX_PEER_REPORTS, PEER_FAILURE_WIRE,
		     sizeof(*a->failures), x_peer_failure);
}

static void x_peer_read_args(struct sc_xdr *x, void *msg)
{
	struct csi_peer_read_args *a = msg;

	sc_xdr_u64(x, &a->requester);
	sc_xdr_u64(x, &a->epoch);
	x_hash(x, &a->hash);
	x_token(x, &a->token);
}

static void x_peer_read_res(struct sc_xdr *x, void *msg)
{
	struct csi_peer_read_res *r = msg;

	if (x_res_ok(x, &r->status))
		x_bytes(x, &r->data, CSI_MAX_BLOCK_SIZE);
}

static void x_void(struct sc_xdr *x, void *msg)
{
	(void)x;
	(void)msg;
}

/*
 * Arena bounds.  Per input byte: an element's C size over its fewest wire
 * bytes, plus room for aligning each array to eight bytes.  In all: every
 * array at its protocol limit.
 */
#define RATIO(type, wire) ((sizeof(type) + (wire) - 1) / (wire) + 2)
#define ARENA(n, type) ((size_t)(n) * (sizeof(type) + sizeof(uint64_t)))
#define MSG(id, type, per_byte, max) \
	[CSI_MSG_##id] = { #type, sizeof(struct csi_##type), per_byte, max, \
			   x_##type }

const struct csi_msg_info csi_msgs[CSI_MSG_COUNT] = {
	[CSI_MSG_VOID] = { "void", 0, 0, 0, x_void },
	MSG(HELLO_ARGS, hello_args, 0, 0),
	MSG(HELLO_RES, hello_res, 0, 0),
	MSG(LOOKUP_ARGS, lookup_args, 0, 0),
	MSG(LOOKUP_RES, lookup_res, 0, 0),
	MSG(GETHASHES_ARGS, gethashes_args, 0, 0),
	MSG(GETHASHES_RES, gethashes_res,
	    RATIO(struct csi_block_hash, BLOCK_HASH_MIN_WIRE),
	    ARENA(CSI_MAX_BLOCKS, struct csi_block_hash)),
	MSG(READ_ARGS, read_args, 0, 0),
	MSG(READ_RES, read_res,
	    RATIO(struct csi_read_block, READ_BLOCK_MIN_WIRE),
	    ARENA(CSI_MAX_BLOCKS, struct csi_read_block) +
	    ARENA(CSI_MAX_PUSH, struct csi_push_entry)),
	MSG(WRITE_ARGS, write_args,
	    RATIO(struct csi_write_block, WRITE_BLOCK_MIN_WIRE),
	    ARENA(CSI_MAX_BLOCKS, struct csi_write_block)),
	MSG(WRITE_RES, write_res, RATIO(uint32_t, 4),
	    ARENA(CSI_MAX_BLOCKS, uint32_t)),
	MSG(COMMIT_ARGS, commit_args, 0, 0),
	MSG(COMMIT_RES, commit_res, 0, 0),
	MSG(EVICT_ARGS, evict_args, 0, 0),
	MSG(EVICT_RES, evict_res, 0, 0),
	MSG(STATS_ARGS, stats_args, 0, 0),
	MSG(STATS_RES, stats_res,
	    RATIO(struct csi_host_stats, HOST_STATS_MIN_WIRE) +
	    RATIO(struct csi_counter, COUNTER_MIN_WIRE),
	    ARENA(CSI_MAX_COUNTERS, struct csi_counter) +
	    ARENA(CSI_MAX_HOSTS, struct csi_host_stats) +
	    (size_t)CSI_MAX_HOSTS * ARENA(CSI_MAX_COUNTERS, struct csi_counter)),
	MSG(GETMAP_ARGS, getmap_args, RATIO(uint64_t, FILEID_WIRE),
	    ARENA(CSI_MAX_MAP_FILES, uint64_t)),
	MSG(GETMAP_RES, getmap_res,
	    RATIO(struct csi_map_file, MAP_FILE_MIN_WIRE),
	    ARENA(CSI_MAX_MAP_FILES, struct csi_map_file)),
	MSG(PEER_REPORT_ARGS, peer_report_args,
	    RATIO(struct csi_peer_failure, PEER_FAILURE_WIRE),
	    ARENA(CSI_MAX_PEER_REPORTS, struct csi_peer_failure)),
	MSG(PEER_READ_ARGS, peer_read_args, 0, 0),
	MSG(PEER_READ_RES, peer_read_res, 0, 0),
};

void csi_xdr_msg(struct sc_xdr *x, enum csi_msg m, void *msg)
{
	if ((unsigned int)m >= CSI_MSG_COUNT) {
		sc_xdr_fail(x, -SC_EINVAL);
		return;
	}
	csi_msgs[m].xdr(x, msg);
}

int csi_encode(enum csi_msg m, const void *msg, void *out, size_t cap,
	       size_t *len)
{
	struct sc_xdr x;

	sc_xdr_init_encode(&x, out, cap);
	/* Encoding reads the message only; one function serves both ways. */
	csi_xdr_msg(&x, m, (void *)msg);
	*len = x.err ? 0 : x.pos;
	return x.err;
}

size_t csi_decode_arena_size(enum csi_msg m, size_t len)
{
	const struct csi_msg_info *mi;

	if ((unsigned int)m >= CSI_MSG_COUNT)
		return 0;
	mi = &csi_msgs[m];
	if (len > mi->arena_max / (mi->arena_per_byte ? mi->arena_per_byte : 1))
		return mi->arena_max;
	return len * mi->arena_per_byte;
}

int csi_decode(enum csi_msg m, const void *in, size_t len, void *msg,
	       void *arena, size_t arena_len)
{
	struct sc_xdr x;

	if ((unsigned int)m >= CSI_MSG_COUNT)
		return -SC_EINVAL;
	sc_memset(msg, 0, csi_msgs[m].size);
	sc_xdr_init_decode(&x, in, len, arena, arena_len);
	csi_xdr_msg(&x, m, msg);
	if (!x.err && x.pos != len)
		x.err = -SC_EBADMSG;
	return x.err;
}

static const struct csi_proc_info csi_procs[] = {
	{ CSI_PROG, CSI_PROC_NULL, "null", CSI_MSG_VOID, CSI_MSG_VOID },
	{ CSI_PROG, CSI_PROC_HELLO, "hello", CSI_MSG_HELLO_ARGS,
	  CSI_MSG_HELLO_RES },
	{ CSI_PROG, CSI_PROC_LOOKUP, "lookup", CSI_MSG_LOOKUP_ARGS,
	  CSI_MSG_LOOKUP_RES },
	{ CSI_PROG, CSI_PROC_GET_HASHES, "get_hashes", CSI_MSG_GETHASHES_ARGS,
	  CSI_MSG_GETHASHES_RES },
	{ CSI_PROG, CSI_PROC_READ, "read", CSI_MSG_READ_ARGS,
	  CSI_MSG_READ_RES },
	{ CSI_PROG, CSI_PROC_WRITE, "write", CSI_MSG_WRITE_ARGS,
	  CSI_MSG_WRITE_RES },
	{ CSI_PROG, CSI_PROC_COMMIT, "commit", CSI_MSG_COMMIT_ARGS,
	  CSI_MSG_COMMIT_RES },
	{ CSI_PROG, CSI_PROC_EVICT, "evict", CSI_MSG_EVICT_ARGS,
	  CSI_MSG_EVICT_RES },
	{ CSI_PROG, CSI_PROC_STATS, "stats", CSI_MSG_STATS_ARGS,
	  CSI_MSG_STATS_RES },
	{ CSI_PROG, CSI_PROC_GET_MAP, "get_map", CSI_MSG_GETMAP_ARGS,
	  CSI_MSG_GETMAP_RES },
	{ CSI_PROG, CSI_PROC_PEER_REPORT, "peer_report",
	  CSI_MSG_PEER_REPORT_ARGS, CSI_MSG_EVICT_RES },
	{ CSI_PEER_PROG, CSI_PEER_PROC_NULL, "peer_null", CSI_MSG_VOID,
	  CSI_MSG_VOID },
	{ CSI_PEER_PROG, CSI_PEER_PROC_READ, "peer_read",
	  CSI_MSG_PEER_READ_ARGS, CSI_MSG_PEER_READ_RES },
};

const struct csi_proc_info *csi_proc_find(uint32_t prog, uint32_t proc)
{
	size_t i;

	for (i = 0; i < SC_ARRAY_SIZE(csi_procs); i++)
		if (csi_procs[i].prog == prog && csi_procs[i].proc == proc)
			return &csi_procs[i];
	return NULL;
}

/* Bits set in one byte; no builtin, which may want libgcc in the kernel. */
static uint32_t bits_set(uint8_t b)
{
	uint32_t n = 0;

	for (; b; b &= (uint8_t)(b - 1))
		n++;
	return n;
}

int csi_map_file_check(const struct csi_map_file *f, uint64_t lbn,
		       uint32_t count, uint32_t block_size, uint32_t *nblocks)
{
	uint64_t nb, n;
	uint32_t i, holes = 0, tail;

	*nblocks = 0;
	if (!block_size)
		return -SC_EINVAL;
	switch (f->status) {
	case CSI_OK:
		break;
	case CSI_ERR_STALE:
	case CSI_ERR_ACCESS:
	case CSI_ERR_IO:
		return 0;
	default:
		return -SC_EPROTO;
	}
	/* N = ceil(size / B), the window n = min(count, max(0, N - lbn)) */
	nb = f->attr.size / block_size + (f->attr.size % block_size != 0);
	n = nb > lbn ? nb - lbn : 0;
	if (n > count)
		n = count;
	if (f->nholes_bytes != (n + 7) / 8)
		return -SC_EPROTO;
	for (i = 0; i < f->nholes_bytes; i++)
		holes += bits_set(f->holes[i]);
	tail = (uint32_t)(n % 8);
	if (tail && f->holes[f->nholes_bytes - 1] >> tail)
		return -SC_EPROTO;	/* a hole past the window */
	if (f->nhashes != n - holes)
		return -SC_EPROTO;
	*nblocks = (uint32_t)n;
	return 0;
}
