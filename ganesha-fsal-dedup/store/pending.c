// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * Deferred index updates.
 *
 * Reference counts and CSI-Map entries are keyed by content hash: updating
 * them with every write would dirty a random index page per block, more
 * index I/O than the block's data.  So a transaction that remaps blocks
 * records what changed, (ino, lbn, old content, new content), as one
 * pending record appended in the same transaction (atomic with the block
 * map change, sequential on disk), and the deltas are applied in bulk
 * later: by the housekeeper every interval, when many are pending, before
 * fsck, at close.  Each index page then absorbs many updates at once.
 *
 * What this changes and what it does not:
 *   - the block map, the chunk index (which contents exist) and the
 *     counters are exact at every commit; reads and dedup decisions use
 *     only those;
 *   - a chunk is freed only when applying every pending delta leaves it
 *     unreferenced, so a content referenced by a newer, not yet applied
 *     mapping is never freed: freeing is delayed, never early;
 *   - CSI-Map lookups (dstore_csimap_lookup) lag by the deltas not yet
 *     applied: they may miss the newest holders; every holder they return
 *     is confirmed against the block map.
 *
 * Record: key = sequence number; value = entries of
 *   ino u64, lbn u64, flags u8 (DELTA_OLD, DELTA_NEW), [old hash], [new hash]
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

#define DELTA_OLD 1u
#define DELTA_NEW 2u
#define DELTA_MAX (8 + 8 + 1 + 2 * SC_HASH_LEN)

int delta_add(struct wtxn *w, uint64_t ino, uint64_t lbn,
	      const struct sc_hash *old, const struct sc_hash *new_h)
{
	uint8_t *p;

	if (w->delta_len + DELTA_MAX > w->delta_cap) {
		size_t cap = w->delta_cap ? 2 * w->delta_cap : 64 * DELTA_MAX;

		p = realloc(w->delta, cap);
		if (!p)
			return -ENOMEM;
		w->delta = p;
		w->delta_cap = cap;
	}
	p = w->delta + w->delta_len;
	memcpy(p, &ino, 8);
	memcpy(p + 8, &lbn, 8);
	p[16] = (uint8_t)((old ? DELTA_OLD : 0) | (new_h ? DELTA_NEW : 0));
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
	key_u64(kb, w->cur.next_pending++);
	w->delta_len = 0;
	return idx_err(w->ds, mdb_put(w->txn, w->ds->db_pending, &k, &v,
				      MDB_APPEND), "pending deltas");
}

void delta_free(struct wtxn *w)
{
	free(w->delta);
	w->delta = NULL;
	w->delta_len = w->delta_cap = 0;
}

/* Contents that reached zero references while applying: freed at the end
 * if they are still at zero then. */
struct zero_list {
	struct sc_hash *h;
	size_t n, cap;
};

static int refs_move(struct wtxn *w, const struct sc_hash *h, int d,
		     struct zero_list *z)
{
	struct chunk_rec c;
	int rc = chunk_get(w->ds, w->txn, h, &c);

	if (rc == -ENOENT) {
		char hex[2 * SC_HASH_LEN + 1];

		sc_hash_to_hex(h, hex);
		dstore_logf(w->ds, DSTORE_LOG_ERROR,
			    "a block map change names chunk %s, which is not stored: run seacachectl fsck",
			    hex);
		return 0;	/* fsck repairs counts; go on with the rest */
	}
	if (rc)
		return rc;
	if (d < 0 && c.refs == 0) {
		dstore_logf(w->ds, DSTORE_LOG_ERROR,
			    "a reference count would go below zero: run seacachectl fsck");
		return 0;
	}
	c.refs = d < 0 ? c.refs - 1 : c.refs + 1;
	if (c.refs == 0) {
		if (z->n == z->cap) {
			size_t cap = z->cap ? 2 * z->cap : 256;
			struct sc_hash *nh = realloc(z->h, cap * sizeof(*nh));

			if (!nh)
				return -ENOMEM;
			z->h = nh;
			z->cap = cap;
		}
		z->h[z->n++] = *h;
	}
	return chunk_put(w, h, &c);
}

static int record_apply(struct wtxn *w, const uint8_t *p, size_t len,
			struct zero_list *z)
{
	const uint8_t *end = p + len;
	struct sc_hash old, nh;
	uint64_t ino, lbn;
	uint8_t flags;
	int rc = 0;

	while (!rc && p < end) {
		if (end - p < 17)
			return -EUCLEAN;
		memcpy(&ino, p, 8);
		memcpy(&lbn, p + 8, 8);
		flags = p[16];
		p += 17;
		if ((size_t)(end - p) < SC_HASH_LEN * (size_t)(!!(flags & DELTA_OLD) +
							 !!(flags & DELTA_NEW)))
			return -EUCLEAN;
		if (flags & DELTA_OLD) {
			memcpy(old.b, p, SC_HASH_LEN);
			p += SC_HASH_LEN;
			rc = refs_move(w, &old, -1, z);
			if (!rc)
				rc = csimap_set(w, &old, ino, lbn, false);
			if (rc == -ENOENT)	/* already gone */
				rc = 0;
		}
		if (!rc && (flags & DELTA_NEW)) {
			memcpy(nh.b, p, SC_HASH_LEN);
			p += SC_HASH_LEN;
			rc = refs_move(w, &nh, +1, z);
			if (!rc)
				rc = csimap_set(w, &nh, ino, lbn, true);
		}
	}
	return rc;
}

int pending_apply(struct wtxn *w)
{
	struct dstore *ds = w->ds;
	struct zero_list z = { 0 };
	MDB_cursor *cur;
	MDB_val k, v;
	int rc;

	if (w->cur.pending_deltas == 0)
		return 0;
	rc = idx_err(ds, mdb_cursor_open(w->txn, ds->db_pending, &cur), "cursor");
	if (rc)
		return rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		rc = record_apply(w, v.mv_data, v.mv_size, &z);
		if (rc == -EUCLEAN)
			dstore_logf(ds, DSTORE_LOG_ERROR,
				    "malformed pending delta record: run seacachectl fsck");
		if (rc)
			break;
	}
	mdb_cursor_close(cur);
	rc = rc == MDB_NOTFOUND ? 0 : idx_err(ds, rc, "pending deltas");
	if (!rc)
		rc = idx_err(ds, mdb_drop(w->txn, ds->db_pending, 0),
			     "pending deltas");
	for (size_t i = 0; !rc && i < z.n; i++) {
		struct chunk_rec c;
		MDB_val kc = { SC_HASH_LEN, z.h[i].b };

		if (chunk_get(ds, w->txn, &z.h[i], &c) || c.refs != 0)
			continue;	/* referenced again, or freed already */
		rc = idx_err(ds, mdb_del(w->txn, ds->db_chunk, &kc, NULL),
			     "chunk index");
		if (!rc) {
			w->c.chunks--;
			rc = slot_mark_dead(w, c.slot);
		}
	}
	free(z.h);
	if (!rc)
		w->cur.pending_deltas = 0;
	return rc;
}

int dstore_apply_pending(struct dstore *ds)
{
	struct wtxn w;
	int rc = wtxn_begin(ds, &w);

	if (rc)
		return rc;
	return wtxn_end(&w, pending_apply(&w));
}
