// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * Write intents into the index: the lower half of the data path (data.c
 * is the upper one), which the write-back buffer's flush and truncation
 * call.
 *
 * One index snapshot sorts the blocks of a batch of intents into holes
 * (all zeros), silent, known (content stored already, or by an earlier
 * block of the batch: a reference, no data I/O) and new.  The new
 * contents go to fresh consecutive slots, the containers are synced
 * once, and one index transaction applies every intent (one that cannot
 * be applied leaves no trace and fails alone).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

/*
 * What blocks p[0 .. n) (ascending lbn) map to in the index: cur[i] where
 * mapped[i]; one bmap walk per run of consecutive blocks.
 */
int plan_current(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		 const struct block_plan *p, size_t n,
		 struct sc_hash *cur, uint8_t *mapped)
{
	int rc = 0;

	for (size_t r = 0, e; !rc && r < n; r = e) {
		for (e = r + 1; e < n && p[e].lbn == p[e - 1].lbn + 1; e++)
			;
		rc = bmap_range(ds, txn, ino, p[r].lbn, e - r, cur + r,
				mapped + r);
	}
	return rc;
}

/*
 * Does block p already hold its planned content?  now: the content it
 * holds (NULL: zeros).  Asked at the write (of what is held or indexed)
 * and again at the flush (of the index, which may have changed since).
 */
bool plan_silent(const struct block_plan *p, const struct sc_hash *now)
{
	return p->kind == PLAN_HOLE ? !now : now && sc_hash_eq(now, &p->h);
}

/*
 * Sorts each planned block by what the store already has; returns how
 * many need new slots.  A block repeating the content of an earlier
 * block of the batch (first) is known: that one stores it.
 */
static int plan_classify(struct dstore *ds, MDB_txn *txn, uint64_t ino,
			 struct block_plan *p, size_t n, size_t *n_new)
{
	struct sc_hash *cur = malloc((n ? n : 1) * sizeof(*cur));
	uint8_t *mapped = malloc(n ? n : 1);
	struct chunk_rec c;
	int rc = cur && mapped ? plan_current(ds, txn, ino, p, n, cur, mapped) :
				 -ENOMEM;

	*n_new = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		p[i].slot = DSTORE_NO_SLOT;
		if (plan_silent(&p[i], mapped[i] ? &cur[i] : NULL)) {
			p[i].kind = PLAN_SILENT;
			continue;
		}
		if (p[i].kind == PLAN_HOLE)
			continue;
		if (p[i].first) {
			p[i].kind = PLAN_KNOWN;
			continue;
		}
		rc = chunk_find(ds, txn, NULL, &p[i].h, &c);
		if (rc && rc != -ENOENT)
			break;
		p[i].kind = rc == 0 ? PLAN_KNOWN : PLAN_NEW;
		rc = 0;
		if (p[i].kind == PLAN_NEW)
			(*n_new)++;
	}
	free(cur);
	free(mapped);
	return rc;
}

/* Writes the batch's new contents to n_new fresh consecutive slots. */
static int plan_store(struct dstore *ds, struct write_intent *batch,
		      size_t n_new)
{
	void **bufs;
	uint64_t slot, first;
	size_t k = 0;
	int rc;

	if (n_new == 0)
		return 0;
	bufs = malloc(n_new * sizeof(*bufs));
	if (!bufs)
		return -ENOMEM;
	first = slot = slots_reserve(ds, n_new);
	for (struct write_intent *in = batch; in; in = in->next) {
		for (size_t i = 0; i < in->n; i++) {
			struct block_plan *p = &in->plan[i];

			if (p->kind != PLAN_NEW)
				continue;
			/* only stored contents need their read check */
			p->check = chunk_checksum(p->data, ds->bsize);
			p->slot = slot++;
			bufs[k++] = (void *)p->data;
		}
	}
	rc = slots_rw(ds, SLOT_WRITE, first, n_new, bufs);
	free(bufs);
	return rc;
}

/* Is block p's content stored by an earlier block of intent in? */
static bool stored_earlier_here(const struct write_intent *in,
				const struct block_plan *p)
{
	return p->first && p->first >= in->plan && p->first < p &&
	       p->first->kind == PLAN_NEW;
}

/*
 * Applies an intent in three passes so that it either fails before
 * changing anything or succeeds: check that every content it relies on is
 * still stored; take the references of the new contents; then map the
 * blocks, dropping the old contents' references (only now can a content
 * lose its last one).  The change id and times become the held writes'.
 */
static int intent_apply(struct wtxn *w, struct write_intent *in)
{
	struct inode_rec ir;
	struct chunk_rec c;
	struct block_change *ch;
	size_t n_ch = 0;
	int rc = inode_regular(w->ds, w->txn, in->ino, &ir);

	for (size_t i = 0; !rc && i < in->n; i++)
		if (in->plan[i].kind == PLAN_KNOWN &&
		    !stored_earlier_here(in, &in->plan[i]) &&
		    chunk_find(w->ds, w->txn, w, &in->plan[i].h, &c) == -ENOENT)
			rc = -EAGAIN;
	if (rc)
		return rc;
	in->applied = true;
	ch = malloc((in->n ? in->n : 1) * sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	/* the new contents' references, each with where it is stored */
	for (size_t i = 0; !rc && i < in->n; i++) {
		struct block_plan *p = &in->plan[i];

		if (p->kind == PLAN_SILENT)
			continue;
		ch[n_ch] = (struct block_change){ .lbn = p->lbn };
		if (p->kind == PLAN_HOLE) {
			w->c.zero_writes++;
		} else {
			ch[n_ch].h = &p->h;
			rc = chunk_ref(w, &p->h, p->slot, p->check,
				       &ch[n_ch].loc);
		}
		n_ch++;
	}
	if (!rc)
		rc = blocks_map(w, &ir, in->ino, ch, n_ch);
	free(ch);
	if (rc)
		return rc;
	if (in->end > ir.size) {
		size_account(w, ir.size, in->end);
		ir.size = in->end;
	}
	ir.change = in->change > ir.change + 1 ? in->change : ir.change + 1;
	ir.time_s[T_MTIME] = in->mtime.tv_sec;
	ir.time_ns[T_MTIME] = (uint32_t)in->mtime.tv_nsec;
	/* a link or rename since the write keeps its later ctime */
	if (in->mtime.tv_sec > ir.time_s[T_CTIME] ||
	    (in->mtime.tv_sec == ir.time_s[T_CTIME] &&
	     (uint32_t)in->mtime.tv_nsec > ir.time_ns[T_CTIME])) {
		ir.time_s[T_CTIME] = in->mtime.tv_sec;
		ir.time_ns[T_CTIME] = (uint32_t)in->mtime.tv_nsec;
	}
	return inode_put(w, in->ino, &ir, NULL);
}

/* Slots of an intent that failed: never referenced, to reclaim. */
static int intent_slots_dead(struct wtxn *w, struct write_intent *in)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < in->n; i++) {
		uint8_t kb[8];
		MDB_val k = { sizeof(kb), kb }, v = { 0, NULL };

		if (in->plan[i].slot == DSTORE_NO_SLOT)
			continue;
		sc_put_be64(kb, in->plan[i].slot);
		rc = mdb_put(w->txn, w->ds->db_dead, &k, &v, MDB_NOOVERWRITE);
		if (rc == 0)
			w->c.dead_slots++;
		rc = rc == MDB_KEYEXIST ? 0 : idx_err(w->ds, rc, "dead slots");
	}
	return rc;
}

/*
 * One index transaction for the whole batch, after the containers are
 * synced.  An intent refused before it changed anything (its file is
 * gone, a content it relied on went away) fails alone; an index error
 * after changes fails the batch.
 */
static int batch_commit(struct dstore *ds, struct write_intent *batch)
{
	struct write_intent *in;
	struct wtxn w;
	int rc = containers_sync(ds);

	if (!rc)
		rc = wtxn_begin(ds, &w);
	if (rc)
		return rc;
	for (in = batch; in && !rc; in = in->next) {
		in->applied = false;
		in->rc = intent_apply(&w, in);
		if (in->rc && in->applied)
			rc = in->rc;
		else if (in->rc)
			rc = intent_slots_dead(&w, in);
	}
	/* the housekeeper applies them normally; a burst is bounded here */
	if (!rc && w.cur.pending_deltas >= PENDING_APPLY_AT)
		rc = pending_apply(&w);
	return wtxn_end(&w, rc);
}

int intents_commit(struct dstore *ds, struct write_intent *batch)
{
	struct write_intent *in;
	size_t n_new = 0, k;
	MDB_txn *txn;
	int rc;

	/* one snapshot classifies them all */
	pthread_rwlock_rdlock(&ds->reclaim_lock);
	rc = rtxn_begin(ds, &txn);
	if (!rc) {
		for (in = batch; !rc && in; in = in->next) {
			rc = plan_classify(ds, txn, in->ino, in->plan, in->n,
					   &k);
			n_new += k;
		}
		mdb_txn_abort(txn);
	}
	pthread_rwlock_unlock(&ds->reclaim_lock);
	if (!rc)
		rc = plan_store(ds, batch, n_new);
	return rc ? rc : batch_commit(ds, batch);
}

/*
 * Truncation within a block zeroes the block's tail (a file's last block
 * holds zeros past the end, so a later extension reads zeros): the block
 * is rewritten like any write.  The stripe is held exclusively.
 */
int truncate_locked(struct dstore *ds, uint64_t ino, uint64_t size,
		    struct wtxn *w, struct inode_rec *ir)
{
	struct block_plan p = { .lbn = size >> ds->bshift };
	uint64_t keep = blocks_of(ds, size);
	size_t n_new = 0;
	int rc;

	if (size >= ir->size) {
		size_account(w, ir->size, size);
		ir->size = size;
		return 0;
	}
	rc = blocks_drop_from(w, ir, ino, keep);
	if (!rc && (size & (ds->bsize - 1))) {
		uint8_t *b = malloc(ds->bsize);

		if (!b)
			return -ENOMEM;
		pthread_rwlock_rdlock(&ds->reclaim_lock);
		rc = block_current(ds, w->txn, ino, p.lbn, b);
		pthread_rwlock_unlock(&ds->reclaim_lock);
		if (!rc) {
			memset(b + (size & (ds->bsize - 1)), 0,
			       ds->bsize - (size & (ds->bsize - 1)));
			p.data = b;
			p.kind = PLAN_HOLE;
			if (!block_is_zero(b, ds->bsize)) {
				p.kind = PLAN_NEW;
				rc = sc_hasher_digest(dstore_hasher(ds), b,
						      ds->bsize, &p.h);
			}
		}
		if (!rc && p.kind == PLAN_NEW)
			rc = plan_classify(ds, w->txn, ino, &p, 1, &n_new);
		if (!rc && n_new) {
			struct write_intent in = { .plan = &p, .n = 1 };

			rc = plan_store(ds, &in, n_new);
			/* durable before the transaction referencing it */
			if (!rc)
				rc = containers_sync(ds);
		}
		if (!rc && p.kind != PLAN_SILENT)
			rc = block_set(w, ir, ino, p.lbn,
				       p.kind == PLAN_HOLE ? NULL : &p.h,
				       p.slot, p.check);
		free(b);
	}
	if (!rc) {
		size_account(w, ir->size, size);
		ir->size = size;
	}
	return rc;
}
