// SPDX-License-Identifier: BSD-2-Clause
/*
 * Record marking (lib/rpc/record.c, the reassembly every user-space RPC
 * server and client runs on its sockets) under libFuzzer.  The input's
 * first byte picks the record limit and its second the sizes the stream
 * arrives in; the rest is the byte stream, written to a non-blocking pipe
 * piece by piece, each piece read before the next is written.
 *
 * Properties, each input: the records sc_rec_read hands over are exactly
 * those a plain reading of RFC 5531 section 11 finds in the stream, in
 * order; it answers -E2BIG where and only where a record outgrows the
 * limit, and -ECONNRESET at the end of the stream otherwise; nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "seacache/prng.h"
#include "fuzz_common.h"
#include "record.h"

static const size_t limits[] = { 1, 4, 100, 4096, 65536, 1u << 20 };

/* The stream as RFC 5531 reads it: its records, or where one is too big. */
struct model {
	uint8_t *buf;			/* the records, one after another */
	size_t *ends;			/* record i: buf[ends[i-1]..ends[i]) */
	size_t n;
	bool too_big;			/* after the n records */
};

static void model_read(struct model *m, const uint8_t *s, size_t len,
		       size_t max)
{
	size_t pos = 0, start = 0, have = 0;
	uint32_t v, frag;

	m->buf = fuzz_alloc(len + 1);
	m->ends = fuzz_alloc((len / 4 + 1) * sizeof(*m->ends));
	m->n = 0;
	m->too_big = false;
	while (len - pos >= 4) {
		v = (uint32_t)s[pos] << 24 | (uint32_t)s[pos + 1] << 16 |
		    (uint32_t)s[pos + 2] << 8 | s[pos + 3];
		pos += 4;
		frag = v & SC_RPC_RM_LEN_MASK;
		if (have + frag > max) {
			m->too_big = true;
			return;
		}
		if (frag > len - pos)
			return;		/* cut off by the end of the stream */
		memcpy(m->buf + start + have, s + pos, frag);
		pos += frag;
		have += frag;
		if (v & SC_RPC_RM_LAST) {
			start += have;
			have = 0;
			m->ends[m->n++] = start;
		}
	}
}

/* Take what the reader has; false once it answered an error (*err). */
static bool drain(struct sc_rec_reader *r, int fd, const struct model *m,
		  size_t *i, int *err)
{
	size_t len, from;
	uint8_t *rec;
	int rc;

	while ((rc = sc_rec_read(r, fd)) == 1) {
		rec = sc_rec_take(r, &len);
		FUZZ_CHECK(*i < m->n, "record %zu handed over, the stream has %zu",
			   *i, m->n);
		from = *i ? m->ends[*i - 1] : 0;
		FUZZ_CHECK(len == m->ends[*i] - from &&
			   !memcmp(rec, m->buf + from, len),
			   "record %zu: %zu bytes, not the stream's %zu", *i,
			   len, m->ends[*i] - from);
		free(rec);
		(*i)++;
	}
	*err = rc;
	return rc == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct sc_rec_reader r;
	struct sc_prng pr;
	struct model m;
	size_t max, pos = 0, piece, i = 0;
	int fds[2], err = 0;
	bool open = true;

	if (len < 2)
		return 0;
	max = limits[data[0] % (sizeof(limits) / sizeof(limits[0]))];
	sc_prng_seed(&pr, data[1]);
	data += 2;
	len -= 2;
	model_read(&m, data, len, max);
	FUZZ_CHECK(!pipe2(fds, O_NONBLOCK), "pipe2: errno %d", errno);
	sc_rec_reader_init(&r, max);
	while (pos < len && open) {
		/* small pieces mostly; sometimes one past the reader's stage */
		piece = sc_prng_below(&pr, 8) ? 1 + sc_prng_below(&pr, 64) :
						1 + sc_prng_below(&pr, 20000);
		if (piece > len - pos)
			piece = len - pos;
		FUZZ_CHECK(write(fds[1], data + pos, piece) == (ssize_t)piece,
			   "pipe write of %zu bytes", piece);
		pos += piece;
		open = drain(&r, fds[0], &m, &i, &err);
	}
	close(fds[1]);
	if (open)
		drain(&r, fds[0], &m, &i, &err);
	FUZZ_CHECK(err == (m.too_big ? -E2BIG : -ECONNRESET),
		   "the stream ended with %d after %zu records (%s expected)",
		   err, i, m.too_big ? "E2BIG" : "ECONNRESET");
	FUZZ_CHECK(i == m.n, "%zu records handed over, the stream has %zu", i,
		   m.n);
	sc_rec_reader_free(&r);
	close(fds[0]);
	free(m.buf);
	free(m.ends);
	return 0;
}

/* Seeds: records of one and of several fragments, under every limit. */
int fuzz_write_seeds(const char *vectors, const char *out)
{
	static const uint8_t two[] = {
		0, 0, 0x00, 0x00, 0x00, 0x02, 'a', 'b',
		0x80, 0x00, 0x00, 0x01, 'c', 0x80, 0x00, 0x00, 0x00,
	};
	uint8_t seed[sizeof(two)];
	char name[32];
	unsigned int i;

	(void)vectors;
	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		memcpy(seed, two, sizeof(two));
		seed[0] = (uint8_t)i;
		seed[1] = (uint8_t)(7 * i);
		snprintf(name, sizeof(name), "fragments-%u", i);
		if (fuzz_write_seed(out, name, seed, sizeof(seed)))
			return -1;
	}
	return 0;
}
