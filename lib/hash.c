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
