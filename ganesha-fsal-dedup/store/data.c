// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The data path.
 *
 * Read: look the blocks up in the block map of one index snapshot (which
 * gives each block's slot and check: no chunk index lookup), read their
 * slots (runs of consecutive slots in one call), verify each against its
 * check.
 *
 * Write: build each block's new content (read-modify-write for partial
 * blocks, under the file's stripe lock held exclusively), hash it, leave
 * out the silent blocks (those that hold that content already, held or
 * indexed) and hand the rest to the write-back buffer (writeback.c),
 * which holds them in memory; a stable write then syncs.
 *
 * Flush: the write-back buffer hands every file it holds as one intent
 * to intent.c, the lower half of the data path.
 *
 * Sync: the group commit of dstore_sync.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

int data_init(struct dstore *ds)
{
	pthread_rwlockattr_t ra;
	int rc;

	/* a steady stream of readers must not starve the reclaimer */
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra,
				      PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	rc = pthread_rwlock_init(&ds->reclaim_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	for (int i = 0; !rc && i < DSTORE_WRITE_STRIPES; i++)
		rc = pthread_rwlock_init(&ds->write_stripe[i], NULL);
	if (!rc)
		rc = pthread_mutex_init(&ds->sync_lock, NULL);
	if (!rc)
		rc = pthread_cond_init(&ds->sync_cond, NULL);
	/* the first sync syncs the index, whatever opening it wrote */
	atomic_init(&ds->idx_commits, 1);
	return -rc;
}

void data_fini(struct dstore *ds)
{
	pthread_cond_destroy(&ds->sync_cond);
	pthread_mutex_destroy(&ds->sync_lock);
	for (int i = 0; i < DSTORE_WRITE_STRIPES; i++)
		pthread_rwlock_destroy(&ds->write_stripe[i]);
	pthread_rwlock_destroy(&ds->reclaim_lock);
}

struct read_block {
	uint64_t lbn;
	struct block_loc loc;
	struct sc_hash h;
};

/*
 * The mapped blocks of [first, last] in lbn order, each with where it is
 * stored, but those held (held indexed from first, or NULL); *n of them.
 */
static int read_plan(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		     uint64_t first, uint64_t last, const uint8_t *held,
		     struct read_block *rb, size_t *n)
{
	struct bmap_iter it;
	int rc = bmap_iter_start(ds, txn, &it, ino, first);

	*n = 0;
	if (rc)
		return rc;
	while (!rc) {
		struct read_block b;

		rc = bmap_iter_next(&it, &b.lbn, &b.h, &b.loc);
		if (rc || b.lbn > last)
			break;
		if (held && held[b.lbn - first])
			continue;
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
static int read_blocks(struct dstore *ds, enum slot_io io,
		       const struct read_block *rb, size_t n, uint64_t off,
		       uint8_t *buf, size_t len)
{
	uint8_t *bounce = NULL;
	void *stack_bufs[64], **bufs = stack_bufs;
	size_t done = 0;	/* buf[0, done) is filled */
	int rc = 0;

	if (n > 64 && !(bufs = malloc(n * sizeof(*bufs))))
		return -ENOMEM;

	for (size_t i = 0; i < n && !rc;) {
		uint64_t bstart = rb[i].lbn << ds->bshift;
		uint64_t from = bstart > off ? bstart : off;
		size_t run = 0;

		memset(buf + done, 0, from - off - done);
		/* a run of whole blocks in consecutive slots */
		while (i + run < n) {
			const struct read_block *b = &rb[i + run];
			uint64_t s = b->lbn << ds->bshift;

			if (s < off || s + ds->bsize > off + len ||
			    b->loc.slot != rb[i].loc.slot + run ||
			    b->lbn != rb[i].lbn + run)
				break;
			bufs[run] = buf + (s - off);
			run++;
		}
		if (run > 0) {
			rc = slots_rw(ds, io, rb[i].loc.slot, run, bufs);
			for (size_t j = 0; j < run && !rc; j++)
				rc = block_verify(ds, &rb[i + j].loc,
						  &rb[i + j].h, bufs[j]);
			done = bstart + ((uint64_t)run << ds->bshift) - off;
			i += run;
			continue;
		}
		if (!bounce) {
			bounce = malloc(ds->bsize);
			if (!bounce) {
				rc = -ENOMEM;
				break;
			}
		}
		/* a partial block is cached or not: not worth finding out */
		rc = io == SLOT_READ_CACHED ? -EAGAIN :
		     block_read_verified(ds, &rb[i].loc, &rb[i].h, bounce);
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
	if (bufs != stack_bufs)
		free(bufs);
	return rc;
}

/* The held blocks' bytes over what read_blocks put at buf. */
static void read_held(struct dstore *ds, struct wb_buf *const *bufs,
		      const uint8_t *held, uint64_t first, uint64_t off,
		      uint8_t *buf, size_t len)
{
	uint64_t last = (off + len - 1) >> ds->bshift;

	for (uint64_t lbn = first; lbn <= last; lbn++) {
		uint64_t bstart = lbn << ds->bshift;
		uint64_t from = bstart > off ? bstart : off;
		uint64_t to = bstart + ds->bsize < off + len ?
			      bstart + ds->bsize : off + len;

		/* held zeros are a hole to read_blocks: zeroed already */
		if (held[lbn - first] && bufs[lbn - first])
			memcpy(buf + (from - off),
			       bufs[lbn - first]->data + (from - bstart),
			       to - from);
	}
}

static ssize_t store_read(struct dstore *ds, enum slot_io io, uint64_t ino,
			  uint64_t off, void *buf, size_t len, bool *eof)
{
	struct inode_rec ir;
	struct read_block stack_rb[64], *rb = stack_rb;
	struct wb_range hr;
	MDB_txn *txn;
	uint64_t first = off >> ds->bshift, last, size;
	size_t n = 0;
	int rc;

	*eof = false;
	if (off > (uint64_t)INT64_MAX)
		len = 0;
	else if (len > (uint64_t)INT64_MAX - off)
		len = (uint64_t)INT64_MAX - off;
	last = len ? (off + len - 1) >> ds->bshift : first;
	rc = wb_range_get(ds, ino, first, len ? last - first + 1 : 0, &hr);
	if (rc)
		return rc;
	pthread_rwlock_rdlock(&ds->reclaim_lock);
	rc = rtxn_begin(ds, &txn);
	if (rc)
		goto out_unlock;
	rc = inode_regular(ds, txn, ino, &ir);
	size = hr.a.held && hr.a.end > ir.size ? hr.a.end : ir.size;
	if (rc || off >= size || len == 0) {
		mdb_txn_abort(txn);
		*eof = !rc && off >= size;
		len = 0;
		goto out_unlock;
	}
	if (len > size - off)
		len = size - off;
	last = (off + len - 1) >> ds->bshift;
	if (last - first + 1 > 64) {
		rb = malloc((last - first + 1) * sizeof(*rb));
		if (!rb) {
			mdb_txn_abort(txn);
			rc = -ENOMEM;
			goto out_unlock;
		}
	}
	rc = read_plan(ds, txn, ino, first, last, hr.a.held ? hr.held : NULL,
		       rb, &n);
	mdb_txn_abort(txn);
	if (!rc)
		rc = read_blocks(ds, io, rb, n, off, buf, len);
	if (!rc && hr.a.held)
		read_held(ds, hr.bufs, hr.held, first, off, buf, len);
	if (rb != stack_rb)
		free(rb);
	*eof = off + len >= size;
out_unlock:
	pthread_rwlock_unlock(&ds->reclaim_lock);
	wb_range_put(&hr);
	return rc ? rc : (ssize_t)len;
}

ssize_t dstore_read(struct dstore *ds, uint64_t ino, uint64_t off, void *buf,
		    size_t len, bool *eof)
{
	return store_read(ds, SLOT_READ, ino, off, buf, len, eof);
}

ssize_t dstore_read_cached(struct dstore *ds, uint64_t ino, uint64_t off,
			   void *buf, size_t len, bool *eof)
{
	return store_read(ds, SLOT_READ_CACHED, ino, off, buf, len, eof);
}

/*
 * Builds and hashes the new content of every block p[i].lbn of the write;
 * a partial first or last block starts from its current content, which
 * the caller put in scratch (first) and scratch + bsize (last).  A whole
 * block whose hash the caller already knows (known, or NULL) is not
 * hashed again.
 */
static int plan_build(struct dstore *ds, uint64_t off, const uint8_t *buf,
		      size_t len, const struct sc_hash *known,
		      struct block_plan *p, size_t n, uint8_t *scratch)
{
	struct sc_hasher *hs = dstore_hasher(ds);
	int rc;

	if (!hs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint64_t bstart = p[i].lbn << ds->bshift;
		bool whole = bstart >= off && bstart + ds->bsize <= off + len;

		p[i].first = NULL;
		if (whole) {
			p[i].data = buf + (bstart - off);
		} else {
			uint8_t *b = scratch + (i == 0 ? 0 : ds->bsize);
			uint64_t from = bstart > off ? bstart : off;
			uint64_t to = bstart + ds->bsize < off + len ?
				      bstart + ds->bsize : off + len;

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

/*
 * The current content of a partial block for its read-modify-write:
 * held, or indexed.
 */
static int partial_current(struct dstore *ds, MDB_txn *txn, uint64_t ino,
			   const struct wb_range *hr, size_t i, uint64_t lbn,
			   uint8_t *b)
{
	if (!hr->a.held || !hr->held[i])
		return block_current(ds, txn, ino, lbn, b);
	if (hr->bufs[i])
		memcpy(b, hr->bufs[i]->data, ds->bsize);
	else
		memset(b, 0, ds->bsize);
	return 0;
}

/*
 * A write, held by the write-back buffer: blocks that would hold what
 * they hold already (held, or indexed) are silent and left out.  The
 * file's stripe is held (exclusively for partial blocks).
 */
static ssize_t write_held(struct dstore *ds, uint64_t ino, uint64_t off,
			  const uint8_t *buf, size_t len,
			  const struct sc_hash *known, struct block_plan *p,
			  size_t n, uint8_t *scratch, struct dstore_attr *out)
{
	uint64_t first = off >> ds->bshift;
	struct sc_hash *cur = malloc(n * sizeof(*cur));
	uint8_t *mapped = malloc(n);
	struct wb_range hr = { .bufs = NULL };
	struct dstore_attr a, seen;
	struct inode_rec ir;
	size_t n_silent = 0;
	MDB_txn *txn;
	int rc = cur && mapped ? wb_range_get(ds, ino, first, n, &hr) : -ENOMEM;

	for (size_t i = 0; i < n; i++)
		p[i].lbn = first + i;
	if (rc)
		goto out;
	pthread_rwlock_rdlock(&ds->reclaim_lock);
	rc = rtxn_begin(ds, &txn);
	if (!rc) {
		rc = inode_regular(ds, txn, ino, &ir);
		if (!rc)
			rc = plan_current(ds, txn, ino, p, n, cur, mapped);
		if (!rc && (off & (ds->bsize - 1)))
			rc = partial_current(ds, txn, ino, &hr, 0, first,
					     scratch);
		if (!rc && ((off + len) & (ds->bsize - 1)) &&
		    (n > 1 || !(off & (ds->bsize - 1))))
			rc = partial_current(ds, txn, ino, &hr, n - 1,
					     first + n - 1,
					     scratch + (n > 1 ? ds->bsize : 0));
		mdb_txn_abort(txn);
	}
	pthread_rwlock_unlock(&ds->reclaim_lock);
	if (!rc)
		rc = plan_build(ds, off, buf, len, known, p, n, scratch);
	if (rc)
		goto out;
	for (size_t i = 0; i < n; i++) {
		bool held = hr.a.held && hr.held[i];
		const struct sc_hash *now =
			held ? hr.bufs[i] ? &hr.bufs[i]->h : NULL :
			mapped[i] ? &cur[i] : NULL;

		if (plan_silent(&p[i], now)) {
			p[i].kind = PLAN_SILENT;
			n_silent++;
		}
		/* what the index has once the held write is flushed */
		if (held)
			mapped[i] = now != NULL;
	}
	atomic_fetch_add(&ds->silent_pending, n_silent);
	inode_to_attr(ino, &ir, &a);
	seen = a;
	wb_attr_apply(&hr.a, &seen);
	/*
	 * nothing changes: nothing held.  The change id goes on from the one
	 * the write saw, held writes included: a flush may index and let go
	 * of them before wb_hold, and the index's id read above predates
	 * that flush, so going on from it would hand the flushed id out again.
	 */
	if (n_silent < n || off + len > seen.size)
		rc = wb_hold(ds, ino, p, mapped, n, off + len, seen.change,
			     &a);
	else
		a = seen;
	if (!rc && out)
		*out = a;
out:
	wb_range_put(&hr);
	free(cur);
	free(mapped);
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
	rc = write_held(ds, ino, off, buf, len, NULL, p, n, scratch, out);
	pthread_rwlock_unlock(stripe);
	/* FILE_SYNC, DATA_SYNC: durable before the reply */
	if (!rc && stable)
		rc = dstore_sync(ds);
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
		rc = write_held(ds, ino, off, w->buf + ((size_t)i << ds->bshift),
				(size_t)len, w->hash ? w->hash + i : NULL, p,
				j - i, scratch, post);
	}
	if (!rc)
		rc = dstore_getattr(ds, ino, post);
	if (!rc && post->size < w->end) {
		/* the blocks that would have extended it were skipped */
		struct dstore_attr a = { .size = w->end };

		rc = setattr_locked(ds, ino, &a, DSTORE_SET_SIZE, post);
	}
	pthread_rwlock_unlock(stripe);
	/* one sync for all the runs and the size */
	if (!rc && w->stable)
		rc = dstore_sync(ds);
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
	int rc = wb_read_content(ds, h, buf);

	if (rc != -ENOENT)
		return rc;
	/* the slot cannot be reclaimed while it is read */
	pthread_rwlock_rdlock(&ds->reclaim_lock);
	rc = rtxn_begin(ds, &txn);
	if (!rc) {
		rc = chunk_find(ds, txn, NULL, h, &c);
		if (!rc)
			rc = block_read_verified(ds,
					&(struct block_loc){ c.slot, c.check },
					h, buf);
		mdb_txn_abort(txn);
	}
	pthread_rwlock_unlock(&ds->reclaim_lock);
	return rc;
}

/*
 * One sync: the containers still marked dirty, then the index's meta
 * page (MDB_NOMETASYNC), unless no transaction committed since the last
 * sync.  sync_lock is let go meanwhile.
 */
static int sync_locked(struct dstore *ds)
{
	uint64_t upto = ds->sync_asked;
	uint64_t commits = atomic_load(&ds->idx_commits);
	int rc;

	ds->syncing = true;
	pthread_mutex_unlock(&ds->sync_lock);
	rc = containers_sync(ds);
	if (!rc && commits != ds->idx_synced)
		rc = idx_err(ds, mdb_env_sync(ds->env, 1), "index sync");
	pthread_mutex_lock(&ds->sync_lock);
	ds->syncing = false;
	if (!rc) {
		ds->sync_done = upto;
		ds->syncs++;
		ds->index_syncs += commits != ds->idx_synced;
		ds->idx_synced = commits;
	}
	pthread_cond_broadcast(&ds->sync_cond);
	return rc;
}

/*
 * Group commit: a caller's writes are flushed before it takes its
 * ticket, so a sync that starts after that covers them.  A sync under
 * way may have missed them (it may even have passed their container):
 * the caller waits for it and then runs, or joins, the next one.  N
 * concurrent COMMITs cost two syncs at most, not N one after another.
 * A failed sync answers its own caller; the waiters try again.
 */
int dstore_sync(struct dstore *ds)
{
	uint64_t ticket;
	int rc;

	if (ds->read_only)
		return 0;
	rc = wb_flush(ds);
	if (rc)
		return rc;
	pthread_mutex_lock(&ds->sync_lock);
	ticket = ++ds->sync_asked;
	while (!rc && ds->sync_done < ticket) {
		if (ds->syncing)
			pthread_cond_wait(&ds->sync_cond, &ds->sync_lock);
		else
			rc = sync_locked(ds);
	}
	pthread_mutex_unlock(&ds->sync_lock);
	return rc;
}

