// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "seacache/lru.h"

int sc_lru_init(struct sc_lru *l, uint32_t capacity)
{
	l->link = sc_calloc(capacity, sizeof(*l->link));
	if (!l->link)
		return -SC_ENOMEM;
	l->head = SC_NIL;
	l->tail = SC_NIL;
	l->count = 0;
	l->capacity = capacity;
	return 0;
}

void sc_lru_destroy(struct sc_lru *l)
{
	sc_free(l->link);
	l->link = NULL;
}
