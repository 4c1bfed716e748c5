// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * Deferred index updates, recorded: what a write transaction changes of
 * reference counts, CSI-Map entries and the chunk index goes into one
 * pending record appended in the same transaction (atomic with the block
 * map change, sequential on disk); pending.c applies the records later,
 * in bulk (see there for why and what this changes).
 *
 * Record: key = sequence number; value = entries, each a flags byte then
 *   DELTA_CHUNK:          hash, slot u64, check u32      (a new chunk)
 *   DELTA_OLD/DELTA_NEW:  ino u64, lbn u64, [old hash], [new hash]
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

/* Room for one more entry; where it goes. */
static uint8_t *delta_room(struct wtxn *w)
{
	uint8_t *p;

	if (w->delta_len + DELTA_MAX > w->delta_cap) {
		size_t cap = w->delta_cap ? 2 * w->delta_cap : 64 * DELTA_MAX;

		p = realloc(w->delta, cap);
		if (!p)
			return NULL;
		w->delta = p;
		w->delta_cap = cap;
	}
	return w->delta + w->delta_len;
}

int delta_add_chunk(struct wtxn *w, const struct sc_hash *h,
		    const struct chunk_rec *c)
{
	struct fresh_chunk *fc = malloc(sizeof(*fc));
	uint8_t *p = delta_room(w);
	int rc = fc && p ? htab_reserve(&w->fresh_new, 1) : -ENOMEM;

	/* room in the store's table too, for fresh_commit */
	if (!rc)
		rc = fresh_reserve(w);
	if (rc) {
		free(fc);
		return rc;
	}
	fc->h = *h;
	fc->c = *c;
	htab_add(&w->fresh_new, &fc->h);
	p[0] = DELTA_CHUNK;
	memcpy(p + 1, h->b, SC_HASH_LEN);
	memcpy(p + 1 + SC_HASH_LEN, &c->slot, 8);
	memcpy(p + 9 + SC_HASH_LEN, &c->check, 4);
	w->delta_len += 13 + SC_HASH_LEN;
	w->cur.pending_deltas++;
	return 0;
}

int delta_add(struct wtxn *w, uint64_t ino, uint64_t lbn,
	      const struct sc_hash *old, const struct sc_hash *new_h)
{
	uint8_t *p = delta_room(w);

	if (!p)
		return -ENOMEM;
	p[0] = (uint8_t)((old ? DELTA_OLD : 0) | (new_h ? DELTA_NEW : 0));
	memcpy(p + 1, &ino, 8);
	memcpy(p + 9, &lbn, 8);
	p += 17;
	if (old) {
		memcpy(p, old->b, SC_HASH_LEN);
		p += SC_HASH_LEN;
	}
	if (new_h) {
		memcpy(p, new_h->b, SC_HASH_LEN);
		p += SC_HASH_LEN;
	}
	w->delta_len = (size_t)(p - w->delta);
	w->cur.pending_deltas++;
	return 0;
}

int delta_flush(struct wtxn *w)
{
	uint8_t kb[8];
	MDB_val k = { sizeof(kb), kb }, v = { w->delta_len, w->delta };

	if (w->delta_len == 0)
		return 0;
	sc_put_be64(kb, w->cur.next_pending++);
	w->delta_len = 0;
	return idx_err(w->ds, mdb_put(w->txn, w->ds->db_pending, &k, &v,
				      MDB_APPEND), "pending deltas");
}

void delta_free(struct wtxn *w)
{
	free(w->delta);
	w->delta = NULL;
	w->delta_len = w->delta_cap = 0;
	fresh_table_free(&w->fresh_new);
	free(w->applied);
	w->applied = NULL;
	w->n_applied = w->cap_applied = 0;
}
