// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * FSAL_DEDUP export: the FSAL { Name = DEDUP; Store = /path; } block,
 * export operations, wire handles and handle keys, file system statistics.
 *
 * Adapted from NFS-Ganesha FSAL_MEM, LGPL-3.0-or-later
 * (mem_export.c, Copyright 2017-2019 Red Hat, Inc., Daniel Gryniewicz).
 */

#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#include "fsal.h"
#include "fsal_convert.h"
#include "FSAL/fsal_commonlib.h"
#include "dedup_int.h"

static void dedup_release_export(struct fsal_export *exp_hdl)
{
	struct dedup_fsal_export *myself = dedup_export_of(exp_hdl);

	fsal_detach_export(exp_hdl->fsal, &exp_hdl->exports);
	free_export_ops(exp_hdl);

	if (myself->store != NULL) {
		dedup_csi_export_remove(myself);
		dedup_store_put(myself->store);
	}
	gsh_free(myself->export_path);
	gsh_free(myself->store_path);
	gsh_free(myself);
}

/*
 * Space from the file system holding the store; files from the store's
 * count plus an estimate of what the rest of the index map can hold.
 */
#define DEDUP_INDEX_BYTES_PER_FILE 512

static fsal_status_t dedup_get_dynamic_info(struct fsal_export *exp_hdl,
					    struct fsal_obj_handle *obj_hdl,
					    fsal_dynamicfsinfo_t *infop)
{
	struct dedup_fsal_export *myself = dedup_export_of(exp_hdl);
	struct dedup_store *st = myself->store;
	struct dstore_stats s;
	struct statvfs sv;
	uint64_t free_files = 0;
	int rc;

	(void)obj_hdl;
	rc = dstore_stats(st->ds, &s);
	if (rc < 0)
		return dedup_status(rc);
	if (statvfs(st->path, &sv) != 0)
		return posix2fsal_status(errno);

	infop->total_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
	infop->free_bytes = (uint64_t)sv.f_bfree * sv.f_frsize;
	infop->avail_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (DEDUP.map_size > s.index_bytes)
		free_files = (DEDUP.map_size - s.index_bytes) /
			     DEDUP_INDEX_BYTES_PER_FILE;
	infop->total_files = s.files + free_files;
	infop->free_files = free_files;
	infop->avail_files = free_files;
	infop->time_delta.tv_sec = 0;
	infop->time_delta.tv_nsec = 1;
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

/* ---------------------------------------------------------------------
 * Handles: version byte, store id (LE), ino (LE); the key is the handle
 */

static uint64_t le64_get(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

bool dedup_wire_decode(const struct gsh_buffdesc *desc, uint64_t *store_id,
		       uint64_t *ino)
{
	const uint8_t *p = desc->addr;

	if (desc->len != DEDUP_WIRE_SIZE || p[0] != DEDUP_WIRE_VERSION)
		return false;
	*store_id = le64_get(p + 1);
	*ino = le64_get(p + 9);
	return *ino != 0;
}

static fsal_status_t dedup_wire_to_host(struct fsal_export *exp_hdl,
					fsal_digesttype_t in_type,
					struct gsh_buffdesc *fh_desc,
					int flags)
{
	struct dedup_fsal_export *myself = dedup_export_of(exp_hdl);
	uint64_t id, ino;

	/* Byte order is fixed by the format: FH_FSAL_BIG_ENDIAN is moot. */
	(void)in_type;
	(void)flags;
	if (!dedup_wire_decode(fh_desc, &id, &ino)) {
		LogDebug(COMPONENT_FSAL, "DEDUP: bad handle (length %zu)",
			 fh_desc->len);
		return fsalstat(ERR_FSAL_BADHANDLE, 0);
	}
	/* a handle of a store that is not (or no longer) this export's */
	if (id != myself->store->tag)
		return fsalstat(ERR_FSAL_STALE, 0);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static fsal_status_t dedup_host_to_key(struct fsal_export *exp_hdl,
				       struct gsh_buffdesc *fh_desc)
{
	uint64_t id, ino;

	(void)exp_hdl;
	if (!dedup_wire_decode(fh_desc, &id, &ino))
		return fsalstat(ERR_FSAL_BADHANDLE, 0);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

static struct state_t *dedup_alloc_state(struct fsal_export *exp_hdl,
					 enum state_type state_type,
					 struct state_t *related_state)
{
	/* As FSAL_MEM: the state carries a struct fsal_fd after it. */
	return init_state(gsh_calloc(1, sizeof(struct state_t) +
					    sizeof(struct fsal_fd)),
			  exp_hdl, state_type, related_state);
}

void dedup_export_ops_init(struct export_ops *ops)
{
	ops->release = dedup_release_export;
	ops->lookup_path = dedup_lookup_path;
	ops->wire_to_host = dedup_wire_to_host;
	ops->host_to_key = dedup_host_to_key;
	ops->create_handle = dedup_create_handle;
	ops->get_fs_dynamic_info = dedup_get_dynamic_info;
	ops->alloc_state = dedup_alloc_state;
}

/* ---------------------------------------------------------------------
 * FSAL { Name = DEDUP; Store = /path; }
 */

static int dedup_export_commit(void *node, void *link_mem, void *self_struct,
			       struct config_error_type *err_type)
{
	struct dedup_fsal_export *e = self_struct;

	(void)node;
	(void)link_mem;
	if (e->store_path == NULL || e->store_path[0] != '/') {
		LogCrit(COMPONENT_CONFIG,
			"DEDUP: FSAL { Store = %s; } must be an absolute path",
			e->store_path != NULL ? e->store_path : "(none)");
		err_type->invalid = true;
		return 1;
	}
	return 0;
}

static struct config_item dedup_export_params[] = {
	CONF_ITEM_NOOP("name"),
	CONF_MAND_PATH("Store", 1, MAXPATHLEN, NULL,
		       dedup_fsal_export, store_path),
	CONFIG_EOL
};

static struct config_block dedup_export_param_block = {
	.dbus_interface_name = "org.ganesha.nfsd.config.fsal.dedup-export%d",
	.blk_desc.name = "FSAL",
	.blk_desc.type = CONFIG_BLOCK,
	.blk_desc.u.blk.init = noop_conf_init,
	.blk_desc.u.blk.params = dedup_export_params,
	.blk_desc.u.blk.commit = dedup_export_commit
};

fsal_status_t dedup_create_export(struct fsal_module *fsal_hdl,
				  void *parse_node,
				  struct config_error_type *err_type,
				  const struct fsal_up_vector *up_ops)
{
	struct dedup_fsal_export *myself;
	fsal_status_t status;
	int rc;

	myself = gsh_calloc(1, sizeof(*myself));
	fsal_export_init(&myself->export);
	dedup_export_ops_init(&myself->export.exp_ops);

	rc = load_config_from_node(parse_node, &dedup_export_param_block,
				   myself, true, err_type);
	if (rc != 0) {
		status = posix2fsal_status(EINVAL);
		goto err_free;
	}

	myself->store = dedup_store_get(myself->store_path);
	if (myself->store == NULL) {
		/* dedup_store_get said why, naming the store. */
		err_type->cur_exp_create_err = true;
		status = fsalstat(ERR_FSAL_INVAL, EINVAL);
		goto err_free;
	}

	rc = fsal_attach_export(fsal_hdl, &myself->export.exports);
	if (rc != 0) {
		LogMajor(COMPONENT_FSAL, "DEDUP: could not attach export");
		status = posix2fsal_status(rc);
		goto err_store;
	}

	myself->export.fsal = fsal_hdl;
	myself->export.up_ops = up_ops;
	myself->export_path = gsh_strdup(CTX_FULLPATH(op_ctx));
	op_ctx->fsal_export = &myself->export;
	dedup_csi_export_add(myself);

	LogInfo(COMPONENT_FSAL, "DEDUP: export %s on store %s",
		myself->export_path, myself->store->path);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);

err_store:
	dedup_store_put(myself->store);
err_free:
	free_export_ops(&myself->export);
	gsh_free(myself->store_path);
	gsh_free(myself);
	return status;
}

/* Re-reading the configuration: the store of an export cannot change. */
fsal_status_t dedup_update_export(struct fsal_module *fsal_hdl,
				  void *parse_node,
				  struct config_error_type *err_type,
				  struct fsal_export *original,
				  struct fsal_module *updated_super)
{
	struct dedup_fsal_export *orig = dedup_export_of(original);
	struct dedup_fsal_export tmp;
	fsal_status_t status;
	int rc;

	status = update_export(fsal_hdl, parse_node, err_type, original,
			       updated_super);
	if (FSAL_IS_ERROR(status))
		return status;

	memset(&tmp, 0, sizeof(tmp));
	rc = load_config_from_node(parse_node, &dedup_export_param_block,
				   &tmp, true, err_type);
	if (rc != 0) {
		gsh_free(tmp.store_path);
		return posix2fsal_status(EINVAL);
	}
	if (strcmp(tmp.store_path, orig->store_path) != 0) {
		LogCrit(COMPONENT_CONFIG,
			"DEDUP: FSAL { Store } of an export cannot change (%s to %s)",
			orig->store_path, tmp.store_path);
		err_type->invalid = true;
		gsh_free(tmp.store_path);
		return fsalstat(ERR_FSAL_INVAL, EINVAL);
	}
	gsh_free(tmp.store_path);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}
