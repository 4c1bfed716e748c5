// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * Fresh chunks: a chunk a committed transaction stored whose chunk index
 * insert is still a pending delta (delta.c) lives here, in memory, until
 * pending.c applies that delta; every lookup of a content (chunk_find)
 * looks here too.  The table holds exactly the chunks of pending deltas,
 * so its size is bounded by PENDING_APPLY_AT.
 */
#include <stdlib.h>

#include "dstore_int.h"

void fresh_table_free(struct hash_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->s[i].obj);
	htab_free(t);
}

void fresh_free_all(struct dstore *ds)
{
	fresh_table_free(&ds->fresh);
}

void fresh_commit(struct wtxn *w)
{
	struct dstore *ds = w->ds;
	struct hash_table *add = &w->fresh_new;
	struct fresh_chunk *fc;

	/* room reserved by delta_add_chunk */
	pthread_mutex_lock(&ds->fresh_lock);
	for (size_t i = 0; i < add->cap; i++) {
		fc = (struct fresh_chunk *)add->s[i].obj;
		add->s[i].obj = NULL;
		if (!fc)
			continue;
		if (htab_find(&ds->fresh, &fc->h))
			free(fc);	/* cannot happen: found before storing */
		else
			htab_add(&ds->fresh, &fc->h);
	}
	pthread_mutex_unlock(&ds->fresh_lock);
	htab_free(add);
	if (w->n_applied == 0)
		return;
	/* a reader may hold a snapshot from before the chunks were indexed */
	pthread_rwlock_wrlock(&ds->reclaim_lock);
	pthread_mutex_lock(&ds->fresh_lock);
	for (size_t i = 0; i < w->n_applied; i++) {
		fc = htab_find(&ds->fresh, &w->applied[i]);
		if (fc) {
			htab_del(&ds->fresh, &fc->h);
			free(fc);
		}
	}
	pthread_mutex_unlock(&ds->fresh_lock);
	pthread_rwlock_unlock(&ds->reclaim_lock);
}


/* Content h among the fresh chunks, w's own (w not NULL) first. */
bool fresh_find(struct dstore *ds, const struct wtxn *w,
		const struct sc_hash *h, struct chunk_rec *c)
{
	struct fresh_chunk *fc = NULL;

	if (w)
		fc = htab_find(&w->fresh_new, h);
	if (fc) {
		*c = fc->c;
		return true;
	}
	pthread_mutex_lock(&ds->fresh_lock);
	fc = htab_find(&ds->fresh, h);
	if (fc)
		*c = fc->c;
	pthread_mutex_unlock(&ds->fresh_lock);
	return fc != NULL;
}

/*
 * Room in the store's table for every chunk w stored and one more, for
 * fresh_commit, which cannot fail: only the transaction holding the
 * write lock adds there.
 */
int fresh_reserve(struct wtxn *w)
{
	int rc;

	pthread_mutex_lock(&w->ds->fresh_lock);
	rc = htab_reserve(&w->ds->fresh, w->fresh_new.n + 1);
	pthread_mutex_unlock(&w->ds->fresh_lock);
	return rc;
}
