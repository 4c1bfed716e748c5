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
	uint32_t csi_tracker_host_percent;
	uint32_t csi_max_hosts_per_addr;
	uint32_t csi_lease;
	uint32_t csi_features;		/* CSI_FEAT_* offered */
	uint32_t csi_max_push;
	uint32_t csi_push_search_ms;
	bool csi_delegate_cached;
	uint32_t csi_token_seconds;
	uint32_t csi_peer_failures;
	uint32_t csi_peer_suspend_seconds;
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

/*
 * The object handle files.  dedup_handle.c holds the operations table and
 * points it at the operations of dedup_dir.c (namespace), dedup_open.c
 * (open and share state) and dedup_io.c (I/O); each of them calls down
 * into dedup_util.c only, which calls none of them.
 */

/* dedup_util.c */
void fill_attrs_out(const struct dedup_store *st,
		    const struct dstore_attr *a,
		    struct fsal_attrlist *attrs_out);
void attrs_error(struct fsal_attrlist *attrs);
struct dedup_fsal_export *cur_export(void);
void dedup_release(struct fsal_obj_handle *obj_hdl);
fsal_status_t check_dir_write(struct fsal_obj_handle *dir);
int apply_attrs(struct dedup_store *st, uint64_t ino,
		object_file_type_t type, const struct fsal_attrlist *s,
		attrmask_t mask, struct dstore_attr *out);
fsal_status_t dedup_open_my_fd(struct fsal_fd *fd,
			       fsal_openflags_t openflags);
fsal_status_t dedup_close_my_fd(struct fsal_fd *fd);
fsal_status_t dedup_open_func(struct fsal_obj_handle *obj_hdl,
			      fsal_openflags_t openflags,
			      struct fsal_fd *fd);
fsal_status_t dedup_close_func(struct fsal_obj_handle *obj_hdl,
			       struct fsal_fd *fd);
fsal_status_t create_obj(struct fsal_obj_handle *dir_hdl,
			 const char *name, uint32_t dtype,
			 const struct fsal_attrlist *attrs_in,
			 uint64_t rdev, const char *target,
			 struct dstore_attr *a, bool *existed);

/* dedup_dir.c */
fsal_status_t dedup_lookup(struct fsal_obj_handle *parent, const char *path,
			   struct fsal_obj_handle **handle,
			   struct fsal_attrlist *attrs_out);
fsal_status_t dedup_readdir(struct fsal_obj_handle *dir_hdl,
			    fsal_cookie_t *whence, void *dir_state,
			    fsal_readdir_cb cb, attrmask_t attrmask,
			    bool *eof);
fsal_status_t dedup_mkdir(struct fsal_obj_handle *dir_hdl, const char *name,
			  struct fsal_attrlist *attrs_in,
			  struct fsal_obj_handle **new_obj,
			  struct fsal_attrlist *attrs_out);
fsal_status_t dedup_mknode(struct fsal_obj_handle *dir_hdl, const char *name,
			   object_file_type_t nodetype,
			   struct fsal_attrlist *attrs_in,
			   struct fsal_obj_handle **new_obj,
			   struct fsal_attrlist *attrs_out);
fsal_status_t dedup_symlink(struct fsal_obj_handle *dir_hdl,
			    const char *name, const char *link_path,
			    struct fsal_attrlist *attrs_in,
			    struct fsal_obj_handle **new_obj,
			    struct fsal_attrlist *attrs_out);
fsal_status_t dedup_readlink(struct fsal_obj_handle *obj_hdl,
			     struct gsh_buffdesc *link_content, bool refresh);
fsal_status_t dedup_link(struct fsal_obj_handle *obj_hdl,
			 struct fsal_obj_handle *dir_hdl, const char *name);
fsal_status_t dedup_rename(struct fsal_obj_handle *obj_hdl,
			   struct fsal_obj_handle *olddir_hdl,
			   const char *old_name,
			   struct fsal_obj_handle *newdir_hdl,
			   const char *new_name);
fsal_status_t dedup_unlink(struct fsal_obj_handle *dir_hdl,
			   struct fsal_obj_handle *obj_hdl, const char *name);

/* dedup_open.c */
fsal_status_t dedup_close(struct fsal_obj_handle *obj_hdl);
fsal_status_t dedup_open2(struct fsal_obj_handle *obj_hdl,
			  struct state_t *state, fsal_openflags_t openflags,
			  enum fsal_create_mode createmode, const char *name,
			  struct fsal_attrlist *attrs_set,
			  fsal_verifier_t verifier,
			  struct fsal_obj_handle **new_obj,
			  struct fsal_attrlist *attrs_out,
			  bool *caller_perm_check);
fsal_openflags_t dedup_status2(struct fsal_obj_handle *obj_hdl,
			       struct state_t *state);
fsal_status_t dedup_reopen2(struct fsal_obj_handle *obj_hdl,
			    struct state_t *state,
			    fsal_openflags_t openflags);
fsal_status_t dedup_lock_op2(struct fsal_obj_handle *obj_hdl,
			     struct state_t *state, void *owner,
			     fsal_lock_op_t lock_op,
			     fsal_lock_param_t *request_lock,
			     fsal_lock_param_t *conflicting_lock);
fsal_status_t dedup_close2(struct fsal_obj_handle *obj_hdl,
			   struct state_t *state);

/* dedup_io.c */
void dedup_read2(struct fsal_obj_handle *obj_hdl, bool bypass,
		 fsal_async_cb done_cb, struct fsal_io_arg *read_arg,
		 void *caller_arg);
void dedup_write2(struct fsal_obj_handle *obj_hdl, bool bypass,
		  fsal_async_cb done_cb, struct fsal_io_arg *write_arg,
		  void *caller_arg);
fsal_status_t dedup_commit2(struct fsal_obj_handle *obj_hdl, off_t offset,
			    size_t len);
fsal_status_t dedup_fallocate(struct fsal_obj_handle *obj_hdl,
			      struct state_t *state, uint64_t offset,
			      uint64_t length, bool allocate);
fsal_status_t dedup_seek2(struct fsal_obj_handle *obj_hdl,
			  struct state_t *state, struct io_info *info);

#endif /* DEDUP_INT_H */
