/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the trace readers: the common state (trace.c) and what each format
 * file (trace_<name>.c) provides and uses; sim_slot() also serves the
 * generator (tracegen.c).  Not for the simulator.
 */
#ifndef SEACACHE_SIM_TRACE_INT_H
#define SEACACHE_SIM_TRACE_INT_H

#include <stdbool.h>

#include "seacache/compat.h"
#include "trace.h"

/* What a format's parse() made of one line. */
enum sim_line { SIM_LINE_REQ, SIM_LINE_SKIP, SIM_LINE_BAD };

struct sim_format {
	const char *name;
	/* Could the first line of a trace be this format? */
	bool (*detect)(const char *line, const char *end);
	/*
	 * Parse one line (without its newline; *end is writable scratch).
	 * SIM_LINE_REQ: the request was handed to sim_emit(); SIM_LINE_BAD:
	 * the reason was given to sim_bad().
	 */
	enum sim_line (*parse)(struct sim_trace *t, char *line, char *end,
			       struct sim_req *req);
	/* Optional: check the first line at open (a header); false: t->err set. */
	bool (*start)(struct sim_trace *t, char *line, char *end);
};

extern const struct sim_format sim_format_fiu, sim_format_fiu_pid,
	sim_format_msr, sim_format_seacache;

/*
 * Open addressing over 64-bit keys, 0 marking an empty slot (callers store
 * key + 1): the slot of key in keys[0..cap-1], cap a power of two, or the
 * empty slot it would take.
 */
static inline size_t sim_slot(const uint64_t *keys, size_t cap, uint64_t key)
{
	size_t i = sc_mix64(key) & (cap - 1);

	while (keys[i] && keys[i] != key)
		i = (i + 1) & (cap - 1);
	return i;
}

/*
 * The last fingerprint seen of each native unit, (file, unit) -> fp_len
 * bytes, kept only when simulated blocks are larger than the trace's
 * units: a block is named by all its units, also those a request missed.
 */
struct sim_unitmap {
	uint64_t *keys; /* file << 40 | unit << 1 | (unit < 4 KiB), plus 1; 0: empty */
	uint8_t *fps;
	size_t cap, n; /* cap a power of two, 0 before the first insert */
};

/*
 * Dense ids from 0 for 64-bit keys, in order of first appearance (VMs,
 * files, and the blocks of a trace): the keys in id order, and an
 * open-addressing index of ids (4 bytes a slot, at most half full): 16 to
 * 32 bytes an id.
 */
struct sim_idmap {
	uint32_t *slot; /* UINT32_MAX: empty */
	uint64_t *key;
	uint32_t mask, n, keycap;
};

#define SIM_BIN_MAGIC "SCTRACE1"
#define SIM_BIN_HEADER 64u
#define SIM_BIN_WRITE (1u << 31)

struct sim_trace {
	const struct sim_format *fmt;
	uint32_t bs; /* block size of the requests handed out */
	uint32_t bs_native; /* the trace's own, 0 until known */
	char fingerprint[16]; /* what its header says its fps are, or "" */

	/* Input: bytes from fd, maybe through a decompressor. */
	char *path;
	int fd;
	enum { SIM_IN_PLAIN, SIM_IN_GZIP, SIM_IN_ZSTD } in_kind;
	void *dec; /* z_stream or ZSTD_DStream */
	bool dec_done; /* the last gzip member or zstd frame was complete */
	uint8_t *raw; /* compressed bytes read, not yet decompressed */
	size_t raw_len, raw_pos;
	bool raw_eof, in_eof;

	/* Decompressed text; lines are found in [pos, len). */
	char *buf;
	size_t cap, pos, len;
	bool skipping; /* discarding the rest of an over-long line */

	/* Native fingerprints of the current line (decoded by the format). */
	uint8_t *nat;
	size_t nat_cap;
	/* Per-block fingerprints when they have to be combined. */
	uint8_t *fp;
	size_t fp_cap;

	struct sim_idmap vm_ids, file_ids;
	/* Block ids (sim_trace_want_ids), and the current request's. */
	bool want_ids;
	struct sim_idmap addr_ids, content_ids;
	uint32_t *idbuf;
	size_t idbuf_cap;
	/* A binary trace, mapped whole; NULL for text. */
	const uint8_t *map;
	size_t map_len, map_pos;
	size_t ahead_pos;	/* sim_trace_ahead()'s cursor */
	uint32_t bin_flags, bin_addrs, bin_contents;
	struct sim_unitmap units;
	uint64_t ts0;
	bool have_ts0;
	uint32_t fp_len; /* fixed by the first request with fingerprints */
	bool fiu_sector_hashes; /* an FIU line showed one MD5 per 512 B */

	struct sim_trace_stats st;
	char err[256];
};

/* Record the current line as malformed (printf-style reason). */
enum sim_line sim_bad(struct sim_trace *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The binary trace (trace_bin.c): map it, its next request, unmap. */
bool sim_bin_open(struct sim_trace *t, uint64_t size);
int sim_bin_next(struct sim_trace *t, struct sim_req *req);
int sim_bin_ahead(struct sim_trace *t, struct sim_req *req);
void sim_bin_close(struct sim_trace *t);

/* Dense id for key; UINT32_MAX when out of memory. */
uint32_t sim_idmap_get(struct sim_idmap *m, uint64_t key);

/* Room for n native fingerprints of len bytes in t->nat; false: no memory. */
bool sim_nat_reserve(struct sim_trace *t, size_t n, uint32_t len);

/*
 * Turn a byte range of a file with nhash native fingerprints (in t->nat,
 * fp_len bytes each, naming the native units from the first one the range
 * touches) into req: lbn and nblocks in t->bs blocks, the fingerprints of
 * each block.  unit is the native unit (bytes one fingerprint names);
 * nhash must not exceed the units the range touches.
 */
enum sim_line sim_emit(struct sim_trace *t, struct sim_req *req, uint64_t ts,
		       uint32_t vm, uint8_t op, uint64_t file, uint64_t off,
		       uint64_t len, uint32_t unit, uint32_t nhash,
		       uint32_t fp_len);

/* The longest request handed out, to keep nblocks loops and memory sane. */
#define SIM_REQ_MAX_BYTES (1ull << 30)

/* ---- field scanning, shared by the formats ---- */

static inline bool sim_is_space(char c)
{
	return c == ' ' || c == '\t';
}

static inline char *sim_skip_space(char *p, const char *end)
{
	while (p < end && sim_is_space(*p))
		p++;
	return p;
}

/* Unsigned decimal at *p (at most 19 digits); advances *p. */
static inline bool sim_parse_u64(char **p, const char *end, uint64_t *out)
{
	char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (s < end && (unsigned)(*s - '0') < 10 && n < 20) {
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
		n++;
	}
	if (n == 0 || n > 19)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* Hex digit values; 0x100 marks a non-digit (OR-ed into an error mask). */
extern const uint16_t sim_hex_tab[256];

static inline int sim_hexval(char c)
{
	uint16_t v = sim_hex_tab[(uint8_t)c];

	return v & 0x100 ? -1 : v;
}

/*
 * Decode nbytes hex digit pairs at s into out; false on a non-hex digit
 * (a space included).  Branch-free per digit: this is most of the parsing
 * time of a trace with fingerprints.
 */
static inline bool sim_unhex(const char *s, size_t nbytes, uint8_t *out)
{
	const uint8_t *u = (const uint8_t *)s;
	uint16_t bad = 0;

	for (size_t i = 0; i < nbytes; i++) {
		uint16_t hi = sim_hex_tab[u[2 * i]], lo = sim_hex_tab[u[2 * i + 1]];

		bad |= hi | lo;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return !(bad & 0x100);
}

#endif /* SEACACHE_SIM_TRACE_INT_H */
