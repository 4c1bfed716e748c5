// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * FSAL_DEDUP object handles: what the handle files share.  dedup_handle.c
 * (the operations table), dedup_dir.c, dedup_open.c and dedup_io.c call
 * down into this file, and it calls none of them: store attributes as
 * FSAL attributes, making and releasing a handle, the permission check
 * and the attribute changes the store cannot make itself, creating an
 * object in a directory, and the open-flags-only "file descriptors".
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

void fill_attrs_out(const struct dedup_store *st,
		    const struct dstore_attr *a,
		    struct fsal_attrlist *attrs_out)
{
	if (attrs_out != NULL)
		dedup_attr_to_fsal(st, a, attrs_out);
}

void attrs_error(struct fsal_attrlist *attrs)
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

struct dedup_fsal_export *cur_export(void)
{
	return dedup_export_of(op_ctx->fsal_export);
}

/* ---------------------------------------------------------------------
 * Lifecycle
 */

void dedup_release(struct fsal_obj_handle *obj_hdl)
{
	struct dedup_fsal_obj_handle *h = dedup_hdl(obj_hdl);

	fsal_obj_handle_fini(obj_hdl);
	dedup_store_put(h->store);
	gsh_free(h);
}

/* ---------------------------------------------------------------------
 * Permission checks the store cannot make (it has no credentials):
 * Ganesha checks lookup, readdir, link, setattr and open itself; creating,
 * removing and renaming need write and search permission on the
 * directory, and the sticky bit restricts removal to owners (check_sticky,
 * in dedup_dir.c).
 */

fsal_status_t check_dir_write(struct fsal_obj_handle *dir)
{
	return dir->obj_ops->test_access(
		dir,
		FSAL_MODE_MASK_SET(FSAL_W_OK | FSAL_X_OK) |
		FSAL_ACE4_MASK_SET(FSAL_ACE_PERM_ADD_FILE |
				   FSAL_ACE_PERM_DELETE_CHILD),
		NULL, NULL, false);
}

/* ---------------------------------------------------------------------
 * Attribute changes
 */

/* Applies the attributes of s selected by mask (s may be NULL when mask
 * holds only times set to the server's); out gets the result. */
int apply_attrs(struct dedup_store *st, uint64_t ino,
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

fsal_status_t dedup_open_my_fd(struct fsal_fd *fd,
			       fsal_openflags_t openflags)
{
	fd->openflags = FSAL_O_NFS_FLAGS(openflags);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

fsal_status_t dedup_close_my_fd(struct fsal_fd *fd)
{
	if (fd->openflags == FSAL_O_CLOSED)
		return fsalstat(ERR_FSAL_NOT_OPENED, 0);
	fd->openflags = FSAL_O_CLOSED;
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

fsal_status_t dedup_open_func(struct fsal_obj_handle *obj_hdl,
			      fsal_openflags_t openflags,
			      struct fsal_fd *fd)
{
	(void)obj_hdl;
	return dedup_open_my_fd(fd, openflags);
}

fsal_status_t dedup_close_func(struct fsal_obj_handle *obj_hdl,
			       struct fsal_fd *fd)
{
	(void)obj_hdl;
	return dedup_close_my_fd(fd);
}

/* ---------------------------------------------------------------------
 * Creating an object: mkdir, mknode and symlink (dedup_dir.c), and open
 * by name (dedup_open.c)
 */

/*
 * Creates name in dir.  Mode, owner and group go to dstore_create (owner
 * and group default to the caller's, the group to the directory's when it
 * is set-group-ID); the rest of attrs_in (size, times) is applied after,
 * only to an object this call created.  *existed: name was there (a then
 * holds that object's attributes).
 */
fsal_status_t create_obj(struct fsal_obj_handle *dir_hdl,
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
