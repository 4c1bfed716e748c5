// SPDX-License-Identifier: BSD-2-Clause
/*
 * One CSI message's decoder under libFuzzer.  Built once per message:
 * FUZZ_MSG names it (CSI_MSG_READ_RES, ...).
 *
 * Properties, each input:
 *  - csi_decode never needs more arena than csi_decode_arena_size() says
 *    (never -ENOMEM), and never reads or writes out of its buffers (ASan:
 *    input, message and arena are each allocated to their exact size);
 *  - it succeeds or fails with -EBADMSG or -E2BIG, nothing else;
 *  - an accepted input re-encodes to exactly its own bytes: decoding is
 *    strict, so there is one encoding per message.
 */
#include <stdlib.h>

#include "fuzz_common.h"

#ifndef FUZZ_MSG
#error "compile with -DFUZZ_MSG=CSI_MSG_<NAME>"
#endif
_Static_assert(FUZZ_MSG > CSI_MSG_VOID && FUZZ_MSG < CSI_MSG_COUNT,
	       "FUZZ_MSG names a message of enum csi_msg other than VOID");

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	void *msg, *arena;
	size_t pos = 0;
	uint8_t *out;

	if (fuzz_decode(FUZZ_MSG, data, len, &msg, &arena))
		return 0;
	out = fuzz_alloc(len);
	fuzz_encode(FUZZ_MSG, msg, out, len, &pos, len);
	fuzz_same(out, data, len, csi_msgs[FUZZ_MSG].name);
	free(out);
	free(arena);
	free(msg);
	return 0;
}

static int seed(void *out, const char *name, const uint8_t *b, size_t len)
{
	return fuzz_write_seed(out, name, b, len);
}

/* The golden vectors of this message, as they are. */
int fuzz_write_seeds(const char *vectors, const char *out)
{
	return fuzz_each_vector(vectors, FUZZ_MSG, seed, (void *)out);
}
