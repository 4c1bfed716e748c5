// SPDX-License-Identifier: BSD-2-Clause
/*
 * The model's storage server (sim_model_int.h): its content cache, told
 * to the hosts' policies that want it, its disk reads, and SS-Push's
 * pushes of CSI-Map entries.
 */
#include "sim_model_int.h"

void server_evicted(void *ctx, uint64_t key)
{
	struct sim *s = ctx;
	uint32_t i;

	if (!s->host_peer)
		return;
	for (i = 0; i <= s->max_host && i < SIM_MAX_HOSTS; i++)
		if (s->hosts[i].on)
			sc_dcache_peer(&s->hosts[i].cache, key, false);
}

/* The server reads content c for a host: its cache, else its disk. */
double server_read(struct sim *s, uint32_t c)
{
	struct sc_dc_res res = cache_access(&s->server, SC_DC_READ, 0,
					    ckey(c), 0);
	uint32_t i;

	if (res.admitted && s->host_peer)
		for (i = 0; i <= s->max_host && i < SIM_MAX_HOSTS; i++)
			if (s->hosts[i].on)
				sc_dcache_peer(&s->hosts[i].cache, ckey(c), true);
	if (res.kind == SC_DC_MISS) {
		s->r.disk_reads++;
		return s->p.disk_ms;
	}
	return 0;
}

/*
 * SS-Push: the server sends the other addresses of c on this host, with
 * c itself (not with a hash answer: the host got them with c).
 */
void push(struct sim *s, uint32_t host, uint32_t a, uint32_t c)
{
	uint64_t bit = 1ull << host;
	uint32_t x, sent = 0, steps = 0;

	for (x = s->chead[c]; x != NIL && sent < s->p.max_push &&
	     steps < 4 * s->p.max_push; x = s->anext[x], steps++) {
		if (x == a || s->ahost[x] != host ||
		    (hs_get(&s->aknown, x) & bit))
			continue;
		hs_add(&s->aknown, x, bit);
		sent++;
	}
	s->r.csi_bytes += (uint64_t)sent * s->p.hash_bytes;
	s->r.server_bytes += (uint64_t)sent * s->p.hash_bytes;
}
