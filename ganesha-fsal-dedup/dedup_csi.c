// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * What the CSI service (csi/service.h) needs of Ganesha: the exports on
 * its store (LOOKUP's export paths), who may use them (PROTOCOL.md §7
 * "Access"), and the up-call that drops Ganesha's cached attributes of a
 * file a CSI WRITE changed, so NFS clients see CSI writes.
 *
 * Access follows the export's CLIENT blocks and its own Access_Type, as
 * NFS does, for clients given as addresses or networks (and "*").  Ganesha
 * does not export its client matcher, so netgroup and host-name wildcard
 * clients never match for CSI (a host so listed gets SC_ERR_ACCESS, said
 * once in the log), and an EXPORT_DEFAULTS Access_Type is not consulted:
 * CSI access is never wider than NFS access.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "fsal.h"
#include "export_mgr.h"
#include "nfs_exports.h"
#include "cidr.h"
#include "FSAL/fsal_commonlib.h"
#include "dedup_int.h"
#include "csi/service.h"

void dedup_csi_export_add(struct dedup_fsal_export *e)
{
	struct dedup_store *st = e->store;

	e->gsh_export = op_ctx->ctx_export;
	e->pseudo_path = gsh_strdup(op_ctx->ctx_pseudopath != NULL ?
				    CTX_PSEUDOPATH(op_ctx) :
				    CTX_FULLPATH(op_ctx));
	PTHREAD_RWLOCK_wrlock(&st->exports_lock);
	glist_add_tail(&st->exports, &e->store_entry);
	PTHREAD_RWLOCK_unlock(&st->exports_lock);
}

void dedup_csi_export_remove(struct dedup_fsal_export *e)
{
	struct dedup_store *st = e->store;

	if (e->pseudo_path == NULL)
		return;		/* never added */
	PTHREAD_RWLOCK_wrlock(&st->exports_lock);
	glist_del(&e->store_entry);
	PTHREAD_RWLOCK_unlock(&st->exports_lock);
	gsh_free(e->pseudo_path);
	e->pseudo_path = NULL;
}

/* The caller as Ganesha's CIDR holds it: IPv4 (also v4-mapped) or IPv6. */
static bool host_cidr(const struct sockaddr *sa, CIDR *out)
{
	static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					       0xff, 0xff };

	memset(out, 0, sizeof(*out));
	if (sa == NULL)
		return false;
	if (sa->sa_family == AF_INET) {
		out->proto = CIDR_IPV4;
		memcpy(out->addr + 12,
		       &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family != AF_INET6)
		return false;
	memcpy(out->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	out->proto = memcmp(out->addr, v4_mapped, 12) == 0 ? CIDR_IPV4 :
							      CIDR_IPV6;
	if (out->proto == CIDR_IPV4)
		memset(out->addr, 0, 12);
	return true;
}

static bool cidr_holds(const CIDR *net, const CIDR *host)
{
	int i = net->proto == CIDR_IPV4 ? 12 : 0;

	if (net->proto != host->proto)
		return false;
	for (; i < 16; i++)
		if ((net->addr[i] & net->mask[i]) !=
		    (host->addr[i] & net->mask[i]))
			return false;
	return true;
}

static bool client_matches(const exportlist_client_entry_t *c,
			   const CIDR *host)
{
	static bool warned;

	switch (c->type) {
	case MATCH_ANY_CLIENT:
		return true;
	case NETWORK_CLIENT:
		return cidr_holds(c->client.network.cidr, host);
	case NETGROUP_CLIENT:
	case WILDCARDHOST_CLIENT:
		if (!warned) {
			warned = true;
			LogWarn(COMPONENT_FSAL,
				"DEDUP: CSI access ignores netgroup and host-name clients of an export; list CSI hosts by address or network");
		}
		return false;
	default:
		return false;
	}
}

/* The export's options for host, as export_check_access combines them. */
static uint32_t export_options(struct gsh_export *exp, const CIDR *host)
{
	const exportlist_client_entry_t *client = NULL;
	struct glist_head *g;
	uint32_t options = 0, set = 0;

	PTHREAD_RWLOCK_rdlock(&exp->lock);
	glist_for_each(g, &exp->clients) {
		const exportlist_client_entry_t *c =
			glist_entry(g, exportlist_client_entry_t, cle_list);

		if (client_matches(c, host)) {
			client = c;
			break;
		}
	}
	if (client != NULL) {
		options = client->client_perms.options &
			  client->client_perms.set;
		set = client->client_perms.set;
	}
	options |= exp->export_perms.options & exp->export_perms.set & ~set;
	PTHREAD_RWLOCK_unlock(&exp->lock);
	return options;
}

static int access_of(uint32_t options, bool write)
{
	if (!(options & EXPORT_OPTION_READ_ACCESS))
		return -EACCES;
	return write && !(options & EXPORT_OPTION_WRITE_ACCESS) ? -EROFS : 0;
}

static int csi_export_root(void *ctx, const char *export_path,
			   const struct sockaddr *host, uint64_t *root)
{
	struct dedup_store *st = ctx;
	struct glist_head *g;
	CIDR who;
	int rc = -ENOENT;

	if (!host_cidr(host, &who))
		return -EACCES;
	PTHREAD_RWLOCK_rdlock(&st->exports_lock);
	glist_for_each(g, &st->exports) {
		struct dedup_fsal_export *e =
			glist_entry(g, struct dedup_fsal_export, store_entry);

		if (strcmp(e->pseudo_path, export_path) != 0)
			continue;
		rc = access_of(export_options(e->gsh_export, &who), false);
		break;
	}
	PTHREAD_RWLOCK_unlock(&st->exports_lock);
	/* every export of a store shows the store's whole tree */
	if (rc == 0)
		*root = DSTORE_ROOT_INO;
	return rc;
}

/* The widest access any export of the store gives host. */
static int csi_access(void *ctx, const struct sockaddr *host, bool write)
{
	struct dedup_store *st = ctx;
	struct glist_head *g;
	CIDR who;
	int rc = -EACCES, one;

	if (!host_cidr(host, &who))
		return -EACCES;
	PTHREAD_RWLOCK_rdlock(&st->exports_lock);
	glist_for_each(g, &st->exports) {
		struct dedup_fsal_export *e =
			glist_entry(g, struct dedup_fsal_export, store_entry);

		one = access_of(export_options(e->gsh_export, &who), write);
		if (one == 0 || (one == -EROFS && rc == -EACCES))
			rc = one;
		if (rc == 0)
			break;
	}
	PTHREAD_RWLOCK_unlock(&st->exports_lock);
	return rc;
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
	.export_root = csi_export_root,
	.access = csi_access,
	.file_changed = csi_file_changed,
};
