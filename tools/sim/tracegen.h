/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Synthetic VDI workloads in the SeaCache workload format
 * (WORKLOAD-FORMAT.md), the same bytes for the same parameters and seed.
 *
 * V VMs are full clones of a golden image of N blocks; VM v's clone is
 * image v.  A block is shared (the same content in every clone) with
 * probability `shared`, else private to each VM (different content in each
 * clone).  Phases, all VMs at once, requests interleaved in time order:
 *   boot: every VM reads the same boot_blocks blocks, in runs of 1..max_req
 *         blocks, in one fixed order (a boot storm);
 *   scan: every VM reads its whole image in order, max_req blocks a request
 *         (a virus-scan storm).
 * After each read, with probability `writes`, the VM also writes 1..max_req
 * blocks somewhere in its image; written blocks get new content of their
 * own, which later reads of them see.
 *
 * Fingerprints name contents without materializing them: the first 8
 * bytes are a bijection of a 64-bit content id (so distinct contents never
 * collide), the rest a second mix of it; the seed changes all of them.
 */
#ifndef SEACACHE_SIM_TRACEGEN_H
#define SEACACHE_SIM_TRACEGEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct sim_gen_params {
	uint64_t seed;
	uint32_t vms;
	uint32_t blocks; /* golden image size in blocks */
	uint32_t block_size;
	double shared; /* fraction of blocks the same in every clone */
	uint32_t boot_blocks; /* 0: no boot phase */
	bool scan;
	double writes; /* probability that a read is followed by a write */
	uint32_t max_req; /* blocks per request, at most */
	uint32_t fp_bytes; /* 8..32 */
	uint32_t gap_us; /* between one VM's successive requests */
};

struct sim_gen_stats {
	uint64_t requests, reads, writes, blocks;
};

/* Defaults: 8 VMs, 16384 blocks of 4 KiB, 90% shared, boot of N/4, scan,
 * 2% writes, 8 blocks a request, 16-byte fingerprints, 100 us gap, seed 1. */
void sim_gen_defaults(struct sim_gen_params *p);
/* Write the workload to out; 0, or -1 with a message in err. */
int sim_gen_write(const struct sim_gen_params *p, FILE *out,
		  struct sim_gen_stats *st, char *err, size_t errlen);

/*
 * A cache benchmark trace instead: `requests` single-block reads of one
 * volume, object ranks drawn from Zipf(alpha) over `objects` objects, as
 * MSR Cambridge CSV (the format libCacheSim's CSV reader takes too).  An
 * object's block number is its rank times an odd constant mod 2^40 (a
 * bijection: distinct ranks, distinct blocks); 1 us between requests.
 */
struct sim_zipf_params {
	uint64_t seed, requests;
	uint32_t objects;
	double alpha;
};

int sim_gen_zipf(const struct sim_zipf_params *p, FILE *out,
		 struct sim_gen_stats *st, char *err, size_t errlen);

#endif /* SEACACHE_SIM_TRACEGEN_H */
