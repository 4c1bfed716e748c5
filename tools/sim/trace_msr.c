/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MSR Cambridge block traces (SNIA IOTTA), CSV without hashes:
 *   Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
 * Timestamp in Windows filetime (100 ns units), Type Read or Write, Offset
 * and Size in bytes.  Each (Hostname, DiskNumber) is one volume: one vm and
 * one file.  A header line starting "Timestamp," is skipped.
 */
#include <string.h>
#include <strings.h>

#include <xxhash.h>

#include "trace_int.h"

/* A number ending at a comma (consumed) or, if last, at the line's end. */
static bool field_u64(char **p, const char *end, uint64_t *v, bool last)
{
	char *s = *p;

	if (!sim_parse_u64(&s, end, v))
		return false;
	if (last ? s != end : (s == end || *s != ','))
		return false;
	*p = last ? s : s + 1;
	return true;
}

/* Up to the next comma (consumed). */
static bool field_str(char **p, const char *end, char **s, size_t *n)
{
	char *c = memchr(*p, ',', (size_t)(end - *p));

	if (!c)
		return false;
	*s = *p;
	*n = (size_t)(c - *p);
	*p = c + 1;
	return true;
}

static enum sim_line parse(struct sim_trace *t, char *line, char *end,
			   struct sim_req *req)
{
	uint64_t ts, disk, off, size, rt;
	char *p = line, *host, *type;
	size_t host_len, type_len;
	uint32_t vol;
	uint8_t op;

	if (p == end || *p == '#' || !strncmp(p, "Timestamp,", 10))
		return SIM_LINE_SKIP;
	if (!field_u64(&p, end, &ts, false) || ts > UINT64_MAX / 100)
		return sim_bad(t, "bad timestamp");
	if (!field_str(&p, end, &host, &host_len) || !host_len)
		return sim_bad(t, "missing hostname");
	if (!field_u64(&p, end, &disk, false))
		return sim_bad(t, "bad disk number");
	if (!field_str(&p, end, &type, &type_len))
		return sim_bad(t, "too few fields");
	if (type_len == 4 && !strncasecmp(type, "Read", 4))
		op = 'R';
	else if (type_len == 5 && !strncasecmp(type, "Write", 5))
		op = 'W';
	else
		return sim_bad(t, "type is not Read or Write");
	if (!field_u64(&p, end, &off, false))
		return sim_bad(t, "bad offset");
	if (!field_u64(&p, end, &size, false))
		return sim_bad(t, memchr(p, ',', (size_t)(end - p)) ?
					  "bad size" :
					  "bad size or missing response time");
	if (!field_u64(&p, end, &rt, true))
		return sim_bad(t, "bad response time or extra fields");

	/* Volume names hashed to 64 bits: a collision is out of reach. */
	vol = sim_idmap_get(&t->vm_ids, XXH3_64bits_withSeed(host, host_len, disk));
	if (vol == UINT32_MAX)
		return sim_bad(t, "out of memory for ids");
	return sim_emit(t, req, ts * 100, vol, op, vol, off, size, 1, 0, 0);
}

static bool detect(const char *line, const char *end)
{
	char *p = (char *)line, *s;
	uint64_t v;
	size_t n;

	if (end - line >= 10 && !strncmp(line, "Timestamp,", 10))
		return true;
	return field_u64(&p, end, &v, false) && field_str(&p, end, &s, &n) &&
	       field_u64(&p, end, &v, false) && field_str(&p, end, &s, &n) &&
	       ((n == 4 && !strncasecmp(s, "Read", 4)) ||
		(n == 5 && !strncasecmp(s, "Write", 5)));
}

const struct sim_format sim_format_msr = {
	.name = "msr", .detect = detect, .parse = parse,
};
