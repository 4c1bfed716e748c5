// SPDX-License-Identifier: BSD-2-Clause
/*
 * The model's variants (sim_model_int.h; README.md, "The model"): one
 * request of system mode at its issue time, each block read or written
 * as the variant does it (its features, struct sim), with the bytes on
 * the wire, the disk accesses and the latency it costs.
 */
#include "sim_model_int.h"

static void bytes(struct sim *s, uint64_t data, uint64_t csi)
{
	s->r.data_bytes += data;
	s->r.csi_bytes += csi;
	s->r.server_bytes += data + csi + s->p.hdr_bytes;
}

/*
 * A peer holding c for a delegation (any host but host): one whose copy
 * has arrived, else the one whose fetch ends first; NIL: none.
 */
static uint32_t delegate_to(struct sim *s, uint32_t host, uint32_t c,
			    double now, double *ready)
{
	uint64_t others = hs_get(&s->cheld, c) & ~(1ull << host);
	uint32_t best = NIL, i;
	double r;

	for (i = 0; others; i++, others >>= 1) {
		if (!(others & 1))
			continue;
		r = flight_ready(&s->hosts[i].fl, c);
		if (best == NIL || r < *ready) {
			best = i;
			*ready = r;
		}
		if (r <= now)
			break;
	}
	return best;
}

static double read_block(struct sim *s, uint32_t vm, uint32_t host,
			 uint32_t a, uint32_t c, double now)
{
	struct host *h = host_get(s, host);
	uint64_t bit = 1ull << host, vkey = pair_key(a, c);
	struct sc_dcache *vc = vm_cache(s, vm);
	double lat, rtt = s->p.net_ms, ready;
	uint64_t held;
	uint32_t peer;

	s->r.read_blocks++;
	if (vc && cache_access(vc, SC_DC_READ, sc_mix64(a), vkey, 0).kind !=
			  SC_DC_MISS) {
		s->r.vm_hits++;
		return 0;
	}
	if (!s->csi) {
		struct sc_dc_res res = cache_access(&h->cache, SC_DC_READ,
						    sc_mix64(a), vkey, 0);

		if (res.kind != SC_DC_MISS) {
			s->r.host_hits++;
			return wait_ready(s, h, vkey, now, 0);
		}
		s->r.read_misses++;
		bytes(s, s->p.block_size, 0);
		lat = rtt + server_read(s, c);
		flight_put(&h->fl, vkey, now + lat, now);
		return lat;
	}
	held = hs_get(&s->cheld, c) & bit;
	if ((hs_get(&s->aknown, a) & bit) && held) {
		host_load(s, h, a, c, SC_DC_READ);
		s->r.host_hits++;
		return wait_ready(s, h, c, now, 0);
	}
	hs_add(&s->aknown, a, bit);
	if (held) {
		/* Read#'s hash, or the tracker's hash-only answer. */
		bytes(s, 0, s->p.hash_bytes);
		s->r.content_hits++;
		host_load(s, h, a, c, SC_DC_READ);
		lat = wait_ready(s, h, c, now, rtt);
	} else if (!s->tracker) {
		/* Read#: the hash first, then the data (the host lacks it). */
		s->r.read_misses++;
		bytes(s, s->p.block_size, s->p.hash_bytes);
		s->r.server_bytes += s->p.hdr_bytes;
		lat = 2 * rtt + server_read(s, c);
		host_load(s, h, a, c, SC_DC_READ);
		flight_put(&h->fl, c, now + lat, now);
	} else if (s->coop && (s->p.delegate_cached ||
				!sc_dcache_holds(&s->server, ckey(c))) &&
		   (peer = delegate_to(s, host, c, now, &ready)) != NIL) {
		/*
		 * Delegated to a peer holding c, as the live service does:
		 * only what the server would read from its disk (unless
		 * delegate_cached).  Data host to host.
		 */
		s->r.read_misses++;
		bytes(s, 0, 2 * s->p.hash_bytes);
		s->r.peer_bytes += s->p.block_size + s->p.hdr_bytes;
		lat = 1.5 * rtt;
		if (ready + 0.5 * rtt > now + lat)
			lat = ready + 0.5 * rtt - now;
		host_load(s, h, a, c, SC_DC_READ);
		flight_put(&h->fl, c, now + lat, now);
	} else {
		s->r.read_misses++;
		bytes(s, s->p.block_size, s->p.hash_bytes);
		lat = rtt + server_read(s, c);
		host_load(s, h, a, c, SC_DC_READ);
		flight_put(&h->fl, c, now + lat, now);
	}
	/* as the live service: the other holders of a content sent now */
	if (s->push && !held)
		push(s, host, a, c);
	return lat;
}

static double write_block(struct sim *s, uint32_t vm, uint32_t host,
			  uint32_t a, uint32_t c, bool stored)
{
	struct host *h = host_get(s, host);
	uint64_t bit = 1ull << host, vkey = pair_key(a, c);
	struct sc_dcache *vc = vm_cache(s, vm);
	double lat = s->p.net_ms;

	s->r.write_blocks++;
	if (vc)
		cache_access(vc, SC_DC_WRITE, sc_mix64(a), vkey, 0);
	if (!s->csi) {
		cache_access(&h->cache, SC_DC_WRITE, sc_mix64(a), vkey, 0);
		bytes(s, s->p.block_size, 0);
	} else {
		if (s->dedup_write && (hs_get(&s->cheld, c) & bit)) {
			/* The hash alone; the data only on NEED_DATA. */
			bytes(s, 0, s->p.hash_bytes);
			if (!stored) {
				bytes(s, s->p.block_size, 0);
				lat += s->p.net_ms;
			}
		} else {
			bytes(s, s->p.block_size, 0);
		}
		host_load(s, h, a, c, SC_DC_WRITE);
		hs_put(&s->aknown, a, bit);
	}
	cache_access(&s->server, SC_DC_WRITE, 0, ckey(c), 0);
	if (!stored) {
		s->r.disk_writes++;
		lat += s->p.disk_ms;
	}
	return lat;
}

/* ---- system mode: one request at its issue time ---- */

double run_request(struct sim *s, uint32_t vm, uint8_t op,
		   const uint32_t *ids, uint32_t n, double now)
{
	uint32_t host = vm / s->p.vms_per_host, i, a, c;
	double lat = 0, l;
	bool stored, write = op == 'W';

	for (i = 0; i < n; i++) {
		a = ids[2 * i];
		c = ids[2 * i + 1];
		if (c == NIL)
			c = write || s->acont[a] == NIL ? own_content(s) :
							    s->acont[a];
		if (write) {
			if (s->acont[a] == c)
				s->r.silent_writes++;
			stored = s->cshare[c] > 0;
		} else {
			stored = true;
		}
		map_set(s, a, c);
		if (write)
			l = write_block(s, vm, host, a, c, stored);
		else
			l = read_block(s, vm, host, a, c, now);
		if (l > lat)
			lat = l;
	}
	s->r.requests++;
	s->r.writes += write;
	s->r.reads += !write;
	s->r.lat_sum_ms += lat;
	if (!write)
		s->r.read_lat_sum_ms += lat;
	if (now + lat > s->r.end_ms)
		s->r.end_ms = now + lat;
	return lat;
}
