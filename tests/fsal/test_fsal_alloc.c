// SPDX-License-Identifier: BSD-2-Clause
/*
 * NFSv4.2 ALLOCATE, DEALLOCATE and SEEK (RFC 7862 sections 15.1, 15.4,
 * 15.11) through the raw client (nfs4_client.h; libnfs 4.0 has no v4.2):
 * a hole punched reads as zeros and everything else is unchanged, the
 * size stays; ALLOCATE extends with zeros and changes no data; SEEK finds
 * the data and the holes where they are (block granularity, 4 KiB: the
 * back end's block on both FSALs), NXIO at or past the end.  None of them
 * writes a CRIT line to the server's log.  On FSAL_DEDUP also: the store
 * checks clean after punching, and a hole punched in deduplicated data
 * drops exactly the references of that file (the chunks go when their
 * last holder punches them too).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nfs4_client.h"
#include "nfs_harness.h"

#define DIR "/alloc"
#define SEED 0xa110c8ull
#define BS 4096u
#define PIECE 32768u

static struct nfs_context *v3;
static struct n4_client *c;
static struct n4_fh dir;

static int connect_v42(void)
{
	char path[256];

	n4_disconnect(c);
	c = n4_connect(2, "sc-alloc-test");
	snprintf(path, sizeof(path), "%s%s", nh_env("NFS_EXPORT"), DIR);
	return c && n4_lookup(c, path, &dir) == 0 ? 0 : -1;
}

static int setup(void **state)
{
	(void)state;
	if (nh_suite_setup(DIR, &v3, NULL) != 0)
		return -1;
	return connect_v42();
}

static int teardown(void **state)
{
	(void)state;
	n4_disconnect(c);
	c = NULL;
	nh_suite_teardown(&v3, NULL);
	return 0;
}

/* Lines of the server's log with a CRIT (or worse) level. */
static unsigned int crit_lines(void)
{
	FILE *f = fopen(nh_env("GANESHA_LOG"), "r");
	char line[4096];
	unsigned int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " :CRIT :") || strstr(line, " :MAJ :") ||
		    strstr(line, " :FATAL :"))
			n++;
	fclose(f);
	return n;
}

struct file {
	char name[64];
	struct n4_fh fh;
	struct n4_stateid sid;
	uint8_t *want;			/* the expected content */
	size_t size;
};

/* Creates NAME holding LEN bytes of seeded data, opened read-write. */
static void make_file(struct file *f, const char *name, size_t len, uint64_t seed)
{
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->size = len;
	f->want = malloc(len);
	assert_non_null(f->want);
	nh_fill_seeded(f->want, len, seed);
	assert_int_equal(n4_open(c, &dir, name, "alloc", N4_ACCESS_BOTH, N4_DENY_NONE,
				 true, &f->sid, &f->fh),
			 N4_OK);
	for (size_t off = 0; off < len; off += PIECE) {
		uint32_t n = (uint32_t)(len - off < PIECE ? len - off : PIECE);

		/* unstable: a server may hold the data in memory meanwhile */
		assert_int_equal(n4_write(c, &f->fh, &f->sid, off, f->want + off, n, false),
				 N4_OK);
	}
}

static void drop_file(struct file *f)
{
	assert_int_equal(n4_close(c, &f->fh, &f->sid), N4_OK);
	free(f->want);
	f->want = NULL;
}

/* The file reads exactly as f->want, f->size long. */
static void check_file(struct file *f)
{
	uint8_t *got = malloc(f->size + 1);
	uint64_t size = 0;
	size_t off = 0;

	assert_non_null(got);
	assert_int_equal(n4_size(c, &f->fh, &size), N4_OK);
	assert_int_equal(size, f->size);
	while (off < f->size) {
		uint32_t n = 0;

		assert_int_equal(n4_read(c, &f->fh, &f->sid, off, got + off, PIECE, &n),
				 N4_OK);
		assert_true(n > 0);
		off += n;
	}
	off = nh_first_diff(got, f->want, f->size);
	if (off != f->size)
		fprintf(stderr, "alloc: %s: byte %zu is 0x%02x, want 0x%02x\n", f->name, off,
			got[off], f->want[off]);
	assert_int_equal(off, f->size);
	free(got);
}

static void punch(struct file *f, uint64_t off, uint64_t len)
{
	assert_int_equal(n4_deallocate(c, &f->fh, &f->sid, off, len), N4_OK);
	if (off < f->size)
		memset(f->want + off, 0, (size_t)((off + len > f->size ? f->size : off + len) - off));
}

static void expect_seek(struct file *f, uint64_t from, uint32_t what, int status,
			bool eof, uint64_t at)
{
	bool got_eof = false;
	uint64_t got = from;
	int rc = n4_seek(c, &f->fh, &f->sid, from, what, &got_eof, &got);

	if (rc != status ||
	    (rc == N4_OK && (got_eof != eof || ((!eof || what == N4_CONTENT_HOLE) && got != at))))
		fprintf(stderr, "alloc: SEEK_%s from %llu: %s eof %d at %llu, want %s eof %d at %llu\n",
			what == N4_CONTENT_DATA ? "DATA" : "HOLE", (unsigned long long)from,
			n4_status_name(rc), got_eof, (unsigned long long)got,
			n4_status_name(status), eof, (unsigned long long)at);
	assert_int_equal(rc, status);
	if (rc != N4_OK)
		return;
	assert_int_equal(got_eof, eof);
	if (!eof || what == N4_CONTENT_HOLE)
		assert_int_equal(got, at);
}

static void test_deallocate(void **state)
{
	unsigned int crit = crit_lines();
	struct file f;

	(void)state;
	make_file(&f, "punch", 64 * BS + 1000, SEED);
	expect_seek(&f, 0, N4_CONTENT_DATA, N4_OK, false, 0);
	expect_seek(&f, 5000, N4_CONTENT_DATA, N4_OK, false, 5000);
	expect_seek(&f, 0, N4_CONTENT_HOLE, N4_OK, true, f.size);

	/* partial blocks at both ends, whole blocks 3..9 in between */
	punch(&f, 2 * BS + 100, 8 * BS);
	check_file(&f);
	expect_seek(&f, 0, N4_CONTENT_HOLE, N4_OK, false, 3 * BS);
	expect_seek(&f, 3 * BS + 7, N4_CONTENT_HOLE, N4_OK, false, 3 * BS + 7);
	expect_seek(&f, 3 * BS, N4_CONTENT_DATA, N4_OK, false, 10 * BS);

	/* within one block; one whole block; up to and past the end */
	punch(&f, 20 * BS + 10, 100);
	punch(&f, 30 * BS, BS);
	check_file(&f);
	expect_seek(&f, 29 * BS, N4_CONTENT_HOLE, N4_OK, false, 30 * BS);
	expect_seek(&f, 30 * BS, N4_CONTENT_DATA, N4_OK, false, 31 * BS);
	punch(&f, 60 * BS, 100 * BS);
	check_file(&f);
	expect_seek(&f, 59 * BS, N4_CONTENT_HOLE, N4_OK, false, 60 * BS);
	expect_seek(&f, 60 * BS, N4_CONTENT_DATA, N4_OK, true, 0);

	/* past the end: nothing changes; SEEK there is NXIO */
	punch(&f, f.size + BS, BS);
	check_file(&f);
	expect_seek(&f, f.size, N4_CONTENT_DATA, N4ERR_NXIO, false, 0);
	expect_seek(&f, f.size + 1, N4_CONTENT_HOLE, N4ERR_NXIO, false, 0);

	/* all of it */
	punch(&f, 0, f.size);
	check_file(&f);
	expect_seek(&f, 0, N4_CONTENT_DATA, N4_OK, true, 0);
	expect_seek(&f, 0, N4_CONTENT_HOLE, N4_OK, false, 0);
	drop_file(&f);
	assert_int_equal(crit_lines(), crit);
}

static void test_deallocate_random(void **state)
{
	struct sc_prng rng;
	struct file f;

	(void)state;
	sc_prng_seed(&rng, SEED);
	make_file(&f, "punch-random", 40 * BS + 123, SEED + 1);
	for (int i = 0; i < 40; i++) {
		uint64_t off = sc_prng_below(&rng, (uint32_t)f.size + BS);
		uint64_t len = sc_prng_below(&rng, 6 * BS) + 1;

		punch(&f, off, len);
		if (i % 8 == 7)
			check_file(&f);
	}
	check_file(&f);
	drop_file(&f);
}

static void test_allocate(void **state)
{
	unsigned int crit = crit_lines();
	size_t old;
	struct file f;

	(void)state;
	make_file(&f, "allocate", 10 * BS + 10, SEED + 2);
	/* within the file: no data changes, nor the size */
	assert_int_equal(n4_allocate(c, &f.fh, &f.sid, BS, 4 * BS), N4_OK);
	check_file(&f);

	/* past the end: the file grows, the new bytes read as zeros */
	old = f.size;
	f.size = 40 * BS;
	f.want = realloc(f.want, f.size);
	assert_non_null(f.want);
	memset(f.want + old, 0, f.size - old);
	assert_int_equal(n4_allocate(c, &f.fh, &f.sid, 20 * BS, 20 * BS), N4_OK);
	check_file(&f);
	/*
	 * Allocated space is a hole to the dedup store (nothing is stored);
	 * FSAL_VFS answers what its file system does (ext4 may call it data).
	 */
	if (nh_is_dedup()) {
		expect_seek(&f, 0, N4_CONTENT_HOLE, N4_OK, false, 11 * BS);
		expect_seek(&f, 11 * BS, N4_CONTENT_DATA, N4_OK, true, 0);
	}

	/* writes into allocated space */
	nh_fill_seeded(f.want + 25 * BS, BS, SEED + 3);
	assert_int_equal(n4_write(c, &f.fh, &f.sid, 25 * BS, f.want + 25 * BS, BS, false),
			 N4_OK);
	check_file(&f);
	if (nh_is_dedup())
		expect_seek(&f, 11 * BS, N4_CONTENT_DATA, N4_OK, false, 25 * BS);
	drop_file(&f);
	assert_int_equal(crit_lines(), crit);
}

/* An open without write access may not change the file. */
static void test_read_only_open(void **state)
{
	struct n4_stateid ro;
	struct n4_fh fh;
	struct file f;

	(void)state;
	make_file(&f, "read-only", 4 * BS, SEED + 4);
	assert_int_equal(n4_open(c, &dir, f.name, "reader", N4_ACCESS_READ, N4_DENY_NONE,
				 false, &ro, &fh),
			 N4_OK);
	assert_int_equal(n4_deallocate(c, &fh, &ro, 0, BS), N4ERR_OPENMODE);
	assert_int_equal(n4_allocate(c, &fh, &ro, 0, 8 * BS), N4ERR_OPENMODE);
	assert_int_equal(n4_close(c, &fh, &ro), N4_OK);
	check_file(&f);
	drop_file(&f);
}

struct usage {
	uint64_t chunks, mapped;
};

static void store_usage(struct usage *u)
{
	char *out = NULL;

	assert_int_equal(nh_seacachectl_run("stats --json", &out), 0);
	assert_int_equal(nh_json_u64(out, "chunks", &u->chunks), 0);
	assert_int_equal(nh_json_u64(out, "mapped_blocks", &u->mapped), 0);
	free(out);
	/* the tool stopped and restarted the server: a new client */
	assert_int_equal(connect_v42(), 0);
}

static void reopen(struct file *f)
{
	assert_int_equal(n4_open(c, &dir, f->name, "alloc", N4_ACCESS_BOTH, N4_DENY_NONE,
				 false, &f->sid, &f->fh),
			 N4_OK);
}

/* FSAL_DEDUP: punching a hole in deduplicated data drops references. */
static void test_dedup_references(void **state)
{
	struct usage u0, u1, u2;
	struct file a, b;
	char *out = NULL;

	(void)state;
	if (!nh_is_dedup())
		return;
	make_file(&a, "dedup-a", 16 * BS, SEED + 5);
	make_file(&b, "dedup-b", 16 * BS, SEED + 5);	/* the same content */
	assert_int_equal(n4_close(c, &a.fh, &a.sid), N4_OK);
	assert_int_equal(n4_close(c, &b.fh, &b.sid), N4_OK);
	store_usage(&u0);

	/* a loses blocks 4..7; b still holds their content */
	reopen(&a);
	punch(&a, 4 * BS, 4 * BS);
	assert_int_equal(n4_close(c, &a.fh, &a.sid), N4_OK);
	store_usage(&u1);
	assert_int_equal(u1.mapped, u0.mapped - 4);
	assert_int_equal(u1.chunks, u0.chunks);

	/* b too: the four contents have no holder left */
	reopen(&b);
	punch(&b, 4 * BS, 4 * BS);
	assert_int_equal(n4_close(c, &b.fh, &b.sid), N4_OK);
	store_usage(&u2);
	assert_int_equal(u2.mapped, u1.mapped - 4);
	assert_int_equal(u2.chunks, u1.chunks - 4);

	assert_int_equal(nh_seacachectl_run("fsck", &out), 0);
	free(out);
	assert_int_equal(connect_v42(), 0);
	reopen(&a);
	reopen(&b);
	check_file(&a);
	check_file(&b);
	drop_file(&a);
	drop_file(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deallocate),
		cmocka_unit_test(test_deallocate_random),
		cmocka_unit_test(test_allocate),
		cmocka_unit_test(test_read_only_open),
		cmocka_unit_test(test_dedup_references),
	};

	return cmocka_run_group_tests_name("fsal_alloc", tests, setup, teardown);
}
