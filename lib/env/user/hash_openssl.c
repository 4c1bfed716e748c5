// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * SHA-256 block hashing in user space through OpenSSL 3 EVP.
 *
 * The digest implementation is fetched once per hasher and the context is
 * reused: per-block fetches and context allocations would cost more than
 * hashing a 4 KiB block with SHA-NI.
 */
#include <openssl/core_names.h>
#include <openssl/crypto.h>
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

struct sc_mac {
	EVP_MAC *mac;
	EVP_MAC_CTX *ctx;
};

struct sc_mac *sc_mac_new(const void *key, size_t keylen)
{
	struct sc_mac *m = sc_zalloc(sizeof(*m));
	OSSL_PARAM params[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						 (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};

	if (!m)
		return NULL;
	m->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	m->ctx = m->mac ? EVP_MAC_CTX_new(m->mac) : NULL;
	if (!m->ctx || !EVP_MAC_init(m->ctx, key, keylen, params)) {
		sc_log_err("OpenSSL has no HMAC-SHA256 available");
		sc_mac_free(m);
		return NULL;
	}
	return m;
}

void sc_mac_free(struct sc_mac *m)
{
	if (!m)
		return;
	EVP_MAC_CTX_free(m->ctx);
	EVP_MAC_free(m->mac);
	sc_free(m);
}

int sc_mac_digest(struct sc_mac *m, const void *msg, size_t len,
		  uint8_t out[SC_MAC_LEN])
{
	size_t outlen = 0;

	/* a NULL key re-initializes with the key given at creation */
	if (!EVP_MAC_init(m->ctx, NULL, 0, NULL) ||
	    !EVP_MAC_update(m->ctx, msg, len) ||
	    !EVP_MAC_final(m->ctx, out, &outlen, SC_MAC_LEN) ||
	    outlen != SC_MAC_LEN)
		return -SC_EIO;
	return 0;
}

bool sc_mem_equal_secret(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}
