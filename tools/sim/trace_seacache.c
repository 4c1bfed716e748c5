/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The SeaCache workload format (WORKLOAD-FORMAT.md):
 *   # seacache-workload v1 block_size=4096 [fingerprint=xxh128]
 *   <ts_us> <vm> <R|W> <image> <lbn> <nblocks> <fp> <fp> ...
 */
#include <string.h>

#include "seacache/hash.h"
#include "trace_int.h"

#define MAGIC "# seacache-workload"
/* vm and image are dense small ids; a bigger one is a broken file. */
#define ID_MAX ((1u << 24) - 1)

static inline bool number(char **p, const char *end, uint64_t *v)
{
	char *s = sim_skip_space(*p, end);

	if (!sim_parse_u64(&s, end, v) || (s < end && !sim_is_space(*s)))
		return false;
	*p = s;
	return true;
}

static bool detect(const char *line, const char *end)
{
	size_t n = strlen(MAGIC);

	return (size_t)(end - line) >= n && !strncmp(line, MAGIC, n) &&
	       ((size_t)(end - line) == n || sim_is_space(line[n]));
}

/* The header: the version, then key=value words (unknown keys ignored). */
static bool start(struct sim_trace *t, char *line, char *end)
{
	char *p = line + strlen(MAGIC);
	uint64_t bs = 0;

	if (!detect(line, end)) {
		snprintf(t->err, sizeof(t->err),
			 "not a SeaCache workload: the first line must be '%s v1 block_size=N'",
			 MAGIC);
		return false;
	}
	p = sim_skip_space(p, end);
	if (end - p < 2 || p[0] != 'v' || p[1] != '1' ||
	    (end - p > 2 && !sim_is_space(p[2]))) {
		snprintf(t->err, sizeof(t->err),
			 "workload version is not v1 (this reader knows v1)");
		return false;
	}
	p += 2;
	for (p = sim_skip_space(p, end); p < end; p = sim_skip_space(p, end)) {
		char *w = p;

		while (p < end && !sim_is_space(*p))
			p++;
		if (p - w > 11 && !strncmp(w, "block_size=", 11)) {
			char *v = w + 11;

			if (!sim_parse_u64(&v, p, &bs) || v != p)
				bs = 0;
		}
		if (p - w > 12 && p - w < 12 + (long)sizeof(t->fingerprint) &&
		    !strncmp(w, "fingerprint=", 12)) {
			memcpy(t->fingerprint, w + 12, (size_t)(p - w - 12));
			t->fingerprint[p - w - 12] = '\0';
		}
	}
	if (bs > SC_BLOCK_SIZE_MAX || !sc_block_size_valid((uint32_t)bs)) {
		snprintf(t->err, sizeof(t->err),
			 "workload header: block_size missing or not a power of two from 4096 to 65536");
		return false;
	}
	t->bs_native = (uint32_t)bs;
	return true;
}

static enum sim_line parse(struct sim_trace *t, char *line, char *end,
			   struct sim_req *req)
{
	uint64_t ts, vm, image, lbn, nblocks, i;
	char *p = sim_skip_space(line, end);
	size_t hexlen = 0, want;
	uint8_t op;

	if (p == end || *p == '#')
		return SIM_LINE_SKIP;
	if (!number(&p, end, &ts) || ts > UINT64_MAX / 1000)
		return sim_bad(t, "bad timestamp");
	if (!number(&p, end, &vm))
		return sim_bad(t, "bad vm");
	if (vm > ID_MAX)
		return sim_bad(t, "vm %llu over %u", (unsigned long long)vm, ID_MAX);
	p = sim_skip_space(p, end);
	if (end - p < 2 || (p[0] != 'R' && p[0] != 'W') || !sim_is_space(p[1]))
		return sim_bad(t, "operation is not R or W");
	op = (uint8_t)*p++;
	if (!number(&p, end, &image))
		return sim_bad(t, "bad image");
	if (image > ID_MAX)
		return sim_bad(t, "image %llu over %u", (unsigned long long)image,
			       ID_MAX);
	if (!number(&p, end, &lbn) || lbn > (UINT64_MAX >> 17))
		return sim_bad(t, "bad lbn");
	if (!number(&p, end, &nblocks) || !nblocks)
		return sim_bad(t, "bad block count");
	if (nblocks * t->bs_native > SIM_REQ_MAX_BYTES)
		return sim_bad(t, "request of %llu blocks (limit 1 GiB)",
			       (unsigned long long)nblocks);
	if (!sim_nat_reserve(t, nblocks, 32))
		return sim_bad(t, "out of memory for fingerprints");
	for (i = 0;; i++) {
		char *fp;
		size_t n;

		p = sim_skip_space(p, end);
		if (p == end || *p == '#')
			break;
		fp = p;
		/* As long as the last one: no need to scan for its end. */
		want = i ? hexlen : 2 * (size_t)t->fp_len;
		if (want && (size_t)(end - p) >= want &&
		    (p + want == end || sim_is_space(p[want]))) {
			p += want;
		} else {
			while (p < end && !sim_is_space(*p))
				p++;
		}
		n = (size_t)(p - fp);
		if (!i && (n % 2 || n < 16 || n > 64))
			return sim_bad(t, "fingerprint of %zu hex digits (want an even 16..64)", n);
		if (i && n != hexlen)
			return sim_bad(t, "fingerprint %llu has %zu hex digits, the first %zu",
				       (unsigned long long)i + 1, n, hexlen);
		if (i == nblocks)
			return sim_bad(t, "more than %llu fingerprints",
				       (unsigned long long)nblocks);
		if (!sim_unhex(fp, n / 2, t->nat + i * (n / 2)))
			return sim_bad(t, "non-hex digit in fingerprint %llu",
				       (unsigned long long)i + 1);
		hexlen = n;
	}
	if (i != nblocks)
		return sim_bad(t, "%llu fingerprints for %llu blocks",
			       (unsigned long long)i, (unsigned long long)nblocks);
	return sim_emit(t, req, ts * 1000, (uint32_t)vm, op, image,
			lbn * t->bs_native, nblocks * t->bs_native, t->bs_native,
			(uint32_t)nblocks, (uint32_t)(hexlen / 2));
}

const struct sim_format sim_format_seacache = {
	.name = "seacache", .detect = detect, .parse = parse, .start = start,
};
