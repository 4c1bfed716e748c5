// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "seacache/itab.h"

int sc_itab_init(struct sc_itab *t, uint32_t capacity)
{
	return sc_itab_init_buckets(t, capacity, capacity);
}

int sc_itab_init_buckets(struct sc_itab *t, uint32_t capacity,
			 uint32_t buckets)
{
	uint32_t nb = sc_rounddown_pow2(buckets ? buckets : 1);

	t->bucket = sc_calloc(nb, sizeof(uint32_t));
	t->next = sc_calloc(capacity ? capacity : 1, sizeof(uint32_t));
	if (!t->bucket || !t->next) {
		sc_itab_destroy(t);
		return -SC_ENOMEM;
	}
	sc_memset(t->bucket, 0xff, (size_t)nb * sizeof(uint32_t));
	t->mask = nb - 1;
	t->capacity = capacity;
	return 0;
}

void sc_itab_destroy(struct sc_itab *t)
{
	sc_free(t->bucket);
	sc_free(t->next);
	t->bucket = NULL;
	t->next = NULL;
}

bool sc_itab_del(struct sc_itab *t, uint64_t key, uint32_t i)
{
	uint32_t *link = &t->bucket[key & t->mask];

	while (*link != SC_NIL) {
		if (*link == i) {
			*link = t->next[i];
			return true;
		}
		link = &t->next[*link];
	}
	return false;
}
