// SPDX-License-Identifier: BSD-2-Clause
/*
 * The dedup store on its own (no Ganesha): namespace semantics, data round
 * trips through every block case, dedup and silent-write accounting,
 * reclamation, persistence, corruption detection, fsck and repair,
 * concurrent writers, group commit, and writers through a full write-back
 * buffer.  Runs under ASan/UBSan too.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include <seacache/prng.h>

#include "dstore.h"
#include "dstore_int.h"
#include "worker_check.h"

#define BS 4096u

struct fixture {
	char dir[64];
	struct dstore *ds;
	struct dstore_params p;
	unsigned int log_errors;
};

static void count_log(void *ctx, int level, const char *msg)
{
	struct fixture *f = ctx;

	(void)msg;
	if (level <= DSTORE_LOG_WARN)
		f->log_errors++;
}

static void store_reopen(struct fixture *f)
{
	char err[256];

	dstore_close(f->ds);
	f->ds = NULL;
	assert_int_equal(dstore_open(f->dir, &f->p, &f->ds, err, sizeof(err)), 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256];

	strcpy(f->dir, "/tmp/dstore-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	dstore_params_default(&f->p);
	f->p.map_size = 256ull << 20;
	f->p.container_size = 1ull << 20;	/* many containers */
	f->p.reclaim_interval_ms = 0;		/* reclaim when a test says */
	f->p.log = count_log;
	f->p.log_ctx = f;
	assert_int_equal(dstore_open(f->dir, &f->p, &f->ds, err, sizeof(err)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	dstore_close(f->ds);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static uint64_t mkfile(struct fixture *f, uint64_t dir, const char *name)
{
	struct dstore_new n = { .type = DSTORE_REG, .mode = 0644 };
	struct dstore_attr a;

	assert_int_equal(dstore_create(f->ds, dir, name, &n, &a), 0);
	return a.ino;
}

static uint64_t mkdir_(struct fixture *f, uint64_t dir, const char *name)
{
	struct dstore_new n = { .type = DSTORE_DIR, .mode = 0755 };
	struct dstore_attr a;

	assert_int_equal(dstore_create(f->ds, dir, name, &n, &a), 0);
	return a.ino;
}

static void fill(uint8_t *b, size_t len, uint64_t seed)
{
	struct sc_prng r;

	sc_prng_seed(&r, seed);
	sc_prng_fill(&r, b, len);
}

static void put(struct fixture *f, uint64_t ino, uint64_t off,
		const void *b, size_t len)
{
	assert_int_equal(dstore_write(f->ds, ino, off, b, len, false, NULL),
			 (ssize_t)len);
}

static void expect(struct fixture *f, uint64_t ino, uint64_t off,
		   const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len + 1);
	bool eof;

	assert_int_equal(dstore_read(f->ds, ino, off, got, len, &eof),
			 (ssize_t)len);
	assert_memory_equal(got, want, len);
	free(got);
}

static void fsck_clean(struct fixture *f)
{
	struct dstore_fsck_report r;

	assert_int_equal(dstore_fsck(f->ds, 0, &r), 0);
	assert_int_equal(r.problems, 0);
}

static void test_namespace(void **state)
{
	struct fixture *f = *state;
	struct dstore_new sl = { .type = DSTORE_SYMLINK, .mode = 0777,
				 .symlink = "target/path" };
	struct dstore_attr a;
	uint64_t d = mkdir_(f, DSTORE_ROOT_INO, "d");
	uint64_t x = mkfile(f, d, "x");
	char buf[64];

	assert_int_equal(dstore_create(f->ds, d, "x", &(struct dstore_new){
		.type = DSTORE_REG }, &a), -EEXIST);
	assert_int_equal(a.ino, x);
	assert_int_equal(dstore_lookup(f->ds, d, "nope", &a), -ENOENT);
	assert_int_equal(dstore_lookup(f->ds, d, "..", &a), 0);
	assert_int_equal(a.ino, DSTORE_ROOT_INO);
	assert_int_equal(dstore_lookup(f->ds, DSTORE_ROOT_INO, "..", &a), 0);
	assert_int_equal(a.ino, DSTORE_ROOT_INO);
	assert_int_equal(dstore_lookup(f->ds, d, ".", &a), 0);
	assert_int_equal(a.ino, d);
	assert_int_equal(dstore_lookup(f->ds, x, "y", &a), -ENOTDIR);
	assert_int_equal(dstore_create(f->ds, d, "..", &sl, &a), -EINVAL);
	assert_int_equal(dstore_create(f->ds, d, "l", &sl, &a), 0);
	assert_int_equal(dstore_readlink(f->ds, a.ino, buf, sizeof(buf)), 11);
	assert_string_equal(buf, "target/path");
	/* setattr of a symlink keeps its target */
	assert_int_equal(dstore_setattr(f->ds, a.ino, &(struct dstore_attr){
		.mode = 0700 }, DSTORE_SET_MODE, NULL), 0);
	assert_int_equal(dstore_readlink(f->ds, a.ino, buf, sizeof(buf)), 11);

	assert_int_equal(dstore_link(f->ds, x, DSTORE_ROOT_INO, "x2"), 0);
	assert_int_equal(dstore_getattr(f->ds, x, &a), 0);
	assert_int_equal(a.nlink, 2);
	assert_int_equal(dstore_link(f->ds, d, DSTORE_ROOT_INO, "d2"), -EPERM);
	assert_int_equal(dstore_remove(f->ds, DSTORE_ROOT_INO, "d"), -ENOTEMPTY);
	assert_int_equal(dstore_getattr(f->ds, DSTORE_ROOT_INO, &a), 0);
	assert_int_equal(a.nlink, 3);

	/* rename: over a file, dir over non-empty dir, into itself */
	uint64_t y = mkfile(f, d, "y");

	assert_int_equal(dstore_rename(f->ds, d, "y", d, "x"), 0);
	assert_int_equal(dstore_lookup(f->ds, d, "x", &a), 0);
	assert_int_equal(a.ino, y);
	assert_int_equal(dstore_getattr(f->ds, x, &a), 0);
	assert_int_equal(a.nlink, 1);	/* still linked as /x2 */
	uint64_t e = mkdir_(f, DSTORE_ROOT_INO, "e");

	assert_int_equal(dstore_rename(f->ds, DSTORE_ROOT_INO, "e",
				       DSTORE_ROOT_INO, "d"), -ENOTEMPTY);
	assert_int_equal(dstore_rename(f->ds, DSTORE_ROOT_INO, "x2",
				       DSTORE_ROOT_INO, "e"), -EISDIR);
	assert_int_equal(dstore_rename(f->ds, DSTORE_ROOT_INO, "e", d, "x"),
			 -ENOTDIR);
	assert_int_equal(dstore_rename(f->ds, DSTORE_ROOT_INO, "d", d, "sub"),
			 -EINVAL);
	assert_int_equal(dstore_rename(f->ds, DSTORE_ROOT_INO, "e", d, "e"), 0);
	assert_int_equal(dstore_lookup(f->ds, e, "..", &a), 0);
	assert_int_equal(a.ino, d);
	assert_int_equal(dstore_getattr(f->ds, d, &a), 0);
	assert_int_equal(a.nlink, 3);
	assert_int_equal(dstore_rename(f->ds, d, "e", d, "e"), 0);
	assert_int_equal(dstore_remove(f->ds, d, "e"), 0);
	assert_int_equal(dstore_getattr(f->ds, e, &a), -ESTALE);
	fsck_clean(f);
}

struct names {
	unsigned int seen[3000];
	unsigned int count;
	unsigned int stop_after;
	uint64_t last;
};

static int collect(void *ctx, const char *name, uint64_t ino, uint64_t cookie)
{
	struct names *n = ctx;

	(void)ino;
	if (n->stop_after && n->count == n->stop_after)
		return 1;
	assert_true(cookie >= DSTORE_COOKIE_FIRST);
	n->seen[atoi(name + 1)]++;
	n->count++;
	n->last = cookie;
	return 0;
}

static void test_readdir_cookies(void **state)
{
	struct fixture *f = *state;
	struct names n = { .stop_after = 100 };
	char name[16];
	bool eof = false;
	unsigned int total = 0;

	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		mkfile(f, DSTORE_ROOT_INO, name);
	}
	/* remove some and add some between calls: every survivor once */
	for (int call = 0; !eof; call++) {
		n.count = 0;
		assert_int_equal(dstore_readdir(f->ds, DSTORE_ROOT_INO, n.last,
						collect, &n, &eof), 0);
		total += n.count;
		if (call == 3) {
			assert_int_equal(dstore_remove(f->ds, DSTORE_ROOT_INO,
						       "f1999"), 0);
			mkfile(f, DSTORE_ROOT_INO, "f2500");
		}
	}
	assert_int_equal(n.seen[1999], 0);
	assert_int_equal(n.seen[2500], 1);
	for (int i = 0; i < 1999; i++)
		assert_int_equal(n.seen[i], 1);
	assert_int_equal(total, 2000);
}

static void test_data_cases(void **state)
{
	struct fixture *f = *state;
	size_t sizes[] = { 0, 1, 4095, 4096, 4097, (1u << 20) + 1, 3 * BS + 17 };
	size_t max = (1u << 20) + 1;
	uint8_t *b = malloc(max), *z = calloc(1, 4 * BS);
	struct dstore_attr a;
	char name[16];
	uint64_t big = mkfile(f, DSTORE_ROOT_INO, "big");

	put(f, big, 0, (uint8_t[4097]){ 1 }, 4097);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "s%zu", i);
		uint64_t ino = mkfile(f, DSTORE_ROOT_INO, name);

		fill(b, sizes[i], i);
		put(f, ino, 0, b, sizes[i]);
		assert_int_equal(dstore_getattr(f->ds, ino, &a), 0);
		assert_int_equal(a.size, sizes[i]);
		expect(f, ino, 0, b, sizes[i]);
	}
	/* reads at and past the end: nothing, and EOF */
	bool eof = false;

	assert_int_equal(dstore_read(f->ds, big, 4097, b, 100, &eof), 0);
	assert_true(eof);
	assert_int_equal(dstore_read(f->ds, big, 1 << 30, b, 100, &eof), 0);
	assert_true(eof);
	assert_int_equal(dstore_read(f->ds, big, 4000, b, 1000, &eof), 97);
	assert_true(eof);

	/* a read ending inside a long fully mapped run (heap plan) */

	fill(b, 200 * BS > max ? max : 200 * BS, 77);
	put(f, big, 0, b, 200 * BS > max ? max : 200 * BS);
	expect(f, big, BS, b + BS, 99 * BS);

	/* partial overwrite inside, across and past blocks */
	uint64_t ino = mkfile(f, DSTORE_ROOT_INO, "p");
	uint8_t *ref = calloc(1, 8 * BS);

	fill(b, 8 * BS, 99);
	put(f, ino, 0, b, 4 * BS);
	memcpy(ref, b, 4 * BS);
	put(f, ino, 100, b + 5 * BS, 10);
	memcpy(ref + 100, b + 5 * BS, 10);
	put(f, ino, BS - 5, b + 6 * BS, 2 * BS + 10);
	memcpy(ref + BS - 5, b + 6 * BS, 2 * BS + 10);
	put(f, ino, 6 * BS + 7, b, 9);	/* leaves a hole before it */
	memcpy(ref + 6 * BS + 7, b, 9);
	expect(f, ino, 0, ref, 6 * BS + 16);
	/* an unaligned read across a hole */
	expect(f, ino, 3 * BS + 11, ref + 3 * BS + 11, 3 * BS);

	/* zeros are holes; truncate zeroes the tail; extension reads zeros */
	assert_int_equal(dstore_write(f->ds, ino, BS, z, BS, false, &a), BS);
	assert_int_equal(a.blocks_mapped, 4);	/* as the write answers */
	memset(ref + BS, 0, BS);
	assert_int_equal(dstore_getattr(f->ds, ino, &a), 0);
	assert_int_equal(a.blocks_mapped, 4);	/* 0, 2, 3, 6 */
	assert_int_equal(dstore_setattr(f->ds, ino, &(struct dstore_attr){
		.size = 2 * BS + 3 }, DSTORE_SET_SIZE, &a), 0);
	assert_int_equal(a.size, 2 * BS + 3);
	assert_int_equal(dstore_setattr(f->ds, ino, &(struct dstore_attr){
		.size = 5 * BS }, DSTORE_SET_SIZE, &a), 0);
	memset(ref + 2 * BS + 3, 0, 3 * BS);
	expect(f, ino, 0, ref, 5 * BS);
	assert_int_equal(a.blocks_mapped, 2);
	/* a write into the file's last block past the end keeps zeros */
	put(f, ino, 5 * BS + 100, b, 1);
	ref[5 * BS + 100] = b[0];
	expect(f, ino, 0, ref, 5 * BS + 101);
	free(ref);
	free(b);
	free(z);
	fsck_clean(f);
}

static void test_dedup_silent_reclaim(void **state)
{
	struct fixture *f = *state;
	size_t len = 64 * BS;
	uint8_t *img = malloc(len), *other = malloc(len);
	struct dstore_stats st, st2;
	uint64_t ino[4];
	char name[16];

	fill(img, len, 7);
	memcpy(img + 10 * BS, img, BS);		/* a repeated block */
	memset(img + 20 * BS, 0, 3 * BS);	/* a zero run */
	fill(other, len, 8);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "clone%d", i);
		ino[i] = mkfile(f, DSTORE_ROOT_INO, name);
		put(f, ino[i], 0, img, len);
	}
	assert_int_equal(dstore_stats(f->ds, &st), 0);
	assert_int_equal(st.chunks, 64 - 1 - 3);
	assert_int_equal(st.mapped_blocks, 4 * (64 - 3));
	assert_int_equal(st.logical_bytes, 4 * len);
	assert_int_equal(st.physical_bytes, 60 * BS);
	assert_int_equal(st.data_writes, 60);

	/* the same content again: silent, nothing moves */
	put(f, ino[0], 0, img, len);
	assert_int_equal(dstore_stats(f->ds, &st2), 0);
	assert_int_equal(st2.silent_writes - st.silent_writes, 64);
	assert_int_equal(st2.data_writes, st.data_writes);
	assert_int_equal(st2.dedup_writes, st.dedup_writes);

	/* the zero run is holes */
	struct sc_hash h;

	assert_int_equal(dstore_block_hash(f->ds, ino[2], 21, &h), -ENODATA);

	/* overwrite, truncate and unlink: space comes back */
	put(f, ino[0], 0, other, len);
	assert_int_equal(dstore_setattr(f->ds, ino[1], &(struct dstore_attr){
		.size = 0 }, DSTORE_SET_SIZE, NULL), 0);
	assert_int_equal(dstore_remove(f->ds, DSTORE_ROOT_INO, "clone2"), 0);
	assert_int_equal(dstore_remove(f->ds, DSTORE_ROOT_INO, "clone3"), 0);
	/* freeing waits for the pending deltas */
	assert_int_equal(dstore_stats(f->ds, &st), 0);
	assert_int_equal(st.dead_slots, 0);
	assert_int_equal(dstore_apply_pending(f->ds), 0);
	assert_int_equal(dstore_stats(f->ds, &st), 0);
	assert_int_equal(st.chunks, 64);	/* only "other" is left */
	assert_int_equal(st.dead_slots, 60);
	assert_int_equal(dstore_reclaim(f->ds), 60);
	assert_int_equal(dstore_stats(f->ds, &st2), 0);
	assert_int_equal(st2.dead_slots, 0);
	assert_true(st2.container_bytes <= st.container_bytes - 60 * BS + BS);
	expect(f, ino[0], 0, other, len);
	fsck_clean(f);
	free(img);
	free(other);
}

static int count_holder(void *ctx, uint64_t ino, uint64_t lbn)
{
	(void)ino;
	(void)lbn;
	(*(int *)ctx)++;
	return 0;
}

static void test_csimap(void **state)
{
	struct fixture *f = *state;
	uint8_t b[2 * BS];
	struct sc_hash h;
	int n = 0;
	uint64_t a = mkfile(f, DSTORE_ROOT_INO, "a");
	uint64_t c = mkfile(f, DSTORE_ROOT_INO, "c");

	fill(b, BS, 1);
	memcpy(b + BS, b, BS);
	put(f, a, 0, b, 2 * BS);
	put(f, c, 7 * BS, b, BS);
	/* lookups see holders once their deltas are applied */
	n = 0;
	assert_int_equal(dstore_block_hash(f->ds, c, 7, &h), 0);
	assert_int_equal(dstore_csimap_lookup(f->ds, &h, 10, count_holder, &n), 0);
	assert_int_equal(dstore_apply_pending(f->ds), 0);
	assert_int_equal(dstore_csimap_lookup(f->ds, &h, 10, count_holder, &n), 3);
	assert_int_equal(n, 3);
	n = 0;
	assert_int_equal(dstore_csimap_lookup(f->ds, &h, 2, count_holder, &n), 2);
	put(f, a, BS, (uint8_t[BS]){ 1 }, BS);
	assert_int_equal(dstore_sync(f->ds), 0);
	/* until its delta is applied the CSI-Map names (a, 1): a candidate */
	n = 0;
	assert_int_equal(dstore_csimap_candidates(f->ds, &h, 10, count_holder, &n), 3);
	assert_int_equal(dstore_csimap_lookup(f->ds, &h, 10, count_holder, &n), 2);
	assert_int_equal(n, 5);
	assert_int_equal(dstore_apply_pending(f->ds), 0);
	n = 0;
	assert_int_equal(dstore_csimap_lookup(f->ds, &h, 10, count_holder, &n), 2);
	assert_int_equal(dstore_csimap_candidates(f->ds, &h, 10, count_holder, &n), 2);
}

static void test_persistence(void **state)
{
	struct fixture *f = *state;
	uint8_t b[3 * BS + 5];
	struct dstore_attr a, a2;
	uint64_t d = mkdir_(f, DSTORE_ROOT_INO, "dir");
	uint64_t x = mkfile(f, d, "x");

	fill(b, sizeof(b), 3);
	put(f, x, 0, b, sizeof(b));
	assert_int_equal(dstore_getattr(f->ds, x, &a), 0);
	store_reopen(f);
	assert_int_equal(dstore_lookup(f->ds, d, "x", &a2), 0);
	assert_int_equal(a2.ino, x);
	assert_int_equal(a2.size, a.size);
	assert_int_equal(a2.change, a.change);
	expect(f, x, 0, b, sizeof(b));
	/* new inodes never reuse numbers */
	assert_true(mkfile(f, d, "y") > x);
	fsck_clean(f);
}

/* seacachectl stats: a read-only open beside the writer */
static void test_read_only_open(void **state)
{
	struct fixture *f = *state;
	struct dstore_params p = f->p;
	struct dstore_stats st;
	struct dstore *ro;
	char err[256];
	uint8_t b[2 * BS];
	bool eof;
	uint64_t x = mkfile(f, DSTORE_ROOT_INO, "x");

	fill(b, sizeof(b), 12);
	put(f, x, 0, b, sizeof(b));
	/* another process sees new chunks once their deltas are applied */
	assert_int_equal(dstore_apply_pending(f->ds), 0);
	p.read_only = true;
	p.block_size = 0;
	assert_int_equal(dstore_open(f->dir, &p, &ro, err, sizeof(err)), 0);
	assert_int_equal(dstore_stats(ro, &st), 0);
	assert_int_equal(st.files, 1);
	assert_int_equal(st.chunks, 2);
	assert_int_equal(dstore_read(ro, x, 0, b, sizeof(b), &eof), sizeof(b));
	assert_int_equal(dstore_write(ro, x, 0, b, 1, false, NULL), -EROFS);
	dstore_close(ro);
	assert_int_equal(dstore_open("/nonexistent-store", &p, &ro, err,
				     sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "not a SeaCache dedup store"));
}

static void test_bad_params(void **state)
{
	struct fixture *f = *state;
	struct dstore_params p = f->p;
	struct dstore *ds;
	char err[256];

	p.block_size = 5000;
	assert_int_equal(dstore_open(f->dir, &p, &ds, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "Block_Size"));
	/* a second writer is refused while the store is open */
	p = f->p;
	assert_int_equal(dstore_open(f->dir, &p, &ds, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "in use"));
	/* a store's block size cannot change */
	dstore_close(f->ds);
	p.block_size = 8192;
	f->log_errors = 0;
	assert_int_equal(dstore_open(f->dir, &p, &ds, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "Block_Size = 4096"));
	assert_int_equal(f->log_errors, 0);	/* the refusal alone, no noise */
	p.block_size = 4096;
	assert_int_equal(dstore_open(f->dir, &p, &f->ds, err, sizeof(err)), 0);
}

/* A store of another format is refused, saying which. */
static void test_old_format(void **state)
{
	struct fixture *f = *state;
	struct super_rec sb;
	struct dstore *ds;
	struct wtxn w;
	char err[256];

	assert_int_equal(wtxn_begin(f->ds, &w), 0);
	assert_int_equal(meta_get(f->ds, w.txn, "super", &sb, sizeof(sb)), 0);
	sb.format = 1;
	assert_int_equal(meta_put(f->ds, w.txn, "super", &sb, sizeof(sb)), 0);
	assert_int_equal(wtxn_end(&w, 0), 0);
	dstore_close(f->ds);
	f->ds = NULL;
	assert_int_equal(dstore_open(f->dir, &f->p, &ds, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "format 1;"));
	f->p.read_only = true;
	assert_int_equal(dstore_open(f->dir, &f->p, &ds, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "format 1;"));
}

static void corrupt_container(struct fixture *f, uint64_t slot)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/containers/%08llu.dat", f->dir,
		 (unsigned long long)(slot / (f->p.container_size / BS)));
	fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "X", 1,
				(off_t)(slot % (f->p.container_size / BS)) * BS + 9), 1);
	close(fd);
}

static void test_corruption(void **state)
{
	struct fixture *f = *state;
	uint8_t b[4 * BS], got[4 * BS];
	struct dstore_fsck_report r;
	struct chunk_rec c;
	struct sc_hash h;
	MDB_txn *txn;
	bool eof;
	uint64_t x = mkfile(f, DSTORE_ROOT_INO, "x");

	fill(b, sizeof(b), 5);
	put(f, x, 0, b, sizeof(b));
	assert_int_equal(dstore_apply_pending(f->ds), 0);
	assert_int_equal(dstore_block_hash(f->ds, x, 2, &h), 0);
	assert_int_equal(rtxn_begin(f->ds, &txn), 0);
	assert_int_equal(chunk_get(f->ds, txn, &h, &c), 0);
	mdb_txn_abort(txn);
	corrupt_container(f, c.slot);
	f->log_errors = 0;
	assert_int_equal(dstore_read(f->ds, x, 0, got, sizeof(got), &eof), -EIO);
	assert_true(f->log_errors > 0);
	/* the other blocks still read */
	assert_int_equal(dstore_read(f->ds, x, 0, got, 2 * BS, &eof), 2 * BS);
	assert_memory_equal(got, b, 2 * BS);
	assert_int_equal(dstore_fsck(f->ds, 0, &r), 0);
	assert_int_equal(r.problems, 1);
	/* repair cannot invent the data: still reported */
	assert_int_equal(dstore_fsck(f->ds, DSTORE_FSCK_REPAIR, &r), 0);
	assert_int_equal(r.problems, 1);
	assert_int_equal(r.repaired, 0);
}

static void test_fsck_repair(void **state)
{
	struct fixture *f = *state;
	uint8_t b[4 * BS], got[BS];
	struct dstore_fsck_report r;
	struct inode_rec ir;
	struct chunk_rec c;
	struct bmap_group g;
	struct sc_hash h;
	struct wtxn w;
	MDB_cursor *cur;
	uint8_t gk[16];
	MDB_val kg = { sizeof(gk), gk }, vg;
	bool eof;
	uint64_t x = mkfile(f, DSTORE_ROOT_INO, "x");

	fill(b, sizeof(b), 6);
	put(f, x, 0, b, sizeof(b));
	assert_int_equal(dstore_block_hash(f->ds, x, 1, &h), 0);
	assert_int_equal(dstore_apply_pending(f->ds), 0);
	/* break a reference count, a link count and a CSI-Map entry */
	assert_int_equal(wtxn_begin(f->ds, &w), 0);
	assert_int_equal(chunk_get(f->ds, w.txn, &h, &c), 0);
	c.refs = 5;
	MDB_val k = { SC_HASH_LEN, h.b }, v = { sizeof(c), &c };

	assert_int_equal(mdb_put(w.txn, f->ds->db_chunk, &k, &v, 0), 0);
	assert_int_equal(inode_get(f->ds, w.txn, x, &ir, NULL, 0), 0);
	ir.nlink = 3;
	assert_int_equal(inode_put(&w, x, &ir, NULL), 0);
	uint8_t ck[CSIMAP_PREFIX + 16];
	MDB_val kc = { sizeof(ck), ck };

	key_csimap(ck, &h, x, 1);
	assert_int_equal(mdb_del(w.txn, f->ds->db_csimap, &kc, NULL), 0);
	w.c.chunks += 2;
	/* and block 2's slot in the block map: another block's */
	key_bmap(gk, x, 0);
	assert_int_equal(mdb_cursor_open(w.txn, f->ds->db_bmap, &cur), 0);
	assert_int_equal(mdb_cursor_get(cur, &kg, &vg, MDB_SET), 0);
	assert_int_equal(group_decode(f->ds, &vg, &g), 0);
	g.loc[2].slot = g.loc[3].slot;
	assert_int_equal(group_write(&w, cur, &g), 0);
	mdb_cursor_close(cur);
	assert_int_equal(wtxn_end(&w, 0), 0);

	/* the read finds block 3's content where block 2's should be */
	f->log_errors = 0;
	assert_int_equal(dstore_read(f->ds, x, 2 * BS, got, BS, &eof), -EIO);
	assert_true(f->log_errors > 0);
	assert_int_equal(dstore_fsck(f->ds, 0, &r), 0);
	assert_int_equal(r.problems, 5);
	assert_int_equal(dstore_fsck(f->ds, DSTORE_FSCK_REPAIR, &r), 0);
	assert_true(r.repaired >= 5);
	fsck_clean(f);
	expect(f, x, 0, b, sizeof(b));
}

static void test_online_reclaim(void **state)
{
	struct fixture *f = *state;
	uint8_t b[8 * BS];
	struct dstore_stats st;
	uint64_t x;

	f->p.reclaim_interval_ms = 10;
	store_reopen(f);
	x = mkfile(f, DSTORE_ROOT_INO, "x");
	fill(b, sizeof(b), 11);
	put(f, x, 0, b, sizeof(b));
	assert_int_equal(dstore_remove(f->ds, DSTORE_ROOT_INO, "x"), 0);
	/* the reclaimer runs every 10 ms: wait for it, for at most 30 s */
	for (int i = 0; i < 3000; i++) {
		assert_int_equal(dstore_stats(f->ds, &st), 0);
		if (st.reclaimed_slots == 8)
			break;
		usleep(10000);
	}
	assert_int_equal(st.reclaimed_slots, 8);
	assert_int_equal(st.dead_slots, 0);
	fsck_clean(f);
}

struct writer {
	struct fixture *f;
	uint64_t ino;
	int id;
};

/* Each thread writes its own file and a quarter of a shared one. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t *b = malloc(16 * BS);

	if (!WCHECK(b))
		return NULL;
	for (int round = 0; round < 8; round++) {
		fill(b, 16 * BS, (uint64_t)w->id * 100 + round);
		if (round % 2)	/* half the rounds: content every thread writes */
			fill(b, 16 * BS, 4242 + round);
		if (!WCHECK_EQ(dstore_write(w->f->ds, w->ino, round * 16 * BS,
					    b, 16 * BS, round == 7, NULL),
			       16 * BS))
			break;
	}
	free(b);
	return NULL;
}

static void test_concurrent_writers(void **state)
{
	struct fixture *f = *state;
	struct writer w[4];
	pthread_t t[4];
	uint8_t *b = malloc(16 * BS);
	char name[16];

	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "w%d", i);
		w[i] = (struct writer){ f, mkfile(f, DSTORE_ROOT_INO, name), i };
		assert_int_equal(pthread_create(&t[i], NULL, writer_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	worker_checks_passed();
	for (int i = 0; i < 4; i++) {
		for (int round = 0; round < 8; round++) {
			fill(b, 16 * BS, round % 2 ? 4242u + (unsigned int)round :
				(uint64_t)i * 100 + round);
			expect(f, w[i].ino, round * 16 * BS, b, 16 * BS);
		}
	}
	free(b);
	fsck_clean(f);
}

/* A writer of one block that makes it stable with dstore_sync. */
static void *syncer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t b[BS];

	fill(b, BS, 7000 + (uint64_t)w->id);
	if (WCHECK_EQ(dstore_write(w->f->ds, w->ino, 0, b, BS, false, NULL),
		      BS))
		WCHECK_EQ(dstore_sync(w->f->ds), 0);
	return NULL;
}

/* Syncs run, and of them those that synced the index. */
static void syncs_run(struct dstore *ds, uint64_t *all, uint64_t *index)
{
	pthread_mutex_lock(&ds->sync_lock);
	*all = ds->syncs;
	*index = ds->index_syncs;
	pthread_mutex_unlock(&ds->sync_lock);
}

/*
 * Group commit: syncs that find one under way wait for it and then share
 * one more (the test holds a sync "under way" until all eight wait); a
 * sync after no index transaction leaves the index alone; the writes are
 * there after a reopen.
 */
static void test_sync_group(void **state)
{
	struct fixture *f = *state;
	struct dstore *ds = f->ds;
	struct writer w[8];
	pthread_t t[8];
	uint64_t all, index, all_now, index_now, asked;
	uint8_t b[BS];
	char name[16];

	assert_int_equal(dstore_sync(ds), 0);
	syncs_run(ds, &all, &index);
	assert_int_equal(dstore_sync(ds), 0);
	syncs_run(ds, &all_now, &index_now);
	assert_int_equal(all_now, all + 1);
	assert_int_equal(index_now, index);

	pthread_mutex_lock(&ds->sync_lock);
	ds->syncing = true;
	asked = ds->sync_asked;
	pthread_mutex_unlock(&ds->sync_lock);
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		w[i] = (struct writer){ f, mkfile(f, DSTORE_ROOT_INO, name), i };
		assert_int_equal(pthread_create(&t[i], NULL, syncer_main, &w[i]),
				 0);
	}
	for (;;) {
		pthread_mutex_lock(&ds->sync_lock);
		if (ds->sync_asked == asked + 8)
			break;
		pthread_mutex_unlock(&ds->sync_lock);
		usleep(1000);
	}
	ds->syncing = false;
	pthread_cond_broadcast(&ds->sync_cond);
	pthread_mutex_unlock(&ds->sync_lock);
	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	worker_checks_passed();
	syncs_run(ds, &all, &index);
	assert_int_equal(all, all_now + 1);
	assert_int_equal(index, index_now + 1);
	assert_int_equal(ds->sync_done, asked + 8);

	store_reopen(f);
	for (int i = 0; i < 8; i++) {
		fill(b, BS, 7000 + (uint64_t)i);
		expect(f, w[i].ino, 0, b, BS);
	}
}

/*
 * Writers through a write-back buffer of the smallest size: it fills
 * again and again, so writers wait for flushes (their own or another's),
 * the flusher runs on a half-full buffer and dstore_sync calls race them;
 * each writer reads every write back at once (held or flushed by then).
 */
#define WB_WRITES 32
#define WB_IO (16 * BS)

static void *wb_writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t *b = malloc(WB_IO), *got = malloc(WB_IO);
	bool eof;

	if (!WCHECK(b && got))
		goto out;
	for (int i = 0; i < WB_WRITES; i++) {
		fill(b, WB_IO, (uint64_t)w->id << 32 | (i % 3 ? i : 7));
		if (!WCHECK_EQ(dstore_write(w->f->ds, w->ino, (uint64_t)i * WB_IO, b,
					    WB_IO, i % 8 == 7, NULL), WB_IO) ||
		    !WCHECK_EQ(dstore_read(w->f->ds, w->ino, (uint64_t)i * WB_IO, got,
					   WB_IO, &eof), WB_IO) ||
		    !WCHECK(memcmp(b, got, WB_IO) == 0))
			break;
		if (w->id == 0 && i % 4 == 0 && !WCHECK_EQ(dstore_sync(w->f->ds), 0))
			break;
	}
out:
	free(b);
	free(got);
	return NULL;
}

static void test_writeback_full(void **state)
{
	struct fixture *f = *state;
	uint8_t *b = malloc(WB_IO);
	struct writer w[4];
	pthread_t t[4];
	char name[16];

	f->p.writeback_bytes = DSTORE_WRITEBACK_MIN;
	f->p.writeback_interval_ms = 10;
	store_reopen(f);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "wb%d", i);
		w[i] = (struct writer){ f, mkfile(f, DSTORE_ROOT_INO, name), i };
		assert_int_equal(pthread_create(&t[i], NULL, wb_writer_main, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	worker_checks_passed();
	store_reopen(f);
	for (int i = 0; i < 4; i++) {
		for (int k = 0; k < WB_WRITES; k++) {
			fill(b, WB_IO, (uint64_t)i << 32 | (k % 3 ? k : 7));
			expect(f, w[i].ino, (uint64_t)k * WB_IO, b, WB_IO);
		}
	}
	free(b);
	fsck_clean(f);
}

/* dstore_write_blocks of n blocks of b from lbn (hash: known hashes). */
static int write_blocks(struct fixture *f, uint64_t ino, uint64_t lbn,
			uint32_t n, const uint8_t *b, const uint8_t *skip,
			const struct sc_hash *hash, uint64_t end, bool stable,
			struct dstore_attr *pre, struct dstore_attr *post)
{
	struct dstore_wblocks w = { .lbn = lbn, .n = n, .buf = b,
				    .skip = skip, .hash = hash, .end = end,
				    .stable = stable };

	return dstore_write_blocks(f->ds, ino, &w, pre, post);
}

/*
 * dstore_write_blocks: skipped blocks keep their content, the size moves
 * to end even when the blocks that reach it are skipped, the tail past
 * end is not stored, and dstore_read_content finds stored content only.
 */
static void test_write_blocks(void **state)
{
	struct fixture *f = *state;
	uint64_t ino = mkfile(f, DSTORE_ROOT_INO, "wb");
	uint8_t *b = calloc(4, BS), *old = malloc(4 * BS), got[BS];
	uint8_t skip[4] = { 0, 1, 0, 1 };
	struct dstore_attr pre, post;
	struct sc_hash h, hv[4];

	fill(old, 4 * BS, 1);
	put(f, ino, 0, old, 2 * BS);
	fill(b, 4 * BS, 2);
	/* hashes given are taken as they are (fsck recomputes them below) */
	for (int i = 0; i < 4; i++)
		assert_int_equal(sc_hasher_digest(dstore_hasher(f->ds),
						  b + i * BS, BS, &hv[i]), 0);
	/* block 3, which reaches end, is skipped: the size moves anyway */
	assert_int_equal(write_blocks(f, ino, 0, 4, b, skip, hv,
				      3 * BS + 100, true, &pre, &post), 0);
	assert_int_equal(pre.size, 2 * BS);
	assert_int_equal(post.size, 3 * BS + 100);
	assert_true(post.change > pre.change);
	expect(f, ino, 0, b, BS);
	expect(f, ino, BS, old + BS, BS);
	expect(f, ino, 2 * BS, b + 2 * BS, BS);
	expect(f, ino, 3 * BS, (uint8_t[100]){ 0 }, 100);
	/* a short last block: its bytes up to end */
	memset(b + 3 * BS + 100, 0, BS - 100);
	assert_int_equal(write_blocks(f, ino, 3, 1, b + 3 * BS, NULL, NULL,
				      3 * BS + 100, false, &pre, &post), 0);
	assert_int_equal(post.size, 3 * BS + 100);
	expect(f, ino, 3 * BS, b + 3 * BS, 100);
	/* nothing but a skipped block reaching past the size: only the size */
	skip[0] = skip[2] = 1;
	assert_int_equal(write_blocks(f, ino, 4, 4, b, skip, NULL, 8 * BS,
				      false, &pre, &post), 0);
	assert_int_equal(post.size, 8 * BS);
	expect(f, ino, 7 * BS, (uint8_t[BS]){ 0 }, BS);
	assert_int_equal(write_blocks(f, DSTORE_ROOT_INO, 0, 1, b, NULL, NULL,
				      BS, false, &pre, &post), -EISDIR);

	assert_int_equal(sc_hasher_digest(dstore_hasher(f->ds), b, BS, &h), 0);
	assert_int_equal(dstore_read_content(f->ds, &h, got), 0);
	assert_memory_equal(got, b, BS);
	h.b[0] ^= 1;
	assert_int_equal(dstore_read_content(f->ds, &h, got), -ENOENT);
	free(b);
	free(old);
	fsck_clean(f);
}

/*
 * The write-back buffer's table of contents held, through many adds and
 * removals (more contents than its first size, so it grows): a content
 * held by a block, or by a block of another file, is found by its hash
 * (dstore_read_content), one no block holds any more is not (nothing is
 * flushed meanwhile, so none is stored), and everything reads back as
 * written once indexed.
 */
#define HELD_N 3000

static void held_hash(struct fixture *f, uint64_t seed, uint8_t *b,
		      struct sc_hash *h)
{
	fill(b, BS, seed);
	assert_int_equal(sc_hasher_digest(dstore_hasher(f->ds), b, BS, h), 0);
}

static void test_writeback_contents(void **state)
{
	struct fixture *f = *state;
	uint64_t a, c;
	uint8_t b[BS], got[BS];
	struct sc_hash h;

	f->p.writeback_interval_ms = 3600000;	/* no flush but the test's */
	store_reopen(f);
	a = mkfile(f, DSTORE_ROOT_INO, "a");
	c = mkfile(f, DSTORE_ROOT_INO, "c");
	for (uint64_t i = 0; i < HELD_N; i++) {
		fill(b, BS, 1000 + i);
		put(f, a, i * BS, b, BS);
		if (i < HELD_N / 4)
			put(f, c, i * BS, b, BS);
	}
	/* the even blocks of a get new contents: the old ones go */
	for (uint64_t i = 0; i < HELD_N; i += 2) {
		fill(b, BS, 100000 + i);
		put(f, a, i * BS, b, BS);
	}
	for (uint64_t i = 0; i < HELD_N; i++) {
		bool gone = i % 2 == 0 && i >= HELD_N / 4;

		held_hash(f, 1000 + i, b, &h);
		assert_int_equal(dstore_read_content(f->ds, &h, got),
				 gone ? -ENOENT : 0);
		if (!gone)
			assert_memory_equal(got, b, BS);
		if (i % 2 == 0) {
			held_hash(f, 100000 + i, b, &h);
			assert_int_equal(dstore_read_content(f->ds, &h, got), 0);
			assert_memory_equal(got, b, BS);
		}
	}
	assert_int_equal(dstore_sync(f->ds), 0);
	for (uint64_t i = 0; i < HELD_N; i++) {
		fill(b, BS, (i % 2 ? 1000 : 100000) + i);
		expect(f, a, i * BS, b, BS);
		if (i < HELD_N / 4) {
			fill(b, BS, 1000 + i);
			expect(f, c, i * BS, b, BS);
		}
	}
	fsck_clean(f);
}

struct nfs_writer {
	struct fixture *f;
	uint64_t ino;
	uint64_t changes[64];	/* the change id after each of its writes */
};

static void *nfs_writer_main(void *arg)
{
	struct nfs_writer *w = arg;
	struct dstore_attr a;
	uint8_t b[BS];

	for (int i = 0; i < 64; i++) {
		fill(b, BS, 1000 + (uint64_t)i);
		if (!WCHECK_EQ(dstore_write(w->f->ds, w->ino,
					    (uint64_t)(i % 8) * BS, b, BS,
					    false, &a), BS))
			break;
		w->changes[i] = a.change;
	}
	return NULL;
}

/*
 * No other data write of the file falls between a dstore_write_blocks'
 * pre and post: no change id another writer produced lies in (pre, post].
 */
static void test_write_blocks_exclusive(void **state)
{
	struct fixture *f = *state;
	struct nfs_writer w = { f, mkfile(f, DSTORE_ROOT_INO, "ex"), { 0 } };
	uint64_t pre_c[64], post_c[64];
	struct dstore_attr pre, post;
	uint8_t b[2 * BS];
	pthread_t t;

	assert_int_equal(pthread_create(&t, NULL, nfs_writer_main, &w), 0);
	for (int i = 0; i < 64; i++) {
		fill(b, sizeof(b), 2000 + (uint64_t)i);
		assert_int_equal(write_blocks(f, w.ino, (uint64_t)(i % 4) * 2,
					      2, b, NULL, NULL, 8 * BS, false,
					      &pre, &post), 0);
		pre_c[i] = pre.change;
		post_c[i] = post.change;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	worker_checks_passed();
	for (int i = 0; i < 64; i++)
		for (int k = 0; k < 64; k++)
			assert_false(w.changes[k] > pre_c[i] &&
				     w.changes[k] <= post_c[i]);
	fsck_clean(f);
}

/*
 * Every write that changes a file's data gives it a new change id, even
 * when a flush indexes and lets go of the file's held writes while the
 * write is being planned: that flush commits the held change id to the
 * index after the write read the index's, and a write-back entry made
 * anew from the index's older one handed the same id out again (hosts
 * then kept mappings of the older data under it).  A thread flushes
 * without pause while one block is rewritten with new content.
 */
#define CHANGE_WRITES 3000
#define CHANGE_FLUSHES 300
#define CHANGE_WRITES_MAX 300000

struct flusher {
	struct fixture *f;
	atomic_bool stop;
	atomic_ulong flushes;
};

static void *flusher_main(void *arg)
{
	struct flusher *fl = arg;

	while (!atomic_load(&fl->stop)) {
		if (!WCHECK_EQ(dstore_sync(fl->f->ds), 0))
			break;
		atomic_fetch_add(&fl->flushes, 1);
	}
	return NULL;
}

static void test_change_across_flushes(void **state)
{
	struct fixture *f = *state;
	struct flusher fl = { .f = f };
	uint64_t ino = mkfile(f, DSTORE_ROOT_INO, "chg"), last = 0;
	struct dstore_attr pre, post;
	unsigned int reused = 0;
	uint8_t b[BS];
	pthread_t t;
	int i;

	atomic_init(&fl.flushes, 0);
	atomic_init(&fl.stop, false);
	assert_int_equal(pthread_create(&t, NULL, flusher_main, &fl), 0);
	/* enough writes, and enough flushes among them to meet one */
	for (i = 0; i < CHANGE_WRITES_MAX &&
	     (i < CHANGE_WRITES || atomic_load(&fl.flushes) < CHANGE_FLUSHES);
	     i++) {
		fill(b, BS, 3000 + (uint64_t)i);
		assert_int_equal(write_blocks(f, ino, 0, 1, b, NULL, NULL, BS,
					      false, &pre, &post), 0);
		reused += post.change <= pre.change || pre.change < last;
		last = post.change;
	}
	atomic_store(&fl.stop, true);
	assert_int_equal(pthread_join(t, NULL), 0);
	worker_checks_passed();
	printf("%d writes, %lu flushes, %u change ids not new\n", i,
	       atomic_load(&fl.flushes), reused);
	assert_int_equal(reused, 0);
	expect(f, ino, 0, b, BS);
	fsck_clean(f);
}

/*
 * A chunk's check is the store's format: whatever XXH3 implementation
 * computes it (the x86 dispatcher's vector code), it is the value of the
 * reference XXH3_64bits, here the library's plain entry point, for every
 * length and alignment; and one fixed vector pins it.
 */
static void test_chunk_checksum_format(void **state)
{
	uint8_t *buf = malloc(8192 + 64);
	struct sc_prng r;

	(void)state;
	assert_non_null(buf);
	sc_prng_seed(&r, 0xc4ec);
	for (size_t i = 0; i < 8192 + 64; i++)
		buf[i] = (uint8_t)sc_prng_next(&r);
	for (size_t len = 0; len <= 8192; len += len < 300 ? 1 : 509)
		for (size_t a = 0; a < 64; a += 13)
			assert_int_equal(chunk_checksum(buf + a, len),
					 (uint32_t)XXH3_64bits(buf + a, len));
	/* bytes 0, 1, ..., 255, 0, 1, ...: the low 32 bits of its XXH3 */
	for (size_t i = 0; i < 4096; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(chunk_checksum(buf, 4096), 0x07879151u);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chunk_checksum_format),
		cmocka_unit_test_setup_teardown(test_namespace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_readdir_cookies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_data_cases, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dedup_silent_reclaim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_csimap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_online_reclaim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_persistence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_only_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_params, setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corruption, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fsck_repair, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_writers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sync_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writeback_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writeback_contents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_blocks_exclusive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_change_across_flushes, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
