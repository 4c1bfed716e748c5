// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service's registrations: HELLO (§4), leases (§5.3), the request
 * header of §5.1 with the tracker updates of §5.2, and the files each
 * host used (for pushes).
 *
 * Registrations live in a fixed table of max_hosts slots; slot i + 1 is
 * the registration's tracker host number.  A lapsed lease is noticed
 * lazily: when its host id is used, when HELLO needs a slot, or by STATS.
 * A call keeps its host's slot and id (struct host_ref) across the parts
 * it runs without the lock, and checks the id is still the slot's before
 * it touches the registration again: a HELLO may have replaced it.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "service_int.h"

/* ---- used files (§7), bounded per host ---- */

void svc_used_clear(struct svc_host *h)
{
	struct used_file *u, *tmp;

	HASH_ITER(hh, h->used, u, tmp) {
		HASH_DEL(h->used, u);
		free(u);
	}
	h->nused = 0;
}

bool svc_used_has(const struct svc_host *h, uint64_t ino)
{
	struct used_file *u;

	HASH_FIND(hh, h->used, &ino, sizeof(ino), u);
	return u != NULL;
}

void svc_used_mark(struct csi_service *svc, struct svc_host *h,
		   uint64_t ino)
{
	struct used_file *u;

	if (svc_used_has(h, ino))
		return;
	if (h->nused >= svc->cfg.used_files) {
		u = h->used;		/* the oldest */
		HASH_DEL(h->used, u);
		h->nused--;
	} else {
		u = malloc(sizeof(*u));
		if (!u)
			return;		/* only pushes are lost */
	}
	u->ino = ino;
	HASH_ADD(hh, h->used, ino, sizeof(u->ino), u);
	h->nused++;
}

/* ---- registrations ---- */

/* Ends a registration: its tracker state goes, its id answers UNKNOWN_HOST. */
static void host_forget(struct csi_service *svc, struct svc_host *h)
{
	sc_tracker_drop_host(svc->tracker, slot_of(svc, h));
	svc_used_clear(h);
	sc_mac_free(h->token_mac);
	memset(h, 0, sizeof(*h));
	svc->nhosts--;
}

bool svc_lease_lapsed(const struct csi_service *svc,
		      const struct svc_host *h, uint64_t now)
{
	return now - h->last_ms >= (uint64_t)svc->cfg.lease_seconds * 1000u;
}

/* Forgets every host whose lease lapsed; how many. */
unsigned int svc_reap_lapsed(struct csi_service *svc, uint64_t now)
{
	unsigned int i, n = 0;

	for (i = 0; i < svc->cfg.max_hosts; i++)
		if (svc->hosts[i].id &&
		    svc_lease_lapsed(svc, &svc->hosts[i], now)) {
			host_forget(svc, &svc->hosts[i]);
			svc->gctr[G_HOSTS_EXPIRED]++;
			n++;
		}
	return n;
}

/* An IPv4 address as the 16 bytes of ::ffff:a.b.c.d. */
static void v4_mapped(const void *v4, uint8_t out[16])
{
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, v4, 4);
}

/* The caller's IP address as 16 bytes (IPv4 mapped); false if unknown. */
static bool addr_of(const struct sockaddr *sa, uint8_t out[16])
{
	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

		v4_mapped(&in4->sin_addr, out);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(out, &in6->sin6_addr, 16);
		return true;
	}
	return false;
}

/* §3.3.3 */
static bool peer_addr_valid(const struct csi_peer_addr *a)
{
	switch (a->family) {
	case CSI_AF_NONE:
		return svc_all_zero(a->addr, CSI_ADDR_SIZE) && a->port == 0;
	case CSI_AF_INET:
		return svc_all_zero(a->addr + 4, CSI_ADDR_SIZE - 4) &&
		       a->port >= 1 && a->port <= 65535;
	case CSI_AF_INET6:
		return a->port >= 1 && a->port <= 65535;
	default:
		return false;
	}
}

/* Is a the IP address the registration h was made from? */
static bool peer_addr_is(const struct csi_peer_addr *a,
			 const struct svc_host *h)
{
	uint8_t want[16];

	if (!h->addr_known)
		return false;
	if (a->family == CSI_AF_INET) {
		v4_mapped(a->addr, want);
	} else {
		memcpy(want, a->addr, 16);
	}
	return !memcmp(want, h->addr, sizeof(want));
}

struct svc_host *svc_host_by_id(struct csi_service *svc, uint64_t id)
{
	unsigned int i;

	for (i = 0; id && i < svc->cfg.max_hosts; i++)
		if (svc->hosts[i].id == id)
			return &svc->hosts[i];
	return NULL;
}

/*
 * A registration belongs to the address that made it (§4 item 6): a HELLO
 * with its uuid from another address replaces it only once its lease
 * lapsed, so a stranger who learnt a host's uuid cannot take its place.
 */
static bool hello_may_replace(const struct csi_service *svc,
			      const struct svc_host *h,
			      const struct sockaddr *src, uint64_t now)
{
	uint8_t addr[16];

	if (!h->addr_known || svc_lease_lapsed(svc, h, now))
		return true;
	return addr_of(src, addr) && !memcmp(addr, h->addr, sizeof(addr));
}

int svc_hello(struct csi_service *svc, const struct csi_hello_args *a,
	      struct csi_hello_res *r, const struct sockaddr *src)
{
	struct svc_host *h = NULL, *free_slot = NULL;
	uint64_t now = svc_now_ms(svc), id;
	unsigned int i, from_addr = 0;
	uint8_t addr[16];
	bool have_addr = addr_of(src, addr);

	svc->gctr[G_HELLO_CALLS]++;
	if (svc_all_zero(a->host_uuid, CSI_HOST_UUID_SIZE) ||
	    !peer_addr_valid(&a->peer)) {
		r->status = CSI_ERR_INVAL;
		return 0;
	}
	for (i = 0; i < svc->cfg.max_hosts; i++) {
		struct svc_host *c = &svc->hosts[i];

		if (c->id && !memcmp(c->uuid, a->host_uuid, CSI_HOST_UUID_SIZE))
			h = c;
		else if (!c->id && !free_slot)
			free_slot = c;
		else if (c->id && have_addr && c->addr_known &&
			 !memcmp(c->addr, addr, sizeof(addr)) &&
			 !svc_lease_lapsed(svc, c, now))
			from_addr++;
	}
	if (h && !hello_may_replace(svc, h, src, now)) {
		svc->gctr[G_HELLO_TAKEOVER]++;
		r->status = CSI_ERR_ACCESS;
		return 0;
	}
	/* a new registration, not a host's own renewal, counts (§4 item 8) */
	if (!h && from_addr >= svc->cfg.max_hosts_per_addr) {
		svc->gctr[G_HELLO_ADDR_FULL]++;
		r->status = CSI_ERR_BUSY;
		return 0;
	}
	if (h) {
		/* §4 item 6: replaces the registration of this uuid. */
		host_forget(svc, h);
		svc->gctr[G_HOSTS_REPLACED]++;
	} else if (free_slot) {
		h = free_slot;
	} else if (svc_reap_lapsed(svc, now)) {
		for (i = 0; i < svc->cfg.max_hosts && !h; i++)
			if (!svc->hosts[i].id)
				h = &svc->hosts[i];
	}
	if (!h) {
		r->status = CSI_ERR_BUSY;
		return 0;
	}
	do {
		id = svc_random_nonzero();
		if (!id)
			return -EIO;
	} while (svc_host_by_id(svc, id));
	if (svc_fill_random(r->peer_secret, sizeof(r->peer_secret)))
		return -EIO;
	h->token_mac = sc_mac_new(r->peer_secret, sizeof(r->peer_secret));
	if (!h->token_mac)
		return -ENOMEM;
	/* The slot is empty (host_forget or never used): fill it. */
	h->id = id;
	memcpy(h->uuid, a->host_uuid, CSI_HOST_UUID_SIZE);
	h->name_len = a->host_name.len;
	if (a->host_name.len)
		memcpy(h->name, a->host_name.p, a->host_name.len);
	h->features = a->features & svc->cfg.features;
	/* §8: a map window is GET_HASHES' answer for several files */
	if (!(h->features & CSI_FEAT_READ_HASH))
		h->features &= ~CSI_FEAT_MAP;
	/* §7.12: reports are of delegations */
	if (!(h->features & CSI_FEAT_COOP))
		h->features &= ~CSI_FEAT_PEER_REPORT;
	h->tracked = h->features & (CSI_FEAT_TRACKER | CSI_FEAT_COOP |
				    CSI_FEAT_DEDUP_WRITE);
	h->addr_known = addr_of(src, h->addr);
	/*
	 * §4 item 7: a peer address other than the caller's own is ignored,
	 * so a host cannot point other hosts' peer reads at a third machine.
	 */
	if (a->peer.family != CSI_AF_NONE && peer_addr_is(&a->peer, h))
		h->peer = a->peer;
	h->last_ms = now;
	svc->nhosts++;

	r->status = CSI_OK;
	r->host = id;
	r->epoch = svc->epoch;
	r->block_size = svc->block_size;
	r->max_blocks = svc->cfg.max_blocks;
	r->max_push = svc->cfg.max_push;
	r->max_evict = svc->cfg.max_evict;
	r->features = h->features;
	r->lease_seconds = svc->cfg.lease_seconds;
	return 0;
}

/*
 * §5.1 steps 2-5.  CSI_OK and *out set, or the status to answer.
 */
uint32_t svc_check_hdr(struct csi_service *svc, const struct csi_reqhdr *hdr,
		       const struct sockaddr *src, struct svc_host **out)
{
	struct svc_host *h = NULL;
	uint64_t now = svc_now_ms(svc);
	uint8_t addr[16];
	uint32_t n;

	if (hdr->epoch != svc->epoch) {
		svc->gctr[G_BAD_EPOCH]++;
		return CSI_ERR_BAD_EPOCH;
	}
	h = svc_host_by_id(svc, hdr->host);
	if (h && svc_lease_lapsed(svc, h, now)) {
		host_forget(svc, h);	/* lazily, §5.3 */
		svc->gctr[G_HOSTS_EXPIRED]++;
		h = NULL;
	}
	if (h && h->addr_known &&
	    (!addr_of(src, addr) || memcmp(addr, h->addr, sizeof(addr))))
		h = NULL;		/* §4 item 4 */
	if (!h) {
		svc->gctr[G_UNKNOWN_HOST]++;
		return CSI_ERR_UNKNOWN_HOST;
	}
	if (hdr->nevicted > svc->cfg.max_evict) {
		svc->gctr[G_TOO_BIG_NOTICES]++;
		return CSI_ERR_TOO_BIG;
	}
	count(svc, h, C_NOTICES_RECEIVED, hdr->nevicted);
	if (h->tracked) {
		for (n = 0; n < hdr->nevicted; n++)
			if (sc_tracker_note_evicted(svc->tracker,
						    slot_of(svc, h),
						    &hdr->evicted[n]))
				count(svc, h, C_NOTICES_APPLIED, 1);
	}
	h->last_ms = now;
	*out = h;
	return CSI_OK;
}

/* Records that hr's host now holds h (§5.2); lock held. */
void svc_note_held(struct csi_service *svc, const struct host_ref *hr,
		   const struct sc_hash *h)
{
	if (hr->h->tracked)
		sc_tracker_note_held(svc->tracker, hr->slot, h);
}
