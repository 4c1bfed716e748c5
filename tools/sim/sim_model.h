/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The simulator's system model (SeaCache paper, section IV-A): VMs with
 * private LRU caches, hosts of K VMs each with a host cache under any
 * policy (lib/include/seacache/dcache.h), a storage server with a content
 * cache, its CSI-Map (address -> content, content -> addresses) and the
 * cache tracker (which host holds which content), and the seven protocol
 * variants (seacache/variant.h: the CSV names them by their paper names).
 * Also the single-cache mode of the policy papers.
 *
 * Blocks are named by the dense address and content ids of the trace
 * reader (struct sim_req: sim_trace_want_ids()), so every table is an
 * array indexed by them.
 */
#ifndef SEACACHE_SIM_MODEL_H
#define SEACACHE_SIM_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "seacache/dcache.h"
#include "seacache/variant.h"
#include "trace.h"

enum sim_mode { SIM_MODE_SYSTEM, SIM_MODE_CACHE };

/* A cache size: blocks, or (pct >= 0) a percentage of distinct blocks. */
struct sim_size {
	uint32_t blocks;
	double pct;
};

struct sim_params {
	enum sim_mode mode;
	enum sc_variant variant;	/* system mode */
	const char *policy;		/* host cache / the cache */
	const char *server_policy;	/* "lru" */
	/* coop: delegate content the server's cache holds too */
	bool delegate_cached;
	uint32_t block_size;
	uint32_t vms;			/* 0: every VM of the trace */
	uint32_t vms_per_host;
	/*
	 * System mode: percentages are of the distinct blocks the preload
	 * pass saw.  Cache mode: host_cache is the cache, in blocks.
	 */
	struct sim_size vm_cache;	/* 0 blocks: no VM caches */
	struct sim_size host_cache;
	struct sim_size server_cache;
	double net_ms, disk_ms;
	uint32_t hash_bytes;		/* a hash / CSI entry on the wire */
	uint32_t hdr_bytes;		/* a request or reply header */
	uint32_t max_push;		/* CSI entries pushed per reply */
	/*
	 * System mode: requests held back at most while waiting for their
	 * issue time (the time model, README.md); beyond it the earliest
	 * is issued even if a later line could come earlier.
	 */
	uint32_t window;
	/* Ids the whole trace will use, when known (binary traces), else 0. */
	uint32_t addrs_hint, contents_hint;
};

struct sim_result {
	uint64_t requests, reads, writes, read_blocks, write_blocks;
	uint64_t vm_hits, host_hits, content_hits, read_misses;
	uint64_t flight_waits;		/* block reads that waited for a fetch in flight */
	uint64_t write_hits;		/* cache mode: content already cached */
	uint64_t loads, evictions, silent_writes;
	uint64_t server_bytes, data_bytes, csi_bytes, peer_bytes;
	uint64_t disk_reads, disk_writes;
	double lat_sum_ms, read_lat_sum_ms;	/* per request */
	double end_ms;			/* system: when the last request completed */
	uint64_t tracked_blocks, sim_meta_bytes;
	uint32_t vms, hosts;
	uint32_t vm_cache_blocks, host_cache_blocks, server_cache_blocks;
	uint64_t events[SC_DC_EVENTS_MAX];
	const char *const *event_names;
};

struct sim;

/* NULL on a bad parameter or policy (a message on stderr). */
struct sim *sim_new(const struct sim_params *p);
/*
 * System mode, before the replay: learn the disk as it was when the trace
 * began, so the server's CSI-Map knows every address the trace will touch
 * (the server of a real system knows its whole disk).  The content of an
 * address is the one its first access read; addresses written first start
 * unmapped.  Feed the whole trace through sim_preload(), call
 * sim_preload_done() (which sizes the caches: percentages are of the
 * distinct blocks seen), then replay it through sim_feed().
 */
void sim_preload(struct sim *s, const struct sim_req *r);
void sim_preload_done(struct sim *s);
/*
 * Feed one trace request (with ids); false: its VM is not simulated.
 * System mode issues it when its time comes (README.md, "Time"), so a
 * request's effects may show only at a later call or at sim_finish().
 */
bool sim_feed(struct sim *s, const struct sim_req *r);
/*
 * A hint: r will be fed soon (cache mode).  Told twice, far ahead and
 * again nearer (far false), it brings in what feeding r looks up first.
 */
void sim_prefetch(struct sim *s, const struct sim_req *r, bool far);
/* The rest of the requests, then the results; extra_bytes: reader memory. */
void sim_finish(struct sim *s, uint64_t extra_bytes, struct sim_result *out);
void sim_free(struct sim *s);

#endif /* SEACACHE_SIM_MODEL_H */
