/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A block's fingerprint in a SeaCache workload (WORKLOAD-FORMAT.md,
 * header key fingerprint=xxh128): XXH3's 128-bit hash of its bytes in
 * canonical (big-endian) form, as `xxhsum -H2` prints it.  It only names
 * contents and lets a replay check every byte it reads; the protocol's
 * content hash stays SHA-256.  XXH3 costs a small part of what SHA-256
 * does, and the check of every block read was a sixth of the lab's CPU.
 */
#ifndef SC_WORKLOAD_FP_H
#define SC_WORKLOAD_FP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <xxhash.h>

#define WL_FP_BYTES 16
#define WL_FP_NAME "xxh128"

static inline void wl_fingerprint(const void *block, size_t len,
				  uint8_t fp[WL_FP_BYTES])
{
	XXH128_canonical_t c;

	XXH128_canonicalFromHash(&c, XXH3_128bits(block, len));
	memcpy(fp, c.digest, WL_FP_BYTES);
}

#endif
