// SPDX-License-Identifier: BSD-2-Clause
/*
 * Crash rounds: a write storm over NFSv3 on several files (UNSTABLE writes
 * with a COMMIT after each MiB of a file; one file written with FILE_SYNC
 * writes only; unique, repeated and zero blocks) while ganesha.nfsd gets
 * kill -9 at a seeded random point with more writes and a COMMIT in
 * flight.  After a start, every byte committed before the kill (COMMIT or
 * FILE_SYNC replied) must read back as written, and a file committed in
 * the first round must be intact.  FSAL_DEDUP: `seacachectl fsck STORE`
 * must then exit 0 (the server stopped meanwhile).
 *
 * A client's side of the same (test_unstable_resend): UNSTABLE writes
 * past the last COMMIT, kill -9, start: COMMIT answers with another write
 * verifier, the client sends again every write it had not committed, and
 * the file then reads back exactly as written.
 *
 * FSAL_CRASH_ROUNDS (default 6) and FSAL_CRASH_SEED change the run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "nfs_harness.h"

#define D "/crash"
#define NFILES 4
#define FILE_SIZE (16 * NH_MIB)
#define PIECE (256 * NH_KIB)
#define SYNC_FILE (NFILES - 1)	/* written with FILE_SYNC writes only */
#define BLK 4096u

static uint64_t seed = 0xc4a54ull;
static int rounds = 6;
static struct nfs_context *v3;

/* Block BLK of file F in round R: file 1 repeats 64 blocks over and over,
 * file 2 has every fifth block zero, the others are unique. */
static void gen(unsigned char *buf, int r, int f, uint64_t off, size_t len)
{
	for (size_t done = 0; done < len; done += BLK) {
		uint64_t b = (off + done) / BLK;

		if (f == 2 && b % 5 == 0)
			memset(buf + done, 0, BLK);
		else
			nh_fill_seeded(buf + done, BLK,
				       nh_mix(seed, ((uint64_t)r << 40) | ((uint64_t)f << 32) |
							    (f == 1 ? b % 64 : b)));
	}
}

static void path_of(char *p, size_t len, int f)
{
	snprintf(p, len, D "/storm-%d", f);
}

struct inflight {
	int done;
	int status;
};

static void inflight_cb(int status, struct nfs_context *nfs, void *data, void *priv)
{
	struct inflight *x = priv;

	(void)nfs;
	(void)data;
	x->done = 1;
	x->status = status;
}

/* Verify [0, len) of file F against round R's content. */
static void verify(int r, int f, uint64_t len, const char *what)
{
	static unsigned char got[NH_MIB], want[NH_MIB];
	struct nfs_stat_64 st;
	struct nfsfh *fh;
	char p[64];

	path_of(p, sizeof(p), f);
	if (len == 0)
		return;
	if (nfs_stat64(v3, p, &st) != 0)
		fail_msg("%s: round %d: %s is missing (%" PRIu64 " bytes committed)", what, r, p, len);
	if (st.nfs_size < len)
		fail_msg("%s: round %d: %s has %" PRIu64 " bytes, %" PRIu64 " were committed", what, r,
			 p, (uint64_t)st.nfs_size, len);
	assert_int_equal(nfs_open(v3, p, O_RDONLY, &fh), 0);
	for (uint64_t off = 0; off < len; off += NH_MIB) {
		size_t n = len - off < NH_MIB ? (size_t)(len - off) : NH_MIB, g, d;

		assert_int_equal(nh_pread_all(v3, fh, off, got, n, NH_MIB, &g), 0);
		if (g != n)
			fail_msg("%s: round %d: %s: short read at %" PRIu64, what, r, p, off);
		gen(want, r, f, off, (n + BLK - 1) / BLK * BLK);
		d = nh_first_diff(got, want, n);
		if (d != n)
			fail_msg("%s: round %d: %s: committed byte %" PRIu64 " differs (0x%02x, want 0x%02x)",
				 what, r, p, off + d, got[d], want[d]);
	}
	nfs_close(v3, fh);
}

static int setup(void **state)
{
	(void)state;
	if (getenv("FSAL_CRASH_ROUNDS"))
		rounds = atoi(getenv("FSAL_CRASH_ROUNDS"));
	if (getenv("FSAL_CRASH_SEED"))
		seed = strtoull(getenv("FSAL_CRASH_SEED"), NULL, 0);
	return nh_suite_setup(D, &v3, NULL);
}

static int teardown(void **state)
{
	(void)state;
	nh_suite_teardown(&v3, NULL);
	return 0;
}

static void test_crash_rounds(void **state)
{
	static unsigned char stable[8 * NH_MIB];
	static unsigned char bufs[NFILES][2][PIECE];
	static struct inflight fly[NFILES * 2 + 1];
	unsigned char piece[PIECE];
	bool fsck_missing = false;
	struct sc_prng rng;

	(void)state;
	printf("# seed %#" PRIx64 ", %d rounds, %d files of %zu MiB\n", seed, rounds, NFILES,
	       FILE_SIZE / NH_MIB);
	/* committed in round 0, never written again */
	nh_fill_seeded(stable, sizeof(stable), nh_mix(seed, 0x57ab1e));
	assert_int_equal(nh_write_file(v3, D "/stable", stable, sizeof(stable), NH_MIB), 0);

	sc_prng_seed(&rng, seed);
	for (int r = 0; r < rounds; r++) {
		const int npieces = NFILES * (int)(FILE_SIZE / PIECE);
		int kill_at = 8 + (int)sc_prng_below(&rng, (uint32_t)(npieces - 8));
		uint64_t committed[NFILES] = { 0 }, written[NFILES] = { 0 };
		struct nfsfh *fh[NFILES];
		int truncate = r % 2 == 0;
		char p[64];

		for (int f = 0; f < NFILES; f++) {
			path_of(p, sizeof(p), f);
			if (nfs_create(v3, p, O_CREAT | O_RDWR | (truncate ? O_TRUNC : 0), 0644,
				       &fh[f]) != 0)
				fail_msg("round %d: create %s: %s", r, p, nfs_get_error(v3));
		}
		/* the storm, round robin over the files */
		for (int i = 0; i < kill_at; i++) {
			int f = i % NFILES;
			uint64_t off = written[f];

			gen(piece, r, f, off, PIECE);
			if (f == SYNC_FILE) {
				for (size_t k = 0; k < PIECE; k += 64 * NH_KIB) {
					if (nh_write_filesync(v3, fh[f], off + k, piece + k,
							      64 * NH_KIB) != 0)
						fail_msg("round %d: FILE_SYNC write failed", r);
					committed[f] = off + k + 64 * NH_KIB;
				}
			} else {
				if (nh_pwrite_all(v3, fh[f], off, piece, PIECE, PIECE) != 0)
					fail_msg("round %d: write failed", r);
			}
			written[f] = off + PIECE;
			if (f != SYNC_FILE && written[f] % NH_MIB == 0) {
				if (nfs_fsync(v3, fh[f]) != 0)
					fail_msg("round %d: COMMIT failed: %s", r, nfs_get_error(v3));
				committed[f] = written[f];
			}
		}
		/* more in flight: two pieces per file and a COMMIT, sent, not awaited */
		memset(fly, 0, sizeof(fly));
		for (int f = 0; f < NFILES; f++) {
			for (int k = 0; k < 2; k++) {
				uint64_t off = written[f] + (uint64_t)k * PIECE;

				if (off + PIECE > FILE_SIZE)
					break;
				gen(bufs[f][k], r, f, off, PIECE);
				assert_int_equal(nfs_pwrite_async(v3, fh[f], off, PIECE, bufs[f][k],
								  inflight_cb, &fly[f * 2 + k]),
						 0);
			}
		}
		assert_int_equal(nfs_fsync_async(v3, fh[0], inflight_cb, &fly[NFILES * 2]), 0);
		while (nfs_which_events(v3) & POLLOUT) {
			struct pollfd pfd = { nfs_get_fd(v3), POLLOUT, 0 };

			if (poll(&pfd, 1, -1) < 0 || nfs_service(v3, pfd.revents) < 0)
				break;
		}
		printf("# round %d: kill -9 after %d of %d pieces; committed MiB:", r, kill_at,
		       npieces);
		for (int f = 0; f < NFILES; f++)
			printf(" %.2f", committed[f] / (double)NH_MIB);
		printf("\n");
		assert_int_equal(nh_ctl("kill9"), 0);
		nh_umount(v3); /* the in-flight calls are cancelled here */
		v3 = NULL;
		assert_int_equal(nh_ctl("start"), 0);
		v3 = nh_mount(3);

		for (int f = 0; f < NFILES; f++)
			verify(r, f, committed[f], "after kill -9");
		if (nh_check_file(v3, D "/stable", stable, sizeof(stable)) != 0)
			fail_msg("round %d: the file committed in round 0 changed", r);

		if (nh_is_dedup()) {
			if (!nh_seacachectl()) {
				fsck_missing = true;
			} else {
				nh_umount(v3);
				v3 = NULL;
				if (nh_seacachectl_run("fsck", NULL) != 0)
					fail_msg("round %d: seacachectl fsck %s failed", r,
						 nh_env("SEACACHE_STORE"));
				v3 = nh_mount(3);
				/* and the data is still there */
				for (int f = 0; f < NFILES; f++)
					verify(r, f, committed[f], "after fsck");
			}
		}
	}
	if (fsck_missing)
		fail_msg("FSAL_DEDUP crash test needs `seacachectl fsck STORE`: seacachectl not "
			 "built at '%s' (set SEACACHE_SEACACHECTL); the data checks passed",
			 getenv("SEACACHECTL") ? getenv("SEACACHECTL") : "");
}

/* The committed part, 1 MiB; then 3 MiB and a rewrite of the committed
 * part's second half, neither committed. */
#define RS_COMMITTED NH_MIB
#define RS_SIZE (4 * NH_MIB)
#define RS_PIECE (64 * NH_KIB)

static void fsck_clean(const char *when)
{
	if (!nh_is_dedup())
		return;
	if (!nh_seacachectl())
		fail_msg("FSAL_DEDUP crash test needs `seacachectl fsck STORE` (SEACACHECTL)");
	nh_umount(v3);
	v3 = NULL;
	if (nh_seacachectl_run("fsck", NULL) != 0)
		fail_msg("%s: seacachectl fsck %s failed", when, nh_env("SEACACHE_STORE"));
	v3 = nh_mount(3);
}

/* UNSTABLE writes of want[from, to) in pieces, each answered with verf. */
static void write_unstable(struct nfsfh *fh, const unsigned char *want, uint64_t from,
			   uint64_t to, const char verf[8])
{
	char got[8];

	for (uint64_t off = from; off < to; off += RS_PIECE) {
		assert_int_equal(nh_write3(v3, fh, off, want + off, RS_PIECE, UNSTABLE, got), 0);
		if (memcmp(got, verf, 8) != 0)
			fail_msg("WRITE at %" PRIu64 ": its verifier is not the server's", off);
	}
}

static void test_unstable_resend(void **state)
{
	static unsigned char old[RS_SIZE], want[RS_SIZE];
	unsigned char *got;
	char verf[8], after[8];
	struct nfsfh *fh;
	size_t n, d;

	(void)state;
	nh_fill_seeded(old, sizeof(old), nh_mix(seed, 0x0d));
	nh_fill_seeded(want, sizeof(want), nh_mix(seed, 0x4e));
	assert_int_equal(nfs_create(v3, D "/resend", O_CREAT | O_RDWR | O_TRUNC, 0644, &fh), 0);
	/* committed: old[0, 1 MiB) */
	assert_int_equal(nh_commit3(v3, fh, verf), 0);
	write_unstable(fh, old, 0, RS_COMMITTED, verf);
	assert_int_equal(nh_commit3(v3, fh, after), 0);
	assert_memory_equal(after, verf, 8);
	/* not committed: want[512 KiB, 4 MiB), half of it over committed data */
	memcpy(want, old, RS_COMMITTED / 2);
	write_unstable(fh, want, RS_COMMITTED / 2, RS_SIZE, verf);
	nfs_close(v3, fh);

	assert_int_equal(nh_ctl("kill9"), 0);
	nh_umount(v3);
	v3 = NULL;
	/*
	 * FSAL_VFS answers with Ganesha's verifier, the second the server
	 * started: started again within it, the verifier would not change
	 * (FSAL_DEDUP's does): a second between the two for VFS only.
	 */
	if (!nh_is_dedup())
		sleep(1);
	assert_int_equal(nh_ctl("start"), 0);
	v3 = nh_mount(3);
	fsck_clean("after kill -9");

	/* what was committed is there; the rest may be gone, not wrong */
	assert_int_equal(nh_read_file(v3, D "/resend", (void **)&got, &n), 0);
	if (n < RS_COMMITTED || n > RS_SIZE)
		fail_msg("after kill -9: %zu bytes, %u were committed, %u written", n,
			 RS_COMMITTED, RS_SIZE);
	d = nh_first_diff(got, old, RS_COMMITTED / 2);
	if (d != RS_COMMITTED / 2)
		fail_msg("after kill -9: committed byte %zu differs", d);
	for (size_t i = RS_COMMITTED / 2; i < n; i++)
		if (got[i] != want[i] && !(i < RS_COMMITTED && got[i] == old[i]) && got[i] != 0)
			fail_msg("after kill -9: byte %zu is 0x%02x: never written there", i, got[i]);
	free(got);

	/* the client's COMMIT finds another verifier: it sends again */
	assert_int_equal(nfs_open(v3, D "/resend", O_RDWR, &fh), 0);
	assert_int_equal(nh_commit3(v3, fh, after), 0);
	if (memcmp(after, verf, 8) == 0)
		fail_msg("the write verifier is the same after a restart: a client would not "
			 "send its lost UNSTABLE writes again");
	memcpy(verf, after, 8);
	write_unstable(fh, want, RS_COMMITTED / 2, RS_SIZE, verf);
	assert_int_equal(nh_commit3(v3, fh, after), 0);
	assert_memory_equal(after, verf, 8);
	nfs_close(v3, fh);
	assert_int_equal(nh_check_file(v3, D "/resend", want, sizeof(want)), 0);
	fsck_clean("after the resend");
	assert_int_equal(nh_check_file(v3, D "/resend", want, sizeof(want)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unstable_resend),
		cmocka_unit_test(test_crash_rounds),
	};

	return cmocka_run_group_tests_name("fsal_crash", tests, setup, teardown);
}
