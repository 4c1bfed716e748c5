/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FIU IODedup traces (blkparse output with content hashes):
 *   ts_ns pid process lba size_in_512B_sectors W|R major minor md5...
 * The MD5s are concatenated, one per 4 KiB of the request, or, in one of
 * the FIU traces, one per 512 B sector; separate MD5 fields are accepted
 * too.  Which of the two a line uses is told from the number of MD5s: S
 * sectors carry ceil(S/8) of them per 4 KiB, S per sector.  A one-sector
 * line fits both and is read as the trace's earlier lines were (per 4 KiB
 * until a line has shown per-sector hashes).
 *
 * file is the device (major:minor): one disk, one image.  vm is the device
 * too ("fiu": in VDI a VM is its disk), or the process id ("fiu-pid": for
 * a single-machine trace where processes are the sharers).
 */
#include <string.h>

#include "trace_int.h"

#define FIU_MD5_LEN 16

/* A whitespace-delimited token from *p; false when there is none. */
static inline bool token(char **p, const char *end, char **tok, char **tok_end)
{
	char *s = sim_skip_space(*p, end), *e = s;

	while (e < end && !sim_is_space(*e))
		e++;
	if (e == s)
		return false;
	*tok = s;
	*tok_end = e;
	*p = e;
	return true;
}

/* A number that fills its token. */
static inline bool number(char **p, const char *end, uint64_t *v)
{
	char *s = sim_skip_space(*p, end);

	if (!sim_parse_u64(&s, end, v) || (s < end && !sim_is_space(*s)))
		return false;
	*p = s;
	return true;
}

static enum sim_line parse(struct sim_trace *t, char *line, char *end,
			   struct sim_req *req, bool vm_is_pid)
{
	uint64_t ts, pid, lba, sectors, major, minor, dev;
	uint64_t hexlen = 0, nhash, per4k;
	char *p = sim_skip_space(line, end), *tok, *tok_end;
	uint32_t unit, vm;
	uint8_t op;

	if (p == end || *p == '#')
		return SIM_LINE_SKIP;
	if (!number(&p, end, &ts))
		return sim_bad(t, "bad timestamp");
	if (!number(&p, end, &pid))
		return sim_bad(t, "bad pid");
	if (!token(&p, end, &tok, &tok_end))
		return sim_bad(t, "missing process name");
	if (!number(&p, end, &lba) || lba > UINT64_MAX / 512)
		return sim_bad(t, "bad lba");
	if (!number(&p, end, &sectors) || sectors > UINT64_MAX / 512)
		return sim_bad(t, "bad size");
	if (!sectors)
		return sim_bad(t, "zero-length request");
	if (!token(&p, end, &tok, &tok_end) || tok_end - tok != 1 ||
	    (*tok != 'R' && *tok != 'W'))
		return sim_bad(t, "operation is not R or W");
	op = (uint8_t)*tok;
	if (!number(&p, end, &major) || major > UINT32_MAX ||
	    !number(&p, end, &minor) || minor > UINT32_MAX)
		return sim_bad(t, "bad device major:minor");

	/* Decode the MD5s into t->nat; the hex can be no longer than the rest. */
	if (!sim_nat_reserve(t, (size_t)(end - p) / 32 + 1, FIU_MD5_LEN))
		return sim_bad(t, "out of memory for MD5s");
	/* Usually one field of concatenated MD5s ends the line: decode it
	 * in one pass; a space inside sends it to the field-by-field loop. */
	p = sim_skip_space(p, end);
	while (end > p && sim_is_space(end[-1]))
		end--;
	if (end > p && (end - p) % 32 == 0 &&
	    sim_unhex(p, (size_t)(end - p) / 2, t->nat)) {
		hexlen = (uint64_t)(end - p);
		p = end;
	}
	while (token(&p, end, &tok, &tok_end)) {
		size_t n = (size_t)(tok_end - tok);

		if (n % 32)
			return sim_bad(t, "MD5 field of %zu hex digits, not a multiple of 32", n);
		if (!sim_unhex(tok, n / 2, t->nat + hexlen / 2))
			return sim_bad(t, "non-hex digit in MD5");
		hexlen += n;
	}
	if (!hexlen)
		return sim_bad(t, "no MD5");
	nhash = hexlen / 32;
	per4k = (sectors + 7) / 8;
	if (nhash == sectors && (nhash != per4k || t->fiu_sector_hashes)) {
		t->fiu_sector_hashes = true;
		unit = 512;
	} else if (nhash == per4k) {
		unit = 4096;
	} else {
		return sim_bad(t, "%llu MD5s for %llu sectors",
			       (unsigned long long)nhash,
			       (unsigned long long)sectors);
	}

	dev = major << 32 | minor;
	vm = sim_idmap_get(&t->vm_ids, vm_is_pid ? pid : dev);
	req->file = sim_idmap_get(&t->file_ids, dev);
	if (vm == UINT32_MAX || req->file == UINT32_MAX)
		return sim_bad(t, "out of memory for ids");
	return sim_emit(t, req, ts, vm, op, req->file, lba * 512, sectors * 512,
			unit, (uint32_t)nhash, FIU_MD5_LEN);
}

static enum sim_line parse_dev(struct sim_trace *t, char *line, char *end,
			       struct sim_req *req)
{
	return parse(t, line, end, req, false);
}

static enum sim_line parse_pid(struct sim_trace *t, char *line, char *end,
			       struct sim_req *req)
{
	return parse(t, line, end, req, true);
}

/* Eight or more fields: numbers, a name, numbers, R|W, numbers, hex. */
static bool detect(const char *line, const char *end)
{
	char *p = (char *)line, *tok, *tok_end;
	uint64_t v;

	if (!number(&p, end, &v) || !number(&p, end, &v) ||
	    !token(&p, end, &tok, &tok_end) || !number(&p, end, &v) ||
	    !number(&p, end, &v) || !token(&p, end, &tok, &tok_end) ||
	    tok_end - tok != 1 || (*tok != 'R' && *tok != 'W') ||
	    !number(&p, end, &v) || !number(&p, end, &v) ||
	    !token(&p, end, &tok, &tok_end))
		return false;
	return sim_hexval(*tok) >= 0;
}

/* Never chosen by detection: "fiu" reads the same lines. */
static bool detect_never(const char *line, const char *end)
{
	(void)line;
	(void)end;
	return false;
}

const struct sim_format sim_format_fiu = {
	.name = "fiu", .detect = detect, .parse = parse_dev,
};

const struct sim_format sim_format_fiu_pid = {
	.name = "fiu-pid", .detect = detect_never, .parse = parse_pid,
};
