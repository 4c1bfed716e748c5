// SPDX-License-Identifier: BSD-2-Clause
/*
 * The papers' cache policies on hand-made sequences: each test checks the
 * behaviour that defines a policy, usually against a contrast (LRU, or the
 * policy with the feature off) that behaves differently on the same input.
 *   ARC: scan resistance, ghost hits adapting the target size.
 *   D-LRU/D-ARC: one data copy for many addresses; metadata and data
 *     evicted separately.
 *   CDAC: RCE (single references deleted first, declining counts), BHI
 *     (bitmap hotness and the long-idle flag).
 *   CBBC: the paper's event table, LRU order of references, the content
 *     hash table's share taken from data space.
 *   ACQ: frequency-based admission and the bounded access queue.
 *   LRUCA: eviction prefers blocks the other level holds, exact or Bloom.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "seacache/dcache.h"
#include "seacache/policy.h"

/* ---- slot-level ARC through a tiny cache of keys ---- */

#define ARC_CAP 4

struct keycache {
	struct sc_policy p;
	uint64_t key[ARC_CAP];
	bool used[ARC_CAP];
	uint64_t last_victim;
};

static uint64_t kc_key(const void *ctx, uint32_t slot)
{
	return ((const struct keycache *)ctx)->key[slot];
}

static void kc_init(struct keycache *kc, const char *spec)
{
	memset(kc, 0, sizeof(*kc));
	assert_int_equal(sc_policy_create(&kc->p, spec, ARC_CAP, NULL), 0);
	kc->p.key = kc_key;
	kc->p.key_ctx = kc;
	kc->last_victim = UINT64_MAX;
}

/* Reference key: a hit, or an insert (evicting when full).  True on a hit. */
static bool kc_ref(struct keycache *kc, uint64_t key)
{
	uint32_t i, slot = SC_NIL;

	for (i = 0; i < ARC_CAP; i++)
		if (kc->used[i] && kc->key[i] == key) {
			kc->p.ops->hit(&kc->p, i);
			return true;
		}
	sc_policy_admit(&kc->p, key);
	for (i = 0; i < ARC_CAP && slot == SC_NIL; i++)
		if (!kc->used[i])
			slot = i;
	if (slot == SC_NIL) {
		slot = kc->p.ops->victim(&kc->p);
		kc->last_victim = kc->key[slot];
		kc->p.ops->remove(&kc->p, slot);
	}
	kc->key[slot] = key;
	kc->used[slot] = true;
	kc->p.ops->insert(&kc->p, slot);
	return false;
}

static void arc_resists_a_scan_lru_does_not(void **state)
{
	static const char *const specs[] = { "arc", "lru" };
	int s;

	(void)state;
	for (s = 0; s < 2; s++) {
		struct keycache kc;
		bool survived = true;
		uint64_t k;

		kc_init(&kc, specs[s]);
		kc_ref(&kc, 1);
		kc_ref(&kc, 1);		/* 1 is seen twice: frequent */
		for (k = 100; k < 110; k++) {	/* a scan of one-time blocks */
			kc_ref(&kc, k);
			if (kc.last_victim == 1)
				survived = false;
		}
		assert_int_equal(survived, s == 0);
		assert_int_equal(kc_ref(&kc, 1), s == 0);
		sc_policy_destroy(&kc.p);
	}
}

static void arc_ghost_hits_adapt_the_target(void **state)
{
	struct keycache kc;
	uint32_t p;

	(void)state;
	kc_init(&kc, "arc");
	/* T1 = {1,3,4}, T2 = {2}; 5 evicts 1 (T1's LRU) into B1. */
	kc_ref(&kc, 1);
	kc_ref(&kc, 2);
	kc_ref(&kc, 2);
	kc_ref(&kc, 3);
	kc_ref(&kc, 4);
	kc_ref(&kc, 5);
	assert_int_equal(kc.last_victim, 1);
	assert_int_equal(sc_policy_arc_target(&kc.p), 0);
	/* 1 comes back while remembered in B1: p grows, 1 goes to T2 ... */
	assert_false(kc_ref(&kc, 1));
	p = sc_policy_arc_target(&kc.p);
	assert_true(p > 0);
	/* ... where it outlives the T1 blocks of the next misses. */
	kc_ref(&kc, 6);
	kc_ref(&kc, 7);
	assert_true(kc_ref(&kc, 1));
	/*
	 * Another B1 hit: p grows to |T1| before the victim is chosen (the
	 * paper's order), so T2 gives it (2, to B2) where the old p would
	 * have taken T1's LRU block.
	 */
	kc_ref(&kc, 4);
	assert_int_equal(sc_policy_arc_target(&kc.p), 2);
	assert_int_equal(kc.last_victim, 2);
	p = sc_policy_arc_target(&kc.p);
	/* A B2 ghost hit shrinks p. */
	assert_false(kc_ref(&kc, 2));
	assert_true(sc_policy_arc_target(&kc.p) < p);
	sc_policy_destroy(&kc.p);
}

/* ---- request-level helpers ---- */

static void mk(struct sc_dcache *c, const char *spec, uint32_t data,
	       uint32_t meta, uint32_t bs)
{
	struct sc_dc_config cfg = {
		.data_blocks = data, .meta_entries = meta, .block_size = bs,
	};

	assert_int_equal(sc_dcache_create(c, spec, &cfg), 0);
}

static struct sc_dc_res acc(struct sc_dcache *c, uint8_t op, uint64_t addr,
			    uint64_t content, uint32_t parts)
{
	struct sc_dc_req r = {
		.addr = addr, .content = content, .op = op, .parts = parts,
	};
	struct sc_dc_res res;

	sc_dcache_access(c, &r, &res);
	return res;
}

static uint8_t rd(struct sc_dcache *c, uint64_t addr, uint64_t content)
{
	return acc(c, SC_DC_READ, addr, content, 0).kind;
}

static uint8_t wr(struct sc_dcache *c, uint64_t addr, uint64_t content)
{
	return acc(c, SC_DC_WRITE, addr, content, 0).kind;
}

static int event_index(const struct sc_dcache *c, const char *name)
{
	int i;

	for (i = 0; c->ops->events[i]; i++)
		if (!strcmp(c->ops->events[i], name))
			return i;
	fail_msg("no event %s", name);
	return -1;
}

static uint64_t ev(const struct sc_dcache *c, const char *name)
{
	return c->st.events[event_index(c, name)];
}

enum { X = 1000, Y, Z, W, V, Q };

static void registry_rejects_bad_specs(void **state)
{
	static const char *const bad[] = {
		"nosuch", "dlru:0", "dlru:x", "cdac-lru:0", "cdac-lru:50:101",
		"cbbc:4", "acq:0", "lruca", "lruca:maybe", "lruca:exact:0",
		"elru", "arc:1",
	};
	static const char *const good[] = {
		"lru", "elru:16", "arc", "content:lru", "dlru", "darc:2",
		"cdac-lru", "cdac-arc:40:60", "cbbc", "cbbc:0", "acq:50",
		"lruca:exact", "lruca:bloom:8",
	};
	struct sc_dc_config cfg = { .data_blocks = 16 };
	struct sc_dcache c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(sc_dcache_create(&c, bad[i], &cfg),
				 -SC_EINVAL);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(sc_dcache_create(&c, good[i], &cfg), 0);
		sc_dcache_destroy(&c);
	}
}

/* ---- content caches and D-LRU / D-ARC ---- */

static void content_cache_keeps_one_copy_per_content(void **state)
{
	struct sc_dcache c;

	(void)state;
	mk(&c, "lru", 2, 0, 0);
	assert_int_equal(rd(&c, 1, X), SC_DC_MISS);
	assert_int_equal(rd(&c, 2, X), SC_DC_HIT);
	assert_int_equal(rd(&c, 3, X), SC_DC_HIT);
	assert_int_equal(c.st.loads, 1);
	sc_dcache_destroy(&c);
}

static void dlru_many_addresses_one_data_block(void **state)
{
	struct sc_dcache c;
	uint64_t a;

	(void)state;
	mk(&c, "dlru", 2, 8, 0);
	assert_int_equal(rd(&c, 1, X), SC_DC_MISS);
	for (a = 2; a <= 4; a++)
		assert_int_equal(rd(&c, a, X), SC_DC_CONTENT_HIT);
	assert_int_equal(rd(&c, 5, Y), SC_DC_MISS);
	/* Four addresses and two contents fit in two data blocks. */
	for (a = 1; a <= 4; a++)
		assert_int_equal(rd(&c, a, X), SC_DC_HIT);
	assert_int_equal(rd(&c, 5, Y), SC_DC_HIT);
	assert_int_equal(c.st.loads, 2);
	assert_int_equal(wr(&c, 5, Y), SC_DC_SILENT);
	sc_dcache_destroy(&c);
}

static void dlru_evicts_metadata_and_data_separately(void **state)
{
	struct sc_dcache c;

	(void)state;
	/* Metadata for 2 addresses, data for 4 blocks. */
	mk(&c, "dlru", 4, 2, 0);
	rd(&c, 1, X);
	rd(&c, 2, Y);
	rd(&c, 3, Z);		/* address 1 leaves the metadata cache */
	assert_true(sc_dcache_holds(&c, X));	/* its data stays */
	assert_int_equal(rd(&c, 1, X), SC_DC_CONTENT_HIT);
	sc_dcache_destroy(&c);
	/* Metadata for 4, data for 1: data leaves, its address stays. */
	mk(&c, "dlru", 1, 4, 0);
	rd(&c, 1, X);
	rd(&c, 2, Y);
	assert_false(sc_dcache_holds(&c, X));
	assert_int_equal(rd(&c, 1, X), SC_DC_MISS);
	assert_int_equal(c.st.evictions, 2);
	sc_dcache_destroy(&c);
}

static void darc_resists_a_scan_dlru_does_not(void **state)
{
	static const char *const specs[] = { "darc", "dlru" };
	int s;

	(void)state;
	for (s = 0; s < 2; s++) {
		struct sc_dcache c;
		uint64_t a;

		mk(&c, specs[s], 4, 16, 0);
		rd(&c, 1, X);
		rd(&c, 1, X);
		for (a = 100; a < 110; a++)
			rd(&c, a, a);
		assert_int_equal(rd(&c, 1, X) == SC_DC_HIT, s == 0);
		sc_dcache_destroy(&c);
	}
}

/* ---- CDAC ---- */

/*
 * Data for two blocks: X is referenced by two addresses, Y by one, and X
 * is the least recently used data.  A new content needs a free block.
 * D-LRU evicts X (LRU data); CDAC's RCE gives X's addresses another cycle
 * and deletes Y's single reference, so Y's block is freed instead.
 */
static void cdac_rce_frees_single_references_first(void **state)
{
	static const char *const specs[] = { "cdac-lru", "cdac-arc", "dlru" };
	int s;

	(void)state;
	for (s = 0; s < 3; s++) {
		struct sc_dcache c;

		mk(&c, specs[s], 2, 16, 0);
		rd(&c, 1, X);
		rd(&c, 2, X);
		rd(&c, 3, Y);
		rd(&c, 4, Z);
		assert_int_equal(sc_dcache_holds(&c, X), s < 2);
		assert_int_equal(sc_dcache_holds(&c, Y), s == 2);
		if (s < 2) {
			assert_int_equal(ev(&c, "rce_keep"), 2);
			assert_int_equal(ev(&c, "rce_delete_single"), 1);
			assert_int_equal(rd(&c, 1, X), SC_DC_HIT);
			assert_int_equal(rd(&c, 2, X), SC_DC_HIT);
		}
		sc_dcache_destroy(&c);
	}
}

/*
 * Eight metadata entries (data is plentiful): addresses 1..6 hold X.  A
 * first round gives them another cycle with a count of 6; three or four
 * of them are then rewritten elsewhere.  At the next visit, address 1 is
 * deleted when X's count declined by more than the threshold (6 -> 2:
 * 67% > 50%), kept when it did not (6 -> 3: 50%), and kept at 6 -> 2
 * under a 70% threshold.
 */
static void cdac_rce_deletes_on_declining_counts(void **state)
{
	static const struct {
		const char *spec;
		int rewrites;
		bool deleted;
	} cases[] = {
		{ "cdac-lru", 4, true },
		{ "cdac-lru", 3, false },
		{ "cdac-lru:70", 4, false },
	};
	size_t k;

	(void)state;
	for (k = 0; k < 3; k++) {
		struct sc_dcache c;
		uint64_t a;
		int i;

		mk(&c, cases[k].spec, 64, 8, 0);
		for (a = 1; a <= 6; a++)
			rd(&c, a, X);
		rd(&c, 7, Y);
		rd(&c, 8, Q);
		rd(&c, 9, Z);	/* round 1: 1..6 go round (count 6), 7 goes */
		assert_int_equal(ev(&c, "rce_keep"), 6);
		for (i = 0; i < cases[k].rewrites; i++)
			assert_int_equal(wr(&c, 6 - (uint64_t)i, Z),
					 SC_DC_CONTENT_HIT);
		rd(&c, 10, W);	/* deletes 8 (Q, single) */
		rd(&c, 11, V);	/* visits address 1 again */
		assert_int_equal(rd(&c, 1, X) == SC_DC_HIT, !cases[k].deleted);
		assert_int_equal(ev(&c, "rce_delete_declined") > 0,
				 cases[k].deleted);
		sc_dcache_destroy(&c);
	}
}

/*
 * 16 KiB blocks (four 4 KiB parts), two metadata entries.  Address 1
 * touched half its parts, address 2 a quarter.  A third address needs
 * room: BHI finds 1 hot (flag set, another cycle) and 2 cold, which RCE
 * deletes.  With 4 KiB blocks (BHI off) address 1 goes first.  Left
 * alone, address 1 comes back with its flag set and is cold; touched in
 * between, it is hot again.
 */
static void cdac_bhi_bitmaps_and_the_idle_flag(void **state)
{
	int touch;

	(void)state;
	for (touch = 0; touch < 2; touch++) {
		struct sc_dcache c;

		mk(&c, "cdac-lru", 64, 2, 16384);
		acc(&c, SC_DC_READ, 1, X, 0x3);
		acc(&c, SC_DC_READ, 2, Y, 0x1);
		acc(&c, SC_DC_READ, 3, Z, 0x1);
		assert_int_equal(ev(&c, "bhi_keep"), 1);
		assert_int_equal(acc(&c, SC_DC_READ, 2, Y, 0x1).kind,
				 SC_DC_CONTENT_HIT);	/* 2 was deleted */
		/* Now 3 was deleted for 2; order: 1, 2. */
		if (touch)
			acc(&c, SC_DC_READ, 1, X, 0x4);
		acc(&c, SC_DC_READ, 4, W, 0x1);
		assert_int_equal(acc(&c, SC_DC_READ, 1, X, 0x1).kind ==
				 SC_DC_HIT, touch == 1);
		sc_dcache_destroy(&c);
	}
	{
		struct sc_dcache c;

		mk(&c, "cdac-lru", 64, 2, 4096);
		acc(&c, SC_DC_READ, 1, X, 0);
		acc(&c, SC_DC_READ, 2, Y, 0);
		acc(&c, SC_DC_READ, 3, Z, 0);
		assert_int_equal(ev(&c, "bhi_keep"), 0);
		assert_int_equal(rd(&c, 1, X), SC_DC_CONTENT_HIT);
		sc_dcache_destroy(&c);
	}
}

static void cdac_never_spins_on_shared_blocks(void **state)
{
	struct sc_dcache c;
	uint64_t a;

	(void)state;
	/* Every block shared by two addresses, counts never declining. */
	mk(&c, "cdac-lru", 4, 64, 0);
	for (a = 0; a < 64; a++)
		rd(&c, a, X + a / 2);
	assert_true(ev(&c, "forced_delete") > 0);
	assert_true(c.ops->blocks(&c) <= 4);
	sc_dcache_destroy(&c);
}

/* ---- CBBC ---- */

static void cbbc_event_table(void **state)
{
	static const char *const names[] = {
		"read_hit", "read_miss_content_hit", "read_miss_content_miss",
		"write_hit_multi_content_miss", "write_miss_content_miss",
		"write_hit_multi_content_hit", "write_miss_content_hit",
		"write_hit_private", "silent_write",
	};
	struct sc_dcache c;
	size_t i;

	(void)state;
	mk(&c, "cbbc", 64, 0, 0);
	assert_int_equal(rd(&c, 1, X), SC_DC_MISS);	/* read miss, content miss */
	assert_int_equal(rd(&c, 1, X), SC_DC_HIT);	/* read hit */
	assert_int_equal(rd(&c, 2, X), SC_DC_CONTENT_HIT); /* content hit */
	assert_int_equal(wr(&c, 1, X), SC_DC_SILENT);	/* silent write */
	assert_int_equal(wr(&c, 3, Y), SC_DC_MISS);	/* LUN miss, content miss */
	assert_int_equal(wr(&c, 4, Y), SC_DC_CONTENT_HIT); /* LUN miss, content hit */
	assert_int_equal(wr(&c, 3, Z), SC_DC_MISS);	/* Y shared: multi, content miss */
	assert_int_equal(wr(&c, 4, X), SC_DC_CONTENT_HIT); /* Y private to 4 */
	assert_false(sc_dcache_holds(&c, Y));		/* ... and dropped */
	assert_int_equal(wr(&c, 1, Z), SC_DC_CONTENT_HIT); /* X shared, Z cached */
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (ev(&c, names[i]) != 1)
			fail_msg("event %s counted %llu times", names[i],
				 (unsigned long long)ev(&c, names[i]));
	/* A private write with no copy elsewhere rewrites in place. */
	assert_int_equal(wr(&c, 5, V), SC_DC_MISS);
	assert_int_equal(wr(&c, 5, W), SC_DC_MISS);
	assert_int_equal(ev(&c, "write_hit_private"), 2);
	assert_false(sc_dcache_holds(&c, V));
	assert_int_equal(rd(&c, 5, W), SC_DC_HIT);
	assert_int_equal(c.st.evictions, 0);
	sc_dcache_destroy(&c);
}

static void cbbc_references_leave_in_lru_order(void **state)
{
	struct sc_dcache c;
	uint64_t a;

	(void)state;
	/* Two blocks of space: one content read through many addresses. */
	mk(&c, "cbbc", 2, 0, 0);
	for (a = 1; a <= 1000; a++)
		rd(&c, a, X);
	assert_true(sc_dcache_holds(&c, X));
	assert_int_equal(rd(&c, 1000, X), SC_DC_HIT);
	assert_int_equal(rd(&c, 999, X), SC_DC_HIT);
	assert_int_equal(rd(&c, 1, X), SC_DC_CONTENT_HIT);
	assert_int_equal(c.st.loads, 1);
	sc_dcache_destroy(&c);
}

static void cbbc_hash_table_share_comes_from_data_space(void **state)
{
	struct sc_dcache ideal, paper;
	uint64_t a;

	(void)state;
	mk(&ideal, "cbbc:0", 64, 0, 0);
	mk(&paper, "cbbc", 64, 0, 0);
	for (a = 0; a < 200; a++) {
		rd(&ideal, a, a);
		rd(&paper, a, a);
	}
	assert_true(paper.ops->blocks(&paper) < ideal.ops->blocks(&ideal));
	assert_true(paper.ops->blocks(&paper) <= 63);
	assert_true(paper.st.evictions > ideal.st.evictions);
	sc_dcache_destroy(&ideal);
	sc_dcache_destroy(&paper);
}

/* ---- ACQ ---- */

static void acq_admits_by_frequency(void **state)
{
	struct sc_dcache c;
	struct sc_dc_res r;

	(void)state;
	mk(&c, "acq", 2, 0, 0);
	assert_true(acc(&c, SC_DC_READ, 0, X, 0).admitted);	/* room */
	assert_true(acc(&c, SC_DC_READ, 0, Y, 0).admitted);
	assert_int_equal(rd(&c, 0, X), SC_DC_HIT);	/* X: 2 */
	assert_int_equal(rd(&c, 0, X), SC_DC_HIT);	/* X: 3 */
	assert_int_equal(rd(&c, 0, Y), SC_DC_HIT);	/* Y: 2 */
	r = acc(&c, SC_DC_READ, 0, Z, 0);		/* Z: 1 < 2 */
	assert_int_equal(r.kind, SC_DC_MISS);
	assert_false(r.admitted);
	assert_false(sc_dcache_holds(&c, Z));
	r = acc(&c, SC_DC_READ, 0, Z, 0);		/* Z: 2 >= 2: replaces Y */
	assert_true(r.admitted);
	assert_int_equal(r.evicted, 1);
	assert_true(sc_dcache_holds(&c, Z));
	assert_false(sc_dcache_holds(&c, Y));
	assert_true(sc_dcache_holds(&c, X));
	assert_int_equal(c.st.loads, 3);
	assert_int_equal(c.st.reads, 7);
	sc_dcache_destroy(&c);
}

static void acq_access_queue_is_bounded_lru(void **state)
{
	int big;

	(void)state;
	for (big = 0; big < 2; big++) {
		struct sc_dcache c;

		/* CQ of 2; AQ of 1 (50%) or of 4 (200%). */
		mk(&c, big ? "acq:200" : "acq:50", 2, 0, 0);
		rd(&c, 0, X);
		rd(&c, 0, X);
		rd(&c, 0, Y);
		rd(&c, 0, Y);		/* CQ: X 2, Y 2 */
		rd(&c, 0, Z);		/* Z 1 in AQ */
		rd(&c, 0, W);		/* W 1 in AQ: Z leaves a 1-entry AQ */
		/* Z again: count 2 if remembered (admitted), else 1. */
		assert_int_equal(acc(&c, SC_DC_READ, 0, Z, 0).admitted, big);
		sc_dcache_destroy(&c);
	}
}

/* ---- LRUCA ---- */

static void lruca_prefers_blocks_the_other_level_holds(void **state)
{
	static const char *const specs[] = {
		"lruca:exact", "lruca:bloom", "lruca:exact:1", "lru",
	};
	int s;

	(void)state;
	for (s = 0; s < 4; s++) {
		struct sc_dcache c;
		bool prefers = s < 2;

		mk(&c, specs[s], 3, 0, 0);
		rd(&c, 0, X);
		rd(&c, 0, Y);
		rd(&c, 0, Z);
		sc_dcache_peer(&c, Y, true);
		sc_dcache_peer(&c, X, true);
		sc_dcache_peer(&c, X, false);	/* X left the other level */
		rd(&c, 0, W);
		assert_int_equal(sc_dcache_holds(&c, X), prefers);
		assert_int_equal(sc_dcache_holds(&c, Y), !prefers);
		if (c.ops->events)
			assert_int_equal(ev(&c, "evict_duplicate"), prefers);
		sc_dcache_destroy(&c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(arc_resists_a_scan_lru_does_not),
		cmocka_unit_test(arc_ghost_hits_adapt_the_target),
		cmocka_unit_test(registry_rejects_bad_specs),
		cmocka_unit_test(content_cache_keeps_one_copy_per_content),
		cmocka_unit_test(dlru_many_addresses_one_data_block),
		cmocka_unit_test(dlru_evicts_metadata_and_data_separately),
		cmocka_unit_test(darc_resists_a_scan_dlru_does_not),
		cmocka_unit_test(cdac_rce_frees_single_references_first),
		cmocka_unit_test(cdac_rce_deletes_on_declining_counts),
		cmocka_unit_test(cdac_bhi_bitmaps_and_the_idle_flag),
		cmocka_unit_test(cdac_never_spins_on_shared_blocks),
		cmocka_unit_test(cbbc_event_table),
		cmocka_unit_test(cbbc_references_leave_in_lru_order),
		cmocka_unit_test(cbbc_hash_table_share_comes_from_data_space),
		cmocka_unit_test(acq_admits_by_frequency),
		cmocka_unit_test(acq_access_queue_is_bounded_lru),
		cmocka_unit_test(lruca_prefers_blocks_the_other_level_holds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
