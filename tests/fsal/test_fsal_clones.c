// SPDX-License-Identifier: BSD-2-Clause
/*
 * Clones: N copies of a generated 64 MiB "image" (seeded: mostly unique
 * blocks, some zero runs, some blocks repeated) written as separate files
 * over NFSv3.  FSAL_DEDUP must store about one image (physical <= 1.1 x the
 * image, from `seacachectl stats --json STORE`); after the clones are
 * overwritten, truncated and removed and `seacachectl gc STORE` ran, the
 * physical usage must come back down.  Against FSAL_VFS the same I/O runs
 * and the space the server reports is printed, without the dedup assertions.
 *
 * The store applies reference-count changes in the background (every
 * Housekeeping_Interval, and when ganesha stops), and a running server also
 * reclaims dead chunks by itself.  seacachectl runs with ganesha stopped
 * (nh_seacachectl_run), so every count it reports is exact, and the test
 * asserts exact counts: distinct chunks, mapped blocks, and the chunks that
 * died (reclaimable_bytes + reclaimed_bytes, which does not depend on
 * whether the server or `seacachectl gc` punched them out).  Disk space is
 * container_bytes (the containers' allocated blocks).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nfs_harness.h"

#define SEED 0xc10e5ull
#define D "/clones"
#define BLK 4096u

static size_t img_size = 64 * NH_MIB;
static int nclones = 8;
static unsigned char *img;
static uint64_t img_unique_blocks, img_zero_blocks, img_repeat_blocks;
static uint64_t img_nonzero_blocks;	/* blocks not all zero (zero copies too) */
static struct nfs_context *v3;

static bool is_zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static void make_image(void)
{
	size_t nblk = img_size / BLK;
	struct sc_prng r;

	img = malloc(img_size);
	assert_non_null(img);
	sc_prng_seed(&r, SEED);
	for (size_t b = 0; b < nblk; b++) {
		unsigned char *p = img + b * BLK;
		uint64_t x = sc_prng_below(&r, 1000);

		if (x < 4 && b + 1 < nblk) {
			/* a zero run of 1..64 blocks */
			size_t run = 1 + sc_prng_below(&r, 64);

			if (b + run > nblk)
				run = nblk - b;
			memset(p, 0, run * BLK);
			img_zero_blocks += run;
			b += run - 1;
		} else if (x < 100 && b > 0) {
			/* a copy of an earlier block (zero or not) */
			memcpy(p, img + sc_prng_below(&r, (uint32_t)b) * BLK, BLK);
			img_repeat_blocks++;
		} else {
			sc_prng_fill(&r, p, BLK);
			img_unique_blocks++;
		}
	}
	for (size_t b = 0; b < nblk; b++)
		img_nonzero_blocks += !is_zero(img + b * BLK, BLK);
	printf("# image: %zu MiB, %" PRIu64 " unique blocks, %" PRIu64 " zero blocks, %" PRIu64
	       " repeated blocks, %" PRIu64 " blocks not zero\n",
	       img_size / NH_MIB, img_unique_blocks, img_zero_blocks, img_repeat_blocks,
	       img_nonzero_blocks);
}

static void clone_path(char *buf, size_t len, int i)
{
	snprintf(buf, len, D "/img-%d.raw", i);
}

struct usage {
	bool have;
	uint64_t logical, physical, chunks, mapped, holes, reclaimable, reclaimed;
	uint64_t container;	/* disk space of the containers */
	double ratio;
};

/* Chunks that ever died: dead now (reclaimable) or already punched out. */
static uint64_t died(const struct usage *u)
{
	return (u->reclaimable + u->reclaimed) / BLK;
}

/* What the store (DEDUP) or the server (VFS: the files' "used") reports. */
static struct usage measure(const char *when)
{
	struct usage u = { 0 };
	char *out = NULL;

	if (!nh_is_dedup()) {
		for (int i = 0; i < nclones; i++) {
			struct nfs_stat_64 st;
			char p[64];

			clone_path(p, sizeof(p), i);
			if (nfs_stat64(v3, p, &st) == 0) {
				u.logical += st.nfs_size;
				u.physical += st.nfs_used;
			}
		}
		printf("# %s: VFS reports %.1f MiB used for %.1f MiB of files (%.2f x one image)\n",
		       when, u.physical / (double)NH_MIB, u.logical / (double)NH_MIB,
		       u.physical / (double)img_size);
		return u;
	}
	if (!nh_seacachectl())
		fail_msg("FSAL_DEDUP clone test needs seacachectl (`seacachectl stats --json STORE`); "
			 "not built at '%s' (set SEACACHE_SEACACHECTL)",
			 getenv("SEACACHECTL") ? getenv("SEACACHECTL") : "");
	nh_umount(v3);
	v3 = NULL;
	if (nh_seacachectl_run("stats --json", &out) != 0)
		fail_msg("seacachectl stats --json failed (%s)", when);
	v3 = nh_mount(3);
	{
		uint64_t bs = 0;

		if (nh_json_u64(out, "block_size", &bs) ||
		    nh_json_u64(out, "logical_bytes", &u.logical) ||
		    nh_json_u64(out, "physical_bytes", &u.physical) ||
		    nh_json_double(out, "dedup_ratio", &u.ratio) ||
		    nh_json_u64(out, "chunks", &u.chunks) ||
		    nh_json_u64(out, "mapped_blocks", &u.mapped) ||
		    nh_json_u64(out, "holes", &u.holes) ||
		    nh_json_u64(out, "reclaimable_bytes", &u.reclaimable) ||
		    nh_json_u64(out, "reclaimed_bytes", &u.reclaimed) ||
		    nh_json_u64(out, "container_bytes", &u.container))
			fail_msg("seacachectl stats --json: a field is missing (block_size, "
				 "logical_bytes, physical_bytes, dedup_ratio, chunks, mapped_blocks, "
				 "holes, reclaimable_bytes, reclaimed_bytes, container_bytes) in: %s",
				 out);
		if (bs != BLK)
			fail_msg("store block size %" PRIu64 ", the test assumes %u", bs, BLK);
		if (u.physical != u.chunks * BLK)
			fail_msg("%s: physical_bytes %" PRIu64 " is not chunks (%" PRIu64
				 ") x %u", when, u.physical, u.chunks, BLK);
	}
	u.have = true;
	printf("# %s: logical %.1f MiB, physical %.1f MiB (%.3f x one image), dedup ratio %.2f, "
	       "%" PRIu64 " chunks, %" PRIu64 " mapped blocks, %" PRIu64 " holes, "
	       "%.1f MiB reclaimable, %.1f MiB reclaimed so far, containers %.1f MiB on disk\n",
	       when, u.logical / (double)NH_MIB, u.physical / (double)NH_MIB,
	       u.physical / (double)img_size, u.ratio, u.chunks, u.mapped, u.holes,
	       u.reclaimable / (double)NH_MIB, u.reclaimed / (double)NH_MIB,
	       u.container / (double)NH_MIB);
	free(out);
	return u;
}

static void gc(void)
{
	char *out = NULL;

	if (!nh_is_dedup())
		return;
	nh_umount(v3);
	v3 = NULL;
	if (nh_seacachectl_run("gc", &out) != 0)
		fail_msg("seacachectl gc failed: %s", out ? out : "");
	if (out && *out)
		printf("# seacachectl gc: %s", out);
	free(out);
	v3 = nh_mount(3);
}

static int setup(void **state)
{
	(void)state;
	if (getenv("FSAL_CLONES"))
		nclones = atoi(getenv("FSAL_CLONES"));
	if (getenv("FSAL_IMAGE_MIB"))
		img_size = strtoull(getenv("FSAL_IMAGE_MIB"), NULL, 10) * NH_MIB;
	return nh_suite_setup(D, &v3, NULL);
}

static int teardown(void **state)
{
	(void)state;
	nh_suite_teardown(&v3, NULL);
	free(img);
	return 0;
}

static void check_clone(int i, size_t len)
{
	char p[64];

	clone_path(p, sizeof(p), i);
	if (nh_check_file(v3, p, img, len) != 0)
		fail_msg("clone %d does not read back", i);
}

static void test_clones(void **state)
{
	size_t piece = nfs_get_writemax(v3);
	struct usage u0, u1, u2, u2b, u3, u4;
	uint64_t nfresh = 0, trunc_new = 0, mapped3 = 0;
	size_t trunc_size = img_size / 2 + 1000, trunc_lbn = trunc_size / BLK;
	size_t trunc_tail = trunc_size % BLK;
	unsigned char *fresh;
	char p[64];

	(void)state;
	make_image();
	u0 = measure("empty export");
	for (int i = 0; i < nclones; i++) {
		clone_path(p, sizeof(p), i);
		assert_int_equal(nh_write_file(v3, p, img, img_size, piece), 0);
		printf("# wrote clone %d\n", i);
	}
	/* every clone byte for byte: first and last whole, the rest sampled */
	check_clone(0, img_size);
	check_clone(nclones - 1, img_size);
	{
		struct sc_prng r;
		unsigned char buf[BLK];

		sc_prng_seed(&r, SEED + 1);
		for (int k = 0; k < 2000; k++) {
			int i = (int)sc_prng_below(&r, (uint32_t)nclones);
			size_t off = sc_prng_below(&r, (uint32_t)(img_size - BLK + 1));
			struct nfsfh *fh;
			size_t got;

			clone_path(p, sizeof(p), i);
			assert_int_equal(nfs_open(v3, p, O_RDONLY, &fh), 0);
			assert_int_equal(nh_pread_all(v3, fh, off, buf, BLK, BLK, &got), 0);
			nfs_close(v3, fh);
			assert_int_equal(got, BLK);
			if (memcmp(buf, img + off, BLK))
				fail_msg("clone %d: 4 KiB at %zu differ", i, off);
		}
	}

	u1 = measure("after writing the clones");
	if (u1.have) {
		double per_image = (double)(u1.physical - u0.physical) / (double)img_size;

		printf("# %d clones of a %zu MiB image take %.3f x one image; dedup ratio %.2f\n",
		       nclones, img_size / NH_MIB, per_image, u1.ratio);
		if (u1.physical - u0.physical > img_size + img_size / 10)
			fail_msg("%d clones use %" PRIu64 " bytes, more than 1.1 x one image (%zu)",
				 nclones, u1.physical - u0.physical, img_size);
		/* one chunk per distinct non-zero content, zero blocks are holes */
		if (u1.chunks - u0.chunks != img_unique_blocks)
			fail_msg("%" PRIu64 " chunks stored for %d clones, want one per distinct "
				 "block of the image (%" PRIu64 ")",
				 u1.chunks - u0.chunks, nclones, img_unique_blocks);
		if (u1.mapped - u0.mapped != (uint64_t)nclones * img_nonzero_blocks)
			fail_msg("%" PRIu64 " mapped blocks, want %d x %" PRIu64 " (zero blocks are holes)",
				 u1.mapped - u0.mapped, nclones, img_nonzero_blocks);
		if (died(&u1) != died(&u0))
			fail_msg("writing new files killed %" PRIu64 " chunks",
				 died(&u1) - died(&u0));
	}

	/* overwrite clone 1 with new data, truncate 2 (to 0) and 3 (to half
	 * and 1000 bytes), remove the others */
	fresh = malloc(img_size);
	assert_non_null(fresh);
	nh_fill_seeded(fresh, img_size, SEED + 2);
	for (size_t b = 0; b < img_size / BLK; b++)
		nfresh += !is_zero(fresh + b * BLK, BLK);
	if (nclones > 1) {
		clone_path(p, sizeof(p), 1);
		assert_int_equal(nh_write_file(v3, p, fresh, img_size, piece), 0);
		if (nh_check_file(v3, p, fresh, img_size) != 0)
			fail_msg("overwritten clone 1 does not read back");
	} else {
		nfresh = 0;
	}
	if (nclones > 2) {
		clone_path(p, sizeof(p), 2);
		assert_int_equal(nfs_truncate(v3, p, 0), 0);
	}
	if (nclones > 3) {
		const unsigned char *t = img + trunc_lbn * BLK;

		clone_path(p, sizeof(p), 3);
		assert_int_equal(nfs_truncate(v3, p, trunc_size), 0);
		check_clone(3, trunc_size);
		/* the last block keeps its head, its tail becomes zeros: new
		 * content unless it is all zero (a hole) or its tail was zero */
		for (size_t b = 0; b < trunc_lbn; b++)
			mapped3 += !is_zero(img + b * BLK, BLK);
		if (trunc_tail && !is_zero(t, trunc_tail)) {
			mapped3++;
			trunc_new = !is_zero(t + trunc_tail, BLK - trunc_tail);
		}
	}
	for (int i = 4; i < nclones; i++) {
		clone_path(p, sizeof(p), i);
		assert_int_equal(nfs_unlink(v3, p), 0);
	}
	check_clone(0, img_size);
	u2 = measure("after overwrite/truncate/unlink");
	if (u2.have) {
		uint64_t want_mapped = img_nonzero_blocks + nfresh + mapped3;

		if (u2.physical > u0.physical + 2 * img_size + img_size / 5)
			fail_msg("one image plus one overwrite use %" PRIu64 " bytes, more than 2.2 images",
				 u2.physical - u0.physical);
		/* everything dropped so far is still held by clone 0 */
		if (u2.chunks - u0.chunks != img_unique_blocks + nfresh + trunc_new)
			fail_msg("%" PRIu64 " chunks after overwrite/truncate/unlink, want %" PRIu64
				 " (image) + %" PRIu64 " (new data) + %" PRIu64 " (truncated block)",
				 u2.chunks - u0.chunks, img_unique_blocks, nfresh, trunc_new);
		if (died(&u2) != died(&u1))
			fail_msg("%" PRIu64 " chunks died although clone 0 still holds every "
				 "dropped block", died(&u2) - died(&u1));
		if (u2.mapped - u0.mapped != want_mapped)
			fail_msg("%" PRIu64 " mapped blocks, want %" PRIu64, u2.mapped - u0.mapped,
				 want_mapped);
	}

	/* drop the overwritten clone: its new data is garbage now */
	if (nclones > 1) {
		clone_path(p, sizeof(p), 1);
		assert_int_equal(nfs_unlink(v3, p), 0);
	}
	u2b = measure("after removing the new data, before gc");
	if (u2b.have) {
		/* with ganesha stopped the reference counts are exact: every
		 * chunk of the new data died (the server may have punched
		 * some out already: dead or reclaimed, both count) */
		if (u2.chunks - u2b.chunks != nfresh || died(&u2b) - died(&u2) != nfresh)
			fail_msg("removing %" PRIu64 " blocks of new data: chunks %" PRIu64
				 " -> %" PRIu64 ", %" PRIu64 " died (want %" PRIu64 " fewer, %" PRIu64
				 " died)", nfresh, u2.chunks, u2b.chunks, died(&u2b) - died(&u2),
				 nfresh, nfresh);
	}
	gc();
	u3 = measure("after removing the new data and gc");
	if (u3.have) {
		uint64_t freed = u2.container > u3.container ? u2.container - u3.container : 0;

		if (u3.physical > u0.physical + img_size + img_size / 10)
			fail_msg("after gc: %" PRIu64 " bytes, more than 1.1 x one image",
				 u3.physical - u0.physical);
		if (u3.chunks != u2b.chunks || died(&u3) != died(&u2b))
			fail_msg("gc changed the live chunks: %" PRIu64 " -> %" PRIu64
				 " chunks, %" PRIu64 " -> %" PRIu64 " died",
				 u2b.chunks, u3.chunks, died(&u2b), died(&u3));
		if (u3.reclaimable != 0)
			fail_msg("after gc %" PRIu64 " bytes are still reclaimable", u3.reclaimable);
		/* the dead chunks' space went back to the file system */
		if (freed < nfresh * BLK - nfresh * BLK / 10)
			fail_msg("gc returned %" PRIu64 " bytes of container space (%" PRIu64
				 " -> %" PRIu64 "), want about %" PRIu64,
				 freed, u2.container, u3.container, nfresh * BLK);
	}
	check_clone(0, img_size);
	if (nclones > 3)
		check_clone(3, trunc_size);

	/* everything removed: back to the empty store */
	assert_int_equal(nh_rm_rf(v3, D), 0);
	gc();
	u4 = measure("after removing everything and gc");
	if (u4.have) {
		if (u4.physical > u0.physical + img_size / 20)
			fail_msg("empty again but %" PRIu64 " bytes used (%" PRIu64 " at the start)",
				 u4.physical, u0.physical);
		if (u4.chunks != u0.chunks || u4.mapped != u0.mapped || u4.reclaimable != 0)
			fail_msg("empty again but %" PRIu64 " chunks, %" PRIu64 " mapped blocks, %"
				 PRIu64 " bytes reclaimable (%" PRIu64 ", %" PRIu64 ", 0 at the start)",
				 u4.chunks, u4.mapped, u4.reclaimable, u0.chunks, u0.mapped);
		if (died(&u4) - died(&u3) != u3.chunks - u0.chunks)
			fail_msg("removing everything killed %" PRIu64 " chunks, want %" PRIu64,
				 died(&u4) - died(&u3), u3.chunks - u0.chunks);
		if (u4.container > u0.container + img_size / 20)
			fail_msg("empty again but the containers hold %" PRIu64 " bytes on disk (%"
				 PRIu64 " at the start)", u4.container, u0.container);
	}
	free(fresh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clones),
	};

	return cmocka_run_group_tests_name("fsal_clones", tests, setup, teardown);
}
