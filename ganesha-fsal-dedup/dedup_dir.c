// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * FSAL_DEDUP object handles: the namespace.  LOOKUP, READDIR, creating
 * directories, special files and symlinks, READLINK, LINK, RENAME and
 * REMOVE, with the sticky-bit check of removing and renaming (the store
 * has no credentials).
 *
 * Adapted from NFS-Ganesha FSAL_MEM, LGPL-3.0-or-later
 * (mem_handle.c, Copyright 2017-2021 Red Hat, Inc., Daniel Gryniewicz).
 */

#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "fsal.h"
#include "fsal_convert.h"
#include "FSAL/fsal_commonlib.h"
#include "dedup_int.h"

/* A new handle on the store of 'like' (a handle of the same store). */
static struct fsal_obj_handle *new_handle(struct dedup_fsal_obj_handle *like,
					  const struct dstore_attr *a)
{
	return &dedup_alloc_handle(cur_export(), like->store, a)->obj_handle;
}

/* The sticky bit restricts removal and renaming to owners. */
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
 * Namespace
 */

fsal_status_t dedup_lookup(struct fsal_obj_handle *parent,
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
fsal_status_t dedup_readdir(struct fsal_obj_handle *dir_hdl,
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

fsal_status_t dedup_mkdir(struct fsal_obj_handle *dir_hdl,
			  const char *name,
			  struct fsal_attrlist *attrs_in,
			  struct fsal_obj_handle **new_obj,
			  struct fsal_attrlist *attrs_out)
{
	return create_common(dir_hdl, name, DSTORE_DIR, attrs_in, 0, NULL,
			     new_obj, attrs_out);
}

fsal_status_t dedup_mknode(struct fsal_obj_handle *dir_hdl,
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

fsal_status_t dedup_symlink(struct fsal_obj_handle *dir_hdl,
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

fsal_status_t dedup_readlink(struct fsal_obj_handle *obj_hdl,
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

fsal_status_t dedup_link(struct fsal_obj_handle *obj_hdl,
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

fsal_status_t dedup_rename(struct fsal_obj_handle *obj_hdl,
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

fsal_status_t dedup_unlink(struct fsal_obj_handle *dir_hdl,
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
