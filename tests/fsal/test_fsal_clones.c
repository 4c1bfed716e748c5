// SPDX-License-Identifier: BSD-2-Clause
/*
 * Clones: N copies of a generated 64 MiB "image" (seeded: mostly unique
 * blocks, some zero runs, some blocks repeated) written as separate files
 * over NFSv3.  FSAL_DEDUP must store about one image (physical <= 1.1 x the
 * image, from `seacachectl stats --json STORE`); after the clones are
 * overwritten, truncated and removed and `seacachectl gc STORE` ran, the
 * physical usage must come back down.  Against FSAL_VFS the same I/O runs
 * and the space the server reports is printed, without the dedup assertions.
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
static struct nfs_context *v3;

static void make_image(void)
{
	size_t nblk = img_size / BLK;
	struct nh_rng r;

	img = malloc(img_size);
	assert_non_null(img);
	nh_rng_seed(&r, SEED);
	for (size_t b = 0; b < nblk; b++) {
		unsigned char *p = img + b * BLK;
		uint64_t x = nh_rng_below(&r, 1000);

		if (x < 4 && b + 1 < nblk) {
			/* a zero run of 1..64 blocks */
			size_t run = 1 + nh_rng_below(&r, 64);

			if (b + run > nblk)
				run = nblk - b;
			memset(p, 0, run * BLK);
			img_zero_blocks += run;
			b += run - 1;
		} else if (x < 100 && b > 0) {
			/* a copy of an earlier block (zero or not) */
			memcpy(p, img + nh_rng_below(&r, b) * BLK, BLK);
			img_repeat_blocks++;
		} else {
			nh_rng_fill(&r, p, BLK);
			img_unique_blocks++;
		}
	}
	printf("# image: %zu MiB, %" PRIu64 " unique blocks, %" PRIu64 " zero blocks, %" PRIu64
	       " repeated blocks\n",
	       img_size / NH_MIB, img_unique_blocks, img_zero_blocks, img_repeat_blocks);
}

static void clone_path(char *buf, size_t len, int i)
{
	snprintf(buf, len, D "/img-%d.raw", i);
}

struct usage {
	bool have;
	uint64_t logical, physical, chunks, holes, reclaimable;
	double ratio;
};

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
	if (nh_json_u64(out, "logical_bytes", &u.logical) ||
	    nh_json_u64(out, "physical_bytes", &u.physical) ||
	    nh_json_double(out, "dedup_ratio", &u.ratio))
		fail_msg("seacachectl stats --json: no logical_bytes/physical_bytes/dedup_ratio in: %s",
			 out);
	nh_json_u64(out, "chunks", &u.chunks);
	nh_json_u64(out, "holes", &u.holes);
	nh_json_u64(out, "reclaimable_bytes", &u.reclaimable);
	u.have = true;
	printf("# %s: logical %.1f MiB, physical %.1f MiB (%.3f x one image), dedup ratio %.2f, "
	       "%" PRIu64 " chunks, %" PRIu64 " holes, %.1f MiB reclaimable\n",
	       when, u.logical / (double)NH_MIB, u.physical / (double)NH_MIB,
	       u.physical / (double)img_size, u.ratio, u.chunks, u.holes,
	       u.reclaimable / (double)NH_MIB);
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
	v3 = nh_mount(3);
	if (nh_rm_rf(v3, D) < 0 || nfs_mkdir(v3, D) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	nh_umount(v3);
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
	struct usage u0, u1, u2, u3;
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
		struct nh_rng r;
		unsigned char buf[BLK];

		nh_rng_seed(&r, SEED + 1);
		for (int k = 0; k < 2000; k++) {
			int i = (int)nh_rng_below(&r, (uint64_t)nclones);
			size_t off = nh_rng_below(&r, img_size - BLK + 1);
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
	}

	/* overwrite clone 1 with new data, truncate 2 (to 0) and 3 (to half),
	 * remove the others */
	fresh = malloc(img_size);
	assert_non_null(fresh);
	nh_fill_seeded(fresh, img_size, SEED + 2);
	if (nclones > 1) {
		clone_path(p, sizeof(p), 1);
		assert_int_equal(nh_write_file(v3, p, fresh, img_size, piece), 0);
		if (nh_check_file(v3, p, fresh, img_size) != 0)
			fail_msg("overwritten clone 1 does not read back");
	}
	if (nclones > 2) {
		clone_path(p, sizeof(p), 2);
		assert_int_equal(nfs_truncate(v3, p, 0), 0);
	}
	if (nclones > 3) {
		clone_path(p, sizeof(p), 3);
		assert_int_equal(nfs_truncate(v3, p, img_size / 2 + 1000), 0);
		check_clone(3, img_size / 2 + 1000);
	}
	for (int i = 4; i < nclones; i++) {
		clone_path(p, sizeof(p), i);
		assert_int_equal(nfs_unlink(v3, p), 0);
	}
	check_clone(0, img_size);
	u2 = measure("after overwrite/truncate/unlink");
	if (u2.have && u2.physical > u0.physical + 2 * img_size + img_size / 5)
		fail_msg("one image plus one overwrite use %" PRIu64 " bytes, more than 2.2 images",
			 u2.physical - u0.physical);

	/* drop the overwritten clone: its new data is garbage now */
	if (nclones > 1) {
		clone_path(p, sizeof(p), 1);
		assert_int_equal(nfs_unlink(v3, p), 0);
	}
	gc();
	u3 = measure("after removing the new data and gc");
	if (u3.have) {
		if (u3.physical > u0.physical + img_size + img_size / 10)
			fail_msg("after gc: %" PRIu64 " bytes, more than 1.1 x one image",
				 u3.physical - u0.physical);
		if (nclones > 1 && u3.physical >= u2.physical)
			fail_msg("gc returned nothing: %" PRIu64 " bytes before, %" PRIu64 " after",
				 u2.physical, u3.physical);
	}
	check_clone(0, img_size);
	if (nclones > 3)
		check_clone(3, img_size / 2 + 1000);

	/* everything removed: back to the empty store */
	assert_int_equal(nh_rm_rf(v3, D), 0);
	gc();
	{
		struct usage u4 = measure("after removing everything and gc");

		if (u4.have && u4.physical > u0.physical + img_size / 20)
			fail_msg("empty again but %" PRIu64 " bytes used (%" PRIu64 " at the start)",
				 u4.physical, u0.physical);
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
