// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * FSAL_DEDUP object handles: the operations table (dedup_handle_ops_init),
 * and the operations on a handle itself: merging, attributes, the handle
 * on the wire and as a key; and the export methods that make handles
 * (from a path, from a wire handle).  The other operations are in
 * dedup_dir.c (namespace), dedup_open.c (open and share state) and
 * dedup_io.c (I/O); all of them call down into dedup_util.c.
 *
 * Adapted from NFS-Ganesha FSAL_MEM, LGPL-3.0-or-later
 * (mem_handle.c, Copyright 2017-2021 Red Hat, Inc., Daniel Gryniewicz).
 */

#include "config.h"

#include <errno.h>
#include <string.h>

#include "fsal.h"
#include "FSAL/fsal_commonlib.h"
#include "dedup_int.h"

/* ---------------------------------------------------------------------
 * Merging handles
 */

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
 * Attributes
 */

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
