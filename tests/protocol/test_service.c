// SPDX-License-Identifier: BSD-2-Clause
/*
 * A CSI service for transport tests: READ answers every block with bytes
 * derived from (file, lbn), so a reply that reaches the wrong call or
 * carries a wrong byte shows; EVICT tells whether notices arrived.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "test_service.h"
#include "worker_check.h"

/* Block lbn of file f: bytes derived from both, so misrouting shows. */
uint8_t pattern_byte(uint64_t f, uint64_t lbn, uint32_t i)
{
	return (uint8_t)(f * 31 + lbn * 7 + i * 13 + (i >> 8));
}

int test_handle(void *ctx, struct sc_rpc_request *rq)
{
	const struct csi_read_args *a = rq->args;
	struct csi_read_res *r = rq->res;
	uint32_t i, j;
	uint8_t *data;

	(void)ctx;
	if (rq->proc->proc == CSI_PROC_EVICT) {
		/* Echo the number of notices back through the status. */
		struct csi_evict_res *er = rq->res;
		const struct csi_evict_args *ea = rq->args;

		er->status = ea->hdr.nevicted ? CSI_ERR_BUSY : CSI_OK;
		return 0;
	}
	if (rq->proc->proc != CSI_PROC_READ)
		return -1;	/* SYSTEM_ERR */
	if (a->count > CSI_MAX_BLOCKS) {
		r->status = CSI_ERR_TOO_BIG;
		return 0;
	}
	r->blocks = sc_rpc_req_alloc(rq, a->count * sizeof(*r->blocks));
	data = sc_rpc_req_alloc(rq, (size_t)a->count * BS);
	if (!r->blocks || !data)
		return -1;
	r->status = CSI_OK;
	r->attr.file = a->file;
	r->nblocks = a->count;
	for (i = 0; i < a->count; i++) {
		memset(&r->blocks[i], 0, sizeof(r->blocks[i]));
		r->blocks[i].kind = CSI_RK_DATA;
		r->blocks[i].hash.b[0] = (uint8_t)i;
		for (j = 0; j < BS; j++)
			data[i * BS + j] = pattern_byte(a->file, a->lbn + i, j);
		r->blocks[i].data.p = data + (size_t)i * BS;
		r->blocks[i].data.len = BS;
	}
	return 0;
}

const struct sc_rpc_service test_svc = { CSI_PROG, test_handle, NULL };

bool read_res_ok(const struct csi_read_res *r, uint64_t file, uint64_t lbn,
		 uint32_t count)
{
	uint32_t i, j;

	if (!WCHECK_EQ(r->status, CSI_OK) || !WCHECK_EQ(r->nblocks, count) ||
	    !WCHECK_EQ(r->attr.file, file))
		return false;
	for (i = 0; i < count; i++) {
		if (!WCHECK_EQ(r->blocks[i].kind, CSI_RK_DATA) ||
		    !WCHECK_EQ(r->blocks[i].data.len, BS))
			return false;
		for (j = 0; j < BS; j++)
			if (!worker_check(r->blocks[i].data.p[j] ==
					  pattern_byte(file, lbn + i, j),
					  __FILE__, __LINE__,
					  "file %llu block %llu byte %u wrong",
					  (unsigned long long)file,
					  (unsigned long long)(lbn + i), j))
				return false;
	}
	return true;
}

void check_read_res(const struct csi_read_res *r, uint64_t file,
		    uint64_t lbn, uint32_t count)
{
	read_res_ok(r, file, lbn, count);
	worker_checks_passed();
}

