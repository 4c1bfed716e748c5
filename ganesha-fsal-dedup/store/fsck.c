// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The store's consistency check, offline (the store's exclusive lock is
 * held, so nothing changes underneath).  Every relation is checked both
 * ways:
 *   inodes     <-> directory entries (link counts, parents, cookies)
 *   block map  <-> CSI-Map entries, inode sizes and mapped counts, each
 *                  block's slot and check (its chunk's)
 *   chunks     <-> block map (reference counts), slots (data hashes,
 *                  each slot used once, below the allocation cursor)
 *   counters   <-> everything above.
 * Repair fixes what can be fixed without guessing data: counts, the
 * CSI-Map, a block's slot and check, dangling entries, blocks past a
 * file's end, orphans.  A chunk
 * whose data is corrupt or missing is reported, never "repaired": reads
 * of it keep failing with EIO rather than returning other bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

struct ino_info {
	uint64_t ino;
	struct inode_rec r;
	uint32_t links;		/* directory entries naming it */
	uint32_t subdirs;
	uint64_t mapped;	/* block map entries */
};

struct fsck {
	struct dstore *ds;
	struct wtxn w;
	bool repair;
	struct dstore_fsck_report *rep;
	struct ino_info *inos;
	size_t n_inos;
	uint8_t *slot_seen;
	uint64_t next_slot;
};

#define problem(f, ...)                                                      \
	do {                                                                 \
		(f)->rep->problems++;                                        \
		dstore_logf((f)->ds, DSTORE_LOG_WARN, __VA_ARGS__);          \
	} while (0)

static void repaired(struct fsck *f)
{
	f->rep->repaired++;
}

static struct ino_info *ino_find(struct fsck *f, uint64_t ino)
{
	size_t lo = 0, hi = f->n_inos;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->inos[mid].ino == ino)
			return &f->inos[mid];
		if (f->inos[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Iterates db with fn(f, cursor, key, value); fn may delete the current
 * entry through the cursor. */
static int scan(struct fsck *f, MDB_dbi db,
		int (*fn)(struct fsck *f, MDB_cursor *c, MDB_val *k,
			  MDB_val *v))
{
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = idx_err(f->ds, mdb_cursor_open(f->w.txn, db, &cur), "cursor");

	if (rc)
		return rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		rc = fn(f, cur, &k, &v);
		if (rc)
			break;
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : idx_err(f->ds, rc, "fsck scan");
}

static int drop_current(struct fsck *f, MDB_cursor *c)
{
	repaired(f);
	return idx_err(f->ds, mdb_cursor_del(c, 0), "fsck repair");
}

static int inode_collect(struct fsck *f, MDB_cursor *c, MDB_val *k,
			 MDB_val *v)
{
	struct ino_info *ii;
	size_t cap = f->n_inos;

	(void)c;
	if (k->mv_size != 8 || v->mv_size < sizeof(struct inode_rec)) {
		problem(f, "inode record of %zu bytes under a %zu-byte key",
			v->mv_size, k->mv_size);
		return 0;
	}
	if ((cap & (cap - 1)) == 0) {	/* grow at powers of two */
		ii = realloc(f->inos, (cap ? 2 * cap : 64) * sizeof(*ii));
		if (!ii)
			return -ENOMEM;
		f->inos = ii;
	}
	ii = &f->inos[f->n_inos++];
	memset(ii, 0, sizeof(*ii));
	ii->ino = sc_get_be64(k->mv_data);
	memcpy(&ii->r, v->mv_data, sizeof(ii->r));
	f->rep->inodes++;
	if (ii->r.type < DSTORE_REG || ii->r.type > DSTORE_SOCK)
		problem(f, "inode %llu has unknown type %u",
			(unsigned long long)ii->ino, ii->r.type);
	return 0;
}

static int dirent_check(struct fsck *f, MDB_cursor *c, MDB_val *k,
			MDB_val *v)
{
	uint64_t dir = k->mv_size > 8 ? sc_get_be64(k->mv_data) : 0, ino, cookie;
	struct ino_info *d = ino_find(f, dir), *ch;
	uint8_t ck[16];
	MDB_val kc = { sizeof(ck), ck }, vc;
	size_t nl = k->mv_size - 8;

	f->rep->dirents++;
	if (k->mv_size <= 8 || v->mv_size != 16 || !d ||
	    d->r.type != DSTORE_DIR) {
		problem(f, "directory entry in a missing directory %llu",
			(unsigned long long)dir);
		return f->repair ? drop_current(f, c) : 0;
	}
	memcpy(&cookie, v->mv_data, 8);
	memcpy(&ino, (const uint8_t *)v->mv_data + 8, 8);
	ch = ino_find(f, ino);
	sc_put_be64(ck, dir);
	sc_put_be64(ck + 8, cookie);
	if (mdb_get(f->w.txn, f->ds->db_dircookie, &kc, &vc) ||
	    vc.mv_size != 8 + nl || memcmp(vc.mv_data, &ino, 8) ||
	    memcmp((const uint8_t *)vc.mv_data + 8,
		   (const uint8_t *)k->mv_data + 8, nl)) {
		problem(f, "directory %llu: entry '%.*s' has no matching cookie %llu",
			(unsigned long long)dir, (int)nl,
			(const char *)k->mv_data + 8, (unsigned long long)cookie);
		if (f->repair) {
			uint8_t cv[8 + DSTORE_NAME_MAX];

			memcpy(cv, &ino, 8);
			memcpy(cv + 8, (const uint8_t *)k->mv_data + 8, nl);
			vc.mv_size = 8 + nl;
			vc.mv_data = cv;
			repaired(f);
			if (mdb_put(f->w.txn, f->ds->db_dircookie, &kc, &vc, 0))
				return -EIO;
		}
	}
	if (!ch) {
		problem(f, "directory %llu: entry '%.*s' names missing inode %llu",
			(unsigned long long)dir, (int)nl,
			(const char *)k->mv_data + 8, (unsigned long long)ino);
		if (f->repair) {
			repaired(f);
			mdb_del(f->w.txn, f->ds->db_dircookie, &kc, NULL);
			return drop_current(f, c);
		}
		return 0;
	}
	ch->links++;
	if (ch->r.type == DSTORE_DIR) {
		d->subdirs++;
		if (ch->r.parent != dir) {
			problem(f, "directory %llu's parent is %llu, but %llu holds it",
				(unsigned long long)ino,
				(unsigned long long)ch->r.parent,
				(unsigned long long)dir);
			ch->r.parent = dir;
			if (f->repair) {
				repaired(f);
				return inode_put(&f->w, ino, &ch->r, NULL);
			}
		}
	}
	return 0;
}

static int dircookie_check(struct fsck *f, MDB_cursor *c, MDB_val *k,
			   MDB_val *v)
{
	uint8_t kb[8 + DSTORE_NAME_MAX];
	MDB_val kd = { 0, kb }, vd;
	size_t nl = v->mv_size - 8;

	if (k->mv_size != 16 || v->mv_size < 9 || nl > DSTORE_NAME_MAX) {
		problem(f, "malformed directory cookie record");
		return f->repair ? drop_current(f, c) : 0;
	}
	memcpy(kb, k->mv_data, 8);
	memcpy(kb + 8, (const uint8_t *)v->mv_data + 8, nl);
	kd.mv_size = 8 + nl;
	uint64_t cookie = 0;

	if (!mdb_get(f->w.txn, f->ds->db_dirent, &kd, &vd) && vd.mv_size == 16)
		memcpy(&cookie, vd.mv_data, 8);
	if (cookie != sc_get_be64((const uint8_t *)k->mv_data + 8)) {
		problem(f, "directory %llu: cookie %llu names no entry",
			(unsigned long long)sc_get_be64(k->mv_data),
			(unsigned long long)sc_get_be64((const uint8_t *)k->mv_data + 8));
		return f->repair ? drop_current(f, c) : 0;
	}
	return 0;
}

static int links_check(struct fsck *f)
{
	for (size_t i = 0; i < f->n_inos; i++) {
		struct ino_info *ii = &f->inos[i];
		uint32_t want = ii->r.type == DSTORE_DIR ? 2 + ii->subdirs :
							      ii->links;
		bool orphan = ii->links == 0 && ii->ino != DSTORE_ROOT_INO;
		int rc = 0;

		if (orphan) {
			problem(f, "inode %llu is in no directory (orphan)",
				(unsigned long long)ii->ino);
			if (f->repair) {
				repaired(f);
				rc = blocks_drop_from(&f->w, &ii->r, ii->ino, 0);
				if (!rc) {
					uint8_t kb[8];
					MDB_val k = { sizeof(kb), kb };

					sc_put_be64(kb, ii->ino);
					rc = idx_err(f->ds, mdb_del(f->w.txn,
						     f->ds->db_inode, &k, NULL),
						     "inode");
				}
			}
		} else if (ii->r.nlink != want) {
			problem(f, "inode %llu has link count %u, found %u",
				(unsigned long long)ii->ino, ii->r.nlink, want);
			ii->r.nlink = want;
			if (f->repair) {
				repaired(f);
				rc = inode_put(&f->w, ii->ino, &ii->r, NULL);
			}
		}
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * One mapped block; *drop when repair should unmap it, and loc corrected
 * (*fix) when it is not where its chunk is.
 */
static int block_check(struct fsck *f, uint64_t ino, uint64_t lbn,
		       const struct sc_hash *h, struct block_loc *loc,
		       bool *drop, bool *fix)
{
	struct ino_info *ii = ino_find(f, ino);
	struct chunk_rec cr;
	uint8_t ck[CSIMAP_PREFIX + 16];
	MDB_val kc = { sizeof(ck), ck }, vc = { 0, NULL };
	char hex[2 * SC_HASH_LEN + 1];

	f->rep->bmap_entries++;
	/* dropped blocks: the CSI-Map and chunk passes that follow fix the
	 * reverse entries and the references */
	if (!ii || ii->r.type != DSTORE_REG) {
		problem(f, "block %llu of missing or non-file inode %llu",
			(unsigned long long)lbn, (unsigned long long)ino);
		*drop = f->repair;
		return 0;
	}
	if (lbn >= blocks_of(f->ds, ii->r.size)) {
		problem(f, "inode %llu has block %llu past its size %llu",
			(unsigned long long)ino, (unsigned long long)lbn,
			(unsigned long long)ii->r.size);
		*drop = f->repair;
		if (*drop)
			return 0;
	}
	ii->mapped++;
	if (chunk_get(f->ds, f->w.txn, h, &cr)) {
		sc_hash_to_hex(h, hex);
		problem(f, "inode %llu block %llu: chunk %s is not stored (its data is lost; reads fail with EIO once its slot is reclaimed)",
			(unsigned long long)ino, (unsigned long long)lbn, hex);
	} else if (loc->slot != cr.slot || loc->check != cr.check) {
		sc_hash_to_hex(h, hex);
		problem(f, "inode %llu block %llu: the block map places chunk %s in slot %llu (check %08x), the chunk index in slot %llu (check %08x)",
			(unsigned long long)ino, (unsigned long long)lbn, hex,
			(unsigned long long)loc->slot, loc->check,
			(unsigned long long)cr.slot, cr.check);
		*loc = (struct block_loc){ cr.slot, cr.check };
		*fix = f->repair;
		if (*fix)
			repaired(f);
	}
	key_csimap(ck, h, ino, lbn);
	if (mdb_get(f->w.txn, f->ds->db_csimap, &kc, &vc)) {
		problem(f, "inode %llu block %llu has no CSI-Map entry",
			(unsigned long long)ino, (unsigned long long)lbn);
		if (f->repair) {
			repaired(f);
			return idx_err(f->ds, mdb_put(f->w.txn, f->ds->db_csimap,
						      &kc, &vc, 0), "CSI-Map");
		}
	}
	return 0;
}

/* A block map group: each block checked, the ones to drop dropped. */
static int bmap_check(struct fsck *f, MDB_cursor *c, MDB_val *k, MDB_val *v)
{
	struct bmap_group g;
	uint64_t ino, gno;
	uint8_t keep;
	bool drop, fix = false;
	int rc;

	if (k->mv_size != 16 || group_decode(f->ds, v, &g)) {
		problem(f, "malformed block map record");
		return f->repair ? drop_current(f, c) : 0;
	}
	ino = sc_get_be64(k->mv_data);
	gno = sc_get_be64((const uint8_t *)k->mv_data + 8);
	keep = g.bits;
	for (unsigned int i = 0; i < BMAP_GROUP; i++) {
		if (!(g.bits & (1u << i)))
			continue;
		drop = false;
		rc = block_check(f, ino, gno * BMAP_GROUP + i, &g.h[i],
				 &g.loc[i], &drop, &fix);
		if (rc)
			return rc;
		if (drop) {
			repaired(f);
			keep &= (uint8_t)~(1u << i);
		}
	}
	if (keep == g.bits && !fix)
		return 0;
	if (keep == 0)
		return idx_err(f->ds, mdb_cursor_del(c, 0), "fsck repair");
	g.bits = keep;
	return group_write(&f->w, c, &g);
}

static int csimap_check(struct fsck *f, MDB_cursor *c, MDB_val *k,
			MDB_val *v)
{
	const uint8_t *kp = k->mv_data;
	struct sc_hash h;

	(void)v;
	f->rep->csimap_entries++;
	if (k->mv_size != CSIMAP_PREFIX + 16 ||
	    bmap_get(f->ds, f->w.txn, sc_get_be64(kp + CSIMAP_PREFIX),
		     sc_get_be64(kp + CSIMAP_PREFIX + 8), &h, NULL) ||
	    memcmp(h.b, kp, CSIMAP_PREFIX)) {
		problem(f, "CSI-Map entry without its block map entry");
		return f->repair ? drop_current(f, c) : 0;
	}
	return 0;
}

/* References to h: the CSI-Map entries with its prefix whose block maps
 * to h itself. */
static int refs_count(struct fsck *f, const struct sc_hash *h, uint64_t *n)
{
	uint8_t kb[CSIMAP_PREFIX + 16];
	MDB_val k = { sizeof(kb), kb }, v;
	MDB_cursor *cur;
	struct sc_hash got;
	int rc = idx_err(f->ds, mdb_cursor_open(f->w.txn, f->ds->db_csimap, &cur),
			 "cursor");

	*n = 0;
	if (rc)
		return rc;
	key_csimap(kb, h, 0, 0);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		const uint8_t *kp = k.mv_data;

		if (k.mv_size != sizeof(kb) || memcmp(kp, h->b, CSIMAP_PREFIX))
			break;
		if (!bmap_get(f->ds, f->w.txn, sc_get_be64(kp + CSIMAP_PREFIX),
			      sc_get_be64(kp + CSIMAP_PREFIX + 8), &got,
			      NULL) &&
		    sc_hash_eq(&got, h))
			(*n)++;
	}
	mdb_cursor_close(cur);
	return rc == 0 || rc == MDB_NOTFOUND ? 0 : idx_err(f->ds, rc, "CSI-Map");
}

static int chunk_entry_check(struct fsck *f, MDB_cursor *c, MDB_val *k,
			     MDB_val *v)
{
	struct chunk_rec cr;
	struct sc_hash h;
	char hex[2 * SC_HASH_LEN + 1];
	uint8_t *buf;
	uint64_t refs;
	int rc;

	f->rep->chunks++;
	if (k->mv_size != SC_HASH_LEN || v->mv_size != sizeof(cr)) {
		problem(f, "malformed chunk record");
		return f->repair ? drop_current(f, c) : 0;
	}
	memcpy(h.b, k->mv_data, SC_HASH_LEN);
	memcpy(&cr, v->mv_data, sizeof(cr));
	sc_hash_to_hex(&h, hex);
	if (cr.slot >= f->next_slot) {
		problem(f, "chunk %s in slot %llu beyond the allocation cursor %llu",
			hex, (unsigned long long)cr.slot,
			(unsigned long long)f->next_slot);
	} else if (f->slot_seen[cr.slot / 8] & (1u << cr.slot % 8)) {
		problem(f, "slot %llu holds more than one chunk (%s)",
			(unsigned long long)cr.slot, hex);
	} else {
		f->slot_seen[cr.slot / 8] |= (uint8_t)(1u << cr.slot % 8);
		buf = malloc(f->ds->bsize);
		if (!buf)
			return -ENOMEM;
		rc = slots_rw(f->ds, SLOT_READ, cr.slot, 1, (void **)&buf);
		if (!rc) {
			struct sc_hash got;

			rc = sc_hasher_digest(dstore_hasher(f->ds), buf,
					      f->ds->bsize, &got);
			if (!rc && (!sc_hash_eq(&got, &h) ||
				    chunk_checksum(buf, f->ds->bsize) != cr.check))
				rc = -EIO;
		}
		free(buf);
		if (rc)
			problem(f, "chunk %s in slot %llu: data unreadable or corrupt",
				hex, (unsigned long long)cr.slot);
	}
	rc = refs_count(f, &h, &refs);
	if (rc)
		return rc;
	if (refs == cr.refs && refs > 0)
		return 0;
	if (refs == cr.refs)
		problem(f, "chunk %s is stored but nothing references it", hex);
	else
		problem(f, "chunk %s has %llu references recorded, %llu found",
			hex, (unsigned long long)cr.refs,
			(unsigned long long)refs);
	if (!f->repair)
		return 0;
	repaired(f);
	if (refs == 0) {
		uint8_t kb[8];
		MDB_val kd = { sizeof(kb), kb }, vd = { 0, NULL };

		sc_put_be64(kb, cr.slot);
		mdb_put(f->w.txn, f->ds->db_dead, &kd, &vd, 0);
		return idx_err(f->ds, mdb_cursor_del(c, 0), "chunk index");
	}
	cr.refs = refs;
	*v = (MDB_val){ sizeof(cr), &cr };
	return idx_err(f->ds, mdb_cursor_put(c, k, v, MDB_CURRENT), "chunk index");
}

/* Per-inode mapped counts, then the totals. */
static int totals_check(struct fsck *f)
{
	struct counter_rec want = { 0 };
	MDB_stat st;
	int rc = 0;

	for (size_t i = 0; !rc && i < f->n_inos; i++) {
		struct ino_info *ii = &f->inos[i];

		if (ii->r.type != DSTORE_REG)
			continue;
		if (ii->r.blocks_mapped != ii->mapped) {
			problem(f, "inode %llu counts %llu mapped blocks, has %llu",
				(unsigned long long)ii->ino,
				(unsigned long long)ii->r.blocks_mapped,
				(unsigned long long)ii->mapped);
			ii->r.blocks_mapped = ii->mapped;
			if (f->repair) {
				repaired(f);
				rc = inode_put(&f->w, ii->ino, &ii->r, NULL);
			}
		}
		if (ii->links == 0)
			continue;	/* an orphan, gone when repaired */
		want.mapped_blocks += ii->mapped;
		want.files++;
		want.logical_bytes += ii->r.size;
		want.logical_blocks += blocks_of(f->ds, ii->r.size);
	}
	if (rc)
		return rc;
	mdb_stat(f->w.txn, f->ds->db_chunk, &st);
	want.chunks = st.ms_entries;
	mdb_stat(f->w.txn, f->ds->db_dead, &st);
	want.dead_slots = st.ms_entries;
	if (want.files != f->w.c.files ||
	    want.logical_bytes != f->w.c.logical_bytes ||
	    want.logical_blocks != f->w.c.logical_blocks ||
	    want.mapped_blocks != f->w.c.mapped_blocks ||
	    want.chunks != f->w.c.chunks ||
	    want.dead_slots != f->w.c.dead_slots) {
		problem(f, "store totals are off (files %llu/%llu, bytes %llu/%llu, mapped %llu/%llu, chunks %llu/%llu, dead %llu/%llu recorded/found)",
			(unsigned long long)f->w.c.files, (unsigned long long)want.files,
			(unsigned long long)f->w.c.logical_bytes,
			(unsigned long long)want.logical_bytes,
			(unsigned long long)f->w.c.mapped_blocks,
			(unsigned long long)want.mapped_blocks,
			(unsigned long long)f->w.c.chunks, (unsigned long long)want.chunks,
			(unsigned long long)f->w.c.dead_slots,
			(unsigned long long)want.dead_slots);
		if (f->repair) {
			repaired(f);
			f->w.c.files = want.files;
			f->w.c.logical_bytes = want.logical_bytes;
			f->w.c.logical_blocks = want.logical_blocks;
			f->w.c.mapped_blocks = want.mapped_blocks;
			f->w.c.chunks = want.chunks;
			f->w.c.dead_slots = want.dead_slots;
		}
	}
	return 0;
}

int dstore_fsck(struct dstore *ds, unsigned int flags,
		struct dstore_fsck_report *out)
{
	struct fsck f = { .ds = ds, .repair = flags & DSTORE_FSCK_REPAIR,
			  .rep = out };
	int rc;

	memset(out, 0, sizeof(*out));
	/* the writes held are checked too */
	rc = wb_flush(ds);
	if (!rc)
		rc = wtxn_begin(ds, &f.w);
	if (rc)
		return rc;
	f.next_slot = f.w.cur.next_slot;
	/* checks the applied state (written back only when repairing) */
	rc = pending_apply(&f.w);
	f.slot_seen = calloc(f.next_slot / 8 + 1, 1);
	if (!f.slot_seen && !rc)
		rc = -ENOMEM;
	if (!rc)
		rc = scan(&f, ds->db_inode, inode_collect);
	if (!rc && !ino_find(&f, DSTORE_ROOT_INO))
		problem(&f, "the root directory is missing");
	if (!rc)
		rc = scan(&f, ds->db_dirent, dirent_check);
	if (!rc)
		rc = scan(&f, ds->db_dircookie, dircookie_check);
	if (!rc)
		rc = scan(&f, ds->db_bmap, bmap_check);
	if (!rc)
		rc = scan(&f, ds->db_csimap, csimap_check);
	if (!rc)
		rc = scan(&f, ds->db_chunk, chunk_entry_check);
	if (!rc)
		rc = links_check(&f);
	if (!rc)
		rc = totals_check(&f);
	free(f.slot_seen);
	free(f.inos);
	if (rc || !f.repair || out->repaired == 0) {
		wtxn_abort(&f.w);	/* checking only: nothing written */
		return rc;
	}
	return wtxn_end(&f.w, 0);
}
