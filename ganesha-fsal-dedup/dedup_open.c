// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * FSAL_DEDUP object handles: open and close, share reservations and the
 * open-state check of LOCK.
 *
 * There are no file descriptors: the store is addressed by inode number.
 * Share reservations and "open" state are kept as FSAL_MEM keeps them (a
 * struct fsal_fd holding only open flags, in the handle for the global
 * "fd" and after each state_t), under obj_handle->obj_lock; the open
 * flags are the client's own, as FSAL_VFS keeps them (dedup_util.c).
 *
 * Adapted from NFS-Ganesha FSAL_MEM, LGPL-3.0-or-later
 * (mem_handle.c, Copyright 2017-2021 Red Hat, Inc., Daniel Gryniewicz).
 */

#include "config.h"

#include <errno.h>
#include <string.h>

#include "fsal.h"
#include "fsal_convert.h"
#include "FSAL/fsal_commonlib.h"
#include "dedup_int.h"

/* ---------------------------------------------------------------------
 * Open and share reservations (FSAL_MEM's scheme)
 */

static int truncate_to_zero(struct dedup_fsal_obj_handle *h,
			    struct dstore_attr *out)
{
	struct dstore_attr a;

	memset(&a, 0, sizeof(a));
	return dstore_setattr(h->store->ds, h->ino, &a, DSTORE_SET_SIZE, out);
}

fsal_status_t dedup_close(struct fsal_obj_handle *obj_hdl)
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

fsal_status_t dedup_open2(struct fsal_obj_handle *obj_hdl,
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

fsal_openflags_t dedup_status2(struct fsal_obj_handle *obj_hdl,
			       struct state_t *state)
{
	(void)obj_hdl;
	return ((struct fsal_fd *)(state + 1))->openflags;
}

fsal_status_t dedup_reopen2(struct fsal_obj_handle *obj_hdl,
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

fsal_status_t dedup_lock_op2(struct fsal_obj_handle *obj_hdl,
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

fsal_status_t dedup_close2(struct fsal_obj_handle *obj_hdl,
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
