// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * SHA-256 block hashing in the kernel through the crypto API.
 *
 * The shash API (rather than the sha256() library call) picks the fastest
 * registered implementation, e.g. sha256_ssse3 with SHA-NI when loaded.
 */
#include <crypto/algapi.h>
#include <crypto/hash.h>

#include "seacache/hash.h"

struct sc_hasher {
	struct crypto_shash *tfm;
	struct shash_desc *desc;
};

struct sc_hasher *sc_hasher_new(void)
{
	struct sc_hasher *h = kzalloc(sizeof(*h), GFP_KERNEL);

	if (!h)
		return NULL;
	h->tfm = crypto_alloc_shash("sha256", 0, 0);
	if (IS_ERR(h->tfm)) {
		sc_log_err("no sha256 in the kernel crypto API (%ld)",
			   PTR_ERR(h->tfm));
		kfree(h);
		return NULL;
	}
	h->desc = kzalloc(sizeof(*h->desc) + crypto_shash_descsize(h->tfm),
			  GFP_KERNEL);
	if (!h->desc) {
		crypto_free_shash(h->tfm);
		kfree(h);
		return NULL;
	}
	h->desc->tfm = h->tfm;
	return h;
}

void sc_hasher_free(struct sc_hasher *h)
{
	if (!h)
		return;
	kfree_sensitive(h->desc);
	crypto_free_shash(h->tfm);
	kfree(h);
}

int sc_hasher_digest(struct sc_hasher *h, const void *data, size_t len,
		     struct sc_hash *out)
{
	if (crypto_shash_digestsize(h->tfm) != SC_HASH_LEN)
		return -EIO;
	return crypto_shash_digest(h->desc, data, len, out->b);
}

struct sc_mac {
	struct crypto_shash *tfm;
};

struct sc_mac *sc_mac_new(const void *key, size_t keylen)
{
	struct sc_mac *m = kzalloc(sizeof(*m), GFP_KERNEL);

	if (!m)
		return NULL;
	m->tfm = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(m->tfm)) {
		sc_log_err("no hmac(sha256) in the kernel crypto API (%ld)",
			   PTR_ERR(m->tfm));
		kfree(m);
		return NULL;
	}
	if (crypto_shash_setkey(m->tfm, key, keylen)) {
		crypto_free_shash(m->tfm);
		kfree(m);
		return NULL;
	}
	return m;
}

void sc_mac_free(struct sc_mac *m)
{
	if (!m)
		return;
	crypto_free_shash(m->tfm);
	kfree(m);
}

/* The keyed tfm is shared; each digest has its descriptor on the stack. */
int sc_mac_digest(struct sc_mac *m, const void *msg, size_t len,
		  u8 out[SC_MAC_LEN])
{
	if (crypto_shash_digestsize(m->tfm) != SC_MAC_LEN)
		return -EIO;
	return crypto_shash_tfm_digest(m->tfm, msg, len, out);
}

bool sc_mem_equal_secret(const void *a, const void *b, size_t n)
{
	return !crypto_memneq(a, b, n);
}
