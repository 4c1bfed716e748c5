/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The format-independent part of the trace readers: input (plain, gzip,
 * zstd), line splitting, format detection, dense ids, malformed-line
 * records, and the mapping of byte ranges and native fingerprints onto the
 * simulator's blocks (sim_emit).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

#include "seacache/hash.h"
#include "trace_int.h"

/* Large reads keep the syscall and decompressor-call cost per line tiny. */
#define SIM_IN_CHUNK (1u << 20)
/* A longer line is reported as malformed rather than grown into. */
#define SIM_LINE_MAX (64u << 20)

#define X 0x100
#define HEX_ROW X, X, X, X, X, X, X, X, X, X, X, X, X, X, X, X
const uint16_t sim_hex_tab[256] = {
	HEX_ROW, HEX_ROW, HEX_ROW,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, X, X, X, X, X, X,
	X, 10, 11, 12, 13, 14, 15, X, X, X, X, X, X, X, X, X,
	HEX_ROW,
	X, 10, 11, 12, 13, 14, 15, X, X, X, X, X, X, X, X, X,
	HEX_ROW, HEX_ROW, HEX_ROW, HEX_ROW, HEX_ROW, HEX_ROW, HEX_ROW, HEX_ROW,
	HEX_ROW,
};
#undef HEX_ROW
#undef X

/* The binary trace is told by its magic; its requests by sim_bin_next(). */
static const struct sim_format sim_format_bin = { .name = "binary" };

static const struct sim_format *const sim_formats[] = {
	&sim_format_seacache, &sim_format_msr, &sim_format_fiu,
	&sim_format_fiu_pid,
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

enum sim_line sim_bad(struct sim_trace *t, const char *fmt, ...)
{
	va_list ap;

	t->st.malformed++;
	if (t->st.nbad < SIM_TRACE_BAD_KEEP) {
		struct sim_trace_bad *b = &t->st.bad[t->st.nbad++];

		b->line = t->st.lines;
		va_start(ap, fmt);
		vsnprintf(b->reason, sizeof(b->reason), fmt, ap);
		va_end(ap);
	}
	return SIM_LINE_BAD;
}

static bool grow(uint8_t **p, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 4096;
	uint8_t *np;

	if (need <= *cap)
		return true;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap);
	if (!np)
		return false;
	*p = np;
	*cap = ncap;
	return true;
}

bool sim_nat_reserve(struct sim_trace *t, size_t n, uint32_t len)
{
	return grow(&t->nat, &t->nat_cap, n * len);
}

/*
 * The fingerprint of a native unit the trace has not named yet (the part
 * of a widened block outside any request so far): derived from its offset
 * alone, so the same unseen part of two clones of an image is taken to be
 * the same content, as it is in a VDI image set, and unseen parts at
 * different offsets never match.
 */
static void unseen_fp(uint64_t unit, uint8_t *out, uint32_t len)
{
	uint64_t k = sc_mix64(unit ^ 0x5eacac4eadd7e55ull);

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = sc_mix64(k + i * 0x9e3779b97f4a7c15ull);

		memcpy(out + i, &v, len - i < 8 ? len - i : 8);
	}
}

static bool unit_grow(struct sim_unitmap *m, uint32_t fp_len)
{
	size_t ncap = m->cap ? m->cap * 2 : 4096;
	struct sim_unitmap nm = { calloc(ncap, sizeof(uint64_t)),
				  malloc(ncap * fp_len), ncap, m->n };

	if (!nm.keys || !nm.fps) {
		free(nm.keys);
		free(nm.fps);
		return false;
	}
	for (size_t j = 0; j < m->cap; j++) {
		size_t i;

		if (!m->keys[j])
			continue;
		i = sim_slot(nm.keys, nm.cap, m->keys[j]);
		nm.keys[i] = m->keys[j];
		memcpy(nm.fps + i * fp_len, m->fps + j * fp_len, fp_len);
	}
	free(m->keys);
	free(m->fps);
	*m = nm;
	return true;
}

enum sim_line sim_emit(struct sim_trace *t, struct sim_req *req, uint64_t ts,
		       uint32_t vm, uint8_t op, uint64_t file, uint64_t off,
		       uint64_t len, uint32_t unit, uint32_t nhash,
		       uint32_t fp_len)
{
	const uint64_t bs = t->bs;
	uint64_t b0, nblocks, u0, r;
	bool direct;

	if (len == 0)
		return sim_bad(t, "zero-length request");
	if (len > SIM_REQ_MAX_BYTES)
		return sim_bad(t, "request of %llu bytes (limit 1 GiB)",
			       (unsigned long long)len);
	if (off > UINT64_MAX - len - bs)
		return sim_bad(t, "offset %llu out of range",
			       (unsigned long long)off);
	if (nhash) {
		if (!t->fp_len)
			t->fp_len = fp_len;
		else if (fp_len != t->fp_len)
			return sim_bad(t, "%u-byte fingerprint, earlier %u",
				       fp_len, t->fp_len);
	}
	b0 = off / bs;
	nblocks = (off + len + bs - 1) / bs - b0;
	r = bs / unit;
	u0 = off / unit;
	/* The common case needs no copy: one fingerprint per block as given. */
	direct = r == 1 && u0 == b0 && nhash == nblocks;
	if (nhash && !direct) {
		struct sim_unitmap *m = &t->units;

		if (r > 1 && (file >> 24 || (off + len) / unit >> 39))
			return sim_bad(t, "address beyond 2^39 units or file 2^24");
		if (!grow(&t->fp, &t->fp_cap, nblocks * fp_len))
			return sim_bad(t, "out of memory for fingerprints");
		while (r > 1 && (m->n + nhash) * 4 >= m->cap * 3)
			if (!unit_grow(m, fp_len))
				return sim_bad(t, "out of memory for unit fingerprints");
	}
	if ((off | len) & (bs - 1))
		t->st.unaligned++;
	if (!t->have_ts0) {
		t->ts0 = ts;
		t->have_ts0 = true;
	}
	req->ts_ns = ts > t->ts0 ? ts - t->ts0 : 0;
	req->vm = vm;
	req->op = op;
	req->file = file;
	req->lbn = b0;
	req->nblocks = (uint32_t)nblocks;
	req->fp_len = nhash ? fp_len : 0;
	req->fp = !nhash ? NULL : direct ? t->nat : t->fp;
	t->st.requests++;
	if (!nhash || direct)
		return SIM_LINE_REQ;

	for (uint64_t b = 0; b < nblocks; b++) {
		/* r <= 64 KiB / 512 B units of at most 32 bytes each */
		uint8_t cat[(SC_BLOCK_SIZE_MAX / 512) * 32];
		uint8_t *dst = t->fp + b * fp_len;

		for (uint64_t k = 0; k < r; k++) {
			uint64_t u = (b0 + b) * r + k;
			uint8_t *slot = r == 1 ? dst : cat + k * fp_len;
			struct sim_unitmap *m = &t->units;
			/* FIU may mix 4 KiB and 512 B units: keep them apart */
			uint64_t key = (file << 40 | u << 1 | (unit < 4096)) + 1;
			size_t i;

			if (u >= u0 && u - u0 < nhash) {
				memcpy(slot, t->nat + (u - u0) * fp_len, fp_len);
				if (r == 1)
					continue;
				/* remember it for the requests that miss it */
				i = sim_slot(m->keys, m->cap, key);
				m->n += !m->keys[i];
				m->keys[i] = key;
				memcpy(m->fps + i * fp_len, slot, fp_len);
			} else if (r > 1 && m->n &&
				   m->keys[i = sim_slot(m->keys, m->cap, key)]) {
				memcpy(slot, m->fps + i * fp_len, fp_len);
			} else {
				unseen_fp(u, slot, fp_len);
			}
		}
		if (r > 1) {
			/* A larger block is named by its units' names, in order. */
			XXH128_canonical_t c;

			XXH128_canonicalFromHash(&c, XXH3_128bits(cat, r * fp_len));
			memcpy(dst, c.digest, fp_len < 16 ? fp_len : 16);
			if (fp_len > 16) {
				XXH128_canonicalFromHash(
					&c, XXH3_128bits_withSeed(cat, r * fp_len, 1));
				memcpy(dst + 16, c.digest, fp_len - 16);
			}
		}
	}
	return SIM_LINE_REQ;
}

/* ---- input ---- */

static ssize_t read_raw(struct sim_trace *t, void *dst, size_t n)
{
	ssize_t got;

	do
		got = read(t->fd, dst, n);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		snprintf(t->err, sizeof(t->err), "%s: read: %s", t->path,
			 strerror(errno));
	else
		t->st.in_bytes += (uint64_t)got;
	return got;
}

/* More compressed input when all of it was used; false on a read error. */
static bool refill_raw(struct sim_trace *t)
{
	ssize_t got;

	if (t->raw_pos < t->raw_len || t->raw_eof)
		return true;
	got = read_raw(t, t->raw, SIM_IN_CHUNK);
	if (got < 0)
		return false;
	t->raw_pos = 0;
	t->raw_len = (size_t)got;
	t->raw_eof = got == 0;
	return true;
}

/*
 * Decompress into dst[0..n); bytes produced, 0 at the end of input, -1 on
 * error.  Concatenated gzip members and zstd frames are read in turn (as
 * zcat and zstdcat do); input ending inside one is an error, not an end.
 */
static ssize_t decompress(struct sim_trace *t, uint8_t *dst, size_t n)
{
	for (;;) {
		size_t made;

		if (!refill_raw(t))
			return -1;
		if (t->raw_pos == t->raw_len) {
			if (t->dec_done)
				return 0;
			snprintf(t->err, sizeof(t->err), "%s: truncated %s data",
				 t->path, t->in_kind == SIM_IN_GZIP ? "gzip" : "zstd");
			return -1;
		}
		if (t->in_kind == SIM_IN_GZIP) {
			z_stream *z = t->dec;
			int rc;

			if (t->dec_done) {
				inflateReset(z);
				t->dec_done = false;
			}
			z->next_in = t->raw + t->raw_pos;
			z->avail_in = (uInt)(t->raw_len - t->raw_pos);
			z->next_out = dst;
			z->avail_out = (uInt)n;
			rc = inflate(z, Z_NO_FLUSH);
			t->raw_pos = t->raw_len - z->avail_in;
			made = n - z->avail_out;
			if (rc == Z_STREAM_END)
				t->dec_done = true;
			else if (rc != Z_OK && rc != Z_BUF_ERROR) {
				snprintf(t->err, sizeof(t->err), "%s: gzip: %s",
					 t->path, z->msg ? z->msg : "corrupt data");
				return -1;
			}
		} else {
			ZSTD_inBuffer in = { t->raw, t->raw_len, t->raw_pos };
			ZSTD_outBuffer out = { dst, n, 0 };
			size_t rc = ZSTD_decompressStream(t->dec, &out, &in);

			if (ZSTD_isError(rc)) {
				snprintf(t->err, sizeof(t->err), "%s: zstd: %s",
					 t->path, ZSTD_getErrorName(rc));
				return -1;
			}
			t->raw_pos = in.pos;
			made = out.pos;
			t->dec_done = rc == 0;
		}
		if (made)
			return (ssize_t)made;
	}
}

/* Append input to buf (always keeping one spare byte); false on error. */
static bool fill(struct sim_trace *t)
{
	size_t room = t->cap - 1 - t->len;
	ssize_t got;

	if (t->in_kind == SIM_IN_PLAIN) {
		if (t->raw_pos < t->raw_len) {
			/* bytes read while looking for a magic number */
			got = (ssize_t)(t->raw_len - t->raw_pos);
			if ((size_t)got > room)
				got = (ssize_t)room;
			memcpy(t->buf + t->len, t->raw + t->raw_pos, (size_t)got);
			t->raw_pos += (size_t)got;
		} else {
			got = read_raw(t, t->buf + t->len, room);
		}
	} else {
		got = decompress(t, (uint8_t *)t->buf + t->len, room);
	}
	if (got < 0)
		return false;
	t->len += (size_t)got;
	t->in_eof = got == 0;
	return true;
}

/*
 * Find the next line: 1 with [*line, *end) set, 0 at the end of input,
 * -1 on an input error.  Counts it in st.lines.
 */
static int next_line(struct sim_trace *t, char **line, char **end)
{
	for (;;) {
		char *s = t->buf + t->pos;
		char *nl = memchr(s, '\n', t->len - t->pos);

		if (nl || (t->in_eof && t->pos < t->len)) {
			char *e = nl ? nl : t->buf + t->len;

			t->pos = (size_t)(e - t->buf) + (nl ? 1 : 0);
			if (t->skipping) {
				/* the tail of an over-long line already reported */
				t->skipping = false;
				continue;
			}
			t->st.lines++;
			if (e > s && e[-1] == '\r')
				e--;
			*line = s;
			*end = e;
			return 1;
		}
		if (t->in_eof)
			return 0;
		/* Keep the partial line, then read more. */
		if (t->pos) {
			memmove(t->buf, t->buf + t->pos, t->len - t->pos);
			t->len -= t->pos;
			t->pos = 0;
		}
		if (t->len == t->cap - 1) {
			if (t->cap >= SIM_LINE_MAX) {
				t->st.lines++;
				sim_bad(t, "line longer than %u MiB",
					SIM_LINE_MAX >> 20);
				t->skipping = true;
				t->len = 0;
			} else if (!grow((uint8_t **)&t->buf, &t->cap, t->cap * 2)) {
				snprintf(t->err, sizeof(t->err),
					 "%s: out of memory for a long line", t->path);
				return -1;
			}
		}
		if (!fill(t))
			return -1;
	}
}

/* ---- block ids ---- */

/*
 * Each further word is mixed before it joins: XOR-ing it in raw made any
 * two fingerprints whose words XOR alike (a byte-reversed pair, say)
 * share a key.
 */
uint64_t sim_fp_key(const uint8_t *fp, uint32_t len)
{
	uint64_t k = 0, w;
	uint32_t i;

	for (i = 0; i < len; i += 8) {
		w = 0;
		memcpy(&w, fp + i, len - i < 8 ? len - i : 8);
		k = i ? sc_mix64(k ^ sc_mix64(w + i)) : w;
	}
	return k;
}

static bool idmap_grow(struct sim_idmap *m)
{
	uint32_t ncap = m->mask ? (m->mask + 1) * 2 : 1024, i, id;
	uint32_t *slot = malloc(sizeof(*slot) * ncap);

	if (!slot || ncap < m->mask)
		goto fail;
	memset(slot, 0xff, sizeof(*slot) * ncap);
	for (id = 0; id < m->n; id++) {
		for (i = (uint32_t)sc_mix64(m->key[id]) & (ncap - 1);
		     slot[i] != UINT32_MAX; i = (i + 1) & (ncap - 1))
			;
		slot[i] = id;
	}
	free(m->slot);
	m->slot = slot;
	m->mask = ncap - 1;
	return true;
fail:
	free(slot);
	return false;
}

uint32_t sim_idmap_get(struct sim_idmap *m, uint64_t key)
{
	uint32_t i, id;

	if (m->n * 2 >= m->mask && !idmap_grow(m))
		return UINT32_MAX;
	for (i = (uint32_t)sc_mix64(key) & m->mask;
	     (id = m->slot[i]) != UINT32_MAX; i = (i + 1) & m->mask)
		if (m->key[id] == key)
			return id;
	if (m->n == m->keycap) {
		uint32_t ncap = m->keycap ? m->keycap * 2 : 1024;
		uint64_t *k = ncap > m->keycap ?
				      realloc(m->key, sizeof(*k) * ncap) : NULL;

		if (!k)
			return UINT32_MAX;
		m->key = k;
		m->keycap = ncap;
	}
	m->key[m->n] = key;
	m->slot[i] = m->n;
	return m->n++;
}

/* The request's address and content ids, into t->idbuf. */
static bool assign_ids(struct sim_trace *t, struct sim_req *req)
{
	uint32_t n = req->nblocks, i, *ids;

	if (!grow((uint8_t **)&t->idbuf, &t->idbuf_cap, (size_t)n * 8))
		return false;
	ids = t->idbuf;
	for (i = 0; i < n; i++) {
		ids[i] = sim_idmap_get(&t->addr_ids, req->file << 40 |
			 ((req->lbn + i) & ((1ull << 40) - 1)));
		if (ids[i] == UINT32_MAX)
			return false;
	}
	req->addr = ids;
	req->content = NULL;
	if (!req->fp_len)
		return true;
	for (i = 0; i < n; i++) {
		ids[n + i] = sim_idmap_get(&t->content_ids,
				     sim_fp_key(req->fp + (size_t)i * req->fp_len,
						req->fp_len));
		if (ids[n + i] == UINT32_MAX)
			return false;
	}
	req->content = ids + n;
	return true;
}

void sim_trace_want_ids(struct sim_trace *t)
{
	t->want_ids = true;
}

bool sim_trace_ids(const struct sim_trace *t, uint32_t *addrs,
		   uint32_t *contents)
{
	if (t->map) {
		*addrs = t->bin_addrs;
		*contents = t->bin_contents;
		return true;
	}
	*addrs = t->addr_ids.n;
	*contents = t->content_ids.n;
	return false;
}

size_t sim_trace_id_bytes(const struct sim_trace *t)
{
	const struct sim_idmap *m[] = { &t->addr_ids, &t->content_ids };
	size_t b = 0;

	for (int i = 0; i < 2; i++)
		if (m[i]->keycap)
			b += (size_t)(m[i]->mask + 1) * 4 +
			     (size_t)m[i]->keycap * 8;
	return b;
}

int sim_trace_ahead(struct sim_trace *t, struct sim_req *req)
{
	return t->map ? sim_bin_ahead(t, req) : 0;
}

int sim_trace_next(struct sim_trace *t, struct sim_req *req)
{
	char *line, *end;
	int rc;

	if (t->map)
		return sim_bin_next(t, req);
	while ((rc = next_line(t, &line, &end)) == 1) {
		if (t->fmt->parse(t, line, end, req) != SIM_LINE_REQ)
			continue;
		req->addr = req->content = NULL;
		if (!t->want_ids || assign_ids(t, req))
			return 1;
		snprintf(t->err, sizeof(t->err), "%s: out of memory for block ids",
			 t->path);
		return -1;
	}
	return rc;
}

/* ---- open and close ---- */

static const struct sim_format *format_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(sim_formats) / sizeof(sim_formats[0]); i++)
		if (!strcmp(sim_formats[i]->name, name))
			return sim_formats[i];
	return NULL;
}

static bool open_input(struct sim_trace *t, const char *path, char *err,
		       size_t errlen)
{
	static const uint8_t gz_magic[] = { 0x1f, 0x8b };
	static const uint8_t zstd_magic[] = { 0x28, 0xb5, 0x2f, 0xfd };
	struct stat sb;
	ssize_t got;

	t->fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (t->fd < 0) {
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		return false;
	}
	if (!fstat(t->fd, &sb) && S_ISREG(sb.st_mode))
		t->st.in_size = (uint64_t)sb.st_size;
	/* Read until the magic numbers can be told apart (a pipe may dribble). */
	while (t->raw_len < sizeof(zstd_magic) && !t->raw_eof) {
		got = read_raw(t, t->raw + t->raw_len, SIM_IN_CHUNK - t->raw_len);
		if (got < 0) {
			set_err(err, errlen, "%s", t->err);
			return false;
		}
		t->raw_len += (size_t)got;
		t->raw_eof = got == 0;
	}
	if (t->raw_len >= 2 && !memcmp(t->raw, gz_magic, 2)) {
		z_stream *z = calloc(1, sizeof(*z));

		/* 16 + MAX_WBITS: a gzip wrapper, not a zlib one */
		if (!z || inflateInit2(z, 16 + MAX_WBITS) != Z_OK) {
			free(z);
			set_err(err, errlen, "%s: cannot start gzip", path);
			return false;
		}
		t->in_kind = SIM_IN_GZIP;
		t->dec = z;
	} else if (t->raw_len >= 4 && !memcmp(t->raw, zstd_magic, 4)) {
		t->dec = ZSTD_createDStream();
		if (!t->dec) {
			set_err(err, errlen, "%s: cannot start zstd", path);
			return false;
		}
		t->in_kind = SIM_IN_ZSTD;
	}
	return true;
}

/* Fill until the first non-blank line is whole; NULL if there is none. */
static char *first_line(struct sim_trace *t, char **end, char *err,
			size_t errlen)
{
	for (;;) {
		size_t i = t->pos;

		while (i < t->len && (t->buf[i] == '\n' || t->buf[i] == '\r' ||
				      sim_is_space(t->buf[i])))
			i++;
		if (i < t->len) {
			char *nl = memchr(t->buf + i, '\n', t->len - i);

			if (nl || t->in_eof) {
				*end = nl ? nl : t->buf + t->len;
				if (*end > t->buf + i && (*end)[-1] == '\r')
					(*end)--;
				return t->buf + i;
			}
		} else if (t->in_eof) {
			set_err(err, errlen, "%s: empty trace", t->path);
			return NULL;
		}
		if (t->len == t->cap - 1 &&
		    !grow((uint8_t **)&t->buf, &t->cap, t->cap * 2)) {
			set_err(err, errlen, "%s: out of memory", t->path);
			return NULL;
		}
		if (!fill(t)) {
			set_err(err, errlen, "%s", t->err);
			return NULL;
		}
		if (t->len > SIM_LINE_MAX) {
			set_err(err, errlen, "%s: first line longer than %u MiB",
				t->path, SIM_LINE_MAX >> 20);
			return NULL;
		}
	}
}

struct sim_trace *sim_trace_open(const char *path, const char *format,
				 uint32_t block_size, char *err, size_t errlen)
{
	struct sim_trace *t = calloc(1, sizeof(*t));
	char *line, *end, save;
	bool ok;

	if (!t) {
		set_err(err, errlen, "out of memory");
		return NULL;
	}
	t->fd = -1;
	t->path = strdup(path);
	t->raw = malloc(SIM_IN_CHUNK);
	t->cap = SIM_IN_CHUNK;
	t->buf = malloc(t->cap);
	if (!t->path || !t->raw || !t->buf) {
		set_err(err, errlen, "out of memory");
		goto fail;
	}
	if (format && strcmp(format, "auto")) {
		t->fmt = format_by_name(format);
		if (!t->fmt) {
			set_err(err, errlen,
				"unknown trace format '%s' (auto, fiu, fiu-pid, msr, seacache)",
				format);
			goto fail;
		}
	}
	if (!open_input(t, path, err, errlen))
		goto fail;
	if (t->in_kind == SIM_IN_PLAIN && t->raw_len >= 8 &&
	    !memcmp(t->raw, SIM_BIN_MAGIC, 8)) {
		t->fmt = &sim_format_bin;
		if (!sim_bin_open(t, t->st.in_size)) {
			set_err(err, errlen, "%s: %s", path, t->err);
			goto fail;
		}
		if (block_size && block_size != t->bs_native) {
			set_err(err, errlen, "%s: a binary trace of %u-byte blocks is read at its own block size",
				path, t->bs_native);
			goto fail;
		}
		t->bs = t->bs_native;
		return t;
	}
	line = first_line(t, &end, err, errlen);
	if (!line)
		goto fail;
	save = *end; /* detect() and start() may use *end as scratch */
	for (size_t i = 0; !t->fmt && i < sizeof(sim_formats) / sizeof(sim_formats[0]); i++)
		if (sim_formats[i]->detect(line, end))
			t->fmt = sim_formats[i];
	if (!t->fmt) {
		*end = save;
		set_err(err, errlen,
			"%s: cannot tell the trace format from its first line (give it: fiu, msr, seacache)",
			path);
		goto fail;
	}
	ok = !t->fmt->start || t->fmt->start(t, line, end);
	*end = save;
	if (!ok) {
		set_err(err, errlen, "%s: %s", path, t->err);
		goto fail;
	}
	if (!t->bs_native)
		t->bs_native = SC_BLOCK_SIZE_DEFAULT;
	t->bs = block_size ? block_size : t->bs_native;
	if (!sc_block_size_valid(t->bs) || t->bs < t->bs_native) {
		set_err(err, errlen,
			"%s: block size %u: want a power of two from 4096 to 65536, at least the trace's %u",
			path, t->bs, t->bs_native);
		goto fail;
	}
	return t;
fail:
	sim_trace_close(t);
	return NULL;
}

void sim_trace_close(struct sim_trace *t)
{
	if (!t)
		return;
	if (t->in_kind == SIM_IN_GZIP) {
		inflateEnd(t->dec);
		free(t->dec);
	} else if (t->in_kind == SIM_IN_ZSTD) {
		ZSTD_freeDStream(t->dec);
	}
	sim_bin_close(t);
	if (t->fd > 0)
		close(t->fd);
	free(t->addr_ids.slot);
	free(t->addr_ids.key);
	free(t->content_ids.slot);
	free(t->content_ids.key);
	free(t->idbuf);
	free(t->vm_ids.slot);
	free(t->vm_ids.key);
	free(t->file_ids.slot);
	free(t->file_ids.key);
	free(t->units.keys);
	free(t->units.fps);
	free(t->nat);
	free(t->fp);
	free(t->buf);
	free(t->raw);
	free(t->path);
	free(t);
}

const struct sim_trace_stats *sim_trace_stats(const struct sim_trace *t)
{
	return &t->st;
}

const char *sim_trace_error(const struct sim_trace *t)
{
	return t->err;
}

const char *sim_trace_format(const struct sim_trace *t)
{
	return t->fmt->name;
}

const char *sim_trace_fingerprint(const struct sim_trace *t)
{
	return t->fingerprint;
}

uint32_t sim_trace_block_size(const struct sim_trace *t)
{
	return t->bs;
}

void sim_trace_report(const struct sim_trace *t, FILE *f)
{
	const struct sim_trace_stats *s = &t->st;

	fprintf(f,
		"trace %s: format %s, block size %u: %llu lines, %llu requests, %llu malformed, %llu widened to block boundaries\n",
		t->path, t->fmt->name, t->bs, (unsigned long long)s->lines,
		(unsigned long long)s->requests,
		(unsigned long long)s->malformed,
		(unsigned long long)s->unaligned);
	for (uint32_t i = 0; i < s->nbad; i++)
		fprintf(f, "trace %s: line %llu: %s\n", t->path,
			(unsigned long long)s->bad[i].line, s->bad[i].reason);
	if (s->malformed > s->nbad)
		fprintf(f, "trace %s: ... and %llu more malformed lines\n",
			t->path, (unsigned long long)(s->malformed - s->nbad));
}
