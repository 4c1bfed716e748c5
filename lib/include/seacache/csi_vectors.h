/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Golden vectors of the CSI protocol: named messages whose encodings are
 * kept in protocol/vectors/<name>.bin.  Every codec must encode each
 * message to exactly those bytes and decode those bytes back to it; the
 * user-space tests, the in-kernel self-test and the fuzzers' seed corpus
 * all use this one table.  The values exercise every message, every union
 * arm, padding (odd lengths) and empty and non-empty arrays; they are
 * about encoding only (hashes are patterns, not digests of the data).
 */
#ifndef SEACACHE_CSI_VECTORS_H
#define SEACACHE_CSI_VECTORS_H

#include "csi_codec.h"

/*
 * Scratch a vector's message may point into (block data, hash lists, its
 * arrays); aligned for any struct, as an allocator returns it.
 */
#define CSI_VECTOR_SCRATCH (4 * 4096)

struct csi_vector {
	const char *name;
	enum csi_msg msg;
	/* Fill msg (of the type's struct, zeroed) using scratch. */
	void (*build)(void *msg, uint8_t *scratch);
};

extern const struct csi_vector csi_vectors[];
extern const unsigned int csi_nvectors;

/*
 * Check one vector's bytes: the table's message encodes to exactly them,
 * and they decode to a message that encodes to them again.  0 or a
 * negative error, logged with the vector's name.
 */
int csi_vector_check(const struct csi_vector *v, const void *bytes,
		     size_t len);

/* Encode a vector's message into a new buffer (sc_free it); NULL on error. */
uint8_t *csi_vector_encode(const struct csi_vector *v, size_t *len);

#endif /* SEACACHE_CSI_VECTORS_H */
