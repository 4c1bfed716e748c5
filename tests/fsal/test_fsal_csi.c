// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI service inside a real ganesha.nfsd (FSAL_DEDUP with CSI_Port
 * set), next to NFS: files written over NFSv3 are read over CSI by two
 * hosts with W/Tracker, block by block equal to what NFS wrote; a block
 * rewritten over NFS comes back over CSI as new data; the service's
 * thread stops with the server (the harness fails a run whose server does
 * not stop cleanly).
 *
 * CSI_PORT (environment) is the port the server's config gives.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <seacache/csi_codec.h>
#include <seacache/rpc_transport.h>

#include "nfs_harness.h"

#define D "/csi"
#define BS 4096u
#define NBLK 64u
#define SEED 0xc5100ull

static struct nfs_context *v3;
static struct sc_rpc_client *c;
static uint8_t img[NBLK * BS];

struct reg {
	uint64_t host;
	uint64_t epoch;
};

static struct reg hello(uint8_t uuid_byte)
{
	struct csi_hello_args a;
	struct csi_hello_res r;
	struct sc_rpc_reply *rep;
	struct reg g;

	memset(&a, 0, sizeof(a));
	memset(a.host_uuid, uuid_byte, sizeof(a.host_uuid));
	a.host_name.p = (const uint8_t *)"test";
	a.host_name.len = 4;
	a.features = CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER;
	assert_int_equal(sc_rpc_call(c, CSI_PROC_HELLO, &a, &r, &rep), 0);
	assert_int_equal(r.status, CSI_OK);
	assert_int_equal(r.features, CSI_FEAT_READ_HASH | CSI_FEAT_TRACKER);
	assert_int_equal(r.block_size, BS);
	g.host = r.host;
	g.epoch = r.epoch;
	sc_rpc_reply_free(rep);
	return g;
}

/*
 * READs all of file as g, 32 blocks a call; counts the DATA and HASH
 * answers and checks every DATA block against want.
 */
static void read_all(struct reg g, uint64_t file, const uint8_t *want,
		     unsigned int *data, unsigned int *hash)
{
	*data = *hash = 0;
	for (uint32_t lbn = 0; lbn < NBLK; lbn += 32) {
		struct csi_read_args a;
		struct csi_read_res r;
		struct sc_rpc_reply *rep;

		memset(&a, 0, sizeof(a));
		a.hdr.host = g.host;
		a.hdr.epoch = g.epoch;
		a.file = file;
		a.lbn = lbn;
		a.count = 32;
		a.flags = CSI_READ_WANT_DATA;
		assert_int_equal(sc_rpc_call(c, CSI_PROC_READ, &a, &r, &rep), 0);
		assert_int_equal(r.status, CSI_OK);
		assert_int_equal(r.nblocks, 32);
		assert_int_equal(r.attr.size, NBLK * BS);
		for (uint32_t i = 0; i < r.nblocks; i++) {
			const struct csi_read_block *b = &r.blocks[i];
			uint8_t blk[BS] = { 0 };

			if (b->kind == CSI_RK_HASH) {
				(*hash)++;
				continue;
			}
			assert_int_equal(b->kind, CSI_RK_DATA);
			assert_true(b->data.len <= BS);
			memcpy(blk, b->data.p, b->data.len);
			assert_memory_equal(blk, want + (lbn + i) * BS, BS);
			(*data)++;
		}
		sc_rpc_reply_free(rep);
	}
}

static uint64_t fileid(const char *path)
{
	struct nfs_stat_64 st;

	assert_int_equal(nfs_stat64(v3, path, &st), 0);
	return st.nfs_ino;
}

/* seacachectl stats --server: the totals of the reads above. */
static void stats_check(void)
{
	char server[32], *out = NULL;
	char *json[] = { (char *)nh_seacachectl(), "stats", "--server", server,
			 "--json", NULL };
	char *prom[] = { (char *)nh_seacachectl(), "stats", "--server", server,
			 "--prometheus", NULL };
	uint64_t v;

	snprintf(server, sizeof(server), "127.0.0.1:%s", nh_env("CSI_PORT"));
	assert_int_equal(nh_run(json, &out), 0);
	/* the server-wide counters come first */
	assert_int_equal(nh_json_u64(out, "read.data_blocks", &v), 0);
	assert_int_equal(v, 2 * NBLK + 1);
	assert_int_equal(nh_json_u64(out, "read.hash_only_blocks", &v), 0);
	assert_int_equal(v, 2 * NBLK - 1);
	free(out);
	out = NULL;
	assert_int_equal(nh_run(prom, &out), 0);
	assert_non_null(strstr(out, "\nseacache_csi_read_data_blocks 129\n"));
	assert_non_null(strstr(out, "seacache_csi_read_hash_only_blocks{host="));
	free(out);
}

static void test_csi_next_to_nfs(void **state)
{
	struct sc_rpc_client_opts o = { .host = "127.0.0.1", .prog = CSI_PROG };
	unsigned int data, hash;
	struct nfsfh *fh;
	uint64_t a_id, b_id;
	struct reg ha, hb;
	uint8_t newblk[BS];

	(void)state;
	o.port = (uint16_t)atoi(nh_env("CSI_PORT"));
	assert_int_equal(nh_write_file(v3, D "/a", img, sizeof(img), 1 << 20), 0);
	assert_int_equal(nh_write_file(v3, D "/b", img, sizeof(img), 1 << 20), 0);
	a_id = fileid(D "/a");
	b_id = fileid(D "/b");
	assert_int_equal(sc_rpc_client_open(&o, &c), 0);
	ha = hello(0xaa);
	hb = hello(0xbb);

	/* A reads a: data; A reads b (same content): hashes only */
	read_all(ha, a_id, img, &data, &hash);
	assert_int_equal(data, NBLK);
	assert_int_equal(hash, 0);
	read_all(ha, b_id, img, &data, &hash);
	assert_int_equal(data, 0);
	assert_int_equal(hash, NBLK);
	/* B holds nothing yet: data */
	read_all(hb, b_id, img, &data, &hash);
	assert_int_equal(data, NBLK);

	/* a block of b rewritten over NFS is new data over CSI */
	nh_fill_seeded(newblk, BS, SEED + 1);
	assert_int_equal(nfs_open(v3, D "/b", O_RDWR, &fh), 0);
	assert_int_equal(nh_pwrite_all(v3, fh, 5 * BS, newblk, BS, BS), 0);
	assert_int_equal(nfs_fsync(v3, fh), 0);
	assert_int_equal(nfs_close(v3, fh), 0);
	memcpy(img + 5 * BS, newblk, BS);
	read_all(ha, b_id, img, &data, &hash);
	assert_int_equal(data, 1);
	assert_int_equal(hash, NBLK - 1);
	sc_rpc_client_close(c);
	c = NULL;
	stats_check();
}

static int setup(void **state)
{
	(void)state;
	nh_fill_seeded(img, sizeof(img), SEED);
	return nh_suite_setup(D, &v3, NULL);
}

static int teardown(void **state)
{
	(void)state;
	if (c)
		sc_rpc_client_close(c);
	nh_suite_teardown(&v3, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csi_next_to_nfs),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
