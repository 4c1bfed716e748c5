/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * seacache-host's replay: the requests of a workload (tools/sim/trace.h,
 * the SeaCache workload format) split by VM, one thread per VM issuing
 * its requests back to back through a backend (one per host: plain NFS
 * with an address cache, or the SeaCache host library), each read checked
 * against the workload's fingerprints, with per-VM latency statistics.
 * A write storm's bytes come from the workload's FILE.blocks (the patch
 * storm's: tools/workload/README.md), found by their fingerprints; what a
 * VM wrote is made stable (flush) after its last request.
 */
#ifndef SEACACHE_HOST_REPLAY_H
#define SEACACHE_HOST_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One request of a VM. */
struct vm_req {
	uint64_t lbn;
	uint32_t nblocks;
	uint32_t image;
	uint32_t fp_at;			/* index of its first fingerprint */
	bool write;
};

/* What a backend (one host's way to the server) must do. */
struct backend_ops {
	/* A VM's own context (its connection, its open files). */
	void *(*vm_open)(void *be, unsigned int vm, char *err, size_t errlen);
	void (*vm_close)(void *be, void *vmctx);
	/* Reads len bytes at off of image; 0 or a negative errno. */
	int (*read)(void *be, void *vmctx, uint32_t image, uint64_t off,
		    void *buf, size_t len);
	/* Writes len bytes at off of image; 0 or a negative errno. */
	int (*write)(void *be, void *vmctx, uint32_t image, uint64_t off,
		     const void *buf, size_t len);
	/* What the VM wrote to image is on the server's disk; 0 or -errno. */
	int (*flush)(void *be, void *vmctx, uint32_t image);
	/* Every half second while VMs run (keep-alives, notices); or NULL. */
	void (*tick)(void *be);
};

/* The host's totals, for the comparison table (backend specific). */
struct host_totals {
	uint64_t server_bytes;		/* block data server -> host */
	uint64_t written_bytes;		/* block data host -> server */
	uint64_t peer_bytes;		/* block data peer -> host */
	uint64_t peer_served_bytes;	/* block data host -> peers */
	uint64_t server_calls;
	uint64_t cache_blocks_hit;	/* blocks served by the host cache */
	uint64_t blocks_read;
	/* csi only: how the misses went */
	uint64_t delegations, peer_failures, force_data_blocks, waited_blocks;
	uint64_t hash_only_blocks, pushes_received, pushed_hits;
	uint64_t map_calls, map_entries, mapped_hits;	/* map windows */
	uint64_t readahead_blocks;	/* contents read ahead */
};

struct vm_result {
	uint64_t requests, blocks;	/* reads and writes */
	uint64_t write_blocks;
	uint64_t verified;		/* blocks checked against the workload */
	uint64_t mismatches;
	uint64_t errors;
	double lat_mean_us, lat_p50_us, lat_p99_us;
	double seconds;
	/* wall clock (s since the epoch): the first request sent, the last
	 * reply (of its flush, after writes): hosts' runs line up */
	double start, end;
};

struct replay {
	uint32_t block_size;
	uint32_t fp_len;
	bool fp_known;			/* wl_fingerprint's (workload_fp.h) */
	unsigned int vm_first, nvms;	/* the VMs this host runs */
	struct vm_req **reqs;		/* per VM */
	size_t *nreqs;
	uint8_t *fps;			/* every fingerprint kept */
	size_t nfps;
	/* writes: per fingerprint, its block in data (FILE.blocks) */
	uint32_t *src;
	uint8_t *data;
	size_t data_len;
	uint64_t total_requests;	/* of this host's VMs */
};

/*
 * Loads the requests of VMs vm_first .. vm_first + nvms - 1 of the
 * workload at path, and for its writes path.blocks.  0, or -1 with the
 * reason in err.
 */
int replay_load(struct replay *r, const char *path, unsigned int vm_first,
		unsigned int nvms, char *err, size_t errlen);
void replay_free(struct replay *r);

/*
 * Runs every VM at once through ops/be, with a progress line on stderr
 * when progress is set; fills res[nvms].  verify: compare each block
 * read with its fingerprint (the first fp_len bytes of its SHA-256);
 * a write is checked by reading it back afterwards (scripts/lab does).
 * 0, or -1 if a VM could not start.
 */
int replay_run(const struct replay *r, const struct backend_ops *ops,
	       void *be, bool verify, bool progress, struct vm_result *res,
	       char *err, size_t errlen);

#endif /* SEACACHE_HOST_REPLAY_H */
