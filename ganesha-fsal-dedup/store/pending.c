// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * Deferred index updates, applied.
 *
 * Reference counts and CSI-Map entries are keyed by content hash: updating
 * them with every write would dirty a random index page per block, more
 * index I/O than the block's data.  So a transaction that remaps blocks
 * records what changed, (ino, lbn, old content, new content), as one
 * pending record appended in the same transaction (delta.c, which also
 * gives the record's format), and the deltas are applied in bulk here,
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
 * New contents are deferred the same way: a chunk a transaction stores
 * goes into the chunk index when its delta is applied; until then it is a
 * "fresh" chunk, found in memory (fresh.c) by every lookup.  Opening a
 * store applies what a crash left pending.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

/*
 * One operation of a delta, for sorting: everything about one content
 * then lies together, in log order, so each content's chunk record is read
 * and written once and the CSI-Map is walked in key order.
 */
enum op_kind { OP_CHUNK, OP_DROP, OP_ADD };

struct delta_op {
	struct sc_hash h;
	uint64_t seq;		/* log order */
	uint64_t ino, lbn;	/* OP_DROP, OP_ADD */
	struct chunk_rec c;	/* OP_CHUNK */
	uint8_t kind;
};

struct op_list {
	struct delta_op *op;
	size_t n, cap;
};

static struct delta_op *op_new(struct op_list *l)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 4096;
		struct delta_op *o = realloc(l->op, cap * sizeof(*o));

		if (!o)
			return NULL;
		l->op = o;
		l->cap = cap;
	}
	return &l->op[l->n++];
}

static int op_cmp(const void *a, const void *b)
{
	const struct delta_op *x = a, *y = b;
	int c = memcmp(x->h.b, y->h.b, SC_HASH_LEN);

	if (c)
		return c;
	/* a content's chunk entry before its mappings, then log order */
	if ((x->kind == OP_CHUNK) != (y->kind == OP_CHUNK))
		return x->kind == OP_CHUNK ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The entries of one pending record, appended to l. */
static int record_parse(const uint8_t *p, size_t len, struct op_list *l)
{
	const uint8_t *end = p + len;
	struct delta_op *o;
	uint64_t ino, lbn;
	uint8_t flags;

	while (p < end) {
		flags = *p++;
		if (flags == DELTA_CHUNK) {
			if ((size_t)(end - p) < SC_HASH_LEN + 12)
				return -EUCLEAN;
			o = op_new(l);
			if (!o)
				return -ENOMEM;
			o->kind = OP_CHUNK;
			o->seq = l->n;
			memcpy(o->h.b, p, SC_HASH_LEN);
			memcpy(&o->c.slot, p + SC_HASH_LEN, 8);
			memcpy(&o->c.check, p + SC_HASH_LEN + 8, 4);
			o->c.refs = 0;
			p += SC_HASH_LEN + 12;
			continue;
		}
		if (end - p < 16 || (flags & ~(DELTA_OLD | DELTA_NEW)) ||
		    (size_t)(end - p - 16) < SC_HASH_LEN *
			    (size_t)(!!(flags & DELTA_OLD) + !!(flags & DELTA_NEW)))
			return -EUCLEAN;
		memcpy(&ino, p, 8);
		memcpy(&lbn, p + 8, 8);
		p += 16;
		for (unsigned int bit = DELTA_OLD; bit <= DELTA_NEW; bit <<= 1) {
			if (!(flags & bit))
				continue;
			o = op_new(l);
			if (!o)
				return -ENOMEM;
			o->kind = bit == DELTA_OLD ? OP_DROP : OP_ADD;
			o->seq = l->n;
			o->ino = ino;
			o->lbn = lbn;
			memcpy(o->h.b, p, SC_HASH_LEN);
			p += SC_HASH_LEN;
		}
	}
	return 0;
}

/* A fresh chunk is in the index from now on: retired from memory at commit. */
static int applied_note(struct wtxn *w, const struct sc_hash *h)
{
	if (w->n_applied == w->cap_applied) {
		size_t cap = w->cap_applied ? 2 * w->cap_applied : 256;
		struct sc_hash *a = realloc(w->applied, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		w->applied = a;
		w->cap_applied = cap;
	}
	w->applied[w->n_applied++] = *h;
	return 0;
}

/* Applies the operations op[0..n) of one content. */
static int content_apply(struct wtxn *w, const struct delta_op *op, size_t n)
{
	const struct sc_hash *h = &op[0].h;
	char hex[2 * SC_HASH_LEN + 1];
	struct chunk_rec c;
	MDB_val k = { SC_HASH_LEN, (void *)h->b };
	int64_t refs;
	size_t i = 0;
	int rc = chunk_get(w->ds, w->txn, h, &c);

	if (op[0].kind == OP_CHUNK) {
		if (rc == -ENOENT) {
			c = op[0].c;
			rc = 0;
		}
		i = 1;
		if (!rc)
			rc = applied_note(w, h);
	}
	if (rc == -ENOENT) {
		sc_hash_to_hex(h, hex);
		dstore_logf(w->ds, DSTORE_LOG_ERROR,
			    "block map changes name chunk %s, which is not stored: run seacachectl fsck",
			    hex);
		return 0;	/* fsck repairs counts; go on with the rest */
	}
	if (rc)
		return rc;
	refs = (int64_t)c.refs;
	for (; !rc && i < n; i++) {
		bool add = op[i].kind == OP_ADD;

		refs += add ? 1 : -1;
		rc = csimap_set(w, h, op[i].ino, op[i].lbn, add);
		if (rc == -ENOENT)	/* dropped already */
			rc = 0;
	}
	if (rc)
		return rc;
	if (refs < 0) {
		sc_hash_to_hex(h, hex);
		dstore_logf(w->ds, DSTORE_LOG_ERROR,
			    "chunk %s: reference count below zero: run seacachectl fsck",
			    hex);
		refs = 0;
	}
	if (refs > 0) {
		c.refs = (uint64_t)refs;
		return chunk_put(w, h, &c);
	}
	/* no block maps this content any more */
	rc = idx_err(w->ds, mdb_del(w->txn, w->ds->db_chunk, &k, NULL),
		     "chunk index");
	if (rc == -ENOENT)
		rc = 0;	/* a fresh chunk overwritten before it was indexed */
	if (rc)
		return rc;
	w->c.chunks--;
	return slot_mark_dead(w, c.slot);
}

int pending_apply(struct wtxn *w)
{
	struct dstore *ds = w->ds;
	struct op_list l = { 0 };
	MDB_cursor *cur;
	MDB_val k, v;
	/*
	 * This transaction's own deltas are pending too: applied with the
	 * rest, not left in a record the count no longer shows (a batch that
	 * applies them would otherwise lose its new chunks at the next start)
	 */
	int rc = delta_flush(w);

	if (rc || w->cur.pending_deltas == 0)
		return rc;
	rc = idx_err(ds, mdb_cursor_open(w->txn, ds->db_pending, &cur), "cursor");
	if (rc)
		return rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		rc = record_parse(v.mv_data, v.mv_size, &l);
		if (rc == -EUCLEAN)
			dstore_logf(ds, DSTORE_LOG_ERROR,
				    "malformed pending delta record: run seacachectl fsck");
		if (rc)
			break;
	}
	mdb_cursor_close(cur);
	rc = rc == MDB_NOTFOUND ? 0 : idx_err(ds, rc, "pending deltas");
	if (!rc)
		qsort(l.op, l.n, sizeof(*l.op), op_cmp);
	for (size_t i = 0, j; !rc && i < l.n; i = j) {
		for (j = i + 1; j < l.n && sc_hash_eq(&l.op[j].h, &l.op[i].h); j++)
			;
		rc = content_apply(w, &l.op[i], j - i);
	}
	free(l.op);
	if (!rc)
		rc = idx_err(ds, mdb_drop(w->txn, ds->db_pending, 0),
			     "pending deltas");
	if (!rc)
		w->cur.pending_deltas = 0;
	return rc;
}

int pending_apply_all(struct dstore *ds)
{
	struct wtxn w;
	int rc = wtxn_begin(ds, &w);

	if (rc)
		return rc;
	return wtxn_end(&w, pending_apply(&w));
}
