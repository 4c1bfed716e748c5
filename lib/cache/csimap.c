// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* The CSI-Map cache: (file, lbn) <-> content hash, bounded, LRU. */
#include "seacache/csimap.h"

/* One address.  Free entries are linked through sib_next. */
struct csi_entry {
	uint64_t file;
	uint64_t lbn;
	uint32_t content;	/* its content slot */
	uint32_t sib_prev;	/* other addresses of the same content */
	uint32_t sib_next;
	uint32_t hint : 30;	/* the caller's, see sc_csimap_set_hint */
	uint32_t src : 2;	/* enum sc_csi_source */
};

/* One distinct content.  Free content slots are linked through first. */
struct csi_content {
	struct sc_hash h;
	uint32_t sharers;
	uint32_t first;		/* an address holding it */
};

struct sc_csimap {
	struct csi_entry *e;
	struct csi_content *c;
	struct sc_itab addr_tab;	/* (file, lbn) -> entry */
	struct sc_itab content_tab;	/* hash -> content slot */
	struct sc_lru lru;		/* entries by recency */
	uint32_t cap_e, cap_c;
	uint32_t free_e, free_c;
	struct sc_csimap_stats st;
	void (*on_share)(void *ctx, const struct sc_hash *h, uint32_t sharers);
	void *ctx;
};

/* Bytes one entry or content slot costs, links and buckets included. */
#define CSI_ENTRY_COST (sizeof(struct csi_entry) + 4 * sizeof(uint32_t))
#define CSI_CONTENT_COST (sizeof(struct csi_content) + 2 * sizeof(uint32_t))

static uint64_t addr_key(uint64_t file, uint64_t lbn)
{
	return sc_mix64(file * 0x9e3779b97f4a7c15ull ^ lbn);
}

uint64_t sc_csimap_budget(uint32_t contents, uint32_t sharing)
{
	return (uint64_t)contents *
	       ((uint64_t)sharing * CSI_ENTRY_COST + CSI_CONTENT_COST);
}

struct sc_csimap *sc_csimap_create(const struct sc_csimap_config *cfg)
{
	uint32_t k = cfg->expected_sharing ? cfg->expected_sharing :
					     SC_CSIMAP_SHARING_DEFAULT;
	uint64_t per_k = sc_csimap_budget(1, k);
	uint64_t cap_e = cfg->mem_budget / per_k * k;
	struct sc_csimap *m;
	uint32_t i;

	if (cap_e < k || cap_e >= SC_NIL) {
		sc_log_err("CSI-Map: a budget of %llu bytes is out of range: give at least %llu bytes and less than %llu",
			   (unsigned long long)cfg->mem_budget,
			   (unsigned long long)per_k,
			   (unsigned long long)(SC_NIL / k) * per_k);
		return NULL;
	}
	m = sc_zalloc(sizeof(*m));
	if (!m)
		return NULL;
	m->cap_e = (uint32_t)cap_e;
	m->cap_c = (uint32_t)(cap_e / k);
	m->on_share = cfg->on_share;
	m->ctx = cfg->ctx;
	m->e = sc_calloc(m->cap_e, sizeof(*m->e));
	m->c = sc_calloc(m->cap_c, sizeof(*m->c));
	if (!m->e || !m->c || sc_itab_init(&m->addr_tab, m->cap_e) ||
	    sc_itab_init(&m->content_tab, m->cap_c) ||
	    sc_lru_init(&m->lru, m->cap_e)) {
		sc_log_err("CSI-Map: cannot allocate %u entries", m->cap_e);
		sc_csimap_destroy(m);
		return NULL;
	}
	m->free_e = SC_NIL;
	for (i = m->cap_e; i-- > 0;) {
		m->e[i].sib_next = m->free_e;
		m->free_e = i;
	}
	m->free_c = SC_NIL;
	for (i = m->cap_c; i-- > 0;) {
		m->c[i].first = m->free_c;
		m->free_c = i;
	}
	m->st.capacity_entries = m->cap_e;
	m->st.capacity_contents = m->cap_c;
	return m;
}

void sc_csimap_destroy(struct sc_csimap *m)
{
	if (!m)
		return;
	sc_lru_destroy(&m->lru);
	sc_itab_destroy(&m->content_tab);
	sc_itab_destroy(&m->addr_tab);
	sc_free(m->c);
	sc_free(m->e);
	sc_free(m);
}

static uint32_t find_entry(const struct sc_csimap *m, uint64_t file,
			   uint64_t lbn)
{
	uint32_t i;

	for (i = sc_itab_first(&m->addr_tab, addr_key(file, lbn));
	     i != SC_NIL; i = sc_itab_next(&m->addr_tab, i))
		if (m->e[i].file == file && m->e[i].lbn == lbn)
			return i;
	return SC_NIL;
}

static uint32_t find_content(const struct sc_csimap *m,
			     const struct sc_hash *h)
{
	uint32_t i;

	for (i = sc_itab_first(&m->content_tab, sc_hash_key64(h));
	     i != SC_NIL; i = sc_itab_next(&m->content_tab, i))
		if (sc_hash_eq(&m->c[i].h, h))
			return i;
	return SC_NIL;
}

static void remove_entry(struct sc_csimap *m, uint32_t i)
{
	struct csi_entry *e = &m->e[i];
	struct csi_content *c = &m->c[e->content];

	sc_itab_del(&m->addr_tab, addr_key(e->file, e->lbn), i);
	sc_lru_unlink(&m->lru, i);
	if (e->sib_prev != SC_NIL)
		m->e[e->sib_prev].sib_next = e->sib_next;
	else
		c->first = e->sib_next;
	if (e->sib_next != SC_NIL)
		m->e[e->sib_next].sib_prev = e->sib_prev;
	c->sharers--;
	if (m->on_share)
		m->on_share(m->ctx, &c->h, c->sharers);
	if (c->sharers == 0) {
		sc_itab_del(&m->content_tab, sc_hash_key64(&c->h), e->content);
		c->first = m->free_c;
		m->free_c = e->content;
		m->st.contents--;
	}
	e->sib_next = m->free_e;
	m->free_e = i;
	m->st.entries--;
}

static void evict_oldest(struct sc_csimap *m)
{
	remove_entry(m, sc_lru_tail(&m->lru));
	m->st.evictions++;
}

uint32_t sc_csimap_insert(struct sc_csimap *m, uint64_t file, uint64_t lbn,
			  const struct sc_hash *h, enum sc_csi_source src)
{
	struct csi_content *c;
	struct csi_entry *e;
	uint32_t ei, ci;

	if (src == SC_CSI_PUSHED)
		m->st.pushed++;
	else if (src == SC_CSI_MAPPED)
		m->st.mapped++;
	else
		m->st.learnt++;
	ei = find_entry(m, file, lbn);
	if (ei != SC_NIL) {
		c = &m->c[m->e[ei].content];
		if (sc_hash_eq(&c->h, h)) {
			/* a map window only confirms what was known */
			if (src != SC_CSI_MAPPED)
				m->e[ei].src = src;
			sc_lru_touch(&m->lru, ei);
			return c->sharers;
		}
		remove_entry(m, ei);
		m->st.overwrites++;
	}
	if (m->free_e == SC_NIL)
		evict_oldest(m);
	ci = find_content(m, h);
	if (ci == SC_NIL) {
		/* Each eviction frees an entry; the last sharer frees a slot. */
		while (m->free_c == SC_NIL)
			evict_oldest(m);
		ci = m->free_c;
		c = &m->c[ci];
		m->free_c = c->first;
		c->h = *h;
		c->sharers = 0;
		c->first = SC_NIL;
		sc_itab_add(&m->content_tab, sc_hash_key64(h), ci);
		m->st.contents++;
	}
	c = &m->c[ci];
	ei = m->free_e;
	e = &m->e[ei];
	m->free_e = e->sib_next;
	e->file = file;
	e->lbn = lbn;
	e->content = ci;
	e->src = src;
	e->hint = SC_CSI_NO_HINT;
	e->sib_prev = SC_NIL;
	e->sib_next = c->first;
	if (c->first != SC_NIL)
		m->e[c->first].sib_prev = ei;
	c->first = ei;
	c->sharers++;
	sc_itab_add(&m->addr_tab, addr_key(file, lbn), ei);
	sc_lru_push_head(&m->lru, ei);
	m->st.entries++;
	if (m->on_share)
		m->on_share(m->ctx, h, c->sharers);
	return c->sharers;
}

bool sc_csimap_lookup_src(struct sc_csimap *m, uint64_t file, uint64_t lbn,
			  struct sc_hash *h, struct sc_csi_found *f)
{
	uint32_t i = find_entry(m, file, lbn);

	m->st.lookups++;
	if (i == SC_NIL)
		return false;
	m->st.hits++;
	*h = m->c[m->e[i].content].h;
	if (f) {
		f->entry = i;
		f->hint = m->e[i].hint;
		f->src = (enum sc_csi_source)m->e[i].src;
	}
	sc_lru_touch(&m->lru, i);
	return true;
}

void sc_csimap_set_hint(struct sc_csimap *m, uint32_t entry, uint32_t hint)
{
	m->e[entry].hint = hint & SC_CSI_NO_HINT;
}

void sc_csimap_prefetch(const struct sc_csimap *m, uint64_t file,
			uint64_t lbn)
{
	sc_prefetch(&m->addr_tab.bucket[addr_key(file, lbn) &
					m->addr_tab.mask]);
}

/* Chain links followed at most: a longer chain is rare, and only slower. */
#define CSI_PREWALK_MAX 4

/*
 * Racy on purpose: every index read is checked against the capacities
 * (fixed at creation) before it is used, so a walk that meets an entry
 * being changed reads only the map's own memory, and finds a wrong entry
 * or none: a prefetch wasted, the locked lookup unchanged.
 */
uint32_t sc_csimap_prewalk(const struct sc_csimap *m, uint64_t file,
			   uint64_t lbn)
{
	uint64_t key = addr_key(file, lbn);
	uint32_t i = sc_data_race(m->addr_tab.bucket[key & m->addr_tab.mask]);
	uint32_t steps, content;

	for (steps = 0; steps < CSI_PREWALK_MAX && i < m->cap_e; steps++) {
		if (sc_data_race(m->e[i].file) == file &&
		    sc_data_race(m->e[i].lbn) == lbn) {
			content = sc_data_race(m->e[i].content);
			if (content < m->cap_c)
				sc_prefetch(&m->c[content]);
			sc_prefetch(&m->lru.link[i]);
			return sc_data_race(m->e[i].hint);
		}
		i = sc_data_race(m->addr_tab.next[i]);
	}
	return SC_CSI_NO_HINT;
}

/*
 * The whole-map walks run under the host cache's mutex: a rescheduling
 * point per entry keeps a large map from hogging the CPU (the map does
 * not change meanwhile, the caller's lock is held).
 */
uint32_t sc_csimap_drop_all(struct sc_csimap *m)
{
	uint32_t n = 0;

	while (m->lru.tail != SC_NIL) {
		remove_entry(m, m->lru.tail);
		n++;
		sc_cond_resched();
	}
	return n;
}

bool sc_csimap_remove(struct sc_csimap *m, uint64_t file, uint64_t lbn)
{
	uint32_t i = find_entry(m, file, lbn);

	if (i == SC_NIL)
		return false;
	remove_entry(m, i);
	return true;
}

uint32_t sc_csimap_drop_file(struct sc_csimap *m, uint64_t file)
{
	uint32_t i = m->lru.head, n, dropped = 0;

	while (i != SC_NIL) {
		n = sc_lru_older(&m->lru, i);
		if (m->e[i].file == file) {
			remove_entry(m, i);
			dropped++;
		}
		i = n;
		sc_cond_resched();
	}
	return dropped;
}

uint32_t sc_csimap_sharers(const struct sc_csimap *m, const struct sc_hash *h)
{
	uint32_t ci = find_content(m, h);

	return ci == SC_NIL ? 0 : m->c[ci].sharers;
}

uint32_t sc_csimap_sharers_list(const struct sc_csimap *m,
				const struct sc_hash *h, struct sc_addr *out,
				uint32_t max)
{
	uint32_t ci = find_content(m, h), i, n = 0;

	if (ci == SC_NIL)
		return 0;
	for (i = m->c[ci].first; i != SC_NIL && n < max; i = m->e[i].sib_next) {
		out[n].file = m->e[i].file;
		out[n].lbn = m->e[i].lbn;
		n++;
	}
	return n;
}

void sc_csimap_get_stats(const struct sc_csimap *m,
			 struct sc_csimap_stats *out)
{
	*out = m->st;
	out->mem_bytes = sizeof(*m) +
		(uint64_t)m->cap_e * sizeof(*m->e) +
		(uint64_t)m->cap_c * sizeof(*m->c) +
		sc_itab_bytes(&m->addr_tab) + sc_itab_bytes(&m->content_tab) +
		sc_lru_bytes(&m->lru);
}
