// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A SeaCache host (host.h): its life (create, destroy), LOOKUP, the
 * keep-alive, the peer side and the counters.  Below it (README.md):
 * reads in host_read.c, writes in host_write.c, the WRITE calls and the
 * unstable blocks in host_pins.c, calls and registration in host_call.c,
 * helpers in host_util.c.
 */
#include "host_priv.h"

/* No reply (§6.1): the same call again, this many times, then -EIO. */
#define HOST_IO_RETRIES 12

/* The content cache evicted hash (under the cache's lock). */
/*
 * A shrink (memory reclaim) must not wait for the host's lock: a host
 * call may hold it while an allocation of its waits for that very
 * reclaim (kswapd blocked here behind the idle work's EVICT on the debug
 * kernel).  Its notices are then lost, counted as a full queue's are: the
 * server's HASH for such a content is read again with FORCE_DATA (§5.2).
 */
static void host_on_evict(void *ctx, const struct sc_hash *hash)
{
	struct sc_host *h = ctx;

	if (!sc_hostcache_shrinking(h->hc))
		host_notice(h, hash);
	else if (!host_notice_try(h, hash))
		sc_atomic_inc(&h->notices_lost);
}

/* ---- life ---- */

int sc_host_create(const struct sc_host_config *cfg, struct sc_host **out)
{
	struct sc_hostcache_config hcfg = { 0 };
	static const uint8_t zero[CSI_HOST_UUID_SIZE];
	struct sc_host *h;
	size_t nl;
	int err;

	if (!cfg->tr.call || !cfg->tr.release || !cfg->cache_blocks ||
	    (unsigned int)cfg->variant >= SC_VARIANT_COUNT ||
	    !sc_memcmp(cfg->uuid, zero, sizeof(zero)))
		return -SC_EINVAL;
	h = sc_zalloc(sizeof(*h));
	if (!h)
		return -SC_ENOMEM;
	sc_mutex_init(&h->hello_lock);
	sc_mutex_init(&h->resend_lock);
	sc_mutex_init(&h->lock);
	sc_waitq_init(&h->rd_done);
	sc_waitq_init(&h->map_done);
	h->tr = cfg->tr;
	h->io_retries = cfg->io_retries ? cfg->io_retries : HOST_IO_RETRIES;
	h->fail_fast = cfg->fail_fast;
	sc_memcpy(h->uuid, cfg->uuid, sizeof(h->uuid));
	nl = cfg->name ? sc_strlen(cfg->name) : 0;
	if (nl > CSI_MAX_NAME)
		nl = CSI_MAX_NAME;
	if (nl)
		sc_memcpy(h->name, cfg->name, nl);
	h->peer = cfg->peer;
	h->requested = sc_variants[cfg->variant].features;
	h->cache_blocks = cfg->cache_blocks;
	h->max_pins = host_max_pins(cfg->cache_blocks);
	err = host_register(h, 0);
	if (err)
		goto fail;
	hcfg.block_size = h->bs;
	hcfg.cache_blocks = cfg->cache_blocks;
	hcfg.policy = cfg->policy ? cfg->policy : SC_HOST_POLICY_DEFAULT;
	hcfg.csimap_budget = cfg->csimap_budget ? cfg->csimap_budget :
			     (uint64_t)cfg->cache_blocks * 64;
	hcfg.on_evict = host_on_evict;
	hcfg.ctx = h;
	hcfg.block_mem = cfg->block_mem;
	h->hc = sc_hostcache_create(&hcfg);
	if (!h->hc) {
		err = -SC_ENOMEM;
		goto fail;
	}
	h->map_cap = host_map_cap(h->hc);
	*out = h;
	return 0;
fail:
	sc_host_destroy(h);
	return err;
}

void sc_host_destroy(struct sc_host *h)
{
	unsigned int nofs;
	uint32_t i;

	if (!h)
		return;
	/*
	 * Its last calls allocate under lock, which the cache's evictions
	 * take in reclaim (sc_host_shrink): NOFS, as the I/O entry points.
	 */
	nofs = sc_nofs_save();
	if (h->reg_gen && h->peer.family != CSI_AF_NONE) {
		/* no more delegations to a peer server about to go (§11.7) */
		h->peer.family = CSI_AF_NONE;
		sc_memset(h->peer.addr, 0, sizeof(h->peer.addr));
		h->peer.port = 0;
		if (host_register(h, h->reg_gen))
			sc_log_warn("host %s: could not withdraw its peer address",
				    h->name);
	}
	if (h->reg_gen && host_flush(h, 0))
		sc_log_warn("host %s: eviction notices not delivered at exit",
			    h->name);
	sc_nofs_restore(nofs);
	if (h->npins)
		sc_log_warn("host %s: %u unstable blocks never committed",
			    h->name, h->npins);
	host_pins_free(h);
	sc_hostcache_destroy(h->hc);
	for (i = 0; i < h->nhashers; i++)
		sc_hasher_free(h->hashers[i]);
	sc_free(h->nq);
	sc_free(h->rd_live);
	sc_waitq_destroy(&h->rd_done);
	sc_waitq_destroy(&h->map_done);
	sc_mutex_destroy(&h->lock);
	sc_mutex_destroy(&h->resend_lock);
	sc_mutex_destroy(&h->hello_lock);
	sc_free(h);
}

static int host_lookup(struct sc_host *h, const char *export_path,
		       const char *path, struct csi_fileattr *attr)
{
	struct csi_lookup_args a = { 0 };
	struct csi_lookup_res r;
	struct host_call c;
	int err;

	a.export_path.p = (const uint8_t *)export_path;
	a.export_path.len = (uint32_t)sc_strlen(export_path);
	a.path.p = (const uint8_t *)path;
	a.path.len = (uint32_t)sc_strlen(path);
	err = host_call(h, CSI_PROC_LOOKUP, &a.hdr, &a, &r, &c);
	if (err)
		return err;
	err = host_attr_reply(h, &c, &r.attr, r.attr.file);
	if (!err)
		*attr = r.attr;
	host_release(h, &c);
	return err;
}

static int host_idle(struct sc_host *h)
{
	uint64_t quiet;
	int err;

	if (host_down(h))
		return host_probe(h);
	err = host_flush(h, 0);
	if (err)
		return err;
	sc_mutex_lock(&h->lock);
	quiet = sc_clock_ms() - h->last_send_ms;
	err = quiet < (uint64_t)h->reg.lease * 500;
	sc_mutex_unlock(&h->lock);
	if (err)
		return 0;
	/* the keep-alive (§5.3) */
	return host_evict(h);
}

static int host_peer_get(struct sc_host *h, const struct sc_hash *hash,
			 void *buf, uint32_t *len)
{
	int err;

	/*
	 * The server counts a content held from when it decides to send it
	 * to us, so a peer may ask while our READ is still bringing it.
	 */
	if (!sc_hostcache_get(h->hc, hash, buf)) {
		uint64_t since = sc_clock_us();

		err = host_content_wait(h, hash, buf, HOST_PEER_WAIT_MS);
		host_time_add(h, SC_HT_SERVE_WAIT, since);
		if (err <= 0)
			return err ? err : -SC_ENOENT;
	}
	*len = h->bs;
	sc_mutex_lock(&h->lock);
	h->st.peer_served++;
	sc_mutex_unlock(&h->lock);
	return 0;
}

/*
 * The I/O entry points run in a NOFS scope (host.h says why); it nests,
 * so one entry point may call another.
 */
int sc_host_lookup(struct sc_host *h, const char *export_path,
		   const char *path, struct csi_fileattr *attr)
{
	unsigned int nofs = sc_nofs_save();
	int err = host_lookup(h, export_path, path, attr);

	sc_nofs_restore(nofs);
	return err;
}

int sc_host_idle(struct sc_host *h)
{
	unsigned int nofs = sc_nofs_save();
	int err = host_idle(h);

	sc_nofs_restore(nofs);
	return err;
}

int sc_host_peer_get(void *host, const struct sc_hash *hash, void *buf,
		     uint32_t *len)
{
	unsigned int nofs = sc_nofs_save();
	int err = host_peer_get(host, hash, buf, len);

	sc_nofs_restore(nofs);
	return err;
}

uint32_t sc_host_cache_blocks(struct sc_host *h)
{
	return sc_hostcache_blocks(h->hc);
}

uint32_t sc_host_shrink(struct sc_host *h, uint32_t nr)
{
	return sc_hostcache_shrink(h->hc, nr);
}

uint32_t sc_host_block_size(const struct sc_host *h)
{
	return h->bs;
}

uint32_t sc_host_features(const struct sc_host *h)
{
	struct host_reg r;

	host_reg_get((struct sc_host *)h, &r);
	return r.features;
}

void sc_host_get_stats(struct sc_host *h, struct sc_host_stats *st)
{
	struct sc_hostcache_stats cs;

	sc_hostcache_get_stats(h->hc, &cs);
	sc_mutex_lock(&h->lock);
	*st = h->st;
	st->notices_dropped += sc_atomic_read_acquire(&h->notices_lost);
	st->pinned_blocks = h->npins;
	st->csi_down = h->down;
	st->mem_bytes = cs.mem_bytes + sizeof(*h) +
			(uint64_t)h->nq_cap * sizeof(*h->nq) +
			(uint64_t)h->npins * (sizeof(struct host_pin) + h->bs);
	sc_mutex_unlock(&h->lock);
	st->addr_hits = cs.addr_hits;
	st->pushed_hits = cs.pushed_hits;
	st->mapped_hits = cs.mapped_hits;
	st->content_hits = cs.content_hits;
	st->files_dropped = cs.files_dropped;
	st->cache = cs;
}

void sc_host_get_times(struct sc_host *h,
		       struct sc_host_time t[SC_HT_KINDS])
{
	sc_mutex_lock(&h->lock);
	sc_memcpy(t, h->times, sizeof(h->times));
	sc_mutex_unlock(&h->lock);
}

void sc_host_forget_file(struct sc_host *h, uint64_t file)
{
	sc_hostcache_forget_file(h->hc, file);
}
