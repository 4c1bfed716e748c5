// SPDX-License-Identifier: BSD-2-Clause
/*
 * The cache tracker: exact answers while it has room, CLOCK forgetting when
 * full (used entries survive), a host's quota, lazy host drops across
 * generation wraps, and its memory per entry; a randomized run against a
 * plain model.  Runs under ASan/UBSan too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <seacache/prng.h>

#include "tracker.h"

static struct sc_hash hash_of(uint32_t n)
{
	struct sc_hash h;
	struct sc_prng r;

	sc_prng_seed(&r, n);
	sc_prng_fill(&r, h.b, sizeof(h.b));
	return h;
}

static void test_hold_evict_holders(void **state)
{
	struct sc_tracker *t = sc_tracker_new(1024, 100);
	struct sc_hash a = hash_of(1), b = hash_of(2), a2 = a;
	struct sc_tracker_stats st;
	uint16_t who[8];

	(void)state;
	assert_non_null(t);
	sc_tracker_note_held(t, 1, &a);
	sc_tracker_note_held(t, 2, &a);
	sc_tracker_note_held(t, 3, &a);
	sc_tracker_note_held(t, 1, &b);
	sc_tracker_note_held(t, 1, &b);		/* again: one entry */
	assert_true(sc_tracker_holds(t, 1, &a));
	assert_false(sc_tracker_holds(t, 2, &b));
	/* hashes compare in full: one bit off is another content */
	a2.b[31] ^= 1;
	assert_false(sc_tracker_holds(t, 1, &a2));
	assert_int_equal(sc_tracker_holders(t, &a, 2, who, 8), 2);
	assert_true((who[0] == 1 && who[1] == 3) || (who[0] == 3 && who[1] == 1));
	assert_int_equal(sc_tracker_holders(t, &a, 0, who, 1), 1);
	sc_tracker_note_evicted(t, 3, &a);
	sc_tracker_note_evicted(t, 3, &a);	/* repeated notice: ignored */
	sc_tracker_note_evicted(t, 4, &b);	/* never held: ignored */
	assert_false(sc_tracker_holds(t, 3, &a));
	assert_int_equal(sc_tracker_holders(t, &a, 0, who, 8), 2);
	sc_tracker_drop_host(t, 1);
	assert_false(sc_tracker_holds(t, 1, &a));
	assert_false(sc_tracker_holds(t, 1, &b));
	assert_true(sc_tracker_holds(t, 2, &a));
	sc_tracker_get_stats(t, &st);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.noted, 4);
	assert_int_equal(st.evicted, 1);
	assert_int_equal(st.forgotten, 0);
	sc_tracker_free(t);
}

/* Full: the entries used since the last sweep outlive the others. */
static void test_clock_forgets_unused(void **state)
{
	struct sc_tracker *t = sc_tracker_new(256, 100);
	struct sc_tracker_stats st;
	struct sc_hash h;
	unsigned int kept = 0;

	(void)state;
	for (uint32_t i = 0; i < 256; i++) {
		h = hash_of(i);
		sc_tracker_note_held(t, 7, &h);
	}
	/* one sweep clears every reference bit; then use the even ones */
	h = hash_of(1000);
	sc_tracker_note_held(t, 7, &h);
	for (uint32_t i = 0; i < 256; i += 2) {
		h = hash_of(i);
		if (sc_tracker_holds(t, 7, &h))
			kept++;
	}
	for (uint32_t i = 1001; i < 1001 + 100; i++) {
		h = hash_of(i);
		sc_tracker_note_held(t, 7, &h);
	}
	for (uint32_t i = 0; i < 256; i += 2) {
		h = hash_of(i);
		kept -= sc_tracker_holds(t, 7, &h);
	}
	assert_int_equal(kept, 0);	/* every used one survived */
	sc_tracker_get_stats(t, &st);
	assert_int_equal(st.entries, 256);
	assert_int_equal(st.forgotten, 101);
	sc_tracker_free(t);
}

/* The per-entry memory the CSI service issue sets: at most 48 bytes. */
static void test_memory_per_entry(void **state)
{
	uint32_t sizes[] = { 1000, 4096, 100000, 1u << 20 };
	struct sc_tracker_stats st;

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct sc_tracker *t = sc_tracker_new(sizes[i], 100);

		assert_non_null(t);
		sc_tracker_get_stats(t, &st);
		print_message("%u entries: %.1f bytes per entry\n", sizes[i],
			      (double)st.bytes / (double)st.capacity);
		assert_true(st.bytes <= 48 * st.capacity + 4096);
		sc_tracker_free(t);
	}
}

/*
 * A host at its quota forgets its own unused entries, never another
 * host's, and keeps the ones it used since its hand last passed.
 */
static void test_host_quota(void **state)
{
	struct sc_tracker *t = sc_tracker_new(1000, 10);	/* quota 100 */
	struct sc_tracker_stats st;
	struct sc_hash h;
	unsigned int kept = 0;

	(void)state;
	assert_non_null(t);
	sc_tracker_get_stats(t, &st);
	assert_int_equal(st.host_quota, 100);
	for (uint32_t i = 0; i < 50; i++) {
		h = hash_of(100000 + i);
		sc_tracker_note_held(t, 2, &h);
	}
	for (uint32_t i = 0; i < 100; i++) {
		h = hash_of(i);
		sc_tracker_note_held(t, 1, &h);
	}
	/* one new entry: the hand's sweep clears every reference bit */
	h = hash_of(1000);
	sc_tracker_note_held(t, 1, &h);
	for (uint32_t i = 0; i < 100; i += 2) {
		h = hash_of(i);
		kept += sc_tracker_holds(t, 1, &h);
	}
	for (uint32_t i = 1001; i < 1001 + 40; i++) {
		h = hash_of(i);
		sc_tracker_note_held(t, 1, &h);
	}
	for (uint32_t i = 0; i < 100; i += 2) {
		h = hash_of(i);
		kept -= sc_tracker_holds(t, 1, &h);
	}
	assert_int_equal(kept, 0);	/* every used one survived */
	assert_int_equal(sc_tracker_host_entries(t, 1), 100);
	assert_int_equal(sc_tracker_host_entries(t, 2), 50);
	for (uint32_t i = 0; i < 50; i++) {
		h = hash_of(100000 + i);
		assert_true(sc_tracker_holds(t, 2, &h));
	}
	sc_tracker_get_stats(t, &st);
	assert_int_equal(st.entries, 150);
	assert_int_equal(st.over_quota, 41);
	assert_int_equal(st.forgotten, 0);
	sc_tracker_free(t);
}

/*
 * Dropping a host is lazy: its entries answer nothing at once, their
 * space comes back, and none returns when the slot's generation wraps.
 */
static void test_drop_is_lazy_and_final(void **state)
{
	struct sc_tracker *t = sc_tracker_new(256, 100);
	struct sc_tracker_stats st;
	struct sc_hash h, other = hash_of(999999);
	uint16_t who[4];

	(void)state;
	sc_tracker_note_held(t, 3, &other);
	for (uint32_t round = 0; round < 33000; round++) {
		h = hash_of(round % 500);
		sc_tracker_note_held(t, 9, &h);
		if (round % 3 == 0) {
			h = hash_of(round % 500 + 1);
			sc_tracker_note_held(t, 9, &h);
		}
		assert_int_equal(sc_tracker_holders(t, &other, 3, who, 4), 0);
		sc_tracker_drop_host(t, 9);
		assert_false(sc_tracker_holds(t, 9, &h));
		assert_int_equal(sc_tracker_host_entries(t, 9), 0);
	}
	for (uint32_t c = 0; c < 501; c++) {
		h = hash_of(c);
		assert_false(sc_tracker_holds(t, 9, &h));
		assert_int_equal(sc_tracker_holders(t, &h, 0, who, 4), 0);
	}
	assert_true(sc_tracker_holds(t, 3, &other));
	sc_tracker_get_stats(t, &st);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.forgotten, 0);	/* dead entries went first */
	sc_tracker_free(t);
}

/* Random notes, evictions and drops against a plain table of pairs. */
#define HOSTS 8
#define CONTENTS 3000
static uint8_t model[HOSTS + 1][CONTENTS];

static void test_random_against_model(void **state)
{
	struct sc_tracker *t = sc_tracker_new(HOSTS * CONTENTS, 100);
	struct sc_tracker_stats st;
	uint64_t total = 0;
	struct sc_prng r;
	uint16_t who[HOSTS];

	(void)state;
	memset(model, 0, sizeof(model));
	sc_prng_seed(&r, 42);
	for (int op = 0; op < 400000; op++) {
		uint16_t host = (uint16_t)(1 + sc_prng_below(&r, HOSTS));
		uint32_t c = sc_prng_below(&r, CONTENTS);
		struct sc_hash h = hash_of(c);
		uint32_t what = sc_prng_below(&r, 1000);

		if (what < 500) {
			sc_tracker_note_held(t, host, &h);
			model[host][c] = 1;
		} else if (what < 800) {
			sc_tracker_note_evicted(t, host, &h);
			model[host][c] = 0;
		} else if (what < 999) {
			unsigned int n = sc_tracker_holders(t, &h, host, who, HOSTS);
			unsigned int want = 0;

			assert_int_equal(sc_tracker_holds(t, host, &h),
					 model[host][c]);
			for (uint16_t o = 1; o <= HOSTS; o++)
				want += o != host && model[o][c];
			assert_int_equal(n, want);
			for (unsigned int i = 0; i < n; i++)
				assert_true(model[who[i]][c]);
		} else {
			sc_tracker_drop_host(t, host);
			memset(model[host], 0, CONTENTS);
		}
	}
	for (uint16_t host = 1; host <= HOSTS; host++) {
		uint32_t want = 0;

		for (uint32_t c = 0; c < CONTENTS; c++)
			want += model[host][c];
		assert_int_equal(sc_tracker_host_entries(t, host), want);
		total += want;
	}
	sc_tracker_get_stats(t, &st);
	assert_int_equal(st.entries, total);
	sc_tracker_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hold_evict_holders),
		cmocka_unit_test(test_clock_forgets_unused),
		cmocka_unit_test(test_memory_per_entry),
		cmocka_unit_test(test_host_quota),
		cmocka_unit_test(test_drop_is_lazy_and_final),
		cmocka_unit_test(test_random_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
