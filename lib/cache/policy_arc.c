// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * ARC (Megiddo and Modha, FAST 2003): two recency lists, T1 for blocks
 * seen once and T2 for blocks seen again, and two ghost lists B1 and B2 of
 * the keys of blocks recently evicted from each.  A block that comes back
 * while its key is in B1 (B2) grows (shrinks) the target size p of T1 and
 * goes to T2.  The victim is T1's LRU block while T1 is larger than p,
 * else T2's.
 *
 * As in the paper, a miss first adapts p (a ghost hit) or trims the ghost
 * lists (a complete miss), in admit(), and only then is the victim chosen
 * (REPLACE, with the "x in B2 and |T1| = p" refinement).  p is a real
 * number as in the paper, moved by max(1, |B2| / |B1|) without rounding
 * (fixed point, 32 fraction bits): seacache-sim's miss counts equal
 * libCacheSim's ARC (tests/sim/test_sim_libcachesim.sh), whose p is a
 * double.
 * Ghost keys come from the cache's key() hook; without it there are no
 * ghosts and p stays 0.  Ghosts are remembered only for slots that
 * victim() named; dropped blocks leave no ghost.
 *
 * Memory per slot: 8 bytes of list links shared by T1 and T2, one list tag;
 * per ghost (one more than slots): key, links, index chain and bucket, tag.
 */
#include "seacache/itab.h"
#include "seacache/lru.h"
#include "seacache/policy.h"

enum { ARC_NONE, ARC_T1, ARC_T2, ARC_B1, ARC_B2 };

#define ARC_ONE (1ull << 32)

/* max(1, x / y) in ARC_ONE units (y > 0). */
static uint64_t arc_delta(uint32_t x, uint32_t y)
{
	uint64_t d = ((uint64_t)x << 32) / y;

	return d > ARC_ONE ? d : ARC_ONE;
}

struct arc {
	uint32_t c;
	uint32_t g;		/* ghost entries */
	uint64_t p;		/* target size of T1, ARC_ONE per block */
	uint32_t pending;	/* slot named by the last victim() */
	/* The block coming in, from admit() to insert(): */
	uint8_t in;		/* ARC_B1, ARC_B2 (a ghost hit) or ARC_NONE */
	bool no_ghost;		/* T1 holds c: its LRU block leaves no ghost */
	uint32_t in_ghost;	/* its ghost entry */
	struct sc_lru t1, t2;	/* over slots, sharing link[] */
	struct sc_lru b1, b2;	/* over ghost entries, sharing glink[] */
	struct sc_lru_link *link;
	struct sc_lru_link *glink;
	uint8_t *where;		/* per slot: ARC_T1 or ARC_T2 */
	uint8_t *gwhere;	/* per ghost: ARC_B1, ARC_B2 or ARC_NONE */
	uint64_t *gkey;
	struct sc_itab gtab;	/* ghost key -> ghost entry */
	uint32_t gfree;		/* free ghost entries, through gtab.next */
};

static void arc_free(struct arc *a)
{
	sc_itab_destroy(&a->gtab);
	sc_free(a->link);
	sc_free(a->glink);
	sc_free(a->where);
	sc_free(a->gwhere);
	sc_free(a->gkey);
	sc_free(a);
}

static int arc_init(struct sc_policy *p, uint32_t capacity, const char *arg)
{
	struct arc *a;

	if (arg)
		return -SC_EINVAL;
	a = sc_zalloc(sizeof(*a));
	if (!a)
		return -SC_ENOMEM;
	a->c = capacity;
	a->pending = SC_NIL;
	a->in_ghost = SC_NIL;
	a->link = sc_calloc(capacity, sizeof(*a->link));
	a->g = capacity + 1;	/* c, and one in flight before insert() */
	a->glink = sc_calloc(a->g, sizeof(*a->glink));
	a->where = sc_calloc(capacity, 1);
	a->gwhere = sc_calloc(a->g, 1);
	a->gkey = sc_calloc(a->g, sizeof(*a->gkey));
	if (!a->link || !a->glink || !a->where || !a->gwhere || !a->gkey ||
	    sc_itab_init(&a->gtab, a->g)) {
		arc_free(a);
		return -SC_ENOMEM;
	}
	sc_lru_init_shared(&a->t1, a->link, capacity);
	sc_lru_init_shared(&a->t2, a->link, capacity);
	sc_lru_init_shared(&a->b1, a->glink, a->g);
	sc_lru_init_shared(&a->b2, a->glink, a->g);
	a->gfree = sc_itab_free_all(&a->gtab);
	p->priv = a;
	return 0;
}

static void arc_destroy(struct sc_policy *p)
{
	arc_free(p->priv);
	p->priv = NULL;
}

static uint32_t arc_ghost_find(const struct arc *a, uint64_t key)
{
	return sc_itab_find(&a->gtab, a->gkey, key);
}

static void arc_ghost_drop(struct arc *a, uint32_t g)
{
	sc_lru_unlink(a->gwhere[g] == ARC_B1 ? &a->b1 : &a->b2, g);
	sc_itab_del(&a->gtab, a->gkey[g], g);
	a->gwhere[g] = ARC_NONE;
	sc_itab_free_push(&a->gtab, &a->gfree, g);
}

/* Remember key as a ghost in list b (ARC_B1 or ARC_B2). */
static void arc_ghost_add(struct arc *a, uint64_t key, uint8_t b)
{
	uint32_t g = arc_ghost_find(a, key);

	if (g != SC_NIL)
		arc_ghost_drop(a, g);
	if (a->gfree == SC_NIL)
		arc_ghost_drop(a, sc_lru_tail(a->b2.count ? &a->b2 : &a->b1));
	g = sc_itab_free_pop(&a->gtab, &a->gfree);
	a->gkey[g] = key;
	a->gwhere[g] = b;
	sc_itab_add(&a->gtab, key, g);
	sc_lru_push_head(b == ARC_B1 ? &a->b1 : &a->b2, g);
}

/*
 * A block with this key is coming in: adapt p if the key is a ghost (the
 * paper's cases II and III, before REPLACE), else keep the directory
 * within 2c and L1 = T1 + B1 within c (case IV).  |T1| = c (B1 empty) is
 * case IV.A's other half: T1's LRU block leaves without a ghost.
 */
static void arc_admit(struct sc_policy *p, uint64_t key)
{
	struct arc *a = p->priv;
	uint32_t g = p->key ? arc_ghost_find(a, key) : SC_NIL;
	uint64_t d, c = (uint64_t)a->c * ARC_ONE;
	uint32_t l1 = a->t1.count + a->b1.count;

	a->in = g == SC_NIL ? ARC_NONE : a->gwhere[g];
	a->in_ghost = g;
	if (a->in == ARC_B1) {
		d = arc_delta(a->b2.count, a->b1.count);
		a->p = a->p + d < c ? a->p + d : c;
	} else if (a->in == ARC_B2) {
		d = arc_delta(a->b1.count, a->b2.count);
		a->p = a->p > d ? a->p - d : 0;
	} else if (l1 >= a->c) {
		if (a->b1.count)
			arc_ghost_drop(a, sc_lru_tail(&a->b1));
		else
			a->no_ghost = true;
	} else if (l1 + a->t2.count + a->b2.count >= 2 * a->c &&
		   a->b2.count) {
		arc_ghost_drop(a, sc_lru_tail(&a->b2));
	}
}

static void arc_insert(struct sc_policy *p, uint32_t slot)
{
	struct arc *a = p->priv;
	uint32_t g = a->in_ghost;

	a->no_ghost = false;
	if (a->in == ARC_NONE || g == SC_NIL || a->gwhere[g] != a->in) {
		a->in = ARC_NONE;
		a->where[slot] = ARC_T1;
		sc_lru_push_head(&a->t1, slot);
		return;
	}
	a->in = ARC_NONE;
	arc_ghost_drop(a, g);
	a->where[slot] = ARC_T2;
	sc_lru_push_head(&a->t2, slot);
}

static void arc_hit(struct sc_policy *p, uint32_t slot)
{
	struct arc *a = p->priv;

	if (a->where[slot] == ARC_T2) {
		sc_lru_touch(&a->t2, slot);
		return;
	}
	sc_lru_unlink(&a->t1, slot);
	a->where[slot] = ARC_T2;
	sc_lru_push_head(&a->t2, slot);
}

/* The paper's REPLACE, with the p that arc_admit() adapted. */
static uint32_t arc_victim(struct sc_policy *p)
{
	struct arc *a = p->priv;
	uint64_t t1 = (uint64_t)a->t1.count * ARC_ONE;

	if (t1 && (a->no_ghost || !a->t2.count || t1 > a->p ||
		   (t1 == a->p && a->in == ARC_B2)))
		a->pending = sc_lru_tail(&a->t1);
	else
		a->pending = sc_lru_tail(&a->t2);
	return a->pending;
}

static void arc_remove(struct sc_policy *p, uint32_t slot)
{
	struct arc *a = p->priv;
	uint8_t w = a->where[slot];

	sc_lru_unlink(w == ARC_T1 ? &a->t1 : &a->t2, slot);
	a->where[slot] = ARC_NONE;
	if (slot == a->pending && p->key && !a->no_ghost)
		arc_ghost_add(a, p->key(p->key_ctx, slot),
			      w == ARC_T1 ? ARC_B1 : ARC_B2);
	if (slot == a->pending)
		a->no_ghost = false;
	a->pending = SC_NIL;
}

static size_t arc_bytes(const struct sc_policy *p)
{
	const struct arc *a = p->priv;

	return sizeof(*a) + (size_t)a->c * (sizeof(struct sc_lru_link) + 1) +
	       (size_t)a->g * (sizeof(struct sc_lru_link) + 1 +
			       sizeof(uint64_t)) +
	       sc_itab_bytes(&a->gtab);
}

const struct sc_policy_ops sc_policy_arc = {
	.name = "arc",
	.help = "arc takes no argument",
	.init = arc_init,
	.destroy = arc_destroy,
	.admit = arc_admit,
	.insert = arc_insert,
	.hit = arc_hit,
	.victim = arc_victim,
	.remove = arc_remove,
	.bytes = arc_bytes,
};

uint32_t sc_policy_arc_target(const struct sc_policy *p)
{
	return (uint32_t)(((const struct arc *)p->priv)->p >> 32);
}
