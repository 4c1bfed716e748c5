// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The host's bottom helpers (README.md): the errno of a status, the
 * registration's fields under the lock, the hasher pool, a reply's attrs
 * and the request times.  They call nothing of the host's other files.
 */
#include "host_priv.h"

int host_status_err(uint32_t status)
{
	switch (status) {
	case CSI_OK:
		return 0;
	case CSI_ERR_INVAL:
		return -SC_EINVAL;
	case CSI_ERR_STALE:
		return -SC_ESTALE;
	case CSI_ERR_NOENT:
		return -SC_ENOENT;
	case CSI_ERR_ACCESS:
		return -SC_EACCES;
	case CSI_ERR_BUSY:
		return -SC_EBUSY;
	case CSI_ERR_NOSPC:
		return -SC_ENOSPC;
	default:
		/* IO; TOO_BIG and NOTSUPP are our bugs: never retried */
		return -SC_EIO;
	}
}

int host_proto_err(struct sc_host *h, const char *what)
{
	sc_log_err_ratelimited("host %s: the server broke the protocol: %s",
			       h->name, what);
	return -SC_EIO;
}

void host_reg_get(struct sc_host *h, struct host_reg *r)
{
	sc_mutex_lock(&h->lock);
	*r = h->reg;
	sc_mutex_unlock(&h->lock);
}

bool host_reg_moved(struct sc_host *h, const struct host_reg *before)
{
	bool moved;

	sc_mutex_lock(&h->lock);
	moved = h->reg.epoch != before->epoch || h->reg.id != before->id;
	sc_mutex_unlock(&h->lock);
	return moved;
}

struct sc_hasher *host_hasher_get(struct sc_host *h)
{
	struct sc_hasher *hs = NULL;

	sc_mutex_lock(&h->lock);
	if (h->nhashers)
		hs = h->hashers[--h->nhashers];
	sc_mutex_unlock(&h->lock);
	return hs ? hs : sc_hasher_new();
}

void host_hasher_put(struct sc_host *h, struct sc_hasher *hs)
{
	if (!hs)
		return;
	sc_mutex_lock(&h->lock);
	if (h->nhashers < HOST_HASHERS) {
		h->hashers[h->nhashers++] = hs;
		hs = NULL;
	}
	sc_mutex_unlock(&h->lock);
	sc_hasher_free(hs);
}

/* Attrs of a reply: the file's state (§7.7). */
int host_attr_reply(struct sc_host *h, const struct host_call *c,
		    const struct csi_fileattr *attr, uint64_t file)
{
	int err = host_status_err(c->status);

	if (err == -SC_ESTALE)
		sc_hostcache_drop_file(h->hc, file);
	if (!err)
		sc_hostcache_file_seen(h->hc, attr->file, attr->change,
				       attr->size, c->since);
	return err;
}

void host_time_add(struct sc_host *h, enum sc_host_time_kind k,
		   uint64_t since)
{
	struct sc_host_time *t = &h->times[k];
	uint64_t us = sc_clock_us() - since;
	uint32_t b = 0;

	while (b < SC_HOST_TIME_BUCKETS - 1 && us >= 1ull << b)
		b++;
	sc_mutex_lock(&h->lock);
	t->n++;
	t->us += us;
	t->hist[b]++;
	sc_mutex_unlock(&h->lock);
}
