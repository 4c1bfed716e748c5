/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The simulator's system model (SeaCache paper, section IV-A): VMs with
 * private LRU caches, hosts of K VMs each with a host cache under any
 * policy (lib/include/seacache/dcache.h), a storage server with a content cache, its
 * CSI-Map (address -> content, content -> addresses) and the cache
 * tracker (which host holds which content), and the seven protocol
 * variants (seacache/variant.h: the CSV names them by their paper names).  Also the single-cache mode of the policy papers.
 */
#ifndef SEACACHE_SIM_MODEL_H
#define SEACACHE_SIM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "seacache/dcache.h"
#include "seacache/variant.h"
#include "trace.h"

enum sim_mode { SIM_MODE_SYSTEM, SIM_MODE_CACHE };

struct sim_params {
	enum sim_mode mode;
	enum sc_variant variant;	/* system mode */
	const char *policy;		/* host cache / the cache */
	const char *server_policy;	/* "lru" */
	uint32_t block_size;
	uint32_t vms;			/* 0: every VM of the trace */
	uint32_t vms_per_host;
	uint32_t vm_cache_blocks;	/* 0: no VM caches */
	uint32_t host_cache_blocks;
	uint32_t server_cache_blocks;
	double net_ms, disk_ms;
	uint32_t hash_bytes;		/* a hash / CSI entry on the wire */
	uint32_t hdr_bytes;		/* a request or reply header */
	uint32_t max_push;		/* CSI entries pushed per reply */
};

struct sim_result {
	uint64_t requests, reads, writes, read_blocks, write_blocks;
	uint64_t vm_hits, host_hits, content_hits, read_misses;
	uint64_t write_hits;		/* cache mode: content already cached */
	uint64_t loads, evictions, silent_writes;
	uint64_t server_bytes, data_bytes, csi_bytes, peer_bytes;
	uint64_t disk_reads, disk_writes;
	double lat_sum_ms, read_lat_sum_ms;	/* per request */
	uint64_t tracked_blocks, sim_meta_bytes;
	uint32_t vms, hosts;
	uint64_t events[SC_DC_EVENTS_MAX];
	const char *const *event_names;
};

struct sim;

/* NULL on a bad parameter or policy (a message on stderr). */
struct sim *sim_new(const struct sim_params *p);
/*
 * Before the replay (system mode): learn the disk as it was when the trace
 * began, so the server's CSI-Map knows every address the trace will touch
 * (the server of a real system knows its whole disk).  The content of an
 * address is the one its first access read; addresses written first start
 * unmapped.  Feed the whole trace through this, then through sim_feed().
 */
void sim_preload(struct sim *s, const struct sim_req *r);
/* After the last sim_preload: trim the tables to what was seen. */
void sim_preload_done(struct sim *s);
/* Feed one trace request; false: the request's VM is not simulated. */
bool sim_feed(struct sim *s, const struct sim_req *r);
void sim_finish(struct sim *s, struct sim_result *out);
void sim_free(struct sim *s);

/* 64-bit content key of a fingerprint (fp_len bytes, >= 8 used fully). */
uint64_t sim_fp_key(const uint8_t *fp, uint32_t len);

#endif /* SEACACHE_SIM_MODEL_H */
