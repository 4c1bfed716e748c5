// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * Write-back: the writes held in memory until a flush indexes them.
 *
 * A write's blocks are hashed and held here, each content once however
 * many blocks (of however many files) hold it, and the write returns.
 * A flush (dstore_sync, a writer finding the buffer full, the flusher
 * thread every interval or when 32 MiB or half the buffer are held) turns
 * every file
 * held into one write intent for intents_commit: new contents written to
 * fresh slots and synced, then one index transaction.  Only then are the
 * flushed blocks let go, so a reader that looks here before it takes its
 * index snapshot sees every write: held, or indexed, or both.
 *
 * A crash loses what is held; NFS's write verifier (new at every start)
 * makes clients send again what they had not committed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

struct wb_block {
	uint64_t lbn;
	struct wb_buf *buf;	/* NULL: zeros */
	uint64_t seq;		/* the write that put it here */
	bool indexed_mapped;	/* what the index has under it is not a hole */
	UT_hash_handle hh;
};

/* What the block adds to its file's mapped blocks once indexed. */
static int mapped_delta(const struct wb_block *b)
{
	return (b->buf != NULL) - b->indexed_mapped;
}

struct wb_file {
	uint64_t ino;
	struct wb_block *blocks;
	uint64_t end;		/* the file is at least this long */
	uint64_t change;	/* its change id is at least this */
	struct timespec mtime;	/* of its last write */
	uint64_t seq;		/* its last write */
	int64_t mapped;		/* its blocks add this many mapped blocks */
	UT_hash_handle hh;
};

/* A block as a flush took it. */
struct flush_block {
	uint64_t lbn;
	struct wb_buf *buf;	/* a reference */
	uint64_t seq;
};

/* One file's part of a flush. */
struct flush_file {
	struct write_intent in;
	uint64_t seq;
	struct flush_block *b;	/* ascending lbn, in.n of them */
};

/*
 * Held bytes that set the flusher going: half the buffer, but no more
 * than a batch whose flush overlaps the writes still coming in (and
 * leaves a COMMIT little to do).
 */
#define WB_BATCH (32ull << 20)

static uint64_t flush_due_at(const struct dstore *ds)
{
	return ds->wb_limit / 2 < WB_BATCH ? ds->wb_limit / 2 : WB_BATCH;
}

/*
 * Buffers let go wait in the pool for the next writes, up to what the
 * buffer may hold: a burst reuses memory already faulted in instead of
 * growing and trimming the heap (page faults, mprotect) for every block.
 * The flusher gives the pool back when writes have stopped for an
 * interval (pool_drain).
 */
static size_t pool_max(const struct dstore *ds)
{
	return (size_t)(ds->wb_limit >> ds->bshift);
}

static void chain_free(struct wb_buf *b)
{
	while (b) {
		struct wb_buf *next = b->next_free;

		free(b);
		b = next;
	}
}

/* Frees the pool's buffers. */
static void pool_drain(struct dstore *ds)
{
	struct wb_buf *b;

	pthread_mutex_lock(&ds->wb_pool_lock);
	b = ds->wb_pool;
	ds->wb_pool = NULL;
	ds->wb_pool_n = 0;
	pthread_mutex_unlock(&ds->wb_pool_lock);
	chain_free(b);
}

/*
 * Buffers for n blocks into b: as many as the pool has, taken at once,
 * the rest allocated.
 */
static int bufs_get(struct dstore *ds, struct wb_buf **b, size_t n)
{
	size_t k = 0;

	pthread_mutex_lock(&ds->wb_pool_lock);
	for (; k < n && ds->wb_pool; k++) {
		b[k] = ds->wb_pool;
		ds->wb_pool = b[k]->next_free;
		ds->wb_pool_n--;
	}
	pthread_mutex_unlock(&ds->wb_pool_lock);
	for (; k < n; k++) {
		b[k] = malloc(sizeof(*b[k]) + ds->bsize);
		if (!b[k])
			break;
	}
	for (size_t i = k; i < n; i++)
		b[i] = NULL;
	return k == n ? 0 : -ENOMEM;
}

/*
 * The buffers of list (chained by next_free) back to the pool at once,
 * those past its size freed.
 */
static void bufs_release(struct dstore *ds, struct wb_buf *list)
{
	pthread_mutex_lock(&ds->wb_pool_lock);
	while (list && ds->wb_pool_n < pool_max(ds)) {
		struct wb_buf *next = list->next_free;

		list->next_free = ds->wb_pool;
		ds->wb_pool = list;
		ds->wb_pool_n++;
		list = next;
	}
	pthread_mutex_unlock(&ds->wb_pool_lock);
	chain_free(list);
}

/* A reference to b less; the last one puts b on *list. */
static void buf_unref(struct wb_buf *b, struct wb_buf **list)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
		b->next_free = *list;
		*list = b;
	}
}

void wb_buf_put(struct dstore *ds, struct wb_buf *b)
{
	struct wb_buf *list = NULL;

	buf_unref(b, &list);
	bufs_release(ds, list);
}

/* Content b (not held yet) is held from now on. */
static int held_add(struct dstore *ds, struct wb_buf *b)
{
	int rc = htab_reserve(&ds->wb_held, 1);

	if (rc)
		return rc;
	htab_add(&ds->wb_held, &b->h);
	ds->wb_bytes += ds->bsize;
	return 0;
}

/* One block less holds b: the last one lets it go. */
static void holder_drop_locked(struct dstore *ds, struct wb_buf *b)
{
	if (!b || --b->holders > 0)
		return;
	htab_del(&ds->wb_held, &b->h);
	ds->wb_bytes -= ds->bsize;
	wb_buf_put(ds, b);
}

static void attr_of(const struct wb_file *f, struct wb_attr *a)
{
	a->held = f != NULL;
	if (!f)
		return;
	a->mapped = f->mapped;
	a->end = f->end;
	a->change = f->change;
	a->mtime = f->mtime;
}

void wb_attr_apply(const struct wb_attr *wa, struct dstore_attr *a)
{
	if (!wa->held)
		return;
	if (wa->end > a->size)
		a->size = wa->end;
	if (wa->change > a->change)
		a->change = wa->change;
	a->blocks_mapped = (int64_t)a->blocks_mapped + wa->mapped > 0 ?
			   (uint64_t)((int64_t)a->blocks_mapped + wa->mapped) : 0;
	a->mtime = wa->mtime;
	if (wa->mtime.tv_sec > a->ctime.tv_sec ||
	    (wa->mtime.tv_sec == a->ctime.tv_sec &&
	     wa->mtime.tv_nsec > a->ctime.tv_nsec))
		a->ctime = wa->mtime;
}

bool wb_lookup(struct dstore *ds, uint64_t ino, uint64_t first, size_t n,
	       struct wb_buf **bufs, uint8_t *held, struct wb_attr *a)
{
	struct wb_attr dummy;
	struct wb_block *b, *tmp;
	struct wb_file *f;

	if (!a)
		a = &dummy;
	pthread_mutex_lock(&ds->wb_lock);
	HASH_FIND(hh, ds->wb_files, &ino, sizeof(ino), f);
	attr_of(f, a);
	if (f && n > 0) {
		memset(held, 0, n);
		/* whichever is fewer: the file's blocks, or the range's */
		if (HASH_COUNT(f->blocks) < n) {
			HASH_ITER(hh, f->blocks, b, tmp) {
				if (b->lbn - first >= n)
					continue;
				held[b->lbn - first] = 1;
				bufs[b->lbn - first] = b->buf;
				if (b->buf)
					atomic_fetch_add(&b->buf->refs, 1);
			}
		} else {
			for (size_t i = 0; i < n; i++) {
				uint64_t lbn = first + i;

				HASH_FIND(hh, f->blocks, &lbn, sizeof(lbn), b);
				if (!b)
					continue;
				held[i] = 1;
				bufs[i] = b->buf;
				if (b->buf)
					atomic_fetch_add(&b->buf->refs, 1);
			}
		}
	}
	pthread_mutex_unlock(&ds->wb_lock);
	return f != NULL;
}

int wb_range_get(struct dstore *ds, uint64_t ino, uint64_t first, size_t n,
		 struct wb_range *hr)
{
	hr->ds = ds;
	hr->n = n;
	hr->bufs = malloc((n ? n : 1) * (sizeof(*hr->bufs) + 1));
	if (!hr->bufs)
		return -ENOMEM;
	hr->held = (uint8_t *)(hr->bufs + (n ? n : 1));
	wb_lookup(ds, ino, first, n, hr->bufs, hr->held, &hr->a);
	return 0;
}

void wb_range_put(struct wb_range *hr)
{
	for (size_t i = 0; hr->a.held && i < hr->n; i++)
		if (hr->held[i])
			wb_buf_put(hr->ds, hr->bufs[i]);
	free(hr->bufs);
}

bool wb_holds(struct dstore *ds, uint64_t ino)
{
	return wb_lookup(ds, ino, 0, 0, NULL, NULL, NULL);
}

int wb_read_content(struct dstore *ds, const struct sc_hash *h, void *buf)
{
	struct wb_buf *b;

	pthread_mutex_lock(&ds->wb_lock);
	b = htab_find(&ds->wb_held, h);
	if (b)
		memcpy(buf, b->data, ds->bsize);
	pthread_mutex_unlock(&ds->wb_lock);
	return b ? 0 : -ENOENT;
}

static int flb_cmp(const void *a, const void *b)
{
	const struct flush_block *x = a, *y = b;

	return x->lbn < y->lbn ? -1 : x->lbn > y->lbn;
}

static void flush_free(struct dstore *ds, struct flush_file *ff, size_t n)
{
	struct wb_buf *list = NULL;

	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; ff[i].b && j < ff[i].in.n; j++)
			buf_unref(ff[i].b[j].buf, &list);
		free(ff[i].b);
		free(ff[i].in.plan);
	}
	free(ff);
	bufs_release(ds, list);
}

/* Everything held now, as intents (wb_lock held). */
static int flush_take_locked(struct dstore *ds, struct flush_file **out,
			     size_t *n_out)
{
	size_t n = HASH_COUNT(ds->wb_files), k = 0;
	struct flush_file *ff = calloc(n ? n : 1, sizeof(*ff));
	struct wb_file *f, *ftmp;

	*out = ff;
	*n_out = 0;
	if (!ff)
		return -ENOMEM;
	HASH_ITER(hh, ds->wb_files, f, ftmp) {
		struct flush_file *x = &ff[k];
		size_t nb = HASH_COUNT(f->blocks), j = 0;
		struct wb_block *b, *btmp;

		x->b = malloc((nb ? nb : 1) * sizeof(*x->b));
		x->in.plan = malloc((nb ? nb : 1) * sizeof(*x->in.plan));
		*n_out = ++k;
		if (!x->b || !x->in.plan)
			return -ENOMEM;
		HASH_ITER(hh, f->blocks, b, btmp) {
			x->b[j].lbn = b->lbn;
			x->b[j].buf = b->buf;
			x->b[j++].seq = b->seq;
			if (b->buf)
				atomic_fetch_add(&b->buf->refs, 1);
		}
		x->in.n = nb;
		x->in.ino = f->ino;
		x->in.end = f->end;
		x->in.change = f->change;
		x->in.mtime = f->mtime;
		x->seq = f->seq;
	}
	return 0;
}

/*
 * The intents' plans: a content held by several blocks is stored once,
 * the later blocks name the first.
 */
static void flush_plan(struct flush_file *ff, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct write_intent *in = &ff[i].in;

		qsort(ff[i].b, in->n, sizeof(*ff[i].b), flb_cmp);
		in->next = i + 1 < n ? &ff[i + 1].in : NULL;
		for (size_t j = 0; j < in->n; j++) {
			struct block_plan *p = &in->plan[j];
			struct wb_buf *b = ff[i].b[j].buf;

			memset(p, 0, sizeof(*p));
			p->lbn = ff[i].b[j].lbn;
			p->kind = b ? PLAN_NEW : PLAN_HOLE;
			if (!b)
				continue;
			p->h = b->h;
			p->data = b->data;
			p->first = b->first;
			if (!b->first)
				b->first = p;
		}
	}
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < ff[i].in.n; j++)
			if (ff[i].b[j].buf)
				ff[i].b[j].buf->first = NULL;
}

/* Lets go of what an intent indexed (or what a gone file held). */
static void flush_done_locked(struct dstore *ds, struct flush_file *x)
{
	struct wb_file *f;
	struct wb_block *b;

	HASH_FIND(hh, ds->wb_files, &x->in.ino, sizeof(x->in.ino), f);
	if (!f)
		return;
	for (size_t j = 0; j < x->in.n; j++) {
		HASH_FIND(hh, f->blocks, &x->b[j].lbn, sizeof(x->b[j].lbn), b);
		if (!b)
			continue;
		f->mapped -= mapped_delta(b);
		if (b->seq != x->b[j].seq) {
			/* written again since: held on, over what was flushed */
			b->indexed_mapped = x->b[j].buf != NULL;
			f->mapped += mapped_delta(b);
			continue;
		}
		HASH_DEL(f->blocks, b);
		holder_drop_locked(ds, b->buf);
		free(b);
	}
	if (f->seq == x->seq && !f->blocks) {
		HASH_DEL(ds->wb_files, f);
		free(f);
	}
}

/*
 * Indexes everything held, wb_lock held and no other flush running (the
 * lock is let go meanwhile).  A content another file's change took away
 * in between (-EAGAIN) makes another round.
 */
static int flush_locked(struct dstore *ds)
{
	struct flush_file *ff;
	uint64_t upto;
	bool again;
	size_t n;
	int rc;

	ds->wb_flushing = true;
	do {
		again = false;
		upto = ds->wb_seq;
		rc = flush_take_locked(ds, &ff, &n);
		pthread_mutex_unlock(&ds->wb_lock);
		if (!rc && n > 0) {
			flush_plan(ff, n);
			rc = intents_commit(ds, &ff[0].in);
		}
		pthread_mutex_lock(&ds->wb_lock);
		for (size_t i = 0; !rc && i < n; i++) {
			int irc = ff[i].in.rc;

			if (irc == -EAGAIN) {
				again = true;
				continue;
			}
			if (irc && irc != -ENOENT && irc != -ESTALE)
				dstore_logf(ds, DSTORE_LOG_WARN,
					    "writes held for inode %llu dropped: %s",
					    (unsigned long long)ff[i].in.ino,
					    strerror(-irc));
			flush_done_locked(ds, &ff[i]);
		}
		flush_free(ds, ff, n);
		if (!rc && !again)
			ds->wb_flushed = upto;
	} while (!rc && again);
	ds->wb_flushing = false;
	pthread_cond_broadcast(&ds->wb_cond);
	return rc;
}

int wb_flush(struct dstore *ds)
{
	uint64_t want;
	int rc = 0;

	pthread_mutex_lock(&ds->wb_lock);
	want = ds->wb_seq;
	while (!rc && ds->wb_flushed < want) {
		if (ds->wb_flushing)
			pthread_cond_wait(&ds->wb_cond, &ds->wb_lock);
		else
			rc = flush_locked(ds);
	}
	pthread_mutex_unlock(&ds->wb_lock);
	return rc;
}

/* Waits (or flushes) until need more bytes fit, wb_lock held. */
static int room_locked(struct dstore *ds, uint64_t need)
{
	int rc = 0;

	while (!rc && ds->wb_bytes > 0 && ds->wb_bytes + need > ds->wb_limit) {
		if (ds->wb_flushing)
			pthread_cond_wait(&ds->wb_cond, &ds->wb_lock);
		else
			rc = flush_locked(ds);
	}
	return rc;
}

/*
 * Copies of the blocks' new contents, made before taking the lock (in
 * buffers from the pool: a copy of a content held already goes back
 * there).
 */
static int bufs_make(struct dstore *ds, const struct block_plan *p, size_t n,
		     struct wb_buf **nb, uint64_t *need)
{
	size_t k = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		k += p[i].kind != PLAN_SILENT && p[i].kind != PLAN_HOLE;
	/* taken into the end of nb, then moved to their blocks */
	rc = bufs_get(ds, nb + n - k, k);
	*need = 0;
	for (size_t i = 0, j = n - k; i < n; i++) {
		struct wb_buf *b = NULL;

		if (p[i].kind != PLAN_SILENT && p[i].kind != PLAN_HOLE)
			b = nb[j++];
		nb[i] = b;
		if (!b)
			continue;
		b->h = p[i].h;
		atomic_init(&b->refs, 1);
		b->holders = 0;
		b->first = NULL;
		memcpy(b->data, p[i].data, ds->bsize);
		*need += ds->bsize;
	}
	return rc;
}

/*
 * Block lbn of f now holds b (NULL: zeros), put there by write seq;
 * mapped: the index maps it (if not held yet).
 */
static int block_set_locked(struct dstore *ds, struct wb_file *f,
			    uint64_t lbn, struct wb_buf *b, uint64_t seq,
			    bool mapped)
{
	struct wb_block *blk;

	HASH_FIND(hh, f->blocks, &lbn, sizeof(lbn), blk);
	if (!blk) {
		blk = malloc(sizeof(*blk));
		if (!blk)
			return -ENOMEM;
		blk->lbn = lbn;
		blk->buf = NULL;
		blk->indexed_mapped = mapped;
		HASH_ADD(hh, f->blocks, lbn, sizeof(blk->lbn), blk);
	} else {
		f->mapped -= mapped_delta(blk);
		holder_drop_locked(ds, blk->buf);
	}
	blk->buf = b;
	blk->seq = seq;
	f->mapped += mapped_delta(blk);
	return 0;
}

int wb_hold(struct dstore *ds, uint64_t ino, const struct block_plan *p,
	    const uint8_t *mapped, size_t n, uint64_t end, uint64_t change,
	    struct dstore_attr *a)
{
	struct wb_buf **nb = malloc((n ? n : 1) * sizeof(*nb)), *spare = NULL;
	struct wb_attr wa;
	struct wb_file *f = NULL;
	uint64_t need, seq;
	int rc = nb ? bufs_make(ds, p, n, nb, &need) : -ENOMEM;

	pthread_mutex_lock(&ds->wb_lock);
	if (!rc)
		rc = room_locked(ds, need);
	if (!rc)
		HASH_FIND(hh, ds->wb_files, &ino, sizeof(ino), f);
	if (!rc && !f) {
		f = calloc(1, sizeof(*f));
		if (f) {
			f->ino = ino;
			HASH_ADD(hh, ds->wb_files, ino, sizeof(f->ino), f);
		}
		rc = f ? 0 : -ENOMEM;
	}
	seq = ++ds->wb_seq;
	for (size_t i = 0; !rc && i < n; i++) {
		struct wb_buf *b = NULL;

		if (p[i].kind == PLAN_SILENT)
			continue;
		if (nb[i]) {
			/* a content held already is shared */
			b = htab_find(&ds->wb_held, &p[i].h);
			if (!b) {
				rc = held_add(ds, nb[i]);
				if (rc)
					break;
				b = nb[i];
				nb[i] = NULL;
			}
			b->holders++;
		}
		rc = block_set_locked(ds, f, p[i].lbn, b, seq, mapped[i]);
		if (rc)
			holder_drop_locked(ds, b);
	}
	if (f) {
		/* held from here on, even after a partial failure */
		if (end > f->end)
			f->end = end;
		f->change = (change > f->change ? change : f->change) + 1;
		dstore_now(&f->mtime);
		f->seq = seq;
	}
	attr_of(f, &wa);
	if (ds->wb_bytes >= flush_due_at(ds))
		pthread_cond_signal(&ds->wb_kick);
	pthread_mutex_unlock(&ds->wb_lock);
	if (a)
		wb_attr_apply(&wa, a);
	for (size_t i = 0; nb && i < n; i++)
		buf_unref(nb[i], &spare);
	bufs_release(ds, spare);
	free(nb);
	return rc;
}

static void *flusher_main(void *arg)
{
	struct dstore *ds = arg;
	struct timespec until;
	uint64_t seq_before;
	int rc;

	pthread_mutex_lock(&ds->wb_lock);
	while (!ds->wb_stop) {
		if (ds->wb_flushing) {
			/* somebody else's flush: this one's turn after it */
			pthread_cond_wait(&ds->wb_cond, &ds->wb_lock);
			continue;
		}
		seq_before = ds->wb_seq;
		if (ds->wb_bytes < flush_due_at(ds)) {
			dstore_deadline(&until, ds->wb_interval_ms);
			pthread_cond_timedwait(&ds->wb_kick, &ds->wb_lock,
					       &until);
		}
		if (ds->wb_stop || ds->wb_flushing)
			continue;
		if (ds->wb_flushed == ds->wb_seq) {
			/* no write for an interval: the memory goes back */
			if (ds->wb_seq == seq_before)
				pool_drain(ds);
			continue;
		}
		rc = flush_locked(ds);
		if (rc) {
			dstore_logf(ds, DSTORE_LOG_ERROR,
				    "flushing held writes failed: %s; trying again in %u ms",
				    strerror(-rc), ds->wb_interval_ms);
			/* not at once again when the buffer is full */
			dstore_deadline(&until, ds->wb_interval_ms);
			pthread_cond_timedwait(&ds->wb_kick, &ds->wb_lock,
					       &until);
		}
	}
	pthread_mutex_unlock(&ds->wb_lock);
	return NULL;
}

int wb_init(struct dstore *ds, uint64_t limit, uint32_t interval_ms)
{
	pthread_condattr_t ca;
	int rc;

	ds->wb_limit = limit;
	ds->wb_interval_ms = interval_ms;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_mutex_init(&ds->wb_lock, NULL);
	if (!rc)
		rc = pthread_mutex_init(&ds->wb_pool_lock, NULL);
	if (!rc)
		rc = pthread_cond_init(&ds->wb_cond, NULL);
	if (!rc)
		rc = pthread_cond_init(&ds->wb_kick, &ca);
	pthread_condattr_destroy(&ca);
	return -rc;
}

int wb_start(struct dstore *ds)
{
	int rc = pthread_create(&ds->wb_flusher, NULL, flusher_main, ds);

	ds->wb_flusher_running = rc == 0;
	return -rc;
}

int wb_stop(struct dstore *ds)
{
	if (ds->wb_flusher_running) {
		pthread_mutex_lock(&ds->wb_lock);
		ds->wb_stop = true;
		pthread_cond_signal(&ds->wb_kick);
		pthread_mutex_unlock(&ds->wb_lock);
		pthread_join(ds->wb_flusher, NULL);
		ds->wb_flusher_running = false;
	}
	return wb_flush(ds);
}

void wb_fini(struct dstore *ds)
{
	struct wb_file *f, *ftmp;
	struct wb_block *b, *btmp;
	uint64_t lost = 0;

	HASH_ITER(hh, ds->wb_files, f, ftmp) {
		HASH_ITER(hh, f->blocks, b, btmp) {
			HASH_DEL(f->blocks, b);
			holder_drop_locked(ds, b->buf);
			free(b);
			lost++;
		}
		HASH_DEL(ds->wb_files, f);
		free(f);
	}
	if (lost)
		dstore_logf(ds, DSTORE_LOG_ERROR,
			    "%llu blocks written were never indexed (their flush failed): lost",
			    (unsigned long long)lost);
	htab_free(&ds->wb_held);
	pool_drain(ds);
	pthread_cond_destroy(&ds->wb_kick);
	pthread_cond_destroy(&ds->wb_cond);
	pthread_mutex_destroy(&ds->wb_pool_lock);
	pthread_mutex_destroy(&ds->wb_lock);
}
