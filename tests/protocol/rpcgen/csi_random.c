// SPDX-License-Identifier: BSD-2-Clause
/*
 * Random valid CSI messages (see csi_random.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csi_random.h"

/*
 * Sizes are kept moderate, so that thousands of messages per type run in
 * seconds under the sanitizers; the encoders treat a count the same way
 * whatever its value, and the limits themselves are tested apart.
 */
#define RAND_MAX_BLOCKS 8	/* read, write and hashes replies */
#define RAND_MAX_LIST 4		/* evicted, pushed, counters, hosts */
#define RAND_MAX_DATA 4096	/* one 4 KiB block */
#define RAND_MAX_MAP_HASHES 64	/* of each file of a GET_MAP reply */

static uint32_t rand_u32(struct csi_random *r)
{
	return (uint32_t)sc_prng_next(&r->prng);
}

static uint64_t rand_u64(struct csi_random *r)
{
	return sc_prng_next(&r->prng);
}

/* 0..max, both included. */
static uint32_t rand_upto(struct csi_random *r, uint32_t max)
{
	return sc_prng_below(&r->prng, max + 1);
}

/*
 * A length up to max: the bounds and the short lengths where padding
 * changes matter more than the middle, so they get a quarter of the draws.
 */
static uint32_t rand_len(struct csi_random *r, uint32_t max)
{
	switch (sc_prng_below(&r->prng, 8)) {
	case 0:
		return max;
	case 1:
		return rand_upto(r, max < 8 ? max : 8);
	default:
		return rand_upto(r, max);
	}
}

static uint32_t rand_status(struct csi_random *r)
{
	/* Half successes: they carry the interesting part of a reply. */
	if (sc_prng_below(&r->prng, 2))
		return CSI_OK;
	return 1 + sc_prng_below(&r->prng, CSI_STATUS_MAX);
}

/* n elements of size bytes from the pool, 8-byte aligned. */
static void *pool_take(struct csi_random *r, size_t n, size_t size)
{
	size_t pos = (r->pool_pos + 7) & ~(size_t)7;
	void *p;

	if (n > (CSI_RANDOM_POOL - pos) / size) {
		fprintf(stderr, "csi_random: pool too small\n");
		abort();
	}
	p = r->pool + pos;
	r->pool_pos = pos + n * size;
	return n ? p : NULL;
}

static void *rand_array(struct csi_random *r, uint32_t *n, uint32_t max,
			size_t size)
{
	*n = rand_upto(r, max);
	return pool_take(r, *n, size);
}

static void rand_fill(struct csi_random *r, void *p, size_t len)
{
	sc_prng_fill(&r->prng, p, len);
}

static struct csi_bytes rand_bytes(struct csi_random *r, uint32_t max)
{
	struct csi_bytes b;
	uint8_t *p;

	b.len = rand_len(r, max);
	p = pool_take(r, b.len, 1);
	rand_fill(r, p, b.len);
	b.p = p;
	return b;
}

/* Any byte but NUL: XDR strings carry bytes, C strings stop at NUL. */
static struct csi_bytes rand_string(struct csi_random *r, uint32_t max)
{
	struct csi_bytes b = rand_bytes(r, max);
	uint8_t *p = (uint8_t *)b.p;
	uint32_t i;

	for (i = 0; i < b.len; i++)
		if (!p[i])
			p[i] = (uint8_t)(1 + i % 255);
	return b;
}

static void rand_hash(struct csi_random *r, struct sc_hash *h)
{
	rand_fill(r, h->b, sizeof(h->b));
}

static void rand_peer_addr(struct csi_random *r, struct csi_peer_addr *a)
{
	a->family = rand_upto(r, CSI_AF_INET6);
	rand_fill(r, a->addr, sizeof(a->addr));
	a->port = rand_u32(r);
}

static void rand_token(struct csi_random *r, struct csi_token *t)
{
	t->expiry = rand_u64(r);
	rand_fill(r, t->mac, sizeof(t->mac));
}

static void rand_reqhdr(struct csi_random *r, struct csi_reqhdr *h)
{
	struct sc_hash *ev;

	h->host = rand_u64(r);
	h->epoch = rand_u64(r);
	ev = rand_array(r, &h->nevicted, RAND_MAX_LIST, sizeof(*ev));
	rand_fill(r, ev, h->nevicted * sizeof(*ev));
	h->evicted = ev;
}

static void rand_fileattr(struct csi_random *r, struct csi_fileattr *a)
{
	a->file = rand_u64(r);
	a->size = rand_u64(r);
	a->change = rand_u64(r);
}

/* The request of GET_HASHES and READ: a header and a range of blocks. */
static void rand_range(struct csi_random *r, struct csi_reqhdr *h,
		       uint64_t *file, uint64_t *lbn, uint32_t *count)
{
	rand_reqhdr(r, h);
	*file = rand_u64(r);
	*lbn = rand_u64(r);
	*count = rand_u32(r);
}

static void rand_counters(struct csi_random *r, struct csi_counter **c,
			  uint32_t *n)
{
	uint32_t i;

	*c = rand_array(r, n, RAND_MAX_LIST, sizeof(**c));
	for (i = 0; i < *n; i++) {
		(*c)[i].name = rand_string(r, CSI_MAX_COUNTER_NAME);
		(*c)[i].value = rand_u64(r);
	}
}

static void rand_hello_args(struct csi_random *r, void *msg)
{
	struct csi_hello_args *a = msg;

	rand_fill(r, a->host_uuid, sizeof(a->host_uuid));
	a->host_name = rand_string(r, CSI_MAX_NAME);
	rand_peer_addr(r, &a->peer);
	a->cache_bytes = rand_u64(r);
	a->features = rand_u32(r);
}

static void rand_hello_res(struct csi_random *r, void *msg)
{
	struct csi_hello_res *res = msg;

	res->status = rand_status(r);
	res->host = rand_u64(r);
	res->epoch = rand_u64(r);
	res->block_size = rand_u32(r);
	res->max_blocks = rand_u32(r);
	res->max_push = rand_u32(r);
	res->max_evict = rand_u32(r);
	res->features = rand_u32(r);
	res->lease_seconds = rand_u32(r);
	rand_fill(r, res->peer_secret, sizeof(res->peer_secret));
}

static void rand_lookup_args(struct csi_random *r, void *msg)
{
	struct csi_lookup_args *a = msg;

	rand_reqhdr(r, &a->hdr);
	a->export_path = rand_string(r, CSI_MAX_PATH);
	a->path = rand_string(r, CSI_MAX_PATH);
}

static void rand_lookup_res(struct csi_random *r, void *msg)
{
	struct csi_lookup_res *res = msg;

	res->status = rand_status(r);
	rand_fileattr(r, &res->attr);
}

static void rand_gethashes_args(struct csi_random *r, void *msg)
{
	struct csi_gethashes_args *a = msg;

	rand_range(r, &a->hdr, &a->file, &a->lbn, &a->count);
}

static void rand_gethashes_res(struct csi_random *r, void *msg)
{
	struct csi_gethashes_res *res = msg;
	uint32_t i;

	res->status = rand_status(r);
	rand_fileattr(r, &res->attr);
	res->blocks = rand_array(r, &res->nblocks, RAND_MAX_BLOCKS,
				 sizeof(*res->blocks));
	for (i = 0; i < res->nblocks; i++) {
		res->blocks[i].kind = rand_upto(r, CSI_HK_HASH);
		rand_hash(r, &res->blocks[i].hash);
	}
}

static void rand_read_args(struct csi_random *r, void *msg)
{
	struct csi_read_args *a = msg;

	rand_range(r, &a->hdr, &a->file, &a->lbn, &a->count);
	a->flags = rand_u32(r);
}

/* Bytes in the data field of a block whose kind is not DATA. */
static const uint8_t not_selected[] = "not selected";

static void rand_read_block(struct csi_random *r, struct csi_read_block *b)
{
	b->kind = rand_upto(r, CSI_RK_DELEGATED);
	rand_hash(r, &b->hash);
	if (b->kind == CSI_RK_DATA) {
		b->data = rand_bytes(r, RAND_MAX_DATA);
	} else {
		b->data.p = not_selected;
		b->data.len = sizeof(not_selected) - 1;
	}
	b->peer_host = rand_u64(r);
	rand_peer_addr(r, &b->peer);
	rand_token(r, &b->token);
}

static void rand_read_res(struct csi_random *r, void *msg)
{
	struct csi_read_res *res = msg;
	uint32_t i;

	res->status = rand_status(r);
	rand_fileattr(r, &res->attr);
	res->blocks = rand_array(r, &res->nblocks, RAND_MAX_BLOCKS,
				 sizeof(*res->blocks));
	for (i = 0; i < res->nblocks; i++)
		rand_read_block(r, &res->blocks[i]);
	res->pushed = rand_array(r, &res->npushed, RAND_MAX_LIST,
				 sizeof(*res->pushed));
	for (i = 0; i < res->npushed; i++) {
		res->pushed[i].file = rand_u64(r);
		res->pushed[i].lbn = rand_u64(r);
		res->pushed[i].change = rand_u64(r);
		rand_hash(r, &res->pushed[i].hash);
	}
}

static void rand_write_args(struct csi_random *r, void *msg)
{
	struct csi_write_args *a = msg;
	struct csi_write_block *b;
	uint32_t i;

	rand_reqhdr(r, &a->hdr);
	a->file = rand_u64(r);
	a->lbn = rand_u64(r);
	a->end = rand_u64(r);
	a->stable = rand_upto(r, CSI_FILE_SYNC);
	a->blocks = rand_array(r, &a->nblocks, RAND_MAX_BLOCKS,
			       sizeof(*a->blocks));
	for (i = 0; i < a->nblocks; i++) {
		b = &a->blocks[i];
		b->kind = CSI_WK_DATA + rand_upto(r, CSI_WK_HASH - CSI_WK_DATA);
		rand_hash(r, &b->hash);
		if (b->kind == CSI_WK_DATA)
			b->data = rand_bytes(r, RAND_MAX_DATA);
	}
}

static void rand_write_res(struct csi_random *r, void *msg)
{
	struct csi_write_res *res = msg;
	uint32_t i;

	res->status = rand_status(r);
	res->pre_change = rand_u64(r);
	rand_fileattr(r, &res->attr);
	res->committed = rand_upto(r, CSI_FILE_SYNC);
	res->blocks = rand_array(r, &res->nblocks, RAND_MAX_BLOCKS,
				 sizeof(*res->blocks));
	for (i = 0; i < res->nblocks; i++)
		res->blocks[i] = rand_upto(r, CSI_W_NEED_DATA);
}

static void rand_commit_args(struct csi_random *r, void *msg)
{
	struct csi_commit_args *a = msg;

	rand_reqhdr(r, &a->hdr);
	a->file = rand_u64(r);
}

static void rand_commit_res(struct csi_random *r, void *msg)
{
	struct csi_commit_res *res = msg;

	res->status = rand_status(r);
	rand_fileattr(r, &res->attr);
}

static void rand_evict_args(struct csi_random *r, void *msg)
{
	struct csi_evict_args *a = msg;

	rand_reqhdr(r, &a->hdr);
}

static void rand_evict_res(struct csi_random *r, void *msg)
{
	struct csi_evict_res *res = msg;

	res->status = rand_status(r);
}

static void rand_stats_args(struct csi_random *r, void *msg)
{
	struct csi_stats_args *a = msg;

	a->per_host = rand_upto(r, 1);
}

static void rand_stats_res(struct csi_random *r, void *msg)
{
	struct csi_stats_res *res = msg;
	struct csi_host_stats *h;
	uint32_t i;

	res->status = rand_status(r);
	res->epoch = rand_u64(r);
	rand_counters(r, &res->counters, &res->ncounters);
	res->hosts = rand_array(r, &res->nhosts, RAND_MAX_LIST,
				sizeof(*res->hosts));
	for (i = 0; i < res->nhosts; i++) {
		h = &res->hosts[i];
		h->host = rand_u64(r);
		h->host_name = rand_string(r, CSI_MAX_NAME);
		rand_counters(r, &h->counters, &h->ncounters);
	}
}

static void rand_getmap_args(struct csi_random *r, void *msg)
{
	struct csi_getmap_args *a = msg;
	uint64_t *files;
	uint32_t i;

	rand_reqhdr(r, &a->hdr);
	files = rand_array(r, &a->nfiles, CSI_MAX_MAP_FILES, sizeof(*files));
	for (i = 0; i < a->nfiles; i++)
		files[i] = rand_u64(r);
	a->files = files;
	a->lbn = rand_u64(r);
	a->count = rand_u32(r);
}

/*
 * Any lengths of holes and hashes within their bounds, not only those a
 * window allows: encoding does not know attr.size.
 */
static void rand_map_file(struct csi_random *r, struct csi_map_file *f)
{
	struct sc_hash *h;
	uint8_t *holes;

	f->status = rand_status(r);
	rand_fileattr(r, &f->attr);
	f->nholes_bytes = rand_len(r, CSI_MAX_MAP_HOLES);
	holes = pool_take(r, f->nholes_bytes, 1);
	rand_fill(r, holes, f->nholes_bytes);
	f->holes = holes;
	h = rand_array(r, &f->nhashes, RAND_MAX_MAP_HASHES, sizeof(*h));
	rand_fill(r, h, f->nhashes * sizeof(*h));
	f->hashes = h;
}

static void rand_getmap_res(struct csi_random *r, void *msg)
{
	struct csi_getmap_res *res = msg;
	uint32_t i;

	res->status = rand_status(r);
	res->files = rand_array(r, &res->nfiles, CSI_MAX_MAP_FILES,
				sizeof(*res->files));
	for (i = 0; i < res->nfiles; i++)
		rand_map_file(r, &res->files[i]);
}

static void rand_peer_report_args(struct csi_random *r, void *msg)
{
	struct csi_peer_report_args *a = msg;
	struct csi_peer_failure *f;
	uint32_t i;

	rand_reqhdr(r, &a->hdr);
	f = rand_array(r, &a->nfailures, RAND_MAX_LIST, sizeof(*f));
	for (i = 0; i < a->nfailures; i++) {
		f[i].peer_host = rand_u64(r);
		rand_hash(r, &f[i].hash);
		rand_token(r, &f[i].token);
	}
	a->failures = f;
}

static void rand_peer_read_args(struct csi_random *r, void *msg)
{
	struct csi_peer_read_args *a = msg;

	a->requester = rand_u64(r);
	a->epoch = rand_u64(r);
	rand_hash(r, &a->hash);
	rand_token(r, &a->token);
}

static void rand_peer_read_res(struct csi_random *r, void *msg)
{
	struct csi_peer_read_res *res = msg;

	res->status = rand_status(r);
	res->data = rand_bytes(r, RAND_MAX_DATA);
}

static void rand_void(struct csi_random *r, void *msg)
{
	(void)r;
	(void)msg;
}

static void (*const rand_msgs[CSI_MSG_COUNT])(struct csi_random *r,
					       void *msg) = {
	[CSI_MSG_VOID] = rand_void,
	[CSI_MSG_HELLO_ARGS] = rand_hello_args,
	[CSI_MSG_HELLO_RES] = rand_hello_res,
	[CSI_MSG_LOOKUP_ARGS] = rand_lookup_args,
	[CSI_MSG_LOOKUP_RES] = rand_lookup_res,
	[CSI_MSG_GETHASHES_ARGS] = rand_gethashes_args,
	[CSI_MSG_GETHASHES_RES] = rand_gethashes_res,
	[CSI_MSG_READ_ARGS] = rand_read_args,
	[CSI_MSG_READ_RES] = rand_read_res,
	[CSI_MSG_WRITE_ARGS] = rand_write_args,
	[CSI_MSG_WRITE_RES] = rand_write_res,
	[CSI_MSG_COMMIT_ARGS] = rand_commit_args,
	[CSI_MSG_COMMIT_RES] = rand_commit_res,
	[CSI_MSG_EVICT_ARGS] = rand_evict_args,
	[CSI_MSG_EVICT_RES] = rand_evict_res,
	[CSI_MSG_STATS_ARGS] = rand_stats_args,
	[CSI_MSG_STATS_RES] = rand_stats_res,
	[CSI_MSG_GETMAP_ARGS] = rand_getmap_args,
	[CSI_MSG_GETMAP_RES] = rand_getmap_res,
	[CSI_MSG_PEER_REPORT_ARGS] = rand_peer_report_args,
	[CSI_MSG_PEER_READ_ARGS] = rand_peer_read_args,
	[CSI_MSG_PEER_READ_RES] = rand_peer_read_res,
};

void csi_random_msg(struct csi_random *r, enum csi_msg m, void *msg)
{
	r->pool_pos = 0;
	rand_msgs[m](r, msg);
}
