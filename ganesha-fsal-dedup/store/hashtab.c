// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * A set of objects that begin with their content hash, found by it: the
 * contents held by the write-back buffer, the fresh chunks.  Open
 * addressing with linear probing on the hash's first bytes (SHA-256 is
 * uniform), at most half full: a lookup, mostly of a hash that is not
 * there, reads a few adjacent slots, not a chain of objects scattered
 * over the heap.
 */
#include <errno.h>
#include <stdlib.h>

#include "dstore_int.h"

/* The slot holding h, or the free slot ending its probe run. */
static struct hash_slot *slot_of(const struct hash_table *t,
				 const struct sc_hash *h)
{
	uint64_t key = sc_hash_key64(h);
	size_t mask = t->cap - 1;

	for (size_t i = key & mask;; i = (i + 1) & mask) {
		struct hash_slot *s = &t->s[i];

		if (!s->obj || (s->key == key && sc_hash_eq(s->obj, h)))
			return s;
	}
}

void *htab_find(const struct hash_table *t, const struct sc_hash *h)
{
	return t->cap ? slot_of(t, h)->obj : NULL;
}

int htab_reserve(struct hash_table *t, size_t more)
{
	struct hash_table old = *t;
	size_t cap = t->cap ? t->cap : 1024;

	while (2 * (t->n + more) > cap)
		cap *= 2;
	if (cap == t->cap)
		return 0;
	t->s = calloc(cap, sizeof(*t->s));
	if (!t->s) {
		*t = old;
		return -ENOMEM;
	}
	t->cap = cap;
	for (size_t i = 0; i < old.cap; i++)
		if (old.s[i].obj)
			*slot_of(t, old.s[i].obj) = old.s[i];
	free(old.s);
	return 0;
}

void htab_add(struct hash_table *t, struct sc_hash *obj)
{
	struct hash_slot *s = slot_of(t, obj);

	s->key = sc_hash_key64(obj);
	s->obj = obj;
	t->n++;
}

/*
 * The slot is emptied and the probe run after it closed up: an entry
 * whose run passes the gap (its home slot is not between the gap and
 * where it is) moves into it, so no lookup stops early.
 */
void htab_del(struct hash_table *t, const struct sc_hash *obj)
{
	size_t mask = t->cap - 1;
	size_t gap = (size_t)(slot_of(t, obj) - t->s);

	for (size_t i = (gap + 1) & mask; t->s[i].obj; i = (i + 1) & mask) {
		size_t home = t->s[i].key & mask;

		if (((i - home) & mask) >= ((i - gap) & mask)) {
			t->s[gap] = t->s[i];
			gap = i;
		}
	}
	t->s[gap].obj = NULL;
	t->n--;
}

void htab_free(struct hash_table *t)
{
	free(t->s);
	*t = (struct hash_table){ 0 };
}
