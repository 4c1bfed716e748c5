/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef SC_TEST_SERVICE_H
#define SC_TEST_SERVICE_H

#include "seacache/rpc_transport.h"

#define BS 4096u

/* Byte i of block lbn of file f. */
uint8_t pattern_byte(uint64_t f, uint64_t lbn, uint32_t i);
/*
 * READ: count DATA blocks of pattern bytes; EVICT: status BUSY when the
 * header carried notices, OK otherwise; anything else: SYSTEM_ERR.
 */
int test_handle(void *ctx, struct sc_rpc_request *rq);
extern const struct sc_rpc_service test_svc;
/*
 * Whether r is what test_handle answers for (file, lbn, count); a mismatch
 * is recorded as a failed worker check (tests/common/worker_check.h), so
 * worker threads may call it.  check_read_res: the same on the test's
 * thread, cmocka-failing at once.
 */
bool read_res_ok(const struct csi_read_res *r, uint64_t file, uint64_t lbn,
		 uint32_t count);
void check_read_res(const struct csi_read_res *r, uint64_t file, uint64_t lbn,
		    uint32_t count);

#endif
