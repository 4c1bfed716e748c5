// SPDX-License-Identifier: LGPL-3.0-or-later
/*
 * The CSI service's reads: LOOKUP (§7.1), GET_HASHES (§7.2), READ
 * (§7.3) with hash-only answers (TRACKER), delegation to peers (COOP) and
 * pushes (PUSH), and GET_MAP's windows (§7.11).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "service_int.h"

/* Retries of a READ or GET_HASHES whose file changed while it was read. */
#define SVC_STABLE_TRIES 8

/*
 * The hashes of blocks lbn .. lbn + count - 1 and the file's attributes,
 * from one snapshot of the store.
 */
struct range_hashes {
	struct sc_hash *h;
	uint8_t *mapped;
	struct dstore_attr attr;
};

static uint32_t range_hashes(struct csi_service *svc, uint64_t ino,
			     uint64_t lbn, uint32_t count,
			     struct range_hashes *rh)
{
	int rc = ino ? dstore_block_hashes(svc->ds, ino, lbn, count, rh->h,
					   rh->mapped, &rh->attr) : -ENOENT;

	return svc_file_status(rc, &rh->attr);
}

static int range_hashes_alloc(struct sc_rpc_request *rq, uint32_t count,
			      struct range_hashes *rh)
{
	rh->h = sc_rpc_req_alloc(rq, (count ? count : 1) * sizeof(*rh->h));
	rh->mapped = sc_rpc_req_alloc(rq, count ? count : 1);
	return rh->h && rh->mapped ? 0 : -ENOMEM;
}

/* n = min(count, max(0, N − lbn)), N = ⌈size / B⌉ (§7.2, §7.3). */
static uint32_t blocks_in_reply(const struct csi_service *svc, uint64_t size,
				uint64_t lbn, uint32_t count)
{
	uint64_t nb = size / svc->block_size + (size % svc->block_size != 0);

	if (lbn >= nb)
		return 0;
	return nb - lbn < count ? (uint32_t)(nb - lbn) : count;
}

static bool same_state(const struct dstore_attr *a, const struct dstore_attr *b)
{
	return a->change == b->change && a->size == b->size;
}

/* ---- LOOKUP ---- */

/*
 * §3.3.8 path rules: not empty, relative, no empty, "." or ".."
 * component.  The components are split in place (buf is a copy).
 */
static bool path_valid(const char *p)
{
	const char *c = p;

	if (!*p || *p == '/')
		return false;
	for (;;) {
		const char *e = strchr(c, '/');
		size_t n = e ? (size_t)(e - c) : strlen(c);

		if (n == 0 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (!e)
			return true;
		c = e + 1;
	}
}

static char *bytes_dup(const struct csi_bytes *b)
{
	char *s = malloc(b->len + 1);

	if (!s)
		return NULL;
	if (b->len)
		memcpy(s, b->p, b->len);
	s[b->len] = '\0';
	return s;
}

/*
 * path from directory dir, each directory on the way searched only by a
 * caller NFS LOOKUP would let search it (its execute bit, fsal_lookup).
 */
static uint32_t lookup_walk(struct csi_service *svc,
			    const struct csi_callers *who, uint64_t dir,
			    char *path, struct dstore_attr *at)
{
	char *c = path, *e;
	int rc;

	rc = dstore_getattr(svc->ds, dir, at);
	if (rc)
		return CSI_ERR_IO;
	for (;;) {
		if (!svc_may(who, at, SVC_MAY_EXEC, false))
			return CSI_ERR_ACCESS;
		e = strchr(c, '/');
		if (e)
			*e = '\0';
		rc = dstore_lookup(svc->ds, dir, c, at);
		if (rc == -ENOENT || rc == -ENOTDIR)
			return CSI_ERR_NOENT;
		if (rc)
			return CSI_ERR_IO;
		if (!e)
			return at->type == DSTORE_REG ? CSI_OK : CSI_ERR_INVAL;
		/* symbolic links are not followed (§7.1) */
		if (at->type != DSTORE_DIR)
			return at->type == DSTORE_SYMLINK ? CSI_ERR_INVAL :
							     CSI_ERR_NOENT;
		dir = at->ino;
		c = e + 1;
	}
}

int svc_lookup(struct csi_service *svc, struct sc_rpc_request *rq,
	       const struct host_ref *hr)
{
	const struct csi_lookup_args *a = rq->args;
	struct csi_lookup_res *r = rq->res;
	char *exp = bytes_dup(&a->export_path), *path = bytes_dup(&a->path);
	struct csi_callers who;
	struct dstore_attr at;

	if (!exp || !path) {
		free(exp);
		free(path);
		return -ENOMEM;
	}
	if (!*exp || strlen(exp) != a->export_path.len ||
	    strlen(path) != a->path.len || !path_valid(path)) {
		r->status = CSI_ERR_INVAL;
		goto out;
	}
	r->status = svc_access_check(svc, rq, exp, false, &who);
	if (r->status == CSI_OK)
		r->status = lookup_walk(svc, &who, DSTORE_ROOT_INO, path, &at);
	if (r->status == CSI_OK)
		svc_to_fileattr(&at, &r->attr);
out:
	free(exp);
	free(path);
	if (r->status == CSI_OK && svc_lock_if_host_valid(svc, hr)) {
		svc_used_mark(svc, hr->h, at.ino);
		pthread_mutex_unlock(&svc->lock);
	}
	return 0;
}

/* ---- GET_HASHES ---- */

uint32_t svc_gethashes_check(struct csi_service *svc,
			     const struct sc_rpc_request *rq,
			     const struct host_ref *hr)
{
	const struct csi_gethashes_args *a = rq->args;

	if (!(hr->h->features & CSI_FEAT_READ_HASH))
		return CSI_ERR_NOTSUPP;
	if (a->count > svc->cfg.max_blocks)
		return CSI_ERR_TOO_BIG;
	if (!svc_range_ok(svc, a->lbn, a->count))
		return CSI_ERR_INVAL;
	return CSI_OK;
}

/* After svc_gethashes_check and the read access check. */
int svc_gethashes(struct csi_service *svc, struct sc_rpc_request *rq,
		  const struct host_ref *hr)
{
	const struct csi_gethashes_args *a = rq->args;
	struct csi_gethashes_res *r = rq->res;
	struct range_hashes rh;
	uint32_t i, n, st;

	if (range_hashes_alloc(rq, a->count, &rh))
		return -ENOMEM;
	if (a->count) {
		r->blocks = sc_rpc_req_alloc(rq, a->count * sizeof(*r->blocks));
		if (!r->blocks)
			return -ENOMEM;
	}
	/* hashes and attributes from one snapshot agree by construction */
	st = range_hashes(svc, a->file, a->lbn, a->count, &rh);
	if (st != CSI_OK) {
		r->status = st;
		return 0;
	}
	n = blocks_in_reply(svc, rh.attr.size, a->lbn, a->count);
	for (i = 0; i < n; i++) {
		r->blocks[i].kind = rh.mapped[i] ? CSI_HK_HASH : CSI_HK_HOLE;
		if (rh.mapped[i])
			r->blocks[i].hash = rh.h[i];
		else
			memset(&r->blocks[i].hash, 0, sizeof(r->blocks[i].hash));
	}
	r->status = CSI_OK;
	svc_to_fileattr(&rh.attr, &r->attr);
	r->nblocks = n;
	if (svc_lock_if_host_valid(svc, hr)) {
		count(svc, hr->h, C_GH_BLOCKS, n);
		svc_used_mark(svc, hr->h, a->file);
		pthread_mutex_unlock(&svc->lock);
	}
	return 0;
}

/* ---- GET_MAP ---- */

uint32_t svc_getmap_check(struct csi_service *svc,
			  const struct sc_rpc_request *rq,
			  const struct host_ref *hr)
{
	const struct csi_getmap_args *a = rq->args;
	uint32_t i, j;

	if (!(hr->h->features & CSI_FEAT_MAP))
		return CSI_ERR_NOTSUPP;
	/* the codec refuses more files than CSI_MAX_MAP_FILES already */
	if (a->count > CSI_MAX_MAP_BLOCKS || a->nfiles > CSI_MAX_MAP_FILES)
		return CSI_ERR_TOO_BIG;
	if (!a->nfiles || !a->count || !svc_range_ok(svc, a->lbn, a->count))
		return CSI_ERR_INVAL;
	for (i = 1; i < a->nfiles; i++)
		for (j = 0; j < i; j++)
			if (a->files[i] == a->files[j])
				return CSI_ERR_INVAL;
	return CSI_OK;
}

/*
 * A file's status in a GET_MAP reply: one of those §7.11 lets a file
 * alone have (a host takes any other for a protocol error and drops the
 * whole reply).  An id that names no regular file is STALE there, where
 * GET_HASHES answers a directory INVAL.
 */
static uint32_t map_status(uint32_t st)
{
	switch (st) {
	case CSI_OK:
	case CSI_ERR_STALE:
	case CSI_ERR_ACCESS:
	case CSI_ERR_IO:
		return st;
	case CSI_ERR_INVAL:
		return CSI_ERR_STALE;
	default:
		return CSI_ERR_IO;
	}
}

/*
 * One file's window into m (its status, and for CSI_OK its attributes,
 * holes bitmap and hashes, each exactly as long as §7.11 says) from one
 * snapshot, through rh's scratch of count blocks; *n its blocks.  0 or
 * -ENOMEM.
 */
static int map_file(struct csi_service *svc, struct sc_rpc_request *rq,
		    const struct csi_callers *who, uint64_t ino,
		    struct range_hashes *rh, struct csi_map_file *m,
		    uint32_t *n)
{
	const struct csi_getmap_args *a = rq->args;
	struct sc_hash *hashes;
	uint8_t *holes;
	uint32_t i, k = 0, nh = 0, nb;

	*n = 0;
	/* hashes and attributes from one snapshot agree by construction */
	m->status = map_status(range_hashes(svc, ino, a->lbn, a->count, rh));
	if (m->status == CSI_OK)
		m->status = svc_file_open_to(who, &rh->attr, false);
	if (m->status != CSI_OK)
		return 0;
	*n = blocks_in_reply(svc, rh->attr.size, a->lbn, a->count);
	nb = (*n + 7) / 8;
	for (i = 0; i < *n; i++)
		nh += rh->mapped[i] != 0;
	holes = sc_rpc_req_alloc(rq, nb ? nb : 1);
	hashes = sc_rpc_req_alloc(rq, (nh ? nh : 1) * sizeof(*hashes));
	if (!holes || !hashes)
		return -ENOMEM;
	/* not zeroed: the bits past n must be 0 */
	memset(holes, 0, nb);
	for (i = 0; i < *n; i++) {
		if (rh->mapped[i])
			hashes[k++] = rh->h[i];
		else
			holes[i / 8] |= (uint8_t)(1u << (i % 8));
	}
	svc_to_fileattr(&rh->attr, &m->attr);
	m->holes = holes;
	m->nholes_bytes = nb;
	m->hashes = hashes;
	m->nhashes = nh;
	return 0;
}

/*
 * After svc_getmap_check.  The call is well formed: its status is CSI_OK
 * and each file has one of its own, the one GET_HASHES would give that
 * file alone (§7.11; map_status), the read access check included: the
 * exports' admission, the same for every file of the store, is asked
 * once, and each file's mode decides its entry, counted in errors.access
 * per file as GET_HASHES calls would be.
 */
int svc_getmap(struct csi_service *svc, struct sc_rpc_request *rq,
	       const struct host_ref *hr)
{
	const struct csi_getmap_args *a = rq->args;
	struct csi_getmap_res *r = rq->res;
	struct csi_callers who;
	uint32_t access = svc_access_check(svc, rq, NULL, false, &who);
	uint32_t i, n, denied = 0;
	uint64_t blocks = 0;
	struct range_hashes rh;

	r->files = sc_rpc_req_alloc(rq, a->nfiles * sizeof(*r->files));
	if (!r->files || (access == CSI_OK &&
			  range_hashes_alloc(rq, a->count, &rh)))
		return -ENOMEM;
	for (i = 0; i < a->nfiles; i++) {
		struct csi_map_file *m = &r->files[i];

		memset(m, 0, sizeof(*m));
		n = 0;
		if (access != CSI_OK)
			m->status = access;
		else if (map_file(svc, rq, &who, a->files[i], &rh, m, &n))
			return -ENOMEM;
		denied += m->status == CSI_ERR_ACCESS;
		blocks += n;
	}
	r->status = CSI_OK;
	r->nfiles = a->nfiles;
	if (svc_lock_if_host_valid(svc, hr)) {
		count(svc, hr->h, C_GM_BLOCKS, blocks);
		count(svc, hr->h, C_ACCESS_DENIED, denied);
		for (i = 0; i < a->nfiles; i++)
			if (r->files[i].status == CSI_OK)
				svc_used_mark(svc, hr->h, a->files[i]);
		pthread_mutex_unlock(&svc->lock);
	}
	return 0;
}

/* ---- READ ---- */

#define READ_FLAGS_KNOWN (CSI_READ_WANT_DATA | CSI_READ_FORCE_DATA | \
			  CSI_READ_ACCEPT_DELEG | CSI_READ_ACCEPT_PUSH)

static uint32_t read_flags_check(const struct svc_host *h, uint32_t flags)
{
	if (flags & ~READ_FLAGS_KNOWN)
		return CSI_ERR_INVAL;
	if ((flags & CSI_READ_FORCE_DATA) && !(flags & CSI_READ_WANT_DATA))
		return CSI_ERR_INVAL;
	if (!(flags & CSI_READ_WANT_DATA) &&
	    !(h->features & CSI_FEAT_READ_HASH))
		return CSI_ERR_NOTSUPP;
	if ((flags & CSI_READ_ACCEPT_DELEG) && !(h->features & CSI_FEAT_COOP))
		return CSI_ERR_NOTSUPP;
	if ((flags & CSI_READ_ACCEPT_PUSH) && !(h->features & CSI_FEAT_PUSH))
		return CSI_ERR_NOTSUPP;
	return CSI_OK;
}

/* Most holders of one content considered for a delegation. */
#define DELEG_CANDIDATES 8

/*
 * §7.3 rule 4: a live peer that holds h and serves peer reads, and has
 * not failed its delegations lately (§7.12), with a fresh token for the
 * requester; false if there is none.  Lock held.
 */
static bool delegate(struct csi_service *svc, const struct host_ref *hr,
		     const struct sc_hash *h, uint64_t now,
		     struct csi_read_block *b)
{
	uint16_t cand[DELEG_CANDIDATES];
	struct sc_peer_token_fields f;
	unsigned int k, i, first;
	struct svc_host *p;

	k = sc_tracker_holders(svc->tracker, h, hr->slot, cand,
			       DELEG_CANDIDATES);
	first = k ? sc_prng_below(&svc->pick, k) : 0;
	for (i = 0; i < k; i++) {
		p = &svc->hosts[cand[(first + i) % k] - 1];
		if (!p->id || !(p->features & CSI_FEAT_COOP) ||
		    p->peer.family == CSI_AF_NONE ||
		    now < p->peer_off_until_ms ||
		    svc_lease_lapsed(svc, p, now))
			continue;
		f.hash = *h;
		f.requester = hr->id;
		f.serving = p->id;
		f.epoch = svc->epoch;
		f.expiry = svc_now_unix(svc) + svc->cfg.token_seconds;
		if (sc_peer_token_mac(p->token_mac, &f, b->token.mac))
			return false;
		b->kind = CSI_RK_DELEGATED;
		b->peer_host = p->id;
		b->peer = p->peer;
		b->token.expiry = f.expiry;
		return true;
	}
	return false;
}

uint32_t svc_peer_report_check(struct csi_service *svc,
			       const struct sc_rpc_request *rq,
			       const struct host_ref *hr)
{
	(void)svc;
	(void)rq;
	return hr->h->features & CSI_FEAT_PEER_REPORT ? CSI_OK :
							 CSI_ERR_NOTSUPP;
}

/*
 * The peer of a reported failure (§7.12), if the report counts: its token
 * is one this server made for this requester and that peer, in this
 * epoch, still valid, and not counted before.  A requester can so count
 * only delegations it was given, each once.  Lock held.
 */
static struct svc_host *peer_report_counts(struct csi_service *svc,
					   const struct host_ref *hr,
					   const struct csi_peer_failure *f)
{
	struct svc_host *p = svc_host_by_id(svc, f->peer_host);
	struct sc_peer_token_fields tf;
	uint64_t seen;
	unsigned int i;

	if (!p || p == hr->h)
		return NULL;
	tf.hash = f->hash;
	tf.requester = hr->id;
	tf.serving = p->id;
	tf.epoch = svc->epoch;
	tf.expiry = f->token.expiry;
	if (sc_peer_token_check(p->token_mac, &tf, svc->epoch,
				svc_now_unix(svc), f->token.mac))
		return NULL;
	memcpy(&seen, f->token.mac, sizeof(seen));
	for (i = 0; i < SC_CSI_PEER_FAILURES_MAX; i++)
		if (p->peer_fail_seen[i] == seen)
			return NULL;
	p->peer_fail_seen[p->peer_fail_next++ % SC_CSI_PEER_FAILURES_MAX] =
		seen;
	return p;
}

/*
 * One counted failure of peer p: the tracker no longer counts on p for
 * the content, and peer_failures of them within a suspension's length
 * stop delegations to p for that length.  Lock held.
 */
static void peer_failed(struct csi_service *svc, struct svc_host *p,
			const struct sc_hash *h, uint64_t now)
{
	uint64_t span = (uint64_t)svc->cfg.peer_suspend_seconds * 1000;

	sc_tracker_note_evicted(svc->tracker, slot_of(svc, p), h);
	count(svc, p, C_PEER_FAILED, 1);
	if (!p->peer_failures || now - p->peer_fail_ms >= span) {
		p->peer_failures = 0;
		p->peer_fail_ms = now;
	}
	if (++p->peer_failures < svc->cfg.peer_failures)
		return;
	p->peer_failures = 0;
	p->peer_off_until_ms = now + span;
	count(svc, p, C_PEER_SUSPENDED, 1);
}

/* §7.12 PEER_REPORT: delegations the requester's peers did not deliver. */
int svc_peer_report(struct csi_service *svc, struct sc_rpc_request *rq,
		    const struct host_ref *hr)
{
	const struct csi_peer_report_args *a = rq->args;
	uint64_t now = svc_now_ms(svc);
	struct svc_host *p;
	uint32_t i;

	pthread_mutex_lock(&svc->lock);
	for (i = 0; host_valid(hr) && i < a->nfailures; i++) {
		p = peer_report_counts(svc, hr, &a->failures[i]);
		if (p)
			peer_failed(svc, p, &a->failures[i].hash, now);
		else
			count(svc, hr->h, C_PEER_REPORTS_IGNORED, 1);
	}
	pthread_mutex_unlock(&svc->lock);
	((struct csi_evict_res *)rq->res)->status = CSI_OK;
	return 0;
}

/*
 * The kind of every block of a READ (§7.3's rules, in order), from the
 * hashes and the tracker; delegations get their peer and token.  Lock
 * held.
 */
static void read_kinds(struct csi_service *svc, const struct csi_read_args *a,
		       const struct host_ref *hr, const struct range_hashes *rh,
		       struct csi_read_block *b, uint32_t n)
{
	bool want = a->flags & CSI_READ_WANT_DATA;
	bool force = a->flags & CSI_READ_FORCE_DATA;
	bool deleg = a->flags & CSI_READ_ACCEPT_DELEG;
	bool tracker = hr->h->features & CSI_FEAT_TRACKER;
	uint64_t now = svc_now_ms(svc);
	uint32_t i;

	for (i = 0; i < n; i++) {
		memset(&b[i], 0, sizeof(b[i]));
		if (!rh->mapped[i]) {
			b[i].kind = CSI_RK_HOLE;
			continue;
		}
		b[i].hash = rh->h[i];
		if (!want || (!force && tracker &&
			      sc_tracker_holds(svc->tracker, hr->slot,
					       &b[i].hash))) {
			b[i].kind = CSI_RK_HASH;
			continue;
		}
		if (force || !deleg ||
		    !delegate(svc, hr, &b[i].hash, now, &b[i]))
			b[i].kind = CSI_RK_DATA;
		/*
		 * Held from now on (§5.2), not from when the reply is out:
		 * a block of the same content later in this reply, or in a
		 * call of another VM of the host racing this one, is then
		 * answered by hash, and the host waits for this copy instead
		 * of fetching a second.  Should this reply fail, the host
		 * only pays a FORCE_DATA round trip.
		 */
		svc_note_held(svc, hr, &b[i].hash);
	}
}

/*
 * The data of the reply, one store read per run of blocks of one kind:
 * each run of DATA blocks, and unless cfg.delegate_cached each run of
 * DELEGATED ones too, which becomes DATA if all of it is in memory (its
 * token dropped).  So the server delegates only what it would read from
 * its disk (the paper's rule: its own cache first, then the peers'): in
 * a storm whose VMs read in step the content a peer holds is mostly
 * still in the server's page cache, and a peer fetch, one more round
 * trip after the READ's, then only slows the READ down.  The tracker
 * counts the content held either way.
 */
static int read_data(struct csi_service *svc, const struct csi_read_args *a,
		     struct csi_read_block *b, uint32_t n, uint8_t *data)
{
	uint32_t bs = svc->block_size, i, j, k, kind;
	size_t len;
	bool eof;
	ssize_t got;

	for (i = 0; i < n; i = j) {
		kind = b[i].kind;
		for (j = i + 1; j < n && b[j].kind == kind; j++)
			;
		len = (size_t)(j - i) * bs;
		if (kind == CSI_RK_DATA) {
			got = dstore_read(svc->ds, a->file, (a->lbn + i) * bs,
					  data + (size_t)i * bs, len, &eof);
			if (got < 0)
				return (int)got;
		} else if (kind == CSI_RK_DELEGATED &&
			   !svc->cfg.delegate_cached) {
			got = dstore_read_cached(svc->ds, a->file,
						 (a->lbn + i) * bs,
						 data + (size_t)i * bs, len,
						 &eof);
			if (got != (ssize_t)len)
				continue;
		} else {
			continue;
		}
		for (k = i; k < j; k++) {
			size_t at = (size_t)(k - i) * bs;

			if (kind == CSI_RK_DELEGATED) {
				struct sc_hash h = b[k].hash;

				memset(&b[k], 0, sizeof(b[k]));
				b[k].kind = CSI_RK_DATA;
				b[k].hash = h;
			}
			b[k].data.p = data + (size_t)k * bs;
			b[k].data.len = (size_t)got <= at ? 0 :
					(uint32_t)((size_t)got - at < bs ?
						   (size_t)got - at : bs);
		}
	}
	return 0;
}

/* A candidate push: (ino, lbn) holds the content of reply block blk. */
struct push_cand {
	uint64_t ino;
	uint64_t lbn;
	uint32_t blk;
	uint32_t shared;	/* holders of that content found */
};

struct push_collect {
	uint64_t self;		/* the call's own file: its attrs are in it */
	struct push_cand *c;
	uint32_t n, cap, blk, found;
};

/* A holder, kept unless in the call's own file; the used set filters later. */
static int push_collect_one(void *ctx, uint64_t ino, uint64_t lbn)
{
	struct push_collect *pc = ctx;

	pc->found++;
	if (ino == pc->self || pc->n == pc->cap)
		return 0;
	pc->c[pc->n].ino = ino;
	pc->c[pc->n].lbn = lbn;
	pc->c[pc->n].blk = pc->blk;
	pc->n++;
	return 0;
}

/* Widely shared content first, then by file and block (runs). */
static int push_cand_cmp(const void *x, const void *y)
{
	const struct push_cand *a = x, *b = y;

	if (a->shared != b->shared)
		return a->shared > b->shared ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return a->lbn < b->lbn ? -1 : a->lbn > b->lbn;
}

static int push_file_cmp(const void *x, const void *y)
{
	const struct push_cand *a = x, *b = y;

	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return a->lbn < b->lbn ? -1 : a->lbn > b->lbn;
}

/* Holders looked up per content of the reply. */
#define PUSH_HOLDERS_PER_CONTENT 64

/*
 * Whether a push search that began at t0 and is at now has run out of
 * time (cfg.push_search_ms; 0: never).  Pushes are hints, and on the cold
 * index of a restarted server one search of 32 contents read the disk
 * for 35 ms, all of it the READ's own latency.
 */
static bool push_search_over(const struct csi_service *svc, uint64_t t0,
			     uint64_t now)
{
	return svc->cfg.push_search_ms &&
	       now - t0 >= svc->cfg.push_search_ms;
}

/*
 * While the last search ran out of time, and on a service just started,
 * one READ at a time searches, a probe, and the probes take at most
 * 1 / PUSH_PROBE_SHARE of the time: after a probe of d ms the next waits
 * PUSH_PROBE_SHARE * d.  The other READs count in push.searches_skipped.
 * Searching one READ in 16 instead still read 35 MiB more of the index
 * from disk than the 60 MiB the boot storm's data took (each cold
 * CSI-Map lookup reads about 0.5 MiB around it), and doubled its p99.
 */
#define PUSH_PROBE_SHARE 20

/* Whether a READ's pushes are searched now.  Lock held. */
static bool push_search_due(struct csi_service *svc)
{
	uint64_t now;

	if (!svc->push_slow)
		return true;
	now = svc_now_ms(svc);
	if (now < svc->push_probe_at)
		return false;
	/* one probe at a time: it sets the next when it ends */
	svc->push_probe_at = now + PUSH_PROBE_SHARE * svc->cfg.push_search_ms;
	return true;
}

/*
 * Whether a reply sends the block's content (data, or a peer's): only
 * those contents' other holders are pushed.  A block answered by hash is
 * of a content the host got before, with the pushes of that reply.  (On
 * the lab's scan a host then received 10-14 k entries instead of 31-33 k,
 * and as many of them hit.)
 */
static bool read_block_sends(const struct csi_read_block *b)
{
	return b->kind == CSI_RK_DATA || b->kind == CSI_RK_DELEGATED;
}

static bool read_sends_content(const struct csi_read_res *r)
{
	uint32_t i;

	for (i = 0; i < r->nblocks; i++)
		if (read_block_sends(&r->blocks[i]))
			return true;
	return false;
}

/*
 * Of pc->c[from..], keeps the candidates in files hr's host uses; false
 * when its registration is gone.  Takes the lock, for the used set alone.
 */
static bool push_keep_used(struct csi_service *svc, const struct host_ref *hr,
			   struct push_collect *pc, uint32_t from)
{
	uint32_t k, n = from;

	if (!svc_lock_if_host_valid(svc, hr))
		return false;
	for (k = from; k < pc->n; k++)
		if (svc_used_has(hr->h, pc->c[k].ino))
			pc->c[n++] = pc->c[k];
	pthread_mutex_unlock(&svc->lock);
	pc->n = n;
	return true;
}

/*
 * SS-Push (§7.3 "Pushed entries"): other blocks of files this host uses
 * that hold the contents of this reply, widely shared content first, each
 * confirmed with its file's change id from one store snapshot.  The
 * candidates come from the CSI-Map unconfirmed: holders in files this
 * host does not use cost nothing more, and those it keeps are confirmed
 * a run at a time.  Runs without the service's lock, which it takes only
 * to look at the host's used files: a search that reads a cold index
 * from disk delays no other call.  Past its time (push_search_over) it
 * looks up no further content and confirms no further run, but always
 * the first of each, and counts the cut (push.searches_cut); the READs
 * after it then search only as probes (push_search_due).  Lock not held.
 */
static int read_pushes(struct csi_service *svc, struct sc_rpc_request *rq,
		       const struct host_ref *hr)
{
	const struct csi_read_args *a = rq->args;
	struct csi_read_res *r = rq->res;
	uint32_t max = svc->cfg.max_push, i, j, k, run, from;
	struct push_collect pc = { a->file, NULL, 0, 0, 0, 0 };
	uint64_t t0 = svc_now_ms(svc), now;
	bool cut = false, searched = false;
	struct dstore_attr at;
	struct sc_hash *h;
	uint8_t *mapped;

	if (!max || !r->nblocks)
		return 0;
	/* room for one more content's holders before the used set filters */
	pc.cap = 4 * max + PUSH_HOLDERS_PER_CONTENT;
	pc.c = sc_rpc_req_alloc(rq, pc.cap * sizeof(*pc.c));
	r->pushed = sc_rpc_req_alloc(rq, max * sizeof(*r->pushed));
	h = sc_rpc_req_alloc(rq, CSI_MAX_BLOCKS * sizeof(*h));
	mapped = sc_rpc_req_alloc(rq, CSI_MAX_BLOCKS);
	if (!pc.c || !r->pushed || !h || !mapped)
		return -ENOMEM;
	for (i = 0; i < r->nblocks && pc.n < 4 * max; i++) {
		if (!read_block_sends(&r->blocks[i]))
			continue;
		if (searched && push_search_over(svc, t0, svc_now_ms(svc))) {
			cut = true;
			break;
		}
		searched = true;
		from = pc.n;
		pc.blk = i;
		pc.found = 0;
		dstore_csimap_candidates(svc->ds, &r->blocks[i].hash,
					 PUSH_HOLDERS_PER_CONTENT,
					 push_collect_one, &pc);
		if (!push_keep_used(svc, hr, &pc, from)) {
			pc.n = 0;	/* and the relock below fails too */
			break;
		}
		for (k = from; k < pc.n; k++)
			pc.c[k].shared = pc.found;
	}
	qsort(pc.c, pc.n, sizeof(*pc.c), push_cand_cmp);
	if (pc.n > max)
		pc.n = max;
	qsort(pc.c, pc.n, sizeof(*pc.c), push_file_cmp);
	/* confirm each run of blocks of one file from one snapshot */
	for (i = 0; i < pc.n; i = j) {
		if (i && push_search_over(svc, t0, svc_now_ms(svc))) {
			cut = true;
			break;
		}
		for (j = i + 1; j < pc.n && pc.c[j].ino == pc.c[i].ino &&
		     pc.c[j].lbn - pc.c[i].lbn < CSI_MAX_BLOCKS; j++)
			;
		run = (uint32_t)(pc.c[j - 1].lbn - pc.c[i].lbn + 1);
		if (dstore_block_hashes(svc->ds, pc.c[i].ino, pc.c[i].lbn, run,
					h, mapped, &at))
			continue;
		for (k = i; k < j; k++) {
			uint32_t o = (uint32_t)(pc.c[k].lbn - pc.c[i].lbn);
			const struct sc_hash *want =
				&r->blocks[pc.c[k].blk].hash;
			struct csi_push_entry *e = &r->pushed[r->npushed];

			if (!mapped[o] || !sc_hash_eq(&h[o], want))
				continue;	/* changed since the lookup */
			e->file = pc.c[k].ino;
			e->lbn = pc.c[k].lbn;
			e->change = at.change;
			e->hash = h[o];
			r->npushed++;
		}
	}
	now = svc_now_ms(svc);
	if (svc_lock_if_host_valid(svc, hr)) {
		count(svc, hr->h, C_PUSH_ENTRIES, r->npushed);
		svc->gctr[G_PUSH_SEARCHES_CUT] += cut;
		svc->push_slow = push_search_over(svc, t0, now);
		if (svc->push_slow)
			svc->push_probe_at = now + PUSH_PROBE_SHARE * (now - t0);
		pthread_mutex_unlock(&svc->lock);
	} else {
		/* its used files are gone with it: name none */
		r->npushed = 0;
	}
	return 0;
}

/* The counters of a READ's answers.  Lock held. */
static void read_account(struct csi_service *svc, const struct host_ref *hr,
			 bool want, const struct csi_read_res *r)
{
	struct svc_host *peer;
	uint32_t i;

	for (i = 0; i < r->nblocks; i++) {
		const struct csi_read_block *b = &r->blocks[i];

		switch (b->kind) {
		case CSI_RK_HOLE:
			count(svc, hr->h, C_READ_HOLES, 1);
			break;
		case CSI_RK_HASH:
			count(svc, hr->h, want ? C_READ_HASH_ONLY :
						 C_READ_PROBE_BLOCKS, 1);
			break;
		case CSI_RK_DELEGATED:
			count(svc, hr->h, C_READ_DELEGATED, 1);
			peer = svc_host_by_id(svc, b->peer_host);
			if (peer)
				count(svc, peer, C_DELEG_TARGETED, 1);
			break;
		case CSI_RK_DATA:
			count(svc, hr->h, C_READ_DATA_BLOCKS, 1);
			count(svc, hr->h, C_READ_DATA_BYTES, b->data.len);
			break;
		}
	}
}

uint32_t svc_read_check(struct csi_service *svc,
			const struct sc_rpc_request *rq,
			const struct host_ref *hr)
{
	const struct csi_read_args *a = rq->args;
	uint32_t st = read_flags_check(hr->h, a->flags);

	if (st == CSI_OK && a->count > svc->cfg.max_blocks)
		st = CSI_ERR_TOO_BIG;
	if (st == CSI_OK && !svc_range_ok(svc, a->lbn, a->count))
		st = CSI_ERR_INVAL;
	return st;
}

/* After svc_read_check and the read access check. */
int svc_read(struct csi_service *svc, struct sc_rpc_request *rq,
	     const struct host_ref *hr)
{
	const struct csi_read_args *a = rq->args;
	struct csi_read_res *r = rq->res;
	bool want = a->flags & CSI_READ_WANT_DATA;
	struct range_hashes rh;
	struct dstore_attr a1;
	uint8_t *data = NULL;
	uint32_t n = 0, st;
	int tries, rc = 0;
	bool search, wants;

	if (a->count) {
		r->blocks = sc_rpc_req_alloc(rq, a->count * sizeof(*r->blocks));
		if (want)
			data = sc_rpc_req_alloc(rq, (size_t)a->count *
						    svc->block_size);
		if (!r->blocks || (want && !data))
			return -ENOMEM;
	}
	if (range_hashes_alloc(rq, a->count, &rh))
		return -ENOMEM;
	/* data is read after the hashes: a write in between is retried */
	for (tries = 0; tries < SVC_STABLE_TRIES; tries++) {
		st = range_hashes(svc, a->file, a->lbn, a->count, &rh);
		if (st != CSI_OK) {
			r->status = st;
			return 0;
		}
		n = blocks_in_reply(svc, rh.attr.size, a->lbn, a->count);
		if (!svc_lock_if_host_valid(svc, hr)) {
			r->status = CSI_ERR_UNKNOWN_HOST;
			return 0;
		}
		read_kinds(svc, a, hr, &rh, r->blocks, n);
		pthread_mutex_unlock(&svc->lock);
		rc = read_data(svc, a, r->blocks, n, data);
		st = svc_file_attr(svc, a->file, &a1);
		if (st != CSI_OK) {
			r->status = st;
			return 0;
		}
		if (same_state(&rh.attr, &a1))
			break;
	}
	if (tries == SVC_STABLE_TRIES) {
		r->status = CSI_ERR_BUSY;	/* the file keeps changing */
		return 0;
	}
	if (rc) {
		r->status = CSI_ERR_IO;
		return 0;
	}
	r->status = CSI_OK;
	svc_to_fileattr(&rh.attr, &r->attr);
	r->nblocks = n;
	if (!svc_lock_if_host_valid(svc, hr)) {
		/* its tracker state is gone: nothing to record */
		return 0;
	}
	read_account(svc, hr, want, r);
	svc_used_mark(svc, hr->h, a->file);
	/*
	 * A reply of hash answers and holes has nothing to push: it neither
	 * searches nor takes a probe (whose end would clear push_slow).
	 */
	wants = (a->flags & CSI_READ_ACCEPT_PUSH) && read_sends_content(r);
	search = wants && push_search_due(svc);
	svc->gctr[G_PUSH_SEARCHES_SKIPPED] += wants && !search;
	pthread_mutex_unlock(&svc->lock);
	if (search)
		rc = read_pushes(svc, rq, hr);
	return rc;
}
