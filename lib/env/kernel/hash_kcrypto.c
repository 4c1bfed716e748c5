// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * SHA-256 block hashing in the kernel through the crypto API.
 *
 * The shash API (rather than the sha256() library call) picks the fastest
 * registered implementation, e.g. sha256_ssse3 with SHA-NI when loaded.
 */
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
