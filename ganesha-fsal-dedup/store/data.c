// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The data path.
 *
 * Read: look the blocks up in one index snapshot, read their slots (runs
 * of consecutive slots in one call), verify each against its hash.
 *
 * Write: build each block's new content (read-modify-write for partial
 * blocks, under the file's stripe lock held exclusively), hash it, and
 * sort the blocks into holes (all zeros), silent (the content the block
 * already has: no I/O, no index change), known (content stored already:
 * a reference, no data I/O) and new (written to fresh slots).  The index
 * change is an intent handed to the group commit: one writer at a time
 * becomes the leader, syncs the containers once for every queued intent,
 * applies them all in one index transaction (each in a nested one, so a
 * failing intent leaves no trace) and wakes their writers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

enum plan_kind { PLAN_HOLE, PLAN_SILENT, PLAN_KNOWN, PLAN_NEW };

struct block_plan {
	uint64_t lbn;
	struct sc_hash h;
	uint32_t check;
	enum plan_kind kind;
	uint64_t slot;
	const uint8_t *data;
};

struct write_intent {
	struct write_intent *next;
	uint64_t ino;
	uint64_t end;		/* the file is at least this long after */
	bool stable;
	struct block_plan *plan;
	size_t n;
	bool done;
	bool applied;		/* changed the index (so cannot fail alone) */
	int rc;
	struct dstore_attr attr;
};

pthread_rwlock_t *write_stripe(struct dstore *ds, uint64_t ino)
{
	return &ds->write_stripe[ino % DSTORE_WRITE_STRIPES];
}

int data_init(struct dstore *ds)
{
	pthread_rwlockattr_t ra;
	int rc = pthread_mutex_init(&ds->commit_lock, NULL);

	if (!rc)
		rc = pthread_cond_init(&ds->commit_cond, NULL);
	/* a steady stream of readers must not starve the reclaimer */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	if (!rc)
		rc = pthread_rwlock_init(&ds->reclaim_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	for (int i = 0; !rc && i < DSTORE_WRITE_STRIPES; i++)
		rc = pthread_rwlock_init(&ds->write_stripe[i], NULL);
	ds->queue = NULL;
	ds->queue_tail = &ds->queue;
	return -rc;
}

void data_fini(struct dstore *ds)
{
	for (int i = 0; i < DSTORE_WRITE_STRIPES; i++)
		pthread_rwlock_destroy(&ds->write_stripe[i]);
	pthread_rwlock_destroy(&ds->reclaim_lock);
	pthread_cond_destroy(&ds->commit_cond);
	pthread_mutex_destroy(&ds->commit_lock);
}

static bool block_is_zero(const uint8_t *p, size_t len)
{
	return p[0] == 0 && memcmp(p, p + 1, len - 1) == 0;
}

static int verify(struct dstore *ds, const struct chunk_rec *c,
		  const struct sc_hash *h, const void *buf)
{
	char hex[2 * SC_HASH_LEN + 1];

	if (!ds->verify_reads || chunk_checksum(buf, ds->bsize) == c->check)
		return 0;
	atomic_fetch_add(&ds->verify_failures, 1);
	sc_hash_to_hex(h, hex);
	dstore_logf(ds, DSTORE_LOG_ERROR,
		    "chunk %s in slot %llu (container %llu) fails its check: the container is corrupt; reads of it fail with EIO; run seacachectl fsck",
		    hex, (unsigned long long)c->slot,
		    (unsigned long long)(c->slot / ds->slots_per_container));
	return -EIO;
}

int block_read_verified(struct dstore *ds, const struct chunk_rec *c,
			const struct sc_hash *h, void *buf)
{
	int rc = slots_rw(ds, false, c->slot, 1, &buf);

	return rc ? rc : verify(ds, c, h, buf);
}

/* Current content of (ino, lbn) into buf; the reclaim lock held shared. */
static int block_current(struct dstore *ds, MDB_txn *txn, uint64_t ino,
			 uint64_t lbn, uint8_t *buf)
{
	struct sc_hash h;
	struct chunk_rec c;
	int rc = bmap_get(ds, txn, ino, lbn, &h);

	if (rc == -ENODATA) {
		memset(buf, 0, ds->bsize);
		return 0;
	}
	if (!rc)
		rc = chunk_find(ds, txn, NULL, &h, &c);
	if (rc == -ENOENT)
		rc = -EUCLEAN;
	return rc ? rc : block_read_verified(ds, &c, &h, buf);
}

static int inode_regular(struct dstore *ds, MDB_txn *txn, uint64_t ino,
			 struct inode_rec *ir)
{
	int rc = inode_get(ds, txn, ino, ir, NULL, 0);

	if (rc)
		return rc;
	if (ir->type == DSTORE_DIR)
		return -EISDIR;
	return ir->type == DSTORE_REG ? 0 : -EINVAL;
}

struct read_block {
	uint64_t lbn;
	struct chunk_rec c;
	struct sc_hash h;
};

/* The mapped blocks of [first, last] in lbn order; *n of them. */
static int read_plan(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		     uint64_t first, uint64_t last, struct read_block *rb,
		     size_t *n)
{
	struct bmap_iter it;
	struct chunk_rec c;
	int rc = bmap_iter_start(ds, txn, &it, ino, first);

	*n = 0;
	if (rc)
		return rc;
	while (!rc) {
		struct read_block b;

		rc = bmap_iter_next(&it, &b.lbn, &b.h);
		if (rc || b.lbn > last)
			break;
		rc = chunk_find(ds, txn, NULL, &b.h, &c);
		if (rc) {
			dstore_logf(ds, DSTORE_LOG_ERROR,
				    "inode %llu block %llu maps to a chunk that is not stored: run seacachectl fsck",
				    (unsigned long long)ino,
				    (unsigned long long)b.lbn);
			rc = -EIO;
			break;
		}
		b.c = c;
		rb[(*n)++] = b;
	}
	bmap_iter_end(&it);
	return rc == -ENODATA ? 0 : rc;
}

/*
 * Reads the planned blocks into the caller's range at off: whole blocks
 * straight into buf, runs of consecutive slots in one call; a partial
 * block through a bounce buffer.  Holes, the gaps between the planned
 * blocks, are zeroed; nothing is written twice.
 */
static int read_blocks(struct dstore *ds, const struct read_block *rb,
		       size_t n, uint64_t off, uint8_t *buf, size_t len)
{
	uint8_t *bounce = NULL;
	void *bufs[64];
	size_t done = 0;	/* buf[0, done) is filled */
	int rc = 0;

	for (size_t i = 0; i < n && !rc;) {
		uint64_t bstart = rb[i].lbn << ds->bshift;
		uint64_t from = bstart > off ? bstart : off;
		size_t run = 0;

		memset(buf + done, 0, from - off - done);
		/* a run of whole blocks in consecutive slots */
		while (i + run < n && run < 64) {
			const struct read_block *b = &rb[i + run];
			uint64_t s = b->lbn << ds->bshift;

			if (s < off || s + ds->bsize > off + len ||
			    b->c.slot != rb[i].c.slot + run ||
			    b->lbn != rb[i].lbn + run)
				break;
			bufs[run] = buf + (s - off);
			run++;
		}
		if (run > 0) {
			rc = slots_rw(ds, false, rb[i].c.slot, run, bufs);
			for (size_t j = 0; j < run && !rc; j++)
				rc = verify(ds, &rb[i + j].c, &rb[i + j].h,
					    bufs[j]);
			done = bstart + ((uint64_t)run << ds->bshift) - off;
			i += run;
			continue;
		}
		if (!bounce) {
			bounce = malloc(ds->bsize);
			if (!bounce)
				return -ENOMEM;
		}
		rc = block_read_verified(ds, &rb[i].c, &rb[i].h, bounce);
		if (!rc) {
			uint64_t to = bstart + ds->bsize < off + len ?
				      bstart + ds->bsize : off + len;

			memcpy(buf + (from - off), bounce + (from - bstart),
			       to - from);
			done = to - off;
		}
		i++;
	}
	if (!rc)
		memset(buf + done, 0, len - done);
	free(bounce);
	return rc;
}

ssize_t dstore_read(struct dstore *ds, uint64_t ino, uint64_t off, void *buf,
		    size_t len, bool *eof)
{
	struct inode_rec ir;
	struct read_block stack_rb[64], *rb = stack_rb;
	MDB_txn *txn;
	uint64_t first, last;
	size_t n = 0;
	int rc;

	pthread_rwlock_rdlock(&ds->reclaim_lock);
	rc = rtxn_begin(ds, &txn);
	if (rc)
		goto out_unlock;
	rc = inode_regular(ds, txn, ino, &ir);
	if (rc || off >= ir.size || len == 0) {
		mdb_txn_abort(txn);
		*eof = !rc && off >= ir.size;
		len = 0;
		goto out_unlock;
	}
	if (len > ir.size - off)
		len = ir.size - off;
	first = off >> ds->bshift;
	last = (off + len - 1) >> ds->bshift;
	if (last - first + 1 > 64) {
		rb = malloc((last - first + 1) * sizeof(*rb));
		if (!rb) {
			mdb_txn_abort(txn);
			rc = -ENOMEM;
			goto out_unlock;
		}
	}
	rc = read_plan(ds, txn, ino, first, last, rb, &n);
	mdb_txn_abort(txn);
	if (!rc)
		rc = read_blocks(ds, rb, n, off, buf, len);
	if (rb != stack_rb)
		free(rb);
	*eof = off + len >= ir.size;
out_unlock:
	pthread_rwlock_unlock(&ds->reclaim_lock);
	return rc ? rc : (ssize_t)len;
}

/* Does a block before i store the content of block i itself? */
static bool plan_stores_earlier(const struct block_plan *p, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (p[j].kind == PLAN_NEW && sc_hash_eq(&p[j].h, &p[i].h))
			return true;
	return false;
}

/*
 * Sorts each planned block by what the store already has; returns how
 * many need new slots.  Blocks repeating a new content of this same write
 * reference the first one's slot.
 */
static int plan_classify(struct dstore *ds, MDB_txn *txn, uint64_t ino,
			 struct block_plan *p, size_t n, size_t *n_new)
{
	struct bmap_iter it;
	struct sc_hash h, *cur = malloc(n * sizeof(*cur));
	uint8_t *mapped = calloc(n, 1);
	struct chunk_rec c;
	uint64_t lbn;
	int rc = cur && mapped ? bmap_iter_start(ds, txn, &it, ino, p[0].lbn) :
				 -ENOMEM;

	*n_new = 0;
	/* what the blocks (consecutive from p[0].lbn) hold now: one pass */
	if (!rc) {
		while ((rc = bmap_iter_next(&it, &lbn, &h)) == 0 &&
		       lbn < p[0].lbn + n) {
			cur[lbn - p[0].lbn] = h;
			mapped[lbn - p[0].lbn] = 1;
		}
		bmap_iter_end(&it);
		rc = rc == -ENODATA ? 0 : rc;
	}
	for (size_t i = 0; !rc && i < n; i++) {
		p[i].slot = DSTORE_NO_SLOT;
		if (p[i].kind == PLAN_HOLE) {
			if (!mapped[i])
				p[i].kind = PLAN_SILENT;
			continue;
		}
		if (mapped[i] && sc_hash_eq(&cur[i], &p[i].h)) {
			p[i].kind = PLAN_SILENT;
			continue;
		}
		rc = chunk_find(ds, txn, NULL, &p[i].h, &c);
		if (rc && rc != -ENOENT)
			break;
		p[i].kind = rc == 0 || plan_stores_earlier(p, i) ? PLAN_KNOWN :
								   PLAN_NEW;
		rc = 0;
		if (p[i].kind == PLAN_NEW)
			(*n_new)++;
	}
	free(cur);
	free(mapped);
	return rc;
}

/* Writes the new contents to fresh consecutive slots. */
static int plan_store(struct dstore *ds, struct block_plan *p, size_t n,
		      size_t n_new)
{
	void *bufs[64];
	uint64_t slot, first;
	size_t k = 0;
	int rc = 0;

	if (n_new == 0)
		return 0;
	first = slot = slots_reserve(ds, n_new);
	for (size_t i = 0; i < n && !rc; i++) {
		if (p[i].kind != PLAN_NEW)
			continue;
		/* only stored contents need their read check */
		p[i].check = chunk_checksum(p[i].data, ds->bsize);
		p[i].slot = slot++;
		bufs[k++] = (void *)p[i].data;
		if (k == 64) {
			rc = slots_rw(ds, true, first, k, bufs);
			first += k;
			k = 0;
		}
	}
	if (!rc && k)
		rc = slots_rw(ds, true, first, k, bufs);
	return rc;
}

/*
 * Applies an intent in three passes so that it either fails before
 * changing anything or succeeds: check that every content it relies on is
 * still stored; take the references of the new contents; then map the
 * blocks, dropping the old contents' references (only now can a content
 * lose its last one).
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
		    chunk_find(w->ds, w->txn, w, &in->plan[i].h, &c) == -ENOENT &&
		    !plan_stores_earlier(in->plan, i))
			rc = -EAGAIN;
	if (rc)
		return rc;
	in->applied = true;
	for (size_t i = 0; !rc && i < in->n; i++) {
		struct block_plan *p = &in->plan[i];

		if (p->kind == PLAN_KNOWN || p->kind == PLAN_NEW)
			rc = chunk_ref(w, &p->h, p->slot, p->check);
	}
	if (rc)
		return rc;
	ch = malloc(in->n * sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	for (size_t i = 0; i < in->n; i++) {
		struct block_plan *p = &in->plan[i];

		if (p->kind == PLAN_SILENT)
			continue;
		if (p->kind == PLAN_HOLE)
			w->c.zero_writes++;
		ch[n_ch].lbn = p->lbn;
		ch[n_ch++].h = p->kind == PLAN_HOLE ? NULL : &p->h;
	}
	rc = blocks_map(w, &ir, in->ino, ch, n_ch);
	free(ch);
	if (rc)
		return rc;
	if (in->end > ir.size) {
		size_account(w, ir.size, in->end);
		ir.size = in->end;
	}
	inode_touch(&ir, 1u << T_MTIME | 1u << T_CTIME);
	rc = inode_put(w, in->ino, &ir, NULL);
	inode_to_attr(in->ino, &ir, &in->attr);
	return rc;
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
 * One index transaction for the whole batch.  An intent refused before it
 * changed anything (its file is gone, a content it relied on went away)
 * fails alone; an index error after changes fails the batch.
 */
static int batch_commit(struct dstore *ds, struct write_intent *batch)
{
	struct write_intent *in;
	struct wtxn w;
	bool stable = false;
	int rc = containers_sync(ds);

	if (!rc)
		rc = wtxn_begin(ds, &w);
	if (rc)
		return rc;
	for (in = batch; in && !rc; in = in->next) {
		stable |= in->stable;
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
	rc = wtxn_end(&w, rc);
	if (!rc && stable)
		rc = idx_err(ds, mdb_env_sync(ds->env, 1), "index sync");
	return rc;
}

/* Queues the intent and returns once a leader (maybe this writer) has
 * committed it. */
static int intent_submit(struct dstore *ds, struct write_intent *in)
{
	struct write_intent *batch;
	int rc;

	in->next = NULL;
	in->done = false;
	pthread_mutex_lock(&ds->commit_lock);
	*ds->queue_tail = in;
	ds->queue_tail = &in->next;
	while (!in->done) {
		if (ds->committing) {
			pthread_cond_wait(&ds->commit_cond, &ds->commit_lock);
			continue;
		}
		ds->committing = true;
		batch = ds->queue;
		ds->queue = NULL;
		ds->queue_tail = &ds->queue;
		pthread_mutex_unlock(&ds->commit_lock);

		rc = batch_commit(ds, batch);

		pthread_mutex_lock(&ds->commit_lock);
		for (; batch; batch = batch->next) {
			if (rc)
				batch->rc = rc;
			batch->done = true;
		}
		ds->committing = false;
		pthread_cond_broadcast(&ds->commit_cond);
	}
	pthread_mutex_unlock(&ds->commit_lock);
	return in->rc;
}

/*
 * Builds and hashes the new content of every block of the write; a whole
 * block whose hash the caller already knows (known, or NULL) is not
 * hashed again.
 */
static int plan_build(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		      uint64_t off, const uint8_t *buf, size_t len,
		      const struct sc_hash *known, struct block_plan *p,
		      size_t n, uint8_t *scratch)
{
	uint64_t first = off >> ds->bshift;
	struct sc_hasher *hs = dstore_hasher(ds);
	int rc;

	if (!hs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t bstart = (first + i) << ds->bshift;

		bool whole = bstart >= off && bstart + ds->bsize <= off + len;

		p[i].lbn = first + i;
		if (whole) {
			p[i].data = buf + (bstart - off);
		} else {
			/* partial: this file's stripe is held exclusively */
			uint8_t *b = scratch + (i == 0 ? 0 : ds->bsize);
			uint64_t from = bstart > off ? bstart : off;
			uint64_t to = bstart + ds->bsize < off + len ?
				      bstart + ds->bsize : off + len;

			rc = block_current(ds, txn, ino, first + i, b);
			if (rc)
				return rc;
			memcpy(b + (from - bstart), buf + (from - off), to - from);
			p[i].data = b;
		}
		if (block_is_zero(p[i].data, ds->bsize)) {
			p[i].kind = PLAN_HOLE;
			continue;
		}
		p[i].kind = PLAN_NEW;
		if (whole && known) {
			p[i].h = known[i];
			continue;
		}
		rc = sc_hasher_digest(hs, p[i].data, ds->bsize, &p[i].h);
		if (rc)
			return rc;
	}
	return 0;
}

static ssize_t write_locked(struct dstore *ds, uint64_t ino, uint64_t off,
			    const uint8_t *buf, size_t len,
			    const struct sc_hash *known, bool stable,
			    struct block_plan *p, size_t n, uint8_t *scratch,
			    struct dstore_attr *out)
{
	struct write_intent in = { .ino = ino, .end = off + len,
				   .stable = stable, .plan = p, .n = n };
	struct inode_rec ir;
	MDB_txn *txn;
	size_t n_new, n_silent = 0;
	int rc;

	pthread_rwlock_rdlock(&ds->reclaim_lock);
	rc = rtxn_begin(ds, &txn);
	if (!rc) {
		rc = inode_regular(ds, txn, ino, &ir);
		if (!rc)
			rc = plan_build(ds, txn, ino, off, buf, len, known, p,
					n, scratch);
		if (!rc)
			rc = plan_classify(ds, txn, ino, p, n, &n_new);
		mdb_txn_abort(txn);
	}
	pthread_rwlock_unlock(&ds->reclaim_lock);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		n_silent += p[i].kind == PLAN_SILENT;
	if (n_silent == n && off + len <= ir.size) {
		/* nothing changes: no data I/O, no index transaction */
		atomic_fetch_add(&ds->silent_pending, n);
		if (out)
			inode_to_attr(ino, &ir, out);
		return stable ? dstore_sync(ds) : 0;
	}
	atomic_fetch_add(&ds->silent_pending, n_silent);
	rc = plan_store(ds, p, n, n_new);
	if (!rc)
		rc = intent_submit(ds, &in);
	if (!rc && out)
		*out = in.attr;
	return rc;
}

ssize_t dstore_write(struct dstore *ds, uint64_t ino, uint64_t off,
		     const void *buf, size_t len, bool stable,
		     struct dstore_attr *out)
{
	pthread_rwlock_t *stripe = write_stripe(ds, ino);
	struct block_plan stack_plan[64], *p = stack_plan;
	uint8_t *scratch = NULL;
	uint64_t first, last;
	bool partial;
	size_t n;
	ssize_t rc;

	if (ds->read_only)
		return -EROFS;
	if (len == 0)
		return out ? dstore_getattr(ds, ino, out) : 0;
	if (off + len < off || off + len > (uint64_t)INT64_MAX)
		return -EFBIG;
	first = off >> ds->bshift;
	last = (off + len - 1) >> ds->bshift;
	n = last - first + 1;
	partial = ((off | (off + len)) & (ds->bsize - 1)) != 0;
	if (n > 64)
		p = malloc(n * sizeof(*p));
	if (partial)
		scratch = malloc(2 * (size_t)ds->bsize);
	if (!p || (partial && !scratch)) {
		rc = -ENOMEM;
		goto out;
	}
	if (partial)
		pthread_rwlock_wrlock(stripe);
	else
		pthread_rwlock_rdlock(stripe);
	do {
		rc = write_locked(ds, ino, off, buf, len, NULL, stable, p,
				  n, scratch, out);
		/* a known content lost its last reference meanwhile: again */
	} while (rc == -EAGAIN);
	pthread_rwlock_unlock(stripe);
out:
	if (p != stack_plan)
		free(p);
	free(scratch);
	return rc ? rc : (ssize_t)len;
}

int dstore_write_blocks(struct dstore *ds, uint64_t ino,
			const struct dstore_wblocks *w, struct dstore_attr *pre,
			struct dstore_attr *post)
{
	pthread_rwlock_t *stripe = write_stripe(ds, ino);
	struct block_plan *p = malloc((w->n ? w->n : 1) * sizeof(*p));
	uint8_t *scratch = malloc(2 * (size_t)ds->bsize);
	uint64_t eof, off, len;
	uint32_t i, j;
	ssize_t rc;

	if (ds->read_only)
		rc = -EROFS;
	else if (!p || !scratch)
		rc = -ENOMEM;
	else if (w->lbn > ((uint64_t)INT64_MAX >> ds->bshift) - w->n ||
		 w->end > (uint64_t)INT64_MAX)
		rc = -EFBIG;
	else
		rc = 0;
	if (rc)
		goto out;
	/* exclusive: every data write and truncation of the file waits */
	pthread_rwlock_wrlock(stripe);
	rc = dstore_getattr(ds, ino, pre);
	if (!rc && pre->type != DSTORE_REG)
		rc = pre->type == DSTORE_DIR ? -EISDIR : -EINVAL;
	eof = pre->size > w->end ? pre->size : w->end;
	for (i = 0; !rc && i < w->n; i = j) {
		for (j = i; j < w->n && !(w->skip && w->skip[j]); j++)
			;
		if (j == i) {
			j++;
			continue;
		}
		off = (w->lbn + i) << ds->bshift;
		if (off >= eof)
			break;
		len = (uint64_t)(j - i) << ds->bshift;
		if (len > eof - off)
			len = eof - off;
		do {
			rc = write_locked(ds, ino, off,
					  w->buf + ((size_t)i << ds->bshift),
					  (size_t)len,
					  w->hash ? w->hash + i : NULL, false,
					  p, j - i, scratch, post);
		} while (rc == -EAGAIN);
	}
	if (!rc)
		rc = dstore_getattr(ds, ino, post);
	if (!rc && post->size < w->end) {
		/* the blocks that would have extended it were skipped */
		struct dstore_attr a = { .size = w->end };

		rc = setattr_locked(ds, ino, &a, DSTORE_SET_SIZE, post);
	}
	/* one sync for all the runs and the size */
	if (!rc && w->stable)
		rc = dstore_sync(ds);
	pthread_rwlock_unlock(stripe);
out:
	free(p);
	free(scratch);
	return (int)rc;
}

int dstore_read_content(struct dstore *ds, const struct sc_hash *h,
			void *buf)
{
	struct chunk_rec c;
	MDB_txn *txn;
	int rc;

	/* the slot cannot be reclaimed while it is read */
	pthread_rwlock_rdlock(&ds->reclaim_lock);
	rc = rtxn_begin(ds, &txn);
	if (!rc) {
		rc = chunk_find(ds, txn, NULL, h, &c);
		if (!rc)
			rc = block_read_verified(ds, &c, h, buf);
		mdb_txn_abort(txn);
	}
	pthread_rwlock_unlock(&ds->reclaim_lock);
	return rc;
}

int dstore_sync(struct dstore *ds)
{
	int rc;

	if (ds->read_only)
		return 0;
	rc = containers_sync(ds);
	return rc ? rc : idx_err(ds, mdb_env_sync(ds->env, 1), "index sync");
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
			rc = plan_store(ds, &p, 1, n_new);
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
