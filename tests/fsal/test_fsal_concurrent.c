// SPDX-License-Identifier: BSD-2-Clause
/*
 * Several NFS clients at once, each its own connection and thread, as VDI
 * hosts are: every client writes a file of its own (unique data), a file
 * of the content all clients write (the same hashes stored concurrently:
 * exactly one copy must win, the others reference it), and its ranges of
 * one shared file, whose boundaries fall inside blocks that two clients
 * write parts of at once, while the others read.  Afterwards every byte of every file is checked, from a
 * fresh connection, and for FSAL_DEDUP the store must fsck clean after the
 * server stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nfs_harness.h"

#define D "/concurrent"
#define CLIENTS 4
#define FILE_SIZE (8u << 20)
#define PIECE (1u << 20)
#define SMALL 3000u
#define SEED 0xc0c0c0ull

static struct nfs_context *v3;
static uint8_t *common, *striped, *own[CLIENTS];

/*
 * Client k % CLIENTS owns bytes [range_start(k), range_start(k + 1)) of
 * the shared file: 1 MiB ranges shifted by SHIFT bytes, so the block
 * around every range boundary is written in part by two clients at once
 * (a read-modify-write race if the server did not order them).
 */
#define SHIFT 1000u
static uint32_t range_start(uint32_t k)
{
	if (k == 0)
		return 0;
	return k >= FILE_SIZE / PIECE ? FILE_SIZE : k * PIECE + SHIFT;
}

struct client {
	int id;
	int rc;
};

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct nfs_context *nfs = nh_mount(3);
	struct nfsfh *fh;
	char path[64];
	uint8_t *back = malloc(PIECE);

	c->rc = -EIO;
	if (!nfs || !back)
		goto out;
	snprintf(path, sizeof(path), D "/own%d", c->id);
	if (nh_write_file(nfs, path, own[c->id], FILE_SIZE, PIECE))
		goto out;
	snprintf(path, sizeof(path), D "/common%d", c->id);
	if (nh_write_file(nfs, path, common, FILE_SIZE, PIECE))
		goto out;
	if (nfs_open(nfs, D "/striped", O_RDWR, &fh) < 0) {
		fprintf(stderr, "client %d: open striped: %s\n", c->id,
			nfs_get_error(nfs));
		goto out;
	}
	for (uint32_t k = (uint32_t)c->id; k < FILE_SIZE / PIECE; k += CLIENTS) {
		uint32_t start = range_start(k), end = range_start(k + 1);
		size_t got;

		/* the range less its edges, which are written below */
		if (nh_pwrite_all(nfs, fh, start + SMALL, striped + start + SMALL,
				  end - start - 2 * SMALL, PIECE))
			goto out_close;
		/* read a neighbour's range meanwhile (any old or new bytes) */
		if (nh_pread_all(nfs, fh, range_start((k + 1) % (FILE_SIZE / PIECE)),
				 back, PIECE, PIECE, &got))
			goto out_close;
	}
	for (uint32_t k = (uint32_t)c->id; k < FILE_SIZE / PIECE; k += CLIENTS) {
		uint32_t start = range_start(k), end = range_start(k + 1);

		/* edges: partial blocks, each shared with a neighbour client */
		if (nh_pwrite_all(nfs, fh, start, striped + start, SMALL, SMALL) ||
		    nh_pwrite_all(nfs, fh, end - SMALL, striped + end - SMALL,
				  SMALL, SMALL))
			goto out_close;
	}
	c->rc = nfs_fsync(nfs, fh) < 0 ? -EIO : 0;
out_close:
	nfs_close(nfs, fh);
out:
	if (nfs)
		nh_umount(nfs);
	free(back);
	return NULL;
}

static void test_concurrent_clients(void **state)
{
	struct client c[CLIENTS];
	pthread_t t[CLIENTS];
	struct nfsfh *fh;
	char path[64];

	(void)state;
	/* the shared file exists, full length, before the clients start */
	assert_int_equal(nfs_create(v3, D "/striped", O_CREAT | O_RDWR, 0644, &fh), 0);
	assert_int_equal(nfs_ftruncate(v3, fh, FILE_SIZE), 0);
	assert_int_equal(nfs_close(v3, fh), 0);
	for (int i = 0; i < CLIENTS; i++) {
		c[i] = (struct client){ .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, client_main, &c[i]), 0);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].rc, 0);
	}
	/* everything, from a connection that wrote nothing */
	nh_umount(v3);
	v3 = nh_mount(3);
	assert_non_null(v3);
	for (int i = 0; i < CLIENTS; i++) {
		snprintf(path, sizeof(path), D "/own%d", i);
		assert_int_equal(nh_check_file(v3, path, own[i], FILE_SIZE), 0);
		snprintf(path, sizeof(path), D "/common%d", i);
		assert_int_equal(nh_check_file(v3, path, common, FILE_SIZE), 0);
	}
	assert_int_equal(nh_check_file(v3, D "/striped", striped, FILE_SIZE), 0);
}

/* The store the clients raced on is consistent (DEDUP only). */
static void test_store_consistent(void **state)
{
	char *out = NULL;
	int rc;

	(void)state;
	nh_umount(v3);
	/* stops the server for fsck and starts it again */
	rc = nh_seacachectl_run("fsck", &out);
	if (rc != 0)
		fprintf(stderr, "%s", out ? out : "");
	free(out);
	v3 = nh_mount(3);
	assert_int_equal(rc, 0);
	assert_non_null(v3);
}

static int setup(void **state)
{
	(void)state;
	common = malloc(FILE_SIZE);
	striped = malloc(FILE_SIZE);
	if (!common || !striped)
		return -1;
	nh_fill_seeded(common, FILE_SIZE, SEED);
	nh_fill_seeded(striped, FILE_SIZE, SEED + 1);
	for (int i = 0; i < CLIENTS; i++) {
		own[i] = malloc(FILE_SIZE);
		if (!own[i])
			return -1;
		nh_fill_seeded(own[i], FILE_SIZE, SEED + 2 + (uint64_t)i);
	}
	return nh_suite_setup(D, &v3, NULL);
}

static int teardown(void **state)
{
	(void)state;
	nh_suite_teardown(&v3, NULL);
	for (int i = 0; i < CLIENTS; i++)
		free(own[i]);
	free(common);
	free(striped);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_clients),
		cmocka_unit_test(test_store_consistent),
	};
	/* FSAL_VFS has no store to check: its run leaves the last test out */
	size_t n = nh_is_dedup() ? 2 : 1;

	return _cmocka_run_group_tests("fsal_concurrent", tests, n, setup,
				       teardown);
}
