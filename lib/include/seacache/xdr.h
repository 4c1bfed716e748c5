/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * XDR (RFC 4506) over one flat buffer, in both directions.
 *
 * As in Sun's original XDR library, one function per type serves encoding
 * and decoding alike (struct sc_xdr says which), so that a codec cannot
 * encode a layout its decoder does not read.  Errors are sticky: after the
 * first one every primitive does nothing, and the caller looks at x->err
 * once at the end.
 *
 * Out-of-bounds values fail with -SC_EINVAL when encoding (a caller's bug)
 * and with -SC_EBADMSG or -SC_E2BIG when decoding.
 *
 * Decoding is strict, so that every accepted input re-encodes to the very
 * same bytes: padding must be zero, booleans 0 or 1, discriminants and
 * enums known, strings free of NUL bytes, counts within their limits, and
 * the message must use the whole buffer.  Counts are checked against the
 * bytes left before anything is allocated for them.  Variable-length
 * opaques and arrays of hashes are not copied: the decoded message points
 * into the buffer.  Other arrays come from a caller-supplied arena.
 */
#ifndef SEACACHE_XDR_H
#define SEACACHE_XDR_H

#include "compat.h"

enum sc_xdr_op {
	SC_XDR_ENCODE,
	SC_XDR_DECODE,
};

/*
 * Bytes an encoder refers to instead of copying them: they belong in the
 * encoding just before out[at].  A sender writes out and the segments
 * in place together (writev), so block data leaves from the buffer it
 * was read into.
 */
struct sc_xdr_seg {
	size_t at;
	const uint8_t *p;
	size_t len;
};

/* Shorter opaques are copied: an iovec costs more than the copy. */
#define SC_XDR_GATHER_MIN 1024u

struct sc_xdr {
	enum sc_xdr_op op;
	uint8_t *out;		/* ENCODE: NULL to measure only */
	const uint8_t *in;	/* DECODE */
	size_t len;		/* ENCODE: capacity; DECODE: input length */
	size_t pos;
	uint8_t *arena;		/* DECODE: where arrays are placed */
	size_t arena_len;
	size_t arena_pos;
	int err;		/* 0 or the first negative error */
	/*
	 * ENCODE: with segs set, opaques of SC_XDR_GATHER_MIN bytes or
	 * more (max_segs of them at most) go to segs instead of out;
	 * gathered counts their bytes, which are part of the encoding but
	 * not of pos.
	 */
	struct sc_xdr_seg *segs;
	unsigned int nsegs;
	unsigned int max_segs;
	size_t gathered;
};

void sc_xdr_init_encode(struct sc_xdr *x, void *out, size_t cap);
void sc_xdr_init_decode(struct sc_xdr *x, const void *in, size_t len,
			void *arena, size_t arena_len);

static inline void sc_xdr_fail(struct sc_xdr *x, int err)
{
	if (!x->err)
		x->err = err;
}

/*
 * Room for n more bytes: on encode a pointer to write them to (or NULL
 * when measuring), on decode a pointer to read them from.  NULL with
 * x->err set when there is no room.
 */
static inline uint8_t *sc_xdr_take(struct sc_xdr *x, size_t n)
{
	uint8_t *p;

	if (x->err)
		return NULL;
	if (x->len - x->pos < n) {
		sc_xdr_fail(x, x->op == SC_XDR_ENCODE ? -SC_EMSGSIZE :
			    -SC_EBADMSG);
		return NULL;
	}
	if (x->op == SC_XDR_ENCODE)
		p = x->out ? x->out + x->pos : NULL;
	else
		p = (uint8_t *)x->in + x->pos;
	x->pos += n;
	return p;
}

static inline void sc_xdr_u32(struct sc_xdr *x, uint32_t *v)
{
	uint8_t *p = sc_xdr_take(x, 4);

	if (!p)
		return;
	if (x->op == SC_XDR_ENCODE)
		sc_put_be32(p, *v);
	else
		*v = sc_get_be32(p);
}

static inline void sc_xdr_u64(struct sc_xdr *x, uint64_t *v)
{
	uint32_t hi = (uint32_t)(*v >> 32), lo = (uint32_t)*v;

	sc_xdr_u32(x, &hi);
	sc_xdr_u32(x, &lo);
	if (x->op == SC_XDR_DECODE)
		*v = (uint64_t)hi << 32 | lo;
}

/* An enum or discriminant: values outside lo..hi are rejected. */
void sc_xdr_enum_range(struct sc_xdr *x, uint32_t *v, uint32_t lo,
		       uint32_t hi);

static inline void sc_xdr_enum(struct sc_xdr *x, uint32_t *v, uint32_t max)
{
	sc_xdr_enum_range(x, v, 0, max);
}

void sc_xdr_bool(struct sc_xdr *x, bool *v);
/* opaque[n]: n bytes plus zero padding to a multiple of four. */
void sc_xdr_fixed(struct sc_xdr *x, void *p, uint32_t n);
/* opaque<max>: decoding points *p into the input. */
void sc_xdr_var(struct sc_xdr *x, const uint8_t **p, uint32_t *len,
		uint32_t max);
/* string<max>: as opaque<max>, and no byte may be NUL. */
void sc_xdr_string(struct sc_xdr *x, const uint8_t **p, uint32_t *len,
		   uint32_t max);
/* Either direction of one value of some type. */
typedef void (*sc_xdr_proc)(struct sc_xdr *x, void *obj);

/*
 * type elem<max>: the count, then (decode) room for the elements from the
 * arena, then elem on each.  min_wire is the fewest bytes one element can
 * take on the wire; a count the remaining input cannot hold is rejected
 * before allocating.
 */
void sc_xdr_array(struct sc_xdr *x, void **elems, uint32_t *count,
		  uint32_t max, uint32_t min_wire, size_t elem_size,
		  sc_xdr_proc elem);
/* opaque elem[size] as a counted array, not copied on decode. */
void sc_xdr_fixed_array(struct sc_xdr *x, const void **elems,
			uint32_t *count, uint32_t max, uint32_t size);

#endif /* SEACACHE_XDR_H */
