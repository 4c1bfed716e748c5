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
static uint32_t cdac_judge(struct dsplit *s, uint32_t m, uint32_t parts)
{
	uint32_t r, ref;

	if (parts > 1 && !s->mflag[m] &&
	    popcount16(s->mbits[m]) * 100 >= s->bhi_pct * parts) {
		s->mflag[m] = 1;
		return CDAC_BHI_KEEP;
	}
	r = s->dref[s->mcdac[m].d];
	ref = s->mcdac[m].ref;
	if (r <= 1)
		return CDAC_RCE_SINGLE;
	if (ref && (uint64_t)(ref - (r < ref ? r : ref)) * 100 >
		   (uint64_t)s->rce_pct * ref)
		return CDAC_RCE_DECLINED;
	s->mcdac[m].ref = r;
	return CDAC_RCE_KEEP;
}

void cdac_delete_one(struct dsplit *s)
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
		ev = seen >= limit ? CDAC_FORCED : cdac_judge(s, m, parts);
		s->c->st.events[ev]++;
		if (ev != CDAC_BHI_KEEP && ev != CDAC_RCE_KEEP)
			break;
		s->mpol.ops->hit(&s->mpol, m);
	}
	dsplit_meta_delete(s, m);
}

static int cdac_init(struct sc_dcache *c, const char *arg, const char *mpol)
{
	char buf[16];
	const char *second = NULL;
	uint32_t rce = 50, bhi = 50;
	struct dsplit *s;
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
	err = dsplit_init(c, mpol, NULL);
	if (err)
		return err;
	s = c->priv;
	s->rce_pct = rce;
	s->bhi_pct = bhi;
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
