// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * SHA-256 block hashing in user space through OpenSSL 3 EVP.
 *
 * The digest implementation is fetched once per hasher and the context is
 * reused: per-block fetches and context allocations would cost more than
 * hashing a 4 KiB block with SHA-NI.
 */
#include <openssl/evp.h>

#include "seacache/hash.h"

struct sc_hasher {
	EVP_MD *md;
	EVP_MD_CTX *ctx;
};

struct sc_hasher *sc_hasher_new(void)
{
	struct sc_hasher *h = sc_zalloc(sizeof(*h));

	if (!h)
		return NULL;
	h->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	h->ctx = EVP_MD_CTX_new();
	if (!h->md || !h->ctx) {
		sc_log_err("OpenSSL has no SHA256 digest available");
		sc_hasher_free(h);
		return NULL;
	}
	return h;
}

void sc_hasher_free(struct sc_hasher *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	EVP_MD_free(h->md);
	sc_free(h);
}

int sc_hasher_digest(struct sc_hasher *h, const void *data, size_t len,
		     struct sc_hash *out)
{
	unsigned int outlen = 0;

	if (!EVP_DigestInit_ex2(h->ctx, h->md, NULL) ||
	    !EVP_DigestUpdate(h->ctx, data, len) ||
	    !EVP_DigestFinal_ex(h->ctx, out->b, &outlen) ||
	    outlen != SC_HASH_LEN)
		return -SC_EIO;
	return 0;
}
