// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * CDAC-LRU and CDAC-ARC (Tan et al., CDAC: content-driven deduplication-
 * aware storage cache), on the CacheDedup split (dcache_split.h).  The
 * data cache evicts only free blocks (no address refers to them), oldest
 * freed first.  To free a block, the address at the metadata cache's LRU
 * end (ARC's choice for CDAC-ARC) is examined, again and again, until an
 * address is deleted:
 *
 * BHI (blocks of more than one 4 KiB part): a block is broken into 4 KiB
 * parts and each address keeps a bitmap of the parts touched since it
 * entered the cache.  At the LRU end, an address whose bitmap covers at
 * least the BHI threshold (50%) of the parts, and whose long-idle flag is
 * clear, is hot: its flag is set and it goes round again.  The flag is
 * cleared by its next access, so an address that comes back to the LRU
 * end with the flag still set has been idle a whole cycle and is cold,
 * however many of its parts were touched.  With 4 KiB blocks BHI is off (one
 * part: every cached address would look hot), as in the paper's 4 KiB
 * results.
 *
 * RCE, for cold addresses: if the block it names has one reference, the
 * address is deleted (the block becomes free).  A block of several
 * references gets its address another cycle, remembering the count; at
 * the next visit the address is deleted if the count has declined by more
 * than the RCE threshold (50%), else it goes round once more with the new
 * count.  An access ends the observation (the address is hot again).
 *
 * A cycle here is the time from the MRU to the LRU position, so an
 * address that keeps its count forever would go round forever: after
 * examining twice as many addresses as the metadata cache holds without
 * deleting one, the address at the LRU end is deleted (counted as forced).
 *
 * Arguments: cdac-lru[:RCE_PCT[:BHI_PCT]], each 1-100, default 50:50.
 */
#include "dcache_split.h"

/*
 * A metadata entry's block by its data slot (held there while the entry
 * refers to it: the data cache evicts only blocks of count 0) and its RCE
 * count, side by side: what judging a candidate reads, in one line, with
 * no content lookup.
 */
struct cdac_meta {
	uint32_t d;
	uint32_t ref;		/* RCE: count when given a cycle, 0: none */
};

struct cdac {
	struct dsplit s;
	uint32_t *dref;		/* addresses referring to each block */
	struct sc_lru zero;	/* blocks with dref 0, oldest first */
	struct cdac_meta *mcdac;
	uint16_t *mbits;	/* BHI: parts touched since it was cached */
	uint8_t *mflag;		/* BHI: kept for its bitmap, not used since */
	uint32_t rce_pct, bhi_pct;
};

/* The base is the first member of the organisation's struct. */
static struct cdac *cdac_of(struct dsplit *s)
{
	return (struct cdac *)s;
}

static const struct cdac *cdac_of_c(const struct dsplit *s)
{
	return (const struct cdac *)s;
}

enum {
	CDAC_RCE_SINGLE, CDAC_RCE_DECLINED, CDAC_RCE_KEEP, CDAC_BHI_KEEP,
	CDAC_FORCED,
};

static const char *const cdac_events[] = {
	"rce_delete_single", "rce_delete_declined", "rce_keep", "bhi_keep",
	"forced_delete", NULL,
};

static uint32_t popcount16(uint32_t x)
{
	uint32_t n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

#define CDAC_SCAN_MAX 64

/* BHI and RCE on address m at the LRU end: its event, a keep or a delete. */
static uint32_t cdac_judge(struct cdac *o, uint32_t m, uint32_t parts)
{
	uint32_t r, ref;

	if (parts > 1 && !o->mflag[m] &&
	    popcount16(o->mbits[m]) * 100 >= o->bhi_pct * parts) {
		o->mflag[m] = 1;
		return CDAC_BHI_KEEP;
	}
	r = o->dref[o->mcdac[m].d];
	ref = o->mcdac[m].ref;
	if (r <= 1)
		return CDAC_RCE_SINGLE;
	if (ref && (uint64_t)(ref - (r < ref ? r : ref)) * 100 >
		   (uint64_t)o->rce_pct * ref)
		return CDAC_RCE_DECLINED;
	o->mcdac[m].ref = r;
	return CDAC_RCE_KEEP;
}

/* Delete one address from the metadata cache. */
static void cdac_delete_one(struct dsplit *s)
{
	uint32_t parts = sc_dcache_parts(s->c), m, ev;
	uint64_t limit = 2 * (uint64_t)s->mused + 2, seen;

	/*
	 * When nearly every address is shared and its count holds, RCE
	 * would cycle the whole metadata cache for one deletion (O(n) per
	 * miss: a storm of clones).  After CDAC_SCAN_MAX candidates the one
	 * at the LRU end goes, as the paper's forced deletion does.
	 */
	if (limit > CDAC_SCAN_MAX)
		limit = CDAC_SCAN_MAX;
	for (seen = 0;; seen++) {
		m = s->mpol.ops->victim(&s->mpol);
		ev = seen >= limit ? CDAC_FORCED :
				     cdac_judge(cdac_of(s), m, parts);
		s->c->st.events[ev]++;
		if (ev != CDAC_BHI_KEEP && ev != CDAC_RCE_KEEP)
			break;
		s->mpol.ops->hit(&s->mpol, m);
	}
	dsplit_meta_delete(s, m);
}

static void dref_inc(struct cdac *o, uint32_t d)
{
	if (o->dref[d]++ == 0)
		sc_lru_unlink(&o->zero, d);
}

static void dref_dec(struct cdac *o, uint32_t d)
{
	if (--o->dref[d] == 0)
		sc_lru_push_head(&o->zero, d);
}

static int cdac_org_init(struct dsplit *s, const char *arg)
{
	struct cdac *o = cdac_of(s);

	(void)arg;
	o->dref = sc_calloc(s->dcap, sizeof(*o->dref));
	o->mcdac = sc_calloc(s->mcap, sizeof(*o->mcdac));
	o->mbits = sc_calloc(s->mcap, sizeof(*o->mbits));
	o->mflag = sc_calloc(s->mcap, 1);
	if (!o->dref || !o->mcdac || !o->mbits || !o->mflag ||
	    sc_lru_init(&o->zero, s->dcap))
		return -SC_ENOMEM;
	return 0;
}

static void cdac_org_free(struct dsplit *s)
{
	struct cdac *o = cdac_of(s);

	sc_free(o->zero.link);
	sc_free(o->dref);
	sc_free(o->mcdac);
	sc_free(o->mbits);
	sc_free(o->mflag);
}

static size_t cdac_org_bytes(const struct dsplit *s)
{
	return (size_t)s->dcap * (4 + sizeof(struct sc_lru_link)) +
	       (size_t)s->mcap * (sizeof(struct cdac_meta) + 3);
}

/* Only free blocks go, oldest freed first: delete addresses until one is. */
static uint32_t cdac_data_victim(struct dsplit *s)
{
	struct cdac *o = cdac_of(s);

	while (!o->zero.count)
		cdac_delete_one(s);
	return sc_lru_tail(&o->zero);
}

static void cdac_data_insert(struct dsplit *s, uint32_t d)
{
	struct cdac *o = cdac_of(s);

	o->dref[d] = 0;
	sc_lru_push_head(&o->zero, d);
}

static void cdac_data_remove(struct dsplit *s, uint32_t d)
{
	sc_lru_unlink(&cdac_of(s)->zero, d);
}

static bool cdac_names(const struct dsplit *s, uint32_t m, uint64_t content,
		       uint32_t d)
{
	(void)content;
	return cdac_of_c(s)->mcdac[m].d == d;
}

static void cdac_meta_use(struct dsplit *s, uint32_t m, uint64_t content,
			  uint32_t d, uint32_t parts, bool fresh)
{
	struct cdac *o = cdac_of(s);
	uint32_t old;

	(void)content;
	if (fresh) {
		/* cdac_meta_room took d's reference */
		o->mcdac[m].d = d;
		o->mcdac[m].ref = 0;
		o->mbits[m] = (uint16_t)parts;
		o->mflag[m] = 0;
		return;
	}
	if (o->mcdac[m].d != d) {
		old = o->mcdac[m].d;
		/* Before the decrement: d must not become free. */
		dref_inc(o, d);
		dref_dec(o, old);
		o->mcdac[m].d = d;
	}
	o->mbits[m] |= (uint16_t)parts;
	o->mflag[m] = 0;
	o->mcdac[m].ref = 0;
}

static void cdac_meta_room(struct dsplit *s, uint32_t d)
{
	/*
	 * The new address's reference, taken first: d must not be freed
	 * while addresses are deleted.
	 */
	dref_inc(cdac_of(s), d);
	while (s->mfree == SC_NIL)
		cdac_delete_one(s);
}

static void cdac_meta_gone(struct dsplit *s, uint32_t m)
{
	struct cdac *o = cdac_of(s);

	dref_dec(o, o->mcdac[m].d);
}

static const struct dsplit_ops cdac_split = {
	.size = sizeof(struct cdac),
	.init = cdac_org_init,
	.free = cdac_org_free,
	.bytes = cdac_org_bytes,
	.data_victim = cdac_data_victim,
	.data_insert = cdac_data_insert,
	.data_remove = cdac_data_remove,
	.names = cdac_names,
	.meta_use = cdac_meta_use,
	.meta_room = cdac_meta_room,
	.meta_gone = cdac_meta_gone,
};

static int cdac_init(struct sc_dcache *c, const char *arg, const char *mpol)
{
	char buf[16];
	const char *second = NULL;
	uint32_t rce = 50, bhi = 50;
	struct cdac *o;
	size_t i;
	int err;

	if (arg) {
		for (i = 0; arg[i] && arg[i] != ':' && i + 1 < sizeof(buf); i++)
			buf[i] = arg[i];
		if (arg[i] == ':')
			second = arg + i + 1;
		else if (arg[i])
			return -SC_EINVAL;
		buf[i] = 0;
		if (sc_policy_parse_u32(buf, 1, 100, &rce))
			return -SC_EINVAL;
		if (second && sc_policy_parse_u32(second, 1, 100, &bhi))
			return -SC_EINVAL;
	}
	err = dsplit_init(c, &cdac_split, mpol, NULL);
	if (err)
		return err;
	o = cdac_of(c->priv);
	o->rce_pct = rce;
	o->bhi_pct = bhi;
	return 0;
}

static int cdac_lru_init(struct sc_dcache *c, const char *arg)
{
	return cdac_init(c, arg, "lru");
}

static int cdac_arc_init(struct sc_dcache *c, const char *arg)
{
	return cdac_init(c, arg, "arc");
}

const struct sc_dcache_ops sc_dcache_cdac_lru = {
	.name = "cdac-lru",
	.help = "cdac-lru[:RCE_PCT[:BHI_PCT]], thresholds 1-100 (default 50:50)",
	.init = cdac_lru_init,
	.destroy = dsplit_destroy,
	.access = dsplit_access,
	.holds = dsplit_holds,
	.prefetch = dsplit_prefetch,
	.bytes = dsplit_bytes,
	.blocks = dsplit_blocks,
	.events = cdac_events,
};

const struct sc_dcache_ops sc_dcache_cdac_arc = {
	.name = "cdac-arc",
	.help = "cdac-arc[:RCE_PCT[:BHI_PCT]], thresholds 1-100 (default 50:50)",
	.init = cdac_arc_init,
	.destroy = dsplit_destroy,
	.access = dsplit_access,
	.holds = dsplit_holds,
	.prefetch = dsplit_prefetch,
	.bytes = dsplit_bytes,
	.blocks = dsplit_blocks,
	.events = cdac_events,
};
