/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Seeded byte streams for the dedup box tests: random bytes, a repetitive
 * stream, and NFS-shaped traffic (ONC RPC records with READ/WRITE-like
 * payloads drawn from a small pool of 4 KiB blocks, so blocks repeat).
 */
#ifndef DEDUPBOX_TRAFFIC_H
#define DEDUPBOX_TRAFFIC_H

#include <stddef.h>
#include <stdint.h>

enum traffic_kind { TRAFFIC_RANDOM, TRAFFIC_REPEAT, TRAFFIC_NFS };

/* About len bytes (at least len) of kind from seed; *out_len its length. */
uint8_t *traffic_make(enum traffic_kind kind, uint64_t seed, size_t len,
		      size_t *out_len);

#endif
