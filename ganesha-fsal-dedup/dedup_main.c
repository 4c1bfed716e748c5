// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * FSAL_DEDUP module: registration, the server-wide DEDUP { } block, the
 * table of open stores and the error and log glue to the store.
 *
 * Adapted from NFS-Ganesha FSAL_MEM, LGPL-3.0-or-later
 * (mem_main.c, Copyright 2017-2019 Red Hat, Inc., Daniel Gryniewicz).
 */

#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fsal.h"
#include "fsal_convert.h"
#include "nfs_core.h"
#include "nfs_init.h"
#include "FSAL/fsal_init.h"
#include "FSAL/fsal_commonlib.h"
#include "dedup_int.h"
#include "server_thread.h"
#include "seacache/peer_token.h"

#define DEDUP_SUPPORTED_ATTRIBUTES (ATTRS_POSIX | ATTR_CREATION)

/* DEDUP { } ranges: the store's own here, the CSI service's in defaults.h */
#define MAP_SIZE_MAX (1ull << 40)
#define CONTAINER_SIZE_MIN (64ull << 20)
#define CONTAINER_SIZE_MAX (64ull << 30)
#define MAX_READERS_MIN 16u
#define MAX_READERS_MAX 65536u
#define HOUSEKEEPING_MAX_MS 3600000u
#define WRITEBACK_MAX (64ull << 30)

static const char dedup_name[] = "DEDUP";

struct dedup_fsal_module DEDUP = {
	.fsal = {
		.fs_info = {
			.maxfilesize = INT64_MAX,
			.maxlink = UINT32_MAX,
			.maxnamelen = DSTORE_NAME_MAX,
			.maxpathlen = DSTORE_SYMLINK_MAX + 1,
			.no_trunc = true,
			.chown_restricted = true,
			.case_insensitive = false,
			.case_preserving = true,
			.link_support = true,
			.symlink_support = true,
			.lock_support = true,
			.lock_support_async_block = false,
			.named_attr = false,
			.unique_handles = true,
			.acl_support = 0,
			.cansettime = true,
			.homogenous = true,
			.supported_attrs = DEDUP_SUPPORTED_ATTRIBUTES,
			.maxread = FSAL_MAXIOSIZE,
			.maxwrite = FSAL_MAXIOSIZE,
			.umask = 0,
			.auth_exportpath_xdev = false,
			.link_supports_permission_checks = false,
			.readdir_plus = true,
			.expire_time_parent = -1,
		}
	}
};

/* ---------------------------------------------------------------------
 * DEDUP { } block
 */

static int dedup_conf_commit(void *node, void *link_mem, void *self_struct,
			     struct config_error_type *err_type)
{
	struct dedup_fsal_module *m = self_struct;

	(void)node;
	(void)link_mem;
	if ((m->block_size & (m->block_size - 1)) != 0) {
		LogCrit(COMPONENT_CONFIG,
			"DEDUP { Block_Size = %" PRIu32
			"; } must be a power of two (%u..%u)",
			m->block_size, SC_BLOCK_SIZE_MIN, SC_BLOCK_SIZE_MAX);
		err_type->invalid = true;
		return 1;
	}
	return 0;
}

static struct config_item dedup_items[] = {
	CONF_ITEM_UI32("Block_Size", SC_BLOCK_SIZE_MIN, SC_BLOCK_SIZE_MAX,
		       SC_BLOCK_SIZE_DEFAULT,
		       dedup_fsal_module, block_size),
	CONF_ITEM_BOOL("Verify_Reads", true, dedup_fsal_module, verify_reads),
	CONF_ITEM_UI64("Index_Map_Size", DSTORE_MAP_SIZE_MIN, MAP_SIZE_MAX,
		       DSTORE_MAP_SIZE_DEFAULT, dedup_fsal_module, map_size),
	CONF_ITEM_UI64("Container_Size", CONTAINER_SIZE_MIN, CONTAINER_SIZE_MAX,
		       DSTORE_CONTAINER_SIZE_DEFAULT, dedup_fsal_module,
		       container_size),
	CONF_ITEM_UI32("Max_Readers", MAX_READERS_MIN, MAX_READERS_MAX,
		       DSTORE_MAX_READERS_DEFAULT,
		       dedup_fsal_module, max_readers),
	CONF_ITEM_UI32("Housekeeping_Interval", 0, HOUSEKEEPING_MAX_MS,
		       DSTORE_RECLAIM_INTERVAL_DEFAULT,
		       dedup_fsal_module, housekeeping_ms),
	CONF_ITEM_UI64("Writeback_Buffer", DSTORE_WRITEBACK_MIN,
		       WRITEBACK_MAX, DSTORE_WRITEBACK_DEFAULT,
		       dedup_fsal_module, writeback_bytes),
	CONF_ITEM_UI16("CSI_Port", 0, UINT16_MAX, 0, dedup_fsal_module,
		       csi_port),
	CONF_ITEM_STR("CSI_Bind_Addr", 1, 64, "0.0.0.0", dedup_fsal_module,
		      csi_bind_addr),
	CONF_ITEM_UI32("CSI_Max_Hosts", 1, SC_CSI_MAX_HOSTS_MAX,
		       SC_CSI_MAX_HOSTS_DEFAULT,
		       dedup_fsal_module, csi_max_hosts),
	CONF_ITEM_UI32("CSI_Tracker_Entries", SC_CSI_TRACKER_ENTRIES_MIN,
		       SC_CSI_TRACKER_ENTRIES_MAX,
		       SC_CSI_TRACKER_ENTRIES_DEFAULT,
		       dedup_fsal_module, csi_tracker_entries),
	CONF_ITEM_UI32("CSI_Tracker_Host_Percent",
		       SC_CSI_TRACKER_HOST_PERCENT_MIN,
		       SC_CSI_TRACKER_HOST_PERCENT_MAX,
		       SC_CSI_TRACKER_HOST_PERCENT_DEFAULT,
		       dedup_fsal_module, csi_tracker_host_percent),
	CONF_ITEM_UI32("CSI_Max_Hosts_Per_Addr", 1, SC_CSI_MAX_HOSTS_MAX,
		       SC_CSI_HOSTS_PER_ADDR_DEFAULT,
		       dedup_fsal_module, csi_max_hosts_per_addr),
	CONF_ITEM_UI32("CSI_Lease", SC_CSI_LEASE_S_MIN, SC_CSI_LEASE_S_MAX,
		       SC_CSI_LEASE_S_DEFAULT, dedup_fsal_module, csi_lease),
	CONF_ITEM_UI32("CSI_Features", 0, CSI_FEAT_ALL, CSI_FEAT_ALL,
		       dedup_fsal_module, csi_features),
	CONF_ITEM_UI32("CSI_Max_Push", 1, CSI_MAX_PUSH,
		       SC_CSI_MAX_PUSH_DEFAULT,
		       dedup_fsal_module, csi_max_push),
	CONF_ITEM_UI32("CSI_Push_Search_Ms", 0, SC_CSI_PUSH_SEARCH_MS_MAX,
		       SC_CSI_PUSH_SEARCH_MS_DEFAULT, dedup_fsal_module,
		       csi_push_search_ms),
	CONF_ITEM_BOOL("CSI_Delegate_Cached", false, dedup_fsal_module,
		       csi_delegate_cached),
	CONF_ITEM_UI32("CSI_Token_Lifetime", 1, SC_PEER_TOKEN_MAX_AHEAD,
		       SC_CSI_TOKEN_S_DEFAULT,
		       dedup_fsal_module, csi_token_seconds),
	CONF_ITEM_UI32("CSI_Peer_Failures", 1, SC_CSI_PEER_FAILURES_MAX,
		       SC_CSI_PEER_FAILURES_DEFAULT,
		       dedup_fsal_module, csi_peer_failures),
	CONF_ITEM_UI32("CSI_Peer_Suspend", 1, SC_CSI_PEER_SUSPEND_S_MAX,
		       SC_CSI_PEER_SUSPEND_S_DEFAULT,
		       dedup_fsal_module, csi_peer_suspend_seconds),
	CONF_ITEM_UI32("CSI_Workers", 1, SC_CSI_WORKERS_MAX,
		       SC_CSI_WORKERS_DEFAULT, dedup_fsal_module, csi_workers),
	CONF_ITEM_UI32("CSI_Max_Calls_Per_Conn", 1,
		       SC_CSI_MAX_CALLS_PER_CONN_MAX,
		       SC_CSI_MAX_CALLS_PER_CONN_DEFAULT,
		       dedup_fsal_module, csi_max_calls_per_conn),
	CONFIG_EOL
};

static struct config_block dedup_block = {
	.dbus_interface_name = "org.ganesha.nfsd.config.fsal.dedup",
	.blk_desc.name = "DEDUP",
	.blk_desc.type = CONFIG_BLOCK,
	.blk_desc.u.blk.init = noop_conf_init,
	.blk_desc.u.blk.params = dedup_items,
	.blk_desc.u.blk.commit = dedup_conf_commit
};

static fsal_status_t dedup_init_config(struct fsal_module *fsal_hdl,
				       config_file_t config_struct,
				       struct config_error_type *err_type)
{
	struct dedup_fsal_module *me =
		container_of(fsal_hdl, struct dedup_fsal_module, fsal);

	(void)load_config_from_parse(config_struct, &dedup_block, me, true,
				     err_type);
	if (!config_error_is_harmless(err_type)) {
		/* A bad server-wide DEDUP { } block stops ganesha.nfsd: every
		 * DEDUP export would be refused and the server would run on
		 * without them.  Ganesha collects its own range errors (value
		 * and line, not the parameter's name) in err_type and logs them
		 * only once every EXPORT block is read: log them now, then list
		 * what is accepted.  Export-level errors (a bad FSAL { Store },
		 * a store that cannot be opened: dedup_create_export) are not
		 * fatal: that export is refused with a CRIT line and the others
		 * keep being served, also on a dynamic export add. */
		report_config_errors(err_type, NULL, config_errs_to_log);
		LogFatal(COMPONENT_FSAL,
			 "DEDUP: invalid DEDUP { } block, ganesha.nfsd stops. Accepted: Block_Size %u..%u (a power of two), Verify_Reads true|false, Index_Map_Size %llu..%llu, Container_Size %llu..%llu, Max_Readers %u..%u, Housekeeping_Interval 0..%u (ms; 0: off), Writeback_Buffer %llu..%llu. Fix the DEDUP block in %s and restart.",
			 SC_BLOCK_SIZE_MIN, SC_BLOCK_SIZE_MAX,
			 (unsigned long long)DSTORE_MAP_SIZE_MIN, MAP_SIZE_MAX,
			 CONTAINER_SIZE_MIN, CONTAINER_SIZE_MAX,
			 MAX_READERS_MIN, MAX_READERS_MAX, HOUSEKEEPING_MAX_MS,
			 DSTORE_WRITEBACK_MIN, WRITEBACK_MAX,
			 nfs_config_path ? nfs_config_path : "the configuration file");
		return fsalstat(ERR_FSAL_INVAL, 0); /* not reached */
	}

	LogInfo(COMPONENT_FSAL,
		"DEDUP: Block_Size %" PRIu32 ", Verify_Reads %s, Index_Map_Size %"
		PRIu64 ", Container_Size %" PRIu64 ", Max_Readers %" PRIu32
		", Housekeeping_Interval %" PRIu32 " ms, Writeback_Buffer %"
		PRIu64,
		me->block_size, me->verify_reads ? "true" : "false",
		me->map_size, me->container_size, me->max_readers,
		me->housekeeping_ms, me->writeback_bytes);
	display_fsinfo(&me->fsal);
	return fsalstat(ERR_FSAL_NO_ERROR, 0);
}

/* ---------------------------------------------------------------------
 * Errors
 */

fsal_status_t dedup_status(int rc)
{
	if (rc >= 0)
		return fsalstat(ERR_FSAL_NO_ERROR, 0);
	return fsalstat(posix2fsal_error(-rc), -rc);
}

fsal_status_t dedup_status_obj(int rc)
{
	if (rc == -ENOENT)
		return fsalstat(ERR_FSAL_STALE, ESTALE);
	return dedup_status(rc);
}

/* ---------------------------------------------------------------------
 * Open stores: one dstore per directory, shared by the exports naming it
 */

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static struct glist_head store_list = { &store_list, &store_list };

static void dedup_store_log(void *ctx, int level, const char *msg)
{
	struct dedup_store *st = ctx;

	switch (level) {
	case DSTORE_LOG_ERROR:
		LogCrit(COMPONENT_FSAL, "DEDUP store %s: %s", st->path, msg);
		break;
	case DSTORE_LOG_WARN:
		LogWarn(COMPONENT_FSAL, "DEDUP store %s: %s", st->path, msg);
		break;
	default:
		LogInfo(COMPONENT_FSAL, "DEDUP store %s: %s", st->path, msg);
		break;
	}
}

/* The path without trailing slashes, resolved if it exists. */
static char *canonical_path(const char *path)
{
	char *real = realpath(path, NULL);
	char *p;
	size_t n;

	if (real != NULL) {
		p = gsh_strdup(real);
		free(real);
		return p;
	}
	p = gsh_strdup(path);
	n = strlen(p);
	while (n > 1 && p[n - 1] == '/')
		p[--n] = '\0';
	return p;
}

static struct dedup_store *store_find_locked(const char *path)
{
	struct glist_head *g;

	glist_for_each(g, &store_list) {
		struct dedup_store *st =
			glist_entry(g, struct dedup_store, entry);

		if (strcmp(st->path, path) == 0)
			return st;
	}
	return NULL;
}

/*
 * The CSI service (CSI_Port set) serves the first store opened; it is
 * one port and one epoch for one store.  store_lock held.
 */
static void csi_start_locked(struct dedup_store *st)
{
	struct csi_service_hooks hooks = dedup_csi_hooks;
	struct csi_server_opts so = {
		.bind_addr = DEDUP.csi_bind_addr,
		.port = DEDUP.csi_port,
		.workers = DEDUP.csi_workers,
		.max_calls_per_conn = DEDUP.csi_max_calls_per_conn,
	};
	struct csi_service_config c = {
		.max_hosts = DEDUP.csi_max_hosts,
		.tracker_entries = DEDUP.csi_tracker_entries,
		.tracker_host_percent = DEDUP.csi_tracker_host_percent,
		.max_hosts_per_addr = DEDUP.csi_max_hosts_per_addr,
		.lease_seconds = DEDUP.csi_lease,
		.features = DEDUP.csi_features,
		.max_push = DEDUP.csi_max_push,
		.push_search_ms = DEDUP.csi_push_search_ms,
		.delegate_cached = DEDUP.csi_delegate_cached,
		.token_seconds = DEDUP.csi_token_seconds,
		.peer_failures = DEDUP.csi_peer_failures,
		.peer_suspend_seconds = DEDUP.csi_peer_suspend_seconds,
		.hooks = &hooks,
	};
	struct dedup_store *other;
	struct glist_head *gl;
	char err[256];

	if (DEDUP.csi_port == 0)
		return;
	hooks.ctx = st;
	glist_for_each(gl, &store_list) {
		other = glist_entry(gl, struct dedup_store, entry);
		if (other->csi) {
			LogWarn(COMPONENT_FSAL,
				"DEDUP: the CSI service serves store %s only, not %s",
				other->path, st->path);
			return;
		}
	}
	st->csi = csi_server_thread_start(st->ds, &so, &c, err, sizeof(err));
	if (!st->csi) {
		LogCrit(COMPONENT_FSAL,
			"DEDUP: no CSI service for store %s: %s", st->path,
			err);
		return;
	}
	LogEvent(COMPONENT_FSAL,
		 "DEDUP: CSI service for store %s on %s port %u (%u workers), epoch %" PRIx64,
		 st->path, DEDUP.csi_bind_addr, DEDUP.csi_port,
		 DEDUP.csi_workers,
		 csi_server_thread_epoch(st->csi));
}

/*
 * The NFS write verifier of WRITE and COMMIT replies is Ganesha's
 * nfs_ServerEpoch, the second the server started, built once the exports
 * are read.  Started again within that second (after a crash), a server
 * would answer with its predecessor's verifier, and clients would not
 * send again the UNSTABLE writes the crash lost: the store hands out an
 * epoch past every one before (kept durably), taken here while the
 * exports are read at start.
 */
static void server_epoch_advance(struct dedup_store *st)
{
	uint64_t epoch;
	int rc;

	if (nfs_init_wait_timeout(0) == 0)
		return;		/* an export added while running */
	rc = dstore_epoch_next(st->ds, (uint64_t)nfs_ServerEpoch, &epoch);
	if (rc < 0) {
		LogCrit(COMPONENT_FSAL,
			"DEDUP: store %s: no start epoch (%s): the write verifier is the start's second",
			st->path, strerror(-rc));
		return;
	}
	nfs_ServerEpoch = (time_t)epoch;
}

struct dedup_store *dedup_store_get(const char *path)
{
	struct dedup_store *st;
	struct dstore_params p;
	char err[512];
	char *canon = canonical_path(path);
	int rc;

	PTHREAD_MUTEX_lock(&store_lock);
	st = store_find_locked(canon);
	if (st != NULL) {
		st->refcount++;
		PTHREAD_MUTEX_unlock(&store_lock);
		gsh_free(canon);
		LogInfo(COMPONENT_FSAL, "DEDUP: sharing open store %s",
			st->path);
		return st;
	}

	st = gsh_calloc(1, sizeof(*st));
	st->path = canon;
	dstore_params_default(&p);
	p.block_size = DEDUP.block_size;
	p.map_size = DEDUP.map_size;
	p.container_size = DEDUP.container_size;
	p.max_readers = DEDUP.max_readers;
	p.verify_reads = DEDUP.verify_reads;
	p.reclaim_interval_ms = DEDUP.housekeeping_ms;
	p.writeback_bytes = DEDUP.writeback_bytes;
	p.read_only = false;
	p.log = dedup_store_log;
	p.log_ctx = st;
	err[0] = '\0';
	rc = dstore_open(path, &p, &st->ds, err, sizeof(err));
	if (rc < 0) {
		LogCrit(COMPONENT_FSAL,
			"DEDUP: cannot open FSAL { Store = %s; }: %s",
			path, err[0] != '\0' ? err : strerror(-rc));
		PTHREAD_MUTEX_unlock(&store_lock);
		gsh_free(st->path);
		gsh_free(st);
		return NULL;
	}

	/* The directory exists now: key the table by its real name. */
	st->path = canonical_path(path);
	gsh_free(canon);
	st->refcount = 1;
	PTHREAD_RWLOCK_init(&st->exports_lock, NULL);
	glist_init(&st->exports);
	st->block_size = dstore_block_size(st->ds);
	st->tag = dstore_id(st->ds);
	st->fsid.major = st->tag;
	st->fsid.minor = DSTORE_ROOT_INO;
	server_epoch_advance(st);
	csi_start_locked(st);
	glist_add_tail(&store_list, &st->entry);
	PTHREAD_MUTEX_unlock(&store_lock);

	LogEvent(COMPONENT_FSAL,
		 "DEDUP: opened store %s (block size %" PRIu32 ")",
		 st->path, st->block_size);
	return st;
}

void dedup_store_ref(struct dedup_store *st)
{
	PTHREAD_MUTEX_lock(&store_lock);
	st->refcount++;
	PTHREAD_MUTEX_unlock(&store_lock);
}

void dedup_store_put(struct dedup_store *st)
{
	PTHREAD_MUTEX_lock(&store_lock);
	if (--st->refcount > 0) {
		PTHREAD_MUTEX_unlock(&store_lock);
		return;
	}
	glist_del(&st->entry);
	/* The service stops before its store closes. */
	csi_server_thread_stop(st->csi);
	/* Closed under the lock so a new export cannot open it meanwhile. */
	dstore_close(st->ds);
	PTHREAD_MUTEX_unlock(&store_lock);
	PTHREAD_RWLOCK_destroy(&st->exports_lock);

	LogEvent(COMPONENT_FSAL, "DEDUP: closed store %s", st->path);
	gsh_free(st->path);
	gsh_free(st);
}

/* ---------------------------------------------------------------------
 * Registration
 */

MODULE_INIT static void dedup_fsal_init(void)
{
	struct fsal_module *myself = &DEDUP.fsal;

	if (register_fsal(myself, dedup_name, FSAL_MAJOR_VERSION,
			  FSAL_MINOR_VERSION, FSAL_ID_NO_PNFS) != 0) {
		LogCrit(COMPONENT_FSAL, "DEDUP module failed to register.");
		return;
	}
	myself->m_ops.create_export = dedup_create_export;
	myself->m_ops.update_export = dedup_update_export;
	myself->m_ops.init_config = dedup_init_config;
	dedup_handle_ops_init(&DEDUP.handle_ops);
}

MODULE_FINI static void dedup_fsal_fini(void)
{
	struct glist_head *gl;

	/* no thread of ours may outlive the module's code */
	glist_for_each(gl, &store_list) {
		struct dedup_store *st =
			glist_entry(gl, struct dedup_store, entry);

		csi_server_thread_stop(st->csi);
		st->csi = NULL;
	}
	if (unregister_fsal(&DEDUP.fsal) != 0) {
		LogCrit(COMPONENT_FSAL,
			"DEDUP: unable to unload FSAL. Dying with extreme prejudice.");
		abort();
	}
}
