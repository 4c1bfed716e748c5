// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A host's reads (PROTOCOL.md §11.2): every block of a request is looked
 * up in the host cache first; address hits cost no call.  The misses go
 * to the server in runs of at most max_blocks contiguous blocks: Read#
 * asks GET_HASHES first and reads only the contents it lacks; every other
 * variant sends READ with the flags of its grant.  Each answered block is
 * handled as §7.3 says, and the blocks a HASH or DELEGATED answer could
 * not deliver are read again, and only they, with FORCE_DATA.
 */
#include "host_priv.h"

/* Blocks looked up before their misses go out: at most one READ each. */
#define RD_WINDOW CSI_MAX_BLOCKS

enum rb_state {
	RB_ASK,		/* nothing known: the server names it */
	RB_DATA,	/* its hash is known, the content is not cached */
	RB_FORCE,	/* a HASH or DELEGATED answer failed: FORCE_DATA */
	RB_WAIT,	/* a content on its way: HASH answer, or flight */
	RB_DONE,
};

/* A block of the request that missed the cache. */
struct rd_blk {
	uint64_t lbn;
	uint8_t *dst;		/* its block_size bytes */
	struct sc_hash h;	/* RB_DATA; delegated: the content */
	uint8_t st;		/* enum rb_state */
	uint8_t delegated;	/* the server counts it held (§7.3) */
	uint8_t flying;		/* its content h is our flight */
	uint8_t flight;		/* RB_WAIT: for another read's flight */
	uint8_t bucket;		/* flying: its bucket of the host's flights */
	uint8_t spare;		/* read ahead or again: the caller has it */
	uint64_t change;	/* RB_WAIT, HASH: of the reply that named h */
	struct rd_blk *fnext;	/* flying: the next flight of the bucket */
};

/* The counters of one request, added to the host's at the end. */
struct rd_acc {
	uint64_t misses, holes, data_blocks, data_bytes, hash_only, forced,
		 pushes, delegations, peer_blocks, peer_failures, waited,
		 ahead;
};

struct rd {
	struct sc_host *h;
	uint64_t file;
	uint32_t bs;
	struct host_reg reg;
	uint32_t bshift;	/* log2(bs) */
	uint8_t *out;		/* the request: len bytes from off */
	const struct sc_read_sink *sink;	/* ... where out is NULL */
	uint64_t off;
	size_t len;
	uint64_t first, last;	/* its blocks */
	uint8_t *bounce[2];	/* its first and last block's, if partial */
	uint8_t *scratch;	/* sink: a window's misses (rd_dst) */
	uint64_t fault;		/* sink: where it first faulted, or ~0 */
	uint8_t *ahead;		/* the read-ahead blocks' (rd_ahead) */
	struct rd_blk *b;	/* the misses, up to RD_WINDOW */
	uint32_t n;
	struct sc_peer_fetch *pf;	/* a reply's delegated blocks */
	uint32_t npf;
	uint64_t size;		/* the file's size in the last reply */
	struct sc_hasher *hs;
	uint64_t wait_upto;	/* RB_WAIT, HASH: READs started up to this */
	uint32_t flight_waits;	/* RB_WAIT blocks for another's flight */
	struct rd_acc acc;
};

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

/* In a NOFS scope, as every I/O entry point (host.h). */
int sc_host_getattr(struct sc_host *h, uint64_t file,
		    struct csi_fileattr *attr)
{
	unsigned int nofs = sc_nofs_save();
	int err = host_getattr(h, file, attr);

	sc_nofs_restore(nofs);
	return err;
}

int host_file_size(struct sc_host *h, uint64_t file, uint64_t *size)
{
	struct csi_fileattr a;
	int err;

	if (sc_hostcache_file_size(h->hc, file, size))
		return 0;
	err = sc_host_getattr(h, file, &a);
	if (!err)
		*size = a.size;
	return err;
}

static uint64_t blocks_of(uint64_t size, uint32_t bshift)
{
	return (size >> bshift) + !!(size & ((1ull << bshift) - 1));
}

/*
 * The content an answer named for b.  Other reads look a flight's hash up
 * under the host's lock: it changes (the file did) under that lock.
 */
static void rd_set_hash(struct rd *r, struct rd_blk *b,
			const struct sc_hash *hash)
{
	if (sc_hash_eq(&b->h, hash))
		return;
	sc_mutex_lock(&r->h->lock);
	b->h = *hash;
	sc_mutex_unlock(&r->h->lock);
}

/* Cache b->dst, verified to hold content hash; the block is done. */
static void rd_fill(struct rd *r, struct rd_blk *b, uint64_t change,
		    const struct sc_hash *hash)
{
	/* a collision refused: this reader gets the bytes, we do not hold H */
	if (sc_hostcache_fill_at(r->h->hc, r->file, b->lbn, change, hash,
				 b->dst))
		host_notice(r->h, hash);
	b->st = RB_DONE;
	r->acc.misses++;
}

/* Zero-fill, verify and cache a block's bytes (§7.3 DATA, §7.8). */
static int rd_take_data(struct rd *r, struct rd_blk *b, uint64_t change,
			const struct sc_hash *hash, const void *data,
			uint32_t len)
{
	int err;

	if (!r->hs) {
		r->hs = host_hasher_get(r->h);
		if (!r->hs)
			return -SC_ENOMEM;
	}
	err = sc_block_verify(r->hs, r->bs, hash, data, len, b->dst);
	if (err)
		return err;
	rd_fill(r, b, change, hash);
	return 0;
}

/* §7.3 DELEGATED: b is fetched from the peer with the reply's others. */
static int rd_delegated(struct rd *r, struct rd_blk *b,
			const struct csi_read_block *rb)
{
	struct sc_peer_fetch *f;

	r->acc.delegations++;
	b->delegated = 1;
	rd_set_hash(r, b, &rb->hash);
	if (!r->pf) {
		r->pf = sc_calloc(RD_WINDOW, sizeof(*r->pf));
		if (!r->pf)
			return -SC_ENOMEM;
	}
	f = &r->pf[r->npf++];
	f->where = &rb->peer;
	f->h = &rb->hash;
	f->tok = &rb->token;
	f->out = b->dst;
	f->err = -SC_EIO;
	return 0;
}

/*
 * A reply's delegated blocks, fetched together where the transport can:
 * a peer's answers overlap instead of each waiting for the one before.
 * peer_fetch hands back each block verified against its hash (host.h),
 * so it is not hashed a second time here; a failed one is read from the
 * server with FORCE_DATA.
 */
static void rd_peer_fetch(struct rd *r, struct rd_blk *b, uint64_t change,
			  const struct host_call *c,
			  const struct csi_read_res *res)
{
	struct sc_host_transport *tr = &r->h->tr;
	struct sc_peer_fetch *f = r->pf;
	uint64_t since = sc_clock_us();
	uint32_t i, k = 0;

	if (!r->npf)
		return;
	if (tr->peer_fetch_many)
		tr->peer_fetch_many(tr->ctx, c->id, c->epoch, f, r->npf);
	else if (tr->peer_fetch)
		for (i = 0; i < r->npf; i++)
			f[i].err = tr->peer_fetch(tr->ctx, f[i].where, c->id,
						  c->epoch, f[i].h, f[i].tok,
						  f[i].out);
	host_time_add(r->h, SC_HT_PEER, since);
	for (i = 0; i < res->nblocks; i++) {
		if (res->blocks[i].kind != CSI_RK_DELEGATED)
			continue;
		if (f[k++].err) {
			r->acc.peer_failures++;
			host_peer_failed(r->h, &res->blocks[i]);
			b[i].st = RB_FORCE;
			continue;
		}
		rd_fill(r, &b[i], change, &res->blocks[i].hash);
		r->acc.peer_blocks++;
	}
}

/* The attrs of a reply to blocks b[0..count) from lbn: the count it owes. */
static int rd_attr(struct rd *r, const struct host_call *c,
		   const struct csi_fileattr *a, uint64_t lbn,
		   uint32_t count, uint32_t got)
{
	uint64_t nb = blocks_of(a->size, r->bshift);
	uint64_t want = nb > lbn ? nb - lbn : 0;

	if (a->file != r->file)
		return host_proto_err(r->h, "attrs of another file");
	if (want > count)
		want = count;
	if (got != want)
		return host_proto_err(r->h, "block count against the file size");
	sc_hostcache_file_seen(r->h->hc, r->file, a->change, a->size,
			       c->since);
	r->size = a->size;
	return 0;
}

/* Blocks past end of file: zeros, and the read comes out short. */
static void rd_eof(struct rd_blk *b, uint32_t from, uint32_t count,
		   uint32_t bs)
{
	uint32_t i;

	for (i = from; i < count; i++) {
		sc_memset(b[i].dst, 0, bs);
		b[i].st = RB_DONE;
	}
}

/*
 * READs in flight.  When VMs of a host read the same content at once (a
 * boot storm), the server sends it once and answers the others by hash
 * (it counts the content held as soon as it decides to send it); a HASH
 * for a content not cached yet then waits for the READs already under
 * way instead of fetching a second copy with FORCE_DATA.
 */
static uint64_t rd_begin(struct sc_host *h)
{
	uint64_t seq, *n;

	sc_mutex_lock(&h->lock);
	seq = ++h->rd_seq;
	if (h->rd_nlive == h->rd_cap) {
		n = sc_calloc(h->rd_cap * 2 + 8, sizeof(*n));
		if (n) {
			if (h->rd_nlive)
				sc_memcpy(n, h->rd_live,
					  h->rd_nlive * sizeof(*n));
			sc_free(h->rd_live);
			h->rd_live = n;
			h->rd_cap = h->rd_cap * 2 + 8;
		}
	}
	/* untracked when out of memory: a wait may then end early */
	if (h->rd_nlive < h->rd_cap)
		h->rd_live[h->rd_nlive++] = seq;
	sc_mutex_unlock(&h->lock);
	return seq;
}

static void rd_end(struct sc_host *h, uint64_t seq)
{
	uint32_t i;

	sc_mutex_lock(&h->lock);
	for (i = 0; i < h->rd_nlive; i++)
		if (h->rd_live[i] == seq) {
			h->rd_live[i] = h->rd_live[--h->rd_nlive];
			break;
		}
	sc_mutex_unlock(&h->lock);
	sc_wake_all(&h->rd_done);
}

static uint64_t rd_seq_now(struct sc_host *h)
{
	uint64_t seq;

	sc_mutex_lock(&h->lock);
	seq = h->rd_seq;
	sc_mutex_unlock(&h->lock);
	return seq;
}

/* Is a READ numbered upto or lower still in flight? */
static bool rd_older_live(struct sc_host *h, uint64_t upto)
{
	bool live = false;
	uint32_t i;

	sc_mutex_lock(&h->lock);
	for (i = 0; i < h->rd_nlive && !live; i++)
		live = h->rd_live[i] <= upto;
	sc_mutex_unlock(&h->lock);
	return live;
}

/* Longest wait for other READs (the transport's own timeout ends them). */
#define RD_WAIT_MAX_MS 30000

struct rd_settled_arg {
	struct sc_host *h;
	uint64_t upto;
	bool (*landed)(void *arg);
	void *arg;
};

/*
 * What the waiter waits for is in, or can no longer come: the READs it
 * waits on are over, and what they brought is in the cache since rd_end
 * (so it is looked at after them).
 */
static bool rd_settled(void *arg)
{
	const struct rd_settled_arg *a = arg;
	bool live = rd_older_live(a->h, a->upto);

	return a->landed(a->arg) || !live;
}

/*
 * Waits, woken by rd_end and as the READs' blocks land, until landed(arg)
 * or while a READ numbered upto or lower is in flight, up to max_ms; 0,
 * or -SC_EINTR on a fatal signal.
 */
static int rd_settle(struct sc_host *h, uint64_t upto,
		     bool (*landed)(void *arg), void *arg, uint32_t max_ms)
{
	struct rd_settled_arg a = { .h = h, .upto = upto, .landed = landed,
				    .arg = arg };
	int err = sc_waitq_wait(&h->rd_done, rd_settled, &a, max_ms);

	return err == -SC_ETIMEDOUT ? 0 : err;
}

struct rd_content_arg {
	struct sc_host *h;
	const struct sc_hash *hash;
	void *buf;
	bool got;
};

static bool rd_content_landed(void *arg)
{
	struct rd_content_arg *a = arg;

	a->got = a->got || sc_hostcache_get(a->h->hc, a->hash, a->buf);
	return a->got;
}

int host_content_wait(struct sc_host *h, const struct sc_hash *hash,
		      void *buf, uint32_t max_ms)
{
	struct rd_content_arg a = { .h = h, .hash = hash, .buf = buf };
	int err = rd_settle(h, rd_seq_now(h), rd_content_landed, &a, max_ms);

	return err ? err : a.got;
}

/*
 * Single flight: when VMs of a host read one content at once (a boot
 * storm), one read fetches it and the others wait for it.  Before its
 * READs a read claims the content of each block it knows the hash of
 * (RB_DATA: from GET_HASHES, or a mapping whose content left the cache;
 * RB_FORCE: named by a HASH or DELEGATED answer that did not deliver),
 * unless another read is fetching it: then the block waits for that one.
 * A read lands its flights once their answers are in the cache (or
 * failed), and only then waits for others' flights, so no two reads wait
 * for each other.  The flights live in the reads' own blocks: the host
 * holds only the buckets' heads.
 */
static uint8_t flight_bucket(const struct sc_hash *hash)
{
	return (uint8_t)(sc_hash_key64(hash) & (HOST_FLIGHT_BUCKETS - 1));
}

/* The block whose read is fetching content hash, or NULL (lock held). */
static struct rd_blk *flight_find(struct sc_host *h,
				  const struct sc_hash *hash)
{
	struct rd_blk *f;

	for (f = h->flights[flight_bucket(hash)]; f; f = f->fnext)
		if (sc_hash_eq(&f->h, hash))
			return f;
	return NULL;
}

/* The flights of r that are done (all: every one) land; waiters wake. */
static void rd_land(struct rd *r, bool all)
{
	struct sc_host *h = r->h;
	struct rd_blk **pp, *b;
	bool landed = false;
	uint32_t i;

	sc_mutex_lock(&h->lock);
	for (i = 0; i < r->n; i++) {
		b = &r->b[i];
		if (!b->flying || (!all && b->st != RB_DONE))
			continue;
		for (pp = &h->flights[b->bucket]; *pp != b; pp = &(*pp)->fnext)
			;
		*pp = b->fnext;
		b->flying = 0;
		landed = true;
	}
	sc_mutex_unlock(&h->lock);
	if (landed)
		sc_wake_all(&h->rd_done);
}

/*
 * Claim the contents of the blocks in a state of mask (their hashes are
 * known), or wait for them (RB_WAIT).
 */
static void rd_claim(struct rd *r, uint32_t mask)
{
	struct sc_host *h = r->h;
	struct rd_blk *b, *f;
	bool claimed = false;
	uint32_t i;

	sc_mutex_lock(&h->lock);
	for (i = 0; i < r->n; i++) {
		b = &r->b[i];
		if (!(mask & 1u << b->st) || b->flying)
			continue;
		f = flight_find(h, &b->h);
		if (!f) {
			b->bucket = flight_bucket(&b->h);
			b->fnext = h->flights[b->bucket];
			h->flights[b->bucket] = b;
			b->flying = 1;
			claimed = true;
			continue;
		}
		/*
		 * A spare block stays in its READ (a wait would split the
		 * run): asked, answered by hash once the flight's READ was.
		 */
		if (b->spare && (f < r->b || f >= r->b + r->n)) {
			b->st = RB_ASK;
			continue;
		}
		/* one content twice in this read: both asked, never waited */
		if (f < r->b || f >= r->b + r->n) {
			b->st = RB_WAIT;
			b->flight = 1;
			r->flight_waits++;
		}
	}
	sc_mutex_unlock(&h->lock);
	/* a flight that landed since the lookup brought it */
	for (i = 0; claimed && i < r->n; i++) {
		b = &r->b[i];
		if (b->flying && sc_hostcache_get(h->hc, &b->h, b->dst)) {
			b->st = RB_DONE;
			r->acc.waited++;
		}
	}
	if (claimed)
		rd_land(r, false);
}

/* Have the flights that r's RB_WAIT blocks wait for landed? */
static bool rd_flights_landed(void *arg)
{
	struct rd *r = arg;
	struct sc_host *h = r->h;
	bool flying = false;
	uint32_t i;

	sc_mutex_lock(&h->lock);
	for (i = 0; i < r->n && !flying; i++)
		flying = r->b[i].st == RB_WAIT && r->b[i].flight &&
			 flight_find(h, &r->b[i].h);
	sc_mutex_unlock(&h->lock);
	return !flying;
}

/* Is the content b waits for (RB_WAIT) in?  Then b is served. */
static bool rd_wait_served(struct rd *r, struct rd_blk *b)
{
	/* a flight's block is mapped already: its content serves */
	if (!(b->flight ? sc_hostcache_get(r->h->hc, &b->h, b->dst) :
	      sc_hostcache_read_hash_at(r->h->hc, r->file, b->lbn, b->change,
					&b->h, b->dst) == SC_CONTENT_HIT))
		return false;
	b->st = RB_DONE;
	b->flight = 0;
	r->acc.waited++;
	return true;
}

/* Are the contents of r's HASH answers in?  Each is served as it comes. */
static bool rd_hashes_landed(void *arg)
{
	struct rd *r = arg;
	bool waiting = false;
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (r->b[i].st == RB_WAIT && !r->b[i].flight &&
		    !rd_wait_served(r, &r->b[i]))
			waiting = true;
	return !waiting;
}

/*
 * The RB_WAIT blocks of one kind, served from the cache once their
 * contents are in, or once what they wait for is done (a HASH answer's:
 * the READs started before it; flight: the flight of another read)
 * read with FORCE_DATA after all.
 */
static int rd_wait(struct rd *r, bool flight)
{
	uint64_t since = sc_clock_us();
	struct rd_blk *b;
	uint32_t i;
	int err;

	err = flight ? sc_waitq_wait(&r->h->rd_done, rd_flights_landed, r,
				     RD_WAIT_MAX_MS) :
		       rd_settle(r->h, r->wait_upto, rd_hashes_landed, r,
				 RD_WAIT_MAX_MS);
	host_time_add(r->h, flight ? SC_HT_FLIGHT_WAIT : SC_HT_HASH_WAIT,
		      since);
	if (err && err != -SC_ETIMEDOUT)
		return err;
	for (i = 0; i < r->n; i++) {
		b = &r->b[i];
		if (b->st != RB_WAIT || b->flight != flight ||
		    rd_wait_served(r, b))
			continue;
		b->st = RB_FORCE;
		b->flight = 0;
	}
	if (flight)
		r->flight_waits = 0;
	else
		r->wait_upto = 0;
	return 0;
}

static int rd_read_reply(struct rd *r, struct rd_blk *b, uint32_t count,
			 uint32_t flags, const struct host_call *c,
			 const struct csi_read_res *res)
{
	bool force = flags & CSI_READ_FORCE_DATA;
	const struct csi_read_block *rb;
	uint64_t change = res->attr.change, data_before = r->acc.data_blocks;
	uint32_t i;
	int err;

	r->npf = 0;
	err = rd_attr(r, c, &res->attr, b[0].lbn, count, res->nblocks);
	if (err)
		return err;
	if (res->npushed && (!(flags & CSI_READ_ACCEPT_PUSH) ||
			     res->npushed > r->reg.max_push))
		return host_proto_err(r->h, "pushes not accepted");
	for (i = 0; i < res->nblocks; i++) {
		rb = &res->blocks[i];
		switch (rb->kind) {
		case CSI_RK_HOLE:
			sc_memset(b[i].dst, 0, r->bs);
			b[i].st = RB_DONE;
			r->acc.holes++;
			break;
		case CSI_RK_DATA:
			r->acc.data_blocks++;
			r->acc.data_bytes += rb->data.len;
			err = rd_take_data(r, &b[i], change, &rb->hash,
					   rb->data.p, rb->data.len);
			if (err == -SC_EBADMSG)
				return host_proto_err(r->h, "DATA that does not hash to its hash");
			if (err)
				return err;
			break;
		case CSI_RK_HASH:
			if (force || !(r->reg.features & CSI_FEAT_TRACKER))
				return host_proto_err(r->h, "HASH answer not allowed");
			r->acc.hash_only++;
			/* mapped either way; a spare block waits for nothing */
			if (sc_hostcache_read_hash_at(r->h->hc, r->file,
						      b[i].lbn, change,
						      &rb->hash, b[i].dst) ==
			    SC_CONTENT_HIT || b[i].spare) {
				b[i].st = RB_DONE;
				break;
			}
			/* another VM's READ may be bringing it: rd_wait */
			rd_set_hash(r, &b[i], &rb->hash);
			b[i].change = change;
			b[i].st = RB_WAIT;
			r->wait_upto = rd_seq_now(r->h);
			break;
		case CSI_RK_DELEGATED:
			if (force || !(flags & CSI_READ_ACCEPT_DELEG))
				return host_proto_err(r->h, "delegation not allowed");
			err = rd_delegated(r, &b[i], rb);
			if (err)
				return err;
			break;
		default:
			return host_proto_err(r->h, "unknown block kind");
		}
	}
	/* what came as data serves waiters before the peers answer */
	if (r->npf && r->acc.data_blocks > data_before)
		sc_wake_all(&r->h->rd_done);
	rd_peer_fetch(r, b, change, c, res);
	rd_eof(b, res->nblocks, count, r->bs);
	for (i = 0; i < res->npushed; i++) {
		const struct csi_push_entry *p = &res->pushed[i];

		sc_hostcache_learn_at(r->h->hc, p->file, p->lbn, p->change,
				      &p->hash);
	}
	r->acc.pushes += res->npushed;
	return 0;
}

/* One READ of b[0..count), contiguous. */
static int rd_read(struct rd *r, struct rd_blk *b, uint32_t count,
		   uint32_t flags)
{
	struct csi_read_args a = { .file = r->file, .lbn = b[0].lbn,
				   .count = count, .flags = flags };
	struct csi_read_res res;
	struct host_call c;
	uint64_t seq, since;
	int err;

	if (flags & CSI_READ_FORCE_DATA)
		r->acc.forced += count;
	seq = rd_begin(r->h);
	since = sc_clock_us();
	err = host_call(r->h, CSI_PROC_READ, &a.hdr, &a, &res, &c);
	host_time_add(r->h, SC_HT_CALL, since);
	if (err) {
		rd_end(r->h, seq);
		return err;
	}
	err = host_status_err(c.status);
	if (err == -SC_ESTALE)
		sc_hostcache_drop_file(r->h->hc, r->file);
	if (!err)
		err = rd_read_reply(r, b, count, flags, &c, &res);
	host_release(r->h, &c);
	/* its contents are in the cache now: waiters may look */
	rd_end(r->h, seq);
	rd_land(r, false);
	/* the reply may have evicted more than the next call carries */
	if (!err && host_flush(r->h, r->reg.max_evict))
		sc_log_warn_ratelimited("host %s: eviction notices not delivered",
					r->h->name);
	return err;
}

/* Read#: GET_HASHES of b[0..count); cached contents are served. */
static int rd_hashes(struct rd *r, struct rd_blk *b, uint32_t count,
		     uint32_t flags)
{
	struct csi_gethashes_args a = { .file = r->file, .lbn = b[0].lbn,
					.count = count };
	struct csi_gethashes_res res;
	struct host_call c;
	uint32_t i;
	int err;

	(void)flags;	/* GET_HASHES has none */
	err = host_call(r->h, CSI_PROC_GET_HASHES, &a.hdr, &a, &res, &c);
	if (err)
		return err;
	err = host_status_err(c.status);
	if (err == -SC_ESTALE)
		sc_hostcache_drop_file(r->h->hc, r->file);
	if (!err)
		err = rd_attr(r, &c, &res.attr, b[0].lbn, count, res.nblocks);
	for (i = 0; !err && i < res.nblocks; i++) {
		if (res.blocks[i].kind == CSI_HK_HOLE) {
			sc_memset(b[i].dst, 0, r->bs);
			b[i].st = RB_DONE;
			r->acc.holes++;
		} else if (sc_hostcache_read_hash_at(r->h->hc, r->file,
						     b[i].lbn,
						     res.attr.change,
						     &res.blocks[i].hash,
						     b[i].dst) ==
			   SC_CONTENT_HIT) {
			b[i].st = RB_DONE;
		} else {
			b[i].h = res.blocks[i].hash;
			b[i].st = RB_DATA;
		}
	}
	if (!err)
		rd_eof(b, res.nblocks, count, r->bs);
	host_release(r->h, &c);
	return err;
}

/* The next run of blocks in a state of mask, from *i; its length or 0. */
static uint32_t rd_run(struct rd *r, uint32_t *i, uint32_t mask)
{
	uint32_t s, n;

	while (*i < r->n && !(mask & 1u << r->b[*i].st))
		(*i)++;
	s = *i;
	for (n = 0; s + n < r->n && n < r->reg.max_blocks; n++) {
		if (!(mask & 1u << r->b[s + n].st))
			break;
		if (n && r->b[s + n].lbn != r->b[s + n - 1].lbn + 1)
			break;
	}
	return n;
}

static int rd_each_run(struct rd *r, uint32_t mask,
		       int (*fn)(struct rd *r, struct rd_blk *b,
				 uint32_t count, uint32_t flags),
		       uint32_t flags)
{
	uint32_t i = 0, n;
	int err;

	while ((n = rd_run(r, &i, mask))) {
		err = fn(r, &r->b[i], n, flags);
		if (err)
			return err;
		i += n;
	}
	return 0;
}

/* The RB_FORCE blocks, read with FORCE_DATA. */
static int rd_force(struct rd *r)
{
	return rd_each_run(r, 1u << RB_FORCE, rd_read,
			   CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA);
}

/*
 * SS-Push pays while the entries it brings serve reads.  Each costs the
 * server a search for its content's other holders and the reply its
 * bytes; in a scan storm under 1 in 20 is ever used (the VMs read in
 * step, so a pushed address has mostly been asked for before its entry
 * comes), and the searches doubled the server's CPU time.  Pushes are
 * asked for while at least 1 in RD_PUSH_YIELD of the last RD_PUSH_SPAN
 * received served a read, and otherwise on one READ in RD_PUSH_PROBE, to
 * see whether they pay again.
 */
#define RD_PUSH_SPAN 4096
#define RD_PUSH_YIELD 8
#define RD_PUSH_PROBE 16

static bool rd_push_wanted(struct sc_host *h)
{
	struct sc_hostcache_stats cs = { .pushed_hits = 0 };
	uint64_t span;
	bool full, want;

	sc_mutex_lock(&h->lock);
	full = h->st.pushes_received - h->push_span_from >= RD_PUSH_SPAN;
	sc_mutex_unlock(&h->lock);
	/* the cache is not called into under the host's lock */
	if (full)
		sc_hostcache_get_stats(h->hc, &cs);
	sc_mutex_lock(&h->lock);
	span = h->st.pushes_received - h->push_span_from;
	if (full && span >= RD_PUSH_SPAN) {
		h->push_idle = span > (cs.pushed_hits - h->push_hits_from) *
				      RD_PUSH_YIELD;
		h->push_span_from = h->st.pushes_received;
		h->push_hits_from = cs.pushed_hits;
	}
	want = !h->push_idle || !(++h->push_probe % RD_PUSH_PROBE);
	sc_mutex_unlock(&h->lock);
	return want;
}

/* Every miss of the window, from the server (and peers). */
static int rd_fetch(struct rd *r)
{
	uint32_t f = r->reg.features, flags = CSI_READ_WANT_DATA, i;
	uint64_t since = sc_clock_us();
	int err;

	err = host_pins_resend(r->h, r->file);
	if (!err && (f & CSI_FEAT_READ_HASH) && !(f & CSI_FEAT_TRACKER))
		err = rd_each_run(r, 1u << RB_ASK, rd_hashes, 0);
	if (!err)
		rd_claim(r, 1u << RB_DATA);
	/* map windows do a push's work without the server's search */
	if ((f & CSI_FEAT_PUSH) && !(f & CSI_FEAT_MAP) &&
	    rd_push_wanted(r->h))
		flags |= CSI_READ_ACCEPT_PUSH;
	if (f & CSI_FEAT_COOP)
		flags |= CSI_READ_ACCEPT_DELEG;
	if (!err)
		err = rd_each_run(r, 1u << RB_ASK | 1u << RB_DATA, rd_read,
				  flags);
	/*
	 * Our flights land once their contents are in or failed: a HASH
	 * answer waits for the READs before it (which never wait for a
	 * flight), then FORCE_DATA; only then do we wait for others' flights.
	 */
	if (!err && r->wait_upto)
		err = rd_wait(r, false);
	if (!err) {
		rd_claim(r, 1u << RB_FORCE);
		err = rd_force(r);
	}
	rd_land(r, true);
	if (!err && r->flight_waits)
		err = rd_wait(r, true);
	if (!err)
		err = rd_force(r);
	for (i = 0; i < r->n; i++) {
		if (r->b[i].st == RB_DONE)
			continue;
		if (!err)
			err = host_proto_err(r->h, "a block never answered");
		/* the server counts a delegated content held (§5.2) */
		if (r->b[i].delegated)
			host_notice(r->h, &r->b[i].h);
	}
	host_time_add(r->h, SC_HT_FETCH, since);
	/* the blocks are in: a report delays this read by one call only */
	if (!err && r->acc.peer_failures)
		host_report_peers(r->h);
	return err;
}

static void rd_acc_add(struct sc_host *h, const struct rd_acc *a,
		       uint64_t reads, uint64_t blocks)
{
	struct sc_host_stats *st = &h->st;

	sc_mutex_lock(&h->lock);
	st->reads += reads;
	st->read_blocks += blocks;
	st->misses += a->misses;
	st->hole_blocks += a->holes;
	st->server_data_blocks += a->data_blocks;
	st->server_data_bytes += a->data_bytes;
	st->hash_only_blocks += a->hash_only;
	st->force_data_blocks += a->forced;
	st->waited_blocks += a->waited;
	st->readahead_blocks += a->ahead;
	st->pushes_received += a->pushes;
	st->delegations += a->delegations;
	st->peer_blocks += a->peer_blocks;
	st->peer_bytes += a->peer_blocks * h->bs;
	st->peer_failures += a->peer_failures;
	sc_mutex_unlock(&h->lock);
}

/* The requested part of block lbn, at src, to the caller. */
static void rd_copy_hit(struct rd *r, uint64_t lbn, const uint8_t *src)
{
	uint64_t bo = lbn << r->bshift, end = r->off + r->len;
	uint64_t from = bo > r->off ? bo : r->off;
	uint64_t to = bo + r->bs < end ? bo + r->bs : end;
	size_t got;

	if (r->out) {
		sc_memcpy(r->out + (from - r->off), src + (from - bo),
			  to - from);
		return;
	}
	got = r->sink->copy(r->sink->ctx, from - r->off, src + (from - bo),
			    to - from);
	if (got < to - from && from - r->off + got < r->fault)
		r->fault = from - r->off + got;
}

/*
 * Where block lbn, about to be r->b[r->n], is read into: its place in a
 * flat caller's buffer, or for a partial block a bounce buffer (NULL
 * without the memory); for a sink, its slot of the window's scratch,
 * which rd_copy_out copies out once the window is fetched.
 */
static uint8_t *rd_dst(struct rd *r, uint64_t lbn)
{
	uint64_t bo = lbn << r->bshift;
	uint8_t **bounce;

	if (!r->out)
		return r->scratch + ((size_t)r->n << r->bshift);
	if (bo >= r->off && bo + r->bs <= r->off + r->len)
		return r->out + (bo - r->off);
	bounce = &r->bounce[lbn != r->first];
	if (!*bounce)
		*bounce = sc_zalloc(r->bs);
	return *bounce;
}

/* A fetched window's blocks of the request, from the scratch to a sink. */
static void rd_copy_out(struct rd *r)
{
	uint32_t i;

	for (i = 0; i < r->n; i++)
		if (r->b[i].lbn >= r->first && r->b[i].lbn <= r->last)
			rd_copy_hit(r, r->b[i].lbn, r->b[i].dst);
}

/*
 * Hits between two misses of a request asked again, up to this many, so
 * that one READ covers both misses instead of two calls one after the
 * other.
 */
#define RD_GAP_MAX 16

/*
 * Under a tracker the server answers by hash what the host holds, and a
 * HASH costs far less than a call: the address hits between the last
 * miss and lbn (whole blocks of the caller's buffer, as the request goes
 * on past them) join the window, each asked again.
 */
static void rd_gap(struct rd *r, uint64_t lbn)
{
	uint64_t prev, gap, i;
	struct rd_blk *b;

	if (!r->n || !(r->reg.features & CSI_FEAT_TRACKER))
		return;
	prev = r->b[r->n - 1].lbn;
	gap = lbn - prev - 1;
	if (!gap || gap > RD_GAP_MAX || r->n + gap >= RD_WINDOW)
		return;
	for (i = prev + 1; i < lbn; i++) {
		b = &r->b[r->n];
		sc_memset(b, 0, sizeof(*b));
		b->lbn = i;
		b->dst = rd_dst(r, i);	/* whole blocks: never a bounce */
		b->st = RB_ASK;
		r->n++;
	}
}

/*
 * Content read-ahead.  A VM's own blocks (those of its image no other
 * VM's read brings into the cache) are scattered through it, and each
 * cost its reader a READ of its own: about half the requests of a scan.
 * The map windows name them ahead of the reader, so a sequential
 * reader's READ, sent for its request's misses anyway, also asks for the
 * contents its window maps after the request that the cache lacks, as
 * far as the reader has read in order (host_map_seq_span) and up to a
 * READ of max_blocks; the blocks between are asked again, answered by
 * hash under the tracker.  The requests after it then hit.  Only within
 * the window (only known contents) and only for a sequential reader: a
 * scattered one (a boot) would not read most of them.  A guess: without
 * the memory for it the read goes on without it.
 */
static void rd_ahead(struct rd *r)
{
	uint8_t lacking[CSI_MAX_BLOCKS];
	uint64_t span, last_miss = r->b[r->n - 1].lbn, blocks;
	uint32_t run = 1, room, known, n, i;
	struct sc_hash *hh;
	struct rd_blk *b;

	if (!(r->reg.features & CSI_FEAT_TRACKER) ||
	    !(r->reg.features & CSI_FEAT_MAP))
		return;
	/* the length of the READ the last miss goes in */
	while (run < r->n && r->b[r->n - run - 1].lbn == last_miss - run)
		run++;
	run = (run - 1) % r->reg.max_blocks + 1;
	room = r->reg.max_blocks - run;
	if (room > RD_WINDOW - r->n)
		room = RD_WINDOW - r->n;
	blocks = blocks_of(r->size, r->bshift);
	if (last_miss + 1 >= blocks)
		return;
	if (room > blocks - last_miss - 1)
		room = (uint32_t)(blocks - last_miss - 1);
	span = host_map_seq_span(r->h, r->file, r->last);
	if (room > r->last - last_miss + span)
		room = (uint32_t)(r->last - last_miss + span);
	if (!room)
		return;
	hh = sc_calloc(room, sizeof(*hh));
	if (!hh)
		return;
	known = sc_hostcache_lacking(r->h->hc, r->file, last_miss + 1, room,
				     hh, lacking);
	/* up to the last lacking block past the request */
	for (n = known; n > 0 && (!lacking[n - 1] ||
				  last_miss + n <= r->last); n--)
		;
	r->ahead = n ? sc_calloc(n, r->bs) : NULL;
	for (i = 0; r->ahead && i < n; i++) {
		b = &r->b[r->n++];
		sc_memset(b, 0, sizeof(*b));
		b->lbn = last_miss + 1 + i;
		b->dst = r->ahead + (size_t)i * r->bs;
		b->spare = 1;
		if (lacking[i]) {
			b->h = hh[i];
			b->st = RB_DATA;
			r->acc.ahead++;
		} else {
			b->st = RB_ASK;
		}
	}
	sc_free(hh);
}

/*
 * Block lbn missed the cache (res, and *hh for SC_NEED_DATA, as
 * sc_hostcache_read tells): one more block for rd_fetch, read where
 * rd_dst says.  A sink's scratch holds as many blocks as a window can
 * take of the request.
 */
static int rd_miss(struct rd *r, uint64_t lbn, enum sc_read_result res,
		   const struct sc_hash *hh)
{
	uint64_t req = r->last - r->first + 1;
	struct rd_blk *b;
	uint8_t *dst;

	if (!r->b) {
		r->b = sc_calloc(RD_WINDOW, sizeof(*r->b));
		if (!r->b)
			return -SC_ENOMEM;
		host_reg_get(r->h, &r->reg);
	}
	if (!r->out && !r->scratch) {
		r->scratch = sc_malloc((size_t)(req < RD_WINDOW ? req :
						RD_WINDOW) << r->bshift);
		if (!r->scratch)
			return -SC_ENOMEM;
	}
	rd_gap(r, lbn);
	dst = rd_dst(r, lbn);
	if (!dst)
		return -SC_ENOMEM;
	b = &r->b[r->n++];
	b->lbn = lbn;
	b->dst = dst;
	b->h = *hh;
	b->st = res == SC_NEED_DATA ? RB_DATA : RB_ASK;
	b->delegated = 0;
	b->flying = 0;
	b->flight = 0;
	b->spare = 0;
	return 0;
}

/*
 * *again: the server was asked and a new registration (a restart) came
 * meanwhile, so what it answered may lack the host's unstable writes.
 *
 * The hit path costs one lock round trip per SC_CCACHE_PINS blocks (the
 * file's size comes with the first): the hits are copied out of the
 * cache with no lock held, straight into the caller's buffer, and a read
 * that hits allocates nothing.
 */
static ssize_t host_read(struct sc_host *h, uint64_t file, uint64_t off,
			 void *buf, const struct sc_read_sink *sink,
			 size_t len, bool *again)
{
	struct rd r = { .h = h, .file = file, .bs = h->bs,
			.bshift = h->bshift, .out = buf, .sink = sink,
			.off = off, .fault = ~(uint64_t)0 };
	struct sc_ccache_pins pins = { .n = 0 };
	struct sc_hash hh = { { 0 } };
	enum sc_read_result res;
	uint64_t lbn, left, size;
	uint32_t i, k, head;
	bool looked, sized, mapped = false;
	int err = 0;

	*again = false;
	if (!len)
		return 0;
	r.first = off >> r.bshift;
	left = ((off + len - 1) >> r.bshift) - r.first + 1;
	err = host_map_ahead(h, file, r.first, r.first + left - 1, false);
	if (err)
		return err;
	res = sc_hostcache_read_run(h->hc, file, r.first,
				    left < SC_CCACHE_PINS ? (uint32_t)left :
							    SC_CCACHE_PINS,
				    &pins, &hh, &size, &sized);
	looked = sized;
	if (!sized) {
		sc_hostcache_unpin(h->hc, &pins);
		err = host_file_size(h, file, &size);
		if (err)
			return err;
	}
	if (off >= size) {
		sc_hostcache_unpin(h->hc, &pins);
		return 0;
	}
	if (len > size - off)
		len = (size_t)(size - off);
	r.len = len;
	r.size = size;
	r.last = (off + len - 1) >> r.bshift;
	for (lbn = r.first; lbn <= r.last;) {
		left = r.last - lbn + 1;
		if (!looked)
			res = sc_hostcache_read_run(h->hc, file, lbn,
						    left < SC_CCACHE_PINS ?
						    (uint32_t)left :
						    SC_CCACHE_PINS,
						    &pins, &hh, NULL, NULL);
		looked = false;
		k = pins.n < left ? pins.n : (uint32_t)left;
		for (i = 0; i < k; i++)
			rd_copy_hit(&r, lbn + i, pins.buf[i]);
		lbn += k;
		if (lbn <= r.last && res == SC_NEED_HASH && !mapped) {
			/* a block the host knows nothing of: its window */
			mapped = true;
			sc_hostcache_unpin(h->hc, &pins);
			err = host_map_ahead(h, file, lbn, r.last, true);
			if (err)
				goto out;
			continue;
		}
		if (lbn <= r.last && res != SC_ADDR_HIT)
			err = rd_miss(&r, lbn++, res, &hh);
		if (!err && r.n && (r.n == RD_WINDOW || lbn > r.last)) {
			/* no block stays pinned across the calls */
			sc_hostcache_unpin(h->hc, &pins);
			if (lbn > r.last)
				rd_ahead(&r);
			err = rd_fetch(&r);
			if (!err && !r.out)
				rd_copy_out(&r);
			r.n = 0;
		}
		if (err)
			goto out;
	}
	/* the partial blocks that missed, then the end of file it showed */
	head = off & (r.bs - 1);
	if (r.bounce[0])
		sc_memcpy(r.out, r.bounce[0] + head,
			  r.first == r.last ? len : r.bs - head);
	if (r.bounce[1])
		sc_memcpy(r.out + ((r.last << r.bshift) - off), r.bounce[1],
			  (off + len) - (r.last << r.bshift));
	if (r.size < off + len)
		len = r.size > off ? (size_t)(r.size - off) : 0;
	if (r.fault < len) {
		len = (size_t)r.fault;
		if (!len)
			err = -SC_EFAULT;
	}
	/* only a read that went to the server can have met a restart */
	*again = r.b && host_reg_moved(h, &r.reg);
out:
	sc_hostcache_unpin(h->hc, &pins);
	rd_acc_add(h, &r.acc, 1, r.last - r.first + 1);
	host_hasher_put(h, r.hs);
	sc_free(r.b);
	sc_free(r.pf);
	sc_free(r.bounce[0]);
	sc_free(r.bounce[1]);
	sc_free(r.scratch);
	sc_free(r.ahead);
	return err ? err : (ssize_t)len;
}

/*
 * After a server restart the server lacks the host's unstable writes
 * until they are written again (§11.6 step 6, before step 7's retries):
 * a read's misses write the file's stale blocks again before they ask
 * (rd_fetch), and a read that found the restart itself is done again
 * once they are written (which also maps their blocks to what the host
 * wrote).  Address hits alone cost nothing more.
 */
static ssize_t host_read_again(struct sc_host *h, uint64_t file,
			       uint64_t off, void *buf,
			       const struct sc_read_sink *sink, size_t len)
{
	unsigned int nofs = sc_nofs_save();
	bool again = false;
	ssize_t got;
	int tries = 0;

	do {
		got = again ? host_pins_resend(h, file) : 0;
		if (!got)
			got = host_read(h, file, off, buf, sink, len, &again);
	} while (got >= 0 && again && ++tries < 3);
	sc_nofs_restore(nofs);
	return got;
}

ssize_t sc_host_read(struct sc_host *h, uint64_t file, uint64_t off,
		     void *buf, size_t len)
{
	return host_read_again(h, file, off, buf, NULL, len);
}

ssize_t sc_host_read_sink(struct sc_host *h, uint64_t file, uint64_t off,
			  const struct sc_read_sink *to, size_t len)
{
	return host_read_again(h, file, off, NULL, to, len);
}
