// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The namespace: inodes, directory entries with stable cookies, links,
 * rename with POSIX replacement rules, attributes.  Every call is one
 * index transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dstore_int.h"

#define DIRENT_KEY_MAX (8 + DSTORE_NAME_MAX)

struct dirent_val {
	uint64_t cookie;
	uint64_t ino;
};

static int name_check(const char *name, size_t *len)
{
	*len = strlen(name);
	if (*len == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EINVAL;
	if (*len > DSTORE_NAME_MAX)
		return -ENAMETOOLONG;
	return strchr(name, '/') ? -EINVAL : 0;
}

static int dirent_key(uint8_t *kb, uint64_t dir, const char *name,
		      MDB_val *k)
{
	size_t len;
	int rc = name_check(name, &len);

	if (rc)
		return rc;
	sc_put_be64(kb, dir);
	memcpy(kb + 8, name, len);
	k->mv_size = 8 + len;
	k->mv_data = kb;
	return 0;
}

static int dirent_get(struct dstore *ds, MDB_txn *txn, uint64_t dir,
		      const char *name, struct dirent_val *dv)
{
	uint8_t kb[DIRENT_KEY_MAX];
	MDB_val k, v;
	int rc = dirent_key(kb, dir, name, &k);

	if (rc)
		return rc;
	rc = mdb_get(txn, ds->db_dirent, &k, &v);
	if (rc)
		return idx_err(ds, rc, "directory entry");
	if (v.mv_size != sizeof(*dv))
		return -EUCLEAN;
	memcpy(dv, v.mv_data, sizeof(*dv));
	return 0;
}

/* Adds name -> ino to directory dir (its record in *dr, saved by caller). */
static int dirent_add(struct wtxn *w, uint64_t dir, struct inode_rec *dr,
		      const char *name, uint64_t ino)
{
	uint8_t kb[DIRENT_KEY_MAX], ck[16], cv[8 + DSTORE_NAME_MAX];
	struct dirent_val dv = { dr->next_cookie++, ino };
	MDB_val k, v = { sizeof(dv), &dv }, kc = { sizeof(ck), ck }, vc;
	int rc = dirent_key(kb, dir, name, &k);

	if (rc)
		return rc;
	rc = mdb_put(w->txn, w->ds->db_dirent, &k, &v, MDB_NOOVERWRITE);
	if (rc == MDB_KEYEXIST)
		return -EEXIST;
	if (rc)
		return idx_err(w->ds, rc, "directory entry");
	sc_put_be64(ck, dir);
	sc_put_be64(ck + 8, dv.cookie);
	memcpy(cv, &ino, 8);
	memcpy(cv + 8, name, k.mv_size - 8);
	vc.mv_size = k.mv_size;
	vc.mv_data = cv;
	inode_touch(dr, 1u << T_MTIME | 1u << T_CTIME);
	return idx_err(w->ds, mdb_put(w->txn, w->ds->db_dircookie, &kc, &vc, 0),
		       "directory cookie");
}

static int dirent_del(struct wtxn *w, uint64_t dir, struct inode_rec *dr,
		      const char *name)
{
	uint8_t kb[DIRENT_KEY_MAX], ck[16];
	struct dirent_val dv;
	MDB_val k, kc = { sizeof(ck), ck };
	int rc = dirent_get(w->ds, w->txn, dir, name, &dv);

	if (!rc)
		rc = dirent_key(kb, dir, name, &k);
	if (!rc)
		rc = idx_err(w->ds, mdb_del(w->txn, w->ds->db_dirent, &k, NULL),
			     "directory entry");
	if (rc)
		return rc;
	sc_put_be64(ck, dir);
	sc_put_be64(ck + 8, dv.cookie);
	inode_touch(dr, 1u << T_MTIME | 1u << T_CTIME);
	return idx_err(w->ds, mdb_del(w->txn, w->ds->db_dircookie, &kc, NULL),
		       "directory cookie");
}

static bool dir_empty(struct dstore *ds, MDB_txn *txn, uint64_t dir)
{
	MDB_cursor *cur;
	uint8_t kb[16];
	MDB_val k = { sizeof(kb), kb }, v;
	bool empty = true;

	if (mdb_cursor_open(txn, ds->db_dircookie, &cur))
		return false;
	sc_put_be64(kb, dir);
	sc_put_be64(kb + 8, 0);
	if (mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE) == 0 &&
	    k.mv_size == 16 && sc_get_be64(k.mv_data) == dir)
		empty = false;
	mdb_cursor_close(cur);
	return empty;
}

static int dir_get(struct dstore *ds, MDB_txn *txn, uint64_t dir,
		   struct inode_rec *dr)
{
	int rc = inode_get(ds, txn, dir, dr, NULL, 0);

	return rc ? rc : dr->type == DSTORE_DIR ? 0 : -ENOTDIR;
}

/* The writes held are looked up before the index: see writeback.c. */
int dstore_getattr(struct dstore *ds, uint64_t ino, struct dstore_attr *out)
{
	struct inode_rec r;
	struct wb_attr wa;
	MDB_txn *txn;
	int rc;

	wb_lookup(ds, ino, 0, 0, NULL, NULL, &wa);
	rc = rtxn_begin(ds, &txn);
	if (rc)
		return rc;
	rc = inode_get(ds, txn, ino, &r, NULL, 0);
	mdb_txn_abort(txn);
	if (!rc) {
		inode_to_attr(ino, &r, out);
		wb_attr_apply(&wa, out);
	}
	return rc;
}

int dstore_lookup(struct dstore *ds, uint64_t dir, const char *name,
		  struct dstore_attr *out)
{
	struct inode_rec r;
	struct dirent_val dv;
	MDB_txn *txn;
	int rc = rtxn_begin(ds, &txn);

	if (rc)
		return rc;
	rc = dir_get(ds, txn, dir, &r);
	if (!rc && strcmp(name, ".") == 0)
		dv.ino = dir;
	else if (!rc && strcmp(name, "..") == 0)
		dv.ino = dir == DSTORE_ROOT_INO ? dir : r.parent;
	else if (!rc)
		rc = dirent_get(ds, txn, dir, name, &dv);
	if (!rc)
		rc = inode_get(ds, txn, dv.ino, &r, NULL, 0);
	mdb_txn_abort(txn);
	if (!rc)
		inode_to_attr(dv.ino, &r, out);
	/* a file's attributes as its writes held make them */
	if (!rc && r.type == DSTORE_REG)
		rc = dstore_getattr(ds, dv.ino, out);
	return rc;
}

static int existing_attr(struct dstore *ds, MDB_txn *txn, uint64_t dir,
			 const char *name, struct dstore_attr *out)
{
	struct inode_rec r;
	struct dirent_val dv;
	int rc = dirent_get(ds, txn, dir, name, &dv);

	if (!rc)
		rc = inode_get(ds, txn, dv.ino, &r, NULL, 0);
	if (!rc && out)
		inode_to_attr(dv.ino, &r, out);
	return rc;
}

int dstore_create(struct dstore *ds, uint64_t dir, const char *name,
		  const struct dstore_new *n, struct dstore_attr *out)
{
	struct inode_rec dr, r = { 0 };
	struct wtxn w;
	uint64_t ino;
	int rc;

	if (n->type < DSTORE_REG || n->type > DSTORE_SOCK)
		return -EINVAL;
	if (n->type == DSTORE_SYMLINK &&
	    (!n->symlink || strlen(n->symlink) > DSTORE_SYMLINK_MAX))
		return n->symlink ? -ENAMETOOLONG : -EINVAL;
	rc = wtxn_begin(ds, &w);
	if (rc)
		return rc;
	rc = dir_get(ds, w.txn, dir, &dr);
	if (!rc && existing_attr(ds, w.txn, dir, name, out) == 0)
		rc = -EEXIST;
	if (rc)
		return wtxn_end(&w, rc);
	ino = w.cur.next_ino++;
	r.type = n->type;
	r.mode = n->mode & 07777;
	r.uid = n->uid;
	r.gid = n->gid;
	r.rdev = n->rdev;
	r.nlink = n->type == DSTORE_DIR ? 2 : 1;
	r.parent = n->type == DSTORE_DIR ? dir : 0;
	r.next_cookie = DSTORE_COOKIE_FIRST;
	if (n->type == DSTORE_SYMLINK)
		r.size = strlen(n->symlink);
	inode_touch(&r, 0xf);
	rc = dirent_add(&w, dir, &dr, name, ino);
	if (!rc && n->type == DSTORE_DIR)
		dr.nlink++;
	if (!rc)
		rc = inode_put(&w, dir, &dr, NULL);
	if (!rc)
		rc = inode_put(&w, ino, &r,
			       n->type == DSTORE_SYMLINK ? n->symlink : NULL);
	if (!rc && n->type == DSTORE_REG)
		w.c.files++;
	rc = wtxn_end(&w, rc);
	if (!rc && out)
		inode_to_attr(ino, &r, out);
	return rc;
}

int dstore_link(struct dstore *ds, uint64_t ino, uint64_t dir,
		const char *name)
{
	struct inode_rec dr, r;
	struct wtxn w;
	int rc = wtxn_begin(ds, &w);

	if (rc)
		return rc;
	rc = dir_get(ds, w.txn, dir, &dr);
	if (!rc)
		rc = inode_get(ds, w.txn, ino, &r, NULL, 0);
	if (!rc && r.type == DSTORE_DIR)
		rc = -EPERM;
	if (!rc && r.nlink == UINT32_MAX)
		rc = -EMLINK;
	if (!rc)
		rc = dirent_add(&w, dir, &dr, name, ino);
	if (!rc) {
		r.nlink++;
		inode_touch(&r, 1u << T_CTIME);
		rc = inode_put(&w, dir, &dr, NULL);
	}
	if (!rc)
		rc = inode_put(&w, ino, &r, NULL);
	return wtxn_end(&w, rc);
}

/* One link less on ino; the last one frees it and its blocks. */
static int inode_unlink(struct wtxn *w, uint64_t ino, struct inode_rec *r)
{
	uint8_t kb[8];
	MDB_val k = { sizeof(kb), kb };
	int rc;

	if (r->type == DSTORE_DIR)
		r->nlink = 0;
	else
		r->nlink--;
	if (r->nlink > 0) {
		inode_touch(r, 1u << T_CTIME);
		return inode_put(w, ino, r, NULL);
	}
	if (r->type == DSTORE_REG) {
		rc = blocks_drop_from(w, r, ino, 0);
		if (rc)
			return rc;
		size_account(w, r->size, 0);
		w->c.files--;
	}
	sc_put_be64(kb, ino);
	return idx_err(w->ds, mdb_del(w->txn, w->ds->db_inode, &k, NULL),
		       "inode");
}

/* Removes entry name (of object ino, record *r) from dir (record *dr). */
static int entry_remove(struct wtxn *w, uint64_t dir, struct inode_rec *dr,
			const char *name, uint64_t ino, struct inode_rec *r)
{
	int rc;

	if (r->type == DSTORE_DIR) {
		if (!dir_empty(w->ds, w->txn, ino))
			return -ENOTEMPTY;
		dr->nlink--;
	}
	rc = dirent_del(w, dir, dr, name);
	if (!rc)
		rc = inode_unlink(w, ino, r);
	return rc;
}

/*
 * Needs no write stripe: a write racing the removal applies its intent
 * after this transaction and finds the inode gone (-ESTALE).
 */
int dstore_remove(struct dstore *ds, uint64_t dir, const char *name)
{
	struct inode_rec dr, r;
	struct dirent_val dv;
	struct wtxn w;
	int rc = wtxn_begin(ds, &w);

	if (rc)
		return rc;
	rc = dir_get(ds, w.txn, dir, &dr);
	if (!rc)
		rc = dirent_get(ds, w.txn, dir, name, &dv);
	if (!rc)
		rc = inode_get(ds, w.txn, dv.ino, &r, NULL, 0);
	if (!rc)
		rc = entry_remove(&w, dir, &dr, name, dv.ino, &r);
	if (!rc)
		rc = inode_put(&w, dir, &dr, NULL);
	return wtxn_end(&w, rc);
}

/* Is a an ancestor of (or equal to) directory d? */
static int dir_is_ancestor(struct dstore *ds, MDB_txn *txn, uint64_t a,
			   uint64_t d, bool *yes)
{
	struct inode_rec r;
	int rc;

	for (int depth = 0; depth < 1 << 20; depth++) {
		if (d == a) {
			*yes = true;
			return 0;
		}
		if (d == DSTORE_ROOT_INO) {
			*yes = false;
			return 0;
		}
		rc = inode_get(ds, txn, d, &r, NULL, 0);
		if (rc)
			return rc;
		d = r.parent;
	}
	return -ELOOP;
}

/*
 * Rename, following POSIX: a directory replaces only an empty directory,
 * a non-directory only a non-directory; renaming to the same object is a
 * no-op; a directory cannot move below itself.
 */
int dstore_rename(struct dstore *ds, uint64_t olddir, const char *oldname,
		  uint64_t newdir, const char *newname)
{
	struct inode_rec odr, ndr, r, tr;
	struct inode_rec *ndrp;
	struct dirent_val sv, tv;
	struct wtxn w;
	bool below = false, replace;
	int rc = wtxn_begin(ds, &w);

	if (rc)
		return rc;
	rc = dir_get(ds, w.txn, olddir, &odr);
	if (!rc)
		rc = dir_get(ds, w.txn, newdir, &ndr);
	if (!rc)
		rc = dirent_get(ds, w.txn, olddir, oldname, &sv);
	if (!rc)
		rc = inode_get(ds, w.txn, sv.ino, &r, NULL, 0);
	if (rc)
		return wtxn_end(&w, rc);
	ndrp = newdir == olddir ? &odr : &ndr;
	rc = dirent_get(ds, w.txn, newdir, newname, &tv);
	replace = rc == 0;
	if (rc && rc != -ENOENT)
		return wtxn_end(&w, rc);
	rc = 0;
	if (replace && tv.ino == sv.ino)
		return wtxn_end(&w, 0);
	if (r.type == DSTORE_DIR && newdir != olddir) {
		rc = dir_is_ancestor(ds, w.txn, sv.ino, newdir, &below);
		if (!rc && below)
			rc = -EINVAL;
	}
	if (!rc && replace) {
		rc = inode_get(ds, w.txn, tv.ino, &tr, NULL, 0);
		if (!rc && r.type == DSTORE_DIR && tr.type != DSTORE_DIR)
			rc = -ENOTDIR;
		if (!rc && r.type != DSTORE_DIR && tr.type == DSTORE_DIR)
			rc = -EISDIR;
		if (!rc)
			rc = entry_remove(&w, newdir, ndrp, newname, tv.ino,
					  &tr);
	}
	if (!rc)
		rc = dirent_del(&w, olddir, &odr, oldname);
	if (!rc)
		rc = dirent_add(&w, newdir, ndrp, newname, sv.ino);
	if (!rc && r.type == DSTORE_DIR && newdir != olddir) {
		odr.nlink--;
		ndrp->nlink++;
		r.parent = newdir;
	}
	if (!rc) {
		inode_touch(&r, 1u << T_CTIME);
		rc = inode_put(&w, sv.ino, &r, NULL);
	}
	if (!rc)
		rc = inode_put(&w, olddir, &odr, NULL);
	if (!rc && newdir != olddir)
		rc = inode_put(&w, newdir, &ndr, NULL);
	return wtxn_end(&w, rc);
}

int dstore_readdir(struct dstore *ds, uint64_t dir, uint64_t cookie,
		   dstore_dirent_fn fn, void *ctx, bool *eof)
{
	struct inode_rec dr;
	MDB_cursor *cur;
	MDB_txn *txn;
	uint8_t kb[16];
	MDB_val k = { sizeof(kb), kb }, v;
	char name[DSTORE_NAME_MAX + 1];
	int rc = rtxn_begin(ds, &txn);

	*eof = false;
	if (rc)
		return rc;
	rc = dir_get(ds, txn, dir, &dr);
	if (!rc)
		rc = idx_err(ds, mdb_cursor_open(txn, ds->db_dircookie, &cur),
			     "cursor");
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	sc_put_be64(kb, dir);
	sc_put_be64(kb + 8, cookie + 1);
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t ino, c;
		size_t nl;

		if (k.mv_size != 16 || sc_get_be64(k.mv_data) != dir)
			break;
		if (v.mv_size < 9 || v.mv_size > 8 + DSTORE_NAME_MAX) {
			rc = -EUCLEAN;
			break;
		}
		c = sc_get_be64((const uint8_t *)k.mv_data + 8);
		memcpy(&ino, v.mv_data, 8);
		nl = v.mv_size - 8;
		memcpy(name, (const uint8_t *)v.mv_data + 8, nl);
		name[nl] = '\0';
		if (fn(ctx, name, ino, c))
			break;
	}
	if (rc == MDB_NOTFOUND || (rc == 0 && (k.mv_size != 16 ||
					       sc_get_be64(k.mv_data) != dir))) {
		*eof = true;
		rc = 0;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return idx_err(ds, rc, "readdir");
}

int dstore_readlink(struct dstore *ds, uint64_t ino, char *buf, size_t len)
{
	struct inode_rec r;
	MDB_txn *txn;
	int rc = rtxn_begin(ds, &txn);

	if (rc)
		return rc;
	rc = inode_get(ds, txn, ino, &r, buf, len);
	mdb_txn_abort(txn);
	if (rc)
		return rc;
	return r.type == DSTORE_SYMLINK ? (int)strlen(buf) : -EINVAL;
}

/* With DSTORE_SET_SIZE, the file's write stripe is held exclusively. */
int setattr_locked(struct dstore *ds, uint64_t ino,
		   const struct dstore_attr *a, uint32_t mask,
		   struct dstore_attr *out)
{
	struct inode_rec r;
	struct wtxn w;
	int rc = 0;

	/* the writes held first: times and size set here come after them */
	if (wb_holds(ds, ino))
		rc = wb_flush(ds);
	if (!rc)
		rc = wtxn_begin(ds, &w);
	if (rc)
		return rc;
	rc = inode_get(ds, w.txn, ino, &r, NULL, 0);
	if (!rc && (mask & DSTORE_SET_SIZE)) {
		if (r.type == DSTORE_DIR)
			rc = -EISDIR;
		else if (r.type != DSTORE_REG)
			rc = -EINVAL;
		else if (a->size > (uint64_t)INT64_MAX)
			rc = -EFBIG;
		else if (a->size != r.size)
			rc = truncate_locked(ds, ino, a->size, &w, &r);
		if (!rc)
			inode_touch(&r, 1u << T_MTIME);
	}
	if (!rc) {
		if (mask & DSTORE_SET_MODE)
			r.mode = a->mode & 07777;
		if (mask & DSTORE_SET_UID)
			r.uid = a->uid;
		if (mask & DSTORE_SET_GID)
			r.gid = a->gid;
		inode_touch(&r, 1u << T_CTIME);
		if (mask & DSTORE_SET_ATIME) {
			r.time_s[T_ATIME] = a->atime.tv_sec;
			r.time_ns[T_ATIME] = (uint32_t)a->atime.tv_nsec;
		}
		if (mask & DSTORE_SET_MTIME) {
			r.time_s[T_MTIME] = a->mtime.tv_sec;
			r.time_ns[T_MTIME] = (uint32_t)a->mtime.tv_nsec;
		}
		rc = inode_put(&w, ino, &r, NULL);
	}
	rc = wtxn_end(&w, rc);
	if (!rc && out)
		inode_to_attr(ino, &r, out);
	return rc;
}

int dstore_setattr(struct dstore *ds, uint64_t ino,
		   const struct dstore_attr *a, uint32_t mask,
		   struct dstore_attr *out)
{
	pthread_rwlock_t *stripe = write_stripe(ds, ino);
	int rc;

	/* the stripe before the index lock, the order writers use */
	if (mask & DSTORE_SET_SIZE)
		pthread_rwlock_wrlock(stripe);
	rc = setattr_locked(ds, ino, a, mask, out);
	if (mask & DSTORE_SET_SIZE)
		pthread_rwlock_unlock(stripe);
	return rc;
}
