// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A SeaCache host (host.h): registration, the calls' error handling, the
 * eviction notice queue, the peer side and the counters.  Reads are in
 * host_read.c, writes in host_write.c.
 */
#include "host_priv.h"

/* No reply (§6.1): the same call again, this many times, then -EIO. */
#define HOST_IO_RETRIES 12
/* BUSY (§6.1): back-off from 10 ms doubling to 1 s, this many times. */
#define HOST_BUSY_RETRIES 8
#define HOST_BACKOFF_MIN_MS 10
#define HOST_BACKOFF_MAX_MS 1000
/* No reply: back-off doubling up to this, while the server restarts. */
#define HOST_IO_BACKOFF_MAX_MS 2000
/* BAD_EPOCH or UNKNOWN_HOST again right after a HELLO: give up. */
#define HOST_REG_RETRIES 4
/*
 * Notices queued at most (bounded memory, §9.6): a request carries
 * max_evict and one reply evicts up to max_blocks, and reads and writes
 * send EVICT when more than max_evict are queued; twice that leaves room
 * for a second thread.  A notice that finds no room costs a FORCE_DATA
 * round trip later, never correctness.
 */
#define HOST_NQ_CAP(r) (2 * ((r).max_evict + (r).max_blocks))

#define HOST_TRACKED (CSI_FEAT_TRACKER | CSI_FEAT_COOP | CSI_FEAT_DEDUP_WRITE)

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

/* ---- eviction notices (§5.2) ---- */

/* Lock held. */
static void nq_push(struct sc_host *h, const struct sc_hash *hash)
{
	if (!h->tracked)
		return;
	if (h->nq_len == h->nq_cap) {
		h->st.notices_dropped++;
		return;
	}
	h->nq[(h->nq_head + h->nq_len) % h->nq_cap] = *hash;
	h->nq_len++;
}

void host_notice(struct sc_host *h, const struct sc_hash *hash)
{
	sc_mutex_lock(&h->lock);
	nq_push(h, hash);
	sc_mutex_unlock(&h->lock);
}

/* The content cache evicted hash (under the cache's lock). */
static void host_on_evict(void *ctx, const struct sc_hash *hash)
{
	host_notice(ctx, hash);
}

/* Lock held: take up to max notices into a new array; NULL if none. */
static struct sc_hash *nq_take(struct sc_host *h, uint32_t max, uint32_t *n)
{
	struct sc_hash *b;
	uint32_t i, k = h->nq_len < max ? h->nq_len : max;

	*n = 0;
	if (!k)
		return NULL;
	b = sc_calloc(k, sizeof(*b));
	if (!b)
		return NULL;
	for (i = 0; i < k; i++)
		b[i] = h->nq[(h->nq_head + i) % h->nq_cap];
	h->nq_head = (h->nq_head + k) % h->nq_cap;
	h->nq_len -= k;
	*n = k;
	return b;
}

/* No reply came: the notices go out again, unless we registered anew. */
static void nq_return(struct sc_host *h, struct sc_hash *b, uint32_t n,
		      uint64_t gen)
{
	uint32_t i;

	sc_mutex_lock(&h->lock);
	for (i = 0; i < n && h->reg_gen == gen; i++)
		nq_push(h, &b[i]);
	sc_mutex_unlock(&h->lock);
	sc_free(b);
}

/* ---- calls ---- */

static int host_register(struct sc_host *h, uint64_t seen_gen);

static unsigned int backoff_next(unsigned int ms, unsigned int max)
{
	return ms * 2 > max ? max : ms * 2;
}

int host_call(struct sc_host *h, uint32_t proc, struct csi_reqhdr *hdr,
	      const void *args, void *res, struct host_call *c)
{
	unsigned int io = 0, busy = 0, reg = 0;
	unsigned int io_ms = HOST_BACKOFF_MIN_MS, busy_ms = HOST_BACKOFF_MIN_MS;
	struct sc_hash *batch;
	struct host_reg r;
	uint32_t nb, status;
	uint64_t gen;
	void *reply;
	int err;

	for (;;) {
		sc_mutex_lock(&h->lock);
		r = h->reg;
		gen = h->reg_gen;
		batch = hdr && h->tracked ?
			nq_take(h, r.max_evict, &nb) : NULL;
		if (!batch)
			nb = 0;
		h->st.server_calls++;
		h->last_send_ms = sc_clock_ms();
		sc_mutex_unlock(&h->lock);
		if (hdr) {
			hdr->host = r.id;
			hdr->epoch = r.epoch;
			hdr->evicted = batch;
			hdr->nevicted = nb;
		}
		c->since = h->hc ? sc_hostcache_gen(h->hc) : 0;
		reply = NULL;
		err = h->tr.call(h->tr.ctx, proc, args, res, &reply);
		if (hdr) {
			hdr->evicted = NULL;
			hdr->nevicted = 0;
		}
		if (err) {
			nq_return(h, batch, nb, gen);
			if (++io > h->io_retries) {
				sc_log_err_ratelimited("host %s: no reply from the server after %u tries (%d)",
						       h->name, io, err);
				return -SC_EIO;
			}
			err = sc_msleep_killable(io_ms);
			if (err)
				return err;
			io_ms = backoff_next(io_ms, HOST_IO_BACKOFF_MAX_MS);
			continue;
		}
		status = *(const uint32_t *)res;
		if (hdr && (status == CSI_ERR_BAD_EPOCH ||
			    status == CSI_ERR_UNKNOWN_HOST)) {
			/* not delivered, and void in any new registration */
			sc_free(batch);
			h->tr.release(h->tr.ctx, reply);
			if (++reg > HOST_REG_RETRIES)
				return host_proto_err(h, "registration refused right after HELLO");
			err = host_register(h, gen);
			if (err)
				return err;
			continue;
		}
		sc_free(batch);
		if (nb) {
			sc_mutex_lock(&h->lock);
			h->st.notices_sent += nb;
			sc_mutex_unlock(&h->lock);
		}
		if (status == CSI_ERR_BUSY && ++busy <= HOST_BUSY_RETRIES) {
			h->tr.release(h->tr.ctx, reply);
			err = sc_msleep_killable(busy_ms);
			if (err)
				return err;
			busy_ms = backoff_next(busy_ms, HOST_BACKOFF_MAX_MS);
			continue;
		}
		c->id = r.id;
		c->epoch = r.epoch;
		c->status = status;
		c->reply = reply;
		return 0;
	}
}

void host_release(struct sc_host *h, struct host_call *c)
{
	h->tr.release(h->tr.ctx, c->reply);
	c->reply = NULL;
}

/* A HELLO reply we can work with (§4, §11.1 item 4)? */
static bool hello_ok(struct sc_host *h, const struct csi_hello_res *r)
{
	if (!sc_block_size_valid(r->block_size) ||
	    (h->bs && r->block_size != h->bs) || !r->max_blocks ||
	    r->max_blocks > CSI_MAX_BLOCKS || r->max_push > CSI_MAX_PUSH ||
	    !r->max_evict || r->max_evict > CSI_MAX_EVICT ||
	    (r->features & ~h->requested) || !r->lease_seconds || !r->host ||
	    !r->epoch)
		return false;
	return true;
}

/*
 * HELLO (§4), unless another thread registered since seen_gen.  A new
 * epoch drops every mapping (§6.2 item 3) and makes the unstable blocks
 * stale (item 5); any HELLO drops the queued notices (§4 item 10).
 */
static int host_register(struct sc_host *h, uint64_t seen_gen)
{
	struct csi_hello_args a;
	struct csi_hello_res r;
	struct host_call c;
	struct sc_hash *nq = NULL;
	uint8_t secret[CSI_SECRET_SIZE];
	bool new_epoch = false;
	int err;

	sc_mutex_lock(&h->hello_lock);
	sc_mutex_lock(&h->lock);
	err = h->reg_gen != seen_gen;
	sc_mutex_unlock(&h->lock);
	if (err) {
		sc_mutex_unlock(&h->hello_lock);
		return 0;
	}
	sc_memset(&a, 0, sizeof(a));
	sc_memcpy(a.host_uuid, h->uuid, sizeof(a.host_uuid));
	a.host_name.p = (const uint8_t *)h->name;
	a.host_name.len = (uint32_t)sc_strlen(h->name);
	a.peer = h->peer;
	a.cache_bytes = (uint64_t)h->cache_blocks *
			(h->bs ? h->bs : SC_BLOCK_SIZE_DEFAULT);
	a.features = h->requested;
	err = host_call(h, CSI_PROC_HELLO, NULL, &a, &r, &c);
	if (err)
		goto out;
	err = host_status_err(c.status);
	if (!err && !hello_ok(h, &r))
		err = host_proto_err(h, "HELLO reply out of range");
	if (!err) {
		nq = sc_calloc(HOST_NQ_CAP(r), sizeof(*nq));
		if (!nq)
			err = -SC_ENOMEM;
	}
	if (err) {
		host_release(h, &c);
		goto out;
	}
	sc_memcpy(secret, r.peer_secret, sizeof(secret));
	sc_mutex_lock(&h->lock);
	new_epoch = h->reg_gen && h->reg.epoch != r.epoch;
	h->reg.id = r.host;
	h->reg.epoch = r.epoch;
	h->reg.max_blocks = r.max_blocks;
	h->reg.max_push = r.max_push;
	h->reg.max_evict = r.max_evict;
	h->reg.features = r.features;
	h->reg.lease = r.lease_seconds;
	h->reg_gen++;
	h->bs = r.block_size;
	h->bshift = sc_ilog2(r.block_size);
	h->tracked = r.features & HOST_TRACKED;
	sc_free(h->nq);
	h->nq = nq;
	h->nq_cap = HOST_NQ_CAP(r);
	h->nq_head = 0;
	h->nq_len = 0;
	if (new_epoch)
		h->stale_pins = h->npins;
	h->st.registrations++;
	sc_mutex_unlock(&h->lock);
	host_release(h, &c);
	if (h->tr.identity)
		h->tr.identity(h->tr.ctx, r.host, r.epoch, secret);
	sc_memset(secret, 0, sizeof(secret));
	if (new_epoch && h->hc)
		sc_hostcache_drop_all(h->hc);
out:
	sc_mutex_unlock(&h->hello_lock);
	return err;
}

int host_flush(struct sc_host *h, uint32_t keep)
{
	struct csi_evict_args a;
	struct csi_evict_res r;
	struct host_call c;
	uint32_t left;
	int err;

	for (;;) {
		sc_mutex_lock(&h->lock);
		left = h->tracked ? h->nq_len : 0;
		sc_mutex_unlock(&h->lock);
		if (left <= keep)
			return 0;
		sc_memset(&a, 0, sizeof(a));
		err = host_call(h, CSI_PROC_EVICT, &a.hdr, &a, &r, &c);
		if (err)
			return err;
		host_release(h, &c);
		/* BUSY still applied the notices (§7.6) */
		if (c.status != CSI_OK && c.status != CSI_ERR_BUSY)
			return host_status_err(c.status);
	}
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
	h->tr = cfg->tr;
	h->io_retries = cfg->io_retries ? cfg->io_retries : HOST_IO_RETRIES;
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
	hcfg.policy = cfg->policy ? cfg->policy : "elru:16";
	hcfg.csimap_budget = cfg->csimap_budget ? cfg->csimap_budget :
			     (uint64_t)cfg->cache_blocks * 64;
	hcfg.on_evict = host_on_evict;
	hcfg.ctx = h;
	h->hc = sc_hostcache_create(&hcfg);
	if (!h->hc) {
		err = -SC_ENOMEM;
		goto fail;
	}
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
	sc_mutex_destroy(&h->lock);
	sc_mutex_destroy(&h->resend_lock);
	sc_mutex_destroy(&h->hello_lock);
	sc_free(h);
}

/* Attrs of a reply: the file's state (§7.7). */
static int host_attr_reply(struct sc_host *h, const struct host_call *c,
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

static int host_getattr(struct sc_host *h, uint64_t file,
			struct csi_fileattr *attr)
{
	/* READ of no block: only the attrs, in every variant (§7.3) */
	struct csi_read_args a = { .file = file,
				   .flags = CSI_READ_WANT_DATA };
	struct csi_read_res r;
	struct host_call c;
	int err;

	err = host_call(h, CSI_PROC_READ, &a.hdr, &a, &r, &c);
	if (err)
		return err;
	if (c.status == CSI_OK && (r.nblocks || r.npushed))
		err = host_proto_err(h, "blocks in a READ of none");
	if (!err)
		err = host_attr_reply(h, &c, &r.attr, file);
	if (!err)
		*attr = r.attr;
	host_release(h, &c);
	return err;
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
	struct csi_evict_args a;
	struct csi_evict_res r;
	struct host_call c;
	uint64_t quiet;
	int err;

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
	sc_memset(&a, 0, sizeof(a));
	err = host_call(h, CSI_PROC_EVICT, &a.hdr, &a, &r, &c);
	if (err)
		return err;
	host_release(h, &c);
	return c.status == CSI_ERR_BUSY ? 0 : host_status_err(c.status);
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
int sc_host_getattr(struct sc_host *h, uint64_t file,
		    struct csi_fileattr *attr)
{
	unsigned int nofs = sc_nofs_save();
	int err = host_getattr(h, file, attr);

	sc_nofs_restore(nofs);
	return err;
}

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
	st->pinned_blocks = h->npins;
	st->mem_bytes = cs.mem_bytes + sizeof(*h) +
			(uint64_t)h->nq_cap * sizeof(*h->nq) +
			(uint64_t)h->npins * (sizeof(struct host_pin) + h->bs);
	sc_mutex_unlock(&h->lock);
	st->addr_hits = cs.addr_hits;
	st->pushed_hits = cs.pushed_hits;
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
