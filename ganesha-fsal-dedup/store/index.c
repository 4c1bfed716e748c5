// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The index: record helpers and the one place that maps a block to a
 * content (block_set), so references, CSI-Map entries and counters cannot
 * drift apart.
 */
#include <errno.h>
#include <string.h>

#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xxh_x86dispatch.h>
#endif

#include "dstore_int.h"

int rtxn_begin(struct dstore *ds, MDB_txn **txn)
{
	return idx_err(ds, mdb_txn_begin(ds->env, NULL, MDB_RDONLY, txn),
		       "index read");
}

/* Ends a write transaction's hold on the writer lock (see wtxn_begin). */
static void wtxn_release(struct wtxn *w)
{
	delta_free(w);
	if (w->locked)
		pthread_mutex_unlock(&w->ds->write_lock);
	w->locked = false;
}

void wtxn_abort(struct wtxn *w)
{
	mdb_txn_abort(w->txn);
	wtxn_release(w);
}

int wtxn_begin(struct dstore *ds, struct wtxn *w)
{
	int rc;

	if (ds->read_only)
		return -EROFS;
	memset(w, 0, sizeof(*w));
	w->ds = ds;
	/*
	 * LMDB's own writer lock ends at commit; this one also covers the
	 * fresh-chunk table's update after it, so the next transaction never
	 * sees a chunk there that the committed one freed.
	 */
	pthread_mutex_lock(&ds->write_lock);
	w->locked = true;
	rc = idx_err(ds, mdb_txn_begin(ds->env, NULL, 0, &w->txn),
		     "index write");
	if (rc) {
		wtxn_release(w);
		return rc;
	}
	rc = meta_get(ds, w->txn, "counters", &w->c, sizeof(w->c));
	if (!rc)
		rc = meta_get(ds, w->txn, "cursor", &w->cur, sizeof(w->cur));
	if (rc) {
		wtxn_abort(w);
		return rc;
	}
	w->c.silent_writes += atomic_exchange(&ds->silent_pending, 0);
	return 0;
}



int wtxn_end(struct wtxn *w, int rc)
{
	struct dstore *ds = w->ds;

	if (rc >= 0) {
		/* every slot handed out so far stays out after a restart */
		pthread_mutex_lock(&ds->cont_lock);
		if (w->cur.next_slot < ds->next_slot)
			w->cur.next_slot = ds->next_slot;
		pthread_mutex_unlock(&ds->cont_lock);
		rc = delta_flush(w);
	}
	if (rc >= 0) {
		rc = meta_put(ds, w->txn, "counters", &w->c, sizeof(w->c));
		if (!rc)
			rc = meta_put(ds, w->txn, "cursor", &w->cur,
				      sizeof(w->cur));
	}
	if (rc < 0) {
		wtxn_abort(w);
		return rc;
	}
	rc = idx_err(ds, mdb_txn_commit(w->txn), "index commit");
	/* even a failed commit may have written pages a sync must cover */
	atomic_fetch_add(&ds->idx_commits, 1);
	if (!rc)
		fresh_commit(w);
	wtxn_release(w);
	return rc;
}

void key_bmap(uint8_t out[16], uint64_t ino, uint64_t lbn)
{
	sc_put_be64(out, ino);
	sc_put_be64(out + 8, lbn);
}

void key_csimap(uint8_t out[CSIMAP_PREFIX + 16], const struct sc_hash *h,
		uint64_t ino, uint64_t lbn)
{
	memcpy(out, h->b, CSIMAP_PREFIX);
	key_bmap(out + CSIMAP_PREFIX, ino, lbn);
}

int meta_get(struct dstore *ds, MDB_txn *txn, const char *name, void *out,
	     size_t len)
{
	MDB_val k = { strlen(name), (void *)name }, v;
	int rc = mdb_get(txn, ds->db_meta, &k, &v);

	if (rc)
		return idx_err(ds, rc, name);
	if (v.mv_size != len) {
		dstore_logf(ds, DSTORE_LOG_ERROR,
			    "index record '%s' has %zu bytes, expected %zu: run seacachectl fsck",
			    name, v.mv_size, len);
		return -EUCLEAN;
	}
	memcpy(out, v.mv_data, len);
	return 0;
}

int meta_put(struct dstore *ds, MDB_txn *txn, const char *name,
	     const void *val, size_t len)
{
	MDB_val k = { strlen(name), (void *)name }, v = { len, (void *)val };

	return idx_err(ds, mdb_put(txn, ds->db_meta, &k, &v, 0), name);
}

int inode_get(struct dstore *ds, MDB_txn *txn, uint64_t ino,
	      struct inode_rec *r, char *tgt, size_t tgtlen)
{
	uint8_t kb[8];
	MDB_val k = { sizeof(kb), kb }, v;
	size_t tl;
	int rc;

	sc_put_be64(kb, ino);
	rc = mdb_get(txn, ds->db_inode, &k, &v);
	if (rc == MDB_NOTFOUND)
		return -ESTALE;
	if (rc)
		return idx_err(ds, rc, "inode");
	if (v.mv_size < sizeof(*r)) {
		dstore_logf(ds, DSTORE_LOG_ERROR,
			    "inode %llu: short record: run seacachectl fsck",
			    (unsigned long long)ino);
		return -EUCLEAN;
	}
	memcpy(r, v.mv_data, sizeof(*r));
	if (tgt) {
		tl = v.mv_size - sizeof(*r);
		if (tl >= tgtlen)
			return -ENAMETOOLONG;
		memcpy(tgt, (const uint8_t *)v.mv_data + sizeof(*r), tl);
		tgt[tl] = '\0';
	}
	return 0;
}

int inode_regular(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		  struct inode_rec *ir)
{
	int rc = inode_get(ds, txn, ino, ir, NULL, 0);

	if (rc)
		return rc;
	if (ir->type == DSTORE_DIR)
		return -EISDIR;
	return ir->type == DSTORE_REG ? 0 : -EINVAL;
}


/* tgt NULL keeps a symlink's target as it is. */
int inode_put(struct wtxn *w, uint64_t ino, const struct inode_rec *r,
	      const char *tgt)
{
	char old[DSTORE_SYMLINK_MAX + 1];
	struct inode_rec cur;
	uint8_t kb[8];
	size_t tl;
	MDB_val k = { sizeof(kb), kb }, v;
	int rc;

	if (!tgt && r->type == DSTORE_SYMLINK) {
		rc = inode_get(w->ds, w->txn, ino, &cur, old, sizeof(old));
		if (rc)
			return rc;
		tgt = old;
	}
	tl = tgt ? strlen(tgt) : 0;
	v.mv_size = sizeof(*r) + tl;
	sc_put_be64(kb, ino);
	rc = mdb_put(w->txn, w->ds->db_inode, &k, &v, MDB_RESERVE);
	if (rc)
		return idx_err(w->ds, rc, "inode");
	memcpy(v.mv_data, r, sizeof(*r));
	if (tl)
		memcpy((uint8_t *)v.mv_data + sizeof(*r), tgt, tl);
	return 0;
}

void inode_to_attr(uint64_t ino, const struct inode_rec *r,
		   struct dstore_attr *a)
{
	struct timespec *t[4] = { &a->atime, &a->mtime, &a->ctime, &a->btime };

	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->type = r->type;
	a->mode = r->mode;
	a->nlink = r->nlink;
	a->uid = r->uid;
	a->gid = r->gid;
	a->size = r->size;
	a->rdev = r->rdev;
	a->blocks_mapped = r->blocks_mapped;
	a->change = r->change;
	for (int i = 0; i < 4; i++) {
		t[i]->tv_sec = r->time_s[i];
		t[i]->tv_nsec = r->time_ns[i];
	}
}

/* Sets the times in which_mask (1 << T_*) to now and moves the change id. */
void inode_touch(struct inode_rec *r, unsigned int which_mask)
{
	struct timespec now;

	dstore_now(&now);
	for (int i = 0; i < 4; i++) {
		if (which_mask & (1u << i)) {
			r->time_s[i] = now.tv_sec;
			r->time_ns[i] = (uint32_t)now.tv_nsec;
		}
	}
	r->change++;
}

uint64_t blocks_of(const struct dstore *ds, uint64_t size)
{
	return (size + ds->bsize - 1) >> ds->bshift;
}

void size_account(struct wtxn *w, uint64_t old_size, uint64_t new_size)
{
	w->c.logical_bytes += new_size - old_size;
	w->c.logical_blocks += blocks_of(w->ds, new_size) -
			       blocks_of(w->ds, old_size);
}

/*
 * The block map stores groups of BMAP_GROUP consecutive blocks under one
 * key (ino, lbn / BMAP_GROUP): a presence bitmap, then each present
 * block's hash, slot and check (BMAP_ENTRY bytes) in order.  One key and
 * node header per group instead of per block keeps the map near 47 bytes
 * a block before page slack.
 */
int group_decode(struct dstore *ds, const MDB_val *v,
			struct bmap_group *g)
{
	const uint8_t *p = v->mv_data;

	if (v->mv_size < 1)
		return -EUCLEAN;
	g->bits = p[0];
	if (v->mv_size != 1 + (size_t)__builtin_popcount(g->bits) * BMAP_ENTRY) {
		dstore_logf(ds, DSTORE_LOG_ERROR,
			    "malformed block map group: run seacachectl fsck");
		return -EUCLEAN;
	}
	p++;
	for (unsigned int i = 0; i < BMAP_GROUP; i++) {
		if (!(g->bits & (1u << i)))
			continue;
		memcpy(g->h[i].b, p, SC_HASH_LEN);
		memcpy(&g->loc[i].slot, p + SC_HASH_LEN, 8);
		memcpy(&g->loc[i].check, p + SC_HASH_LEN + 8, 4);
		p += BMAP_ENTRY;
	}
	return 0;
}

static int group_get(struct dstore *ds, MDB_txn *txn, uint64_t ino,
		     uint64_t gno, struct bmap_group *g)
{
	uint8_t kb[16];
	MDB_val k = { sizeof(kb), kb }, v;
	int rc;

	key_bmap(kb, ino, gno);
	rc = mdb_get(txn, ds->db_bmap, &k, &v);
	if (rc == MDB_NOTFOUND) {
		g->bits = 0;
		return 0;
	}
	return rc ? idx_err(ds, rc, "block map") : group_decode(ds, &v, g);
}

/* The stored form of g into buf (BMAP_GROUP_MAX bytes); its length. */
static size_t group_encode(const struct bmap_group *g, uint8_t *buf)
{
	size_t len = 1;

	buf[0] = g->bits;
	for (unsigned int i = 0; i < BMAP_GROUP; i++) {
		if (!(g->bits & (1u << i)))
			continue;
		memcpy(buf + len, g->h[i].b, SC_HASH_LEN);
		memcpy(buf + len + SC_HASH_LEN, &g->loc[i].slot, 8);
		memcpy(buf + len + SC_HASH_LEN + 8, &g->loc[i].check, 4);
		len += BMAP_ENTRY;
	}
	return len;
}

static int group_put(struct wtxn *w, uint64_t ino, uint64_t gno,
		     const struct bmap_group *g, bool is_new)
{
	struct dstore *ds = w->ds;
	uint8_t kb[16], vb[BMAP_GROUP_MAX];
	MDB_val k = { sizeof(kb), kb }, v = { 0, vb };
	int rc;

	key_bmap(kb, ino, gno);
	if (g->bits == 0)
		return idx_err(ds, mdb_del(w->txn, ds->db_bmap, &k, NULL),
			       "block map");
	v.mv_size = group_encode(g, vb);
	/*
	 * A file written front to back (the newest file, a clone being
	 * copied) ends the map: appending fills pages instead of halving them.
	 */
	rc = is_new ? mdb_put(w->txn, ds->db_bmap, &k, &v, MDB_APPEND) :
		      MDB_KEYEXIST;
	if (rc == MDB_KEYEXIST)
		rc = mdb_put(w->txn, ds->db_bmap, &k, &v, 0);
	return idx_err(ds, rc, "block map");
}

int group_write(struct wtxn *w, MDB_cursor *c, const struct bmap_group *g)
{
	uint8_t vb[BMAP_GROUP_MAX];
	MDB_val k, v, nv = { 0, vb };
	int rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);

	if (rc)
		return idx_err(w->ds, rc, "block map");
	nv.mv_size = group_encode(g, vb);
	return idx_err(w->ds, mdb_cursor_put(c, &k, &nv, MDB_CURRENT),
		       "block map");
}

int bmap_get(struct dstore *ds, MDB_txn *txn, uint64_t ino, uint64_t lbn,
	     struct sc_hash *h, struct block_loc *loc)
{
	struct bmap_group g;
	unsigned int i = lbn % BMAP_GROUP;
	int rc = group_get(ds, txn, ino, lbn / BMAP_GROUP, &g);

	if (rc)
		return rc;
	if (!(g.bits & (1u << i)))
		return -ENODATA;
	*h = g.h[i];
	if (loc)
		*loc = g.loc[i];
	return 0;
}

int bmap_iter_start(struct dstore *ds, MDB_txn *txn, struct bmap_iter *it,
		    uint64_t ino, uint64_t lbn)
{
	it->ds = ds;
	it->ino = ino;
	it->next = lbn;
	it->g.bits = 0;
	it->gno = UINT64_MAX;
	it->started = false;
	return idx_err(ds, mdb_cursor_open(txn, ds->db_bmap, &it->cur),
		       "cursor");
}

int bmap_iter_next(struct bmap_iter *it, uint64_t *lbn, struct sc_hash *h,
		   struct block_loc *loc)
{
	uint8_t kb[16];
	MDB_val k = { sizeof(kb), kb }, v;
	int rc;

	for (;;) {
		if (it->gno == it->next / BMAP_GROUP) {
			unsigned int i = it->next % BMAP_GROUP;

			for (; i < BMAP_GROUP; i++) {
				if (it->g.bits & (1u << i)) {
					*lbn = it->gno * BMAP_GROUP + i;
					*h = it->g.h[i];
					if (loc)
						*loc = it->g.loc[i];
					it->next = *lbn + 1;
					return 0;
				}
			}
			it->next = (it->gno + 1) * BMAP_GROUP;
			if (it->next == 0)
				return -ENODATA;
		}
		if (!it->started) {
			key_bmap(kb, it->ino, it->next / BMAP_GROUP);
			rc = mdb_cursor_get(it->cur, &k, &v, MDB_SET_RANGE);
			it->started = true;
		} else {
			rc = mdb_cursor_get(it->cur, &k, &v, MDB_NEXT);
		}
		if (rc == MDB_NOTFOUND)
			return -ENODATA;
		if (rc)
			return idx_err(it->ds, rc, "block map");
		if (k.mv_size != 16 || sc_get_be64(k.mv_data) != it->ino)
			return -ENODATA;
		rc = group_decode(it->ds, &v, &it->g);
		if (rc)
			return rc;
		it->gno = sc_get_be64((const uint8_t *)k.mv_data + 8);
		if (it->next < it->gno * BMAP_GROUP)
			it->next = it->gno * BMAP_GROUP;
	}
}

void bmap_iter_end(struct bmap_iter *it)
{
	mdb_cursor_close(it->cur);
}

int bmap_range(struct dstore *ds, MDB_txn *txn, uint64_t ino, uint64_t lbn,
	       size_t n, struct sc_hash *h, uint8_t *mapped)
{
	struct bmap_iter it;
	struct sc_hash got;
	uint64_t at;
	int rc;

	memset(mapped, 0, n);
	rc = bmap_iter_start(ds, txn, &it, ino, lbn);
	if (rc)
		return rc;
	while ((rc = bmap_iter_next(&it, &at, &got, NULL)) == 0 &&
	       at - lbn < n) {
		h[at - lbn] = got;
		mapped[at - lbn] = 1;
	}
	bmap_iter_end(&it);
	return rc == -ENODATA ? 0 : rc;
}

int chunk_get(struct dstore *ds, MDB_txn *txn, const struct sc_hash *h,
	      struct chunk_rec *c)
{
	MDB_val k = { SC_HASH_LEN, (void *)h->b }, v;
	int rc = mdb_get(txn, ds->db_chunk, &k, &v);

	if (rc == MDB_NOTFOUND)
		return -ENOENT;
	if (rc)
		return idx_err(ds, rc, "chunk index");
	if (v.mv_size != sizeof(*c))
		return -EUCLEAN;
	memcpy(c, v.mv_data, sizeof(*c));
	return 0;
}

int chunk_find(struct dstore *ds, MDB_txn *txn, const struct wtxn *w,
	       const struct sc_hash *h, struct chunk_rec *c)
{
	return fresh_find(ds, w, h, c) ? 0 : chunk_get(ds, txn, h, c);
}

int chunk_put(struct wtxn *w, const struct sc_hash *h,
	      const struct chunk_rec *c)
{
	MDB_val k = { SC_HASH_LEN, (void *)h->b }, v = { sizeof(*c), (void *)c };

	return idx_err(w->ds, mdb_put(w->txn, w->ds->db_chunk, &k, &v, 0),
		       "chunk index");
}

int slot_mark_dead(struct wtxn *w, uint64_t slot)
{
	uint8_t kb[8];
	MDB_val k = { sizeof(kb), kb }, v = { 0, NULL };
	int rc;

	sc_put_be64(kb, slot);
	rc = mdb_put(w->txn, w->ds->db_dead, &k, &v, MDB_NOOVERWRITE);
	if (rc == MDB_KEYEXIST)
		return 0;
	if (!rc)
		w->c.dead_slots++;
	return idx_err(w->ds, rc, "dead slots");
}

/*
 * XXH3 of every chunk written and, with Verify_Reads, of every chunk read.
 * On x86 through the library's dispatcher (xxh_x86dispatch.h renames
 * XXH3_64bits to XXH3_64bits_dispatch): the same value, computed with the
 * widest vectors the CPU has.  The distribution's library is built for
 * baseline x86-64, and its plain XXH3_64bits took 0.53 us per 4 KiB here
 * against 0.15 us dispatched to AVX2: 16% of the server's CPU in a warm
 * 1 MiB sequential read.
 */
uint32_t chunk_checksum(const void *data, size_t len)
{
	return (uint32_t)XXH3_64bits(data, len);
}

/*
 * The chunk exists from here on; its reference count moves when the
 * mapping's delta is applied (pending.c).
 */
int chunk_ref(struct wtxn *w, const struct sc_hash *h, uint64_t slot,
	      uint32_t check, struct block_loc *loc)
{
	struct chunk_rec c;
	int rc = chunk_find(w->ds, w->txn, w, h, &c);

	if (rc == 0) {
		*loc = (struct block_loc){ c.slot, c.check };
		w->c.dedup_writes++;
		/* another writer stored the same content first */
		return slot == DSTORE_NO_SLOT ? 0 : slot_mark_dead(w, slot);
	}
	if (rc != -ENOENT)
		return rc;
	if (slot == DSTORE_NO_SLOT)
		return -EAGAIN;
	/* into the chunk index when the pending delta is applied */
	c.slot = slot;
	c.refs = 0;
	c.check = check;
	*loc = (struct block_loc){ slot, check };
	w->c.chunks++;
	w->c.data_writes++;
	return delta_add_chunk(w, h, &c);
}

int csimap_set(struct wtxn *w, const struct sc_hash *h, uint64_t ino,
	       uint64_t lbn, bool present)
{
	uint8_t kb[CSIMAP_PREFIX + 16];
	MDB_val k = { sizeof(kb), kb }, v = { 0, NULL };
	int rc;

	key_csimap(kb, h, ino, lbn);
	if (present)
		rc = mdb_put(w->txn, w->ds->db_csimap, &k, &v, 0);
	else
		rc = mdb_del(w->txn, w->ds->db_csimap, &k, NULL);
	return idx_err(w->ds, rc, "CSI-Map");
}

int blocks_map(struct wtxn *w, struct inode_rec *ir, uint64_t ino,
	       const struct block_change *ch, size_t n)
{
	struct bmap_group g;
	uint64_t gno = UINT64_MAX;
	bool g_new = false, g_dirty = false;
	int rc = 0;

	for (size_t i = 0; !rc && i < n; i++) {
		const struct sc_hash *h = ch[i].h;
		unsigned int bit = ch[i].lbn % BMAP_GROUP;
		bool had;

		if (ch[i].lbn / BMAP_GROUP != gno) {
			/* one read and one write of each group touched */
			if (g_dirty)
				rc = group_put(w, ino, gno, &g, g_new);
			gno = ch[i].lbn / BMAP_GROUP;
			if (!rc)
				rc = group_get(w->ds, w->txn, ino, gno, &g);
			g_new = g.bits == 0;
			g_dirty = false;
			if (rc)
				break;
		}
		had = g.bits & (1u << bit);
		if (had && h && sc_hash_eq(&g.h[bit], h)) {
			/* silent after all */
			w->c.silent_writes++;
			w->c.dedup_writes--;
			continue;
		}
		if (!h && !had)
			continue;
		rc = delta_add(w, ino, ch[i].lbn, had ? &g.h[bit] : NULL, h);
		if (h) {
			g.bits |= (uint8_t)(1u << bit);
			g.h[bit] = *h;
			g.loc[bit] = ch[i].loc;
		} else {
			g.bits &= (uint8_t)~(1u << bit);
		}
		g_dirty = true;
		if (!h) {
			ir->blocks_mapped--;
			w->c.mapped_blocks--;
		} else if (!had) {
			ir->blocks_mapped++;
			w->c.mapped_blocks++;
		}
	}
	if (!rc && g_dirty)
		rc = group_put(w, ino, gno, &g, g_new);
	return rc;
}

int block_set(struct wtxn *w, struct inode_rec *ir, uint64_t ino,
	      uint64_t lbn, const struct sc_hash *h, uint64_t slot,
	      uint32_t check)
{
	struct block_change ch = { .lbn = lbn, .h = h };
	int rc = h ? chunk_ref(w, h, slot, check, &ch.loc) : 0;

	return rc ? rc : blocks_map(w, ir, ino, &ch, 1);
}

int blocks_drop_from(struct wtxn *w, struct inode_rec *ir, uint64_t ino,
		     uint64_t first_lbn)
{
	struct block_change ch[512];
	struct bmap_iter it;
	struct sc_hash h;
	uint64_t lbn = first_lbn;
	size_t n;
	int rc = 0;

	/* in rounds: unmapping changes the tree under a cursor */
	while (!rc && ir->blocks_mapped > 0) {
		rc = bmap_iter_start(w->ds, w->txn, &it, ino, lbn);
		if (rc)
			return rc;
		for (n = 0; n < 512 &&
			    (rc = bmap_iter_next(&it, &lbn, &h, NULL)) == 0; n++)
			ch[n] = (struct block_change){ .lbn = lbn };
		bmap_iter_end(&it);
		if (rc && rc != -ENODATA)
			return rc;
		if (n == 0)
			return 0;
		rc = blocks_map(w, ir, ino, ch, n);
		lbn = ch[n - 1].lbn + 1;
	}
	return rc;
}
