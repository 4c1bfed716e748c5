// SPDX-License-Identifier: BSD-2-Clause
/*
 * The dedup box's link codec (tools/dedupbox/codec.c) under libFuzzer.
 * The input's first byte picks the property, the slot count and the
 * channel count, its second seeds the sizes the bytes arrive in; the rest
 * is either
 *
 *  - a frame stream, as a hostile box could send it: a decoder fed it
 *    whole and one fed it piece by piece hand on the same events (open,
 *    close, data, credit, with their bytes) in the same order, stop at the
 *    same frame with the same answer, and never hold back more than one
 *    frame's bytes; or
 *  - the bytes of up to four channels, as clients send them: encoded in
 *    pieces (flushed now and then, as an idle channel is) and decoded,
 *    every channel's bytes come out exactly as they went in, whatever
 *    the slot count makes the encoder evict.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "seacache/prng.h"
#include "codec.h"
#include "fuzz_common.h"

#define CHANNELS 4u

static const uint32_t slot_counts[] = { 1, 2, 3, 8, 64 };

/* What a decoder handed on, one record per event. */
struct events {
	struct dbx_buf log;
	struct dbx_buf chan[CHANNELS];	/* round trip: data per channel */
};

static void put_event(struct events *ev, uint8_t type, uint32_t ch,
		      const void *b, size_t len)
{
	uint8_t hdr[9];

	hdr[0] = type;
	dbx_put32(hdr + 1, ch);
	dbx_put32(hdr + 5, (uint32_t)len);
	FUZZ_CHECK(!dbx_buf_put(&ev->log, hdr, sizeof(hdr)) &&
		   (!len || !dbx_buf_put(&ev->log, b, len)),
		   "out of memory for the event log");
}

static int on_open(void *ctx, uint32_t ch, const char *target)
{
	put_event(ctx, DBX_OPEN, ch, target, strlen(target));
	return 0;
}

static int on_close(void *ctx, uint32_t ch)
{
	put_event(ctx, DBX_CLOSE, ch, NULL, 0);
	return 0;
}

static int on_data(void *ctx, uint32_t ch, const void *data, size_t len)
{
	struct events *ev = ctx;

	put_event(ev, DBX_LIT, ch, data, len);
	if (ch < CHANNELS)
		FUZZ_CHECK(!dbx_buf_put(&ev->chan[ch], data, len),
			   "out of memory for channel %u", ch);
	return 0;
}

static int on_credit(void *ctx, uint32_t ch, uint32_t n)
{
	uint8_t b[4];

	dbx_put32(b, n);
	put_event(ctx, DBX_CREDIT, ch, b, sizeof(b));
	return 0;
}

static const struct dbx_decoder_ops ops = {
	.open = on_open, .close = on_close, .data = on_data, .credit = on_credit,
};

/* Whether two buffers hold the same bytes (either may be unallocated). */
static bool same_bytes(const struct dbx_buf *a, const struct dbx_buf *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->p, b->p, a->len));
}

static void events_free(struct events *ev)
{
	unsigned int i;

	dbx_buf_free(&ev->log);
	for (i = 0; i < CHANNELS; i++)
		dbx_buf_free(&ev->chan[i]);
}

/* Mostly small pieces, sometimes more than a whole frame. */
static size_t piece_size(struct sc_prng *pr, size_t left)
{
	size_t n = sc_prng_below(pr, 4) ? 1 + sc_prng_below(pr, 100) :
					  1 + sc_prng_below(pr, 2 * DBX_FRAME_MAX);

	return n < left ? n : left;
}

/* Decode in[0..len) in pieces; the answer dbx_decode gave whole. */
static long decode_in_pieces(struct dbx_decoder *d, struct sc_prng *pr,
			     const uint8_t *in, size_t len)
{
	struct dbx_buf held = { 0 };
	size_t pos = 0, n;
	long done = 0, rc;

	while (pos < len) {
		n = piece_size(pr, len - pos);
		FUZZ_CHECK(!dbx_buf_put(&held, in + pos, n), "out of memory");
		pos += n;
		rc = dbx_decode(d, held.p + held.off, dbx_buf_pending(&held));
		if (rc < 0) {
			dbx_buf_free(&held);
			return rc;
		}
		dbx_buf_consume(&held, (size_t)rc);
		done += rc;
		FUZZ_CHECK(dbx_buf_pending(&held) < DBX_FRAME_MAX,
			   "%zu bytes held back, more than a frame",
			   dbx_buf_pending(&held));
	}
	dbx_buf_free(&held);
	return done;
}

static void check_decode(uint32_t slots, struct sc_prng *pr,
			 const uint8_t *in, size_t len)
{
	struct events whole = { 0 }, split = { 0 };
	struct dbx_decoder a, b;
	long ra, rb;

	FUZZ_CHECK(!dbx_decoder_init(&a, slots, &ops, &whole) &&
		   !dbx_decoder_init(&b, slots, &ops, &split),
		   "decoder init with %u slots", slots);
	ra = dbx_decode(&a, in, len);
	rb = decode_in_pieces(&b, pr, in, len);
	FUZZ_CHECK(ra == rb, "whole: %ld, in pieces: %ld", ra, rb);
	FUZZ_CHECK(ra != -2, "a callback failed, none does");
	FUZZ_CHECK(same_bytes(&whole.log, &split.log),
		   "the events differ: %zu bytes of them whole, %zu in pieces",
		   whole.log.len, split.log.len);
	FUZZ_CHECK(ra < 0 || len - (size_t)ra < DBX_FRAME_MAX,
		   "%zu bytes left undecoded", len - (size_t)ra);
	dbx_decoder_destroy(&a);
	dbx_decoder_destroy(&b);
	events_free(&whole);
	events_free(&split);
}

/*
 * Encode as a box does the bytes of nch channels, channel c's being its
 * share of in (the c-th of nch equal parts), their pieces interleaved;
 * the frames in *frames, what each channel sent in sent[c].
 */
static void encode_channels(uint32_t slots, unsigned int nch,
			    struct sc_prng *pr, const uint8_t *in, size_t len,
			    struct dbx_buf *frames, struct dbx_buf *sent)
{
	struct dbx_chunker *ck = fuzz_alloc(CHANNELS * sizeof(*ck));
	size_t pos[CHANNELS], end[CHANNELS], n, left = len;
	struct dbx_encoder e;
	uint32_t ch;

	FUZZ_CHECK(!dbx_encoder_init(&e, true, slots), "encoder init");
	for (ch = 0; ch < nch; ch++) {
		dbx_chunker_init(&ck[ch]);
		pos[ch] = len * ch / nch;
		end[ch] = len * (ch + 1) / nch;
	}
	while (left) {
		do
			ch = sc_prng_below(pr, nch);
		while (pos[ch] == end[ch]);
		n = piece_size(pr, end[ch] - pos[ch]);
		FUZZ_CHECK(!dbx_encode(&e, &ck[ch], ch, in + pos[ch], n, frames),
			   "encode of %zu bytes", n);
		FUZZ_CHECK(!dbx_buf_put(&sent[ch], in + pos[ch], n),
			   "out of memory");
		pos[ch] += n;
		left -= n;
		/* now and then a channel pauses, as one waiting for a reply */
		if (!sc_prng_below(pr, 64))
			FUZZ_CHECK(!dbx_flush(&e, &ck[ch], ch, frames), "flush");
	}
	for (ch = 0; ch < nch; ch++)
		FUZZ_CHECK(!dbx_flush(&e, &ck[ch], ch, frames), "flush");
	dbx_encoder_destroy(&e);
	free(ck);
}

static void check_round_trip(uint32_t slots, unsigned int nch,
			     struct sc_prng *pr, const uint8_t *in, size_t len)
{
	struct dbx_buf frames = { 0 }, sent[CHANNELS] = { 0 };
	struct events got = { 0 };
	struct dbx_decoder d;
	unsigned int ch;
	long rc;

	encode_channels(slots, nch, pr, in, len, &frames, sent);
	FUZZ_CHECK(!dbx_decoder_init(&d, slots, &ops, &got), "decoder init");
	rc = decode_in_pieces(&d, pr, frames.p, frames.len);
	FUZZ_CHECK(rc == (long)frames.len, "decoded %ld of %zu frame bytes: %s",
		   rc, frames.len, d.err);
	for (ch = 0; ch < CHANNELS; ch++)
		FUZZ_CHECK(same_bytes(&got.chan[ch], &sent[ch]),
			   "channel %u: %zu bytes out, %zu in", ch,
			   got.chan[ch].len, sent[ch].len);
	dbx_decoder_destroy(&d);
	events_free(&got);
	dbx_buf_free(&frames);
	for (ch = 0; ch < CHANNELS; ch++)
		dbx_buf_free(&sent[ch]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	uint32_t slots;
	struct sc_prng pr;

	if (len < 2)
		return 0;
	slots = slot_counts[(data[0] >> 1) %
			    (sizeof(slot_counts) / sizeof(slot_counts[0]))];
	sc_prng_seed(&pr, data[1]);
	if (data[0] & 1)
		check_round_trip(slots, 1 + (data[0] >> 4) % CHANNELS, &pr,
				 data + 2, len - 2);
	else
		check_decode(slots, &pr, data + 2, len - 2);
	return 0;
}

/*
 * Seeds: an NFS READ reply's record carrying the same two 4 KiB blocks
 * twice (so that the encoder sends NEW, then REF), as channel bytes for
 * the round trip and, encoded, as the frame stream for the decoder.
 */
int fuzz_write_seeds(const char *vectors, const char *out)
{
	enum { HDR_LEN = 96, PAYLOAD = 2 * DBX_BLOCK,
	       REC = 4 + HDR_LEN + 4 + PAYLOAD };
	struct dbx_buf frames = { 0 }, sent[CHANNELS] = { 0 };
	uint8_t *seed = fuzz_alloc(2 + 2 * REC), *rec = seed + 2;
	struct sc_prng pr;
	unsigned int i;
	int rc;

	(void)vectors;
	dbx_put32(rec, 0x80000000u | (REC - 4));
	memset(rec + 4, 0, HDR_LEN);
	dbx_put32(rec + 4 + HDR_LEN, PAYLOAD);
	for (i = 0; i < PAYLOAD; i++)
		rec[8 + HDR_LEN + i] = (uint8_t)(i * 7 + i / DBX_BLOCK);
	memcpy(rec + REC, rec, REC);
	seed[0] = 3 << 1 | 1;		/* round trip, 8 slots, 1 channel */
	seed[1] = 0;
	rc = fuzz_write_seed(out, "read-replies", seed, 2 + 2 * REC);
	if (!rc) {
		sc_prng_seed(&pr, seed[1]);
		/* the same, decoded: 8 slots, then the frames */
		FUZZ_CHECK(!dbx_buf_put(&frames, (uint8_t[]){ 3 << 1, 0 }, 2),
			   "out of memory");
		encode_channels(8, 1, &pr, rec, 2 * REC, &frames, sent);
		rc = fuzz_write_seed(out, "read-reply-frames", frames.p,
				     frames.len);
	}
	free(seed);
	dbx_buf_free(&frames);
	for (i = 0; i < CHANNELS; i++)
		dbx_buf_free(&sent[i]);
	return rc;
}
