// SPDX-License-Identifier: BSD-2-Clause
/*
 * The model's tables (sim_model_int.h): memory, the tables per address
 * and per content, grown as ids come, and the server's CSI-Map kept in
 * them.  The bottom of the model's files: it calls none of the others.
 */
#include "sim_model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void oom(void)
{
	fprintf(stderr, "seacache-sim: out of memory\n");
	exit(3);
}

/* Resize arr from oldn to newn elements; new ones are filled with fill. */
void *grow(void *arr, size_t elem, uint64_t oldn, uint64_t newn, int fill)
{
	char *p = realloc(arr, elem * (newn ? newn : 1));

	if (!p)
		oom();
	if (newn > oldn)
		memset(p + elem * oldn, fill, elem * (newn - oldn));
	return p;
}

/* ---- tables ---- */

void hs_grow(struct hset *h, uint32_t old, uint32_t cap)
{
	if (h->w)
		h->m = grow(h->m, h->w, old, cap, 0);
}

/* Raise *cap (doubling) to hold ids below n; false: it did already. */
static bool room(uint32_t *cap, uint32_t n)
{
	uint32_t c = *cap ? *cap : 1024;

	if (n <= *cap)
		return false;
	while (c < n)
		c = c * 2 > c ? c * 2 : n;
	*cap = c;
	return true;
}

/* Room for address ids below n, in the tables this mode uses. */
void addr_room(struct sim *s, uint32_t n)
{
	uint32_t old = s->acap, cap;

	if (!room(&s->acap, n))
		return;
	cap = s->acap;
	s->aseen = grow(s->aseen, 1, (old + 7) / 8, (cap + 7) / 8, 0);
	if (s->fast) {
		s->fast->slot = grow(s->fast->slot, 4, old, cap, 0xff);
		if (s->fast->gen)
			s->fast->gen = grow(s->fast->gen, 4, old, cap, 0);
		return;
	}
	s->acont = grow(s->acont, 4, old, cap, 0xff);
	if (!s->system)
		return;
	s->ahost = grow(s->ahost, 2, old, cap, 0xff);
	hs_grow(&s->aknown, old, cap);
	if (!s->push)
		return;
	s->anext = grow(s->anext, 4, old, cap, 0xff);
	s->aprev = grow(s->aprev, 4, old, cap, 0xff);
}

void content_room(struct sim *s, uint32_t n)
{
	uint32_t old = s->ccap, cap;

	if (!room(&s->ccap, n))
		return;
	cap = s->ccap;
	s->cshare = grow(s->cshare, 4, old, cap, 0);
	if (!s->system)
		return;
	hs_grow(&s->cheld, old, cap);
	if (s->push)
		s->chead = grow(s->chead, 4, old, cap, 0xff);
}

/* A new content of this simulator's own (traces without fingerprints). */
uint32_t own_content(struct sim *s)
{
	if (s->own_contents == NIL)
		oom();
	content_room(s, s->own_contents + 1);
	return s->own_contents++;
}

/* The server's CSI-Map: address a now holds content c. */
void map_set(struct sim *s, uint32_t a, uint32_t c)
{
	uint32_t old = s->acont[a];

	if (old == c)
		return;
	if (old != NIL) {
		s->cshare[old]--;
		if (s->push) {
			if (s->aprev[a] != NIL)
				s->anext[s->aprev[a]] = s->anext[a];
			else
				s->chead[old] = s->anext[a];
			if (s->anext[a] != NIL)
				s->aprev[s->anext[a]] = s->aprev[a];
		}
	}
	s->acont[a] = c;
	s->cshare[c]++;
	if (!s->push)
		return;
	s->aprev[a] = NIL;
	s->anext[a] = s->chead[c];
	if (s->chead[c] != NIL)
		s->aprev[s->chead[c]] = a;
	s->chead[c] = a;
}
