// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * What the CSI service (csi/service.h) needs of Ganesha: the exports on
 * its store and whom they admit (PROTOCOL.md §7 "Access"), and the
 * up-call that drops Ganesha's cached attributes of a file a CSI WRITE
 * changed, so NFS clients see CSI writes.
 *
 * A CSI call is admitted by Ganesha's own check of an NFSv4 call,
 * nfs4_export_check_access, run on the call's address, port and AUTH_SYS
 * credential in an op context of each export of the store: so the
 * export's CLIENT blocks (netgroups and host names too), EXPORT_DEFAULTS,
 * Access_Type, Protocols (4 must be among them), PrivilegedPort, SecType
 * and Squash apply to CSI exactly as they do to NFS, and the caller comes
 * back as the export squashed it, for the service's mode checks.  What
 * CSI cannot follow it refuses: an export whose own rules (its EXPORT or
 * CLIENT blocks) set Manage_Gids, or a SecType of Kerberos flavours only,
 * is not served over CSI at all, said at start with what to change; one
 * that gets Manage_Gids from EXPORT_DEFAULTS admits no CSI call, said
 * once.  Ganesha's group list for Manage_Gids cannot be given back from a
 * FSAL (its release is not exported), and CSI hosts speak AUTH_SYS only.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "fsal.h"
#include "export_mgr.h"
#include "nfs_creds.h"
#include "nfs_exports.h"
#include "FSAL/fsal_commonlib.h"
#include "dedup_int.h"
#include "csi/service.h"

/* Exports of one store looked at per call; more are not (said once). */
#define DEDUP_CSI_MAX_EXPORTS 16

/* The rule of perms that CSI cannot enforce, and what to change; or NULL. */
static const char *perms_unenforceable(const struct export_perms *p)
{
	const uint32_t sys = EXPORT_OPTION_AUTH_NONE | EXPORT_OPTION_AUTH_UNIX;

	if (p->set & p->options & EXPORT_OPTION_MANAGE_GIDS)
		return "Manage_Gids = true (set it false)";
	if ((p->set & EXPORT_OPTION_AUTH_TYPES) && !(p->options & sys))
		return "SecType of Kerberos flavours only (CSI hosts send AUTH_SYS: add sys)";
	return NULL;
}

/*
 * Whether CSI can enforce the rules export exp sets itself; if not, says
 * which and what to change.  Its defaults (EXPORT_DEFAULTS) are looked at
 * per call.  The export is still being made: nothing else holds it.
 */
static bool export_enforceable(struct gsh_export *exp, const char *pseudo)
{
	const char *why = perms_unenforceable(&exp->export_perms);
	struct glist_head *g;

	glist_for_each(g, &exp->clients) {
		if (why != NULL)
			break;
		why = perms_unenforceable(&glist_entry(g,
			exportlist_client_entry_t, cle_list)->client_perms);
	}
	if (why == NULL)
		return true;
	LogCrit(COMPONENT_FSAL,
		"DEDUP: export %s is served over NFS only, not over CSI, which cannot enforce its %s; or export it from a store without CSI",
		pseudo, why);
	return false;
}

void dedup_csi_export_add(struct dedup_fsal_export *e)
{
	struct dedup_store *st = e->store;
	const char *pseudo = op_ctx->ctx_pseudopath != NULL ?
			     CTX_PSEUDOPATH(op_ctx) : CTX_FULLPATH(op_ctx);

	if (st->csi != NULL && !export_enforceable(op_ctx->ctx_export, pseudo))
		return;
	e->gsh_export = op_ctx->ctx_export;
	e->pseudo_path = gsh_strdup(pseudo);
	PTHREAD_RWLOCK_wrlock(&st->exports_lock);
	glist_add_tail(&st->exports, &e->store_entry);
	PTHREAD_RWLOCK_unlock(&st->exports_lock);
}

void dedup_csi_export_remove(struct dedup_fsal_export *e)
{
	struct dedup_store *st = e->store;

	if (e->pseudo_path == NULL)
		return;		/* never added (or not served over CSI) */
	PTHREAD_RWLOCK_wrlock(&st->exports_lock);
	glist_del(&e->store_entry);
	PTHREAD_RWLOCK_unlock(&st->exports_lock);
	gsh_free(e->pseudo_path);
	e->pseudo_path = NULL;
}

/*
 * The call as Ganesha's RPC layer hands an NFS request to
 * nfs4_export_check_access: the transport's type, the flavor and the
 * decoded authsys_parms in the message's credential body.
 */
struct csi_nfs_req {
	SVCXPRT xprt;
	struct svc_req req;
	gid_t gids[SC_RPC_AUTH_SYS_MAX_GIDS];
};

static void nfs_req_init(struct csi_nfs_req *r,
			 const struct sc_rpc_auth_sys *cred)
{
	struct authunix_parms *aup;
	uint32_t i;

	memset(r, 0, sizeof(*r));
	r->xprt.xp_type = XPRT_TCP;
	r->req.rq_xprt = &r->xprt;
	if (cred == NULL) {
		r->req.rq_msg.cb_cred.oa_flavor = AUTH_NONE;
		return;
	}
	static_assert(sizeof(*aup) <= sizeof(r->req.rq_msg.rq_cred_body),
		      "authunix_parms fits a credential body");
	aup = (struct authunix_parms *)r->req.rq_msg.rq_cred_body;
	r->req.rq_msg.cb_cred.oa_flavor = AUTH_UNIX;
	aup->aup_time = (int32_t)cred->stamp;
	aup->aup_uid = cred->uid;
	aup->aup_gid = cred->gid;
	for (i = 0; i < cred->ngids; i++)
		r->gids[i] = cred->gids[i];
	aup->aup_len = cred->ngids;
	aup->aup_gids = r->gids;
}

/* op_ctx->creds, as the export's Squash left them, into out. */
static void caller_from_ctx(struct csi_caller *out)
{
	const struct user_cred *c = &op_ctx->creds;
	uint32_t i, n = c->caller_glen;

	out->uid = c->caller_uid;
	out->gid = c->caller_gid;
	if (n > CSI_CALLER_MAX_GIDS)
		n = CSI_CALLER_MAX_GIDS;
	for (i = 0; i < n; i++)
		out->gids[i] = c->caller_garray[i];
	out->ngids = n;
}

/*
 * Does export e admit the call as NFS would admit an NFSv4 call from the
 * same address, port and credential, for the access wanted?  0 with the
 * squashed caller in *out, -EACCES, or -EROFS (a write to a read-only
 * export).  Holds a reference on the export for the time of the check.
 */
static int export_admits(struct dedup_fsal_export *e, sockaddr_t *addr,
			 const struct sc_rpc_auth_sys *cred, bool write,
			 struct csi_caller *out)
{
	static bool warned_managed;
	struct req_op_context ctx;
	struct csi_nfs_req r;
	uint32_t options;
	nfsstat4 st;
	int rc = 0;

	get_gsh_export_ref(e->gsh_export);
	init_op_context(&ctx, e->gsh_export, &e->export, addr, NFS_V4, 0,
			NFS_REQUEST);
	/*
	 * Anonymous first: it fills the export's options for the address
	 * and, squashed, never asks for a managed group list.
	 */
	nfs_req_init(&r, NULL);
	st = nfs4_export_check_access(&r.req);
	options = op_ctx->export_perms.options;
	if (options & EXPORT_OPTION_MANAGE_GIDS) {
		if (!warned_managed) {
			warned_managed = true;
			LogWarn(COMPONENT_FSAL,
				"DEDUP: CSI admits no call to an export with Manage_Gids = true (here from EXPORT_DEFAULTS); set it false on exports CSI hosts use");
		}
		rc = -EACCES;
		goto out;
	}
	if (cred != NULL) {
		nfs_req_init(&r, cred);
		st = nfs4_export_check_access(&r.req);
		options = op_ctx->export_perms.options;
	}
	if (st != NFS4_OK || !(options & EXPORT_OPTION_READ_ACCESS))
		rc = -EACCES;
	else if (write && !(options & EXPORT_OPTION_WRITE_ACCESS))
		rc = -EROFS;
	else
		caller_from_ctx(out);
	/* a squashed group list is Ganesha's copy, made for this call */
	gsh_free(op_ctx->caller_garray_copy);
	op_ctx->caller_garray_copy = NULL;
out:
	release_op_context();
	return rc;
}

static int csi_admit(void *ctx, const char *export_path,
		     const struct sockaddr *host,
		     const struct sc_rpc_auth_sys *cred, bool write,
		     struct csi_callers *out)
{
	static bool warned_many;
	struct dedup_store *st = ctx;
	struct dedup_fsal_export *found[DEDUP_CSI_MAX_EXPORTS];
	struct glist_head *g;
	sockaddr_t addr;
	int rc = export_path != NULL ? -ENOENT : -EACCES, one;
	unsigned int n = 0, i;

	out->n = 0;
	if (host == NULL || (host->sa_family != AF_INET &&
			     host->sa_family != AF_INET6))
		return -EACCES;
	memset(&addr, 0, sizeof(addr));
	memcpy(&addr, host, host->sa_family == AF_INET ?
	       sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
	/*
	 * The exports are taken, with a reference each, under the lock and
	 * checked without it: dropping the last reference of an export
	 * being removed releases it, which takes this lock.
	 */
	PTHREAD_RWLOCK_rdlock(&st->exports_lock);
	glist_for_each(g, &st->exports) {
		struct dedup_fsal_export *e =
			glist_entry(g, struct dedup_fsal_export, store_entry);

		if (export_path != NULL && strcmp(e->pseudo_path, export_path))
			continue;
		if (n == DEDUP_CSI_MAX_EXPORTS) {
			if (!warned_many) {
				warned_many = true;
				LogWarn(COMPONENT_FSAL,
					"DEDUP: CSI looks at the first %d exports of a store only",
					DEDUP_CSI_MAX_EXPORTS);
			}
			break;
		}
		get_gsh_export_ref(e->gsh_export);
		found[n++] = e;
	}
	PTHREAD_RWLOCK_unlock(&st->exports_lock);
	for (i = 0; i < n; i++) {
		if (out->n < CSI_MAX_CALLERS) {
			one = export_admits(found[i], &addr, cred, write,
					    &out->c[out->n]);
			if (one == 0)
				out->n++;
			else if (one == -EROFS || rc != -EROFS)
				rc = one;
		}
		put_gsh_export(found[i]->gsh_export);
	}
	return out->n ? 0 : rc;
}

/* NFS clients see the CSI write: each export's cached entry goes. */
static void csi_file_changed(void *ctx, uint64_t ino)
{
	struct dedup_store *st = ctx;
	uint8_t key[DEDUP_KEY_SIZE];
	struct gsh_buffdesc kd = { .addr = key, .len = sizeof(key) };
	struct glist_head *g;

	dedup_wire_encode(key, st->tag, ino);
	PTHREAD_RWLOCK_rdlock(&st->exports_lock);
	glist_for_each(g, &st->exports) {
		struct dedup_fsal_export *e =
			glist_entry(g, struct dedup_fsal_export, store_entry);
		const struct fsal_up_vector *up = e->export.up_ops;

		if (up != NULL && up->invalidate != NULL)
			up->invalidate(up, &kd, FSAL_UP_INVALIDATE_CACHE);
	}
	PTHREAD_RWLOCK_unlock(&st->exports_lock);
}

const struct csi_service_hooks dedup_csi_hooks = {
	.admit = csi_admit,
	.file_changed = csi_file_changed,
};
