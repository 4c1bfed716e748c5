// SPDX-License-Identifier: BSD-2-Clause
/*
 * The box link's codec (codec.h).  Frames, all numbers big-endian:
 *
 *   type u8, channel u32, then by type
 *   OPEN    target length u16 (1..255), target bytes
 *   CLOSE   -
 *   LIT     length u32 (1..DBX_LIT_MAX), bytes
 *   NEW     slot u32, length u16 (1..DBX_BLOCK), SHA-256 (32), bytes
 *   REF     slot u32, SHA-256 (32)
 *   CREDIT  bytes u32
 */
#include "codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HDR 5u
#define NEW_HDR (HDR + 4u + 2u + SC_HASH_LEN)
#define REF_LEN (HDR + 4u + SC_HASH_LEN)
#define TARGET_MAX 255u

void dbx_buf_free(struct dbx_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int dbx_buf_reserve(struct dbx_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->off == b->len)
		b->off = b->len = 0;
	if (b->cap - b->len >= n)
		return 0;
	if (b->off) {	/* move the pending bytes to the front first */
		memmove(b->p, b->p + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		if (b->cap - b->len >= n)
			return 0;
	}
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int dbx_buf_put(struct dbx_buf *b, const void *data, size_t n)
{
	if (dbx_buf_reserve(b, n))
		return -1;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

void dbx_buf_consume(struct dbx_buf *b, size_t n)
{
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint32_t get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

/* ---- the encoder's index ------------------------------------------------ */

static void index_free(struct dbx_index *x)
{
	if (!x)
		return;
	sc_itab_destroy(&x->tab);
	sc_lru_destroy(&x->lru);
	free(x->hash);
	free(x->key);
	free(x);
}

static struct dbx_index *index_new(uint32_t slots)
{
	struct dbx_index *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->capacity = slots;
	x->hash = calloc(slots, sizeof(*x->hash));
	x->key = calloc(slots, sizeof(*x->key));
	if (!x->hash || !x->key || sc_itab_init(&x->tab, slots) ||
	    sc_lru_init(&x->lru, slots)) {
		index_free(x);
		return NULL;
	}
	return x;
}

static uint32_t index_find(struct dbx_index *x, const struct sc_hash *h)
{
	uint64_t k = sc_hash_key64(h);
	uint32_t i;

	for (i = sc_itab_first(&x->tab, k); i != SC_NIL;
	     i = sc_itab_next(&x->tab, i))
		if (x->key[i] == k && sc_hash_eq(&x->hash[i], h))
			return i;
	return SC_NIL;
}

/* The slot the next new block goes to: a free one, else the LRU one. */
static uint32_t index_take(struct dbx_index *x, struct dbx_dir_stats *st)
{
	uint32_t i;

	if (x->used < x->capacity)
		return x->used++;
	i = sc_lru_tail(&x->lru);
	sc_lru_unlink(&x->lru, i);
	sc_itab_del(&x->tab, x->key[i], i);
	st->evictions++;
	return i;
}

int dbx_encoder_init(struct dbx_encoder *e, bool dedup, uint32_t slots)
{
	memset(e, 0, sizeof(*e));
	if (!dedup)
		return 0;
	if (slots == 0 || slots > DBX_SLOTS_MAX)
		return -1;
	e->index = index_new(slots);
	e->hasher = sc_hasher_new();
	if (!e->index || !e->hasher) {
		dbx_encoder_destroy(e);
		return -1;
	}
	return 0;
}

void dbx_encoder_destroy(struct dbx_encoder *e)
{
	index_free(e->index);
	if (e->hasher)
		sc_hasher_free(e->hasher);
	memset(e, 0, sizeof(*e));
}

void dbx_chunker_init(struct dbx_chunker *c)
{
	c->state = CK_MARK;
	c->mark_len = 0;
	c->block_len = 0;
}

/* ---- frames out --------------------------------------------------------- */

/* One dbx_encode call: literal runs of a channel go into one LIT frame. */
struct enc_run {
	struct dbx_encoder *e;
	struct dbx_buf *out;
	uint32_t ch;
	size_t lit_at;		/* the open LIT frame, from out->off (kept by reserve) */
	bool lit_open;
};

static uint8_t *frame(struct dbx_encoder *e, struct dbx_buf *out,
		      uint8_t type, uint32_t ch, size_t len)
{
	uint8_t *p;

	if (dbx_buf_reserve(out, len))
		return NULL;
	p = out->p + out->len;
	p[0] = type;
	dbx_put32(p + 1, ch);
	out->len += len;
	e->st.link_bytes += len;
	return p;
}

static int lit(struct enc_run *r, const uint8_t *p, size_t n)
{
	while (n) {
		uint32_t have = 0, take;
		uint8_t *f;

		if (r->lit_open)
			have = dbx_get32(r->out->p + r->out->off + r->lit_at + HDR);
		if (!r->lit_open || have == DBX_LIT_MAX) {
			f = frame(r->e, r->out, DBX_LIT, r->ch, HDR + 4);
			if (!f)
				return -1;
			r->lit_at = (size_t)(f - (r->out->p + r->out->off));
			r->lit_open = true;
			have = 0;
		}
		take = (uint32_t)(n < DBX_LIT_MAX - have ? n : DBX_LIT_MAX - have);
		if (dbx_buf_put(r->out, p, take))
			return -1;
		dbx_put32(r->out->p + r->out->off + r->lit_at + HDR, have + take);
		r->e->st.link_bytes += take;
		r->e->st.lit_bytes += take;
		p += take;
		n -= take;
	}
	return 0;
}

static int block(struct enc_run *r, const uint8_t *p, uint32_t n)
{
	struct dbx_encoder *e = r->e;
	struct sc_hash h;
	uint32_t slot;
	uint8_t *f;

	r->lit_open = false;
	if (sc_hasher_digest(e->hasher, p, n, &h))
		return -1;
	slot = index_find(e->index, &h);
	if (slot != SC_NIL) {
		sc_lru_touch(&e->index->lru, slot);
		f = frame(e, r->out, DBX_REF, r->ch, REF_LEN);
		if (!f)
			return -1;
		dbx_put32(f + HDR, slot);
		memcpy(f + HDR + 4, h.b, SC_HASH_LEN);
		e->st.ref_blocks++;
		e->st.ref_bytes += n;
		return 0;
	}
	f = frame(e, r->out, DBX_NEW, r->ch, NEW_HDR + n);
	if (!f)
		return -1;
	slot = index_take(e->index, &e->st);
	dbx_put32(f + HDR, slot);
	put16(f + HDR + 4, n);
	memcpy(f + HDR + 6, h.b, SC_HASH_LEN);
	memcpy(f + NEW_HDR, p, n);
	e->index->hash[slot] = h;
	e->index->key[slot] = sc_hash_key64(&h);
	sc_itab_add(&e->index->tab, e->index->key[slot], slot);
	sc_lru_push_head(&e->index->lru, slot);
	e->st.new_blocks++;
	e->st.new_bytes += n;
	return 0;
}

/* ---- the chunker -------------------------------------------------------- */

static uint64_t pad4(uint32_t n)
{
	return ((uint64_t)n + 3) & ~(uint64_t)3;
}

/*
 * The offset in scan of an XDR opaque's length whose data (padded) ends
 * the fragment of frag_len body bytes, or -1.
 */
static long find_payload(const uint8_t *scan, uint32_t scan_len,
			 uint32_t frag_len)
{
	for (uint32_t q = 0; q + 4 <= scan_len; q += 4) {
		uint32_t n = dbx_get32(scan + q);

		if (n >= DBX_PAYLOAD_MIN && q + 4 + pad4(n) == frag_len)
			return q;
	}
	return -1;
}

static int feed(struct enc_run *r, struct dbx_chunker *c, const uint8_t *p,
		size_t n);

static int scan_done(struct enc_run *r, struct dbx_chunker *c)
{
	long q = find_payload(c->scan, c->scan_len, c->frag_left);
	uint32_t head;

	if (q < 0) {
		c->frag_left -= c->scan_len;
		c->state = c->frag_left ? CK_LIT : CK_MARK;
		return lit(r, c->scan, c->scan_len);
	}
	head = (uint32_t)q + 4;
	c->payload_left = dbx_get32(c->scan + q);
	c->frag_left -= head;
	c->block_len = 0;
	c->skip = 0;
	c->state = CK_PAYLOAD;
	if (lit(r, c->scan, head))
		return -1;
	/* the rest of the scan is payload (the payload is longer) */
	return feed(r, c, c->scan + head, c->scan_len - head);
}

static int feed(struct enc_run *r, struct dbx_chunker *c, const uint8_t *p,
		size_t n)
{
	while (n) {
		size_t take = 0;

		switch (c->state) {
		case CK_MARK:
			take = 4 - c->mark_len < n ? 4 - c->mark_len : n;
			memcpy(c->mark + c->mark_len, p, take);
			c->mark_len += (uint32_t)take;
			if (lit(r, p, take))
				return -1;
			if (c->mark_len == 4) {
				c->mark_len = 0;
				c->frag_left = dbx_get32(c->mark) & 0x7fffffffu;
				c->scan_len = 0;
				c->scan_want = c->frag_left < DBX_SCAN ?
					       c->frag_left : DBX_SCAN;
				if (c->frag_left)
					c->state = CK_SCAN;
			}
			break;
		case CK_SCAN:
			take = c->scan_want - c->scan_len;
			take = take < n ? take : n;
			memcpy(c->scan + c->scan_len, p, take);
			c->scan_len += (uint32_t)take;
			if (c->scan_len == c->scan_want && scan_done(r, c))
				return -1;
			break;
		case CK_PAYLOAD:
			if (c->skip) {
				take = c->skip < n ? c->skip : n;
				if (lit(r, p, take))
					return -1;
				c->skip -= (uint32_t)take;
				c->payload_left -= (uint32_t)take;
			} else if (c->block_len == 0 && c->payload_left >= DBX_BLOCK &&
			    n >= DBX_BLOCK) {	/* a whole block in place */
				take = DBX_BLOCK;
				if (block(r, p, DBX_BLOCK))
					return -1;
				c->payload_left -= DBX_BLOCK;
			} else {
				take = DBX_BLOCK - c->block_len;
				take = take < c->payload_left ? take : c->payload_left;
				take = take < n ? take : n;
				memcpy(c->block + c->block_len, p, take);
				c->block_len += (uint32_t)take;
				c->payload_left -= (uint32_t)take;
				if (c->block_len == DBX_BLOCK || !c->payload_left) {
					if (block(r, c->block, c->block_len))
						return -1;
					c->block_len = 0;
				}
			}
			c->frag_left -= (uint32_t)take;
			if (c->payload_left == 0)
				c->state = c->frag_left ? CK_LIT : CK_MARK;
			break;
		case CK_LIT:
			take = c->frag_left < n ? c->frag_left : n;
			if (lit(r, p, take))
				return -1;
			c->frag_left -= (uint32_t)take;
			if (!c->frag_left)
				c->state = CK_MARK;
			break;
		}
		p += take;
		n -= take;
	}
	return 0;
}

int dbx_encode(struct dbx_encoder *e, struct dbx_chunker *c, uint32_t ch,
	       const void *data, size_t len, struct dbx_buf *out)
{
	struct enc_run r = { .e = e, .out = out, .ch = ch };

	e->st.raw_bytes += len;
	if (!e->index)
		return lit(&r, data, len);
	return feed(&r, c, data, len);
}

int dbx_flush(struct dbx_encoder *e, struct dbx_chunker *c, uint32_t ch,
	      struct dbx_buf *out)
{
	struct enc_run r = { .e = e, .out = out, .ch = ch };
	uint32_t n;

	if (c->state == CK_SCAN && c->scan_len) {
		n = c->scan_len;
		c->frag_left -= n;
		c->scan_len = 0;
		c->state = c->frag_left ? CK_LIT : CK_MARK;
		return lit(&r, c->scan, n);
	}
	if (c->state == CK_PAYLOAD && c->block_len) {
		e->st.partial_blocks++;
		n = c->block_len;
		c->skip = DBX_BLOCK - n < c->payload_left ? DBX_BLOCK - n :
							    c->payload_left;
		c->block_len = 0;
		return lit(&r, c->block, n);
	}
	return 0;
}

int dbx_put_open(struct dbx_encoder *e, struct dbx_buf *out, uint32_t ch,
		 const char *target)
{
	size_t n = strlen(target);
	uint8_t *f;

	if (n == 0 || n > TARGET_MAX)
		return -1;
	f = frame(e, out, DBX_OPEN, ch, HDR + 2 + n);
	if (!f)
		return -1;
	put16(f + HDR, (uint32_t)n);
	memcpy(f + HDR + 2, target, n);
	return 0;
}

int dbx_put_close(struct dbx_encoder *e, struct dbx_buf *out, uint32_t ch)
{
	return frame(e, out, DBX_CLOSE, ch, HDR) ? 0 : -1;
}

int dbx_put_credit(struct dbx_encoder *e, struct dbx_buf *out, uint32_t ch,
		   uint32_t n)
{
	uint8_t *f = frame(e, out, DBX_CREDIT, ch, HDR + 4);

	if (!f)
		return -1;
	dbx_put32(f + HDR, n);
	return 0;
}

/* ---- the decoder -------------------------------------------------------- */

int dbx_decoder_init(struct dbx_decoder *d, uint32_t slots,
		     const struct dbx_decoder_ops *ops, void *ctx)
{
	memset(d, 0, sizeof(*d));
	if (slots == 0 || slots > DBX_SLOTS_MAX)
		return -1;
	d->capacity = slots;
	d->ops = ops;
	d->ctx = ctx;
	d->len = calloc(slots, sizeof(*d->len));
	d->hash = calloc(slots, sizeof(*d->hash));
	if (!d->len || !d->hash) {
		dbx_decoder_destroy(d);
		return -1;
	}
	return 0;
}

void dbx_decoder_destroy(struct dbx_decoder *d)
{
	free(d->store);
	free(d->len);
	free(d->hash);
	d->store = NULL;
	d->len = NULL;
	d->hash = NULL;
}

#define BAD(...)                                                        \
	do {                                                            \
		snprintf(d->err, sizeof(d->err), __VA_ARGS__);          \
		return -1;                                              \
	} while (0)

/* The length of the frame at in (0: not all of its header is there). */
static long frame_len(struct dbx_decoder *d, const uint8_t *in, size_t len)
{
	uint32_t n;

	if (len < HDR)
		return 0;
	switch (in[0]) {
	case DBX_OPEN:
		if (len < HDR + 2)
			return 0;
		n = get16(in + HDR);
		if (n == 0 || n > TARGET_MAX)
			BAD("OPEN with a target of %u bytes", n);
		return HDR + 2 + n;
	case DBX_CLOSE:
		return HDR;
	case DBX_LIT:
		if (len < HDR + 4)
			return 0;
		n = dbx_get32(in + HDR);
		if (n == 0 || n > DBX_LIT_MAX)
			BAD("LIT of %u bytes", n);
		return HDR + 4 + n;
	case DBX_NEW:
		if (len < HDR + 6)
			return 0;
		n = get16(in + HDR + 4);
		if (n == 0 || n > DBX_BLOCK)
			BAD("NEW block of %u bytes", n);
		return NEW_HDR + n;
	case DBX_REF:
		return REF_LEN;
	case DBX_CREDIT:
		return HDR + 4;
	default:
		BAD("unknown frame type %u", in[0]);
	}
}

static long one_frame(struct dbx_decoder *d, const uint8_t *f, size_t flen)
{
	uint32_t ch = dbx_get32(f + 1), slot;
	char target[TARGET_MAX + 1];
	int rc = 0;

	switch (f[0]) {
	case DBX_OPEN:
		memcpy(target, f + HDR + 2, flen - HDR - 2);
		target[flen - HDR - 2] = '\0';
		if (strlen(target) != flen - HDR - 2)
			BAD("OPEN target holds a NUL byte");
		rc = d->ops->open(d->ctx, ch, target);
		break;
	case DBX_CLOSE:
		rc = d->ops->close(d->ctx, ch);
		break;
	case DBX_LIT:
		rc = d->ops->data(d->ctx, ch, f + HDR + 4, flen - HDR - 4);
		break;
	case DBX_NEW:
		slot = dbx_get32(f + HDR);
		if (slot >= d->capacity)
			BAD("NEW to slot %u of %u", slot, d->capacity);
		if (!d->store) {
			d->store = malloc((size_t)d->capacity * DBX_BLOCK);
			if (!d->store)
				BAD("out of memory for %u blocks", d->capacity);
		}
		d->len[slot] = (uint16_t)(flen - NEW_HDR);
		memcpy(d->hash[slot].b, f + HDR + 6, SC_HASH_LEN);
		memcpy(d->store + (size_t)slot * DBX_BLOCK, f + NEW_HDR,
		       flen - NEW_HDR);
		rc = d->ops->data(d->ctx, ch, f + NEW_HDR, flen - NEW_HDR);
		break;
	case DBX_REF:
		slot = dbx_get32(f + HDR);
		if (slot >= d->capacity || !d->len[slot])
			BAD("REF to slot %u, which holds nothing", slot);
		if (memcmp(d->hash[slot].b, f + HDR + 4, SC_HASH_LEN))
			BAD("REF to slot %u names another block", slot);
		rc = d->ops->data(d->ctx, ch, d->store + (size_t)slot * DBX_BLOCK,
				  d->len[slot]);
		break;
	case DBX_CREDIT:
		rc = d->ops->credit(d->ctx, ch, dbx_get32(f + HDR));
		break;
	}
	return rc ? -2 : 0;
}

long dbx_decode(struct dbx_decoder *d, const uint8_t *in, size_t len)
{
	size_t done = 0;

	while (done < len) {
		long flen = frame_len(d, in + done, len - done), rc;

		if (flen < 0)
			return -1;
		if (flen == 0 || (size_t)flen > len - done)
			break;
		rc = one_frame(d, in + done, (size_t)flen);
		if (rc)
			return rc;
		done += (size_t)flen;
		d->link_bytes += (uint64_t)flen;
	}
	return (long)done;
}
