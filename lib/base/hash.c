// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "seacache/hash.h"

void sc_hash_to_hex(const struct sc_hash *h, char *out)
{
	static const char digits[] = "0123456789abcdef";
	int i;

	for (i = 0; i < SC_HASH_LEN; i++) {
		out[2 * i] = digits[h->b[i] >> 4];
		out[2 * i + 1] = digits[h->b[i] & 15];
	}
	out[2 * SC_HASH_LEN] = '\0';
}

int sc_block_verify(struct sc_hasher *hs, uint32_t block_size,
		    const struct sc_hash *h, const void *data, uint32_t len,
		    void *block)
{
	struct sc_hash got;
	int err;

	if (len > block_size)
		return -SC_EBADMSG;
	/* an empty field may come with no buffer at all */
	if (len && data != block)
		sc_memcpy(block, data, len);
	sc_memset((uint8_t *)block + len, 0, block_size - len);
	err = sc_hasher_digest(hs, block, block_size, &got);
	if (err)
		return err;
	return sc_hash_eq(&got, h) ? 0 : -SC_EBADMSG;
}
