// SPDX-License-Identifier: BSD-2-Clause
/*
 * The system model of seacache-sim: the functions of sim_model.h.  The
 * model's parts are in the files sim_model_int.h lists; README.md,
 * section "The model", says what each variant does per block, what it
 * costs and when it happens.
 */
#include "sim_model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the request loop ---- */

struct sim *sim_new(const struct sim_params *p)
{
	struct sim *s = calloc(1, sizeof(*s));
	uint32_t feat;

	if (!s)
		oom();
	s->p = *p;
	if (!s->p.vms_per_host)
		s->p.vms_per_host = 10;
	if (!s->p.window)
		s->p.window = 1u << 20;
	s->system = p->mode == SIM_MODE_SYSTEM;
	feat = sc_variants[p->variant].features;
	s->csi = feat & CSI_FEAT_READ_HASH;
	s->tracker = feat & CSI_FEAT_TRACKER;
	s->push = s->system && (feat & CSI_FEAT_PUSH);
	s->coop = feat & CSI_FEAT_COOP;
	s->dedup_write = feat & CSI_FEAT_DEDUP_WRITE;
	if (!s->system) {
		struct sc_dc_config cfg = {
			.data_blocks = p->host_cache.blocks,
			.block_size = p->block_size,
		};

		s->r.host_cache_blocks = p->host_cache.blocks;
		if (sc_dcache_create(&s->one, p->policy, &cfg)) {
			sim_free(s);
			return NULL;
		}
		s->addr_cache = s->one.ops == &sc_dcache_content ||
				s->one.ops == &sc_dcache_acq ||
				s->one.ops == &sc_dcache_lruca;
	} else {
		/* Check the host policy now rather than at the first request. */
		struct sc_dcache probe;
		struct sc_dc_config cfg = { .data_blocks = 1024,
					    .block_size = p->block_size };

		if (sc_dcache_create(&probe, p->policy, &cfg)) {
			sim_free(s);
			return NULL;
		}
		sc_dcache_destroy(&probe);
	}
	addr_room(s, p->addrs_hint);
	content_room(s, p->contents_hint);
	return s;
}

void sim_preload(struct sim *s, const struct sim_req *r)
{
	uint32_t host, i, a, c;

	if (s->p.vms && r->vm >= s->p.vms)
		return;
	host = r->vm / s->p.vms_per_host;
	if (host >= SIM_MAX_HOSTS) {
		fprintf(stderr, "seacache-sim: more than %u hosts (VM %u); use --vms or --vms-per-host\n",
			SIM_MAX_HOSTS, r->vm);
		exit(2);
	}
	if (host > s->max_host)
		s->max_host = host;
	for (i = 0; i < r->nblocks; i++) {
		a = r->addr[i];
		addr_room(s, a + 1);
		if (s->ahost[a] != NOHOST)
			continue;
		s->ahost[a] = (uint16_t)host;
		seen(s, a);
		if (r->op == 'W')
			continue;
		if (r->content) {
			c = r->content[i];
			content_room(s, c + 1);
		} else {
			c = own_content(s);
		}
		map_set(s, a, c);
	}
}

static uint32_t size_of(const struct sim_size *z, uint64_t distinct)
{
	double b;

	if (z->pct < 0)
		return z->blocks;
	b = z->pct / 100 * (double)distinct;
	return b >= NIL ? NIL - 1 : (uint32_t)b;
}

void sim_preload_done(struct sim *s)
{
	struct sc_dc_config scfg = { .block_size = s->p.block_size,
				     .on_evict = server_evicted, .ctx = s };
	uint32_t hosts = s->max_host + 1;

	/* The host sets: a bit per host the preload saw, in 1 to 8 bytes. */
	s->aknown.w = hosts <= 8 ? 1 : hosts <= 16 ? 2 : hosts <= 32 ? 4 : 8;
	s->cheld.w = s->aknown.w;
	hs_grow(&s->aknown, 0, s->acap);
	hs_grow(&s->cheld, 0, s->ccap);

	s->r.vm_cache_blocks = size_of(&s->p.vm_cache, s->naddr);
	s->r.host_cache_blocks = size_of(&s->p.host_cache, s->naddr);
	s->r.server_cache_blocks = size_of(&s->p.server_cache, s->naddr);
	if (!s->r.server_cache_blocks)
		s->r.server_cache_blocks = 1;
	if (!s->r.host_cache_blocks)
		s->r.host_cache_blocks = 1;
	scfg.data_blocks = s->r.server_cache_blocks;
	if (sc_dcache_create(&s->server, s->p.server_policy ?
			     s->p.server_policy : "lru", &scfg))
		exit(2);
	/* The replay counts again: the addresses it touches. */
	memset(s->aseen, 0, (s->acap + 7) / 8);
	s->naddr = 0;
}

bool sim_feed(struct sim *s, const struct sim_req *r)
{
	if (s->p.vms && r->vm >= s->p.vms)
		return false;
	if (r->vm > s->max_vm)
		s->max_vm = r->vm;
	if (s->system) {
		system_feed(s, r);
		return true;
	}
	if (!s->r.requests && !r->content && s->one.ops == &sc_dcache_content) {
		/* A trace without fingerprints: the fast path is exact. */
		const char *spec = s->p.policy;

		if (!strncmp(spec, "content:", 8))
			spec += 8;
		sc_dcache_destroy(&s->one);
		s->fast = fast_new(spec, s->p.host_cache.blocks, s->acap);
		free(s->acont);
		s->acont = NULL;
	}
	s->r.requests++;
	if (r->op == 'W')
		s->r.writes++;
	else
		s->r.reads++;
	cache_request(s, r);
	return true;
}

void sim_prefetch(struct sim *s, const struct sim_req *r, bool far)
{
	struct sc_dc_req q = { .op = SC_DC_READ };
	uint32_t i, a, c;

	if (s->system || !s->one.ops || !s->one.ops->prefetch || !r->content ||
	    (s->p.vms && r->vm >= s->p.vms))
		return;
	for (i = 0; i < r->nblocks; i++) {
		a = r->addr[i];
		c = r->content[i];
		if (far && a < s->acap && c < s->ccap) {
			sc_prefetch(&s->acont[a]);
			sc_prefetch(&s->cshare[c]);
		}
		q.addr = sc_mix64(a);
		q.content = cache_key(s, a, c);
		s->one.ops->prefetch(&s->one, &q, far);
	}
}

void sim_finish(struct sim *s, uint64_t extra_bytes, struct sim_result *out)
{
	uint64_t meta = sizeof(*s) + extra_bytes + (s->acap + 7) / 8 +
			(uint64_t)s->ccap * 4;
	uint32_t i;

	while (s->nheap)
		issue_next(s);
	if (s->acont)
		meta += (uint64_t)s->acap * 4;
	if (s->system)
		meta += (uint64_t)s->acap * (2 + s->aknown.w) +
			(uint64_t)s->ccap * s->cheld.w;
	if (s->push)
		meta += (uint64_t)s->acap * 8 + (uint64_t)s->ccap * 4;
	meta += s->pcap * sizeof(*s->pq) + s->icap * 8;
	for (i = 0; i < SIM_MAX_HOSTS; i++)
		if (s->hosts[i].on) {
			meta += s->hosts[i].cache.ops->bytes(&s->hosts[i].cache);
			s->r.loads += s->hosts[i].cache.st.loads;
			s->r.evictions += s->hosts[i].cache.st.evictions;
		}
	for (i = 0; i < s->nvmc; i++)
		if (s->vmc[i].ops)
			meta += s->vmc[i].ops->bytes(&s->vmc[i]);
	if (s->server.ops)
		meta += s->server.ops->bytes(&s->server);
	if (s->fast)
		meta += fast_bytes(s);
	if (s->one.ops) {
		meta += s->one.ops->bytes(&s->one);
		s->r.loads = s->one.st.loads;
		s->r.evictions = s->one.st.evictions;
		memcpy(s->r.events, s->one.st.events, sizeof(s->r.events));
		s->r.event_names = s->one.ops->events;
	}
	s->r.tracked_blocks = s->naddr;
	s->r.sim_meta_bytes = meta;
	s->r.vms = s->r.requests ? s->max_vm + 1 : 0;
	if (s->p.vms && s->r.vms > s->p.vms)
		s->r.vms = s->p.vms;
	s->r.hosts = !s->system ? 1 :
		     (s->r.vms + s->p.vms_per_host - 1) / s->p.vms_per_host;
	*out = s->r;
}

void sim_free(struct sim *s)
{
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < SIM_MAX_HOSTS; i++)
		if (s->hosts[i].on) {
			sc_dcache_destroy(&s->hosts[i].cache);
			free(s->hosts[i].fl.key);
			free(s->hosts[i].fl.ready);
		}
	for (i = 0; i < s->nvmc; i++)
		sc_dcache_destroy(&s->vmc[i]);
	free(s->vmc);
	sc_dcache_destroy(&s->server);
	sc_dcache_destroy(&s->one);
	fast_free(s->fast);
	free(s->acont);
	free(s->ahost);
	free(s->aknown.m);
	free(s->anext);
	free(s->aprev);
	free(s->aseen);
	free(s->cshare);
	free(s->cheld.m);
	free(s->chead);
	free(s->vq);
	free(s->heap);
	free(s->pq);
	free(s->iq);
	free(s);
}
