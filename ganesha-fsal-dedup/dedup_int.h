/* SPDX-License-Identifier: LGPL-3.0-or-later */
/*
 * FSAL_DEDUP: an NFS-Ganesha 4.3 FSAL whose files live in the deduplicated
 * store (store/dstore.h).  Internal declarations.
 *
 * Layout adapted from NFS-Ganesha FSAL_MEM, LGPL-3.0-or-later
 * (Copyright 2017-2019 Red Hat, Inc., Daniel Gryniewicz).
 */
#ifndef DEDUP_INT_H
#define DEDUP_INT_H

#include "fsal.h"
#include "fsal_api.h"
#include "gsh_list.h"

#include "dstore.h"

/*
 * Wire handle: a version byte, the store's id (random at its creation, so
 * a handle of a re-created or another store is stale, never another
 * file), the inode number; both little-endian.  It is also the cache key.
 */
#define DEDUP_WIRE_VERSION 2
#define DEDUP_WIRE_SIZE 17
#define DEDUP_KEY_SIZE DEDUP_WIRE_SIZE

void dedup_wire_encode(uint8_t *p, uint64_t store_id, uint64_t ino);

/* Module-wide configuration: the DEDUP { } block. */
struct dedup_fsal_module {
	struct fsal_module fsal;
	struct fsal_obj_ops handle_ops;
	uint32_t block_size;
	bool verify_reads;
	uint64_t map_size;
	uint64_t container_size;
	uint32_t max_readers;
	uint32_t housekeeping_ms;	/* apply deltas, reclaim; 0: off */
	uint64_t writeback_bytes;	/* unstable writes held in memory */
	/* the CSI service (csi/): off while csi_port is 0 */
	uint16_t csi_port;
	char *csi_bind_addr;
	uint32_t csi_max_hosts;
	uint32_t csi_tracker_entries;
	uint32_t csi_lease;
	uint32_t csi_features;		/* CSI_FEAT_* offered */
	uint32_t csi_max_push;
	uint32_t csi_push_search_ms;
	bool csi_delegate_cached;
	uint32_t csi_token_seconds;
	uint32_t csi_workers;
	uint32_t csi_max_calls_per_conn;
};

extern struct dedup_fsal_module DEDUP;

/*
 * One opened store, shared by every export naming the same directory and
 * referenced by every object handle made on it.
 */
struct dedup_store {
	struct glist_head entry;	/* in the list of open stores */
	char *path;			/* canonical directory */
	struct dstore *ds;
	uint32_t refcount;		/* exports and handles; store_lock */
	uint32_t block_size;
	uint64_t tag;			/* dstore_id: fsid and handles */
	fsal_fsid_t fsid;
	struct csi_server_thread *csi;	/* serving this store, or NULL */
	/* the exports on this store, for the CSI service (dedup_csi.c) */
	pthread_rwlock_t exports_lock;
	struct glist_head exports;
};

struct dedup_store *dedup_store_get(const char *path);
void dedup_store_ref(struct dedup_store *st);
void dedup_store_put(struct dedup_store *st);

struct dedup_fsal_export {
	struct fsal_export export;
	char *export_path;		/* the EXPORT's Path */
	char *store_path;		/* FSAL { Store = } */
	struct dedup_store *store;
	/* for the CSI service: its clients and pseudo path (dedup_csi.c) */
	struct glist_head store_entry;	/* in store->exports */
	struct gsh_export *gsh_export;	/* outlives this (it releases us) */
	char *pseudo_path;
};

static inline struct dedup_fsal_export *
dedup_export_of(struct fsal_export *e)
{
	return container_of(e, struct dedup_fsal_export, export);
}

/* dedup_csi.c: what the CSI service needs of Ganesha */
extern const struct csi_service_hooks dedup_csi_hooks;	/* ctx: the store */
void dedup_csi_export_add(struct dedup_fsal_export *e);
void dedup_csi_export_remove(struct dedup_fsal_export *e);

struct dedup_fsal_obj_handle {
	struct fsal_obj_handle obj_handle;
	struct dedup_store *store;	/* one reference held */
	uint64_t ino;
	uint8_t key[DEDUP_KEY_SIZE];	/* the wire handle */
	/* regular files: Ganesha's share state, as FSAL_MEM keeps it */
	struct fsal_share share;
	struct fsal_fd fd;
};

static inline struct dedup_fsal_obj_handle *
dedup_hdl(struct fsal_obj_handle *h)
{
	return container_of(h, struct dedup_fsal_obj_handle, obj_handle);
}

/* A negative errno from dstore as an FSAL status (-ENOENT on an object
 * addressed by inode number means the handle is stale). */
fsal_status_t dedup_status(int rc);
fsal_status_t dedup_status_obj(int rc);

void dedup_handle_ops_init(struct fsal_obj_ops *ops);
void dedup_export_ops_init(struct export_ops *ops);

fsal_status_t dedup_create_export(struct fsal_module *fsal_hdl,
				  void *parse_node,
				  struct config_error_type *err_type,
				  const struct fsal_up_vector *up_ops);
fsal_status_t dedup_update_export(struct fsal_module *fsal_hdl,
				  void *parse_node,
				  struct config_error_type *err_type,
				  struct fsal_export *original,
				  struct fsal_module *updated_super);

fsal_status_t dedup_lookup_path(struct fsal_export *exp_hdl,
				const char *path,
				struct fsal_obj_handle **handle,
				struct fsal_attrlist *attrs_out);
fsal_status_t dedup_create_handle(struct fsal_export *exp_hdl,
				  struct gsh_buffdesc *hdl_desc,
				  struct fsal_obj_handle **handle,
				  struct fsal_attrlist *attrs_out);

/* Allocates an object handle for attributes a (one new store reference). */
struct dedup_fsal_obj_handle *dedup_alloc_handle(struct dedup_fsal_export *exp,
						 struct dedup_store *st,
						 const struct dstore_attr *a);
void dedup_attr_to_fsal(const struct dedup_store *st,
			const struct dstore_attr *a,
			struct fsal_attrlist *out);
/* Decodes a wire handle; false when it is not a handle of ours at all. */
bool dedup_wire_decode(const struct gsh_buffdesc *desc, uint64_t *store_id,
		       uint64_t *ino);

#endif /* DEDUP_INT_H */
