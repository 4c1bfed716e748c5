// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * FSAL_DEDUP object handles: namespace, attributes and I/O on the store.
 *
 * There are no file descriptors: the store is addressed by inode number.
 * Share reservations and "open" state are kept as FSAL_MEM keeps them (a
 * struct fsal_fd holding only open flags, in the handle for the global
 * "fd" and after each state_t), under obj_handle->obj_lock; the open
 * flags are the client's own, as FSAL_VFS keeps them.
 *
 * Adapted from NFS-Ganesha FSAL_MEM, LGPL-3.0-or-later
 * (mem_handle.c, Copyright 2017-2021 Red Hat, Inc., Daniel Gryniewicz).
 */

#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fsal.h"
#include "fsal_convert.h"
#include "FSAL/fsal_commonlib.h"
#include "FSAL/access_check.h"
#include "dedup_int.h"

/* ---------------------------------------------------------------------
 * Conversions
 */

static object_file_type_t fsal_type_of(uint32_t t)
{
	switch (t) {
	case DSTORE_REG:
		return REGULAR_FILE;
	case DSTORE_DIR:
		return DIRECTORY;
	case DSTORE_SYMLINK:
		return SYMBOLIC_LINK;
	case DSTORE_CHR:
		return CHARACTER_FILE;
	case DSTORE_BLK:
		return BLOCK_FILE;
	case DSTORE_FIFO:
		return FIFO_FILE;
	case DSTORE_SOCK:
		return SOCKET_FILE;
	default:
		return NO_FILE_TYPE;
	}
}

void dedup_attr_to_fsal(const struct dedup_store *st,
			const struct dstore_attr *a,
			struct fsal_attrlist *out)
{
	out->supported = DEDUP.fsal.fs_info.supported_attrs;
	out->valid_mask = DEDUP.fsal.fs_info.supported_attrs;
	out->type = fsal_type_of(a->type);
	out->filesize = a->size;
	out->fsid = st->fsid;
	out->fileid = a->ino;
	out->mode = a->mode & 07777;
	out->numlinks = a->nlink;
	out->owner = a->uid;
	out->group = a->gid;
	out->rawdev.major = major(a->rdev);
	out->rawdev.minor = minor(a->rdev);
	out->atime = a->atime;
	out->mtime = a->mtime;
	out->ctime = a->ctime;
	out->creation = a->btime;
	out->change = a->change;
	out->spaceused = a->blocks_mapped * st->block_size;
}

static void fill_attrs_out(const struct dedup_store *st,
			   const struct dstore_attr *a,
			   struct fsal_attrlist *attrs_out)
{
	if (attrs_out != NULL)
		dedup_attr_to_fsal(st, a, attrs_out);
}

static void attrs_error(struct fsal_attrlist *attrs)
{
	if (attrs != NULL && (attrs->request_mask & ATTR_RDATTR_ERR))
		attrs->valid_mask = ATTR_RDATTR_ERR;
}

void dedup_wire_encode(uint8_t *p, uint64_t store_id, uint64_t ino)
{
	int i;

	p[0] = DEDUP_WIRE_VERSION;
	for (i = 0; i < 8; i++) {
		p[1 + i] = (uint8_t)(store_id >> (8 * i));
		p[9 + i] = (uint8_t)(ino >> (8 * i));
	}
}

struct dedup_fsal_obj_handle *dedup_alloc_handle(struct dedup_fsal_export *exp,
						 struct dedup_store *st,
						 const struct dstore_attr *a)
{
	struct dedup_fsal_obj_handle *h = gsh_calloc(1, sizeof(*h));

	h->ino = a->ino;
	h->store = st;
	dedup_store_ref(st);
	dedup_wire_encode(h->key, st->tag, a->ino);
	h->fd.openflags = FSAL_O_CLOSED;

	fsal_obj_handle_init(&h->obj_handle, &exp->export, fsal_type_of(a->type));
	h->obj_handle.fileid = a->ino;
	h->obj_handle.fsid = st->fsid;
	h->obj_handle.obj_ops = &DEDUP.handle_ops;
	return h;
}

static struct dedup_fsal_export *cur_export(void)
{
	return dedup_export_of(op_ctx->fsal_export);
}

/* A new handle on the store of 'like' (a handle of the same store). */
static struct fsal_obj_handle *new_handle(struct dedup_fsal_obj_handle *like,
					  const struct dstore_attr *a)
{
	return &dedup_alloc_handle(cur_export(), like->store, a)->obj_handle;
}

/* ---------------------------------------------------------------------
 * Permission checks the store cannot make (it has no credentials):
 * Ganesha checks lookup, readdir, link, setattr and open itself; creating,
 * removing and renaming need write and search permission on the
 * directory, and the sticky bit restricts removal to owners.
 */

static fsal_status_t check_dir_write(struct fsal_obj_handle *dir)
{
	return dir->obj_ops->test_access(
		dir,
		FSAL_MODE_MASK_SET(FSAL_W_OK | FSAL_X_OK) |
		FSAL_ACE4_MASK_SET(FSAL_ACE_PERM_ADD_FILE |
				   FSAL_ACE_PERM_DELETE_CHILD),
		NULL, NULL, false);
}

static fsal_status_t check_sticky(struct dedup_store *st, uint64_t dir,
				  uint32_t obj_uid)
{
	struct dstore_attr d;
	uid_t uid = op_ctx->creds.caller_uid;
	int rc;

	if (uid == 0 || uid == obj_uid)
		return fsalstat(ERR_FSAL_NO_ERROR, 0);
	rc = dstore_getattr(st->ds, dir, &d);
	if (rc < 0)
		return dedup_status_obj(rc);
	if ((d.mode & S_ISVTX) == 0 || d.uid == uid)
		return fsalstat(ERR_FSAL_NO_ERROR, 0);
	return fsalstat(posix2fsal_error(EPERM), EPERM);
}

/* ---------------------------------------------------------------------
 * Attribute changes
 */

/* Applies the attributes of s selected by mask (s may be NULL when mask
 * holds only times set to the server's); out gets the result. */
static int apply_attrs(struct dedup_store *st, uint64_t ino,
		       object_file_type_t type, const struct fsal_attrlist *s,
		       attrmask_t mask, struct dstore_attr *out)
{
	struct dstore_attr a;
	struct timespec ts;
	uint32_t m = 0;

	memset(&a, 0, sizeof(a));
	if (mask & ATTR_SIZE) {
		a.size = s->filesize;
		m |= DSTORE_SET_SIZE;
	}
	/* The mode of a symlink means nothing (POSIX chmod follows it). */
	if ((mask & ATTR_MODE) && type != SYMBOLIC_LINK) {
		a.mode = s->mode & 07777 &
			 ~op_ctx->fsal_export->exp_ops.fs_umask(
					op_ctx->fsal_export);
		m |= DSTORE_SET_MODE;
	}
	if (mask & ATTR_OWNER) {
		a.uid = (uint32_t)s->owner;
		m |= DSTORE_SET_UID;
	}
	if (mask & ATTR_GROUP) {
		a.gid = (uint32_t)s->group;
		m |= DSTORE_SET_GID;
	}
	/*
	 * A new owner or group drops set-user-ID, and set-group-ID where the
	 * group may execute, as chown(2) does on Linux (and so FSAL_VFS):
	 * after the mode of the same SETATTR, as FSAL_VFS applies them.
	 */
	if ((mask & (ATTR_OWNER | ATTR_GROUP)) && type != DIRECTORY &&
	    type != SYMBOLIC_LINK) {
		uint32_t drop;

		if (!(m & DSTORE_SET_MODE)) {
			struct dstore_attr cur;
			int rc = dstore_getattr(st->ds, ino, &cur);

			if (rc < 0)
				return rc;
			a.mode = cur.mode & 07777;
		}
		drop = S_ISUID | ((a.mode & S_IXGRP) ? S_ISGID : 0);
		if (a.mode & drop) {
			a.mode &= ~drop;
			m |= DSTORE_SET_MODE;
		}
	}
	if (mask & ATTRS_SET_TIME) {
		now(&ts);
		if (mask & ATTR_ATIME_SERVER) {
			a.atime = ts;
			m |= DSTORE_SET_ATIME;
		} else if (mask & ATTR_ATIME) {
			a.atime = s->atime;
			m |= DSTORE_SET_ATIME;
		}
		if (mask & ATTR_MTIME_SERVER) {
			a.mtime = ts;
			m |= DSTORE_SET_MTIME;
		} else if (mask & ATTR_MTIME) {
			a.mtime = s->mtime;
			m |= DSTORE_SET_MTIME;
		}
	}
	if (m == 0)
		return out != NULL ? dstore_getattr(st->ds, ino, out) : 0;
	return dstore_setattr(st->ds, ino, &a, m, out);
}

static int truncate_to_zero(struct dedup_fsal_obj_handle *h,
			    struct dstore_attr *out)
{
	struct dstore_attr a;

	memset(&a, 0, sizeof(a));
	return dstore_setattr(h->store->ds, h->ino, &a, DSTORE_SET_SIZE, out);
}

/* ---------------------------------------------------------------------
 * "File descriptors": open flags only, as in FSAL_MEM
 *
 * An fd's open flags are exactly the access and deny the client asked
 * for, as FSAL_VFS keeps them, and the share counters are taken and
 * released with those same flags.  (FSAL_MEM adds READ to a write-only
 * open; counted with the share reservations, that READ was never asked
 * for, and released it wrapped the counter.)  A READ under a write-only
 * open then uses the global fd and its share check, as on FSAL_VFS.
 */

static fsal_status_t dedup_open_my_fd(struct fsal_fd *fd,
				      fsal_openflags_t openflags)
{
	fd->openflags = FSAL_O_NFS_FLAGS(openflags);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static fsal_status_t dedup_close_my_fd(struct fsal_fd *fd)
{
	if (fd->openflags == FSAL_O_CLOSED)
		return fsalstat(ERR_FSAL_NOT_OPENED, 0);
	fd->openflags = FSAL_O_CLOSED;
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static fsal_status_t dedup_open_func(struct fsal_obj_handle *obj_hdl,
				     fsal_openflags_t openflags,
				     struct fsal_fd *fd)
{
	(void)obj_hdl;
	return dedup_open_my_fd(fd, openflags);
}

static fsal_status_t dedup_close_func(struct fsal_obj_handle *obj_hdl,
				      struct fsal_fd *fd)
{
	(void)obj_hdl;
	return dedup_close_my_fd(fd);
}

/* ---------------------------------------------------------------------
 * Lifecycle
 */

static void dedup_release(struct fsal_obj_handle *obj_hdl)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);

	fsal_obj_handle_fini(obj_hdl);
	dedup_store_put(h->store);
	gsh_free(h);
}

static fsal_status_t dedup_merge(struct fsal_obj_handle *old_hdl,
				 struct fsal_obj_handle *new_hdl)
{
	if (old_hdl == new_hdl)
		return fsalstat(ERR_FSAL_NO_ERROR, 0);
	if (old_hdl->type == REGULAR_FILE && new_hdl->type == REGULAR_FILE) {
		/* This can block over an I/O operation. */
		return merge_share(old_hdl, &dedup_hdl(old_hdl)->share,
				   &dedup_hdl(new_hdl)->share);
	}
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

/* ---------------------------------------------------------------------
 * Namespace
 */

static fsal_status_t dedup_lookup(struct fsal_obj_handle *parent,
				  const char *path,
				  struct fsal_obj_handle **handle,
				  struct fsal_attrlist *attrs_out)
{
	struct dedup_fsal_obj_handle *dir = dedup_hdl(parent);
	struct dstore_attr a;
	int rc;

	*handle = NULL;
	if (parent->type != DIRECTORY)
		return fsalstat(ERR_FSAL_NOTDIR, 0);
	if (strlen(path) > DSTORE_NAME_MAX)
		return fsalstat(ERR_FSAL_NAMETOOLONG, 0);

	if (strcmp(path, ".") == 0 ||
	    (strcmp(path, "..") == 0 && dir->ino == DSTORE_ROOT_INO))
		rc = dstore_getattr(dir->store->ds, dir->ino, &a);
	else
		rc = dstore_lookup(dir->store->ds, dir->ino, path, &a);
	if (rc < 0)
		return dedup_status(rc);

	*handle = new_handle(dir, &a);
	fill_attrs_out(dir->store, &a, attrs_out);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

#define READDIR_BATCH 64

struct rd_entry {
	uint64_t ino;
	uint64_t cookie;
	char name[DSTORE_NAME_MAX + 1];
};

struct rd_batch {
	unsigned int n;
	struct rd_entry e[READDIR_BATCH];
};

static int rd_collect(void *ctx, const char *name, uint64_t ino,
		      uint64_t cookie)
{
	struct rd_batch *b = ctx;
	struct rd_entry *e;
	size_t len;

	if (b->n == READDIR_BATCH)
		return 1;
	e = &b->e[b->n++];
	len = strnlen(name, DSTORE_NAME_MAX);

	e->ino = ino;
	e->cookie = cookie;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	return 0;
}

/*
 * The cookie handed to Ganesha with an entry is the store's cookie of that
 * entry, which is where reading resumes after it (as FSAL_VFS hands d_off).
 * Entries are collected in batches so Ganesha's callback never runs inside
 * a store transaction.
 */
static fsal_status_t dedup_readdir(struct fsal_obj_handle *dir_hdl,
				   fsal_cookie_t *whence,
				   void *dir_state,
				   fsal_readdir_cb cb,
				   attrmask_t attrmask,
				   bool *eof)
{
	struct dedup_fsal_obj_handle *dir = dedup_hdl(dir_hdl);
	struct dedup_store *st = dir->store;
	uint64_t cookie = whence != NULL ? *whence : 0;
	fsal_status_t status = fsalstat(ERR_FSAL_NO_ERROR, 0);
	struct rd_batch *b;
	bool store_eof;
	unsigned int i;
	int rc;

	*eof = false;
	if (dir_hdl->type != DIRECTORY)
		return fsalstat(ERR_FSAL_NOTDIR, 0);
	if (cookie < DSTORE_COOKIE_FIRST)
		cookie = 0;

	b = gsh_malloc(sizeof(*b));
	for (;;) {
		b->n = 0;
		store_eof = false;
		rc = dstore_readdir(st->ds, dir->ino, cookie, rd_collect, b,
				    &store_eof);
		if (rc < 0) {
			status = dedup_status_obj(rc);
			goto out;
		}
		for (i = 0; i < b->n; i++) {
			struct rd_entry *e = &b->e[i];
			struct fsal_attrlist attrs;
			struct dstore_attr a;
			enum fsal_dir_result cb_rc;

			cookie = e->cookie;
			rc = dstore_getattr(st->ds, e->ino, &a);
			if (rc == -ENOENT)
				continue;	/* removed meanwhile */
			if (rc < 0) {
				status = dedup_status(rc);
				goto out;
			}
			fsal_prepare_attrs(&attrs, attrmask);
			dedup_attr_to_fsal(st, &a, &attrs);
			cb_rc = cb(e->name, new_handle(dir, &a), &attrs,
				   dir_state, e->cookie);
			fsal_release_attrs(&attrs);
			if (cb_rc >= DIR_READAHEAD)
				goto out;	/* *eof stays false */
		}
		if (store_eof || b->n == 0) {
			*eof = true;
			break;
		}
	}
out:
	gsh_free(b);
	return status;
}

/*
 * Creates name in dir.  Mode, owner and group go to dstore_create (owner
 * and group default to the caller's, the group to the directory's when it
 * is set-group-ID); the rest of attrs_in (size, times) is applied after,
 * only to an object this call created.  *existed: name was there (a then
 * holds that object's attributes).
 */
static fsal_status_t create_obj(struct fsal_obj_handle *dir_hdl,
				const char *name, uint32_t dtype,
				const struct fsal_attrlist *attrs_in,
				uint64_t rdev, const char *target,
				struct dstore_attr *a, bool *existed)
{
	struct dedup_fsal_obj_handle *dir = dedup_hdl(dir_hdl);
	struct dedup_store *st = dir->store;
	attrmask_t mask = attrs_in != NULL ? attrs_in->valid_mask : 0;
	struct dstore_attr d;
	struct dstore_new n;
	fsal_status_t status;
	int rc;

	*existed = false;
	if (dir_hdl->type != DIRECTORY)
		return fsalstat(ERR_FSAL_NOTDIR, 0);
	if (strlen(name) > DSTORE_NAME_MAX)
		return fsalstat(ERR_FSAL_NAMETOOLONG, 0);
	status = check_dir_write(dir_hdl);
	if (FSAL_IS_ERROR(status))
		return status;
	rc = dstore_getattr(st->ds, dir->ino, &d);
	if (rc < 0)
		return dedup_status_obj(rc);

	memset(&n, 0, sizeof(n));
	n.type = dtype;
	if (dtype == DSTORE_SYMLINK)
		n.mode = 0777;
	else if (mask & ATTR_MODE)
		n.mode = attrs_in->mode & 07777 &
			 ~op_ctx->fsal_export->exp_ops.fs_umask(
					op_ctx->fsal_export);
	else
		n.mode = 0600;
	n.uid = (mask & ATTR_OWNER) ? (uint32_t)attrs_in->owner
				    : op_ctx->creds.caller_uid;
	if (mask & ATTR_GROUP)
		n.gid = (uint32_t)attrs_in->group;
	else if (d.mode & S_ISGID)
		n.gid = d.gid;
	else
		n.gid = op_ctx->creds.caller_gid;
	if (dtype == DSTORE_DIR && (d.mode & S_ISGID))
		n.mode |= S_ISGID;
	n.rdev = rdev;
	n.symlink = target;

	rc = dstore_create(st->ds, dir->ino, name, &n, a);
	if (rc == -EEXIST) {
		*existed = true;
		return fsalstat(ERR_FSAL_EXIST, EEXIST);
	}
	if (rc < 0)
		return dedup_status(rc);

	mask &= ~(ATTR_MODE | ATTR_OWNER | ATTR_GROUP);
	if (dtype != DSTORE_REG)
		mask &= ~ATTR_SIZE;
	if (mask & (ATTR_SIZE | ATTRS_SET_TIME)) {
		rc = apply_attrs(st, a->ino, fsal_type_of(dtype), attrs_in,
				 mask, a);
		if (rc < 0) {
			(void)dstore_remove(st->ds, dir->ino, name);
			return dedup_status(rc);
		}
	}
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static fsal_status_t create_common(struct fsal_obj_handle *dir_hdl,
				   const char *name, uint32_t dtype,
				   struct fsal_attrlist *attrs_in,
				   uint64_t rdev, const char *target,
				   struct fsal_obj_handle **new_obj,
				   struct fsal_attrlist *attrs_out)
{
	struct dedup_fsal_obj_handle *dir = dedup_hdl(dir_hdl);
	struct dstore_attr a;
	fsal_status_t status;
	bool existed;

	*new_obj = NULL;
	status = create_obj(dir_hdl, name, dtype, attrs_in, rdev, target, &a,
			    &existed);
	if (FSAL_IS_ERROR(status))
		return status;
	*new_obj = new_handle(dir, &a);
	fill_attrs_out(dir->store, &a, attrs_out);
	return status;
}

static fsal_status_t dedup_mkdir(struct fsal_obj_handle *dir_hdl,
				 const char *name,
				 struct fsal_attrlist *attrs_in,
				 struct fsal_obj_handle **new_obj,
				 struct fsal_attrlist *attrs_out)
{
	return create_common(dir_hdl, name, DSTORE_DIR, attrs_in, 0, NULL,
			     new_obj, attrs_out);
}

static fsal_status_t dedup_mknode(struct fsal_obj_handle *dir_hdl,
				  const char *name,
				  object_file_type_t nodetype,
				  struct fsal_attrlist *attrs_in,
				  struct fsal_obj_handle **new_obj,
				  struct fsal_attrlist *attrs_out)
{
	uint32_t dtype;
	uint64_t rdev = 0;

	switch (nodetype) {
	case CHARACTER_FILE:
		dtype = DSTORE_CHR;
		break;
	case BLOCK_FILE:
		dtype = DSTORE_BLK;
		break;
	case FIFO_FILE:
		dtype = DSTORE_FIFO;
		break;
	case SOCKET_FILE:
		dtype = DSTORE_SOCK;
		break;
	default:
		*new_obj = NULL;
		return fsalstat(ERR_FSAL_INVAL, 0);
	}
	if ((dtype == DSTORE_CHR || dtype == DSTORE_BLK) &&
	    (attrs_in->valid_mask & ATTR_RAWDEV))
		rdev = makedev(attrs_in->rawdev.major, attrs_in->rawdev.minor);
	return create_common(dir_hdl, name, dtype, attrs_in, rdev, NULL,
			     new_obj, attrs_out);
}

static fsal_status_t dedup_symlink(struct fsal_obj_handle *dir_hdl,
				   const char *name, const char *link_path,
				   struct fsal_attrlist *attrs_in,
				   struct fsal_obj_handle **new_obj,
				   struct fsal_attrlist *attrs_out)
{
	if (strlen(link_path) > DSTORE_SYMLINK_MAX) {
		*new_obj = NULL;
		return fsalstat(ERR_FSAL_NAMETOOLONG, 0);
	}
	return create_common(dir_hdl, name, DSTORE_SYMLINK, attrs_in, 0,
			     link_path, new_obj, attrs_out);
}

static fsal_status_t dedup_readlink(struct fsal_obj_handle *obj_hdl,
				    struct gsh_buffdesc *link_content,
				    bool refresh)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	char *buf;
	int rc;

	(void)refresh;
	if (obj_hdl->type != SYMBOLIC_LINK)
		return fsalstat(ERR_FSAL_INVAL, 0);
	buf = gsh_malloc(DSTORE_SYMLINK_MAX + 1);
	rc = dstore_readlink(h->store->ds, h->ino, buf, DSTORE_SYMLINK_MAX + 1);
	if (rc < 0) {
		gsh_free(buf);
		return dedup_status_obj(rc);
	}
	link_content->addr = buf;
	link_content->len = (size_t)rc + 1;	/* with the NUL, as VFS */
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static fsal_status_t dedup_getattrs(struct fsal_obj_handle *obj_hdl,
				    struct fsal_attrlist *attrs)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	struct dstore_attr a;
	int rc;

	rc = dstore_getattr(h->store->ds, h->ino, &a);
	if (rc < 0) {
		attrs_error(attrs);
		return dedup_status_obj(rc);
	}
	dedup_attr_to_fsal(h->store, &a, attrs);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static fsal_status_t dedup_setattr2(struct fsal_obj_handle *obj_hdl,
				    bool bypass,
				    struct state_t *state,
				    struct fsal_attrlist *attrs_set)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	attrmask_t mask = attrs_set->valid_mask;
	struct fsal_fd tmp_fd = { 0 }, *fdp = &tmp_fd;
	bool has_lock = false, closefd = false, reusing = false;
	fsal_status_t status;
	int rc;

	/* The creation time is the store's to keep. */
	mask &= ~ATTR_CREATION;

	if (mask & ATTR_SIZE) {
		if (obj_hdl->type != REGULAR_FILE)
			return fsalstat(ERR_FSAL_INVAL, EINVAL);
		/* Truncation must respect share reservations (deny write). */
		status = fsal_find_fd(&fdp, obj_hdl, &h->fd, &h->share, bypass,
				      state, FSAL_O_WRITE, dedup_open_func,
				      dedup_close_func, &has_lock, &closefd,
				      false, &reusing);
		if (FSAL_IS_ERROR(status))
			return status;
	}

	rc = apply_attrs(h->store, h->ino, obj_hdl->type, attrs_set, mask,
			 NULL);

	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return dedup_status_obj(rc);
}

static fsal_status_t dedup_link(struct fsal_obj_handle *obj_hdl,
				struct fsal_obj_handle *dir_hdl,
				const char *name)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	struct dedup_fsal_obj_handle *dir = dedup_hdl(dir_hdl);

	/* Ganesha checked write access to dir_hdl (fsal_link). */
	if (dir_hdl->type != DIRECTORY)
		return fsalstat(ERR_FSAL_NOTDIR, 0);
	if (strlen(name) > DSTORE_NAME_MAX)
		return fsalstat(ERR_FSAL_NAMETOOLONG, 0);
	return dedup_status(dstore_link(h->store->ds, h->ino, dir->ino, name));
}

static fsal_status_t dedup_rename(struct fsal_obj_handle *obj_hdl,
				  struct fsal_obj_handle *olddir_hdl,
				  const char *old_name,
				  struct fsal_obj_handle *newdir_hdl,
				  const char *new_name)
{
	struct dedup_fsal_obj_handle *olddir = dedup_hdl(olddir_hdl);
	struct dedup_fsal_obj_handle *newdir = dedup_hdl(newdir_hdl);
	struct dedup_store *st = olddir->store;
	struct dstore_attr src, dst;
	fsal_status_t status;
	int rc;

	if (strlen(new_name) > DSTORE_NAME_MAX)
		return fsalstat(ERR_FSAL_NAMETOOLONG, 0);
	if (newdir->store != st)
		return fsalstat(ERR_FSAL_XDEV, EXDEV);

	status = check_dir_write(olddir_hdl);
	if (FSAL_IS_ERROR(status))
		return status;
	if (newdir_hdl != olddir_hdl) {
		status = check_dir_write(newdir_hdl);
		if (FSAL_IS_ERROR(status))
			return status;
	}
	rc = dstore_lookup(st->ds, olddir->ino, old_name, &src);
	if (rc < 0)
		return dedup_status(rc);
	status = check_sticky(st, olddir->ino, src.uid);
	if (FSAL_IS_ERROR(status))
		return status;
	rc = dstore_lookup(st->ds, newdir->ino, new_name, &dst);
	if (rc == 0 && dst.ino != src.ino) {
		status = check_sticky(st, newdir->ino, dst.uid);
		if (FSAL_IS_ERROR(status))
			return status;
	}
	(void)obj_hdl;
	return dedup_status(dstore_rename(st->ds, olddir->ino, old_name,
					  newdir->ino, new_name));
}

static fsal_status_t dedup_unlink(struct fsal_obj_handle *dir_hdl,
				  struct fsal_obj_handle *obj_hdl,
				  const char *name)
{
	struct dedup_fsal_obj_handle *dir = dedup_hdl(dir_hdl);
	struct dstore_attr a;
	fsal_status_t status;
	int rc;

	(void)obj_hdl;
	status = check_dir_write(dir_hdl);
	if (FSAL_IS_ERROR(status))
		return status;
	rc = dstore_lookup(dir->store->ds, dir->ino, name, &a);
	if (rc < 0)
		return dedup_status(rc);
	status = check_sticky(dir->store, dir->ino, a.uid);
	if (FSAL_IS_ERROR(status))
		return status;
	return dedup_status(dstore_remove(dir->store->ds, dir->ino, name));
}

/* ---------------------------------------------------------------------
 * Open, share reservations, I/O (FSAL_MEM's scheme)
 */

static fsal_status_t dedup_close(struct fsal_obj_handle *obj_hdl)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	fsal_status_t status;

	if (obj_hdl->type != REGULAR_FILE)
		return fsalstat(ERR_FSAL_NOT_OPENED, 0);
	PTHREAD_RWLOCK_wrlock(&obj_hdl->obj_lock);
	status = dedup_close_my_fd(&h->fd);
	PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return status;
}

/* Write permission before truncating an existing file on open: Ganesha
 * checks open permission only after open2 returns. */
static fsal_status_t check_trunc_access(struct fsal_obj_handle *obj_hdl,
					enum fsal_create_mode createmode)
{
	return obj_hdl->obj_ops->test_access(
		obj_hdl,
		FSAL_MODE_MASK_SET(FSAL_W_OK) |
		FSAL_ACE4_MASK_SET(FSAL_ACE_PERM_WRITE_DATA),
		NULL, NULL, createmode >= FSAL_EXCLUSIVE);
}

static fsal_status_t open2_by_handle(struct fsal_obj_handle *obj_hdl,
				     struct state_t *state,
				     fsal_openflags_t openflags,
				     enum fsal_create_mode createmode,
				     fsal_verifier_t verifier,
				     struct fsal_attrlist *attrs_out,
				     bool *caller_perm_check)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	struct fsal_fd *my_fd = NULL;
	fsal_status_t status = { 0, 0 };
	struct dstore_attr a;
	bool have_attrs = false;
	int rc;

	if (state != NULL)
		my_fd = (struct fsal_fd *)(state + 1);

	if (openflags & FSAL_O_TRUNC) {
		status = check_trunc_access(obj_hdl, createmode);
		if (FSAL_IS_ERROR(status))
			return status;
	}

	/* Need a lock to protect the FD */
	PTHREAD_RWLOCK_wrlock(&obj_hdl->obj_lock);

	if (state != NULL) {
		/* Take the share reservation (a stateless NFSv3 create has
		 * no state and uses the global fd instead). */
		status = check_share_conflict(&h->share, openflags, false);
		if (FSAL_IS_ERROR(status)) {
			PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
			return status;
		}
		update_share_counters(&h->share, FSAL_O_CLOSED, openflags);
	} else {
		my_fd = &h->fd;
	}

	dedup_open_my_fd(my_fd, openflags);

	if (openflags & FSAL_O_TRUNC) {
		rc = truncate_to_zero(h, &a);
		status = dedup_status_obj(rc);
		have_attrs = rc == 0;
	}

	/* Check the verifier for exclusive, but not for FSAL_EXCLUSIVE_9P. */
	if (!FSAL_IS_ERROR(status) && createmode >= FSAL_EXCLUSIVE &&
	    createmode != FSAL_EXCLUSIVE_9P) {
		struct fsal_attrlist attrs;

		rc = have_attrs ? 0 : dstore_getattr(h->store->ds, h->ino, &a);
		if (rc < 0) {
			status = dedup_status_obj(rc);
		} else {
			have_attrs = true;
			fsal_prepare_attrs(&attrs, ATTR_ATIME | ATTR_MTIME);
			dedup_attr_to_fsal(h->store, &a, &attrs);
			if (!check_verifier_attrlist(&attrs, verifier, false))
				status = fsalstat(posix2fsal_error(EEXIST),
						  EEXIST);
			fsal_release_attrs(&attrs);
		}
	}

	if (!FSAL_IS_ERROR(status)) {
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
		/* No permission check was made: the caller must. */
		*caller_perm_check = true;
		if (attrs_out != NULL) {
			rc = have_attrs ? 0
					: dstore_getattr(h->store->ds, h->ino,
							 &a);
			if (rc == 0)
				dedup_attr_to_fsal(h->store, &a, attrs_out);
			else
				attrs_error(attrs_out);
		}
		return status;
	}

	(void)dedup_close_my_fd(my_fd);
	if (state != NULL) {
		/* Undo the share reservation. */
		update_share_counters(&h->share, openflags, FSAL_O_CLOSED);
	}
	PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return status;
}

static fsal_status_t dedup_open2(struct fsal_obj_handle *obj_hdl,
				 struct state_t *state,
				 fsal_openflags_t openflags,
				 enum fsal_create_mode createmode,
				 const char *name,
				 struct fsal_attrlist *attrs_set,
				 fsal_verifier_t verifier,
				 struct fsal_obj_handle **new_obj,
				 struct fsal_attrlist *attrs_out,
				 bool *caller_perm_check)
{
	struct dedup_fsal_obj_handle *dir = dedup_hdl(obj_hdl);
	struct dedup_fsal_obj_handle *hdl;
	struct fsal_fd *my_fd = NULL;
	struct fsal_attrlist verifier_attr;
	fsal_status_t status;
	struct dstore_attr a;
	bool created = false, existed = false;
	int rc;

	if (attrs_set != NULL)
		LogAttrlist(COMPONENT_FSAL, NIV_FULL_DEBUG, "attrs_set ",
			    attrs_set, false);

	/* Exclusive create: the verifier goes into atime and mtime. */
	if (createmode >= FSAL_EXCLUSIVE) {
		if (attrs_set == NULL) {
			memset(&verifier_attr, 0, sizeof(verifier_attr));
			attrs_set = &verifier_attr;
		}
		set_common_verifier(attrs_set, verifier, false);
	}

	if (name == NULL)
		return open2_by_handle(obj_hdl, state, openflags, createmode,
				       verifier, attrs_out, caller_perm_check);

	/*
	 * Open by name.  There is no object handle yet, so share
	 * reservations cannot conflict; a race with another open by name is
	 * resolved when the handles are merged.
	 */
	if (state != NULL)
		my_fd = (struct fsal_fd *)(state + 1);

	if (obj_hdl->type != DIRECTORY)
		return fsalstat(ERR_FSAL_NOTDIR, 0);
	if (strlen(name) > DSTORE_NAME_MAX)
		return fsalstat(ERR_FSAL_NAMETOOLONG, 0);
	rc = dstore_lookup(dir->store->ds, dir->ino, name, &a);
	if (rc == 0) {
		/* GUARDED and EXCLUSIVE fail; Ganesha checks the verifier. */
		if (createmode >= FSAL_GUARDED)
			return fsalstat(ERR_FSAL_EXIST, EEXIST);
	} else if (rc != -ENOENT || createmode == FSAL_NO_CREATE) {
		return dedup_status(rc);
	} else {
		status = create_obj(obj_hdl, name, DSTORE_REG, attrs_set, 0,
				    NULL, &a, &existed);
		if (FSAL_IS_ERROR(status)) {
			/* Created by someone else meanwhile: UNCHECKED
			 * opens it, the others fail. */
			if (!existed || createmode >= FSAL_GUARDED)
				return status;
		} else {
			created = true;
		}
	}

	if (a.type == DSTORE_DIR)
		return fsalstat(ERR_FSAL_ISDIR, 0);
	if (a.type != DSTORE_REG)
		return fsalstat(ERR_FSAL_SYMLINK, 0);

	hdl = dedup_alloc_handle(cur_export(), dir->store, &a);
	*new_obj = &hdl->obj_handle;

	if (!created && (openflags & FSAL_O_TRUNC)) {
		status = check_trunc_access(*new_obj, createmode);
		if (!FSAL_IS_ERROR(status))
			status = dedup_status_obj(truncate_to_zero(hdl, &a));
		if (FSAL_IS_ERROR(status)) {
			dedup_release(*new_obj);
			*new_obj = NULL;
			return status;
		}
	}

	*caller_perm_check = !created;

	/*
	 * Without a state use the global fd.  Nobody else can reference
	 * this new handle yet, so no lock is needed.
	 */
	if (my_fd == NULL)
		my_fd = &hdl->fd;
	dedup_open_my_fd(my_fd, openflags);

	fill_attrs_out(dir->store, &a, attrs_out);

	if (state != NULL) {
		/* Take the share reservation now. */
		PTHREAD_RWLOCK_wrlock(&(*new_obj)->obj_lock);
		update_share_counters(&hdl->share, FSAL_O_CLOSED, openflags);
		PTHREAD_RWLOCK_unlock(&(*new_obj)->obj_lock);
	}
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static fsal_openflags_t dedup_status2(struct fsal_obj_handle *obj_hdl,
				      struct state_t *state)
{
	(void)obj_hdl;
	return ((struct fsal_fd *)(state + 1))->openflags;
}

static fsal_status_t dedup_reopen2(struct fsal_obj_handle *obj_hdl,
				   struct state_t *state,
				   fsal_openflags_t openflags)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	struct fsal_fd *my_fd = (struct fsal_fd *)(state + 1);
	fsal_openflags_t old_openflags = my_fd->openflags;
	fsal_status_t status;

	/* This can block over an I/O operation. */
	PTHREAD_RWLOCK_wrlock(&obj_hdl->obj_lock);
	status = check_share_conflict(&h->share, openflags, false);
	if (FSAL_IS_ERROR(status)) {
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
		return status;
	}
	update_share_counters(&h->share, old_openflags, openflags);
	PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);

	dedup_open_my_fd(my_fd, openflags);
	if (openflags & FSAL_O_TRUNC)
		status = dedup_status_obj(truncate_to_zero(h, NULL));
	return status;
}

/*
 * Share-state check for a read or write (FSAL_MEM's pattern): there is
 * no descriptor to find, only the open mode to honour.  *has_lock: the
 * caller unlocks obj_lock when done.
 */
static fsal_status_t io_begin(struct fsal_obj_handle *obj_hdl, bool bypass,
			      struct state_t *state, fsal_openflags_t mode,
			      bool *has_lock)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	struct fsal_fd tmp_fd = { 0 }, *fdp = &tmp_fd;
	bool closefd = false, reusing = false;

	if (obj_hdl->type != REGULAR_FILE)
		return fsalstat(ERR_FSAL_INVAL, 0);
	return fsal_find_fd(&fdp, obj_hdl, &h->fd, &h->share, bypass, state,
			    mode, dedup_open_func, dedup_close_func, has_lock,
			    &closefd, false, &reusing);
}

static void dedup_read2(struct fsal_obj_handle *obj_hdl,
			bool bypass,
			fsal_async_cb done_cb,
			struct fsal_io_arg *read_arg,
			void *caller_arg)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	uint64_t offset = read_arg->offset;
	bool has_lock = false;
	fsal_status_t status;
	int i;

	/* No READ_PLUS */
	status = read_arg->info != NULL ? fsalstat(ERR_FSAL_NOTSUPP, 0) :
		 io_begin(obj_hdl, bypass, read_arg->state, FSAL_O_READ,
			  &has_lock);
	if (FSAL_IS_ERROR(status)) {
		done_cb(obj_hdl, status, read_arg, caller_arg);
		return;
	}

	read_arg->io_amount = 0;
	read_arg->end_of_file = false;
	for (i = 0; i < read_arg->iov_count; i++) {
		size_t len = read_arg->iov[i].iov_len;
		bool eof = false;
		ssize_t n;

		n = dstore_read(h->store->ds, h->ino, offset,
				read_arg->iov[i].iov_base, len, &eof);
		if (n < 0) {
			status = dedup_status_obj((int)n);
			break;
		}
		read_arg->io_amount += (size_t)n;
		offset += (uint64_t)n;
		if (eof || (size_t)n < len) {
			read_arg->end_of_file = eof;
			break;
		}
	}

	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	done_cb(obj_hdl, status, read_arg, caller_arg);
}

static void dedup_write2(struct fsal_obj_handle *obj_hdl,
			 bool bypass,
			 fsal_async_cb done_cb,
			 struct fsal_io_arg *write_arg,
			 void *caller_arg)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	bool has_lock = false;
	bool stable = write_arg->fsal_stable;
	bool one = write_arg->iov_count == 1;
	uint64_t offset = write_arg->offset;
	fsal_status_t status;
	int i, rc;

	status = io_begin(obj_hdl, bypass, write_arg->state, FSAL_O_WRITE,
			  &has_lock);
	if (FSAL_IS_ERROR(status)) {
		done_cb(obj_hdl, status, write_arg, caller_arg);
		return;
	}

	write_arg->io_amount = 0;
	for (i = 0; i < write_arg->iov_count; i++) {
		size_t len = write_arg->iov[i].iov_len;
		ssize_t n;

		/* FILE_SYNC/DATA_SYNC: the store makes it durable. */
		n = dstore_write(h->store->ds, h->ino, offset,
				 write_arg->iov[i].iov_base, len,
				 stable && one, NULL);
		if (n < 0) {
			status = dedup_status_obj((int)n);
			break;
		}
		write_arg->io_amount += (size_t)n;
		offset += (uint64_t)n;
		if ((size_t)n < len)
			break;
	}
	if (!FSAL_IS_ERROR(status) && stable && !one) {
		rc = dstore_sync(h->store->ds);
		if (rc < 0)
			status = dedup_status(rc);
	}
	write_arg->fsal_stable = stable && !FSAL_IS_ERROR(status);

	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	done_cb(obj_hdl, status, write_arg, caller_arg);
}

static fsal_status_t dedup_commit2(struct fsal_obj_handle *obj_hdl,
				   off_t offset, size_t len)
{
	(void)offset;
	(void)len;
	return dedup_status(dstore_sync(dedup_hdl(obj_hdl)->store->ds));
}

/* ---------------------------------------------------------------------
 * ALLOCATE, DEALLOCATE and SEEK (NFSv4.2)
 */

/* Blocks looked at per store snapshot when walking a file's block map. */
#define MAP_WINDOW 1024u
/* Blocks of zeros written per call when punching a hole. */
#define ZERO_RUN 64u

/*
 * Calls fn(ctx, lbn, mapped) for each block from first on, a window of
 * blocks at a time, until fn returns non-zero (that value is returned) or
 * the file's size is passed (0).  *size: the size in the first window.
 */
static int walk_block_map(struct dedup_fsal_obj_handle *h, uint64_t first,
			  int (*fn)(void *ctx, uint64_t lbn, bool mapped),
			  void *ctx, uint64_t *size)
{
	struct dedup_store *st = h->store;
	struct sc_hash *hashes = gsh_malloc(MAP_WINDOW * sizeof(*hashes));
	uint8_t mapped[MAP_WINDOW];
	struct dstore_attr a;
	uint64_t lbn, nblocks = UINT64_MAX;
	uint32_t i;
	int rc = 0;

	for (lbn = first; rc == 0 && lbn < nblocks; lbn += MAP_WINDOW) {
		rc = dstore_block_hashes(st->ds, h->ino, lbn, MAP_WINDOW,
					 hashes, mapped, &a);
		if (rc < 0)
			break;
		if (nblocks == UINT64_MAX) {
			*size = a.size;
			nblocks = (a.size + st->block_size - 1) /
				  st->block_size;
		}
		for (i = 0; rc == 0 && i < MAP_WINDOW && lbn + i < nblocks; i++)
			rc = fn(ctx, lbn + i, mapped[i] != 0);
	}
	gsh_free(hashes);
	return rc;
}

struct punch {
	struct dedup_fsal_obj_handle *h;
	uint64_t end;			/* of the whole blocks to unmap */
	const uint8_t *zeros;		/* ZERO_RUN blocks */
	uint64_t run, run_len;		/* mapped blocks not yet written */
};

/* Writes the pending run of mapped blocks as zeros: they become holes. */
static int punch_flush(struct punch *p)
{
	struct dstore_wblocks w = { .buf = p->zeros, .stable = false };
	struct dstore_attr pre, post;
	int rc = 0;

	while (rc == 0 && p->run_len > 0) {
		w.lbn = p->run;
		w.n = p->run_len < ZERO_RUN ? (uint32_t)p->run_len : ZERO_RUN;
		/* end 0: the size stays */
		rc = dstore_write_blocks(p->h->store->ds, p->h->ino, &w, &pre,
					 &post);
		p->run += w.n;
		p->run_len -= w.n;
	}
	return rc;
}

static int punch_block(void *ctx, uint64_t lbn, bool mapped)
{
	struct punch *p = ctx;
	int rc = 0;

	if (lbn >= p->end) {
		rc = punch_flush(p);
		return rc < 0 ? rc : 1;
	}
	if (mapped && p->run + p->run_len == lbn) {
		p->run_len++;
		return 0;
	}
	if (mapped) {
		rc = punch_flush(p);
		p->run = lbn;
		p->run_len = 1;
	}
	return rc;
}

/*
 * Zeros bytes [off, end) of one block, within the file: the store reads,
 * merges and writes the block under its own lock.  (Racing a truncation
 * below off, this would extend the file again, with zeros.)
 */
static int zero_within_block(struct dedup_fsal_obj_handle *h, uint64_t off,
			     uint64_t end, const uint8_t *zeros)
{
	ssize_t n;

	if (off >= end)
		return 0;
	n = dstore_write(h->store->ds, h->ino, off, zeros, (size_t)(end - off),
			 false, NULL);
	return n < 0 ? (int)n : 0;
}

/*
 * DEALLOCATE: the bytes read as zeros afterwards and the size stays (as
 * fallocate(2)'s PUNCH_HOLE | KEEP_SIZE).  Whole blocks that hold data
 * lose their mapping, so the store drops their references to the chunks;
 * partial blocks at either end are zeroed in place.
 */
static int punch_hole(struct dedup_fsal_obj_handle *h, uint64_t offset,
		      uint64_t length)
{
	uint64_t bs = h->store->block_size;
	uint64_t end = offset + length, first = (offset + bs - 1) / bs;
	struct punch p = { .h = h };
	struct dstore_attr a;
	uint8_t *zeros;
	int rc;

	rc = dstore_getattr(h->store->ds, h->ino, &a);
	if (rc < 0)
		return rc;
	if (end > a.size)
		end = a.size;
	if (offset >= end)
		return 0;
	zeros = gsh_calloc(ZERO_RUN, bs);
	p.zeros = zeros;
	/* the last block of the file holds zeros past its end: whole */
	p.end = end == a.size ? (end + bs - 1) / bs : end / bs;
	rc = walk_block_map(h, first, punch_block, &p, &a.size);
	if (rc == 0)
		rc = punch_flush(&p);
	if (rc >= 0 && offset % bs != 0)
		rc = zero_within_block(h, offset,
				       end < first * bs ? end : first * bs,
				       zeros);
	if (rc >= 0 && end < a.size && end % bs != 0 && end / bs >= first)
		rc = zero_within_block(h, end / bs * bs, end, zeros);
	if (rc >= 0)
		rc = dstore_sync(h->store->ds);
	gsh_free(zeros);
	return rc;
}

/*
 * ALLOCATE: the store cannot reserve space (a block takes space when it
 * is written, and none when the store holds its content already), so
 * this only makes the file at least offset + length long, as
 * fallocate(2) mode 0 does; the new bytes read as zeros.
 */
static int extend_to(struct dedup_fsal_obj_handle *h, uint64_t end)
{
	struct dstore_wblocks w = { .end = end, .stable = true };
	struct dstore_attr pre, post;

	return dstore_write_blocks(h->store->ds, h->ino, &w, &pre, &post);
}

static fsal_status_t dedup_fallocate(struct fsal_obj_handle *obj_hdl,
				     struct state_t *state, uint64_t offset,
				     uint64_t length, bool allocate)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	bool has_lock = false;
	fsal_status_t status;
	int rc;

	status = io_begin(obj_hdl, false, state, FSAL_O_WRITE, &has_lock);
	if (FSAL_IS_ERROR(status))
		return status;
	/* fallocate(2)'s answers: a negative off_t, then too far */
	if (offset > (uint64_t)INT64_MAX || length > (uint64_t)INT64_MAX)
		rc = -EINVAL;
	else if (offset + length > (uint64_t)INT64_MAX)
		rc = -EFBIG;
	else if (allocate)
		rc = extend_to(h, offset + length);
	else
		rc = punch_hole(h, offset, length);
	/* mtime and ctime move, whatever changed (as fallocate(2) on Linux) */
	if (rc == 0)
		rc = apply_attrs(h->store, h->ino, obj_hdl->type, NULL,
				 ATTR_MTIME_SERVER, NULL);
	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return dedup_status_obj(rc);
}

struct seek {
	uint64_t from;			/* block to look from */
	bool data;			/* SEEK_DATA, else SEEK_HOLE */
	uint64_t found;			/* the block */
};

static int seek_block(void *ctx, uint64_t lbn, bool mapped)
{
	struct seek *s = ctx;

	if (mapped != s->data)
		return 0;
	s->found = lbn;
	return 1;
}

/*
 * SEEK to data or to a hole, as lseek(2)'s SEEK_DATA and SEEK_HOLE at the
 * store's block granularity (and with FSAL_VFS's answers): an offset at
 * or past the end is NXIO; no data after it is eof with the offset
 * unchanged; the end of the file is a hole.
 */
static fsal_status_t dedup_seek2(struct fsal_obj_handle *obj_hdl,
				 struct state_t *state, struct io_info *info)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	uint64_t offset = info->io_content.hole.di_offset, size = 0, at;
	struct seek s = { .from = offset / h->store->block_size };
	bool has_lock = false;
	fsal_status_t status;
	int rc;

	if (info->io_content.what != NFS4_CONTENT_DATA &&
	    info->io_content.what != NFS4_CONTENT_HOLE)
		return fsalstat(ERR_FSAL_UNION_NOTSUPP, 0);
	s.data = info->io_content.what == NFS4_CONTENT_DATA;
	status = io_begin(obj_hdl, false, state, FSAL_O_ANY, &has_lock);
	if (FSAL_IS_ERROR(status))
		return status;

	rc = walk_block_map(h, s.from, seek_block, &s, &size);
	if (rc >= 0 && offset >= size) {
		status = posix2fsal_status(ENXIO);
	} else if (rc < 0) {
		status = dedup_status_obj(rc);
	} else if (rc == 0 && s.data) {
		info->io_eof = true;
	} else {
		at = rc == 0 ? size : s.found * h->store->block_size;
		if (at < offset)
			at = offset;
		if (at > size)
			at = size;
		info->io_content.hole.di_offset = at;
		info->io_eof = at >= size;
	}
	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return status;
}

static fsal_status_t dedup_lock_op2(struct fsal_obj_handle *obj_hdl,
				    struct state_t *state,
				    void *owner,
				    fsal_lock_op_t lock_op,
				    fsal_lock_param_t *request_lock,
				    fsal_lock_param_t *conflicting_lock)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	struct fsal_fd tmp_fd = { 0 }, *fdp = &tmp_fd;
	bool has_lock = false, closefd = false, bypass = false;
	bool reusing = false;
	fsal_openflags_t openflags;
	fsal_status_t status;

	(void)owner;
	(void)conflicting_lock;
	if (obj_hdl->type != REGULAR_FILE)
		return fsalstat(ERR_FSAL_INVAL, 0);

	switch (lock_op) {
	case FSAL_OP_LOCKT:
		/* We may end up using global fd, don't fail on a deny mode */
		bypass = true;
		openflags = FSAL_O_ANY;
		break;
	case FSAL_OP_LOCK:
		if (request_lock->lock_type == FSAL_LOCK_R)
			openflags = FSAL_O_READ;
		else if (request_lock->lock_type == FSAL_LOCK_W)
			openflags = FSAL_O_WRITE;
		else
			openflags = FSAL_O_RDWR;
		break;
	case FSAL_OP_UNLOCK:
		openflags = FSAL_O_ANY;
		break;
	default:
		return fsalstat(ERR_FSAL_NOTSUPP, 0);
	}

	/* Lock conflicts are Ganesha's (SAL); this checks the open state. */
	status = fsal_find_fd(&fdp, obj_hdl, &h->fd, &h->share, bypass, state,
			      openflags, dedup_open_func, dedup_close_func,
			      &has_lock, &closefd, true, &reusing);
	if (has_lock)
		PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return status;
}

static fsal_status_t dedup_close2(struct fsal_obj_handle *obj_hdl,
				  struct state_t *state)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);
	struct fsal_fd *my_fd = (struct fsal_fd *)(state + 1);
	fsal_status_t status;

	PTHREAD_RWLOCK_wrlock(&obj_hdl->obj_lock);
	if (state->state_type == STATE_TYPE_SHARE ||
	    state->state_type == STATE_TYPE_NLM_SHARE ||
	    state->state_type == STATE_TYPE_9P_FID) {
		/* A share state: update the share counters. */
		update_share_counters(&h->share, my_fd->openflags,
				      FSAL_O_CLOSED);
	}
	status = dedup_close_my_fd(my_fd);
	PTHREAD_RWLOCK_unlock(&obj_hdl->obj_lock);
	return status;
}

/* ---------------------------------------------------------------------
 * Handles on the wire and as keys
 */

static fsal_status_t dedup_handle_to_wire(const struct fsal_obj_handle *obj_hdl,
					  fsal_digesttype_t output_type,
					  struct gsh_buffdesc *fh_desc)
{
	const struct dedup_fsal_obj_handle *h =
		container_of(obj_hdl, const struct dedup_fsal_obj_handle,
			     obj_handle);

	switch (output_type) {
	case FSAL_DIGEST_NFSV3:
	case FSAL_DIGEST_NFSV4:
		if (fh_desc->len < DEDUP_WIRE_SIZE) {
			LogMajor(COMPONENT_FSAL,
				 "Space too small for handle. need %d, have %zu",
				 DEDUP_WIRE_SIZE, fh_desc->len);
			return fsalstat(ERR_FSAL_TOOSMALL, 0);
		}
		memcpy(fh_desc->addr, h->key, DEDUP_WIRE_SIZE);
		fh_desc->len = DEDUP_WIRE_SIZE;
		break;
	default:
		return fsalstat(ERR_FSAL_SERVERFAULT, 0);
	}
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static void dedup_handle_to_key(struct fsal_obj_handle *obj_hdl,
				struct gsh_buffdesc *fh_desc)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);

	fh_desc->addr = h->key;
	fh_desc->len = DEDUP_KEY_SIZE;
}

void dedup_handle_ops_init(struct fsal_obj_ops *ops)
{
	fsal_default_obj_ops_init(ops);

	ops->merge = dedup_merge;
	ops->release = dedup_release;
	ops->lookup = dedup_lookup;
	ops->readdir = dedup_readdir;
	ops->mkdir = dedup_mkdir;
	ops->mknode = dedup_mknode;
	ops->symlink = dedup_symlink;
	ops->readlink = dedup_readlink;
	ops->getattrs = dedup_getattrs;
	ops->setattr2 = dedup_setattr2;
	ops->link = dedup_link;
	ops->rename = dedup_rename;
	ops->unlink = dedup_unlink;
	ops->close = dedup_close;
	ops->open2 = dedup_open2;
	ops->status2 = dedup_status2;
	ops->reopen2 = dedup_reopen2;
	ops->read2 = dedup_read2;
	ops->write2 = dedup_write2;
	ops->commit2 = dedup_commit2;
	ops->fallocate = dedup_fallocate;
	ops->seek2 = dedup_seek2;
	ops->lock_op2 = dedup_lock_op2;
	ops->close2 = dedup_close2;
	ops->handle_to_wire = dedup_handle_to_wire;
	ops->handle_to_key = dedup_handle_to_key;
}

/* ---------------------------------------------------------------------
 * Export methods that make handles
 */

fsal_status_t dedup_lookup_path(struct fsal_export *exp_hdl,
				const char *path,
				struct fsal_obj_handle **handle,
				struct fsal_attrlist *attrs_out)
{
	struct dedup_fsal_export *e = dedup_export_of(exp_hdl);
	struct dedup_store *st = e->store;
	size_t elen = strlen(e->export_path);
	struct dstore_attr a;
	const char *p;
	char comp[DSTORE_NAME_MAX + 1];
	int rc;

	*handle = NULL;
	while (elen > 1 && e->export_path[elen - 1] == '/')
		elen--;
	if (strncmp(path, e->export_path, elen) != 0 ||
	    (path[elen] != '\0' && path[elen] != '/' && elen > 1)) {
		LogInfo(COMPONENT_FSAL,
			"DEDUP: lookup of %s outside export %s", path,
			e->export_path);
		return fsalstat(ERR_FSAL_NOENT, ENOENT);
	}

	rc = dstore_getattr(st->ds, DSTORE_ROOT_INO, &a);
	/* Components below the export's root, if any. */
	for (p = path + elen; rc == 0 && *p != '\0';) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		if (n == 0)
			break;
		if (n > DSTORE_NAME_MAX)
			return fsalstat(ERR_FSAL_NAMETOOLONG, 0);
		if (a.type != DSTORE_DIR)
			return fsalstat(ERR_FSAL_NOTDIR, 0);
		memcpy(comp, p, n);
		comp[n] = '\0';
		rc = dstore_lookup(st->ds, a.ino, comp, &a);
		p += n;
	}
	if (rc < 0)
		return dedup_status(rc);

	*handle = &dedup_alloc_handle(e, st, &a)->obj_handle;
	fill_attrs_out(st, &a, attrs_out);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

fsal_status_t dedup_create_handle(struct fsal_export *exp_hdl,
				  struct gsh_buffdesc *hdl_desc,
				  struct fsal_obj_handle **handle,
				  struct fsal_attrlist *attrs_out)
{
	struct dedup_fsal_export *e = dedup_export_of(exp_hdl);
	struct dstore_attr a;
	uint64_t id, ino;
	int rc;

	*handle = NULL;
	if (!dedup_wire_decode(hdl_desc, &id, &ino)) {
		LogDebug(COMPONENT_FSAL, "DEDUP: bad handle (length %zu)",
			 hdl_desc->len);
		return fsalstat(ERR_FSAL_BADHANDLE, 0);
	}
	if (id != e->store->tag)
		return fsalstat(ERR_FSAL_STALE, 0);
	rc = dstore_getattr(e->store->ds, ino, &a);
	if (rc < 0)
		return dedup_status_obj(rc);

	*handle = &dedup_alloc_handle(e, e->store, &a)->obj_handle;
	fill_attrs_out(e->store, &a, attrs_out);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}
