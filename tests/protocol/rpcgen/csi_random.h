// SPDX-License-Identifier: BSD-2-Clause
/*
 * Random valid CSI messages, from a seeded PRNG: every union arm, array
 * counts from zero to a few, opaque data of every length class up to one
 * 4 KiB block (odd lengths for padding), strings of any non-NUL byte up to
 * their protocol limit.  The fields of union arms not selected are filled
 * too, so that an encoder that looks at them shows up.
 */
#ifndef CSI_RANDOM_H
#define CSI_RANDOM_H

#include "seacache/csi_codec.h"
#include "seacache/prng.h"

/* Memory one random message can need at most. */
#define CSI_RANDOM_POOL (256 * 1024)

struct csi_random {
	struct sc_prng prng;
	uint8_t *pool;		/* CSI_RANDOM_POOL bytes the caller provides */
	size_t pool_pos;
};

/*
 * Fill msg (a zeroed struct of csi_msgs[m].size) with a random valid
 * message of type m.  Its arrays and bytes live in r->pool until the next
 * call.
 */
void csi_random_msg(struct csi_random *r, enum csi_msg m, void *msg);

#endif /* CSI_RANDOM_H */
