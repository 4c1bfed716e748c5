// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A host's WRITE calls and the unstable blocks they keep (PROTOCOL.md
 * §7.4, §7.5, §11.4): each block goes by hash when DEDUP_WRITE is granted
 * and the content is cached, with the bytes of every block answered
 * NEED_DATA.  The written blocks go into the cache (a host holds what it
 * sent, §5.2) and are mapped under the reply's change id.  UNSTABLE
 * blocks are kept until a COMMIT of the same epoch, and written again, as
 * data, in a new epoch (§6.2 item 5).  Their pins are allocated before the
 * WRITE goes out; when that fails the call goes FILE_SYNC instead (durable
 * once answered, nothing to keep), so no block the server acknowledged can
 * be lost to a restart, and the VM's write still succeeds, as it would
 * over NFS.  Stale pins are written again before the file's next READ,
 * WRITE or COMMIT goes out; a WRITE that raced a resend (it found the
 * restart itself, or one was under way) is sent again after it, so that
 * the older bytes never land last.  Reads (host_read.c) and write
 * requests (host_write.c) call this file; it calls host_call.c and
 * host_util.c.
 */
#include "host_priv.h"

/*
 * Unstable blocks a host keeps (copies, outside its cache) before a write
 * commits its file by itself: a quarter of the cache's blocks, at least
 * 4096.  As an NFS client's dirty limit, this bounds the memory and lets
 * a burst of writes (a patch storm) run without a COMMIT in the middle,
 * whose flush and sync on the server the writing VM would wait for.
 */
#define HOST_MIN_PINS 4096u

uint32_t host_max_pins(uint32_t cache_blocks)
{
	return cache_blocks / 4 > HOST_MIN_PINS ? cache_blocks / 4 :
						   HOST_MIN_PINS;
}

/*
 * Rounds of re-sending and COMMIT, or of a WRITE and the resend it
 * raced, while the server keeps restarting.
 */
#define HOST_COMMIT_TRIES 4

int host_wr_init(struct wr *w, struct sc_host *h, uint64_t file,
		 uint32_t stable)
{
	struct host_reg r;

	host_reg_get(h, &r);
	sc_memset(w, 0, sizeof(*w));
	w->h = h;
	w->file = file;
	w->bs = h->bs;
	w->bshift = h->bshift;
	w->stable = stable;
	w->max_blocks = r.max_blocks;
	w->max_evict = r.max_evict;
	w->features = r.features;
	w->wb = sc_calloc(r.max_blocks, sizeof(*w->wb));
	w->b = sc_calloc(r.max_blocks, sizeof(*w->b));
	w->hs = host_hasher_get(h);
	return w->wb && w->b && w->hs ? 0 : -SC_ENOMEM;
}

void host_wr_fini(struct wr *w)
{
	struct sc_host *h = w->h;

	sc_mutex_lock(&h->lock);
	h->st.write_hash_blocks += w->hash_blocks;
	h->st.write_need_data += w->need_data;
	h->st.write_data_bytes += w->data_bytes;
	h->st.write_sync_fallbacks += w->sync_fallbacks;
	sc_mutex_unlock(&h->lock);
	host_hasher_put(h, w->hs);
	sc_free(w->wb);
	sc_free(w->b);
}

static void pin_free(struct host_pin *p)
{
	sc_free(p->data);
	sc_free(p);
}

static void pins_free_list(struct host_pin *p)
{
	struct host_pin *n;

	for (; p; p = n) {
		n = p->next;
		pin_free(p);
	}
}

/* n pins for the blocks of an UNSTABLE WRITE, or NULL. */
static struct host_pin *pins_alloc(struct sc_host *h, uint32_t n)
{
	struct host_pin *list = NULL, *p;

	while (n--) {
		p = sc_zalloc(sizeof(*p));
		/* pin_add copies a whole block in */
		if (p)
			p->data = sc_malloc(h->bs);
		if (!p || !p->data) {
			sc_free(p);
			pins_free_list(list);
			return NULL;
		}
		p->next = list;
		list = p;
	}
	return list;
}

/* Keep an unstable block in a pin taken from *spare (lock not held). */
static void pin_add(struct sc_host *h, struct host_pin **spare,
		    uint64_t file, uint64_t lbn, uint64_t epoch, uint32_t len,
		    const void *data)
{
	struct host_pin *p = *spare;

	*spare = p->next;
	p->next = NULL;
	p->file = file;
	p->lbn = lbn;
	p->epoch = epoch;
	p->len = len;
	sc_memcpy(p->data, data, h->bs);
	sc_mutex_lock(&h->lock);
	p->seq = ++h->pin_seq;
	if (h->pins_tail)
		h->pins_tail->next = p;
	else
		h->pins = p;
	h->pins_tail = p;
	h->npins++;
	/* answered in an epoch a HELLO has since replaced */
	if (epoch != h->reg.epoch)
		h->stale_pins++;
	sc_mutex_unlock(&h->lock);
}

/*
 * A FILE_SYNC WRITE answered OK for the blocks of lbn.. whose answer is:
 * their older pins go, or written again after a restart they would undo
 * the newer, durable bytes (lock not held).  UNSTABLE writes need not do
 * this walk: pins are written again in the order they were taken.
 */
static void pins_drop_synced(struct sc_host *h, uint64_t file, uint64_t lbn,
			     uint32_t n, const uint32_t *answer)
{
	struct host_pin **pp = &h->pins, *p, *last = NULL, *gone = NULL;

	sc_mutex_lock(&h->lock);
	while ((p = *pp)) {
		if (p->file != file || p->lbn - lbn >= n ||
		    answer[p->lbn - lbn] != CSI_W_OK) {
			last = p;
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->next = gone;
		gone = p;
		h->npins--;
		if (p->epoch != h->reg.epoch)
			h->stale_pins--;
	}
	h->pins_tail = last;
	sc_mutex_unlock(&h->lock);
	pins_free_list(gone);
}

/*
 * A WRITE of file's blocks lbn..lbn+n sent when resend_gen was gen has
 * been answered: may a resend put older bytes over it?  Yes if one of
 * the file began since, or is under way, or a stale pin of those blocks
 * waits for one (more resends than the log tells count as the file's).
 */
static bool pins_raced(struct sc_host *h, uint64_t file, uint64_t lbn,
		       uint32_t n, uint64_t gen)
{
	struct host_pin *p;
	uint64_t last;
	bool raced;

	sc_mutex_lock(&h->lock);
	last = h->resend_gen;
	raced = last - gen > HOST_RESEND_LOG ||
		(h->resending &&
		 h->resend_files[(last - 1) % HOST_RESEND_LOG] == file);
	for (; gen < last && !raced; gen++)
		raced = h->resend_files[gen % HOST_RESEND_LOG] == file;
	for (p = h->stale_pins ? h->pins : NULL; p && !raced; p = p->next)
		raced = p->file == file && p->lbn - lbn < n &&
			p->epoch != h->reg.epoch;
	sc_mutex_unlock(&h->lock);
	return raced;
}

/* Lock held: unlink the pins of file that match; into *out, in order. */
static uint32_t pins_take(struct sc_host *h, uint64_t file, bool stale,
			  uint64_t epoch, uint64_t max_seq,
			  struct host_pin **out)
{
	struct host_pin **pp = &h->pins, *p, *last = NULL, **tail = out;
	uint32_t n = 0;

	*out = NULL;
	while ((p = *pp)) {
		bool take = p->file == file &&
			    (stale ? p->epoch != epoch :
				     p->epoch == epoch && p->seq <= max_seq);

		if (!take) {
			last = p;
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		p->next = NULL;
		*tail = p;
		tail = &p->next;
		n++;
	}
	h->pins_tail = last;
	h->npins -= n;
	if (stale)
		h->stale_pins -= n;
	return n;
}

void host_pins_free(struct sc_host *h)
{
	pins_free_list(h->pins);
	h->pins = NULL;
	h->pins_tail = NULL;
	h->npins = 0;
	h->stale_pins = 0;
}

/* One WRITE of b[0..n) from lbn; NEED_DATA blocks are marked. */
static int wr_call(struct wr *w, uint64_t lbn, struct wr_blk *b, uint32_t n,
		   uint64_t end)
{
	struct csi_write_args a = { .file = w->file, .lbn = lbn, .end = end,
				    .stable = w->stable, .blocks = w->wb,
				    .nblocks = n };
	struct sc_host *h = w->h;
	struct host_pin *spare = NULL;
	struct csi_write_res res;
	struct host_call c;
	uint64_t bo, gen, since;
	uint32_t i, len;
	int err;

	sc_mutex_lock(&h->lock);
	gen = h->resend_gen;
	sc_mutex_unlock(&h->lock);
	if (a.stable == CSI_UNSTABLE) {
		spare = pins_alloc(h, n);
		if (!spare) {
			a.stable = CSI_FILE_SYNC;
			w->sync_fallbacks++;
		}
	}
	for (i = 0; i < n; i++) {
		w->wb[i].kind = b[i].kind;
		w->wb[i].hash = b[i].h;
		w->wb[i].data.p = b[i].data;
		len = 0;
		if (b[i].kind == CSI_WK_DATA) {
			/* trailing zeros need not cross (§2) */
			for (len = w->bs; len && !b[i].data[len - 1]; len--)
				;
			w->data_bytes += len;
		}
		w->wb[i].data.len = len;
	}
	sc_hostcache_write_begin(h->hc, w->file);
	since = sc_clock_us();
	err = host_call(h, CSI_PROC_WRITE, &a.hdr, &a, &res, &c);
	host_time_add(h, SC_HT_WRITE, since);
	if (err) {
		sc_hostcache_write_end(h->hc, w->file, false, 0, 0, 0);
		pins_free_list(spare);
		return err;
	}
	if (c.status != CSI_OK)
		err = c.status == CSI_ERR_HASH_MISMATCH ? -SC_EBADMSG :
			host_status_err(c.status);
	else if (res.nblocks != n || res.attr.file != w->file)
		err = host_proto_err(h, "WRITE reply of another shape");
	else if (res.committed == CSI_UNSTABLE && a.stable != CSI_UNSTABLE)
		err = host_proto_err(h, "UNSTABLE answer to FILE_SYNC");
	sc_hostcache_write_end(h->hc, w->file, !err, res.pre_change,
			       res.attr.change, res.attr.size);
	if (!err && res.committed != CSI_UNSTABLE)
		pins_drop_synced(h, w->file, lbn, n, res.blocks);
	for (i = 0; !err && i < n; i++) {
		bo = (lbn + i) << w->bshift;
		if (res.blocks[i] == CSI_W_NEED_DATA &&
		    b[i].kind == CSI_WK_HASH) {
			w->need_data++;
			b[i].need = true;
			b[i].kind = CSI_WK_DATA;
			continue;
		}
		if (res.blocks[i] != CSI_W_OK) {
			err = host_proto_err(h, "NEED_DATA for data");
			break;
		}
		b[i].need = false;
		if (b[i].kind == CSI_WK_HASH)
			w->hash_blocks++;
		if (sc_hostcache_fill_at(h->hc, w->file, lbn + i,
					 res.attr.change, &b[i].h,
					 b[i].data) &&
		    b[i].kind == CSI_WK_DATA)
			host_notice(h, &b[i].h);
		if (res.committed == CSI_UNSTABLE)
			pin_add(h, &spare, w->file, lbn + i, c.epoch,
				end - bo < w->bs ? (uint32_t)(end - bo) : w->bs,
				b[i].data);
	}
	if (err == -SC_ESTALE)
		sc_hostcache_drop_file(h->hc, w->file);
	if (!err && !w->resend && pins_raced(h, w->file, lbn, n, gen))
		w->raced = true;
	host_release(h, &c);
	/* unused: NEED_DATA blocks, pinned by the call that sends them */
	pins_free_list(spare);
	return err;
}

int host_wr_hash(struct wr *w, struct wr_blk *b)
{
	return sc_hasher_digest(w->hs, b->data, w->bs, &b->h);
}

/*
 * b[0..n) from lbn, up to end: the WRITE, then the bytes of every block
 * answered NEED_DATA, contiguous ones in one call.
 */
static int wr_blocks_once(struct wr *w, uint64_t lbn, struct wr_blk *b,
			  uint32_t n, uint64_t end)
{
	uint32_t i, s;
	int err;

	err = wr_call(w, lbn, b, n, end);
	if (err == -SC_EBADMSG) {
		/* §6.1 HASH_MISMATCH: hashes again from the source, once */
		sc_log_err_ratelimited("host %s: the server says a block does not hash to its hash; retrying once",
				       w->h->name);
		for (i = 0; i < n; i++)
			if (host_wr_hash(w, &b[i]))
				return -SC_EIO;
		err = wr_call(w, lbn, b, n, end);
		if (err == -SC_EBADMSG)
			err = -SC_EIO;
	}
	for (i = 0; !err && i < n; i = s) {
		for (; i < n && !b[i].need; i++)
			;
		for (s = i; s < n && b[s].need; s++)
			;
		if (s > i)
			err = wr_call(w, lbn + i, &b[i], s - i,
				      s == n ? end : (lbn + s) << w->bshift);
	}
	/* the written blocks may have evicted more than a call carries */
	if (!err && host_flush(w->h, w->max_evict))
		sc_log_warn_ratelimited("host %s: eviction notices not delivered",
					w->h->name);
	return err;
}

/* wr_blocks_once, again after every resend it raced (§6.2 item 5). */
int host_wr_blocks(struct wr *w, uint64_t lbn, struct wr_blk *b,
		   uint32_t n, uint64_t end)
{
	int tries = 0, err;

	for (;;) {
		w->raced = false;
		err = wr_blocks_once(w, lbn, b, n, end);
		if (err || !w->raced)
			return err;
		if (++tries > HOST_COMMIT_TRIES) {
			sc_log_err_ratelimited("host %s: a WRITE raced %d resends of its file's uncommitted blocks; giving up",
					       w->h->name, tries);
			return -SC_EIO;
		}
		err = host_pins_resend(w->h, w->file);
		if (err)
			return err;
	}
}

bool host_file_pinned(struct sc_host *h, uint64_t file)
{
	struct host_pin *p;
	bool found = false;

	sc_mutex_lock(&h->lock);
	for (p = h->pins; p && !found; p = p->next)
		found = p->file == file;
	sc_mutex_unlock(&h->lock);
	return found;
}

/*
 * One resend at a time, and a caller waits for the one under way: its
 * READ or WRITE must not reach the server before the stale blocks it may
 * cover are written again (a resend takes them out of the pins).
 */
int host_pins_resend(struct sc_host *h, uint64_t file)
{
	struct host_pin *list = NULL, *p, *last = NULL, *next;
	struct wr w;
	uint32_t n, k;
	bool busy;
	int err;

	sc_mutex_lock(&h->lock);
	busy = h->stale_pins || h->resending;
	sc_mutex_unlock(&h->lock);
	if (!busy)
		return 0;
	/* the resend under way waits for the server; a killed task does not */
	err = sc_mutex_lock_killable(&h->resend_lock);
	if (err)
		return err;
	sc_mutex_lock(&h->lock);
	n = h->stale_pins ? pins_take(h, file, true, h->reg.epoch, 0, &list) :
			    0;
	if (n) {
		h->resend_files[h->resend_gen++ % HOST_RESEND_LOG] = file;
		h->resending = true;
	}
	sc_mutex_unlock(&h->lock);
	if (!n) {
		sc_mutex_unlock(&h->resend_lock);
		return 0;
	}
	err = host_wr_init(&w, h, file, CSI_UNSTABLE);
	w.resend = true;
	while (!err && list) {
		/* a run: consecutive blocks, all whole but the last */
		for (k = 0, p = list; p && k < w.max_blocks; p = p->next) {
			if (k && p->lbn != list->lbn + k)
				break;
			w.b[k].data = p->data;
			w.b[k].kind = CSI_WK_DATA;
			w.b[k].need = false;
			err = host_wr_hash(&w, &w.b[k]);
			last = p;
			k++;
			if (err || p->len < w.bs)
				break;
		}
		if (!err)
			err = host_wr_blocks(&w, list->lbn, w.b, k,
					(last->lbn << w.bshift) + last->len);
		if (err)
			break;
		/* written again: wr_call kept them anew, in this epoch */
		next = last->next;
		last->next = NULL;
		pins_free_list(list);
		list = next;
	}
	sc_mutex_lock(&h->lock);
	h->resending = false;
	if (list) {
		/* the rest stays stale, first in line */
		for (p = list, k = 1; p->next; p = p->next)
			k++;
		p->next = h->pins;
		h->pins = list;
		if (!h->pins_tail)
			h->pins_tail = p;
		h->npins += k;
		h->stale_pins += k;
	}
	sc_mutex_unlock(&h->lock);
	host_wr_fini(&w);
	sc_mutex_unlock(&h->resend_lock);
	return err;
}

static int host_commit(struct sc_host *h, uint64_t file)
{
	struct csi_commit_args a = { .file = file };
	struct csi_commit_res res;
	struct host_pin *done;
	struct host_reg before;
	struct host_call c;
	uint64_t seq, since;
	int tries, err;

	/* nothing of the file is unstable from this host: nothing to ask */
	if (!host_file_pinned(h, file))
		return 0;
	for (tries = 0; tries < HOST_COMMIT_TRIES; tries++) {
		host_reg_get(h, &before);
		err = host_pins_resend(h, file);
		if (err)
			return err;
		sc_mutex_lock(&h->lock);
		seq = h->pin_seq;
		sc_mutex_unlock(&h->lock);
		since = sc_clock_us();
		err = host_call(h, CSI_PROC_COMMIT, &a.hdr, &a, &res, &c);
		host_time_add(h, SC_HT_COMMIT, since);
		if (err)
			return err;
		err = host_status_err(c.status);
		if (err == -SC_ESTALE)
			sc_hostcache_drop_file(h->hc, file);
		if (!err)
			sc_hostcache_file_seen(h->hc, file, res.attr.change,
					       res.attr.size, c.since);
		host_release(h, &c);
		if (err)
			return err;
		/* what this epoch acknowledged is durable now (§7.5) */
		sc_mutex_lock(&h->lock);
		pins_take(h, file, false, c.epoch, seq, &done);
		sc_mutex_unlock(&h->lock);
		pins_free_list(done);
		/*
		 * Answered in the epoch whose older pins were written again
		 * above, or a new epoch (a restart found by this COMMIT or
		 * the resend): its stale pins go out, and COMMIT again.
		 */
		if (c.epoch == before.epoch)
			return 0;
	}
	sc_log_err_ratelimited("host %s: the server restarted during each of %d COMMITs; giving up",
			       h->name, HOST_COMMIT_TRIES);
	return -SC_EIO;
}

int sc_host_commit(struct sc_host *h, uint64_t file)
{
	unsigned int nofs = sc_nofs_save();
	int err = host_commit(h, file);

	sc_nofs_restore(nofs);
	return err;
}

int sc_host_pins_drain(struct sc_host *h, uint64_t file,
		       int (*put)(void *ctx, uint64_t off, const void *data,
				  uint32_t len),
		       void *ctx)
{
	struct host_pin *list, *cur, **end, *p;
	uint32_t n = 0, stale = 0;
	int err;

	/* oldest first: a later pin of a block overwrites an earlier one */
	err = sc_mutex_lock_killable(&h->resend_lock);
	if (err)
		return err;
	sc_mutex_lock(&h->lock);
	pins_take(h, file, true, h->reg.epoch, 0, &list);
	pins_take(h, file, false, h->reg.epoch, ~(uint64_t)0, &cur);
	sc_mutex_unlock(&h->lock);
	for (end = &list; *end; end = &(*end)->next)
		;
	*end = cur;
	while (list && !err) {
		err = put(ctx, list->lbn << h->bshift, list->data, list->len);
		if (err)
			break;
		p = list;
		list = list->next;
		pin_free(p);
	}
	if (list) {
		/* not written: kept, first in line, as they were */
		sc_mutex_lock(&h->lock);
		for (p = list; ; p = p->next) {
			n++;
			stale += p->epoch != h->reg.epoch;
			if (!p->next)
				break;
		}
		p->next = h->pins;
		h->pins = list;
		if (!h->pins_tail)
			h->pins_tail = p;
		h->npins += n;
		h->stale_pins += stale;
		sc_mutex_unlock(&h->lock);
	}
	sc_mutex_unlock(&h->resend_lock);
	return err;
}

int sc_host_commit_all(struct sc_host *h)
{
	uint64_t file, last = 0;
	bool any, first = true;
	int err = 0;

	while (!err) {
		sc_mutex_lock(&h->lock);
		any = h->pins;
		file = any ? h->pins->file : 0;
		sc_mutex_unlock(&h->lock);
		if (!any)
			break;
		/* a COMMIT that left the file's blocks pinned: no progress */
		if (!first && file == last)
			return -SC_EIO;
		err = sc_host_commit(h, file);
		last = file;
		first = false;
	}
	return err;
}
