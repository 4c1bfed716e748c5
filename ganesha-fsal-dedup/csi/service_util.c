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
 * §7 "Access", through the NFS server's exports.  Called without the
 * lock (the hook may take the server's own locks).
 */
uint32_t svc_access_check(struct csi_service *svc,
			  const struct sc_rpc_request *rq, bool write)
{
	int rc;

	if (!svc->hooks.access)
		return CSI_OK;
	rc = svc->hooks.access(svc->hooks.ctx, rq->peer, write);
	return rc ? CSI_ERR_ACCESS : CSI_OK;
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
