// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * XDR primitives over a flat buffer (see seacache/xdr.h).
 */
#include "seacache/xdr.h"

void sc_xdr_init_encode(struct sc_xdr *x, void *out, size_t cap)
{
	sc_memset(x, 0, sizeof(*x));
	x->op = SC_XDR_ENCODE;
	x->out = out;
	x->len = out ? cap : (size_t)-1;
}

void sc_xdr_init_decode(struct sc_xdr *x, const void *in, size_t len,
			void *arena, size_t arena_len)
{
	sc_memset(x, 0, sizeof(*x));
	x->op = SC_XDR_DECODE;
	x->in = in;
	x->len = len;
	x->arena = arena;
	x->arena_len = arena ? arena_len : 0;
}

/*
 * A value outside its bounds: the caller's mistake when encoding (the
 * output is then discarded), the peer's when decoding.
 */
static void xdr_reject(struct sc_xdr *x, int decode_err)
{
	sc_xdr_fail(x, x->op == SC_XDR_ENCODE ? -SC_EINVAL : decode_err);
}

void sc_xdr_enum_range(struct sc_xdr *x, uint32_t *v, uint32_t lo,
		       uint32_t hi)
{
	sc_xdr_u32(x, v);
	if (!x->err && (*v < lo || *v > hi))
		xdr_reject(x, -SC_EBADMSG);
}

void sc_xdr_bool(struct sc_xdr *x, bool *v)
{
	uint32_t u = *v ? 1 : 0;

	sc_xdr_enum(x, &u, 1);
	*v = u == 1;
}

static uint32_t xdr_pad(uint32_t n)
{
	return (4 - (n & 3)) & 3;
}

/* Encode: refer to n bytes at src in a segment instead of copying them. */
static bool xdr_gather(struct sc_xdr *x, const void *src, uint32_t n)
{
	struct sc_xdr_seg *s;

	if (x->op != SC_XDR_ENCODE || !x->segs || x->err ||
	    n < SC_XDR_GATHER_MIN || x->nsegs == x->max_segs)
		return false;
	s = &x->segs[x->nsegs++];
	s->at = x->pos;
	s->p = src;
	s->len = n;
	x->gathered += n;
	return true;
}

/*
 * n bytes and their padding: encode writes them from src (nothing when
 * measuring) or gathers them; decode checks the padding and copies to
 * dst unless NULL.
 */
static void xdr_bytes_padded(struct sc_xdr *x, const void *src, void *dst,
			     uint32_t n)
{
	static const uint8_t zeros[4];
	uint32_t pad = xdr_pad(n);
	uint8_t *q;

	if (xdr_gather(x, src, n))
		n = 0;		/* out holds the padding alone */
	q = sc_xdr_take(x, (size_t)n + pad);
	if (!q)
		return;
	if (x->op == SC_XDR_ENCODE) {
		if (n)	/* an empty opaque may have no pointer */
			sc_memcpy(q, src, n);
		sc_memset(q + n, 0, pad);
		return;
	}
	if (sc_memcmp(q + n, zeros, pad)) {
		sc_xdr_fail(x, -SC_EBADMSG);
		return;
	}
	if (dst && n)
		sc_memcpy(dst, q, n);
}

void sc_xdr_fixed(struct sc_xdr *x, void *p, uint32_t n)
{
	xdr_bytes_padded(x, p, p, n);
}

void sc_xdr_var(struct sc_xdr *x, const uint8_t **p, uint32_t *len,
		uint32_t max)
{
	size_t start;

	sc_xdr_u32(x, len);
	if (!x->err && *len > max)
		xdr_reject(x, -SC_E2BIG);
	if (x->err)
		return;
	start = x->pos;
	xdr_bytes_padded(x, *p, NULL, *len);
	if (x->op == SC_XDR_DECODE)
		*p = x->err || !*len ? NULL : x->in + start;
}

void sc_xdr_string(struct sc_xdr *x, const uint8_t **p, uint32_t *len,
		   uint32_t max)
{
	uint32_t i;

	sc_xdr_var(x, p, len, max);
	for (i = 0; !x->err && i < *len; i++)
		if (!(*p)[i])
			xdr_reject(x, -SC_EBADMSG);
}

/* A count within max, and (decode) that the input can hold. */
static void xdr_count(struct sc_xdr *x, uint32_t *count, uint32_t max,
		      uint32_t min_wire)
{
	sc_xdr_u32(x, count);
	if (!x->err && *count > max)
		xdr_reject(x, -SC_E2BIG);
	else if (!x->err && x->op == SC_XDR_DECODE &&
		 (uint64_t)*count * min_wire > x->len - x->pos)
		sc_xdr_fail(x, -SC_EBADMSG);
}

void sc_xdr_array(struct sc_xdr *x, void **elems, uint32_t *count,
		  uint32_t max, uint32_t min_wire, size_t elem_size,
		  sc_xdr_proc elem)
{
	size_t need, align = sizeof(uint64_t);
	uint32_t i;

	xdr_count(x, count, max, min_wire);
	if (x->err)
		return;
	if (x->op == SC_XDR_DECODE) {
		*elems = NULL;
		if (!*count)
			return;
		need = (size_t)*count * elem_size;
		x->arena_pos = (x->arena_pos + align - 1) & ~(align - 1);
		if (x->arena_pos > x->arena_len ||
		    x->arena_len - x->arena_pos < need) {
			sc_xdr_fail(x, -SC_ENOMEM);
			return;
		}
		*elems = x->arena + x->arena_pos;
		sc_memset(*elems, 0, need);
		x->arena_pos += need;
	}
	for (i = 0; !x->err && i < *count; i++)
		elem(x, (uint8_t *)*elems + i * elem_size);
}

void sc_xdr_fixed_array(struct sc_xdr *x, const void **elems,
			uint32_t *count, uint32_t max, uint32_t size)
{
	uint32_t n;

	/* size is a multiple of four for every use: no padding. */
	xdr_count(x, count, max, size);
	if (x->err)
		return;
	n = *count * size;
	if (x->op == SC_XDR_ENCODE) {
		uint8_t *q = sc_xdr_take(x, n);

		if (q && n)
			sc_memcpy(q, *elems, n);
		return;
	}
	*elems = n ? x->in + x->pos : NULL;
	sc_xdr_take(x, n);
}
