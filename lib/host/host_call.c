// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A host's calls (host_priv.h): every CSI call goes through host_call,
 * which carries the eviction notices queued here, registers again (HELLO)
 * when the server no longer knows the registration, and backs off on BUSY
 * and on no reply.  Calls only down, to host_util.c.
 */
#include "host_priv.h"

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

bool host_notice_try(struct sc_host *h, const struct sc_hash *hash)
{
	if (!sc_mutex_trylock(&h->lock))
		return false;
	nq_push(h, hash);
	sc_mutex_unlock(&h->lock);
	return true;
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

static unsigned int backoff_next(unsigned int ms, unsigned int max)
{
	return ms * 2 > max ? max : ms * 2;
}

/* ---- the breaker (host.h: fail_fast) ---- */

bool host_down(struct sc_host *h)
{
	bool down;

	sc_mutex_lock(&h->lock);
	down = h->down;
	sc_mutex_unlock(&h->lock);
	return down;
}

/* Marks the service down or up; was it down? */
static bool breaker_set(struct sc_host *h, bool down)
{
	bool was;

	sc_mutex_lock(&h->lock);
	was = h->down;
	h->down = down;
	h->st.down_trips += down && !was;
	sc_mutex_unlock(&h->lock);
	return was;
}

/* No reply: from now on no call goes out but the probe's. */
static void breaker_trip(struct sc_host *h, int err)
{
	if (!breaker_set(h, true))
		sc_log_err_ratelimited("host %s: the CSI service did not answer (%d): I/O goes around it until it does",
				       h->name, err);
}

static void breaker_close(struct sc_host *h)
{
	if (breaker_set(h, false))
		sc_log_warn_ratelimited("host %s: the CSI service answers again",
					h->name);
}

static int register_as(struct sc_host *h, uint64_t seen_gen, bool probe);

/* host_call; a probe goes out with the service marked down. */
static int call(struct sc_host *h, uint32_t proc, struct csi_reqhdr *hdr,
		const void *args, void *res, struct host_call *c, bool probe)
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
		if (h->down && !probe) {
			h->st.down_calls++;
			sc_mutex_unlock(&h->lock);
			return -SC_EIO;
		}
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
			if (err == -SC_EINTR)
				return err;
			/*
			 * The deadline passed: another try would wait as
			 * long again, so a fail_fast host goes around now.
			 */
			if (h->fail_fast &&
			    (err == -SC_ETIMEDOUT || io >= h->io_retries)) {
				breaker_trip(h, err);
				return -SC_EIO;
			}
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
		if (probe)
			breaker_close(h);
		status = *(const uint32_t *)res;
		if (hdr && (status == CSI_ERR_BAD_EPOCH ||
			    status == CSI_ERR_UNKNOWN_HOST)) {
			/* not delivered, and void in any new registration */
			sc_free(batch);
			h->tr.release(h->tr.ctx, reply);
			if (++reg > HOST_REG_RETRIES)
				return host_proto_err(h, "registration refused right after HELLO");
			err = register_as(h, gen, probe);
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

int host_call(struct sc_host *h, uint32_t proc, struct csi_reqhdr *hdr,
	      const void *args, void *res, struct host_call *c)
{
	return call(h, proc, hdr, args, res, c, false);
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
static int register_as(struct sc_host *h, uint64_t seen_gen, bool probe)
{
	struct csi_hello_args a;
	struct csi_hello_res r;
	struct host_call c;
	struct sc_hash *nq = NULL;
	uint8_t secret[CSI_SECRET_SIZE];
	bool new_epoch = false;
	int err;

	/* its holder waits for the server: a killed task need not wait too */
	err = sc_mutex_lock_killable(&h->hello_lock);
	if (err)
		return err;
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
	err = call(h, CSI_PROC_HELLO, NULL, &a, &r, &c, probe);
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

int host_register(struct sc_host *h, uint64_t seen_gen)
{
	return register_as(h, seen_gen, false);
}

static int evict(struct sc_host *h, bool probe)
{
	struct csi_evict_args a = { 0 };
	struct csi_evict_res r;
	struct host_call c;
	int err;

	err = call(h, CSI_PROC_EVICT, &a.hdr, &a, &r, &c, probe);
	if (err)
		return err;
	host_release(h, &c);
	/* BUSY still applied the notices (§7.6) */
	return c.status == CSI_ERR_BUSY ? 0 : host_status_err(c.status);
}

int host_evict(struct sc_host *h)
{
	return evict(h, false);
}

int host_probe(struct sc_host *h)
{
	/* any reply closes the breaker (call), an error status's too */
	return evict(h, true);
}

void host_peer_failed(struct sc_host *h, const struct csi_read_block *b)
{
	struct csi_peer_failure *f;

	sc_mutex_lock(&h->lock);
	if (h->pfq_len == CSI_MAX_PEER_REPORTS) {
		h->pfq_head = (h->pfq_head + 1) % CSI_MAX_PEER_REPORTS;
		h->pfq_len--;
	}
	f = &h->pfq[(h->pfq_head + h->pfq_len++) % CSI_MAX_PEER_REPORTS];
	f->peer_host = b->peer_host;
	f->hash = b->hash;
	f->token = b->token;
	sc_mutex_unlock(&h->lock);
}

/*
 * A report is a hint to the server: one that is not answered is not sent
 * again, and one of an earlier registration is ignored by the server
 * (its tokens name our old id).
 */
int host_report_peers(struct sc_host *h)
{
	struct csi_peer_report_args a = { 0 };
	struct csi_peer_failure *f;
	struct csi_evict_res r;
	struct host_call c;
	uint32_t n, i;
	int err;

	sc_mutex_lock(&h->lock);
	n = h->pfq_len;
	if (!(h->reg.features & CSI_FEAT_PEER_REPORT))
		h->pfq_len = 0;
	sc_mutex_unlock(&h->lock);
	if (!n)
		return 0;
	f = sc_malloc(CSI_MAX_PEER_REPORTS * sizeof(*f));
	if (!f)
		return -SC_ENOMEM;
	sc_mutex_lock(&h->lock);
	n = h->pfq_len;
	for (i = 0; i < n; i++)
		f[i] = h->pfq[(h->pfq_head + i) % CSI_MAX_PEER_REPORTS];
	h->pfq_head = (h->pfq_head + n) % CSI_MAX_PEER_REPORTS;
	h->pfq_len = 0;
	sc_mutex_unlock(&h->lock);
	a.failures = f;
	a.nfailures = n;
	err = n ? host_call(h, CSI_PROC_PEER_REPORT, &a.hdr, &a, &r, &c) : 0;
	sc_free(f);
	if (err || !n)
		return err;
	host_release(h, &c);
	if (c.status == CSI_OK) {
		sc_mutex_lock(&h->lock);
		h->st.peer_reports += n;
		sc_mutex_unlock(&h->lock);
	}
	return host_status_err(c.status);
}

int host_flush(struct sc_host *h, uint32_t keep)
{
	uint32_t left;
	int err;

	for (;;) {
		sc_mutex_lock(&h->lock);
		left = h->tracked ? h->nq_len : 0;
		sc_mutex_unlock(&h->lock);
		if (left <= keep)
			return 0;
		err = host_evict(h);
		if (err)
			return err;
	}
}
