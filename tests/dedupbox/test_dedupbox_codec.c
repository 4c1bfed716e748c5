// SPDX-License-Identifier: BSD-2-Clause
/*
 * The box link's codec in process: whatever stream goes into an encoder
 * comes out of the decoder byte for byte — random, repetitive and
 * NFS-shaped traffic, cut at every offset class, several channels
 * interleaved, a small index that evicts — and the encoding does not
 * depend on how the stream was cut.  A decoder refuses malformed frames
 * and references it cannot honour (a cold restart, a wrong fingerprint).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <seacache/prng.h>

#include "codec.h"
#include "traffic.h"

#define NCH 4
#define LEN ((size_t)3 << 20)

struct sink {
	struct dbx_buf out[NCH];
	unsigned int opens, closes;
	uint64_t credits;
};

static int s_open(void *ctx, uint32_t ch, const char *t)
{
	struct sink *s = ctx;

	assert_true(ch < NCH);
	assert_string_equal(t, "127.0.0.1:2049");
	s->opens++;
	return 0;
}

static int s_close(void *ctx, uint32_t ch)
{
	(void)ch;
	((struct sink *)ctx)->closes++;
	return 0;
}

static int s_data(void *ctx, uint32_t ch, const void *data, size_t len)
{
	struct sink *s = ctx;

	assert_true(ch < NCH);
	return dbx_buf_put(&s->out[ch], data, len);
}

static int s_credit(void *ctx, uint32_t ch, uint32_t n)
{
	(void)ch;
	((struct sink *)ctx)->credits += n;
	return 0;
}

static const struct dbx_decoder_ops ops = {
	.open = s_open, .close = s_close, .data = s_data, .credit = s_credit,
};

/* Feed the frames in link to d in pieces of random size up to max. */
static void decode_cut(struct dbx_decoder *d, struct dbx_buf *link,
		       struct sc_prng *g, size_t max)
{
	struct dbx_buf in = { 0 };

	while (dbx_buf_pending(link)) {
		size_t n = 1 + sc_prng_below(g, (uint32_t)max);
		long used;

		if (n > dbx_buf_pending(link))
			n = dbx_buf_pending(link);
		assert_int_equal(dbx_buf_put(&in, link->p + link->off, n), 0);
		dbx_buf_consume(link, n);
		used = dbx_decode(d, in.p + in.off, dbx_buf_pending(&in));
		assert_true(used >= 0);
		dbx_buf_consume(&in, (size_t)used);
	}
	assert_int_equal(dbx_buf_pending(&in), 0);
	dbx_buf_free(&in);
}

static void sink_free(struct sink *s)
{
	for (int i = 0; i < NCH; i++)
		dbx_buf_free(&s->out[i]);
}

/*
 * One channel's stream through a pair, encoded in pieces of `cut` bytes
 * (0: random sizes up to 70000); the link bytes it took.
 */
static uint64_t through(const uint8_t *data, size_t len, size_t cut,
			uint32_t slots, struct dbx_dir_stats *st)
{
	struct dbx_encoder e;
	struct dbx_decoder d;
	struct dbx_chunker ck;
	struct dbx_buf link = { 0 };
	struct sink s = { 0 };
	struct sc_prng g;
	uint64_t bytes;

	sc_prng_seed(&g, cut * 7 + 1);
	assert_int_equal(dbx_encoder_init(&e, true, slots), 0);
	assert_int_equal(dbx_decoder_init(&d, slots, &ops, &s), 0);
	dbx_chunker_init(&ck);
	for (size_t off = 0; off < len;) {
		size_t n = cut ? cut : 1 + sc_prng_below(&g, 70000);

		if (n > len - off)
			n = len - off;
		assert_int_equal(dbx_encode(&e, &ck, 2, data + off, n, &link), 0);
		off += n;
		if (off == len)	/* the end of a connection */
			assert_int_equal(dbx_flush(&e, &ck, 2, &link), 0);
		if (dbx_buf_pending(&link) > ((size_t)1 << 20) || off == len)
			decode_cut(&d, &link, &g, 100000);
	}
	assert_int_equal(dbx_buf_pending(&s.out[2]), len);
	assert_memory_equal(s.out[2].p + s.out[2].off, data, len);
	assert_int_equal(d.link_bytes, e.st.link_bytes);
	bytes = e.st.link_bytes;
	*st = e.st;
	dbx_buf_free(&link);
	sink_free(&s);
	dbx_encoder_destroy(&e);
	dbx_decoder_destroy(&d);
	return bytes;
}

/* cuts: every offset class of a record mark, a word, a block and a read */
static const size_t cuts[] = { 1, 2, 3, 4, 5, 7, 13, 511, 512, 513, 4095,
			       4096, 4097, 65535, 65536, 65537, 0 };

static void every_cut(enum traffic_kind kind, uint64_t seed, size_t len)
{
	size_t n;
	uint8_t *data = traffic_make(kind, seed, len, &n);
	struct dbx_dir_stats st, st0 = { 0 };
	uint64_t first = 0;

	assert_non_null(data);
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		/* a byte at a time: a shorter stream, still every class */
		size_t len_i = cuts[i] == 1 ? (n < 300000 ? n : 300000) : n;
		uint64_t bytes = through(data, len_i, cuts[i], 4096, &st);

		if (cuts[i] == 1)
			continue;
		if (!st0.raw_bytes)
			st0 = st;
		if (!cuts[i])
			first = bytes;
		/* the chunker sees the stream, not the cuts */
		assert_int_equal(st.ref_blocks, st0.ref_blocks);
		assert_int_equal(st.new_blocks, st0.new_blocks);
		assert_int_equal(st.lit_bytes, st0.lit_bytes);
	}
	if (kind == TRAFFIC_NFS) {
		/*
		 * The payloads repeat (48 distinct blocks): mostly references
		 * (new: the first of each, payload tails; whole: split records)
		 */
		assert_true(st0.ref_blocks > 2 * st0.new_blocks);
		/* a reference costs its 41-byte frame, a new block 43 more */
		assert_true(first < st0.lit_bytes + st0.new_bytes +
				    43 * st0.new_blocks + 41 * st0.ref_blocks +
				    9 * (n / 1000));
		assert_true(st0.ref_bytes > n / 4);
	} else {
		assert_int_equal(st0.ref_blocks + st0.new_blocks, 0);
	}
	free(data);
}

static void random_stream(void **state)
{
	(void)state;
	every_cut(TRAFFIC_RANDOM, 11, LEN);
}

static void repetitive_stream(void **state)
{
	(void)state;
	every_cut(TRAFFIC_REPEAT, 12, LEN);
}

static void nfs_stream(void **state)
{
	(void)state;
	every_cut(TRAFFIC_NFS, 13, LEN);
	every_cut(TRAFFIC_NFS, 14, LEN);
}

/* A 16-slot index: evictions, and the decoder follows them. */
static void small_index_evicts(void **state)
{
	size_t n;
	uint8_t *data = traffic_make(TRAFFIC_NFS, 15, LEN, &n);
	struct dbx_dir_stats st;

	(void)state;
	assert_non_null(data);
	through(data, n, 0, 16, &st);
	assert_true(st.evictions > 100);
	assert_true(st.ref_blocks > 0);
	free(data);
}

/*
 * Pipelined calls on several connections: NCH channels, their pieces
 * interleaved at random on one link with control frames in between; a
 * block one channel sent is a reference on another.
 */
static void channels_interleaved(void **state)
{
	uint8_t *data[NCH];
	size_t len[NCH], off[NCH] = { 0 };
	struct dbx_encoder e;
	struct dbx_decoder d;
	struct dbx_chunker ck[NCH];
	struct dbx_buf link = { 0 };
	struct sink s = { 0 };
	struct sc_prng g;
	uint64_t ref_before;

	(void)state;
	sc_prng_seed(&g, 99);
	assert_int_equal(dbx_encoder_init(&e, true, 1024), 0);
	assert_int_equal(dbx_decoder_init(&d, 1024, &ops, &s), 0);
	for (int c = 0; c < NCH; c++) {
		data[c] = traffic_make(c == 3 ? TRAFFIC_RANDOM : TRAFFIC_NFS,
				       c == 1 ? 20 : 21 + (uint64_t)c, LEN / 2, &len[c]);
		assert_non_null(data[c]);
		dbx_chunker_init(&ck[c]);
		assert_int_equal(dbx_put_open(&e, &link, (uint32_t)c, "127.0.0.1:2049"), 0);
	}
	for (;;) {
		int c = (int)sc_prng_below(&g, NCH), left = 0;
		size_t k = 1 + sc_prng_below(&g, 9000);

		for (int i = 0; i < NCH; i++)
			left += off[i] < len[i];
		if (!left)
			break;
		if (off[c] == len[c])
			continue;
		if (k > len[c] - off[c])
			k = len[c] - off[c];
		assert_int_equal(dbx_encode(&e, &ck[c], (uint32_t)c, data[c] + off[c], k, &link), 0);
		assert_int_equal(dbx_put_credit(&e, &link, (uint32_t)c, (uint32_t)k), 0);
		off[c] += k;
		if (dbx_buf_pending(&link) > 200000)
			decode_cut(&d, &link, &g, 5000);
	}
	for (int c = 0; c < NCH; c++)
		assert_int_equal(dbx_put_close(&e, &link, (uint32_t)c), 0);
	decode_cut(&d, &link, &g, 5000);
	for (int c = 0; c < NCH; c++) {
		assert_int_equal(dbx_buf_pending(&s.out[c]), len[c]);
		assert_memory_equal(s.out[c].p, data[c], len[c]);
	}
	assert_int_equal(s.opens, NCH);
	assert_int_equal(s.closes, NCH);
	assert_true(e.st.ref_blocks > 0);

	/* channel 0's stream again on channel 1 (another VM reads the same) */
	ref_before = e.st.ref_blocks;
	dbx_chunker_init(&ck[1]);
	dbx_buf_free(&s.out[1]);
	assert_int_equal(dbx_encode(&e, &ck[1], 1, data[0], len[0], &link), 0);
	decode_cut(&d, &link, &g, 70000);
	assert_memory_equal(s.out[1].p, data[0], len[0]);
	assert_true(e.st.ref_blocks > ref_before);

	for (int c = 0; c < NCH; c++)
		free(data[c]);
	dbx_buf_free(&link);
	sink_free(&s);
	dbx_encoder_destroy(&e);
	dbx_decoder_destroy(&d);
}

/* Frames the decoder must refuse, each with its reason. */
static void expect_refused(const uint8_t *f, size_t len, const char *why)
{
	struct sink s = { 0 };
	struct dbx_decoder d;

	assert_int_equal(dbx_decoder_init(&d, 16, &ops, &s), 0);
	assert_int_equal(dbx_decode(&d, f, len), -1);
	if (!strstr(d.err, why))
		fail_msg("decoder said \"%s\", want \"%s\"", d.err, why);
	dbx_decoder_destroy(&d);
	sink_free(&s);
}

static void malformed_frames_refused(void **state)
{
	uint8_t f[64] = { 0 };

	(void)state;
	f[0] = 9;
	expect_refused(f, 5, "unknown frame type 9");
	f[0] = DBX_LIT;
	f[5] = 0x01;	/* 16 MiB */
	expect_refused(f, 9, "LIT of 16777216 bytes");
	memset(f, 0, sizeof(f));
	f[0] = DBX_LIT;
	expect_refused(f, 9, "LIT of 0 bytes");
	f[0] = DBX_NEW;
	f[9] = 0x10;
	f[10] = 0x01;	/* 4097 bytes */
	expect_refused(f, 11, "NEW block of 4097 bytes");
	memset(f, 0, sizeof(f));
	f[0] = DBX_NEW;
	f[5] = 0x01;	/* slot 2^24 */
	f[10] = 1;
	expect_refused(f, 5 + 4 + 2 + 32 + 1, "NEW to slot 16777216 of 16");
	memset(f, 0, sizeof(f));
	f[0] = DBX_REF;
	expect_refused(f, 5 + 4 + 32, "REF to slot 0, which holds nothing");
	f[0] = DBX_OPEN;
	expect_refused(f, 7, "OPEN with a target of 0 bytes");
}

/*
 * A restart: a new session starts cold on both ends.  The old session's
 * reference sent to a new decoder is refused, not served from nothing;
 * a reference whose fingerprint is not the slot's is refused too.
 */
static void cold_restart_refuses_old_references(void **state)
{
	uint8_t block[4 + 16 + 4 + 4096];
	struct dbx_encoder e;
	struct dbx_decoder d;
	struct dbx_chunker ck;
	struct dbx_buf link = { 0 };
	struct sink s = { 0 };
	size_t first;

	(void)state;
	memset(block, 0x5a, sizeof(block));
	block[0] = 0x80;
	block[1] = 0;
	block[2] = (4 + 16 + 4 + 4096 - 4) >> 8;
	block[3] = (uint8_t)(4 + 16 + 4 + 4096 - 4);
	block[20] = 0;
	block[21] = 0;
	block[22] = 0x10;
	block[23] = 0;
	assert_int_equal(dbx_encoder_init(&e, true, 16), 0);
	dbx_chunker_init(&ck);
	assert_int_equal(dbx_encode(&e, &ck, 0, block, sizeof(block), &link), 0);
	assert_int_equal(e.st.new_blocks, 1);
	first = link.len;
	assert_int_equal(dbx_encode(&e, &ck, 0, block, sizeof(block), &link), 0);
	assert_int_equal(e.st.ref_blocks, 1);

	/* the whole stream through a decoder of this session */
	assert_int_equal(dbx_decoder_init(&d, 16, &ops, &s), 0);
	assert_int_equal(dbx_decode(&d, link.p, link.len), (long)link.len);
	assert_int_equal(dbx_buf_pending(&s.out[0]), 2 * sizeof(block));
	dbx_decoder_destroy(&d);

	/* the second record alone, to a new session's decoder */
	assert_int_equal(dbx_decoder_init(&d, 16, &ops, &s), 0);
	assert_int_equal(dbx_decode(&d, link.p + first, link.len - first), -1);
	assert_non_null(strstr(d.err, "which holds nothing"));
	dbx_decoder_destroy(&d);

	/* a forged fingerprint in the reference */
	assert_int_equal(dbx_decoder_init(&d, 16, &ops, &s), 0);
	link.p[link.len - 1] ^= 1;
	assert_int_equal(dbx_decode(&d, link.p, link.len), -1);
	assert_non_null(strstr(d.err, "names another block"));
	dbx_decoder_destroy(&d);

	dbx_buf_free(&link);
	sink_free(&s);
	dbx_encoder_destroy(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_stream),
		cmocka_unit_test(repetitive_stream),
		cmocka_unit_test(nfs_stream),
		cmocka_unit_test(small_index_evicts),
		cmocka_unit_test(channels_interleaved),
		cmocka_unit_test(malformed_frames_refused),
		cmocka_unit_test(cold_restart_refuses_old_references),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
