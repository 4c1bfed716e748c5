// SPDX-License-Identifier: BSD-2-Clause
/*
 * Converters from the hand-written codec's csi_* structs to rpcgen's sc_*
 * structs (see csi_to_rpcgen.h).  They copy what the union arm selected by
 * a discriminant holds and nothing else, as both encoders do, so that a
 * field encoded by one side only shows up as a byte difference.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "csi_to_rpcgen.h"

struct csi_rpcgen_chunk {
	struct csi_rpcgen_chunk *next;
	max_align_t mem[];
};

/* n zeroed elements of size bytes; NULL for none or after an error. */
static void *conv_alloc(struct csi_rpcgen_conv *c, size_t n, size_t size)
{
	struct csi_rpcgen_chunk *ch;

	if (c->err || !n)
		return NULL;
	if (n > (SIZE_MAX - sizeof(*ch)) / size ||
	    !(ch = calloc(1, sizeof(*ch) + n * size))) {
		c->err = -ENOMEM;
		return NULL;
	}
	ch->next = c->chunks;
	c->chunks = ch;
	return ch->mem;
}

/* rpcgen's counted array of n elements: its length set, its room made. */
static void *conv_array(struct csi_rpcgen_conv *c, u_int *len, uint32_t n,
			size_t size)
{
	*len = n;
	return conv_alloc(c, n, size);
}

void csi_rpcgen_conv_release(struct csi_rpcgen_conv *c)
{
	struct csi_rpcgen_chunk *ch;

	while ((ch = c->chunks)) {
		c->chunks = ch->next;
		free(ch);
	}
	c->err = 0;
}

static void to_hash(sc_hash out, const struct sc_hash *h)
{
	memcpy(out, h->b, SC_HASH_SIZE);
}

/* rpcgen's strings are C strings: even an empty one is not NULL. */
static char *to_string(struct csi_rpcgen_conv *c, const struct csi_bytes *b)
{
	char *s;

	if (b->len && memchr(b->p, 0, b->len)) {
		if (!c->err)
			c->err = -EINVAL;
		return NULL;
	}
	s = conv_alloc(c, (size_t)b->len + 1, 1);
	if (s && b->len)
		memcpy(s, b->p, b->len);
	return s;
}

/* Encoding only reads opaque data: rpcgen's struct borrows our bytes. */
static void to_opaque(u_int *len, char **val, const struct csi_bytes *b)
{
	*len = b->len;
	*val = (char *)b->p;
}

static void to_peer_addr(sc_peer_addr *o, const struct csi_peer_addr *a)
{
	o->family = (sc_addr_family)a->family;
	memcpy(o->addr, a->addr, SC_ADDR_SIZE);
	o->port = a->port;
}

static void to_token(sc_token *o, const struct csi_token *t)
{
	o->expiry = t->expiry;
	memcpy(o->mac, t->mac, SC_MAC_SIZE);
}

static void to_reqhdr(sc_reqhdr *o, const struct csi_reqhdr *h)
{
	o->host = h->host;
	o->epoch = h->epoch;
	/* The same 32 bytes each: borrowed like opaque data. */
	_Static_assert(sizeof(struct sc_hash) == sizeof(sc_hash),
		       "a hash list is not an array of sc_hash");
	o->evicted.evicted_len = h->nevicted;
	o->evicted.evicted_val = (sc_hash *)h->evicted;
}

static void to_fileattr(sc_fileattr *o, const struct csi_fileattr *a)
{
	o->file = a->file;
	o->size = a->size;
	o->change = a->change;
}

static void to_data_block(sc_data_block *o, const struct sc_hash *hash,
			  const struct csi_bytes *data)
{
	to_hash(o->hash, hash);
	to_opaque(&o->data.data_len, &o->data.data_val, data);
}

static void to_counters(struct csi_rpcgen_conv *c, u_int *len,
			sc_counter **val, const struct csi_counter *in,
			uint32_t n)
{
	sc_counter *out = conv_array(c, len, n, sizeof(*out));
	uint32_t i;

	*val = out;
	for (i = 0; out && i < n; i++) {
		out[i].name = to_string(c, &in[i].name);
		out[i].value = in[i].value;
	}
}

/*
 * One converter per message: the table calls to_<type> with void
 * pointers, the body (to_<type>_typed) sees in and out with their types.
 */
#define CONVERTER(type)							\
	static void to_##type##_typed(struct csi_rpcgen_conv *c,	\
				      const struct csi_##type *in,	\
				      sc_##type *out);			\
	static void to_##type(struct csi_rpcgen_conv *c, const void *csi, \
			      void *sc)					\
	{								\
		to_##type##_typed(c, csi, sc);				\
	}								\
	static void to_##type##_typed(					\
		struct csi_rpcgen_conv *c __attribute__((unused)),	\
		const struct csi_##type *in, sc_##type *out)

CONVERTER(hello_args)
{
	memcpy(out->host_uuid, in->host_uuid, SC_HOST_UUID_SIZE);
	out->host_name = to_string(c, &in->host_name);
	to_peer_addr(&out->peer, &in->peer);
	out->cache_bytes = in->cache_bytes;
	out->features = in->features;
}

CONVERTER(hello_res)
{
	sc_hello_ok *ok = &out->sc_hello_res_u.ok;

	out->status = (sc_status)in->status;
	if (in->status != CSI_OK)
		return;
	ok->host = in->host;
	ok->epoch = in->epoch;
	ok->block_size = in->block_size;
	ok->max_blocks = in->max_blocks;
	ok->max_push = in->max_push;
	ok->max_evict = in->max_evict;
	ok->features = in->features;
	ok->lease_seconds = in->lease_seconds;
	memcpy(ok->peer_secret, in->peer_secret, SC_SECRET_SIZE);
}

CONVERTER(lookup_args)
{
	to_reqhdr(&out->hdr, &in->hdr);
	out->export_path = to_string(c, &in->export_path);
	out->path = to_string(c, &in->path);
}

/*
 * A reply's status and, on success, the file's attributes that come first
 * in its OK arm; true when the rest of that arm follows.
 */
static bool to_status_attr(sc_status *status, sc_fileattr *attr,
			   uint32_t csi_status, const struct csi_fileattr *a)
{
	*status = (sc_status)csi_status;
	if (csi_status != CSI_OK)
		return false;
	to_fileattr(attr, a);
	return true;
}

CONVERTER(lookup_res)
{
	to_status_attr(&out->status, &out->sc_lookup_res_u.attr, in->status,
		       &in->attr);
}

CONVERTER(gethashes_args)
{
	to_reqhdr(&out->hdr, &in->hdr);
	out->file = in->file;
	out->lbn = in->lbn;
	out->count = in->count;
}

CONVERTER(gethashes_res)
{
	sc_gethashes_ok *ok = &out->sc_gethashes_res_u.ok;
	sc_block_hash *b;
	uint32_t i;

	if (!to_status_attr(&out->status, &ok->attr, in->status, &in->attr))
		return;
	b = conv_array(c, &ok->blocks.blocks_len, in->nblocks, sizeof(*b));
	ok->blocks.blocks_val = b;
	for (i = 0; b && i < in->nblocks; i++) {
		b[i].kind = (sc_hkind)in->blocks[i].kind;
		if (in->blocks[i].kind == CSI_HK_HASH)
			to_hash(b[i].sc_block_hash_u.hash,
				&in->blocks[i].hash);
	}
}

CONVERTER(read_args)
{
	to_reqhdr(&out->hdr, &in->hdr);
	out->file = in->file;
	out->lbn = in->lbn;
	out->count = in->count;
	out->flags = in->flags;
}

static void to_read_block(sc_read_block *o, const struct csi_read_block *b)
{
	sc_delegation *d = &o->sc_read_block_u.deleg;

	o->kind = (sc_rkind)b->kind;
	switch (b->kind) {
	case CSI_RK_DATA:
		to_data_block(&o->sc_read_block_u.data, &b->hash, &b->data);
		break;
	case CSI_RK_HASH:
		to_hash(o->sc_read_block_u.hash, &b->hash);
		break;
	case CSI_RK_DELEGATED:
		to_hash(d->hash, &b->hash);
		d->peer_host = b->peer_host;
		to_peer_addr(&d->peer, &b->peer);
		to_token(&d->token, &b->token);
		break;
	default: /* CSI_RK_HOLE, or a kind rpcgen has to refuse */
		break;
	}
}

CONVERTER(read_res)
{
	sc_read_ok *ok = &out->sc_read_res_u.ok;
	sc_read_block *b;
	sc_push_entry *p;
	uint32_t i;

	if (!to_status_attr(&out->status, &ok->attr, in->status, &in->attr))
		return;
	b = conv_array(c, &ok->blocks.blocks_len, in->nblocks, sizeof(*b));
	ok->blocks.blocks_val = b;
	for (i = 0; b && i < in->nblocks; i++)
		to_read_block(&b[i], &in->blocks[i]);
	p = conv_array(c, &ok->pushed.pushed_len, in->npushed, sizeof(*p));
	ok->pushed.pushed_val = p;
	for (i = 0; p && i < in->npushed; i++) {
		p[i].file = in->pushed[i].file;
		p[i].lbn = in->pushed[i].lbn;
		p[i].change = in->pushed[i].change;
		to_hash(p[i].hash, &in->pushed[i].hash);
	}
}

static void to_write_block(sc_write_block *o,
			   const struct csi_write_block *b)
{
	o->kind = (sc_wkind)b->kind;
	if (b->kind == CSI_WK_DATA)
		to_data_block(&o->sc_write_block_u.data, &b->hash, &b->data);
	else if (b->kind == CSI_WK_HASH)
		to_hash(o->sc_write_block_u.hash, &b->hash);
}

CONVERTER(write_args)
{
	sc_write_block *b;
	uint32_t i;

	to_reqhdr(&out->hdr, &in->hdr);
	out->file = in->file;
	out->lbn = in->lbn;
	out->end = in->end;
	out->stable = (sc_stable)in->stable;
	b = conv_array(c, &out->blocks.blocks_len, in->nblocks, sizeof(*b));
	out->blocks.blocks_val = b;
	for (i = 0; b && i < in->nblocks; i++)
		to_write_block(&b[i], &in->blocks[i]);
}

CONVERTER(write_res)
{
	sc_write_ok *ok = &out->sc_write_res_u.ok;
	sc_wstatus *st;
	uint32_t i;

	if (!to_status_attr(&out->status, &ok->attr, in->status, &in->attr))
		return;
	ok->pre_change = in->pre_change;
	ok->committed = (sc_stable)in->committed;
	st = conv_array(c, &ok->blocks.blocks_len, in->nblocks, sizeof(*st));
	ok->blocks.blocks_val = st;
	for (i = 0; st && i < in->nblocks; i++)
		st[i] = (sc_wstatus)in->blocks[i];
}

CONVERTER(commit_args)
{
	to_reqhdr(&out->hdr, &in->hdr);
	out->file = in->file;
}

CONVERTER(commit_res)
{
	to_status_attr(&out->status, &out->sc_commit_res_u.attr, in->status,
		       &in->attr);
}

CONVERTER(evict_args)
{
	to_reqhdr(&out->hdr, &in->hdr);
}

CONVERTER(evict_res)
{
	out->status = (sc_status)in->status;
}

CONVERTER(stats_args)
{
	out->per_host = in->per_host ? TRUE : FALSE;
}

CONVERTER(stats_res)
{
	sc_stats_ok *ok = &out->sc_stats_res_u.ok;
	const struct csi_host_stats *hin;
	sc_host_stats *h;
	uint32_t i;

	out->status = (sc_status)in->status;
	if (in->status != CSI_OK)
		return;
	ok->epoch = in->epoch;
	to_counters(c, &ok->counters.counters_len, &ok->counters.counters_val,
		    in->counters, in->ncounters);
	h = conv_array(c, &ok->hosts.hosts_len, in->nhosts, sizeof(*h));
	ok->hosts.hosts_val = h;
	for (i = 0; h && i < in->nhosts; i++) {
		hin = &in->hosts[i];
		h[i].host = hin->host;
		h[i].host_name = to_string(c, &hin->host_name);
		to_counters(c, &h[i].counters.counters_len,
			    &h[i].counters.counters_val, hin->counters,
			    hin->ncounters);
	}
}

CONVERTER(getmap_args)
{
	sc_fileid *f;
	uint32_t i;

	to_reqhdr(&out->hdr, &in->hdr);
	f = conv_array(c, &out->files.files_len, in->nfiles, sizeof(*f));
	out->files.files_val = f;
	for (i = 0; f && i < in->nfiles; i++)
		f[i] = in->files[i];
	out->lbn = in->lbn;
	out->count = in->count;
}

static void to_map_file(sc_map_file *o, const struct csi_map_file *f)
{
	sc_map_ok *ok = &o->sc_map_file_u.ok;

	if (!to_status_attr(&o->status, &ok->attr, f->status, &f->attr))
		return;
	ok->holes.holes_len = f->nholes_bytes;
	ok->holes.holes_val = (char *)f->holes;
	/* borrowed, as the header's hash list */
	ok->hashes.hashes_len = f->nhashes;
	ok->hashes.hashes_val = (sc_hash *)f->hashes;
}

CONVERTER(getmap_res)
{
	sc_map_file *f;
	uint32_t i;

	out->status = (sc_status)in->status;
	if (in->status != CSI_OK)
		return;
	f = conv_array(c, &out->sc_getmap_res_u.files.files_len, in->nfiles,
		       sizeof(*f));
	out->sc_getmap_res_u.files.files_val = f;
	for (i = 0; f && i < in->nfiles; i++)
		to_map_file(&f[i], &in->files[i]);
}

CONVERTER(peer_report_args)
{
	sc_peer_failure *f;
	uint32_t i;

	to_reqhdr(&out->hdr, &in->hdr);
	f = conv_array(c, &out->failures.failures_len, in->nfailures,
		       sizeof(*f));
	out->failures.failures_val = f;
	for (i = 0; f && i < in->nfailures; i++) {
		f[i].peer_host = in->failures[i].peer_host;
		to_hash(f[i].hash, &in->failures[i].hash);
		to_token(&f[i].token, &in->failures[i].token);
	}
}

CONVERTER(peer_read_args)
{
	out->requester = in->requester;
	out->epoch = in->epoch;
	to_hash(out->hash, &in->hash);
	to_token(&out->token, &in->token);
}

CONVERTER(peer_read_res)
{
	out->status = (sc_status)in->status;
	if (in->status == CSI_OK)
		to_opaque(&out->sc_peer_read_res_u.data.data_len,
			  &out->sc_peer_read_res_u.data.data_val, &in->data);
}

/* xdr_void is declared without parameters; this one has xdrproc_t's. */
static bool_t xdr_nothing(XDR *xdrs, void *p)
{
	(void)xdrs;
	(void)p;
	return TRUE;
}

static void to_void(struct csi_rpcgen_conv *c, const void *csi, void *sc)
{
	(void)c;
	(void)csi;
	(void)sc;
}

#define MSG(id, type) \
	[CSI_MSG_##id] = { "sc_" #type, sizeof(sc_##type), \
			   (xdrproc_t)xdr_sc_##type, to_##type }

const struct csi_rpcgen_msg csi_rpcgen_msgs[CSI_MSG_COUNT] = {
	[CSI_MSG_VOID] = { "void", 0, (xdrproc_t)xdr_nothing, to_void },
	MSG(HELLO_ARGS, hello_args),
	MSG(HELLO_RES, hello_res),
	MSG(LOOKUP_ARGS, lookup_args),
	MSG(LOOKUP_RES, lookup_res),
	MSG(GETHASHES_ARGS, gethashes_args),
	MSG(GETHASHES_RES, gethashes_res),
	MSG(READ_ARGS, read_args),
	MSG(READ_RES, read_res),
	MSG(WRITE_ARGS, write_args),
	MSG(WRITE_RES, write_res),
	MSG(COMMIT_ARGS, commit_args),
	MSG(COMMIT_RES, commit_res),
	MSG(EVICT_ARGS, evict_args),
	MSG(EVICT_RES, evict_res),
	MSG(STATS_ARGS, stats_args),
	MSG(STATS_RES, stats_res),
	MSG(GETMAP_ARGS, getmap_args),
	MSG(GETMAP_RES, getmap_res),
	MSG(PEER_REPORT_ARGS, peer_report_args),
	MSG(PEER_READ_ARGS, peer_read_args),
	MSG(PEER_READ_RES, peer_read_res),
};

int csi_to_rpcgen(struct csi_rpcgen_conv *c, enum csi_msg m, const void *csi,
		  void *sc)
{
	const struct csi_rpcgen_msg *mi;

	if ((unsigned int)m >= CSI_MSG_COUNT)
		return -EINVAL;
	mi = &csi_rpcgen_msgs[m];
	if (mi->size)		/* void may come without a struct */
		memset(sc, 0, mi->size);
	c->err = 0;
	mi->to_sc(c, csi, sc);
	return c->err;
}
