// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The host cache: CSI-Map + content cache, one lock, read accounting. */
#include "seacache/hostcache.h"

/* What the host knows of one file's state (PROTOCOL.md §7.7). */
struct hc_file {
	uint64_t file;
	uint64_t change;	/* the tag of every mapping of the file */
	uint64_t size;
	uint64_t gen;		/* hc->gen when the tag was set */
	uint32_t writes;	/* the host's writes to it in flight */
	uint8_t tagged;		/* change is known */
	uint8_t sized;		/* size is known */
};

struct sc_hostcache {
	struct sc_mutex lock;
	struct sc_csimap *map;
	struct sc_ccache *cache;
	uint64_t reads, addr_hits, pushed_hits, mapped_hits, content_hits, misses;
	/* The files: slots used in order, then recycled by recency. */
	struct hc_file *f;
	struct sc_itab file_tab;	/* file id -> slot */
	struct sc_lru file_lru;
	uint32_t max_files, nfiles;
	uint64_t gen;			/* tags set so far */
	uint64_t files_dropped;
	bool shrinking;		/* in sc_hostcache_shrink, lock held */
};

/*
 * How long a shrink waits for the lock (sc_hostcache_shrink) while its
 * holder neither allocates (it may wait for this very reclaim) nor
 * shrinks (another reclaimer, which is let finish its batch).
 */
#define HC_SHRINK_WAIT_US 2000

/* The CSI-Map's sharer counts are the cached blocks' sharing counts. */
static void hostcache_on_share(void *ctx, const struct sc_hash *h,
			       uint32_t sharers)
{
	struct sc_hostcache *hc = ctx;

	if (hc->cache)
		sc_ccache_set_share(hc->cache, h, sharers);
}

struct sc_hostcache *sc_hostcache_create(const struct sc_hostcache_config *c)
{
	struct sc_ccache_config ccfg = {
		.block_size = c->block_size,
		.capacity_blocks = c->cache_blocks,
		.policy = c->policy,
		.on_evict = c->on_evict,
		.ctx = c->ctx,
		.mem = c->block_mem,
	};
	struct sc_csimap_config mcfg = {
		.mem_budget = c->csimap_budget,
		.expected_sharing = c->expected_sharing,
		.on_share = hostcache_on_share,
	};
	struct sc_hostcache *hc = sc_zalloc(sizeof(*hc));
	uint32_t nf = c->max_files ? c->max_files : c->cache_blocks / 64;

	if (!hc)
		return NULL;
	sc_mutex_init(&hc->lock);
	hc->max_files = nf < 64 ? 64 : nf;
	mcfg.ctx = hc;
	hc->map = sc_csimap_create(&mcfg);
	hc->cache = hc->map ? sc_ccache_create(&ccfg) : NULL;
	hc->f = sc_calloc(hc->max_files, sizeof(*hc->f));
	if (!hc->cache || !hc->f ||
	    sc_itab_init(&hc->file_tab, hc->max_files) ||
	    sc_lru_init(&hc->file_lru, hc->max_files)) {
		sc_hostcache_destroy(hc);
		return NULL;
	}
	return hc;
}

void sc_hostcache_destroy(struct sc_hostcache *hc)
{
	if (!hc)
		return;
	sc_lru_destroy(&hc->file_lru);
	sc_itab_destroy(&hc->file_tab);
	sc_free(hc->f);
	sc_ccache_destroy(hc->cache);
	sc_csimap_destroy(hc->map);
	sc_mutex_destroy(&hc->lock);
	sc_free(hc);
}

/* Copy out content h if cached (lock held). */
static bool hostcache_copy_out(struct sc_hostcache *hc,
			       const struct sc_hash *h, void *buf)
{
	const void *data = sc_ccache_lookup(hc->cache, h);

	if (!data)
		return false;
	sc_memcpy(buf, data, hc->cache->block_size);
	return true;
}

static uint64_t file_key(uint64_t file)
{
	return sc_mix64(file);
}

/* The slot of file, or SC_NIL (lock held). */
static uint32_t file_find(struct sc_hostcache *hc, uint64_t file)
{
	uint32_t i;

	for (i = sc_itab_first(&hc->file_tab, file_key(file)); i != SC_NIL;
	     i = sc_itab_next(&hc->file_tab, i))
		if (hc->f[i].file == file) {
			sc_lru_touch(&hc->file_lru, i);
			return i;
		}
	return SC_NIL;
}

/*
 * The slot of file, made if needed by forgetting the least recently used
 * file with no write in flight, and its mappings with it; SC_NIL if every
 * file has a write in flight (lock held).
 */
static uint32_t file_get(struct sc_hostcache *hc, uint64_t file)
{
	uint32_t i = file_find(hc, file), n;

	if (i != SC_NIL)
		return i;
	if (hc->nfiles < hc->max_files) {
		i = hc->nfiles++;
	} else {
		for (n = 0; n < hc->max_files; n++) {
			i = sc_lru_tail(&hc->file_lru);
			if (!hc->f[i].writes)
				break;
			sc_lru_touch(&hc->file_lru, i);
		}
		if (n == hc->max_files)
			return SC_NIL;
		sc_csimap_drop_file(hc->map, hc->f[i].file);
		sc_itab_del(&hc->file_tab, file_key(hc->f[i].file), i);
		sc_lru_unlink(&hc->file_lru, i);
	}
	sc_memset(&hc->f[i], 0, sizeof(hc->f[i]));
	hc->f[i].file = file;
	sc_itab_add(&hc->file_tab, file_key(file), i);
	sc_lru_push_head(&hc->file_lru, i);
	return i;
}

static void file_tag(struct sc_hostcache *hc, struct hc_file *f,
		     uint64_t change)
{
	f->change = change;
	f->tagged = 1;
	f->gen = ++hc->gen;
}

/* May (file, lbn) be mapped under change?  (lock held) */
static bool tag_ok(struct sc_hostcache *hc, uint64_t file, uint64_t change)
{
	uint32_t i = file_find(hc, file);

	return i != SC_NIL && hc->f[i].tagged && hc->f[i].change == change;
}

uint64_t sc_hostcache_gen(struct sc_hostcache *hc)
{
	uint64_t g;

	sc_mutex_lock(&hc->lock);
	g = hc->gen;
	sc_mutex_unlock(&hc->lock);
	return g;
}

bool sc_hostcache_file_seen(struct sc_hostcache *hc, uint64_t file,
			    uint64_t change, uint64_t size, uint64_t since)
{
	struct hc_file *f;
	bool ok = false;
	uint32_t i;

	sc_mutex_lock(&hc->lock);
	i = file_get(hc, file);
	if (i == SC_NIL)
		goto out;
	f = &hc->f[i];
	if (f->tagged && f->change == change) {
		ok = true;
	} else if (!f->writes && (!f->tagged || f->gen <= since)) {
		if (f->tagged) {
			sc_csimap_drop_file(hc->map, file);
			hc->files_dropped++;
		}
		file_tag(hc, f, change);
		ok = true;
	}
	if (ok) {
		f->size = size;
		f->sized = 1;
	}
out:
	sc_mutex_unlock(&hc->lock);
	return ok;
}

bool sc_hostcache_file_size(struct sc_hostcache *hc, uint64_t file,
			    uint64_t *size)
{
	bool known = false;
	uint32_t i;

	sc_mutex_lock(&hc->lock);
	i = file_find(hc, file);
	if (i != SC_NIL && hc->f[i].sized) {
		*size = hc->f[i].size;
		known = true;
	}
	sc_mutex_unlock(&hc->lock);
	return known;
}

void sc_hostcache_write_begin(struct sc_hostcache *hc, uint64_t file)
{
	uint32_t i;

	sc_mutex_lock(&hc->lock);
	i = file_get(hc, file);
	if (i != SC_NIL)
		hc->f[i].writes++;
	sc_mutex_unlock(&hc->lock);
}

void sc_hostcache_write_end(struct sc_hostcache *hc, uint64_t file, bool ok,
			    uint64_t pre, uint64_t change, uint64_t size)
{
	struct hc_file *f;
	uint32_t i;

	sc_mutex_lock(&hc->lock);
	i = file_find(hc, file);
	if (i == SC_NIL || !hc->f[i].writes) {
		/* no slot was free at write_begin: nothing can be mapped */
		sc_csimap_drop_file(hc->map, file);
		goto out;
	}
	f = &hc->f[i];
	f->writes--;
	if (ok && f->tagged && f->change == pre) {
		file_tag(hc, f, change);
	} else {
		sc_csimap_drop_file(hc->map, file);
		f->tagged = 0;
		if (ok)
			file_tag(hc, f, change);
	}
	f->size = size;
	f->sized = ok;
out:
	sc_mutex_unlock(&hc->lock);
}

/*
 * The lookup of (file, lbn) (lock held): on an address hit, *data is its
 * cached block, pinned in p; SC_NEED_DATA sets *h.
 */
static enum sc_read_result read_locked(struct sc_hostcache *hc,
				       uint64_t file, uint64_t lbn,
				       struct sc_hash *h,
				       struct sc_ccache_pins *p,
				       const void **data)
{
	struct sc_csi_found f;
	uint32_t slot;

	hc->reads++;
	if (!sc_csimap_lookup_src(hc->map, file, lbn, h, &f))
		return SC_NEED_HASH;
	slot = f.hint;
	*data = sc_ccache_lookup_pin(hc->cache, h, p, &slot);
	if (slot != f.hint)
		sc_csimap_set_hint(hc->map, f.entry, slot);
	if (!*data) {
		hc->misses++;
		return SC_NEED_DATA;
	}
	hc->addr_hits++;
	hc->pushed_hits += f.src == SC_CSI_PUSHED;
	hc->mapped_hits += f.src == SC_CSI_MAPPED;
	return SC_ADDR_HIT;
}

enum sc_read_result sc_hostcache_read(struct sc_hostcache *hc, uint64_t file,
				      uint64_t lbn, void *buf,
				      struct sc_hash *h)
{
	struct sc_ccache_pins p = { .n = 0 };
	enum sc_read_result r;
	const void *data;

	sc_mutex_lock(&hc->lock);
	r = read_locked(hc, file, lbn, h, &p, &data);
	sc_mutex_unlock(&hc->lock);
	if (r == SC_ADDR_HIT) {
		sc_memcpy(buf, data, hc->cache->block_size);
		sc_hostcache_unpin(hc, &p);
	}
	return r;
}

enum sc_read_result sc_hostcache_read_run(struct sc_hostcache *hc,
					  uint64_t file, uint64_t lbn,
					  uint32_t n, struct sc_ccache_pins *p,
					  struct sc_hash *h, uint64_t *size,
					  bool *sized)
{
	enum sc_read_result r = SC_ADDR_HIT;
	const void *data;
	uint32_t f, i;

	/*
	 * The lookups' misses ahead, for all n at once and with no lock
	 * held, so that another reader waits less for the lock: the index
	 * buckets, then the entries, their contents and cache slots (a
	 * single lookup too: its chain of misses then costs no wait under
	 * the lock).
	 */
	for (i = 0; i < n; i++)
		sc_csimap_prefetch(hc->map, file, lbn + i);
	for (i = 0; i < n; i++)
		sc_ccache_prefetch_slot(hc->cache,
					sc_csimap_prewalk(hc->map, file,
							  lbn + i));
	sc_mutex_lock(&hc->lock);
	if (sc_ccache_unpin(hc->cache, p))
		sc_ccache_reap(hc->cache);
	if (sized) {
		f = file_find(hc, file);
		*sized = f != SC_NIL && hc->f[f].sized;
		if (*sized)
			*size = hc->f[f].size;
	}
	while (p->n < n && r == SC_ADDR_HIT)
		r = read_locked(hc, file, lbn + p->n, h, p, &data);
	sc_mutex_unlock(&hc->lock);
	return r;
}

uint32_t sc_hostcache_lacking(struct sc_hostcache *hc, uint64_t file,
			      uint64_t lbn, uint32_t n, struct sc_hash *h,
			      uint8_t *lacking)
{
	struct sc_csi_found f;
	uint32_t i;

	sc_mutex_lock(&hc->lock);
	for (i = 0; i < n; i++) {
		if (!sc_csimap_lookup_src(hc->map, file, lbn + i, &h[i], &f))
			break;
		lacking[i] = sc_ccache_find(hc->cache, &h[i]) == SC_NIL;
	}
	sc_mutex_unlock(&hc->lock);
	return i;
}

/* The lock only when a block left the cache while pinned (rare). */
void sc_hostcache_unpin(struct sc_hostcache *hc, struct sc_ccache_pins *p)
{
	if (!sc_ccache_unpin(hc->cache, p))
		return;
	sc_mutex_lock(&hc->lock);
	sc_ccache_reap(hc->cache);
	sc_mutex_unlock(&hc->lock);
}

/* read_hash under the lock; map: record the mapping. */
static enum sc_read_result read_hash_locked(struct sc_hostcache *hc,
					    uint64_t file, uint64_t lbn,
					    const struct sc_hash *h,
					    void *buf, bool map)
{
	if (map)
		sc_csimap_insert(hc->map, file, lbn, h, SC_CSI_LEARNT);
	if (hostcache_copy_out(hc, h, buf)) {
		hc->content_hits++;
		return SC_CONTENT_HIT;
	}
	hc->misses++;
	return SC_NEED_DATA;
}

enum sc_read_result sc_hostcache_read_hash(struct sc_hostcache *hc,
					   uint64_t file, uint64_t lbn,
					   const struct sc_hash *h, void *buf)
{
	enum sc_read_result r;

	sc_mutex_lock(&hc->lock);
	r = read_hash_locked(hc, file, lbn, h, buf, true);
	sc_mutex_unlock(&hc->lock);
	return r;
}

enum sc_read_result sc_hostcache_read_hash_at(struct sc_hostcache *hc,
					      uint64_t file, uint64_t lbn,
					      uint64_t change,
					      const struct sc_hash *h,
					      void *buf)
{
	enum sc_read_result r;

	sc_mutex_lock(&hc->lock);
	r = read_hash_locked(hc, file, lbn, h, buf,
			     tag_ok(hc, file, change));
	sc_mutex_unlock(&hc->lock);
	return r;
}

/*
 * fill under the lock; map: record the mapping.  The block's buffer is
 * allocated here, under the lock sc_hostcache_shrink takes in reclaim:
 * never a reclaim that enters a file system (NOFS).
 */
static int fill_locked(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
		       const struct sc_hash *h, const void *data, bool map)
{
	uint32_t sharers = map ?
		sc_csimap_insert(hc->map, file, lbn, h, SC_CSI_LEARNT) :
		sc_csimap_sharers(hc->map, h);
	unsigned int nofs = sc_nofs_save();
	int err = sc_ccache_insert(hc->cache, h, data, sharers);

	sc_nofs_restore(nofs);
	return err;
}

int sc_hostcache_fill(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
		      const struct sc_hash *h, const void *data)
{
	int err;

	sc_mutex_lock(&hc->lock);
	err = fill_locked(hc, file, lbn, h, data, true);
	sc_mutex_unlock(&hc->lock);
	return err;
}

int sc_hostcache_fill_at(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
			 uint64_t change, const struct sc_hash *h,
			 const void *data)
{
	int err;

	sc_mutex_lock(&hc->lock);
	err = fill_locked(hc, file, lbn, h, data, tag_ok(hc, file, change));
	sc_mutex_unlock(&hc->lock);
	return err;
}

void sc_hostcache_learn(struct sc_hostcache *hc, uint64_t file, uint64_t lbn,
			const struct sc_hash *h)
{
	sc_mutex_lock(&hc->lock);
	sc_csimap_insert(hc->map, file, lbn, h, SC_CSI_PUSHED);
	sc_mutex_unlock(&hc->lock);
}

/*
 * Entries recorded per hold of the lock: a window of 2048 would keep the
 * VMs' hits waiting on it for the whole insert.
 */
#define LEARN_MAP_BATCH 256

uint32_t sc_hostcache_learn_map(struct sc_hostcache *hc, uint64_t file,
				uint64_t lbn, uint64_t change,
				const uint8_t *holes,
				const struct sc_hash *hashes, uint32_t n)
{
	uint32_t i = 0, k = 0, end, fi;
	struct hc_file *f;

	while (i < n) {
		end = n - i > LEARN_MAP_BATCH ? i + LEARN_MAP_BATCH : n;
		sc_mutex_lock(&hc->lock);
		fi = file_get(hc, file);
		if (fi == SC_NIL) {
			sc_mutex_unlock(&hc->lock);
			break;
		}
		f = &hc->f[fi];
		/* a file not known yet: checked at open like any other */
		if (!f->tagged && !f->writes)
			file_tag(hc, f, change);
		if (!f->tagged || f->change != change) {
			sc_mutex_unlock(&hc->lock);
			break;
		}
		for (; i < end; i++) {
			if (holes[i / 8] & (1u << (i % 8)))
				continue;
			sc_csimap_insert(hc->map, file, lbn + i, &hashes[k++],
					 SC_CSI_MAPPED);
		}
		sc_mutex_unlock(&hc->lock);
	}
	return k;
}

bool sc_hostcache_learn_at(struct sc_hostcache *hc, uint64_t file,
			   uint64_t lbn, uint64_t change,
			   const struct sc_hash *h)
{
	struct hc_file *f;
	bool ok = false;
	uint32_t i;

	sc_mutex_lock(&hc->lock);
	i = file_get(hc, file);
	if (i == SC_NIL)
		goto out;
	f = &hc->f[i];
	/* a file not known yet: checked at open like any other */
	if (!f->tagged && !f->writes)
		file_tag(hc, f, change);
	ok = f->tagged && f->change == change;
	if (ok)
		sc_csimap_insert(hc->map, file, lbn, h, SC_CSI_PUSHED);
out:
	sc_mutex_unlock(&hc->lock);
	return ok;
}

bool sc_hostcache_get(struct sc_hostcache *hc, const struct sc_hash *h,
		      void *buf)
{
	bool found;

	sc_mutex_lock(&hc->lock);
	found = hostcache_copy_out(hc, h, buf);
	sc_mutex_unlock(&hc->lock);
	return found;
}

bool sc_hostcache_forget(struct sc_hostcache *hc, uint64_t file, uint64_t lbn)
{
	bool found;

	sc_mutex_lock(&hc->lock);
	found = sc_csimap_remove(hc->map, file, lbn);
	sc_mutex_unlock(&hc->lock);
	return found;
}

uint32_t sc_hostcache_drop_file(struct sc_hostcache *hc, uint64_t file)
{
	uint32_t n;

	sc_mutex_lock(&hc->lock);
	n = sc_csimap_drop_file(hc->map, file);
	sc_mutex_unlock(&hc->lock);
	return n;
}

void sc_hostcache_forget_file(struct sc_hostcache *hc, uint64_t file)
{
	uint32_t i;

	sc_mutex_lock(&hc->lock);
	sc_csimap_drop_file(hc->map, file);
	i = file_find(hc, file);
	if (i != SC_NIL) {
		hc->f[i].tagged = 0;
		hc->f[i].sized = 0;
	}
	sc_mutex_unlock(&hc->lock);
}

uint32_t sc_hostcache_drop_all(struct sc_hostcache *hc)
{
	uint32_t n;

	sc_mutex_lock(&hc->lock);
	n = sc_csimap_drop_all(hc->map);
	sc_mutex_unlock(&hc->lock);
	return n;
}

uint32_t sc_hostcache_shrink(struct sc_hostcache *hc, uint32_t n)
{
	uint64_t since = sc_clock_us();
	uint32_t done;

	/*
	 * Holders keep the lock briefly, but for one whose allocation waits
	 * for reclaim (the reclaiming task itself, it may be): a shrink
	 * gives up at once on that one, waits for another reclaimer's
	 * batch, and a while for the rest.  Giving up early cost a
	 * drop_caches half the cache: its pass stops at SHRINK_STOP.
	 */
	while (!sc_mutex_trylock(&hc->lock)) {
		if (sc_data_race(hc->cache->allocating))
			return 0;
		if (!sc_data_race(hc->shrinking) &&
		    sc_clock_us() - since > HC_SHRINK_WAIT_US)
			return 0;
		sc_cond_resched();
	}
	hc->shrinking = true;
	done = sc_ccache_shrink(hc->cache, n);
	hc->shrinking = false;
	sc_mutex_unlock(&hc->lock);
	return done;
}

bool sc_hostcache_shrinking(const struct sc_hostcache *hc)
{
	return hc->shrinking;
}

uint32_t sc_hostcache_blocks(struct sc_hostcache *hc)
{
	return (uint32_t)sc_data_race(hc->cache->st.blocks);
}

uint32_t sc_hostcache_block_share(struct sc_hostcache *hc,
				  const struct sc_hash *h)
{
	uint32_t slot, share = SC_NIL;

	sc_mutex_lock(&hc->lock);
	slot = sc_ccache_find(hc->cache, h);
	if (slot != SC_NIL)
		share = hc->cache->share[slot];
	sc_mutex_unlock(&hc->lock);
	return share;
}

void sc_hostcache_get_stats(struct sc_hostcache *hc,
			    struct sc_hostcache_stats *out)
{
	sc_mutex_lock(&hc->lock);
	sc_ccache_get_stats(hc->cache, &out->cache);
	sc_csimap_get_stats(hc->map, &out->map);
	out->reads = hc->reads;
	out->addr_hits = hc->addr_hits;
	out->pushed_hits = hc->pushed_hits;
	out->mapped_hits = hc->mapped_hits;
	out->content_hits = hc->content_hits;
	out->misses = hc->misses;
	out->evictions = out->cache.evictions;
	out->bytes_in = out->cache.bytes_in;
	out->files = hc->nfiles;
	out->files_dropped = hc->files_dropped;
	out->mem_bytes = out->cache.mem_bytes + out->map.mem_bytes +
			 sizeof(*hc) +
			 (uint64_t)hc->max_files * sizeof(*hc->f) +
			 sc_itab_bytes(&hc->file_tab) +
			 sc_lru_bytes(&hc->file_lru);
	sc_mutex_unlock(&hc->lock);
}
