/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The project's binary trace (trace.h): written from any trace by
 * sim_trace_convert(), read from a read-only mapping of the whole file,
 * each request's ids handed out where they lie in the mapping.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "seacache/hash.h"
#include "trace_int.h"

struct bin_header {
	char magic[8];
	uint32_t block_size, flags;
	uint64_t requests, blocks;
	uint32_t addrs, contents, vms;
	uint8_t zero[SIM_BIN_HEADER - 44];
};

_Static_assert(sizeof(struct bin_header) == SIM_BIN_HEADER, "header size");

bool sim_bin_open(struct sim_trace *t, uint64_t size)
{
	struct bin_header h;
	void *m;

	if (size < SIM_BIN_HEADER) {
		snprintf(t->err, sizeof(t->err), "binary trace shorter than its header");
		return false;
	}
	m = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, t->fd, 0);
	if (m == MAP_FAILED) {
		snprintf(t->err, sizeof(t->err), "mmap: %s", strerror(errno));
		return false;
	}
	madvise(m, size, MADV_SEQUENTIAL);
	t->map = m;
	t->map_len = size;
	t->map_pos = SIM_BIN_HEADER;
	memcpy(&h, m, sizeof(h));
	if (!sc_block_size_valid(h.block_size) || h.flags > 1) {
		snprintf(t->err, sizeof(t->err), "bad binary trace header");
		return false;
	}
	t->bs_native = h.block_size;
	t->bin_flags = h.flags;
	t->bin_addrs = h.addrs;
	t->bin_contents = h.contents;
	t->st.in_size = size;
	return true;
}

void sim_bin_close(struct sim_trace *t)
{
	if (t->map)
		munmap((void *)t->map, t->map_len);
}

/* The record at *pos into req, *pos moved past it: 1, 0 at the end, -1 cut. */
static int bin_record(const struct sim_trace *t, size_t *pos,
		      struct sim_req *req)
{
	const uint8_t *p = t->map + *pos;
	size_t left = t->map_len - *pos, need;
	uint32_t nb;

	if (!left)
		return 0;
	if (left < 16)
		return -1;
	memcpy(&req->ts_ns, p, 8);
	memcpy(&req->vm, p + 8, 4);
	memcpy(&nb, p + 12, 4);
	req->op = nb & SIM_BIN_WRITE ? 'W' : 'R';
	nb &= ~SIM_BIN_WRITE;
	need = 16 + (size_t)nb * 4 * (1 + (t->bin_flags & 1));
	if (!nb || left < need)
		return -1;
	req->file = 0;
	req->lbn = 0;
	req->nblocks = nb;
	req->fp = NULL;
	req->fp_len = 0;
	/* Records start 4-byte aligned: the header is 64 bytes, ids 4. */
	req->addr = (const uint32_t *)(const void *)(p + 16);
	req->content = t->bin_flags & 1 ? req->addr + nb : NULL;
	*pos += need;
	return 1;
}

int sim_bin_next(struct sim_trace *t, struct sim_req *req)
{
	int rc = bin_record(t, &t->map_pos, req);

	if (rc < 0)
		snprintf(t->err, sizeof(t->err),
			 "%s: binary trace truncated at byte %zu", t->path,
			 t->map_pos);
	if (rc <= 0)
		return rc;
	t->st.in_bytes = t->map_pos;
	t->st.lines++;
	t->st.requests++;
	return 1;
}

int sim_bin_ahead(struct sim_trace *t, struct sim_req *req)
{
	if (t->ahead_pos < t->map_pos)
		t->ahead_pos = t->map_pos;
	return bin_record(t, &t->ahead_pos, req) == 1;
}

int sim_trace_convert(const char *in, const char *format, uint32_t block_size,
		      const char *out, char *err, size_t errlen)
{
	struct sim_trace *t = sim_trace_open(in, format, block_size, err, errlen);
	struct bin_header h = { .magic = SIM_BIN_MAGIC };
	struct sim_req r;
	uint32_t word[4];
	bool ok;
	FILE *f;
	int rc = 0;

	if (!t)
		return -1;
	f = fopen(out, "wb");
	if (!f) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		sim_trace_close(t);
		return -1;
	}
	sim_trace_want_ids(t);
	ok = fwrite(&h, sizeof(h), 1, f) == 1;
	if (!ok)
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
	while (ok && (rc = sim_trace_next(t, &r)) == 1) {
		if (h.requests && !r.content != !h.flags) {
			snprintf(err, errlen,
				 "%s: requests with and without fingerprints", in);
			ok = false;
			break;
		}
		h.flags = r.content != NULL;
		memcpy(word, &r.ts_ns, 8);
		word[2] = r.vm;
		word[3] = r.nblocks | (r.op == 'W' ? SIM_BIN_WRITE : 0);
		ok = fwrite(word, 16, 1, f) == 1 &&
		     fwrite(r.addr, 4, r.nblocks, f) == r.nblocks &&
		     (!r.content ||
		      fwrite(r.content, 4, r.nblocks, f) == r.nblocks);
		if (!ok)
			snprintf(err, errlen, "%s: %s", out, strerror(errno));
		h.requests++;
		h.blocks += r.nblocks;
		if (r.vm >= h.vms)
			h.vms = r.vm + 1;
	}
	if (ok && rc < 0) {
		snprintf(err, errlen, "%s", sim_trace_error(t));
		ok = false;
	}
	if (ok) {
		h.block_size = sim_trace_block_size(t);
		sim_trace_ids(t, &h.addrs, &h.contents);
		ok = !fseek(f, 0, SEEK_SET) && fwrite(&h, sizeof(h), 1, f) == 1;
		if (!ok)
			snprintf(err, errlen, "%s: %s", out, strerror(errno));
	}
	if (sim_trace_stats(t)->malformed)
		sim_trace_report(t, stderr);
	if (fclose(f) && ok) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		ok = false;
	}
	sim_trace_close(t);
	return ok ? 0 : -1;
}
