/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Block content hashes.
 *
 * Content is named by the SHA-256 of the whole block.  Block size is a power
 * of two from 4 KiB to 64 KiB, fixed per store or cache.
 *
 * Collision policy: two blocks are the same content exactly when their
 * 32-byte hashes are equal; hashes are always compared in full, never by a
 * prefix.  A SHA-256 collision between distinct blocks is not assumed to be
 * impossible: wherever the core holds both the bytes and the hash (the
 * content cache on insert), it compares the bytes, and a mismatch is
 * logged, counted and refused, so a reader never gets another block's data.
 *
 * The digest itself comes from the environment: OpenSSL EVP in user space
 * (lib/env/user/hash_openssl.c), the kernel crypto API in the kernel
 * (lib/env/kernel/hash_kcrypto.c).
 */
#ifndef SEACACHE_HASH_H
#define SEACACHE_HASH_H

#include "compat.h"
#include "defaults.h"

#define SC_HASH_LEN 32

struct sc_hash {
	uint8_t b[SC_HASH_LEN];
};

/* One hashing context; not shared between threads. */
struct sc_hasher;

struct sc_hasher *sc_hasher_new(void);
void sc_hasher_free(struct sc_hasher *h);
/* SHA-256 of data[0..len); 0 or a negative error. */
int sc_hasher_digest(struct sc_hasher *h, const void *data, size_t len,
		     struct sc_hash *out);
/*
 * A block received as a data field (PROTOCOL.md §2: shorter than the
 * block means zeros follow), from a server, a peer or a writing host:
 * copy data[0..len) into block (block_size bytes; data may be block
 * itself), zero-fill the rest and compare its SHA-256 with h.  0 when the
 * block is usable; -SC_EBADMSG when len exceeds block_size or the hash
 * differs, and then block must not be used; another negative error if
 * hashing failed.
 */
int sc_block_verify(struct sc_hasher *hs, uint32_t block_size,
		    const struct sc_hash *h, const void *data, uint32_t len,
		    void *block);

static inline bool sc_hash_eq(const struct sc_hash *a, const struct sc_hash *b)
{
	return sc_memcmp(a->b, b->b, SC_HASH_LEN) == 0;
}

/*
 * Table index key: SHA-256 output is uniform, so its first eight bytes
 * already make a good bucket key within one process (equality still compares all 32 bytes).
 */
static inline uint64_t sc_hash_key64(const struct sc_hash *h)
{
	uint64_t k;

	sc_memcpy(&k, h->b, sizeof(k));
	return k;
}

static inline bool sc_block_size_valid(uint32_t bs)
{
	return sc_is_pow2(bs) && bs >= SC_BLOCK_SIZE_MIN &&
	       bs <= SC_BLOCK_SIZE_MAX;
}

/*
 * HMAC-SHA-256 under one key (peer tokens, PROTOCOL.md §9.2), also from
 * the environment.  A context is used by one thread at a time.
 */
#define SC_MAC_LEN 32
struct sc_mac;

struct sc_mac *sc_mac_new(const void *key, size_t keylen);
void sc_mac_free(struct sc_mac *m);
int sc_mac_digest(struct sc_mac *m, const void *msg, size_t len,
		  uint8_t out[SC_MAC_LEN]);
/* Equal, in a time that does not depend on where they differ. */
bool sc_mem_equal_secret(const void *a, const void *b, size_t n);

/* Lower-case hex of the hash into out (2 * SC_HASH_LEN + 1 bytes). */
void sc_hash_to_hex(const struct sc_hash *h, char *out);

#endif /* SEACACHE_HASH_H */
