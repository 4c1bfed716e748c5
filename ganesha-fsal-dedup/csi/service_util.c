// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service's bottom: randomness, the clocks, and the file and
 * access helpers every procedure shares.  It calls nothing of the other
 * service files, so they all call down into it (see README.md).
 */
#include <errno.h>
#include <sys/random.h>
#include <time.h>

#include "service_int.h"

/* ---- randomness and clocks ---- */

int svc_fill_random(void *p, size_t n)
{
	uint8_t *b = p;
	ssize_t got;

	while (n) {
		got = getrandom(b, n, 0);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -errno;
		b += got;
		n -= (size_t)got;
	}
	return 0;
}

uint64_t svc_random_nonzero(void)
{
	uint64_t v = 0;

	while (!v)
		if (svc_fill_random(&v, sizeof(v)))
			return 0;
	return v;
}

uint64_t svc_now_ms(const struct csi_service *svc)
{
	struct timespec ts;

	if (svc->cfg.clock_ms)
		return svc->cfg.clock_ms(svc->cfg.clock_ctx);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t svc_now_unix(const struct csi_service *svc)
{
	struct timespec ts;

	if (svc->cfg.unix_s)
		return svc->cfg.unix_s(svc->cfg.clock_ctx);
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

bool svc_all_zero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- files: what the procedures share ---- */

/* The status for a store answer about file ino (rc) with attributes a. */
uint32_t svc_file_status(int rc, const struct dstore_attr *a)
{
	if (rc == -ENOENT || rc == -ESTALE)
		return CSI_ERR_STALE;
	if (rc == -ENOSPC)
		return CSI_ERR_NOSPC;
	if (rc == -EISDIR || rc == -EINVAL)
		return CSI_ERR_INVAL;
	if (rc)
		return CSI_ERR_IO;
	return a->type == DSTORE_REG ? CSI_OK : CSI_ERR_INVAL;
}

uint32_t svc_file_attr(struct csi_service *svc, uint64_t ino,
		       struct dstore_attr *a)
{
	return svc_file_status(ino ? dstore_getattr(svc->ds, ino, a) : -ENOENT,
			       a);
}

void svc_to_fileattr(const struct dstore_attr *a, struct csi_fileattr *f)
{
	f->file = a->ino;
	f->size = a->size;
	f->change = a->change;
}

/* (lbn + count) × B must not overflow 64 bits (§3.3.9). */
bool svc_range_ok(const struct csi_service *svc, uint64_t lbn,
		  uint32_t count)
{
	return lbn <= UINT64_MAX - count &&
	       lbn + count <= UINT64_MAX / svc->block_size;
}

/*
 * §7 "Access", through the NFS server's exports: whom the call is to the
 * exports that admit it (all of the store's, or export_path's alone),
 * into out.  CSI_OK, CSI_ERR_ACCESS, or CSI_ERR_NOENT for an export_path
 * the store has not.  Called without the lock (the hook may take the
 * server's own locks).
 */
uint32_t svc_access_check(struct csi_service *svc,
			  const struct sc_rpc_request *rq,
			  const char *export_path, bool write,
			  struct csi_callers *out)
{
	int rc;

	out->n = 0;
	out->unchecked = !svc->hooks.admit;
	if (out->unchecked)
		return export_path ? CSI_ERR_NOENT : CSI_OK;
	rc = svc->hooks.admit(svc->hooks.ctx, export_path, rq->peer,
			      rq->auth_sys, write, out);
	if (rc == -ENOENT)
		return CSI_ERR_NOENT;
	return rc || !out->n ? CSI_ERR_ACCESS : CSI_OK;
}

/*
 * May caller c do want to a file of attributes a?  The mode bits as
 * Ganesha's fsal_check_access_no_acl reads them (FSAL_DEDUP keeps no
 * ACLs): uid 0 may do all but execute a file nobody may execute, the
 * owner's bits apply to the owner, the group's to a member of the file's
 * group (primary or supplementary), the others' to the rest; with
 * owner_skip the owner may read and write whatever the bits say, as NFS
 * READ and WRITE allow (test_access with owner_skip).
 */
static bool caller_may(const struct csi_caller *c, const struct dstore_attr *a,
		       unsigned int want, bool owner_skip)
{
	uint32_t mode = a->mode, i;

	if (owner_skip && c->uid == a->uid)
		return true;
	if (c->uid == 0)
		return a->type == DSTORE_DIR || !(want & SVC_MAY_EXEC) ||
		       (mode & 0111);
	if (c->uid == a->uid) {
		mode >>= 6;
	} else if (c->gid == a->gid) {
		mode >>= 3;
	} else {
		for (i = 0; i < c->ngids; i++) {
			if (c->gids[i] == a->gid) {
				mode >>= 3;
				break;
			}
		}
	}
	return (mode & want) == want;
}

/* Whether one of the exports that admitted the call lets it do want. */
bool svc_may(const struct csi_callers *who, const struct dstore_attr *a,
	     unsigned int want, bool owner_skip)
{
	uint32_t i;

	if (who->unchecked)
		return true;
	for (i = 0; i < who->n; i++)
		if (caller_may(&who->c[i], a, want, owner_skip))
			return true;
	return false;
}

/*
 * CSI_OK when the call may read (write false) or write the file of
 * attributes a, as NFS READ and WRITE decide: a READ that the read bit
 * refuses is let through by the execute bit, as Ganesha's nfs3_read
 * does (a program is read to be run).
 */
uint32_t svc_file_open_to(const struct csi_callers *who,
			  const struct dstore_attr *a, bool write)
{
	if (write)
		return svc_may(who, a, SVC_MAY_WRITE, true) ? CSI_OK :
							       CSI_ERR_ACCESS;
	return svc_may(who, a, SVC_MAY_READ, true) ||
	       svc_may(who, a, SVC_MAY_EXEC, false) ? CSI_OK : CSI_ERR_ACCESS;
}

/* Called by a call that let the lock go while it read or wrote the store. */
bool svc_lock_if_host_valid(struct csi_service *svc,
			    const struct host_ref *hr)
{
	pthread_mutex_lock(&svc->lock);
	if (host_valid(hr))
		return true;
	pthread_mutex_unlock(&svc->lock);
	return false;
}
