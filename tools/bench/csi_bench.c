// SPDX-License-Identifier: BSD-2-Clause
/*
 * The CSI protocol's speed: the codec on a 64-block READ reply, and READ
 * calls through our transport over loopback with eight in flight.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "csi_bench.h"
#include "seacache/rpc_transport.h"

#define BS 4096u
#define NBLOCKS 64u
#define INFLIGHT 8u

static uint8_t payload[NBLOCKS * BS];
static struct csi_read_block reply_blocks[NBLOCKS];

static double elapsed_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* A 64-block reply: all data, or all hash-only. */
static void fill_reply(struct csi_read_res *r, bool data)
{
	uint32_t i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < NBLOCKS; i++) {
		reply_blocks[i].kind = data ? CSI_RK_DATA : CSI_RK_HASH;
		reply_blocks[i].hash.b[0] = (uint8_t)i;
		reply_blocks[i].data.p = payload + i * BS;
		reply_blocks[i].data.len = BS;
	}
	r->status = CSI_OK;
	r->blocks = reply_blocks;
	r->nblocks = NBLOCKS;
}

void bench_csi_codec(double seconds)
{
	size_t cap = sizeof(payload) + 64 * 1024, len = 0, alen;
	uint8_t *buf = malloc(cap), *arena;
	struct csi_read_res r, d;
	struct timespec t0;
	uint64_t n = 0;
	double t;

	memset(payload, 0x5a, sizeof(payload));
	fill_reply(&r, true);
	alen = csi_decode_arena_size(CSI_MSG_READ_RES, cap);
	arena = malloc(alen);
	if (!buf || !arena) {
		fprintf(stderr, "seacache-bench: out of memory\n");
		exit(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (csi_encode(CSI_MSG_READ_RES, &r, buf, cap, &len) ||
		    csi_decode(CSI_MSG_READ_RES, buf, len, &d, arena, alen) ||
		    d.nblocks != NBLOCKS) {
			fprintf(stderr, "seacache-bench: codec failed\n");
			exit(1);
		}
		n++;
		t = elapsed_since(&t0);
	} while (t < seconds);
	printf("csi_codec_read_reply %9.2f GB/s payload  (64 x 4 KiB, encode + decode, %zu bytes)\n",
	       (double)n * sizeof(payload) / t / 1e9, len);
	free(arena);
	free(buf);
}

static int bench_handle(void *ctx, struct sc_rpc_request *rq)
{
	const struct csi_read_args *a = rq->args;

	(void)ctx;
	fill_reply(rq->res, a->flags & CSI_READ_WANT_DATA);
	return 0;
}

static void *server_main(void *srv)
{
	sc_rpc_server_run(srv);
	return NULL;
}

/* Calls of 64 blocks, INFLIGHT at a time, for `seconds`; calls per second. */
static double pipelined_reads(struct sc_rpc_client *c, bool data,
			      double seconds)
{
	struct csi_read_args a = { .count = NBLOCKS };
	uint32_t xid[INFLIGHT];
	struct sc_rpc_reply *rep;
	struct csi_read_res r;
	struct timespec t0;
	uint64_t calls = 0;
	unsigned int i = 0;
	double t;

	a.flags = data ? CSI_READ_WANT_DATA : 0;
	for (i = 0; i < INFLIGHT; i++)
		if (sc_rpc_start(c, CSI_PROC_READ, &a, &xid[i]))
			return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	i = 0;
	do {
		if (sc_rpc_finish(c, xid[i], &r, &rep) ||
		    r.nblocks != NBLOCKS)
			return 0;
		sc_rpc_reply_free(rep);
		calls++;
		if (sc_rpc_start(c, CSI_PROC_READ, &a, &xid[i]))
			return 0;
		i = (i + 1) % INFLIGHT;
		t = elapsed_since(&t0);
	} while (t < seconds);
	for (i = 0; i < INFLIGHT; i++)
		if (!sc_rpc_finish(c, xid[i], &r, &rep))
			sc_rpc_reply_free(rep);
	return (double)calls / t;
}

void bench_csi_rpc(double seconds)
{
	static const struct sc_rpc_service svc = { CSI_PROG, bench_handle,
						   NULL };
	struct sc_rpc_server_opts so = { 0 };
	struct sc_rpc_client_opts co = { .host = "127.0.0.1", .prog = CSI_PROG,
					 .max_inflight = INFLIGHT };
	struct sc_rpc_server *srv;
	struct sc_rpc_client *c;
	pthread_t th;
	double data_cps, hash_cps;

	if (sc_rpc_server_new(&so, &svc, 1, &srv) ||
	    pthread_create(&th, NULL, server_main, srv)) {
		fprintf(stderr, "seacache-bench: cannot start an RPC server on loopback\n");
		exit(1);
	}
	co.port = sc_rpc_server_port(srv);
	if (sc_rpc_client_open(&co, &c)) {
		fprintf(stderr, "seacache-bench: cannot connect to 127.0.0.1:%u\n",
			co.port);
		exit(1);
	}
	data_cps = pipelined_reads(c, true, seconds);
	hash_cps = pipelined_reads(c, false, seconds);
	sc_rpc_client_close(c);
	sc_rpc_server_stop(srv);
	pthread_join(th, NULL);
	sc_rpc_server_free(srv);
	if (!data_cps || !hash_cps) {
		fprintf(stderr, "seacache-bench: RPC calls failed\n");
		exit(1);
	}
	printf("csi_rpc_read_256k    %9.2f GB/s payload  (%.0f calls/s, %u in flight, loopback)\n",
	       data_cps * sizeof(payload) / 1e9, data_cps, INFLIGHT);
	printf("csi_rpc_read_hashes  %9.0f calls/s       (64 hash-only blocks per reply)\n",
	       hash_cps);
}
